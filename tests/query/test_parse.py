"""The query analysed once (kgsearch.query.parse): what the Query holds, hand-checked, and that
a search analyses the text in parse() and nowhere else."""
from __future__ import annotations

import sys
import textwrap

import pytest

from kgsearch.query.codetask import Anchor
from kgsearch.query.parse import FieldFilter, Query, identifier_kind, parse, split_filters
from kgsearch.text.tokenize import get_analyzer


def test_terms_are_the_given_analysers():
    q = parse("Indexing the BlastRadius of notes")
    assert q.terms == ("index", "blastradius", "blast", "radius", "note")
    assert parse("Indexing the BlastRadius of notes", get_analyzer("light")).terms == (
        "index", "blastradius", "blast", "radius", "notes")
    assert parse("Indexing notes", get_analyzer("none")).terms == ("indexing", "notes")
    assert q.signature == "blast blastradius index note radius"
    assert q.words == ("Indexing", "the", "BlastRadius", "of", "notes")
    assert q.highlight == ("blastradius", "indexing", "notes")      # longest first, stop words out


def test_term_weights_count_repeats_and_add_keywords_times_the_boost():
    q = parse("error error in the parser")
    assert q.term_weights() == {"error": 2.0, "parser": 1.0}
    assert q.term_weights(["errors", "crash"], 5.0) == {"error": 7.0, "parser": 1.0, "crash": 5.0}


@pytest.mark.parametrize("text,quoted,identifier", [
    ('"exact phrase here"', True, None),
    ('find "busy timeout" fast', True, None),                        # 2 other words: short
    ('why does "busy timeout" not help when the writer waits', False, None),
    ("StreamingTextResponse", False, "CamelCase identifier"),
    ("setup.cfg", False, "file name"),
    ("os.path.join", False, "dotted name"),
    ("pagerank", False, None),
])
def test_quoted_and_identifier(text, quoted, identifier):
    q = parse(text)
    assert (q.quoted, q.identifier) == (quoted, identifier)
    assert identifier_kind(text) == (identifier if " " not in text and not quoted else identifier_kind(text))


def test_syntax_for_the_fts_and_pattern_channels():
    q = parse('"database is locked" AND sqlite')
    assert q.fts_syntax and q.fts == ('"database is locked" AND "sqlite"', '"database" OR "locked" OR "sqlite"')
    assert not parse("database locked").fts_syntax
    r = parse("/^get_\\w+$/i")
    assert r.slash_regex and r.pattern == (("^get_\\w+$", "i"), ())
    p = parse("why does parse_args fail in os.path")
    assert p.pattern == (None, ("parse_args", "os.path")) and p.code_token
    assert parse("blast_radius").pattern == (None, ("blast_radius",))
    assert not parse("how do I back up my notes").code_token


def test_code_task_anchors_relation_and_what_it_asks_for():
    issue = "Calling `Cart.total` after add_item() fails in shop/cart.py with the tests of the cart module"
    q = parse(issue)
    assert q.code_task == "names in backticks"
    assert q.anchors[:3] == (Anchor("shop/cart.py", "path"), Anchor("Cart.total", "backtick", 2),  # (backtick + dotted)
                             Anchor("add_item", "call", 2))                                # (call + snake)
    assert q.about_tests and not q.about_prose
    r = parse("who calls `apply_discount`?")
    assert r.relation == ("calls", "apply_discount")
    assert r.relation_anchors == (Anchor("apply_discount", "backtick", 2),)     # the target in backticks
    assert parse("how do I back up my notes").relation is None and parse("the changelog").about_prose


def test_entity_words():
    assert parse("Alice's notes on 'Graph Search'").entity_words == ("alice", "notes", "on", "graph", "search")


def test_clean_text_and_any_object():
    assert parse("a\x00b").text == "a b"
    assert parse(None).text == "" and parse(None).terms == ()
    assert parse(12).text == "12"
    with pytest.raises(Exception):
        parse("x").text = "y"                                    # frozen


def test_field_filters_are_parsed_on_request_only():
    text = "retry loop kind:function path:src/ -path:tests/ tag:net lang:rust modified:>2026-10-01"
    assert parse(text).filters == () and "kind:function" in parse(text).text
    q = parse(text, filters=True)
    assert q.text == "retry loop" and q.terms == ("retri", "loop")
    assert q.filters == (FieldFilter("kind", "function"), FieldFilter("path", "src/"),
                         FieldFilter("path", "tests/", negated=True), FieldFilter("tag", "net"),
                         FieldFilter("lang", "rust"), FieldFilter("modified", "2026-10-01", ">"))
    assert [str(f) for f in q.filters][2:] == ["-path:tests/", "tag:net", "lang:rust", "modified:>2026-10-01"]
    # only known fields, only whole words: name:x (an FTS column) and "e.g. path:" inside a word stay text
    assert split_filters("name:x apath:y kind: path:a") == ("name:x apath:y kind:", (FieldFilter("path", "a"),))
    # a C++/Rust path is no filter: `== type::custom_type)` in a pasted compiler error was the
    # filter kind ":custom_type)," and the code task got no result at all (fmt-3158)
    for text in ("value == type::custom_type), x", "use path::PathBuf; and kind::Enum", "tag::Tag root::Root lang::x"):
        assert split_filters(text) == (text, ()), text


# ---------------------------------------------------------------------------- analysed once
PKG = {
    "shop/__init__.py": "",
    "shop/cart.py": '''\
        """Shopping cart."""
        from shop.pricing import apply_discount


        class Cart:
            """A cart of items."""

            def add_item(self, item):
                """Add one item to the cart."""
                return apply_discount(self)
        ''',
    "shop/pricing.py": '''\
        """Prices."""


        def apply_discount(cart):
            """Apply the discount rules to a cart."""
            return cart
        ''',
    "notes/pricing.md": "# Pricing\n\nDiscount rules live in [[shop]]. #pricing\n",
}
MARKER = "quuxplosion"          # a word of the queries that no node holds


@pytest.fixture(scope="module")
def shop_db(tmp_path_factory):
    from kgsearch.indexer import IndexOptions, index_paths

    root = tmp_path_factory.mktemp("shop")
    for rel, src in PKG.items():
        p = root / "proj" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    db = root / "i.db"
    index_paths(db, [str(root / "proj")], IndexOptions())
    return db


def _analysers():
    """The code objects that analyse text: the tokenizer, the code-task and relation readers, the
    channels' syntax readers, the identifier shapes, the snippet and entity word readers."""
    from kgsearch import codelike, pack
    from kgsearch.graph import context
    from kgsearch.query import codetask, parse as parse_mod
    from kgsearch.text import fts, keywords, pattern, tokenize

    fns = [tokenize.Analyzer.__call__, tokenize.raw_tokens, tokenize.split_identifier,
           codetask.extract, codetask.relation, codetask.code_task_reason, codetask.asks_for_tests,
           codetask.asks_for_prose, fts.build_query, fts.query_expressions, fts.operand_terms, pattern.query_parts,
           keywords.extract, context.entity_words, pack.query_terms, codelike.has_code_token,
           parse_mod.identifier_kind, parse_mod.split_filters]
    return {f.__code__: f.__qualname__ for f in fns}


@pytest.mark.parametrize("text,channels", [
    (f"Calling `Cart.add_item` fails in shop/cart.py: apply_discount() {MARKER} the price rules", None),
    (f"who calls apply_discount {MARKER}", None),
    (f'"discount rules" {MARKER} pricing', "bm25,prf,fts,pattern,equiv,anchors,relation,dense,graph,intent,local,global"),
    (f"apply_discount {MARKER}", "bm25,prf,fts,pattern,dense,graph,intent,local,global"),
])
def test_a_search_analyses_the_query_text_once_in_parse(shop_db, text, channels):
    """Every call of an analysis function on the query's text (its marker word in an argument)
    happens inside one call of parse(); the tokenizer reads the text exactly once. (The dense
    channel's model tokenizer, the intent rules' patterns and the equivalence phrases are each
    matched against Query.text by their owner: those are not re-analyses of the words.)"""
    from kgsearch.query import Engine, SearchOptions, parse as parse_mod
    from kgsearch.store.db import Index

    watched = _analysers()
    parse_code = parse_mod.parse.__code__
    calls: list[tuple[str, bool]] = []
    parses = []

    def prof(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if code is parse_code:
            parses.append(1)
        if code not in watched:
            return
        if not any(isinstance(v, str) and MARKER in v for v in frame.f_locals.values()):
            return
        f, inside = frame.f_back, False
        while f is not None:
            if f.f_code is parse_code:
                inside = True
                break
            f = f.f_back
        calls.append((watched[code], inside))

    with Index.open(shop_db, readonly=True) as ix:
        eng = Engine(ix)
        eng.search("warm up the caches", SearchOptions(channels=channels))
        sys.setprofile(prof)
        try:
            r = eng.search(text, SearchOptions(channels=channels, k=5))
        finally:
            sys.setprofile(None)
    assert r.hits
    assert len(parses) == 1
    outside = [name for name, inside in calls if not inside]
    assert not outside, f"analysed outside parse(): {outside}"
    assert [name for name, _ in calls].count("Analyzer.__call__") == 1
    assert {"Analyzer.__call__", "extract", "relation", "query_expressions", "query_parts",
            "entity_words", "query_terms"} <= {name for name, _ in calls}


def test_the_checker_sees_an_analysis_outside_parse(shop_db):
    """The profile hook above can fail: a stage that re-tokenises the text is caught."""
    from kgsearch.text.tokenize import get_analyzer as ga

    watched = _analysers()
    seen = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code in watched:
            seen.append(watched[frame.f_code])

    sys.setprofile(prof)
    try:
        ga()(f"stray {MARKER}")
    finally:
        sys.setprofile(None)
    assert "Analyzer.__call__" in seen


def test_the_engine_accepts_its_parsed_query(shop_db):
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    with Index.open(shop_db, readonly=True) as ix:
        eng = Engine(ix)
        q = eng.parse("apply the discount rules")
        assert isinstance(q, Query)
        a, b = eng.search(q, SearchOptions(k=5)), eng.search("apply the discount rules", SearchOptions(k=5))
    assert [(h.key, h.score) for h in a.hits] == [(h.key, h.score) for h in b.hits] and a.hits
