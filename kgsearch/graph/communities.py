"""Greedy modularity communities (Clauset-Newman-Moore), as networkx's
``greedy_modularity_communities``, and modularity.

Both work on the undirected projection of a :class:`Graph`: the weight between ``u != v`` is
the sum of the weights of all edges ``u -> v`` and ``v -> u`` (1 per linked pair with
``weight=False``); a self-loop adds to its node's degree twice, like in networkx.

Reproducing networkx's choices, ties included
---------------------------------------------
networkx keeps ``dq[u][v]``, the modularity gain of joining communities ``u`` and ``v``,
updates it incrementally after every merge, and always merges the pair with the largest gain,
ties going to the smallest ``(u, v)``; ``u < v`` joins ``v`` (so a community is named after its
largest node). We do the same arithmetic in the same order (same floating-point values, so the
same ties), but with plain dicts and one lazy ``heapq`` instead of networkx's per-row
``MappedQueue`` objects:

* a heap entry ``(-dq, u, v)`` with ``u < v`` is valid when ``dq`` is still the pair's gain;
* gains that decrease (pairs only on ``v``'s side of a merge) are not re-pushed: the old,
  larger entry is an upper bound, and when it surfaces it is re-pushed with the current gain;
* gains that increase or pairs that are new (``u``'s side) are pushed right away;
* the heap is rebuilt when stale entries outnumber live pairs.

So the first valid entry popped is exactly networkx's choice. The merge loop is pure Python;
its cost is the sum of the sizes of the two merged rows (networkx's too), which grows with
hubs: see ``bench/results/graph.md``.
"""
from __future__ import annotations

import heapq
import time

import numpy as np

from .csr import Graph, GraphError, scatter_add

__all__ = ["greedy_modularity", "modularity", "CommunityTimeout"]


class CommunityTimeout(RuntimeError):
    """Raised by :func:`greedy_modularity` when ``max_seconds`` runs out (internal use)."""


def _projection(g: Graph, weight: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``u < v`` with weights, and the weighted degree of every node (self-loops twice)."""
    u, v, w = g.undirected_pairs(weight)
    deg = scatter_add(u, w, g.n) + scatter_add(v, w, g.n)
    off = u != v
    return u[off], v[off], w[off], deg


def _order_labels(final: np.ndarray) -> np.ndarray:
    """Relabel communities 0..k-1 by size (largest first), ties by largest member (networkx)."""
    n = len(final)
    sizes = np.bincount(final, minlength=n)
    roots = np.flatnonzero(sizes)
    key_max = np.zeros(n, dtype=np.int64)
    np.maximum.at(key_max, final, np.arange(n))
    order = roots[np.lexsort((key_max[roots], -sizes[roots]))]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[final].astype(np.int32)


def greedy_modularity(g: Graph, resolution: float = 1.0, weight: bool = True,
                      max_seconds: float | None = None) -> np.ndarray:
    """Community labels by Clauset-Newman-Moore greedy modularity maximisation.

    Parameters
    ----------
    g : Graph
        Directions are ignored (undirected projection, see the module notes).
    resolution : float
        Values above 1 favour smaller communities, below 1 larger ones.
    weight : bool
        Use edge weights (True) or count every linked pair as 1.
    max_seconds : float, optional
        Give up after this long and raise :class:`CommunityTimeout` (for index-time budgets).

    Returns
    -------
    ndarray of int32, shape (n,)
        Community number of every node: 0 is the largest community, ties broken by the
        largest node number, as in the list networkx returns.

    Examples
    --------
    >>> g = Graph.from_edges([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3])
    >>> greedy_modularity(g).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    n = g.n
    us, vs, ws, deg = _projection(g, weight)
    total = float(deg.sum())
    if n == 0 or total <= 0:
        return np.arange(n, dtype=np.int32)
    m = total / 2
    q0 = 1 / m
    res = float(resolution)
    if res < 0:
        raise GraphError(f"resolution must be >= 0, got {resolution}")
    a_arr = deg * q0 * 0.5
    t = a_arr[us] * a_arr[vs]
    dq0 = q0 * ws - res * (t + t)

    state = _CNM(n, us, vs, dq0, a_arr, res)
    merges = state.run(None if max_seconds is None else time.monotonic() + max_seconds)
    final = np.arange(n)
    for u, v in reversed(merges):
        final[u] = final[v]
    return _order_labels(final)


def modularity(g: Graph, labels: np.ndarray, resolution: float = 1.0, weight: bool = True) -> float:
    """Modularity of a partition of the undirected projection (networkx's definition).

    ``Q = sum_c [ L_c / m - resolution * (d_c / 2m)^2 ]`` with ``L_c`` the weight inside
    community ``c`` (self-loops once), ``d_c`` its total degree and ``m`` the total weight.

    Examples
    --------
    >>> g = Graph.from_edges([0, 2], [1, 3])
    >>> modularity(g, np.array([0, 0, 1, 1]))
    0.5
    """
    labels = np.asarray(labels, dtype=np.int64)
    u, v, w = g.undirected_pairs(weight)
    deg = scatter_add(u, w, g.n) + scatter_add(v, w, g.n)
    m = float(w.sum())
    if m <= 0:
        return 0.0
    k = int(labels.max()) + 1 if len(labels) else 0
    inside = labels[u] == labels[v]
    lc = scatter_add(labels[u][inside], w[inside], k)
    dc = scatter_add(labels, deg, k)
    return float(np.sum(lc / m - resolution * (dc / (2 * m)) ** 2))


class _CNM:
    """The merge loop. Pair gains live in one float64 array (one entry per unordered pair,
    ``pairs`` maps ``u * n + v`` to it); each community keeps numpy arrays of its neighbours
    and pair numbers, plus a list of pairs added since, so a merge updates the surviving row
    with a few numpy expressions. Entries of dead pairs stay in a row until they are a quarter
    of it (updating them is harmless: they are never read)."""

    def __init__(self, n: int, us: np.ndarray, vs: np.ndarray, dq0: np.ndarray,
                 a: np.ndarray, res: float):
        self.n, self.res = n, res
        k = len(us)
        cap = max(16, 2 * k)
        self.val = np.empty(cap)
        self.val[:k] = dq0
        self.alive = np.zeros(cap, dtype=bool)
        self.alive[:k] = True
        self.pa = np.empty(cap, dtype=np.int64)
        self.pb = np.empty(cap, dtype=np.int64)
        self.pa[:k], self.pb[:k] = us, vs
        self.npairs = k
        self.pairs = dict(zip((us * n + vs).tolist(), range(k)))
        self.a = a.copy()
        ends = np.concatenate([us, vs])
        other = np.concatenate([vs, us])
        pids = np.concatenate([np.arange(k), np.arange(k)])
        order = np.lexsort((other, ends))
        ends, other, pids = ends[order], other[order], pids[order]
        cuts = np.searchsorted(ends, np.arange(n + 1))
        self.nb = np.split(other, cuts[1:-1])
        self.pp = np.split(pids, cuts[1:-1])
        self.dead = np.zeros(n, dtype=np.int64)            # dead entries left in each row
        self.pend: list[list[int] | None] = [None] * n    # [nb, pid, nb, pid, ...] added since

    def _grow(self, need: int) -> None:
        cap = len(self.val)
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name in ("val", "alive", "pa", "pb"):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=old.dtype)
            arr[:cap] = old
            setattr(self, name, arr)

    def _row(self, x: int, clean: bool) -> tuple[np.ndarray, np.ndarray]:
        """Community x's neighbours and pair numbers. Pending pairs are folded in when they are
        many (always with ``clean``); dead entries are dropped when they are many (or ``clean``)."""
        nb, pp = self.nb[x], self.pp[x]
        pend = self.pend[x]
        if pend and (clean or 2 * len(pend) > len(nb)):
            extra = np.array(pend, dtype=np.int64)
            nb = np.concatenate([nb, extra[0::2]])
            pp = np.concatenate([pp, extra[1::2]])
            self.pend[x] = pend = None
        if clean or 4 * self.dead[x] > len(nb):
            keep = self.alive[pp]
            nb, pp = nb[keep], pp[keep]
            self.dead[x] = 0
        self.nb[x], self.pp[x] = nb, pp
        if pend:
            extra = np.array(pend, dtype=np.int64)
            return np.concatenate([nb, extra[0::2]]), np.concatenate([pp, extra[1::2]])
        return nb, pp

    def run(self, deadline: float | None) -> list[tuple[int, int]]:
        n, res = self.n, self.res
        val, alive, a, pairs, dead = self.val, self.alive, self.a, self.pairs, self.dead
        k = self.npairs
        heap = list(zip((-val[:k]).tolist(), (self.pa[:k] * n + self.pb[:k]).tolist(), range(k)))
        heapq.heapify(heap)
        live = k
        push, pop = heapq.heappush, heapq.heappop
        merges: list[tuple[int, int]] = []
        while heap:
            negdq, key, pid = pop(heap)
            if not alive[pid]:
                continue
            cur = val.item(pid)
            if -cur != negdq:
                if -cur > negdq:            # gain dropped since this entry was pushed: re-file
                    push(heap, (-cur, key, pid))
                continue
            if cur < 0:
                break
            u, v = divmod(key, n)           # merge community u into v (u < v), as networkx
            alive[pid] = False
            del pairs[key]
            nbu, ppu = self._row(u, True)
            nbv, ppv = self._row(v, False)
            dead[v] += 1
            au, av = a.item(u), a.item(v)
            wl = nbu.tolist()
            pvw = np.array([pairs.get(w * n + v if w < v else v * n + w, -1) for w in wl], dtype=np.int64)
            for w in wl:
                del pairs[w * n + u if w < u else u * n + w]
            both = pvw >= 0
            pb_ = pvw[both]
            old_b = val[pb_]
            t = a[nbv]                      # v's row: gain drops by 2 a_u a_w (networkx's sums)
            t *= au
            t += t
            if res != 1.0:
                t *= res
            vv = val[ppv]
            vv -= t
            val[ppv] = vv
            duw = val[ppu]
            new_b = old_b + duw[both]       # common neighbours: sum of both gains
            val[pb_] = new_b
            alive[ppu] = False
            dead[nbu] += 1                  # pair (w, u) died in w's row
            only = ~both
            wo = nbu[only]                  # u's other neighbours become v's
            tw = av * a[wo]
            new_o = duw[only] - res * (tw + tw)
            m = len(wo)
            if m:
                start = self.npairs
                self._grow(start + m)
                if self.val is not val:
                    val, alive = self.val, self.alive
                newp = np.arange(start, start + m)
                val[newp] = new_o
                alive[newp] = True
                lo, hi = np.minimum(wo, v), np.maximum(wo, v)
                self.pa[newp], self.pb[newp] = lo, hi
                self.npairs += m
                keys = (lo * n + hi).tolist()
                pl = newp.tolist()
                pairs.update(zip(keys, pl))
                pend_v = self.pend[v] or []
                for w, p in zip(wo.tolist(), pl):
                    pw = self.pend[w]
                    if pw is None:
                        self.pend[w] = [v, p]
                    else:
                        pw += (v, p)
                    pend_v += (w, p)
                self.pend[v] = pend_v
                for item in zip((-new_o).tolist(), keys, pl):
                    push(heap, item)
            up = new_b > old_b
            if up.any():
                wb = nbu[both][up]
                keys = np.minimum(wb, v) * n + np.maximum(wb, v)
                for item in zip((-new_b[up]).tolist(), keys.tolist(), pb_[up].tolist()):
                    push(heap, item)
            live -= len(pb_) + 1
            a[v] = av + au
            a[u] = 0.0
            self.nb[u] = self.pp[u] = None
            self.pend[u] = None
            merges.append((u, v))
            if len(heap) > 2 * live + 4096:     # drop stale entries
                ids = np.flatnonzero(alive[: self.npairs])
                heap = list(zip((-val[ids]).tolist(), (self.pa[ids] * n + self.pb[ids]).tolist(),
                                ids.tolist()))
                heapq.heapify(heap)
            if deadline is not None and len(merges) % 256 == 0 and time.monotonic() > deadline:
                raise CommunityTimeout(f"greedy modularity ran out of time after {len(merges)} merges")
        return merges
