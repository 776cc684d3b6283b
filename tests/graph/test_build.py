"""The low-memory full rebuild (kgsearch.graph.kernels.build, kernels.pagerank_lean) against the reference code paths:
``Graph.from_edges`` (same arrays and dtypes, bit for bit) and ``pagerank`` (same floats)."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.demo import demo_dir
from kgsearch.graph.kernels import build, pagerank_lean
from kgsearch.graph.context import load_graph
from kgsearch.graph.kernels.csr import Graph, GraphError
from kgsearch.graph.stored.read import read_edges
from kgsearch.graph.kernels.pagerank import pagerank
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index

PARTS = ("indptr", "indices", "weights", "etype", "rindptr", "rperm")


def same_graph(a: Graph, b: Graph) -> None:
    assert (a.n, a.m, a.etype_names) == (b.n, b.m, b.etype_names)
    for p in PARTS:
        x, y = getattr(a, p), getattr(b, p)
        assert x.dtype == y.dtype, p
        assert np.array_equal(x, y), p


def random_edges(rng, n, m, n_types, hub=False):
    """Edges as read_edges gives them: int32 positions, float32 weights, uint8/uint16 types;
    with duplicate edges, self loops, isolated nodes (ids never drawn), zero weights."""
    live = rng.choice(n, max(1, n // 2), replace=False)        # the other half stays isolated
    s = rng.choice(live, m)
    d = rng.choice(live, m)
    if hub:                                                      # one node with most edges
        s[rng.random(m) < 0.5] = live[0]
        d[rng.random(m) < 0.3] = live[1]
    dup = rng.integers(0, m, m // 4)                             # exact duplicates, later ids
    s[rng.integers(0, m, len(dup))] = s[dup]
    loops = rng.random(m) < 0.05
    d[loops] = s[loops]
    w = rng.choice(np.array([0.0, 0.25, 0.5, 1.0, 0.7, 3.0], dtype=np.float32), m)
    t = rng.integers(0, n_types, m)
    t = t.astype(np.uint8 if n_types <= 256 else np.uint16)
    return s.astype(np.int32), d.astype(np.int32), w, t


@pytest.mark.parametrize("seed", range(12))
def test_from_edge_arrays_equals_from_edges(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    m = int(rng.integers(1, 3000))
    n_types = [1, 5, 300, 1000][seed % 4]
    s, d, w, t = random_edges(rng, n, m, n_types, hub=seed % 3 == 0)
    names = [f"t{i}" for i in range(n_types)]
    want = Graph.from_edges(s, d, w, n, t, names, weight_dtype=np.float32)
    for chunk in (1, 7, 64, 1 << 20):
        arrays = [s.copy(), d.copy(), w.copy(), t.copy()]
        got = build.from_edge_arrays(arrays, n, names, chunk=chunk)
        assert arrays == []                                      # consumed
        same_graph(got, want)


def test_from_edge_arrays_small_cases():
    for s, d, n in (([0], [0], 1), ([2, 2, 2], [1, 1, 1], 5), ([4, 0], [0, 4], 6)):
        a = [np.array(s, np.int32), np.array(d, np.int32), np.ones(len(s), np.float32),
             np.zeros(len(s), np.uint8)]
        same_graph(build.from_edge_arrays([x.copy() for x in a], n), Graph.from_edges(*a[:3], n, a[3]))
    empty = [np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros(0, np.uint8)]
    same_graph(build.from_edge_arrays(empty, 3), Graph.from_edges([], [], [], 3, []))


@pytest.mark.parametrize("bad, msg", [
    (([0, 3], [1, 1], [1.0, 1.0]), "node numbers"),
    (([0, -1], [1, 1], [1.0, 1.0]), "node numbers"),
    (([0, 1], [1, 1], [1.0, -1.0]), "weights"),
    (([0, 1], [1, 1], [1.0, np.nan]), "weights"),
])
def test_from_edge_arrays_rejects_what_from_edges_rejects(bad, msg):
    s, d, w = bad
    args = [np.array(s, np.int32), np.array(d, np.int32), np.array(w, np.float32), np.zeros(2, np.uint8)]
    with pytest.raises(GraphError, match=msg):
        Graph.from_edges(*args[:3], 3, args[3])
    with pytest.raises(GraphError, match=msg):
        build.from_edge_arrays(args, 3)


@pytest.mark.parametrize("seed", range(8))
def test_pagerank_lean_is_pagerank_to_the_bit(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 400))
    s, d, w, t = random_edges(rng, n, int(rng.integers(0, 4000)), 3, hub=seed % 2 == 0)
    g = Graph.from_edges(s, d, w, n, t, weight_dtype=np.float32)   # dangling: isolated, 0-weight rows
    for tol in (1e-6, min(1e-6, 1e-4 / n)):
        want = pagerank(g, tol=tol, max_iter=1000)
        for chunk in (1, 13, 1 << 20):
            assert np.array_equal(pagerank_lean.pagerank_lean(g, tol=tol, max_iter=1000, chunk=chunk), want)
    assert pagerank_lean.pagerank_lean(Graph.from_edges([], [], num_nodes=0)).shape == (0,)


def test_pagerank_lean_on_old_numpy_is_the_reference(monkeypatch):
    rng = np.random.default_rng(7)
    g = Graph.from_edges(*random_edges(rng, 50, 400, 2)[:3], 50, weight_dtype=np.float32)
    monkeypatch.setattr(pagerank_lean, "FAST_ADD_AT", False)
    got = pagerank_lean.pagerank_lean(g, tol=1e-9, max_iter=1000)
    assert not g._cache                                          # (no operator left on the graph)
    assert np.array_equal(got, pagerank(g, tol=1e-9, max_iter=1000))


def test_full_rebuild_stores_the_reference_graph_and_pagerank(tmp_path):
    db = tmp_path / "demo.db"
    index_paths(db, [str(demo_dir())], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        stored = load_graph(ix)
        ids = ix.get_array("graph.node_ids")
        src, dst, w, et, names = read_edges(ix.conn, ids, ix.meta_json("graph.edge_weights"))
        pr = np.array(ix.get_array("graph.pagerank"))
    want = Graph.from_edges(src, dst, w, len(ids), et, names, weight_dtype=np.float32)
    same_graph(stored, want)
    ref = pagerank(want, tol=min(1e-6, 1e-4 / want.n), max_iter=1000).astype(np.float32)
    assert pr.dtype == ref.dtype and np.array_equal(pr, ref)
