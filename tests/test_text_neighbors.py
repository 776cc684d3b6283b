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


def _random_docs(n: int, seed: int, start: int = 0):
    import random

    rng = random.Random(seed)
    words = [a + b + c for a in "bkmrstlnpf" for b in "aeiou" for c in "xzqjv"]    # 250 made-up words
    # note 5 is short: it shares terms with a few notes only (an edit of it is a local change)
    return [(f"r{i:03d}", f"Note {i}", " ".join(rng.choices(words, k=2 if i == 5 else rng.randint(6, 30))))
            for i in range(start, start + n)]


@pytest.mark.parametrize("change", ["add", "remove", "edit", "edit_same_length", "only_a_title"])
def test_incremental_lists_equal_a_fresh_build(tmp_path, change):
    """After any change the stored lists are a fresh build's (same keys, same weights): a
    change of N or avgdl recomputes every list; an edit that keeps every length recomputes
    only the lists that share a changed term, and still gives a fresh build's lists."""
    docs = _random_docs(60, seed=7)
    src, db = corpus(tmp_path, docs), tmp_path / "inc.db"
    opts = IndexOptions(fmt="beir", steps=("text", "neighbors"))
    index_paths(db, [str(src)], opts)
    if change == "add":
        docs = docs + _random_docs(3, seed=8, start=60)
    elif change == "remove":
        docs = docs[:10] + docs[13:]
    elif change == "edit":
        docs = docs[:5] + [(docs[5][0], docs[5][1], docs[5][2] + " " + docs[7][2])] + docs[6:]
    elif change == "edit_same_length":
        words = docs[5][2].split()
        docs = docs[:5] + [(docs[5][0], docs[5][1], " ".join(["qqqqz"] + words[1:]))] + docs[6:]
    else:
        docs = docs[:5] + [(docs[5][0], "Renamed", docs[5][2])] + docs[6:]
    corpus(tmp_path, docs)
    info = index_paths(db, [str(src)], opts).steps["neighbors"]
    fresh = tmp_path / "fresh.db"
    index_paths(fresh, [str(corpus(tmp_path, docs, "fresh.jsonl"))], opts)
    got, want = edges(db), edges(fresh)
    assert len(want) > 100
    assert got == want, (sorted(set(got.items()) - set(want.items()))[:4], sorted(set(want.items()) - set(got.items()))[:4])
    if change == "edit_same_length":          # N and avgdl kept: only the lists that can change
        assert info["full"] is False and 0 < info["nodes"] < 60 * neighbors.FULL_FRACTION
    elif change != "only_a_title":            # (a one-word title for a two-word one: same length)
        assert info["full"] is True and info["nodes"] == len(docs)


def test_lists_of_an_older_kgsearch_are_rebuilt_by_the_next_run(tmp_path):
    """An index whose similar_text lists an older kgsearch stored (0013 not applied) gets a fresh
    build's lists from the next index run, although no file changed."""
    from kgsearch.store import schema

    db = tmp_path / "i.db"
    src = corpus(tmp_path)
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text", "neighbors")))
    want = edges(db)
    with Index.open(db) as ix:                     # as an older kgsearch left it: other lists
        ix.conn.execute("UPDATE edges SET weight = weight / 2 WHERE type='similar_text'")
        ix.conn.execute("DELETE FROM migrations WHERE name = '0013_neighbor_ties'")
        ix.conn.commit()
        assert ix.conn.execute("SELECT count(*) FROM edges WHERE type='similar_text'").fetchone()[0] == len(want)
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text", "neighbors")))
    assert edges(db) == want
    with Index.open(db, readonly=True) as ix:
        assert schema.stale_steps(ix.conn) == []


def test_the_migration_limit_is_the_exact_steps_limit():
    from kgsearch.store import schema
    from kgsearch.text import neighbors_scaled

    assert schema.NEIGHBORS_EXACT_MAX == neighbors_scaled.EXACT_MAX_NODES


def test_prose_ids_are_the_non_code_unflagged_nodes_ascending():
    import sqlite3

    from kgsearch.text import neighbors as nb

    c = sqlite3.connect(":memory:")
    c.execute("CREATE TABLE nodes(id INTEGER PRIMARY KEY, kind TEXT, flags INTEGER)")
    c.executemany("INSERT INTO nodes VALUES (?,?,?)", [(9, "doc", 0), (1, "doc", 0), (2, "function", 0),
                                                       (5, "note", 1), (7, "concept", 2), (3, "method", 0)])
    assert nb._prose_ids(c) == [1, 7, 9]
    c.execute("DELETE FROM nodes")
    assert nb._prose_ids(c) == []
