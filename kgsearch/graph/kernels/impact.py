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

**Containment is free** (``free``: the ``contains`` type, followed to the container): what holds
a node is as near to the change as the node (a caller's class and file are at the caller's
distance, a changed function's class and file at 0, with the change), and costs only its
``1 / weight``. Counted as a hop, containment made the same dependency farther in a language
that nests more: a Java caller's file two hops past the caller (method, class, file), a Python
caller's one, a Go method's two once it hung off its receiver type; with ``depth`` 3 a Java
test two imports away was never reached where a Python one was.

``tests/graph/test_impact.py`` compares it with networkx (breadth-first search, and Dijkstra
with free edges of weight 0) and with the pure-Python
:func:`kgsearch.graph.kernels.reference_queries.dependents_ref`.
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
    "implements": "in", "tests": "in", "references": "in", "contains": "in", "member_of": "in",
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
        """``v`` and its parents back to the start set (through the containers the start set's
        nodes are in, which share its 0 hops)."""
        out = [int(v)]
        while self.parent[out[-1]] >= 0:
            out.append(int(self.parent[out[-1]]))
        return out


def dependents(g, starts, back_types, fwd_types, depth: int = 3, limit: int | None = None,
               free=None) -> Reach:
    """Breadth-first layers from ``starts`` over the in-edges of ``back_types`` and the
    out-edges of ``fwd_types`` (type numbers), at most ``depth`` hops; each node keeps the
    cheapest parent of its first layer (ties: the smaller parent, then forward edges, then
    the smaller type). ``free`` (type numbers, followed backwards: ``contains``) leads to a
    node's containers in the same layer, at the cost of the edge's ``1 / weight`` and no hop;
    a free type is not also followed as a hop. ``limit`` stops after the layer in which that
    many nodes are reached."""
    if depth < 0:
        raise GraphError(f"depth must be >= 0, got {depth}")
    front = unique(np.asarray(starts, dtype=np.int64))
    if len(front) and (front.min() < 0 or front.max() >= g.n):
        raise GraphError(f"node numbers must be in 0..{g.n - 1}")
    free = np.asarray([] if free is None else free, dtype=np.int64).reshape(-1)
    back_types = np.array([t for t in np.asarray(back_types).tolist() if t not in free.tolist()], dtype=np.int64)
    hops = np.full(g.n, -1, dtype=np.int32)
    cost = np.full(g.n, np.inf)
    parent = np.full(g.n, -1, dtype=np.int64)
    etype = np.full(g.n, -1, dtype=np.int64)
    forward = np.zeros(g.n, dtype=bool)
    reach = Reach(hops, cost, parent, etype, forward)
    hops[front], cost[front] = 0, 0.0
    front = _containers(g, reach, front, 0, free)
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
        nb, node, t, fwd, c = _best(nb, node, t, fwd, c)
        hops[nb], cost[nb], parent[nb], etype[nb], forward[nb] = h, c, node, t, fwd
        front = _containers(g, reach, nb, h, free)
        reached += len(front)
    return reach


def _best(nb, node, t, fwd, c):
    """One row per reached node: its cheapest (cost, parent, forward first, type)."""
    order = np.lexsort((t, ~fwd, node, c, nb))
    nb, node, t, fwd, c = nb[order], node[order], t[order], fwd[order], c[order]
    head = np.ones(len(nb), dtype=bool)
    head[1:] = nb[1:] != nb[:-1]
    return nb[head], node[head], t[head], fwd[head], c[head]


def _containers(g, reach: Reach, layer, h: int, free) -> np.ndarray:
    """``layer`` (the nodes just put at ``h`` hops) and the containers reached from them over the
    ``free`` types at the same ``h``: each container takes its cheapest way there, and a
    container already in this layer is lowered when containment is cheaper than its own edge
    (a Bellman-Ford pass per containment level; containment is a forest, so a few passes)."""
    layer = unique(np.asarray(layer, dtype=np.int64))
    if not len(free) or not len(layer):
        return layer
    hops, cost = reach.hops, reach.cost
    members = [layer]
    changed = layer
    while len(changed):
        node, nb, w, t = g.neighbors(changed, "in", free)
        ok = (nb >= 0) & (w > 0)
        node, nb, w, t = node[ok], nb[ok], w[ok].astype(np.float64), t[ok].astype(np.int64)
        ok = (hops[nb] < 0) | (hops[nb] == h)
        node, nb, w, t = node[ok], nb[ok], w[ok], t[ok]
        if not len(nb):
            break
        fwd = np.zeros(len(nb), dtype=bool)
        nb, node, t, fwd, c = _best(nb, node, t, fwd, cost[node] + 1.0 / w)
        new = hops[nb] < 0
        old = ~new
        better = new.copy()
        if old.any():                            # lower a node of this layer when this way is cheaper
            o = nb[old]
            mine = (c[old], node[old], np.ones(old.sum(), dtype=bool), t[old])
            theirs = (cost[o], reach.parent[o], ~reach.forward[o], reach.etype[o])
            better[old] = _less(mine, theirs)
        nb, node, t, c = nb[better], node[better], t[better], c[better]
        hops[nb], cost[nb], reach.parent[nb], reach.etype[nb], reach.forward[nb] = h, c, node, t, False
        members.append(nb)
        changed = nb
    return unique(np.concatenate(members))


def _less(a, b) -> np.ndarray:
    """Elementwise lexicographic ``a < b`` over tuples of equal-length arrays."""
    out = np.zeros(len(a[0]), dtype=bool)
    eq = np.ones(len(a[0]), dtype=bool)
    for x, y in zip(a, b):
        out |= eq & (x < y)
        eq &= x == y
    return out
