"""The CSR graph built from compact edge arrays in little memory: the same arrays, bit for bit.

:meth:`Graph.from_edges` (the reference) widens every input to int64/float64 and sorts with
``np.lexsort`` (int64 orders): at 1M nodes and 16.4M edges the graph step peaked at 1,142 MiB.
:func:`from_edge_arrays` takes :func:`~kgsearch.graph.stored.read.read_edges`' compact arrays
(int32 positions, float32 weights, uint8/uint16 types; 13-14 bytes an edge) and builds the CSR
with one int32 permutation: rows are placed by blocks of source nodes (about ``chunk`` edges
each, a stable sort of (source, target) within the block, ties in input order), which is the
order of the reference's ``lexsort((dst, src))``; each input array is freed as soon as its
sorted copy exists. The reverse permutation is a stable sort of the sorted targets by blocks of
targets (the forward edge numbers already run by source, so this is the reference's
``lexsort((src, dst))``). Gathers go ``chunk`` at a time (numpy turns an int32 index into a
temporary int64 copy). Extra memory: 4 bytes an edge plus O(chunk + n). Its PageRank
counterpart is :func:`~kgsearch.graph.kernels.pagerank_lean.pagerank_lean`.

Tests: ``tests/graph/test_build.py`` (equal arrays against the reference).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .csr import Graph, GraphError, index_dtype, row_blocks
from .splice import in_pointers

__all__ = ["from_edge_arrays", "CHUNK"]

CHUNK = 1 << 20           # edges per block (temporaries of a few int64s per edge of a block)


def _grouped_order(major: np.ndarray, minor: np.ndarray | None, indptr: np.ndarray, n: int,
                   chunk: int, idx: np.dtype) -> np.ndarray:
    """The stable sort of the edges by ``major`` (then ``minor``), as ``idx`` integers:
    ``np.lexsort((minor, major))``, block of ``major`` values by block (one pass over
    ``major`` per block; within a block an int64 key and its stable argsort)."""
    out = np.empty(len(major), dtype=idx)
    for a, b, s, e in row_blocks(indptr, chunk):
        if e == s:
            continue
        if b - a == 1:
            sel = np.flatnonzero(major == a)              # one node: its edges in input order
            if minor is not None:
                sel = sel[np.argsort(minor[sel], kind="stable")]
        else:
            sel = np.flatnonzero((major >= a) & (major < b))
            key = major[sel].astype(np.int64) - a
            if minor is not None:
                key *= n
                key += minor[sel]
            sel = sel[np.argsort(key, kind="stable")]
        out[s:e] = sel
    return out


def _gather(a: np.ndarray, order: np.ndarray, chunk: int) -> np.ndarray:
    out = np.empty(len(order), dtype=a.dtype)
    for c in range(0, len(order), chunk):
        out[c:c + chunk] = a[order[c:c + chunk]]
    return out


def from_edge_arrays(edges: list, num_nodes: int, etype_names: Sequence[str] = (),
                     chunk: int = CHUNK) -> Graph:
    """``Graph.from_edges(src, dst, weight, num_nodes, etype, etype_names,
    weight_dtype=np.float32)`` for ``edges = [src, dst, weight, etype]`` (integer positions,
    weights, type numbers: :func:`~kgsearch.graph.stored.read.read_edges`' arrays), with the
    same arrays and dtypes, in about 4 bytes an edge beyond the input and the result.

    The list is emptied: the caller must hold no other reference to the arrays if their
    memory is to go as soon as they are sorted. Raises :class:`GraphError` as ``from_edges``.
    """
    s, d, w, t = edges
    edges.clear()
    n, m = int(num_nodes), len(s)
    if not (len(d) == len(w) == len(t) == m):
        raise GraphError(f"src, dst, weight and etype must have the same length, got "
                         f"{len(s)}, {len(d)}, {len(w)} and {len(t)}")
    if n < 0:
        raise GraphError(f"num_nodes must be >= 0, got {n}")
    idx = index_dtype(max(n, m) + 1)
    if idx != np.int32 or not m:                      # (beyond 2**31 edges: the plain build)
        return Graph.from_edges(s, d, w, n, t, etype_names, weight_dtype=np.float32)
    for name, a in (("src", s), ("dst", d), ("etype", t)):
        if not np.issubdtype(a.dtype, np.integer):
            raise GraphError(f"{name} must hold integer numbers, got dtype {a.dtype}")
    lo, hi = min(int(s.min()), int(d.min())), max(int(s.max()), int(d.max()))
    if lo < 0 or hi >= n:
        raise GraphError(f"node numbers must be in 0..{n - 1} (num_nodes={n}); got {lo}..{hi}")
    if not (np.all(np.isfinite(w)) and float(w.min()) >= 0):
        raise GraphError("edge weights must be finite and >= 0")
    if int(t.min()) < 0 or int(t.max()) >= 65536:
        raise GraphError("edge-type numbers must be in 0..65535")
    tdt = np.uint8 if int(t.max()) < 256 else np.uint16
    indptr = in_pointers(s, n, idx, chunk)        # (counted a chunk at a time: bincount makes an int64 copy)
    order = _grouped_order(s, d, indptr, n, chunk, idx)
    del s
    indices = _gather(d, order, chunk)
    del d
    weights = _gather(w if w.dtype == np.float32 else np.asarray(w, dtype=np.float64).astype(np.float32),
                      order, chunk)
    del w
    etype = _gather(t, order, chunk).astype(tdt, copy=False)
    del t, order
    rindptr = in_pointers(indices, n, idx, chunk)
    rperm = _grouped_order(indices, None, rindptr, n, chunk, idx)
    return Graph(n, indptr, indices, weights, etype, rindptr, rperm, etype_names)
