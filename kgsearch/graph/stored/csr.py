"""The graph's first stored form: the CSR arrays as blobs (``graph.*``), with room to spare.

Blobs (:data:`PREFIX` + name): the CSR parts of :class:`~kgsearch.graph.kernels.csr.Graph`
(``indptr``, ``indices``, ``weights``, ``etype``, ``rindptr``, ``rperm``, and ``shape`` =
``[BLOB_VERSION, n, m]``), ``node_ids`` (the live node id at each position, ascending),
``kind`` (uint8 kind code by position), ``pagerank`` (float32 by position), ``community``
(int32 labels by position); meta ``graph.etypes``, ``graph.kinds``, ``graph.edge_weights``
(the type-weight table the weights were made with). :func:`write_graph` and
:func:`write_nodes` write them, :func:`load_graph` reads the CSR back (:func:`read_blob`: in
1 MiB pieces, no second copy held), :class:`StreamedGraph` reads the edge arrays only when a
kernel asks for them.

**Room to spare.** The edge arrays (``indices``, ``weights``, ``etype``, ``rperm``) are stored
longer than the graph's ``m`` edges (:func:`edge_capacity`), zeros after them, so that an
incremental run whose change adds or drops a few edges rewrites them in place
(:func:`put_edges`, :func:`kgsearch.store.blobio.put_stored`) instead of as new blobs: at 1M
nodes (16.4M edges, 213 MB of edge arrays) that was most of a one-file reindex's graph step.
``graph.shape`` holds ``m``; readers take the first ``m`` values (``longest=``
:func:`edge_capacity_max`).
"""
from __future__ import annotations

import numpy as np

from ...store.blobio import array_info, iter_array, open_stored, put_stored
from ..kernels.csr import EDGE_PARTS, Graph, GraphError

__all__ = ["PREFIX", "EDGE_PARTS", "CHUNK_EDGES", "edge_capacity", "edge_capacity_max", "put_edges", "open_edges",
           "write_graph", "write_nodes", "read_blob", "load_graph", "StreamedGraph"]

PREFIX = "graph."
CHUNK_EDGES = 1 << 19        # edges per slice of a stored array (reads, renumbering, PageRank)


# ---------------------------------------------------------------------- room to spare
def _edge_quantum(m: int) -> int:
    return max(1024, 1 << (max(0, int(m)) >> 8).bit_length())      # a power of two, ~m/256 to m/128


def edge_capacity(m: int) -> int:
    """How many values a new write of an ``m``-edge graph's edge arrays stores: ``m`` plus half
    to one and a half of a quantum (1/256 to 1/128 of ``m``, at least 1024), rounded to a
    multiple of it. 16.4M edges at 1M nodes: 32K-98K to spare (0.4-1.3 MB over 213 MB)."""
    q = _edge_quantum(m)
    return -(-(max(0, int(m)) + q // 2) // q) * q


def edge_capacity_max(m: int) -> int:
    """The most values stored ``m``-edge arrays may hold and still be written over in place
    (:func:`kgsearch.store.blobio.put_stored`): arrays stored for a graph that has since gained
    or lost up to half a quantum of edges keep their length, so a one-file change rewrites
    them in place instead of as new blobs (0.22 s instead of 0.67 s for 66 MB here)."""
    return max(0, int(m)) + 4 * _edge_quantum(m)         # (4: m's quantum may be half a write's)


# ---------------------------------------------------------------------- writing
def put_edges(ix, part: str, arr: np.ndarray, m: int, start: int | None = None) -> None:
    """The edge array ``part`` of an ``m``-edge graph, in place when the stored one has room for
    it (``start``: the first value that can differ, see :func:`~kgsearch.store.blobio.put_stored`)."""
    put_stored(ix, PREFIX + part, arr, capacity=edge_capacity(m), keep_up_to=edge_capacity_max(m), start=start)


def open_edges(ix, part: str, m: int, writable: bool = False):
    """The stored edge array ``part`` of an ``m``-edge graph, sliced without reading it whole
    (:class:`~kgsearch.store.blobio.Stored`), or None when it is missing or of another length."""
    return open_stored(ix, PREFIX + part, m, edge_capacity_max(m), writable=writable)


def write_graph(ix, g: Graph) -> None:
    """Every ``graph.*`` blob dropped, then ``g``'s CSR arrays written (edge arrays with room)."""
    ix.drop_arrays(PREFIX)
    for name, arr in g.to_blobs().items():
        ix.put_array(PREFIX + name, arr, capacity=edge_capacity(g.m) if name in EDGE_PARTS else None)


def write_nodes(ix, ids: np.ndarray, kinds: np.ndarray, kind_names: list[str], etypes: list[str],
                table: dict[str, float]) -> None:
    """The per-position node arrays and the graph's meta (edge types, kinds, weight table)."""
    ix.put_array(PREFIX + "node_ids", ids)
    ix.put_array(PREFIX + "kind", kinds)
    ix.set_meta_json(PREFIX + "etypes", etypes)
    ix.set_meta_json(PREFIX + "kinds", kind_names)
    ix.set_meta_json(PREFIX + "edge_weights", table)


# ---------------------------------------------------------------------- reading
def read_blob(ix, name: str, chunk: int | None = None):
    """``ix.get_array(name)`` filled from 1 MiB pieces (:func:`kgsearch.store.blobio.iter_array`):
    a whole-blob read holds SQLite's copy and Python's at once, and the freed copies stayed in
    the heap. Read-only, like ``get_array``'s."""
    info = array_info(ix, name)
    if info is None:
        return None
    _, dtype, shape = info
    out = np.empty(int(np.prod(shape)) if shape else 1, dtype=dtype)
    pos = 0
    for piece in iter_array(ix, name, chunk):
        out[pos:pos + len(piece)] = piece
        pos += len(piece)
    if pos != len(out):
        raise GraphError(f"stored array {name!r} is shorter than its shape; rebuild with `kgsearch index --full`")
    out = out.reshape(shape)
    out.flags.writeable = False
    return out


def load_graph(ix, get=None) -> Graph:
    """The stored CSR as a :class:`Graph` (``get(name)``: how a blob is read, default
    :func:`read_blob`). Raises :class:`GraphError` when a part is missing or inconsistent."""
    get = (lambda name: read_blob(ix, name)) if get is None else get
    return Graph.from_blobs(lambda name: get(PREFIX + name), etype_names=ix.meta_json(PREFIX + "etypes", []),
                            longest=edge_capacity_max)


class StreamedGraph(Graph):
    """The stored graph after an incremental write, for PageRank and communities: its edge arrays
    are read from the blobs only when used, whole (a property per array) or in slices
    (:meth:`stream`, for :func:`~kgsearch.graph.kernels.pagerank_lean.pagerank_csr`); the row
    pointers are given."""

    def __init__(self, ix, n: int, m: int, indptr, rindptr, etype_names):
        self._ix, self._loaded = ix, {}
        super().__init__(n, indptr, np.zeros(0, np.int32), None, None, rindptr, None, etype_names)
        self.m = int(m)
        self._loaded.clear()

    def stream(self) -> Graph:
        """A Graph whose ``indices``/``weights`` are :class:`~kgsearch.store.blobio.Stored` (sliced only)."""
        cols = {p: open_edges(self._ix, p, self.m) for p in ("indices", "weights")}
        return Graph(self.n, self.indptr, cols["indices"], cols["weights"], None, self.rindptr, None, self.etype_names)


def _lazy(part: str):
    def get(self):
        a = self._loaded.get(part)
        if a is None:
            col = open_edges(self._ix, part, self.m)
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
    setattr(StreamedGraph, _p, _lazy(_p))
