"""kgsearch.arrays against numpy: the same values, dtype and order as np.unique."""
from __future__ import annotations

import numpy as np

from kgsearch import arrays


def test_unique_is_np_unique():
    rng = np.random.default_rng(0)
    for trial in range(2000):
        dt = [np.int64, np.int32, np.uint8, np.intp, np.float64][trial % 5]
        a = rng.integers(0, 20 if trial % 2 else 1000, int(rng.integers(0, 60))).astype(dt)
        if trial % 7 == 0:
            a = a[::-1]
        want, got = np.unique(a), arrays.unique(a)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert arrays.unique(np.array([[3, 1], [1, 2]])).tolist() == [1, 2, 3]       # (flattened, as np.unique)
    assert arrays.unique([5, 5, 2]).tolist() == [2, 5]


def test_signals_extend_adds_what_setdiff1d_adds():
    """Signals.extend's new candidates (a search in the sorted candidates) are
    np.setdiff1d(np.unique(ids), cand): random candidates (unsorted after an earlier extend)."""
    from kgsearch.query.signals import Signals

    class Eng:                         # (no channel: extend only grows the candidate list)
        class tuning:
            anchor_weight = 1.0

    rng = np.random.default_rng(1)
    for _ in range(300):
        cand = np.unique(rng.integers(0, 80, int(rng.integers(0, 30))))
        sig = Signals(Eng(), None, cand, {}, {}, "z")
        for _ in range(2):
            ids = rng.integers(0, 90, int(rng.integers(0, 25)))
            want = np.concatenate([sig.cand, np.setdiff1d(np.unique(ids), sig.cand, assume_unique=True)])
            sig.extend(ids)
            assert sig.cand.tolist() == want.tolist()
