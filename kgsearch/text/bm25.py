"""The BM25 channel: top-k search, whole-index scores and fill-in scores from stored postings.

See :mod:`kgsearch.text.okapi` for the formula and :mod:`kgsearch.text.postings` for the
storage. ``qw(t)`` is how often ``t`` occurs in the query, plus ``keyword_boost`` times its
occurrences in ``keywords=`` (the intent keyword boost: "repeat the keywords x5 in the query").
Every function here reads only the query terms' posting rows.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .idcodec import decode_ids, tf_view
from .okapi import EMPTY, BM25Params, MemoryBM25, idf, math_idf, tf_impacts, top_k
from ..store.sql import CHUNK
from .postings import doc_freqs, load_norms, norms, norms_of, read_rows, stored, stored_params
from .tokenize import Analyzer, clean_query

__all__ = ["search", "score_ids", "score_all", "score_terms", "query_weights", "clean_query", "read_ahead",
           "BM25Params", "MemoryBM25", "math_idf"]

KEPT_BYTES = 4 << 20    # the rows :func:`read_ahead` keeps for the scoring that follows (at most)


# ---------------------------------------------------------------------------- query
def query_weights(an: Analyzer, query: str, keywords: Iterable[str] | None = None,
                  keyword_boost: float = 5.0) -> dict[str, float]:
    """Term -> query weight: occurrences in ``query`` + ``keyword_boost`` x occurrences in ``keywords``."""
    qw: dict[str, float] = {}
    for t in an(query):
        qw[t] = qw.get(t, 0.0) + 1.0
    if keywords:
        for kw in keywords:
            for t in an(clean_query(kw)):
                qw[t] = qw.get(t, 0.0) + keyword_boost
    return qw




def word_idfs(ix, text: str, pooled: dict | None = None,
              idf_method: str = "lucene") -> list[tuple[str, float]] | None:
    """Each word of ``text`` (the index analyser's words, in order) with the mean BM25 idf of its
    terms in this index (``pooled``: over the indexes searched as one, as :func:`score_all`
    counts them); 0.0 for a word without terms (a stop word). None when the index has no
    postings. Kept for the last text per index generation (the dense channel asks three times
    a search)."""
    st, params, _memo = stored(ix)
    if st is None:
        return None
    key = (ix.generation, text, id(pooled))
    hit = ix._cache.get("text.word_idfs")
    if hit is not None and hit[0] == key and hit[1] is pooled:
        return hit[2]
    words = params.analyzer().words(clean_query(text))
    terms = sorted({t for _, ts in words for t in ts})
    own = doc_freqs(ix.conn, terms)
    n_docs = int(pooled["n"]) if pooled else int(st["n"])
    pdf = pooled["df"] if pooled else {}
    dfs = [pdf.get(t, own.get(t, 0)) for t in terms]
    f = dict(zip(terms, idf(dfs, n_docs, idf_method).tolist())) if terms else {}
    out = [(raw, sum(f[t] for t in ts) / len(ts) if ts else 0.0) for raw, ts in words]
    ix._cache["text.word_idfs"] = (key, pooled, out)
    return out


def _lists(norms, k1: float, ws: list, ibs: list[bytes], tfs: list[np.ndarray]) -> tuple[list, int]:
    """[(ids, weight, impacts)] of several stored lists, decoded and scored in one pass of
    numpy calls (elementwise, so the same values as one list at a time), and the largest id."""
    if len(ibs) == 1:
        ids = decode_ids(ibs[0])
        return [(ids, ws[0], tf_impacts(tfs[0], norms_of(norms, ids), k1))], int(ids[-1])
    lists = [decode_ids(b) for b in ibs]       # (decode_ids_many is slower on a query's few lists)
    imp = tf_impacts(np.concatenate(tfs), norms_of(norms, np.concatenate(lists)), k1)
    out, s = [], 0
    for ids, w in zip(lists, ws):
        out.append((ids, w, imp[s:s + ids.size]))
        s += ids.size
    return out, max(int(a[-1]) for a in lists)


def read_ahead(ix, terms: list[str]) -> list[tuple]:
    """The posting rows of ``terms`` (:func:`~kgsearch.text.postings.read_rows`), kept for the
    scoring of the same search: several indexes searched as one sum every index's document
    frequencies before any of them scores (:mod:`kgsearch.query.multi`), and reading the rows
    then saves :func:`score_all` its own statement (one per index and search). Kept in the
    generation's memo (rows never change within a generation), the last query's only and only
    up to :data:`KEPT_BYTES` of postings."""
    st, _, memo = stored(ix)
    rows = read_rows(ix.conn, terms)
    if st is not None and len(terms) <= CHUNK and sum(len(r[2]) + len(r[3]) for r in rows) <= KEPT_BYTES:
        memo["rows"] = (frozenset(terms), {r[0]: r for r in rows})
    return rows


def _rows(ix, memo: dict, terms: list[str]) -> list[tuple]:
    """``read_rows(ix.conn, terms)``, from the rows :func:`read_ahead` kept when they cover
    ``terms``: in the statement's order (the primary key's, ascending bytes, which is code point
    order: tests/text/test_bm25.py), so the scores are summed in the same order."""
    kept = memo.get("rows")
    if kept is not None and len(terms) <= CHUNK and kept[0].issuperset(terms):
        got = kept[1]
        return [got[t] for t in sorted(set(terms)) if t in got]
    return read_rows(ix.conn, terms)


def _collection(ix, st: dict, params, memo: dict, pooled: dict | None):
    """(N, pooled document frequencies or None, document norms). ``pooled`` (several indexes
    ranked as one, :mod:`kgsearch.query.multi`): ``{"n", "avgdl", "df": {term: df}}`` summed over
    the indexes, so a node scores what it would in one index holding them all."""
    if not pooled:
        return int(st["n"]), None, norms(ix, st, params, memo)
    avgdl = float(pooled["avgdl"])
    nrm = memo.get(("norms", avgdl))
    if nrm is None:
        for key in [k for k in memo if isinstance(k, tuple) and k[0] == "norms"]:
            del memo[key]                       # one pooled table at a time (the others' sizes moved)
        nrm = memo[("norms", avgdl)] = load_norms(ix, dict(st, avgdl=avgdl), params)
    return int(pooled["n"]), pooled["df"], nrm


def _dfs(rows, pooled_df: dict | None) -> list[int]:
    return [r[1] for r in rows] if pooled_df is None else [pooled_df.get(r[0], r[1]) for r in rows]


def score_terms(ix, qw: dict[str, float], k: int = 100, idf_method: str = "lucene",
                n_docs: int | None = None, pooled: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` node ids for weighted terms, reading only those terms' postings."""
    st, params, memo = stored(ix)
    if not st or not qw or k <= 0:
        return EMPTY
    N, pdf, nrm = _collection(ix, st, params, memo, pooled)
    N = int(n_docs if n_docs is not None else N)
    terms = [t for t, w in qw.items() if w]
    rows = _rows(ix, memo, terms)
    if not rows:
        return EMPTY
    ws, ibs, tfs = [], [], []
    idfs = idf(_dfs(rows, pdf), N, idf_method).tolist()     # one call: the same values
    for (term, df, ib, tb), f in zip(rows, idfs):
        w = qw[term] * f
        if w == 0.0 or not df:
            continue
        ws.append(np.float32(w))
        ibs.append(ib)
        tfs.append(tf_view(tb, df))
    if not ws:
        return EMPTY
    lists, max_id = _lists(nrm, params.k1, ws, ibs, tfs)
    if len(lists) == 1:
        ids, w, imp = lists[0]
        return top_k(imp * w, k, ids.astype(np.int64))
    scores = np.zeros(max_id + 1, dtype=np.float32)
    for ids, w, imp in lists:
        scores[ids] += w * imp
    return top_k(scores, k)


def score_all(ix, query: str | dict, *, keywords: Iterable[str] | None = None, keyword_boost: float = 5.0,
              idf_method: str = "lucene", **opts) -> tuple[np.ndarray, np.ndarray, int]:
    """Every positive BM25 score: (node ids ascending, scores float64, N indexed nodes).

    Nodes not listed score 0. The pipeline uses it to standardise scores over the whole index
    (mean and spread include the zeros) and to score any node without another query.
    """
    if keywords is None and opts.get("boost_terms"):
        keywords = opts["boost_terms"]
    if opts.get("boost") is not None:
        keyword_boost = float(opts["boost"])
    st, params, memo = stored(ix)
    empty = (np.zeros(0, np.int64), np.zeros(0), 0)
    if st is None:
        return empty
    N = int(st["n"])                              # the population standardised over: this index's nodes
    Nc, pdf, nrm = _collection(ix, st, params, memo, opts.get("pooled"))
    qw = query if isinstance(query, dict) else query_weights(params.analyzer(), clean_query(query), keywords,
                                                             keyword_boost)
    terms = [t for t, w in qw.items() if w]
    if not terms:
        return (empty[0], empty[1], N)
    ws, ibs, tfs = [], [], []
    for s in range(0, len(terms), CHUNK):        # idf per chunk, as the values were measured
        rows = _rows(ix, memo, terms[s:s + CHUNK])
        for (term, df, ib, tb), f in zip(rows, idf(_dfs(rows, pdf), Nc, idf_method).tolist()):
            if df:
                ws.append(qw[term] * f)
                ibs.append(ib)
                tfs.append(tf_view(tb, df))
    if not ws:
        return (empty[0], empty[1], N)
    scores = _accumulate(nrm, params.k1, ws, ibs, tfs, memo)
    nz = np.flatnonzero(scores > 0)
    return nz.astype(np.int64, copy=False), scores[nz], N


GROUP = 1 << 16       # postings decoded and scored together by score_all (~40 bytes each at once)


def _accumulate(nrm, k1: float, ws: list, ibs: list[bytes], tfs: list[np.ndarray],
                memo: dict | None = None) -> np.ndarray:
    """float64 scores by node id: ``sum w * impacts`` over the lists, decoded a few lists
    (about :data:`GROUP` postings) at a time: the values of :func:`_lists`, elementwise; a
    long query's lists decoded all together held ~40 bytes a posting at once (36 MiB traced
    for one query at 1M nodes), one list at a time cost 30 % more numpy calls. The table
    (8 bytes a node) is kept in ``memo`` and cleared for the next query: a fresh one each
    query cost a page fault every 4 KiB, 2-9 ms at 1M nodes. The caller copies what it keeps."""
    arr, keys = nrm
    size = len(arr) if keys is None else (int(keys[-1]) + 1 if keys.size else 0)
    scores = memo.get("scores") if memo is not None else None
    if scores is not None and len(scores) == size:
        scores.fill(0.0)
    else:
        scores = np.zeros(size, dtype=np.float64)
        if memo is not None:
            memo["scores"] = scores
    i = 0
    while i < len(ibs):                            # groups of lists of about GROUP postings
        j, size = i, 0
        while j < len(ibs) and (j == i or size + len(tfs[j]) <= GROUP):
            size += len(tfs[j])
            j += 1
        lists = [decode_ids(b) for b in ibs[i:j]]
        ids = lists[0] if j == i + 1 else np.concatenate(lists)
        tf = tfs[i] if j == i + 1 else np.concatenate(tfs[i:j])
        if ids.size:
            imp = tf_impacts(tf, norms_of(nrm, ids), k1)
            top = max(int(a[-1]) for a in lists if a.size)
            if top >= len(scores):                 # a posting past the doclen table: grow
                scores = np.concatenate([scores, np.zeros(top + 1 - len(scores))])
            s = 0
            for w, a in zip(ws[i:j], lists):
                scores[a] += w * imp[s:s + a.size]
                s += a.size
        i = j
    return scores


def score_ids(ix, query: str | dict, ids, *, keywords: Iterable[str] | None = None, keyword_boost: float = 5.0,
              idf_method: str = "lucene", **opts) -> np.ndarray:
    """BM25 scores of the given node ids (float64, 0 where no query term occurs): the pipeline's
    fill-in for candidates found by other channels. ``query`` may be a term-weight dict."""
    if keywords is None and opts.get("boost_terms"):
        keywords = opts["boost_terms"]
    if opts.get("boost") is not None:
        keyword_boost = float(opts["boost"])
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros(len(ids), dtype=np.float64)
    st, params, memo = stored(ix)
    if st is None or not len(ids):
        return out
    qw = query if isinstance(query, dict) else query_weights(params.analyzer(), clean_query(query), keywords,
                                                             keyword_boost)
    terms = [t for t, w in qw.items() if w]
    if not terms:
        return out
    N, pdf, nrm = _collection(ix, st, params, memo, opts.get("pooled"))
    for term, df, ib, tb in _rows(ix, memo, terms):
        pid = decode_ids(ib)
        if not pid.size:
            continue
        pos = np.minimum(np.searchsorted(pid, ids), pid.size - 1)
        hit = pid[pos] == ids
        if hit.any():
            tf = tf_view(tb, df)[pos[hit]]
            imp = tf_impacts(tf, norms_of(nrm, pid[pos[hit]]), params.k1)
            out[hit] += qw[term] * float(idf(df if pdf is None else pdf.get(term, df), N, idf_method)) * imp
    return out


def search(ix, query: str | dict, k: int = 100, *, keywords: Iterable[str] | None = None,
           keyword_boost: float = 5.0, idf_method: str = "lucene", **opts) -> tuple[np.ndarray, np.ndarray]:
    """BM25 channel: (node ids int64, scores float32), best first, at most ``k``.

    ``keywords`` (alias ``boost_terms``): raw words whose terms are added ``keyword_boost``
    (alias ``boost``) times to the query weights: the intent keyword boost. ``query`` may be a
    term-weight dict (then ``keywords`` are not added: they are in it).
    Never raises on the query string; an index without postings gives empty arrays.
    """
    if keywords is None and opts.get("boost_terms"):
        keywords = opts["boost_terms"]
    if "boost" in opts and opts["boost"] is not None:
        keyword_boost = float(opts["boost"])
    st, params = stored_params(ix)
    if st is None:
        return EMPTY
    try:
        k = int(k)
    except (TypeError, ValueError):
        k = 100
    qw = query if isinstance(query, dict) else query_weights(params.analyzer(), clean_query(query), keywords,
                                                             keyword_boost)
    return score_terms(ix, qw, k, idf_method, pooled=opts.get("pooled"))
