"""The signal table (kgsearch.query.signals): z-scores over the whole index, [0, 1] for sparse
channels, the text signal, fill-ins and new candidates, hand-computed on a stand-in engine."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kgsearch.query.parse import parse
from kgsearch.query.signals import Signals, candidates, top_idx, top_ids, unique_ids

from .conftest import FakeEngine, arrays

Q = parse("anything")


def test_candidates_are_the_sorted_union():
    raw = {"bm25": arrays({5: 1.0, 2: 0.5}), "pattern": arrays({9: 1.0, 2: 0.9}), "fts": arrays({})}
    assert candidates(raw).tolist() == [2, 5, 9]
    assert candidates({}).tolist() == []


@pytest.mark.parametrize("which", ["query", "embed"])
def test_unique_ids_are_np_unique(which):
    """The sort-based unique ids of the search path (np.unique imports numpy.ma on first use)
    give np.unique's array: values, order, dtype; empty, one, all-equal, negative, 2-D inputs."""
    from kgsearch.embed.store import sorted_unique

    fn = unique_ids if which == "query" else sorted_unique
    rng = np.random.default_rng(7)
    cases = [np.zeros(0, np.int64), np.array([5]), np.full(50, 3), np.arange(10), np.arange(10)[::-1],
             np.array([[4, 1], [1, 9]]), np.array([-3, 7, -3, 0, 2**40, -2**40])]
    cases += [rng.integers(-n, n + 1, rng.integers(0, 3 * n + 2)) for n in (1, 3, 10, 100, 5000) for _ in range(4)]
    if which == "query":
        cases += [c.astype(np.int32) for c in cases[-6:]] + [np.array([3, 1, 3], np.intp), [4, 2, 4]]
    for c in cases:
        got, want = fn(c), np.unique(np.asarray(c, dtype=np.int64) if which == "embed" else c)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), c


def test_z_scores_over_the_whole_index():
    # bm25 scores every node: N = 4 indexed, positive scores 2 (node 1) and 4 (node 2)
    eng = FakeEngine(fulls={"bm25": ([1, 2], [2.0, 4.0], 4)})
    raw = {"bm25": arrays({1: 2.0, 2: 4.0}), "pattern": arrays({3: 0.5, 2: 1.0})}
    sig = Signals(eng, Q, candidates(raw), raw, {}, "z")
    mu = 6 / 4
    sd = math.sqrt(20 / 4 - mu * mu)                             # mean and spread include the zeros
    assert sig.cand.tolist() == [1, 2, 3]
    assert sig.raw_scores["bm25"].tolist() == [2.0, 4.0, 0.0]
    assert np.allclose(sig.get("bm25"), [(2 - mu) / sd, (4 - mu) / sd, (0 - mu) / sd])
    assert sig.stats["pattern"] == (0.0, 1.0)                  # sparse: s / best, zero stays "no match"
    assert np.allclose(sig.get("pattern"), [0.0, 1.0, 0.5])
    t_max = (4 - mu) / sd
    assert sig.unit == pytest.approx(max(1.0, t_max))
    # text = max(z of full channels, sparse x max(1, best z))
    assert np.allclose(sig.text(), np.maximum(sig.get("bm25"), sig.get("pattern") * max(1.0, t_max)))
    assert ("fill", "pattern", (1, 2, 3)) in eng.calls          # sparse channels filled in for every candidate


def test_dense_defaults_to_the_mean_and_anchors_are_added():
    eng = FakeEngine(fulls={"dense": ([1, 2], [0.9, 0.1], 2), "bm25": ([1], [1.0], 10)})
    raw = {"dense": arrays({1: 0.9, 2: 0.1}), "bm25": arrays({1: 1.0}), "anchors": arrays({3: 0.6})}
    sig = Signals(eng, Q, candidates(raw), raw, {}, "z")
    # node 3 has no vector: it counts as average (z = 0), not as the worst
    assert sig.get("dense")[2] == 0.0
    # anchors: evidence on an absolute scale, added (x anchor_weight x the text scale), not max-ed
    assert sig.stats["anchors"] == (0.0, 1.0) and sig.get("anchors").tolist() == [0.0, 0.0, 0.6]
    z = sig.get("bm25")
    scale = max(1.0, float(z.max()))
    assert np.allclose(sig.text(), z + eng.tuning.anchor_weight * sig.get("anchors") * scale)


def test_max_norm_maps_every_channel_to_unit_with_fill_ins():
    eng = FakeEngine(fills={"bm25": {1: 3.0, 2: 6.0, 3: 1.5}})
    raw = {"bm25": arrays({2: 6.0}), "pattern": arrays({1: 0.8, 3: 0.4})}
    sig = Signals(eng, Q, candidates(raw), raw, {}, "max")
    assert sig.raw_scores["bm25"].tolist() == [3.0, 6.0, 1.5]   # the fill-in gives every candidate its score
    assert np.allclose(sig.get("bm25"), [0.5, 1.0, 0.25])
    assert np.allclose(sig.get("pattern"), [1.0, 0.0, 0.5])
    assert sig.unit == 1.0 and np.allclose(sig.text(), [1.0, 1.0, 0.5])
    minmax = Signals(eng, Q, candidates(raw), raw, {}, "minmax")
    assert np.allclose(minmax.get("bm25"), [(3 - 1.5) / 4.5, 1.0, 0.0])


def test_extend_scores_new_candidates_by_every_channel():
    eng = FakeEngine(fulls={"bm25": ([1, 4], [2.0, 1.0], 4)}, fills={"pattern": {4: 0.5, 7: 0.25}})
    raw = {"bm25": arrays({1: 2.0}), "pattern": arrays({1: 1.0})}
    sig = Signals(eng, Q, candidates(raw), raw, {}, "z")
    mu, sd = sig.full["bm25"][2], sig.full["bm25"][3]
    sig.extend(np.array([7, 4, 1]))
    assert sig.cand.tolist() == [1, 4, 7]                       # appended, sorted among themselves
    assert sig.raw_scores["bm25"].tolist() == [2.0, 1.0, 0.0]
    assert np.allclose(sig.get("bm25")[1:], [(1.0 - mu) / sd, (0.0 - mu) / sd])
    assert sig.raw_scores["pattern"].tolist() == [1.0, 0.5, 0.25]
    assert np.allclose(sig.get("pattern"), [1.0, 0.5, 0.25])


def test_first_stage():
    eng = FakeEngine(fulls={"dense": ([1, 2], [0.5, -0.5], 2), "bm25": ([1, 2], [1.0, 3.0], 2)})
    raw = {"dense": arrays({1: 0.5, 2: -0.5}), "bm25": arrays({1: 1.0, 2: 3.0})}
    sig = Signals(eng, Q, candidates(raw), raw, {}, "z")
    text, emb = sig.text(), sig.get("dense")
    assert np.allclose(sig.first_stage({"embedding": 0.25, "text": 0.75}), (0.25 * emb + 0.75 * text) / 1.0)
    assert np.allclose(sig.first_stage({"embedding": 0.0, "text": 0.0}), np.maximum(text, emb))
    assert np.allclose(sig.first_stage_of(np.array([2, 1]), 0.25, 0.75),
                       sig.first_stage({"embedding": 0.25, "text": 0.75})[::-1])


def test_top_ids_and_top_idx_break_ties_by_id_and_key():
    ids, sc = top_ids(np.array([9, 3, 5, 1, 7]), np.array([1.0, 2.0, 1.0, 1.0, 0.5]), 4)
    assert ids.tolist() == [3, 1, 5, 9] and sc.tolist() == [2.0, 1.0, 1.0, 1.0]     # best first, ties by id
    s = np.array([0.5, 0.9, 0.5, 0.5, 0.0])
    keys = {0: "c", 2: "a", 3: "b"}
    got = top_idx(s, 3, keys=lambda pos: [keys[int(p)] for p in pos])
    assert sorted(got.tolist()) == [1, 2, 3]                    # the tie at the cut goes by key: a, b
    assert top_idx(np.array([0.0, 0.0]), 2).tolist() == []      # positive only by default


def test_lookup_in_with_and_without_gaps_in_the_ids():
    """Whole-index scores of any ids: a gap-free id range is read by offset, ids with gaps by
    search; both give the score, or the default for an id not there (hand-computed)."""
    from kgsearch.query.signals import _lookup_in

    fsc = np.array([0.5, 1.5, 2.5, 3.5])
    ids = np.array([9, 3, 6, 4, 5, 0, 7], dtype=np.int64)
    contiguous = np.array([3, 4, 5, 6], dtype=np.int64)
    assert _lookup_in(contiguous, fsc, -1.0, None, ids).tolist() == [-1.0, 0.5, 3.5, 1.5, 2.5, -1.0, -1.0]
    gaps = np.array([3, 5, 6, 9], dtype=np.int64)
    assert _lookup_in(gaps, fsc, -1.0, None, ids).tolist() == [3.5, 0.5, 2.5, -1.0, 1.5, -1.0, -1.0]
    more = _lookup_in(contiguous, fsc, -1.0, lambda rest: rest * 10.0, ids)        # (past the vector cache)
    assert more.tolist() == [90.0, 0.5, 3.5, 1.5, 2.5, 0.0, 70.0]


def test_lookup_in_every_id_there_is_the_general_lookup():
    """_lookup_in's shortcut (a gap-free range holding every id: one gather) gives what the
    general lookup gives, float32 scores widened alike; random ranges, ids in and out of them."""
    from kgsearch.query import signals as S

    def general(fid, fsc, default, more, ids):            # the lookup without the shortcut
        out = np.full(len(ids), default, dtype=np.float64)
        pos = np.minimum(np.searchsorted(fid, ids), len(fid) - 1)
        hit = fid[pos] == ids
        out[hit] = fsc[pos[hit]]
        if more is not None and not hit.all():
            out[~hit] = more(ids[~hit])
        return out

    rng = np.random.default_rng(3)
    for _ in range(300):
        lo, n = int(rng.integers(0, 5)), int(rng.integers(1, 30))
        fid = np.arange(lo, lo + n, dtype=np.int64)
        fsc = rng.random(n).astype(np.float32 if rng.random() < 0.5 else np.float64)
        ids = rng.integers(lo - 2 if rng.random() < 0.3 else lo, lo + n + (2 if rng.random() < 0.3 else 0),
                           int(rng.integers(1, 20))).astype(np.int64)
        more = (lambda rest: rest * 10.0) if rng.random() < 0.3 else None
        got = S._lookup_in(fid, fsc, -1.0, more, ids)
        assert got.dtype == np.float64 and got.tobytes() == general(fid, fsc, -1.0, more, ids).tobytes()


def test_text_and_first_stage_are_kept_until_the_scores_change():
    """text() and first_stage() are computed once per state of the table: the same values as a
    fresh computation (_text) after extend() and add() changed it, and the same arrays between."""
    eng = FakeEngine(fulls={"bm25": ([1, 2, 3, 4, 5], [2.0, 4.0, 1.0, 0.5, 3.0], 6),
                            "dense": ([1, 2, 3, 4, 5], [0.1, 0.9, 0.3, 0.2, 0.4], 6)})
    raw = {"bm25": arrays({1: 2.0, 2: 4.0}), "dense": arrays({2: 0.9, 3: 0.3}), "pattern": arrays({3: 0.5, 2: 1.0})}
    sig = Signals(eng, Q, candidates(raw), raw, {}, "z")
    w = {"embedding": 0.25, "text": 0.45}

    def fresh():
        t, e = sig._text(), sig.get("dense")
        return t, (0.25 * e + 0.45 * t) / 0.7

    for change in (None, lambda: sig.extend(np.array([4, 5, 2])), lambda: sig.add("graph", np.ones(5), np.ones(5)),
                   lambda: sig.extend(np.array([], dtype=np.int64))):
        if change is not None:
            change()
        t, f = fresh()
        assert sig.text().tobytes() == t.tobytes() and sig.first_stage(w).tobytes() == f.tobytes()
        assert sig.text() is sig.text() and sig.first_stage(w) is sig.first_stage(w)
        assert len(sig.text()) == len(sig.cand)
