"""One spec per source language: what a file of that language is and what its ecosystem's
conventions say about it. The loaders read their spec; the query side reads the same specs for
anchors (stack-trace and diagnostic frames) and demotion (tests, vendored and generated code).

A spec says:

* ``name`` (the loader name, ``--format``), ``ns`` (the key and edge namespace the language's
  loader writes: JavaScript and TypeScript share ``js``, C and C++ share ``c``, because their
  files import each other), ``extensions``, and comment syntax;
* ``test_dirs`` (a folder with one of these names holds tests), ``test_names`` (file-name
  patterns, :mod:`fnmatch` syntax on the base name) and ``test_paths`` (path fragments such as
  Maven's ``src/test/``); :func:`is_test_path`;
* ``test_dir_names``: folder-name patterns (:mod:`fnmatch`) of test projects (``*.Tests``);
* ``generated_names`` (file-name patterns of generated or minified files: ``*.min.js``,
  ``*.pb.go``), ``generated_dirs`` (build output folders: .NET's ``obj/``) and ``GENERATED_MARK`` (the first lines say "Code generated ... DO NOT EDIT" or
  ``@generated``); :func:`is_generated_path`;
* ``frames``: regular expressions for the language's stack-trace frames and compiler
  diagnostics, each with the named groups ``path`` and ``line`` and, where the format has
  them, ``col`` and ``func`` (:func:`find_frames`).

Vendored code (:data:`VENDORED_DIRS`, :func:`is_vendored_path`) is the same for every
language. What the walk skips and what it indexes with ``FLAG_VENDORED``: see
:mod:`kgsearch.ingest.walk`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = ["LangSpec", "SPECS", "BY_NAME", "spec_for", "is_test_path", "is_generated_path", "is_vendored_path",
           "is_generated_text", "find_frames", "path_group", "VENDORED_DIRS", "MINIFIED_NAMES"]


@dataclass(frozen=True)
class LangSpec:
    name: str
    ns: str
    extensions: tuple[str, ...]
    file_names: tuple[str, ...] = ()          # files of the language without its extension (Rakefile)
    line_comment: tuple[str, ...] = ("//",)
    block_comment: tuple[tuple[str, str], ...] = (("/*", "*/"),)
    nested_comments: bool = False
    doc_comments: tuple[str, ...] = ("/**", "///")     # comment openings that document what follows
    test_dirs: frozenset[str] = frozenset({"test", "tests", "testing"})
    test_names: tuple[str, ...] = ()
    test_paths: tuple[str, ...] = ()
    test_dir_names: tuple[str, ...] = ()      # folder-name patterns of test projects (.NET's `*.Tests/`)
    generated_names: tuple[str, ...] = ()
    generated_dirs: frozenset[str] = frozenset()    # build output folders of the language (.NET's obj/, bin/)
    frames: tuple[re.Pattern, ...] = ()
    # tests must sit in the folder (package) of the code they test (Go: `x_test.go` beside `x.go`):
    # a test file's path then names only that folder, which every test there shares, and the code
    # it tests is in its own package, where calls and names reach it (explore/testscope.py)
    tests_beside: bool = False


# a path, as traces print it (no spaces); never from inside a word or a path (the same matches, but
# each word of a long pasted log is tried once, not from each of its characters)
_P = r"(?<![\w.~+-])(?P<path>(?:[A-Za-z]:)?[\w.@~+/\\-]*?"


def _frames(*patterns: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p, re.M) for p in patterns)


JS_EXT = (".js", ".mjs", ".cjs", ".jsx")
TS_EXT = (".ts", ".mts", ".cts", ".tsx")
_JS_TESTS = dict(test_dirs=frozenset({"test", "tests", "__tests__", "__mocks__", "spec", "e2e", "cypress"}),
                 test_names=("*.test.*", "*.spec.*", "*.cy.*", "*-test.js", "*_test.js"))
# a browser's script URL before the path: the scheme and host are no folders (http://localhost:3000/
# src/x.ts, chrome-extension://<id>/background/index.js, webpack-internal:///./src/App.jsx)
_URL = r"(?:file://|[A-Za-z][\w+.-]*://[^/\s()]*/(?:\./)?)?"
_JS_FRAMES = _frames(
    # V8 / Node:  at fn (src/x.js:10:5)   at src/x.js:10:5   at async fn (file:///x.mjs:3:1)
    r"\bat (?:(?:async |new )?(?P<func>[^\s()]+) \()?" + _URL + _P + r"\.(?:[cm]?[jt]sx?)):(?P<line>\d+):(?P<col>\d+)",
    # Firefox / Safari:  fn@src/x.js:10:5   fn@http://localhost:3000/src/x.js:10:5
    r"(?P<func>[\w$.<>/]*)@" + _URL + _P + r"\.(?:[cm]?[jt]sx?)):(?P<line>\d+):(?P<col>\d+)",
    # tsc:  src/x.ts(12,5): error TS2345   or   src/x.ts:12:5 - error TS2345
    _P + r"\.(?:[cm]?tsx?))\((?P<line>\d+),(?P<col>\d+)\)",
    _P + r"\.(?:[cm]?[jt]sx?)):(?P<line>\d+):(?P<col>\d+) - (?:error|warning)",
)

JAVASCRIPT = LangSpec(
    "javascript", "js", JS_EXT, **_JS_TESTS,
    generated_names=("*.min.js", "*.min.mjs", "*.min.cjs", "*.bundle.js", "*-min.js", "*.umd.js"),
    frames=_JS_FRAMES)
TYPESCRIPT = LangSpec(
    "typescript", "js", TS_EXT, **_JS_TESTS,
    generated_names=("*.generated.ts",), frames=_JS_FRAMES)

GO = LangSpec(
    "go", "go", (".go",), doc_comments=("//", "/*"),
    test_dirs=frozenset({"testdata"}), test_names=("*_test.go",), tests_beside=True,
    generated_names=("*.pb.go", "*.pb.gw.go", "*_generated.go", "zz_generated*.go", "*_string.go"),
    frames=_frames(
        # goroutine dumps and panics:  \t/home/u/x/server.go:123 +0x1d
        _P + r"\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?",
        # the function line above it:  google.golang.org/grpc.(*Server).Serve(0xc0001, ...)
        r"^(?P<func>[\w./-]+(?:\.\(\*?\w+\))?\.\w+)\((?:0x|\.\.\.|\)|\{)",
        # compiler / vet / test failures:  ./x.go:12:5: undefined: foo
        _P + r"\.go):(?P<line>\d+):(?P<col>\d+):"))

RUST = LangSpec(
    "rust", "rs", (".rs",), nested_comments=True, doc_comments=("///", "//!", "/**", "/*!"),
    # Cargo's test and bench targets: benches/ holds benchmarks built with the dev-dependencies
    # (as Java's src/jmh/), never the library a fix changes
    test_dirs=frozenset({"tests", "benches"}),
    # a workspace's test-only member crates (tokio's tests-integration/, tests-build/; the
    # integration-tests/ or *_tests/ crates of others): never in the published library
    test_dir_names=("tests-*", "tests_*", "*-tests", "*_tests"),
    frames=_frames(
        # panics:  thread 'main' panicked at src/x.rs:12:5   (older: panicked at 'msg', src/x.rs:12:5)
        # backtraces:  at ./src/x.rs:12:5   compiler:  --> src/x.rs:12:5
        _P + r"\.rs):(?P<line>\d+):(?P<col>\d+)",
        # backtrace function lines:  3: tokio::runtime::task::harness::Harness<T,S>::poll
        r"^\s*\d+: (?P<func>[\w:<>, ]+::\w+)(?:::h[0-9a-f]{16})?$"))

JAVA = LangSpec(
    "java", "java", (".java",),
    test_names=("*Test.java", "*Tests.java", "*IT.java", "Test*.java", "*TestCase.java"),
    test_paths=("src/test/", "src/testFixtures/", "src/it/", "src/jmh/"),
    generated_names=(),
    frames=_frames(
        # at com.x.Cls.method(Cls.java:42)   at com.x.Cls$Inner.lambda$run$0(Cls.java:42)
        # Java 9+: at java.base/java.util.X.m(X.java:1)   at app//x.Y.m(..)   at com.a@1.2/com.a.B.m(..)
        r"\bat (?P<func>[\w$.<>/@]+)\((?P<path>[\w$-]+\.(?:java|kt)):(?P<line>\d+)\)",
        # javac:  src/main/java/x/Y.java:12: error: cannot find symbol
        _P + r"\.java):(?P<line>\d+): (?:error|warning)"))

KOTLIN = LangSpec(
    # Kotlin shares Java's namespace: the two call and import each other in one tree (Android)
    "kotlin", "java", (".kt", ".kts"), nested_comments=True,
    test_names=("*Test.kt", "*Tests.kt", "*IT.kt", "*TestCase.kt", "*Spec.kt"),
    # Gradle source sets: src/test/, src/androidTest/, and Kotlin Multiplatform's src/<target>Test/
    test_paths=("src/test/", "src/testFixtures/", "src/androidTest/", "src/androidUnitTest/",
                "src/androidInstrumentedTest/", "src/commonTest/", "src/jvmTest/", "src/jsTest/", "src/iosTest/",
                "src/nativeTest/"),
    frames=_frames(
        JAVA.frames[0].pattern,            # the JVM's frames name .kt files as .java ones
        # kotlinc / Gradle:  e: file:///home/u/app/src/main/kotlin/a/B.kt:12:5 Unresolved reference: foo
        r"^[ew]: (?:file://)?" + _P + r"\.kts?):(?P<line>\d+):(?P<col>\d+) ",
        # kotlinc 1.x:  e: /home/u/app/src/main/kotlin/a/B.kt: (12, 5): Unresolved reference: foo
        r"^[ew]: " + _P + r"\.kts?): \((?P<line>\d+), (?P<col>\d+)\): "))

PHP = LangSpec(
    "php", "php", (".php",), line_comment=("//", "#"),
    test_names=("*Test.php", "*TestCase.php"),
    frames=_frames(
        # PHP Fatal error:  Uncaught Exception: boom in /var/www/src/A.php:12   (or "... on line 12")
        r"\bin " + _P + r"\.php)(?::| on line )(?P<line>\d+)",
        # stack trace:  #0 /var/www/src/A.php(12): App\Models\User->save()
        r"^#\d+ " + _P + r"\.php)\((?P<line>\d+)\): (?P<func>[\w\\]+(?:->|::)?\w*)",
        # PHPUnit:  /home/u/app/tests/UserTest.php:42
        r"^" + _P + r"\.php):(?P<line>\d+)$"))

RUBY = LangSpec(
    "ruby", "rb", (".rb", ".rake", ".gemspec", ".ru"), file_names=("Rakefile", "Gemfile", "Guardfile", "Capfile"),
    line_comment=("#",), block_comment=(("=begin", "=end"),), doc_comments=("#",),
    test_dirs=frozenset({"test", "tests", "spec", "features"}), test_names=("*_spec.rb", "*_test.rb", "test_*.rb"),
    frames=_frames(
        # backtraces:  from /app/models/user.rb:12:in `save'   app/models/user.rb:12:in `block in save'
        # Ruby 3.4:  /app/models/user.rb:12:in 'User#save'   'block (2 levels) in User.find'   '<main>'
        _P + r"\.(?:rb|rake)):(?P<line>\d+):in [`'](?:(?:block|rescue|ensure)(?: \(\d+ levels\))? in )?"
             r"(?:(?:[A-Z][\w:]*[#.])?(?P<func>[A-Za-z_]\w*)[?!=]?'|<)",
        # a place without a function:  rspec ./spec/models/user_spec.rb:12   syntax errors  x.rb:3: syntax error
        _P + r"\.(?:rb|rake)):(?P<line>\d+)(?=[: \t]|$)(?!:in )"))

CSHARP = LangSpec(
    "csharp", "cs", (".cs", ".csx"),
    test_names=("*Tests.cs", "*Test.cs"), test_dir_names=("*.Tests", "*.Test", "*.UnitTests", "*.IntegrationTests"),
    generated_names=("*.Designer.cs", "*.designer.cs", "*.g.cs", "*.g.i.cs", "*.generated.cs", "*.AssemblyInfo.cs"),
    generated_dirs=frozenset({"obj", "bin"}),
    frames=_frames(
        # .NET:  at Shop.Cart.Add(String item) in C:\src\Shop\Cart.cs:line 42   (the path may hold spaces)
        r"\bat (?P<func>[^\s(]+)\([^()\n]*\) in (?P<path>[^\n]*?\.cs):line (?P<line>\d+)",
        # csc / dotnet build:  src/Cart.cs(12,5): error CS1002: ; expected
        _P + r"\.cs)\((?P<line>\d+),(?P<col>\d+)\): (?:error|warning) CS\d+"))

_C_FRAMES = _frames(
    # gcc / clang:  src/x.c:12:5: error: ...   (also warning, note, fatal error)
    _P + r"\.(?:c|h|cc|cpp|cxx|c\+\+|hh|hpp|hxx|h\+\+|inl|ipp|tpp)):(?P<line>\d+):(?:(?P<col>\d+):)? "
         r"(?:fatal error|error|warning|note)",
    # MSVC:  src\x.cpp(12): error C2065   or   x.cpp(12,5): warning
    _P + r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx|inl))\((?P<line>\d+)(?:,(?P<col>\d+))?\) ?: (?:fatal error|error|warning)",
    # sanitizers / gdb / lldb:  #0 0x4005d4 in func /src/x.c:12:5   or   func (...) at x.c:12
    r"\bin (?P<func>[\w:~<>]+)(?:\([^)]*\))? " + _P + r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx|inl)):(?P<line>\d+)",
    r"\b(?P<func>[\w:~<>]+) \([^)]*\) at " + _P + r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx|inl)):(?P<line>\d+)")
_C_TESTS = dict(test_dirs=frozenset({"test", "tests", "testing", "unittest", "unittests"}),  # LLVM's unittests/
               # test projects named for what they test: Catch2's projects/ExtraTests, WebKit's
               # LayoutTests, unit_tests/, integration-tests/
               test_dir_names=("*Tests", "*_tests", "*-tests"),
               test_names=("*_test.c", "*_test.cc", "*_test.cpp", "*_unittest.cc", "*_unittest.cpp", "test_*.c",
                           "test_*.cc", "test_*.cpp", "*.tests.cpp", "*_tests.cpp", "*_tests.c"))
C = LangSpec("c", "c", (".c", ".h"), **_C_TESTS, frames=_C_FRAMES)
CPP = LangSpec("cpp", "c", (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp"),
               **_C_TESTS, frames=_C_FRAMES)

SPECS: tuple[LangSpec, ...] = (JAVASCRIPT, TYPESCRIPT, GO, RUST, JAVA, KOTLIN, CSHARP, PHP, RUBY, C, CPP)
BY_NAME = {s.name: s for s in SPECS}
_BY_EXT = {ext: s for s in SPECS for ext in s.extensions}
_BY_FILE_NAME = {name: s for s in SPECS for name in s.file_names}

# Vendored copies of other projects' code, in every language. Go modules vendored with
# ``go mod vendor`` (a ``vendor/modules.txt``) and ``node_modules`` are not indexed at all
# (they are the dependencies, often larger than the project); the others are indexed and
# marked (FLAG_VENDORED) so that a search ranks the project's own code first.
VENDORED_DIRS = frozenset({"vendor", "vendored", "third_party", "third-party", "thirdparty", "3rdparty",
                           "external", "extern", "deps", "bower_components", "jspm_packages"})
MINIFIED_NAMES = ("*.min.js", "*.min.mjs", "*.min.cjs", "*-min.js")
GENERATED_MARK = re.compile(r"^(?://|/\*|\*|#)?[^\n]{0,40}(?:Code generated\b[^\n]*DO NOT EDIT|@generated\b"
                            r"|Generated by the protocol buffer compiler|This file is automatically generated"
                            r"|AUTO-GENERATED FILE|DO NOT EDIT! This file was generated"
                            # single-header amalgamations (Catch2's and SQLite's banners): the
                            # headers and sources they were merged from are the code to edit
                            r"|This file has been merged from multiple|This file is an amalgamation of"
                            # parser, scanner and binding generators' banners (the grammar or the
                            # interface file is the code to edit)
                            r"|A Bison parser, made by|A lexical scanner generated by flex|produced by gperf"
                            r"|This file was automatically generated by SWIG|Meta object code from reading"
                            r"|Generated by re2c"
                            # .NET's tools (resx, WinForms, gRPC, source generators)
                            r"|<auto-generated\b)",
                            re.M | re.I)


def spec_for(rel: str) -> LangSpec | None:
    """The spec of the language a path is written in, by its extension (``None``: not one).

    >>> spec_for("src/a.tsx").name, spec_for("lib/x.h").name, spec_for("README.md")
    ('typescript', 'c', None)
    """
    base = rel.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return _BY_EXT.get(base[dot:].lower()) if dot > 0 else _BY_FILE_NAME.get(base)


def _parts(rel: str) -> list[str]:
    return rel.replace("\\", "/").split("/")


def is_test_path(rel: str, spec: LangSpec | None = None) -> bool:
    """A test file by its language's conventions (``rel`` relative to the indexed root):
    a ``test``/``tests``/``testing`` folder or the language's test folders (``__tests__``,
    Go's ``testdata``), its test file names (``*_test.go``, ``*.test.ts``, ``*Test.java``) or
    path fragments (``src/test/``). Rust's ``#[cfg(test)]`` modules are found by the loader.

    >>> is_test_path("pkg/server_test.go"), is_test_path("src/test/java/a/B.java"), is_test_path("src/a.ts")
    (True, True, False)
    """
    spec = spec or spec_for(rel)
    parts = _parts(rel)
    dirs = parts[:-1]
    if any(p in ("test", "tests", "testing") for p in dirs):
        return True
    if spec is None:
        return False
    if any(p in spec.test_dirs for p in dirs):
        return True
    if spec.test_dir_names and any(fnmatchcase(p, pat) for p in dirs for pat in spec.test_dir_names):
        return True
    base = parts[-1]
    if any(fnmatchcase(base, pat) for pat in spec.test_names):
        return True
    path = "/".join(parts)
    return any(("/" + path).find("/" + frag) >= 0 for frag in spec.test_paths)


def is_vendored_path(rel: str) -> bool:
    """Under a vendored-code folder (:data:`VENDORED_DIRS`).

    >>> is_vendored_path("third_party/zlib/inflate.c"), is_vendored_path("src/vendors.js")
    (True, False)
    """
    return any(p.lower() in VENDORED_DIRS for p in _parts(rel)[:-1])


def is_generated_path(rel: str, spec: LangSpec | None = None) -> bool:
    """A generated or minified file by its name (``*.min.js``, ``*.pb.go``) or its language's build
    output folder (a C# file under ``obj/``)."""
    spec = spec or spec_for(rel)
    parts = _parts(rel)
    if spec is not None and spec.generated_dirs and any(p in spec.generated_dirs for p in parts[:-1]):
        return True
    return spec is not None and any(fnmatchcase(parts[-1], pat) for pat in spec.generated_names)


def is_generated_text(head: str) -> bool:
    """The first lines of a file say it was generated (Go's ``// Code generated ... DO NOT
    EDIT.``, ``@generated``, protoc's banner, a single-header amalgamation's, Bison's, flex's,
    gperf's, SWIG's, Qt moc's, re2c's, .NET's ``// <auto-generated>``)."""
    head = head[:2000]
    if not any(w in head for w in ("enerated", "ENERATED", "DO NOT EDIT", "merged from", "amalgamation", "Bison", "gperf",
                                    "Meta object")):
        return False                               # the usual case, without the pattern
    return bool(GENERATED_MARK.search(head))


_DOT_SUFFIX = re.compile(r"\.([\w+]+)")


def path_group(pattern: str) -> tuple[int, int] | None:
    """Where a frame or diagnostic pattern's ``(?P<path>...)`` group is: (the index its content
    starts at, the index of its closing parenthesis); None without one."""
    at = pattern.find("(?P<path>")
    if at < 0:
        return None
    depth, i = 0, at
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        depth += c == "("
        depth -= c == ")"
        if depth == 0:
            return at + len("(?P<path>"), i
        i += 1
    return None


def _path_extension(pattern: str) -> re.Pattern | None:
    """The extensions a frame pattern's ``path`` group can end with, as a pattern matching a whole
    line of :func:`_suffixes` (None: no path group, or one that is not ``...\\.EXT``)."""
    where = path_group(pattern)
    if where is None:
        return None
    group = pattern[where[0]:where[1]]
    dot = group.rfind("\\.")
    ext = group[dot + 2:] if dot >= 0 else ""
    if not ext or re.search(r"[^\w+?:()|\[\]]", ext):   # (only letters, '+', classes, groups, ?)
        return None
    return re.compile(r"^(?:" + ext + r")$", re.M)


_GATES: dict[str, re.Pattern | None] = {}


def _suffixes(text: str) -> str:
    """Every run of word characters (and ``+``) after a dot in ``text``, one per line: a path the
    frame patterns read ends with ``.EXT`` before a ``:``, ``(``, ``)`` or space, so its
    extension is one of these whole."""
    return "\n".join(set(_DOT_SUFFIX.findall(text)))


def find_frames(text: str, spec: LangSpec | None = None) -> list[dict]:
    """Stack-trace frames and diagnostics in ``text`` (for every language, or ``spec``'s):
    dicts with ``path``, ``line`` and, when the format gives them, ``col`` and ``func``, in
    order of appearance; ``at`` is where each starts in ``text``.

    >>> [f["path"] for f in find_frames("at com.x.Y.run(Y.java:42)\\nsrc/a.rs:12:5")]
    ['Y.java', 'src/a.rs']
    """
    return _find_frames(text, spec, gated=True)


def _find_frames(text: str, spec: LangSpec | None, gated: bool) -> list[dict]:
    """:func:`find_frames`; ``gated`` False runs every pattern over the whole text (the
    reference): gated, a pattern whose path must end with an extension the text never writes
    after a dot is not run (a Rust panic is not searched for Java's, Go's, C's... frames, ~10 ms
    of a 3,600-character issue)."""
    out, seen, ran = [], set(), set()
    suffixes = _suffixes(text) if gated else ""
    for s in ((spec,) if spec else SPECS):
        for pat in s.frames:
            if pat.pattern in ran:               # JavaScript and TypeScript, C and C++ share theirs
                continue
            ran.add(pat.pattern)
            if gated:
                if pat.pattern not in _GATES:
                    _GATES[pat.pattern] = _path_extension(pat.pattern)
                gate = _GATES[pat.pattern]
                if gate is not None and not gate.search(suffixes):
                    continue
            for m in pat.finditer(text):
                g = m.groupdict()
                if not g.get("path") and not g.get("func"):
                    continue
                k = (m.start(), g.get("path"))
                if k in seen:
                    continue
                seen.add(k)
                out.append({"at": m.start(), **{x: v for x, v in g.items() if v}})
    out.sort(key=lambda f: f["at"])
    for f in out:
        if "line" in f:
            f["line"] = int(f["line"])
        if "col" in f:
            f["col"] = int(f["col"])
    return out
