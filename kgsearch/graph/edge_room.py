"""Room to spare in the stored edge arrays (``graph.indices``, ``weights``, ``etype``,
``rperm``): stored longer than the graph's ``m`` edges, zeros after them, so that an
incremental run whose change adds or drops a few edges rewrites the arrays in place
(:func:`kgsearch.store.blobio.put_stored`) instead of as new blobs: at 1M nodes (16.4M edges,
213 MB of edge arrays) that was most of a one-file reindex's graph step. ``graph.shape``
holds ``m``; :meth:`kgsearch.graph.csr.Graph.from_blobs` reads the first ``m`` values."""
from __future__ import annotations

__all__ = ["EDGE_PARTS", "edge_capacity", "edge_capacity_max"]

EDGE_PARTS = ("indices", "weights", "etype", "rperm")      # one value an edge


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
