"""PageRank after a few rows changed, without a pass over the whole graph.

PageRank's operator (uniform teleport and dangling, as :func:`~.pagerank.pagerank`) is

    T(x) = alpha * (sum over edges u->v of x_u * w_uv / W_u) + (alpha * ds(x) + 1 - alpha) / n

with ``W_u`` the summed out-weight of ``u`` and ``ds(x)`` the mass of the dangling nodes
(``W_u <= 0``). When an index run changes the out-edges of a few sources (and adds or removes a
few nodes), ``T_new(x) - T_old(x)`` is zero except at the changed rows' old and new targets,
plus one constant for every node (the teleport and dangling shares of another ``n`` or
another dangling mass). :func:`pagerank_delta` computes that difference ``D`` exactly from the
changed rows alone and returns ``x' = x + D``.

Why that is as good as a power-iteration step: let ``r`` bound the residual of the stored
vector, ``||T_old(x) - x||_1 <= r``. Then ``T_new(x') - x' = [T_new(x') - T_new(x)] +
[T_old(x) - x]``, and ``T`` contracts by ``alpha`` in L1, so ``||T_new(x') - x'||_1 <= r +
alpha * ||D||_1``. The caller keeps ``r`` (and adds the float32 rounding of what it stores);
while it stays at most ``alpha`` times the stopping rule's ``n * tol``, the vector is within
``alpha / (1 - alpha) * n * tol`` of the exact one, the bound a fresh power iteration stops
at; past it the caller runs the iteration over the whole graph. ``tests/graph/
test_pagerank_delta.py`` checks ``D`` against the dense operators and the bound.
"""
from __future__ import annotations

import numpy as np

__all__ = ["pagerank_delta", "residual_bound"]


def _sums(src: np.ndarray, w: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Summed weight (float64) of each of ``sources`` (ascending ids) over edges ``src``/``w``."""
    return np.bincount(np.searchsorted(sources, src), weights=w.astype(np.float64), minlength=len(sources))


def pagerank_delta(x_old: np.ndarray, old_ids: np.ndarray, dang_old: np.ndarray, ids: np.ndarray,
                   changed: np.ndarray, old_edges: tuple, new_edges: tuple,
                   alpha: float = 0.85) -> tuple[np.ndarray, np.ndarray, float]:
    """``(x', dangling', ||D||_1)`` after the out-edges of ``changed`` (node ids) were replaced.

    ``x_old``/``dang_old``: the scores and dangling flags by position of ``old_ids`` (ascending
    node ids before the change); ``ids``: the live node ids now (ascending). ``old_edges`` and
    ``new_edges``: ``(source id, target id, weight)`` arrays, the changed sources' out-edges as
    the old graph held them and as the new one does (the weights the graph stores: edge weight
    x type weight, float32). Every edge whose source is not in ``changed`` must be the same in
    both graphs, and every removed node with out-edges must be in ``changed``."""
    old_ids = np.asarray(old_ids, dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)
    changed = np.unique(np.asarray(changed, dtype=np.int64))
    n0, n1 = len(old_ids), len(ids)
    x_old = np.asarray(x_old, dtype=np.float64)
    if n1 >= n0 and np.array_equal(ids[:n0], old_ids):   # (same nodes, or new ones after them)
        at, hit = np.arange(n0), np.ones(n0, dtype=bool)
    else:
        at = np.minimum(np.searchsorted(ids, old_ids), max(n1 - 1, 0))
        hit = (ids[at] == old_ids) if n1 else np.zeros(n0, dtype=bool)
    x = np.zeros(n1)
    x[at[hit]] = x_old[hit]
    existed = np.zeros(n1, dtype=bool)
    existed[at[hit]] = True
    dang = np.ones(n1, dtype=bool)                 # (a new node is dangling unless it has out-edges)
    dang[at[hit]] = np.asarray(dang_old, dtype=bool)[hit]
    d = np.zeros(n1)

    def spread(edges, sign: float, space_ids: np.ndarray, xs: np.ndarray) -> np.ndarray:
        """Add ``sign * x_u * w / W_u`` at each edge's target (targets not live now: dropped);
        returns ``W`` of the changed sources (0 for those without edges here)."""
        s, t, w = (np.asarray(a) for a in edges)
        s, t = s.astype(np.int64), t.astype(np.int64)
        wsum = _sums(s, w, changed) if len(s) else np.zeros(len(changed))
        if not len(s):
            return wsum
        k = np.searchsorted(changed, s)
        p = np.minimum(np.searchsorted(space_ids, s), len(space_ids) - 1)
        if not np.array_equal(space_ids[p], s):
            raise ValueError("a changed edge's source is not a node of its graph")
        share = np.divide(xs[p] * w.astype(np.float64), wsum[k], out=np.zeros(len(s)), where=wsum[k] > 0)
        q = np.minimum(np.searchsorted(ids, t), max(n1 - 1, 0))
        live = ids[q] == t if n1 else np.zeros(len(t), dtype=bool)
        np.add.at(d, q[live], sign * share[live])
        return wsum

    spread(old_edges, -1.0, old_ids, x_old)
    w_new = spread(new_edges, 1.0, ids, x)
    # the changed sources that are live now: dangling unless their new out-weight is positive
    q = np.minimum(np.searchsorted(ids, changed), max(n1 - 1, 0))
    live = ids[q] == changed if n1 else np.zeros(len(changed), dtype=bool)
    dang[q[live]] = ~(w_new[live] > 0)
    d *= alpha
    ds_old = float(x_old[np.asarray(dang_old, dtype=bool)].sum())
    ds_new = float(x[dang].sum())
    if n1:
        base_new = (alpha * ds_new + 1.0 - alpha) / n1
        base_old = (alpha * ds_old + 1.0 - alpha) / n0 if n0 else 0.0
        d[existed] += base_new - base_old
        d[~existed] += base_new
    return x + d, dang, float(np.abs(d).sum())


def residual_bound(previous: float, d_l1: float, stored: np.ndarray, exact: np.ndarray,
                   alpha: float = 0.85) -> float:
    """The residual bound of the vector ``stored`` (float32) after a step of L1 size ``d_l1``
    from a vector whose bound was ``previous``: ``previous + alpha * d_l1`` for the float64
    result ``exact``, plus ``(1 + alpha) * ||stored - exact||_1`` for its rounding."""
    rounding = float(np.abs(stored.astype(np.float64) - exact).sum())
    return float(previous) + alpha * float(d_l1) + (1.0 + alpha) * rounding
