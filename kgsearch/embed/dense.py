"""The ``dense`` channel: cosine top-k, whole-index scores and fill-in scores at query time.

Three paths, by what fits the query process's vector cache (:func:`cache_budget`: 64 MiB of
int8 codes, or a quarter of ``KGSEARCH_MEMORY_MB`` when that is smaller; per process and index
generation, ``Index.cached``):

* within the cache, every code is held in RAM (:class:`Matrix`) and scanned exactly
  (:func:`kgsearch.embed.kernel.scan_scores`);
* past it, when the index has sketches (:mod:`kgsearch.embed.store`: 1-bit codes, rows by id,
  moments), the sketches are held in RAM (:class:`Sketch`, 30.5 MiB at 1M) and a query runs
  the cascade (Hamming over every sketch keeps :data:`N_FIRST`, the asymmetric score keeps
  :data:`N_CAND`), reads those rows and rescores them exactly with the full scan's own
  arithmetic: recall@10 against exact float search 0.976 at 1M (the full int8 scan: 0.988).
  The z-score mean and spread come from the moments, and other nodes are scored by row (up to
  :data:`LOOKUP_EXACT` at once) or from their sign bits (:func:`estimate`; the graph stage's
  neighbour means);
* otherwise the blocks are streamed from SQLite (:func:`search_streamed`: the reference, and
  the fallback when the sketch is missing or over the budget).

Channel functions (``query/channels.py``): :func:`search` (top-k), :func:`score_all` (every
node, for z-statistics; past the cache a :class:`DenseFull`), :func:`score_ids` (fill-in: every
candidate gets a dense score, so fusion never sees a false zero).
"""
from __future__ import annotations

import math

import numpy as np

from .kernel import candidates, row_scores, scan_scores, score_stats, topk
from .store import (MATRIX_KEY, MOMENTS_BLOB, SKETCH_KEY, STATE_META, available, iter_blocks, query_rotation,
                    read_rows, sorted_unique, vector_count)

__all__ = ["search", "is_blank", "encode_query", "search_vector", "search_streamed", "score_all", "score_ids", "query_vector",
           "share_query_vector",
           "cache_budget", "Matrix", "load_matrix", "Sketch", "load_sketch", "cached_sketch", "shortlist",
           "search_sketch", "score_rows", "estimate", "score_full", "DenseFull",
           "N_FIRST", "N_CAND", "LOOKUP_EXACT", "CACHE_MB", "CACHE_SHARE"]

CACHE_MB = 64                    # default vector cache (int8 codes held per process)
CACHE_SHARE = 0.25               # its share of KGSEARCH_MEMORY_MB, when that is set
N_FIRST = 8000              # Hamming keeps this many
N_CAND = 1000               # the asymmetric score keeps this many; their rows are rescored exactly
LOOKUP_EXACT = 512          # a lookup of more unknown nodes than this is estimated from the sketch
SIGN_NORM = math.sqrt(2 / math.pi)   # E <sign(x)/sqrt(d), x> for a rotated unit vector
_QKEY = "embed.last_query"


# ---------------------------------------------------------------------------- all codes in RAM
def cache_budget() -> int:
    """Bytes of int8 codes a query process may hold: ``KGSEARCH_VEC_CACHE_MB`` when set, else
    64 MiB, lowered to a quarter of ``KGSEARCH_MEMORY_MB`` when that is smaller."""
    from ..budget import share, vec_cache_bytes

    try:
        given = vec_cache_bytes()
    except ValueError:              # (the CLI refused it when the command started)
        given = None
    return share(CACHE_SHARE, CACHE_MB * 1024 * 1024) if given is None else given


class Matrix:
    """All stored vectors in RAM (int8 codes), for indexes within the cache budget."""

    def __init__(self, ids, scales, codes, model_id: str):
        self.ids, self.scales, self.codes, self.model_id = ids, scales, codes, model_id

    def scores(self, qr):
        return scan_scores(self.codes, self.scales, qr)


def load_matrix(ix, model_id: str | None = None, budget: int | None = None) -> Matrix | None:
    """Concatenate every block into a :class:`Matrix` (None when over ``budget`` bytes or empty)."""
    row = ix.conn.execute("SELECT coalesce(sum(n), 0), max(dims) FROM vec_blocks").fetchone()
    n, dims = int(row[0]), row[1]
    if n == 0:
        return None
    if n * dims > (cache_budget() if budget is None else budget):
        return None
    ids = np.empty(n, np.int64)
    scales = np.empty(n, np.float32)
    codes = np.empty((n, dims), np.int8)
    pos = 0
    for bi, _h, bs, bc in iter_blocks(ix, model_id):
        m = len(bi)
        ids[pos:pos + m], scales[pos:pos + m], codes[pos:pos + m] = bi, bs, bc
        pos += m
    return Matrix(ids[:pos], scales[:pos], codes[:pos], model_id or "")


# ---------------------------------------------------------------------------- sketches in RAM
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


def load_sketch(ix, budget: int | None = None) -> Sketch | None:
    """The index's sketches in RAM (None when absent, stale, or over ``budget`` bytes)."""
    if not available(ix):
        return None
    state = ix.meta_json(STATE_META)
    n, dims = int(state["n"]), int(state["dims"])
    words = dims // 64
    if n * (8 * words + 4) + dims * dims * 8 > (cache_budget() if budget is None else budget):
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


def cached_sketch(ix) -> Sketch | None:
    """The index's sketches, loaded once per process and generation (None without)."""
    return ix.cached(SKETCH_KEY, lambda: load_sketch(ix) or False) or None


def shortlist(ix, s: Sketch, qr, n_cand: int = N_CAND, n_first: int = N_FIRST):
    """Exact scores of the cascade's short list: (ids ascending, float32 scores)."""
    pos = candidates(s.bits, qr, n_cand, "cascade", n_first)
    ids, scales, codes = read_rows(ix, s.id_at(pos), s.dims)
    return ids, scan_scores(codes, scales, np.asarray(qr, dtype=np.float32))


def search_sketch(ix, s: Sketch, qr, k: int, n_cand: int = N_CAND, n_first: int = N_FIRST):
    """Top ``k`` (ids, scores) by the sketch cascade and exact rescoring."""
    ids, scores = shortlist(ix, s, qr, max(n_cand, k), max(n_first, k))
    return topk(scores, ids, k)


def score_rows(ix, qr, ids, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of ``ids`` read from ``vec_rows``: (found mask, scores) aligned with ``ids``."""
    ids = np.asarray(ids, dtype=np.int64)
    fi, fs, fc = read_rows(ix, ids, dims)
    out = np.zeros(len(ids))
    found = np.zeros(len(ids), dtype=bool)
    if len(fi):
        sc = scan_scores(fc, fs, np.asarray(qr, dtype=np.float32)).astype(np.float64)
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
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros(len(ids))
    if not len(ids) or not s.n:
        return np.zeros(len(ids), dtype=bool), out
    found, pos = s.find(ids)
    where = np.flatnonzero(found)
    q = np.asarray(qr, dtype=np.float32)
    for c in range(0, len(where), chunk):
        w = where[c:c + chunk]
        # (m, d/8); np.take along the columns: a third of the time of ``s.bits[:, pos[w]]``
        cols = np.ascontiguousarray(np.take(s.bits, pos[w], axis=1).T).view(np.uint8)
        signs = np.unpackbits(cols, axis=1, bitorder="little").view(np.int8)
        signs *= 2
        signs -= 1                                                                # 0/1 -> -1/+1
        unit = np.full(len(w), 1 / (math.sqrt(s.dims) * SIGN_NORM), dtype=np.float32)
        out[w] = scan_scores(signs, unit, q)                 # 512-row slices: one BLAS thread
    return found, out


def score_full(ix, s: Sketch, qr) -> DenseFull:
    ids, scores = shortlist(ix, s, qr)
    mu, sd = score_stats(s.mom, qr)
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
        todo = sorted_unique(want[miss])     # (the graph stage asks in ascending order)
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

# ---------------------------------------------------------------------------- the channel
def search_vector(ix, qvec, k: int = 100, model_id: str | None = None):
    """Top-k node ids for an already embedded query vector (float, model dims)."""
    rot = query_rotation(ix)
    if rot is None:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    q = np.asarray(qvec, dtype=np.float32)
    nrm = float(np.linalg.norm(q))
    if nrm == 0 or not np.isfinite(nrm):
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    qr = np.ascontiguousarray((rot @ (q / nrm)).astype(np.float32))
    mat = ix.cached(MATRIX_KEY, lambda: load_matrix(ix, model_id) or False)
    if mat:
        return topk(mat.scores(qr), mat.ids, k)
    sk = cached_sketch(ix)
    if sk is not None:                  # past the cache: sketch cascade + exact rescoring
        return search_sketch(ix, sk, qr, k)
    return search_streamed(ix, qr, k, model_id)


def search_streamed(ix, qr, k: int, model_id: str | None = None):
    """The exact scan block by block from SQLite (the reference, and the fallback when the
    sketch is missing or over the budget)."""
    best_ids = np.zeros(0, np.int64)
    best_scores = np.zeros(0, np.float32)
    for bi, _h, bs, bc in iter_blocks(ix, model_id):
        s = scan_scores(bc, bs, qr)
        ids = np.concatenate([best_ids, bi])
        sc = np.concatenate([best_scores, s])
        best_ids, best_scores = topk(sc, ids, k)
    return best_ids, best_scores


def search(ix, query: str | tuple, k: int = 100, **opts):
    """The ``dense`` channel: ``(node ids int64, cosine scores float32)``, best first, at most k.
    ``query``: a str, or weighted words (:func:`encode_query`).

    Returns a one-line string instead when the channel is off (no vectors in the index, or the
    model that built them cannot be found here), which the pipeline reports. Never raises on
    any query string.
    """
    from .index_model import query_model

    empty = (np.zeros(0, np.int64), np.zeros(0, np.float32))
    if is_blank(query) or k <= 0:
        return empty
    model_id = ix.meta("model_id")
    if not model_id or vector_count(ix) == 0:
        return "no vectors in this index (run `kgsearch index` with an embedding model)"
    model = query_model(ix)
    if isinstance(model, str):
        return model
    return search_vector(ix, encode_query(model, query), k, model_id)


def is_blank(query) -> bool:
    """True for what encodes to nothing: not a str or weighted words, or only spaces."""
    if isinstance(query, str):
        return not query.strip()
    return not (isinstance(query, tuple) and any(w > 0 and p.strip() for p, w in query))


def encode_query(model, query):
    """A query's vector before normalisation: ``query`` is a str (the model's encoding) or
    weighted words, ``((word, weight), ...)`` (:meth:`StaticModel.encode_weighted`; the query
    layer weights each word by its rarity in the index: ``kgsearch.query.channels``)."""
    if isinstance(query, str):
        return model.encode([query])[0]
    return model.encode_weighted([p for p, _ in query], [w for _, w in query])


def query_vector(ix, query: str | tuple, unit=None):
    """The rotated, normalised query vector (cached for the last query), or None.

    ``unit``: the query's normalised vector before rotation, already encoded by the same model
    for another index (several indexes searched as one encode the query once:
    :func:`share_query_vector`)."""
    from .index_model import query_model

    hit = ix._cache.get(_QKEY)
    if hit is not None and hit[0] == (ix.generation, query) and unit is None:
        return hit[1]
    rot = query_rotation(ix)
    qr = None
    if unit is None and rot is not None and not is_blank(query):
        model = query_model(ix)
        if not isinstance(model, str):
            q = np.asarray(encode_query(model, query), dtype=np.float32)
            n = float(np.linalg.norm(q))
            if n > 0 and np.isfinite(n):
                unit = q / n
    if unit is not None and rot is not None:
        qr = np.ascontiguousarray((rot @ unit).astype(np.float32))
    ix._cache[_QKEY] = ((ix.generation, query), qr, unit)
    return qr


def model_id_of(ix) -> str | None:
    """The index's ``model_id`` (meta), read once per index generation (an embedding model
    changes only with a reindex, which moves the generation)."""
    return ix.cached("embed.model_id", lambda: ix.meta("model_id"))


def share_query_vector(ixs: list, query: str | tuple) -> int:
    """Encode ``query`` once for every index of ``ixs`` embedded with the same model as the
    first one that can encode it (each then rotates it with its own rotation); returns how many
    indexes were given the shared vector. The vectors are the ones each index would encode."""
    unit, model_id, shared = None, None, 0
    for ix in ixs:
        mid = model_id_of(ix)
        if not mid:
            continue
        if unit is None:
            query_vector(ix, query)
            hit = ix._cache.get(_QKEY)
            if hit is not None and hit[2] is not None:
                unit, model_id = hit[2], mid
        elif mid == model_id:
            query_vector(ix, query, unit=unit)
            shared += 1
    return shared


def score_ids(ix, query: str | tuple, ids) -> np.ndarray:
    """Cosine of ``query`` with each node in ``ids`` (0 where a node has no vector)."""
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros(len(ids), dtype=np.float64)
    if not len(ids) or not model_id_of(ix):
        return out
    qr = query_vector(ix, query)
    if qr is None:
        return out
    mat = ix.cached(MATRIX_KEY, lambda: load_matrix(ix, ix.meta("model_id")) or False)
    if mat:
        order = np.argsort(mat.ids, kind="stable")
        sorted_ids = mat.ids[order]
        pos = np.searchsorted(sorted_ids, ids)
        pos = np.minimum(pos, len(sorted_ids) - 1)
        ok = sorted_ids[pos] == ids
        rows = order[pos[ok]]
        out[ok] = row_scores(mat.codes[rows], mat.scales[rows], qr)
        return out
    sk = cached_sketch(ix)
    if sk is not None:                  # rows by id instead of every block
        _found, sc = score_rows(ix, qr, ids, sk.dims)
        return sc
    want = set(ids.tolist())
    index = {int(v): i for i, v in enumerate(ids.tolist())}
    for bi, _h, bs, bc in iter_blocks(ix, ix.meta("model_id")):
        sel = [j for j, v in enumerate(bi.tolist()) if v in want]
        if sel:
            sc = row_scores(bc[sel], bs[sel], qr)
            for j, s in zip(sel, sc.tolist()):
                out[index[int(bi[j])]] = s
    return out


def score_all(ix, query: str | tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """Cosine of ``query`` with every stored vector: (node ids ascending, scores, count).

    Past the vector cache, when the index has sketches, a :class:`DenseFull`
    instead: the cascade's short list with exact scores, the whole-index mean and spread from
    the moments, and a lookup for any other node (no scan)."""
    empty = (np.zeros(0, np.int64), np.zeros(0), 0)
    if not model_id_of(ix):             # (once per generation, not a meta read per search)
        return empty
    qr = query_vector(ix, query)
    if qr is None:
        return empty
    mat = ix.cached(MATRIX_KEY, lambda: load_matrix(ix, ix.meta("model_id")) or False)
    if mat:
        ids, scores = mat.ids, mat.scores(qr).astype(np.float64)
    else:
        sk = cached_sketch(ix)
        if sk is not None:
            return score_full(ix, sk, qr)
        parts_i, parts_s = [], []
        for bi, _h, bs, bc in iter_blocks(ix, ix.meta("model_id")):
            parts_i.append(bi)
            parts_s.append(scan_scores(bc, bs, qr).astype(np.float64))
        if not parts_i:
            return empty
        ids, scores = np.concatenate(parts_i), np.concatenate(parts_s)
    if len(ids) > 1 and (np.diff(ids) < 0).any():
        order = np.argsort(ids, kind="stable")
        ids, scores = ids[order], scores[order]
    return ids, scores, len(ids)
