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

Incremental runs give exactly the lists a fresh build computes (issue 13). A list depends on
global statistics: ``N`` (idf, the df window) and ``avgdl`` (every impact), both recorded in
:data:`STATE_KEY` with the BM25 parameters. When any of them changed since the last run (any
run that adds, removes or re-lengths a node, code included), every prose node's list is
recomputed: the cost of a full step (stdlib, 562 prose nodes over 75K nodes: about 0.5 s; it
grows with the prose nodes, about 1 ms each at 100K). When they did not (an edit that keeps
every length, a node that only changed kind), only the lists that can change are recomputed:
the touched prose nodes and every prose node holding a *changed term* (a term of an old or
new version of a changed node) whose df is in the window before or after; no other list
reads a changed posting, norm, idf or prose flag. Ties are broken by node key, never by
node id, so that an index updated in place (whose ids differ from a fresh build's) keeps the
same nodes at the K-th place.

Above ``neighbors_scaled.EXACT_MAX_NODES`` prose nodes (200K) the lists come from a near-linear
approximate kernel instead (:mod:`kgsearch.text.neighbors_scaled`; the run report says so, and
its incremental runs recompute only the lists of added and modified nodes: between full runs a
new node can be missing from an old node's list). Below it, everything above holds exactly.
"""
from __future__ import annotations

import logging
import math
import time
from collections import Counter

import numpy as np

from ..settings import IndexSettings
from ..store.sql import exec_in_chunks, in_chunks
from .idcodec import decode_ids, decode_ids_many, decode_tf
from .okapi import tf_impacts
from .postings import norms as _norms, norms_of as _norms_of, stored_params as _stored_params

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
    computed: a code tree's few prose nodes need a small part of its vocabulary)."""

    def __init__(self, ix, n_docs: int, lazy: bool = False):
        self.ix = ix
        self.n = n_docs
        self.max_df = max(50, int(0.05 * n_docs))
        self.lists: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
        self.asked: set[str] = set()
        self.st, self.params = _stored_params(ix)
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
        n_docs = self.n
        terms, idfs, ibs, tfs = [], [], [], []
        for term, df, ib, tb in rows:
            terms.append(term)
            idfs.append(math.log1p((n_docs - df + 0.5) / (df + 0.5)))
            ibs.append(ib)
            tfs.append(decode_tf(tb, df))
        if not terms:
            return
        # impacts from the stored term frequencies, all lists at once
        ids, off = decode_ids_many(ibs)
        imp = tf_impacts(np.concatenate(tfs), _norms_of(_norms(self.ix, self.st, self.params), ids), self.params.k1)
        bounds = off.tolist()
        for term, idf, s, e in zip(terms, idfs, bounds[:-1], bounds[1:]):
            self.lists[term] = (ids[s:e], imp[s:e], idf)


def _neighbours(terms: list[str], self_id: int, post: _Postings, allowed: np.ndarray | None = None,
                rank: np.ndarray | None = None) -> list[tuple[int, float]]:
    """Up to ``K`` (node id, similarity), best first; equal scores in ``rank`` order (by node
    id without it; ``rank`` covers every id ``allowed`` does)."""
    counts = Counter(t for t in terms if t in post.lists)
    if not counts:
        return []
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1] * post.lists[kv[0]][2], kv[0]))[:M]
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
        return []
    self_score = score[pos_self]
    if self_score <= 0:
        return []
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
    return out


def _state(st: dict, params, max_df: int) -> dict:
    return {"n": int(st["n"]), "avgdl": float(st["avgdl"]), "max_df": max_df, "params": params.index_key(),
            "ties": TIES}


def _affected(ix, changes, an, max_df: int, prose_set: set[int]) -> set[int] | None:
    """Prose nodes whose list can change when ``N`` and ``avgdl`` did not (see the module
    docstring); None when an old version is unknown (then everything is recomputed)."""
    conn = ix.conn
    old_count: Counter = Counter()
    for nid in set(changes.removed) | set(changes.modified):
        old = changes.old.get(nid)
        if old is None:
            return None
        old_count.update(set(an(old[0] or "")) | set(an(old[1] or "")))
    new_count: Counter = Counter()
    changed_nodes = sorted(set(changes.added) | set(changes.modified))
    for nid, name, text in in_chunks(conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({})",
                                     changed_nodes):
        new_count.update(set(an(name or "")) | set(an(text or "")))
    terms = sorted(set(old_count) | set(new_count))
    out = {i for i in changed_nodes if i in prose_set}
    for term, df, ib in in_chunks(conn, "SELECT term, df, ids FROM text_postings WHERE term IN ({})", terms):
        before = df - new_count.get(term, 0) + old_count.get(term, 0)
        if 2 <= df <= max_df or 2 <= before <= max_df:
            out.update(i for i in decode_ids(ib).tolist() if i in prose_set)
    return out


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
    n_docs = int(st["n"])
    max_df = max(50, int(0.05 * n_docs))
    state = _state(st, params, max_df)
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    prose_set = set(prose)
    full = bool(changes.full) or ix.meta_json(STATE_KEY) != state
    todo = prose
    if not full:
        affected = _affected(ix, changes, an, max_df, prose_set)
        full = affected is None or len(affected) > FULL_FRACTION * max(1, len(prose))
        if not full:
            todo = sorted(affected)
    before = conn.total_changes
    if full:
        _delete_edges(conn, None)
    else:
        gone = sorted(set(changes.removed))
        exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND src IN ({})",
                       sorted(set(todo) | set(gone)), before=[EDGE_TYPE])
        exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND dst IN ({})",
                       gone, before=[EDGE_TYPE])
        conn.execute("DELETE FROM edges WHERE type=? AND +file_id IS NULL AND dst IS NULL", (EDGE_TYPE,))
    ix.set_meta_json(STATE_KEY, state)
    if not todo:
        dropped = conn.total_changes - before
        if dropped:
            changes.edges_changed = True
        return {"full": full, "nodes": 0, "edges_dropped": dropped, "seconds": round(time.perf_counter() - t0, 3)}
    post = _Postings(ix, n_docs, lazy=True)
    allowed = np.zeros(max(prose) + 1, dtype=np.float64)
    allowed[prose] = 1.0
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
        rows = [(nid, key, an(name or "") * nw + an(text or "")) for nid, key, name, text in
                in_chunks(conn, "SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN ({})", part)]
        post.load(t for _, _, terms in rows for t in terms)
        for nid, key, terms in rows:
            keys[nid] = key
            for dst, sim in _neighbours(terms, nid, post, allowed, rank):
                rows_out.append((nid, dst, sim))
        if progress is not None:
            progress({"phase": "neighbors", "done": min(s + _SQL, len(todo)), "total": len(todo)})
    missing = sorted({d for _, d, _ in rows_out} - set(keys))
    keys.update(in_chunks(conn, "SELECT id, key FROM nodes WHERE id IN ({})", missing))
    conn.executemany("INSERT INTO edges(src, dst, ns, dst_name, type, weight) VALUES (?,?,?,?,?,?)",
                     [(a, b, "key", keys[b], EDGE_TYPE, round(w, 4)) for a, b, w in rows_out])
    changes.edges_changed = True
    seconds = time.perf_counter() - t0
    info = {"full": full, "nodes": len(todo), "edges": len(rows_out), "seconds": round(seconds, 3)}
    ix.mark_derived("neighbors", seconds, info)
    return info
