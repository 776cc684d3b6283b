"""The source-language lexers (literals and comments blanked, offsets and lines kept), the scanner
helpers, the language specs (test paths, stack-trace frames) and what the walk skips."""
from __future__ import annotations

import json

import pytest

from conftest import run, write
from kgsearch.ingest import clex, jslex
from kgsearch.ingest.codescan import call_sites, skip_angles
from kgsearch.ingest.langspec import find_frames, is_generated_path, is_generated_text, is_test_path, spec_for
from kgsearch.ingest.walk import WalkReport, walk


def same_shape(text: str, code: str) -> None:
    assert len(code) == len(text)
    assert [i for i, c in enumerate(code) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]


def test_js_templates_regexes_and_comments():
    src = ('const a = `x ${ {b: "}"}.b } y ${`in ${c}`} z`; // c {\n'
           'let r = /[{"]/g, d = a / 2 / 3;\n'
           '/* { */ function f() { return \'}\' }\n'
           'if (x) /}/.test(s); y = z++ / 2\n')
    lx = jslex.lex(src)
    same_shape(src, lx.code)
    code = lx.code
    assert code.count("{") == code.count("}") == 5        # three holes, {b: ..} and f's body
    assert "/ 2 / 3" in code and "z++ / 2" in code         # divisions stay code
    assert 'let r = "     ",' in code and 'if (x) " ".test' in code   # /[{"]/g and /}/ blanked
    assert [src[s:e] for s, e in lx.comments] == ["// c {", "/* { */"]
    f = code.index("function f() {") + len("function f() ")
    assert lx.pairs[f] == code.rindex("}", 0, code.index("\nif")) and lx.line(f) == 3


def test_rust_raw_strings_nested_comments_and_lifetimes():
    src = ("fn f<'a>(x: &'a str) -> char {\n"
           "    let c = '}'; let b = b'{'; let s = r#\"}\"#; let u = '\\u{7d}';\n"
           "    /* a /* } */ b */ '{'\n}\n")
    lx = clex.lex(src, "rust")
    same_shape(src, lx.code)
    assert lx.code.count("{") == lx.code.count("}") == 1
    assert "<'a>" in lx.code and "&'a str" in lx.code       # lifetimes are not character literals
    assert lx.pairs[lx.code.index("{")] == lx.code.rindex("}")


def test_cpp_raw_strings_directives_and_uneven_if_branches():
    src = ('#include "a.h"\n'
           '#define BODY { return 1; }\n'
           '#if X\nint f(int x) {\n#else\nint f(void) {\n#endif\n'
           '  const char* s = R"d(})d"; char c = \'}\';  // }\n'
           '  return x > 1 ? 2 : 3;\n}\n'
           '#ifdef __cplusplus\nextern "C" {\n#endif\nint g();\n#ifdef __cplusplus\n}\n#endif\n')
    lx = clex.lex(src, "c")
    same_shape(src, lx.code)
    assert "int f(void)" not in lx.code and "int f(int x) {" in lx.code   # later branch blanked
    assert lx.code.count("{") == lx.code.count("}") == 2                  # f's body and extern "C"
    assert [src[s:e].split()[0] for s, e in lx.directives] == ["#include", "#define", "#if", "#else", "#endif",
                                                                "#ifdef", "#endif", "#ifdef", "#endif"]


def test_go_raw_strings_and_java_text_blocks():
    go = "package x\nvar s = `{\n}` + \"}\"\nfunc f() {}\n"
    lx = clex.lex(go, "go")
    same_shape(go, lx.code)
    assert lx.code.count("{") == 1
    java = 'class A {\n  String s = """\n    { "x" }\n    """;\n  char c = \'{\';\n}\n'
    lx = clex.lex(java, "java")
    same_shape(java, lx.code)
    assert lx.code.count("{") == lx.code.count("}") == 1


def test_unbalanced_brackets_pair_as_far_as_they_go():
    pairs, up = clex.pair_up("{ ( } ) [ ]")
    assert pairs[0] == 4 and pairs[2] == 6 and pairs[8] == 10      # "}" closes "{"; "(" waits for ")"
    assert up[2] == 0 and up[8] == -1


def test_doc_comments_above_a_definition():
    src = "// licence\n\n/**\n * Adds two.\n * @param a\n */\nint add(int a);\nint x; // trailing\nint y;\n"
    lx = clex.lex(src, "c")
    assert lx.doc_before(src.index("int add")) == "Adds two.\n@param a"
    assert lx.doc_before(src.index("int y")) == ""           # a trailing comment documents nothing


def test_call_sites_and_generic_arguments():
    code = "x = foo(1) + a.b(2); c->d(3); A::f(4); g<T>(5); obj().h(6); 12(3); f?.(1)"
    assert [r for _, r in call_sites(code, set())] == ["foo", "a.b", "c->d", "A::f", "g", "obj", "f"]
    assert [r for _, r in call_sites(code, {code.index("foo")})][0] == "a.b"
    assert skip_angles("Map<K, Vec<V>> x", 3) == len("Map<K, Vec<V>>")


@pytest.mark.parametrize("rel, test", [
    ("pkg/server_test.go", True), ("pkg/testdata/x.go", True), ("pkg/server.go", False),
    ("src/test/java/a/B.java", True), ("src/main/java/a/BTest.java", True), ("src/main/java/a/Contest.java", False),
    ("src/__tests__/a.ts", True), ("src/a.spec.tsx", True), ("src/a.test.mjs", True), ("src/contest.js", False),
    ("tests/it.rs", True), ("src/lib.rs", False), ("test/a_unittest.cc", True), ("src/x_test.cc", True),
    ("src/latest.c", False),
    # Cypress specs and support code; LLVM-style unittests/ folders
    ("cypress/e2e/login.cy.ts", True), ("cypress/support/commands.js", True), ("src/policy.ts", False),
    ("unittests/Support/PathTest.cpp", True), ("lib/unittest_helpers/x.c", False)])
def test_test_paths_by_language(rel, test):
    assert is_test_path(rel) is test


def test_generated_files():
    assert is_generated_path("api/x.pb.go") and is_generated_path("dist2/app.min.js")
    assert not is_generated_path("src/app.js")
    assert is_generated_text("// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n")
    assert not is_generated_text("// Package x does things.\n")
    assert spec_for("a/B.JAVA").name == "java" and spec_for("Makefile") is None


def test_trace_frames_of_every_language():
    text = ("thread 'main' panicked at src/bytes.rs:12:5:\n"
            "google.golang.org/grpc.(*Server).Serve(0xc0001)\n\t/home/u/grpc/server.go:123 +0x1d\n"
            "    at Object.foo (/app/src/x.js:10:5)\n"
            "    at com.x.Cls.m(Cls.java:42)\n"
            "src/format.cc:12:5: error: no member\n"
            "src/x.ts(3,4): error TS2345\n"
            "    #0 0x4005d4 in jv_free /src/jv.c:101:3\n")
    got = [(f.get("path"), f.get("line"), f.get("func")) for f in find_frames(text)]
    assert got == [("src/bytes.rs", 12, None), (None, None, "google.golang.org/grpc.(*Server).Serve"),
                   ("/home/u/grpc/server.go", 123, None), ("/app/src/x.js", 10, "Object.foo"),
                   ("Cls.java", 42, "com.x.Cls.m"), ("src/format.cc", 12, None), ("src/x.ts", 3, None),
                   ("/src/jv.c", 101, "jv_free")]


def test_frame_paths_start_at_a_word_boundary_and_v8_constructors_are_frames():
    text = ("log: a/b/x.go:12 +0x1\nfn@file:///app/y.js:3:4\nC:\\src\\z.cpp(7): error C2065\n"
            "    at new Dayjs (src/index.js:88:12)")
    got = [(f["path"], f["line"], f.get("func")) for f in find_frames(text)]
    assert got == [("a/b/x.go", 12, None), ("/app/y.js", 3, "fn"), ("C:\\src\\z.cpp", 7, None),
                   ("src/index.js", 88, "Dayjs")]
    assert [f["at"] for f in find_frames(text)] == [text.index("a/b"), text.index("fn@"), text.index("C:"),
                                                    text.index("at new")]


def test_frames_gated_by_the_extensions_a_text_writes_are_the_frames_of_every_pattern(shared_bench):
    """find_frames runs a pattern only when the text writes its path's extension after a dot;
    the frames are those of running every pattern over the whole text (the reference), on every
    code task of both shared sets, the cases above and random mixes of every language's lines."""
    import json
    import random

    from kgsearch.ingest.langspec import _find_frames

    texts = [json.loads(line)["text"] for name in ("code-tasks", "code-tasks-multi")
             for f in sorted((shared_bench / name / "tasks").glob("*/queries.jsonl"))
             for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = ["thread 'main' panicked at src/bytes.rs:12:5:", "google.golang.org/grpc.(*Server).Serve(0xc0001)",
             "\t/home/u/grpc/server.go:123 +0x1d", "    at Object.foo (/app/src/x.js:10:5)",
             "    at com.x.Cls.m(Cls.java:42)", "src/format.cc:12:5: error: no member", "src/x.ts(3,4): error TS2345",
             "    #0 0x4005d4 in jv_free /src/jv.c:101:3", "fn@file:///app/y.js:3:4", "C:\\src\\z.cpp(7): error C2065",
             "   3: tokio::runtime::task::raw::poll::h0123456789abcdef", "e: src/Main.kt:3:5 unresolved",
             "   at App.Run() in C:\\app\\Program.cs:line 12", "#1 /app/x.php(22): Foo->bar()", "a.c++:3:1: error: x",
             "x.JS:3:4", "see a.b.go:7 and lib.min.js:3:4", "Foo.kt:9)", "plain words. and dots.", "v1.2.3:4"]
    rng = random.Random(7)
    texts += ["\n".join(rng.choice(lines) for _ in range(rng.randint(1, 9))) for _ in range(400)]
    assert len(texts) > 600
    for t in texts:
        assert _find_frames(t, None, gated=True) == _find_frames(t, None, gated=False), t[:200]
    assert find_frames("x.JS:3:4 y.rs:1:2") == [{"at": 9, "path": "y.rs", "line": 1, "col": 2}]


def test_diagnostics_gated_by_what_follows_their_path_are_those_of_every_pattern(shared_bench):
    """diagnostics runs a pattern only when what it reads after the path occurs in the text; the
    places are those of every pattern over the whole text, on every code task of both shared
    sets and random mixes of compiler, checker and linter lines."""
    import json
    import random

    from kgsearch.query.diagnostics import _diagnostics

    texts = [json.loads(line)["text"] for name in ("code-tasks", "code-tasks-multi")
             for f in sorted((shared_bench / name / "tasks").glob("*/queries.jsonl"))
             for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = ["src/net/sock.c:120:5: error: 'x' undeclared", "error[E0425]: cannot find value", "  --> src/lib.rs:12:5",
             "Foo.java:42: error: x", "pkg/x.py:3:5: E501 line too long", "x.py:3: [C0114(missing-module-docstring), ]",
             "/app/src/a.ts", "  10:2  error  'x' is defined but never used  no-unused-vars", "src/a.ts: line 10, col 2, Error - x",
             "[src/a.c:12]: (error) leak", "x.cs(12,5): error CS0103: x", "src/x.ts:12:5 - error TS2345: x",
             "    x_test.go:12: got 1, want 2", "\t/src/x.go:12 +0x1d", "created by main.run", "Error Trace:\tx_test.go:45",
             "PHP Fatal error:  Uncaught Exception: boom in /app/x.php:22", "Warning: Undefined $y in /app/x.php on line 5",
             "x.h:7:3: note: candidate: f()", "x.cpp:9:5:   required from here", "meet at 10:30, ratio 3:1, John 3:16",
             "a.go:3:4: undefined: x", "", "   ", "b.rs:1:2:\n   error"]
    rng = random.Random(11)
    texts += ["\n".join(rng.choice(lines) for _ in range(rng.randint(1, 9))) for _ in range(400)]
    for t in texts:
        assert _diagnostics(t, gated=True) == _diagnostics(t, gated=False), t[:200]


def test_walk_skips_dependencies_and_minified_scripts(tmp_path):
    files = {
        "go.mod": "module x\n", "main.go": "package main\n", "vendor/modules.txt": "# x\n",
        "vendor/github.com/a/b/b.go": "package b\n",
        "Cargo.toml": "[package]\nname='x'\n", "target/debug/build/out.rs": "fn f() {}\n",
        "web/node_modules/p/index.js": "x\n", "web/app.js": "let a = 1\n", "web/app.min.js": "let a=1\n",
        "web/bundle.js": "x" * 9000, "third_party/z/z.c": "int z;\n",
    }
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    rep = WalkReport()
    got = sorted(f.rel for f in walk(tmp_path.resolve(), report=rep) if f.loader not in ("text", "kg"))
    assert got == ["main.go", "third_party/z/z.c", "web/app.js"]
    assert rep.counts()["generated"] == 2
    assert sorted(rep.generated) == [str(tmp_path.resolve() / "web" / n) for n in ("app.min.js", "bundle.js")]


def test_the_run_summary_names_the_minified_scripts_it_skipped(tmp_path):
    # (before: "skipped: 2 minified or bundled script(s)", and no way to tell which without -v)
    root = tmp_path / "web"
    write(root / "app.js", "let a = 1\n")
    write(root / "app.min.js", "let a=1\n")
    for i in range(4):
        write(root / f"bundle{i}.js", "x" * 9000)
    rc, out, err = run("index", root, "--db", tmp_path / "i.db")
    line = next(x for x in err.splitlines() if x.startswith("skipped:"))
    assert rc == 0 and line == (f"skipped: 5 minified or bundled script(s) ({root.resolve()}/app.min.js, "
                                f"{root.resolve()}/bundle0.js, {root.resolve()}/bundle1.js and 2 more)")
    rc, out, err = run("index", root, "--db", tmp_path / "j.db", "--json")
    assert json.loads(out)["skipped_generated"] == [f"{root.resolve()}/{n}" for n in
                                                    ("app.min.js", "bundle0.js", "bundle1.js", "bundle2.js", "bundle3.js")]


# ---- fast scans beside the patterns they replace (same matches, in order) ------------------
def _random_texts(alphabet, n, seed=0, most=40):
    import random

    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(alphabet) for _ in range(rng.randint(0, most))), rng


def test_go_short_names_equal_the_forward_pattern():
    """``short_names`` finds each ``:=`` and reads its names backwards (the forward ``_SHORT``
    was half of the Go loader's time): the same names, in order, for every window."""
    from kgsearch.ingest.gocode import _SHORT, short_names

    alphabet = ["a", "b", "x1", "_", "é", "٣", " ", "\t", ",", ":=", ":", "=", "\n", "(", ".", "::=", "  ,  ", "\u00a0"]
    for text, rng in _random_texts(alphabet, 5000):
        if rng.random() < 0.05:
            text += "q" * 300 + " , " + "w" * 600 + " := 1"      # (names longer than the first window)
        lo = rng.randint(0, len(text))
        hi = rng.randint(lo, len(text))
        assert short_names(text, lo, hi) == [m.group(1) for m in _SHORT.finditer(text, lo, hi)], (text, lo, hi)
    code = "func f() {\n\ta, b := g()\n\tx :=h\n\tfor i := range y {}\n\tz = 1\n}"
    assert short_names(code, 0, len(code)) == ["a, b", "x", "i"]


def test_go_literal_types_equal_the_forward_pattern():
    from kgsearch.ingest.gocode import _LITERAL, literal_types

    alphabet = ["a", "B", "x1", "_", "é", "1", "٣", " ", ".", "{", "{", "\n", "(", "ab.Cd", "..", "&"]
    for text, _ in _random_texts(alphabet, 8000, seed=1):
        assert literal_types(text) == [(m.start(1), m.group(1)) for m in _LITERAL.finditer(text)], text
    assert literal_types("x := &pkg.T{A: 1}; y := T{}; a.b.C{}; 1x{}; if ok {") == [(6, "pkg.T"), (24, "T")]


def test_rust_attribute_scan_equals_the_blank_pattern():
    """``_attrs_start`` finds the last non-blank before an item with ``rstrip`` (``\\s`` is
    ``str.isspace``), not by trying ``\\s*$`` at each of 200 characters."""
    from kgsearch.ingest.rscode import _WS_BEFORE

    alphabet = ["a", "]", " ", "\t", "\n", "\u00a0", "\u2003", "\x1c", "\x85", "x"]
    for text, rng in _random_texts(alphabet, 5000, seed=2, most=300):
        at = rng.randint(0, len(text))
        lo = max(0, at - 200)
        ws = _WS_BEFORE.search(text, lo, at)
        assert lo + len(text[lo:at].rstrip()) - 1 == ws.start() - 1, (text, at)


def test_angles_answers_what_skip_angles_answers():
    """Angles (one pass, then look-ups) gives skip_angles' answer for every '<' of random text
    made of what it turns on (a file of unclosed `fn a<` cost the Rust loader n^2: 13.5 s for a
    60 KB line); the loader's nodes on such a file are the reference's."""
    import random
    from pathlib import Path

    from kgsearch.ingest import codescan
    from kgsearch.ingest.codescan import Angles, skip_angles
    from kgsearch.ingest.loaders import get_loader
    from kgsearch.types import LoadOptions

    rng = random.Random(3)
    alphabet = list("<>;{}()-=a ") + ["->", "=>", ">>=", "<<=", "<<", ">>"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        angles = Angles(text)
        for at in range(len(text)):
            assert angles.skip(at) == skip_angles(text, at), (text, at)
    assert Angles("fn f<T: Into<Vec<u8>>>(x: T) -> u8 {}").skip(4) == len("fn f<T: Into<Vec<u8>>>")
    assert Angles("x <y; z>").skip(2) == 4 and Angles("a<b").skip(1) == 3
    src = "fn ok<T>(x: T) {}\n" + "fn a<" * 200 + "\nimpl<T> S<T> { fn m(&self) {} }\n"
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "f.rs"
        f.write_text(src)
        fast = get_loader("rust").load(f, "f.rs", LoadOptions())
        real = Angles.skip
        try:
            Angles.skip = lambda self, at: codescan.skip_angles(self.code, at)
            ref = get_loader("rust").load(f, "f.rs", LoadOptions())
        finally:
            Angles.skip = real
    assert [(n.key, n.line_start, n.line_end) for n in fast.nodes] == [(n.key, n.line_start, n.line_end) for n in ref.nodes]
    assert {n.name for n in fast.nodes} >= {"ok", "m"}


def test_find_end_answers_what_the_plain_scan_answers():
    """find_end keeps its last search: a file of item keywords with no terminator (`mod mod ...`)
    searched to its end once per keyword (n^2: 60 KB of `mod ` 2.2 s in the Rust loader). Its
    answers are the plain scan's for every offset of random text, in order and at random, and
    the Rust loader counts the searches: one for such a file, not one per keyword."""
    import random

    from kgsearch.ingest import codescan
    from kgsearch.ingest.codescan import find_end, find_end_reference

    rng = random.Random(5)
    for _ in range(2000):
        text = "".join(rng.choice(";{}()[] ab\n") for _ in range(rng.randint(0, 40)))
        pairs, stack = {}, []
        for i, c in enumerate(text):
            if c in "({[":
                stack.append(i)
            elif c in ")}]" and stack:
                pairs[stack.pop()] = i
        stop = rng.choice([";{", "{;", ";"])
        offsets = list(range(len(text) + 1))
        for at in offsets + rng.sample(offsets, len(offsets)):
            assert find_end(text, pairs, at, stop) == find_end_reference(text, pairs, at, stop), (text, at, stop)
    searches = []
    real = codescan._END

    class Counting:
        def search(self, code, at):
            searches.append(at)
            return real.search(code, at)

    codescan._END = Counting()
    try:
        import tempfile
        from pathlib import Path

        from kgsearch.ingest.loaders import get_loader
        from kgsearch.types import LoadOptions

        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "f.rs"
            f.write_text("mod " * 500)
            get_loader("rust").load(f, "f.rs", LoadOptions())
    finally:
        codescan._END = real
    assert len(searches) <= 2


def test_java_import_matches_are_the_regex_finditer():
    """import_matches skips a run of name characters once an `import` in it failed (the regex
    ran from every `import` to the end of the run: `import import ...` without `;` cost n^2,
    8.9 s for 60 KB); it finds exactly the regex's matches on random text."""
    import random

    from kgsearch.ingest.javacode import _IMPORT, import_matches

    rng = random.Random(4)
    pieces = ["import", "import ", "static ", " ", "\n", ".", "*", ";", "a", "x.y", "ximport", "_", "-", "(", ".*"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))) for _ in range(5000)]
    texts += ["import java.util.*;\nimport static a.B.c;\nimport  a . b ;", "import import a;", "import " * 300]
    for t in texts:
        assert [(m.span(), m.groups()) for m in import_matches(t)] == [(m.span(), m.groups()) for m in _IMPORT.finditer(t)]
    from kgsearch.ingest.javacode import _PACKAGE, _PACKAGE_HEAD

    for t in [x.replace("import", "package") for x in texts]:
        got = import_matches(t, _PACKAGE, _PACKAGE_HEAD, first=True)
        want = _PACKAGE.search(t)
        assert [(m.span(), m.groups()) for m in got] == ([(want.span(), want.groups())] if want else [])


def test_js_import_from_is_the_plain_match():
    """import_from answers _IMPORT_FROM.match at every keyword, skipping the keywords of a run
    that cannot match (trying each ran to the end of the run: `import import ...` cost n^2,
    6.8 s for 60 KB)."""
    import random
    import re

    from kgsearch.ingest.jsnames import _IMPORT_FROM, import_from

    rng = random.Random(6)
    pieces = ["import", "export", " ", "\n", "type ", "{", "}", ",", "*", "$", "a", "from", "from ", '"x"', '"', ";",
              "(", "ximport", "as "]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))) for _ in range(5000)]
    texts += ['import a, { b as c } from "./x";\nexport * from "./y";', "import " * 300 + 'from "z"']
    for t in texts:
        skip = -1
        for k in re.finditer(r"import|export|require|module", t):
            m, skip = import_from(t, k.start(), skip)
            r = _IMPORT_FROM.match(t, k.start())
            assert (m and (m.span(), m.groups())) == (r and (r.span(), r.groups())), (t, k.start())


def test_rust_use_inside_another_use_is_not_read_again(monkeypatch, tmp_path):
    """`use use use ...` with no `;` (60 KB: 19 s): each `use` read the rest of the file again.
    A `use` inside another's tree is no declaration: read once; the statement ends are counted
    (deterministic, unlike a time), and the file's real items are still there."""
    from kgsearch.ingest import rscode, rsmodules
    from kgsearch.ingest.loaders import get_loader
    from kgsearch.types import LoadOptions

    calls = []
    real = rscode.find_end
    for mod in (rscode, rsmodules):        # items are read in rscode, `use` trees in rsmodules
        monkeypatch.setattr(mod, "find_end", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    f = tmp_path / "f.rs"
    f.write_text("use crate::a::B;\nfn f() {}\n" + "use " * 2000 + "\n")
    res = get_loader("rust").load(f, "f.rs", LoadOptions())
    assert len(calls) < 20
    assert [n.name for n in res.nodes if n.kind == "function"] == ["f"]


def test_overloads_of_one_name_get_their_keys_in_linear_time():
    """The n-th definition of one name in a scope looked for a free ``#k`` from ``#2`` up: a class
    of 5,000 ``void f() {}`` (60 KB of Java) took 5.0 s to load. The lookups are counted
    (deterministic, unlike a time): about one per definition; the keys are the same."""
    from kgsearch.ingest.clex import lex
    from kgsearch.ingest.codemodel import Builder, Def
    from kgsearch.ingest.langspec import JAVA

    class Counting(set):
        probes = 0

        def __contains__(self, k):
            Counting.probes += 1
            return super().__contains__(k)

    n = 3000
    text = "class A {\n" + "void f() {}\n" * n + "}\n"
    b = Builder(lex(text, "java"), "A.java", JAVA)
    b.keys = Counting()
    at = [i for i in range(len(text)) if text.startswith("void", i)]
    b.nest([Def("class", "A", 0, len(text), 8, 6)] + [Def("method", "f", s, s + 11, s + 9, s + 5) for s in at])
    res = b.build()
    keys = [r.key for r in res.nodes]
    assert keys[:4] == ["java:A.java", "java:A.java:A", "java:A.java:A.f", "java:A.java:A.f#2"]
    assert keys[-1] == f"java:A.java:A.f#{n}" and len(set(keys)) == n + 2
    assert Counting.probes < 3 * n
