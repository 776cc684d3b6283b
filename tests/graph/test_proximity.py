"""pull_mean (the prose graph signal) against a slow loop over the edges, with and without the
two-hop bound (the 1-hop neighbours most strongly linked to the targets)."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.graph.kernels.csr import Graph
from kgsearch.graph.kernels.proximity import IN_FACTOR, OUT_FACTOR, TWO_HOP_FACTOR, _index_of, unique_inverse, pull_mean


def _ref_one(edges, targets, value):
    """(mean per target, {neighbour: link weight to the targets}) by a loop over edges."""
    num, den, link = {}, {}, {}
    tset = set(targets)
    for s, d, w in edges:
        for v, nb, f in ((d, s, OUT_FACTOR), (s, d, IN_FACTOR)):     # edge into v, edge out of v
            if v in tset:
                num[v] = num.get(v, 0.0) + w * f * value(nb)
                den[v] = den.get(v, 0.0) + w * f
                link[nb] = link.get(nb, 0.0) + w * f
    return [num.get(v, 0.0) / den[v] if den.get(v, 0.0) > 0 else 0.0 for v in targets], link


def _ref(g: Graph, targets, value, two_hop, max_nodes):
    edges = list(zip(*(a.tolist() for a in g.edges()[:3])))
    first, link = _ref_one(edges, targets, value)
    if not two_hop or not link:
        return first
    nbrs = sorted(link)
    if len(nbrs) > max_nodes:
        nbrs = sorted(sorted(nbrs, key=lambda n: -link[n])[:max_nodes])
    nb_first, _ = _ref_one(edges, nbrs, value)
    lookup = dict(zip(nbrs, nb_first))
    second, _ = _ref_one(edges, targets, lambda n: lookup.get(n, 0.0))
    return [a + TWO_HOP_FACTOR * b for a, b in zip(first, second)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("two_hop, max_nodes", [(False, 2000), (True, 2000), (True, 5), (True, 1)])
@pytest.mark.parametrize("n", [40, 4000])       # neighbour lists long / short against n: both paths of the helpers
def test_pull_mean_equals_the_edge_loop(seed, two_hop, max_nodes, n):
    rng = np.random.default_rng(seed)
    m = 4 * n if n < 100 else 160
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    g = Graph.from_edges(src, dst, rng.random(m).astype(np.float32), n, weight_dtype=np.float32)
    value = rng.random(n)
    targets = [3, 9, 17, 22, 30] if n == 40 else sorted({int(x) for x in dst[:5]})
    got = pull_mean(g, targets, lambda p: value[np.asarray(p)], two_hop=two_hop, max_nodes=max_nodes)
    want = _ref(g, targets, lambda p: float(value[p]), two_hop, max_nodes)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-9)        # (the kernel multiplies w * f in float32)
    if two_hop and max_nodes < 40 and n == 40:   # the bound changed something (it is not a no-op)
        full = pull_mean(g, targets, lambda p: value[np.asarray(p)], two_hop=True, max_nodes=10**6)
        assert not np.allclose(got, full)


@pytest.mark.parametrize("n, size", [(50, 400), (5000, 30), (5000, 5000)])
def test_marking_helpers_equal_unique_and_search(n, size):
    """The hub paths (a length-n mark or map instead of a sort) give np.unique's arrays exactly."""
    rng = np.random.default_rng(n + size)
    a = rng.integers(0, n, size)
    u, inv = unique_inverse(a, n)
    wu, winv = np.unique(a, return_inverse=True)
    assert u.tolist() == wu.tolist() and inv.tolist() == winv.tolist()
    keys = rng.permutation(u)
    assert keys[_index_of(keys, a, n)].tolist() == a.tolist()


def test_neighbors_equal_the_edge_list():
    """Graph.neighbors (node repeated by degree, in-edge sources from rsrc) against the edges."""
    rng = np.random.default_rng(7)
    n, m = 30, 200
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m).astype(np.float32), n,
                         etype=rng.integers(0, 3, m).astype(np.uint8), weight_dtype=np.float32)
    s, d, w, t = (x.tolist() for x in g.edges())
    nodes = [4, 0, 17, 29]
    for direction in ("out", "in", "in"):           # in: searched, then (asked for many) from rsrc
        if direction == "in" and "rsrc" in g._cache:
            nodes = list(range(n))
            assert g.neighbors(nodes, "in")[1].tolist() == \
                (np.searchsorted(g.indptr, g.in_edge_ids(nodes), side="right") - 1).tolist()
        node, nb, ww, tt = g.neighbors(nodes, direction)
        got = sorted(zip(node.tolist(), nb.tolist(), ww.tolist(), tt.tolist()))
        if direction == "out":
            want = sorted((a, b, x, y) for a, b, x, y in zip(s, d, w, t) if a in nodes)
        else:
            want = sorted((b, a, x, y) for a, b, x, y in zip(s, d, w, t) if b in nodes)
        assert got == want and node.dtype == nb.dtype == np.int64
        if direction == "in" and "rsrc" not in g._cache:
            assert len(nodes) < n                    # a few nodes: searched; now all of them
            g.neighbors(list(range(n)), "in")
            assert "rsrc" in g._cache


def _weight_of_reference(nodes, values):
    """The first version: ``w = zeros(n); w[nodes] = values; w[x]`` by np.unique (the last value
    of a repeated node)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    values = np.broadcast_to(np.asarray(values, dtype=np.float64), nodes.shape)
    last = len(nodes) - 1 - np.unique(nodes[::-1], return_index=True)[1]
    keys, vals = nodes[last], values[last]
    return lambda x: vals[np.searchsorted(keys, x)] if len(x) else np.zeros(0)


@pytest.mark.parametrize("seed", range(40))
def test_one_hop_kernels_equal_their_first_versions(seed):
    """Graph.neighbors_out_in == (neighbors "out", neighbors "in") with and without types;
    _weight_of (sorted when the nodes are distinct) == the np.unique version (repeats too);
    proximity_arrays == proximity's dict, key for key, to the last bit."""
    from kgsearch.graph.kernels import proximity as P

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 40)), int(rng.integers(0, 120))
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m).astype(np.float32), n,
                         rng.integers(0, 3, m), ["a", "b", "c"])
    for types in (None, [1], [0, 2]):
        nodes = rng.integers(0, n, int(rng.integers(0, 8)))
        got = g.neighbors_out_in(nodes, types)
        want = (g.neighbors(nodes, "out", types), g.neighbors(nodes, "in", types))
        for a, b in zip(got, want):
            for x, y in zip(a, b):
                assert x.dtype == y.dtype and x.tolist() == y.tolist()
    nodes = rng.integers(0, n, int(rng.integers(1, 10)))
    if seed % 2:
        nodes = np.unique(nodes)
        rng.shuffle(nodes)
    values = rng.random(len(nodes))
    x = rng.integers(0, n, 30)
    x = x[np.isin(x, nodes)]
    assert P._weight_of(nodes, values)(x).tobytes() == _weight_of_reference(nodes, values)(x).tobytes()
    seeds = np.unique(rng.integers(0, n, int(rng.integers(1, 8))))
    rng.shuffle(seeds)
    w = rng.random(len(seeds))
    (node_o, nb_o, w_o, _), (node_i, nb_i, w_i, _) = g.neighbors_out_in(seeds)     # (the one-hop as first written)
    wmap = _weight_of_reference(seeds, w)
    want_nb = np.concatenate([nb_o, nb_i])
    want_c = np.concatenate([wmap(node_o) * w_o * P.OUT_FACTOR, wmap(node_i) * w_i * P.IN_FACTOR])
    got_nb, got_c = P._one_hop(g, seeds, w)                                      # (distinct seeds: repeated weights)
    assert got_nb.tolist() == want_nb.tolist() and got_c.dtype == want_c.dtype and got_c.tobytes() == want_c.tobytes()
    u, s = P.proximity_arrays(g, seeds, w)
    d = P.proximity(g, seeds, w)
    assert u.tolist() == list(d) and s.tolist() == list(d.values())
