"""The two-stage neighbour kernel (kgsearch.text.neighbors.approx) against the exact lists and a
slow reference."""
from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index
from kgsearch.text.neighbors import approx as nc, exact
from kgsearch.text.postings import stored_params as _stored_params

WORDS = ("sourdough starter flour water rye crust oven steam stone tomato basil garden soil root "
         "compost seed sprout harvest yeast dough knead proof bake loaf crumb").split()


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nc")
    rng = random.Random(7)
    lines = []
    for i in range(120):
        topic = WORDS[(i % 4) * 6:(i % 4) * 6 + 8]
        words = [rng.choice(topic) for _ in range(rng.randint(6, 30))] + [rng.choice(WORDS) for _ in range(3)]
        lines.append(json.dumps({"_id": f"d{i}", "title": " ".join(words[:2]), "text": " ".join(words)}))
    p = tmp / "corpus.jsonl"
    p.write_text("\n".join(lines) + "\n")
    db = tmp / "i.db"
    index_paths(db, [str(p)], IndexOptions(fmt="beir", steps=("text",)))
    ix = Index.open(db, readonly=True)
    yield ix
    ix.close()


def _nodes(ix):
    st, params = _stored_params(ix)
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    rows = ix.conn.execute("SELECT id, name, kgtext(text) FROM nodes ORDER BY id").fetchall()
    return int(st["n"]), [(nid, an(name or "") * nw + an(text or "")) for nid, name, text in rows]


def test_cut_keeps_the_strongest_postings_per_list():
    ids = np.array([1, 4, 7, 9, 2, 3, 5, 8, 11], dtype=np.int64)
    imp = np.array([.5, .9, .9, .1, .3, .3, .3, .2, .8], dtype=np.float32)
    off = np.array([0, 4, 8, 9])
    got_ids, got_imp, df = nc.cut_lists(ids, imp, off, 2)
    # list 0: .9 (4), .9 (7); list 1: ties at .3 -> smaller ids 2, 3; list 2 untouched
    assert got_ids.tolist() == [4, 7, 2, 3, 11]
    assert df.tolist() == [2, 2, 1]
    assert np.allclose(got_imp, [.9, .9, .3, .3, .8])


def test_two_stage_with_whole_candidate_lists_is_the_shipped_step(index):
    n, nodes = _nodes(index)
    shipped = exact.Postings(index, n)
    post = nc.CandidatePostings(index, n, cap=10**6)
    allowed = np.ones(max(i for i, _ in nodes) + 1)
    for nid, terms in nodes:
        a = exact.neighbours(terms, nid, shipped, allowed)
        b = nc.neighbours_two_stage(terms, nid, post, allowed)
        assert [x for x, _ in a] == [x for x, _ in b]
        assert np.allclose([s for _, s in a], [s for _, s in b], rtol=1e-12, atol=0)


@pytest.mark.parametrize("cap", [1, 3, 10])
def test_two_stage_matches_reference(index, cap):
    n, nodes = _nodes(index)
    post = nc.CandidatePostings(index, n, cap=cap, batch=7)
    assert (np.diff(post.cand_off) <= cap).all() and len(post.ids) > len(post.cand_ids)
    allowed = np.ones(max(i for i, _ in nodes) + 1)
    allowed[::4] = 0.0
    allowed_set = {i for i in range(len(allowed)) if allowed[i]}
    some = 0
    for nid, terms in nodes:
        a = nc.neighbours_two_stage(terms, nid, post, allowed)
        b = nc.neighbours_two_stage_ref(terms, nid, post, allowed_set)
        assert [x for x, _ in a] == [x for x, _ in b]
        assert [s for _, s in a] == [s for _, s in b]
        some += len(a)
    assert some > 0


@pytest.mark.parametrize("gather", [0, 1, 10**9])
@pytest.mark.parametrize("cap", [2, 10**6])
def test_both_ways_of_scoring_a_list_give_the_reference(index, cap, gather, monkeypatch):
    # a chosen list is scanned whole through the candidate slots (short lists) or searched per
    # candidate (long ones); every split gives the reference's lists and floats exactly, and
    # the slots are left cleared for the next node
    monkeypatch.setattr(nc, "GATHER_PER_CAND", gather)
    n, nodes = _nodes(index)
    post = nc.CandidatePostings(index, n, cap=cap, batch=5)
    allowed = np.ones(max(i for i, _ in nodes) + 1)
    allowed[1::5] = 0.0
    allowed_set = {i for i in range(len(allowed)) if allowed[i]}
    some = 0
    for nid, terms in nodes:
        a = nc.neighbours_two_stage(terms, nid, post, allowed)
        assert a == nc.neighbours_two_stage_ref(terms, nid, post, allowed_set)
        assert not post.slots().any() and not post.marks().any()
        some += len(a)
    assert some > 0


def test_choose_terms_ranks_by_tf_idf_then_term(index):
    n, nodes = _nodes(index)
    post = nc.CandidatePostings(index, n, cap=3)
    for _, terms in nodes[:40]:
        want = sorted(((t, c) for t, c in Counter(terms).items() if t in post.term_index),
                      key=lambda kv: (-kv[1] * float(post.idf[post.term_index[kv[0]]]), kv[0]))[:nc.M]
        assert nc.choose_terms(terms, post) == want
    assert nc.choose_terms(["no-such-term"], post) == []


def test_chosen_terms_from_dfs_alone_are_the_terms_the_kernel_picks(index):
    # an incremental run loads only these terms' lists; a node's choice among them is its
    # choice among all its terms, also when other nodes' terms are loaded beside its own
    from kgsearch.text.neighbors.common import Stats
    n, nodes = _nodes(index)
    st, _ = _stored_params(index)
    stats = Stats.of(st)
    whole = nc.CandidatePostings(index, n, cap=3, stats=stats)
    some = [terms for _, terms in nodes[:9]]
    chosen = nc.chosen_terms(index.conn, some, stats)
    assert chosen == {t for terms in some for t, _ in nc.choose_terms(terms, whole)}
    part = nc.CandidatePostings(index, n, cap=3, stats=stats, terms=chosen)
    for terms in some:
        assert nc.choose_terms(terms, part) == nc.choose_terms(terms, whole)


def test_ties_at_the_kth_place_go_to_the_smaller_ids(tmp_path):
    # 15 identical documents tie for the neighbour list of d0 (K = 10): the 10 smallest ids win
    docs = [json.dumps({"_id": "d0", "title": "alpha", "text": "alpha beta"})]
    docs += [json.dumps({"_id": f"t{i:02d}", "title": "gamma", "text": "alpha gamma"}) for i in range(15)]
    p = tmp_path / "ties.jsonl"
    p.write_text("\n".join(docs) + "\n")
    db = tmp_path / "t.db"
    index_paths(db, [str(p)], IndexOptions(fmt="beir", steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        n, nodes = _nodes(ix)
        d0 = ix.conn.execute("SELECT id FROM nodes WHERE key='doc:d0'").fetchone()[0]
        tied = sorted(r[0] for r in ix.conn.execute("SELECT id FROM nodes WHERE key LIKE 'doc:t%'"))
        terms = dict(nodes)[d0]
        got = nc.neighbours_two_stage(terms, d0, nc.CandidatePostings(ix, n, cap=256))
        assert [x for x, _ in got] == tied[:10]
        assert len({s for _, s in got}) == 1
