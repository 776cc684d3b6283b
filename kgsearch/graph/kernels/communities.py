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
* gains that increase, and pairs that change communities (``u``'s side: ``(w, u)`` becomes
  ``(w, v)`` in the same slot), are pushed right away; an entry whose communities are no
  longer its slot's is skipped;
* the heap is rebuilt when stale entries outnumber live pairs.

So the first valid entry popped is exactly networkx's choice. The cost of a merge is the
sum of the sizes of the two merged rows (networkx's too), so time grows with hubs: a star of
``L`` leaves takes ``O(L ** 2)`` (its hub's community takes in one leaf per merge and is
renamed after it: 2,000 leaves 2.9 s, 6,000 about 25 s on a 2-core x86_64; the index step's
``graph_communities_seconds`` bounds it). Memory is ``O(linked pairs)`` whatever the shape
(see :class:`_CNM`). See ``bench/results/graph.md``.
"""
from __future__ import annotations

import heapq
import time

import numpy as np

from .csr import Graph, GraphError, scatter_add

__all__ = ["pairs_lower_bound", "count_pairs", "greedy_modularity", "modularity", "CommunityTimeout"]


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
                      max_seconds: float | None = None, max_work: int | None = None) -> np.ndarray:
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
    max_work : int, optional
        Give up (:class:`CommunityTimeout`) once the merges have pushed this many heap entries
        (one per pair that changed communities or gained: the loop's Python-level cost; a
        star's hub pushes its whole row at every merge); unlike ``max_seconds`` it stops at the
        same merge on any machine.

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
    merges = state.run(None if max_seconds is None else time.monotonic() + max_seconds, max_work)
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
    """The merge loop. Pair gains live in one float64 array (one slot per unordered pair of
    communities, ``pa``/``pb`` hold the pair's two communities); each community keeps a numpy
    array of its pair numbers, plus a list of pairs added since, so a merge updates the
    surviving row with a few numpy expressions and finds the pairs the two communities share
    by a sorted search of one row in the other (no per-pair Python work but the heap's).

    Memory is O(linked pairs) whatever the merge order (issue 13): when ``u`` joins ``v``, a
    pair ``(w, u)`` with ``w`` not linked to ``v`` *becomes* the pair ``(w, v)`` in the same
    slot (its two communities and gain are rewritten; ``w``'s row, which holds only the slot
    number, needs no update), so slots are never allocated after the start. A star used to
    allocate a new slot and a row entry at every leaf for every merge of the hub's community:
    O(leaves ** 2), 1 GB for 6K leaves. Entries of dead pairs stay in a row until they are a
    quarter of it (updating them is harmless: they are never read); stale heap entries (a
    pair's old gain or old communities) are skipped when popped and dropped when they
    outnumber live pairs."""

    def __init__(self, n: int, us: np.ndarray, vs: np.ndarray, dq0: np.ndarray,
                 a: np.ndarray, res: float):
        self.n, self.res = n, res
        k = len(us)
        self.val = np.array(dq0, dtype=np.float64)
        self.alive = np.ones(k, dtype=bool)
        self.pa = np.asarray(us, dtype=np.int64).copy()
        self.pb = np.asarray(vs, dtype=np.int64).copy()
        self.npairs = k
        self.a = a.copy()
        ends = np.concatenate([self.pa, self.pb])
        other = np.concatenate([self.pb, self.pa])
        pids = np.concatenate([np.arange(k), np.arange(k)])
        order = np.lexsort((other, ends))
        ends, pids = ends[order], pids[order]
        cuts = np.searchsorted(ends, np.arange(n + 1))
        self.pp = np.split(pids, cuts[1:-1])
        self.dead = np.zeros(n, dtype=np.int64)            # dead entries left in each row
        self.pend: list[list[int] | None] = [None] * n    # pair numbers added since

    def _row(self, x: int, clean: bool) -> tuple[np.ndarray, np.ndarray]:
        """Community x's neighbours and pair numbers. Pending pairs are folded in when they are
        many (always with ``clean``); dead entries are dropped when they are many (or ``clean``)."""
        pp = self.pp[x]
        pend = self.pend[x]
        if pend and (clean or 2 * len(pend) > len(pp)):
            pp = np.concatenate([pp, np.array(pend, dtype=np.int64)])
            self.pend[x] = pend = None
        if clean or 4 * self.dead[x] > len(pp):
            pp = pp[self.alive[pp]]
            self.dead[x] = 0
        self.pp[x] = pp
        if pend:
            pp = np.concatenate([pp, np.array(pend, dtype=np.int64)])
        nb = self.pa[pp] + self.pb[pp] - x      # the other community of each pair
        return nb, pp

    def run(self, deadline: float | None, max_work: int | None = None) -> list[tuple[int, int]]:
        n, res = self.n, self.res
        val, alive, a, dead = self.val, self.alive, self.a, self.dead
        pa, pb = self.pa, self.pb
        k = self.npairs
        heap = list(zip((-val[:k]).tolist(), (pa[:k] * n + pb[:k]).tolist(), range(k)))
        heapq.heapify(heap)
        live = k
        push, pop = heapq.heappush, heapq.heappop
        merges: list[tuple[int, int]] = []
        work = 0
        while heap:
            negdq, key, pid = pop(heap)
            if not alive[pid] or pa.item(pid) * n + pb.item(pid) != key:
                continue                    # a dead pair, or a slot that moved on to other communities
            cur = val.item(pid)
            if -cur != negdq:
                if -cur > negdq:            # gain dropped since this entry was pushed: re-file
                    push(heap, (-cur, key, pid))
                continue
            if cur < 0:
                break
            u, v = divmod(key, n)           # merge community u into v (u < v), as networkx
            alive[pid] = False
            nbu, ppu = self._row(u, True)
            nbv, ppv = self._row(v, False)
            dead[v] += 1
            au, av = a.item(u), a.item(v)
            # the pair (w, v) of each of u's neighbours w, if any: v's live pairs by neighbour
            # (dead entries of a row point at dead communities; u's neighbours are alive)
            lv = alive[ppv]
            nl, pl_ = nbv[lv], ppv[lv]
            order = np.argsort(nl, kind="stable")
            nl, pl_ = nl[order], pl_[order]
            at = np.searchsorted(nl, nbu)
            at[at >= len(nl)] = 0
            both = (nl[at] == nbu) if len(nl) else np.zeros(len(nbu), dtype=bool)
            pvw = np.where(both, pl_[at] if len(nl) else 0, -1)
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
            gone = ppu[both]                # pairs (w, u) whose w is also v's neighbour: dead
            alive[gone] = False
            dead[nbu[both]] += 1
            only = ~both
            wo = nbu[only]                  # u's other neighbours become v's: same slots
            if len(wo):
                po = ppu[only]
                tw = av * a[wo]
                new_o = duw[only] - res * (tw + tw)
                val[po] = new_o
                lo, hi = np.minimum(wo, v), np.maximum(wo, v)
                pa[po], pb[po] = lo, hi
                keys = (lo * n + hi).tolist()
                pl = po.tolist()
                pend_v = self.pend[v]
                if pend_v is None:
                    self.pend[v] = pl
                else:
                    pend_v += pl
                for item in zip((-new_o).tolist(), keys, pl):
                    push(heap, item)
            up = new_b > old_b
            if up.any():
                wb = nbu[both][up]
                keys = np.minimum(wb, v) * n + np.maximum(wb, v)
                for item in zip((-new_b[up]).tolist(), keys.tolist(), pb_[up].tolist()):
                    push(heap, item)
            live -= len(pb_) + 1
            work += len(wo) + int(up.sum())         # heap entries pushed: the loop's Python-level cost
            if max_work is not None and work > max_work:
                raise CommunityTimeout(f"greedy modularity passed its work budget ({max_work:,} heap entries) "
                                       f"after {len(merges):,} merges")
            a[v] = av + au
            a[u] = 0.0
            self.pp[u] = None
            self.pend[u] = None
            merges.append((u, v))
            if len(heap) > 2 * live + 4096:     # drop stale entries
                ids = np.flatnonzero(alive)
                heap = list(zip((-val[ids]).tolist(), (pa[ids] * n + pb[ids]).tolist(), ids.tolist()))
                heapq.heapify(heap)
            # (every merge: on a star one merge moves the hub's whole row, 0.2 s at 60K leaves)
            if deadline is not None and time.monotonic() > deadline:
                raise CommunityTimeout(f"greedy modularity ran out of time after {len(merges)} merges")
        return merges


# ---------------------------------------------------------------------- size of the input
def pairs_lower_bound(g: Graph) -> int:
    """At least this many undirected linked pairs (``len(g.undirected_pairs()[0])``): half the
    distinct (source, target) pairs, from the sorted CSR rows in O(m) with one bool per edge,
    where the exact count sorts every edge (1.7 GB at 1M nodes, 6.4M edges)."""
    if not g.m:
        return 0
    first = np.ones(g.m, dtype=bool)
    np.not_equal(g.indices[1:], g.indices[:-1], out=first[1:])
    first[g.indptr[:-1][np.diff(g.indptr) > 0]] = True
    return (int(first.sum()) + 1) // 2


def count_pairs(g: Graph, chunk: int = 1 << 20) -> int:
    """``len(g.undirected_pairs()[0])`` with one int64 per distinct directed pair (the sorted
    CSR rows give them in order) instead of several per edge plus a sort: the distinct
    directed pairs, less those whose reverse is there too (counted once from the smaller end).
    About 50 MB at 6.4M edges where ``undirected_pairs`` took 1.7 GB."""
    if not g.m:
        return 0
    first = np.ones(g.m, dtype=bool)
    np.not_equal(g.indices[1:], g.indices[:-1], out=first[1:])
    first[g.indptr[:-1][np.diff(g.indptr) > 0]] = True
    deg = np.diff(g.indptr)
    keys = np.empty(int(first.sum()), dtype=np.int64)
    o = 0
    for a in range(0, g.n, max(1, chunk // 8)):            # rows in blocks
        b = min(g.n, a + max(1, chunk // 8))
        s, e = int(g.indptr[a]), int(g.indptr[b])
        if e == s:
            continue
        f = first[s:e]
        src = np.repeat(np.arange(a, b, dtype=np.int64), deg[a:b])[f]
        k = src * g.n + g.indices[s:e][f]
        keys[o:o + len(k)] = k
        o += len(k)
    del first
    both = 0
    for c in range(0, len(keys), chunk):
        k = keys[c:c + chunk]
        u, v = k // g.n, k % g.n
        up = u < v
        rk = v[up] * g.n + u[up]
        at = np.minimum(np.searchsorted(keys, rk), len(keys) - 1)
        both += int((keys[at] == rk).sum())
    return len(keys) - both
