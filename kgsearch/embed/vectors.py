"""Dense vectors in the index, and the ``dense`` channel (cosine top-k with numpy).

Storage (table ``vec_blocks``, migration ``0004_embed``): node ids are grouped in blocks of
4,096 consecutive ids (``block = id >> 12``; ids are stable row ids, so an edit rewrites one
small block). A block row holds ascending node ids (int64), a hash of each embedded text
(int64, to re-embed only what changed), a scale per vector (float32) and int8 codes
(``n x dims``), plus the generation and model id it was written with.

Quantisation: vectors are L2-normalised, rotated by a random orthogonal matrix (stored once
per index as the blob ``embed.rotation``, so no numpy-version dependence) which spreads the
PCA-skewed coordinates evenly, rounded to int8 at ``max|x| / 127`` and given the least-squares
scale ``<x, c> / <c, c>``. Scores are ``scale * (codes @ (R q))`` ~ cosine. On real sentence
embeddings this keeps recall@10 against float32 above 0.99 (plain per-vector int8: ~0.98).

Search converts 512-row slices of int8 codes to a reused float32 buffer (cache-resident)
and multiplies: less memory traffic than a float32 matrix, and only int8 lives in RAM. Up to
``KGSEARCH_VEC_CACHE_MB`` (default 64, or a quarter of ``KGSEARCH_MEMORY_MB`` when smaller)
of codes are cached per process and index generation
(``Index.cached``); larger indexes are streamed block by block from SQLite, so a 1M-vector
index never needs all its vectors in memory. Past the cache, indexes with a sketch
(:mod:`.vecindex`: 1-bit codes in RAM, rows read by id) run a cascade and rescore a short list
exactly instead of streaming every block.
"""
from __future__ import annotations

import logging
from typing import Any, Iterator

from ..errors import BadIndex

log = logging.getLogger(__name__)

__all__ = ["search", "quantize", "make_rotation", "put_vectors", "delete_vectors", "clear",
           "stored_hashes", "iter_blocks", "load_matrix", "topk", "vector_count"]

BLOCK_SHIFT = 12
ROTATION_BLOB = "embed.rotation"
SLICE = 512                      # rows converted to float64 at a time during a scan
_CACHE_KEY = "embed.matrix"


# ---------------------------------------------------------------------------- quantisation
def make_rotation(dims: int, seed: int = 0):
    """A random orthogonal ``dims x dims`` float32 matrix (QR of a seeded Gaussian)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    q, r = np.linalg.qr(rng.standard_normal((dims, dims)))
    q *= np.sign(np.diag(r))[None, :]
    return np.ascontiguousarray(q, dtype=np.float32)


def quantize(vecs, rotation):
    """float vectors ``(n, d)`` -> (int8 codes ``(n, d)``, float32 scales ``(n,)``).

    Zero vectors get zero codes and scale 0.
    """
    import numpy as np

    # float64 throughout: a float32 matrix product gave a vector a code or scale one bit apart
    # depending on how many others were embedded in the same batch (BLAS picks its kernel by
    # shape), so an index updated in place scored nodes 1e-8 apart from a fresh build (issue
    # 13). In float64 such differences are ~1e-16, far below one float32 step of the scale.
    x = np.asarray(vecs, dtype=np.float32).astype(np.float64)
    norms = np.sqrt((x * x).sum(axis=1))
    nz = norms > 0
    x = np.where(nz[:, None], x / np.where(nz, norms, 1)[:, None], 0)
    xr = x @ np.asarray(rotation, dtype=np.float64).T
    m = np.abs(xr).max(axis=1) if len(xr) else np.zeros(0, np.float64)
    step = np.where(m > 0, m / 127.0, 1.0)
    codes = np.clip(np.rint(xr / step[:, None]), -127, 127).astype(np.int8)
    c = codes.astype(np.float64)
    cc = (c * c).sum(axis=1)
    scales = np.where(cc > 0, (xr * c).sum(axis=1) / np.maximum(cc, 1e-30), 0).astype(np.float32)
    return codes, scales


def rotation(ix):
    """The index's rotation matrix (None before the first embedding run)."""
    return ix.get_array(ROTATION_BLOB)


# ---------------------------------------------------------------------------- storage
def _blob(a) -> bytes:
    import numpy as np

    return np.ascontiguousarray(a).tobytes()


def _decode(row, dims: int, copy: bool = False):
    """(n, ids, hashes, scales, data) row -> arrays (read-only views unless ``copy``)."""
    import numpy as np

    n, ids_b, hashes_b, scales_b, data_b = row
    ids = np.frombuffer(ids_b, dtype="<i8", count=n)
    hashes = np.frombuffer(hashes_b, dtype="<i8", count=n)
    scales = np.frombuffer(scales_b, dtype="<f4", count=n)
    codes = np.frombuffer(data_b, dtype=np.int8, count=n * dims).reshape(n, dims)
    if copy:
        return ids.copy(), hashes.copy(), scales.copy(), codes.copy()
    return ids, hashes, scales, codes


def iter_blocks(ix, model_id: str | None = None) -> Iterator[tuple[Any, Any, Any, Any]]:
    """Yield ``(ids, hashes, scales, codes)`` per block in id order (read-only arrays)."""
    sql = "SELECT n, ids, hashes, scales, data, dims FROM vec_blocks"
    args: tuple = ()
    if model_id is not None:
        sql += " WHERE model_id=?"
        args = (model_id,)
    for row in ix.conn.execute(sql + " ORDER BY block", args):
        yield _decode(row[:5], row[5])


def vector_count(ix) -> int:
    try:
        return int(ix.conn.execute("SELECT coalesce(sum(n), 0) FROM vec_blocks").fetchone()[0])
    except Exception:
        return 0


def stored_hashes(ix):
    """(ids, hashes) of every stored vector, as int64 arrays."""
    import numpy as np

    ids, hashes = [], []
    for row in ix.conn.execute("SELECT n, ids, hashes FROM vec_blocks ORDER BY block"):
        ids.append(np.frombuffer(row[1], dtype="<i8", count=row[0]))
        hashes.append(np.frombuffer(row[2], dtype="<i8", count=row[0]))
    if not ids:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(ids), np.concatenate(hashes)


def clear(ix) -> None:
    from . import vecindex

    ix.conn.execute("DELETE FROM vec_blocks")
    vecindex.clear(ix)
    vecindex.note_all(ix)
    ix._cache.pop(_CACHE_KEY, None)


def _rewrite(ix, block: int, ids, hashes, scales, codes, generation: int, model_id: str, dims: int) -> None:
    from .vecindex import note_block

    note_block(ix, block)
    if len(ids) == 0:
        ix.conn.execute("DELETE FROM vec_blocks WHERE block=?", (block,))
        return
    ix.conn.execute(
        "INSERT INTO vec_blocks(block, generation, model_id, dims, n, ids, hashes, scales, data) "
        "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(block) DO UPDATE SET generation=excluded.generation, "
        "model_id=excluded.model_id, dims=excluded.dims, n=excluded.n, ids=excluded.ids, "
        "hashes=excluded.hashes, scales=excluded.scales, data=excluded.data",
        (block, generation, model_id, dims, len(ids), _blob(ids.astype("<i8")), _blob(hashes.astype("<i8")),
         _blob(scales.astype("<f4")), _blob(codes)))


def _load_block(ix, block: int, dims: int):
    import numpy as np

    row = ix.conn.execute("SELECT n, ids, hashes, scales, data, dims, model_id FROM vec_blocks WHERE block=?",
                          (block,)).fetchone()
    if row is None or row[5] != dims:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), np.zeros(0, np.float32), np.zeros((0, dims), np.int8)
    return _decode(row[:5], dims, copy=True)


def put_vectors(ix, ids, hashes, vecs, model_id: str, generation: int | None = None) -> int:
    """Quantise ``vecs`` and insert/replace them for node ``ids``; returns how many were stored.

    The rotation blob must exist (:func:`ensure_rotation`).
    """
    import numpy as np

    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) == 0:
        return 0
    rot = rotation(ix)
    if rot is None:
        raise BadIndex(f"{ix.path} has vectors but no {ROTATION_BLOB}; run `kgsearch index --full`")
    gen = ix.generation if generation is None else generation
    codes, scales = quantize(vecs, rot)
    hashes = np.asarray(hashes, dtype=np.int64)
    dims = codes.shape[1]
    order = np.argsort(ids, kind="stable")
    ids, hashes, scales, codes = ids[order], hashes[order], scales[order], codes[order]
    blocks = ids >> BLOCK_SHIFT
    cuts = np.flatnonzero(np.diff(blocks)) + 1
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(ids)]):
        b = int(blocks[lo])
        oi, oh, osc, oc = _load_block(ix, b, dims)
        keep = ~np.isin(oi, ids[lo:hi])
        ni = np.concatenate([oi[keep], ids[lo:hi]])
        o = np.argsort(ni, kind="stable")
        _rewrite(ix, b, ni[o], np.concatenate([oh[keep], hashes[lo:hi]])[o],
                 np.concatenate([osc[keep], scales[lo:hi]])[o],
                 np.concatenate([oc[keep], codes[lo:hi]])[o], gen, model_id, dims)
    ix._cache.pop(_CACHE_KEY, None)
    return len(ids)


def delete_vectors(ix, ids, model_id: str, generation: int | None = None) -> int:
    """Remove the vectors of node ``ids`` (missing ones are ignored); returns how many went."""
    import numpy as np

    ids = np.unique(np.asarray(ids, dtype=np.int64))
    if len(ids) == 0:
        return 0
    gen = ix.generation if generation is None else generation
    gone = 0
    for b in np.unique(ids >> BLOCK_SHIFT):
        row = ix.conn.execute("SELECT dims FROM vec_blocks WHERE block=?", (int(b),)).fetchone()
        if row is None:
            continue
        dims = row[0]
        oi, oh, osc, oc = _load_block(ix, int(b), dims)
        keep = ~np.isin(oi, ids)
        gone += int((~keep).sum())
        if keep.all():
            continue
        _rewrite(ix, int(b), oi[keep], oh[keep], osc[keep], oc[keep], gen, model_id, dims)
    ix._cache.pop(_CACHE_KEY, None)
    return gone


# ---------------------------------------------------------------------------- search
def topk(scores, ids, k: int):
    """Best ``k`` (ids, scores): highest score first, ties broken by the smaller node id."""
    import numpy as np

    n = len(scores)
    if n == 0 or k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    if n > k:
        part = np.argpartition(-scores, k - 1)[:k]
        cand = np.flatnonzero(scores >= scores[part].min())
    else:
        cand = np.arange(n)
    order = np.lexsort((ids[cand], -scores[cand]))[:k]
    sel = cand[order]
    return ids[sel].astype(np.int64), scores[sel].astype(np.float32)


class Matrix:
    """All stored vectors in RAM (int8 codes), for indexes within the cache budget."""

    def __init__(self, ids, scales, codes, model_id: str):
        self.ids, self.scales, self.codes, self.model_id = ids, scales, codes, model_id

    def scores(self, qr):
        return _scan_scores(self.codes, self.scales, qr)


def _scan_scores(codes, scales, qr):
    """``codes @ qr * scales`` for every row, in float64 (float64 scores; see :func:`row_scores`)."""
    import numpy as np

    n, d = codes.shape
    out = np.empty(n, dtype=np.float64)
    q = np.asarray(qr, dtype=np.float64)
    buf = np.empty((min(SLICE, max(n, 1)), d), dtype=np.float64)
    for s in range(0, n, SLICE):
        e = min(n, s + SLICE)
        b = buf[:e - s]
        np.copyto(b, codes[s:e], casting="unsafe")
        np.dot(b, q, out=out[s:e])
    np.multiply(out, scales, out=out)
    return out


def row_scores(codes, scales, qr):
    """The same scores for a few rows. In float64 a row's score does not depend on where the
    row sits in the matrix (float32 BLAS results differed in the last bit with the row's
    position, so an index updated in place, whose rows are in another order, scored a node
    1e-8 apart from a fresh build, issue 13)."""
    import numpy as np

    return (np.asarray(codes, dtype=np.float64) @ np.asarray(qr, dtype=np.float64)) * scales


CACHE_MB = 64                    # default vector cache (int8 codes held per process)
CACHE_SHARE = 0.25               # its share of KGSEARCH_MEMORY_MB, when that is set


def _cache_budget() -> int:
    """Bytes of int8 codes a query process may hold: ``KGSEARCH_VEC_CACHE_MB`` when set, else
    64 MiB, lowered to a quarter of ``KGSEARCH_MEMORY_MB`` when that is smaller."""
    from ..budget import share
    from ..environment import current

    raw = current().vec_cache_mb
    if raw is not None:
        try:
            return int(float(raw) * 1024 * 1024)
        except ValueError:
            pass
    return share(CACHE_SHARE, CACHE_MB * 1024 * 1024)


def load_matrix(ix, model_id: str | None = None, budget: int | None = None) -> Matrix | None:
    """Concatenate every block into a :class:`Matrix` (None when over ``budget`` bytes or empty)."""
    import numpy as np

    row = ix.conn.execute("SELECT coalesce(sum(n), 0), max(dims) FROM vec_blocks").fetchone()
    n, dims = int(row[0]), row[1]
    if n == 0:
        return None
    if n * dims > (_cache_budget() if budget is None else budget):
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


def search_vector(ix, qvec, k: int = 100, model_id: str | None = None):
    """Top-k node ids for an already embedded query vector (float, model dims)."""
    import numpy as np

    rot = rotation(ix)
    if rot is None:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    q = np.asarray(qvec, dtype=np.float32)
    nrm = float(np.linalg.norm(q))
    if nrm == 0 or not np.isfinite(nrm):
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    qr = np.ascontiguousarray((rot @ (q / nrm)).astype(np.float32))
    mat = ix.cached(_CACHE_KEY, lambda: load_matrix(ix, model_id) or False)
    if mat:
        return topk(mat.scores(qr), mat.ids, k)
    from . import vecindex

    sk = vecindex.cached(ix)
    if sk is not None:                  # past the cache: sketch cascade + exact rescoring
        return vecindex.search(ix, sk, qr, k)
    return search_streamed(ix, qr, k, model_id)


def search_streamed(ix, qr, k: int, model_id: str | None = None):
    """The exact scan block by block from SQLite (the reference, and the fallback when the
    sketch is missing or over the budget)."""
    import numpy as np

    best_ids = np.zeros(0, np.int64)
    best_scores = np.zeros(0, np.float32)
    for bi, _h, bs, bc in iter_blocks(ix, model_id):
        s = _scan_scores(bc, bs, qr)
        ids = np.concatenate([best_ids, bi])
        sc = np.concatenate([best_scores, s])
        best_ids, best_scores = topk(sc, ids, k)
    return best_ids, best_scores


def search(ix, query: str, k: int = 100, **opts):
    """The ``dense`` channel: ``(node ids int64, cosine scores float32)``, best first, at most k.

    Returns a one-line string instead when the channel is off (no vectors in the index, or the
    model that built them cannot be found here), which the pipeline reports. Never raises on
    any query string.
    """
    import numpy as np

    from .index_model import query_model

    empty = (np.zeros(0, np.int64), np.zeros(0, np.float32))
    if not isinstance(query, str) or not query.strip() or k <= 0:
        return empty
    model_id = ix.meta("model_id")
    if not model_id or vector_count(ix) == 0:
        return "no vectors in this index (run `kgsearch index` with an embedding model)"
    model = query_model(ix)
    if isinstance(model, str):
        return model
    q = model.encode([query])[0]
    return search_vector(ix, q, k, model_id)
