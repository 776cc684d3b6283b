"""The Kotlin loader: its lexer (string templates with code and strings in their holes, raw
strings, nested comments), its definitions with hand-computed names, kinds and lines, names
that Java and Kotlin share (a Java file calls a Kotlin object, Kotlin imports a Java class),
imports, calls, supertypes, test source sets, hostile files, the stack traces and compiler
lines of a Kotlin build, and a search that finds Kotlin code. The comparison with tree-sitter
is in tests/test_lang_oracle.py (and ``bench/lang_oracle.py`` on real trees)."""
from __future__ import annotations

import random
import textwrap

import pytest

from kgsearch.ingest import clex
from kgsearch.ingest.langspec import find_frames, is_test_path, spec_for
from kgsearch.ingest.loaders import get_loader, loader_for
from kgsearch.types import FLAG_TEST, LoadOptions
from test_ingest_langs import build, has
from test_lang_hostile import load_ratio


def same_shape(text: str, code: str) -> None:
    assert len(code) == len(text) and [i for i, c in enumerate(text) if c == "\n"] == \
        [i for i, c in enumerate(code) if c == "\n"]


def test_templates_raw_strings_and_nested_comments_are_blanked():
    text = textwrap.dedent('''\
        /* a /* nested */ comment { */
        val s = "a ${if (x) "}" else "{"} b $name \\" {"
        val r = """raw { ${ "q" + 1 } "" ""\\""""
        val c = '"'; val d = '{'
        fun f() { g("x") }
        ''')
    lx = clex.lex(text, "kotlin")
    same_shape(text, lx.code)
    assert lx.code.splitlines() == [
        " " * 30,
        'val s = "' + " " * 37 + '"',
        'val r = "' + " " * 30 + '"',                   # a run of four quotes: the last three close
        "val c = \" \"; val d = \" \"",
        'fun f() { g(" ") }']
    assert lx.comments == [(0, 30)]
    assert lx.pairs[text.index("{ g")] == text.rindex("}")


@pytest.mark.parametrize("text, code", [
    ('x("${"\n', 'x("   \n'),                       # a hole that never closes runs to the end of the text
    ('"""open\nstill', '"' + " " * 6 + "\n" + " " * 5),   # so does a raw string
    ('"a\nb"', '" \nb '),                             # a regular string ends with its line (the last quote
                                                      # opens one that the text's end cuts)
])
def test_unterminated_strings_stop_where_kotlin_stops_them(text, code):
    lx = clex.lex(text, "kotlin")
    same_shape(text, lx.code)
    assert lx.code == code


def test_kotlin_lexer_is_its_reference_on_random_text():
    """lex hands Kotlin to the forward string reader (as C#); the reference path gives the same."""
    rng = random.Random(5)
    alpha = ['"', '"""', "$", "${", "}", "{", "\\", "'", "x", "\n", "/*", "*/", "//", " ", "(", ")"]
    for _ in range(4000):
        t = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 40)))
        a, b = clex.lex(t, "kotlin"), clex.lex_reference(t, "kotlin")
        assert (a.code, a.comments) == (b.code, b.comments), t
        same_shape(t, a.code)


SRC = {
    "app/src/main/kotlin/com/shop/Cart.kt": """\
        package com.shop

        import com.shop.pricing.Prices
        import com.shop.pricing.discount as cut
        import com.shop.util.*

        /** A cart. */
        @Suppress("unused")
        data class Cart(val items: List<String>) : Base(), Rule {
            companion object {
                fun empty(): Cart = Cart(emptyList())
            }

            constructor(one: String) : this(listOf(one))

            override fun apply(x: Int): Int =
                cut(x) +
                    Prices.round(total())

            fun total() = items.size

            fun String.shout() = uppercase()
        }

        fun helper(c: Cart) = Cart.empty().total()
        """,
    "app/src/main/kotlin/com/shop/Base.kt": """\
        package com.shop

        abstract class Base {
            fun log() {}
        }

        interface Rule { fun apply(x: Int): Int }
        """,
    "app/src/main/kotlin/com/shop/pricing/Prices.kt": """\
        package com.shop.pricing

        object Prices {
            fun round(x: Int) = x
        }

        fun discount(x: Int) = x / 2
        """,
    "app/src/main/java/com/shop/Legacy.java": """\
        package com.shop;

        import com.shop.pricing.Prices;

        class Legacy {
            int price() { return Prices.INSTANCE.round(1) + CartKt.helper(null); }
        }
        """,
    "app/src/test/kotlin/com/shop/CartTest.kt": """\
        package com.shop

        class CartTest {
            @Test
            fun `empty cart has no items`() { Cart.empty() }
        }
        """,
}


def test_definitions_names_and_lines(tmp_path):
    nodes, _ = build(tmp_path, SRC)
    c = "java:app/src/main/kotlin/com/shop/Cart.kt:"
    assert nodes[c + "Cart"] == ("class", "Cart", 8, 23, 0)                  # from @Suppress
    assert nodes[c + "Cart.Companion"][:4] == ("class", "Companion", 10, 12)
    assert nodes[c + "Cart.Companion.empty"][:4] == ("method", "empty", 11, 11)
    assert nodes[c + "Cart.Cart"][:4] == ("method", "Cart", 14, 14)         # the secondary constructor
    assert nodes[c + "Cart.apply"][:4] == ("method", "apply", 16, 18)       # an expression body over 3 lines
    assert nodes[c + "Cart.total"][:4] == ("method", "total", 20, 20)
    assert nodes[c + "Cart.shout"][:4] == ("method", "shout", 22, 22)       # named without its receiver
    assert nodes[c + "helper"][:4] == ("function", "helper", 25, 25)
    assert nodes["java:app/src/main/kotlin/com/shop/Base.kt:Rule.apply"][:4] == ("method", "apply", 7, 7)
    t = nodes["java:app/src/test/kotlin/com/shop/CartTest.kt:CartTest.empty cart has no items"]
    assert t[:4] == ("method", "empty cart has no items", 4, 5) and t[4] & FLAG_TEST


def test_imports_calls_and_supertypes_across_kotlin_and_java(tmp_path):
    _, edges = build(tmp_path, SRC)
    c = "java:app/src/main/kotlin/com/shop/Cart.kt"
    prices = "java:app/src/main/kotlin/com/shop/pricing/Prices.kt"
    assert has(edges, c, "imports", prices + ":Prices")
    assert has(edges, c, "imports", prices + ":discount")                    # `as cut`: the function
    apply = c + ":Cart.apply"
    assert has(edges, apply, "calls", prices + ":discount")                  # cut(x) through its alias
    assert has(edges, apply, "calls", prices + ":Prices.round")              # an object's member
    assert has(edges, apply, "calls", c + ":Cart.total")
    assert has(edges, c + ":Cart.Companion.empty", "calls", c + ":Cart.Cart")    # Cart(..): a constructor
    assert has(edges, c + ":helper", "calls", c + ":Cart.Companion.empty")   # Cart.empty(): the companion's
    assert has(edges, c + ":Cart.Cart", "calls", c + ":Cart")                # : this(..)
    assert has(edges, c + ":Cart", "inherits", "java:app/src/main/kotlin/com/shop/Base.kt:Base")
    assert has(edges, c + ":Cart", "implements", "java:app/src/main/kotlin/com/shop/Base.kt:Rule")
    legacy = "java:app/src/main/java/com/shop/Legacy.java"
    assert has(edges, legacy, "imports", prices + ":Prices")                 # Java imports a Kotlin object
    assert has(edges, legacy + ":Legacy.price", "calls", c + ":helper")      # CartKt.helper(): the file's class
    assert has(edges, legacy + ":Legacy.price", "calls", prices + ":Prices.round")    # Prices.INSTANCE.round()
    assert not any(s == c + ":Cart.shout" and t == "calls" and d == c + ":Cart.shout" for s, t, d in edges)


def test_a_kotlin_path_in_an_issue_is_an_anchor():
    from kgsearch.query.codetask import extract

    paths = [a.text for a in extract("The cart total is wrong, see app/src/main/kotlin/com/shop/Cart.kt and Prices.kts")
             if a.kind == "path"]
    assert paths == ["app/src/main/kotlin/com/shop/Cart.kt", "Prices.kts"]


def test_files_tests_and_frames():
    assert loader_for(__import__("pathlib").Path("a/B.kt")) == "kotlin"
    assert loader_for(__import__("pathlib").Path("build.gradle.kts")) == "kotlin"
    assert spec_for("x/Y.kt").ns == "java"                                    # shares Java's names
    for rel, test in [("app/src/test/java/a/BTest.kt", True), ("app/src/androidTest/a/B.kt", True),
                      ("shared/src/commonTest/kotlin/a/B.kt", True), ("a/src/main/kotlin/CartSpec.kt", True),
                      ("app/src/main/kotlin/a/Testing.kt", False)]:
        assert is_test_path(rel) is test, rel
    log = textwrap.dedent("""\
        e: file:///home/u/app/src/main/kotlin/a/B.kt:12:5 Unresolved reference: foo
        w: /home/u/app/src/main/kotlin/a/C.kt: (3, 9): Parameter 'x' is never used
        Exception in thread "main" java.lang.IllegalStateException: boom
        \tat a.BKt.main(B.kt:7)
        """)
    got = [(f["path"], f["line"], f.get("col")) for f in find_frames(log)]
    assert got == [("/home/u/app/src/main/kotlin/a/B.kt", 12, 5), ("/home/u/app/src/main/kotlin/a/C.kt", 3, 9),
                   ("B.kt", 7, None)]


def test_a_search_finds_kotlin_code_and_its_trace(tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    root = tmp_path / "proj"
    for rel, text in SRC.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    db = tmp_path / "k.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        engine = Engine(ix)
        trace = "java.lang.IllegalStateException: boom\n\tat com.shop.Cart.total(Cart.kt:20)"
        keys = [h.key for h in engine.search(trace, SearchOptions(k=3)).hits]
        assert keys[:2] == ["java:app/src/main/kotlin/com/shop/Cart.kt",      # a code task: the file, then
                            "java:app/src/main/kotlin/com/shop/Cart.kt:Cart.total"]   # the frame's function
        hits = engine.search("discount prices", SearchOptions(k=5, filters=("lang:kt",))).hits
        assert hits and all(h.key.endswith(".kt") or ".kt:" in h.key for h in hits)
        assert "java:app/src/main/kotlin/com/shop/pricing/Prices.kt:discount" in [h.key for h in hits]


@pytest.mark.parametrize("unit", ['"${', '"""', '"\\', "/* /*", "class a {\n", "fun f() =\n", "@A(\n"])
def test_hostile_kotlin_files_load_in_time_proportional_to_their_size(tmp_path, unit):
    assert load_ratio(tmp_path, "kotlin", unit) < 40
    get_loader("kotlin").load(tmp_path / "big.kt", "f.kt", LoadOptions())        # and no exception


def test_show_a_name_gives_the_class_not_the_file_named_after_it(tmp_path, capsys):
    """`show Cart` gave Cart.kt, the file (a file and the class it is named after were taken for a
    note and its section, the note winning); Java's `show Foo` did the same."""
    from kgsearch.cli import main

    build(tmp_path, SRC | {"app/src/main/java/com/shop/Foo.java": "package com.shop;\nclass Foo { void f() {} }\n",
                           "lib/Foo.kt": "class Foo\n"})
    db = str(tmp_path / "i.db")
    assert main(["show", "Cart", "--db", db, "--json"]) == 0
    assert __import__("json").loads(capsys.readouterr().out)["node"]["key"] == "java:app/src/main/kotlin/com/shop/Cart.kt:Cart"
    assert main(["show", "Foo", "--db", db]) == 2                   # two classes Foo: still ambiguous, both listed
    err = capsys.readouterr().err
    assert "java:app/src/main/java/com/shop/Foo.java:Foo (class" in err and "java:lib/Foo.kt:Foo (class" in err
    assert "Foo.java (module" not in err


def test_function_type_supertypes_and_annotated_expression_bodies(tmp_path):
    """Found on held-out trees (react-native-vision-camera's generated callbacks, stripe's
    launchers): `fun interface F: () -> Unit {` had no body (its members hung off the file), and
    an expression body that starts with an annotation line ended at that line."""
    src = tmp_path / "F.kt"
    src.write_text(textwrap.dedent("""\
        fun interface Func: () -> Unit {
          override fun invoke(): Unit
        }

        private fun launcher(a: Activity): Launcher =
          @SuppressLint("RestrictedApi")
          Launcher.create(a) { result ->
            done(result)
          }
        """))
    res = get_loader("kotlin").load(src, "F.kt", LoadOptions())
    got = {n.key.split(":", 2)[2]: (n.kind, n.line_start, n.line_end) for n in res.nodes if n.kind != "module"}
    assert got == {"Func": ("class", 1, 3), "Func.invoke": ("method", 2, 2), "launcher": ("function", 5, 9)}
