"""What depends on a node, transitively: the reverse edges of the dependency types.

A change to ``X`` reaches whatever depends on it: its callers (``f -[calls]-> X``), the
modules that import it, its subclasses (``C -[inherits]-> X``), the notes that link to it,
the KG nodes that depend on or require it, and, for the few types whose direction says the
opposite (``X -[feeds_into]-> Y``, ``X -[causes]-> Y``), what it points to.
:data:`DEPENDENCY_TYPES` says which side of each type holds the dependent; a changed thing
also changes what it contains, so the start set is ``X`` and everything under it by
``contains`` edges (a file's module, its classes and functions; a note's sections).

:func:`dependents` walks from the start set layer by layer (breadth first, at most ``depth``
hops): ``hops[v]`` is the fewest hops from the start set, and ``cost[v]`` the cheapest sum of
``1 / weight`` over the paths with that many hops (each layer takes the best parent of the
layer before), so a node is ranked by distance first, then by how strong its links are.
``tests/test_graph_impact.py`` compares it with networkx breadth-first search and with the
pure-Python :func:`kgsearch.graph.kernels.reference_queries.dependents_ref`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ...arrays import unique
from .csr import GraphError

__all__ = ["DEPENDENCY_TYPES", "Reach", "dependents", "descendants", "type_sides", "CONTAINS"]

CONTAINS = "contains"
# edge type -> the side of the edge that depends on the other: "in" = the edge's source depends
# on its target (reverse edges lead to dependents), "out" = the target depends on the source
DEPENDENCY_TYPES: dict[str, str] = {
    # code
    "calls": "in", "imports": "in", "inherits": "in", "extends": "in", "overrides": "in",
    "implements": "in", "tests": "in", "references": "in", "contains": "in",
    # notes
    "links_to": "in",
    # knowledge graphs
    "depends_on": "in", "requires": "in", "feeds_into": "out", "enables": "out", "causes": "out",
    "part_of": "out", "provides": "out", "used_for": "out",
}


def type_sides(etype_names: Sequence[str], types: Mapping[str, str] | Sequence[str] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(type numbers followed backwards, type numbers followed forwards) in a graph whose types
    are ``etype_names``. ``types``: None = :data:`DEPENDENCY_TYPES`; a list of names takes each
    one's side from the table ("in" for a type it does not list); a mapping gives the sides.
    Types the graph does not have are left out."""
    if types is None:
        spec = DEPENDENCY_TYPES
    elif isinstance(types, Mapping):
        spec = dict(types)
    else:
        spec = {t: DEPENDENCY_TYPES.get(t, "in") for t in types}
    bad = [f"{t}:{s}" for t, s in spec.items() if s not in ("in", "out")]
    if bad:
        raise GraphError(f"a dependency side must be in or out, got {bad[0]}")
    names = list(etype_names)
    back = sorted(names.index(t) for t, s in spec.items() if s == "in" and t in names)
    fwd = sorted(names.index(t) for t, s in spec.items() if s == "out" and t in names)
    return np.array(back, dtype=np.int64), np.array(fwd, dtype=np.int64)


def descendants(g, nodes, contains: int | None) -> np.ndarray:
    """``nodes`` and everything under them by ``contains`` edges (type number; None: none)."""
    seen = np.zeros(g.n, dtype=bool)
    front = unique(np.asarray(nodes, dtype=np.int64))
    seen[front] = True
    while contains is not None and len(front):
        nb = g.neighbors(front, "out", [contains])[1]
        nb = unique(nb[nb >= 0])
        front = nb[~seen[nb]]
        seen[front] = True
    return np.flatnonzero(seen)


@dataclass
class Reach:
    """Nodes reached by :func:`dependents` (arrays by node number; -1 / inf where not reached):
    ``hops``, ``cost``, and the first hop back towards the start set: ``parent``, ``etype``
    and ``forward`` (the edge goes parent -> node)."""
    hops: np.ndarray
    cost: np.ndarray
    parent: np.ndarray
    etype: np.ndarray
    forward: np.ndarray

    def nodes(self, include_start: bool = False) -> np.ndarray:
        """Reached node numbers by (hops, cost, number); the start set only when asked."""
        r = np.flatnonzero(self.hops >= (0 if include_start else 1))
        return r[np.lexsort((r, self.cost[r], self.hops[r]))]

    def chain(self, v: int) -> list[int]:
        """``v`` and its parents back to the start set."""
        out = [int(v)]
        while self.hops[out[-1]] > 0:
            out.append(int(self.parent[out[-1]]))
        return out


def dependents(g, starts, back_types, fwd_types, depth: int = 3, limit: int | None = None) -> Reach:
    """Breadth-first layers from ``starts`` over the in-edges of ``back_types`` and the
    out-edges of ``fwd_types`` (type numbers), at most ``depth`` hops; each node keeps the
    cheapest parent of its first layer (ties: the smaller parent, then forward edges, then
    the smaller type). ``limit`` stops after the layer in which that many nodes are reached."""
    if depth < 0:
        raise GraphError(f"depth must be >= 0, got {depth}")
    front = unique(np.asarray(starts, dtype=np.int64))
    if len(front) and (front.min() < 0 or front.max() >= g.n):
        raise GraphError(f"node numbers must be in 0..{g.n - 1}")
    hops = np.full(g.n, -1, dtype=np.int32)
    cost = np.full(g.n, np.inf)
    parent = np.full(g.n, -1, dtype=np.int64)
    etype = np.full(g.n, -1, dtype=np.int64)
    forward = np.zeros(g.n, dtype=bool)
    hops[front], cost[front] = 0, 0.0
    reached = len(front)
    for h in range(1, int(depth) + 1):
        if not len(front) or (limit is not None and reached >= limit):
            break
        parts = []
        for side, types, fwd in (("in", back_types, False), ("out", fwd_types, True)):
            if len(types):
                node, nb, w, t = g.neighbors(front, side, types)
                parts.append((node, nb, w.astype(np.float64), t.astype(np.int64), np.full(len(node), fwd)))
        if not parts:
            break
        node, nb, w, t, fwd = (np.concatenate(x) for x in zip(*parts))
        ok = (nb >= 0) & (w > 0)
        node, nb, w, t, fwd = node[ok], nb[ok], w[ok], t[ok], fwd[ok]
        ok = hops[nb] < 0
        node, nb, w, t, fwd = node[ok], nb[ok], w[ok], t[ok], fwd[ok]
        c = cost[node] + 1.0 / w
        order = np.lexsort((t, ~fwd, node, c, nb))
        nb, node, t, fwd, c = nb[order], node[order], t[order], fwd[order], c[order]
        head = np.ones(len(nb), dtype=bool)
        head[1:] = nb[1:] != nb[:-1]
        nb, node, t, fwd, c = nb[head], node[head], t[head], fwd[head], c[head]
        hops[nb], cost[nb], parent[nb], etype[nb], forward[nb] = h, c, node, t, fwd
        reached += len(nb)
        front = nb
    return Reach(hops, cost, parent, etype, forward)
