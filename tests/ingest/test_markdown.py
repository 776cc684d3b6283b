"""Markdown loader: notes, sections, every link form, tags, front matter, inline fields."""
from __future__ import annotations

from conftest import hypothesis_api
from conftest import write

from kgsearch.ingest import markdown
from kgsearch.ingest.loaders import get_loader
from kgsearch.ingest.markdown import link_target, parse_front_matter
from kgsearch.types import LoadOptions

given, settings, st, _ = hypothesis_api()               # stand-ins that skip when hypothesis is missing

INDEX = """\
---
title: Vault Index
aliases: [Home, "Start Page"]
tags: [project, area/work]
implements: "[[Spec One]]"
related:
  - "[[Sub/Epsilon]]"
  - "[[Hits#Hubs|hubs]]"
status: draft
nested:
  owner: me
  deeper:
    x: 1
this line is not yaml
---
Start with [[Alpha]] and [[Beta#Some Heading|beta's part]] and [[Gamma#^block1]].
Embed ![[Delta]] and ![[pic.png]] and ![img](img/photo.jpg).
Markdown [eps](sub/Epsilon.md), [zeta](/sub/Zeta), [up](../outside.md), [web](https://example.com/page#frag).
Local [[#Local Heading]] and [[Missing Note]] and [[Alpha|again]].
Inline `[[not a link]]` and `#notatag`, url http://x.org/a#anchor, issue#5, #123.
Tags: #alpha and #nested/tag/deep, also #Alpha again.

# Heading Is Not A Tag
```python
# [[in code]] #incode
```
depends on:: [[Omega]]
Task [uses:: [[Psi]]] done. mid:: line is no field
status:: done
"""


def load(tmp_path, rel, text, cap=1500):
    return markdown.load(write(tmp_path / rel, text), rel, LoadOptions(max_chunk_chars=cap))


def links(res):
    return [(e.src, e.dst, e.type, e.ns, e.line, e.props) for e in res.edges
            if e.type not in ("mentions", "contains")]


def test_registry():
    assert get_loader("markdown") is markdown
    assert markdown.EXTENSIONS == (".md", ".markdown")


def test_note_node(tmp_path):
    res = load(tmp_path, "Index.md", INDEX)
    [note] = res.nodes
    assert (note.key, note.kind, note.name, note.qualname, note.line_start, note.line_end,
            note.parent) == ("md:Index", "note", "Vault Index", "Index", 1, 29, None)
    assert note.aliases == [("note", "index"), ("note", "vault index"), ("note", "home"),
                            ("note", "start page")]
    assert note.props["frontmatter"] == {
        "title": "Vault Index", "aliases": ["Home", "Start Page"], "tags": ["project", "area/work"],
        "implements": "[[Spec One]]", "related": ["[[Sub/Epsilon]]", "[[Hits#Hubs|hubs]]"],
        "status": "draft", "nested": {"owner": "me"}}
    assert note.props["urls"] == ["https://example.com/page#frag", "http://x.org/a#anchor"]
    assert note.props["attachments"] == ["pic.png", "img/photo.jpg"]
    assert note.props["fields"] == {"status": "done"}
    # front-matter values (not the title) open the text, then the body
    assert note.text.startswith("Home, Start Page\nproject\narea/work\nSpec One\nSub/Epsilon, hubs\n"
                                "draft\n\nStart with [[Alpha]]")
    assert res.warnings == [
        f"{tmp_path / 'Index.md'}:14: front matter line not understood, skipped: "
        "'this line is not yaml'; kgsearch reads 'key: value', [a, b] lists and '- a' lists"]


def test_every_link_form(tmp_path):
    res = load(tmp_path, "Index.md", INDEX)
    k = "md:Index"
    assert links(res) == [
        (k, "project", "tagged", "tag", 4, {"display": "project"}),
        (k, "area/work", "tagged", "tag", 4, {"display": "area/work"}),
        (k, "spec one", "implements", "note", 5, {"display": "Spec One"}),     # a placeholder's name
        (k, "sub/epsilon", "related", "note", 7, {"display": "Sub/Epsilon"}),
        (k, "hits", "related", "note", 8, {"display": "Hits", "heading": "Hubs"}),
        (k, "alpha", "links_to", "note", 16, {"display": "Alpha"}),
        (k, "beta", "links_to", "note", 16, {"display": "Beta", "heading": "Some Heading"}),
        (k, "gamma", "links_to", "note", 16, {"display": "Gamma", "block": "block1"}),
        (k, "delta", "links_to", "note", 17, {"display": "Delta", "embed": True}),
        (k, "sub/epsilon", "links_to", "note", 18, {"display": "sub/Epsilon"}),
        (k, "sub/zeta", "links_to", "note", 18, {"display": "sub/Zeta"}),
        (k, "missing note", "links_to", "note", 19, {"display": "Missing Note"}),
        (k, "alpha", "tagged", "tag", 21, {"display": "alpha"}),
        (k, "nested/tag/deep", "tagged", "tag", 21, {"display": "nested/tag/deep"}),
        (k, "omega", "depends_on", "note", 27, {"display": "Omega"}),
        (k, "psi", "uses", "note", 28, {"display": "Psi"}),
    ]


def test_long_note_gets_sections(tmp_path):
    text = ("---\ntags: t\n---\nPreamble names [[Top]].\n\n"      # lines 1-5
            "# Big Topic\n"                                            # 6: empty (sub-heading next)
            "## Setup [[InHeading]]\n"                                 # 7
            "Install it. See [[Install Guide]] #setup\n"               # 8
            "\n"
            "## Usage\n"                                               # 10
            "Run it with [[Runner]].\n"                                # 11
            "## Usage\n"                                               # 12
            "Again, with Acme Corp and Acme Corp.\n")                  # 13
    res = load(tmp_path, "notes/Tool.md", text, cap=40)
    got = [(n.key, n.kind, n.name, n.qualname, n.line_start, n.line_end, n.parent)
           for n in res.nodes]
    assert got == [
        ("md:notes/Tool", "note", "Tool", "notes/Tool", 1, 13, None),
        ("md:notes/Tool#setup-inheading", "section", "Setup InHeading",
         "Tool > Big Topic > Setup InHeading", 7, 8, "md:notes/Tool"),
        ("md:notes/Tool#usage", "section", "Usage", "Tool > Big Topic > Usage", 10, 11,
         "md:notes/Tool"),
        ("md:notes/Tool#usage-1", "section", "Usage", "Tool > Big Topic > Usage", 12, 13,
         "md:notes/Tool"),
    ]
    note, setup = res.nodes[0], res.nodes[1]
    assert note.text == "t\n\nPreamble names [[Top]].\n\nBig Topic\nSetup InHeading\nUsage\nUsage"
    assert setup.text == "Install it. See [[Install Guide]] #setup"
    assert [(e.src, e.dst, e.type, e.line) for e in res.edges if e.type == "contains"] == [
        ("md:notes/Tool", "md:notes/Tool#setup-inheading", "contains", 7),
        ("md:notes/Tool", "md:notes/Tool#usage", "contains", 10),
        ("md:notes/Tool", "md:notes/Tool#usage-1", "contains", 12)]
    assert [(src, dst, t, line) for src, dst, t, _, line, _ in links(res)] == [
        ("md:notes/Tool", "t", "tagged", 2),
        ("md:notes/Tool", "top", "links_to", 4),
        ("md:notes/Tool#setup-inheading", "inheading", "links_to", 7),
        ("md:notes/Tool#setup-inheading", "install guide", "links_to", 8),
        ("md:notes/Tool#setup-inheading", "setup", "tagged", 8),
        ("md:notes/Tool#usage", "runner", "links_to", 11),
    ]
    # entities come from the text (link labels included), not from headings
    assert [(e.src, e.dst, e.line, e.props) for e in res.edges if e.type == "mentions"] == [
        ("md:notes/Tool#setup-inheading", "install guide", 8, {"display": "Install Guide"}),
        ("md:notes/Tool#usage-1", "acme corp", 13, {"display": "Acme Corp"})]


def test_short_note_with_headings_is_one_node(tmp_path):
    res = load(tmp_path, "a.md", "# One\ntext [[B]]\n## Two\nmore\n")
    assert [n.key for n in res.nodes] == ["md:a"]
    assert res.nodes[0].text == "# One\ntext [[B]]\n## Two\nmore"
    assert links(res) == [("md:a", "b", "links_to", "note", 2, {"display": "B"})]


def test_relative_links_resolve_against_the_note_folder(tmp_path):
    res = load(tmp_path, "x/y/n.markdown",
               "[a](a.md) [b](../b) [c](<My Note.md>) [d](My%20Other.md#Part) [e](../../../e.md)\n")
    assert res.nodes[0].key == "md:x/y/n"
    assert [(e.dst, e.props) for e in res.edges] == [
        ("x/y/a", {}), ("x/b", {}), ("x/y/my note", {"display": "x/y/My Note"}),
        ("x/y/my other", {"display": "x/y/My Other", "heading": "Part"})]


def test_unclosed_front_matter_is_body(tmp_path):
    res = load(tmp_path, "h.md", "---\ntitle: X\n\nnot closed [[L]]\n")
    assert res.nodes[0].name == "h" and res.warnings == []
    assert links(res) == [("md:h", "l", "links_to", "note", 4, {"display": "L"})]


def test_non_utf8_gives_one_warning(tmp_path):
    res = load(tmp_path, "bad.md", b"caf\xe9 [[Link]]\n\xff\n")
    assert res.nodes[0].text == "caf\ufffd [[Link]]\n\ufffd"
    assert res.warnings == [f"{tmp_path / 'bad.md'}:1: not valid UTF-8; decoded with replacement "
                            "characters (save the file as UTF-8 to fix)"]


def test_link_target():
    assert link_target(" Folder/My  Note.md#Part ") == ("folder/my note", "Part", "")
    assert link_target("n#^abc") == ("n", "", "abc")
    assert link_target("#Only") == ("", "Only", "")


def test_front_matter_subset():
    data, raw, problems = parse_front_matter([
        'a: "quoted: \\"x\\""', "b: 'it''s'", "c: [1, 2.5, true, null, \"x, y\"]",
        "d: plain # comment", "e: |", "  line one", "  line two", "f: >", "  folded", "  text",
        "g:", "- top", "- level", "h: [[A]], [[B]]", "i: {x: 1}", "j: continued", "  here",
        "  - bad: indent", ":", "k: 2024-01-01"], 2)
    assert data == {"a": 'quoted: "x"', "b": "it's", "c": [1, 2.5, True, None, "x, y"],
                    "d": "plain", "e": "line one\nline two", "f": "folded text",
                    "g": ["top", "level"], "h": ["[[A]]", "[[B]]"], "i": "{x: 1}",
                    "j": "continued here - bad: indent", "k": "2024-01-01"}
    assert raw["g"] == [(12, ""), (13, "- top"), (14, "- level")]
    assert problems == [(20, ":")]


def test_an_open_flow_list_or_mapping_is_not_understood(tmp_path):
    # (before: `tags: {a` made a tag `{a`, `tags: [a, b` read as if closed, both without a word)
    data, _, problems = parse_front_matter(["tags: {a", "up: [[X]], [[Y]]", "list: [a, ']'",
                                            "flow: [a,", "  b]", "keys: [a, b"], 2)
    assert data == {"up": ["[[X]]", "[[Y]]"], "flow": ["a", "b"]}
    assert problems == [(2, "tags: {a"), (4, "list: [a, ']'"), (7, "keys: [a, b")]
    res = load(tmp_path, "n.md", "---\ntags: {a\nother: {b: 1}\n---\n# N\n\nbody #real\n")
    assert links(res) == [("md:n", "real", "tagged", "tag", 7, {"display": "real"})]
    assert res.warnings == [f"{tmp_path / 'n.md'}:2: front matter line not understood, skipped: 'tags: {{a'; "
                            "kgsearch reads 'key: value', [a, b] lists and '- a' lists"]
    res = load(tmp_path, "m.md", "---\ntags: {x: 1}\n---\n# M\n")       # a mapping is no tags
    assert links(res) == [] and res.warnings == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab :-#[]'\"|>{}\t\n!^/.")),
                        max_size=30), max_size=12))
def test_front_matter_never_raises(lines):
    parse_front_matter([ln.replace("\n", "") for ln in lines])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab #[]()!|^:-`~\n/.*>Ab")), max_size=300))
def test_loader_never_raises(tmp_path_factory, body):
    p = tmp_path_factory.mktemp("md") / "n.md"
    p.write_text("---\n" + body, encoding="utf-8")
    res = markdown.load(p, "n.md", LoadOptions(max_chunk_chars=50))
    keys = [n.key for n in res.nodes]
    assert len(keys) == len(set(keys)) and keys[0] == "md:n"
    assert all(e.src in keys for e in res.edges)


def test_link_reference_definitions(tmp_path):
    res = load(tmp_path, "r.md", "See [the spec][s] and [x].\n\n[s]: docs/Spec.md\n[x]: #local-anchor\n"
                                 "[w]: https://example.com/#frag\n")
    assert links(res) == [("md:r", "docs/spec", "links_to", "note", 3, {"display": "docs/Spec"})]
    assert res.nodes[0].props["urls"] == ["https://example.com/#frag"]


# ---------------------------------------------------------------------------- Markdown links, linear
def _mdlink_reference(text):
    from kgsearch.ingest.mdlinks import _MDLINK

    return [(m.start(), m.end(), m.group(1), m.group(2), m.group(3)) for m in _MDLINK.finditer(text)]


def test_md_links_finds_what_the_regex_finds():
    """md_links is the regex's finditer without its quadratic retries (a 100 KB line of '[' or of
    '[x](yyyy' took 20-70 s to index; 0.02 s now): the same matches and groups, on random text
    made of the characters the syntax turns on, and on hand-made cases."""
    import random

    from kgsearch.ingest.mdlinks import display_text, md_links

    cases = ["[a](b)", "![a](b)", "!![a](b)", "[a [b](c)", "[a](b \"t\")", "[a](b 't' )", "[a](b (t))", "[a](<b c>)",
             "[a](<b)", "[a](b\n)", "[a]\n(b)", "[a](b \"t)", "x[a](b)y[c](d)z", "[a](b)(c)", "[]()", "[](x)", "[a]( b )",
             "[a](b\t\"t\"\t)", "[a](b]c)", "[x](yyyy" * 50, "[" * 300 + "](" + "]" * 3]
    rng = random.Random(5)
    alphabet = list("[]()!<>\"' \n\tab") + ["](", "[x](", " \"t\"", " (t)", "<a>"]
    cases += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    for text in cases:
        assert md_links(text) == _mdlink_reference(text), text
    assert md_links("see [the docs](a/b.md \"T\") and ![img](<p q.png>)") == [
        (4, 26, "", "the docs", "a/b.md"), (31, 48, "!", "img", "<p q.png>")]
    assert display_text("see [the docs](a/b.md) and [[N|shown]] [x](y") == "see the docs and shown [x](y"


def test_a_front_matter_value_and_the_body_s_first_words_are_two_phrases(tmp_path):
    # the last front-matter value ("Bob Jones") was followed by one newline, which a phrase may
    # span, so it and the body's first capitalised words made an entity "Bob Jones Alice"
    res = load(tmp_path, "Alice.md", '---\nrole: engineer\nmanager: "[[Bob Jones]]"\n---\n'
                                     "Alice Smith works on Project Phoenix with Bob Jones.\n")
    ents = sorted(e.dst for e in res.edges if e.type == "mentions")
    assert ents == ["alice smith", "bob jones", "project phoenix"]


COMMENTED = """\
# Hub
Seen [[Alpha]]. Hidden <!-- [[InHtml]] #htmltag --> and %%[[InObsidian]] #obstag%% then [[Beta]].
%%
# Not A Heading
[[InBlock]] #blocktag
%% after the block [[Gamma]]
<!-- a comment
over lines [[InHtmlBlock]] -->
`%% code, not a comment` [[Delta]]
```
%% in a fence
```
[[Epsilon]]
"""


def test_comments_give_no_link_tag_or_heading_but_stay_searchable(tmp_path):
    # links and tags inside Obsidian %% comments and HTML comments were edges (placeholders
    # named after commented-out links); Obsidian shows neither
    res = load(tmp_path, "Hub.md", COMMENTED, cap=20)
    assert sorted({e[1] for e in links(res)}) == ["alpha", "beta", "delta", "epsilon", "gamma"]
    assert [n.name for n in res.nodes] == ["Hub", "Hub"]   # the note and its one section (20 chars)
    assert "[[InBlock]] #blocktag" in res.nodes[1].text and "[[InHtmlBlock]]" in res.nodes[1].text


def test_a_footnote_is_not_a_link_reference_definition(tmp_path):
    # "[^1]: See [[Footnoted]]." was read as a reference definition: a link to a note "See",
    # and the wikilink on the line was lost
    res = load(tmp_path, "N.md", "Text[^1] and [ref]: target.md\n\n[^1]: See [[Footnoted]].\n[x]: Other.md\n")
    assert sorted(e[1] for e in links(res)) == ["footnoted", "other"]


def test_a_tag_after_cjk_punctuation_is_a_tag(tmp_path):
    """Chinese and Japanese text has no spaces: a #tag right after 。 or ！ is still a tag; after a
    letter or digit (C#, a#b) it is not."""
    res = load(tmp_path, "d.md", "# 日記\n今日は晴れ。#日記 散歩した！#散歩\nC# and a#b, （#括弧）\n")
    tags = sorted(dst for _, dst, t, *_ in links(res) if t == "tagged")
    assert tags == sorted(["散歩", "括弧", "日記"])
