"""Several indexes' rankings merged into one (:class:`~kgsearch.query.multi.MultiEngine`).

Each index ranks its own candidates and lifts its fused scores by its own weakest candidate;
the merge puts every index's ranking back on the union's floor (the largest lift), takes the
best ``k`` over all of them and has each hit built by its own index. With
:class:`~kgsearch.query.adjust.Unread` rankings it reads the display fields of only the rows
its top ``k`` needs.
"""
from __future__ import annotations

import heapq
import itertools

import numpy as np

from .adjust import ADDITIVE, Unread
from .options import Hit

__all__ = ["merge", "merge_rows", "merge_unread", "merge_unread_reference"]


def merge(resps: dict, pools: dict, k: int, hit_class) -> list:
    """The indexes' rankings on one floor, best ``k`` first, each hit built by its own index.

    Each index lifted its fused scores by its own weakest candidate (``shift``); a score had
    the index been lifted by the union's floor (the largest shift) instead is
    ``score + (floor - own shift) * factor`` (``factor``: the product of the multiplicative
    adjustments, applied after the shift). Ties go to the earlier index, then its own order.
    ``resps`` and ``pools``: each index's response and :class:`~kgsearch.query.multi.Pool`, by
    name; ``hit_class``: what the hits are built as (a :class:`Hit` with an ``index`` field)."""
    unread = {name: pools[name].ranked for name in resps if isinstance(pools[name].ranked, Unread)}
    got = merge_unread(unread, k) if unread and len(unread) == len(resps) else None
    if got is not None:
        top, floor = got
    else:
        top, floor = merge_rows({name: _rows(r, pools[name]) for name, r in resps.items()}, k)
    built = {}
    for name in resps:
        mine = [pos for _, _, _, n, pos in top if n == name]
        if pools[name].ranked is not None:
            built[name] = dict(zip(mine, pools[name].build(mine, hit_class))) if mine else {}
        else:                               # (its own hits: a Hit's fields, a plain dataclass)
            built[name] = {j: hit_class(**vars(resps[name].hits[j])) for j in mine}
    hits = []
    for rank, (score, _, _, name, pos) in enumerate(top, 1):
        h = built[name][pos]
        h.score, h.rank, h.index = round(score, 6), rank, name
        if floor > 0:
            h.adjustments = dict(h.adjustments, shift=round(floor, 6))
        hits.append(h)
    return hits


def _rows(r, p) -> list:
    """One index's ranking as rows ``(position, score, additive shift, factor)``, best first."""
    if isinstance(p.ranked, Unread):
        u = p.ranked
        return [(i, float(u.fused[i]), float(u.shift[i]), float(u.factor[i])) for i in u.read_all()]
    if p.ranked is not None:
        return p.ranked
    return [(j, float(h.score), float(h.adjustments.get("shift", 0.0)), _factor(h))   # (it built its hits:
            for j, h in enumerate(r.hits)]                                         # --group file)


def merge_rows(ranked: dict, k: int) -> tuple[list, float]:
    """The best ``k`` of every index's rows on the union's floor: ``[(score, index order, rank,
    name, position)]``, and the floor."""
    floor = max((sh for rows in ranked.values() for _, _, sh, _ in rows), default=0.0)
    merged = []
    for order, (name, rows) in enumerate(ranked.items()):
        for rank, (pos, score, own, factor) in enumerate(rows):
            merged.append((score + (floor - own) * factor, order, rank, name, pos))
    merged.sort(key=lambda x: (-x[0], x[1], x[2]))
    return merged[:k], floor


def merge_unread(unread: dict, k: int) -> tuple[list, float] | None:
    """:func:`merge_unread_reference`, the indexes' positions merged lazily in Python (one
    list of each index's scores on the floor, no concatenation and sort of every position of
    every index: the merged top ``k`` takes about ``k`` of them). An index the floor reorders
    (or a score that is not a number) goes to the reference, which reads its hits first.
    The same rows are read, in the same windows, and the same top ``k`` is given (tested)."""
    live = {name: u for name, u in unread.items() if u.order}
    floor = max((float(u.shift[u.order[0]]) for u in live.values()), default=0.0)
    streams, adjs, names = [], {}, list(unread)
    for order, name in enumerate(names):
        u = unread[name]
        if not u.order:
            continue
        pos = np.asarray(u.order, dtype=np.int64)
        adj = u.fused[pos] + (floor - float(u.shift[u.order[0]])) * u.factor[pos]
        if len(adj) > 1 and not bool(np.all(adj[:-1] >= adj[1:])):    # reordered, or a NaN
            return merge_unread_reference(unread, k)
        adjs[order] = vals = adj.tolist()
        streams.append(_stream(vals, order))
    if not streams:
        return [], 0.0
    merged = streams[0] if len(streams) == 1 else heapq.merge(*streams)     # (the lexsort's order)
    it = iter(merged)
    top: list = []
    need = k
    while len(top) < k:
        window = list(itertools.islice(it, need))
        if not window:
            break
        reach: dict[int, int] = {}
        for _, o, j in window:
            if j + 1 > reach.get(o, 0):
                reach[o] = j + 1
        for o, j in reach.items():
            unread[names[o]].read_to(j)
        for _, o, j in window:
            name = names[o]
            u = unread[name]
            p = u.order[j]
            if p not in u.is_hit:
                continue
            top.append((adjs[o][j], o, u.hits.index(p), name, p))
            if len(top) == k:
                break
        need = max(k - len(top), 2) * 2
    return (top, floor) if _floor_holds(top, live) else None


def _stream(vals: list, order: int):
    """``(-score, index order, position in the index's order)``, best first (a lexsort's keys)."""
    for j, v in enumerate(vals):
        yield -v, order, j


def merge_unread_reference(unread: dict, k: int) -> tuple[list, float] | None:
    """What :func:`merge_rows` gives over every index's :class:`~kgsearch.query.adjust.Unread`
    hits, reading the display fields of the rows the merged top ``k`` needs (about ``k`` over all
    the indexes, where reading each index's hits first read ``k + 5`` of each).

    An index whose scores on the union's floor keep its order (every candidate's factor equal,
    or its own lift the floor: always on prose) is merged position by position, reading its rows
    a window at a time in the merged order; another one's hits are all read first (as before)
    and sorted. The floor counts the indexes that have a hit: one whose lift would raise it and
    none of whose rows was read is read until its first hit (None, for the rows' merge, when an
    index turns out to have none: its nodes were deleted since its flags were read)."""
    live = {name: u for name, u in unread.items() if u.order}
    floor = max((float(u.shift[u.order[0]]) for u in live.values()), default=0.0)
    keys, idx, third, ends = [], [], [], {}
    final: dict[int, tuple] = {}                     # entry -> (rank, position) of a hit known already
    names = list(unread)
    base = 0
    for order, name in enumerate(names):
        u = unread[name]
        if not u.order:
            continue
        pos = np.asarray(u.order, dtype=np.int64)
        own = float(u.shift[u.order[0]])
        adj = u.fused[pos] + (floor - own) * u.factor[pos]
        if len(adj) > 1 and not bool(np.all(adj[:-1] >= adj[1:])):     # the floor reorders it
            hits = u.read_all()
            at = {p: j for j, p in enumerate(u.order)}
            adj = adj[[at[p] for p in hits]] if hits else adj[:0]
            for r, p in enumerate(hits):
                final[base + r] = (r, p)
            third.append(np.arange(len(hits)))
        else:
            third.append(np.arange(len(adj)))
        keys.append(adj)
        idx.append(np.full(len(adj), order))
        ends[order] = (base, name)
        base += len(adj)
    if not keys:
        return [], 0.0
    adj, idx, third = np.concatenate(keys), np.concatenate(idx), np.concatenate(third)
    merged = np.lexsort((third, idx, -adj)).tolist()
    adj, idx, third = adj.tolist(), idx.tolist(), third.tolist()
    top: list = []
    start, need = 0, k
    while len(top) < k and start < len(merged):
        window = merged[start:start + need]
        start += len(window)
        reach: dict[int, int] = {}
        for e in window:
            if e not in final:
                reach[idx[e]] = max(reach.get(idx[e], 0), third[e] + 1)
        for o, j in reach.items():
            unread[ends[o][1]].read_to(j)
        for e in window:
            o = idx[e]
            name = ends[o][1]
            u = unread[name]
            if e in final:
                r, p = final[e]
            else:
                p = u.order[third[e]]
                if p not in u.is_hit:
                    continue
                r = u.hits.index(p)
            top.append((adj[e], o, r, name, p))
            if len(top) == k:
                break
        need = max(k - len(top), 2) * 2
    return (top, floor) if _floor_holds(top, live) else None


def _floor_holds(top: list, live: dict) -> bool:
    """Whether the floor counted only indexes with a hit: one whose lift would raise it and none
    of whose rows made ``top`` is read until its first hit; False when it has none (its nodes
    were deleted since its flags were read)."""
    seen = {name for _, _, _, name, _ in top}
    shown = [float(live[n].shift[live[n].order[0]]) for n in live if n in seen or live[n].hits]
    for name, u in live.items():        # (an index with no hit does not count for the floor)
        own = float(u.shift[u.order[0]])
        if name not in seen and not u.hits and own > max(shown, default=0.0):
            while not u.hits and not u.over:
                u.read_to(u.done + max(u.k, 2))
            if not u.hits:
                return False
    return True


def _factor(h: Hit) -> float:
    factor = 1.0
    for name, v in h.adjustments.items():
        if name not in ADDITIVE:
            factor *= float(v)
    return factor
