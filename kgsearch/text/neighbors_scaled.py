"""The ``neighbors`` step above :data:`EXACT_MAX_NODES` prose nodes: near-linear, never skipped.

The exact step (:mod:`kgsearch.text.neighbors`) scores every posting of a node's ``M`` most
distinctive terms; the lists grow with N, so its cost grows as ~N^1.8-1.9 (369 of 480 s of a
300K-node build; about 8600 s CPU estimated at 1M), and it used to be skipped above 300K
prose nodes, silently dropping the ``similar_text`` graph signal for large indexes.

Above :data:`EXACT_MAX_NODES` prose nodes it now runs the two-stage capped kernel
(:func:`kgsearch.text.neighbors_capped.neighbours_two_stage`, cap :data:`CAP`): each term's
:data:`CAP` strongest postings choose the candidates, which are then scored exactly over the
chosen terms' whole lists. The work per node is flat (1.45 / 1.61 / 1.63 ms CPU at 100K /
300K / 1M here), so the step is linear. It is an approximation: about 0.94-0.97 of the exact
lists' entries (measured at 100K / 300K / 1M, ``bench/results/scale_study/neighbors-*.md``);
nDCG@10 on the 100K scaling corpus +0.0024. The run report says so: ``notice`` (printed by
``kgsearch index`` as a note) and ``method`` in the step's info. At or below the limit (every
set in ``../shared/bench``, a few thousand nodes) the exact step runs as before.

It scores with the exact step's grid statistics (:class:`kgsearch.text.neighbors_delta.Stats`;
lists an older kgsearch stored used the live ones and are replaced as their nodes change).
Incremental runs recompute the lists of added and modified prose nodes, keep a modified node
in the lists that hold it (with its weight before the edit; dropping it left each such list a
neighbour short for good), drop the edges of removed ones, and recompute everything when more
than ``FULL_FRACTION`` of the prose nodes changed. They read only the postings of the recomputed
nodes' terms (the result is the same as with every list in memory: a node's kernel only looks
at its own terms' lists).
"""
from __future__ import annotations

import time

import numpy as np

from ..store.sql import exec_in_chunks
from . import neighbors as nb
from .neighbors_capped import TwoStagePostings, neighbours_two_stage
from .neighbors_delta import Stats

__all__ = ["EXACT_MAX_NODES", "CAP", "update_scaled", "method_note"]

EXACT_MAX_NODES = 200_000    # prose nodes up to which the exact step runs (it is faster below ~150K)
CAP = 256                    # candidates per term


def method_note(n_prose: int) -> str:
    return (f"approximate similar_text lists: {n_prose} prose nodes > {EXACT_MAX_NODES}, so each term's "
            f"{CAP} strongest postings choose the candidates (about 0.94-0.97 of the exact lists)")


def update_scaled(ix, changes, prose: list[int], st: dict, params, progress=None) -> dict:
    """The ``neighbors`` step for many prose nodes (see the module docstring)."""
    t0 = time.perf_counter()
    conn = ix.conn
    prose_arr = np.asarray(prose, dtype=np.int64)

    def is_prose(ids) -> list[int]:
        ids = np.asarray(sorted(set(ids)), dtype=np.int64)
        if not len(ids) or not len(prose_arr):
            return []
        at = np.minimum(np.searchsorted(prose_arr, ids), len(prose_arr) - 1)
        return ids[prose_arr[at] == ids].tolist()

    touched = is_prose(list(changes.added) + list(changes.modified))
    have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (nb.EDGE_TYPE,)).fetchone()
    full = bool(changes.full) or not have or len(touched) > nb.FULL_FRACTION * max(1, len(prose))
    if not full and not touched and not changes.removed:
        return {"rebuilt": False, "method": f"two-stage cap {CAP}"}
    if full:
        nb._delete_edges(conn, None)
        todo = prose
    else:
        before = conn.total_changes
        # the lists that hold an edited node keep it (with its weight before the edit): deleting
        # those entries left each such list a neighbour short for good, and at 1M the rows'
        # changed lengths made the graph step splice every edge array. Recomputing those lists
        # instead loads their terms' whole postings (47 MB, +210 MiB peak, +1.9 s at 1M).
        todo = touched
        gone = sorted(set(changes.removed))
        exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND src IN ({})",
                       sorted(set(todo) | set(gone) | set(changes.modified)), before=[nb.EDGE_TYPE])
        nb._delete_edges(conn, gone)            # (and edges into removed nodes, their dst now NULL)
        if not todo:
            dropped = conn.total_changes - before
            if dropped:
                changes.edges_changed = True
            return {"full": False, "nodes": 0, "edges_dropped": dropped, "method": f"two-stage cap {CAP}",
                    "seconds": round(time.perf_counter() - t0, 3)}
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    texts: dict[int, tuple[str, list[str]]] = {}

    def analyse(part):
        out = []
        rows = conn.execute(f"SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN ({','.join('?' * len(part))})",
                            part).fetchall()
        for nid, key, name, text in rows:
            out.append((nid, key, an(name or "") * nw + an(text or "")))
        return out

    stats = Stats.of(st)                       # (the exact step's grid statistics)
    if full:
        post = TwoStagePostings(ix, int(st["n"]), cap=CAP, stats=stats)
    else:                                     # only the changed nodes' terms' lists
        for s in range(0, len(todo), nb._SQL):
            for nid, key, terms in analyse(todo[s:s + nb._SQL]):
                texts[nid] = (key, terms)
        post = TwoStagePostings(ix, int(st["n"]), cap=CAP, stats=stats,
                                terms={t for _, terms in texts.values() for t in terms})
    allowed = np.zeros(max(prose) + 1 if prose else 0, dtype=np.float64)
    allowed[prose] = 1.0
    n_edges = 0
    for s in range(0, len(todo), nb._SQL):      # written batch by batch: memory stays flat
        part = todo[s:s + nb._SQL]
        batch = [(nid, *texts[nid]) for nid in part if nid in texts] if texts else analyse(part)
        rows_out = []
        for nid, key, terms in batch:
            for dst, sim in neighbours_two_stage(terms, nid, post, allowed):
                rows_out.append((nid, dst, sim))
        dsts = sorted({d for _, d, _ in rows_out})
        keys: dict[int, str] = {}
        for a in range(0, len(dsts), nb._SQL):
            ids = dsts[a:a + nb._SQL]
            keys.update(conn.execute(f"SELECT id, key FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids))
        conn.executemany("INSERT INTO edges(src, dst, ns, dst_name, type, weight) VALUES (?,?,?,?,?,?)",
                         [(a, b, "key", keys[b], nb.EDGE_TYPE, round(w, 4)) for a, b, w in rows_out])
        n_edges += len(rows_out)
        if progress is not None:
            progress({"phase": "neighbors", "done": min(s + nb._SQL, len(todo)), "total": len(todo)})
    lists_mb = round(post.nbytes / 1e6, 1)
    changes.edges_changed = True
    seconds = time.perf_counter() - t0
    info = {"full": full, "nodes": len(todo), "edges": n_edges, "seconds": round(seconds, 3),
            "method": f"two-stage cap {CAP}", "lists_mb": lists_mb, "notice": method_note(len(prose))}
    ix.mark_derived("neighbors", seconds, info)
    return info
