"""Typed paths between nodes: hop-bounded shortest paths and the k best (Yen's algorithm).

A hop follows one edge, forward (``u -[type]-> v``) or, where allowed, backward
(``u <-[type]- v``). Its cost is ``1 / weight``, the weight being the graph's (in an index:
the edge's own weight times its type's weight, :data:`kgsearch.config.EDGE_WEIGHTS`), so a
strong edge costs 1 and a weak one more; edges of weight 0 are never followed. A path's
length is the sum of its hops' costs; between two nodes linked by several edges the hop takes
the cheapest. Paths are simple (no node twice) and have at most ``max_hops`` hops.

The kernel (:func:`search_layers`) is a hop-layered Bellman-Ford over numpy arrays: layer
``h`` relaxes only the edges of the nodes whose cost improved in layer ``h - 1``, so after
``h`` layers every node holds its cheapest cost over paths of at most ``h`` hops. With
positive costs such a cheapest walk never repeats a node, so it is a simple path, and the
updates of each layer are kept so the path can be read back with exactly the hops it was
found with. A target bound prunes every frontier node already as costly as the target.
:func:`k_shortest_paths` is Yen's algorithm on top of it (spur searches with the root's nodes
removed and the root's used first hops banned, each bounded by the hops left).
:func:`nearest_path` is the cheapest path from any of several sources (the seeds of a query).

``tests/test_graph_paths.py`` checks them against ``networkx.shortest_simple_paths`` and
against the brute-force enumeration in :mod:`kgsearch.graph.reference_queries`.

Works on a :class:`~kgsearch.graph.csr.Graph` or a
:class:`~kgsearch.graph.adjacency.StoredGraph` (only ``n``, ``neighbors`` and
``etype_names`` are used).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .csr import Graph, GraphError

__all__ = ["Hop", "Path", "search_layers", "shortest_path", "k_shortest_paths", "nearest_path",
           "edge_types", "DIRECTIONS"]

DIRECTIONS = ("out", "in", "both")


@dataclass(frozen=True)
class Hop:
    """One step of a path: from ``u`` to ``v`` over an edge of type number ``etype``,
    ``forward`` when the edge goes ``u -> v`` (else ``v -> u``); ``cost = 1 / weight``."""
    u: int
    v: int
    etype: int
    forward: bool
    weight: float
    cost: float


@dataclass(frozen=True)
class Path:
    nodes: tuple[int, ...]
    hops: tuple[Hop, ...]
    cost: float

    def __len__(self) -> int:
        return len(self.hops)


def edge_types(g, names: Sequence[str] | None) -> np.ndarray | None:
    """Type numbers of ``names`` in ``g`` (None: every type). Unknown names are an error
    naming the types the graph has."""
    if names is None:
        return None
    known = list(g.etype_names)
    bad = [t for t in names if t not in known]
    if bad:
        raise GraphError(f"no edge type {bad[0]!r} in the graph; it has: {', '.join(sorted(known)) or 'none'}")
    return np.array(sorted({known.index(t) for t in names}), dtype=np.int64)


def _sides(direction: str, types: np.ndarray | None) -> tuple[Any, Any]:
    """(out types, in types) for a direction: ``False`` = do not follow that side."""
    if direction not in DIRECTIONS:
        raise GraphError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    return (types if direction in ("out", "both") else False, types if direction in ("in", "both") else False)


def _expand(g, nodes: np.ndarray, out_types, in_types):
    """Edges of ``nodes``: (node, neighbour, weight, etype, forward) for the allowed sides.
    ``out_types``/``in_types``: None = every type, an array = those types, False = none."""
    parts = []
    for side, types, fwd in (("out", out_types, True), ("in", in_types, False)):
        if types is False or (types is not None and not len(types)):
            continue
        if isinstance(g, Graph):           # (the cached source array: no search per in-edge)
            e = g.out_edge_ids(nodes) if fwd else g.in_edge_ids(nodes)
            deg = (g.indptr[nodes + 1] - g.indptr[nodes]) if fwd else (g.rindptr[nodes + 1] - g.rindptr[nodes])
            node = np.repeat(nodes, deg.astype(np.int64))
            nb = g.dst[e] if fwd else g.src[e]
            w, t = g.weights[e], g.etype[e]
            if types is not None:
                keep = np.isin(t, types)
                node, nb, w, t = node[keep], nb[keep], w[keep], t[keep]
        else:
            node, nb, w, t = g.neighbors(nodes, side, types)
        parts.append((node, nb, w.astype(np.float64), t.astype(np.int64), np.full(len(node), fwd)))
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0), z, np.zeros(0, dtype=bool)
    return tuple(np.concatenate(x) for x in zip(*parts))


class Layers:
    """What :func:`search_layers` found: ``cost[v]`` the cheapest cost of every node within the
    hop bound (inf: not reached), ``layer_of[v]`` the layer of its last improvement (-1), and
    per layer the nodes it improved (sorted) with their parent, hop edge and cost."""

    def __init__(self, n: int):
        self.cost = np.full(n, np.inf)
        self.layer_of = np.full(n, -1, dtype=np.int32)
        self.layers: list[tuple[np.ndarray, ...]] = []   # (node, parent, etype, forward, weight, cost)

    def reached(self, v: int) -> bool:
        return bool(self.layer_of[v] >= 0)

    def _rec(self, h: int, v: int) -> tuple:
        nodes = self.layers[h][0]
        i = int(np.searchsorted(nodes, v))
        return tuple(a[i].item() for a in self.layers[h])

    def path(self, v: int) -> Path | None:
        """The cheapest path found to ``v``, with exactly the hops it was found with."""
        v = int(v)
        if self.layer_of[v] < 0:
            return None
        h = int(self.layer_of[v])
        nodes, hops = [v], []
        while h > 0:
            _, parent, t, fwd, w, _ = self._rec(h, v)
            hops.append(Hop(parent, v, t, bool(fwd), w, 1.0 / w))
            v, h = parent, h - 1
            nodes.append(v)
        nodes.reverse()
        hops.reverse()
        return Path(tuple(nodes), tuple(hops), float(self.cost[nodes[-1]]))


def _layer(nb, node, t, fwd, w, cost) -> tuple[np.ndarray, ...]:
    return (nb, node, t, fwd, w, cost)


def search_layers(g, sources, costs=None, max_hops: int = 6, out_types=None, in_types=False,
                  banned=None, ban_first=None, target: int | None = None, radius: float = np.inf,
                  lower=None) -> Layers:
    """Hop-layered cheapest costs from ``sources`` (start costs ``costs``, default 0).

    ``banned``: node numbers never entered; ``ban_first``: neighbours not entered in the first
    hop (Yen's banned root edges); ``target``: stop expanding what costs as much as the best
    cost found to it so far; ``radius``: nor what costs that much; ``lower``: a lower bound of
    every node's remaining cost to the target (an array; A*-like pruning: a node whose cost plus
    its bound reaches the best cost found is not entered). Ties go to the smaller parent, then
    forward edges, then the smaller type number, so results do not depend on edge order.
    """
    src = np.atleast_1d(np.asarray(sources, dtype=np.int64))
    c0 = np.zeros(len(src)) if costs is None else np.asarray(costs, dtype=np.float64).reshape(-1)
    if len(src) and (src.min() < 0 or src.max() >= g.n):
        raise GraphError(f"node numbers must be in 0..{g.n - 1}")
    out = Layers(g.n)
    dist = out.cost
    np.minimum.at(dist, src, c0)
    front = np.unique(src)
    front_cost = dist[front]
    z = np.zeros(len(front), dtype=np.int64)
    out.layers.append(_layer(front, z - 1, z - 1, np.ones(len(front), dtype=bool), np.zeros(len(front)), front_cost))
    out.layer_of[front] = 0
    block = np.zeros(g.n, dtype=bool)
    if banned is not None and len(banned):
        block[np.asarray(list(banned), dtype=np.int64)] = True
    bound = min(float(radius), np.inf if target is None else float(dist[target]))
    for h in range(1, int(max_hops) + 1):
        keep = front_cost < bound
        front, front_cost = front[keep], front_cost[keep]
        if not len(front):
            break
        node, nb, w, t, fwd = _expand(g, front, out_types, in_types)
        ok = (w > 0) & (nb >= 0)
        if h == 1 and ban_first is not None and len(ban_first):
            ok &= ~np.isin(nb, np.asarray(list(ban_first), dtype=np.int64))
        node, nb, w, t, fwd = node[ok], nb[ok], w[ok], t[ok], fwd[ok]
        ok = ~block[nb]
        node, nb, w, t, fwd = node[ok], nb[ok], w[ok], t[ok], fwd[ok]
        cost = front_cost[np.searchsorted(front, node)] + 1.0 / w
        ok = (cost < dist[nb]) & (cost < bound)
        if lower is not None and bound < np.inf:
            ok &= cost + lower[nb] < bound
        node, nb, w, t, fwd, cost = node[ok], nb[ok], w[ok], t[ok], fwd[ok], cost[ok]
        order = np.lexsort((t, ~fwd, node, cost, nb))          # per neighbour: cheapest first
        nb, node, w, t, fwd, cost = nb[order], node[order], w[order], t[order], fwd[order], cost[order]
        head = np.ones(len(nb), dtype=bool)
        head[1:] = nb[1:] != nb[:-1]
        nb, node, w, t, fwd, cost = nb[head], node[head], w[head], t[head], fwd[head], cost[head]
        dist[nb] = cost
        out.layer_of[nb] = h
        out.layers.append(_layer(nb, node, t, fwd, w, cost))
        if target is not None:
            bound = min(float(radius), float(dist[target]))
        front, front_cost = nb, cost
    return out


def _check(g, node: int, what: str) -> int:
    node = int(node)
    if not 0 <= node < g.n:
        raise GraphError(f"{what} node number must be in 0..{g.n - 1}, got {node}")
    return node


def shortest_path(g, source: int, target: int, max_hops: int = 6, direction: str = "both",
                  types: Sequence[str] | None = None) -> Path | None:
    """The cheapest path of at most ``max_hops`` hops, or None."""
    paths = k_shortest_paths(g, source, target, 1, max_hops, direction, types)
    return paths[0] if paths else None


def k_shortest_paths(g, source: int, target: int, k: int = 3, max_hops: int = 6, direction: str = "both",
                     types: Sequence[str] | None = None) -> list[Path]:
    """The ``k`` cheapest simple paths of at most ``max_hops`` hops, cheapest first (ties:
    fewer hops, then the node sequence). Yen's algorithm, with Lawler's rule (spur only from
    the node where the last path left its parent path)."""
    s, t = _check(g, source, "source"), _check(g, target, "target")
    if k < 1 or max_hops < 0:
        raise GraphError(f"k must be >= 1 and max_hops >= 0, got k={k}, max_hops={max_hops}")
    out_t, in_t = _sides(direction, edge_types(g, types))
    if s == t:
        return [Path((s,), (), 0.0)]
    first = search_layers(g, [s], None, max_hops, out_t, in_t, target=t).path(t)
    if first is None:
        return []
    lower = None
    if k > 1:                # lower bounds to the target for the spur searches: a walk back from it
        radius = 2.0 * first.cost + 2.0
        back = search_layers(g, [t], None, max_hops, in_t, out_t, radius=radius)
        lower = np.where(np.isfinite(back.cost), back.cost, radius)
    found: list[Path] = [first]
    dev: list[int] = [0]                 # where each found path left the one it was spurred from
    seen = {first.nodes}
    heap: list[tuple] = []
    while len(found) < k:
        last = found[-1]
        for i in range(dev[-1], len(last.nodes) - 1):
            spur, root = last.nodes[i], last.nodes[:i + 1]
            root_hops = last.hops[:i]
            root_cost = 0.0
            for x in root_hops:
                root_cost += x.cost
            ban_first = {p.nodes[i + 1] for p in found if p.nodes[:i + 1] == root}
            got = search_layers(g, [spur], [root_cost], max_hops - i, out_t, in_t, banned=set(root[:-1]),
                                ban_first=ban_first, target=t, lower=lower).path(t)
            if got is None:
                continue
            nodes = root[:-1] + got.nodes
            if nodes in seen:
                continue
            seen.add(nodes)
            hops = root_hops + got.hops
            heapq.heappush(heap, (got.cost, len(hops), nodes, i, hops))
        if not heap:
            break
        cost, _, nodes, i, hops = heapq.heappop(heap)
        found.append(Path(nodes, hops, cost))
        dev.append(i)
    return found


def nearest_path(g, sources, target: int, max_hops: int = 6, direction: str = "both",
                 types: Sequence[str] | None = None) -> Path | None:
    """The cheapest path from any of ``sources`` to ``target`` (None when none is within
    ``max_hops``); a source that is the target gives the empty path."""
    t = _check(g, target, "target")
    src = np.unique(np.asarray(list(sources), dtype=np.int64))
    if not len(src):
        return None
    out_t, in_t = _sides(direction, edge_types(g, types))
    return search_layers(g, src, None, max_hops, out_t, in_t, target=t).path(t)
