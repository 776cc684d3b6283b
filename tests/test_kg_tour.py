"""The knowledge-graph side as a demanding user meets it (tour16a): keys with control
characters named back as printed, triples in a `.txt`, the model commands' exit codes, odd
KG inputs. Each test failed before its fix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli, write


# ---------------------------------------------------------------- keys with control characters
@pytest.fixture
def hostile_keys(tmp_path):
    recs = [{"id": "line\nbreak", "name": "Broken key", "type": "thing", "description": "zebra quartz"},
            {"id": "esc\x1b[31mred", "name": "Red key", "type": "thing", "description": "zebra quartz two"},
            {"id": "b", "name": "Other", "type": "thing", "description": "other"},
            {"source": "line\nbreak", "target": "b", "edge_type": "rel"},
            {"source": "esc\x1b[31mred", "target": "b", "edge_type": "rel"}]
    write(tmp_path / "kg.jsonl", "".join(json.dumps(r) + "\n" for r in recs))
    db = tmp_path / "k.db"
    assert cli("index", tmp_path / "kg.jsonl", "--db", db, "-q") == 0
    return db


def test_a_key_with_a_line_break_is_named_back_as_search_prints_it(hostile_keys, capsys):
    """A KG id "line<LF>break" is printed `kg:line\\nbreak` (so that it cannot start a line of
    its own); `show`, `related`, `path`, `impact` and `why` given that printed key said "no node"
    (exit 5). The rule: a name that matches nothing is tried again with the escapes kgsearch
    prints read back (exact names first, so a key that holds a real backslash still wins)."""
    db = hostile_keys
    capsys.readouterr()
    assert cli("search", "broken zebra", "--db", db, "-k", "1") == 0
    shown = capsys.readouterr().out.splitlines()[1].split()[0]
    assert shown == "kg:line\\nbreak"
    for command in (["show", shown], ["related", shown], ["path", shown, "kg:b"], ["impact", shown, "--types", "rel"],
                    ["why", "zebra", shown], ["show", "kg:esc\\x1b[31mred"], ["related", "kg:esc\\x1b[31mred"]):
        assert cli(*command, "--db", db) == 0, command
        assert "no node" not in capsys.readouterr().err
    assert cli("show", shown, "--db", db, "--json") == 0
    assert json.loads(capsys.readouterr().out)["node"]["key"] == "kg:line\nbreak"
    assert cli("show", "kg:line\\x41break", "--db", db) == 5     # only the escapes kgsearch prints


def test_no_node_names_the_name_as_typed(hostile_keys, capsys):
    """`show 'kg:line\\nbreak'` of a node not there said "no node 'kg:line\\\\nbreak'" (Python's
    repr doubles each backslash), so the name shown was not the one typed: one backslash, and a
    raw control character still shown escaped (the terminal obeys none), in the CLI, the API and
    the MCP tools."""
    from urllib.parse import quote

    from kgsearch.mcp.server import Server
    from kgsearch.serve import App, Holder

    db = hostile_keys
    capsys.readouterr()
    for typed, shown in (("kg:line\\nnope", "'kg:line\\nnope'"), ("kg:esc\x1b[31mnope", "'kg:esc\\x1b[31mnope'"),
                         ("C:\\dir", "'C:\\dir'"), ("it's", '"it\'s"')):
        for command in (["show", typed], ["related", typed], ["path", typed, "kg:b"], ["why", "zebra", typed]):
            assert cli(*command, "--db", db) == 5, command
            err = capsys.readouterr().err
            assert err.startswith(f"error: no node {shown} in ") and f"`kgsearch search {shown}`" in err, (command, err)
        st, _, body = App({"i": Holder(str(db))}).handle("GET", f"/api/show?node={quote(typed)}", {})
        assert st == 404 and json.loads(body)["error"].startswith(f"no node {shown} in "), body
        res = Server(str(db)).call("show", {"node": typed})
        assert res["isError"] and res["content"][0]["text"].startswith(f"error: no node {shown} in ")


def test_an_exact_key_with_a_backslash_wins_over_the_escape(tmp_path, capsys):
    recs = [{"id": "a\\nb", "name": "literal backslash"}, {"id": "a\nb", "name": "real break"}]
    write(tmp_path / "kg.jsonl", "".join(json.dumps(r) + "\n" for r in recs))
    db = tmp_path / "k.db"
    assert cli("index", tmp_path / "kg.jsonl", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("show", "kg:a\\nb", "--db", db, "--json") == 0
    assert json.loads(capsys.readouterr().out)["node"]["name"] == "literal backslash"
    assert cli("show", "kg:a\nb", "--db", db, "--json") == 0
    assert json.loads(capsys.readouterr().out)["node"]["name"] == "real break"


# ---------------------------------------------------------------- triples in a .txt
def _keys(db, kind=None):
    from kgsearch.store.db import Index

    with Index.open(db, readonly=True) as ix:
        sql = "SELECT key FROM nodes" + (" WHERE kind = ?" if kind else "") + " ORDER BY key"
        return [k for (k,) in ix.conn.execute(sql, (kind,) if kind else ())]


def test_triples_in_a_txt_file_are_read_as_triples(tmp_path, capsys):
    """YAGO3-10, CoDEx and the original FB15k/WN18 ship `train.txt`: indexed, its triples were
    one prose document cut into chunks, with no edge and no word about it. A `.txt` whose lines
    are head<TAB>relation<TAB>tail is read as triples, said once when read; `--format text`
    reads it as prose; a letter with tabs stays a document."""
    kg = tmp_path / "yago"
    write(kg / "train.txt", "Chatou\tisLocatedIn\tFrance\nBoo_Young-tae\tplaysFor\tYangju_Citizen_FC\n")
    write(kg / "test.txt", "Chatou\tisLocatedIn\tEurope\r\nFrance\thasCapital\tParis\r\n")
    write(kg / "entity2text.txt", "Chatou\tChatou, a commune west of Paris\n")
    write(kg / "letter.txt", "Dear Ann,\n\tthanks\tfor the\tnotes\nsee you\n")
    db = tmp_path / "k.db"
    capsys.readouterr()
    assert cli("index", kg, "--db", db) == 0
    err = capsys.readouterr().err
    assert err.count("read as KG triples, not prose") == 2 and f"{kg / 'train.txt'}: read as KG triples" in err
    assert len(_keys(db, "document")) == 1 and _keys(db, "chunk") == []        # the letter
    assert "kg:Yangju_Citizen_FC" in _keys(db, "entity") and "kg:Paris" in _keys(db, "entity")
    assert cli("related", "kg:Chatou", "--db", db, "--json") == 0
    rel = json.loads(capsys.readouterr().out)
    assert set(rel["edges"]) == {"islocatedin"} and rel["node"]["name"] == "Chatou" and rel["total"] == 2
    assert cli("index", kg, "--db", db) == 0
    assert "read as KG triples" not in capsys.readouterr().err           # said when read, not on every run
    prose = tmp_path / "prose.db"
    assert cli("index", kg / "train.txt", "--format", "text", "--db", prose, "-q") == 0
    assert len(_keys(prose, "document")) == 1 and "kg:France" not in _keys(prose)


def test_a_txt_of_triples_that_turns_ragged_names_the_line_and_the_way_out(tmp_path, capsys):
    lines = [f"e{i}\trel\te{i + 1}" for i in range(2000)] + ["this line is prose"]
    bad = write(tmp_path / "kg" / "train.txt", "\n".join(lines) + "\n")
    capsys.readouterr()
    assert cli("index", bad, "--db", tmp_path / "k.db") == 3
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:2001: expected head<TAB>relation<TAB>tail, got 1 field(s)")
    assert "--format text" in err and "Traceback" not in err and err.count("\n") == 1


def test_a_txt_of_triples_gets_the_triples_size_cap():
    from kgsearch.ingest.walk import DEFAULT_MAX_BYTES, TRIPLES_MAX_BYTES, size_cap

    assert size_cap(Path("train.txt"), None, "triples") == TRIPLES_MAX_BYTES
    assert size_cap(Path("notes.txt"), None, "text") == DEFAULT_MAX_BYTES
    assert size_cap(Path("entity2text.txt"), None, "triples") == DEFAULT_MAX_BYTES


# ---------------------------------------------------------------- an unknown model: one exit code
@pytest.mark.parametrize("name", ["nope", "./no-model-here"])
def test_an_unknown_model_is_a_usage_error_in_index_and_model_use(name, tmp_path, capsys, monkeypatch):
    """`kgsearch model use nope` exited 3 (bad input) while `kgsearch index --model nope` exited 2
    (usage error) for the same unknown model, each with its own words. A name or folder that holds
    no model is a usage error in both (exit 2), said alike; a model whose files do not read stays
    bad input (exit 3 naming the file)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "no-model-here").mkdir()
    write(tmp_path / "notes" / "a.md", "# A\nalpha\n")
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "notes", "--db", db, "-q", "--no-embed") == 0
    capsys.readouterr()
    assert cli("model", "use", name, "--db", db) == 2
    use = capsys.readouterr().err
    assert cli("index", tmp_path / "notes", "--model", name, "--db", db) == 2
    index = capsys.readouterr().err
    assert index == use.replace("error: ", f"error: --model {name!r}: ", 1) and use.count("\n") == 1
    assert ("e5-small-en-256" in use) == (name == "nope")
    bad = tmp_path / "badm"
    write(bad / "config.json", "{}")
    write(bad / "tokenizer.json", "{}")
    (bad / "model.safetensors").write_bytes(b"12345678")
    assert cli("model", "use", bad, "--db", db) == 3
    assert f"{bad / 'model.safetensors'}: not a safetensors file" in capsys.readouterr().err


# ---------------------------------------------------------------- type: is kind:
def test_type_is_the_kind_filter_as_a_kg_file_says_it(tmp_path, capsys):
    """A KG file calls a node's kind its "type"; `type:Person` in a query was query text, so
    every kind came back (a silent non-filter). It is `kind:Person`, negated and quoted too."""
    from kgsearch.query.parse import split_filters

    write(tmp_path / "kg" / "n.jsonl",
          '{"id": "p1", "name": "Ada Lovelace", "type": "Person", "description": "analytical engine notes"}\n'
          '{"id": "p2", "name": "Analytical Engine", "type": "Machine Design", "description": "analytical by Babbage"}\n')
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "kg", "--db", db, "-q", "--no-embed") == 0
    for query, want in (("analytical type:Person", ["kg:p1"]), ('analytical type:"Machine Design"', ["kg:p2"]),
                        ("analytical -type:person", ["kg:p2"])):
        capsys.readouterr()
        assert cli("search", query, "--db", db, "--json") == 0
        assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == want, query
    assert split_filters("x type:Person")[1][0].field == "kind"
    assert cli("search", "analytical typ:Person", "--db", db) == 2       # one letter off a field: said


# ---------------------------------------------------------------- odd KG inputs
@pytest.mark.parametrize("name", ["e.json", "e.jsonl", "e.csv", "e.tsv"])
def test_an_empty_kg_file_is_empty_alike_named_or_walked(name, tmp_path, capsys):
    """Named, an empty .json or .csv was exit 3 ("not a knowledge-graph file (the file is
    empty)") while an empty .jsonl or .tsv was indexed without a word: one rule, nothing
    indexed, one warning naming the file, exit 0."""
    f = write(tmp_path / "kg" / name, "")
    capsys.readouterr()
    assert cli("index", f, "--db", tmp_path / "named.db") == 0
    assert f"warning: {f}: empty (no " in capsys.readouterr().err
    assert cli("index", tmp_path / "kg", "--db", tmp_path / "walked.db") == 0
    assert f"warning: {f}: empty (no " in capsys.readouterr().err


def test_bom_crlf_duplicates_and_self_loops(tmp_path, capsys):
    """A BOM and CRLF line ends read as UTF-8 and LF; a duplicated triple is two edges (a KG may
    count them), a self loop is an edge, and none of them breaks related, path or export."""
    from kgsearch.store.db import Index

    kg = tmp_path / "kg"
    kg.mkdir()
    (kg / "train.tsv").write_bytes(b"\xef\xbb\xbfa\tr\tb\r\na\tr\tb\r\nc\tself\tc\r\n")
    (kg / "n.jsonl").write_bytes(b'\xef\xbb\xbf{"id":"x","name":"X"}\r\n{"source":"x","target":"x","type":"loop"}\r\n')
    db = tmp_path / "k.db"
    assert cli("index", kg, "--db", db, "-q") == 0
    with Index.open(db, readonly=True) as ix:
        assert sorted(k for (k,) in ix.conn.execute("SELECT key FROM nodes")) == ["kg:a", "kg:b", "kg:c", "kg:x"]
    capsys.readouterr()
    assert cli("related", "kg:c", "--db", db, "--json") == 0
    assert json.loads(capsys.readouterr().out)["edges"]["self"][0]["key"] == "kg:c"
    assert cli("path", "kg:a", "kg:b", "--db", db, "--json") == 0
    assert cli("path", "kg:c", "kg:c", "--db", db) == 0                 # 0 hops
    assert "Traceback" not in capsys.readouterr().err
    assert cli("export", "jsonl", tmp_path / "out.jsonl", "--db", db, "-q") == 0


def test_related_and_impact_say_when_there_is_nothing(tmp_path, capsys):
    """`related X --types T` with no such edge printed the node and nothing else (was the type
    wrong? the node?); `impact` on a KG of its own types printed `types )`."""
    write(tmp_path / "kg" / "train.tsv", "a\t_hypernym\tb\nb\t_part_of\tc\n")
    db = tmp_path / "k.db"
    assert cli("index", tmp_path / "kg", "--db", db, "-q", "--no-embed") == 0
    capsys.readouterr()
    assert cli("related", "kg:a", "--types", "_part_of", "--db", db) == 0
    assert capsys.readouterr().out.splitlines()[1] == "(no edges of type _part_of)"
    assert cli("related", "kg:a", "--direction", "in", "--db", db) == 0
    assert capsys.readouterr().out.splitlines()[1] == "(no incoming edges)"
    assert cli("impact", "kg:b", "--db", db) == 0
    assert "(1 start node(s), depth 3, types none of this index's)" in capsys.readouterr().out


def test_huge_names_and_ids(tmp_path, capsys):
    """A 3 MB KG name was the node's name, printed whole on every result line naming it; a 2 MB
    "id" (a lost tab) became a 2 MB key. A name is cut at 1,000 characters (its whole kept in
    the text, searchable); an id over 1,000 characters is bad input naming file:line."""
    from kgsearch.indexer.load import MAX_NAME_CHARS
    from kgsearch.store.db import Index

    write(tmp_path / "kg" / "n.jsonl", json.dumps({"id": "big", "name": "label " * 1000 + "zanzibar",
                                                   "description": "short gloss"}) + "\n")
    db = tmp_path / "k.db"
    capsys.readouterr()
    assert cli("index", tmp_path / "kg", "--db", db, "--no-embed") == 0
    assert "kg:big's name has 6,008 characters; named by its first 1,000" in capsys.readouterr().err
    with Index.open(db, readonly=True) as ix:
        name, = ix.conn.execute("SELECT name FROM nodes WHERE key = 'kg:big'").fetchone()
    assert len(name) <= MAX_NAME_CHARS + 1 and name.endswith("label\u2026")
    assert cli("search", "zanzibar", "--db", db, "--json") == 0
    assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["kg:big"]
    bad = write(tmp_path / "t" / "train.tsv", "a\tr\tb\n" + "x" * 5000 + "\tr\tb\n")
    assert cli("index", bad, "--db", tmp_path / "t.db") == 3
    assert capsys.readouterr().err == (f"error: {bad}:2: the head has 5,000 characters (an id is at most 1,000); is a "
                                       f"tab, quote or line break missing?\n")


# ---------------------------------------------------------------- show's edge-type column
def test_show_aligns_edges_on_the_longest_type_shown(tmp_path, capsys):
    """`show` padded edge types to 14 columns, so WN18RR's `_derivationally_related_form` (28)
    pushed its target out of line. The column is as wide as the longest type shown, in both
    directions, up to 32; a longer type has a line of its own, its target under the column."""
    long = "_a_relation_type_longer_than_the_column"
    write(tmp_path / "wn.tsv", f"05074057\t_derivationally_related_form\t02310895\n05074057\t_hypernym\t02176268\n"
                               f"05074057\t{long}\t09990000\n02176268\t_has_part\t05074057\n")
    db = tmp_path / "wn.db"
    assert cli("index", tmp_path / "wn.tsv", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("show", "kg:05074057", "--db", db) == 0
    lines = capsys.readouterr().out.splitlines()
    edges = [ln for ln in lines if ln.startswith(("  -> ", "  <- ", "     "))]
    column = {ln.index(target) for ln in edges for target in ("02310895", "02176268", "09990000") if target in ln}
    assert column == {5 + len("_derivationally_related_form") + 1}, edges
    at = edges.index(f"  -> {long}")
    assert edges[at + 1].strip().startswith("09990000")
    assert any(ln.startswith("  <- _has_part" + " " * (len("_derivationally_related_form") - len("_has_part") + 1)
                             + "02176268") for ln in lines), lines


# ---------------------------------------------------------------- values in messages, as typed
TYPED = "C:\\dir"          # a backslash: Python's repr doubled it ('C:\\\\dir'); quoted() shows it as typed
SHOWN = "'C:\\dir'"


@pytest.fixture
def two_vaults(tmp_path):
    """Two indexed vaults, notes and work, each with a.md linking b.md: their dbs."""
    dbs = []
    for tag in ("notes", "work"):
        write(tmp_path / tag / "a.md", "# A\nalpha [[b]]\n")
        write(tmp_path / tag / "b.md", "# B\nbravo\n")
        dbs.append(tmp_path / f"{tag}.db")
        assert cli("index", tmp_path / tag, "--db", dbs[-1], "-q") == 0
    return dbs


def test_messages_quote_a_missing_root_index_or_type_as_typed(two_vaults, capsys):
    """`no root`, `no index named`, `no edge type` and `unknown root` quoted the value with repr:
    a typed backslash came back doubled, unlike `no node` (kgsearch.lines.quoted)."""
    from urllib.parse import quote

    from kgsearch.serve import App, Holder

    a, b = two_vaults
    capsys.readouterr()
    assert cli("roots", "remove", TYPED, "--db", a) == 5
    assert capsys.readouterr().err.startswith(f"error: no root {SHOWN} in ")
    assert cli("why", "alpha", "md:a", "--index", TYPED, "--db", a, "--db", b) == 2
    assert f"no index named {SHOWN}; the indexes are notes, work" in capsys.readouterr().err
    st, _, body = App({"i": Holder(str(a))}).handle("GET", f"/api/search?q=alpha&db={quote(TYPED)}", {})
    assert st == 404 and json.loads(body)["error"].startswith(f"no index named {SHOWN} here"), body
    for command in (["related", "md:a"], ["path", "md:a", "md:b"], ["impact", "md:a"], ["export", "jsonl", "-"]):
        assert cli(*command, "--types", "x\\y", "--db", a) == 2, command
        assert "--types: no edge type 'x\\y' in this index" in capsys.readouterr().err, command
    assert cli("impact", "md:a", "--types", TYPED, "--db", a) == 2       # (TYPE:in|out)
    assert capsys.readouterr().err == f"error: --types: {SHOWN}: the side after ':' must be in or out\n"
    for dbs in (["--db", a], ["--db", a, "--db", b]):
        assert cli("search", f"alpha root:{TYPED}", *dbs) == 2
        assert f"unknown root {SHOWN} in 'root:{TYPED}'; " in capsys.readouterr().err, dbs


def test_the_graph_kernels_quote_an_unknown_edge_type_as_typed(two_vaults):
    from kgsearch.graph.context import load_context
    from kgsearch.graph.kernels.csr import GraphError
    from kgsearch.graph.kernels.paths import edge_types
    from kgsearch.store.db import Index

    with Index.open(two_vaults[0], readonly=True) as ix:
        g = load_context(ix).graph
    with pytest.raises(GraphError) as exc:
        edge_types(g, [TYPED])
    assert str(exc.value).startswith(f"no edge type {SHOWN} in the graph")


def test_an_ambiguous_name_is_quoted_as_typed(tmp_path, capsys):
    recs = [{"id": "one", "name": TYPED, "type": "thing"}, {"id": "two", "name": TYPED, "type": "thing"}]
    write(tmp_path / "kg.jsonl", "".join(json.dumps(r) + "\n" for r in recs))
    db = tmp_path / "k.db"
    assert cli("index", tmp_path / "kg.jsonl", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("show", TYPED, "--db", db) == 2
    assert capsys.readouterr().err.startswith(f"error: {SHOWN} names 2 nodes in ")


def test_a_path_across_indexes_quotes_its_ends_as_typed(two_vaults):
    from kgsearch.mcp.multi import MultiServer

    res = MultiServer([str(p) for p in two_vaults]).call("path", {"source": "md:a", "target": TYPED})
    assert res["isError"]
    assert res["content"][0]["text"].startswith(f"error: nodes 'md:a' and {SHOWN} are not both in any of the indexes")
