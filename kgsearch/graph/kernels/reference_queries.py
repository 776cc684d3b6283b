"""Slow, obvious versions of the graph queries (paths, dependents), for tests.

They read the whole edge list into dicts and enumerate: every simple path up to the hop
bound, sorted; breadth-first layers with a dict per layer. Small graphs only.
"""
from __future__ import annotations

from collections import defaultdict

from .csr import Graph

__all__ = ["hop_costs_ref", "all_paths_ref", "k_shortest_paths_ref", "dependents_ref"]


def hop_costs_ref(g: Graph, direction: str = "both", types: set[int] | None = None) -> dict[int, dict[int, float]]:
    """``{u: {v: cheapest 1 / weight over the edges u -> v (and v -> u when walking backwards)}}``."""
    s, d, w, t = g.edges()
    adj: dict[int, dict[int, float]] = defaultdict(dict)
    for u, v, ww, tt in zip(s.tolist(), d.tolist(), [float(x) for x in w], t.tolist()):
        if ww <= 0 or (types is not None and tt not in types):
            continue
        pairs = []
        if direction in ("out", "both"):
            pairs.append((u, v))
        if direction in ("in", "both"):
            pairs.append((v, u))
        for a, b in pairs:
            c = 1.0 / ww
            if c < adj[a].get(b, float("inf")):
                adj[a][b] = c
    return adj


def all_paths_ref(g: Graph, source: int, target: int, max_hops: int, direction: str = "both",
                  types: set[int] | None = None) -> list[tuple[float, tuple[int, ...]]]:
    """Every simple path of at most ``max_hops`` hops as ``(cost, nodes)``, sorted by
    (cost, hops, nodes); costs summed left to right."""
    adj = hop_costs_ref(g, direction, types)
    out = []

    def dfs(path: list[int], cost: float) -> None:
        u = path[-1]
        if u == target:
            out.append((cost, tuple(path)))
            return
        if len(path) - 1 >= max_hops:
            return
        for v in sorted(adj.get(u, {})):
            if v not in path:
                path.append(v)
                dfs(path, cost + adj[u][v])
                path.pop()

    dfs([source], 0.0)
    out.sort(key=lambda x: (x[0], len(x[1]), x[1]))
    return out


def k_shortest_paths_ref(g: Graph, source: int, target: int, k: int, max_hops: int, direction: str = "both",
                         types: set[int] | None = None) -> list[tuple[float, tuple[int, ...]]]:
    return all_paths_ref(g, source, target, max_hops, direction, types)[:k]


def dependents_ref(g: Graph, starts, back: set[int], fwd: set[int], depth: int,
                   free: set[int] = frozenset()) -> dict[int, tuple[int, float]]:
    """``{node: (hops, cost)}`` for every node within ``depth`` hops of ``starts`` (the start set
    at 0), following edges of types ``back`` backwards and ``fwd`` forwards; an edge of a type in
    ``free``, followed backwards (to a container), adds its cost and no hop. ``(hops, cost)`` is
    the least pair over the paths, compared hops first: Dijkstra on pairs, popped in order."""
    import heapq

    s, d, w, t = g.edges()
    nbrs: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
    for u, v, ww, tt in zip(s.tolist(), d.tolist(), [float(x) for x in w], t.tolist()):
        if ww <= 0:
            continue
        if tt in free:
            nbrs[v].append((u, 0, 1.0 / ww))
        elif tt in back:
            nbrs[v].append((u, 1, 1.0 / ww))
        if tt in fwd:
            nbrs[u].append((v, 1, 1.0 / ww))
    heap = [(0, 0.0, int(x)) for x in set(int(x) for x in starts)]
    heapq.heapify(heap)
    best: dict[int, tuple[int, float]] = {}
    while heap:
        h, c, u = heapq.heappop(heap)
        if u in best:
            continue
        best[u] = (h, c)
        for v, dh, dc in nbrs.get(u, ()):
            if v not in best and h + dh <= depth:
                heapq.heappush(heap, (h + dh, c + dc, v))
    return best
