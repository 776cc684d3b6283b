"""Pseudo-relevance feedback (RM3) on top of our BM25: channel ``prf``.

A first BM25 pass takes the best ``fb_docs`` nodes; their terms form a relevance model

    P(w | R) = sum_d  P(w | d) * s_d / sum(s)        (P(w|d) = tf / |d|, s_d = BM25 score)

whose ``fb_terms`` strongest terms are mixed with the query (each side normalised to sum 1):
``q' = orig_weight * q + (1 - orig_weight) * R``, and a second BM25 pass scores ``q'``.
Defaults follow Anserini's RM3 (10 docs, 10 terms, 0.5). Terms in more than half of the nodes
are not used for expansion. Costs one more BM25 pass and the analysis of ``fb_docs`` texts.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

import numpy as np

from ..store.rows import node_texts
from ..store.sql import in_chunks
from .bm25 import query_weights, score_terms
from .okapi import EMPTY as _EMPTY
from .postings import stored_params as _stored_params
from .tokenize import clean_query

__all__ = ["search", "expand"]

FB_DOCS = 10
FB_TERMS = 10
ORIG_WEIGHT = 0.5


def expand(ix, query: str | dict, keywords: Iterable[str] | None = None, keyword_boost: float = 5.0,
           fb_docs: int | None = None, fb_terms: int | None = None, orig_weight: float | None = None
           ) -> tuple[dict[str, float], dict[str, float]]:
    """(original query weights, expanded query weights); parameters default to the module's.
    ``query`` may be its term weights already (:func:`kgsearch.text.bm25.query_weights`)."""
    fb_docs = FB_DOCS if fb_docs is None else fb_docs
    fb_terms = FB_TERMS if fb_terms is None else fb_terms
    orig_weight = ORIG_WEIGHT if orig_weight is None else orig_weight
    st, params = _stored_params(ix)
    if st is None:
        return {}, {}
    an = params.analyzer()
    qw = dict(query) if isinstance(query, dict) else query_weights(an, clean_query(query), keywords, keyword_boost)
    if not qw:
        return qw, qw
    ids, scores = score_terms(ix, qw, fb_docs)
    if not len(ids):
        return qw, qw
    rows = node_texts(ix.conn, ids.tolist())
    nw = max(1, int(round(params.name_weight)))
    total = float(np.sum(scores)) or 1.0
    rel: Counter = Counter()
    for nid, s in zip(ids.tolist(), scores.tolist()):
        if nid not in rows:
            continue
        name, text = rows[nid]
        terms = an(name or "") * nw + an(text or "")
        if not terms:
            continue
        w = (s / total) / len(terms)
        for t, c in Counter(terms).items():
            rel[t] += c * w
    if not rel:
        return qw, qw
    n = int(st["n"])
    cand = [t for t, _ in rel.most_common(fb_terms * 3)]
    dfs = dict(in_chunks(ix.conn, "SELECT term, df FROM text_postings WHERE term IN ({})", cand))
    chosen = [(t, rel[t]) for t in cand if 0 < dfs.get(t, 0) <= n / 2][:fb_terms]
    if not chosen:
        return qw, qw
    rsum = sum(v for _, v in chosen)
    qsum = sum(qw.values())
    out = {t: orig_weight * v / qsum for t, v in qw.items()}
    for t, v in chosen:
        out[t] = out.get(t, 0.0) + (1 - orig_weight) * v / rsum
    return qw, out


def _expanded(ix, query, keywords, keyword_boost):
    q = tuple(query.items()) if isinstance(query, dict) else query
    key = ("text.prf.last", ix.generation, q, tuple(keywords or ()), keyword_boost, FB_DOCS, FB_TERMS, ORIG_WEIGHT)
    hit = ix._cache.get("text.prf.last")
    if hit is not None and hit[0] == key:
        return hit[1]
    q2 = expand(ix, query, keywords, keyword_boost)[1]
    ix._cache["text.prf.last"] = (key, q2)
    return q2


def score_ids(ix, query: str | dict, ids, *, keywords: Iterable[str] | None = None, keyword_boost: float = 5.0,
              **opts) -> np.ndarray:
    """RM3 scores of the given node ids (fill-in for candidates of other channels)."""
    from .bm25 import score_ids as bm25_score_ids

    if keywords is None and opts.get("boost_terms"):
        keywords = opts["boost_terms"]
    if opts.get("boost") is not None:
        keyword_boost = float(opts["boost"])
    q2 = _expanded(ix, query, keywords, keyword_boost)
    if not q2:
        return np.zeros(len(ids))
    return bm25_score_ids(ix, q2, ids)


def score_all(ix, query: str | dict, *, keywords: Iterable[str] | None = None, keyword_boost: float = 5.0,
              **opts) -> tuple[np.ndarray, np.ndarray, int]:
    """Every positive RM3 score: (node ids ascending, scores, N)."""
    from .bm25 import score_all as bm25_score_all

    if keywords is None and opts.get("boost_terms"):
        keywords = opts["boost_terms"]
    if opts.get("boost") is not None:
        keyword_boost = float(opts["boost"])
    q2 = _expanded(ix, query, keywords, keyword_boost)
    if not q2:
        return np.zeros(0, np.int64), np.zeros(0), 0
    return bm25_score_all(ix, q2)


def search(ix, query: str | dict, k: int = 100, *, keywords: Iterable[str] | None = None, keyword_boost: float = 5.0,
           **opts) -> tuple[np.ndarray, np.ndarray]:
    """RM3-expanded BM25: (node ids, scores), best first. Never raises on the query string."""
    if keywords is None and opts.get("boost_terms"):
        keywords = opts["boost_terms"]
    if opts.get("boost") is not None:
        keyword_boost = float(opts["boost"])
    q2 = _expanded(ix, query, keywords, keyword_boost)
    if not q2:
        return _EMPTY
    return score_terms(ix, q2, int(k))
