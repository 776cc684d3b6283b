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

Above ``neighbors_scaled.EXACT_MAX_NODES`` prose nodes (200K) the lists come from a near-linear
approximate kernel instead (:mod:`kgsearch.text.neighbors_scaled`; the run report says so).

Incremental runs recompute the neighbours of added and modified nodes and drop edges that
touch removed ones; the lists of other nodes are refreshed only when more than 20 % of the
prose nodes changed (a full recompute), so between full runs a new node can be missing from
an old node's list (it still has its own list and its in-edges from new nodes).
"""
from __future__ import annotations

import logging
import math
import time
from collections import Counter

import numpy as np

from ..settings import IndexSettings
from ..store.sql import exec_in_chunks, in_chunks
from .idcodec import decode_ids_many, decode_tf
from .okapi import tf_impacts
from .postings import norms as _norms, norms_of as _norms_of, stored_params as _stored_params

__all__ = ["NAME", "update", "EDGE_TYPE", "K", "M"]

NAME = "neighbors"

log = logging.getLogger(__name__)

EDGE_TYPE = "similar_text"
K = 10                       # neighbours per node
M = 24                       # distinctive terms per node used as its query
MIN_SIM = 0.05               # drop weaker neighbours
FULL_FRACTION = 0.2
CODE_KINDS = ("module", "class", "function", "method")
_SQL = 500


def _prose_ids(conn) -> list[int]:
    marks = ",".join("?" * len(CODE_KINDS))
    return [r[0] for r in conn.execute(
        f"SELECT id FROM nodes WHERE flags & 1 = 0 AND kind NOT IN ({marks}) ORDER BY id", CODE_KINDS)]


def _delete_edges(conn, ids: list[int] | None) -> None:
    if ids is None:
        conn.execute("DELETE FROM edges WHERE type=? AND file_id IS NULL", (EDGE_TYPE,))
        return
    exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND file_id IS NULL AND (src IN ({}) OR dst IN ({}))",
                   ids, before=[EDGE_TYPE], repeat=2)
    conn.execute("DELETE FROM edges WHERE type=? AND file_id IS NULL AND dst IS NULL", (EDGE_TYPE,))


class _Postings:
    """Rare-term postings held in memory for one run."""

    def __init__(self, ix, n_docs: int):
        self.n = n_docs
        self.max_df = max(50, int(0.05 * n_docs))
        self.lists: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
        st, params = _stored_params(ix)
        terms, idfs, ibs, tfs = [], [], [], []
        for term, df, ib, tb in ix.conn.execute("SELECT term, df, ids, tf FROM text_postings "
                                                "WHERE df >= 2 AND df <= ?", (self.max_df,)):
            terms.append(term)
            idfs.append(math.log1p((n_docs - df + 0.5) / (df + 0.5)))
            ibs.append(ib)
            tfs.append(decode_tf(tb, df))
        if not terms:
            return
        # impacts from the stored term frequencies, all lists at once
        ids, off = decode_ids_many(ibs)
        imp = tf_impacts(np.concatenate(tfs), _norms_of(_norms(ix, st, params), ids), params.k1)
        bounds = off.tolist()
        for term, idf, s, e in zip(terms, idfs, bounds[:-1], bounds[1:]):
            self.lists[term] = (ids[s:e], imp[s:e], idf)


def _neighbours(terms: list[str], self_id: int, post: _Postings, allowed: np.ndarray | None = None
                ) -> list[tuple[int, float]]:
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
    u, inv = np.unique(all_ids, return_inverse=True)
    score = np.bincount(inv, weights=all_vals)
    pos_self = np.searchsorted(u, self_id)
    if pos_self >= len(u) or u[pos_self] != self_id:
        return []
    self_score = score[pos_self]
    if self_score <= 0:
        return []
    score[pos_self] = 0.0
    if allowed is not None:            # neighbours are prose nodes too (not tags, entities, code)
        inside = u < len(allowed)
        score[~inside] = 0.0
        score[inside] *= allowed[u[inside]]
    k = min(K, len(u))
    top = np.argpartition(-score, k - 1)[:k] if k < len(u) else np.arange(len(u))
    top = top[np.lexsort((u[top], -score[top]))]
    out = []
    for i in top:
        sim = float(score[i] / self_score)
        if sim >= MIN_SIM:
            out.append((int(u[i]), min(sim, 1.0)))
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
        return {"skipped": "neighbors=false in settings"}
    st, params = _stored_params(ix)
    if st is None:
        return {"skipped": "no text index"}
    have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
    if have and not (changes.full or changes.added or changes.modified or changes.removed):
        return {"rebuilt": False}               # (before listing the prose nodes: 1.4 s at 1M)
    prose = _prose_ids(conn)
    from . import neighbors_scaled              # (it imports this module)
    if len(prose) > neighbors_scaled.EXACT_MAX_NODES:    # near-linear, approximate: says so
        return neighbors_scaled.update_scaled(ix, changes, prose, st, params, progress)
    prose_set = set(prose)
    touched = [i for i in set(changes.added) | set(changes.modified) if i in prose_set]
    have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
    full = bool(changes.full) or not have or len(touched) > FULL_FRACTION * max(1, len(prose))
    if not full and not touched and not changes.removed:
        return {"rebuilt": False}
    if full:
        _delete_edges(conn, None)
        todo = prose
    else:
        before = conn.total_changes
        _delete_edges(conn, sorted(set(touched) | set(changes.removed)))
        todo = sorted(touched)
        if not todo:                    # only removals (code nodes, say): no postings to read
            dropped = conn.total_changes - before
            if dropped:
                changes.edges_changed = True
            return {"full": False, "nodes": 0, "edges_dropped": dropped,
                    "seconds": round(time.perf_counter() - t0, 3)}
    post = _Postings(ix, int(st["n"]))
    allowed = np.zeros(max(prose) + 1 if prose else 0, dtype=np.float64)
    allowed[prose] = 1.0
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    keys = {}
    rows_out = []
    for s in range(0, len(todo), _SQL):
        part = todo[s:s + _SQL]
        rows = in_chunks(conn, "SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN ({})", part)
        for nid, key, name, text in rows:
            keys[nid] = key
            terms = an(name or "") * nw + an(text or "")
            for dst, sim in _neighbours(terms, nid, post, allowed):
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
