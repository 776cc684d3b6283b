"""``kgsearch export``: GraphML round trips through networkx (node and edge counts, kinds and
types), JSON Lines carries plain text and loads back as a KG, a Markdown vault indexes back to
exactly the exported links, and the plain SQLite file reads with a bare sqlite3 connection."""
from __future__ import annotations

import collections
import re
import json
import sqlite3

import pytest

from kgsearch.export import export
from kgsearch.export.vault import field_key, note_names


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    base = tmp_path_factory.mktemp("export")
    db = base / "demo.db"
    index_paths(db, [str(demo_dir())], IndexOptions(steps=("text", "neighbors", "graph")))
    ix = Index.open(db, readonly=True)
    yield ix, base
    ix.close()


def _index_edges(ix, derived=True):
    sql = ("SELECT s.key, e.type, d.key FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst"
           + ("" if derived else " WHERE e.file_id IS NOT NULL"))
    return list(ix.conn.execute(sql))


def test_graphml_round_trips_through_networkx(demo):
    from conftest import need

    nx = need("networkx")
    ix, base = demo
    out = base / "demo.graphml"
    res = export(ix, "graphml", str(out))
    G = nx.read_graphml(out)
    nodes = dict(ix.conn.execute("SELECT key, kind FROM nodes"))
    edges = _index_edges(ix)
    assert res["nodes"] == G.number_of_nodes() == len(nodes) == ix.node_count()
    assert res["edges"] == G.number_of_edges() == len(edges)
    assert {k: d["kind"] for k, d in G.nodes(data=True)} == nodes
    assert collections.Counter(d["type"] for _, _, d in G.edges(data=True)) == \
        collections.Counter(t for _, t, _ in edges)
    assert collections.Counter((u, d["type"], v) for u, v, d in G.edges(data=True)) == collections.Counter(edges)
    git = G.nodes["kg:git"]
    assert git["label"] == "Git" and git["pagerank"] > 0 and git["community"] >= 0 and "text" not in git
    with_text = base / "text.graphml"
    export(ix, "graphml", str(with_text), text=True, types=["used_for"])
    H = nx.read_graphml(with_text)
    assert H.nodes["kg:git"]["text"].startswith("Version control")
    assert {d["type"] for _, _, d in H.edges(data=True)} == {"used_for"}


def test_graphml_survives_hostile_names(tmp_path):
    from conftest import need
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    nx = need("networkx")
    (tmp_path / "kg.jsonl").write_text(
        json.dumps({"id": "a", "name": "bell\x07 <b>&\"quote\"", "type": "thing", "description": "esc \x1b[2J"}) + "\n"
        + json.dumps({"id": "b", "name": "]]> </graphml>", "type": "thing"}) + "\n"
        + json.dumps({"source": "a", "target": "b", "edge_type": "rel <x>"}) + "\n")
    db = tmp_path / "k.db"
    index_paths(db, [str(tmp_path / "kg.jsonl")], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        export(ix, "graphml", str(tmp_path / "k.graphml"), text=True)
    G = nx.read_graphml(tmp_path / "k.graphml")
    assert G.nodes["kg:a"]["label"] == "bell\ufffd <b>&\"quote\"" and G.nodes["kg:b"]["label"] == "]]> </graphml>"
    assert G.nodes["kg:a"]["text"].startswith("esc \ufffd[2J")
    assert [d["type"] for _, _, d in G.edges(data=True)] == ["rel_<x>"]


def test_jsonl_has_plain_text_and_loads_back_as_a_kg(demo, tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index
    from kgsearch.store.textcodec import unpack

    ix, base = demo
    out = tmp_path / "demo.jsonl"
    res = export(ix, "jsonl", str(out))
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    nodes = [x for x in lines if "id" in x]
    edges = [x for x in lines if "source" in x]
    assert len(nodes) == res["nodes"] == ix.node_count() and len(edges) == res["edges"] == len(_index_edges(ix))
    texts = {k: unpack(t) for k, t in ix.conn.execute("SELECT key, text FROM nodes")}
    assert all(n.get("text", "") == (texts[n["id"]] or "") for n in nodes)
    assert any(isinstance(t, bytes) for (t,) in ix.conn.execute("SELECT text FROM nodes"))   # some were compressed
    db = tmp_path / "back.db"
    index_paths(db, [str(out)], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as back:        # derived edges are the neighbors step's, not read
        assert back.node_count() == ix.node_count()
        assert collections.Counter(_index_edges(back)) == collections.Counter(_index_edges(ix, derived=False))


def test_vault_indexes_back_to_the_same_links(demo, tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    ix, _ = demo
    vault = tmp_path / "vault"
    res = export(ix, "vault", str(vault))
    assert res["nodes"] == ix.node_count() and len(list(vault.rglob("*.md"))) == ix.node_count()
    db = tmp_path / "vault.db"
    index_paths(db, [str(vault)], IndexOptions(steps=("text", "graph")))
    want = set(_index_edges(ix, derived=False))
    assert res["edges"] == len(want)
    with Index.open(db, readonly=True) as back:
        note_of = {}
        for key, props in back.conn.execute("SELECT key, props FROM nodes WHERE kind = 'note'"):
            note_of[key] = json.loads(props)["frontmatter"]["kgsearch_key"]
        assert sorted(note_of.values()) == sorted(k for (k,) in ix.conn.execute("SELECT key FROM nodes"))
        got, stray = set(), []
        for s, t, d, ns in back.conn.execute(
                "SELECT s.key, e.type, d.key, e.ns FROM edges e JOIN nodes s ON s.id = e.src "
                "JOIN nodes d ON d.id = e.dst WHERE e.file_id IS NOT NULL"):
            if s in note_of and d in note_of:
                got.add((note_of[s], t, note_of[d]))
            elif ns == "note":
                stray.append((s, t, d))
    assert got == want and stray == []
    git = (vault / "tool" / "Git.md").read_text(encoding="utf-8")
    assert git.startswith('---\nkgsearch_key: "kg:git"\nkind: "tool"\n') and "used_for:: [[Markdown vault]]" in git


def test_vault_names_and_keys():
    names = note_names([("a", "BM25", "note"), ("b", "bm25", "concept"), ("c", "BM25", "concept"),
                        ("d", "x.png", "thing"), ("e", "a/b: c?", "thing"), ("f", "...", "tag"), ("g", "notes.md", "x")])
    assert names == {"a": "BM25", "b": "bm25 (concept)", "c": "BM25 (concept 2)", "d": "x png", "e": "a b c",
                     "f": "tag 6", "g": "notes md"}
    assert field_key("/film/film/genre") == "film/film/genre" and field_key("_hypernym") == "_hypernym"
    assert field_key("Depends On") == "depends_on"


def test_vault_names_fit_every_file_system(tmp_path):
    """A name of 90 emoji (360 bytes) was written as such: "File name too long" on every Linux
    file system (255 bytes a name), and the export stopped; CON, nul.txt, Com1 are device names
    on Windows (a vault synced there)."""
    from kgsearch.export.vault import MAX_BYTES

    long_cjk = "备份" * 60
    names = note_names([("a", "😀" * 90, "entity"), ("b", long_cjk, "entity"), ("c", long_cjk + "x", "entity"),
                        ("d", "CON", "x"), ("e", "nul.txt", "x"), ("f", "Com1", "x"), ("g", "console", "x"),
                        ("h", "lpt9.md", "x"), ("i", "a\ud800b", "x"), ("j", "x", "k" * 300), ("k", "x", "k" * 300)])
    assert names["a"] == "😀" * 40 and len(names["a"].encode()) == MAX_BYTES
    assert names["b"] == long_cjk[:53] and names["c"] == long_cjk[:53] + " (entity)"
    assert (names["d"], names["e"], names["f"], names["g"], names["h"]) == ("CON_", "nul_.txt", "Com1_", "console", "lpt9 md")
    assert names["i"] == "a b"
    assert names["k"] == "x (" + "k" * 40 + ")"
    for n in names.values():                # each one a file on this file system
        (tmp_path / f"{n}.md").write_text("x", encoding="utf-8")
    assert len(list(tmp_path.iterdir())) == len(names)


def test_sqlite_export_reads_without_kgsearch(demo, tmp_path):
    from kgsearch.store.textcodec import unpack

    ix, _ = demo
    out = tmp_path / "plain.db"
    res = export(ix, "sqlite", str(out))
    con = sqlite3.connect(out)                    # no kgtext() function registered
    assert con.execute("SELECT count(*) FROM nodes").fetchone()[0] == res["nodes"] == ix.node_count()
    assert con.execute("SELECT count(*) FROM edges").fetchone()[0] == res["edges"]
    assert con.execute("SELECT count(*) FROM nodes WHERE typeof(text) = 'blob'").fetchone()[0] == 0
    want = {k: unpack(t) for k, t in ix.conn.execute("SELECT key, text FROM nodes")}
    assert dict(con.execute("SELECT key, text FROM nodes")) == want
    src, typ, dst = con.execute("SELECT source, type, target FROM edges e JOIN nodes n ON n.id = e.src "
                                "WHERE n.key = 'kg:git' AND type = 'used_for'").fetchone()
    assert (src, typ, dst) == ("kg:git", "used_for", "kg:markdown_vault")
    assert json.loads(dict(con.execute("SELECT key, value FROM meta"))["format"]) == "kgsearch-plain"


def test_export_command_and_errors(demo, tmp_path, capsys):
    from kgsearch.cli import main
    from kgsearch.errors import UsageError

    ix, _ = demo
    assert main(["export", "jsonl", "-", "--db", str(ix.path), "--no-text", "--types", "used_for"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert all("text" not in r for r in recs)
    assert {r["edge_type"] for r in recs if "source" in r} == {"used_for"}
    assert main(["export", "graphml", str(tmp_path / "g.graphml"), "--db", str(ix.path)]) == 0
    assert f"wrote {ix.node_count()} nodes" in capsys.readouterr().err and (tmp_path / "g.graphml").exists()
    assert main(["export", "vault", "-", "--db", str(ix.path)]) == 2
    with pytest.raises(SystemExit) as e:
        main(["export", "pdf", "x", "--db", str(ix.path)])
    assert e.value.code == 2
    assert main(["export", "jsonl", str(tmp_path / "no" / "such" / "dir" / "x.jsonl"), "--db", str(ix.path)]) == 3
    assert "cannot write the export" in capsys.readouterr().err
    with pytest.raises(UsageError, match="no edge type 'nope'"):
        export(ix, "jsonl", str(tmp_path / "x.jsonl"), types=["nope"])


@pytest.mark.parametrize("fmt", ["jsonl", "graphml"])
def test_export_to_a_closed_pipe_is_no_error(fmt, demo, monkeypatch, capsys):
    """`kgsearch export jsonl - | head -1`: the reader closing the pipe once it has what it wanted
    is how such a pipeline ends (exit 0, nothing said), as for search. Before: exit 3, "cannot write
    the export (Broken pipe); choose a folder you can write to"."""
    import io
    import sys

    from kgsearch.cli import main

    class Head(io.StringIO):
        def write(self, s):
            if self.tell() > 100:
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(s)

    ix, _ = demo
    capsys.readouterr()
    head = Head()
    monkeypatch.setattr(sys, "stdout", head)
    assert main(["export", fmt, "-", "--db", str(ix.path)]) == 0
    assert capsys.readouterr().err == "" and head.tell() > 100


def test_export_never_replaces_the_index_or_a_file_it_was_made_from(tmp_path, capsys):
    """`kgsearch export jsonl notes/plan.md` replaced the user's note with the export, and
    `export sqlite INDEX.db --db INDEX.db` the index itself (exit 0 both, "wrote ... nodes")."""
    from kgsearch.cli import main
    from kgsearch.indexer import index_paths

    notes = tmp_path / "notes"
    notes.mkdir()
    plan = notes / "plan.md"
    plan.write_text("# Plan\n\nthe real note\n", encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(notes)])
    before = db.read_bytes()
    capsys.readouterr()
    for fmt, out, why in (("jsonl", plan, "is a file this index was made from; writing the export there would replace "
                                          "it: choose another path"),
                          ("graphml", notes / ".." / "notes" / "plan.md", "is a file this index was made from; "
                           "writing the export there would replace it: choose another path"),
                          ("sqlite", db, "is the index being exported; write the export to another file")):
        assert main(["export", fmt, str(out), "--db", str(db)]) == 2
        assert capsys.readouterr() == ("", f"error: {out} {why}\n")
    assert plan.read_text(encoding="utf-8") == "# Plan\n\nthe real note\n" and db.read_bytes() == before
    assert main(["export", "jsonl", str(tmp_path / "out.jsonl"), "--db", str(db)]) == 0


def test_export_into_an_indexed_folder_is_refused(tmp_path, capsys):
    """`kgsearch export vault ~/notes/export` (or jsonl there) wrote the export where the next
    `kgsearch index` read it back: every node twice, linked to itself."""
    from kgsearch.cli import main
    from kgsearch.indexer import index_paths

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plan.md").write_text("# Plan\n\nsee [[todo]]\n", encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(notes)])
    capsys.readouterr()
    for fmt, out in (("vault", notes / "export"), ("jsonl", notes / "sub" / "graph.jsonl"), ("vault", notes)):
        assert main(["export", fmt, str(out), "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert err == (f"error: {out} is inside the indexed folder {notes.resolve()}: the next `kgsearch index` would "
                       f"index the export too (every node twice); write it outside the indexed folders\n")
    assert sorted(p.name for p in notes.iterdir()) == ["plan.md"]
    # what the walk does not read (graphml), and anything outside the roots, is written
    assert main(["export", "graphml", str(notes / "g.graphml"), "--db", str(db), "-q"]) == 0
    assert main(["export", "vault", str(tmp_path / "vault"), "--db", str(db), "-q"]) == 0


def test_vault_of_text_with_nul_bytes_indexes_back(tmp_path):
    """A KG description holding ``"\\u0000"`` (valid JSON) went into its note as a NUL byte, so
    indexing the exported vault skipped that note ("not text (NUL bytes in its first 8 KB)")
    and lost its links: the vault must index back to every node and link."""
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    (tmp_path / "kg.jsonl").write_text(
        json.dumps({"id": "a", "name": "nul\x00name", "type": "thing", "description": "has a NUL \x00 inside"}) + "\n"
        + json.dumps({"id": "b", "name": "other", "type": "thing", "description": "plain"}) + "\n"
        + json.dumps({"source": "a", "target": "b", "edge_type": "links"}) + "\n")
    db = tmp_path / "k.db"
    index_paths(db, [str(tmp_path / "kg.jsonl")], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        res = export(ix, "vault", str(tmp_path / "vault"))
    assert res == {**res, "nodes": 2, "edges": 1}
    assert all(b"\x00" not in p.read_bytes() for p in (tmp_path / "vault").rglob("*.md"))
    back = tmp_path / "back.db"
    report = index_paths(back, [str(tmp_path / "vault")], IndexOptions(steps=("text", "graph")))
    assert not any(report.skipped.values())
    with Index.open(back, readonly=True) as ix:
        assert [k for (k,) in ix.conn.execute("SELECT key FROM nodes WHERE kind = 'note' ORDER BY key")] == \
            ["md:thing/nul name", "md:thing/other"]
        assert ix.conn.execute("SELECT count(*) FROM edges WHERE type = 'links' AND dst IS NOT NULL").fetchone()[0] == 1


def _graph_of(jsonl_text: str) -> tuple[list, list]:
    """An export's nodes (in order) and edges (sorted), without what says where each was read
    (``path``, ``line``, ``line_end``): re-indexed, a node lives in the export file."""
    nodes, edges = [], []
    for line in jsonl_text.splitlines():
        rec = json.loads(line)
        if "id" in rec:
            nodes.append({k: v for k, v in rec.items() if k not in ("path", "line", "line_end")})
        elif "source" in rec:
            edges.append(json.dumps({k: v for k, v in rec.items() if k != "line"}, sort_keys=True))
    return nodes, sorted(edges)


def test_jsonl_export_indexes_back_to_the_same_graph(tmp_path):
    """`kgsearch export jsonl` then `kgsearch index` of that file gave keys `kg:kg:git` and
    `kg:md:vault/Home` (ids read as KG ids), the nodes' qualnames, flags and paths as props, and
    every similar_text edge twice (read, then computed). An export indexes back to the same
    keys, nodes (kind, name, text, qualname, flags, props, parent, names) and edges: exporting
    it again gives the same file but for where each node was read."""
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    pkg = tmp_path / "lib" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "core.py").write_text("class Base:\n    def run(self):\n        return helper()\n\n\n"
                                 "def helper():\n    '''Help.'''\n    return 1\n", encoding="utf-8")
    (pkg / "test_core.py").write_text("from pkg.core import Base\n\n\ndef test_run():\n    Base().run()\n",
                                      encoding="utf-8")
    kg = tmp_path / "kg"
    kg.mkdir()
    (kg / "train.tsv").write_text("a1\t_hypernym\tb2\nb2\t_part_of\tc3\n", encoding="utf-8")
    (kg / "entity2text.txt").write_text("a1\tdog, a domestic animal\nb2\tcanine, a family\n", encoding="utf-8")
    (kg / "spaced .md").write_text("# Spaced\nsee [[elsewhere]]\n", encoding="utf-8")    # a key ending in a space
    opts = IndexOptions(steps=("text", "neighbors", "graph"))
    first = tmp_path / "first.db"
    index_paths(first, [str(demo_dir()), str(tmp_path / "lib"), str(kg)], opts)
    out1, out2 = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    with Index.open(first, readonly=True) as ix:
        export(ix, "jsonl", str(out1))
        keys = {k for (k,) in ix.conn.execute("SELECT key FROM nodes")}
    assert {"py://lib/pkg.core.Base.run", "kg:a1", "md:vault/Home", "md://kg/spaced "} <= keys
    back = tmp_path / "back.db"
    index_paths(back, [str(out1)], opts)
    with Index.open(back, readonly=True) as ix:
        assert {k for (k,) in ix.conn.execute("SELECT key FROM nodes")} == keys
        export(ix, "jsonl", str(out2))
    one, two = _graph_of(out1.read_text(encoding="utf-8")), _graph_of(out2.read_text(encoding="utf-8"))
    assert len(one[0]) == len(keys) and any('"derived": true' in e for e in one[1])
    assert two == one
    assert next(n for n in two[0] if n["id"] == "py://lib/pkg.core.Base.run")["parent"] == "py://lib/pkg.core.Base"
    assert ["note", "okapi bm25", 2] in next(n for n in two[0] if n["id"] == "md:vault/concepts/BM25")["aliases"]


def test_jsonl_without_the_export_header_is_a_kg_and_a_bad_header_is_named(tmp_path):
    """Only a file that starts with the export's header line has keys for ids: a KG file of
    ids with colons (`"id": "wd:Q42"`) keeps its `kg:` keys. A header from a newer kgsearch, or
    a node that is no key, is exit 3 naming file:line."""
    from kgsearch.errors import DataError
    from kgsearch.indexer import index_paths
    from kgsearch.store.db import Index

    kgf = tmp_path / "kg.jsonl"
    kgf.write_text('{"id": "wd:Q42", "name": "Douglas Adams"}\n', encoding="utf-8")
    db = tmp_path / "k.db"
    index_paths(db, [str(kgf)])
    with Index.open(db, readonly=True) as ix:
        assert [k for (k,) in ix.conn.execute("SELECT key FROM nodes")] == ["kg:wd:Q42"]
    for body, line, msg in (('{"kgsearch_export": 9}\n', 1, "written by a newer kgsearch"),
                            ('{"kgsearch_export": 1}\n\n{"id": "plain", "name": "x"}\n', 3,
                             '"id" must be a kgsearch key'),
                            ('{"kgsearch_export": 1}\n{"id": "kg:a", "aliases": [["note"]]}\n', 2,
                             '"aliases" must be a list of [ns, name, rank]')):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(body, encoding="utf-8")
        with pytest.raises(DataError, match=re.escape(msg)) as e:
            index_paths(tmp_path / "bad.db", [str(bad)])
        assert e.value.line == line and e.value.path == str(bad)


def test_export_to_a_named_pipe_or_device_writes_into_it(demo, tmp_path, capsys):
    """`kgsearch export jsonl /dev/stdout` (or a named pipe, /dev/null) wrote a temporary file
    beside it and renamed it over the device: as root /dev/null became a regular file, as anyone
    else the export failed. A path that is a device or pipe is written to as it is; an SQLite
    export there is a usage error, and one that SQLite cannot open is exit 3, not exit 1."""
    import os
    import stat
    import threading

    from kgsearch.cli import main

    ix, _ = demo
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text(encoding="utf-8")), daemon=True)
    reader.start()
    try:
        assert main(["export", "jsonl", str(fifo), "--db", str(ix.path), "-q"]) == 0
    finally:
        if not got and stat.S_ISFIFO(os.stat(fifo).st_mode):
            with open(fifo, "w"):                # (unblock the reader if the export never opened it)
                pass
        reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0].startswith('{"kgsearch_export":1}\n') and got[0].count("\n") == 1 + ix.node_count() + \
        len(_index_edges(ix))
    capsys.readouterr()
    assert main(["export", "sqlite", str(fifo), "--db", str(ix.path)]) == 2
    assert capsys.readouterr().err == f"error: an SQLite file cannot go to {fifo}: give a file's path\n"
    nowhere = tmp_path / "no" / "such" / "x.db"
    assert main(["export", "sqlite", str(nowhere), "--db", str(ix.path)]) == 3
    assert capsys.readouterr().err == (f"error: {nowhere}: cannot write the export (unable to open database file); "
                                       f"choose a folder you can write to\n")
