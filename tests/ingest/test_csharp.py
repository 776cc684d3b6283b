"""The C# loader: its lexer dialect (verbatim, interpolated and raw strings, character literals,
directives), its definitions (exact kinds, names, spans and decls on a file holding every
construct), its edges in an indexed project (``using`` to a namespace's files, calls, base
lists, partial classes), its language spec (tests, generated files, .NET frames), hostile
input (linear time, as ratios in one run) and the command line finding a method by name."""
from __future__ import annotations

import textwrap
from pathlib import Path

from conftest import run, size_ratio, write
from test_lang_lexers import same_shape
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest import clex, cscode
from kgsearch.ingest.langspec import CSHARP, find_frames, is_generated_path, is_generated_text, is_test_path
from kgsearch.ingest.loaders import loader_for
from kgsearch.query.codetask import stack_frames
from kgsearch.store.db import Index
from kgsearch.types import FLAG_TEST, FLAG_VENDORED, LoadOptions


# ------------------------------------------------------------------------------------ lexer
def test_strings_comments_and_directives_are_blanked():
    src = ('#region Setup\n'
           'class A { // {\n'
           '  string s = "a{\\"}", v = @"x""}{\n"; /* { */\n'
           '  string i = $"a{(b ? "}" : "{")}{{ {d["k"]:N2} }}", w = $@"{x}\n}" + @$"{y}";\n'
           '  string r = """\n   a " "" { }\n   """, ri = $$"""{{x}} { "" """;\n'
           '  string n = $"{$"{y}"}"; char c = \'{\', e = \'\\\'\', u = \'\\u007B\';\n'
           '#if DEBUG\n'
           '  int f() { return 1; }\n'
           '#endif\n'
           '}\n')
    lx = clex.lex(src, "cs")
    same_shape(src, lx.code)
    code = lx.code
    assert code.count("{") == code.count("}") == 2               # the class's and f's
    assert [src[s:e] for s, e in lx.comments] == ["// {", "/* { */"]
    assert [src[s:e] for s, e in lx.directives] == ["#region Setup", "#if DEBUG", "#endif"]
    assert 'string s = "     ", v = "      \n";' in code
    assert 'string n = "         "; char c = " ", e = "  ", u = "      ";' in code
    assert code.index("int f() {") > code.index("char c")         # code after the strings is code
    assert lx.pairs[code.index("{")] == code.rindex("}")


def test_unterminated_strings_end_where_the_language_ends_them():
    # a regular string ends at its line; a verbatim or raw one, or a hole, runs to the end
    for src, rest in (('x = "abc\nclass B { }\n', "class B { }"), ('x = $"a {b\nclass B { }\n', None),
                      ('x = @"abc\nclass B { }\n', None), ('x = """\nclass B { }\n', None)):
        code = clex.lex(src, "cs").code
        same_shape(src, code)
        assert (rest in code) if rest else "class" not in code, src


def _lex_ratio(text: str) -> float:
    """Time of lexing 60 KB of ``text`` over 6 KB of it (:func:`conftest.size_ratio`)."""
    small, big = ((text * (n // len(text) + 1))[:n] for n in (6_000, 60_000))
    return size_ratio(lambda: clex.lex(small, "cs"), lambda: clex.lex(big, "cs"))


def test_hostile_openers_lex_in_linear_time():
    # each opening read to the end of the text by a pattern, once per opening, is n^2: 60 KB
    # would cost 100 times 6 KB; one forward pass costs about 10 times
    for opener in ('@"', '$"', '$@"', '"""', '$"""', '$"{', '@$"{\n', '$"{(', '$$"""{{', "'", "/*", '$"{"\n'):
        assert _lex_ratio(opener) < 40, opener


# ------------------------------------------------------------------------------- definitions
SHOP = '''\
    using System;
    using Shop.Pricing;

    namespace Shop
    {
        /// <summary>A cart.</summary>
        [Serializable]
        [Entity(Name = "cart {")]
        public partial class Cart<T> : Base, IRule, IDisposable where T : class, new()
        {
            private readonly List<string> _items = new List<string>();
            public int Count { get; set; } = 3;

            public Cart() : base(1) { }
            static Cart() { }
            ~Cart() { }

            public int Total
            {
                get { int Twice(int v) => v * 2; return Twice(_items.Count); }
                set { _items.Clear(); }
            }

            public string Name => $"cart {Count}";
            public int this[int i] => i;

            public int Apply(int x)
            {
                int Local(int y) => y + 1;
                if (x > 0) { return Local(x); }
                return Helper<int>(x);
            }

            [Obsolete]
            private static U Helper<U>(U x)
                where U : struct => x;

            public static Cart<T> operator +(Cart<T> a, Cart<T> b) => a;
            public static bool operator ==(Cart<T> a, Cart<T> b) => true;
            public static implicit operator int(Cart<T> c) => 0;
            public abstract void Run();
            void IDisposable.Dispose() { }
            public event EventHandler Changed { add { } remove { } }
            public delegate void D(int x);

            public class Inner { void Go() { } }
        }

        namespace Models
        {
            public record struct Point(int X, int Y);
            public record Person(string Name) : Base { public string Hi() => $"hi {Name}"; }
            interface IRule2 : IRule { int Apply(int x); }
            enum Color : byte { Red, Green }
            static class Ext { public static int Twice(this int x) => x * 2; }
        }
    }
    '''


def load(tmp_path, rel: str, text: str):
    path = write(tmp_path / rel, textwrap.dedent(text))
    assert loader_for(path) == "csharp"
    return cscode.load(path, rel, LoadOptions(root=str(tmp_path)))


def test_every_construct_is_a_node_with_its_exact_span(tmp_path):
    res = load(tmp_path, "Cart.cs", SHOP)
    got = {n.key.split(":", 2)[2]: (n.kind, n.line_start, n.line_end, n.props.get("decl")) for n in res.nodes
           if n.kind != "module"}
    assert got == {
        "Cart": ("class", 7, 47, None),                           # from the first attribute
        "Cart.Cart": ("method", 14, 14, "constructor"),
        "Cart.Cart#2": ("method", 15, 15, "constructor"),         # static
        "Cart.Cart#3": ("method", 16, 16, "finalizer"),
        "Cart.Total": ("method", 18, 22, "property"),
        "Cart.Total.Twice": ("function", 20, 20, None),           # a local function in an accessor
        "Cart.Name": ("method", 24, 24, "property"),
        "Cart.this": ("method", 25, 25, "indexer"),
        "Cart.Apply": ("method", 27, 32, "method"),
        "Cart.Apply.Local": ("function", 29, 29, None),
        "Cart.Helper": ("method", 34, 36, "method"),
        "Cart.operator+": ("method", 38, 38, "operator"),
        "Cart.operator==": ("method", 39, 39, "operator"),
        "Cart.operator int": ("method", 40, 40, "operator"),
        "Cart.Run": ("method", 41, 41, "method"),
        "Cart.Dispose": ("method", 42, 42, "method"),             # an explicit interface member
        "Cart.Changed": ("method", 43, 43, "event"),
        "Cart.Inner": ("class", 46, 46, None),
        "Cart.Inner.Go": ("method", 46, 46, "method"),
        "Point": ("class", 51, 51, "record"),
        "Person": ("class", 52, 52, "record"),
        "Person.Hi": ("method", 52, 52, "method"),
        "IRule2": ("class", 53, 53, "interface"),
        "IRule2.Apply": ("method", 53, 53, "method"),
        "Color": ("class", 54, 54, "enum"),
        "Ext": ("class", 55, 55, None),
        "Ext.Twice": ("method", 55, 55, "method"),                # an extension method
    }                                                             # no auto-property, field, delegate
    names = {n.key: n.aliases for n in res.nodes}
    assert names["cs:Cart.cs"] == [("cs", "Shop.Cart", 1), ("cs", "Shop", 2), ("cs", "Shop.Models", 2)]
    assert names["cs:Cart.cs:Cart.Apply"] == [("cs", "Shop.Cart.Apply", 0)]
    assert names["cs:Cart.cs:Person.Hi"] == [("cs", "Shop.Models.Person.Hi", 0)]   # nested namespaces


def test_file_scoped_namespaces_top_level_statements_and_directives(tmp_path):
    res = load(tmp_path, "src/App/Program.cs", """\
        namespace App.Cli;

        #if NET8_0
        [Flags]
        #endif
        public sealed record class Options(bool Verbose)
        {
            public bool Quiet => !Verbose;
        }
        """)
    assert [(n.key, n.line_start, n.line_end, n.aliases) for n in res.nodes] == [
        ("cs:src/App/Program.cs", 1, 9, [("cs", "App.Cli.Program", 1), ("cs", "App.Cli", 2)]),
        ("cs:src/App/Program.cs:Options", 4, 9, [("cs", "App.Cli.Options", 0)]),
        ("cs:src/App/Program.cs:Options.Quiet", 8, 8, [("cs", "App.Cli.Options.Quiet", 0)])]
    res = load(tmp_path, "Main.cs", """\
        using var log = Open();
        Run(args);
        static void Run(string[] a) { foreach (var x in a) { Print(x); } }
        static int Print(string s) => s.Length;
        """)
    assert [(n.key, n.kind, n.line_start, n.line_end) for n in res.nodes[1:]] == [
        ("cs:Main.cs:Run", "function", 3, 3), ("cs:Main.cs:Print", "function", 4, 4)]
    assert not [e for e in res.edges if e.type == "imports"]      # `using var` is no import
    calls = {(e.src, e.dst.split("\n")[0]) for e in res.edges if e.type == "calls"}
    assert ("cs:Main.cs", "Run") in calls and ("cs:Main.cs:Run", "Print") in calls


# -------------------------------------------------------------------------------------- edges
PROJECT = {
    "src/Shop/Cart.cs": """\
        using System;
        using Shop.Pricing;
        using static Shop.Pricing.Prices;
        using P = Shop.Pricing.Prices;

        namespace Shop
        {
            public partial class Cart : Base, IRule
            {
                public Cart() : base(1) { }
                public int Apply(int x)
                {
                    Log("x");
                    this.Log("y");
                    Discount(1);
                    P.Round(2);
                    int Local(int y) => y;
                    return Helper(Local(x));
                }
                private static int Helper(int x) => x;
            }
        }
        """,
    "src/Shop/Cart.More.cs": """\
        namespace Shop
        {
            partial class Cart
            {
                int Twice(int x) => Helper(x) * 2;
            }
        }
        """,
    "src/Shop/Base.cs": """\
        namespace Shop;

        public abstract class Base
        {
            protected Base(int x) { }
            protected void Log(string s) { }
        }
        """,
    "src/Shop/Pricing/IRule.cs": "namespace Shop.Pricing { public interface IRule : IDisposable { int Apply(int x); } }\n",
    "src/Shop/Pricing/Prices.cs": """\
        namespace Shop.Pricing
        {
            public static class Prices
            {
                public static int Discount(int x) => x;
                public static int Round(int x) => x;
            }
        }
        """,
    "tests/Shop.Tests/CartChecks.cs": """\
        namespace Shop.Tests
        {
            public class CartChecks { [Fact] public void Applies() { new Cart().Apply(1); } }
        }
        """,
    "src/Shop/obj/Debug/Shop.AssemblyAttributes.cs": "namespace Shop { class Attrs { } }\n",
    "src/Shop/Form1.Designer.cs": "namespace Shop { partial class Form1 { void InitializeComponent() { } } }\n",
    "src/Shop/Api.cs": "// <auto-generated>\n//   by a tool\n// </auto-generated>\nnamespace Shop { class Api { } }\n",
    "src/Shop/Broken.cs": "namespace Shop { class Broken { void F( { $\"{ @\" \"\"\" '",
}


def index(tmp_path, files):
    root = tmp_path / "proj"
    for rel, text in files.items():
        write(root / rel, textwrap.dedent(text))
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(root)], IndexOptions(steps=()))
    assert rep.files_failed == 0, rep.warnings
    with Index.open(db, readonly=True) as ix:
        nodes = {r[0]: r[1:] for r in ix.conn.execute(
            "SELECT key, kind, name, line_start, line_end, flags FROM nodes WHERE file_id IS NOT NULL")}
        edges = set(ix.conn.execute(
            "SELECT s.key, e.type, d.key FROM edges e JOIN nodes s ON s.id = e.src "
            "JOIN nodes d ON d.id = e.dst WHERE e.type != 'contains'").fetchall())
    return nodes, edges


def test_a_project_s_imports_calls_and_bases_resolve(tmp_path):
    nodes, edges = index(tmp_path, PROJECT)
    c = "cs:src/Shop/Cart.cs:"
    assert nodes[c + "Cart"] == ("class", "Cart", 8, 21, 0)
    assert nodes["cs:src/Shop/Cart.More.cs:Cart"] == ("class", "Cart", 3, 6, 0)     # partial: a node per file
    imports = {d for s, t, d in edges if s == "cs:src/Shop/Cart.cs" and t == "imports"}
    assert "cs:src/Shop/Pricing/Prices.cs:Prices" in imports      # using static, using P = : the type
    assert imports - {"cs:src/Shop/Pricing/Prices.cs:Prices"} in (   # using Shop.Pricing: a file of it
        {"cs:src/Shop/Pricing/IRule.cs"}, {"cs:src/Shop/Pricing/Prices.cs"})
    calls = {d for s, t, d in edges if s == c + "Cart.Apply" and t == "calls"}
    assert calls == {"cs:src/Shop/Base.cs:Base.Log", "cs:src/Shop/Pricing/Prices.cs:Prices.Discount",
                     "cs:src/Shop/Pricing/Prices.cs:Prices.Round", c + "Cart.Helper", c + "Cart.Apply.Local"}
    assert (c + "Cart.Cart", "calls", "cs:src/Shop/Base.cs:Base") in edges                   # : base(1)
    assert ("cs:src/Shop/Cart.More.cs:Cart.Twice", "calls", c + "Cart.Helper") in edges      # across the parts
    assert (c + "Cart", "inherits", "cs:src/Shop/Base.cs:Base") in edges
    assert (c + "Cart", "implements", "cs:src/Shop/Pricing/IRule.cs:IRule") in edges
    t = "cs:tests/Shop.Tests/CartChecks.cs:CartChecks"
    new = {d for s, e, d in edges if s == t + ".Applies" and e == "calls"}
    assert new in ({c + "Cart"}, {"cs:src/Shop/Cart.More.cs:Cart"})      # new Cart(): the enclosing namespace's
    assert nodes[t][4] & FLAG_TEST and nodes[t + ".Applies"][4] & FLAG_TEST
    assert not nodes[c + "Cart"][4] & (FLAG_TEST | FLAG_VENDORED)
    for gen in ("src/Shop/obj/Debug/Shop.AssemblyAttributes.cs:Attrs", "src/Shop/Form1.Designer.cs:Form1",
                "src/Shop/Api.cs:Api"):
        assert nodes["cs:" + gen][4] & FLAG_VENDORED, gen
    assert nodes["cs:src/Shop/Broken.cs:Broken"][:3] == ("class", "Broken", 1)     # a bad file: read, others too


def test_the_command_line_indexes_cs_files_and_finds_a_method(tmp_path):
    root = tmp_path / "proj"
    for rel, text in PROJECT.items():
        write(root / rel, textwrap.dedent(text))
    db = tmp_path / "i.db"
    rc, out, err = run("index", root, "--db", db)                   # default settings
    assert rc == 0, err
    rc, out, err = run("search", "Discount", "--db", db, "-k", "3")
    assert rc == 0, err
    assert "cs:src/Shop/Pricing/Prices.cs:Prices.Discount" in out.split("\n 2.")[0]


# ------------------------------------------------------------------------------ language spec
def test_test_paths_generated_files_and_frames():
    for rel, test in (("src/Shop/CartTests.cs", True), ("src/Shop/CartTest.cs", True), ("tests/x/A.cs", True),
                      ("Shop.Tests/Cart.cs", True), ("Shop.UnitTests/A.cs", True), ("src/Shop/Contest.cs", False),
                      ("src/Shop.Testing.Abstractions/A.cs", False)):
        assert is_test_path(rel) is test, rel
    for rel, gen in (("src/Form1.Designer.cs", True), ("obj/Debug/net8.0/A.g.cs", True), ("Views/Page.g.i.cs", True),
                     ("src/obj/X.cs", True), ("src/bin/X.cs", True), ("src/Cart.cs", False), ("bin/cli.js", False)):
        assert is_generated_path(rel) is gen, rel
    assert loader_for(Path("build.csx")) == loader_for(Path("A.cs")) == "csharp"       # scripts too
    assert is_generated_text("//------\n// <auto-generated>\n//     This code was generated by a tool.\n")
    trace = ("Unhandled exception. System.InvalidOperationException: no items\n"
             "   at Shop.Cart.Apply(Int32 x) in C:\\src\\My Shop\\Cart.cs:line 42\n"
             "   at Shop.Program.<Main>$(String[] args) in /app/Program.cs:line 7\n"
             "   at System.Linq.Enumerable.First[TSource](IEnumerable`1 source)\n"
             "src/Cart.cs(12,5): error CS1002: ; expected\n")
    got = [(f.get("path"), f.get("line"), f.get("func")) for f in find_frames(trace, CSHARP)]
    assert got == [("C:\\src\\My Shop\\Cart.cs", 42, "Shop.Cart.Apply"), ("/app/Program.cs", 7, "Shop.Program.<Main>$"),
                   ("src/Cart.cs", 12, None)]
    assert stack_frames(trace)[0] == ("C:\\src\\My Shop\\Cart.cs", 42, "Apply")


# ----------------------------------------------------------------------------- hostile input
def test_hostile_files_load_in_linear_time(tmp_path):
    # `class A { [X(` (classes 5,000 deep, a call in each) built call candidates as long as the
    # nesting for each call: 60 KB ran out of 4 GB; `class A { int X { ` read every property's
    # whole body for accessors (60 KB: 7.5 s); the same 60 KB of `static void F() => F(); `
    # numbered 5,000 overloads from #2 up each time
    for piece in ("class A { ", "namespace N ", "using X ", "void F() { ", "int F(", "if(x) ", "int X { get { ",
                  "static void F() => F(); ", "record R(", "this[ ", "[A] ", "int F() { int G() { ", "class A { [X(",
                  "class A { int X { ", "class A { get { ", "void F() { (a) F() { ", "delegate void D("):
        small, big = (write(tmp_path / f"h{n}.cs", (piece * (n // len(piece) + 1))[:n]) for n in (6_000, 60_000))
        opts = LoadOptions(root=str(tmp_path))
        assert size_ratio(lambda: cscode.load(small, "h.cs", opts), lambda: cscode.load(big, "h.cs", opts),
                          repeats=3) < 40, piece


def test_types_and_local_functions_nest_32_deep_at_most(tmp_path):
    # (what is deeper is read as part of the innermost node: hostile input, not code)
    res = load(tmp_path, "Deep.cs", "class A { " * 40 + "void F() { }")
    assert [n.kind for n in res.nodes] == ["module"] + ["class"] * 32
    assert res.nodes[-1].key == "cs:Deep.cs:" + ".".join(["A"] * 32)
    res = load(tmp_path, "Deep.cs", "class A { void F() { " + "int G() { " * 40)
    assert [n.kind for n in res.nodes] == ["module", "class", "method"] + ["function"] * 32
    assert res.nodes[-1].key == "cs:Deep.cs:A.F." + ".".join(["G"] * 32)


def test_a_second_root_resolves_inside_itself(tmp_path):
    """Two copies of one project as two roots: each copy's calls and imports stay in it."""
    for name in ("a", "b"):
        for rel, text in PROJECT.items():
            write(tmp_path / name / rel, textwrap.dedent(text))
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "a"), str(tmp_path / "b")], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        rows = ix.conn.execute(
            "SELECT s.key, d.key FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
            "WHERE e.type IN ('calls', 'imports', 'inherits', 'implements')").fetchall()
    crossed = [(s, d) for s, d in rows if s.partition(":")[2].startswith("//b/") != d.partition(":")[2].startswith("//b/")]
    assert len(rows) > 20 and not crossed, crossed[:3]


def test_a_file_using_a_test_framework_is_test_code(tmp_path):
    """pythonnet keeps its NUnit tests in `src/embed_tests/` as `TestConverter.cs`,
    `Codecs.cs`, `Inheritance.cs`...: no name or folder convention says test, so 41 test files
    ranked as source and `impact src/runtime/Converter.cs --tests` missed `TestConverter.cs`,
    whose tests call `Converter.ToManaged` directly. A file with `using NUnit.Framework;`,
    `using Xunit;` or MSTest's namespace (static, aliased or `global` too) is test code."""
    cases = {
        "src/embed_tests/TestConverter.cs": "using System;\nusing NUnit.Framework;\nclass TestConverter { [Test] public void T() {} }\n",
        "src/embed_tests/Codecs.cs": "using static NUnit.Framework.Assert;\nclass Codecs { void T() {} }\n",
        "src/x/Facts.cs": "global using Xunit;\nclass Facts { [Fact] void T() {} }\n",
        "src/x/Ms.cs": "using T = Microsoft.VisualStudio.TestTools.UnitTesting;\nclass Ms { }\n",
        "src/runtime/Converter.cs": "using System;\nusing NUnitish.Framework;\nusing XunitLike;\nclass Converter { void ToManaged() {} }\n",
        "src/runtime/Body.cs": "class Body { void F() { using var x = NUnit.Framework.Open(); } }\n",
    }
    for rel, src in cases.items():
        res = cscode.load(write(tmp_path / rel, src), rel, LoadOptions())
        flags = {n.kind: n.flags for n in res.nodes}
        want = not rel.startswith("src/runtime/")
        assert bool(flags["module"] & FLAG_TEST) is want and bool(flags["class"] & FLAG_TEST) is want, rel
