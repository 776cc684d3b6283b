"""The neighbour step above EXACT_MAX_NODES prose nodes (kgsearch.text.neighbors.approx): it
runs (never skipped), says it approximates, equals the exact step when the cap holds whole
lists, and its incremental runs (postings of the changed nodes' terms only) give the lists a
kernel over every posting gives."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index
from kgsearch.text.neighbors import approx as ns
from kgsearch.text.neighbors.common import Stats
from kgsearch.text.postings import stored_params

WORDS = ("sourdough starter flour water rye crust oven steam stone tomato basil garden soil root "
         "compost seed sprout harvest yeast dough knead proof bake loaf crumb").split()


def corpus(path, n=150, seed=3):
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        topic = WORDS[(i % 4) * 6:(i % 4) * 6 + 8]
        words = [rng.choice(topic) for _ in range(rng.randint(6, 30))] + [rng.choice(WORDS) for _ in range(3)]
        lines.append(json.dumps({"_id": f"d{i}", "title": " ".join(words[:2]), "text": " ".join(words)}))
    path.write_text("\n".join(lines) + "\n")
    return lines


def edges(db):
    with Index.open(db, readonly=True) as ix:
        key = dict(ix.conn.execute("SELECT id, key FROM nodes"))
        return sorted((key[s], key[d], w) for s, d, w in ix.conn.execute(
            "SELECT src, dst, weight FROM edges WHERE type='similar_text'"))


def run(db, p):
    return index_paths(db, [str(p)], IndexOptions(fmt="beir", steps=("text", "neighbors")))


def test_below_the_limit_the_exact_step_runs(tmp_path):
    p = tmp_path / "c.jsonl"
    corpus(p)
    info = run(tmp_path / "a.db", p).steps["neighbors"]
    assert "method" not in info and "notice" not in info and info["edges"] > 100


def test_above_the_limit_it_runs_says_so_and_with_whole_lists_is_exact(tmp_path, monkeypatch):
    p = tmp_path / "c.jsonl"
    corpus(p)
    run(tmp_path / "exact.db", p)
    monkeypatch.setattr(ns, "EXACT_MAX_NODES", 10)
    monkeypatch.setattr(ns, "CAP", 10 ** 6)
    info = run(tmp_path / "whole.db", p).steps["neighbors"]
    assert info["method"] == f"two-stage cap {10 ** 6}" and "approximate similar_text lists" in info["notice"]
    assert "150 prose nodes > 10" in info["notice"]
    got, want = edges(tmp_path / "whole.db"), edges(tmp_path / "exact.db")
    assert len(want) > 100 and len(got) == len(want)
    # the same lists, except which of several nodes tied at a list's last place is kept (the
    # exact step's argpartition picks any; this kernel the smaller id)
    by = lambda es: {a: sorted(((w, b) for x, b, w in es if x == a), reverse=True) for a, _, _ in es}  # noqa: E731
    g, w_ = by(got), by(want)
    assert g.keys() == w_.keys()
    ties = 0
    for a in w_:
        assert [w for w, _ in g[a]] == [w for w, _ in w_[a]], a
        low = w_[a][-1][0]
        assert {b for w, b in g[a] if w > low} == {b for w, b in w_[a] if w > low}, a
        ties += {b for _, b in g[a]} != {b for _, b in w_[a]}
    assert ties <= 0.05 * len(w_)
    monkeypatch.setattr(ns, "CAP", 2)
    capped = run(tmp_path / "capped.db", p).steps["neighbors"]
    assert capped["edges"] > 0 and edges(tmp_path / "capped.db") != want


def test_incremental_run_reads_only_its_terms_and_matches_all_postings(tmp_path, monkeypatch):
    monkeypatch.setattr(ns, "EXACT_MAX_NODES", 10)
    monkeypatch.setattr(ns, "CAP", 3)
    p = tmp_path / "c.jsonl"
    lines = corpus(p)
    db = tmp_path / "i.db"
    run(db, p)
    d = json.loads(lines[5])
    d["text"] += " rye rye crust basil"
    lines[5] = json.dumps(d)
    p.write_text("\n".join(lines) + "\n")
    seen = []
    real = ns.CandidatePostings.__init__

    def spy(self, *a, **kw):
        seen.append(kw.get("terms"))
        real(self, *a, **kw)

    monkeypatch.setattr(ns.CandidatePostings, "__init__", spy)
    info = run(db, p).steps["neighbors"]
    assert info["full"] is False and info["nodes"] == 1 and seen and seen[-1] and len(seen[-1]) < 30
    monkeypatch.setattr(ns.CandidatePostings, "__init__", real)
    with Index.open(db, readonly=True) as ix:
        nid, name, text = ix.conn.execute("SELECT id, name, kgtext(text) FROM nodes WHERE key LIKE '%d5'").fetchone()
        st, params = stored_params(ix)
        terms = params.analyzer()(name) * max(1, int(round(params.name_weight))) + params.analyzer()(text)
        prose = [r[0] for r in ix.conn.execute("SELECT id FROM nodes WHERE flags & 1 = 0")]
        allowed = np.zeros(max(prose) + 1)
        allowed[prose] = 1.0
        whole = ns.CandidatePostings(ix, int(st["n"]), cap=3, stats=Stats.of(st))
        want = ns.neighbours_two_stage(terms, nid, whole, allowed)
        got = ix.conn.execute("SELECT dst, weight FROM edges WHERE type='similar_text' AND src=? ORDER BY weight DESC, dst",
                              (nid,)).fetchall()
    assert len(want) > 0
    assert [d for d, _ in got] == [d for d, _ in sorted(want, key=lambda x: (-round(x[1], 4), x[0]))]
    assert np.allclose([w for _, w in got], sorted((round(w, 4) for _, w in want), reverse=True))


@pytest.mark.parametrize("what", ["removed"])
def test_incremental_removal_drops_edges(tmp_path, monkeypatch, what):
    monkeypatch.setattr(ns, "EXACT_MAX_NODES", 10)
    p = tmp_path / "c.jsonl"
    lines = corpus(p)
    db = tmp_path / "i.db"
    run(db, p)
    p.write_text("\n".join(lines[:-1]) + "\n")
    info = run(db, p).steps["neighbors"]
    assert info["full"] is False and info["edges_dropped"] > 0
    assert not [e for e in edges(db) if e[0].endswith("d149") or e[1].endswith("d149")]


def test_an_edit_and_its_undo_keep_every_list_full(tmp_path, monkeypatch):
    """A node edited, then restored: every list is as before, and as long. The lists that held
    it used to lose that entry at the edit for good (at 1M nodes: a neighbour short in each,
    and the graph's rows changed length, so the reindex spliced every edge array); they keep
    it now, and only the edited node's own list is recomputed."""
    monkeypatch.setattr(ns, "EXACT_MAX_NODES", 10)
    p = tmp_path / "c.jsonl"
    lines = corpus(p)
    db = tmp_path / "i.db"
    run(db, p)
    before = edges(db)
    node = max(({b for _, b, _ in before}), key=lambda k: sum(1 for _, b, _ in before if b == k))
    held = {a for a, b, _ in before if b == node}
    assert len(held) >= 3
    i = next(i for i, ln in enumerate(lines) if json.loads(ln)["_id"] == node.split(":", 1)[1])
    d = json.loads(lines[i])
    edited = lines[:i] + [json.dumps({**d, "text": d["text"] + " rye crust"})] + lines[i + 1:]
    p.write_text("\n".join(edited) + "\n")
    info = run(db, p).steps["neighbors"]
    assert info["full"] is False and info["nodes"] == 1
    assert {a for a, b, _ in edges(db) if b == node} == held
    p.write_text("\n".join(lines) + "\n")
    run(db, p)
    after = edges(db)
    assert after == before


def test_deleting_a_few_nodes_lists_reads_them_by_src_and_dst(tmp_path):
    """A one-file change deletes the changed nodes' similar_text edges by the src/dst indexes:
    without table statistics SQLite chose the file_id index (``file_id IS NULL``), which lists
    every similar_text edge (10M at 1M nodes: 2-4 s of a one-file reindex)."""
    from kgsearch.text.neighbors import common as nb

    p = tmp_path / "c.jsonl"
    corpus(p, n=40)
    db = tmp_path / "i.db"
    run(db, p)
    with Index.open(db) as ix:
        seen: list[str] = []
        ix.conn.set_trace_callback(seen.append)
        ids = [r[0] for r in ix.conn.execute("SELECT id FROM nodes ORDER BY id LIMIT 3")]
        before = ix.conn.execute("SELECT count(*) FROM edges WHERE type='similar_text'").fetchone()[0]
        nb.delete_edges(ix.conn, ids)
        ix.conn.set_trace_callback(None)
        after = ix.conn.execute("SELECT count(*) FROM edges WHERE type='similar_text'").fetchone()[0]
        left = ix.conn.execute(f"SELECT count(*) FROM edges WHERE type='similar_text' AND (src IN "
                               f"({','.join('?' * 3)}) OR dst IN ({','.join('?' * 3)}))", ids + ids).fetchone()[0]
        plans = [" ".join(str(r[3]) for r in ix.conn.execute("EXPLAIN QUERY PLAN " + q))
                 for q in seen if q.lstrip().upper().startswith("DELETE")]
        ix.conn.rollback()
    assert before > after and left == 0
    assert len(plans) == 2 and all("edges_file" not in pl and "SCAN" not in pl for pl in plans), plans
    assert "edges_src" in plans[0] and "edges_dst" in plans[0] and "edges_dst" in plans[1], plans
