"""HITS hubs and authorities, as ``networkx.hits``: principal singular vectors of the weighted
adjacency matrix ``A`` (authorities: top eigenvector of ``A.T @ A``; hubs ``A @ a``), each
normalised to sum 1.

The default solver is Lanczos with full reorthogonalisation on ``A.T @ A`` (what ARPACK, used
by networkx and igraph, does), started from ``A.T @ 1`` like networkx's power iteration: it
needs far fewer matrix products than plain power iteration when the top two singular values
are close. ``method="power"`` is the textbook iteration (networkx's ``_hits_python``).

For the query-time variant pass ``nodes=`` (e.g. the 200 best nodes of a walk): HITS then runs
on the subgraph those nodes induce and the result is aligned with ``nodes``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .csr import Graph, GraphError, scatter_add
from .pagerank import PowerIterationFailedConvergence

__all__ = ["hits"]


def _matvecs(g: Graph):
    src, dst = g.src, g.dst
    w = g.weights.astype(np.float64)
    n = g.n

    def a_mul(v: np.ndarray) -> np.ndarray:        # (A @ v)[i] = sum_j w_ij v_j
        return scatter_add(src, v[dst] * w, n)

    def at_mul(v: np.ndarray) -> np.ndarray:       # (A.T @ v)[j] = sum_i w_ij v_i
        return scatter_add(dst, v[src] * w, n)

    return a_mul, at_mul


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.einsum("i,i->", a, b))


def _lanczos_top(mul, v0: np.ndarray, max_iter: int, tol: float, krylov: int) -> np.ndarray:
    """Top eigenvector of the symmetric PSD operator ``mul`` by restarted Lanczos.

    ``max_iter`` bounds the number of products; converged when the residual
    ``||M y - theta y|| <= tol * theta``. Vector algebra uses ``einsum`` rather than BLAS:
    multithreaded BLAS calls on thin matrices slow down 10x when the other core is busy
    (phones run other apps; our benchmark machine runs other jobs).
    """
    n = len(v0)
    k = max(2, min(krylov, n))
    y = v0 / np.sqrt(_dot(v0, v0))
    used = 0
    while used < max_iter:
        V = np.zeros((k + 1, n))
        V[0] = y
        alphas, betas = [], []
        for j in range(k):
            w = mul(V[j])
            used += 1
            alphas.append(_dot(w, V[j]))
            B = V[: j + 1]
            for _ in range(2):                      # full reorthogonalisation, twice
                w -= np.einsum("i,ij->j", np.einsum("ij,j->i", B, w), B)
            beta = float(np.sqrt(_dot(w, w)))
            T = np.diag(alphas) + np.diag(betas, 1) + np.diag(betas, -1)
            theta, S = np.linalg.eigh(T)
            s = S[:, -1]
            top = float(theta[-1])
            resid = beta * abs(float(s[-1]))
            if top <= 0.0:
                return np.zeros(n)
            if resid <= tol * top or beta <= 1e-14 * max(top, 1.0):
                return np.einsum("i,ij->j", s, B)
            if used >= max_iter:
                break
            betas.append(beta)
            V[j + 1] = w / beta
        y = np.einsum("i,ij->j", s, V[: len(alphas)])
        y /= np.sqrt(_dot(y, y))
    raise PowerIterationFailedConvergence(max_iter, "hits")


def _power(a_mul, at_mul, n: int, max_iter: int, tol: float) -> np.ndarray:
    """networkx ``_hits_python``: max-normalised iteration, L1 change of hubs below ``tol``."""
    h = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        a = at_mul(h)
        hn = a_mul(a)
        hn /= hn.max()
        err = float(np.abs(hn - h).sum())
        h = hn
        if err < tol:
            return a
    raise PowerIterationFailedConvergence(max_iter, "hits")


def hits(g: Graph, max_iter: int = 100, tol: float = 1e-8, nodes: Any = None,
         method: str = "lanczos", krylov: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Hub and authority scores.

    Parameters
    ----------
    g : Graph
    max_iter : int
        Most products with ``A.T @ A`` (each is two passes over the edges).
    tol : float
        Lanczos: relative residual of the top eigenpair. Power: L1 change of the
        max-normalised hub vector (networkx's rule).
    nodes : array_like of int, optional
        Run on the subgraph induced by these nodes; results are aligned with ``nodes``.
    method : {"lanczos", "power"}
    krylov : int
        Lanczos basis size before a restart (memory ``krylov * n`` floats).

    Returns
    -------
    hubs, authorities : ndarray of float64
        Each sums to 1. A graph without edges (or weights all 0) gets uniform scores.

    Raises
    ------
    PowerIterationFailedConvergence

    Examples
    --------
    >>> g = Graph.from_edges([0, 0, 1], [1, 2, 2])
    >>> h, a = hits(g)
    >>> int(h.argmax()), int(a.argmax())
    (0, 2)
    """
    if method not in ("lanczos", "power"):
        raise GraphError(f"method must be 'lanczos' or 'power', got {method!r}")
    if nodes is not None:
        g = g.subgraph(nodes)
    n = g.n
    if n == 0:
        return np.zeros(0), np.zeros(0)
    a_mul, at_mul = _matvecs(g)
    start = at_mul(np.full(n, 1.0 / n))
    if not np.any(start > 0):
        u = np.full(n, 1.0 / n)
        return u, u.copy()
    if method == "power":
        a = _power(a_mul, at_mul, n, int(max_iter), float(tol))
    else:
        a = _lanczos_top(lambda v: at_mul(a_mul(v)), start, int(max_iter), float(tol), krylov)
        if a.sum() < 0:
            a = -a
        np.maximum(a, 0.0, out=a)
    h = a_mul(a)
    return h / h.sum(), a / a.sum()
