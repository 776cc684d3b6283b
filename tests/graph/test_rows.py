"""Per-node adjacency rows (kgsearch/graph/stored/rows.py) against the in-memory CSR: the same
edges in the same order, the same walk, the same search results, and rows kept up to date by
an incremental run exactly as a full write makes them."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from kgsearch.graph.kernels.rows_walk import rwr_rows
from kgsearch.graph.stored import rows as adjacency
from kgsearch.graph.stored.rows import StoredGraph, write_all
from kgsearch.graph.context import load_context, load_graph
from kgsearch.graph.kernels.csr import Graph, GraphError
from kgsearch.graph.kernels.pagerank import rwr
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index

NAMES = ["calls", "links_to", "similar_text", "defines"]


def _graph(seed: int, n: int = 60, m: int = 260):
    """Parallel edges, self-loops, zero weights, isolated nodes, sparse node ids."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n - 5, m), rng.integers(0, n - 5, m)      # (the last 5: isolated)
    src[:10], dst[:10] = src[10:20], dst[10:20]                             # parallel edges
    dst[20:25] = src[20:25]                                                 # self-loops
    w = rng.random(m).astype(np.float32)
    w[25:30] = 0.0
    et = rng.integers(0, len(NAMES), m).astype(np.uint8)
    g = Graph.from_edges(src, dst, w, n, et, NAMES, weight_dtype=np.float32)
    ids = np.sort(rng.choice(10**6, n, replace=False)).astype(np.int64)
    return g, ids


def _stored(tmp: Path, g: Graph, ids: np.ndarray) -> tuple[Index, StoredGraph]:
    ix = Index.open(tmp / "adj.db")
    with ix.transaction():
        write_all(ix, g, ids)
    return ix, StoredGraph(ix, ids, g.m, NAMES, adjacency.stored_meta(ix)["id_dtype"])


def _ids(layout: str, ids: np.ndarray) -> np.ndarray:
    """Node ids: sparse (random), a range (a fresh index), or a range with gaps (nodes removed
    and added since): positions are looked up at ``id - first`` first, then searched."""
    n = len(ids)
    if layout == "range":
        return np.arange(7, 7 + n, dtype=np.int64)
    if layout == "gaps":
        return np.concatenate([np.arange(1, 31), np.arange(33, 40), np.arange(100, 100 + n - 37)]).astype(np.int64)
    return ids


@pytest.mark.parametrize("layout", ["sparse", "range", "gaps"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_neighbors_are_the_csr_neighbors_in_the_same_order(tmp_path, seed, layout):
    g, ids = _graph(seed)
    ix, sg = _stored(tmp_path, g, _ids(layout, ids))
    rng = np.random.default_rng(100 + seed)
    for nodes in ([3], [59], rng.integers(0, 60, 25), np.arange(60), [4, 4, 7, 4]):
        for types in (None, [1], [0, 2]):
            for direction in ("out", "in", "both"):
                want = g.neighbors(np.asarray(nodes), direction, types)
                got = sg.neighbors(np.asarray(nodes), direction, types)
                for a, b in zip(want, got):
                    assert a.dtype == b.dtype and np.array_equal(a, b), (nodes, direction, types)
            for want, got in zip(g.neighbors_out_in(np.asarray(nodes), types),
                                 sg.neighbors_out_in(np.asarray(nodes), types)):
                for a, b in zip(want, got):
                    assert a.dtype == b.dtype and np.array_equal(a, b), (nodes, types)
    ix.close()


def test_positions_of_ids_outside_the_graph_are_an_error(tmp_path):
    g, ids = _graph(0)
    ix, sg = _stored(tmp_path, g, _ids("gaps", ids))
    assert sg.positions(np.array([1, 30, 33, 100], dtype=np.int64)).tolist() == [0, 29, 30, 37]
    for bad in ([31], [0], [10**7]):
        with pytest.raises(GraphError, match="rebuild"):
            sg.positions(np.array(bad, dtype=np.int64))
    ix.close()


@pytest.mark.parametrize("seed", [0, 3])
def test_subgraph_is_the_csr_subgraph(tmp_path, seed):
    g, ids = _graph(seed)
    ix, sg = _stored(tmp_path, g, ids)
    for nodes in (np.array([1, 5, 9, 13, 40, 41, 58]), np.arange(0, 60, 2), np.array([30, 2, 17, 8])):
        a, b = g.subgraph(nodes).to_blobs(), sg.subgraph(nodes).to_blobs()
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), (nodes, k)
    ix.close()


@pytest.mark.parametrize("prune", [1e-5, 1e-3, 0.02])
@pytest.mark.parametrize("seed", [0, 1, 4])
def test_walk_over_rows_is_the_csr_walk(tmp_path, seed, prune):
    """The pruned walk over stored rows gives the CSR walk's scores bit for bit (both sum the
    same values in the same order), stopping at the same iteration."""
    g, ids = _graph(seed)
    ix, sg = _stored(tmp_path, g, ids)
    seeds, w = np.array([2, 7, 11, 30]), np.array([1.0, 0.5, 0.25, 0.9])
    for kw in ({}, {"topk": None, "tol": 1e-9, "max_iter": 60}):
        st_a, st_b = {}, {}
        want = rwr(g, seeds, weights=w, prune=prune, direction="both", sparse_fraction=10.0, stats=st_a, **kw)
        nodes, vals = rwr_rows(sg, seeds, weights=w, prune=prune, stats=st_b, **kw)
        got = np.zeros(g.n)
        got[nodes] = vals
        assert np.array_equal(want, got)
        assert st_a["iterations"] == st_b["iterations"] and st_a["stopped"] == st_b["stopped"]
    ix.close()


def _decoded(ix) -> dict[int, tuple[int, bytes]]:
    return {n: (k, bytes(d)) for n, k, d in ix.conn.execute("SELECT node, nout, data FROM graph_adj")}


def test_rows_read_only_what_is_asked(tmp_path):
    g, ids = _graph(5)
    ix, sg = _stored(tmp_path, g, ids)
    sg.neighbors([3, 8], "both")
    assert sg.rows_read == len({3, 8})
    sg.neighbors([3, 9], "out")
    assert sg.rows_read == 3                 # (row 3 came from the cache)
    ix.close()


# ---------------------------------------------------------------------- through the indexer
def _tree(root: Path) -> None:
    from indexer.test_incremental_property import _start

    _start(root)


ROWS = {"graph_adjacency_rows": 0}


def _index(db: Path, root: Path, settings=None) -> None:
    index_paths(db, [str(root)], IndexOptions(keep_going=True, settings=settings or {}))


def test_search_over_rows_equals_search_over_the_csr():
    """Every default channel, prose and code queries (the walk): the same keys and scores."""
    from indexer.test_incremental_property import _results, _same

    from kgsearch.query.channels import DEFAULT_CHANNELS

    with tempfile.TemporaryDirectory() as tmp:
        root, a, b = Path(tmp) / "root", Path(tmp) / "csr.db", Path(tmp) / "rows.db"
        _tree(root)
        _index(a, root)
        _index(b, root, ROWS)
        with Index.open(a, readonly=True) as ix:
            assert isinstance(load_context(ix).graph, Graph) and adjacency.stored_meta(ix) is None
        with Index.open(b, readonly=True) as ix:
            assert isinstance(load_context(ix).graph, StoredGraph)
        ra, rb = _results(a, list(DEFAULT_CHANNELS)), _results(b, list(DEFAULT_CHANNELS))
        # (within 1e-9, not bit for bit: on a graph this small the CSR walk switches to
        # whole-vector steps, which sum in another order; test_walk_over_rows_is_the_csr_walk
        # checks the sparse steps bit for bit)
        _same(rb, ra)
        assert [k for k, _ in ra["who calls helper_dune"]] == [k for k, _ in rb["who calls helper_dune"]]


@pytest.mark.parametrize("ops, spliced", [
    ([("edit", 0, 7, True), ("delete", 2, 0, True)], True),
    ([("add", 0, 31, False), ("edit", 4, 32, False), ("move", 1, 33, True)], True),
    ([("delete", 4, 0, False), ("add", 0, 41, True)], False),    # (over a quarter of the rows: full)
])
def test_incremental_rows_equal_a_full_write(ops, spliced):
    """After incremental runs the stored rows are exactly what writing every row from the
    stored graph gives (the rows of untouched nodes were kept, the others rewritten)."""
    from indexer.test_incremental_property import _apply

    with tempfile.TemporaryDirectory() as tmp:
        root, db = Path(tmp) / "root", Path(tmp) / "inc.db"
        _tree(root)
        _index(db, root, ROWS)
        how = []
        for op in ops:
            _apply(root, op)
            _index(db, root, ROWS)
            with Index.open(db, readonly=True) as ix:
                how.append(ix.derived("graph")["info"].get("adjacency_rows"))
        assert any(h.startswith("rewrote") for h in how) == spliced, how   # (the incremental path ran)
        with Index.open(db) as ix:
            info = how
            kept = _decoded(ix)
            assert kept
            g = load_graph(ix)
            ids = ix.get_array("graph.node_ids")
            with pytest.raises(_Undo):
                with ix.transaction():
                    write_all(ix, g, ids)
                    assert _decoded(ix) == kept, info
                    raise _Undo
            assert _decoded(ix) == kept


class _Undo(Exception):
    """Rolls a test's transaction back."""


def test_rows_follow_the_threshold_without_a_change(tmp_path):
    """An index stored before the rows (or under another threshold) gets them on its next
    run, even when no file changed; raising the threshold drops them."""
    root, db = tmp_path / "root", tmp_path / "x.db"
    _tree(root)
    _index(db, root)
    with Index.open(db) as ix:
        assert adjacency.stored_meta(ix) is None
        assert ix.conn.execute("SELECT count(*) FROM graph_adj").fetchone()[0] == 0
    _index(db, root, ROWS)
    with Index.open(db) as ix:
        meta = adjacency.stored_meta(ix)
        assert meta and meta["edges"] == load_graph(ix).m > 0
        assert ix.conn.execute("SELECT count(*) FROM graph_adj").fetchone()[0] > 0
    _index(db, root, {"graph_adjacency_rows": 10**9})
    with Index.open(db) as ix:
        assert adjacency.stored_meta(ix) is None
        assert ix.conn.execute("SELECT count(*) FROM graph_adj").fetchone()[0] == 0
        assert isinstance(load_context(ix).graph, Graph)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_update_rows_equals_write_all(tmp_path, seed):
    """Sources lose, gain and move edges, nodes go and come: the rows rewritten from the
    changed sources (and their old and new targets) equal a full write of the new graph."""
    g, ids = _graph(seed)
    rng = np.random.default_rng(seed)
    s, d, w, t = (np.asarray(a) for a in g.edges())
    src_id, dst_id = ids[s], ids[d]
    changed = rng.choice(ids[:55], 4, replace=False)                   # rows rewritten
    gone = np.array([x for x in rng.choice(ids[:55], 2, replace=False) if x not in changed])
    new_nodes = np.array([ids[-1] + 5, ids[-1] + 9])
    keep = ~np.isin(src_id, changed) & ~np.isin(src_id, gone) & ~np.isin(dst_id, gone)
    # (plus sources whose edges did not change: a reloaded file marks all its nodes dirty)
    dirty = np.unique(np.concatenate([changed, gone, src_id[np.isin(dst_id, gone)], new_nodes,
                                      rng.choice(ids[:55], 6, replace=False)]))
    ids2 = np.union1d(np.setdiff1d(ids, gone), new_nodes)
    add_src = np.concatenate([np.repeat(changed, 3), new_nodes])
    add_dst = rng.choice(ids2, len(add_src))
    src2 = np.concatenate([src_id[keep], add_src])
    dst2 = np.concatenate([dst_id[keep], add_dst])
    w2 = np.concatenate([w[keep], rng.random(len(add_src)).astype(np.float32)])
    t2 = np.concatenate([t[keep], rng.integers(0, len(NAMES), len(add_src)).astype(np.uint8)])
    g2 = Graph.from_edges(np.searchsorted(ids2, src2), np.searchsorted(ids2, dst2), w2, len(ids2), t2, NAMES,
                          weight_dtype=np.float32)
    a, b = Index.open(tmp_path / "a.db"), Index.open(tmp_path / "b.db")
    with a.transaction():
        write_all(a, g, ids)
        adjacency.update_rows(a, g2, ids2, ids, dirty)
    with b.transaction():
        write_all(b, g2, ids2)
    assert _decoded(a) == _decoded(b)
    assert adjacency.stored_meta(a) == adjacency.stored_meta(b)
    a.close()
    b.close()
