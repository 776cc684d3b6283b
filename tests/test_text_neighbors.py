"""similar_text neighbour edges (derived step) and the RM3 channel."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index
from kgsearch.text import bm25, neighbors, prf

DOCS = [
    ("d1", "Sourdough starter", "a sourdough starter needs flour water and patience; feed the starter daily"),
    ("d2", "Feeding a starter", "feed sourdough starter with rye flour; the starter doubles when fed"),
    ("d3", "Bread crust", "a crisp crust needs steam in the oven and a hot baking stone"),
    ("d4", "Oven steam", "steam in the oven makes the crust crisp; use a tray of water"),
    ("d5", "Tomatoes", "tomatoes want sun and deep roots"),
]


def corpus(tmp_path, docs=DOCS, name="corpus.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in docs) + "\n")
    return p


def edges(db):
    with Index.open(db, readonly=True) as ix:
        rows = ix.conn.execute("SELECT a.key, b.key, e.weight FROM edges e JOIN nodes a ON a.id=e.src "
                               "JOIN nodes b ON b.id=e.dst WHERE e.type='similar_text'").fetchall()
    return {(a, b): w for a, b, w in rows}


def test_neighbours_link_documents_sharing_rare_terms(tmp_path):
    db = tmp_path / "i.db"
    index_paths(db, [str(corpus(tmp_path))], IndexOptions(fmt="beir", steps=("text", "neighbors")))
    e = edges(db)
    assert ("doc:d1", "doc:d2") in e and ("doc:d2", "doc:d1") in e
    assert ("doc:d3", "doc:d4") in e and ("doc:d4", "doc:d3") in e
    # nothing links the two topics, and tomatoes share no term of df >= 2 with anything
    assert not any({a, b} & {"doc:d5"} for a, b in e)
    assert not any(a[4] in "12" and b[4] in "34" for a, b in e)
    assert all(0 < w <= 1 for w in e.values())


def test_neighbours_incremental_and_switch_off(tmp_path):
    db = tmp_path / "i.db"
    src = corpus(tmp_path)
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text", "neighbors")))
    docs = DOCS[:4] + [("d6", "Starter jar", "keep the sourdough starter in a glass jar with rye flour")]
    corpus(tmp_path, docs)
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text", "neighbors")))
    e = edges(db)
    assert ("doc:d6", "doc:d2") in e           # the new node got its own list
    assert not any("doc:d5" in pair for pair in e)
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text", "neighbors"),
                                             settings={"neighbors": False}))
    assert edges(db) == {}


def test_rm3_adds_feedback_terms_and_keeps_query_terms(tmp_path):
    db = tmp_path / "i.db"
    index_paths(db, [str(corpus(tmp_path))], IndexOptions(fmt="beir", steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        q, q2 = prf.expand(ix, "sourdough")
        assert q == {"sourdough": 1.0}
        assert q2["sourdough"] > 0.5 and "starter" in q2
        assert sum(q2.values()) == pytest.approx(1.0)
        ids, _ = prf.search(ix, "sourdough", 5)
        # d2 only says "sourdough" once; feedback terms (starter, flour) keep it in
        keys = [ix.conn.execute("SELECT key FROM nodes WHERE id=?", (int(i),)).fetchone()[0] for i in ids]
        assert set(keys[:2]) == {"doc:d1", "doc:d2"}
        # fill-in scores agree with the channel's own scores
        sc = prf.score_ids(ix, "sourdough", ids)
        full_ids, full_sc, n = bm25.score_all(ix, q2)
        assert n == 5
        assert np.allclose(sc, full_sc[np.searchsorted(full_ids, ids)])


def test_removals_only_drop_their_edges_without_reading_postings(tmp_path, monkeypatch):
    from kgsearch.types import ChangeSet
    db = tmp_path / "i.db"
    src = corpus(tmp_path)
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text", "neighbors")))
    before = edges(db)
    with Index.open(db) as ix:
        d1 = ix.conn.execute("SELECT id FROM nodes WHERE key='doc:d1'").fetchone()[0]

        def no_postings(*a, **k):
            raise AssertionError("postings read for a removal-only run")
        monkeypatch.setattr(neighbors, "_Postings", no_postings)
        ch = ChangeSet(generation=5, removed=[d1])
        with ix.transaction():
            info = neighbors.update(ix, ch, {})
        assert info["edges_dropped"] >= 2 and ch.edges_changed
        ch = ChangeSet(generation=6, removed=[d1])              # nothing left to drop
        with ix.transaction():
            info = neighbors.update(ix, ch, {})
        assert info["edges_dropped"] == 0 and not ch.edges_changed
    assert edges(db) == {k: v for k, v in before.items() if "doc:d1" not in k}
