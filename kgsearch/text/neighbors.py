"""Derived step ``neighbors``: a text-similarity graph over prose nodes (``similar_text`` edges).

Plain documents have no links, yet documents that share rare terms are related; measured on
the shared benchmark sets, smoothing scores over such a neighbour graph was the strongest
single add-on to BM25 (bench/README.md). This step gives every prose node (not code symbols,
not shared tag/entity nodes) up to ``K`` out-edges ``similar_text`` to the nodes that score
highest when its own ``M`` most distinctive terms are used as a BM25 query. Edge weight =
that score divided by the node's score against itself, in (0, 1]. The graph step then treats
them like any typed edge (proximity, PageRank, communities); their type weight is in
``config.EDGE_WEIGHTS``.

Terms used: ``2 <= df <= max(50, 5% of N)`` (a term in one document links nothing; a common
term links everything), ranked by ``tf * idf`` within the node.

Incremental runs give exactly the lists a fresh build computes (issue 13), and recompute only
the lists a change can reach (issue 16): the step scores with N, avgdl and dfs rounded to a
geometric grid, and stores each list's entry bar, the score a new candidate must reach to enter
it (:mod:`kgsearch.text.neighbors_delta`, which says what is recomputed and why). A one-word
edit at 100K prose nodes recomputed every list (113 s); now the lists that can change. When
the grid values, the BM25 parameters or the tie rule differ from those the stored lists were
computed with (:data:`STATE_KEY`), or more than ``FULL_FRACTION`` of the prose nodes are
reached, every list is recomputed. Ties are broken by node key, never by node id, so that an
index updated in place (whose ids differ from a fresh build's) keeps the same nodes at the
K-th place.

Above ``neighbors_scaled.EXACT_MAX_NODES`` prose nodes (200K) the lists come from a near-linear
approximate kernel instead (:mod:`kgsearch.text.neighbors_scaled`; the run report says so, and
its incremental runs recompute only the lists of added and modified nodes: between full runs a
new node can be missing from an old node's list). Below it, everything above holds exactly.
"""
from __future__ import annotations

import logging
import time
from collections import Counter

import numpy as np

from ..settings import IndexSettings
from ..store.sql import exec_in_chunks, in_chunks
from .idcodec import decode_ids_many, decode_tf
from .neighbors_delta import BAR_KEY, Stats, affected as _affected, load_bars, node_terms, query_terms
from .okapi import tf_impacts
from .postings import load_norms, norms_of as _norms_of, stored_params as _stored_params

__all__ = ["NAME", "update", "EDGE_TYPE", "K", "M", "STATE_KEY"]

NAME = "neighbors"

log = logging.getLogger(__name__)

EDGE_TYPE = "similar_text"
K = 10                       # neighbours per node
M = 24                       # distinctive terms per node used as its query
MIN_SIM = 0.05               # drop weaker neighbours
FULL_FRACTION = 0.2          # more affected prose nodes than this share: one full pass instead
STATE_KEY = "text.neighbors"  # the statistics the stored lists were computed with
TIES = "key"                 # how ties at the K-th place are broken (recorded in the state)
CODE_KINDS = ("module", "class", "function", "method")
_SQL = 500


def _prose_ids(conn) -> list[int]:
    """Ids of the prose nodes, ascending: one ``group_concat`` parsed by numpy (a Python row per
    node took 0.48-0.59 s at 1M nodes, this 0.30-0.34 s; most of it is SQLite's scan)."""
    marks = ",".join("?" * len(CODE_KINDS))
    text = conn.execute(f"SELECT group_concat(id) FROM (SELECT id FROM nodes WHERE flags & 1 = 0 "
                        f"AND kind NOT IN ({marks}) ORDER BY id)", CODE_KINDS).fetchone()[0]
    return np.fromstring(text, dtype=np.int64, sep=",").tolist() if text else []


def _delete_edges(conn, ids: list[int] | None) -> None:
    if ids is None:
        conn.execute("DELETE FROM edges WHERE type=? AND file_id IS NULL", (EDGE_TYPE,))
        return
    # (``+file_id``: not by the file_id index, which SQLite prefers without statistics and
    # which lists every similar_text edge, 10M at 1M nodes, 2-4 s; by src/dst instead)
    exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND (src IN ({}) OR dst IN ({}))",
                   ids, before=[EDGE_TYPE], repeat=2)
    conn.execute("DELETE FROM edges WHERE type=? AND +file_id IS NULL AND dst IS NULL", (EDGE_TYPE,))


class _Postings:
    """Rare-term postings held in memory for one run: every window term's (``lazy=False``), or
    only those that :meth:`load` is asked for (the terms of the nodes whose lists are
    computed: a code tree's few prose nodes need a small part of its vocabulary). Scored with
    ``stats`` (the step's grid statistics); without it, with the live N and avgdl."""

    def __init__(self, ix, n_docs: int, lazy: bool = False, stats: Stats | None = None):
        self.ix = ix
        self.st, self.params = _stored_params(ix)
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
        imp = tf_impacts(np.concatenate(tfs), _norms_of(self._norms, ids), self.params.k1)
        bounds = off.tolist()
        for term, idf, s, e in zip(terms, idfs, bounds[:-1], bounds[1:]):
            self.lists[term] = (ids[s:e], imp[s:e], idf)


def _neighbours(terms: list[str], self_id: int, post: _Postings, allowed: np.ndarray | None = None,
                rank: np.ndarray | None = None) -> list[tuple[int, float]]:
    """Up to ``K`` (node id, similarity), best first; equal scores in ``rank`` order (by node
    id without it; ``rank`` covers every id ``allowed`` does)."""
    return _neighbours_bar(terms, self_id, post, allowed, rank)[0]


def _neighbours_bar(terms: list[str], self_id: int, post: _Postings, allowed: np.ndarray | None = None,
                    rank: np.ndarray | None = None) -> tuple[list[tuple[int, float]], float]:
    """:func:`_neighbours` and the list's entry bar: the score another candidate must reach to
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


def _state(stats: Stats, params) -> dict:
    return {**stats.key(), "params": params.index_key(), "ties": TIES}


def update(ix, changes, settings=None, progress=None) -> dict:
    """Maintain ``similar_text`` edges for ``changes`` (see the module docstring)."""
    t0 = time.perf_counter()
    conn = ix.conn
    if not IndexSettings.coerce(settings).graph.neighbors:
        had = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
        if had:
            _delete_edges(conn, None)
            changes.edges_changed = True
        ix.set_meta_json(STATE_KEY, None)
        return {"skipped": "neighbors=false in settings"}
    st, params = _stored_params(ix)
    if st is None:
        return {"skipped": "no text index"}
    have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
    if have and not (changes.full or changes.added or changes.modified or changes.removed) \
            and ix.meta_json(STATE_KEY, None) is not None:
        return {"rebuilt": False}               # (before listing the prose nodes: 1.4 s at 1M)
    prose = _prose_ids(conn)
    from . import neighbors_scaled              # (it imports this module)
    if len(prose) > neighbors_scaled.EXACT_MAX_NODES:    # near-linear, approximate: says so
        ix.set_meta_json(STATE_KEY, {"method": "scaled"})  # (back below the limit: one exact full pass)
        return neighbors_scaled.update_scaled(ix, changes, prose, st, params, progress)
    if not changes.full and not changes.nodes_changed and ix.meta_json(STATE_KEY):
        return {"rebuilt": False}
    stats = Stats.of(st)
    state = _state(stats, params)
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    post = _Postings(ix, int(st["n"]), lazy=True, stats=stats)
    allowed = np.zeros(max(prose, default=-1) + 1, dtype=np.float64)
    allowed[prose] = 1.0
    full = bool(changes.full) or ix.meta_json(STATE_KEY) != state
    bars = None if full else load_bars(ix, len(allowed))
    full = full or bars is None
    todo = prose
    why: dict = {}
    if not full:
        reached = _affected(ix, changes, an, post, stats, allowed, bars, EDGE_TYPE, why, nw, M)
        full = reached is None or len(reached) > FULL_FRACTION * max(1, len(prose))
        if not full:
            todo = sorted(reached)
    if full:
        bars = np.full(len(allowed), -np.inf)
    before = conn.total_changes
    if full:
        _delete_edges(conn, None)
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
        f"SELECT id FROM nodes WHERE flags & 1 = 0 AND kind NOT IN ({marks}) ORDER BY key", CODE_KINDS)),
        dtype=np.int64, count=len(prose))
    rank[by_key] = np.arange(len(prose))
    keys = {}
    rows_out = []
    for s in range(0, len(todo), _SQL):
        part = todo[s:s + _SQL]
        rows = [(nid, key, node_terms(an, nw, name, text)) for nid, key, name, text in
                in_chunks(conn, "SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN ({})", part)]
        post.load(t for _, _, terms in rows for t in terms)
        for nid, key, terms in rows:
            keys[nid] = key
            found, bars[nid] = _neighbours_bar(terms, nid, post, allowed, rank)
            rows_out.extend((nid, dst, sim) for dst, sim in found)
        if progress is not None:
            progress({"phase": "neighbors", "done": min(s + _SQL, len(todo)), "total": len(todo)})
    missing = sorted({d for _, d, _ in rows_out} - set(keys))
    keys.update(in_chunks(conn, "SELECT id, key FROM nodes WHERE id IN ({})", missing))
    conn.executemany("INSERT INTO edges(src, dst, ns, dst_name, type, weight) VALUES (?,?,?,?,?,?)",
                     [(a, b, "key", keys[b], EDGE_TYPE, round(w, 4)) for a, b, w in rows_out])
    ix.put_array(BAR_KEY, bars)
    changes.edges_changed = True
    seconds = time.perf_counter() - t0
    info = {"full": full, "nodes": len(todo), "edges": len(rows_out), "seconds": round(seconds, 3)}
    if why:
        info["reached_by"] = why         # (how many lists each rule of neighbors_delta added)
    ix.mark_derived("neighbors", seconds, info)
    return info
