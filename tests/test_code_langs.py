"""The code-task path the same in every language the loaders read: ``context`` shows source
lines, diagnostics anchor a task, diffs with quoted and renamed paths, MCP over one index or
several, names kept to one line in Markdown, qualified names and file paths naming nodes,
folders for ``--files``, ``why`` and path anchors written from the root."""
from __future__ import annotations

import json

import pytest
from conftest import write_files

from kgsearch.cli import main
from kgsearch.context import ContextOptions, build_context
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine
from kgsearch.store.db import Index

# one Rust type and its impl block, in the files of sections 1-7 and of section 11 (rs/src/lib.rs
# and crate/src/lib.rs); lines 1-10 of the first: the diagnostics below name them
RUST_PARSER = """\
        pub struct Parser {
            pos: usize,
        }

        impl Parser {
            pub fn advance(&mut self) -> usize {
                self.pos += 1;
                self.pos
            }
        }
        """

FILES = {
    "src/net/sock.c": """\
        #include <stdio.h>

        /* open a socket connection */
        int sock_open(int port) {
            int fd = port + 1;
            return fd;
        }

        int sock_close(int fd) {
            return sock_open(fd) - 1;
        }
        """,
    "src/app/sock.c": """\
        int other_sock(void) {
            return 3;
        }
        """,
    "web/util.js": """\
        // utilities
        class Cache {
          lookup(key) {
            return this.map.get(key);
          }
        }

        function makeCache() {
          return new Cache();
        }
        module.exports = { Cache, makeCache };
        """,
    "rs/src/lib.rs": RUST_PARSER + """
        pub fn parse_all(p: &mut Parser) -> usize {
            p.advance()
        }
        """,
    "java/com/ex/Foo.java": """\
        package com.ex;

        public class Foo {
            public int bar(int x) {
                return x + 1;
            }

            public int baz() {
                return bar(2);
            }
        }
        """,
    "go/pkg/server.go": """\
        package pkg

        type Server struct {
        \tport int
        }

        func (s *Server) Start() int {
        \treturn s.port
        }

        func NewServer() *Server {
        \treturn &Server{port: 80}
        }
        """,
    "kt/com/ex/Shop.kt": """\
        package com.ex

        class Shop(val name: String) {
            fun open(): Boolean =
                name.isNotEmpty()

            fun greet() = "hi $name"
        }
        """,
    "php/src/Cart.php": """\
        <?php
        namespace Shop;

        class Cart
        {
            public function total(array $items): int
            {
                return count($items);
            }
        }
        """,
    "py/app/mod.py": """\
        class Store:
            def fetch(self, key):
                return key

        def helper():
            return Store().fetch(1)
        """,
}


@pytest.fixture(scope="module")
def poly(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("poly")
    root = tmp / "proj"
    write_files(root, FILES)
    db = tmp / "proj.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    return root, db


def _engine(db):
    return Engine(Index.open(db, readonly=True))


# ---------------------------------------------------------------------------- 1. source lines
@pytest.mark.parametrize("rel, key, line, lang", [
    ("web/util.js", "js:web/util.js:makeCache", "  return new Cache();", "javascript"),
    ("go/pkg/server.go", "go:go/pkg/server.go:NewServer", "\treturn &Server{port: 80}", "go"),
    ("rs/src/lib.rs", "rs:rs/src/lib.rs:parse_all", "    p.advance()", "rust"),
    ("java/com/ex/Foo.java", "java:java/com/ex/Foo.java:Foo", "    public int bar(int x) {", "java"),
    ("src/net/sock.c", "c:src/net/sock.c:sock_open", "    int fd = port + 1;", "c"),
    ("kt/com/ex/Shop.kt", "java:kt/com/ex/Shop.kt:Shop", "    fun open(): Boolean =", "kotlin"),
    ("php/src/Cart.php", "php:php/src/Cart.php:Cart", "{", "php"),
    ("py/app/mod.py", "py:py.app.mod.helper", "    return Store().fetch(1)", "python")])
def test_context_shows_source_lines_of_code_in_every_language(poly, rel, key, line, lang):
    root, db = poly
    res = build_context(_engine(db), files=[str(root / rel)], opts=ContextOptions(budget=4000, fmt="json"))
    item = next(i for i in json.loads(res.text)["items"] if i["key"] == key)
    assert item["text"].split("\n")[1] == line          # the file's line, its indentation kept
    mine = next(i for i in res.items if i["key"] == key)
    assert mine["source"] == "file"
    md = build_context(_engine(db), files=[str(root / rel)], opts=ContextOptions(budget=4000)).text
    assert f"```{lang}\n" in md


# ---------------------------------------------------------------------------- 2. diagnostics
@pytest.mark.parametrize("query, key", [
    ("src/net/sock.c:5:5: error: 'x' undeclared", "c:src/net/sock.c:sock_open"),
    ("error[E0425]: cannot find value `y` in this scope\n  --> rs/src/lib.rs:7:9", "rs:rs/src/lib.rs:Parser.advance"),
    ("  --> rs/src/lib.rs:13:5", "rs:rs/src/lib.rs:parse_all"),
    ("Foo.java:9: error: cannot find symbol", "java:java/com/ex/Foo.java:Foo.baz"),
    ("./go/pkg/server.go:8:2: undefined: port", "go:go/pkg/server.go:Server.Start"),
    ("web/util.js(9,3): error TS2304: Cannot find name", "js:web/util.js:makeCache")])
def test_a_compiler_diagnostic_alone_is_a_code_task_anchored_to_its_line(poly, query, key):
    _, db = poly
    eng = _engine(db)
    q = eng.parse(query)
    assert q.code_task == "diagnostic"
    assert [a.line for a in q.anchors if a.kind == "frame"] and not [a for a in q.anchors if a.kind == "path"]
    res = build_context(eng, task=query, opts=ContextOptions(budget=2000))
    assert key in [i["key"] for i in res.items][:3]          # the definition holding the line, with its file


# a linter's report pasted alone: flake8/pycodestyle/ruff, pylint, pyflakes, ESLint (stylish,
# unix, compact), go vet/staticcheck, clippy, cppcheck, checkstyle
@pytest.mark.parametrize("query, key", [
    ("py/app/mod.py:6:80: E501 line too long (88 > 79 characters)", "py:py.app.mod.helper"),
    ("py/app/mod.py:3:0: C0303: Trailing whitespace (trailing-whitespace)", "py:py.app.mod.Store.fetch"),
    ("py/app/mod.py:5: [C0116(missing-function-docstring), ] Missing function docstring", "py:py.app.mod.helper"),
    ("py/app/mod.py:6:12: undefined name 'Stor'", "py:py.app.mod.helper"),
    ("/home/u/proj/web/util.js\n  9:3  error  'Cache' is not defined  no-undef\n\n"
     "\u2716 1 problem (1 error, 0 warnings)", "js:web/util.js:makeCache"),
    ("web/util.js:4:12: 'key' is defined but never used [Error/no-unused-vars]", "js:web/util.js:Cache.lookup"),
    ("web/util.js: line 9, col 3, Warning - Unexpected 'new' (no-new)", "js:web/util.js:makeCache"),
    ("go/pkg/server.go:12:2: SA4006: this value of s is never used (staticcheck)", "go:go/pkg/server.go:NewServer"),
    # go test's failures have no column; a generic function's line is not read as a frame's
    ("--- FAIL: TestStart (0.00s)\n    server.go:8: got 0, want 80\nFAIL\nFAIL\texample.com/pkg\t0.012s",
     "go:go/pkg/server.go:Server.Start"),
    ("    --- FAIL: TestStart/zero (0.00s)\n        go/pkg/server.go:8: port = 0", "go:go/pkg/server.go:Server.Start"),
    ("goroutine 9 [running]:\nexample.com/pkg.Map[...]({0xc000010000, 0x1})\n\t/home/u/go/pkg/server.go:12 +0x1d",
     "go:go/pkg/server.go:NewServer"),
    ("        \tError Trace:\t/home/u/go/pkg/server.go:8\n        \tError:      \tNot equal:",
     "go:go/pkg/server.go:Server.Start"),
    ("warning: this could be simplified\n --> rs/src/lib.rs:13:5\n  |\n  = help: for further information",
     "rs:rs/src/lib.rs:parse_all"),
    ("[src/net/sock.c:5]: (style) Variable 'fd' is reassigned", "c:src/net/sock.c:sock_open"),
    ("[WARN] java/com/ex/Foo.java:9:9: Missing a Javadoc comment. [JavadocMethod]",
     "java:java/com/ex/Foo.java:Foo.baz")])
def test_a_linter_report_alone_is_a_code_task_anchored_to_its_lines(poly, query, key):
    _, db = poly
    eng = _engine(db)
    q = eng.parse(query)
    assert q.code_task == "diagnostic"
    assert [a.line for a in q.anchors if a.kind == "frame"]
    res = build_context(eng, task=query, opts=ContextOptions(budget=2000))
    assert key in [i["key"] for i in res.items][:3]          # the definition holding the line


@pytest.mark.parametrize("query", [
    "the meeting moved from 10:30 to 11:45 and the standup is at 9:15 tomorrow",
    "mix flour and water at a ratio of 3:1, then 2:1 for the second batch of dough",
    "For God so loved the world, John 3:16, and Romans 8:28 are quoted in the notes",
    "the dev server runs at http://localhost:8080/app and the api at 127.0.0.1:5000/v1 since monday",
    "10:30: standup\n11:00: review the build\n3:1 odds on the release today",
    "setup.py:12 times out",
])
def test_prose_with_colons_and_numbers_is_no_diagnostic(query):
    from kgsearch.query.codetask import code_task_reason, extract

    assert not [a for a in extract(query) if a.kind == "frame"]
    assert code_task_reason(query) is None


@pytest.mark.parametrize("query", [
    "server.go:12 times out after 0:30, ratio 3:1 (0.00s) on localhost:8080",
    "--- FAIL: TestServe (0.00s) took 10:30 and 3:1 retries\nthe fix is in server.go: line 12, see port 8080:",
    "we saw it at main.go:12 +0x1d in prose, and in `x.go:40: got 1` quoted mid-line",
    "  main.go:12 +0x1d, then 10:30: nothing\n\tat 3:1 +0x1d",
    "goroutine 9 [running]:\ncreated by example.com/pkg.main in goroutine 1\n\t/home/u/go/pkg/server.go:12 +0x1d",
])
def test_go_test_places_in_prose_are_no_frames(query):
    # go test's `x_test.go:12: msg` and a dump's `\t/x.go:12 +0x1d` are read at the start of a line only
    from kgsearch.query.codetask import diagnostics, extract

    assert not [a for a in extract(query) if a.kind == "frame"] and diagnostics(query) == []


def test_a_url_to_a_source_file_is_no_diagnostic():
    from kgsearch.query.codetask import diagnostics

    assert diagnostics("see http://localhost:8080/app.py:12 and ftp://host.py:21/x.py") == []
    assert diagnostics("served at http://example.com.py:8080/x and file:///src/a.ts:3:1 opened") == []


def test_a_linter_lists_every_place_once_and_skips_a_compilers_context_lines():
    from kgsearch.query.codetask import diagnostics

    stylish = ("src/a.ts\n  10:2   error    'x' is defined but never used  no-unused-vars\n"
               "  12:5   warning  Unexpected console statement   no-console\n\n"
               "lib/b.jsx\n  3:1  error  Missing semicolon  semi\n\n\u2716 3 problems (2 errors, 1 warning)\n")
    assert diagnostics(stylish) == [("src/a.ts", 10), ("src/a.ts", 12), ("lib/b.jsx", 3)]
    flake8 = "pkg/x.py:3:5: E501 line too long\npkg/x.py:3:9: W291 trailing whitespace\npkg/y.py:1:1: F401 'os' unused\n"
    assert diagnostics(flake8) == [("pkg/x.py", 3), ("pkg/y.py", 1)]
    gcc = ("src/a.cpp:9:5:   required from here\ninclude/b.h:3:7: note: candidate\n"
           "include/b.h:4:1: note: in expansion of macro 'X'\n")
    assert diagnostics(gcc) == []
    assert diagnostics("src/a.ts\nthe 10:2 split is fine\n  10:2 in the morning") == []


# ---------------------------------------------------------------------------- 3. diffs
DIFF = r'''diff --git "a/dir/na\303\257ve file.c" "b/dir/na\303\257ve file.c"
index 7e9762a..c41a3a9 100644
--- "a/dir/na\303\257ve file.c"	
+++ "b/dir/na\303\257ve file.c"	
@@ -1,5 +1,5 @@
 int naive_fn(int a) {
-    return a;
+    return a * 2;
 }
 
 int other(int b) {
diff --git a/dir/old.c b/dir/new.c
similarity index 88%
rename from dir/old.c
rename to dir/new.c
index 92aef07..2fe9499 100644
--- a/dir/old.c
+++ b/dir/new.c
@@ -7,5 +7,5 @@ int moved_two(void) {
 }
 
 int moved_three(void) {
-    return 3;
+    return 4;
 }
'''


def test_diff_quoted_paths_are_decoded_and_renamed_files_found(tmp_path):
    from kgsearch.context.diff import changed_nodes, parse_unified

    root = tmp_path / "r"
    write_files(root, {"dir/na\u00efve file.c": "int naive_fn(int a) {\n    return a;\n}\n\nint other(int b) {\n    return b;\n}\n",
                  "dir/old.c": "int moved_fn(int a) {\n    return a + 1;\n}\n\nint moved_two(void) {\n    return 2;\n"
                               "}\n\nint moved_three(void) {\n    return 3;\n}\n"})
    db = tmp_path / "r.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    changes = parse_unified(DIFF)
    assert [(c.path, c.old_path) for c in changes] == [("dir/na\u00efve file.c", "dir/na\u00efve file.c"),
                                                      ("dir/new.c", "dir/old.c")]
    ix = Index.open(db, readonly=True)
    keys = lambda ids: sorted(ix.conn.execute(f"SELECT key FROM nodes WHERE id IN ({','.join(map(str, ids))})")
                              .fetchall())
    got, notes = changed_nodes(ix, changes)         # the index predates the change: the old names and lines
    assert keys(got) == [("c:dir/na\u00efve file.c:naive_fn",), ("c:dir/old.c:moved_three",)]
    assert any("renamed from dir/old.c" in n for n in notes)
    (root / "dir/old.c").rename(root / "dir/new.c")                   # reindexed after the rename: the new name
    (root / "dir/new.c").write_text((root / "dir/new.c").read_text().replace("return 3;", "return 4;"))
    ix.close()
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    ix = Index.open(db, readonly=True)
    got, notes = changed_nodes(ix, changes)
    assert ("c:dir/new.c:moved_three",) in keys(got) and not any("not in the index" in n for n in notes)


# ---------------------------------------------------------------------------- 4. MCP
def _rpc(server, name, args):
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
    server.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    out = server.handle(msg)
    json.dumps(out, ensure_ascii=False).encode("utf-8")          # what stdio writes: it must encode
    return out


@pytest.fixture(scope="module")
def second(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("second")
    write_files(tmp / "other", {"lib/calc.go": "package lib\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n"
                                          "func Twice(a int) int {\n\treturn Add(a, a)\n}\n"})
    db = tmp / "other.db"
    index_paths(db, [str(tmp / "other")], IndexOptions(steps=("text", "graph")))
    return tmp / "other", db


@pytest.mark.parametrize("name, args", [
    ("search", {"query": "sock \ud800"}), ("show", {"node": "\udc00x"}), ("context", {"task": "open \ud800 socket"}),
    ("why", {"query": "\ud800", "node": "sock_open"}), ("impact", {"node": "sock_open\ud800"}),
    ("context", {"files": ["src/net/\ud800.c"]})])
def test_mcp_a_lone_surrogate_in_an_argument_is_an_answer_not_an_internal_error(poly, second, name, args):
    from kgsearch.mcp.multi import MultiServer
    from kgsearch.mcp.server import Server

    for server in (Server(poly[1]), MultiServer([poly[1], second[1]])):
        out = _rpc(server, name, args)
        assert "result" in out, out


def test_mcp_context_notices_reach_the_text_and_several_indexes_take_impact(poly, second):
    from kgsearch.mcp.multi import MultiServer
    from kgsearch.mcp.server import Server

    diff = "--- a/nope.c\n+++ b/nope.c\n@@ -1 +1 @@\n-a\n+b\n"
    for server in (Server(poly[1]), MultiServer([poly[1], second[1]])):
        for fmt in ("markdown", "json", "xml"):
            text = _rpc(server, "context", {"diff": diff, "format": fmt})["result"]["content"][0]["text"]
            assert "nope.c: not in the index" in text, (fmt, text)
    multi = MultiServer([poly[1], second[1]])
    plain = _rpc(multi, "context", {"files": [str(second[0] / "lib/calc.go")], "format": "json"})["result"]
    wide = _rpc(multi, "context", {"files": [str(second[0] / "lib/calc.go")], "format": "json", "impact": 2})["result"]
    assert not plain["isError"] and not wide["isError"]
    task = _rpc(multi, "context", {"task": "Add", "impact": 2})["result"]
    assert task["isError"] and "impact" in task["content"][0]["text"]        # as with one index, not ignored
    got = _rpc(multi, "impact", {"node": "Add"})["result"]["structuredContent"]
    assert got["index"] == "other" and [d["key"] for d in got["dependents"]][:1] == ["go:lib/calc.go:Twice"]


# ---------------------------------------------------------------------------- 5. one line per name
def test_names_with_line_breaks_cannot_forge_markdown_headers_or_lines(tmp_path, capsys):
    root = tmp_path / "r"
    root.mkdir()
    (root / "evil\n### injected.md").write_text("# Title\nbody text here\n")
    (root / "evil\u2028- forged.md").write_text("# Other\nbody text too\n")
    db = tmp_path / "r.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    for budget in (2000, 30):                       # every block, then header-only blocks and the cut list
        res = build_context(_engine(db), task="title body text", opts=ContextOptions(budget=budget))
        lines = res.text.splitlines()               # every break str.splitlines knows
        heads = [ln for ln in lines if ln.startswith("###")]
        assert heads and all(" · note " in ln for ln in heads), heads
        assert not any(ln.startswith(("### injected", "- forged")) for ln in lines)
    assert main(["context", "--db", str(db), "--files", str(root / "evil\n### injected.md"), "--budget", "500"]) == 0
    out = capsys.readouterr().out
    assert [ln for ln in out.splitlines() if ln.startswith("###")] == \
        ["### evil\\n### injected.md:1-2 · note evil\\n### injected"]


# ---------------------------------------------------------------------------- 6. qualified names
@pytest.mark.parametrize("ref, key", [
    ("Foo.bar", "java:java/com/ex/Foo.java:Foo.bar"), ("com.ex.Foo.bar", "java:java/com/ex/Foo.java:Foo.bar"),
    ("Parser::advance", "rs:rs/src/lib.rs:Parser.advance"), ("Parser.advance", "rs:rs/src/lib.rs:Parser.advance"),
    ("Server.Start", "go:go/pkg/server.go:Server.Start"), ("pkg.Server.Start", "go:go/pkg/server.go:Server.Start"),
    ("Cache.lookup", "js:web/util.js:Cache.lookup"), ("Store.fetch", "py:py.app.mod.Store.fetch"),
    ("app.mod.Store.fetch", "py:py.app.mod.Store.fetch"), ("Shop.greet", "java:kt/com/ex/Shop.kt:Shop.greet"),
    ("Cart.total", "php:php/src/Cart.php:Cart.total")])
def test_a_qualified_name_suffix_names_the_method_in_every_language(poly, capsys, ref, key):
    _, db = poly
    assert main(["show", "--db", str(db), "--json", ref]) == 0
    assert json.loads(capsys.readouterr().out)["node"]["key"] == key
    assert main(["impact", "--db", str(db), "--json", ref]) == 0
    assert json.loads(capsys.readouterr().out)["of"]["key"] == key
    assert main(["why", "--db", str(db), "--json", "the code", ref]) == 0
    assert json.loads(capsys.readouterr().out)["node"]["key"] == key


def test_a_suffix_that_ends_no_qualified_name_is_not_found(poly, capsys):
    _, db = poly
    assert main(["show", "--db", str(db), "Other.lookup"]) != 0


# ---------------------------------------------------------------------------- 7. a file path names its node
@pytest.mark.parametrize("rel, key", [
    ("py/app/mod.py", "py:py.app.mod"), ("web/util.js", "js:web/util.js"), ("go/pkg/server.go", "go:go/pkg/server.go"),
    ("rs/src/lib.rs", "rs:rs/src/lib.rs"), ("java/com/ex/Foo.java", "java:java/com/ex/Foo.java"),
    ("src/net/sock.c", "c:src/net/sock.c"), ("kt/com/ex/Shop.kt", "java:kt/com/ex/Shop.kt"),
    ("php/src/Cart.php", "php:php/src/Cart.php")])
def test_a_file_path_names_that_files_node_in_every_language(poly, capsys, rel, key):
    root, db = poly
    for ref in (rel, str(root / rel)):
        assert main(["show", "--db", str(db), "--json", ref]) == 0, ref
        assert json.loads(capsys.readouterr().out)["node"]["key"] == key
    assert main(["why", "--db", str(db), "--json", "the code", str(root / rel)]) == 0
    assert json.loads(capsys.readouterr().out)["node"]["key"] == key


# ---------------------------------------------------------------------------- 8. --files DIR/
def test_files_accepts_a_folder_for_every_indexed_file_under_it(poly, capsys, monkeypatch):
    root, db = poly
    monkeypatch.chdir(root)
    for given in ("src/net/", "src/net", str(root / "src" / "net") + "/"):
        assert main(["context", "--db", str(db), "--files", given, "--format", "json", "--budget", "4000"]) == 0
        keys = {i["key"] for i in json.loads(capsys.readouterr().out)["items"]}
        assert {"c:src/net/sock.c:sock_open", "c:src/net/sock.c:sock_close"} <= keys
        assert not any(k.startswith("c:src/app/") for k in keys)        # not in the folder, not linked
    assert main(["context", "--db", str(db), "--files", "src/", "--format", "json", "--budget", "4000"]) == 0
    keys = {i["key"] for i in json.loads(capsys.readouterr().out)["items"]}
    assert {"c:src/net/sock.c:sock_open", "c:src/app/sock.c:other_sock"} <= keys
    assert main(["context", "--db", str(db), "--files", "nope/", "--budget", "4000"]) != 0


# ---------------------------------------------------------------------------- 9. why's stand-in
def test_why_names_no_stand_in_for_code_only_for_notes(poly, capsys):
    _, db = poly
    assert main(["why", "--db", str(db), "--json", "--channels", "bm25", "map get", "js:web/util.js:Cache"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["rank"] is None and "represented_by" not in d and "one hit per note" not in d["reason"]
    # (a note's section standing for it: tests/test_reliability_query.py)


# ---------------------------------------------------------------------------- 10. paths from the root
def test_a_path_written_from_the_root_anchors_that_file_not_its_copies(tmp_path):
    from kgsearch.query.anchors import resolve
    from kgsearch.query.codetask import extract

    go = "package a\n\nfunc Run() int {\n\treturn 1\n}\n"
    write_files(tmp_path / "r", {"src/a/b.go": go, "vendor/x/src/a/b.go": go, "other/b.go": go})
    db = tmp_path / "r.db"
    index_paths(db, [str(tmp_path / "r")], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        keys = dict(ix.conn.execute("SELECT id, key FROM nodes"))
        for q in ("src/a/b.go:4:2: undefined: x", "it panics at src/a/b.go:12 on start", "./src/a/b.go:4:2: x"):
            got = {keys[i] for i in resolve(ix.conn, extract(q))}
            assert got and all(k.startswith("go:src/a/b.go") for k in got), (q, got)
        got = {keys[i] for i in resolve(ix.conn, extract("a/b.go:4:2: undefined: x"))}    # a suffix: every copy
        assert {"go:src/a/b.go", "go:vendor/x/src/a/b.go"} <= got


def test_a_compilers_note_is_no_diagnostic_anchor():
    from kgsearch.query.codetask import diagnostics

    # gcc's notes name the candidates of an overload, not where it failed (fmtlib__fmt-3158:
    # three notes in format.h outweighed the error in ranges.h)
    log = ("include/fmt/ranges.h:526:21: error: call of overloaded 'write<char>' is ambiguous\n"
           "include/fmt/format.h:2174:20: note: candidate: 'write(OutputIt, const T&)'\n"
           "include/fmt/format.h:2185:20: note: candidate: 'write(OutputIt, const T&)'\n")
    assert diagnostics(log) == [("include/fmt/ranges.h", 526)]


# ---------------------------------------------------------------------------- 11. a type and its impl blocks
RUST_TYPES = {
    "crate/Cargo.toml": '[package]\nname = "crate"\n',
    "crate/src/lib.rs": """\
        pub mod more;

        /// A parser over tokens.
""" + RUST_PARSER + """
        impl Default for Parser {
            fn default() -> Self {
                Parser { pos: 0 }
            }
        }

        unsafe impl Send for Parser {}
        """,
    "crate/src/more.rs": """\
        use crate::Parser;

        impl Parser {
            pub fn rewind(&mut self) {
                self.pos = 0;
            }
        }
        """,
    "gopkg/server.go": "package gopkg\n\ntype Server struct {\n\tport int\n}\n\nfunc NewServer() *Server {\n\treturn nil\n}\n",
    "gopkg/start.go": "package gopkg\n\nfunc (s *Server) Start() int {\n\treturn s.port\n}\n\n"
                      "func (s Server) Port() int {\n\treturn s.port\n}\n",
    "gopkg/sub/other.go": "package sub\n\ntype Server struct{}\n\nfunc (s *Server) Stop() {}\n",
}


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("typed")
    write_files(tmp / "proj", RUST_TYPES)
    db = tmp / "typed.db"
    index_paths(db, [str(tmp / "proj")], IndexOptions(steps=("text", "graph")))
    return db


def test_show_a_rust_type_picks_the_type_and_lists_its_impl_blocks(typed, capsys):
    # `struct Parser` and each `impl Parser` are nodes named Parser: `show Parser` asked which one
    assert main(["show", "--db", str(typed), "--json", "Parser"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["node"]["key"] == "rs:crate/src/lib.rs:Parser" and d["node"]["props"]["decl"] == "struct"
    blocks = [(b["trait"], [m["name"] for m in b["methods"]], b["path"].rsplit("/", 1)[-1]) for b in d["impls"]]
    assert blocks == [(None, ["advance"], "lib.rs"), ("Default", ["default"], "lib.rs"), ("Send", [], "lib.rs"),
                      (None, ["rewind"], "more.rs")]
    assert main(["show", "--db", str(typed), "Parser"]) == 0
    text = capsys.readouterr().out
    assert "impl blocks (4):" in text and "impl Default for Parser" in text and "rewind" in text
    # an impl block is still shown by its key, and `related` starts from the type too
    assert main(["show", "--db", str(typed), "--json", "rs:crate/src/lib.rs:Parser#2"]) == 0
    assert "impls" not in json.loads(capsys.readouterr().out)
    assert main(["related", "--db", str(typed), "--json", "Parser"]) == 0
    assert json.loads(capsys.readouterr().out)["node"]["key"] == "rs:crate/src/lib.rs:Parser"


def test_two_rust_types_of_one_name_stay_ambiguous_and_keep_their_own_impls(tmp_path, capsys):
    files = {"a/Cargo.toml": '[package]\nname = "a"\n', "a/src/lib.rs": "pub struct Item;\nimpl Item { pub fn f(&self) {} }\n",
             "b/Cargo.toml": '[package]\nname = "b"\n', "b/src/lib.rs": "pub enum Item { X }\nimpl Item { pub fn g(&self) {} }\n"}
    write_files(tmp_path / "w", files)
    db = tmp_path / "w.db"
    index_paths(db, [str(tmp_path / "w")], IndexOptions(steps=("text", "graph")))
    assert main(["show", "--db", str(db), "Item"]) != 0
    err = capsys.readouterr().err
    assert "names 2 nodes" in err and "#2" not in err              # the two types, not their impl blocks
    assert main(["show", "--db", str(db), "--json", "rs:a/src/lib.rs:Item"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [[m["name"] for m in b["methods"]] for b in d["impls"]] == [["f"]]


def test_show_a_go_type_lists_its_methods_with_receivers_in_its_package(typed, capsys):
    assert main(["show", "--db", str(typed), "--json", "go:gopkg/server.go:Server"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(m["name"], m["path"].rsplit("/", 1)[-1]) for m in d["methods"]] == [("Start", "start.go"),
                                                                                 ("Port", "start.go")]
    assert main(["show", "--db", str(typed), "go:gopkg/server.go:Server"]) == 0
    assert "methods (2):" in capsys.readouterr().out


# ---------------------------------------------------------------------------- 11. paths looked up by name
def test_paths_from_the_file_names_map_answer_as_the_table_scans(tmp_path):
    """A traceback's frames were looked up with up to four `LIKE '%/suffix'` scans of the files
    table each (200 frames, 800 scans); the file names' map answers the same for every path."""
    from kgsearch.query.anchors import _files_by_suffix, file_names, files_by_suffix

    body = "package a\n\nfunc Run() int {\n\treturn 1\n}\n"
    tree = {"src/a/b.go": body, "vendor/x/src/a/b.go": body, "other/b.go": body, "src/A/b.go": body,
            "lib/c_d.go": body, "lib/cxd.go": body, "deep/e/f/g/h/b.go": body, "e/f/g/h/b.go": body}
    write_files(tmp_path / "r", tree)
    db = tmp_path / "r.db"
    index_paths(db, [str(tmp_path / "r")], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        names = file_names(ix.conn)
        assert sorted(names) == ["b.go", "c_d.go", "cxd.go"]
        root = str(tmp_path / "r")
        probes = ["b.go", "a/b.go", "src/a/b.go", "./src/a/b.go", "A/b.go", "a/B.go", "x/src/a/b.go",
                  "/usr/lib/go/src/a/b.go", "C:\\work\\src\\a\\b.go", "lib/c_d.go", "c%d.go", "lib/c_d.go/",
                  "g/h/b.go", "f/g/h/b.go", "e/f/g/h/b.go", "zz/e/f/g/h/b.go", root + "/other/b.go", "nothing.go", ""]
        for path in probes:
            for least in (1, 2):
                want = _files_by_suffix(ix.conn, path, least)
                assert files_by_suffix(ix.conn, path, least, names) == want, (path, least)
        assert len(_files_by_suffix(ix.conn, "b.go")) == 6 and _files_by_suffix(ix.conn, "c%d.go") == []


def test_a_long_traceback_is_resolved_as_frame_by_frame(tmp_path):
    """resolve with the file names' map and its memo of repeated frames gives every node the
    evidence the scans gave, to the last digit."""
    from kgsearch.query.anchors import file_names, resolve
    from kgsearch.query.codetask import extract

    py = "def inner(x):\n    return outer(x)\n\n\ndef outer(x):\n    raise ValueError(x)\n\n\nclass K:\n    def inner(self):\n        return 1\n"
    write_files(tmp_path / "r", {"pkg/mod.py": py, "pkg/sub/mod.py": py, "other/mod.py": py, "pkg/util.py": py})
    db = tmp_path / "r.db"
    index_paths(db, [str(tmp_path / "r")], IndexOptions(steps=("text",)))
    frames = "".join(f'  File "/site-packages/{p}", line {n}, in {f}\n    x\n'
                     for p, n, f in [("pkg/mod.py", 2, "inner"), ("pkg/sub/mod.py", 6, "outer"), ("pkg/mod.py", 2, "inner"),
                                     ("mod.py", 10, "inner"), ("pkg/util.py", 6, "outer"), ("pkg/util.py", 6, "outer")])
    q = f"ValueError when the parser meets inner and outer\nTraceback (most recent call last):\n{frames}ValueError: 3\n"
    with Index.open(db, readonly=True) as ix:
        anchors = extract(q)
        assert sum(a.kind == "frame" for a in anchors) >= 4
        plain = resolve(ix.conn, anchors)
        assert plain and resolve(ix.conn, anchors, file_names(ix.conn)) == plain


# ---------------------------------------------------------------------------- overloads named by their name
def test_an_overloaded_name_is_its_implementation_and_show_lists_the_signatures(tmp_path, capsys):
    # `show useQuery` asked which of useQuery, useQuery#2, useQuery#3 (two signatures and the
    # implementation, in line order); now the implementation holds the plain key, and calls reach
    # it. Python's @typing.overload the same (since Python loader version 3: before, the keys
    # were in line order and calls reached the first signature, a body-less stub)
    files = {"web/q.ts": """\
                 export function useQuery(a: string): void;
                 export function useQuery(a: number): void;
                 export function useQuery(a: any) {
                   return fetchIt(a)
                 }
                 export function fetchIt(a: any) { return a }
                 export function caller() { return useQuery('x') }
                 """,
             "web/d.ts": "export function alone(a: string): void;\nexport function alone(a: number): void;\n",
             "pk/ov.py": """\
                 from typing import overload


                 class A:
                     @overload
                     def f(self, x: int) -> int: ...
                     @overload
                     def f(self, x: str) -> str: ...
                     def f(self, x):
                         return g(x)


                 def g(x):
                     return x


                 @overload
                 def h(x: int) -> int: ...
                 @overload
                 def h(x: str) -> str: ...
                 def h(x):
                     return x


                 def caller():
                     return h(1)
                 """}
    write_files(tmp_path / "p", files)
    db = tmp_path / "o.db"
    index_paths(db, [str(tmp_path / "p")], IndexOptions(steps=("text", "graph")))
    assert main(["show", "--db", str(db), "--json", "useQuery"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["node"]["key"] == "js:web/q.ts:useQuery" and d["node"]["line_start"] == 3
    assert [(o["key"], o["line_start"], o["signature"]) for o in d["overloads"]] == [
        ("js:web/q.ts:useQuery#2", 1, True), ("js:web/q.ts:useQuery#3", 2, True)]
    assert main(["show", "--db", str(db), "useQuery"]) == 0
    assert "overloads (2):" in capsys.readouterr().out
    # the qualified name too; a signature named by its own key stays itself
    assert main(["show", "--db", str(db), "--json", "web/q.ts:useQuery"]) == 0
    assert json.loads(capsys.readouterr().out)["node"]["key"] == "js:web/q.ts:useQuery"
    assert main(["show", "--db", str(db), "--json", "js:web/q.ts:useQuery#2"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["node"]["line_start"] == 1 and d["node"]["props"]["decl"] == "signature"
    assert [o["key"] for o in d["overloads"]] == ["js:web/q.ts:useQuery#3", "js:web/q.ts:useQuery"]
    # related and impact start from the implementation (it holds the calls)
    assert main(["related", "--db", str(db), "--json", "useQuery"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["node"]["key"] == "js:web/q.ts:useQuery"
    assert {(e["key"], e["direction"]) for e in d["edges"]["calls"]} == {("js:web/q.ts:fetchIt", "out"),
                                                                         ("js:web/q.ts:caller", "in")}
    assert main(["impact", "--db", str(db), "--json", "useQuery"]) == 0
    assert '"js:web/q.ts:caller"' in capsys.readouterr().out
    # Python: `A.f` and `pk.ov.A.f` are the implementation
    for ref in ("f", "pk.ov.A.f"):
        assert main(["show", "--db", str(db), "--json", ref]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["node"]["key"] == "py:pk.ov.A.f", ref
        assert [(o["key"], o["signature"]) for o in d["overloads"]] == [("py:pk.ov.A.f#2", True), ("py:pk.ov.A.f#3", True)]
    with Index.open(db, readonly=True) as ix:          # calls reach the code, and the code's calls are its own
        calls = set(ix.conn.execute("SELECT s.key, d.key FROM edges e JOIN nodes s ON s.id = e.src "
                                    "JOIN nodes d ON d.id = e.dst WHERE e.type = 'calls' AND s.key LIKE 'py:%'"))
    assert calls == {("py:pk.ov.A.f", "py:pk.ov.g"), ("py:pk.ov.caller", "py:pk.ov.h")}
    # only signatures (a .d.ts-like declaration): still two nodes to choose from
    assert main(["show", "--db", str(db), "alone"]) != 0
    assert "names 2 nodes" in capsys.readouterr().err
