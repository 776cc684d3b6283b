"""Deferred splices: at scale, the stored CSR may lag the graph by a few rows (issue 30).

A graph with adjacency rows (:mod:`.rows`, ``graph_adjacency_rows`` edges and up) answers every
query from those rows; its CSR arrays are read only by a whole-graph PageRank solve, community
detection, a rewrite of every row and the library's :func:`load_graph`. Yet a change that moves
edges (a row gains or loses one, a node comes or goes) spliced every edge array from the first
changed row on: at 1M nodes 221 MB written, ~1.1 s, and ~0.5 s more to commit them, for one
edge.

So :func:`kgsearch.graph.stored.policy.apply` defers the splice when the rows are stored,
PageRank was updated from the changed rows (:func:`~.scores.pagerank_local`) and the communities
need no graph: the rows, node arrays, shape and scores are brought up to date, and the CSR keeps
the rows it had, described by

* blob ``graph.lag_ids``: the node id of each CSR position (the node set when it was written);
* blob ``graph.lag_sources``: the node ids whose CSR row is stale (ascending; some may be gone);
* meta ``graph.lag``: ``{"n", "m", "sources"}``, the CSR's node and edge counts.

The next run that needs the CSR, or whose lag would pass :data:`MAX_SOURCES` sources, splices
them all at once: the ordinary splice from the CSR's node set to today's, with the lagging
sources among the changed ones (rows that came back to what the CSR holds stay where they
are). :func:`load_graph` gives the current graph either way (the lag spliced in memory).
"""
from __future__ import annotations

import numpy as np

from ..kernels.csr import BLOB_VERSION, Graph, GraphError
from ..kernels.splice import splice
from .csr import PREFIX, load_graph as load_csr, read_blob
from .read import read_sources

__all__ = ["read", "write", "clear", "load_graph", "META", "IDS", "SOURCES", "MAX_SOURCES"]

META = PREFIX + "lag"
IDS = PREFIX + "lag_ids"
SOURCES = PREFIX + "lag_sources"
MAX_SOURCES = 4096        # stale CSR rows before a run splices them in (read back at most once a run)


def read(ix) -> dict | None:
    """``{"n", "m", "ids", "sources"}`` when the CSR lags the graph, else None. Raises
    ValueError when the description is inconsistent (the caller rebuilds)."""
    meta = ix.meta_json(META)
    if not meta:
        return None
    ids, sources = ix.get_array(IDS), ix.get_array(SOURCES)
    if ids is None or sources is None or len(ids) != int(meta.get("n", -1)):
        raise ValueError("the stored graph's lag is unreadable")
    return {"n": int(meta["n"]), "m": int(meta["m"]), "ids": np.asarray(ids, dtype=np.int64),
            "sources": np.asarray(sources, dtype=np.int64)}


def write(ix, ids: np.ndarray, sources: np.ndarray, m: int) -> None:
    """Record that the CSR (node ids ``ids``, ``m`` edges) lags at ``sources``."""
    ix.put_array(IDS, np.asarray(ids, dtype=np.int64))
    ix.put_array(SOURCES, np.unique(np.asarray(sources, dtype=np.int64)))
    ix.set_meta_json(META, {"n": int(len(ids)), "m": int(m), "sources": int(len(np.unique(sources)))})


def clear(ix) -> None:
    """The CSR is the graph again (after a splice or a rebuild)."""
    if ix.meta_json(META) is not None:
        ix.set_meta_json(META, None)
    ix.drop_arrays(IDS)
    ix.drop_arrays(SOURCES)


def load_graph(ix, get=None) -> Graph:
    """The graph (positions = ``graph.node_ids``): the stored CSR (:func:`~.csr.load_graph`),
    with a lag spliced in memory from the ``edges`` table. ``get(name)``: how a blob is read."""
    get = (lambda name: read_blob(ix, name)) if get is None else get
    try:
        behind = read(ix)
    except ValueError as exc:
        raise GraphError(f"{exc}; rebuild with `kgsearch index --full`") from None
    if behind is None:
        return load_csr(ix, get)
    shape = np.array([BLOB_VERSION, behind["n"], behind["m"]], dtype=np.int64)
    base = load_csr(ix, lambda name: shape if name == PREFIX + "shape" else get(name))
    ids = get(PREFIX + "node_ids")
    etypes = list(ix.meta_json(PREFIX + "etypes", []))
    table = ix.meta_json(PREFIX + "edge_weights") or {}
    live = behind["sources"][np.isin(behind["sources"], ids)]
    src, dst, w, et = read_sources(ix.conn, live, np.asarray(ids), etypes, table)
    return splice(base, behind["ids"], np.asarray(ids, dtype=np.int64), behind["sources"], src, dst, w, et,
                  etype_names=etypes)
