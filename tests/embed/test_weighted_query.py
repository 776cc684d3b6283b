"""The dense channel's query as words weighted by their rarity (``kgsearch.query.channels``
``dense_query``/``dense_kwargs``, ``bm25.word_idfs``, ``StaticModel.encode_weighted``): each part
against a hand computation, and the engine's dense scores against the vector built by hand."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kgsearch.embed import dense
from kgsearch.embed.model import load_model
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine, SearchOptions
from kgsearch.query.channels import dense_kwargs, dense_query
from kgsearch.query.parse import parse
from kgsearch.store.db import Index
from kgsearch.text import bm25
from kgsearch.text.tokenize import get_analyzer

DOCS = [("a", "alpha beta battery"), ("b", "alpha gamma phone"), ("c", "alpha delta sync"),
        ("d", "alpha beta storage")]


def lucene_idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


@pytest.fixture(scope="module")
def ix(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wq")
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": k, "title": "", "text": t}) + "\n" for k, t in DOCS), encoding="utf-8")
    db = tmp / "wq.db"
    index_paths(db, [str(corpus)], IndexOptions(fmt="beir"))
    with Index.open(db, readonly=True) as opened:
        yield opened


def test_analyzer_words_are_the_words_with_their_terms():
    assert get_analyzer().words("The running dogs, getX café") == [
        ("The", ()), ("running", ("run",)), ("dogs", ("dog",)), ("getX", ("getx", "get")), ("café", ("cafe",))]


def test_word_idfs_are_bm25_idfs_by_hand(ix):
    n = int(ix.conn.execute("SELECT count(*) FROM nodes").fetchone()[0])
    assert n == 4
    got = bm25.word_idfs(ix, "the alpha, beta zeta")
    assert [w for w, _ in got] == ["the", "alpha", "beta", "zeta"]
    want = [0.0, lucene_idf(4, 4), lucene_idf(2, 4), lucene_idf(0, 4)]
    assert [f for _, f in got] == pytest.approx(want, rel=1e-12)
    pooled = {"n": 10, "avgdl": 3.0, "df": {"alpha": 7}}      # several indexes: their sums
    got = bm25.word_idfs(ix, "alpha beta", pooled)
    assert [f for _, f in got] == pytest.approx([lucene_idf(7, 10), lucene_idf(2, 10)], rel=1e-12)


def test_encode_weighted_is_the_weighted_mean_of_token_vectors():
    m = load_model()
    words, weights = ["battery", "phones", "sync"], [2.0, 0.5, 1.25]
    emb = m.embedding.astype(np.float64)
    num, den = np.zeros(m.dims), 0.0
    for w, f in zip(words, weights):
        toks = m.tokenize([w])[0]
        num += f * emb[toks].sum(0)
        den += f * len(toks)
    ref = num / den
    ref /= np.linalg.norm(ref)
    got = m.encode_weighted(words, weights)
    assert got.dtype == np.float32 and got.shape == (m.dims,)
    assert got.tolist() == pytest.approx(ref.tolist(), abs=1e-6)
    # all weights 1: the model's own encoding of the words joined by spaces
    assert m.encode_weighted(words, [1, 1, 1]).tolist() == pytest.approx(m.encode(" ".join(words)).tolist(), abs=1e-6)
    # a word of weight 0 is left out; nothing of weight: zeros
    assert m.encode_weighted(words, [1, 0, 0]).tolist() == pytest.approx(m.encode("battery").tolist(), abs=1e-6)
    assert not m.encode_weighted(words, [0, 0, 0]).any()
    assert not m.encode_weighted([], []).any()


def test_encode_weighted_keeps_the_first_max_length_tokens():
    m = load_model()
    first = m.tokenize(["battery"])[0]
    old = m.max_length
    try:
        m.max_length = len(first)
        assert m.encode_weighted(["battery", "phone"], [1, 1]).tolist() == pytest.approx(
            m.encode_weighted(["battery"], [1]).tolist(), abs=1e-7)
    finally:
        m.max_length = old


def test_dense_kwargs_weight_words_only_without_a_lexical_channel():
    assert dense_kwargs(0.5, ["bm25", "dense", "graph"]) == {}
    assert dense_kwargs(0.5, ["fts", "dense"]) == {}
    assert dense_kwargs(0.5, ["dense"]) == {"idf_power": 0.5}
    assert dense_kwargs(0.5, ["dense", "pattern", "graph"]) == {"idf_power": 0.5}
    assert dense_kwargs(0.0, ["dense"]) == {}


def test_dense_query_weights_each_word_by_its_idf(ix):
    q = parse("the alpha beta?")
    assert dense_query(ix, q) == "the alpha beta?"                  # no power: the text as it is
    got = dense_query(ix, q, idf_power=0.5)
    assert [w for w, _ in got] == ["alpha", "beta"]                 # stop word and "?" left out
    assert [f for _, f in got] == pytest.approx([lucene_idf(4, 4) ** 0.5, lucene_idf(2, 4) ** 0.5], rel=1e-12)
    assert dense_query(ix, parse("the of and"), idf_power=0.5) == "the of and"   # no word of weight


def test_dense_alone_ranks_by_the_weighted_query(ix):
    """`--channels dense`: the scores are the cosines with the words weighted by idf ** 0.5 (built
    here by hand), not with the plain text (which the default pipeline keeps)."""
    text = "alpha beta battery"
    n = 4
    ref = (("alpha", lucene_idf(4, n) ** 0.5), ("beta", lucene_idf(2, n) ** 0.5), ("battery", lucene_idf(1, n) ** 0.5))
    r = Engine(ix).search(text, SearchOptions(k=4, channels="dense", use_cache=False, snippets=False))
    ids = np.array([h.id for h in r.hits], dtype=np.int64)
    got = [h.channels["dense"]["score"] for h in r.hits]
    want = dense.score_ids(ix, ref, ids)
    assert got == pytest.approx(want.tolist(), abs=1e-6)
    plain = dense.score_ids(ix, text, ids)
    assert np.abs(plain - want).max() > 1e-3                        # the weighting changed the scores
    r = Engine(ix).search(text, SearchOptions(k=4, channels="bm25,dense", use_cache=False, snippets=False))
    ids = np.array([h.id for h in r.hits], dtype=np.int64)
    assert [h.channels["dense"]["score"] for h in r.hits] == pytest.approx(dense.score_ids(ix, text, ids).tolist(),
                                                                         abs=1e-6)
