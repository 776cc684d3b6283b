"""PageRank (networkx's conventions) and Random Walk with Restart (fast per-query PPR).

``pagerank`` follows ``networkx.pagerank`` exactly: weighted power iteration from the uniform
vector, dangling nodes (out-weight 0) jump by the ``dangling`` distribution (default: the
personalization vector), stop when the L1 change is below ``N * tol``, and raise
:class:`PowerIterationFailedConvergence` after ``max_iter`` iterations.

``rwr`` is personalized PageRank tuned for one query: it starts at the seeds, only touches the
edges of nodes that carry mass (cheap while the walk is local), stops at an absolute L1 change
below ``tol`` or when the top-``topk`` ranking has not changed for ``patience`` iterations,
and gives up quietly after ``max_iter`` iterations (a ranking, not a fixpoint, is wanted).
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import numpy as np

from ...errors import KgsearchError
from .csr import Graph, GraphError, scatter_add

__all__ = ["pagerank", "rwr", "PowerIterationFailedConvergence", "operator", "Op", "seed_vector", "TopCheck"]


class PowerIterationFailedConvergence(KgsearchError):
    """A power iteration did not converge within ``max_iter`` iterations (networkx's name)."""

    def __init__(self, max_iter: int, what: str = "power iteration"):
        super().__init__(f"{what} failed to converge within {max_iter} iterations; "
                         f"raise max_iter or loosen tol")
        self.max_iter = max_iter


# ---------------------------------------------------------------------- shared pieces
class Op(NamedTuple):
    """A walk operator: step ``k`` goes ``src[k] -> dst[k]`` with probability ``p[k]``."""

    src: np.ndarray                 # int64, per step
    dst: np.ndarray                 # int64, per step
    p: np.ndarray                   # float64, w / (walk out-weight of src); rows sum to 1
    dangling: np.ndarray            # nodes without any step (their mass restarts)
    blocks: tuple                   # ((indptr, offset), ...): steps of node i are the ranges
    degree: np.ndarray              # number of steps per node


def operator(g: Graph, direction: str = "out") -> Op:
    """The transition operator of ``g`` (``direction="both"``: edges walked either way, i.e.
    adjacency ``A + A.T``, built from the forward and reverse CSR without sorting).
    Built once per graph and direction, and cached on the graph."""
    if direction not in ("out", "both"):
        raise GraphError(f"direction must be 'out' or 'both', got {direction!r}")

    def build() -> Op:
        src, dst, w = g.src, g.dst, g.weights
        outw = g.out_weight
        deg = g.out_degree()
        blocks: tuple = ((g.indptr, 0),)
        if direction == "both":
            rp = g.rperm
            src, dst = np.concatenate([src, dst[rp]]), np.concatenate([dst, src[rp]])
            w = np.concatenate([w, w[rp]])
            outw = outw + g.in_weight
            deg = deg + g.in_degree()
            blocks = ((g.indptr, 0), (g.rindptr, g.m))
        denom = outw[src]
        p = np.divide(w, denom, out=np.zeros(len(src)), where=denom > 0)
        return Op(src, dst, p, np.flatnonzero(outw <= 0), blocks, deg)
    return g._cached("operator" if direction == "out" else "operator_both", build)


def _dense(vec: Any, n: int, name: str) -> np.ndarray:
    """A distribution over ``n`` nodes from a dict ``{node: value}`` or an array; sums to 1."""
    if isinstance(vec, Mapping):
        out = np.zeros(n)
        if vec:
            ids = np.fromiter((int(k) for k in vec.keys()), dtype=np.int64, count=len(vec))
            if ids.min() < 0 or ids.max() >= n:
                raise GraphError(f"{name} names node {int(ids.max() if ids.max() >= n else ids.min())}, "
                                 f"but nodes are 0..{n - 1}")
            np.add.at(out, ids, np.fromiter(vec.values(), dtype=np.float64, count=len(vec)))
    else:
        out = np.asarray(vec, dtype=np.float64).reshape(-1)
        if len(out) != n:
            raise GraphError(f"{name} must have one value per node ({n}), got {len(out)}")
    s = out.sum()
    if not np.isfinite(s) or s <= 0 or out.min() < 0:
        raise GraphError(f"{name} must be non-negative with a positive sum")
    return out / s


def _step(x: np.ndarray, src: np.ndarray, dst: np.ndarray, p: np.ndarray, n: int,
          buf: np.ndarray) -> np.ndarray:
    """``y = P.T @ x`` for the row-stochastic part (no dangling, no damping)."""
    np.take(x, src, out=buf)
    buf *= p
    return scatter_add(dst, buf, n)


# ---------------------------------------------------------------------- PageRank
def pagerank(g: Graph, alpha: float = 0.85, personalization: Any = None, tol: float = 1e-6,
             max_iter: int = 100, dangling: Any = None, nstart: Any = None) -> np.ndarray:
    """PageRank by weighted power iteration, with networkx's conventions.

    Parameters
    ----------
    g : Graph
    alpha : float
        Damping factor (probability of following an edge).
    personalization : dict or array_like, optional
        Teleport distribution (``{node: value}`` or one value per node; normalised to sum 1).
        Default uniform.
    tol : float
        Stop when the L1 change between iterations is below ``n * tol``.
    max_iter : int
        Iterations before giving up.
    dangling : dict or array_like, optional
        Where the mass of dangling nodes (out-weight 0) goes. Default: ``personalization``.
    nstart : dict or array_like, optional
        Starting vector (default uniform).

    Returns
    -------
    ndarray of float64, shape (n,)
        Scores summing to 1 (empty for an empty graph).

    Raises
    ------
    PowerIterationFailedConvergence
        Not converged after ``max_iter`` iterations.
    GraphError
        A personalization/dangling/nstart vector is malformed or sums to 0.

    Examples
    --------
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    >>> pagerank(g).round(4).tolist()
    [0.3333, 0.3333, 0.3333]
    """
    n = g.n
    if n == 0:
        return np.zeros(0)
    src, dst, p, dang = operator(g)[:4]
    pv = None if personalization is None else _dense(personalization, n, "personalization")
    dw = pv if dangling is None else _dense(dangling, n, "dangling")
    x = np.full(n, 1.0 / n) if nstart is None else _dense(nstart, n, "nstart")
    buf = np.empty(g.m)
    for _ in range(int(max_iter)):
        y = _step(x, src, dst, p, n, buf)
        ds = float(x[dang].sum()) if len(dang) else 0.0
        y *= alpha
        if pv is None and dw is None:
            y += (alpha * ds + 1.0 - alpha) / n
        elif dw is pv:
            y += (alpha * ds + 1.0 - alpha) * pv
        else:
            y += (alpha * ds) * (dw if dw is not None else 1.0 / n)
            y += (1.0 - alpha) * (pv if pv is not None else 1.0 / n)
        err = float(np.abs(y - x).sum())
        x = y
        if err < n * tol:
            return x
    raise PowerIterationFailedConvergence(max_iter, "pagerank")


# ---------------------------------------------------------------------- RWR
def seed_vector(g: Graph, seeds: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
    """Unique seed nodes and their weights normalised to sum 1."""
    if isinstance(seeds, Mapping):
        ids = np.fromiter((int(k) for k in seeds.keys()), dtype=np.int64, count=len(seeds))
        w = np.fromiter(seeds.values(), dtype=np.float64, count=len(seeds))
    else:
        ids = np.atleast_1d(np.asarray(seeds)).astype(np.int64)
        w = np.ones(len(ids)) if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
        if len(w) != len(ids):
            raise GraphError(f"weights must have one value per seed ({len(ids)}), got {len(w)}")
    if len(ids) == 0:
        raise GraphError("rwr needs at least one seed node")
    if ids.min() < 0 or ids.max() >= g.n:
        raise GraphError(f"seed nodes must be in 0..{g.n - 1}")
    if not np.all(np.isfinite(w)) or w.min() < 0 or w.sum() <= 0:
        raise GraphError("seed weights must be non-negative with a positive sum")
    uniq, inv = np.unique(ids, return_inverse=True)
    sw = scatter_add(inv, w, len(uniq))
    return uniq, sw / sw.sum()


class TopCheck:
    """Early stop: the ``topk`` best nodes (in order, ties by node) unchanged ``patience`` times."""

    def __init__(self, topk: int | None, patience: int | None):
        self.k, self.patience = (int(topk or 0), int(patience or 0))
        self.prev: np.ndarray | None = None
        self.stable = 0

    def stop(self, nodes: np.ndarray, vals: np.ndarray) -> bool:
        if not (self.k and self.patience):
            return False
        keep = vals > 0
        nodes, vals = nodes[keep], vals[keep]
        if len(nodes) > self.k:
            part = np.argpartition(-vals, self.k - 1)[: self.k]
            nodes, vals = nodes[part], vals[part]
        top = nodes[np.lexsort((nodes, -vals))]
        if self.prev is not None and np.array_equal(top, self.prev):
            self.stable += 1
        else:
            self.stable = 0
        self.prev = top
        return self.stable >= self.patience


class _Scratch:
    """Per-graph work arrays for sparse RWR steps, reused across queries (single-threaded use).

    ``x`` holds the current walk vector on the reached nodes and is all zeros between queries;
    ``where`` maps a node to its slot in the current compact vector.
    """

    def __init__(self, n: int):
        self.x = np.zeros(n)
        self.where = np.zeros(n, dtype=np.int64)
        self.mark = np.zeros(n, dtype=np.int64)
        self.token = 0

    def accumulate(self, idx: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct nodes of ``idx`` and the sum of ``vals`` per node, without touching all n."""
        k = len(idx)
        order = np.arange(k, dtype=np.int64)
        self.where[idx] = order                    # one write per node survives
        nodes = idx[self.where[idx] == order]
        self.where[nodes] = np.arange(len(nodes), dtype=np.int64)
        return nodes, np.bincount(self.where[idx], weights=vals, minlength=len(nodes))

    def l1_change(self, old: np.ndarray, new: np.ndarray, newvals: np.ndarray) -> float:
        """``|y - x|_1`` with ``x`` in ``self.x`` on ``old`` and ``y`` = ``newvals`` on ``new``."""
        self.token += 1
        self.mark[new] = self.token
        gone = old[self.mark[old] != self.token]
        return float(np.abs(newvals - self.x[new]).sum() + self.x[gone].sum())


def rwr(g: Graph, seeds: Any, restart: float = 0.2, max_iter: int = 20, tol: float = 1e-3,
        topk: int | None = 10, patience: int | None = 2, hops: int | None = None,
        weights: Any = None, sparse_fraction: float = 0.25, stats: dict | None = None,
        direction: str = "out", prune: float = 0.0) -> np.ndarray:
    """Random walk with restart (personalized PageRank) from weighted seed nodes.

    Each step follows an out-edge with probability ``1 - restart`` (by edge weight) or jumps
    back to a seed (by seed weight); dead ends jump back to the seeds. With ``topk=None`` and
    a small ``tol`` this is ``pagerank(g, alpha=1 - restart, personalization=seeds)``.

    Parameters
    ----------
    g : Graph
    seeds : dict or array_like of int
        ``{node: weight}``, or node numbers (equal weights unless ``weights`` is given).
    restart : float
        Probability of jumping back to the seeds at each step.
    max_iter : int
        Iteration budget; the current estimate is returned when it runs out (no error).
    tol : float
        Stop when the L1 change of the score vector is below ``tol`` (absolute, not ``n*tol``).
    topk, patience : int or None
        Stop when the ``topk`` best nodes (in order) were unchanged for ``patience`` iterations.
        ``None`` disables this early stop.
    hops : int, optional
        Confine the walk to nodes within ``hops`` out-steps of the seeds; a step that would
        leave that neighbourhood restarts at the seeds instead. For very large graphs.
    weights : array_like of float, optional
        Seed weights when ``seeds`` is a list of node numbers.
    sparse_fraction : float
        Use the frontier-only update while the nodes carrying mass own fewer than this
        fraction of all edges (a speed knob; results are identical).
    stats : dict, optional
        Filled with ``iterations`` and ``stopped`` (``"tol"``, ``"topk"`` or ``"max_iter"``).
    direction : {"out", "both"}
        Follow out-edges only, or edges either way (the walk on ``A + A.T``: callers and
        callees, links and backlinks), without building a second graph.
    prune : float
        A node passes its score on only while ``score >= prune * (its number of steps)``;
        otherwise that share restarts at the seeds (the rule of "forward push" PPR). Each
        step then walks at most about ``1 / prune`` edges however big the graph and its hubs
        are. An approximation (0, the default, is exact).

    Returns
    -------
    ndarray of float64, shape (n,)
        Visit probabilities (sum 1 up to the tolerance); zero outside the reached region.

    Examples
    --------
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    >>> s = rwr(g, [0], topk=None, tol=1e-12, max_iter=200)
    >>> bool(s[0] > s[1] > s[2])
    True
    """
    n = g.n
    ids, sw = seed_vector(g, seeds, weights)
    op = operator(g, direction)
    src, dst, p, dang = op.src, op.dst, op.p, op.dangling
    alpha = 1.0 - float(restart)
    inside = None
    if hops is not None:
        inside = np.zeros(n, dtype=bool)
        inside[g.bfs(ids, int(hops), direction)] = True
    limit = sparse_fraction * len(src)
    check = TopCheck(topk, patience)
    stopped, it = "max_iter", 0
    # phase 1, while the walk is local: vectors over the reached nodes only, no O(n) work
    sc = g._cached("rwr_scratch", lambda: _Scratch(n))
    act, xa = ids, sw.copy()
    sc.x[act] = xa
    try:
        act, xa, it, stopped, dense = _sparse_phase(op, sc, act, xa, ids, sw, inside, alpha, restart,
                                                    tol, limit, int(max_iter), check, float(prune))
    except BaseException:
        sc.x[:] = 0.0                      # keep the scratch clean for the next query
        raise
    x = np.zeros(n)
    x[act] = xa
    sc.x[act] = 0.0
    if not dense:
        if stats is not None:
            stats.update(iterations=it, stopped=stopped, dense_iterations=0)
        return x
    # phase 2: the walk reached a large part of the graph: whole-vector iterations
    first = it
    buf = np.empty(len(src))
    for it in range(first, int(max_iter) + 1):
        xs = x if prune <= 0 else np.where(x >= prune * op.degree, x, 0.0)
        y = _step(xs, src, dst, p, n, buf)
        if inside is not None:
            y[~inside] = 0.0
        lost = float(x.sum() - y.sum()) if inside is not None or prune > 0 else float(x[dang].sum())
        y *= alpha
        y[ids] += (alpha * max(lost, 0.0) + restart) * sw
        err = float(np.abs(y - x).sum())
        x = y
        if err < tol:
            stopped = "tol"
            break
        nz = np.flatnonzero(x)
        if check.stop(nz, x[nz]):
            stopped = "topk"
            break
    if stats is not None:
        stats.update(iterations=it, stopped=stopped, dense_iterations=it - first + 1)
    return x


def _sparse_phase(op: Op, sc, act, xa, ids, sw, inside, alpha, restart, tol, limit, max_iter, check,
                  prune):
    """RWR steps over the reached nodes only; stops early (dense=True) once they own more than
    ``limit`` steps. Returns ``(nodes, values, iteration, stopped, dense)``."""
    stopped, it = "max_iter", 0
    for it in range(1, max_iter + 1):
        deg = op.degree[act]
        src_nodes, src_vals = act, xa
        held = 0.0
        if prune > 0:                       # only nodes with enough score per edge spread it
            push = xa >= prune * deg
            if not push.all():
                held = float(xa[~push].sum())
                src_nodes, src_vals, deg = act[push], xa[push], deg[push]
        if deg.sum() > limit:
            return act, xa, it, stopped, True
        es, xs = [], []
        for bp, off in op.blocks:
            starts = bp[src_nodes].astype(np.int64)
            counts = bp[src_nodes + 1].astype(np.int64) - starts
            es.append(np.arange(int(counts.sum()), dtype=np.int64) + off + np.repeat(
                starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts))
            xs.append(np.repeat(src_vals, counts))
        e = np.concatenate(es) if len(es) > 1 else es[0]
        vals = (np.concatenate(xs) if len(xs) > 1 else xs[0]) * op.p[e]
        d = op.dst[e]
        if inside is not None:
            keep = inside[d]
            d, vals = d[keep], vals[keep]
        # dead ends, leaving the region and held-back scores restart at the seeds
        lost = max(float(src_vals.sum() - vals.sum()), 0.0) + held
        nodes, yv = sc.accumulate(np.concatenate([d, ids]), np.concatenate([vals, np.zeros(len(ids))]))
        yv *= alpha
        yv[sc.where[ids]] += (alpha * lost + restart) * sw
        err = sc.l1_change(act, nodes, yv)
        sc.x[act] = 0.0
        sc.x[nodes] = yv
        act, xa = nodes, yv
        if err < tol:
            stopped = "tol"
            break
        if check.stop(act, xa):
            stopped = "topk"
            break
    return act, xa, it, stopped, False
