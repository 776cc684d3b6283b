"""A prose query's embedding weight moved by its own evidence (kgsearch.query.adjust.query_weights):
its length and the share of its words the static model holds whole, by hand; off where it should be."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from kgsearch.query.adjust import embedding_factor, query_weights, whole_word_share
from kgsearch.query.intent import make
from kgsearch.query.options import SearchOptions
from kgsearch.query.parse import parse
from kgsearch.query.tuning import TUNING

OFF = replace(TUNING, embed_length_power=0.0, embed_known_power=0.0)
VOCAB = {"alpha": [1], "beta": [2], "gammaray": [3, 4], "zzz": []}


def fake_tokenize(words):
    return [VOCAB.get(w, [9, 9, 9]) for w in words]


def test_whole_word_share_by_hand():
    # words of 3+ Latin letters: Alpha beta gammaray zzz ("of", "x", "42" are not); zzz has no known
    # piece and is left out: alpha and beta are one token, gammaray two -> 2/3
    assert whole_word_share(fake_tokenize, "Alpha beta gammaray zzz of x 42") == pytest.approx(2 / 3)
    assert whole_word_share(fake_tokenize, "of x 42") == 1.0          # nothing to judge by
    assert whole_word_share(fake_tokenize, "zzz") == 1.0              # no known piece at all


def test_embedding_factor_by_hand():
    t = replace(TUNING, embed_length_power=0.5, embed_length_ref=8.0, embed_known_power=1.0)
    # 2 words: (2/8)^0.5 = 0.5 (the floor); share alpha 1 token, gammaray 2: 1/2 -> 0.25
    assert embedding_factor("alpha gammaray", fake_tokenize, t) == pytest.approx(0.25)
    # 18 words all known: (18/8)^0.5 = 1.5
    assert embedding_factor(" ".join(["alpha"] * 18), fake_tokenize, t) == pytest.approx(1.5)
    # 50 words: 2.5 clipped to 2; the share of 25 alpha and 25 gammaray is 1/2 -> 1.0
    assert embedding_factor(" ".join(["alpha", "gammaray"] * 25), fake_tokenize, t) == pytest.approx(1.0)
    # 4 words, p 2: (4/8)^0.5 x (3/4)^2
    t2 = replace(t, embed_known_power=2.0)
    assert embedding_factor("alpha beta alpha gammaray", fake_tokenize, t2) == pytest.approx(math.sqrt(0.5) * 0.5625)
    # no model: the share is 1
    assert embedding_factor("alpha gammaray", None, t) == pytest.approx(0.5)
    assert embedding_factor("alpha gammaray x y z", fake_tokenize, OFF) == 1.0


def test_words_of_text_without_spaces_count_by_two_characters():
    """A Chinese or Japanese sentence is one run of word characters: counted as one word it took
    every CJK query to the length floor (x0.5 of the embedding weight); two characters a word."""
    from kgsearch.query.adjust import query_words
    t = replace(TUNING, embed_length_power=0.5, embed_length_ref=8.0, embed_known_power=0.0)
    assert query_words("备份服务器在哪里") == 4 and query_words("東京") == 1 and query_words("確認する") == 2
    assert query_words("서울에서 회의") == 3 and query_words("v2版本 backup") == 3
    assert embedding_factor("备份服务器在哪里", None, t) == pytest.approx(math.sqrt(4 / 8))
    assert embedding_factor("备份服务器在哪里", None, t) > 0.5


class _Ix:
    """query_weights asks the index for its model only when the share counts."""

    def __init__(self):
        self._cache = {}
        self.generation = 0

    def meta(self, key):
        raise AssertionError("the model is not asked for when embed_known_power is 0")


def test_query_weights_moves_only_a_prose_querys_embedding_weight():
    t = replace(TUNING, embed_length_power=0.5, embed_known_power=0.0)
    text = "night battery drain"                          # 3 words: (3/8)^0.5
    q = parse(text)
    base = {"embedding": 0.4, "text": 0.45, "graph": 0.15, "intent": 0.0}
    got = query_weights(_Ix(), t, q, make(q, "default"), SearchOptions(), dict(base), "linear")
    assert got == {**base, "embedding": pytest.approx(0.4 * math.sqrt(3 / 8))}
    # unchanged: off, code tasks and relation questions, --weights, --channels, RRF, no embedding weight
    for tt, intent, opts, fusion, w in (
            (OFF, "default", SearchOptions(), "linear", base),
            (t, "code_task", SearchOptions(), "linear", base),
            (t, "relation", SearchOptions(), "linear", base),
            (t, "default", SearchOptions(weights="0.4,0.45,0.15,0"), "linear", base),
            (t, "default", SearchOptions(channels=["bm25", "dense"]), "linear", base),
            (t, "default", SearchOptions(), "rrf", base),
            (t, "default", SearchOptions(), "linear", {**base, "embedding": 0.0})):
        assert query_weights(_Ix(), tt, q, make(q, intent), opts, w, fusion) is w


def _index(tmp_path, docs):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": str(i), "title": "", "text": x}) + "\n"
                              for i, x in enumerate(docs)), encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(corpus)], IndexOptions(fmt="beir"))
    return Index.open(db, readonly=True)


def test_the_engine_fuses_with_the_moved_weight(tmp_path):
    from kgsearch.embed.index_model import query_model
    from kgsearch.query import Engine

    docs = ["battery drains at night", "the phone battery lasts a day", "night mode for the screen",
            "charging the battery overnight", "screen brightness and power use"]
    ix = _index(tmp_path, docs)
    try:
        model = query_model(ix)
        assert not isinstance(model, str), model
        opts = SearchOptions(k=5, use_cache=False, explain=True, snippets=False, intent="default")
        text = "why does my battery drain overnight"
        on = Engine(ix).search(text, opts)
        off = Engine(ix, tuning=OFF).search(text, opts)
        alpha = off.hits[0].signals["embedding"]["weight"]
        share = whole_word_share(model.tokenize, text)
        want = alpha * math.sqrt(6 / 8) * share
        assert on.hits[0].signals["embedding"]["weight"] == pytest.approx(want)
        assert want != pytest.approx(alpha)
        # the response names the weights it fused with, and the profile's beside them
        assert on.intent["weights"]["embedding"] == pytest.approx(want)
        assert on.intent["profile_weights"]["embedding"] == pytest.approx(alpha)
        assert "profile_weights" not in off.intent and off.intent["weights"]["embedding"] == pytest.approx(alpha)
        # each hit's embedding part is the moved weight times its signal
        for h in on.hits:
            e = h.signals["embedding"]
            assert e["part"] == pytest.approx(e["weight"] * e["value"], abs=2e-6)
        # given weights are used as given
        w = Engine(ix).search(text, opts.but(weights="0.4,0.45,0.15,0"))
        w_off = Engine(ix, tuning=OFF).search(text, opts.but(weights="0.4,0.45,0.15,0"))
        assert [(h.key, h.score) for h in w.hits] == [(h.key, h.score) for h in w_off.hits]
        assert w.hits[0].signals["embedding"]["weight"] == pytest.approx(0.4)
    finally:
        ix.close()
