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

Storage (table ``text_postings(term, df, ids, tf)``, ``WITHOUT ROWID`` since migration
``0007_text_compact``; state ``format`` :data:`FORMAT`): one row per term with ``df``, ``ids``
(sorted node ids, gap-coded, see :func:`encode_ids`: about 1-2 bytes per id) and ``tf`` (the
weighted term frequencies, uint8 / uint16, float32 when a name weight makes them fractional).
A query reads only its own terms' rows and turns ``tf`` into impacts with the per-node norms
``k1 * (1 - b + b * dl / avgdl)``, computed once per index generation from ``text_doclen``
and the recorded ``avgdl`` (:func:`_norms`); :func:`impacts` is the same two steps, so stored
and in-memory impacts are bit-identical float32. Stdlib index: 19.3 MB -> 8.4 MB for the
table and its former autoindex.

Impacts depend on ``avgdl``. The index records the ``avgdl`` it used; incremental updates
keep it, so scores are exactly BM25 with that recorded ``avgdl`` (``text_doclen`` holds every
node's weighted length, so the live value is always known). When the live ``avgdl`` drifts
more than ``avgdl_drift`` (10 %) from the recorded one, all postings are rebuilt. ``idf`` is
computed at query time from ``df`` and the live ``N``, so it is always exact. Postings in an
older layout (no ``format`` in the state) read as no postings; migration 0007 rebuilds them.
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

__all__ = ["BM25Params", "MemoryBM25", "build_pairs", "idf", "impacts", "doc_norms", "tf_impacts",
           "encode_ids", "encode_ids_many", "decode_ids", "decode_ids_many", "encode_tf", "encode_tf_many",
           "decode_tf", "list_impacts", "FORMAT", "search", "score_ids", "score_all",
           "score_terms", "rebuild", "write_postings", "apply_changes", "state", "query_weights"]

log = logging.getLogger(__name__)

_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
FORMAT = 2          # postings layout (state["format"]): 2 = gap-coded ids + term frequencies
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


# ---------------------------------------------------------------------------- posting codecs
# Node-id lists (BM25 postings and trigram postings) are stored as the gaps between sorted ids
# (the first gap is the first id). One header byte says how:
#   1, 2, 4, 8        every gap in that many bytes (uint8/16/32/64, little-endian)
#   0x12, 0x14, 0x18  "byte gaps with exceptions": [m: uint W][m exceptions: uint W][n bytes],
#                     W = low nibble; a byte 0 stands for the next exception (a gap that is 0
#                     or > 255, in order). Dense lists (common terms, trigrams) with a few big
#                     gaps, the first id included, cost ~1 byte per id.
# The encoder picks the smallest of the two per list. Term frequencies are stored without a
# header: uint8, uint16 or float32 (weighted counts that are not whole numbers), the width
# being len(blob) // df.
_LE = {1: np.dtype(np.uint8), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
_ESC = 0x10


def _width(v: int) -> int:
    return 1 if v < 1 << 8 else 2 if v < 1 << 16 else 4 if v < 1 << 32 else 8


def encode_ids_many(ids: np.ndarray, offsets) -> list[bytes]:
    """:func:`encode_ids` of ``ids[offsets[i]:offsets[i+1]]`` for every i (gaps computed in one pass)."""
    ids = np.asarray(ids, dtype=np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    n_lists = len(off) - 1
    if n_lists <= 0:
        return []
    gaps = ids.copy()
    gaps[1:] -= ids[:-1]
    starts, ends = off[:-1], off[1:]
    nonempty = ends > starts
    gaps[starts[nonempty]] = ids[starts[nonempty]]       # each list starts from 0
    if gaps.size and int(gaps.min()) < 0:
        raise ValueError("node ids must be ascending and >= 0")
    # per list: the largest gap, and the gaps a byte cannot hold (0 or > 255)
    exc = (gaps == 0) | (gaps > 255)
    cnt = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(exc, out=cnt[1:])
    n_exc = (cnt[ends] - cnt[starts]).tolist()
    mx = np.zeros(n_lists, dtype=np.int64)
    if gaps.size:
        mx[nonempty] = np.maximum.reduceat(gaps, starts[nonempty])
    out = []
    for s, e, g, m in zip(starts.tolist(), ends.tolist(), mx.tolist(), n_exc):
        n = e - s
        w = _width(g)
        if w == 1 or n == 0:
            out.append(bytes((w,)) + gaps[s:e].astype(_LE[w]).tobytes())
            continue
        ew = max(2, _width(max(g, m)))
        if 1 + ew + m * ew + n < 1 + n * w:
            part = gaps[s:e]
            big = (part == 0) | (part > 255)
            out.append(bytes((_ESC | ew,)) + np.asarray([m], dtype=_LE[ew]).tobytes()
                       + part[big].astype(_LE[ew]).tobytes()
                       + np.where(big, 0, part).astype(np.uint8).tobytes())
        else:
            out.append(bytes((w,)) + gaps[s:e].astype(_LE[w]).tobytes())
    return out


def encode_ids(ids) -> bytes:
    """Ascending node ids (>= 0) -> blob (see the codec notes above)."""
    a = np.asarray(ids, dtype=np.int64)
    return encode_ids_many(a, [0, a.size])[0]


def decode_ids(blob: bytes) -> np.ndarray:
    """Blob -> ascending node ids (int64), vectorised: one ``frombuffer`` and one ``cumsum``."""
    h = blob[0]
    if h < _ESC:
        return np.frombuffer(blob, dtype=_LE[h], offset=1).astype(np.int64).cumsum()
    ew = h & 0x0F
    dt = _LE[ew]
    m = int(np.frombuffer(blob, dtype=dt, count=1, offset=1)[0])
    g = np.frombuffer(blob, dtype=np.uint8, offset=1 + ew + m * ew).astype(np.int64)
    if m:
        g[g == 0] = np.frombuffer(blob, dtype=dt, count=m, offset=1 + ew)
    return np.cumsum(g)


def decode_ids_many(blobs: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Several blobs at once: (all ids concatenated, int64 offsets [len(blobs) + 1]). Lists of
    one fixed width are joined and decoded with one ``cumsum`` (each list's running total
    before it subtracted), so the per-list cost is a few Python operations."""
    n = len(blobs)
    sizes = np.zeros(n, dtype=np.int64)
    groups: dict[int, list[int]] = {}
    single: dict[int, np.ndarray] = {}
    for i, b in enumerate(blobs):
        h = b[0]
        if h < 8:
            sizes[i] = (len(b) - 1) // h
            groups.setdefault(h, []).append(i)
        else:                                  # uint64 gaps or byte gaps with exceptions
            single[i] = a = decode_ids(b)
            sizes[i] = a.size
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    out = np.empty(int(off[-1]), dtype=np.int64)
    for h, idx in groups.items():
        cs = np.frombuffer(b"".join([blobs[i][1:] for i in idx]), dtype=_LE[h]).astype(np.int64).cumsum()
        sz = sizes[idx]
        ends = np.cumsum(sz)
        before = np.zeros(len(idx), dtype=np.int64)
        inner = ends - sz > 0
        before[inner] = cs[(ends - sz)[inner] - 1]
        if len(idx) == n:
            out[:] = cs - np.repeat(before, sz)
        else:
            out[np.repeat(off[idx] - (ends - sz), sz) + np.arange(cs.size)] = cs - np.repeat(before, sz)
    for i, a in single.items():
        out[off[i]:off[i + 1]] = a
    return out, off


def encode_ids_ref(ids) -> bytes:
    """Slow, obvious twin of :func:`encode_ids` (tests check that both write the same bytes)."""
    ids = [int(i) for i in ids]
    gaps = [b - a for a, b in zip([0] + ids[:-1], ids)]
    w = 1
    for g in gaps:
        while g >= 1 << (8 * w):
            w *= 2
    fixed = bytes([w]) + b"".join(g.to_bytes(w, "little") for g in gaps)
    if w == 1 or not gaps:
        return fixed
    big = [g for g in gaps if g == 0 or g > 255]
    ew = 2
    while max(gaps + [len(big)]) >= 1 << (8 * ew):
        ew *= 2
    esc = (bytes([0x10 | ew]) + len(big).to_bytes(ew, "little") + b"".join(g.to_bytes(ew, "little") for g in big)
           + bytes(0 if (g == 0 or g > 255) else g for g in gaps))
    return esc if len(esc) < len(fixed) else fixed


def decode_ids_ref(blob: bytes) -> list[int]:
    """Slow, obvious twin of :func:`decode_ids`."""
    h = blob[0]
    if h < 0x10:
        gaps = [int.from_bytes(blob[i:i + h], "little") for i in range(1, len(blob), h)]
    else:
        ew = h & 0x0F
        m = int.from_bytes(blob[1:1 + ew], "little")
        big = [int.from_bytes(blob[1 + ew + j * ew:1 + ew + (j + 1) * ew], "little") for j in range(m)]
        gaps = []
        for byte in blob[1 + ew + m * ew:]:
            gaps.append(big.pop(0) if byte == 0 else byte)
    out, acc = [], 0
    for g in gaps:
        acc += g
        out.append(acc)
    return out


def encode_tf_many(tf: np.ndarray, offsets) -> list[bytes]:
    """Term frequencies per list: uint8 when all are whole and <= 255, uint16 up to 65535,
    else float32 (no header: the width is ``len(blob) // df``)."""
    tf = np.asarray(tf, dtype=np.float32)
    off = np.asarray(offsets, dtype=np.int64)
    starts, ends = off[:-1], off[1:]
    if len(starts) == 0:
        return []
    whole = (tf == np.floor(tf)) & (tf >= 0)
    bad = np.zeros(tf.size + 1, dtype=np.int64)
    np.cumsum(~whole, out=bad[1:])
    nonempty = ends > starts
    mx = np.zeros(len(starts), dtype=np.float64)
    if tf.size:
        mx[nonempty] = np.maximum.reduceat(tf, starts[nonempty])
    u8 = tf.astype(np.uint8) if tf.size else tf
    out = []
    for s, e, m, b in zip(starts.tolist(), ends.tolist(), mx.tolist(), (bad[ends] - bad[starts]).tolist()):
        if b or m > 65535:
            out.append(tf[s:e].astype("<f4").tobytes())
        elif m > 255:
            out.append(tf[s:e].astype("<u2").tobytes())
        else:
            out.append(u8[s:e].tobytes())
    return out


def encode_tf(tf) -> bytes:
    a = np.asarray(tf, dtype=np.float32)
    return encode_tf_many(a, [0, a.size])[0]


def _tf_view(blob: bytes, df: int) -> np.ndarray:
    w = len(blob) // df if df else 1
    return np.frombuffer(blob, dtype=np.uint8 if w == 1 else "<u2" if w == 2 else "<f4")


def decode_tf(blob: bytes, df: int) -> np.ndarray:
    """Stored term frequencies of a ``df``-long list as float32."""
    return _tf_view(blob, df).astype(np.float32)


def _iter_nodes(conn: sqlite3.Connection, ids: Sequence[int] | None = None):
    if ids is None:
        cur = conn.execute("SELECT id, name, kgtext(text) FROM nodes ORDER BY id")
        while True:
            rows = cur.fetchmany(2048)
            if not rows:
                return
            yield from rows
    else:
        ids = sorted(set(int(i) for i in ids))
        for s in range(0, len(ids), _SQL_CHUNK):
            part = ids[s:s + _SQL_CHUNK]
            q = f"SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({','.join('?' * len(part))}) ORDER BY id"
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
    post_ids = ids[pairs.docs] if n else pairs.docs
    conn.execute("DELETE FROM text_postings")
    conn.execute("DELETE FROM text_doclen")
    off = pairs.offsets
    conn.executemany(
        "INSERT INTO text_postings(term, df, ids, tf) VALUES (?,?,?,?)",
        zip(pairs.terms, np.diff(off).tolist(), encode_ids_many(post_ids, off), encode_tf_many(pairs.tf, off)))
    conn.executemany("INSERT INTO text_doclen(id, len) VALUES (?,?)",
                     zip(ids.tolist(), pairs.dl.tolist()))
    _save_doclen(ix, ids, np.asarray(pairs.dl, dtype=np.float64))
    st = {"params": params.index_key(), "avgdl": avg, "n": n, "total": total, "format": FORMAT,
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
    if not st or st.get("params") != params.index_key() or st.get("format") != FORMAT:
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
        q = f"SELECT term, df, ids, tf FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        rows = {r[0]: r for r in conn.execute(q, part)}
        writes, deletes = [], []
        for t in part:
            r = rows.get(t)
            if r is not None:
                ids = decode_ids(r[2])
                tf = decode_tf(r[3], r[1])
            else:
                ids = np.zeros(0, np.int64)
                tf = np.zeros(0, np.float32)
            rem = removals.get(t)
            if rem is not None and ids.size:
                keep = ~np.isin(ids, np.asarray(rem, dtype=np.int64))
                ids, tf = ids[keep], tf[keep]
            add = additions.get(t)
            if add is not None:
                ids = np.concatenate([ids, np.asarray(add[0], dtype=np.int64)])
                tf = np.concatenate([tf, np.asarray(add[1], dtype=np.float32)])
                order = np.argsort(ids, kind="stable")
                ids, tf = ids[order], tf[order]
            if ids.size:
                writes.append((t, int(ids.size), encode_ids(ids), encode_tf(tf)))
            else:
                deletes.append((t,))
        conn.executemany("INSERT INTO text_postings(term, df, ids, tf) VALUES (?,?,?,?) "
                         "ON CONFLICT(term) DO UPDATE SET df=excluded.df, ids=excluded.ids, "
                         "tf=excluded.tf", writes)
        conn.executemany("DELETE FROM text_postings WHERE term=?", deletes)
        n_rows += len(writes) + len(deletes)
    conn.executemany("DELETE FROM text_doclen WHERE id=?", [(i,) for i in old_len])
    conn.executemany("INSERT OR REPLACE INTO text_doclen(id, len) VALUES (?,?)", new_len.items())
    _patch_doclen(ix, old_len, new_len)
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
    """(state, params) of the stored postings; (None, None) when there are none in this
    format (an index written by an older kgsearch reads as empty until its next ``index``)."""
    return _stored(ix)[:2]


def _stored(ix) -> tuple[dict | None, BM25Params | None, dict]:
    """(state, params, memo): memo holds what is derived from them (the doc norms), so one
    generation check per query covers all of it."""
    def load():
        st = state(ix)
        if not st or st.get("format") != FORMAT:
            return (None, None, {})
        p = st.get("params", {})
        return (st, BM25Params(k1=p.get("k1", 1.5), b=p.get("b", 0.75),
                               name_weight=p.get("name_weight", 1.0),
                               stemmer=p.get("stemmer", "porter2"),
                               split_code=p.get("split_code", True)), {})
    return ix.cached("text.bm25.state", load)


def _norms(ix, st: dict, params: BM25Params, memo: dict | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`doc_norms` of every indexed node with the recorded ``avgdl``, loaded once per
    index generation: (norms by node id, None), or (norms, ascending ids) when ids are sparse.
    ``memo``: the third item of :func:`_stored` (saves a generation check)."""
    if memo is None:
        memo = _stored(ix)[2]
    hit = memo.get("norms")
    if hit is None:
        hit = memo["norms"] = _load_norms(ix, st, params)
    return hit


DOCLEN_IDS, DOCLEN_LEN = "text.doclen_ids", "text.doclen_len"


def _read_doclen(ix) -> tuple[np.ndarray, np.ndarray]:
    rows = ix.conn.execute("SELECT id, len FROM text_doclen ORDER BY id").fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    dl = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
    return ids, dl


def _save_doclen(ix, ids: np.ndarray, dl: np.ndarray) -> None:
    """``text_doclen`` again as two blobs, so that a query process loads the document norms
    with ``np.frombuffer`` (about 2 ms) instead of one Python row per node (80 ms for the
    stdlib's 75K nodes, paid by every cold CLI search)."""
    ix.put_array(DOCLEN_IDS, np.asarray(ids, dtype=np.int64))
    ix.put_array(DOCLEN_LEN, np.asarray(dl, dtype=np.float64))


def _patch_doclen(ix, old_len: dict, new_len: dict) -> None:
    ids, dl = ix.get_array(DOCLEN_IDS), ix.get_array(DOCLEN_LEN)
    if ids is None or dl is None or len(ids) != len(dl):
        ids, dl = _read_doclen(ix)                     # (the table is already up to date)
        _save_doclen(ix, ids, dl)
        return
    gone = np.fromiter(list(old_len) + list(new_len), dtype=np.int64)
    keep = ~np.isin(ids, gone)
    add_ids = np.fromiter(new_len.keys(), dtype=np.int64, count=len(new_len))
    add_dl = np.fromiter(new_len.values(), dtype=np.float64, count=len(new_len))
    ids = np.concatenate([ids[keep], add_ids])
    dl = np.concatenate([dl[keep], add_dl])
    order = np.argsort(ids, kind="stable")
    _save_doclen(ix, ids[order], dl[order])


def _load_norms(ix, st: dict, params: BM25Params) -> tuple[np.ndarray, np.ndarray | None]:
    ids, dl = ix.get_array(DOCLEN_IDS), ix.get_array(DOCLEN_LEN)
    if ids is None or dl is None or len(ids) != len(dl) or len(ids) != int(st.get("n", -1)):
        ids, dl = _read_doclen(ix)                     # an index written before the blobs
    norm = doc_norms(dl, float(st["avgdl"]), params.k1, params.b)
    if ids.size and int(ids[-1]) < 4 * ids.size + 65536:
        dense = np.zeros(int(ids[-1]) + 1, dtype=np.float64)
        dense[ids] = norm
        return dense, None
    return norm, ids


def _norms_of(norms: tuple[np.ndarray, np.ndarray | None], ids: np.ndarray) -> np.ndarray:
    arr, keys = norms
    if arr.size == 0:
        return np.zeros(len(ids), dtype=np.float64)
    if keys is None:
        return arr.take(ids, mode="clip")     # a node missing from text_doclen never raises
    return arr[np.minimum(np.searchsorted(keys, ids), keys.size - 1)]


def list_impacts(ix, ids: np.ndarray, tf_blob: bytes, df: int) -> np.ndarray:
    """float32 impacts of one stored posting list (bit-identical to :func:`impacts` at build time)."""
    st, params = _stored_params(ix)
    return _impacts(_norms(ix, st, params), params.k1, ids, tf_blob, df)


def _impacts(norms, k1: float, ids: np.ndarray, tf_blob: bytes, df: int) -> np.ndarray:
    # uint8/uint16/float32 -> float64 directly: the same values tf_impacts gets from float32 tf
    return tf_impacts(_tf_view(tf_blob, df), _norms_of(norms, ids), k1)


def _lists(norms, k1: float, ws: list, ibs: list[bytes], tfs: list[np.ndarray]) -> tuple[list, int]:
    """[(ids, weight, impacts)] of several stored lists, decoded and scored in one pass of
    numpy calls (elementwise, so the same values as one list at a time), and the largest id."""
    if len(ibs) == 1:
        ids = decode_ids(ibs[0])
        return [(ids, ws[0], tf_impacts(tfs[0], _norms_of(norms, ids), k1))], int(ids[-1])
    lists = [decode_ids(b) for b in ibs]       # (decode_ids_many is slower on a query's few lists)
    imp = tf_impacts(np.concatenate(tfs), _norms_of(norms, np.concatenate(lists)), k1)
    out, s = [], 0
    for ids, w in zip(lists, ws):
        out.append((ids, w, imp[s:s + ids.size]))
        s += ids.size
    return out, max(int(a[-1]) for a in lists)


def score_terms(ix, qw: dict[str, float], k: int = 100, idf_method: str = "lucene",
                n_docs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` node ids for weighted terms, reading only those terms' postings."""
    st, params, memo = _stored(ix)
    if not st or not qw or k <= 0:
        return _EMPTY
    N = int(n_docs if n_docs is not None else st["n"])
    terms = [t for t, w in qw.items() if w]
    rows = []
    for s in range(0, len(terms), _SQL_CHUNK):
        part = terms[s:s + _SQL_CHUNK]
        q = f"SELECT term, df, ids, tf FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        rows += ix.conn.execute(q, part).fetchall()
    if not rows:
        return _EMPTY
    ws, ibs, tfs = [], [], []
    idfs = idf([r[1] for r in rows], N, idf_method).tolist()     # one call: the same values
    for (term, df, ib, tb), f in zip(rows, idfs):
        w = qw[term] * f
        if w == 0.0 or not df:
            continue
        ws.append(np.float32(w))
        ibs.append(ib)
        tfs.append(_tf_view(tb, df))
    if not ws:
        return _EMPTY
    lists, max_id = _lists(_norms(ix, st, params, memo), params.k1, ws, ibs, tfs)
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
    st, params, memo = _stored(ix)
    empty = (np.zeros(0, np.int64), np.zeros(0), 0)
    if st is None:
        return empty
    N = int(st["n"])
    qw = query if isinstance(query, dict) else query_weights(params.analyzer(), clean_query(query), keywords,
                                                             keyword_boost)
    terms = [t for t, w in qw.items() if w]
    if not terms:
        return (empty[0], empty[1], N)
    ws, ibs, tfs = [], [], []
    for s in range(0, len(terms), _SQL_CHUNK):
        part = terms[s:s + _SQL_CHUNK]
        q = f"SELECT term, df, ids, tf FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        rows = ix.conn.execute(q, part).fetchall()
        for (term, df, ib, tb), f in zip(rows, idf([r[1] for r in rows], N, idf_method).tolist()):
            if df:
                ws.append(qw[term] * f)
                ibs.append(ib)
                tfs.append(_tf_view(tb, df))
    if not ws:
        return (empty[0], empty[1], N)
    lists, max_id = _lists(_norms(ix, st, params, memo), params.k1, ws, ibs, tfs)
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
    st, params, memo = _stored(ix)
    if st is None or not len(ids):
        return out
    qw = query if isinstance(query, dict) else query_weights(params.analyzer(), clean_query(query), keywords,
                                                             keyword_boost)
    terms = [t for t, w in qw.items() if w]
    if not terms:
        return out
    N = int(st["n"])
    norms = _norms(ix, st, params, memo)
    for s in range(0, len(terms), _SQL_CHUNK):
        part = terms[s:s + _SQL_CHUNK]
        q = f"SELECT term, df, ids, tf FROM text_postings WHERE term IN ({','.join('?' * len(part))})"
        for term, df, ib, tb in ix.conn.execute(q, part):
            pid = decode_ids(ib)
            if not pid.size:
                continue
            pos = np.minimum(np.searchsorted(pid, ids), pid.size - 1)
            hit = pid[pos] == ids
            if hit.any():
                tf = _tf_view(tb, df)[pos[hit]]
                imp = tf_impacts(tf, _norms_of(norms, pid[pos[hit]]), params.k1)
                out[hit] += qw[term] * float(idf(df, N, idf_method)) * imp
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
