"""Okapi BM25: parameters, formulas, weighted term counting and an in-memory reference.

Scoring (defaults in :class:`BM25Params`)::

    score(d, q) = sum over query terms t of  qw(t) * idf(t) * impact(t, d)
    impact(t, d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    idf(t) = log((N - df + 0.5) / (df + 0.5) + 1)            ("lucene", default)
           = log((N - df + 0.5) / (df + 0.5))                ("robertson", rank_bm25's formula)

BM25F-style fields: a node's ``name`` (title, identifier) terms count ``name_weight`` times
in ``tf`` and in ``dl``; ``text`` terms count once.

:class:`MemoryBM25` scores token lists held in memory with the same impacts as the stored
postings (:mod:`kgsearch.text.postings`); the oracle tests compare both with rank_bm25.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from .tokenize import ANALYSIS, Analyzer, get_analyzer

__all__ = ["BM25Params", "MemoryBM25", "Pairs", "Runs", "build_pairs", "build_runs", "idf", "impacts", "doc_norms", "tf_impacts",
           "top_k", "math_idf", "EMPTY"]

EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))

@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.5
    b: float = 0.75
    name_weight: float = 3.0        # BM25F-style: a name/title term counts this many times
    idf: str = "lucene"             # "lucene": log(1 + (N-df+.5)/(df+.5)); "robertson": without the 1 +
    stemmer: str = "porter2"
    split_code: bool = True
    avgdl_drift: float = 0.10       # unused: scores always use the live avgdl (kept: stored settings stay valid)
    fold: bool = True               # Latin letters' accents folded (tokenize.fold_latin); False: an older index
    analysis: int = ANALYSIS        # the tokenizer's rules (tokenize.ANALYSIS); 2: an index made before marks

    @classmethod
    def from_settings(cls, settings) -> "BM25Params":
        """The text section of index settings (an :class:`~kgsearch.settings.IndexSettings`, or a
        dict of flat keys, validated by it)."""
        from ..settings import IndexSettings

        t = IndexSettings.coerce(settings).text
        return cls(k1=t.k1, b=t.b, name_weight=t.name_weight, idf=t.idf, stemmer=t.stemmer,
                   split_code=t.split_code, avgdl_drift=t.avgdl_drift, fold=t.fold_accents)

    def index_key(self) -> dict:
        """The settings that change stored postings (a change forces a rebuild)."""
        return {"k1": self.k1, "b": self.b, "name_weight": self.name_weight,
                "stemmer": self.stemmer, "split_code": self.split_code, "fold": self.fold, "analysis": self.analysis}

    def analyzer(self) -> Analyzer:
        return get_analyzer(self.stemmer, self.split_code, self.fold, self.analysis)


# ---------------------------------------------------------------------------- formulas
def idf(df, n_docs: int, method: str = "lucene"):
    df = np.asarray(df, dtype=np.float64)
    ratio = (n_docs - df + 0.5) / (df + 0.5)
    if method == "lucene":
        return np.log1p(ratio)
    return np.log(ratio)


def doc_norms(dl, avgdl: float, k1: float, b: float) -> np.ndarray:
    """The document part of the BM25 denominator, ``k1 * (1 - b + b * dl / avgdl)`` (float64)."""
    dl = np.asarray(dl, dtype=np.float64)
    avg = avgdl if avgdl > 0 else 1.0
    return k1 * (1.0 - b + b * dl / avg)


def tf_impacts(tf, norm, k1: float) -> np.ndarray:
    """Impacts from term frequencies and :func:`doc_norms` (same operations as :func:`impacts`)."""
    tf = np.asarray(tf, dtype=np.float64)
    return (tf * (k1 + 1.0) / (tf + norm)).astype(np.float32)


def impacts(tf, dl, avgdl: float, k1: float, b: float) -> np.ndarray:
    """Per-posting BM25 term weight without idf (float32)."""
    return tf_impacts(tf, doc_norms(dl, avgdl, k1, b), k1)


# ---------------------------------------------------------------------------- building
@dataclass
class Pairs:
    """(term, doc, tf) triples grouped by term, docs ascending; ``dl`` per doc."""

    terms: list[str]
    offsets: np.ndarray      # int64 [V+1]
    docs: np.ndarray         # int64 [P] doc index (0..n_docs-1) or node id
    tf: np.ndarray           # float32 [P]
    dl: np.ndarray           # float64 [n_docs]
    doc_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # node id per doc


@dataclass
class Runs:
    """Unsorted (term, doc, tf) triples in doc order, as :func:`build_runs` counts them; ``terms``
    are numbered by first appearance. :func:`build_pairs` sorts them by term; a writer can
    instead take them a block of terms at a time (:meth:`term_blocks`)."""

    terms: list[str]
    t: np.ndarray            # int32 [P] term number
    d: np.ndarray            # int32 [P] doc index (0..n_docs-1)
    tf: np.ndarray           # float32 [P]
    dl: np.ndarray           # float64 [n_docs]

    def term_blocks(self, max_pairs: int = 1 << 22):
        """``(offsets, docs int64, tf)`` for consecutive ranges of term numbers holding about
        ``max_pairs`` pairs each (one range: what :func:`build_pairs` holds at once), docs
        ascending per term: the pairs of a block are picked with one pass over the term
        numbers and sorted alone, so the sort's int64 order and the sorted copies are a block's
        size, not the whole corpus's."""
        df = np.bincount(self.t, minlength=len(self.terms)).astype(np.int64)
        ends = np.cumsum(df)
        a = 0
        while a < len(self.terms):
            b = int(np.searchsorted(ends, (ends[a - 1] if a else 0) + max_pairs, side="right"))
            b = min(max(b, a + 1), len(self.terms))
            if a == 0 and b == len(self.terms):
                sel = None
                order = np.argsort(self.t, kind="stable")
            else:
                sel = np.flatnonzero((self.t >= a) & (self.t < b))
                order = np.argsort(self.t[sel], kind="stable")
                order = sel[order]
                del sel
            offsets = np.zeros(b - a + 1, dtype=np.int64)
            np.cumsum(df[a:b], out=offsets[1:])
            yield a, b, offsets, self.d[order].astype(np.int64), self.tf[order]
            del order
            a = b


def build_runs(docs: Iterable[tuple[Sequence[str], Sequence[str]]], name_weight: float = 1.0,
               chunk: int = 4096) -> Runs:
    """Count weighted term frequencies of ``(name_terms, text_terms)`` documents.

    Vectorised per chunk of documents: terms -> ids with one dict, then ``np.unique`` over
    ``doc * V + term`` keys and ``np.bincount`` for the weighted counts. The chunks' arrays are
    joined one at a time (each chunk list freed as its array is made).
    """
    vocab: dict[str, int] = {}
    T, D, F, DL = [], [], [], []
    base = 0
    it = iter(docs)
    w_name = float(name_weight)
    while True:
        flat: list[str] = []
        lens: list[int] = []
        n = 0
        for name_terms, text_terms in it:
            flat += name_terms
            flat += text_terms
            lens.append(len(name_terms))
            lens.append(len(text_terms))
            n += 1
            if n >= chunk:
                break
        if n == 0:
            break
        setd = vocab.setdefault
        tid = np.fromiter((setd(t, len(vocab)) for t in flat), dtype=np.int64, count=len(flat))
        lens_a = np.asarray(lens, dtype=np.int64)
        weights = np.repeat(np.tile(np.array([w_name, 1.0]), n), lens_a)
        dloc = np.repeat(np.repeat(np.arange(n, dtype=np.int64), 2), lens_a)
        dl = np.bincount(dloc, weights=weights, minlength=n)
        V = max(len(vocab), 1)
        uniq, inv = np.unique(dloc * V + tid, return_inverse=True)
        tf = np.bincount(inv.ravel(), weights=weights, minlength=len(uniq))
        T.append((uniq % V).astype(np.int32))
        D.append((uniq // V + base).astype(np.int32))
        F.append(tf.astype(np.float32))
        DL.append(dl)
        base += n

    def join(parts: list, dtype) -> np.ndarray:
        out = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
        parts.clear()
        return out

    return Runs(list(vocab), join(T, np.int32), join(D, np.int32), join(F, np.float32), join(DL, np.float64))


def build_pairs(docs: Iterable[tuple[Sequence[str], Sequence[str]]], name_weight: float = 1.0,
                doc_ids: Sequence[int] | None = None, chunk: int = 4096) -> Pairs:
    """:func:`build_runs` sorted by term (docs ascending per term), whole."""
    runs = build_runs(docs, name_weight, chunk)
    ids = np.asarray(doc_ids if doc_ids is not None else np.arange(len(runs.dl)), dtype=np.int64)
    if not len(runs.t):
        return Pairs(runs.terms, np.zeros(len(runs.terms) + 1, np.int64), np.zeros(0, np.int64),
                     np.zeros(0, np.float32), runs.dl, ids)
    _, _, offsets, d, f = next(runs.term_blocks(max_pairs=len(runs.t)))
    return Pairs(runs.terms, offsets, d, f, runs.dl, ids)


class MemoryBM25:
    """BM25 over in-memory token lists (the oracle tests and the benchmarks use this).

    ``MemoryBM25(corpus_tokens, params)`` where each document is a token list, or a pair
    ``(name_tokens, text_tokens)`` when ``fields=True``. Same impacts as the stored index.
    """

    def __init__(self, corpus: Iterable, params: BM25Params | None = None, fields: bool = False,
                 avgdl: float | None = None):
        self.params = p = params or BM25Params()
        docs = corpus if fields else ((tuple(), doc) for doc in corpus)
        pairs = build_pairs(docs, p.name_weight if fields else 1.0)
        self.n_docs = len(pairs.dl)
        self.avgdl = float(avgdl if avgdl is not None else (pairs.dl.mean() if self.n_docs else 0.0))
        self.vocab = {t: i for i, t in enumerate(pairs.terms)}
        self.offsets = pairs.offsets
        self.docs = pairs.docs
        self.imp = impacts(pairs.tf, pairs.dl[pairs.docs], self.avgdl, p.k1, p.b)
        self.df = np.diff(pairs.offsets)
        self.doc_len = pairs.dl

    def get_scores(self, query: Sequence[str] | dict[str, float]) -> np.ndarray:
        """Dense float32 scores for every document (rank_bm25's ``get_scores`` shape)."""
        qw = query if isinstance(query, dict) else Counter(query)
        scores = np.zeros(self.n_docs, dtype=np.float32)
        for term, w in qw.items():
            i = self.vocab.get(term)
            if i is None:
                continue
            s, e = self.offsets[i], self.offsets[i + 1]
            wi = np.float32(w * idf(e - s, self.n_docs, self.params.idf))
            scores[self.docs[s:e]] += wi * self.imp[s:e]
        return scores

    def search(self, query, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """(doc indexes, scores) of the top ``k``, ties broken by lower index."""
        return top_k(self.get_scores(query), k)


def top_k(scores: np.ndarray, k: int, ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` positive scores, descending; ties by ascending id. Returns (ids, scores)."""
    if k <= 0 or scores.size == 0:
        return EMPTY
    if k < scores.size:
        cand = np.argpartition(-scores, k - 1)[:k]
        # include everything tied with the k-th score so tie-breaking by id is exact
        kth = scores[cand].min()
        cand = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
    else:
        cand = np.flatnonzero(scores > 0)
    cand = cand[scores[cand] > 0]
    sc = scores[cand]
    key_ids = cand if ids is None else ids[cand]
    order = np.lexsort((key_ids, -sc))[:k]
    return key_ids[order].astype(np.int64), sc[order].astype(np.float32)



def math_idf(df: int, n: int, method: str = "lucene") -> float:
    """Scalar idf (for explanations)."""
    r = (n - df + 0.5) / (df + 0.5)
    return math.log1p(r) if method == "lucene" else math.log(r)
