"""kgsearch.graph.kernels.impact (dependents) against a pure-Python reference and networkx breadth-first
search; kgsearch.explore's impact with test scope on a small Python tree; the ``impact``
command and ``context --diff --impact``."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from graph_oracles import nx_dependents
from kgsearch.graph import Graph
from kgsearch.graph.kernels.impact import DEPENDENCY_TYPES, dependents, descendants, type_sides
from kgsearch.graph.kernels.reference_queries import dependents_ref


def test_dependents_equal_the_reference_and_networkx():
    from conftest import need

    nx = need("networkx")
    rng = np.random.default_rng(2)
    for _ in range(400):
        n = int(rng.integers(1, 15))
        m = int(rng.integers(0, 40))
        s, d = rng.integers(0, n, m), rng.integers(0, n, m)
        w = rng.choice([0.0, 0.3, 0.5, 1.0], m) if _ % 2 else rng.random(m) + 0.01
        g = Graph.from_edges(s, d, w, n, rng.integers(0, 3, m), ["a", "b", "c"])
        starts = sorted({int(x) for x in rng.integers(0, n, int(rng.integers(1, 3)))})
        back, fwd = [0, 1], [2] if _ % 3 else []
        free = [0] if _ % 4 >= 2 else []           # type 0 as containment: followed backwards, no hop
        depth = int(rng.integers(0, 5))
        r = dependents(g, starts, np.array(back), np.array(fwd, dtype=np.int64), depth, free=free)
        want = dependents_ref(g, starts, set(back), set(fwd), depth, set(free))
        got = {int(v): (int(r.hops[v]), float(r.cost[v])) for v in np.flatnonzero(r.hops >= 0)}
        assert got.keys() == want.keys()
        for v, (h, c) in want.items():
            assert got[v][0] == h and got[v][1] == pytest.approx(c)
        assert {v: h for v, (h, _) in got.items()} == nx_dependents(nx, g, starts, set(back), set(fwd), depth, set(free))
        for v in r.nodes(include_start=True):      # the chain back is made of real dependency edges
            chain = r.chain(int(v))
            assert r.hops[chain[-1]] == 0 and chain[-1] in starts
            hopped = sum(1 for x in chain[:-1] if r.etype[x] not in free)
            assert hopped == r.hops[v]
            for a, b in zip(chain, chain[1:]):        # a's parent is b over an edge of a's type
                src, dst = (b, a) if r.forward[a] else (a, b)
                assert any(int(t) == r.etype[a] for t in _types_between(g, src, dst))


def _types_between(g, src, dst):
    s, d, w, t = g.edges()
    return t[(s == src) & (d == dst) & (np.asarray(w) > 0)].tolist()


def test_sides_and_contains():
    # module 0 contains f 1; 2 calls 1; 3 imports 0; 1 feeds_into 4; 5 contains 2
    names = ["contains", "calls", "imports", "feeds_into"]
    g = Graph.from_edges([0, 2, 3, 1, 5], [1, 1, 0, 4, 2], None, 6, [0, 1, 2, 3, 0], names)
    assert descendants(g, [0], 0).tolist() == [0, 1]
    back, fwd = type_sides(names)
    assert sorted(names[i] for i in back) == ["calls", "contains", "imports"] and [names[i] for i in fwd] == ["feeds_into"]
    r = dependents(g, descendants(g, [0], 0), back, fwd, 3)
    assert {int(v): int(r.hops[v]) for v in r.nodes()} == {2: 1, 3: 1, 4: 1, 5: 2}   # 5 holds a caller
    assert r.chain(5) == [5, 2, 1]
    # containment free: 5 holds the caller 2, so it is as near (hop 1), at 1/w more cost
    r = dependents(g, descendants(g, [1], 0), back, fwd, 3, free=[0])
    assert {int(v): int(r.hops[v]) for v in r.nodes(include_start=True)} == {1: 0, 0: 0, 2: 1, 3: 1, 4: 1, 5: 1}
    assert r.cost[0] == 1.0 and r.cost[5] == 2.0 and r.chain(5) == [5, 2, 1] and r.chain(3) == [3, 0, 1]
    assert r.nodes().tolist() == [2, 4, 3, 5]       # by hops, then cost: 3 and 5 hold or import at 2.0
    r = dependents(g, [1], back, fwd, 0, free=[0])   # depth 0: the change and what holds it
    assert r.nodes(include_start=True).tolist() == [1, 0]
    back, fwd = type_sides(names, ["calls"])
    assert [names[i] for i in back] == ["calls"] and not len(fwd)
    back, fwd = type_sides(names, {"feeds_into": "in"})
    assert [names[i] for i in back] == ["feeds_into"]
    assert DEPENDENCY_TYPES["calls"] == "in" and DEPENDENCY_TYPES["feeds_into"] == "out"


def _tree(root):
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": """
            def parse(text):
                return text.split()

            class Reader:
                def read(self, text):
                    return parse(text)
            """,
        "pkg/cli.py": """
            from pkg.core import Reader

            def main(argv):
                return Reader().read(" ".join(argv))
            """,
        "pkg/other.py": """
            def unrelated():
                return 1
            """,
        "tests/test_core.py": """
            from pkg.core import parse

            def test_parse():
                assert parse("a b") == ["a", "b"]

            def test_parse_empty():
                assert parse("") == []
            """,
        "tests/test_cli.py": """
            from pkg.cli import main

            def test_main():
                assert main(["a"]) == ["a"]
            """,
        "tests/test_names.py": """
            def test_mentions_reader_by_name(obj):
                assert obj.Reader is not None
            """,
        "tests/test_other.py": """
            from pkg.other import unrelated

            def test_unrelated():
                assert unrelated() == 1
            """,
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def code_db(tmp_path_factory):
    from kgsearch.indexer import IndexOptions, index_paths

    base = tmp_path_factory.mktemp("impact")
    root = _tree(base / "proj")
    db = base / "proj.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    return db, root


def test_impact_of_a_function_ranks_by_distance(code_db):
    from kgsearch.explore import impact
    from kgsearch.store.db import Index

    db, _ = code_db
    with Index.open(db, readonly=True) as ix:
        res = impact(ix, "pkg.core.parse", depth=3)
    got = {d["key"]: d["distance"] for d in res["dependents"]}
    assert got["py:pkg.core.Reader.read"] == 1 and got["py:tests.test_core.test_parse"] == 1
    # containment is free: the module holding parse is part of the change (distance 0, not listed),
    # the class holding a caller is as near as the caller, after it (its cost adds the contains edge)
    assert "py:pkg.core" not in got and res["start"] == 1 and res["free"] == ["contains"]
    assert got["py:pkg.core.Reader"] == 1 and [d["key"] for d in res["dependents"]].index("py:pkg.core.Reader") == 4
    # main calls Reader (whose read calls parse), test_main calls main: reached at 3 (at 4, past
    # --depth 3, while a class and a module each counted a hop)
    assert got["py:pkg.cli.main"] == 2 and got["py:tests.test_cli.test_main"] == 3
    assert "py:pkg.other.unrelated" not in got and "py:tests.test_other.test_unrelated" not in got
    dist = [d["distance"] for d in res["dependents"]]
    assert dist == sorted(dist)
    via = next(d["via"] for d in res["dependents"] if d["key"] == "py:pkg.core.Reader.read")
    assert via == {"type": "calls", "direction": "out", "key": "py:pkg.core.parse"}


def test_impact_tests_of_a_file(code_db):
    from kgsearch.explore import impact
    from kgsearch.store.db import Index

    db, root = code_db
    with Index.open(db, readonly=True) as ix:
        res = impact(ix, str(root / "pkg" / "core.py"), tests=True)
    assert res["of"]["file"] == str(root / "pkg" / "core.py")
    ranked = [t["relpath"] for t in res["tests"]]
    # test_core calls parse twice at distance 1 and leads all four rankings; test_names only names
    # Reader, which puts it second in the names and the text rankings; test_cli reaches main at 2
    # (second in the reached ranking only). The walk reached 2 of the 4 test files, so the reached
    # ranking weighs 1 - 2/4 = .5: RRF sums .5/61 + 3/61, 2/62, .5/62
    assert ranked == ["tests/test_core.py", "tests/test_names.py", "tests/test_cli.py"]
    assert [t["score"] for t in res["tests"]] == [round(3.5 / 61, 6), round(2 / 62, 6), round(0.5 / 62, 6)]
    assert "tests/test_other.py" not in ranked
    names = next(t for t in res["tests"] if t["relpath"] == "tests/test_names.py")
    assert names["reached"] == 0 and names["names"] >= 1 and names["rank_reached"] is None


def test_impact_tests_stay_in_the_changed_files_roots(tmp_path, capsys):
    """A JS library indexed beside a Go one: `impact lib/util.js --tests` listed the Go root's
    test files (they read like it) under "tests that reach it", each with a blank reason line."""
    from kgsearch.cli import main
    from kgsearch.explore import impact
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    js, go = tmp_path / "jslib", tmp_path / "golib"
    (js / "lib").mkdir(parents=True)
    (js / "lib" / "util.js").write_text("function parseFlags(argv) {\n  return argv.filter(a => a.startsWith('--'));\n}\n"
                                        "module.exports = { parseFlags };\n")
    (js / "test").mkdir()
    (js / "test" / "flags.test.js").write_text("const { parseFlags } = require('../lib/util');\n"
                                               "test('flags', () => { parseFlags(['--a']); });\n")
    (js / "test" / "cli.test.js").write_text("// argv flags: filter what startsWith --\ntest('cli', () => {});\n")
    (go / "flags").mkdir(parents=True)
    (go / "flags" / "flags.go").write_text("package flags\n\nfunc ParseArgv(argv []string) []string { return argv }\n")
    (go / "flags" / "flags_test.go").write_text("package flags\n\nimport \"testing\"\n\n// parse flags argv startsWith filter\n"
                                                "func TestParseFlagsArgv(t *testing.T) { ParseArgv([]string{\"--a\"}) }\n")
    db = tmp_path / "two.db"
    index_paths(db, [str(js), str(go)], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        res = impact(ix, str(js / "lib" / "util.js"), tests=True)
    assert [t["relpath"] for t in res["tests"]] == ["test/flags.test.js", "test/cli.test.js"]
    with Index.open(db, readonly=True) as ix:       # the Go change finds its own test
        res = impact(ix, str(go / "flags" / "flags.go"), tests=True)
    assert [t["relpath"] for t in res["tests"]] == ["flags/flags_test.go"]
    assert main(["--db", str(db), "impact", str(js / "lib" / "util.js"), "--tests"]) == 0
    out = capsys.readouterr().out.splitlines()
    reasons = [out[out.index(f"  {i}. {rel}") + 1].strip() for i, rel in enumerate(["test/flags.test.js", "test/cli.test.js"], 1)]
    assert all(reasons) and "reads like" in reasons[1], out     # every listed test says why it is there


def test_impact_errors_and_command(code_db, capsys):
    from kgsearch.cli import main
    from kgsearch.errors import NotFound, UsageError
    from kgsearch.explore import impact
    from kgsearch.store.db import Index

    db, root = code_db
    with Index.open(db, readonly=True) as ix:
        with pytest.raises(UsageError, match="no edge type 'callz'"):
            impact(ix, "pkg.core.parse", types="callz")
        with pytest.raises(UsageError, match="must be in or out"):
            impact(ix, "pkg.core.parse", types="calls:up")
        with pytest.raises(NotFound, match="no node or indexed file"):
            impact(ix, "nope.py")
        with pytest.raises(UsageError, match="--depth"):
            impact(ix, "pkg.core.parse", depth=0)
        only = impact(ix, "pkg.core.parse", types="calls", depth=1)
        assert {d["key"] for d in only["dependents"]} == {"py:pkg.core.Reader.read", "py:tests.test_core.test_parse",
                                                          "py:tests.test_core.test_parse_empty"}
        assert only["free"] == []                  # containment not followed: nothing to follow at no hop
    assert main(["impact", "pkg.core.parse", "--db", str(db), "--tests", "--limit", "3"]) == 0
    text = capsys.readouterr().out
    assert "what depends on parse  [function]  py:pkg.core.parse" in text
    assert "contains:in (no hop)" in text and "calls:in," in text
    assert "tests that reach it:\n  1. tests/test_core.py" in text
    assert main(["impact", "pkg.core.parse", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] >= 5


def test_demo_impact_equals_networkx(tmp_path):
    from conftest import need
    from kgsearch.demo import demo_dir
    from kgsearch.explore import impact
    from kgsearch.graph.context import load_context
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    nx = need("networkx")
    db = tmp_path / "demo.db"
    index_paths(db, [str(demo_dir())], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        ctx = load_context(ix)
        back, fwd = type_sides(ctx.etype_names)
        contains = ctx.etype_names.index("contains")
        for key in ("kg:sqlite", "md:vault/concepts/BM25", "kg:python", "md:vault/tools/Git", "kg:bm25"):
            res = impact(ix, key, depth=4, limit=10_000)
            nid = ix.node_by_key(key)
            starts = descendants(ctx.graph, ctx.positions([nid]), contains)
            want = nx_dependents(nx, ctx.graph, starts.tolist(), set(back.tolist()), set(fwd.tolist()), 4, {contains})
            want = {int(ctx.node_ids[p]): h for p, h in want.items() if h > 0}
            assert {d["id"]: d["distance"] for d in res["dependents"]} == want, key


def test_context_files_with_impact_adds_transitive_dependents(code_db):
    from kgsearch.context import ContextOptions, build_context
    from kgsearch.errors import UsageError
    from kgsearch.query import Engine
    from kgsearch.store.db import Index

    db, root = code_db
    with Index.open(db, readonly=True) as ix:
        eng = Engine(ix)
        files = [str(root / "pkg" / "core.py")]
        plain = build_context(eng, files=files, opts=ContextOptions(budget=100_000, fmt="json"))
        wide = build_context(eng, files=files, opts=ContextOptions(budget=100_000, fmt="json", impact=3))
        keys = lambda r: [i["key"] for i in r.items] + [c["key"] for c in r.cut]
        assert "py:tests.test_cli.test_main" not in keys(plain)
        assert "py:tests.test_cli.test_main" in keys(wide)
        reason = next(i["reason"] for i in wide.items if i["key"] == "py:tests.test_cli.test_main")
        assert reason == "depends on the change at distance 2 (calls to py:pkg.cli.main)"
        assert keys(wide)[:len(keys(plain))] != [] and set(keys(plain)) <= set(keys(wide))
        with pytest.raises(UsageError, match="--impact widens --files or --diff"):
            build_context(eng, task="parse text", opts=ContextOptions(impact=2))
