"""Incremental graph maintenance: a small change updates the stored graph in place.

A one-file reindex used to rebuild the whole graph from the edge table (48.7 s and 1.78 GB
at 1M nodes for a file that gained one edge). Here the graph step instead:

1. knows which nodes' out-edge rows changed this run: :func:`track_edges` (called by the
   indexer at the start of an incremental run) puts TEMP triggers on ``edges`` that record
   the source of every inserted, deleted or updated edge in ``temp.graph_dirty`` (foreign-key
   actions, a node removed under its edges, fire them too). No indexer code has to report
   what it touched, and the neighbour step's ``similar_text`` edges are covered as well;
2. reads the live node ids and kinds (compact arrays), the stored row pointers, and only the
   changed rows from SQLite (``WHERE src IN (...)``);
3. splices them in one stored array at a time (:mod:`kgsearch.graph.splice`: same arrays as
   ``Graph.from_edges`` on the whole edge list: edges by (source, target), parallel edges in
   edge id order, the reverse permutation by (target, source)): each old blob is read in
   slices (incremental blob I/O), the new array built, written in pieces (in place when its
   length did not change) and freed before the next kind, so one new edge array (4 bytes an
   edge) is in memory at a time, where the old and the new CSR together took ~450 MB at 1M
   nodes and 16.4M edges;
4. PageRank: up to :data:`WARM_FROM` nodes solved cold, exactly as a fresh build does (so an
   updated index ranks like a fresh one: the incremental property test compares scores to
   1e-9); above it the power iteration with the same stopping rule (L1 change < ``n * tol``),
   warm-started from the stored scores (new nodes start at 1/n), reading the new indices and
   weights back in chunks. Both it and a fresh build
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

from ..config import edge_weight
from ..store.sql import CHUNK
from . import adjacency
from ..store.blobio import open_stored as _open, put_stored as _put
from .csr import BLOB_VERSION, Graph
from .edge_room import edge_capacity, edge_capacity_max
from .inplace import update_in_place
from .incremental import in_pointers, in_pointers_after_splice, out_weights, pagerank_csr, place_new_edges, reverse_from_plan, splice_column, splice_plan
from .pagerank import pagerank



def pairs_lower_bound(g: Graph) -> int:
    from .graph_step import pairs_lower_bound as count      # (graph_step imports this module)
    return count(g)

__all__ = ["track_edges", "end_tracking", "tracking", "dirty_sources", "clear_dirty", "update_incremental",
           "MAX_CHANGED_FRACTION", "PAGERANK_L1_BOUND", "NEEDS_FULL"]

MAX_CHANGED_FRACTION = 0.25      # changed rows above this share of the nodes: rebuild in full
PAGERANK_L1_BOUND = 2 * 0.85 / 0.15 * 1e-4   # warm vs fresh PageRank, L1 (both within 5.7e-4 of exact)
WARM_FROM = 200_000          # nodes: below, PageRank is solved cold, as a fresh build does (same scores)
NEEDS_FULL = "graph.needs_full"  # meta: edges changed while the graph step did not run
CHUNK_EDGES = 1 << 19        # edges per slice of a stored array (reads, renumbering, PageRank)

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


class _StoredGraph(Graph):
    """The updated graph for PageRank and communities, its edge arrays read from the blobs only
    when used (``pagerank_csr`` slices them in chunks: see :meth:`stream`); ``rindptr`` given."""

    def __init__(self, ix, prefix: str, n: int, m: int, indptr, rindptr, etype_names):
        self._ix, self._prefix, self._loaded = ix, prefix, {}
        super().__init__(n, indptr, np.zeros(0, np.int32), None, None, rindptr, None, etype_names)
        self.m = int(m)
        self._loaded.clear()

    def stream(self) -> Graph:
        """A Graph whose ``indices``/``weights`` are :class:`~kgsearch.store.blobio.Stored` (sliced only)."""
        cols = {p: _open(self._ix, self._prefix + p, self.m, edge_capacity_max(self.m)) for p in ("indices", "weights")}
        return Graph(self.n, self.indptr, cols["indices"], cols["weights"], None, self.rindptr, None, self.etype_names)


def _lazy(part: str):
    def get(self):
        a = self._loaded.get(part)
        if a is None:
            col = _open(self._ix, self._prefix + part, self.m, edge_capacity_max(self.m))
            if col is None:
                raise ValueError(f"stored graph unreadable (blob {part})")
            a = self._loaded[part] = col[0:self.m]       # (one read: no copy held by SQLite)
            col.close()
        return a

    def put(self, value):
        if value is not None:
            self._loaded[part] = value
    return property(get, put)


for _p in ("indices", "weights", "etype", "rperm"):
    setattr(_StoredGraph, _p, _lazy(_p))


def _put_edges(ix, name: str, arr: np.ndarray, m: int, start: int | None = None) -> None:
    """An edge array of an ``m``-edge graph, in place when the stored one has room for it
    (``start``: see :func:`~kgsearch.store.blobio.put_stored`)."""
    _put(ix, name, arr, capacity=edge_capacity(m), keep_up_to=edge_capacity_max(m), start=start)


def _first_moved(plan: dict, m_old: int) -> int:
    """The first edge position where a spliced forward array can differ from the stored one:
    the first new edge, the first kept run that moved, or the end of the shorter array."""
    first = min(plan["m"], m_old)
    if len(plan["pos"]):
        first = min(first, int(plan["pos"].min()))
    for e0, e1, p0 in plan["runs"]:
        if p0 != e0 and e1 > e0:
            first = min(first, p0)
            break
    return first


def _splice_stored(ix, prefix: str, plan: dict, etypes: list[str], m_old: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Splice the stored arrays one at a time (read the old blob in slices, build the new
    array, write it, free it): one new edge array (4 bytes an edge) in memory, plus a bool
    an edge while the new edges' places in ``rperm`` are found. Returns the new ``rindptr``,
    the rows' summed weights (for PageRank), ``pairs_lower_bound`` (for the communities' size
    check: no second read of the indices) and the bytes written. A ValueError leaves a
    partial write that the caller's full rebuild replaces."""
    n, m = plan["n"], plan["m"]
    idx = plan["indptr"].dtype
    old_indptr = ix.get_array(prefix + "indptr")
    sizes = {}
    first = _first_moved(plan, m_old)
    for part, values, targets in (("indices", plan["dst"], True), ("etype", plan["t"], False),
                                  ("weights", plan["w"], False)):
        old = _open(ix, prefix + part, m_old, edge_capacity_max(m_old))
        if old is None:
            raise ValueError(f"stored graph unreadable (blob {part})")
        dtype = old.dtype
        if part == "etype" and len(etypes) > np.iinfo(dtype).max + 1:
            old.close()
            raise ValueError(f"more than {np.iinfo(dtype).max + 1} edge types")
        try:
            new = splice_column(plan, old, values, dtype, targets=targets, chunk=CHUNK_EDGES)
            if part == "indices":
                old_rindptr = ix.get_array(prefix + "rindptr")
                if old_rindptr is not None and len(old_rindptr) == len(old_indptr):
                    rindptr = in_pointers_after_splice(plan, old_rindptr, old)
                else:
                    rindptr = in_pointers(new, n, idx, CHUNK_EDGES)
                del old_rindptr
        finally:
            old.close()
        if part == "indices":
            place_new_edges(plan, new, rindptr)
            pairs = pairs_lower_bound(Graph(n, plan["indptr"], new, None, None, None, None))
        elif part == "weights":
            outw = out_weights(plan["indptr"], new, CHUNK_EDGES)     # (for PageRank: no second read)
        # (targets are renumbered everywhere when node positions moved)
        _put_edges(ix, prefix + part, new, m, 0 if targets and not plan["same_layout"] else first)
        sizes[part] = new.nbytes
        del new
    old_rperm = _open(ix, prefix + "rperm", m_old, edge_capacity_max(m_old))
    if old_rperm is None:
        indices = ix.get_array(prefix + "indices")[:m]      # (no usable reverse side: sort)
        rperm = np.argsort(indices, kind="stable").astype(idx)
        del indices
    else:
        try:
            rperm = reverse_from_plan(plan, old_indptr, old_rperm, CHUNK_EDGES)
        finally:
            old_rperm.close()
    _put_edges(ix, prefix + "rperm", rperm, m, 0)     # (edge numbers past the change all shift)
    sizes["rperm"] = rperm.nbytes
    del rperm
    ix.put_array(prefix + "indptr", plan["indptr"])
    ix.put_array(prefix + "rindptr", rindptr)
    ix.put_array(prefix + "shape", np.array([BLOB_VERSION, n, m], dtype=np.int64))
    sizes["pointers"] = plan["indptr"].nbytes + rindptr.nbytes
    return rindptr, outw, pairs, sum(sizes.values())


def update_incremental(ix, changes, table: dict, gs, ids: np.ndarray, kinds: np.ndarray,
                       kind_names: list[str], prefix: str) -> dict[str, Any] | str:
    """Bring the stored graph up to date from the changed rows. Returns the step's info, or a
    string saying why a full rebuild is needed instead (the caller then rewrites every blob)."""
    from .graph_step import communities          # (graph_step imports this module)

    conn = ix.conn
    t = time.perf_counter()
    if ix.meta_json(NEEDS_FULL):
        return "edges changed in a run that skipped the graph step"
    old_ids = ix.get_array(prefix + "node_ids")
    etypes = ix.meta_json(prefix + "etypes")
    if old_ids is None or etypes is None:
        return "no stored graph"
    dirty = dirty_sources(conn)
    if len(dirty) > MAX_CHANGED_FRACTION * max(len(ids), 1):
        return f"{len(dirty)} changed rows > {MAX_CHANGED_FRACTION:g} of the nodes"
    shape = ix.get_array(prefix + "shape")
    if shape is None or len(shape) != 3 or int(shape[0]) != BLOB_VERSION:
        return "stored graph unreadable (missing or another version)"
    if int(shape[1]) != len(old_ids):
        return "stored graph and node ids disagree"
    m_old = int(shape[2])
    old_indptr = ix.get_array(prefix + "indptr")
    if old_indptr is None or len(old_indptr) != len(old_ids) + 1 or int(old_indptr[-1]) != m_old:
        return "stored graph unreadable (blob indptr)"
    etypes = list(etypes)
    try:
        src, dst, w, et = _rows(conn, dirty, ids, etypes, table)
        same = update_in_place(ix, prefix, old_indptr, ids, old_ids, dirty, src, dst, w, et, len(etypes), m_old)
        if same is None:
            plan = splice_plan(old_indptr, old_ids, ids, dirty, src, dst, w, et)
            rindptr, outw, pairs, nbytes = _splice_stored(ix, prefix, plan, etypes, m_old)
    except ValueError as exc:
        return f"the change could not be spliced in ({exc})"
    old_pr = ix.get_array(prefix + "pagerank")
    old_comm = ix.get_array(prefix + "community")
    if same is not None:             # rows rewritten in place: same nodes, same row pointers
        n, m, indptr, rindptr, outw = len(ids), m_old, old_indptr, same["rindptr"], None
        remap = np.arange(n)
        if same["moved"]:
            ix.put_array(prefix + "rindptr", rindptr)
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
    hit = remap >= 0                 # old position -> new position, for the scores
    del old_indptr
    g = _StoredGraph(ix, prefix, n, m, indptr, rindptr, etypes)
    g._cache["pairs_lower_bound"] = pairs
    info: dict[str, Any] = {"rebuilt": True, "incremental": True, "changed_rows": int(len(dirty)),
                            "changed_edges": int(added_edges), "nodes": g.n, "edges": g.m,
                            "edge_types": len(etypes), "csr_mb": round(nbytes / 1e6, 3),
                            "csr_seconds": round(time.perf_counter() - t, 3)}
    if same is not None:
        info["in_place"] = f"{len(same['rows'])} rows rewritten, {same['moved']} edges moved target"
    ix.put_array(prefix + "node_ids", ids)
    ix.put_array(prefix + "kind", kinds)
    ix.set_meta_json(prefix + "etypes", etypes)
    ix.set_meta_json(prefix + "kinds", kind_names)
    ix.set_meta_json(prefix + "edge_weights", table)
    info["adjacency_rows"] = adjacency.sync(ix, g, ids, gs.graph_adjacency_rows, old_ids, dirty, (etypes, table))

    t = time.perf_counter()
    if same is not None and not len(dirty):
        info["pagerank_start"] = "kept: no edge changed"
    elif g.n and g.n <= WARM_FROM:
        # small enough to solve cold (75K nodes: 40 ms): exactly what a fresh build stores
        pr = pagerank(g, tol=min(1e-6, 1e-4 / g.n), max_iter=1000)
        ix.put_array(prefix + "pagerank", pr.astype(np.float32))
        info["pagerank_start"] = "cold"
    elif g.n:
        x0 = np.full(g.n, 1.0 / g.n)
        if old_pr is not None and len(old_pr) == len(old_ids) and hit.any():
            x0[remap[hit]] = old_pr[hit]
        del old_pr
        sg = g.stream()                          # (indices and weights read in chunks, per iteration)
        try:
            pr, iters = pagerank_csr(sg, tol=min(1e-6, 1e-4 / g.n), max_iter=1000, x0=x0, outw=outw,
                                     chunk=CHUNK_EDGES)
        finally:
            sg.indices.close()
            sg.weights.close()
        del x0, sg
        ix.put_array(prefix + "pagerank", pr.astype(np.float32))
        info["pagerank_iterations"] = iters
        info["pagerank_start"] = "warm"
    info["pagerank_seconds"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    communities(ix, g, ids, old_ids, old_comm, changes, gs, info, changed_edges=removed_edges + added_edges)
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info
