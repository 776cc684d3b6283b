"""Plain-text loader: document and chunk nodes, paragraph/sentence splitting, entities."""
from __future__ import annotations

import pytest

from kgsearch.ingest import plaintext
from kgsearch.ingest.loaders import get_loader
from kgsearch.ingest.plaintext import chunks, extract_entities, paragraphs
from kgsearch.types import LoadOptions


def load(tmp_path, rel, content, cap=1500):
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return plaintext.load(p, rel, LoadOptions(max_chunk_chars=cap))


def mention_edges(res):
    return [(e.src, e.dst, e.type, e.ns, e.line, e.props["display"])
            for e in res.edges if e.type == "mentions"]


def test_registry():
    assert get_loader("text") is plaintext
    assert ".rst" in plaintext.EXTENSIONS


def test_short_file_is_one_document(tmp_path):
    text = ("Meeting notes\n\nAlice Walker from Acme Corp showed the PageRank demo.\n"
            "Acme Corp will ship it. See https://Example.com/Big/Thing for details.\n")
    res = load(tmp_path, "notes/meeting.txt", text)
    assert res.warnings == []
    [doc] = res.nodes
    assert (doc.key, doc.kind, doc.name, doc.qualname, doc.line_start, doc.line_end, doc.parent) == (
        "txt:notes/meeting.txt", "document", "Meeting notes", "notes/meeting.txt", 1, 4, None)
    assert doc.text == text.strip()
    assert doc.aliases == [("note", "notes/meeting.txt")]
    # nothing from inside the URL; "Acme Corp" is the most salient (two mentions)
    assert mention_edges(res) == [
        ("txt:notes/meeting.txt", "acme corp", "mentions", "ent", 3, "Acme Corp"),
        ("txt:notes/meeting.txt", "alice walker", "mentions", "ent", 3, "Alice Walker"),
        ("txt:notes/meeting.txt", "pagerank", "mentions", "ent", 3, "PageRank"),
    ]


LONG = """\
Graph Search
============

Graph search combines BM25 with PageRank over the Knowledge Graph. The
Python Software Foundation maintains Python.

Usage
-----

Run build_index() daily. The indexer reads SQLite files. The Knowledge Graph grows. Each sentence here is short. This paragraph is longer than the cap so it must be split at a sentence end.

Last words about the Knowledge Graph.
"""


def test_long_file_is_chunked_at_paragraphs_and_sentences(tmp_path):
    res = load(tmp_path, "guide.rst", LONG, cap=200)
    got = [(n.key, n.kind, n.name, n.line_start, n.line_end, n.parent) for n in res.nodes]
    assert got == [
        ("txt:guide.rst", "document", "Graph Search", 1, 12, None),
        ("txt:guide.rst#1", "chunk", "Graph Search", 1, 5, "txt:guide.rst"),
        ("txt:guide.rst#2", "chunk", "Usage", 7, 10, "txt:guide.rst"),
        ("txt:guide.rst#3", "chunk", "Usage", 10, 10, "txt:guide.rst"),
        ("txt:guide.rst#4", "chunk", "Usage", 12, 12, "txt:guide.rst"),
    ]
    texts = [n.text for n in res.nodes]
    # the heading stays with the paragraph after it; the long paragraph is cut after a sentence
    assert texts[2] == ("Usage\n-----\n\nRun build_index() daily. The indexer reads SQLite files. "
                        "The Knowledge Graph grows. Each sentence here is short.")
    assert texts[3] == "This paragraph is longer than the cap so it must be split at a sentence end."
    assert all(len(t) <= 200 for t in texts[1:])
    assert texts[0].startswith("Graph Search\n============\n\nGraph search combines")
    assert [(e.src, e.dst, e.type, e.ns, e.line) for e in res.edges if e.type == "contains"] == [
        ("txt:guide.rst", f"txt:guide.rst#{n}", "contains", "key", line)
        for n, line in ((1, 1), (2, 7), (3, 10), (4, 12))]
    ment = mention_edges(res)
    assert ("txt:guide.rst#1", "knowledge graph", "mentions", "ent", 4, "Knowledge Graph") in ment
    assert ("txt:guide.rst#4", "knowledge graph", "mentions", "ent", 12, "Knowledge Graph") in ment
    assert ("txt:guide.rst#2", "build_index", "mentions", "ent", 10, "build_index") in ment
    assert not [m for m in ment if m[0] == "txt:guide.rst"]     # the chunks hold the mentions


def test_paragraphs_and_overlong_sentence():
    assert paragraphs("a\nb\n\n\n  \nc\n") == [(1, 2, "a\nb"), (6, 6, "c")]
    word = "word " * 60
    got = chunks([(1, 1, word.strip())], 100)
    assert [len(c[2]) for c in got] == [99, 99, 99]
    assert " ".join(c[2] for c in got) == word.strip()


@pytest.mark.parametrize("name, content, title", [
    ("a.txt", "\n\nShort first line\nmore\n", "Short first line"),
    ("b.txt", "x" * 120 + "\n", "b.txt"),
    ("c.md.txt", "# Hash Title\n\ntext\n", "Hash Title"),
    ("d.org", "#+TITLE: Org Title\n* Heading\n", "Org Title"),
    ("e.log", "2024-01-01 started\n", "e.log"),
    ("f.rst", "=====\nOver\n=====\n\ntext\n", "Over"),
    ("g.txt", "", "g.txt"),
    # reST markup before the title (pip's and Sphinx docs): a field list, directives, targets
    ("h.rst", ":orphan:\n\n.. meta::\n\n  :http-equiv=refresh: 3\n\nThis page has moved\n"
              "===================\n\ntext\n", "This page has moved"),
    ("i.rst", ".. _`pip cache`:\n\npip cache\n---------\n\ntext\n", "pip cache"),
    ("j.rst", ".. comment\n   more comment\n:Author: me\n\nReal Title\n==========\n", "Real Title"),
    ("k.rst", ".. note:: only a directive\n\nplain line\n", "plain line"),
    ("l.txt", ":orphan:\n\nTitle\n=====\n", ":orphan:"),          # only reST files
    # a CJK character is two columns wide: a 66-character Japanese sentence is no title, a short one is
    ("日本語メモ.txt", "東京の天気は晴れです。サーバーのバックアップは毎晩三時に実行されます。"
                   "同期が失敗した場合は、電池の最適化設定を確認してください。\n", "日本語メモ.txt"),
    ("m.txt", "服务器备份说明\n每天晚上备份。\n", "服务器备份说明"),
])
def test_titles(tmp_path, name, content, title):
    assert load(tmp_path, name, content).nodes[0].name == title


def test_extract_entities_kinds():
    text = ("The Lord of the Rings sold well. Yesterday Microsoft Research met Google DeepMind "
            "in New York City. Call os.path.join or parse_args(); the HashMap and getElementById "
            "help, i.e. nothing else.")
    assert extract_entities(text) == [
        ("lord of the rings", "Lord of the Rings"), ("microsoft research", "Microsoft Research"),
        ("google deepmind", "Google DeepMind"), ("new york city", "New York City"),
        ("os.path.join", "os.path.join"), ("parse_args", "parse_args"), ("hashmap", "HashMap"),
        ("getelementbyid", "getElementById")]


def test_single_words_need_two_mid_sentence_mentions():
    once = extract_entities("We like Termux here. Termux is fine.")
    twice = extract_entities("We like Termux here. We use Termux daily.")
    assert once == [] and twice == [("termux", "Termux")]


def test_salient_terms_and_cap():
    text = "tokens and tokens and more tokens. " + " ".join(
        f"We saw Alpha with item_{i}." for i in range(80))
    ents = extract_entities(text)
    assert len(ents) == plaintext.MAX_ENTITIES
    assert ("token", "token") in ents              # repeated 3 times, plural folded
    assert ents[0] == ("alpha", "Alpha")           # 80 mid-sentence mentions


def test_non_utf8_gives_one_warning(tmp_path):
    res = load(tmp_path, "l.txt", b"caf\xe9 one\n\ncaf\xe9 two \xff\n")
    assert res.nodes[0].text == "caf\ufffd one\n\ncaf\ufffd two \ufffd"
    assert res.warnings == [f"{tmp_path / 'l.txt'}:1: not valid UTF-8; decoded with "
                            "replacement characters (save the file as UTF-8 to fix)"]


def test_sentence_initial_common_word_is_not_part_of_a_name():
    assert extract_entities("Install Termux Widget today. We install apps.") == [
        ("termux widget", "Termux Widget")]


def test_mentions_match_plural_possessive_and_wrapped_forms():
    ents = [("query", "query"), ("vector", "vector"), ("graph neural network", "GNN"),
            ("acme", "Acme")]
    text = "Two queries,\nmany Vectors and a Graph\nNeural Networks model from Acme's lab."
    assert [(n, off) for n, _, off in plaintext.mentions(text, ents)] == [
        ("query", 4), ("vector", 18), ("graph neural network", 32), ("acme", 65)]


def test_one_huge_paragraph_splits_at_line_ends_with_right_lines(tmp_path):
    lines = [f"{i:05d} entry number {i} without any sentence end here" for i in range(1, 41)]
    res = load(tmp_path, "data.txt", "\n".join(lines) + "\n", cap=200)
    chunks_ = res.nodes[1:]
    assert [(c.line_start, c.line_end) for c in chunks_][:3] == [(1, 3), (4, 6), (7, 9)]
    assert chunks_[1].text.split("\n")[0] == lines[3]
    assert chunks_[-1].line_end == 40


def test_long_runs_without_spaces_stay_fast(tmp_path):
    # a quadratic regex would not finish on this; the loader must
    blob = ("(5291294645182005248,4295098369,\"x\")" * 6000) + "@\n"
    res = load(tmp_path, "ioreg.txt", blob)
    assert res.nodes[0].kind == "document"
