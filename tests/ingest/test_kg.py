"""KG loader: the KG-OS schema in JSON, JSONL and CSV; malformed and non-KG files."""
from __future__ import annotations

import json

import pytest

from kgsearch.errors import DataError
from kgsearch.ingest import kg
from kgsearch.ingest.loaders import get_loader
from kgsearch.types import EdgeRec, LoadOptions

WALK = LoadOptions()
EXPLICIT = LoadOptions(explicit=True)


def load(tmp_path, name, content, opts=WALK):
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return kg.load(p, name, opts)


def edges(res):
    return [(e.src, e.dst, e.type, e.ns, e.weight, e.line) for e in res.edges]


GRAPH_JSON = """\
{
  "nodes": [
    {"node_id": "n1", "name": "Transformer", "type": "Model",
     "description": "Attention {is} all you need", "year": 2017, "domain": "nlp",
     "url": "https://arxiv.org/abs/1706.03762", "aliases": ["transformer net", "42"]},
    {"id": "n2", "name": "BERT"},
    {"id": "n3", "type": "Research Area"}
  ],
  "edges": [
    {"source": "n2", "target": "n1",
     "edge_type": "implements", "weight": 0.5},
    {"source": "n2", "target": "n9", "type": "Depends On", "since": "2019"}
  ]
}
"""


def test_registry_names_the_module():
    assert get_loader("kg") is kg
    assert kg.NAME == "kg" and ".jsonl" in kg.EXTENSIONS


def test_json_object_with_nodes_and_edges(tmp_path):
    res = load(tmp_path, "g.json", GRAPH_JSON)
    assert res.warnings == []
    n1, n2, n3 = res.nodes
    assert (n1.key, n1.kind, n1.name, n1.qualname, n1.line_start, n1.line_end) == (
        "kg:n1", "model", "Transformer", "n1", 3, 5)
    # description first, then other word-like strings; url and the number string are left out
    assert n1.text == "Attention {is} all you need\nnlp\ntransformer net"
    assert n1.props == {"year": 2017, "domain": "nlp", "url": "https://arxiv.org/abs/1706.03762",
                        "aliases": ["transformer net", "42"]}
    assert n1.aliases == [("kg", "n1")]
    assert (n2.key, n2.kind, n2.name, n2.text, n2.line_start) == ("kg:n2", "entity", "BERT", "", 6)
    assert (n3.key, n3.kind, n3.name) == ("kg:n3", "research_area", "n3")
    assert edges(res) == [("kg:n2", "n1", "implements", "kg", 0.5, 10),
                          ("kg:n2", "n9", "depends_on", "kg", 1.0, 12)]
    assert res.edges[1].props == {"since": "2019"}


def test_json_array_links_and_graph_wrapper(tmp_path):
    res = load(tmp_path, "a.json", json.dumps([
        {"node_id": 7, "name": "Seven", "type": "number"},
        {"source": 7, "target": "x", "type": "next"}], indent=1))
    assert [n.key for n in res.nodes] == ["kg:7"]
    assert edges(res) == [("kg:7", "x", "next", "kg", 1.0, 7)]

    res = load(tmp_path, "nl.json", json.dumps(
        {"graph": {"nodes": {"a": {"label": "Alpha"}}, "links": [{"source": "a", "target": "a"}]}}))
    assert [(n.key, n.name) for n in res.nodes] == [("kg:a", "Alpha")]
    assert edges(res) == [("kg:a", "a", "relates_to", "kg", 1.0, 1)]


def test_jsonl_pair_with_blank_lines(tmp_path):
    nodes = load(tmp_path, "nodes.jsonl",
                 '{"node_id": "a", "name": "A", "type": "Tool", "description": "does a"}\n'
                 "\n"
                 '{"id": "b", "name": "B", "type": "tool", "owner": "team b"}\n')
    assert [(n.key, n.kind, n.name, n.text, n.line_start, n.props) for n in nodes.nodes] == [
        ("kg:a", "tool", "A", "does a", 1, {}),
        ("kg:b", "tool", "B", "team b", 3, {"owner": "team b"})]
    res = load(tmp_path, "edges.jsonl",
               '{"source": "a", "target": "b", "edge_type": "feeds_into", "weight": "2"}\n'
               '{"source": "b", "target": "zz", "type": "uses"}\n')
    assert res.nodes == []
    assert edges(res) == [("kg:a", "b", "feeds_into", "kg", 2.0, 1),
                          ("kg:b", "zz", "uses", "kg", 1.0, 2)]


def test_csv_nodes_and_edges(tmp_path):
    res = load(tmp_path, "nodes.csv",
               'Node_ID,name,type,description,team\n'
               'x,Ex,Tool,"multi\nline, with comma",core\n'
               '\n'
               'y,Why,,,\n')
    assert [(n.key, n.kind, n.name, n.text, n.line_start, n.line_end, n.props)
            for n in res.nodes] == [
        ("kg:x", "tool", "Ex", "multi\nline, with comma\ncore", 2, 3, {"team": "core"}),
        ("kg:y", "entity", "Why", "", 5, 5, {})]
    res = load(tmp_path, "edges.csv", "source;target;edge_type;weight\nx;y;uses;0.25\ny;x;;\n")
    assert edges(res) == [("kg:x", "y", "uses", "kg", 0.25, 2),
                          ("kg:y", "x", "relates_to", "kg", 1.0, 3)]


def test_edge_record_is_an_EdgeRec(tmp_path):
    res = load(tmp_path, "e.jsonl", '{"source": "a", "target": "b", "type": "x", "note": "n"}\n')
    assert res.edges == [EdgeRec(src="kg:a", dst="b", type="x", ns="kg", weight=1.0, line=1,
                                 props={"note": "n"})]


# ---- bad input -----------------------------------------------------------------------------

def test_malformed_json_names_file_and_line(tmp_path):
    with pytest.raises(DataError) as ei:
        load(tmp_path, "bad.json", '{"nodes": [\n  {"id": "a",}\n]}\n')
    p = tmp_path / "bad.json"
    assert str(ei.value) == (f"{p}:2: invalid JSON: Expecting property name enclosed in double "
                             "quotes at column 14; fix the JSON syntax, or list the file in "
                             ".kgsearchignore if it is not a knowledge graph")
    assert (ei.value.path, ei.value.line) == (str(p), 2)
    with pytest.raises(DataError) as ei:
        load(tmp_path, "bad.json", "[\n1,\n", EXPLICIT)
    assert str(ei.value) == f"{p}:3: invalid JSON: Expecting value at column 1; fix the JSON syntax"


def test_json_errors_that_end_in_at_read_once(tmp_path):
    # json's "Unterminated string starting at" and "Invalid control character at" read
    # "... starting at at column 2"
    with pytest.raises(DataError) as ei:
        load(tmp_path, "x.jsonl", '{"id": "a", "name": "A"}\n{"bad json\n')
    assert str(ei.value) == (f"{tmp_path / 'x.jsonl'}:2: invalid JSON: Unterminated string starting at column 2; "
                             "each line must be one JSON object")
    with pytest.raises(DataError) as ei:
        load(tmp_path, "x.json", '{"nodes": [{"id": "a\tb"}]}', EXPLICIT)
    assert str(ei.value) == f"{tmp_path / 'x.json'}:1: invalid JSON: Invalid control character at column 21; fix the JSON syntax"


def test_malformed_jsonl_and_csv(tmp_path):
    with pytest.raises(DataError) as ei:
        load(tmp_path, "x.jsonl", '{"id": "a", "name": "A"}\n{"id": "b"\n')
    assert str(ei.value) == (f"{tmp_path / 'x.jsonl'}:2: invalid JSON: Expecting ',' delimiter "
                             "at column 11; each line must be one JSON object")
    with pytest.raises(DataError) as ei:
        load(tmp_path, "x.csv", "id,name\na,A\nb,B,extra\n")
    assert str(ei.value) == (f"{tmp_path / 'x.csv'}:3: row has 3 fields but the header has 2; "
                             "quote values that contain a comma")
    with pytest.raises(DataError) as ei:
        load(tmp_path, "q.csv", 'id,name\na,"A"x\n')
    assert str(ei.value) == (f"{tmp_path / 'q.csv'}:2: invalid CSV: ',' expected after '\"'; "
                             "check the quotes on this row")


@pytest.mark.parametrize("content, message", [
    ('{"nodes": [{"name": "no id"}]}',
     '1: a "nodes" entry needs a "node_id" or "id" field and no "source"/"target"; fix or remove it'),
    ('{"edges": [{"source": "a"}]}', '1: an "edges" entry needs "source" and "target" fields; '
                                     'fix or remove it'),
    ('[{"id": "a", "name": "A"},\n {"name": "b"}]',
     '2: record is neither a node (needs "node_id" or "id") nor an edge (needs "source" and '
     '"target"); fix or remove it'),
    ('{"edges": [{"source": "a", "target": "b", "weight": "heavy"}]}',
     '1: "weight" must be a number, got "heavy"'),
    ('{"nodes": [{"id": ["a"]}]}', '1: "id" must be a non-empty string or number, got ["a"]'),
])
def test_bad_records(tmp_path, content, message):
    with pytest.raises(DataError) as ei:
        load(tmp_path, "g.json", content)
    assert str(ei.value) == f"{tmp_path / 'g.json'}:{message}"


def test_not_a_kg_file_is_skipped_when_walking(tmp_path):
    pkg = '{"name": "app", "version": "1.0.0", "dependencies": {"x": "^1"}}'
    res = load(tmp_path, "settings-backup.json", pkg)
    assert (res.nodes, res.edges) == ([], [])
    # one line: the file and the fix
    assert res.warnings == [f"{tmp_path / 'settings-backup.json'}: not a knowledge-graph file, skipped (list it in "
                            ".kgsearchignore to skip it without a word)"]
    # a build tool's file is never a graph: skipped without a word (a monorepo has hundreds)
    for name in ("package.json", "tsconfig.json", "tsconfig.build.json", ".eslintrc.json", "composer.json",
                 "api.schema.json", "jest.config.json", ".cargo-checksum.json", ".cargo_vcs_info.json"):
        res = load(tmp_path, name, pkg)
        assert (res.nodes, res.edges, res.warnings) == ([], [], []), name
    assert not kg.is_tool_file("graph.json") and not kg.is_tool_file("packages.json")
    # an array of records with a bare "id" is not enough while walking
    res = load(tmp_path, "data.json", '[{"id": 1, "value": 3}]')
    assert res.nodes == [] and len(res.warnings) == 1
    res = load(tmp_path, "table.csv", "a,b\n1,2\n")
    assert res.warnings == [f"{tmp_path / 'table.csv'}: {kg.NOT_KG}"]
    res = load(tmp_path, "corpus.jsonl", '{"_id": "d1", "title": "t", "text": "x"}\n')
    assert res.nodes == [] and len(res.warnings) == 1


def test_not_a_kg_file_is_an_error_when_named(tmp_path):
    with pytest.raises(DataError) as ei:
        load(tmp_path, "package.json", '{"name": "app"}', EXPLICIT)
    assert str(ei.value) == (
        f"{tmp_path / 'package.json'}:1: not a knowledge-graph file (a JSON object without a "
        f'"nodes" or "edges" list); {kg.SCHEMA_HINT}')
    with pytest.raises(DataError):
        load(tmp_path, "t.csv", "a,b\n", LoadOptions(fmt="kg"))
    # named explicitly, a bare id is a node
    res = load(tmp_path, "data.json", '[{"id": 1}]', EXPLICIT)
    assert [n.key for n in res.nodes] == ["kg:1"]


def test_forced_format_sniffs_other_extensions(tmp_path):
    res = load(tmp_path, "g.txt", '{"id": "a", "name": "A"}\n{"id": "b", "name": "B"}\n',
               LoadOptions(fmt="kg"))
    assert [n.key for n in res.nodes] == ["kg:a", "kg:b"]
    res = load(tmp_path, "g.tsv", "source\ttarget\na\tb\n", LoadOptions(fmt="kg"))
    assert edges(res) == [("kg:a", "b", "relates_to", "kg", 1.0, 2)]


def test_duplicate_node_ids_keep_the_first(tmp_path):
    res = load(tmp_path, "d.jsonl", '{"id": "a", "name": "one"}\n{"id": "a", "name": "two"}\n')
    assert [n.name for n in res.nodes] == ["one"]
    assert res.warnings == [f"{tmp_path / 'd.jsonl'}:2: duplicate node id 'a' (first at line 1); "
                            "kept the first"]


def test_non_utf8_gives_one_warning(tmp_path):
    res = load(tmp_path, "l.jsonl", b'{"id": "a", "name": "caf\xe9"}\n{"id": "b", "name": "\xff"}\n')
    assert [n.name for n in res.nodes] == ["caf\ufffd", "\ufffd"]
    assert res.warnings == [f"{tmp_path / 'l.jsonl'}:1: not valid UTF-8; decoded with replacement "
                            "characters (save the file as UTF-8 to fix)"]


def test_empty_files(tmp_path):
    """An empty JSON, JSONL or CSV file is empty alike: nothing indexed, one line saying so (named,
    an empty .json or .csv was exit 3 "not a knowledge-graph file" and an empty .jsonl said nothing)."""
    assert load(tmp_path, "e.json", "[]").nodes == []
    for name, body in (("e.jsonl", "\n\n"), ("e.json", ""), ("e.csv", "\ufeff\r\n"), ("e.json", " \n"),
                       ("e.json", "[]"), ("e.json", '{"nodes": [], "edges": []}'), ("e.csv", "id,name\n")):
        assert load(tmp_path, name, body).warnings == [f"{tmp_path / name}: empty (no record); nothing to index"]


def test_record_lines_ignore_braces_and_escaped_quotes_in_strings(tmp_path):
    res = load(tmp_path, "s.json", '[\n{"id": "a", "name": "x \\"}{\\" \\\\", "d": {"k": "}"}},\n\n'
                                   '{"id": "b", "name": "y"}\n]')
    assert [(n.key, n.name, n.line_start) for n in res.nodes] == [
        ("kg:a", 'x "}{" \\', 2), ("kg:b", "y", 4)]


def test_jsonl_strings_may_hold_unicode_line_separators(tmp_path):
    """JSON allows U+2028, U+2029 and NEL raw inside a string (``json.dumps(ensure_ascii=False)``
    writes them so; web text carries them): the file was split with ``str.splitlines``, which
    breaks lines there too, and the whole file failed as invalid JSON. Lines end at LF, CRLF or
    a lone CR."""
    recs = [{"id": "a", "name": "Alpha", "description": "one\u2028two\u2029three \x85 four \x0c five"},
            {"id": "b", "name": "B\u2028eta"}, {"source": "a", "target": "b", "type": "knows"}]
    text = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in recs) + "\r\n"
    res = load(tmp_path, "g.jsonl", text)
    assert [(n.key, n.name, n.text, n.line_start) for n in res.nodes] == [
        ("kg:a", "Alpha", "one\u2028two\u2029three \x85 four \x0c five", 1), ("kg:b", "B\u2028eta", "", 2)]
    assert edges(res) == [("kg:a", "b", "knows", "kg", 1.0, 3)]
    mac = load(tmp_path, "mac.jsonl", '{"id": "c", "name": "C"}\r{"id": "d", "name": "D"}\r')
    assert [(n.key, n.line_start) for n in mac.nodes] == [("kg:c", 1), ("kg:d", 2)]
