"""The signal table: every channel's score for one growing candidate list, normalised.

Candidates are the union of the channels' top lists (sorted node ids); the graph stage adds
the nodes it reaches (:meth:`Signals.extend`), each with every channel's exact score. The
engine passes itself for the ``full`` (score every node) and ``fill`` (score these ids) calls,
and the parsed :class:`~kgsearch.query.parse.Query` they are asked for.
"""
from __future__ import annotations

import math

import numpy as np

from ..arrays import top_ids, unique
from .channels import CHANNELS, SIGNAL_OF

__all__ = ["Signals", "candidates", "top_ids", "top_idx", "in_set", "unique_ids"]

_FULL = frozenset(n for n, c in CHANNELS.items() if c.score_all is not None)
_ABSOLUTE = frozenset(n for n, c in CHANNELS.items() if c.absolute)
_ADDED = frozenset(n for n, c in CHANNELS.items() if c.added)


unique_ids = unique     # np.unique of integer ids by one sort (kgsearch.arrays: no numpy.ma import, no hashing)


def candidates(raw: dict) -> np.ndarray:
    """Sorted unique node ids of the channels' answers."""
    ids_list = [r[0] for r in raw.values() if len(r[0])]
    return unique(np.concatenate(ids_list)) if ids_list else np.zeros(0, dtype=np.int64)


class Signals:
    """Channel scores on one growing candidate list.

    ``norm="z"`` (default): a channel that can score every node (bm25, prf, dense) is
    standardised over the whole index, ``z = (s - mean) / std`` (zeros included for lexical
    channels; a node without a vector counts as average for dense). The spread across the
    index says how much a difference means for this query, so a query with one outstanding
    lexical match trusts it more than a query where everything matches a little. Channels that
    only name a few nodes (fts, pattern, equiv, local, global, intent) keep a [0, 1] value,
    put on the same scale by multiplying it by ``unit`` (the best first-stage score, at least 1).

    ``stats`` (several indexes ranked as one): ``{channel: (mean, spread)}`` over the union,
    used instead of this index's.

    ``norm="max"|"minmax"|"auto"``: every channel is mapped to [0, 1] over the first candidate
    list (later candidates with the same statistics, clipped); missing scores are filled in.
    """

    def __init__(self, engine, query, cand: np.ndarray, raw: dict, kwargs: dict, norm: str,
                 fulls: dict | None = None, stats: dict | None = None, allowed: np.ndarray | None = None):
        self.engine, self.query, self.kwargs, self.norm = engine, query, kwargs, norm
        self.allowed = allowed                 # the filters' node set (sorted ids), or None: every node
        self.added_weight = engine.tuning.anchor_weight
        self.cand = cand
        self.raw = raw
        self.full: dict[str, tuple] = {}
        self.raw_scores: dict[str, np.ndarray] = {}
        self.norm_scores: dict[str, np.ndarray] = {}
        self.stats: dict[str, tuple[float, float]] = {}
        self._more: dict[str, object] = {}     # lookup(ids) of a full channel that holds a short list only
        self._memo: dict = {}                  # text() and first_stage() until the scores change (add, extend)
        for name, (ids, scores) in raw.items():
            if norm == "z" and name in _FULL:
                f = (fulls or {}).get(name) or engine.full(name, query, kwargs.get(name, {}))
                if f is not None and f[2] > 0:
                    fid, fsc, n = f
                    if getattr(f, "stats", None) is not None:      # dense past the vector cache
                        self._more[name] = f.lookup
                    if stats and name in stats:           # several indexes as one: the union's
                        mu, sd = stats[name]
                    elif getattr(f, "stats", None) is not None:
                        mu, sd = f.stats
                    else:
                        mu = float(fsc.sum()) / n
                        sd = math.sqrt(max(float((fsc * fsc).sum()) / n - mu * mu, 1e-12))
                    default = mu if name == "dense" else 0.0
                    self.full[name] = (fid, fsc, mu, sd, default)
                    raw_c = self._lookup(name, cand)
                    self.raw_scores[name] = raw_c
                    self.norm_scores[name] = (raw_c - mu) / sd
                    continue
            s = _align(cand, ids, scores)
            filled = engine.fill(name, query, cand, kwargs.get(name, {}))
            if filled is not None:
                s = np.maximum(s, filled)
            self.raw_scores[name] = s
            pos = s[s > 0]
            lo = float(pos.min()) if len(pos) else 0.0
            hi = float(pos.max()) if len(pos) else 0.0
            if norm in ("max", "z") or (norm == "auto" and name != "dense"):
                lo = 0.0          # a lexical score of 0 means "no match": keep it apart from weak matches
            if name in _ABSOLUTE:
                lo, hi = 0.0, 1.0     # evidence on its own [0, 1] scale: weak stays weak
            self.stats[name] = (lo, hi)
            self.norm_scores[name] = self._normalize(name, s)
        self.unit = 1.0
        if norm == "z" and len(cand):
            self.unit = max(1.0, float(self.text().max(initial=0.0)), float(self.get("dense").max(initial=0.0)))

    # ---------------------------------------------------------------- values
    def _lookup(self, name: str, ids: np.ndarray) -> np.ndarray:
        fid, fsc, _, _, default = self.full[name]
        return _lookup_in(fid, fsc, default, self._more.get(name), ids)

    def _normalize(self, name: str, s: np.ndarray) -> np.ndarray:
        lo, hi = self.stats[name]
        out = np.zeros(len(s))
        pos = s > 0
        if hi <= lo:
            out[pos] = 1.0
        else:
            out[pos] = np.clip((s[pos] - lo) / (hi - lo), 0.0, 1.0)
        return out

    def get(self, name: str) -> np.ndarray:
        return self.norm_scores.get(name, np.zeros(len(self.cand)))

    def text(self) -> np.ndarray:
        """The text signal: the text channels' scores combined (kept until the scores change;
        callers never write into it)."""
        t = self._memo.get("text")
        if t is None:
            t = self._memo["text"] = self._text()
        return t

    def _text(self) -> np.ndarray:
        names = [n for n in self.norm_scores if SIGNAL_OF.get(n) == "text"]
        if not names:
            return np.zeros(len(self.cand))
        if self.norm != "z":
            return np.max([self.norm_scores[n] for n in names], axis=0)
        dense_z = [self.norm_scores[n] for n in names if n in self.full]
        sparse = [self.norm_scores[n] for n in names if n not in self.full and n not in _ADDED]
        t = np.max(dense_z, axis=0) if dense_z else None
        scale = max(1.0, float(t.max(initial=0.0))) if t is not None else 1.0
        if sparse:
            sp = np.max(sparse, axis=0) * scale
            t = sp if t is None else np.maximum(t, sp)
        for n in names:
            if n in _ADDED:           # evidence beside the words (exact names): added, not max-ed
                add = self.added_weight * self.norm_scores[n] * scale
                t = add if t is None else t + add
        return t

    def first_stage(self, weights: dict) -> np.ndarray:
        """The first-stage score of every candidate: ``(a * embedding + b * text) / (a + b)``
        with the intent's weights (the larger of the two when both weights are 0)."""
        a, b = weights.get("embedding", 0.0), weights.get("text", 0.0)
        got = self._memo.get(("first", a, b))
        if got is None:
            text, emb = self.text(), self.get("dense")
            got = self._memo[("first", a, b)] = (a * emb + b * text) / (a + b) if a + b > 0 else np.maximum(text, emb)
        return got

    def first_stage_of(self, ids: np.ndarray, a: float, b: float, fulls: dict | None = None) -> np.ndarray:
        """(a * embedding + b * text) / (a + b) for any node ids (full-index channels; others 0).

        ``fulls`` (several indexes ranked as one, ``norm="z"``): another index's whole-index
        scores ``{channel: (ids, scores, population)}``; ``ids`` are that index's nodes, scored
        with this index's (the union's) mean and spread, as one index of both would."""
        ids = np.asarray(ids, dtype=np.int64)
        text = np.zeros(len(ids))
        emb = np.zeros(len(ids))
        tnames = [n for n in self.raw_scores if SIGNAL_OF.get(n) == "text"]
        if fulls is not None:
            def look(n):
                _, _, mu, sd, default = self.full[n]
                f = fulls[n]
                return (_lookup_in(f[0], f[1], default, getattr(f, "lookup", None), ids) - mu) / sd
            if self.norm == "z":
                tz = [look(n) for n in tnames if n in self.full and n in fulls]
                if tz:
                    text = np.max(tz, axis=0)
                if "dense" in self.full and "dense" in fulls:
                    emb = look("dense")
        elif self.norm == "z":
            tz = [(self._lookup(n, ids) - self.full[n][2]) / self.full[n][3] for n in tnames if n in self.full]
            if tz:
                text = np.max(tz, axis=0)
            if "dense" in self.full:
                emb = (self._lookup("dense", ids) - self.full["dense"][2]) / self.full["dense"][3]
        else:
            tv = []
            for n in tnames:
                f = self.engine.fill(n, self.query, ids, self.kwargs.get(n, {}))
                if f is not None:
                    tv.append(self._normalize(n, f))
            if tv:
                text = np.max(tv, axis=0)
            if "dense" in self.stats:
                f = self.engine.fill("dense", self.query, ids, {})
                if f is not None:
                    emb = self._normalize("dense", f)
        if "dense" not in self.raw_scores:
            return text
        return (a * emb + b * text) / (a + b) if a + b > 0 else np.maximum(text, emb)

    def allows(self, ids: np.ndarray) -> np.ndarray:
        """Mask of ``ids`` inside the filters' set (all True without filters)."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.allowed is None:
            return np.ones(len(ids), dtype=bool)
        return in_set(ids, self.allowed)

    # ---------------------------------------------------------------- changes
    def add(self, name: str, raw: np.ndarray, norm: np.ndarray) -> None:
        self.raw_scores[name] = raw
        self.norm_scores[name] = norm
        self._memo.clear()

    def extend(self, ids: np.ndarray) -> None:
        """Add candidates (after the existing ones), with every channel's score for them."""
        add = unique(np.asarray(ids, dtype=np.int64))      # (np.setdiff1d(add, cand): a search in cand sorted)
        if len(add) and len(self.cand):
            cs = np.sort(self.cand)
            add = add[cs[np.minimum(np.searchsorted(cs, add), len(cs) - 1)] != add]
        if self.allowed is not None:           # the filters hold for every candidate
            add = add[self.allows(add)]
        if not len(add):
            return
        self._memo.clear()
        self.cand = np.concatenate([self.cand, add])
        for name in list(self.raw_scores):
            if name in self.full:
                extra = self._lookup(name, add)
                _, _, mu, sd, _ = self.full[name]
                self.raw_scores[name] = np.concatenate([self.raw_scores[name], extra])
                self.norm_scores[name] = np.concatenate([self.norm_scores[name], (extra - mu) / sd])
                continue
            extra = np.zeros(len(add))
            if name in self.raw:
                ids_, scores = self.raw[name]
                idx = {int(v): i for i, v in enumerate(ids_.tolist())}
                for j, v in enumerate(add.tolist()):
                    if v in idx:
                        extra[j] = scores[idx[v]]
                filled = self.engine.fill(name, self.query, add, self.kwargs.get(name, {}))
                if filled is not None:
                    extra = np.maximum(extra, filled)
            self.raw_scores[name] = np.concatenate([self.raw_scores[name], extra])
            self.norm_scores[name] = np.concatenate([self.norm_scores[name],
                                                     self._normalize(name, extra) if name in self.stats
                                                     else np.zeros(len(add))])


def in_set(ids: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Mask of ``ids`` found in ``allowed`` (sorted unique int64 node ids): a lookup table over
    the id range when that is small next to the work, else a binary search."""
    ids = np.asarray(ids, dtype=np.int64)
    if not len(allowed) or not len(ids):
        return np.zeros(len(ids), dtype=bool)
    top = int(allowed[-1])
    if top <= 8 * (len(ids) + len(allowed)):
        table = np.zeros(top + 2, dtype=bool)
        table[allowed] = True
        return table[np.clip(ids, 0, top + 1)] & (ids >= 0)
    pos = np.minimum(np.searchsorted(allowed, ids), len(allowed) - 1)
    return allowed[pos] == ids


def _align(cand: np.ndarray, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
    out = np.zeros(len(cand))
    if len(ids):
        pos = np.searchsorted(cand, ids)
        out[pos] = np.maximum(out[pos], scores)
    return out


def top_idx(s: np.ndarray, k: int, positive: bool = True, keys=None) -> np.ndarray:
    """Positions of the ``k`` largest values. ``keys(positions) -> list[str]``: scores tied
    across the cut are taken in key order (else arbitrarily), so that the choice does not
    depend on node ids (an index updated in place has other ids than a fresh build)."""
    if not len(s) or k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, len(s))
    idx = np.argpartition(-s, k - 1)[:k]
    if keys is not None and k < len(s):
        kth = s[idx].min()
        tied = np.flatnonzero(s == kth)
        if len(tied) > int((s[idx] == kth).sum()):          # a tie straddles the cut
            above = idx[s[idx] > kth]
            names = keys(tied)
            pick = sorted(range(len(tied)), key=names.__getitem__)[:k - len(above)]
            idx = np.concatenate([above, tied[np.asarray(pick, dtype=np.int64)]])
    return idx[s[idx] > 0] if positive else idx


def _lookup_in(fid: np.ndarray, fsc: np.ndarray, default: float, more, ids: np.ndarray) -> np.ndarray:
    """The whole-index scores ``fsc`` (of the sorted ids ``fid``) of ``ids``: ``default`` for an
    id not there, or ``more(ids)`` when given (dense past the vector cache)."""
    if len(fid) and len(ids):
        lo = int(fid[0])
        if int(fid[-1]) - lo + 1 == len(fid) and int(ids.min()) >= lo and int(ids.max()) - lo < len(fid):
            return fsc[ids - lo].astype(np.float64)             # (every id there, at its offset)
    out = np.full(len(ids), default, dtype=np.float64)
    hit = np.zeros(len(ids), dtype=bool)
    if len(fid) and len(ids):
        if int(fid[-1]) - int(fid[0]) + 1 == len(fid):         # (sorted, unique, no gap: a direct offset)
            pos = ids - fid[0]
            hit = (pos >= 0) & (pos < len(fid))
            out[hit] = fsc[pos[hit]]
        else:
            pos = np.minimum(np.searchsorted(fid, ids), len(fid) - 1)
            hit = fid[pos] == ids
            out[hit] = fsc[pos[hit]]
    if more is not None and not hit.all():
        out[~hit] = more(ids[~hit])
    return out
