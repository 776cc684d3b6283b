"""Small array kernels the query pipeline calls many times a search on short arrays.

numpy 2's ``np.unique`` of an integer array hashes before it sorts: 10 us for 150 node ids,
87 us for 2,000, where a sort and one comparison take 2 and 10 us (numpy 2.4; a search over
two indexes called it a dozen times). :func:`unique` gives what ``np.unique`` gives (values,
dtype and order) for one-dimensional integer arrays, and hands anything else to ``np.unique``.
(With ``return_inverse`` numpy sorts already: no gain there.)
"""
from __future__ import annotations

import numpy as np

__all__ = ["unique"]


def unique(a) -> np.ndarray:
    """``np.unique(a)`` for a 1-D integer array: its sorted distinct values."""
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        return np.unique(a)
    s = np.sort(a)
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]

