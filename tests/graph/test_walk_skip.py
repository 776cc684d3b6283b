"""The walk that leaves edges out (``GraphContext.walk(skip=..., skip_at=...)``, the code walk's
``Tuning.walk_skip_module_contains``): its fast path (the CSR walk's sparse phase over the view
copied into a Graph, :meth:`GraphContext.walk_graph`) against the reference (the rows walk over
the :class:`SkipTypes` view) and against the rows walk over a graph built without those edges by
hand: the same dict, bit for bit and in the same order."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.graph import context as gctx
from kgsearch.graph.context import GraphContext, SkipTypes
from kgsearch.graph.kernels.csr import Graph
from kgsearch.graph.kernels.pagerank import rwr
from kgsearch.graph.kernels.rows_walk import rwr_rows

TYPES = ["contains", "calls", "imports", "inherits", "similar_text"]
KINDS = ["chunk", "class", "function", "method", "module"]


def _graph(seed: int, n: int = 80, m: int = 320, wdtype=np.float32):
    """A code-like graph: modules containing classes and functions, classes containing methods,
    calls/imports/inherits between them; parallel edges of different types, self-loops, zero
    weights, isolated nodes."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice([1, 2, 3, 4], n, p=[0.2, 0.3, 0.3, 0.2]).astype(np.uint8)
    kinds[:6] = 4                                           # some modules for sure
    kinds[-4:] = 0                                          # isolated chunks
    src, dst = rng.integers(0, n - 4, m), rng.integers(0, n - 4, m)
    et = rng.choice(len(TYPES), m, p=[0.35, 0.3, 0.15, 0.1, 0.1])
    src[:12], dst[:12] = src[12:24], dst[12:24]             # parallel edges (other types)
    et[:12] = (et[12:24] + 1) % len(TYPES)
    dst[24:28] = src[24:28]                                 # self-loops
    w = rng.random(m) * 2
    w[30:34] = 0.0
    g = Graph.from_edges(src, dst, w.astype(wdtype), n, et, TYPES, weight_dtype=wdtype)
    return GraphContext(None, g, np.arange(100, 100 + n, dtype=np.int64), None, None, kinds, KINDS)


def _by_hand(ctx: GraphContext, drop: set[str], at: set[str], at_kinds: set[str]) -> Graph:
    """The graph without those edges, filtered edge by edge in Python."""
    g = ctx.graph
    s, d, w, t = g.edges()
    keep = [i for i in range(g.m)
            if TYPES[t[i]] not in drop
            and not (TYPES[t[i]] in at and (KINDS[ctx.kinds[s[i]]] in at_kinds or KINDS[ctx.kinds[d[i]]] in at_kinds))]
    return Graph.from_edges(s[keep], d[keep], w[keep], g.n, t[keep], TYPES, weight_dtype=g.weights.dtype)


def _rows_dict(g, seeds, w, limit=200, **kw):
    nodes, vals = rwr_rows(g, seeds, weights=w, **kw)
    order = np.argsort(nodes, kind="stable")
    return gctx._best(nodes[order], vals[order], limit)


SKIPS = [dict(skip_at=(("contains",), ("module",))),                 # the shipped code walk
         dict(skip_at=(("contains", "imports"), ("module", "class"))),
         dict(skip=("calls",)),
         dict(skip=("similar_text",), skip_at=(("contains",), ("module",)))]


@pytest.mark.parametrize("wdtype", [np.float32, np.float64])
@pytest.mark.parametrize("prune", [0.0, 5e-5, 1e-2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_walk_is_the_reference_walk_bit_for_bit(seed, prune, wdtype):
    ctx = _graph(seed, wdtype=wdtype)
    rng = np.random.default_rng(100 + seed)
    seeds = rng.choice(ctx.graph.n - 4, 5, replace=False)
    w = rng.random(5) + 0.1
    for skip in SKIPS:
        for kw in ({}, {"topk": None, "tol": 1e-10, "max_iter": 80}, {"limit": 7}):
            fast = ctx.walk(seeds, w, restart=0.25, prune=prune, **skip, **kw)
            ref = ctx.walk(seeds, w, restart=0.25, prune=prune, reference=True, **skip, **kw)
            assert fast == ref and list(fast) == list(ref)
            drop = set(skip.get("skip", ()))
            at, at_kinds = (set(x) for x in skip.get("skip_at", ((), ())))
            limit = kw.pop("limit", 200)
            oracle = _rows_dict(_by_hand(ctx, drop, at, at_kinds), seeds, w, limit=limit, restart=0.25,
                                prune=prune, **kw)
            assert fast == oracle and list(fast) == list(oracle)
        # the fast path was taken, and it leaves edges out (the walk differs from the whole graph's)
        view, copy = ctx.walk_graph(ctx.type_ids(skip.get("skip", ())), *(
            (ctx.type_ids(skip["skip_at"][0]), skip["skip_at"][1]) if "skip_at" in skip else ()))
        assert copy is not None and 0 < copy.m < ctx.graph.m
        assert ctx.walk(seeds, w, prune=0, **skip) != ctx.walk(seeds, w, prune=0)


def test_the_copy_has_the_views_neighbours_in_the_views_order():
    """Node by node, out- then in-edges, parallel edges in the graph's order: what makes the two
    walks sum the same values in the same order."""
    ctx = _graph(3)
    view, copy = ctx.walk_graph(ctx.type_ids(["calls"]), ctx.type_ids(["contains"]), ["module"])
    for nodes in (np.arange(ctx.graph.n), np.array([5, 2, 9, 2]), np.array([0])):
        for direction in ("out", "in", "both"):
            for a, b in zip(view.neighbors(nodes, direction), copy.neighbors(nodes, direction)):
                assert np.array_equal(a, b) and a.dtype == b.dtype
    assert copy.weights.dtype == ctx.graph.weights.dtype


def test_skip_at_leaves_out_the_edges_at_either_end_of_the_kind():
    """Hand-made: module 0 contains class 1 and function 2; class 1 contains method 3; 3 calls 2;
    4 (a function) imports module 0. Skipping contains at modules keeps 1 -> 3 only."""
    g = Graph.from_edges([0, 0, 1, 3, 4], [1, 2, 3, 2, 0], [1.0, 1.0, 1.0, 0.5, 1.0], 5,
                         [0, 0, 0, 1, 2], TYPES)
    ctx = GraphContext(None, g, np.arange(1, 6, dtype=np.int64), None, None,
                       np.array([4, 1, 2, 3, 2], np.uint8), KINDS)
    view, copy = ctx.walk_graph([], ctx.type_ids(["contains"]), ["module"])
    s, d, _, t = copy.edges()
    assert sorted(zip(s.tolist(), d.tolist(), [TYPES[x] for x in t])) == [
        (1, 3, "contains"), (3, 2, "calls"), (4, 0, "imports")]
    # the walk from class 1 reaches 3 and 2 through 1 -> 3 -> 2, never module 0's other member
    got = ctx.walk([1], restart=0.2, prune=0, skip_at=(("contains",), ("module",)))
    assert set(got) == {1, 2, 3} and got == ctx.walk([1], restart=0.2, prune=0, reference=True,
                                                     skip_at=(("contains",), ("module",)))
    # a directed walk follows every edge (the skips are for undirected walks only)
    assert ctx.walk([0], directed=True, prune=0, skip_at=(("contains",), ("module",))) == \
        ctx.walk([0], directed=True, prune=0)
    assert set(ctx.walk([0], directed=True, prune=0)) == {0, 1, 2, 3}
    # everything left out: the seeds keep all the mass
    assert ctx.walk([1, 3], prune=0, skip=tuple(TYPES)) == ctx.walk([1, 3], prune=0, skip=tuple(TYPES),
                                                                     reference=True)


def test_the_copy_is_built_once_and_not_past_the_edge_cap(monkeypatch):
    ctx = _graph(4)
    at = ctx.type_ids(["contains"])
    first = ctx.walk_graph([], at, ["module"])
    assert ctx.walk_graph([], at, ("module",)) is first                 # cached on the context
    assert ctx.walk_graph([], at, ["class"]) is not first               # other kinds, another view
    other = _graph(4)
    monkeypatch.setattr(gctx, "WALK_COPY_EDGES", 10)
    view, copy = other.walk_graph([], at, ["module"])
    assert copy is None and isinstance(view, SkipTypes)
    seeds = [3, 8, 20]
    # past the cap the reference walk runs: the same dict
    assert other.walk(seeds, skip_at=(("contains",), ("module",))) == \
        ctx.walk(seeds, skip_at=(("contains",), ("module",)))


def test_the_dense_phase_would_differ():
    """Why the fast path never goes dense: the CSR walk's dense steps sum in another order, so
    on a graph this small its default (sparse_fraction=0.25) is not the rows walk bit for bit."""
    ctx = _graph(0)
    _, copy = ctx.walk_graph([], ctx.type_ids(["contains"]), ["module"])
    seeds, kw = np.arange(10), dict(restart=0.2, prune=0.0, topk=None, tol=1e-12, max_iter=60)
    ref = ctx.walk(seeds, reference=True, skip_at=(("contains",), ("module",)), **kw)
    s = rwr(copy, seeds, direction="both", **kw)
    dense = gctx._best(np.arange(len(s)), s, 200)
    assert dense.keys() == ref.keys() and dense != ref
    assert ctx.walk(seeds, skip_at=(("contains",), ("module",)), **kw) == ref


def test_skip_types_type_table_is_isin():
    """The view's type tests (a table gather) are np.isin's, for narrow and wide type arrays."""
    rng = np.random.default_rng(7)
    g = Graph.from_edges([0], [1], None, 3)
    for ids, t in (([1, 3], rng.integers(0, 6, 50).astype(np.uint8)),
                   ([2, 300], rng.integers(0, 400, 50).astype(np.uint16)),
                   ([5], rng.integers(0, 9, 50).astype(np.int64)),
                   ([70000], np.array([70000, 1, 69999], np.int64)),
                   ([], np.array([0, 1], np.uint8))):
        v = SkipTypes(g, ids)
        a = np.zeros(len(t), np.int64)
        assert np.array_equal(v.keep(a, a, t), ~np.isin(t, ids))


def test_stored_rows_walk_is_the_copied_walk(tmp_path):
    """A graph read as stored rows (StoredGraph, never copied) walks its cached view's rows: the
    same dict as the in-memory graph's copied walk."""
    from kgsearch.graph.stored import rows as adjacency
    from kgsearch.graph.stored.rows import StoredGraph, write_all
    from kgsearch.store.db import Index

    mem = _graph(5)
    ix = Index.open(tmp_path / "adj.db")
    try:
        with ix.transaction():
            write_all(ix, mem.graph, mem.node_ids)
        sg = StoredGraph(ix, mem.node_ids, mem.graph.m, TYPES, adjacency.stored_meta(ix)["id_dtype"])
        stored = GraphContext(ix, sg, mem.node_ids, None, None, mem.kinds, KINDS)
        view, copy = stored.walk_graph([], stored.type_ids(["contains"]), ["module"])
        assert copy is None and view.g is sg
        seeds, w = np.array([3, 9, 17, 40]), np.array([1.0, 0.3, 0.6, 0.9])
        for skip in SKIPS:
            for prune in (0.0, 5e-5):
                got = stored.walk(seeds, w, prune=prune, **skip)
                want = mem.walk(seeds, w, prune=prune, **skip)
                assert got == want and list(got) == list(want)
    finally:
        ix.close()
