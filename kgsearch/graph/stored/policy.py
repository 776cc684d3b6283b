"""The graph's write side as one policy: :func:`apply` keeps the stored graph current.

The graph step (:mod:`kgsearch.graph.graph_step`) calls :func:`apply` once per index run. It
looks at what changed and picks one way to bring the stored forms (:mod:`.csr`: the CSR blobs;
:mod:`.rows`: per-node rows for big graphs) in line with the ``edges`` table:

1. **nothing**: no node added or removed, no edge changed, not a full run, the same edge-type
   weight table: the arrays stay (the entity-key meta is refreshed when a kind may have
   changed, and the rows are written or dropped when the threshold says so);
2. **patch** (:mod:`.patch`): the node set is the same and every changed row keeps its edge
   count: the rows that differ are written over the stored arrays in place, and ``rperm``
   moved over the stretch they touch (a one-file text change at 1M nodes: ~2,000 rows marked,
   a few rewritten);
3. **splice** (:mod:`.splice`): any other change of at most :data:`MAX_CHANGED_FRACTION` of
   the nodes: the stored arrays are rewritten one at a time around the changed rows, in place
   when their room to spare holds the new length (1M nodes: ~4 s and 260 MiB instead of 48.7 s
   and 1.78 GB for a rebuild);
   With adjacency rows (big graphs), a PageRank updated from the changed rows
   (:func:`~.scores.pagerank_local`) and communities that read no graph, the splice is
   **deferred** (:mod:`.lag`): rows, node arrays, shape and scores are current, the CSR lags
   at the changed sources until a run needs it or the lag passes :data:`~.lag.MAX_SOURCES`
   (1M nodes: an added edge took 1.1 s to splice and 0.5 s to commit);
4. **rebuild** (:mod:`.rebuild`): a full run, no stored graph, an edge-weight table change,
   changes not tracked (the ``begin`` hook did not run: an index stored before the graph), a
   graph step skipped in an earlier run that changed edges (:data:`~.track.NEEDS_FULL`), more
   than :data:`MAX_CHANGED_FRACTION` of the nodes changed, a stored array unreadable or of
   another version, or a change the splice cannot take: everything from the ``edges`` table.
   The step's info says why (``full_because``).

Which rows changed comes from the ``begin``/``end`` hooks of the step protocol (:mod:`.track`:
TEMP triggers on ``edges``), so the indexer reports nothing and reaches into nothing. After a
patch or a splice, the node arrays and meta (:func:`~.csr.write_nodes`), the per-node rows
(:func:`~.rows.sync`, the changed sources and their old and new targets), PageRank and the
communities (:mod:`.scores`) follow; a rebuild writes them from scratch. Every path leaves the
arrays a fresh build of the same index writes (tests compare: ``tests/graph/test_policy.py``,
``tests/graph/test_patch.py``, ``tests/indexer/test_incremental.py``), PageRank within
:data:`~.scores.PAGERANK_L1_BOUND` of it above :data:`~.scores.WARM_FROM` nodes, communities as
the drift rule says.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...settings import GraphSettings
from .. import entity_keys
from ..kernels.csr import BLOB_VERSION
from ..kernels.splice import splice_plan
from . import lag, rows
from .csr import PREFIX, StreamedGraph, write_graph, write_nodes
from .patch import patch_rows, unchanged_rows
from .read import read_nodes, read_sources
from .rebuild import check_budget, progress_step, rebuild
from .scores import communities, communities_need_graph, pagerank_local, pagerank_updated
from .splice import splice_stored
from .track import NEEDS_FULL, clear_dirty, dirty_sources, tracking

__all__ = ["apply", "MAX_CHANGED_FRACTION"]

MAX_CHANGED_FRACTION = 0.25      # changed rows above this share of the nodes: rebuild in full


def apply(ix, changes, gs: GraphSettings, table: dict[str, float], progress=None) -> dict:
    """Bring the stored graph in line with the nodes and edges after ``changes``: nothing, patch,
    splice or rebuild (see the module docstring). ``table``: the edge-type weights. Returns the
    step's info and records it (``derived('graph')``)."""
    t0 = time.perf_counter()
    have = ix.get_array(PREFIX + "shape") is not None
    structural = bool(changes.full or changes.edges_changed or changes.added or changes.removed
                      or ix.meta_json(NEEDS_FULL))
    if have and not structural and ix.meta_json(PREFIX + "edge_weights") == table:
        info = _unchanged(ix, changes, gs)
        ix.mark_derived("graph", time.perf_counter() - t0, info)
        return info
    check_budget(ix)
    with ix.transaction():
        info = None
        why_full = ("full run" if changes.full else "no stored graph" if not have else
                    "edge weights changed" if ix.meta_json(PREFIX + "edge_weights") != table else
                    "" if tracking(ix.conn) else "changes not tracked")
        nodes = read_nodes(ix.conn)
        if not why_full:
            progress_step(progress, "csr")
            got = _incremental(ix, changes, table, gs, *nodes)
            if isinstance(got, str):
                why_full = got
            else:
                info = got
        if info is None:
            info = rebuild(ix, changes, table, gs, nodes, progress)
            lag.clear(ix)
            info["full_because"] = why_full
        entity_keys.update(ix, None if why_full else changes)
        clear_dirty(ix.conn)
        ix.set_meta_json(NEEDS_FULL, None)
        info["seconds"] = round(time.perf_counter() - t0, 3)
        ix.mark_derived("graph", info["seconds"], info)
    return info


def _unchanged(ix, changes, gs: GraphSettings) -> dict:
    """Path 1: the arrays stay; the entity-key meta and the per-node rows catch up if needed."""
    clear_dirty(ix.conn)                         # (rows rewritten as they were)
    info: dict[str, Any] = {"rebuilt": False, "reason": "graph unchanged"}
    known = ix.meta_json(entity_keys.META) is not None
    if not known or changes.modified:             # (an index stored before the meta; a kind changed)
        with ix.transaction():
            entity_keys.update(ix, changes if known else None)
    if _rows_due(ix, gs):                         # (an index stored before the rows, or a new threshold)
        with ix.transaction():
            g = lag.load_graph(ix, ix.get_array)
            if ix.meta_json(lag.META) is not None:   # (rows going: the CSR must be the graph again)
                write_graph(ix, g)
                lag.clear(ix)
            info["adjacency_rows"] = rows.sync(ix, g, ix.get_array(PREFIX + "node_ids"), gs.graph_adjacency_rows)
    return info


def _rows_due(ix, gs: GraphSettings) -> bool:
    """The stored graph's adjacency rows are missing, or stored while below the threshold."""
    shape = ix.get_array(PREFIX + "shape")
    if shape is None or len(shape) != 3:
        return False
    return (int(shape[2]) >= gs.graph_adjacency_rows) != (rows.stored_meta(ix) is not None)


def _incremental(ix, changes, table: dict, gs: GraphSettings, ids: np.ndarray, kinds: np.ndarray,
                 kind_names: list[str]) -> dict[str, Any] | str:
    """Paths 2 and 3: the changed rows patched in place, else spliced in, or the splice
    deferred (:mod:`.lag`). Returns the step's info, or a string saying why a rebuild is needed
    instead (the caller then rewrites every blob: a partial write is replaced)."""
    conn = ix.conn
    t = time.perf_counter()
    if ix.meta_json(NEEDS_FULL):
        return "edges changed in a run that skipped the graph step"
    prev_ids = ix.get_array(PREFIX + "node_ids")       # (the graph's nodes before this run)
    etypes = ix.meta_json(PREFIX + "etypes")
    if prev_ids is None or etypes is None:
        return "no stored graph"
    if not len(prev_ids):       # (an empty folder indexed first, or every root removed: no row to patch or
        return "the stored graph has no node"   # splice around; the kernels index the old rows)
    tracked = dirty_sources(conn)
    if len(tracked) > MAX_CHANGED_FRACTION * max(len(ids), 1):
        return f"{len(tracked)} changed rows > {MAX_CHANGED_FRACTION:g} of the nodes"
    shape = ix.get_array(PREFIX + "shape")
    if shape is None or len(shape) != 3 or int(shape[0]) != BLOB_VERSION:
        return "stored graph unreadable (missing or another version)"
    if int(shape[1]) != len(prev_ids):
        return "stored graph and node ids disagree"
    try:
        behind = lag.read(ix)
    except ValueError as exc:
        return str(exc)
    # the CSR's own node set and edge count (the graph's, unless it lags)
    csr_ids = prev_ids if behind is None else behind["ids"]
    m_old = int(shape[2]) if behind is None else behind["m"]
    old_indptr = ix.get_array(PREFIX + "indptr")
    if old_indptr is None or len(old_indptr) != len(csr_ids) + 1 or int(old_indptr[-1]) != m_old:
        return "stored graph unreadable (blob indptr)"
    etypes = list(etypes)
    info: dict[str, Any] = {"rebuilt": True, "incremental": True}
    try:
        src, dst, w, et = read_sources(conn, tracked, ids, etypes, table)
        same = None if behind is not None else patch_rows(ix, old_indptr, ids, csr_ids, tracked, src, dst, w, et,
                                                        len(etypes), m_old)
        edges_same = same is not None and not len(same["rows"])
        t_pr = time.perf_counter()          # (from the changed rows, before the rows are rewritten)
        old_out = None if edges_same else rows.out_edges(ix, tracked)       # (None: no rows)
        local = not edges_same and pagerank_local(ix, ids, prev_ids, tracked, (src, dst, w), info, old_out)
        t_pr = time.perf_counter() - t_pr
        if same is None and local:
            deferred = _defer(ix, changes, gs, ids, kinds, kind_names, etypes, table, prev_ids, csr_ids, m_old,
                              old_indptr, shape, behind, tracked, src, dst, w, et, old_out, info)
            if deferred is not None:
                info["pagerank_seconds"] = round(t_pr, 3)
                info["csr_seconds"] = round(time.perf_counter() - t - t_pr, 3)
                return deferred
        if same is None:
            dirty = tracked if behind is None else np.union1d(tracked, behind["sources"])
            if behind is not None:
                src, dst, w, et = read_sources(conn, dirty, ids, etypes, table)
            dirty = np.unique(np.asarray(dirty, dtype=np.int64))
            kept = unchanged_rows(ix, old_indptr, csr_ids, ids, dirty, src, dst, w, et, m_old)
            if kept.any():                 # rows reloaded as they were stay where they are
                dirty = dirty[~kept]
                live = np.isin(src, dirty)
                src, dst, w, et = src[live], dst[live], w[live], et[live]
            plan = splice_plan(old_indptr, csr_ids, ids, dirty, src, dst, w, et)
            rindptr, outw, pairs, nbytes = splice_stored(ix, plan, etypes, m_old)
            lag.clear(ix)
    except ValueError as exc:
        return f"the change could not be spliced in ({exc})"
    old_comm = ix.get_array(PREFIX + "community")
    if same is not None:             # rows rewritten in place: same nodes, same row pointers
        n, m, indptr, rindptr, outw = len(ids), m_old, old_indptr, same["rindptr"], None
        remap = np.arange(n)
        if same["moved"]:
            ix.put_array(PREFIX + "rindptr", rindptr)
        removed_edges = added_edges = same["edges"]
        nbytes = same["edges"] * 9 + same["moved"] * 4
        pairs = 0                    # (a lower bound: the communities' check takes the last count)
        dirty = ids[same["rows"]]    # (the rows whose edges differ)
    else:
        n, m, indptr = plan["n"], plan["m"], plan["indptr"]
        # old score positions -> new ones (the CSR's positions were the graph's unless it lagged)
        remap = plan["remap"] if behind is None else _positions(prev_ids, ids)
        gone = np.flatnonzero(~plan["keep_row"])       # changed or removed rows: their edges went
        removed_edges = int((old_indptr[gone + 1].astype(np.int64) - old_indptr[gone]).sum())
        added_edges = len(src)
        del plan
    del old_indptr
    g = StreamedGraph(ix, n, m, indptr, rindptr, etypes)
    info.update({"changed_rows": int(len(dirty)), "changed_edges": int(added_edges), "nodes": g.n, "edges": g.m,
                 "edge_types": len(etypes), "csr_mb": round(nbytes / 1e6, 3),
                 "csr_seconds": round(time.perf_counter() - t - t_pr, 3)})
    if same is not None:
        info["in_place"] = f"{len(same['rows'])} rows rewritten, {same['moved']} edges moved target"
    elif behind is not None:
        info["lag_spliced"] = int(len(behind["sources"]))
    write_nodes(ix, ids, kinds, kind_names, etypes, table)
    info["adjacency_rows"] = rows.sync(ix, g, ids, gs.graph_adjacency_rows, prev_ids, dirty, (etypes, table))

    t = time.perf_counter()
    if not local:
        pagerank_updated(ix, g, prev_ids, remap, outw, edges_same, info)
    info["pagerank_seconds"] = round(time.perf_counter() - t + t_pr, 3)
    t = time.perf_counter()
    communities(ix, g, ids, prev_ids, old_comm, changes, gs, info, changed_edges=removed_edges + added_edges,
                pairs_at_least=pairs)
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info


def _positions(old_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Old position -> new position of each of ``old_ids`` in ``ids`` (-1: gone)."""
    if not len(ids):
        return np.full(len(old_ids), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(ids, old_ids), len(ids) - 1)
    return np.where(ids[at] == old_ids, at, -1)


def _edge_difference(a: tuple, b: tuple) -> int:
    """How many of the edges ``(source, target, float32 weight)`` are in one list and not the
    other (as multisets)."""
    dt = np.dtype([("s", "<i8"), ("t", "<i8"), ("w", "<u4")])

    def keys(e):
        k = np.empty(len(e[0]), dtype=dt)
        k["s"], k["t"], k["w"] = e[0], e[1], np.asarray(e[2], dtype=np.float32).view(np.uint32)
        return np.unique(k, return_counts=True)
    (ua, ca), (ub, cb) = keys(a), keys(b)
    _, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    return int(ca.sum() + cb.sum() - 2 * np.minimum(ca[ia], cb[ib]).sum())


def _defer(ix, changes, gs: GraphSettings, ids, kinds, kind_names, etypes, table, prev_ids, csr_ids, m_old,
           old_indptr, shape, behind, tracked, src, dst, w, et, old_out, info) -> dict | None:
    """The splice deferred (:mod:`.lag`) when the rows are stored and stay so, the lag stays
    within :data:`~.lag.MAX_SOURCES` and the communities read no graph; PageRank was updated
    already. Returns the step's info, or None (splice now)."""
    meta = rows.stored_meta(ix)
    if meta is None or old_out is None or rows.id_dtype(ids) != meta["id_dtype"]:
        return None
    # the edge count now: the last one, less the changed sources' stored rows, plus their new ones
    m_new = int(shape[2]) - len(old_out[0]) + len(src)
    if m_new < gs.graph_adjacency_rows:
        return None
    old_comm = ix.get_array(PREFIX + "community")
    # (edges that differ, not every edge of a reloaded file: each bounds the pair count's change)
    moved = _edge_difference(old_out, (src, dst, w))
    if communities_need_graph(ix, ids, prev_ids, old_comm, changes, gs, moved):
        return None
    stale = tracked if behind is None else np.union1d(tracked, behind["sources"])
    stale = np.unique(np.asarray(stale, dtype=np.int64))
    if len(stale) > lag.MAX_SOURCES:
        return None
    if behind is not None:                     # (whose rows are back to what the CSR holds)
        s2, d2, w2, e2 = read_sources(ix.conn, stale, ids, list(etypes), table)
    else:
        s2, d2, w2, e2 = src, dst, w, et
    stale = stale[~unchanged_rows(ix, old_indptr, csr_ids, ids, stale, s2, d2, w2, e2, m_old)]
    if len(stale):
        lag.write(ix, csr_ids, stale, m_old)
    else:
        lag.clear(ix)
    write_nodes(ix, ids, kinds, kind_names, etypes, table)
    ix.put_array(PREFIX + "shape", np.array([BLOB_VERSION, len(ids), m_new], dtype=np.int64))
    info.update({"changed_rows": int(len(tracked)), "changed_edges": int(len(src)), "nodes": len(ids),
                 "edges": m_new, "edge_types": len(etypes), "csr_mb": 0.0,
                 "csr": f"splice deferred: {len(stale)} CSR rows lag (spliced past {lag.MAX_SOURCES})"})
    size = rows.Size(len(ids), m_new)
    info["adjacency_rows"] = f"rewrote {rows.update_rows(ix, size, ids, prev_ids, tracked, (etypes, table))} nodes"
    t = time.perf_counter()
    communities(ix, None, ids, prev_ids, old_comm, changes, gs, info, changed_edges=moved, pairs_at_least=0)
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info
