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
    """After any change the stored lists are a fresh build's (same keys, same weights). Below
    64 nodes N is used as it is, so adding or removing a node recomputes every list; an edit
    that keeps N recomputes only the lists it can reach (test_edits_recompute_only_the_lists_they_can_reach)."""
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
        assert info["full"] is False and 0 < info["nodes"] < 60 * neighbors.common.FULL_FRACTION
    elif change in ("add", "remove"):         # N < 64 changed: every list
        assert info["full"] is True and info["nodes"] == len(docs)


def _zipf_docs(n: int, seed: int, start: int = 0, vocab: int = 1500):
    """Notes over a Zipf-like vocabulary: a few common words (df above the window), many
    mid-df words (on the df grid, df > 32) and a long tail of rare ones."""
    import random

    rng = random.Random(seed)
    words = [a + b + c + d for a in "bkmrstlnpf" for b in "aeiou" for c in "xzqjvw" for d in "aeiou"][:vocab]
    weights = [1.0 / (r + 8) for r in range(len(words))]
    out = []
    for i in range(start, start + n):
        text = rng.choices(words, weights, k=rng.randint(8, 40))
        out.append((f"z{i:03d}", " ".join(rng.choices(text, k=2)), " ".join(text)))   # (title terms weigh 3x)
    return out


def _edit(docs: list, op: str, i: int, j: int, rng) -> list:
    docs = list(docs)
    key, title, text = docs[i]
    words = text.split()
    if op == "shorten":          # dl falls: every impact of the note rises (rule 4)
        docs[i] = (key, title, " ".join(words[:max(2, len(words) // 3)]))
    elif op == "lengthen":       # dl rises, and the note takes on another's words
        docs[i] = (key, title, text + " " + " ".join(docs[j][2].split()[:12]))
    elif op == "one_word":       # one word appended (the scaling benchmark's change)
        docs[i] = (key, title, text + " " + rng.choice(docs[j][2].split()))
    elif op == "retitle":
        docs[i] = (key, docs[j][2].split()[0], text)
    elif op == "add":            # a new note close to another one
        docs.append((f"n{len(docs):03d}{i}", "New note", " ".join(docs[j][2].split()[:20] + words[:5])))
    elif op == "remove":
        del docs[i]
    return docs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_edits_recompute_only_the_lists_they_can_reach(tmp_path, monkeypatch, seed):
    """A chain of one-note edits on 400 notes (N and avgdl on the grid): after every run the
    lists equal a fresh build's, although each run recomputed only the lists rules 1-4 of
    kgsearch.text.neighbors.delta reach (no run falls back to a full pass here), and a
    one-word edit reaches few of them."""
    import random

    monkeypatch.setattr(neighbors.exact, "FULL_FRACTION", 1.0)
    rng = random.Random(seed)
    docs = _zipf_docs(400, seed=seed)
    src, db = corpus(tmp_path, docs), tmp_path / "inc.db"
    opts = IndexOptions(fmt="beir", steps=("text", "neighbors"))
    index_paths(db, [str(src)], opts)
    ops = ["one_word", "shorten", "lengthen", "retitle", "add", "remove", "shorten", "lengthen", "add", "one_word"]
    partial = []
    for step, op in enumerate(ops):
        docs = _edit(docs, op, rng.randrange(len(docs)), rng.randrange(len(docs)), rng)
        corpus(tmp_path, docs)
        info = index_paths(db, [str(src)], opts).steps["neighbors"]
        fresh = tmp_path / f"fresh{step}.db"
        index_paths(fresh, [str(corpus(tmp_path, docs, f"fresh{step}.jsonl"))], opts)
        got, want = edges(db), edges(fresh)
        assert len(want) > 1000
        assert got == want, (op, sorted(set(got.items()) - set(want.items()))[:3],
                             sorted(set(want.items()) - set(got.items()))[:3])
        if not info["full"]:
            partial.append((op, info["nodes"]))
            assert sum(info["reached_by"].values()) == info["nodes"], info
    # (a run that moves N or avgdl to another grid point is a full pass: a few of ten here)
    assert len(partial) >= 7, partial
    assert all(n < 0.15 * 400 for op, n in partial if op in ("one_word", "retitle")), partial


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
    from kgsearch.text.neighbors import approx

    assert schema.NEIGHBORS_EXACT_MAX == approx.EXACT_MAX_NODES


def test_prose_ids_are_the_non_code_unflagged_nodes_ascending():
    import sqlite3

    from kgsearch.text.neighbors import common as nb

    c = sqlite3.connect(":memory:")
    c.execute("CREATE TABLE nodes(id INTEGER PRIMARY KEY, kind TEXT, flags INTEGER)")
    c.executemany("INSERT INTO nodes VALUES (?,?,?)", [(9, "doc", 0), (1, "doc", 0), (2, "function", 0),
                                                       (5, "note", 1), (7, "concept", 2), (3, "method", 0)])
    assert nb.prose_ids(c) == [1, 7, 9]
    c.execute("DELETE FROM nodes")
    assert nb.prose_ids(c) == []


def test_a_removed_node_reaches_every_list_that_held_it(tmp_path):
    """Rule 3 for a removed node: its in-edges lost their ``dst`` (ON DELETE SET NULL) by the
    time the step runs, and ``holders`` still finds every list that held it."""
    from kgsearch.text.neighbors import delta as neighbors_delta

    docs = _zipf_docs(300, seed=5)
    src, db = corpus(tmp_path, docs), tmp_path / "inc.db"
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text", "neighbors")))
    with Index.open(db, readonly=True) as ix:
        c, key = ix.conn.execute("SELECT e.dst, n.key FROM edges e JOIN nodes n ON n.id = e.dst WHERE type='similar_text' "
                                 "GROUP BY dst ORDER BY count(*) DESC, dst LIMIT 1").fetchone()
        held = {r[0] for r in ix.conn.execute("SELECT src FROM edges WHERE type='similar_text' AND dst=?", (c,))}
        assert neighbors_delta.holders(ix.conn, [c], neighbors.EDGE_TYPE) == held and len(held) >= 5
    corpus(tmp_path, [d for d in docs if f"doc:{d[0]}" != key])
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text",)))     # (the step not run yet)
    with Index.open(db, readonly=True) as ix:
        assert ix.conn.execute("SELECT count(*) FROM nodes WHERE key=?", (key,)).fetchone()[0] == 0
        assert neighbors_delta.holders(ix.conn, [], neighbors.EDGE_TYPE) == held
