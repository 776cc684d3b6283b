"""The edges a run resolves again by name when names come and go are the files' edges only:
derived ``similar_text`` edges name their target's key too, and at 1M nodes one added note's key
was looked for in their 10M names (1 s of a one-file reindex, issue 30). Their own step drops
the edges of removed nodes, and an edge whose target was replaced comes back through the
indexer's nulled edges; the incremental-equals-fresh tests hold that."""
from __future__ import annotations

import json

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.indexer.edges import NAMED_EDGES_SQL
from kgsearch.store import schema
from kgsearch.store.db import Index


def _corpus(tmp_path, extra: bool = False):
    docs = [{"node_id": f"n{i}", "name": f"note {i}", "type": "doc",
             "description": f"retrieval of documents about topic {i % 3} and indexing words"} for i in range(12)]
    if extra:
        docs.append({"node_id": "added", "name": "added note", "type": "doc",
                     "description": "retrieval of documents about topic 1 and indexing words"})
    (tmp_path / "kg").mkdir(exist_ok=True)
    (tmp_path / "kg" / "nodes.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    return tmp_path / "kg"


def test_derived_edges_are_not_scanned_by_name(tmp_path):
    root = _corpus(tmp_path)
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions())
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        derived = c.execute("SELECT count(*) FROM edges WHERE type='similar_text' AND dst_name != ''").fetchone()[0]
        assert derived > 0                                  # they do name their targets
        (idx,) = c.execute("SELECT sql FROM sqlite_master WHERE name='edges_named'").fetchone()
        assert "file_id IS NOT NULL" in idx
        plan = " ".join(r[-1] for r in c.execute("EXPLAIN QUERY PLAN " + NAMED_EDGES_SQL, ("key", "key", 10 ** 9)))
        assert "edges_named" in plan
        assert c.execute(NAMED_EDGES_SQL, ("key", "key", 10 ** 9)).fetchall() == []


def test_an_index_before_0017_upgrades_and_adds_a_note_like_a_fresh_build(tmp_path):
    root = _corpus(tmp_path)
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions())
    with Index.open(db) as ix:                              # as migration 0005 left it
        ix.conn.executescript("DROP INDEX edges_named; CREATE INDEX edges_named ON edges(ns) WHERE dst_name != '';"
                              "DELETE FROM migrations WHERE name = '0017_edges_named_files';")
    assert schema.MIGRATIONS[-1][0] == "0017_edges_named_files"
    _corpus(tmp_path, extra=True)
    index_paths(db, [str(root)], IndexOptions())            # the upgrade, then the added note
    fresh = tmp_path / "fresh.db"
    index_paths(fresh, [str(root)], IndexOptions())

    def edges(path):
        with Index.open(path, readonly=True) as ix:
            c = ix.conn
            key = dict(c.execute("SELECT id, key FROM nodes"))
            idx = c.execute("SELECT sql FROM sqlite_master WHERE name='edges_named'").fetchone()[0]
            return idx, sorted((key[s], key.get(d), t, round(w, 9)) for s, d, t, w in
                               c.execute("SELECT src, dst, type, weight FROM edges"))
    assert edges(db) == edges(fresh)
