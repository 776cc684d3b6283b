"""Okapi BM25 on numpy, with postings persisted per term in the index.

Scoring (defaults in :class:`BM25Params`)::

    score(d, q) = sum over query terms t of  qw(t) * idf(t) * impact(t, d)
    impact(t, d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    idf(t) = log((N - df + 0.5) / (df + 0.5) + 1)            ("lucene", default)
           = log((N - df + 0.5) / (df + 0.5))                ("robertson", rank_bm25's formula)

BM25F-style fields: a node's ``name`` (title, identifier) terms count ``name_weight`` times
in ``tf`` and in ``dl``; ``text`` terms count once. ``qw(t)`` is how often ``t`` occurs in
the query, plus ``keyword_boost`` times its occurrences in ``keywords=`` (the intent keyword
boost: "repeat the keywords x5 in the query").

Storage (table ``text_postings``, migration ``0002_text``): one row per term with ``df``,
``ids`` (sorted node ids, int32, or int64 when ids exceed 2**31) and ``imp`` (float32
impacts). A query reads only its own terms' rows; nothing corpus-sized stays in memory.

Impacts depend on ``avgdl``. The index records the ``avgdl`` it used; incremental updates
keep it, so scores are exactly BM25 with that recorded ``avgdl`` (``text_doclen`` holds every
node's weighted length, so the live value is always known). When the live ``avgdl`` drifts
more than ``avgdl_drift`` (10 %) from the recorded one, all postings are rebuilt. ``idf`` is
computed at query time from ``df`` and the live ``N``, so it is always exact.
"""
from __future__ import annotations

import logging
import math
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from .tokenize import Analyzer, get_analyzer

__all__ = ["BM25Params", "MemoryBM25", "build_pairs", "idf", "impacts", "search", "score_ids", "score_all",
           "score_terms", "rebuild", "write_postings", "apply_changes", "state", "query_weights"]

log = logging.getLogger(__name__)

_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
_SQL_CHUNK = 500


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.5
    b: float = 0.75
    name_weight: float = 3.0        # BM25F-style: a name/title term counts this many times
    idf: str = "lucene"             # "lucene": log(1 + (N-df+.5)/(df+.5)); "robertson": without the 1 +
    stemmer: str = "porter2"
    split_code: bool = True
    avgdl_drift: float = 0.10       # rebuild all postings when live avgdl moves this far

    @classmethod
    def from_settings(cls, settings: dict | None) -> "BM25Params":
        """Read ``settings["text"]`` (or top-level keys) that name fields of this class."""
        s = dict(settings or {})
        s = {**s, **(s.get("text") or {})} if isinstance(s.get("text"), dict) else s
        known = {f for f in cls.__dataclass_fields__}
        kw = {k: s[k] for k in known if k in s}
        p = cls(**kw)
        if p.idf not in ("lucene", "robertson"):
            from ..errors import UsageError
            raise UsageError(f"unknown idf {p.idf!r}; choose from lucene, robertson")
        return p

    def index_key(self) -> dict:
        """The settings that change stored postings (a change forces a rebuild)."""
        return {"k1": self.k1, "b": self.b, "name_weight": self.name_weight,
                "stemmer": self.stemmer, "split_code": self.split_code}

    def analyzer(self) -> Analyzer:
        return get_analyzer(self.stemmer, self.split_code)


# ---------------------------------------------------------------------------- formulas
def idf(df, n_docs: int, method: str = "lucene"):
    df = np.asarray(df, dtype=np.float64)
    ratio = (n_docs - df + 0.5) / (df + 0.5)
    if method == "lucene":
        return np.log1p(ratio)
    return np.log(ratio)


def impacts(tf, dl, avgdl: float, k1: float, b: float) -> np.ndarray:
    """Per-posting BM25 term weight without idf (float32)."""
    tf = np.asarray(tf, dtype=np.float64)
    dl = np.asarray(dl, dtype=np.float64)
    avg = avgdl if avgdl > 0 else 1.0
    return (tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avg))).astype(np.float32)


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


def build_pairs(docs: Iterable[tuple[Sequence[str], Sequence[str]]], name_weight: float = 1.0,
                doc_ids: Sequence[int] | None = None, chunk: int = 4096) -> Pairs:
    """Count weighted term frequencies of ``(name_terms, text_terms)`` documents.

    Vectorised per chunk of documents: terms -> ids with one dict, then ``np.unique`` over
    ``doc * V + term`` keys and ``np.bincount`` for the weighted counts.
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
    if not T:
        return Pairs([], np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32),
                     np.zeros(0, np.float64), np.asarray(doc_ids or [], dtype=np.int64))
    t = np.concatenate(T)
    d = np.concatenate(D)
    f = np.concatenate(F)
    order = np.argsort(t, kind="stable")      # chunks are in doc order: docs stay ascending per term
    t = t[order]
    df = np.bincount(t, minlength=len(vocab))
    offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])
    ids = np.asarray(doc_ids if doc_ids is not None else np.arange(base), dtype=np.int64)
    return Pairs(list(vocab), offsets, d[order].astype(np.int64), f[order], np.concatenate(DL), ids)


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
        return _EMPTY
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


# ---------------------------------------------------------------------------- index state
STATE_KEY = "text.bm25"


def state(ix) -> dict | None:
    """The recorded BM25 state: params, avgdl used for impacts, N, total length."""
    return ix.meta_json(STATE_KEY)


def _ids_blob(a: np.ndarray) -> bytes:
    if a.size and int(a[-1]) >= 2**31:
        return a.astype(np.int64).tobytes()
    return a.astype(np.int32).tobytes()


def _ids_from(blob: bytes, df: int) -> np.ndarray:
    dt = np.int64 if df and len(blob) == 8 * df else np.int32
    return np.frombuffer(blob, dtype=dt)


def _iter_nodes(conn: sqlite3.Connection, ids: Sequence[int] | None = None):
    if ids is None:
        cur = conn.execute("SELECT id, name, text FROM nodes ORDER BY id")
        while True:
            rows = cur.fetchmany(2048)
            if not rows:
                return
            yield from rows
    else:
        ids = sorted(set(int(i) for i in ids))
        for s in range(0, len(ids), _SQL_CHUNK):
            part = ids[s:s + _SQL_CHUNK]
            q = f"SELECT id, name, text FROM nodes WHERE id IN ({','.join('?' * len(part))}) ORDER BY id"
            yield from conn.execute(q, part)


def rebuild(ix, params: BM25Params, progress: Callable | None = None,
            avgdl: float | None = None) -> dict:
    """Recompute every posting from ``nodes`` (``avgdl`` overrides the live mean, for tests)."""
    conn = ix.conn
    an = params.analyzer()
    node_ids: list[int] = []

    def docs():
        for i, (nid, name, text) in enumerate(_iter_nodes(conn)):
            node_ids.append(nid)
            if progress is not None and i % 10000 == 0:
                progress("bm25", i)
            yield an(name or ""), an(text or "")

    return write_postings(ix, docs(), node_ids, params, avgdl)


def write_postings(ix, docs: Iterable[tuple[Sequence[str], Sequence[str]]], node_ids: Sequence[int],
                   params: BM25Params, avgdl: float | None = None) -> dict:
    """Replace all postings with those of ``docs`` (``(name_terms, text_terms)`` per node, in
    ascending node-id order; ``node_ids`` may be filled while ``docs`` is consumed)."""
    conn = ix.conn
    pairs = build_pairs(docs, params.name_weight)
    ids = np.asarray(node_ids, dtype=np.int64)
    n = len(ids)
    total = float(pairs.dl.sum())
    avg = float(avgdl if avgdl is not None else (total / n if n else 0.0))
    imp = impacts(pairs.tf, pairs.dl[pairs.docs], avg, params.k1, params.b)
    post_ids = ids[pairs.docs] if n else pairs.docs
    conn.execute("DELETE FROM text_postings")
    conn.execute("DELETE FROM text_doclen")
    off = pairs.offsets
    conn.executemany(
        "INSERT INTO text_postings(term, df, ids, imp) VALUES (?,?,?,?)",
        ((t, int(off[i + 1] - off[i]), _ids_blob(post_ids[off[i]:off[i + 1]]),
          imp[off[i]:off[i + 1]].tobytes()) for i, t in enumerate(pairs.terms)))
    conn.executemany("INSERT INTO text_doclen(id, len) VALUES (?,?)",
                     zip(ids.tolist(), pairs.dl.tolist()))
    st = {"params": params.index_key(), "avgdl": avg, "n": n, "total": total,
          "analyzer": params.analyzer().settings()}
    ix.set_meta_json(STATE_KEY, st)
    _forget(ix)
    return {"mode": "full", "terms": len(pairs.terms), "postings": int(off[-1]), "docs": n,
            "avgdl": avg}


def apply_changes(ix, params: BM25Params, changes) -> dict:
    """Retract old and add new postings of changed nodes; full rebuild when avgdl drifts.

    Old terms come from ``changes.old`` (name, text before this run). If an old entry is
    missing, or its length disagrees with ``text_doclen``, postings are rebuilt (the stored
    data would otherwise be wrong).
    """
    st = state(ix)
    if not st or st.get("params") != params.index_key():
        return rebuild(ix, params)
    conn = ix.conn
    an = params.analyzer()
    wn = params.name_weight
    gone = sorted(set(changes.removed) | set(changes.modified))
    new = sorted(set(changes.added) | set(changes.modified))
    removals: dict[str, list[int]] = {}
    old_len: dict[int, float] = {}
    for s in range(0, len(gone), _SQL_CHUNK):
        part = gone[s:s + _SQL_CHUNK]
        q = f"SELECT id, len FROM text_doclen WHERE id IN ({','.join('?' * len(part))})"
        old_len.update(conn.execute(q, part).fetchall())
    for nid in gone:
        if nid not in old_len:
            continue                       # never indexed (e.g. added and removed in one run)
        old = changes.old.get(nid)
        if old is None:
            log.info("bm25: no old text for node %s; rebuilding postings", nid)
            return rebuild(ix, params)
        nt, tt = an(old[0] or ""), an(old[1] or "")
        if abs(wn * len(nt) + len(tt) - old_len[nid]) > 1e-6:
            log.info("bm25: old text of node %s does not match the index; rebuilding", nid)
            return rebuild(ix, params)
        for t in set(nt) | set(tt):
            removals.setdefault(t, []).append(nid)
    # new documents
    add_ids: list[int] = []
    additions: dict[str, tuple[list[int], list[float]]] = {}
    new_len: dict[int, float] = {}
    for nid, name, text in _iter_nodes(conn, new):
        nt, tt = an(name or ""), an(text or "")
        c = Counter(nt)
        tf: dict[str, float] = {t: wn * v for t, v in c.items()}
        for t in tt:
            tf[t] = tf.get(t, 0.0) + 1.0
        new_len[nid] = wn * len(nt) + len(tt)
        add_ids.append(nid)
        for t, v in tf.items():
            e = additions.setdefault(t, ([], []))
            e[0].append(nid)
            e[1].append(v)
    n = st["n"] - len(old_len) + len(new_len)
    total = st["total"] - sum(old_len.values()) + sum(new_len.values())
    live = total / n if n else 0.0
    used = st["avgdl"]
    if used <= 0 or abs(live - used) > params.avgdl_drift * used:
        return rebuild(ix, params)
    # rewrite the touched terms
    touched = sorted(set(removals) | set(additions))
    n_rows = 0
    for s in range(0, len(touched), _SQL_CHUNK):
        part = touched[s:s + _SQL_CHUNK]
        q = f"SELECT term, df, ids, imp FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        rows = {r[0]: r for r in conn.execute(q, part)}
        writes, deletes = [], []
        for t in part:
            r = rows.get(t)
            if r is not None:
                ids = _ids_from(r[2], r[1]).astype(np.int64)
                imp = np.frombuffer(r[3], dtype=np.float32)
            else:
                ids = np.zeros(0, np.int64)
                imp = np.zeros(0, np.float32)
            rem = removals.get(t)
            if rem is not None and ids.size:
                keep = ~np.isin(ids, np.asarray(rem, dtype=np.int64))
                ids, imp = ids[keep], imp[keep]
            add = additions.get(t)
            if add is not None:
                a_ids = np.asarray(add[0], dtype=np.int64)
                a_dl = np.asarray([new_len[i] for i in add[0]], dtype=np.float64)
                a_imp = impacts(np.asarray(add[1]), a_dl, used, params.k1, params.b)
                ids = np.concatenate([ids, a_ids])
                imp = np.concatenate([imp, a_imp])
                order = np.argsort(ids, kind="stable")
                ids, imp = ids[order], imp[order]
            if ids.size:
                writes.append((t, int(ids.size), _ids_blob(ids), imp.astype(np.float32).tobytes()))
            else:
                deletes.append((t,))
        conn.executemany("INSERT INTO text_postings(term, df, ids, imp) VALUES (?,?,?,?) "
                         "ON CONFLICT(term) DO UPDATE SET df=excluded.df, ids=excluded.ids, "
                         "imp=excluded.imp", writes)
        conn.executemany("DELETE FROM text_postings WHERE term=?", deletes)
        n_rows += len(writes) + len(deletes)
    conn.executemany("DELETE FROM text_doclen WHERE id=?", [(i,) for i in old_len])
    conn.executemany("INSERT OR REPLACE INTO text_doclen(id, len) VALUES (?,?)", new_len.items())
    st.update({"n": n, "total": total})
    ix.set_meta_json(STATE_KEY, st)
    _forget(ix)
    return {"mode": "incremental", "terms_rewritten": n_rows, "removed": len(old_len),
            "added": len(new_len), "avgdl_live": live, "avgdl": used}


def _forget(ix) -> None:
    """Drop this process's cached state (a same-generation rebuild must not serve stale N)."""
    cache = getattr(ix, "_cache", None)
    if isinstance(cache, dict):
        cache.pop("text.bm25.state", None)


# ---------------------------------------------------------------------------- query
def clean_query(query) -> str:
    """Any object -> a str that SQLite can bind (lone surrogates replaced, NULs dropped)."""
    if not isinstance(query, str):
        query = "" if query is None else str(query)
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        query = query.encode("utf-8", "replace").decode("utf-8")
    return query.replace("\x00", " ")


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


def _stored_params(ix) -> tuple[dict | None, BM25Params | None]:
    def load():
        st = state(ix)
        if not st:
            return (None, None)
        p = st.get("params", {})
        return (st, BM25Params(k1=p.get("k1", 1.5), b=p.get("b", 0.75),
                               name_weight=p.get("name_weight", 1.0),
                               stemmer=p.get("stemmer", "porter2"),
                               split_code=p.get("split_code", True)))
    return ix.cached("text.bm25.state", load)


def score_terms(ix, qw: dict[str, float], k: int = 100, idf_method: str = "lucene",
                n_docs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` node ids for weighted terms, reading only those terms' postings."""
    st, _ = _stored_params(ix)
    if not st or not qw or k <= 0:
        return _EMPTY
    N = int(n_docs if n_docs is not None else st["n"])
    terms = [t for t, w in qw.items() if w]
    rows = []
    for s in range(0, len(terms), _SQL_CHUNK):
        part = terms[s:s + _SQL_CHUNK]
        q = f"SELECT term, df, ids, imp FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        rows += ix.conn.execute(q, part).fetchall()
    if not rows:
        return _EMPTY
    lists = []
    max_id = 0
    for term, df, ib, pb in rows:
        ids = _ids_from(ib, df)
        w = qw[term] * float(idf(df, N, idf_method))
        if w == 0.0 or ids.size == 0:
            continue
        lists.append((ids, np.float32(w), np.frombuffer(pb, dtype=np.float32)))
        max_id = max(max_id, int(ids[-1]))
    if not lists:
        return _EMPTY
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
    st, params = _stored_params(ix)
    empty = (np.zeros(0, np.int64), np.zeros(0), 0)
    if st is None:
        return empty
    N = int(st["n"])
    qw = query if isinstance(query, dict) else query_weights(params.analyzer(), clean_query(query), keywords,
                                                             keyword_boost)
    terms = [t for t, w in qw.items() if w]
    if not terms:
        return (empty[0], empty[1], N)
    lists = []
    max_id = 0
    for s in range(0, len(terms), _SQL_CHUNK):
        part = terms[s:s + _SQL_CHUNK]
        q = f"SELECT term, df, ids, imp FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        for term, df, ib, pb in ix.conn.execute(q, part):
            ids = _ids_from(ib, df)
            if ids.size:
                lists.append((ids, qw[term] * float(idf(df, N, idf_method)), np.frombuffer(pb, dtype=np.float32)))
                max_id = max(max_id, int(ids[-1]))
    if not lists:
        return (empty[0], empty[1], N)
    scores = np.zeros(max_id + 1, dtype=np.float64)
    for ids, w, imp in lists:
        scores[ids] += w * imp
    nz = np.flatnonzero(scores > 0)
    return nz.astype(np.int64), scores[nz], N


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
    st, params = _stored_params(ix)
    if st is None or not len(ids):
        return out
    qw = query if isinstance(query, dict) else query_weights(params.analyzer(), clean_query(query), keywords,
                                                             keyword_boost)
    terms = [t for t, w in qw.items() if w]
    if not terms:
        return out
    N = int(st["n"])
    for s in range(0, len(terms), _SQL_CHUNK):
        part = terms[s:s + _SQL_CHUNK]
        q = f"SELECT term, df, ids, imp FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        for term, df, ib, pb in ix.conn.execute(q, part):
            pid = _ids_from(ib, df)
            if not pid.size:
                continue
            pos = np.minimum(np.searchsorted(pid, ids), pid.size - 1)
            hit = pid[pos] == ids
            if hit.any():
                imp = np.frombuffer(pb, dtype=np.float32)
                out[hit] += qw[term] * float(idf(df, N, idf_method)) * imp[pos[hit]]
    return out


def search(ix, query: str, k: int = 100, *, keywords: Iterable[str] | None = None,
           keyword_boost: float = 5.0, idf_method: str = "lucene", **opts) -> tuple[np.ndarray, np.ndarray]:
    """BM25 channel: (node ids int64, scores float32), best first, at most ``k``.

    ``keywords`` (alias ``boost_terms``): raw words whose terms are added ``keyword_boost``
    (alias ``boost``) times to the query weights: the intent keyword boost.
    Never raises on the query string; an index without postings gives empty arrays.
    """
    if keywords is None and opts.get("boost_terms"):
        keywords = opts["boost_terms"]
    if "boost" in opts and opts["boost"] is not None:
        keyword_boost = float(opts["boost"])
    query = clean_query(query)
    st, params = _stored_params(ix)
    if st is None:
        return _EMPTY
    try:
        k = int(k)
    except (TypeError, ValueError):
        k = 100
    qw = query_weights(params.analyzer(), query, keywords, keyword_boost)
    return score_terms(ix, qw, k, idf_method)


def math_idf(df: int, n: int, method: str = "lucene") -> float:
    """Scalar idf (for explanations)."""
    r = (n - df + 0.5) / (df + 0.5)
    return math.log1p(r) if method == "lucene" else math.log(r)
