"""Dense scores for given nodes (the pipeline's fill-in: every candidate gets a dense score,
not only the dense channel's own top k, so fusion never sees a false zero)."""
from __future__ import annotations

import numpy as np

from . import vectors

__all__ = ["score_ids", "score_all", "query_vector"]

_QKEY = "embed.last_query"


def query_vector(ix, query: str):
    """The rotated, normalised query vector (cached for the last query), or None."""
    from .index_model import query_model

    hit = ix._cache.get(_QKEY)
    if hit is not None and hit[0] == (ix.generation, query):
        return hit[1]
    model = query_model(ix)
    rot = vectors.rotation(ix)
    qr = None
    if not isinstance(model, str) and rot is not None and isinstance(query, str) and query.strip():
        q = np.asarray(model.encode([query])[0], dtype=np.float32)
        n = float(np.linalg.norm(q))
        if n > 0 and np.isfinite(n):
            qr = np.ascontiguousarray((rot @ (q / n)).astype(np.float32))
    ix._cache[_QKEY] = ((ix.generation, query), qr)
    return qr


def score_ids(ix, query: str, ids) -> np.ndarray:
    """Cosine of ``query`` with each node in ``ids`` (0 where a node has no vector)."""
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros(len(ids), dtype=np.float64)
    if not len(ids) or not ix.meta("model_id"):
        return out
    qr = query_vector(ix, query)
    if qr is None:
        return out
    mat = ix.cached(vectors._CACHE_KEY, lambda: vectors.load_matrix(ix, ix.meta("model_id")) or False)
    if mat:
        order = np.argsort(mat.ids, kind="stable")
        sorted_ids = mat.ids[order]
        pos = np.searchsorted(sorted_ids, ids)
        pos = np.minimum(pos, len(sorted_ids) - 1)
        ok = sorted_ids[pos] == ids
        rows = order[pos[ok]]
        out[ok] = vectors.row_scores(mat.codes[rows], mat.scales[rows], qr)
        return out
    from . import vecindex

    sk = vecindex.cached(ix)
    if sk is not None:                  # rows by id instead of every block
        _found, sc = vecindex.score_rows(ix, qr, ids, sk.dims)
        return sc
    want = set(ids.tolist())
    index = {int(v): i for i, v in enumerate(ids.tolist())}
    for bi, _h, bs, bc in vectors.iter_blocks(ix, ix.meta("model_id")):
        sel = [j for j, v in enumerate(bi.tolist()) if v in want]
        if sel:
            sc = vectors.row_scores(bc[sel], bs[sel], qr)
            for j, s in zip(sel, sc.tolist()):
                out[index[int(bi[j])]] = s
    return out


def score_all(ix, query: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Cosine of ``query`` with every stored vector: (node ids ascending, scores, count).

    Past the vector cache, when the index has sketches, a :class:`~.vecindex.DenseFull`
    instead: the cascade's short list with exact scores, the whole-index mean and spread from
    the moments, and a lookup for any other node (no scan)."""
    empty = (np.zeros(0, np.int64), np.zeros(0), 0)
    if not ix.meta("model_id"):
        return empty
    qr = query_vector(ix, query)
    if qr is None:
        return empty
    mat = ix.cached(vectors._CACHE_KEY, lambda: vectors.load_matrix(ix, ix.meta("model_id")) or False)
    if mat:
        ids, scores = mat.ids, mat.scores(qr).astype(np.float64)
    else:
        from . import vecindex

        sk = vecindex.cached(ix)
        if sk is not None:
            return vecindex.score_full(ix, sk, qr)
        parts_i, parts_s = [], []
        for bi, _h, bs, bc in vectors.iter_blocks(ix, ix.meta("model_id")):
            parts_i.append(bi)
            parts_s.append(vectors._scan_scores(bc, bs, qr).astype(np.float64))
        if not parts_i:
            return empty
        ids, scores = np.concatenate(parts_i), np.concatenate(parts_s)
    if len(ids) > 1 and (np.diff(ids) < 0).any():
        order = np.argsort(ids, kind="stable")
        ids, scores = ids[order], scores[order]
    return ids, scores, len(ids)
