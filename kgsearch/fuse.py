"""Score fusion: normalisation, weighted linear fusion, weighted Reciprocal Rank Fusion.

All functions work on dense score vectors aligned to one candidate list (``np.ndarray`` of
shape ``(n_candidates,)``), so the pipeline can explain every part of every fused score.
"""
from __future__ import annotations

import numpy as np

__all__ = ["normalize", "linear", "rrf", "ranks", "ranks_at", "ranks_at_each"]


def normalize(scores: np.ndarray, method: str = "max") -> np.ndarray:
    """Map scores to [0, 1].

    ``max``: s / max(s) (keeps ratios; zeros stay zero). ``minmax``: (s - min) / (max - min) over
    the non-zero entries (entries that are 0 stay 0). ``rank``: 1 - rank / n over non-zero entries.
    A vector with no positive entry maps to zeros.
    """
    s = np.asarray(scores, dtype=np.float64)
    out = np.zeros_like(s)
    pos = s > 0
    if not pos.any():
        return out
    if method == "max":
        out[pos] = s[pos] / s[pos].max()
    elif method == "minmax":
        lo, hi = s[pos].min(), s[pos].max()
        out[pos] = 1.0 if hi <= lo else (s[pos] - lo) / (hi - lo)
    elif method == "rank":
        idx = np.flatnonzero(pos)
        order = idx[np.argsort(-s[idx], kind="stable")]
        out[order] = 1.0 - np.arange(len(order)) / len(order)
    else:
        raise ValueError(f"unknown normalisation {method!r}; choose 'max', 'minmax' or 'rank'")
    return out


def linear(signals: dict[str, np.ndarray], weights: dict[str, float]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Weighted sum of already-normalised signals. Returns (fused, {name: weight * signal})."""
    parts = {}
    total = None
    for name, sig in signals.items():
        w = float(weights.get(name, 0.0))
        if w == 0.0:
            continue
        part = w * np.asarray(sig, dtype=np.float64)
        parts[name] = part
        total = part if total is None else total + part
    if total is None:
        n = len(next(iter(signals.values()))) if signals else 0
        total = np.zeros(n)
    return total, parts


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each entry by descending score (ties by position); 0 where score <= 0."""
    s = np.asarray(scores, dtype=np.float64)
    r = np.zeros(len(s), dtype=np.int64)
    idx = np.flatnonzero(s > 0)
    order = idx[np.argsort(-s[idx], kind="stable")]
    r[order] = np.arange(1, len(order) + 1)
    return r


def ranks_at(scores: np.ndarray, positions) -> np.ndarray:
    """``ranks(scores)[positions]`` without ranking every entry: for the few hits shown out of
    hundreds of candidates (1 + the entries scoring higher + the equal ones before it)."""
    s = np.asarray(scores, dtype=np.float64)
    p = np.asarray(positions, dtype=np.int64)
    if len(p) > 32:                     # (a comparison per shown hit and candidate: past a few, sort)
        return ranks(s)[p]
    v = s[p][:, None]
    pos = s > 0
    before = (pos & (s > v)).sum(axis=1) + (pos & (s == v) & (np.arange(len(s)) < p[:, None])).sum(axis=1)
    return np.where(s[p] > 0, before + 1, 0)


def ranks_at_each(scores: dict, positions) -> dict:
    """``{name: ranks_at(s, positions)}`` for several score vectors of one length (a hit's
    channel ranks): the comparisons of every vector in one pass of numpy calls, where one
    :func:`ranks_at` per channel cost a dozen calls each (a search builds hits once per index).
    Vectors of another length or dtype, and more than a few positions, go through
    :func:`ranks_at` one by one."""
    p = np.asarray(positions, dtype=np.int64)
    items = list(scores.items())
    if len(items) < 2 or len(p) > 32 or any(not isinstance(s, np.ndarray) or s.dtype != np.float64
                                            or s.shape != items[0][1].shape or s.ndim != 1 for _, s in items):
        return {n: ranks_at(s, p) for n, s in items}
    S = np.stack([s for _, s in items])                 # (channels, candidates)
    V = S[:, p][:, :, None]                              # (channels, positions, 1)
    pos = (S > 0)[:, None, :]
    before = (pos & (S[:, None, :] > V)).sum(axis=2) + \
        (pos & (S[:, None, :] == V) & (np.arange(S.shape[1]) < p[:, None])).sum(axis=2)
    out = np.where(V[:, :, 0] > 0, before + 1, 0)
    return {n: out[c] for c, (n, _) in enumerate(items)}


def rrf(signals: dict[str, np.ndarray], weights: dict[str, float], k: int = 60,
        cap: int | None = 50) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Weighted Reciprocal Rank Fusion: sum_c w_c / (k + rank_c).

    A channel contributes only its best ``cap`` candidates, so a channel that returns many weak
    candidates cannot flood the result. Returns (fused, {name: contribution}).
    """
    parts = {}
    total = None
    for name, sig in signals.items():
        w = float(weights.get(name, 0.0))
        if w == 0.0:
            continue
        r = ranks(sig)
        keep = r > 0
        if cap is not None:
            keep &= r <= cap
        part = np.where(keep, w / (k + r), 0.0)
        parts[name] = part
        total = part if total is None else total + part
    if total is None:
        n = len(next(iter(signals.values()))) if signals else 0
        total = np.zeros(n)
    return total, parts
