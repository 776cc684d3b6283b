"""The code path's query stages of issue 27, on hand-computed cases: listed names sharing a
mention, the walk net of its restart share, call following from anchored nodes (decay, bound, no
degree reward), pasted console output, type stubs grouped under their implementation, vendored
flags, issue templates' HTML comments."""
from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from kgsearch.query.anchors import follow_calls, resolve, use_specificity
from kgsearch.query.code import has_typescript, implemented_stubs, is_vendored, stub_implementations
from kgsearch.query.codetask import Anchor, extract
from kgsearch.query.group import declaring_modules, group_by_file
from kgsearch.query.paste import drop_comments, drop_links, quiet_paste
from kgsearch.types import FLAG_VENDORED


@pytest.fixture()
def conn():
    """public_api (1) calls core (2) and log (3); core calls arith (4); 5 helpers (10..14) call
    log, so log has 6 callers; arith is called once. Files: mod.py, mod.pyi, lib/a.js, lib/a.d.ts,
    lib/b.d.ts."""
    c = sqlite3.connect(":memory:")
    c.executescript("""
        CREATE TABLE nodes(id INTEGER PRIMARY KEY, key TEXT, name TEXT, kind TEXT, file_id INTEGER);
        CREATE TABLE edges(src INTEGER, dst INTEGER, type TEXT);
        CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT);""")
    c.executemany("INSERT INTO nodes VALUES (?,?,?,?,?)", [
        (1, "py:pkg.api.public_api", "public_api", "function", 1), (2, "py:pkg.core.core", "core", "function", 1),
        (3, "py:pkg.util.log", "log", "function", 1), (4, "py:pkg.core.arith", "arith", "function", 1)]
        + [(i, f"py:pkg.h.h{i}", f"h{i}", "function", 1) for i in range(10, 15)])
    c.executemany("INSERT INTO edges VALUES (?,?,?)", [(1, 2, "calls"), (1, 3, "calls"), (2, 4, "calls"),
                                                       (1, 2, "contains")]
                  + [(i, 3, "calls") for i in range(10, 15)])
    c.executemany("INSERT INTO files VALUES (?,?)", [(1, "/r/mod.py"), (2, "/r/mod.pyi"), (3, "/r/lib/a.js"),
                                                     (4, "/r/lib/a.d.ts"), (5, "/r/lib/b.d.ts")])
    return c


def test_use_specificity_values():
    assert use_specificity(0) == 1.0 and use_specificity(9) == 0.5
    assert use_specificity(1) == pytest.approx(1 / (1 + math.log10(2)))
    assert use_specificity(-3) == 1.0                    # never a reward


def test_resolve_weighs_each_name_once_defined_nodes_fully(conn):
    assert resolve(conn, [Anchor("log", "backtick"), Anchor("core", "backtick")]) == {3: 0.8, 2: 0.8}


def test_names_listed_together_share_one_mention():
    text = ("Fails with these extensions enabled: 'pkg.ext.alpha', 'pkg.ext.beta',\n"
            "    'pkg.ext.gamma', 'pkg.ext.delta'. Building with either `html_out` or `tex_out` fails;\n"
            "`tex_out` alone is fine, and `solo_name` is what breaks.")
    got = {a.text: a for a in extract(text)}
    four, two = 1 / (1 + math.log2(4)), 1 / (1 + math.log2(2))
    for name in ("pkg.ext.alpha", "pkg.ext.beta", "pkg.ext.gamma", "pkg.ext.delta"):
        assert got[name].share == pytest.approx(four) and got[name].weight == pytest.approx(0.8 * four)
    assert got["alpha"].share == pytest.approx(four)       # a part of a listed name: the name's share
    assert got["html_out"].share == pytest.approx(two)     # either `x` or `y`
    assert got["tex_out"].share == 1.0                     # also mentioned alone: full weight
    assert got["solo_name"].share == 1.0
    assert all(a.share == 1.0 for a in extract("`a_b` fails when `c_d` runs"))    # words between: no list


def test_list_shares_merge_overlapping_mentions():
    from kgsearch.query.codetask import list_shares
    q = "`a.b_c`, `d_e`"
    # `a.b_c` and its b_c inside it are one item: a list of two, not three
    got = list_shares(q, [(1, 6, "a.b_c"), (3, 6, "b_c"), (10, 13, "d_e")])
    assert got == pytest.approx({"a.b_c": 0.5, "b_c": 0.5, "d_e": 0.5})
    assert list_shares(q, []) == {}


def test_the_anchors_channel_weighs_listed_names_by_their_share(conn):
    from types import SimpleNamespace

    from kgsearch.query.anchors import search
    q = SimpleNamespace(anchors=(Anchor("log", "backtick", share=0.5), Anchor("core", "backtick")))
    ix = SimpleNamespace(conn=conn)
    ids, ev = search(ix, q)
    assert dict(zip(ids.tolist(), ev.tolist())) == pytest.approx({2: 0.8, 3: 0.4})
    ids, ev = search(ix, q, lists=False)                   # the switch: every name as if alone
    assert dict(zip(ids.tolist(), ev.tolist())) == pytest.approx({2: 0.8, 3: 0.8})


def test_walk_net_of_restart_is_what_arrives_over_edges():
    """On a converged exact walk, a seed's score net of its restart share is what reaches it
    over edges, (1 - r) x (P^T x), computed here by hand on the undirected graph."""
    from kgsearch.graph.kernels.csr import Graph
    from kgsearch.graph.kernels.pagerank import rwr
    from kgsearch.query.graph_stage import net_of_restart
    src, dst = [0, 1, 2, 3, 0], [1, 2, 3, 4, 4]
    g = Graph.from_edges(src, dst, num_nodes=5)
    r, seeds, w = 0.2, [0, 2], [3.0, 1.0]
    x = rwr(g, seeds, restart=r, weights=w, topk=None, tol=1e-14, max_iter=2000, direction="both")
    a = np.zeros((5, 5))
    a[src, dst] = a[dst, src] = 1.0
    p = a / a.sum(axis=1, keepdims=True)
    arrive = (1 - r) * (p.T @ x)
    net = net_of_restart({i: float(v) for i, v in enumerate(x)}, seeds, w, r)
    assert [net[i] for i in range(5)] == pytest.approx(arrive.tolist(), abs=1e-9)
    assert net[1] == x[1] and net[0] < x[0]                 # only seeds lose their restart share
    assert net_of_restart({}, seeds, w, r) == {}


def test_follow_calls_decays_per_hop_and_rewards_no_degree(conn):
    got = follow_calls(conn, {1: 1.0})
    s1 = 1 / (1 + math.log10(2))                         # core and arith: one caller each
    assert got[2] == pytest.approx(0.5 * s1)
    assert got[3] == pytest.approx(0.5 / (1 + math.log10(7)))    # log: called everywhere, less
    assert got[4] == pytest.approx(0.5 * s1 * 0.5 * s1)          # two hops
    assert 1 not in got and set(got) == {2, 3, 4}       # contains edges are not walked
    assert set(follow_calls(conn, {1: 1.0}, depth=1)) == {2, 3}
    assert set(follow_calls(conn, {1: 1.0}, max_nodes=1)) == {2, 4}     # the bound keeps the best
    assert follow_calls(conn, {1: 1.0}, n_seeds=0) == {}


def test_follow_calls_keeps_the_best_path_and_skips_seeds(conn):
    got = follow_calls(conn, {1: 1.0, 2: 0.2})
    assert 2 not in got                                   # a named node keeps its own evidence
    assert got[4] == pytest.approx(0.2 * 0.5 / (1 + math.log10(2)))   # arith from core (0.2), one hop


def test_quiet_paste_drops_banners_dumps_and_repeated_log_lines():
    text = "\n".join([
        "Running the linter on my project fails on `fix_rule`.",
        "Python 3.8.5 (default, Sep  4 2020, 07:30:14)",
        "[GCC 7.3.0] :: Anaconda, Inc. on linux",
        'Type "help", "copyright", "credits" or "license" for more information.',
        "src/a/x.sql:1:1: L001 Unnecessary trailing whitespace",
        "src/a/y.sql:2:5: L001 Unnecessary trailing whitespace",
        "src/b/z.sql:3:9: L001 Unnecessary trailing whitespace",
        "src/b/w.sql:4:2: L001 Unnecessary trailing whitespace",
        "[[1.0, 2.5, 3.25], [4.0, 5.5, 6.75]]",
        'File "/site/pkg/rules.py", line 12, in fix_rule',
        "ValueError: bad segment"])
    kept, dropped = quiet_paste(text)
    assert dropped == 3 + 2 + 1                           # banner, 2 repeats past the first 2, the dump
    assert kept.splitlines() == [
        "Running the linter on my project fails on `fix_rule`.",
        "src/a/x.sql:1:1: L001 Unnecessary trailing whitespace",
        "src/a/y.sql:2:5: L001 Unnecessary trailing whitespace",
        'File "/site/pkg/rules.py", line 12, in fix_rule',
        "ValueError: bad segment"]


def test_quiet_paste_leaves_plain_text_alone():
    text = "one line\ntwo lines\nthree lines"
    assert quiet_paste(text) == (text, 0)
    assert quiet_paste("a\nb") == ("a\nb", 0)


def test_parse_reads_anchors_from_the_whole_text_and_words_from_the_kept_text():
    from kgsearch.query.parse import parse
    text = ("The `load_config` call fails when the config file is empty and I do not know why this happens\n"
            + "\n".join(f"2024-01-0{i} 12:00:0{i} INFO reading chunk {i} of settings_{i}" for i in range(1, 8)))
    q = parse(text, paste=True)
    assert q.code_task and q.set_aside == 5
    assert "settings_7" in {a.text for a in q.anchors} and "settings_7" not in q.text
    assert parse(text, paste=False).set_aside == 0 and "settings_7" in parse(text, paste=False).text


def test_drop_comments_takes_out_closed_html_comments_outside_fenced_code():
    text = ("Infinite loop when input is output\n<!--\nPlease run `info.sh` and paste\nthe output of cargo tree\n-->\n"
            "bat hangs in `run_controller` <!-- one more -->here\n```html\n<!-- markup kept -->\n```\n<!-- unclosed")
    kept, n = drop_comments(text)
    assert n == 2
    assert kept == ("Infinite loop when input is output\n\nbat hangs in `run_controller` here\n"
                    "```html\n<!-- markup kept -->\n```\n<!-- unclosed")
    assert drop_comments("no comment here") == ("no comment here", 0)
    assert drop_comments("```\n<!-- a -->\n```") == ("```\n<!-- a -->\n```", 0)


def test_parse_leaves_a_code_tasks_template_comments_out_of_words_and_anchors():
    from kgsearch.query.parse import parse
    issue = ("The `load_config` call fails when the config file is empty and nobody knows why\n"
             "<!-- Please run `diagnostics_info` and paste its output below -->\n")
    q = parse(issue)
    assert q.code_task and "diagnostics_info" not in q.text
    assert "load_config" in {a.text for a in q.anchors} and "diagnostics_info" not in {a.text for a in q.anchors}
    # not a code task once the comment is gone: the text stays as written
    short = "how do I write <!-- comments --> in markdown"
    assert parse(short).text == short


def test_drop_links_keeps_labels_and_path_words_not_addresses():
    text = ("Since [this commit](https://github.com/grpc/grpc-go/commit/24638f5984c5#diff-e2d91404dL762) "
            "the field is unset (see https://github.com/grpc/grpc-go/blob/9c3a95956/stats/stats.go#L68).\n"
            "![image](https://user-images.githubusercontent.com/5668416/103511419-e18b.png)\n"
            "Like https://docs.rs/tokio/latest/tokio/sync/mpsc/struct.Receiver.html#method.recv_many, "
            "or ftp://host")
    kept, n = drop_links(text)
    assert n == 5
    assert kept == ("Since this commit the field is unset (see grpc grpc-go stats/stats.go).\n \n"
                    "Like tokio latest tokio sync mpsc struct.Receiver.html method.recv_many, or ")
    assert drop_links("no link: a::b and C:/x") == ("no link: a::b and C:/x", 0)


def test_parse_reads_a_code_tasks_links_for_anchors_not_for_words():
    from kgsearch.query.parse import parse
    issue = ("`InPayload.WireLength` is not set by `recvAndDecompress` any more, see "
             "https://github.com/grpc/grpc-go/blob/9c3a9595696a7a50ae/stats/stats.go#L68 and "
             "[the docs](https://pkg.go.dev/google.golang.org/grpc/stats#InPayload)")
    q = parse(issue)
    assert q.code_task
    assert not {"https", "github", "com", "pkg", "dev", "googl"} & set(q.terms), q.terms
    assert "grpc grpc-go stats/stats.go and the docs" in q.text
    assert "InPayload.WireLength" in {a.text for a in q.anchors}                # anchors as before
    prose = "how do I link https://github.com/x in markdown"         # links amid words: addresses too
    assert parse(prose).text == "how do I link x in markdown"
    for link in ("https://github.com/grpc/grpc-go", "https://github.com/grpc/grpc-go notes",
                 "[grpc-go](https://github.com/grpc/grpc-go)"):             # a link searched for: as written
        assert parse(link).text == link and not parse(link).code_task


def test_links_amid_a_short_querys_words_lose_scheme_and_host(tmp_path):
    """A short issue with a link, not read as a code task: `https`, `github` and `com` matched
    every Markdown page full of GitHub links (grpc-go's CONTRIBUTING.md, README.md and tutorials
    ranked above its grpclb code, code-tasks-multi grpc__grpc-go-3351). Failed before
    links_in_prose: the docs ranked first."""
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.query.parse import parse
    from kgsearch.store.db import Index

    root = tmp_path / "proj"
    (root / "balancer").mkdir(parents=True)
    (root / "balancer" / "lb.py").write_text(
        'def use_fallback(backends):\n    """Explicit fallback of the load balancer when no backend answers."""\n'
        "    return backends[0]\n")
    links = " ".join(f"[page {i}](https://github.com/grpc/grpc/blob/master/doc/p{i}.md)" for i in range(12))
    for name in ("CONTRIBUTING", "README", "tutorial"):
        (root / f"{name}.md").write_text(f"# {name}\n\nSupport: see {links} and https://github.com/grpc/grpc-go.\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(settings={"embed": False}))
    q = "Support explicit fallback in the balancer, field from https://github.com/grpc/grpc-proto/pull/69"
    assert not parse(q).code_task and not {"https", "github", "com"} & set(parse(q).terms)
    with Index.open(db, readonly=True) as ix:
        files = Engine(ix).search(q, SearchOptions(k=4, group="file"))
    assert [h.name for h in files.hits][0] == "balancer/lb.py", [h.name for h in files.hits]


def test_code_paths_of_every_language_are_anchors():
    got = {(a.text, a.kind) for a in extract("thread 'main' panicked at src/buf.rs:12:5 while lib/core/Axios.js "
                                             "at Foo.bar(Foo.java:42) and conf.py.")}
    assert {("src/buf.rs", "path"), ("lib/core/Axios.js", "path"), ("conf.py", "path")} <= got
    assert ("Foo.java", "frame") in got and ("Foo.java", "path") not in got     # a Java frame: its file and method


def test_stubs_group_under_their_indexed_implementation(conn):
    assert stub_implementations("m.pyi") == ("m.py",) and stub_implementations("m.py") == ()
    assert implemented_stubs(conn, ["/r/mod.pyi", "/r/lib/a.d.ts", "/r/lib/b.d.ts", "/r/mod.py"]) == {
        "/r/mod.pyi": "/r/mod.py", "/r/lib/a.d.ts": "/r/lib/a.js"}        # b.d.ts has no implementation
    cand = np.array([1, 2, 3])
    fused = np.array([3.0, 2.0, 1.0])
    meta = {1: {"path": "/r/mod.pyi", "root": "/r"}, 2: {"path": "/r/other.py", "root": "/r"},
            3: {"path": "/r/mod.py", "root": "/r"}}
    assert group_by_file(cand, fused, [0, 1, 2], meta, 5, 0.5, 3) == [(3.0, [0]), (2.0, [1]), (1.0, [2])]
    grouped = group_by_file(cand, fused, [0, 1, 2], meta, 5, 0.5, 3, {"/r/mod.pyi": "/r/mod.py"})
    assert grouped == [(3.0 + 0.5 * 1.0, [0, 2]), (2.0, [1])]


def test_a_rust_files_declaring_module_ranks_fifth_beside_it():
    # `mod chan;` in sync/mpsc/mod.rs declares sync/mpsc/chan.rs, `mod mpsc;` in sync/mod.rs (or
    # sync.rs) declares that, up to the crate root src/lib.rs; a mod.rs is declared a folder up
    assert declaring_modules("/r/t/src/sync/mpsc/chan.rs", "/r") == [
        "/r/t/src/sync/mpsc/mod.rs", "/r/t/src/sync/mpsc.rs", "/r/t/src/sync/mpsc/lib.rs", "/r/t/src/sync/mpsc/main.rs",
        "/r/t/src/sync/mod.rs", "/r/t/src/sync.rs", "/r/t/src/sync/lib.rs", "/r/t/src/sync/main.rs",
        "/r/t/src/mod.rs", "/r/t/src.rs", "/r/t/src/lib.rs", "/r/t/src/main.rs"]
    assert declaring_modules("/r/src/io/mod.rs", "/r") == [
        "/r/src/mod.rs", "/r/src.rs", "/r/src/lib.rs", "/r/src/main.rs"]
    assert declaring_modules("/r/src/main.rs", "/r") == [] == declaring_modules("/r/pkg/__init__.py", "/r")
    assert declaring_modules("/src/io/x.rs", "/src")[4:] == [      # a crate's src/ indexed alone
        "/src/mod.rs", "/src.rs", "/src/lib.rs", "/src/main.rs"]
    assert declaring_modules("/w/x.rs", "/w/") == ["/w/mod.rs", "/w.rs", "/w/lib.rs", "/w/main.rs"]
    # files by score: chan.rs 8, a.rs 7 ... e.rs 3, sync/mod.rs 2, lib.rs 1: sync/mod.rs (the
    # nearer declaring module and the better ranked) moves to 5th, scored as the file it passes
    paths = ["src/sync/mpsc/chan.rs", "src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs", "src/e.rs",
             "src/sync/mod.rs", "src/lib.rs"]
    cand = np.arange(len(paths))
    fused = np.array([8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    meta = {i: {"path": "/r/" + p, "root": "/r"} for i, p in enumerate(paths)}
    order = list(range(len(paths)))
    lifted = {}
    got = group_by_file(cand, fused, order, meta, 10, 0.5, 3, None, 5, lifted)
    assert got == [(8.0, [0]), (7.0, [1]), (6.0, [2]), (5.0, [3]), (4.0, [6]), (4.0, [4]), (3.0, [5]), (1.0, [7])]
    assert lifted == {"/r/src/sync/mod.rs": 2.0}
    assert group_by_file(cand, fused, order, meta, 10, 0.5, 3) == [(float(8 - i), [i]) for i in range(8)]   # off
    # ranked 5th or better already, or a first file that is no Rust module: nothing moves
    fused2 = np.array([8.0, 7.0, 6.0, 5.0, 1.0, 0.5, 4.5, 0.1])
    assert [pos for _, pos in group_by_file(cand, fused2, [0, 1, 2, 3, 6, 4, 5, 7], meta, 10, 0.5, 3, None, 5)] == [
        [0], [1], [2], [3], [6], [4], [5], [7]]
    meta_py = {i: {"path": "/r/" + p.replace(".rs", ".py"), "root": "/r"} for i, p in enumerate(paths)}
    assert group_by_file(cand, fused, order, meta_py, 10, 0.5, 3, None, 5) == [(float(8 - i), [i]) for i in range(8)]


def test_vendored_by_flag_or_path():
    assert is_vendored({"path": "/r/src/gen.go", "flags": FLAG_VENDORED})
    assert is_vendored({"path": "/r/third_party/x.py", "flags": 0})
    assert not is_vendored({"path": "/r/src/x.py", "flags": 2})


def test_a_stub_groups_under_its_implementation_end_to_end(tmp_path):
    """`--group file` on an index holding pkg/shapes.py and its stub pkg/shapes.pyi: one file
    result, the implementation, whose members include the stub's node; node hits rank the
    implementation's function above the stub's."""
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    root = tmp_path / "proj" / "pkg"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "shapes.py").write_text('def polygon_area(points):\n    """Area of a polygon by the shoelace '
                                    'formula."""\n    return 0.5 * abs(sum(points))\n')
    (root / "shapes.pyi").write_text("def polygon_area(points: list[float]) -> float: ...\n")
    (root / "other.py").write_text('def perimeter(points):\n    """Perimeter of a polygon."""\n    return 0\n')
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "proj")], IndexOptions(settings={"embed": False}))
    q = "polygon_area returns the wrong area for a concave polygon: `polygon_area` in shapes"
    with Index.open(db, readonly=True) as ix:
        eng = Engine(ix)
        files = eng.search(q, SearchOptions(k=5, group="file"))
        nodes = eng.search(q, SearchOptions(k=10))
    paths = [h.name for h in files.hits]
    assert paths[0] == "pkg/shapes.py" and "pkg/shapes.pyi" not in paths, paths
    members = [m["key"] for m in files.hits[0].members]
    assert members[0] == "py:pkg.shapes.polygon_area" and "pyi:pkg.shapes.polygon_area" in members, members
    keys = [h.key for h in nodes.hits if h.name == "polygon_area"]
    assert keys == ["py:pkg.shapes.polygon_area", "pyi:pkg.shapes.polygon_area"]
    stub = next(h for h in nodes.hits if h.key == "pyi:pkg.shapes.polygon_area")
    assert stub.adjustments["test_or_vendored"] == 0.3


def test_typescript_output_maps_to_its_source():
    from kgsearch.query.code import compiled_sources
    got = compiled_sources("/r/pkg/v4/classic/schemas.cjs")
    assert "/r/pkg/src/v4/classic/schemas.ts" in got          # rootDir src, outDir the package itself
    assert "/r/pkg/v4/classic/schemas.ts" == got[0]            # beside it (tsc in place) first
    assert "/r/pkg/src/classic/schemas.ts" in compiled_sources("/r/pkg/lib/classic/schemas.js")   # outDir lib/
    assert compiled_sources("/r/pkg/src/a.ts") == () == compiled_sources("/r/pkg/a.py")
    # a declaration: its TypeScript source before its script
    d = stub_implementations("/r/pkg/lib/a.d.ts")
    assert d.index("/r/pkg/src/a.ts") < d.index("/r/pkg/lib/a.js")
    # a CommonJS build's ES module twin, after any TypeScript source
    c = stub_implementations("/r/pkg/format.cjs")
    assert c[-2:] == ("/r/pkg/format.js", "/r/pkg/format.mjs") and c[0] == "/r/pkg/format.ts"
    assert stub_implementations("/r/pkg/format.js") == compiled_sources("/r/pkg/format.js")
    # an index without TypeScript looks for no compiled source (a plain JS repository paid
    # ~20-50 look-ups for every script among a search's best); the twin rule stays
    assert stub_implementations("/r/pkg/lib/a.js", compiled=False) == ()
    assert stub_implementations("/r/pkg/format.cjs", compiled=False) == ("/r/pkg/format.js", "/r/pkg/format.mjs")
    # nothing deeper than LAYOUT_DEPTH folders below the output folder
    assert "/r/src/a/b/c/d/e/f.ts" not in compiled_sources("/r/lib/a/b/c/d/e/f.js")


def test_typescript_output_ranks_and_groups_under_its_source_end_to_end(tmp_path):
    """An npm package as published: src/core/parse.ts and, compiled from it, core/parse.js,
    core/parse.cjs and core/parse.d.ts beside src/ (zod 3.25's layout). Before, the same function
    came up once per copy; now the source's ranks first, the copies x0.3, and `--group file` gives
    the source file with the copies' nodes as its members. A plain JS package is untouched."""
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    pkg = tmp_path / "proj" / "package"
    (pkg / "src" / "core").mkdir(parents=True)
    (pkg / "core").mkdir()
    (pkg / "src" / "core" / "parse.ts").write_text(
        "export function safeParseValue(data: unknown): Result {\n  // parse the value, never throw\n"
        "  return tryParse(data);\n}\nexport function tryParse(data: unknown): Result { return { ok: true }; }\n")
    (pkg / "src" / "core" / "errors.ts").write_text(
        "export class ParseFailure extends Error {\n  constructor(msg: string) { super(msg); }\n}\n")
    js = ("function safeParseValue(data) {\n  // parse the value, never throw\n  return tryParse(data);\n}\n"
          "function tryParse(data) { return { ok: true }; }\n")
    (pkg / "core" / "parse.js").write_text(js)
    (pkg / "core" / "parse.cjs").write_text('"use strict";\n' + js)
    (pkg / "core" / "parse.d.ts").write_text("export declare function safeParseValue(data: unknown): Result;\n")
    plain = tmp_path / "plain" / "lib"
    plain.mkdir(parents=True)
    (plain / "parse.js").write_text(js)
    db, db2 = tmp_path / "i.db", tmp_path / "j.db"
    index_paths(db, [str(tmp_path / "proj")], IndexOptions(settings={"embed": False}))
    index_paths(db2, [str(tmp_path / "plain")], IndexOptions(settings={"embed": False}))
    q = "safeParseValue throws instead of returning a failed result for invalid data"
    with Index.open(db, readonly=True) as ix:
        eng = Engine(ix)
        nodes = eng.search(q, SearchOptions(k=10))
        files = eng.search(q, SearchOptions(k=5, group="file"))
    named = [h for h in nodes.hits if h.name == "safeParseValue"]
    assert named[0].path.endswith("src/core/parse.ts"), [h.path for h in named]
    assert len(named) == 4 and all(h.adjustments["test_or_vendored"] == 0.3 for h in named[1:]), named
    paths = [h.name for h in files.hits]
    assert paths[0] == "package/src/core/parse.ts" and not any(p.startswith("package/core/") for p in paths), paths
    members = [m["key"] for m in files.hits[0].members]
    assert members[0].startswith("js:package/src/core/parse.ts:") and any(
        k.startswith("js:package/core/parse.") for k in members[1:]), members
    with Index.open(db2, readonly=True) as ix:
        plain_hit = Engine(ix).search(q, SearchOptions(k=5)).hits[0]
        assert not has_typescript(ix.conn)
    assert plain_hit.name == "safeParseValue" and "test_or_vendored" not in plain_hit.adjustments
    with Index.open(db, readonly=True) as ix:
        assert has_typescript(ix.conn)


def test_aliases_and_c_macros_rank_lower_unless_the_query_names_them(tmp_path):
    """A type alias or a C macro is a name for a type or for code, seldom the code a task
    changes: x Tuning.declaration_penalty in code queries, unless the query names it (then it
    is what is asked for)."""
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.query.tuning import TUNING
    from kgsearch.store.db import Index

    root = tmp_path / "proj" / "src"
    root.mkdir(parents=True)
    (root / "arr.h").write_text("#define ARRAY_APPEND(a, x) array_append_value((a), (x))\n"
                                "typedef struct array_value array_value_t;\n")
    (root / "arr.c").write_text("/* append a value to the array, growing it */\n"
                                "int array_append_value(int *a, int x) {\n  a[0] = x;\n  return x;\n}\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "proj")], IndexOptions(settings={"embed": False}))
    with Index.open(db, readonly=True) as ix:
        eng = Engine(ix)
        got = eng.search("appending a value to an array crashes when the array grows", SearchOptions(k=10))
        named = eng.search("ARRAY_APPEND crashes when the array grows", SearchOptions(k=10))
    macro = next(h for h in got.hits if h.name == "ARRAY_APPEND")
    assert macro.adjustments["test_or_vendored"] == TUNING.declaration_penalty == 0.5
    assert [h.name for h in got.hits].index("array_append_value") < [h.name for h in got.hits].index("ARRAY_APPEND")
    assert named.hits[0].name == "ARRAY_APPEND" and "test_or_vendored" not in named.hits[0].adjustments
