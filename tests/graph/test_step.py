"""The graph derived step on a real index: blobs, weights, skipping, budgets, query-time context."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.config import EDGE_WEIGHTS
from kgsearch.graph import Graph, greedy_modularity, pagerank
from kgsearch.config import edge_weight
from kgsearch.graph import context as gctx, entity_keys as ek, graph_step as gi
from kgsearch.graph.kernels.communities import CommunityTimeout
from kgsearch.graph.kernels.placement import assign_new_nodes
from kgsearch.graph.stored import scores
from kgsearch.graph.stored.csr import read_blob
from kgsearch.graph.stored.read import read_edges
from kgsearch.types import ChangeSet

# ids are deliberately sparse (positions != ids)
NODES = [(10, "py:a", "function"), (11, "py:b", "function"), (15, "py:c", "class"),
         (20, "ent:graph search", "entity"), (21, "md:note", "note"), (30, "py:d", "method")]
EDGES = [(10, 11, "calls", 1.0), (10, 15, "calls", 0.5), (15, 30, "contains", 1.0),
         (21, 20, "mentions", 1.0), (11, 10, "no_such_type", 2.0), (30, None, "calls", 1.0)]


def fill(ix):
    with ix.transaction():
        for nid, key, kind in NODES:
            ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (?,?,?,?)",
                            (nid, key, kind, key.split(":")[1]))
        for s, d, t, w in EDGES:
            ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type, weight) VALUES (?,?,?,?,?)",
                            (s, d, "x", t, w))
        ix.set_meta("generation", 1)


def test_update_builds_blobs_and_context(ix):
    fill(ix)
    info = gi.update(ix, ChangeSet(generation=1, full=True), {})
    assert info["rebuilt"] and info["nodes"] == 6 and info["edges"] == 5     # unresolved edge left out
    assert ix.derived("graph")["generation"] == 1
    ctx = gctx.load_context(ix)
    g = ctx.graph
    assert ctx.node_ids.tolist() == [10, 11, 15, 20, 21, 30]
    assert ctx.positions([15, 99, 30]).tolist() == [2, -1, 5]
    # weight = edge weight x type weight (unknown types get the default)
    s, d, w, t = g.edges()
    got = {(int(ctx.node_ids[a]), int(ctx.node_ids[b]), g.etype_names[c]): float(x)
           for a, b, x, c in zip(s, d, w, t)}
    assert got[(10, 15, "calls")] == pytest.approx(0.5 * EDGE_WEIGHTS["calls"])
    assert got[(15, 30, "contains")] == pytest.approx(EDGE_WEIGHTS["contains"])
    assert got[(11, 10, "no_such_type")] == pytest.approx(2.0 * 0.3)
    # PageRank and communities are stored by position and exposed by node id
    want = pagerank(g, tol=1e-12, max_iter=1000)
    pr = gctx.pagerank_scores(ix)
    assert len(pr) == 31 and pr[12] == 0
    assert np.allclose(pr[ctx.node_ids], want, atol=1e-6)
    labels = gctx.community_labels(ix)
    assert labels[12] == -1 and np.array_equal(labels[ctx.node_ids], greedy_modularity(g))
    assert ctx.is_code_query([10, 11, 15]) and not ctx.is_code_query([20, 21])
    assert ctx.type_ids(["calls", "nope"]) == [g.etype_names.index("calls")]


def test_unchanged_graph_is_not_rebuilt_but_weight_table_change_is(ix):
    fill(ix)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    info = gi.update(ix, ChangeSet(generation=2, modified=[10]), {})
    assert info["rebuilt"] is False
    info = gi.update(ix, ChangeSet(generation=3, modified=[10]), {"edge_weights": {"calls": 0.1}})
    assert info["rebuilt"] is True
    g = gctx.load_graph(ix)
    s, d, w, t = g.edges()
    calls = g.etype_names.index("calls")
    assert np.allclose(w[(t == calls)], [0.1, 0.05])


def test_community_budget_skips_and_labels_become_none(ix):
    fill(ix)
    info = gi.update(ix, ChangeSet(generation=1, full=True), {"graph_communities_max_pairs": 1})
    assert info["communities"].startswith("skipped")
    assert gctx.community_labels(ix) is None
    assert gctx.load_context(ix).communities_of([10]) is None


def test_timeout_is_remembered_and_previous_labels_are_kept(ix, monkeypatch):
    fill(ix)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    before = gctx.community_labels(ix).copy()
    calls = []

    def too_slow(g, **kw):
        calls.append(1)
        raise CommunityTimeout("slow")

    monkeypatch.setattr(scores, "greedy_modularity", too_slow)
    with ix.transaction():
        ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (40, 'py:e', 'function', 'e')")
        ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type) VALUES (40, 10, 'x', 'calls')")
    info = gi.update(ix, ChangeSet(generation=2, added=[40], edges_changed=True), {})
    assert "took longer" in info["communities"] and "kept the previous labels of 6" in info["communities"]
    after = gctx.community_labels(ix)
    assert after[40] == -1 and np.array_equal(after[[10, 11, 15, 20, 21, 30]], before[[10, 11, 15, 20, 21, 30]])
    info = gi.update(ix, ChangeSet(generation=3, edges_changed=True), {})
    assert "ran out of" in info["communities"] and len(calls) == 1          # not retried
    gi.update(ix, ChangeSet(generation=4, edges_changed=True), {"graph_communities_seconds": 500})
    assert len(calls) == 2                                                  # bigger budget: retried


def test_no_graph_yet_and_empty_graph(ix):
    assert gctx.load_context(ix) is None and gctx.load_graph(ix) is None and gctx.pagerank_scores(ix) is None
    info = gi.update(ix, ChangeSet(generation=1, full=True), {})
    assert info["nodes"] == 0
    assert gctx.load_graph(ix).n == 0


def test_walk_hits_and_entity_channels(ix):
    fill(ix)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    ctx = gctx.load_context(ix)
    w = ctx.walk(ctx.positions([10]), [1.0])
    assert max(w, key=w.get) == 0 and set(w) <= set(range(6))
    assert ctx.match_entities("how does Graph Search work").tolist() == ctx.positions([20]).tolist()
    local, glob = ctx.entity_channels("graph search", 10)
    assert local == {21: 1.0}
    assert 21 in glob and 20 not in glob
    pytest.importorskip("kgsearch.graph.kernels.proximity")
    pos = ctx.positions([10, 11, 15, 30])
    adj = ctx.hits_adjust(pos, pos[:1], np.array([1.0, 0.5, 0.5, 0.2]))
    assert adj.shape == (4,) and np.isfinite(adj).all()


def test_indexer_runs_the_graph_step(tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "a.md").write_text("# A\n\nSee [[b]] about graph search.\n")
    (tmp_path / "kb" / "b.md").write_text("# B\n\nLinks back to [[a]].\n")
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(tmp_path / "kb")], IndexOptions(settings={"model": "none"}, steps=("graph",)))
    assert rep.steps["graph"]["rebuilt"]
    with Index.open(db, readonly=True) as ix:
        g = gctx.load_graph(ix)
        assert isinstance(g, Graph) and g.m >= 2


# ---------------------------------------------------------------------- incremental communities
def test_assign_new_nodes_hand_computed():
    # 0-1 labelled 0, 2-3 labelled 1; 4 links to 0 (w 1) and 2 (w 2) -> label 1; 5 hangs off 4
    # (placed in the second round); 6 ties between 0 and 2 (w 1 each) -> smallest label 0;
    # 7-8 link only to each other -> one new community (2); 9 is isolated -> another (3)
    src = [0, 2, 4, 4, 5, 6, 6, 7]
    dst = [1, 3, 0, 2, 4, 0, 2, 8]
    w = [1, 1, 1, 2, 1, 1, 1, 1]
    g = Graph.from_edges(src, dst, w, num_nodes=10)
    labels = np.array([0, 0, 1, 1, -1, -1, -1, -1, -1, -1])
    got, placed = assign_new_nodes(g, labels)
    assert placed == 6
    assert got.tolist() == [0, 0, 1, 1, 1, 1, 0, 2, 2, 3]
    assert labels[4] == -1                                   # the input is not modified
    same, placed = assign_new_nodes(g, got)
    assert placed == 0 and same.tolist() == got.tolist()


def _two_cliques(ix, size=30):
    with ix.transaction():
        for i in range(2 * size):
            ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (?,?,?,?)",
                            (i + 1, f"py:n{i}", "function", f"n{i}"))
        for block in (0, size):
            for a in range(block, block + size):
                for b in range(a + 1, block + size):
                    ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type) VALUES (?,?,?,?)",
                                    (a + 1, b + 1, "x", "calls"))
        ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type) VALUES (1, ?, 'x', 'calls')", (size + 1,))


def _add(ix, nid, links):
    with ix.transaction():
        ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (?,?,?,?)", (nid, f"py:x{nid}", "function", "x"))
        for d in links:
            ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type) VALUES (?,?,?,?)", (nid, d, "x", "calls"))


def test_few_changes_keep_communities_and_place_new_nodes(ix, monkeypatch):
    _two_cliques(ix)
    info = gi.update(ix, ChangeSet(generation=1, full=True), {})
    assert info["communities"] == 2
    before = gctx.community_labels(ix).copy()
    a, b = before[1], before[31]
    assert a != b

    full_runs = []
    real = scores.greedy_modularity
    monkeypatch.setattr(scores, "greedy_modularity", lambda g, **kw: full_runs.append(1) or real(g, **kw))
    _add(ix, 100, [31, 32, 2])                                # two links into the second clique
    info = gi.update(ix, ChangeSet(generation=2, added=[100], edges_changed=True), {})
    assert "placed 1 new nodes" in info["communities"] and not full_runs
    labels = gctx.community_labels(ix)
    assert labels[100] == b and np.array_equal(labels[1:61], before[1:61])
    # the changes add up: 2 % of the 60 nodes at the last full run is 1.2 nodes -> full CNM again
    _add(ix, 101, [100])
    info = gi.update(ix, ChangeSet(generation=3, added=[101], edges_changed=True), {})
    assert full_runs == [1] and isinstance(info["communities"], int)
    assert np.array_equal(gctx.community_labels(ix)[gctx.load_context(ix).node_ids], real(gctx.load_graph(ix)))
    # a full run (kgsearch index --full) always recomputes
    _add(ix, 102, [1])
    gi.update(ix, ChangeSet(generation=4, added=[102], edges_changed=True, full=True),
              {"graph_communities_drift": 1.0})
    assert full_runs == [1, 1]
    # a larger drift budget keeps placing
    _add(ix, 103, [2])
    info = gi.update(ix, ChangeSet(generation=5, added=[103], edges_changed=True), {"graph_communities_drift": 1.0})
    assert full_runs == [1, 1] and "placed 1 new nodes" in info["communities"]
    assert gctx.community_labels(ix)[103] == gctx.community_labels(ix)[2]


def test_entity_names_matched_in_sql_equal_the_resident_dict(ix, monkeypatch):
    """Past ENTITY_DICT_MAX entity/tag nodes the names are looked up through the key index;
    every query matches exactly what the dict matches (prefixes, duplicates, nodes outside
    the graph, names with capitals falling back to the dict)."""
    nodes = [(1, "entity:graph search", "entity"), (2, "tag:graph search", "tag"), (3, "tag:python", "tag"),
             (4, "kg:f0:abc", "entity"), (5, "plain", "entity"), (6, "entity:rust", "entity"),
             (7, "md:note", "note"), (8, "entity:orphan", "entity"), (9, "entity:python", "entity")]
    with ix.transaction():
        for nid, key, kind in nodes:
            ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (?,?,?,?)", (nid, key, kind, key))
        for s in (1, 2, 3, 4, 5, 6, 9):
            ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type, weight) VALUES (?,?,?,?,?)",
                            (7, s, "x", "mentions", 1.0))
        ix.set_meta("generation", 1)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    assert ix.meta_json(ek.META) == {"n": 8, "prefixes": ["", "entity", "kg", "tag"], "mixed_case": False}
    ix.conn.execute("DELETE FROM nodes WHERE id = 6")         # in the graph blobs, gone from nodes
    ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (10, 'entity:late', 'entity', 'x')")
    ek.update(ix, ChangeSet(generation=2, added=[10], removed=[6]))     # as the graph step does
    queries = ["graph search in python", "Python's plain rust", "f0:abc orphan late", "nothing here",
               "graph graph search search python plain"]

    def run(limit, meta=True):
        monkeypatch.setattr(gctx, "ENTITY_DICT_MAX", limit)
        saved = ix.meta_json(ek.META)
        if not meta:                                  # an index stored before the meta: asked in SQL
            ix.set_meta_json(ek.META, None)
        try:
            ctx = gctx._load(ix)
            return [ctx.match_entities(q).tolist() for q in queries], ctx._entity_prefixes()
        finally:
            ix.set_meta_json(ek.META, saved)

    ref, pref = run(10**9)
    assert pref is None and ref[0] == gctx._load(ix).positions([2, 3]).tolist()    # the tag wins the tie
    for meta in (True, False):
        got, pref = run(0, meta)
        assert pref == ["", ":", "entity:", "kg:", "tag:"]      # 'plain' has no ':' (its key is its name)
        assert got == ref
    ix.conn.execute("UPDATE nodes SET key = 'entity:Rust2' WHERE id = 9")          # a capital: the dict again
    ek.update(ix, ChangeSet(generation=3, modified=[9]))
    assert ix.meta_json(ek.META)["mixed_case"] is True
    for meta in (True, False):
        assert run(0, meta)[1] is None


def test_entity_keys_kept_up_to_date_equal_a_full_count(ix):
    """The meta an incremental run patches (new prefixes, a capital, the count) equals the one
    read from every node; removed nodes leave their prefix (a superset only costs lookups)."""
    fill(ix)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    assert ix.meta_json(ek.META) == ek.update(ix, None)
    before = ix.meta_json(ek.META)
    with ix.transaction():
        ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (901, 'wiki:Paris', 'entity', 'x')")
        ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (902, 'tag:new', 'tag', 'x')")
        ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (903, 'zz:not-an-entity', 'note', 'x')")
    got = ek.update(ix, ChangeSet(generation=2, added=[901, 902, 903]))
    assert got == ek.update(ix, None)
    assert got["n"] == before["n"] + 2 and "wiki" in got["prefixes"] and "zz" not in got["prefixes"]
    assert got["mixed_case"] is True
    ix.set_meta_json(ek.META, {"n": 10**6, "prefixes": ["only"], "mixed_case": False})
    assert gctx._load(ix)._entity_prefixes() == ["only:"]         # the query side reads the meta


def test_an_index_stored_before_the_entity_meta_gets_it_from_its_next_run(ix):
    fill(ix)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    ix.set_meta_json(ek.META, None)
    info = gi.update(ix, ChangeSet(generation=2), {})
    assert info["rebuilt"] is False and ix.meta_json(ek.META) == ek.update(ix, None)


def test_graph_blobs_read_in_pieces_equal_get_array(ix):
    fill(ix)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    names = [r[0] for r in ix.conn.execute("SELECT name FROM blobs WHERE name LIKE 'graph.%'")]
    assert len(names) >= 8
    for name in names:
        ref = ix.get_array(name)
        for chunk in (3, 1 << 20):                 # pieces that split values, and whole
            got = read_blob(ix, name, chunk)
            assert got.dtype == ref.dtype and got.shape == ref.shape and np.array_equal(got, ref)
            assert not got.flags.writeable
    assert read_blob(ix, "graph.nothing") is None


def _ints(text):
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)


def _floats(text):
    return np.fromstring(text, dtype=np.float64, sep=",") if text else np.zeros(0, dtype=np.float64)


def _read_edges_reference(conn, ids):
    """The reader read_edges replaced: one group_concat over the table, a string per edge type."""
    s_txt, d_txt, w_txt, t_txt = conn.execute(
        "SELECT group_concat(src), group_concat(dst), group_concat(weight), group_concat(type, char(31)) "
        "FROM edges WHERE dst IS NOT NULL").fetchone()
    src, dst, w = _ints(s_txt), _ints(d_txt), _floats(w_txt)
    types = t_txt.split("\x1f") if t_txt else []
    type_of = {t: i for i, t in enumerate(dict.fromkeys(types))}
    et = np.array([type_of[t] for t in types], dtype=np.int64)
    return np.searchsorted(ids, src), np.searchsorted(ids, dst), w, et, list(type_of)


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 20])
def test_read_edges_in_ranges_equals_one_read(ix, chunk):
    """Edges read per id range and per type come back in edge id order with types numbered in
    first-seen order: exactly the one-query reader's arrays, for any range size (types that
    first appear in a later range, interleaved types, unresolved edges, deleted ids)."""
    fill(ix)
    with ix.transaction():
        for s, d, t, w in [(21, 10, "mentions", 0.25), (15, 11, "calls", 1.5), (11, 21, "links_to", 1.0),
                           (10, 21, "mentions", 3.0), (30, 15, "calls", 0.75)]:
            ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type, weight) VALUES (?,?,?,?,?)",
                            (s, d, "x", t, w))
        ix.conn.execute("DELETE FROM edges WHERE id = 3")
    ids = np.array(sorted(n for n, _, _ in NODES), dtype=np.int64)
    factor = {"calls": 2.0, "mentions": 0.5, "links_to": 1.0, "contains": 0.0, "no_such_type": -1.0}
    got = read_edges(ix.conn, ids, factor, chunk=chunk)
    want = _read_edges_reference(ix.conn, ids)
    tw = np.array([edge_weight(t, factor) for t in want[4]])
    weights = np.maximum(want[2] * tw[want[3]], 0.0).astype(np.float32)   # as the graph stores them
    for a, b in zip(got[:4], (want[0], want[1], weights, want[3])):
        assert np.array_equal(a, b)
    assert got[2].dtype == np.float32 and got[0].dtype == np.int32 and got[3].dtype == np.uint8
    assert got[4] == want[4] and len(got[0]) == 9 and (got[2] == 0).sum() == 1      # no_such_type: -1 -> 0


def test_read_edges_of_an_empty_graph(ix):
    s, d, w, et, names = read_edges(ix.conn, np.zeros(0, dtype=np.int64), {})
    assert len(s) == len(d) == len(w) == len(et) == 0 and names == []


@pytest.mark.parametrize("node_ids", [[10, 11, 15, 20, 21, 30], list(range(1, 41)),
                                      list(range(5, 25)) + [40, 41, 90], [7]])
def test_positions_is_the_binary_search(node_ids):
    """GraphContext.positions (a range guess first, then a search of the misses) against the
    plain binary search it replaced: ranges, gaps, a single node; ids below, inside gaps,
    past the end, repeated and negative give -1 or their position."""
    ids = np.array(node_ids, dtype=np.int64)
    ctx = gctx.GraphContext(None, Graph.from_edges([], [], [], len(ids)), ids, None, None, None, [])
    ask = np.array([-3, 0, 1, 4, 5, 6, 7, 10, 12, 15, 15, 21, 24, 25, 30, 39, 40, 41, 42, 90, 91, 10**9],
                   dtype=np.int64)
    pos = np.searchsorted(ids, ask)
    pos[pos >= len(ids)] = 0
    ref = np.where(ids[pos] == ask, pos, -1)
    assert ctx.positions(ask).tolist() == ref.tolist()
    assert ctx.positions([]).tolist() == []


def test_walk_skips_edge_types_and_module_contains(ix):
    """GraphContext.walk(skip=..., skip_at=...): the walk of the graph without those edges
    (research switches of the code walk, Tuning.walk_skip / walk_skip_module_contains)."""
    from kgsearch.graph.kernels.pagerank import rwr

    fill(ix)
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    ctx = gctx.load_context(ix)
    g = ctx.graph
    s, d, w, t = g.edges()
    contains = g.etype_names.index("contains")

    def without(keep):
        k = np.flatnonzero(keep)
        return Graph.from_edges(s[k], d[k], weight=w[k], num_nodes=g.n, etype=t[k], etype_names=g.etype_names)

    def as_vec(walk):
        v = np.zeros(g.n)
        v[list(walk)] = list(walk.values())
        return v

    seeds = ctx.positions([10, 15])
    kw = dict(restart=0.2, prune=0, tol=1e-12, max_iter=500, topk=None)
    want = rwr(without(t != contains), seeds, direction="both", **kw)
    assert np.allclose(as_vec(ctx.walk(seeds, skip=("contains",), **kw)), want)
    assert ctx.walk(seeds, skip=("contains",), **kw).get(int(ctx.positions([30])[0]), 0.0) == 0.0
    # contains left out only at class nodes here (15 -> 30 is a class's member)
    want = rwr(without(t != contains), seeds, direction="both", **kw)
    assert np.allclose(as_vec(ctx.walk(seeds, skip_at=(("contains",), ("class",)), **kw)), want)
    # ... and kept where no end is of the kind
    want = rwr(g, seeds, direction="both", **kw)
    assert np.allclose(as_vec(ctx.walk(seeds, skip_at=(("contains",), ("module",)), **kw)), want)


def test_the_walks_copy_follows_a_reindex(ix):
    """The copy the skipping walk reads (GraphContext.walk_graph) belongs to one index generation:
    after a reindex that adds edges the walk reads them (the reference walk, over rows of the
    new graph, agrees bit for bit), and the old context's copy is not reused."""
    fill(ix)
    with ix.transaction():
        ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (5, 'py:m', 'module', 'm')")
        for dst in (10, 11, 15):
            ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type, weight) VALUES (5, ?, 'x', 'contains', 1.0)",
                            (dst,))
    gi.update(ix, ChangeSet(generation=1, full=True), {})
    kw = dict(skip_at=(("contains",), ("module",)), prune=0, restart=0.2)
    ctx = gctx.load_context(ix)
    at = ctx.type_ids(["contains"])
    m1 = ctx.walk_graph([], at, ["module"])[1].m
    assert m1 == ctx.graph.m - 3                             # the module's contains edges left out
    seeds = ctx.positions([10, 30])
    one = ctx.walk(seeds, **kw)
    assert one == ctx.walk(seeds, reference=True, **kw)
    assert 5 not in ctx.ids_of(list(one)).tolist()           # the module is not reached
    with ix.transaction():
        ix.conn.execute("INSERT INTO nodes(id, key, kind, name) VALUES (40, 'py:e', 'function', 'e')")
        ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type) VALUES (40, 30, 'x', 'calls')")
        ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type) VALUES (5, 40, 'x', 'contains')")
        ix.conn.execute("INSERT INTO edges(src, dst, dst_name, type) VALUES (40, 5, 'x', 'imports')")
        ix.set_meta("generation", 2)
    gi.update(ix, ChangeSet(generation=2, added=[40], edges_changed=True), {})
    new = gctx.load_context(ix)
    assert new is not ctx
    assert new.walk_graph([], new.type_ids(["contains"]), ["module"])[1].m == m1 + 2     # + calls and imports, not contains
    seeds = new.positions([10, 30])
    two = new.walk(seeds, **kw)
    assert two == new.walk(seeds, reference=True, **kw)
    assert {40, 5} <= set(new.ids_of(list(two)).tolist())  # reached through the new edges
