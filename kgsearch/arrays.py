"""Small array kernels the query pipeline calls many times a search on short arrays.

``np.unique`` of an integer array is slow on the search path under numpy 2: it hashes before it
sorts (10 us for 150 node ids, 87 us for 2,000, where a sort and one comparison take 2 and
10 us; numpy 2.4, a search over two indexes called it a dozen times), and its first plain call
imports ``numpy.ma`` (for ``np.ma.is_masked``: 6-20 ms of a cold CLI search). :func:`unique`
gives what ``np.unique`` gives for integer arrays (values, dtype and order, flattened) by one
sort, and hands anything else to ``np.unique``. (With ``return_inverse`` numpy sorts already.)
"""
from __future__ import annotations

import numpy as np

__all__ = ["unique", "top_ids"]


def unique(a) -> np.ndarray:
    """``np.unique(a)`` for integer arrays (any shape, flattened): their sorted distinct values."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        return np.unique(a)
    s = np.sort(a.reshape(-1))
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def top_ids(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` (ids, scores) by score, ties by smaller id; scores <= 0 kept only for dense."""
    if not len(ids) or k <= 0:
        return np.zeros(0, np.int64), np.zeros(0)
    if len(ids) > k:
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(len(ids))
    order = part[np.lexsort((ids[part], -scores[part]))]
    return ids[order].astype(np.int64), scores[order].astype(np.float64)
