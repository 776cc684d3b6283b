"""Query-time graph signals around seed nodes: typed-edge proximity, intent edges, HITS adjustments.

All functions take node numbers of a :class:`~kgsearch.graph.kernels.csr.Graph` (0..n-1) and return
``{node: score}`` dicts or arrays; the pipeline maps them to its candidates.

Proximity (gamma channel), for seeds ``s`` with weight ``w_s``:

* 1 hop, out-edge ``s -> v`` of weight ``w``: ``v += w_s * w * 1.0``;
* 1 hop, in-edge ``u -> s``: ``u += w_s * w * 0.7``;
* 2 hops (only when ``two_hop``): ``x += w_s * w1 * w2 * f1 * f2 * 0.15`` along the same rules.

``w`` is the stored edge weight (per-edge weight x edge-type weight). Intent edges (delta
channel) count only edges of the intent's types, forward ``+1.0 * w_s`` and backward ``+0.7 * w_s``.
"""
from __future__ import annotations

import numpy as np

from .csr import Graph

__all__ = ["proximity", "proximity_arrays", "pull_mean", "unique_inverse", "neighbour_mean", "intent_edges", "hits_adjust", "OUT_FACTOR", "IN_FACTOR",
           "TWO_HOP_FACTOR"]

OUT_FACTOR = 1.0
IN_FACTOR = 0.7
TWO_HOP_FACTOR = 0.15
TWO_HOP_MAX = 2000


def _weight_of(nodes: np.ndarray, values: np.ndarray):
    """``f(x)``: the value of each node of ``x`` (one of ``nodes``), as ``w = zeros(n);
    w[nodes] = values; w[x]`` gives it (a repeated node keeps its last value) without an array
    of every node (8 MB a call at 1M nodes)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    values = np.broadcast_to(np.asarray(values, dtype=np.float64), nodes.shape)
    order = np.argsort(nodes, kind="stable")
    keys = nodes[order]
    if len(keys) > 1 and not (keys[1:] != keys[:-1]).all():     # (a repeated node: its last value)
        last = len(nodes) - 1 - np.unique(nodes[::-1], return_index=True)[1]
        keys, vals = nodes[last], values[last]          # (sorted: np.unique's order)
    else:
        vals = values[order]
    return lambda x: vals[np.searchsorted(keys, x)] if len(x) else np.zeros(0)


def _distinct(a: np.ndarray) -> bool:
    s = np.sort(a)
    return len(s) < 2 or bool((s[1:] != s[:-1]).all())


def _one_hop(g: Graph, seeds: np.ndarray, sw: np.ndarray, types=None) -> tuple[np.ndarray, np.ndarray]:
    """(neighbour node numbers, contributions) for 1-hop out (x1.0) and in (x0.7) edges."""
    if types is None and isinstance(g, Graph) and sw.shape == seeds.shape and _distinct(seeds):
        # (each seed's weight repeated over its edges: what the look-up below gives distinct seeds)
        (nb_o, w_o, c_o), (nb_i, w_i, c_i) = g.out_in_counts(seeds)
        return (np.concatenate([nb_o, nb_i]),
                np.concatenate([np.repeat(sw, c_o) * w_o * OUT_FACTOR, np.repeat(sw, c_i) * w_i * IN_FACTOR]))
    wmap = _weight_of(seeds, sw)
    (node_o, nb_o, w_o, _), (node_i, nb_i, w_i, _) = g.neighbors_out_in(seeds, types)
    nb = np.concatenate([nb_o, nb_i])
    contrib = np.concatenate([wmap(node_o) * w_o * OUT_FACTOR, wmap(node_i) * w_i * IN_FACTOR])
    return nb, contrib


def proximity_arrays(g: Graph, seeds, seed_weights=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`proximity` (one hop) as arrays: the nodes reached, ascending, and their scores
    (the query pipeline's graph stage takes arrays; the dict's keys and values, in its order)."""
    seeds = np.asarray(seeds, dtype=np.int64)
    if g.n == 0 or len(seeds) == 0 or g.m == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    sw = np.ones(len(seeds)) if seed_weights is None else np.asarray(seed_weights, dtype=np.float64)
    nb, contrib = _one_hop(g, seeds, sw)
    if not len(nb):
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    u, inv = np.unique(nb, return_inverse=True)
    return u, np.bincount(inv, weights=contrib)


def proximity(g: Graph, seeds, seed_weights=None, two_hop: bool = False,
              max_frontier: int = 2000) -> dict[int, float]:
    """Typed-edge proximity of every node reached from ``seeds`` (see the module docstring).

    Self-loops and edges between seeds count like any other edge. ``max_frontier`` bounds the
    2-hop expansion to the strongest 1-hop nodes (hubs in code graphs have thousands of edges).
    """
    u, s1 = proximity_arrays(g, seeds, seed_weights)
    score = {}
    if len(u):
        score = dict(zip(u.tolist(), s1.tolist()))
        if two_hop:
            order = np.argsort(-s1, kind="stable")[:max_frontier]
            nb2, c2 = _one_hop(g, u[order], s1[order])
            if len(nb2):
                u2, inv2 = np.unique(nb2, return_inverse=True)
                s2 = np.bincount(inv2, weights=c2) * TWO_HOP_FACTOR
                for node, val in zip(u2.tolist(), s2.tolist()):
                    score[node] = score.get(node, 0.0) + val
    return score


def neighbour_mean(g: Graph, seeds, values, two_hop: bool = False, max_frontier: int = 2000) -> dict[int, float]:
    """Graph signal of the query pipeline: for every node ``v`` next to a seed,

        prox(v) = sum_s  w(s, v) * f * value(s)  /  sum_n  w(n, v) * f

    over its edges with the seeds (numerator) and over all its edges (denominator), with
    ``f = 1.0`` when the seed points at ``v`` (``s -> v``) and ``0.7`` when ``v`` points at the
    seed (``v -> s``). It is the weighted mean of ``value`` over ``v``'s neighbours (0 for
    non-seeds), so a node is not favoured for merely having many edges, and it stays in [0, 1]
    when the values do. With ``two_hop``, ``0.15 x`` the same mean taken over the 1-hop scores
    is added (bounded to the ``max_frontier`` strongest 1-hop nodes).
    """
    seeds = np.asarray(seeds, dtype=np.int64)
    if g.n == 0 or g.m == 0 or len(seeds) == 0:
        return {}
    den = g.in_weight * OUT_FACTOR + g.out_weight * IN_FACTOR

    def step(src, val):
        wmap = _weight_of(src, val)
        (node_o, nb_o, w_o, _), (node_i, nb_i, w_i, _) = g.neighbors_out_in(src)
        nb = np.concatenate([nb_o, nb_i])
        if not len(nb):
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        contrib = np.concatenate([wmap(node_o) * w_o * OUT_FACTOR, wmap(node_i) * w_i * IN_FACTOR])
        u, inv = np.unique(nb, return_inverse=True)
        num = np.bincount(inv, weights=contrib)
        d = den[u]
        return u, np.divide(num, d, out=np.zeros(len(u)), where=d > 0)

    u, p = step(seeds, np.asarray(values, dtype=np.float64))
    score = dict(zip(u.tolist(), p.tolist()))
    if two_hop and len(u):
        order = np.argsort(-p, kind="stable")[:max_frontier]
        u2, p2 = step(u[order], p[order])
        for node, val in zip(u2.tolist(), (p2 * TWO_HOP_FACTOR).tolist()):
            score[node] = score.get(node, 0.0) + val
    return score


def pull_mean(g: Graph, targets, value_of, two_hop: bool = False, max_nodes: int = TWO_HOP_MAX) -> np.ndarray:
    """Graph signal of the query pipeline: for each target node ``v``, the weighted mean of its
    neighbours' first-stage scores,

        prox(v) = sum_n w(n, v) * f * value(n)  /  sum_n w(n, v) * f

    with ``f = 1.0`` for an edge into ``v`` (``n -> v``) and ``0.7`` for an edge out of it
    (``v -> n``): the issue's seed convention read from the receiving side. A mean, not a sum,
    so a node is not favoured for merely having many edges. With ``two_hop``, ``0.15 x`` the
    mean of the neighbours' own 1-hop values is added; the second hop starts from at most
    ``max_nodes`` (:data:`TWO_HOP_MAX`) 1-hop neighbours, those most strongly linked to the
    targets (sum of ``w * f`` over their edges with them; ties by position). It used to start
    from the first 20,000 by position: at 1M nodes that read hub neighbourhoods for 80-180 ms
    on 8 of 100 queries; with the strongest 2,000 the bench sets' figures are unchanged (the
    full pipeline's nDCG@10 on all seven) and 98 of 100 top-10 lists at 1M are the same.
    ``value_of(positions) -> values`` scores any positions. Nodes without edges get 0.
    """
    targets = np.asarray(targets, dtype=np.int64)
    out = np.zeros(len(targets))
    ok = targets >= 0
    if g.m == 0 or not ok.any():
        return out

    def one(tpos):
        (node_o, nb_o, w_o, _), (node_i, nb_i, w_i, _) = g.neighbors_out_in(tpos)
        node = np.concatenate([node_i, node_o])
        nb = np.concatenate([nb_i, nb_o])
        w = np.concatenate([w_i * OUT_FACTOR, w_o * IN_FACTOR]).astype(np.float64)
        res = np.zeros(len(tpos))
        if not len(nb):
            return res, nb, np.zeros(0)
        u, inv_nb = unique_inverse(nb, g.n)
        vals = np.asarray(value_of(u), dtype=np.float64)[inv_nb]
        # each edge's target as its index in ``tpos`` (unique): sums per target in edge order,
        # as a unique-and-inverse over the edges' targets gave, without sorting the edges
        t_inv = _index_of(tpos, node, g.n)
        num = np.bincount(t_inv, weights=w * vals, minlength=len(tpos))
        den = np.bincount(t_inv, weights=w, minlength=len(tpos))
        res = np.divide(num, den, out=np.zeros(len(tpos)), where=den > 0)
        return res, u, np.bincount(inv_nb.reshape(-1), weights=w, minlength=len(u))

    tp = targets[ok]
    first, nbrs, link = one(tp)
    out[ok] = first
    if two_hop and len(nbrs):
        if len(nbrs) > max_nodes:        # the neighbours most strongly linked to the targets
            nbrs = np.sort(nbrs[np.argsort(-link, kind="stable")[:max_nodes]])
        nb_first = one(nbrs)[0]
        lookup = dict(zip(nbrs.tolist(), nb_first.tolist()))
        second = pull_mean_values(g, tp, lambda p: np.array([lookup.get(int(x), 0.0) for x in p]))
        out[ok] += TWO_HOP_FACTOR * second
    return out


def _index_of(keys: np.ndarray, a: np.ndarray, n: int) -> np.ndarray:
    """The index in ``keys`` (unique values in ``0..n-1``) of each value of ``a`` (all in ``keys``):
    a length-``n`` map when ``a`` is long against ``n``, else a search in the sorted keys."""
    if len(a) * 8 < n:
        order = np.argsort(keys, kind="stable")
        return order[np.searchsorted(keys[order], a)]
    at = np.zeros(n, dtype=np.int64)
    at[keys] = np.arange(len(keys))
    return at[a]


def unique_inverse(a: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, return_inverse=True)`` for values in ``0..n-1``; when ``a`` is long
    against ``n`` (hub neighbourhoods) by marking a length-``n`` array instead of sorting ``a``
    (the same two arrays)."""
    if len(a) * 8 < n:
        return np.unique(a, return_inverse=True)
    seen = np.zeros(n, dtype=bool)
    seen[a] = True
    u = np.flatnonzero(seen)
    at = np.zeros(n, dtype=np.int64)
    at[u] = np.arange(len(u))
    return u, at[a]


def pull_mean_values(g: Graph, targets, value_of) -> np.ndarray:
    """One pull-mean step (no two-hop), see :func:`pull_mean`."""
    return pull_mean(g, targets, value_of, two_hop=False)


def intent_edges(g: Graph, seeds, type_ids, seed_weights=None) -> dict[int, float]:
    """Forward (+1.0) and backward (+0.7) unit credits over edges of the intent's types."""
    seeds = np.asarray(seeds, dtype=np.int64)
    type_ids = np.asarray(list(type_ids), dtype=np.int64)
    if g.n == 0 or len(seeds) == 0 or len(type_ids) == 0 or g.m == 0:
        return {}
    sw = np.ones(len(seeds)) if seed_weights is None else np.asarray(seed_weights, dtype=np.float64)
    wmap = _weight_of(seeds, sw)
    (node_o, nb_o, _, _), (node_i, nb_i, _, _) = g.neighbors_out_in(seeds, type_ids)
    nb = np.concatenate([nb_o, nb_i])
    if not len(nb):
        return {}
    contrib = np.concatenate([wmap(node_o) * OUT_FACTOR, wmap(node_i) * IN_FACTOR])
    u, inv = np.unique(nb, return_inverse=True)
    return dict(zip(u.tolist(), np.bincount(inv, weights=contrib).tolist()))


def hits_adjust(is_seed: np.ndarray, hubs: np.ndarray, auths: np.ndarray) -> np.ndarray:
    """Additive HITS adjustments for code queries (hub/authority max-normalised to [0, 1]):

    seed with authority > 0.05: +0.25 * authority; non-seed with authority > 0.2: -0.15 * authority;
    seed with hub > 0.1: +0.10 * hub.
    """
    is_seed = np.asarray(is_seed, dtype=bool)
    a = np.asarray(auths, dtype=np.float64)
    h = np.asarray(hubs, dtype=np.float64)
    adj = np.zeros(len(a))
    adj += np.where(is_seed & (a > 0.05), 0.25 * a, 0.0)
    adj -= np.where(~is_seed & (a > 0.2), 0.15 * a, 0.0)
    adj += np.where(is_seed & (h > 0.1), 0.10 * h, 0.0)
    return adj
