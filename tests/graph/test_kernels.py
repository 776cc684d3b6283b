"""CSR layout, persistence, neighbourhoods, and hand-computed kernel results (no networkx)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kgsearch.errors import KgsearchError
from kgsearch.graph import (Graph, GraphError, PowerIterationFailedConvergence, greedy_modularity,
                            hits, modularity, pagerank, rwr)
from kgsearch.graph.kernels.communities import CommunityTimeout
from kgsearch.graph.kernels.csr import scatter_add


def typed():
    # 0 -calls-> 1, 0 -contains-> 2, 1 -calls-> 2, 2 -imports-> 0, 3 -calls-> 2, 1 -calls-> 2 (parallel)
    return Graph.from_edges([0, 0, 1, 2, 3, 1], [1, 2, 2, 0, 2, 2], [1.0, 0.5, 2.0, 1.0, 1.0, 1.0],
                            num_nodes=5, etype=[0, 1, 0, 2, 0, 0],
                            etype_names=["calls", "contains", "imports"])


# ---------------------------------------------------------------------- CSR
def test_csr_layout_forward_and_reverse():
    g = typed()
    assert (g.n, g.m) == (5, 6)
    assert g.indptr.tolist() == [0, 2, 4, 5, 6, 6]
    assert g.indices.tolist() == [1, 2, 2, 2, 0, 2]           # sorted by (src, dst)
    assert g.indices.dtype == np.int32 and g.weights.dtype == np.float32
    assert g.out_degree().tolist() == [2, 2, 1, 1, 0]
    assert g.in_degree().tolist() == [1, 1, 4, 0, 0]
    assert g.predecessors(2).tolist() == [0, 1, 1, 3]
    assert g.successors(1).tolist() == [2, 2]
    assert g.out_weight.tolist() == [1.5, 3.0, 1.0, 1.0, 0.0]
    assert g.in_weight.tolist() == [1.0, 1.0, 4.5, 0.0, 0.0]


def test_weights_kept_exact_or_float32_on_request():
    g = Graph.from_edges([0], [1], [0.1])
    assert g.weights.dtype == np.float64 and g.weights[0] == 0.1
    g = Graph.from_edges([0], [1], [0.1], weight_dtype=np.float32)
    assert g.weights.dtype == np.float32


def test_neighbors_types_and_directions():
    g = typed()
    node, nb, w, t = g.neighbors([0], "out")
    assert nb.tolist() == [1, 2] and w.tolist() == [1.0, 0.5] and t.tolist() == [0, 1]
    node, nb, w, t = g.neighbors([2], "in", types=[0])
    assert sorted(nb.tolist()) == [1, 1, 3] and set(t.tolist()) == {0}
    node, nb, _, _ = g.neighbors([0, 2], "both")
    assert sorted(zip(node.tolist(), nb.tolist())) == [(0, 1), (0, 2), (0, 2), (2, 0), (2, 0), (2, 1),
                                                       (2, 1), (2, 3)]
    with pytest.raises(GraphError):
        g.neighbors([0], "sideways")
    assert g.bfs([3], 1).tolist() == [2, 3]
    assert g.bfs([3], 2).tolist() == [0, 2, 3]


def test_subgraph_filter_reverse_symmetrize():
    g = typed()
    s = g.subgraph([0, 1, 2])
    assert s.n == 3 and sorted(zip(s.src.tolist(), s.dst.tolist())) == [(0, 1), (0, 2), (1, 2), (1, 2), (2, 0)]
    f = g.filter_types(["calls"])
    assert f.m == 4 and set(f.etype.tolist()) == {0}
    r = g.reverse()
    assert sorted(zip(r.src.tolist(), r.dst.tolist())) == sorted(zip(g.dst.tolist(), g.src.tolist()))
    u = g.symmetrize()
    assert u.m == 2 * g.m and np.allclose(u.out_weight, g.out_weight + g.in_weight)


def test_blobs_round_trip_through_bytes():
    g = typed()
    blobs = {k: np.frombuffer(v.tobytes(), dtype=v.dtype).reshape(v.shape) for k, v in g.to_blobs().items()}
    h = Graph.from_blobs(blobs, etype_names=g.etype_names)
    for part in ("indptr", "indices", "weights", "etype", "rindptr", "rperm"):
        assert np.array_equal(getattr(h, part), getattr(g, part))
    assert np.allclose(pagerank(h), pagerank(g))
    blobs.pop("rperm")
    with pytest.raises(GraphError):
        Graph.from_blobs(blobs)


def test_bad_input_raises_named_errors():
    with pytest.raises(GraphError):
        Graph.from_edges([0, 1], [1])
    with pytest.raises(GraphError):
        Graph.from_edges([0], [5], num_nodes=3)
    with pytest.raises(GraphError):
        Graph.from_edges([0], [1], [-1.0])
    with pytest.raises(GraphError):
        pagerank(typed(), personalization={0: 0.0})
    with pytest.raises(GraphError):
        rwr(typed(), [9])
    assert issubclass(GraphError, KgsearchError) and issubclass(PowerIterationFailedConvergence, KgsearchError)


def test_csr_memory_for_a_million_edges_is_under_16_mb():
    rng = np.random.default_rng(0)
    n, m = 200_000, 1_000_000
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m), num_nodes=n,
                         etype=rng.integers(0, 20, m), weight_dtype=np.float32)
    assert g.nbytes <= 16 * 2**20, g.nbytes


def test_scatter_add_is_float_even_when_empty():
    assert scatter_add(np.zeros(0, dtype=np.int64), np.zeros(0), 3).dtype == np.float64


# ---------------------------------------------------------------------- PageRank / RWR
def test_pagerank_hand_computed_two_nodes_with_dangling():
    # 0 -> 1, node 1 dangling (jumps uniformly): x0 = .075 + .425 x1, x0 + x1 = 1 -> x0 = .5 / 1.425
    x = pagerank(Graph.from_edges([0], [1]), tol=1e-14, max_iter=1000)
    assert x[0] == pytest.approx(0.5 / 1.425, abs=1e-12) and x.sum() == pytest.approx(1.0)


def test_pagerank_cycle_is_uniform_and_raises_when_not_converged():
    g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    assert np.allclose(pagerank(g), 1 / 3)
    with pytest.raises(PowerIterationFailedConvergence):
        pagerank(Graph.from_edges([0, 1], [1, 0]), nstart=[1.0, 0.0], max_iter=3, tol=1e-12)


def test_zero_weight_out_edges_make_a_node_dangling():
    g = Graph.from_edges([0, 1], [1, 0], [0.0, 1.0])
    x = pagerank(g, tol=1e-14, max_iter=1000)
    assert np.isfinite(x).all() and x.sum() == pytest.approx(1.0)


def test_rwr_sparse_and_dense_updates_agree():
    rng = np.random.default_rng(1)
    g = Graph.from_edges(rng.integers(0, 300, 1500), rng.integers(0, 300, 1500), num_nodes=300)
    a = rwr(g, {3: 1.0, 7: 2.0}, sparse_fraction=0.0, topk=None, tol=1e-12, max_iter=500)
    b = rwr(g, {3: 1.0, 7: 2.0}, sparse_fraction=2.0, topk=None, tol=1e-12, max_iter=500)
    assert np.abs(a - b).sum() < 1e-12


def test_rwr_dead_ends_restart_at_seeds_and_early_stop():
    g = Graph.from_edges([0, 1], [1, 2])               # 2 is a dead end
    x = rwr(g, [0], restart=0.5, topk=None, tol=1e-14, max_iter=1000)
    # stationary: x0 = .5 + .5 x2 (restart + dead-end mass), x1 = .5 x0, x2 = .5 x1
    assert x[0] == pytest.approx(0.5 / (1 - 0.125), abs=1e-12)
    assert x[1] == pytest.approx(0.5 * x[0]) and x[2] == pytest.approx(0.25 * x[0])
    stats: dict = {}
    rng = np.random.default_rng(2)
    big = Graph.from_edges(rng.integers(0, 2000, 10000), rng.integers(0, 2000, 10000), num_nodes=2000)
    fast = rwr(big, [1, 2, 3], tol=1e-9, stats=stats)
    assert stats["stopped"] == "topk" and stats["iterations"] < 20
    exact = rwr(big, [1, 2, 3], topk=None, tol=1e-13, max_iter=1000)
    top = lambda v: np.argsort(-v, kind="stable")[:10].tolist()   # noqa: E731
    assert top(fast) == top(exact)


def test_rwr_both_directions_equals_walk_on_symmetrized_graph():
    rng = np.random.default_rng(5)
    g = Graph.from_edges(rng.integers(0, 400, 1200), rng.integers(0, 400, 1200), rng.random(1200),
                         num_nodes=400)
    for frac in (0.0, 2.0):                  # dense steps only, sparse steps first
        a = rwr(g, {1: 1.0, 9: 3.0}, direction="both", topk=None, tol=1e-13, max_iter=500,
                sparse_fraction=frac)
        b = rwr(g.symmetrize(), {1: 1.0, 9: 3.0}, topk=None, tol=1e-13, max_iter=500)
        assert np.abs(a - b).sum() < 1e-10
    with pytest.raises(GraphError):
        rwr(g, [1], direction="up")


def test_rwr_prune_bounds_the_work_and_keeps_the_top():
    rng = np.random.default_rng(6)
    n = 3000
    # a hub-heavy graph: every node links to a few of 20 hubs, plus random edges
    src = np.concatenate([np.arange(n), np.arange(n), rng.integers(0, n, 6000)])
    dst = np.concatenate([rng.integers(0, 20, n), rng.integers(0, 20, n), rng.integers(0, n, 6000)])
    g = Graph.from_edges(src, dst, num_nodes=n)
    seeds = {100: 1.0, 200: 0.5, 300: 0.8}
    exact = rwr(g, seeds, direction="both", topk=None, tol=1e-12, max_iter=500)
    for prune in (1e-4, 1e-3):
        approx = rwr(g, seeds, direction="both", prune=prune, topk=None, tol=1e-12, max_iter=500)
        assert approx.sum() == pytest.approx(1.0)
        top = lambda v, k: np.argsort(-v, kind="stable")[:k].tolist()   # noqa: E731
        assert top(approx, 4) == top(exact, 4)
        assert len(set(top(approx, 10)) & set(top(exact, 10))) >= 8
        assert np.count_nonzero(approx) < np.count_nonzero(exact)
    assert np.array_equal(rwr(g, seeds, prune=0.0), rwr(g, seeds))


def test_rwr_hops_confines_the_walk():
    g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 4])
    x = rwr(g, [0], hops=2, topk=None, tol=1e-14, max_iter=1000)
    assert x[3] == 0 and x[4] == 0 and x[2] > 0 and x.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------- HITS
def test_hits_hand_computed():
    # A = [[0,1,1],[0,0,1],[0,0,0]]: authorities ~ (0, 1, phi), hubs ~ (1 + phi, phi, 0)
    g = Graph.from_edges([0, 0, 1], [1, 2, 2])
    phi = (1 + math.sqrt(5)) / 2
    h, a = hits(g)
    assert a == pytest.approx([0, 1 / (1 + phi), phi / (1 + phi)], abs=1e-9)
    assert h == pytest.approx([(1 + phi) / (1 + 2 * phi), phi / (1 + 2 * phi), 0], abs=1e-9)
    hp, ap = hits(g, method="power", tol=1e-14, max_iter=1000)
    assert hp == pytest.approx(h, abs=1e-9) and ap == pytest.approx(a, abs=1e-9)


def test_hits_on_a_node_subset_is_aligned_with_it():
    g = Graph.from_edges([0, 0, 1, 3, 4], [1, 2, 2, 0, 0], num_nodes=5)
    h, a = hits(g, nodes=[0, 1, 2])
    h2, a2 = hits(Graph.from_edges([0, 0, 1], [1, 2, 2]))
    assert np.allclose(h, h2) and np.allclose(a, a2)


def test_hits_raises_when_not_converged():
    rng = np.random.default_rng(3)
    g = Graph.from_edges(rng.integers(0, 500, 3000), rng.integers(0, 500, 3000), num_nodes=500)
    with pytest.raises(PowerIterationFailedConvergence):
        hits(g, max_iter=2, tol=1e-14)


# ---------------------------------------------------------------------- communities
def test_two_cliques_joined_by_one_edge():
    edges = [(a, b) for a in range(4) for b in range(a + 1, 4)] + \
            [(a, b) for a in range(4, 8) for b in range(a + 1, 8)] + [(3, 4)]
    g = Graph.from_edges([e[0] for e in edges], [e[1] for e in edges])
    labels = greedy_modularity(g)
    assert labels.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # Q = 2 * (6/13 - (13/26)^2)
    assert modularity(g, labels) == pytest.approx(2 * (6 / 13 - 0.25))
    assert modularity(g, np.zeros(8, dtype=int)) == pytest.approx(0.0, abs=1e-12)


def test_resolution_and_time_budget():
    g = Graph.from_edges([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3])
    assert len(set(greedy_modularity(g, resolution=0.01).tolist())) == 1
    assert len(set(greedy_modularity(g, resolution=10).tolist())) == 6
    with pytest.raises(GraphError):
        greedy_modularity(g, resolution=-1)
    rng = np.random.default_rng(4)
    big = Graph.from_edges(rng.integers(0, 3000, 20000), rng.integers(0, 3000, 20000), num_nodes=3000)
    with pytest.raises(CommunityTimeout):
        greedy_modularity(big, max_seconds=0.0)
