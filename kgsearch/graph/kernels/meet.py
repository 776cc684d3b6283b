"""The cheapest path of at most ``L`` hops between two nodes, searched from both ends.

Two :class:`~kgsearch.graph.kernels.layers.LayerSearch` run at once, one from the source along the
allowed edges and one from the target against them; each step advances the side whose next
layer reads fewer edges. After ``hf`` forward and ``hb`` backward layers with ``hf + hb >= L``
every path of at most ``L`` hops is a forward part of at most ``hf`` hops and a backward part of
at most ``hb`` hops meeting at a node, so the best is ``min F_i(v) + B_j(v)`` over nodes ``v``
and ``i + j <= L`` (``F_i(v)``: the cheapest forward cost with at most ``i`` hops; it only falls
as ``i`` grows, so for each backward update ``B_j(v)`` the forward value to take is the one
as of layer ``min(hf, L - j)``). A frontier node as costly as the best meeting found so far
cannot lead to a cheaper one and is dropped. The backward side never enters the source, so
the first hop is always the forward side's (where Yen's banned first hops apply; the forward
side takes the first step, so a path has at least one forward hop to split at). With
positive costs the cheapest meeting is a simple path.

Each search touches two balls of about half the path's cost instead of one of its whole cost:
on WN18RR (41K nodes, 498K edges) ~10x fewer nodes for a 5-hop path.
"""
from __future__ import annotations

import numpy as np

from .layers import Hop, LayerSearch, Path

__all__ = ["meet_path"]


def _updates(s: LayerSearch, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted keys node * width + layer, costs) of every update of a search."""
    nodes = np.concatenate([lay[0] for lay in s.found.layers])
    layer = np.repeat(np.arange(len(s.found.layers), dtype=np.int64), [len(lay[0]) for lay in s.found.layers])
    cost = np.concatenate([lay[5] for lay in s.found.layers])
    key = nodes * width + layer
    order = np.argsort(key, kind="stable")
    return key[order], cost[order]


def _best_meeting(fw: LayerSearch, bw: LayerSearch, max_hops: int) -> tuple[float, int, int, int]:
    """(cost, node, forward layer, backward layer) of the cheapest meeting within the hop bound
    (ties: fewer hops, then the smaller node); cost inf when the two sides have not met."""
    width = max_hops + 2
    fkey, fcost = _updates(fw, width)
    bkey, bcost = _updates(bw, width)
    bnode, blayer = bkey // width, bkey % width
    want = bnode * width + np.minimum(fw.h, max_hops - blayer)
    at = np.searchsorted(fkey, want, side="right") - 1
    ok = (at >= 0) & (blayer <= max_hops)
    ok[ok] &= fkey[at[ok]] // width == bnode[ok]
    if not ok.any():
        return np.inf, -1, -1, -1
    at, bnode, blayer, bcost = at[ok], bnode[ok], blayer[ok], bcost[ok]
    total = fcost[at] + bcost
    flayer = fkey[at] % width
    i = np.lexsort((bnode, flayer + blayer, total))[0]
    return float(total[i]), int(bnode[i]), int(flayer[i]), int(blayer[i])


def meet_path(g, source: int, target: int, max_hops: int, out_types, in_types, banned=None, ban_first=None,
              cost0: float = 0.0) -> Path | None:
    """The cheapest path from ``source`` to ``target`` of at most ``max_hops`` hops (None if
    none), avoiding ``banned`` nodes and, on its first hop, ``ban_first``; its cost starts at
    ``cost0`` (Yen's root) and is summed hop by hop."""
    if source == target:
        return Path((source,), (), cost0)
    fw = LayerSearch(g, [source], [cost0], out_types, in_types, banned, ban_first)
    bw = LayerSearch(g, [target], [0.0], in_types, out_types, set(banned or ()) | {source})
    best = np.inf
    while fw.h + bw.h < max_hops and (fw.alive or bw.alive):
        side = fw if fw.alive and (fw.h == 0 or not bw.alive or fw.work() <= bw.work()) else bw
        side.step(best - (cost0 if side is bw else 0.0))
        best = _best_meeting(fw, bw, max_hops)[0]
        if not fw.alive and not bw.alive:
            break
    best, v, i, j = _best_meeting(fw, bw, max_hops)
    if v < 0:
        return None
    head = fw.found.path(v, i)
    tail = bw.found.path(v, j)
    hops = list(head.hops) + [Hop(h.v, h.u, h.etype, not h.forward, h.weight, h.cost) for h in reversed(tail.hops)]
    nodes = head.nodes + tuple(reversed(tail.nodes))[1:]
    cost = cost0
    for h in hops:
        cost += h.cost
    return Path(nodes, tuple(hops), cost)
