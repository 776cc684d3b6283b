"""The dense channel past the vector cache: 1-bit sketches in RAM, exact int8 rows on demand.

Issue 16, item 1 (design and measurements: docs/scale-study.md, section B). When the int8
codes do not fit the vector cache (``vectors._cache_budget()``: 64 MiB, i.e. 262K vectors of
256 dims, or a quarter of ``KGSEARCH_MEMORY_MB``), the shipped path streamed every block from
SQLite for every query (230-410 ms at 1M). Instead, for indexes of at least ``SKETCH_MIN``
vectors, the embed step also writes (migration ``0012_vec_sketch``):

* ``vec_sketch(block, n, ids, bits)``: per block of 4096 ids, the sign bit of every rotated
  int8 code (:func:`kgsearch.embed.sketch.sketch_codes`, column-major ``(d/64, n)`` uint64):
  32 bytes a vector, 30.5 MiB at 1M, loaded once per process;
* ``vec_rows(id, scale, code)``: the same int8 codes one row per node, so the short list's
  rows are read by primary key (1000 rows: ~8 ms warm) instead of whole 1 MB blocks;
* the blob ``embed.moments``: ``m1 = sum v_i`` and ``M2 = sum v_i v_i^T`` of the stored
  vectors (float64, ``(d + 1, d)``), kept up to date block by block, which give the exact
  mean and spread of the dense scores over the whole index for any query
  (:func:`~kgsearch.embed.sketch.score_stats`): what z-normalisation needed the full scan for.

A query then runs the cascade (Hamming over every sketch keeps ``N_FIRST``, the asymmetric
4-bit score keeps ``N_CAND``), reads those rows and rescores them exactly with the full scan's
own arithmetic: recall@10 against exact float search 0.976 at 1M (the full int8 scan: 0.988).
Indexes under the cache keep the exact in-RAM scan, so small-index results are unchanged; the
streamed scan stays as the fallback (sketch missing or larger than the cache budget) and as
the reference the tests compare with.
"""
from __future__ import annotations

import math

import numpy as np

from . import sketch as sk

__all__ = ["SKETCH_MIN", "N_FIRST", "N_CAND", "note_block", "note_all", "sync", "clear", "load",
           "fetch_rows", "search", "shortlist", "DenseFull", "score_full", "score_rows", "estimate", "available"]

SKETCH_MIN = 1 << 16        # vectors: below this the codes (<= 16 MiB) always fit the default cache
N_FIRST = 8000              # Hamming keeps this many
N_CAND = 1000               # the asymmetric score keeps this many; their rows are rescored exactly
LOOKUP_EXACT = 512          # a lookup of more unknown nodes than this is estimated from the sketch
SIGN_NORM = math.sqrt(2 / math.pi)   # E <sign(x)/sqrt(d), x> for a rotated unit vector
MOMENTS_BLOB = "embed.moments"
STATE_META = "embed.sketch"             # JSON {"n": vectors covered, "dims": d}
_TOUCHED = "embed.touched"              # ix._cache: blocks rewritten since the last sync (or "all")
_KEY = "embed.sketch_mem"               # ix.cached: the loaded Sketch (or False)


# ---------------------------------------------------------------------------- index time
def note_block(ix, block: int) -> None:
    """``vectors`` calls this when it rewrites a block (the next :func:`sync` redoes it)."""
    t = ix._cache.get(_TOUCHED)
    if t == "all":
        return
    if t is None:
        t = ix._cache[_TOUCHED] = set()
    t.add(int(block))


def note_all(ix) -> None:
    ix._cache[_TOUCHED] = "all"


def clear(ix) -> None:
    ix.conn.execute("DELETE FROM vec_rows")
    ix.conn.execute("DELETE FROM vec_sketch")
    ix.conn.execute("DELETE FROM blobs WHERE name = ?", (MOMENTS_BLOB,))
    ix.conn.execute("DELETE FROM meta WHERE key = ?", (STATE_META,))
    ix._cache.pop(_KEY, None)


def _moments_of(codes, scales) -> tuple[np.ndarray, np.ndarray]:
    _, m1, m2 = sk.moments(codes, scales)
    return m1, m2


def _write_sketch(ix, block: int, ids, codes) -> None:
    if len(ids) == 0:
        ix.conn.execute("DELETE FROM vec_sketch WHERE block = ?", (block,))
        return
    bits = sk.sketch_codes(codes)
    ix.conn.execute("INSERT OR REPLACE INTO vec_sketch(block, n, ids, bits) VALUES (?,?,?,?)",
                    (block, len(ids), np.ascontiguousarray(ids, dtype="<i8").tobytes(),
                     np.ascontiguousarray(bits, dtype="<u8").tobytes()))


def _write_rows(ix, ids, scales, codes) -> None:
    ix.conn.executemany("INSERT OR REPLACE INTO vec_rows(id, scale, code) VALUES (?,?,?)",
                        zip(ids.tolist(), scales.astype(np.float64).tolist(), (c.tobytes() for c in codes)))


def _write_block(ix, block: int, ids, scales, codes) -> None:
    _write_sketch(ix, block, ids, codes)
    if len(ids):
        _write_rows(ix, ids, scales, codes)


def _rebuild(ix, dims: int) -> int:
    """Every row, then every sketch, in two passes over the blocks: a query process reads all
    the sketches at its first dense query, and written after the rows (not block by block
    between them) their pages lie together in the file, so a cold read is one sequential
    sweep instead of ~1,400 seeks at 1M nodes (0.3 s -> 0.05 s on this machine's disk)."""
    from .vectors import iter_blocks, BLOCK_SHIFT

    clear(ix)
    m1, m2 = np.zeros(dims), np.zeros((dims, dims))
    n = 0
    for ids, _h, scales, codes in iter_blocks(ix):
        _write_rows(ix, ids, scales, codes)
        a, b = _moments_of(codes, scales)
        m1 += a
        m2 += b
        n += len(ids)
    for ids, _h, _scales, codes in iter_blocks(ix):
        _write_sketch(ix, int(ids[0]) >> BLOCK_SHIFT, ids, codes)
    _save(ix, n, dims, m1, m2)
    return n


def _save(ix, n: int, dims: int, m1, m2) -> None:
    ix.put_array(MOMENTS_BLOB, np.vstack([m1[None, :], m2]))
    ix.set_meta_json(STATE_META, {"n": int(n), "dims": int(dims)})
    ix._cache.pop(_KEY, None)


def _stored_rows(ix, lo: int, hi: int, dims: int):
    rows = ix.conn.execute("SELECT id, scale, code FROM vec_rows WHERE id >= ? AND id < ? ORDER BY id",
                           (lo, hi)).fetchall()
    return _decode_rows(rows, dims)


def _decode_rows(rows, dims: int):
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    scales = np.fromiter((r[1] for r in rows), dtype=np.float32, count=len(rows))
    codes = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int8).reshape(len(rows), dims)
    return ids, scales, codes


def sync(ix, full: bool = False) -> dict:
    """Bring ``vec_rows``, ``vec_sketch`` and the moments in line with ``vec_blocks`` (called
    by the embed step after it wrote vectors): the blocks rewritten since the last call, or
    everything when ``full``, when the state is missing or when the counts disagree."""
    from .vectors import BLOCK_SHIFT, _load_block, vector_count

    touched = ix._cache.pop(_TOUCHED, None)
    n = vector_count(ix)
    state = ix.meta_json(STATE_META)
    if n == 0 or n < SKETCH_MIN:
        if state is not None or ix.conn.execute("SELECT 1 FROM vec_sketch LIMIT 1").fetchone():
            clear(ix)
        return {"sketch": False}
    dims = int(ix.conn.execute("SELECT max(dims) FROM vec_blocks").fetchone()[0])
    mom = ix.get_array(MOMENTS_BLOB)
    if full or touched == "all" or state is None or state.get("dims") != dims or mom is None:
        return {"sketch": True, "rebuilt": True, "vectors": _rebuild(ix, dims)}
    m1, m2 = np.array(mom[0], dtype=np.float64), np.array(mom[1:], dtype=np.float64)
    count = int(state.get("n", 0))
    for b in sorted(touched or ()):
        lo, hi = b << BLOCK_SHIFT, (b + 1) << BLOCK_SHIFT
        oi, osc, oc = _stored_rows(ix, lo, hi, dims)
        if len(oi):
            a, c = _moments_of(oc, osc)
            m1 -= a
            m2 -= c
            count -= len(oi)
            ix.conn.execute("DELETE FROM vec_rows WHERE id >= ? AND id < ?", (lo, hi))
        ni, _h, nsc, nc = _load_block(ix, b, dims)
        _write_block(ix, b, ni, nsc, nc)
        if len(ni):
            a, c = _moments_of(nc, nsc)
            m1 += a
            m2 += c
            count += len(ni)
    if count != n:                                   # blocks changed behind our back: start over
        return {"sketch": True, "rebuilt": True, "vectors": _rebuild(ix, dims)}
    if touched:
        _save(ix, n, dims, m1, m2)
    return {"sketch": True, "rebuilt": False, "blocks": len(touched or ())}


# ---------------------------------------------------------------------------- query time
class Sketch:
    """Every stored vector's sign bits ``(d/64, n)`` with its node ids, and the moments.

    The ids are a range (``first .. first + n - 1``, kept as two ints: every node has a vector,
    as in a fresh build; 3.8 MiB less at 1M) or an int32/int64 array; :meth:`id_at` and
    :meth:`find` hide which."""

    def __init__(self, ids, bits, mom, dims: int, first: int | None = None):
        self._ids, self.bits, self.dims = ids, bits, dims
        self.n = int(bits.shape[1]) if ids is None else len(ids)
        self.first = first
        self.mom = (self.n, np.asarray(mom[0], dtype=np.float64), np.asarray(mom[1:], dtype=np.float64))

    @property
    def ids(self) -> np.ndarray:
        """All ids ascending (materialised for a range: for tests and small callers)."""
        if self._ids is None:
            return np.arange(self.first, self.first + self.n, dtype=np.int64)
        return self._ids

    def id_at(self, pos) -> np.ndarray:
        """Node ids (int64) at sketch positions ``pos``."""
        pos = np.asarray(pos, dtype=np.int64)
        return pos + self.first if self._ids is None else self._ids[pos].astype(np.int64)

    def find(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, positions clipped into range) of node ids ``ids`` in the sketch."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._ids is None:
            pos = ids - self.first
            found = (pos >= 0) & (pos < self.n)
            return found, np.clip(pos, 0, max(self.n - 1, 0))
        pos = np.minimum(np.searchsorted(self._ids, ids), max(self.n - 1, 0))
        return self._ids[pos] == ids, pos

    @property
    def nbytes(self) -> int:
        return int((0 if self._ids is None else self._ids.nbytes) + self.bits.nbytes + self.mom[2].nbytes)


def available(ix) -> bool:
    """The sketch tables cover every stored vector (written by this kgsearch's embed step)."""
    from .vectors import vector_count

    state = ix.meta_json(STATE_META)
    return bool(state) and int(state.get("n", -1)) == vector_count(ix) > 0


def load(ix, budget: int | None = None) -> Sketch | None:
    """The index's sketches in RAM (None when absent, stale, or over ``budget`` bytes)."""
    from .vectors import _cache_budget

    if not available(ix):
        return None
    state = ix.meta_json(STATE_META)
    n, dims = int(state["n"]), int(state["dims"])
    words = dims // 64
    if n * (8 * words + 4) + dims * dims * 8 > (_cache_budget() if budget is None else budget):
        return None
    mom = ix.get_array(MOMENTS_BLOB)
    if mom is None:
        return None
    ids = None                      # allocated at the first block that breaks the range
    first = None
    bits = np.empty((words, n), dtype=np.uint64)
    pos = 0
    for m, ib, bb in ix.conn.execute("SELECT n, ids, bits FROM vec_sketch ORDER BY block"):
        if pos + m > n:
            return None
        blk = np.frombuffer(ib, dtype="<i8", count=m)
        if first is None and m:
            first = int(blk[0])
        if ids is None and m and not (blk[0] == first + pos and blk[-1] == first + pos + m - 1
                                      and (m == 1 or bool((np.diff(blk) == 1).all()))):
            ids = np.empty(n, dtype=np.int32 if ix.max_node_id() < 2**31 else np.int64)
            ids[:pos] = np.arange(first, first + pos)
        if ids is not None:
            ids[pos:pos + m] = blk
        bits[:, pos:pos + m] = np.frombuffer(bb, dtype="<u8", count=m * words).reshape(words, m)
        pos += m
    if pos != n:
        return None
    return Sketch(ids, bits, mom, dims, first=0 if first is None else first)


def cached(ix) -> Sketch | None:
    return ix.cached(_KEY, lambda: load(ix) or False) or None


def fetch_rows(ix, ids, dims: int):
    """(ids, scales, codes) of the stored rows among ``ids`` (ascending ids)."""
    from ..store.sql import in_chunks

    want = np.unique(np.asarray(ids, dtype=np.int64))
    rows = in_chunks(ix.conn, "SELECT id, scale, code FROM vec_rows WHERE id IN ({}) ORDER BY id",
                     want.tolist())
    rows.sort(key=lambda r: r[0])
    return _decode_rows(rows, dims)


def shortlist(ix, s: Sketch, qr, n_cand: int = N_CAND, n_first: int = N_FIRST):
    """Exact scores of the cascade's short list: (ids ascending, float32 scores)."""
    from .vectors import _scan_scores

    pos = sk.candidates(s.bits, qr, n_cand, "cascade", n_first)
    ids, scales, codes = fetch_rows(ix, s.id_at(pos), s.dims)
    return ids, _scan_scores(codes, scales, np.asarray(qr, dtype=np.float32))


def search(ix, s: Sketch, qr, k: int, n_cand: int = N_CAND, n_first: int = N_FIRST):
    """Top ``k`` (ids, scores) by the sketch cascade and exact rescoring."""
    from .vectors import topk

    ids, scores = shortlist(ix, s, qr, max(n_cand, k), max(n_first, k))
    return topk(scores, ids, k)


def score_rows(ix, qr, ids, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of ``ids`` read from ``vec_rows``: (found mask, scores) aligned with ``ids``."""
    from .vectors import _scan_scores

    ids = np.asarray(ids, dtype=np.int64)
    fi, fs, fc = fetch_rows(ix, ids, dims)
    out = np.zeros(len(ids))
    found = np.zeros(len(ids), dtype=bool)
    if len(fi):
        sc = _scan_scores(fc, fs, np.asarray(qr, dtype=np.float32)).astype(np.float64)
        pos = np.minimum(np.searchsorted(fi, ids), len(fi) - 1)
        found = fi[pos] == ids
        out[found] = sc[pos[found]]
    return found, out


class DenseFull(tuple):
    """What ``score_all`` returns past the cache: ``(ids, scores, population)`` of the short
    list only, with ``stats`` = (mean, sd) of the scores over the whole index (from the
    moments) and ``lookup(ids)`` giving the exact score of any node (the mean when it has
    no vector), which :class:`kgsearch.query.signals.Signals` uses for nodes off the list."""

    def __new__(cls, ids, scores, n, stats, lookup):
        self = super().__new__(cls, (ids, scores, n))
        self.stats, self.lookup = stats, lookup
        return self


def estimate(s: Sketch, qr, ids, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Cosine estimates from the sign bits alone, ``<sign(x), q> / (sqrt(d) * sqrt(2/pi))``
    (no row read): (found mask, estimates) aligned with ``ids``; ``chunk`` columns at a time
    (a two-hop neighbourhood can ask for 10^5 nodes)."""
    from .vectors import _scan_scores

    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros(len(ids))
    if not len(ids) or not s.n:
        return np.zeros(len(ids), dtype=bool), out
    found, pos = s.find(ids)
    where = np.flatnonzero(found)
    q = np.asarray(qr, dtype=np.float32)
    for c in range(0, len(where), chunk):
        w = where[c:c + chunk]
        cols = np.ascontiguousarray(s.bits[:, pos[w]].T).view(np.uint8)          # (m, d/8)
        signs = np.unpackbits(cols, axis=1, bitorder="little").view(np.int8)
        signs *= 2
        signs -= 1                                                                # 0/1 -> -1/+1
        unit = np.full(len(w), 1 / (math.sqrt(s.dims) * SIGN_NORM), dtype=np.float32)
        out[w] = _scan_scores(signs, unit, q)                 # 512-row slices: one BLAS thread
    return found, out


def score_full(ix, s: Sketch, qr) -> DenseFull:
    ids, scores = shortlist(ix, s, qr)
    mu, sd = sk.score_stats(s.mom, qr)
    sd = math.sqrt(max(sd * sd, 1e-12))
    known = [ids, scores.astype(np.float64)]              # exact scores so far, ids ascending

    def lookup(want):
        """Exact scores (rows read by id); past LOOKUP_EXACT unknown nodes at once (the graph
        stage's neighbour means), sketch estimates for the unknown ones, not remembered."""
        want = np.asarray(want, dtype=np.int64)
        out = np.full(len(want), mu)
        kid, ksc = known
        hit = np.zeros(len(want), dtype=bool)
        if len(kid):
            pos = np.minimum(np.searchsorted(kid, want), len(kid) - 1)
            hit = kid[pos] == want
            out[hit] = ksc[pos[hit]]
        miss = np.flatnonzero(~hit)
        if not len(miss):
            return out
        todo = np.unique(want[miss])
        if len(todo) > LOOKUP_EXACT:
            found, sc = estimate(s, qr, todo)
        else:
            found, sc = score_rows(ix, qr, todo, s.dims)
            allid = np.concatenate([kid, todo[found]])
            order = np.argsort(allid, kind="stable")
            known[0], known[1] = allid[order], np.concatenate([ksc, sc[found]])[order]
        at = np.searchsorted(todo, want[miss])
        out[miss] = np.where(found[at], sc[at], mu)
        return out

    return DenseFull(ids, scores.astype(np.float64), s.mom[0], (mu, sd), lookup)
