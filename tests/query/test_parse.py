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
    happens inside one call of parse(), or of a field of the Query it left to compute when first
    read (at most once); the tokenizer reads the text exactly once. (The dense
    channel's model tokenizer, the intent rules' patterns and the equivalence phrases are each
    matched against Query.text by their owner: those are not re-analyses of the words.)"""
    from kgsearch.query import Engine, SearchOptions, parse as parse_mod
    from kgsearch.store.db import Index

    watched = _analysers()
    parse_code = parse_mod.parse.__code__
    lazy_code = parse_mod._Lazy.__get__.__code__      # (a field computed when first read is parse's work)
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
            if f.f_code is parse_code or f.f_code is lazy_code:
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
    names = [name for name, _ in calls]
    assert names.count("Analyzer.__call__") == 1
    assert {"Analyzer.__call__", "extract", "relation", "entity_words"} <= set(names)
    for lazy in ("query_expressions", "query_parts", "query_terms"):     # (once, if read at all)
        assert names.count(lazy) <= 1, lazy


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


# ---------------------------------------------------------------------------- fields read when needed
def _parse_eager(text, analyzer=None, *, filters=False, paste=False) -> Query:
    """parse() as it was before some fields were computed when first read: every field at once
    (the reference the lazy fields are held to)."""
    from kgsearch.codelike import has_code_token
    from kgsearch.graph.context import entity_words
    from kgsearch.pack import query_terms
    from kgsearch.query import parse as P
    from kgsearch.query.codetask import WORD, asks_for_prose, asks_for_tests, code_task_reason, extract, relation
    from kgsearch.query.cut import cut_query
    from kgsearch.query.filters import reads_filters
    from kgsearch.query.paste import drop_comments, drop_links, links_in_prose, quiet_paste
    from kgsearch.text import fts, pattern
    from kgsearch.text.tokenize import clean_query

    analyzer = analyzer or get_analyzer()
    text, cut = cut_query(clean_query(text))
    found = ()
    if filters and reads_filters(text):
        text, found = split_filters(text)
    bare, comments = drop_comments(text)
    if comments and code_task_reason(bare):
        text = bare
    words = tuple(WORD.findall(text))
    anchors = tuple(extract(text))
    reason = code_task_reason(text, anchors, len(words))
    set_aside = 0
    if reason or links_in_prose(text):
        text, links = drop_links(text)
        words = tuple(WORD.findall(text)) if links else words
    if paste and reason:
        text, set_aside = quiet_paste(text)
        words = tuple(WORD.findall(text)) if set_aside else words
    rel = relation(text)
    one = text.strip().split()
    fts_syntax = bool(P._FTS_SYNTAX.search(text))
    expressions = fts.query_expressions(text)
    return Query(
        text=text, terms=tuple(analyzer(text)), words=words, quoted=P._quoted(text),
        identifier=identifier_kind(one[0]) if len(one) == 1 else None,
        fts_syntax=fts_syntax, fts=expressions,
        fts_terms=tuple(fts.operand_terms(e, analyzer) for e in expressions) if fts_syntax else (),
        slash_regex=P._slash_regex(text), pattern=pattern.query_parts(text), code_token=has_code_token(text.strip()),
        anchors=anchors, code_task=reason, set_aside=set_aside, relation=rel,
        relation_anchors=tuple(extract(f"`{rel[1]}`")) if rel else (),
        about_tests=asks_for_tests(text), about_prose=asks_for_prose(text),
        highlight=tuple(query_terms(text)), entity_words=tuple(entity_words(text)), filters=found,
        cut=cut, analyzer=analyzer)


HAND = [
    "", "   ", "pagerank", "how do I back up my notes", "Indexing the BlastRadius of notes",
    '"database is locked" AND sqlite', '"exact phrase here"', 'find "busy timeout" fast', "a NEAR b OR NOT c",
    '"unterminated phrase', "prefix* search", "`code span` in prose", "/^get_\\w+$/i", "/a/", "//",
    "who calls `apply_discount`?", "who calls apply_discount", "where is Cart.total used", "callers of rwr",
    "retry loop kind:function path:src/ -path:tests/ tag:net lang:rust modified:>2026-10-01",
    'engine -path:"My Notes/" x root:work type:class', "value == type::custom_type), x",
    "StreamingTextResponse", "setup.cfg", "os.path.join", "blast_radius", "std::vector<int> push_back",
    "東京の天気はどうですか", "검색 엔진 색인", "中文 全文检索 sqlite fts5", "café naïve Straße", "Ünïcödé `ünï.cödé()`",
    "tests for the parser", "the changelog and release notes", "a\x00b", "x\ud800y",
    "Calling `Cart.total` after add_item() fails in shop/cart.py with the tests of the cart module",
    "Traceback (most recent call last):\n  File \"shop/cart.py\", line 12, in add_item\n    return apply_discount(self)\n"
    "ValueError: bad price",
    "panic at src/lib.rs:12:5 in `Bytes::split_off` see https://github.com/o/r/blob/main/src/lib.rs#L38 for more",
    "<!-- please fill the template -->\nThe `parse_args` call fails for os.path.join with KeyError in cli/main.py",
    "```python\nimport os\nos.path.join(None)\n```\nfails with TypeError in loader.load_all and util.read_file",
    "see https://example.com/docs/page?x=1 and http://a.b/c for the retry_loop docs",
    "word " * 3000,
]


def _texts(shared) -> list[str]:
    import json

    out = [(t, True) for t in HAND]
    if shared.is_dir():     # every third BEIR query, every other code task's issue (when present)
        for f in sorted(shared.glob("*/queries.jsonl")) + sorted(shared.glob("code-tasks*/tasks/*/queries.jsonl")):
            got = [json.loads(line)["text"] for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
            out += [(t, "code-tasks" not in str(f)) for t in got[::2 if "code-tasks" in str(f) else 3]]
    return out


def test_lazy_fields_are_what_parse_computed_at_once():
    """Query's fields computed when first read (fts, fts_terms, pattern, highlight,
    relation_anchors) are, on every query, the values parse() computed before: the whole Query
    equal field for field, with each analyser, filters and paste on and off, read in any order
    and through replace(); and a prose query's parse computes none of them."""
    import dataclasses

    from conftest import SHARED

    texts = _texts(SHARED / "bench")
    analysers = [get_analyzer(), get_analyzer("light"), get_analyzer("none", split_code=False)]
    names = [f.name for f in dataclasses.fields(Query)]
    for i, (text, typed) in enumerate(texts):
        for an in (analysers if i < len(HAND) or i % 11 == 0 else analysers[:1]):
            for flt, paste in ((True, False), (False, True)) if typed else ((False, True),):  # (an issue: no filters)
                ref = _parse_eager(text, an, filters=flt, paste=paste)
                new = parse(text, an, filters=flt, paste=paste)
                order = names if i % 2 else names[::-1]
                assert [getattr(new, n) for n in order] == [getattr(ref, n) for n in order], text[:80]
                assert new == ref and hash(new) == hash(ref) and new.analyzer is ref.analyzer
                if i % 5 == 0:
                    again = parse(text, an, filters=flt, paste=paste)      # unread: replace() reads them
                    assert dataclasses.replace(again, filters=()) == dataclasses.replace(ref, filters=())
    q = parse("how do I back up my notes")
    assert not [k for k in vars(q) if k.startswith("_lazy_")]                # nothing computed yet
    assert q.highlight is q.highlight and "_lazy_highlight" in vars(q)      # computed once, then kept
