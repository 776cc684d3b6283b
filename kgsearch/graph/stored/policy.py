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
from . import rows
from .csr import PREFIX, StreamedGraph, load_graph, write_nodes
from .patch import patch_rows, unchanged_rows
from .read import read_nodes, read_sources
from .rebuild import check_budget, progress_step, rebuild
from .scores import communities, pagerank_local, pagerank_updated
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
            g = load_graph(ix, ix.get_array)
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
    """Paths 2 and 3: the changed rows patched in place, else spliced in. Returns the step's
    info, or a string saying why a rebuild is needed instead (the caller then rewrites every
    blob: a partial write is replaced)."""
    conn = ix.conn
    t = time.perf_counter()
    if ix.meta_json(NEEDS_FULL):
        return "edges changed in a run that skipped the graph step"
    old_ids = ix.get_array(PREFIX + "node_ids")
    etypes = ix.meta_json(PREFIX + "etypes")
    if old_ids is None or etypes is None:
        return "no stored graph"
    dirty = dirty_sources(conn)
    if len(dirty) > MAX_CHANGED_FRACTION * max(len(ids), 1):
        return f"{len(dirty)} changed rows > {MAX_CHANGED_FRACTION:g} of the nodes"
    shape = ix.get_array(PREFIX + "shape")
    if shape is None or len(shape) != 3 or int(shape[0]) != BLOB_VERSION:
        return "stored graph unreadable (missing or another version)"
    if int(shape[1]) != len(old_ids):
        return "stored graph and node ids disagree"
    m_old = int(shape[2])
    old_indptr = ix.get_array(PREFIX + "indptr")
    if old_indptr is None or len(old_indptr) != len(old_ids) + 1 or int(old_indptr[-1]) != m_old:
        return "stored graph unreadable (blob indptr)"
    etypes = list(etypes)
    try:
        src, dst, w, et = read_sources(conn, dirty, ids, etypes, table)
        changed_rows = (dirty, (src, dst, w))          # (every tracked source: for the local PageRank)
        same = patch_rows(ix, old_indptr, ids, old_ids, dirty, src, dst, w, et, len(etypes), m_old)
        if same is None:
            dirty = np.unique(np.asarray(dirty, dtype=np.int64))
            kept = unchanged_rows(ix, old_indptr, old_ids, ids, dirty, src, dst, w, et, m_old)
            if kept.any():                 # rows reloaded as they were stay where they are
                dirty = dirty[~kept]
                live = np.isin(src, dirty)
                src, dst, w, et = src[live], dst[live], w[live], et[live]
            plan = splice_plan(old_indptr, old_ids, ids, dirty, src, dst, w, et)
            rindptr, outw, pairs, nbytes = splice_stored(ix, plan, etypes, m_old)
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
        n, m, indptr, remap = plan["n"], plan["m"], plan["indptr"], plan["remap"]
        gone = np.flatnonzero(~plan["keep_row"])       # changed or removed rows: their edges went
        removed_edges = int((old_indptr[gone + 1].astype(np.int64) - old_indptr[gone]).sum())
        added_edges = len(src)
        del plan
    del old_indptr
    g = StreamedGraph(ix, n, m, indptr, rindptr, etypes)
    info: dict[str, Any] = {"rebuilt": True, "incremental": True, "changed_rows": int(len(dirty)),
                            "changed_edges": int(added_edges), "nodes": g.n, "edges": g.m,
                            "edge_types": len(etypes), "csr_mb": round(nbytes / 1e6, 3),
                            "csr_seconds": round(time.perf_counter() - t, 3)}
    if same is not None:
        info["in_place"] = f"{len(same['rows'])} rows rewritten, {same['moved']} edges moved target"
    write_nodes(ix, ids, kinds, kind_names, etypes, table)
    t = time.perf_counter()
    edges_same = same is not None and not len(dirty)
    local = not edges_same and pagerank_local(ix, ids, old_ids, *changed_rows, info)   # (before the rows change)
    t_local = time.perf_counter() - t
    info["adjacency_rows"] = rows.sync(ix, g, ids, gs.graph_adjacency_rows, old_ids, dirty, (etypes, table))

    t = time.perf_counter()
    if not local:
        pagerank_updated(ix, g, old_ids, remap, outw, edges_same, info)
    info["pagerank_seconds"] = round(time.perf_counter() - t + t_local, 3)
    t = time.perf_counter()
    communities(ix, g, ids, old_ids, old_comm, changes, gs, info, changed_edges=removed_edges + added_edges,
                pairs_at_least=pairs)
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info
