"""Hop-layered cheapest paths: the kernel under :mod:`kgsearch.graph.kernels.paths` and
:mod:`kgsearch.graph.kernels.meet`.

:class:`LayerSearch` is a hop-layered Bellman-Ford over numpy arrays: each :meth:`~LayerSearch.step`
relaxes only the edges of the nodes whose cost improved in the step before, so after ``h``
steps every node holds its cheapest cost over paths of at most ``h`` hops (with positive
costs such a cheapest walk repeats no node: it is a simple path). Each step's updates are kept
(:class:`Layers`), so a path is read back with exactly the hops it was found with. A hop costs
``1 / weight``; edges of weight 0 are never followed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arrays import unique
from .csr import Graph, GraphError

__all__ = ["Hop", "Path", "Layers", "LayerSearch", "search_layers", "expand"]


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


def expand(g, nodes: np.ndarray, out_types, in_types):
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
    """What a :class:`LayerSearch` found: ``cost[v]`` the cheapest cost of every node within the
    hops searched (inf: not reached), ``layer_of[v]`` the layer of its last improvement (-1),
    and per layer the nodes it improved (sorted) with their parent, hop edge and cost."""

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

    def path(self, v: int, layer: int | None = None) -> Path | None:
        """The cheapest path found to ``v`` (or the one found at ``layer``), with exactly the
        hops it was found with."""
        v = int(v)
        if self.layer_of[v] < 0:
            return None
        h = int(self.layer_of[v]) if layer is None else int(layer)
        cost = float(self.cost[v]) if layer is None else self._rec(h, v)[5]
        nodes, hops = [v], []
        while h > 0:
            _, parent, t, fwd, w, _ = self._rec(h, v)
            hops.append(Hop(parent, v, t, bool(fwd), w, 1.0 / w))
            v, h = parent, h - 1
            nodes.append(v)
        nodes.reverse()
        hops.reverse()
        return Path(tuple(nodes), tuple(hops), cost)


class LayerSearch:
    """A hop-layered search from ``sources`` (start costs ``costs``, default 0), one layer per
    :meth:`step`. ``out_types``/``in_types``: edge types followed along / against their
    direction (None: all, False: none). ``banned``: nodes never entered; ``ban_first``: nodes
    not entered in the first hop (Yen's banned root edges). Ties go to the smaller parent,
    then forward edges, then the smaller type number, so results do not depend on edge order."""

    def __init__(self, g, sources, costs=None, out_types=None, in_types=False, banned=None, ban_first=None):
        src = np.atleast_1d(np.asarray(sources, dtype=np.int64))
        c0 = np.zeros(len(src)) if costs is None else np.asarray(costs, dtype=np.float64).reshape(-1)
        if len(src) and (src.min() < 0 or src.max() >= g.n):
            raise GraphError(f"node numbers must be in 0..{g.n - 1}")
        self.g, self.out_types, self.in_types = g, out_types, in_types
        self.found = Layers(g.n)
        np.minimum.at(self.found.cost, src, c0)
        self.front = unique(src)
        self.front_cost = self.found.cost[self.front]
        z = np.zeros(len(self.front), dtype=np.int64)
        self.found.layers.append(_layer(self.front, z - 1, z - 1, np.ones(len(self.front), dtype=bool),
                                        np.zeros(len(self.front)), self.front_cost))
        self.found.layer_of[self.front] = 0
        self.block = np.zeros(g.n, dtype=bool)
        if banned is not None and len(banned):
            self.block[np.asarray(list(banned), dtype=np.int64)] = True
        self.ban_first = np.asarray(sorted(ban_first or ()), dtype=np.int64)
        self.h = 0

    @property
    def alive(self) -> bool:
        return bool(len(self.front))

    def step(self, bound: float = np.inf) -> None:
        """One more hop; frontier nodes (and new costs) of ``bound`` or more are dropped."""
        dist = self.found.cost
        keep = self.front_cost < bound
        front, front_cost = self.front[keep], self.front_cost[keep]
        self.h += 1
        if not len(front):
            self.front, self.front_cost = front, front_cost
            self.found.layers.append(_layer(*([np.zeros(0, dtype=np.int64)] * 3), np.zeros(0, dtype=bool),
                                            np.zeros(0), np.zeros(0)))
            return
        node, nb, w, t, fwd = expand(self.g, front, self.out_types, self.in_types)
        ok = (w > 0) & (nb >= 0)
        if self.h == 1 and len(self.ban_first):
            ok &= ~np.isin(nb, self.ban_first)
        node, nb, w, t, fwd = node[ok], nb[ok], w[ok], t[ok], fwd[ok]
        ok = ~self.block[nb]
        node, nb, w, t, fwd = node[ok], nb[ok], w[ok], t[ok], fwd[ok]
        cost = front_cost[np.searchsorted(front, node)] + 1.0 / w
        ok = (cost < dist[nb]) & (cost < bound)
        node, nb, w, t, fwd, cost = node[ok], nb[ok], w[ok], t[ok], fwd[ok], cost[ok]
        order = np.lexsort((t, ~fwd, node, cost, nb))          # per neighbour: cheapest first
        nb, node, w, t, fwd, cost = nb[order], node[order], w[order], t[order], fwd[order], cost[order]
        head = np.ones(len(nb), dtype=bool)
        head[1:] = nb[1:] != nb[:-1]
        nb, node, w, t, fwd, cost = nb[head], node[head], w[head], t[head], fwd[head], cost[head]
        dist[nb] = cost
        self.found.layer_of[nb] = self.h
        self.found.layers.append(_layer(nb, node, t, fwd, w, cost))
        self.front, self.front_cost = nb, cost

    def work(self) -> int:
        """Edges the next step would read (to advance the cheaper side of a two-way search)."""
        g, f = self.g, self.front
        if not isinstance(g, Graph):
            return len(f)
        n = 0
        if self.out_types is not False:
            n += int((g.indptr[f + 1] - g.indptr[f]).sum())
        if self.in_types is not False:
            n += int((g.rindptr[f + 1] - g.rindptr[f]).sum())
        return n


def _layer(nb, node, t, fwd, w, cost) -> tuple[np.ndarray, ...]:
    return (nb, node, t, fwd, w, cost)


def search_layers(g, sources, costs=None, max_hops: int = 6, out_types=None, in_types=False,
                  banned=None, ban_first=None, target: int | None = None) -> Layers:
    """:class:`LayerSearch` for ``max_hops`` steps; with ``target``, nothing as costly as the
    best cost found to it is expanded."""
    s = LayerSearch(g, sources, costs, out_types, in_types, banned, ban_first)
    for _ in range(int(max_hops)):
        if not s.alive:
            break
        s.step(np.inf if target is None else float(s.found.cost[target]))
    return s.found
