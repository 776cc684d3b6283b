"""Hits with every part of their score (kgsearch.query.results.make_hits), on hand-made arrays."""
from __future__ import annotations

import numpy as np

from kgsearch.query.options import SearchOptions
from kgsearch.query.parse import parse
from kgsearch.query.results import make_hits

CAND = np.array([10, 20, 30], np.int64)
META = {
    10: {"key": "md:a", "kind": "note", "name": "a", "qualname": None, "parent": None, "path": "/r/a.md",
         "line_start": 1, "line_end": 2, "text": "alpha beta. The quick indexing of notes happens here."},
    20: {"key": "py:m.f", "kind": "function", "name": "f", "qualname": "m.f", "parent": "py:m", "path": "/r/m.py",
         "line_start": 3, "line_end": 3, "text": "def f(): pass"},
    30: {"key": "md:c", "kind": "note", "name": "c", "qualname": "", "parent": None, "path": None,
         "line_start": None, "line_end": None, "text": ""},
}


def _hits(fusion="linear", snippets=True, order=(1, 0)):
    chan = {"bm25": np.array([2.0, 4.0, 0.0]), "dense": np.array([0.1, 0.0, 0.3]), "pattern": np.array([0.0, 1.0, 0.0])}
    norm = {"bm25": np.array([0.5, 1.0, -0.2]), "dense": np.array([0.2, 0.0, 0.9]), "pattern": np.array([0.0, 1.0, 0.0])}
    signals = {"embedding": norm["dense"], "text": np.array([0.5, 1.0, 0.0]), "graph": np.zeros(3),
               "intent": np.zeros(3)}
    weights = {"embedding": 0.25, "text": 0.45, "graph": 0.3, "intent": 0.0}
    parts = {n: weights[n] * signals[n] for n in ("embedding", "text", "graph")}
    fused = sum(parts.values())
    adj = {"test_or_vendored": np.array([1.0, 0.3, 1.0]), "shift": np.array([0.0, 0.0, 0.0])}
    meta = {k: dict(v) for k, v in META.items()}
    return make_hits(None, parse("index notes"), CAND, list(order), fused, chan, norm, signals, weights, parts, adj,
                     meta, fusion, SearchOptions(snippets=snippets, collapse=False), {"bm25"})


def test_a_hit_carries_every_part_of_its_score():
    top, second = _hits()
    assert (top.id, top.key, top.kind, top.name, top.qualname, top.parent, top.path, top.line, top.rank) == \
        (20, "py:m.f", "function", "f", "m.f", "py:m", "/r/m.py", 3, 1)
    assert second.rank == 2 and second.qualname == ""
    # channels: raw score, rank among the candidates, normalised value; a full-index channel is
    # listed even where it scored 0 (its z-score says something); others only where they matched
    assert top.channels == {"bm25": {"score": 4.0, "rank": 1, "norm": 1.0},
                            "pattern": {"score": 1.0, "rank": 1, "norm": 1.0}}
    assert second.channels["dense"] == {"score": 0.1, "rank": 2, "norm": 0.2}
    assert top.signals == {"embedding": {"value": 0.0, "weight": 0.25, "part": 0.0},
                           "text": {"value": 1.0, "weight": 0.45, "part": 0.45},
                           "graph": {"value": 0.0, "weight": 0.3, "part": 0.0}}
    assert top.score == 0.45 and top.adjustments == {"test_or_vendored": 0.3}    # factors of 1 and shifts of 0 left out
    assert top.methods == "text" and second.methods == "text+embedding"


def test_snippets_mark_the_parsed_querys_terms():
    top, second = _hits(order=(0, 1))
    assert top.snippet == "alpha beta. The quick [indexing] of [notes] happens here."
    assert second.snippet == "def f(): pass"
    assert [h.snippet for h in _hits(snippets=False)] == ["", ""]
    empty = _hits(order=(2,))[0]
    assert empty.snippet == "c" and empty.path is None and empty.line is None


def test_rrf_signals_are_ranks_and_contributions():
    chan = {"bm25": np.array([2.0, 4.0, 0.0])}
    parts = {"bm25": np.array([1 / 62, 1 / 61, 0.0])}
    meta = {k: dict(v) for k, v in META.items()}
    hits = make_hits(None, parse("x"), CAND, [1, 0], parts["bm25"], chan, {}, {}, {"text": 0.45}, parts, {}, meta,
                     "rrf", SearchOptions(snippets=False, collapse=False))
    assert hits[0].signals == {"bm25": {"value": 1, "weight": 0.45, "part": round(1 / 61, 6)}}
    assert hits[1].signals["bm25"]["value"] == 2
    assert make_hits(None, parse("x"), CAND, [], parts["bm25"], chan, {}, {}, {}, parts, {}, meta, "rrf",
                     SearchOptions()) == []


def test_ranks_at_equals_ranking_every_candidate():
    """fuse.ranks_at(s, positions) == fuse.ranks(s)[positions]: hand case (ties by position,
    0 for scores <= 0) and random arrays with many ties, few and many positions."""
    from kgsearch import fuse

    s = np.array([0.5, 2.0, 0.0, 2.0, -1.0, 1.0])
    assert fuse.ranks_at(s, [3, 1, 0, 2, 4, 5]).tolist() == [2, 1, 4, 0, 0, 3]
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        s = rng.integers(-2, 5, n) * 0.25
        p = rng.permutation(n)[:int(rng.integers(1, n + 1))]
        assert fuse.ranks_at(s, p).tolist() == fuse.ranks(s)[p].tolist()


def test_ranks_at_each_equals_ranks_at_per_channel():
    """fuse.ranks_at_each (a hit's channel ranks, every channel in one pass) == fuse.ranks_at per
    channel: random channels with ties and non-positive scores, few and many positions, and
    vectors it hands to ranks_at one by one (another dtype or length)."""
    from kgsearch import fuse

    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 90))
        chans = {f"c{c}": rng.integers(-2, 5, n) * 0.25 for c in range(int(rng.integers(1, 7)))}
        if rng.random() < 0.1:
            chans["ints"] = rng.integers(0, 3, n)
        p = rng.permutation(n)[:int(rng.integers(1, min(n, 40) + 1))].tolist()
        got = fuse.ranks_at_each(chans, p)
        assert list(got) == list(chans)
        for name, s in chans.items():
            assert got[name].tolist() == fuse.ranks_at(s, p).tolist() == fuse.ranks(s)[p].tolist()


def test_make_hits_equals_its_reference_on_random_arrays():
    """make_hits reads the shown values gathered at the hits' positions (tolist); the reference
    reads a numpy scalar per value: the same hits, field for field, on random candidates (both
    fusions, float32 and integer channels, zeros, ties, a NaN, a subclass of Hit)."""
    from dataclasses import dataclass

    from kgsearch.query.options import Hit
    from kgsearch.query.results import make_hits_reference

    @dataclass
    class Named(Hit):
        index: str = ""

    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(1, 60))
        cand = rng.permutation(np.arange(100, 100 + n)).astype(np.int64)
        meta = {int(c): {"key": f"k{c}", "kind": "note", "name": f"n{c}", "qualname": None, "parent": None,
                         "path": None, "line_start": None, "line_end": None, "text": "t"} for c in cand}
        def vec(kind):
            v = rng.choice([0.0, 0.5, 1.0, 2.0], n) if kind == "ties" else rng.normal(size=n)
            if kind == "f32":
                return v.astype(np.float32)
            if kind == "int":
                return rng.integers(-1, 4, n)
            return v
        chan = {"bm25": vec("ties"), "dense": vec("f32"), "pattern": vec("int"), "graph": vec("f64")}
        if trial % 7 == 0:
            chan["graph"][0] = np.nan
        norm = {"bm25": vec("f64"), "dense": vec("f32")}
        signals = {"embedding": vec("f64"), "text": vec("ties"), "graph": vec("f64"), "intent": np.zeros(n)}
        weights = {"embedding": 0.3, "text": 0.4, "graph": 0.3, "intent": 0.0}
        fusion = "linear" if trial % 2 else "rrf"
        parts = ({n_: weights[n_] * s for n_, s in signals.items() if n_ != "intent"} if fusion == "linear"
                 else {c: np.abs(vec("f64")) * (chan.get(c, np.ones(n)) > 0) for c in ("bm25", "dense", "walk")})
        fused = vec("f64")
        adj = {"shift": np.full(n, 0.25 if trial % 3 else 0.0), "test_or_vendored": vec("ties"),
               "hits": vec("f32")}
        order = rng.permutation(n)[:int(rng.integers(0, min(n, 12) + 1))].tolist()
        args = (None, parse("a b"), cand, order, fused, chan, norm, signals, weights, parts, adj)
        opts = SearchOptions(snippets=False, collapse=True)
        for full in (frozenset(), {"bm25", "dense"}):
            new = make_hits(*args, {k: dict(v) for k, v in meta.items()}, fusion, opts, full, Named)
            ref = make_hits_reference(*args, {k: dict(v) for k, v in meta.items()}, fusion, opts, full, Named)
            assert repr(new) == repr(ref)
            assert all(type(h) is Named for h in new) and len(new) == len(order)
