"""Rebuild: every stored array of the graph written anew from the ``edges`` table.

The full rebuild reads the resolved edges in id ranges (:func:`~.read.read_edges`: one
``group_concat`` row per edge type and range, parsed by numpy), builds the CSR in little
memory (:func:`~kgsearch.graph.kernels.build.from_edge_arrays`, which frees each input array
once it is sorted), writes the blobs (:func:`~.csr.write_graph`, edge arrays with room to
spare) and the per-node rows when the graph is big enough (:func:`~.rows.sync`), then solves
PageRank cold and computes the communities (:mod:`.scores`). Under ``KGSEARCH_MEMORY_MB``,
:func:`check_budget` refuses a rebuild that cannot fit before reading a single edge.
"""
from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from ... import budget
from ...settings import GraphSettings
from ..kernels.build import CHUNK, from_edge_arrays
from . import rows
from .csr import PREFIX, write_graph, write_nodes
from .read import read_edges
from .scores import communities, pagerank_rebuilt

__all__ = ["rebuild", "check_budget", "progress_step", "READ_CHUNK"]

log = logging.getLogger(__name__)

# edge ids per read_edges query of a full rebuild: its text and parsed columns cost ~180 B an
# edge of a range (1M ids: +196 MiB over the arrays read at 1M nodes; 128K: +30 MiB, +3% CPU)
READ_CHUNK = 1 << 17


def progress_step(progress, step: str) -> None:
    """Tell a progress callback which part of the graph step runs (``csr``, ``pagerank``,
    ``communities``)."""
    if progress is not None:
        try:
            progress({"phase": "graph", "step": step})
        except Exception:                   # a progress callback must never break indexing
            log.debug("progress callback failed", exc_info=True)


# Peak growth of a rebuild, measured: about 260 B per edge with one group_concat over the whole
# table (docs/scale-study.md, section C); 60 B with incremental.read_edges and compact arrays
# (1,142 MiB at 1M nodes and 16.4M edges). With build.from_edge_arrays, build.pagerank_lean
# and blobs written in pieces: 398 MiB from 35 MiB at 1M nodes (bench/results/
# graph_rebuild_1m.md), i.e. the 13-14 B an edge read, a 4-byte permutation, one sorted array
# and 3 B of block masks (about 20 B an edge), plus the temporaries of a read range and a sort
# block (BYTES_PER_BLOCK_EDGE for each of the first build.CHUNK edges) and the node arrays; it
# ran under KGSEARCH_MEMORY_MB=450. The estimate keeps a margin (548 MiB at 1M), and is below
# the old 96 B an edge at every size (nothing refused before is refused now).
BYTES_PER_EDGE = 24
BYTES_PER_NODE = 128
BYTES_PER_BLOCK_EDGE = 48


def check_budget(ix) -> None:
    """Refuse a rebuild that cannot fit KGSEARCH_MEMORY_MB before reading a single edge
    (estimates from the largest row ids: two index lookups, no count)."""
    if budget.budget_bytes() is None:
        return
    edges = ix.conn.execute("SELECT coalesce(max(id), 0) FROM edges").fetchone()[0]
    nodes = ix.conn.execute("SELECT coalesce(max(id), 0) FROM nodes").fetchone()[0]
    budget.need("graph", int(edges) * BYTES_PER_EDGE + int(nodes) * BYTES_PER_NODE
                + min(int(edges), CHUNK) * BYTES_PER_BLOCK_EDGE)


def rebuild(ix, changes, table: dict[str, float], gs: GraphSettings, nodes, progress=None) -> dict:
    """Every stored array of the graph written anew from the edges table (see the module
    docstring); ``nodes``: :func:`~.read.read_nodes`. Returns the step's info."""
    conn = ix.conn
    progress_step(progress, "csr")
    t = time.perf_counter()
    ids, kinds, kind_names = nodes
    *arrays, etypes = read_edges(conn, ids, table, chunk=READ_CHUNK)
    g = from_edge_arrays(arrays, len(ids), etypes)   # (frees each array once it is sorted)
    old_ids, old_comm = (None if a is None else np.array(a) for a in
                         (ix.get_array(PREFIX + "node_ids"), ix.get_array(PREFIX + "community")))
    info: dict[str, Any] = {"rebuilt": True, "nodes": g.n, "edges": g.m, "edge_types": len(etypes),
                            "csr_mb": round(g.nbytes / 1e6, 3), "csr_seconds": round(time.perf_counter() - t, 3)}
    write_graph(ix, g)                               # (edge arrays with room: see csr.edge_capacity)
    write_nodes(ix, ids, kinds, kind_names, etypes, table)
    info["adjacency_rows"] = rows.sync(ix, g, ids, gs.graph_adjacency_rows)

    progress_step(progress, "pagerank")
    t = time.perf_counter()
    pagerank_rebuilt(ix, g)
    info["pagerank_seconds"] = round(time.perf_counter() - t, 3)

    progress_step(progress, "communities")
    t = time.perf_counter()
    communities(ix, g, ids, old_ids, old_comm, changes, gs, info)
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info
