"""Typed paths between nodes: hop-bounded shortest paths and the k best (Yen's algorithm).

A hop follows one edge, forward (``u -[type]-> v``) or, where allowed, backward
(``u <-[type]- v``). Its cost is ``1 / weight``, the weight being the graph's (in an index:
the edge's own weight times its type's weight, :data:`kgsearch.config.EDGE_WEIGHTS`), so a
strong edge costs 1 and a weak one more; edges of weight 0 are never followed. A path's
length is the sum of its hops' costs; between two nodes linked by several edges the hop takes
the cheapest. Paths are simple (no node twice) and have at most ``max_hops`` hops.

Kernels: :mod:`kgsearch.graph.kernels.layers` (a hop-layered Bellman-Ford: after ``h`` layers every
node holds its cheapest cost over at most ``h`` hops, and each layer's updates are kept so a
path reads back with the hops it was found with) and :mod:`kgsearch.graph.kernels.meet` (the cheapest
path between two nodes, searched from both ends at once). :func:`k_shortest_paths` is Yen's
algorithm on top (spur searches with the root's nodes removed and the root's used first hops
banned, each bounded by the hops left); :func:`nearest_path` the cheapest path from any of
several sources (the seeds of a query).

``tests/test_graph_paths.py`` checks them against ``networkx.shortest_simple_paths`` and
against the brute-force enumeration in :mod:`kgsearch.graph.kernels.reference_queries`.

Works on a :class:`~kgsearch.graph.csr.Graph` or a
:class:`~kgsearch.graph.adjacency.StoredGraph` (only ``n``, ``neighbors`` and
``etype_names`` are used).
"""
from __future__ import annotations

import heapq
from typing import Any, Sequence

import numpy as np

from ...arrays import unique
from ...errors import name_choices
from ...lines import quoted
from ...types import resolve_types
from .csr import GraphError
from .layers import Hop, Path, search_layers
from .meet import meet_path

__all__ = ["Hop", "Path", "search_layers", "shortest_path", "k_shortest_paths", "nearest_path",
           "edge_types", "DIRECTIONS"]

DIRECTIONS = ("out", "in", "both")


def edge_types(g, names: Sequence[str] | None) -> np.ndarray | None:
    """Type numbers of ``names`` in ``g`` (None: every type). Unknown names are an error
    naming the types the graph has."""
    if names is None:
        return None
    known = list(g.etype_names)
    names, bad = resolve_types(names, known)
    if bad:
        raise GraphError(f"no edge type {quoted(bad[0])} in the graph; it has: "
                         f"{name_choices(sorted(known), bad[0], more='more in the graph') or 'none'}")
    return np.array(sorted({known.index(t) for t in names}), dtype=np.int64)


def _sides(direction: str, types: np.ndarray | None) -> tuple[Any, Any]:
    """(out types, in types) for a direction: ``False`` = do not follow that side."""
    if direction not in DIRECTIONS:
        raise GraphError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    return (types if direction in ("out", "both") else False, types if direction in ("in", "both") else False)


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
    first = meet_path(g, s, t, max_hops, out_t, in_t)
    if first is None:
        return []
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
            got = meet_path(g, spur, t, max_hops - i, out_t, in_t, banned=set(root[:-1]), ban_first=ban_first,
                            cost0=root_cost)
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
    src = unique(np.asarray(list(sources), dtype=np.int64))
    if not len(src):
        return None
    out_t, in_t = _sides(direction, edge_types(g, types))
    return search_layers(g, src, None, max_hops, out_t, in_t, target=t).path(t)
