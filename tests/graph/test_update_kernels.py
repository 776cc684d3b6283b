"""The kernels of the graph update (edge reader, splice, chunked PageRank, community placement)
against the reference code paths."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.demo import demo_dir
from kgsearch.graph.kernels import pagerank_lean, placement, splice
from kgsearch.graph.stored import read
from kgsearch.graph.kernels.csr import Graph
from kgsearch.graph.context import load_graph
from kgsearch.graph.kernels.placement import assign_new_nodes
from kgsearch.graph.kernels.pagerank import pagerank
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index

PARTS = ("indptr", "indices", "weights", "etype", "rindptr", "rperm")


def same_graph(a: Graph, b: Graph) -> None:
    assert (a.n, a.m) == (b.n, b.m)
    for p in PARTS:
        x, y = getattr(a, p), getattr(b, p)
        assert np.array_equal(x, y), p
        assert x.dtype == y.dtype, p


@pytest.mark.parametrize("chunk", [7, 1 << 18])
def test_read_edges_gives_the_stored_graph(tmp_path, chunk):
    db = tmp_path / "demo.db"
    index_paths(db, [str(demo_dir())], IndexOptions(steps=("text", "neighbors", "graph")))
    with Index.open(db, readonly=True) as ix:
        stored = load_graph(ix)
        ids = ix.get_array("graph.node_ids")
        table = ix.meta_json("graph.edge_weights")
        src, dst, w, et, names = read.read_edges(ix.conn, ids, table, chunk=chunk)
    assert names == stored.etype_names and len(names) > 3
    g = Graph.from_edges(src, dst, w.astype(np.float64), len(ids), et, names, weight_dtype=np.float32)
    same_graph(g, stored)


def _random_edges(rng, ids, m, n_types=5):
    s = rng.choice(ids, m)
    d = rng.choice(ids, m)
    w = rng.integers(1, 4, m).astype(np.float32)
    t = rng.integers(0, n_types, m).astype(np.uint8)
    return s, d, w, t


@pytest.mark.parametrize("few", [0, 10**6])
@pytest.mark.parametrize("seed", range(10))
def test_splice_equals_a_rebuild(seed, few, monkeypatch):
    from kgsearch.graph.kernels import splice as splice_mod

    monkeypatch.setattr(splice_mod, "FEW_BREAKPOINTS", few)     # (both ways of finding a row's shift)
    rng = np.random.default_rng(seed)
    old_ids = np.sort(rng.choice(np.arange(1, 400), 150, replace=False))
    s, d, w, t = _random_edges(rng, old_ids, 900)
    pos = lambda ids, x: np.searchsorted(ids, x)  # noqa: E731
    g_old = Graph.from_edges(pos(old_ids, s), pos(old_ids, d), w, len(old_ids), t, weight_dtype=np.float32)
    # a change: some nodes removed, some added (ids above and between), some rows rewritten
    removed = rng.choice(old_ids, 5 if seed % 2 else 0, replace=False)
    added = np.setdiff1d(rng.choice(np.arange(1, 500), 8, replace=False), old_ids)
    new_ids = np.sort(np.concatenate([np.setdiff1d(old_ids, removed), added]))
    touched = rng.choice(np.setdiff1d(old_ids, removed), 10, replace=False)
    # sources whose edges pointed to a removed node change too (their edge is gone)
    pointing = np.unique(s[np.isin(d, removed)])
    changed = np.unique(np.concatenate([touched, removed, added, pointing]))
    keep = ~np.isin(s, changed)
    live_changed = np.intersect1d(changed, new_ids)
    ns, nd, nw, nt = _random_edges(rng, new_ids, 60, n_types=7)
    ns = rng.choice(live_changed, len(ns))
    # (small chunks: the reverse side is renumbered in several chunks; later seeds: a hub target)
    if seed >= 6:
        nd[: len(nd) // 2] = new_ids[3]
    got = splice.splice(g_old, old_ids, new_ids, changed, ns, nd, nw, nt, chunk=1 + 97 * (seed % 3))
    # reference: the kept old edges (old order) and the new ones, through from_edges
    rs = np.concatenate([s[keep], ns])
    rd = np.concatenate([d[keep], nd])
    rw = np.concatenate([w[keep], nw])
    rt = np.concatenate([t[keep], nt]).astype(np.uint8)
    want = Graph.from_edges(pos(new_ids, rs), pos(new_ids, rd), rw, len(new_ids), rt, weight_dtype=np.float32)
    same_graph(got, want)


def test_splice_refuses_an_edge_from_a_kept_row():
    g = Graph.from_edges([0, 1], [1, 2], num_nodes=3)
    ids = np.array([10, 20, 30])
    with pytest.raises(ValueError, match="changed"):
        splice.splice(g, ids, ids, np.array([10]), np.array([20]), np.array([30]), np.ones(1), np.zeros(1))


def _graph(seed, n=300, m=1500):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    s[s % 17 == 0] = 0                 # a hub, and some nodes without out-edges (dangling)
    d[d % 11 == 0] = 5
    return Graph.from_edges(s, d, rng.integers(1, 5, m).astype(float), n, weight_dtype=np.float32), rng


@pytest.mark.parametrize("chunk", [97, 1 << 20])
def test_pagerank_csr_matches_pagerank(chunk):
    g, rng = _graph(1)
    tol = 1e-10
    want = pagerank(g, tol=tol, max_iter=1000)
    got, it = pagerank_lean.pagerank_csr(g, tol=tol, chunk=chunk)
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert it > 10
    # a warm start from the answer of a slightly different graph needs fewer iterations
    g2 = Graph.from_edges(g.src[5:], g.dst[5:], g.weights[5:].astype(float), g.n, weight_dtype=np.float32)
    cold, it_cold = pagerank_lean.pagerank_csr(g2, tol=tol)
    warm, it_warm = pagerank_lean.pagerank_csr(g2, tol=tol, x0=got)
    assert it_warm < it_cold
    assert np.abs(warm - cold).sum() < 2 * g.n * tol
    assert np.allclose(cold, pagerank(g2, tol=tol, max_iter=1000), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_assign_new_nodes_local_matches_the_global_one(seed):
    g, rng = _graph(seed + 10, n=200, m=600)
    labels = rng.integers(0, 6, g.n).astype(np.int32)
    labels[rng.random(g.n) < 0.2] = -1
    labels[150:160] = -1              # a block of new nodes (chains, isolated groups)
    want, n_want = assign_new_nodes(g, labels)
    got, n_got = placement.assign_new_nodes_local(g, labels)
    assert n_got == n_want > 0
    assert np.array_equal(got, want)
