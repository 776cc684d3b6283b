"""Incremental graph maintenance: a small change updates the stored graph in place.

A one-file reindex used to rebuild the whole graph from the edge table (48.7 s and 1.78 GB
at 1M nodes for a file that gained one edge). Here the graph step instead:

1. knows which nodes' out-edge rows changed this run: :func:`track_edges` (called by the
   indexer at the start of an incremental run) puts TEMP triggers on ``edges`` that record
   the source of every inserted, deleted or updated edge in ``temp.graph_dirty`` (foreign-key
   actions, a node removed under its edges, fire them too). No indexer code has to report
   what it touched, and the neighbour step's ``similar_text`` edges are covered as well;
2. reads the stored CSR blobs, the live node ids and kinds (compact arrays), and only the
   changed rows from SQLite (``WHERE src IN (...)``);
3. :func:`~kgsearch.graph.incremental.splice`\\ s them in (same arrays as ``Graph.from_edges`` on
   the whole edge list: edges by (source, target), parallel edges in edge id order, the
   reverse permutation by (target, source)); the old graph is freed before the reverse side
   is sorted, so the peak is about two forward graphs;
4. PageRank: up to :data:`WARM_FROM` nodes solved cold, exactly as a fresh build does (so an
   updated index ranks like a fresh one: the incremental property test compares scores to
   1e-9); above it the power iteration with the same stopping rule (L1 change < ``n * tol``),
   warm-started from the stored scores (new nodes start at 1/n). Both it and a fresh build
   stop within ``alpha / (1 - alpha) * 1e-4`` (L1) of the exact vector, so they differ by at
   most :data:`PAGERANK_L1_BOUND` (tested, with identical top-k on fixtures);
5. communities: as in the full step (:func:`kgsearch.graph.graph_step.communities`), but new
   nodes are placed from their own edges only
   (:func:`~kgsearch.graph.incremental.assign_new_nodes_local`) and the CNM size check uses
   the linked-pair count of the last full count instead of recounting every pair.

Anything unusual (no stored graph, an edge-weight table change, a graph step skipped in an
earlier run, more than :data:`MAX_CHANGED_FRACTION` of the nodes changed, a row the dirty set
missed) falls back to the full rebuild, and the step's info says why.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..budget import fixed_mmap_threshold
from ..config import edge_weight
from ..store.sql import CHUNK
from . import adjacency
from .csr import BLOB_VERSION, Graph
from .incremental import pagerank_csr, reverse_after_splice, splice
from .pagerank import pagerank

__all__ = ["track_edges", "end_tracking", "tracking", "dirty_sources", "clear_dirty", "update_incremental",
           "MAX_CHANGED_FRACTION", "PAGERANK_L1_BOUND", "NEEDS_FULL"]

MAX_CHANGED_FRACTION = 0.25      # changed rows above this share of the nodes: rebuild in full
PAGERANK_L1_BOUND = 2 * 0.85 / 0.15 * 1e-4   # warm vs fresh PageRank, L1 (both within 5.7e-4 of exact)
WARM_FROM = 200_000          # nodes: below, PageRank is solved cold, as a fresh build does (same scores)
NEEDS_FULL = "graph.needs_full"  # meta: edges changed while the graph step did not run

_TRIGGERS = {
    "graph_dirty_ins": "AFTER INSERT ON main.edges BEGIN {add_new} END",
    "graph_dirty_del": "AFTER DELETE ON main.edges BEGIN {add_old} END",
    "graph_dirty_upd": "AFTER UPDATE OF src, dst, weight, type ON main.edges BEGIN {add_old} {add_new} END",
}
# (INSERT OR IGNORE would not do: a foreign-key action runs the trigger with ABORT conflicts)
_ADD = "INSERT INTO graph_dirty(src) SELECT {v}.src WHERE NOT EXISTS (SELECT 1 FROM graph_dirty WHERE src = {v}.src);"


def track_edges(conn) -> None:
    """Record, from now on in this connection, the source of every edge row that changes."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS graph_dirty(src INTEGER PRIMARY KEY)")
    for name, body in _TRIGGERS.items():
        conn.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {name} "
                     + body.format(add_new=_ADD.format(v="NEW"), add_old=_ADD.format(v="OLD")))


def tracking(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_temp_master WHERE type='trigger' AND name='graph_dirty_ins'"
                        ).fetchone() is not None


def dirty_sources(conn) -> np.ndarray:
    rows = conn.execute("SELECT src FROM temp.graph_dirty ORDER BY src").fetchall()
    return np.array([r[0] for r in rows], dtype=np.int64)


def clear_dirty(conn) -> None:
    if tracking(conn):
        conn.execute("DELETE FROM temp.graph_dirty")


def end_tracking(ix) -> None:
    """End of an index run: drop the triggers. Changed rows the graph step did not take in
    (it did not run: ``--steps``) make its next run a full rebuild."""
    conn = ix.conn
    if not tracking(conn):
        return
    if conn.execute("SELECT 1 FROM temp.graph_dirty LIMIT 1").fetchone() is not None:
        ix.set_meta_json(NEEDS_FULL, True)
    for name in _TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS temp.{name}")
    conn.execute("DROP TABLE IF EXISTS temp.graph_dirty")


def _rows(conn, sources: np.ndarray, node_ids: np.ndarray, etypes: list[str], table: dict):
    """The resolved out-edges of ``sources`` (node ids) in edge id order, as the full reader
    makes them: (src id, dst id, float32 weight x type weight, type number); new type names are
    appended to ``etypes``."""
    parts = []
    src_list = sources.tolist()
    for s in range(0, len(src_list), CHUNK):
        chunk = src_list[s:s + CHUNK]
        marks = ",".join("?" * len(chunk))
        parts += conn.execute(f"SELECT id, src, dst, weight, type FROM edges WHERE src IN ({marks}) "
                              f"AND dst IS NOT NULL", chunk).fetchall()
    parts.sort()
    code = {t: i for i, t in enumerate(etypes)}
    for row in parts:
        if row[4] not in code:
            code[row[4]] = len(etypes)
            etypes.append(row[4])
    tw = np.array([edge_weight(t, table) for t in etypes], dtype=np.float64)
    m = len(parts)
    src = np.fromiter((r[1] for r in parts), dtype=np.int64, count=m)
    dst = np.fromiter((r[2] for r in parts), dtype=np.int64, count=m)
    w = np.fromiter((r[3] for r in parts), dtype=np.float64, count=m)
    et = np.fromiter((code[r[4]] for r in parts), dtype=np.int64, count=m)
    live = np.isin(dst, node_ids) & np.isin(src, node_ids)
    if not live.all():
        raise ValueError("an edge points at a node that is not live")
    w = np.maximum(w * tw[et], 0.0).astype(np.float32)
    return src, dst, w, et


def _forward(ix, prefix: str, etypes, n: int) -> Graph | str:
    """The stored graph's forward arrays only (``rindptr``/``rperm`` None), checked as
    ``Graph.from_blobs`` checks them; or why they cannot be used."""
    shape = ix.get_array(prefix + "shape")
    if shape is None or len(shape) != 3 or int(shape[0]) != BLOB_VERSION:
        return "stored graph unreadable (missing or another version)"
    if int(shape[1]) != n:
        return "stored graph and node ids disagree"
    m = int(shape[2])
    parts = {}
    for p, size in (("indptr", n + 1), ("indices", m), ("weights", m), ("etype", m)):
        a = ix.get_array(prefix + p)
        if a is None or len(a) != size:
            return f"stored graph unreadable (blob {p})"
        parts[p] = a
    return Graph(n, parts["indptr"], parts["indices"], parts["weights"], parts["etype"], None, None, etypes)


def update_incremental(ix, changes, table: dict, gs, ids: np.ndarray, kinds: np.ndarray,
                       kind_names: list[str], prefix: str) -> dict[str, Any] | str:
    """Bring the stored graph up to date from the changed rows. Returns the step's info, or a
    string saying why a full rebuild is needed instead (nothing written then)."""
    from .graph_step import communities          # (graph_step imports this module)

    conn = ix.conn
    t = time.perf_counter()
    fixed_mmap_threshold()
    if ix.meta_json(NEEDS_FULL):
        return "edges changed in a run that skipped the graph step"
    old_ids = ix.get_array(prefix + "node_ids")
    etypes = ix.meta_json(prefix + "etypes")
    if old_ids is None or etypes is None:
        return "no stored graph"
    dirty = dirty_sources(conn)
    if len(dirty) > MAX_CHANGED_FRACTION * max(len(ids), 1):
        return f"{len(dirty)} changed rows > {MAX_CHANGED_FRACTION:g} of the nodes"
    g_old = _forward(ix, prefix, etypes, len(old_ids))     # (the reverse side is read later)
    if isinstance(g_old, str):
        return g_old
    etypes = list(etypes)
    try:
        src, dst, w, et = _rows(conn, dirty, ids, etypes, table)
        if len(etypes) > 255 and g_old.etype.dtype == np.uint8:
            return "more than 255 edge types"
        g = splice(g_old, old_ids, ids, dirty, src, dst, w, et, etypes, reverse=False)
    except ValueError as exc:
        return f"the change could not be spliced in ({exc})"
    old_pr = ix.get_array(prefix + "pagerank")
    old_comm = ix.get_array(prefix + "community")
    # old position -> new position, for the scores
    at = np.minimum(np.searchsorted(ids, old_ids), max(len(ids) - 1, 0))
    hit = (ids[at] == old_ids) if len(ids) else np.zeros(len(old_ids), bool)
    gone = np.searchsorted(old_ids, dirty)
    gone = gone[(gone < len(old_ids)) & (old_ids[np.minimum(gone, len(old_ids) - 1)] == dirty)]
    removed_edges = int((g_old.indptr[gone + 1].astype(np.int64) - g_old.indptr[gone]).sum())
    old_indptr, m_old = g_old.indptr, g_old.m
    del g_old                                     # (its forward blobs: freed before the reverse side)
    old_rperm, old_rindptr = ix.get_array(prefix + "rperm"), ix.get_array(prefix + "rindptr")
    if old_rperm is None or len(old_rperm) != m_old or old_rindptr is None or len(old_rindptr) != len(old_indptr):
        old_rperm = None                          # (add_reverse then sorts)
    reverse_after_splice(g, old_indptr, old_rperm, old_rindptr)
    del old_indptr, old_rperm, old_rindptr
    info: dict[str, Any] = {"rebuilt": True, "incremental": True, "changed_rows": int(len(dirty)),
                            "changed_edges": int(len(src)), "nodes": g.n, "edges": g.m,
                            "edge_types": len(etypes), "csr_mb": round(g.nbytes / 1e6, 3),
                            "csr_seconds": round(time.perf_counter() - t, 3)}
    for name, arr in g.to_blobs().items():
        ix.put_array(prefix + name, arr)
    ix.put_array(prefix + "node_ids", ids)
    ix.put_array(prefix + "kind", kinds)
    ix.set_meta_json(prefix + "etypes", etypes)
    ix.set_meta_json(prefix + "kinds", kind_names)
    ix.set_meta_json(prefix + "edge_weights", table)
    info["adjacency_rows"] = adjacency.sync(ix, g, ids, gs.graph_adjacency_rows, old_ids, dirty)

    t = time.perf_counter()
    if g.n and g.n <= WARM_FROM:
        # small enough to solve cold (75K nodes: 40 ms): exactly what a fresh build stores
        pr = pagerank(g, tol=min(1e-6, 1e-4 / g.n), max_iter=1000)
        ix.put_array(prefix + "pagerank", pr.astype(np.float32))
        info["pagerank_start"] = "cold"
    elif g.n:
        x0 = np.full(g.n, 1.0 / g.n)
        if old_pr is not None and len(old_pr) == len(old_ids) and hit.any():
            x0[at[hit]] = old_pr[hit]
        pr, iters = pagerank_csr(g, tol=min(1e-6, 1e-4 / g.n), max_iter=1000, x0=x0)
        ix.put_array(prefix + "pagerank", pr.astype(np.float32))
        info["pagerank_iterations"] = iters
        info["pagerank_start"] = "warm"
    info["pagerank_seconds"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    communities(ix, g, ids, old_ids, old_comm, changes, gs, info, changed_edges=removed_edges + len(src))
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info
