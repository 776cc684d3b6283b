"""kgsearch.graph.kernels.paths (k best paths, nearest path) against a brute-force enumeration and
networkx's shortest_simple_paths, on random graphs and on the demo index; kgsearch.explore's
find_paths and the ``path`` command."""
from __future__ import annotations

import json

import numpy as np
import pytest

from graph_oracles import nx_cost_graph, nx_k_paths, same_paths
from kgsearch.graph import Graph
from kgsearch.graph.kernels.paths import k_shortest_paths, nearest_path, search_layers
from kgsearch.graph.kernels.reference_queries import all_paths_ref, k_shortest_paths_ref


def _random_graph(rng, n_max=12, m_max=30, ties=False):
    n = int(rng.integers(2, n_max))
    m = int(rng.integers(0, m_max))
    s, d = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.choice([0.25, 0.5, 0.7, 1.0, 0.0], m) if ties else rng.random(m) + 0.05
    return Graph.from_edges(s, d, w, n, rng.integers(0, 3, m), ["a", "b", "c"])


@pytest.mark.parametrize("ties", [False, True])
def test_k_paths_equal_brute_force(ties):
    rng = np.random.default_rng(7 + ties)
    checked = 0
    for _ in range(150):
        g = _random_graph(rng, ties=ties)
        a, b = (int(x) for x in rng.integers(0, g.n, 2))
        if a == b:
            continue
        for direction in ("out", "in", "both"):
            for types, tset in ((None, None), (["a", "b"], {0, 1})):
                hops, k = int(rng.integers(1, 6)), int(rng.integers(1, 6))
                got = k_shortest_paths(g, a, b, k, hops, direction, types)
                want = k_shortest_paths_ref(g, a, b, k, hops, direction, tset)
                assert same_paths([(p.cost, p.nodes) for p in got], want) is None, (a, b, direction, types, hops, k)
                for p in got:
                    assert len(p.hops) <= hops and p.nodes[0] == a and p.nodes[-1] == b
                    assert len(set(p.nodes)) == len(p.nodes)                  # simple
                    assert sum(h.cost for h in p.hops) == pytest.approx(p.cost)
                    for h in p.hops:                                          # each hop is a real edge
                        src, dst = (h.u, h.v) if h.forward else (h.v, h.u)
                        assert direction == "both" or h.forward == (direction == "out")
                        nb = g.successors(src)
                        assert dst in nb.tolist()
                checked += 1
    assert checked > 300


def test_hops_name_the_cheapest_edge_and_its_direction():
    # 0 -a(0.5)-> 1, 1 -b(1.0)-> 0 (cheaper, backwards from 0), 1 -c(0.25)-> 2
    g = Graph.from_edges([0, 1, 1], [1, 0, 2], [0.5, 1.0, 0.25], 3, [0, 1, 2], ["a", "b", "c"])
    p = k_shortest_paths(g, 0, 2, 1, 3, "both")[0]
    assert p.nodes == (0, 1, 2)
    assert [(h.etype, h.forward, h.cost) for h in p.hops] == [(1, False, 1.0), (2, True, 4.0)]
    assert p.cost == 5.0
    assert k_shortest_paths(g, 0, 2, 1, 3, "out")[0].hops[0].etype == 0     # only along edges: a
    assert k_shortest_paths(g, 0, 2, 3, 1, "both") == []                    # needs 2 hops
    assert k_shortest_paths(g, 2, 0, 3, 3, "out") == []


def test_k_paths_equal_networkx():
    from conftest import need

    nx = need("networkx")
    rng = np.random.default_rng(11)
    for _ in range(60):
        g = _random_graph(rng, n_max=15, m_max=45)
        a, b = (int(x) for x in rng.integers(0, g.n, 2))
        if a == b:
            continue
        for direction in ("out", "both"):
            G = nx_cost_graph(nx, g, direction)
            want = nx_k_paths(nx, G, a, b, 5)
            got = k_shortest_paths(g, a, b, 5, g.n, direction)
            assert same_paths([(p.cost, p.nodes) for p in got], want) is None


def test_nearest_path_is_the_cheapest_from_any_source():
    rng = np.random.default_rng(3)
    for _ in range(100):
        g = _random_graph(rng)
        srcs = sorted({int(x) for x in rng.integers(0, g.n, 3)})
        t = int(rng.integers(0, g.n))
        got = nearest_path(g, srcs, t, 4, "both")
        best = min((all_paths_ref(g, s, t, 4, "both")[:1] for s in srcs), key=lambda x: x[0][0] if x else np.inf)
        if not best:
            assert got is None
        else:
            assert got is not None and got.cost == pytest.approx(best[0][0])
            assert got.nodes[0] in srcs and got.nodes[-1] == t


def test_layers_keep_the_hops_each_path_was_found_with():
    # a cheap 3-hop path and a dear 1-hop one: within 1 hop only the dear one exists
    g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3], [1.0, 1.0, 1.0, 0.1], 4)
    lay = search_layers(g, [0], max_hops=1, out_types=None, in_types=False)
    assert lay.path(3).nodes == (0, 3) and lay.cost[3] == pytest.approx(10.0)
    lay = search_layers(g, [0], max_hops=3, out_types=None, in_types=False)
    assert lay.path(3).nodes == (0, 1, 2, 3) and lay.cost[3] == 3.0


# ---------------------------------------------------------------------------- on an index
@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import IndexOptions, index_paths

    db = tmp_path_factory.mktemp("paths") / "demo.db"
    index_paths(db, [str(demo_dir())], IndexOptions(steps=("text", "neighbors", "graph")))
    return db


def test_demo_paths_equal_networkx(demo_db):
    from conftest import need
    from kgsearch.graph.context import load_graph
    from kgsearch.store.db import Index

    nx = need("networkx")
    with Index.open(demo_db, readonly=True) as ix:
        g = load_graph(ix)
    G = nx_cost_graph(nx, g, "both")
    rng = np.random.default_rng(5)
    pairs = [tuple(int(x) for x in rng.choice(g.n, 2, replace=False)) for _ in range(25)]
    found = 0
    for a, b in pairs:
        want = nx_k_paths(nx, G, a, b, 4)
        assert all(len(p) - 1 <= 12 for _, p in want)
        got = k_shortest_paths(g, a, b, 4, 12, "both")
        assert same_paths([(p.cost, p.nodes) for p in got], want) is None, (a, b)
        found += bool(got)
    assert found >= 20


def test_find_paths_on_the_demo(demo_db):
    from kgsearch.explore import find_paths
    from kgsearch.store.db import Index

    with Index.open(demo_db, readonly=True) as ix:
        res = find_paths(ix, "kg:git", "kg:markdown_vault", k=2)
        assert res["from"]["key"] == "kg:git" and res["to"]["key"] == "kg:markdown_vault"
        first = res["paths"][0]
        assert first["hops"] == 1 and first["steps"] == [{"from": "kg:git", "to": "kg:markdown_vault",
                                                          "type": "used_for", "direction": "out", "weight": 0.63}]
        assert first["length"] == pytest.approx(1 / 0.63, rel=1e-6)       # edge weight 0.7 x used_for 0.9
        assert [n["key"] for n in first["nodes"]] == ["kg:git", "kg:markdown_vault"]
        back = find_paths(ix, "kg:markdown_vault", "kg:git", k=1)["paths"][0]
        assert back["steps"][0]["direction"] == "in"                  # walked against the edge
        assert find_paths(ix, "kg:markdown_vault", "kg:git", direction="out", types=["used_for"])["paths"] == []


def test_path_errors_name_the_fix(demo_db):
    from kgsearch.errors import NotFound, UsageError
    from kgsearch.explore import find_paths
    from kgsearch.store.db import Index

    with Index.open(demo_db, readonly=True) as ix:
        with pytest.raises(UsageError, match="no edge type 'callz'.*it has: .*links_to"):
            find_paths(ix, "kg:git", "kg:bm25", types=["callz"])
        with pytest.raises(NotFound, match="no node 'nope'"):
            find_paths(ix, "nope", "kg:bm25")
        with pytest.raises(UsageError, match="--max-len"):
            find_paths(ix, "kg:git", "kg:bm25", max_len=0)
        with pytest.raises(UsageError, match="--k"):
            find_paths(ix, "kg:git", "kg:bm25", k=0)


def test_path_command(demo_db, capsys):
    from kgsearch.cli import main

    assert main(["path", "kg:git", "kg:markdown_vault", "--db", str(demo_db), "-k", "1"]) == 0
    text = capsys.readouterr().out
    assert "1. 1 hop, length 1.59: Git -[used_for]-> Markdown vault" in text
    assert "kg:git > kg:markdown_vault" in text
    assert main(["path", "kg:git", "kg:markdown_vault", "--db", str(demo_db), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["paths"][0]["length"] <= d["paths"][-1]["length"] and len(d["paths"]) == 3
    assert main(["path", "kg:markdown_vault", "kg:git", "--db", str(demo_db), "--direction", "out",
                 "--types", "used_for"]) == 5
    assert "no path of at most 6 hops over used_for (out only)" in capsys.readouterr().err
    assert main(["path", "kg:git", "kg:bm25", "--db", str(demo_db), "--types", "nope"]) == 2


def test_two_way_search_equals_the_one_way_search():
    """meet_path (from both ends) against search_layers (from the source) with banned nodes,
    banned first hops and a start cost, as Yen's spur searches use them."""
    from kgsearch.graph.kernels.meet import meet_path

    rng = np.random.default_rng(1)
    checked = 0
    for trial in range(1500):
        g = _random_graph(rng, n_max=10, m_max=25)
        s, t = (int(x) for x in rng.integers(0, g.n, 2))
        if s == t:
            continue
        hops = int(rng.integers(1, 6))
        banned = {int(x) for x in rng.integers(0, g.n, int(rng.integers(0, 3)))} - {s, t}
        first = {int(x) for x in rng.integers(0, g.n, int(rng.integers(0, 2)))}
        c0 = float(rng.choice([0.0, 1.5]))
        out_t, in_t = [(None, False), (False, None), (None, None)][trial % 3]
        want = search_layers(g, [s], [c0], hops, out_t, in_t, banned=banned, ban_first=first, target=t).path(t)
        got = meet_path(g, s, t, hops, out_t, in_t, banned=banned, ban_first=first, cost0=c0)
        assert (want is None) == (got is None)
        if got is not None:
            assert got.cost == pytest.approx(want.cost, rel=1e-12)
            assert len(got.hops) <= hops and len(set(got.nodes)) == len(got.nodes)
            assert not set(got.nodes) & banned and got.nodes[1] not in first
            checked += 1
    assert checked > 400


def test_graph_read_by_rows_gives_the_same_answers(demo_db, tmp_path):
    """An index whose graph is read per node (adjacency rows, as big indexes are) answers path
    and impact as the whole-CSR index does, and summarises the same communities."""
    from kgsearch.demo import demo_dir
    from kgsearch.explore import communities, find_paths, impact
    from kgsearch.graph.stored.rows import StoredGraph
    from kgsearch.graph.context import load_context
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    rows_db = tmp_path / "rows.db"
    index_paths(rows_db, [str(demo_dir())], IndexOptions(steps=("text", "neighbors", "graph"),
                                                         settings={"graph_adjacency_rows": 0}))
    with Index.open(rows_db, readonly=True) as a, Index.open(demo_db, readonly=True) as b:
        assert isinstance(load_context(a).graph, StoredGraph)
        for x, y in (("kg:git", "kg:bm25"), ("kg:syncthing", "md:vault/concepts/BM25")):
            assert find_paths(a, x, y, k=3) == find_paths(b, x, y, k=3)
        assert impact(a, "kg:sqlite", depth=3, tests=True) == impact(b, "kg:sqlite", depth=3, tests=True)
        ca, cb = communities(a), communities(b)      # (central nodes by the stored PageRank: rows hold no CSR)
        assert [(c["id"], c["size"]) for c in ca["communities"]] == [(c["id"], c["size"]) for c in cb["communities"]]
        assert all(c["label"] and len(c["terms"]) >= 3 for c in ca["communities"])
