"""Term proximity: hand-computed counts and scores, the fast path against the obvious reference."""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from kgsearch.text import term_proximity as tp
from kgsearch.text.tokenize import get_analyzer


def test_pair_counts_by_hand():
    # query a b c; name "a b", text "b x a b c a"
    seqs = (["a", "b"], ["b", "x", "a", "b", "c", "a"])
    od, uw = tp.pair_counts(seqs, ["a", "b", "c"], window=3)
    # od (a, b): name 0->1, text 2->3; (b, c): text 3->4
    assert od == {(0, 1): 2, (1, 2): 1}
    # uw, distance < 3 within one sequence: name a-b (1); text a@2,a@5 b@0,b@3 c@4:
    # a-b: (2,0) (2,3) (5,3) = 3, + name 1 = 4; a-c: (2,4) (5,4) = 2; b-c: (3,4) = 1 ((0,4) is 4 apart)
    assert uw == {(0, 1): 4, (0, 2): 2, (1, 2): 1}
    assert tp.reference_pair_counts(seqs, ["a", "b", "c"], window=3) == (od, uw)
    # no pair across the name and the text: "b" ends the name, "c" starts the text
    assert tp.pair_counts((["b"], ["c"]), ["b", "c"], 16) == ({}, {})


def test_pair_score_by_hand():
    od, uw = {(0, 1): 2}, {(0, 1): 4, (0, 2): 1}
    idfs, norm, k1 = [2.0, 0.5, 1.0], 1.2, 1.5
    want = (0.5 * 2 * 2.5 / (2 + 1.2)) + (0.5 * 4 * 2.5 / (4 + 1.2)) + (1.0 * 1 * 2.5 / (1 + 1.2))
    assert tp.pair_score(od, uw, idfs, norm, k1) == pytest.approx(want, rel=1e-12)


def test_fast_counts_equal_the_reference():
    rng = random.Random(7)
    vocab = list("abcdefg")
    for _ in range(300):
        seqs = tuple([rng.choice(vocab) for _ in range(rng.randint(0, 40))] for _ in range(rng.randint(1, 2)))
        terms = rng.sample(vocab, rng.randint(2, 5))
        w = rng.choice([2, 3, 8, 16])
        assert tp.pair_counts(seqs, terms, w) == tp.reference_pair_counts(seqs, terms, w)


@pytest.mark.parametrize("text", [
    "Plain words, with punctuation; and stop words of the text.",
    "self.blast_radius = StreamingTextResponse(os.path.join(a, b))  # HTTPServer_v2",
    "Crème brûlée in Straße; naïve café\tnew\nlines",
    "在中文笔记里备份服务器 and 東京 mixed 확인 text",
    "", "   ", "a.b.c x_y-z 3.14 v1.2.3 — dash…",
])
def test_text_terms_equal_the_analyser(text):
    an = get_analyzer()
    assert tp.text_terms(an, text) == an(text)


def _index(tmp_path, docs):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": str(i), "title": t, "text": x}) + "\n"
                              for i, (t, x) in enumerate(docs)), encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(corpus)], IndexOptions(fmt="beir"))
    ix = Index.open(db, readonly=True)
    ids = {k[4:]: i for i, k in ix.conn.execute("SELECT id, key FROM nodes WHERE kind = 'doc'")}
    return ix, ids


def test_scores_by_hand_on_an_index(tmp_path):
    # no titles: a node's length is its text's terms (no stop words here)
    docs = [("", "cats chase mice daily"), ("", "mice chase cats"), ("", "dogs sleep"), ("", "cats mice")]
    ix, ids = _index(tmp_path, docs)
    try:
        n, avgdl, k1, b = 4, (4 + 3 + 2 + 2) / 4, 1.5, 0.75

        def idf(df):
            return math.log((n - df + 0.5) / (df + 0.5) + 1)

        def sat(f, dl):
            return f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))

        i_cat, i_mice = idf(3), idf(3)
        got = tp.scores(ix, ["cat", "mice"], [ids["0"], ids["1"], ids["2"], ids["3"]], window=16)
        want = [min(i_cat, i_mice) * sat(1, 4),                 # uw only ("chase" between)
                min(i_cat, i_mice) * sat(1, 3),                 # uw only (mice before cats)
                0.0,
                min(i_cat, i_mice) * (sat(1, 2) + sat(1, 2))]   # od + uw
        assert got == pytest.approx(want, rel=1e-9)
        # window 2: "cats chase mice" is 2 apart, out of it
        assert tp.scores(ix, ["cat", "mice"], [ids["0"]], window=2)[0] == 0.0
        # fewer than two distinct terms: nothing to pair
        assert not tp.scores(ix, ["cat", "cat"], [ids["0"]]).any()
    finally:
        ix.close()


def test_fast_scores_equal_the_reference_on_an_index(tmp_path):
    rng = random.Random(11)
    words = ("search index query graph node vector rank score text note sync phone laptop backup "
             "server night error retry the of and a").split()
    docs = [(" ".join(rng.choices(words, k=rng.randint(0, 4))),
             " ".join(rng.choices(words, k=rng.randint(0, 120))) + rng.choice(["", " SearchIndex", " query_graph."]))
            for _ in range(60)]
    ix, ids = _index(tmp_path, docs)
    try:
        all_ids = np.asarray(sorted(ids.values()), dtype=np.int64)
        an = get_analyzer()
        for _ in range(20):
            terms = an(" ".join(rng.sample(words, rng.randint(1, 5))))
            for w in (2, 8, 16):
                fast = tp.scores(ix, terms, all_ids, w)
                assert np.array_equal(fast, tp.reference_scores(ix, terms, all_ids, w))
        assert tp.scores(ix, an("search index"), all_ids).any()
    finally:
        ix.close()


def test_a_long_text_is_read_up_to_its_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(tp, "MAX_CHARS", 40)
    docs = [("", "filler " * 10 + "cats mice"), ("", "cats mice " + "filler " * 10)]
    ix, ids = _index(tmp_path, docs)
    try:
        got = tp.scores(ix, ["cat", "mice"], [ids["0"], ids["1"]])
        assert got[0] == 0.0 and got[1] > 0
        assert np.array_equal(got, tp.reference_scores(ix, ["cat", "mice"], [ids["0"], ids["1"]]))
    finally:
        ix.close()


def test_the_engine_step_adds_weight_times_score_over_spread(tmp_path):
    from dataclasses import replace

    from kgsearch.query import Engine, SearchOptions
    from kgsearch.query.tuning import TUNING

    rng = random.Random(3)
    filler = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    docs = [("", " ".join(rng.choices(filler, k=rng.randint(5, 30))) + " " + rng.choice(
        ["battery drain at night", "night battery", "battery " + "alpha " * 12 + "night", "drain", ""]))
        for _ in range(40)]
    ix, _ = _index(tmp_path, docs)
    try:
        opts = SearchOptions(k=40, use_cache=False, explain=True, snippets=False)
        off = Engine(ix).search("battery night", opts)
        assert TUNING.proximity_weight == 0.0 and not any("proximity" in h.adjustments for h in off.hits)
        on_t = replace(TUNING, proximity_weight=0.1, proximity_window=8, proximity_top=10)
        on = Engine(ix, tuning=on_t).search("battery night", opts)
        got = {h.id: h.adjustments.get("proximity", 0.0) for h in on.hits}
        assert "proximity" in on.timings_ms and sum(v > 0 for v in got.values()) > 1
        # the step's own arithmetic: the fused top 10 without it, their scores, / their spread
        base = [h.id for h in off.hits[:10]]
        s = tp.scores(ix, ["batteri", "night"], base, 8)
        want = 0.1 * s / s.std()
        assert [got.get(i, 0.0) for i in base] == pytest.approx(want.tolist(), abs=1e-6)   # (hits: 6 digits)
        assert sum(1 for v in got.values() if v) <= 10
        # explicit channels (BM25 alone stays BM25), one term: no step
        assert not any("proximity" in h.adjustments for h in Engine(ix, tuning=on_t).search(
            "battery night", opts.but(channels=["bm25"])).hits)
        assert "proximity" not in Engine(ix, tuning=on_t).search("battery", opts).timings_ms
        # code tasks (an issue's words are names and prose) and relation questions: no step
        for intent in ("code_task", "relation"):
            assert "proximity" not in Engine(ix, tuning=on_t).search("battery night", opts.but(intent=intent)).timings_ms
    finally:
        ix.close()


def test_the_piece_memo_is_bounded(monkeypatch):
    from kgsearch.text.tokenize import Analyzer

    an = Analyzer()
    monkeypatch.setattr(tp, "PIECE_MEMO", 5)
    tp._PIECES.pop(id(an), None)
    tp.text_terms(an, " ".join(f"w{i}" for i in range(12)))
    entries, size = tp.memo_size(an)
    assert 0 < entries <= 5 and size > 0
