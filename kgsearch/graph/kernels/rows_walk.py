"""The pruned random walk with restart over stored adjacency rows (:class:`~kgsearch.graph.
stored.rows.StoredGraph`): :func:`kgsearch.graph.kernels.pagerank.rwr`'s sparse phase, step for
step, reading only the rows of the nodes the walk reaches (any graph with ``n`` and
``neighbors(nodes, direction)`` will do; ``tests/graph/test_rows.py`` checks it bit for bit
against the in-memory walk)."""
from __future__ import annotations

import numpy as np

from ...arrays import unique
from .csr import scatter_add
from .pagerank import TopCheck, seed_vector

__all__ = ["rwr_rows"]


def rwr_rows(g, seeds, restart: float = 0.2, max_iter: int = 20, tol: float = 1e-3,
             topk: int | None = 10, patience: int | None = 2, weights=None, prune: float = 1e-5,
             stats: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`kgsearch.graph.kernels.pagerank.rwr` with ``direction="both"`` over stored rows:
    ``(positions, scores)`` of the nodes reached. The same steps as its sparse phase, with each
    pushing node's edges read from its row (its walk weight is its out-weight plus its
    in-weight, each summed in edge order as the CSR's are), so the scores are the CSR walk's
    while that stays sparse (it does on graphs big enough to be stored this way: with
    ``prune`` a step walks at most about ``1 / prune`` edges)."""
    ids, sw = seed_vector(g, seeds, weights)
    alpha = 1.0 - float(restart)
    check = TopCheck(topk, patience)
    stopped, it = "max_iter", 0
    act, xa = ids, sw.copy()            # act: distinct positions, in the CSR walk's slot order
    known: dict[int, tuple[float, int]] = {}
    for it in range(1, int(max_iter) + 1):
        outw, deg = _walk_weights(g, act, known)
        src_nodes, src_vals, src_w = act, xa, outw
        held = 0.0
        if prune > 0:                       # only nodes with enough score per edge spread it
            push = xa >= prune * deg
            if not push.all():
                held = float(xa[~push].sum())
                src_nodes, src_vals, src_w = act[push], xa[push], outw[push]
        node, d, w, _ = g.neighbors(src_nodes, "both")
        order = np.argsort(src_nodes, kind="stable")
        at = order[np.searchsorted(src_nodes[order], node)] if len(node) else np.zeros(0, np.int64)
        denom = src_w[at]
        vals = src_vals[at] * np.divide(w, denom, out=np.zeros(len(w)), where=denom > 0)
        lost = max(float(src_vals.sum() - vals.sum()), 0.0) + held
        # distinct targets in order of their last occurrence (as _Scratch.accumulate keeps
        # them), values summed in edge order
        idx = np.concatenate([d, ids])
        u, inv = np.unique(idx, return_inverse=True)
        inv = inv.reshape(-1)
        last = np.zeros(len(u), dtype=np.int64)
        last[inv] = np.arange(len(idx))                         # (the last write wins)
        sums = np.bincount(inv, weights=np.concatenate([vals, np.zeros(len(ids))]), minlength=len(u))
        by_last = np.argsort(last, kind="stable")
        slot = np.empty(len(u), dtype=np.int64)
        slot[by_last] = np.arange(len(u))
        nodes, yv = u[by_last], sums[by_last]
        yv *= alpha
        yv[slot[np.searchsorted(u, ids)]] += (alpha * lost + restart) * sw
        err = _l1(act, xa, nodes, yv)
        act, xa = nodes, yv
        if err < tol:
            stopped = "tol"
            break
        if check.stop(act, xa):
            stopped = "topk"
            break
    if stats is not None:
        stats.update(iterations=it, stopped=stopped, dense_iterations=0)
    return act, xa


def _walk_weights(g, nodes: np.ndarray, known: dict) -> tuple[np.ndarray, np.ndarray]:
    """Walk out-weight (out-weight + in-weight, float64) and number of steps of each node."""
    new = unique(np.array([p for p in nodes.tolist() if p not in known], dtype=np.int64))
    if len(new):
        sums = []
        for side in ("out", "in"):
            node, _, w, _ = g.neighbors(new, side)
            loc = np.searchsorted(new, node)
            sums.append((scatter_add(loc, w.astype(np.float64), len(new)), np.bincount(loc, minlength=len(new))))
        for p, a, b in zip(new.tolist(), (sums[0][0] + sums[1][0]).tolist(), (sums[0][1] + sums[1][1]).tolist()):
            known[p] = (a, b)
    got = [known[p] for p in nodes.tolist()]
    return (np.array([a for a, _ in got], dtype=np.float64).reshape(-1),
            np.array([b for _, b in got], dtype=np.int64).reshape(-1))


def _l1(old: np.ndarray, oldv: np.ndarray, new: np.ndarray, newv: np.ndarray) -> float:
    """``|y - x|_1`` (x: ``oldv`` on ``old``, y: ``newv`` on ``new``; both distinct), summed as
    :meth:`kgsearch.graph.kernels.pagerank._Scratch.l1_change` sums it."""
    order = np.argsort(old, kind="stable")
    so = old[order]
    at = np.minimum(np.searchsorted(so, new), max(len(so) - 1, 0))
    hit = (so[at] == new) if len(so) else np.zeros(len(new), bool)
    xo = np.where(hit, oldv[order][at] if len(so) else 0.0, 0.0)
    sn = np.sort(new)
    at2 = np.minimum(np.searchsorted(sn, old), max(len(sn) - 1, 0))
    gone = ~(sn[at2] == old) if len(sn) else np.ones(len(old), bool)
    return float(np.abs(newv - xo).sum() + oldv[gone].sum())
