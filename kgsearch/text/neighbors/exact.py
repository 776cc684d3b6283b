"""The exact ``similar_text`` lists: every posting of a node's ``M`` most distinctive terms.

Each prose node X gets up to ``K`` out-edges to the nodes that score highest when X's own ``M``
most distinctive window terms are used as a BM25 query (scored with the grid statistics,
:class:`~.common.Stats`); edge weight = that score divided by X's score against itself, in
(0, 1]. Ties at the K-th place go by node key (``rank``), never by node id, so that an index
updated in place (whose ids differ from a fresh build's) keeps the same nodes there.

:func:`update_exact` is the step below :data:`~.approx.EXACT_MAX_NODES` prose nodes: a full
pass, or only the lists :func:`~.delta.affected` says a change can reach, each list's entry bar
stored beside it. Every list is then exactly a fresh build's (tests compare).
"""
from __future__ import annotations

import time
from collections import Counter

import numpy as np

from ...store.sql import exec_in_chunks, in_chunks
from ..idcodec import decode_ids_many, decode_tf
from ..okapi import tf_impacts
from ..postings import load_norms, norms_of, stored_params
from .common import (BATCH, CODE_KINDS, EDGE_TYPE, FULL_FRACTION, K, M, MIN_SIM, NOT_PROSE, STATE_KEY, TIES, Stats,
                     delete_edges, node_terms, query_terms)
from .delta import BAR_KEY, affected, load_bars

__all__ = ["Postings", "neighbours", "neighbours_bar", "list_state", "update_exact"]


class Postings:
    """Rare-term postings held in memory for one run: every window term's (``lazy=False``), or
    only those that :meth:`load` is asked for (the terms of the nodes whose lists are
    computed: a code tree's few prose nodes need a small part of its vocabulary). Scored with
    ``stats`` (the step's grid statistics); without it, with the live N and avgdl."""

    def __init__(self, ix, n_docs: int, lazy: bool = False, stats: Stats | None = None):
        self.ix = ix
        self.st, self.params = stored_params(ix)
        self.stats = stats if stats is not None else Stats(float(n_docs), float(self.st["avgdl"]), False)
        self.max_df = self.stats.max_df
        self.lists: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
        self.asked: set[str] = set()
        self._norms = None
        if not lazy:
            self._add(ix.conn.execute("SELECT term, df, ids, tf FROM text_postings WHERE df >= 2 AND df <= ?",
                                      (self.max_df,)))

    def load(self, terms) -> None:
        """Read the window terms among ``terms`` not read yet."""
        new = sorted(set(terms) - self.asked)
        if not new:
            return
        self.asked.update(new)
        self._add(r for r in in_chunks(self.ix.conn, "SELECT term, df, ids, tf FROM text_postings "
                                       "WHERE term IN ({})", new) if 2 <= r[1] <= self.max_df)

    def _add(self, rows) -> None:
        terms, idfs, ibs, tfs = [], [], [], []
        for term, df, ib, tb in rows:
            terms.append(term)
            idfs.append(self.stats.idf(df))
            ibs.append(ib)
            tfs.append(decode_tf(tb, df))
        if not terms:
            return
        # impacts from the stored term frequencies, all lists at once
        ids, off = decode_ids_many(ibs)
        if self._norms is None:        # the length norms with the stats' avgdl
            self._norms = load_norms(self.ix, dict(self.st, avgdl=self.stats.avgdl), self.params)
        imp = tf_impacts(np.concatenate(tfs), norms_of(self._norms, ids), self.params.k1)
        bounds = off.tolist()
        for term, idf, s, e in zip(terms, idfs, bounds[:-1], bounds[1:]):
            self.lists[term] = (ids[s:e], imp[s:e], idf)


def neighbours(terms: list[str], self_id: int, post: Postings, allowed: np.ndarray | None = None,
               rank: np.ndarray | None = None) -> list[tuple[int, float]]:
    """Up to ``K`` (node id, similarity), best first; equal scores in ``rank`` order (by node
    id without it; ``rank`` covers every id ``allowed`` does)."""
    return neighbours_bar(terms, self_id, post, allowed, rank)[0]


def neighbours_bar(terms: list[str], self_id: int, post: Postings, allowed: np.ndarray | None = None,
                   rank: np.ndarray | None = None) -> tuple[list[tuple[int, float]], float]:
    """:func:`neighbours` and the list's entry bar: the score another candidate must reach to
    enter it (the K-th score of a full list, ``MIN_SIM`` times the node's own score otherwise,
    +inf when no candidate ever can)."""
    counts = Counter(t for t in terms if t in post.lists)
    if not counts:
        return [], np.inf
    ranked = query_terms(counts, lambda t: post.lists[t][2], M)
    ids, vals = [], []
    for t, _ in ranked:
        pid, imp, idf = post.lists[t]
        ids.append(pid)
        vals.append(imp * np.float32(idf))
    all_ids = np.concatenate(ids)
    all_vals = np.concatenate(vals)
    if allowed is not None:            # neighbours are prose nodes too (not tags, entities, code)
        keep = all_ids < len(allowed)
        keep[keep] = allowed[all_ids[keep]] > 0
        keep |= all_ids == self_id
        all_ids, all_vals = all_ids[keep], all_vals[keep]    # (the same sums, in the same order)
    u, inv = np.unique(all_ids, return_inverse=True)
    score = np.bincount(inv, weights=all_vals)
    pos_self = np.searchsorted(u, self_id)
    if pos_self >= len(u) or u[pos_self] != self_id:
        return [], np.inf
    self_score = score[pos_self]
    if self_score <= 0:
        return [], np.inf
    score[pos_self] = 0.0
    # only candidates that pass MIN_SIM can be kept (the weakest go first, so this is the same
    # as cutting after the top K)
    top = np.flatnonzero(score / self_score >= MIN_SIM)
    if len(top) > K:                   # every score tied with the K-th, then ties in rank order
        kth = np.partition(score[top], len(top) - K)[len(top) - K]
        top = top[score[top] >= kth]
    tie = u[top] if rank is None else rank[np.minimum(u[top], len(rank) - 1)]
    top = top[np.lexsort((tie, -score[top]))][:K]
    out = []
    for i in top:
        sim = float(score[i] / self_score)
        if sim >= MIN_SIM:
            out.append((int(u[i]), min(sim, 1.0)))
    return out, float(score[top[-1]]) if len(out) == K else MIN_SIM * float(self_score)


def list_state(stats: Stats, params) -> dict:
    """What the stored lists depend on besides the postings (meta ``STATE_KEY``): when it
    differs from the stored one, every list is recomputed."""
    return {**stats.key(), "params": params.index_key(), "ties": TIES}


def update_exact(ix, changes, prose: list[int], st: dict, params, progress=None) -> dict:
    """The step at or below the exact limit (see the module docstring): ``prose`` the prose
    node ids, ascending; ``st``/``params`` the stored BM25 statistics and parameters."""
    t0 = time.perf_counter()
    conn = ix.conn
    if not changes.full and not changes.nodes_changed and ix.meta_json(STATE_KEY):
        return {"rebuilt": False}
    stats = Stats.of(st)
    state = list_state(stats, params)
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    post = Postings(ix, int(st["n"]), lazy=True, stats=stats)
    allowed = np.zeros(max(prose, default=-1) + 1, dtype=np.float64)
    allowed[prose] = 1.0
    full = bool(changes.full) or ix.meta_json(STATE_KEY) != state
    bars = None if full else load_bars(ix, len(allowed))
    full = full or bars is None
    todo = prose
    why: dict = {}
    if not full:
        reached = affected(ix, changes, an, post, stats, allowed, bars, EDGE_TYPE, why, nw, M)
        full = reached is None or len(reached) > FULL_FRACTION * max(1, len(prose))
        if not full:
            todo = sorted(reached)
    if full:
        bars = np.full(len(allowed), -np.inf)
    before = conn.total_changes
    if full:
        delete_edges(conn, None)
    else:
        gone = sorted(set(changes.removed))
        exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND src IN ({})",
                       sorted(set(todo) | set(gone) | set(changes.modified)), before=[EDGE_TYPE])
        exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND dst IN ({})",
                       gone, before=[EDGE_TYPE])
        conn.execute("DELETE FROM edges WHERE type=? AND +file_id IS NULL AND dst IS NULL", (EDGE_TYPE,))
    ix.set_meta_json(STATE_KEY, state)
    if not todo:
        if full:
            ix.put_array(BAR_KEY, bars)
        dropped = conn.total_changes - before
        if dropped:
            changes.edges_changed = True
        return {"full": full, "nodes": 0, "edges_dropped": dropped, "seconds": round(time.perf_counter() - t0, 3)}
    # ties in key order: the same in any index of the same files, whatever its node ids
    rank = np.full(len(allowed), len(prose), dtype=np.int64)
    marks = ",".join("?" * len(CODE_KINDS))
    by_key = np.fromiter((r[0] for r in conn.execute(
        f"SELECT id FROM nodes WHERE flags & {NOT_PROSE} = 0 AND kind NOT IN ({marks}) ORDER BY key", CODE_KINDS)),
        dtype=np.int64, count=len(prose))
    rank[by_key] = np.arange(len(prose))
    keys = {}
    rows_out = []
    for s in range(0, len(todo), BATCH):
        part = todo[s:s + BATCH]
        rows = [(nid, key, node_terms(an, nw, name, text)) for nid, key, name, text in
                in_chunks(conn, "SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN ({})", part)]
        post.load(t for _, _, terms in rows for t in terms)
        for nid, key, terms in rows:
            keys[nid] = key
            found, bars[nid] = neighbours_bar(terms, nid, post, allowed, rank)
            rows_out.extend((nid, dst, sim) for dst, sim in found)
        if progress is not None:
            progress({"phase": "neighbors", "done": min(s + BATCH, len(todo)), "total": len(todo)})
    missing = sorted({d for _, d, _ in rows_out} - set(keys))
    keys.update(in_chunks(conn, "SELECT id, key FROM nodes WHERE id IN ({})", missing))
    conn.executemany("INSERT INTO edges(src, dst, ns, dst_name, type, weight) VALUES (?,?,?,?,?,?)",
                     [(a, b, "key", keys[b], EDGE_TYPE, round(w, 4)) for a, b, w in rows_out])
    ix.put_array(BAR_KEY, bars)
    changes.edges_changed = True
    seconds = time.perf_counter() - t0
    info = {"full": full, "nodes": len(todo), "edges": len(rows_out), "seconds": round(seconds, 3)}
    if why:
        info["reached_by"] = why         # (how many lists each rule of delta.affected added)
    ix.mark_derived("neighbors", seconds, info)
    return info
