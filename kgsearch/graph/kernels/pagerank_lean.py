"""PageRank in little memory: the same iteration as :func:`~kgsearch.graph.kernels.pagerank.
pagerank` (uniform teleport and dangling, networkx's stopping rule) without its operator of 24
bytes an edge.

* :func:`pagerank_lean` is ``pagerank(g, alpha, tol=tol, max_iter=max_iter)`` with the same
  floats: transition weights are recomputed per block of rows each iteration and scattered
  with ``np.add.at``, which adds in edge order exactly like the reference's ``np.bincount``
  (numpy >= 1.25; older numpy, where ``np.add.at`` is slow, runs the reference). The full
  rebuild uses it (``tests/graph/test_build.py`` compares every float).
* :func:`pagerank_csr` is the power iteration on the forward CSR arrays themselves, in chunks
  of edges (the arrays may be stored blobs read in slices: one int32 source per edge is never
  kept), with a warm start (``x0``: the last run's scores, new nodes 1/n): the incremental
  update uses it above :data:`kgsearch.graph.stored.scores.WARM_FROM` nodes, where a one-file
  change converges in a few iterations. Its scores agree with a cold solve to the stopping
  rule's tolerance, not bit for bit.
"""
from __future__ import annotations

import numpy as np

from .csr import Graph, row_blocks
from .pagerank import PowerIterationFailedConvergence, pagerank

__all__ = ["pagerank_lean", "pagerank_csr", "out_weights", "CHUNK"]

CHUNK = 1 << 20           # edges per block
# ``np.add.at`` became fast in numpy 1.25 (before, about 10x slower than ``np.bincount``)
FAST_ADD_AT = np.lib.NumpyVersion(np.__version__) >= "1.25.0"


def pagerank_lean(g: Graph, alpha: float = 0.85, tol: float = 1e-6, max_iter: int = 100,
                  chunk: int = CHUNK, stats: dict | None = None) -> np.ndarray:
    """``pagerank(g, alpha, tol=tol, max_iter=max_iter)`` (uniform teleport and dangling):
    the same floats, with O(n + chunk) memory beside the graph instead of 32 bytes an edge.
    With numpy < 1.25 (slow ``np.add.at``) this is ``pagerank`` itself. ``stats`` (a dict):
    filled with the last iteration's L1 change ``err`` and the ``dangling`` mask."""
    n = g.n
    if n == 0:
        return np.zeros(0)
    if not FAST_ADD_AT:
        try:
            x = pagerank(g, alpha, tol=tol, max_iter=max_iter)
            _report(stats, n * tol, out_weights(g.indptr, g.weights))   # (its last change: below n * tol)
            return x
        finally:
            g.drop_caches()
    deg = np.diff(g.indptr)
    blocks = [blk for blk in row_blocks(g.indptr, chunk) if blk[3] > blk[2]]
    outw = np.zeros(n)
    for a, b, s, e in blocks:              # (the reference's bincount adds in the same order)
        np.add.at(outw, np.repeat(np.arange(a, b), deg[a:b]), g.weights[s:e].astype(np.float64))
    dang = np.flatnonzero(outw <= 0)
    x = np.full(n, 1.0 / n)
    for _ in range(int(max_iter)):
        y = np.zeros(n)
        for a, b, s, e in blocks:
            denom = np.repeat(outw[a:b], deg[a:b])
            p = np.divide(g.weights[s:e], denom, out=np.zeros(e - s), where=denom > 0)
            p *= np.repeat(x[a:b], deg[a:b])
            np.add.at(y, g.indices[s:e], p)
        ds = float(x[dang].sum()) if len(dang) else 0.0
        y *= alpha
        y += (alpha * ds + 1.0 - alpha) / n
        err = float(np.abs(y - x).sum())
        x = y
        if err < n * tol:
            _report(stats, err, outw)
            return x
    raise PowerIterationFailedConvergence(max_iter, "pagerank")


def _report(stats: dict | None, err: float, outw: np.ndarray) -> None:
    if stats is not None:
        stats["err"] = err
        stats["dangling"] = ~(outw > 0)

def out_weights(indptr: np.ndarray, weights, chunk: int = 1 << 20) -> np.ndarray:
    """Summed out-edge weight of each row (float64), ``weights`` sliced in row blocks of
    about ``chunk`` edges (an array, or a stored blob)."""
    n = len(indptr) - 1
    outw = np.zeros(n)
    for a, b, s, e in row_blocks(indptr, chunk):
        if e > s:
            outw[a:b] = np.bincount(np.repeat(np.arange(b - a), np.diff(indptr[a:b + 1])),
                                    weights=weights[s:e].astype(np.float64), minlength=b - a)
    return outw


def pagerank_csr(g: Graph, alpha: float = 0.85, tol: float = 1e-6, max_iter: int = 1000,
                 x0: np.ndarray | None = None, chunk: int = 1 << 20,
                 outw: np.ndarray | None = None, stats: dict | None = None) -> tuple[np.ndarray, int]:
    """PageRank with networkx's rule (stop at L1 change < n * tol), uniform teleport and dangling,
    on the forward CSR arrays in chunks of edges: besides the graph, one int32 source per edge
    and O(n + chunk) floats (:func:`~.pagerank.pagerank`'s operator holds 24 bytes an edge).
    ``x0``: warm start (e.g. last run's scores, new nodes 1/n), normalised; ``outw``: the
    rows' summed weights (:func:`out_weights`) when known; ``stats``: as for
    :func:`pagerank_lean`. Returns (x, iterations).
    """
    n = g.n
    if n == 0:
        return np.zeros(0), 0
    # row blocks of about ``chunk`` edges: a block's sources are np.repeat(rows, degrees), so
    # no per-edge source array is kept (25 MB at 6.4M edges)
    deg = np.diff(g.indptr)
    blocks = row_blocks(g.indptr, chunk)
    if outw is None:
        outw = out_weights(g.indptr, g.weights, chunk)
    dang = np.flatnonzero(outw <= 0)
    inv = np.divide(1.0, outw, out=np.zeros(n), where=outw > 0)
    x = np.full(n, 1.0 / n) if x0 is None else np.asarray(x0, dtype=np.float64) / float(np.sum(x0))
    for it in range(1, int(max_iter) + 1):
        xs = x * inv
        y = np.zeros(n)
        for a, b, s, e in blocks:
            if e > s:
                y += np.bincount(g.indices[s:e], weights=np.repeat(xs[a:b], deg[a:b]) * g.weights[s:e],
                                 minlength=n)
        ds = float(x[dang].sum()) if len(dang) else 0.0
        y *= alpha
        y += (alpha * ds + 1.0 - alpha) / n
        err = float(np.abs(y - x).sum())
        x = y
        if err < n * tol:
            _report(stats, err, outw)
            return x, it
    raise PowerIterationFailedConvergence(max_iter, "pagerank")
