"""Array-only graph maintenance (prototype, issue 16 item 2).

The shipped graph step (:mod:`kgsearch.graph.graph_step`) rebuilds everything on any edge change:
one ``group_concat`` string per column of the whole edge table plus one Python ``str`` per
edge for its type, ``Graph.from_edges`` with int64/float64 copies and two lexsorts, a
PageRank operator of 24 bytes an edge, and ``assign_new_nodes`` over the undirected
projection of the whole graph (a ``np.unique`` of every edge). That is ~500 MiB at 100K
nodes for a one-file change. The pieces here keep only compact arrays (int32 positions,
float32 weights, uint8 types) and do work proportional to the change, plus O(m) copies:

* :func:`read_edges` reads the edge table in id ranges (the shipped ``group_concat`` per
  column, so strings and per-edge type ``str`` objects exist for one range at a time), and
  returns the same compact arrays, in the same order and type numbering, as the shipped reader;
* :func:`splice` (:mod:`kgsearch.graph.splice`, re-exported here) replaces the out-edge rows
  of the changed source nodes in an existing CSR (node ids may be added or removed:
  positions are remapped) without sorting the graph again, one edge array at a time if asked;
* :func:`pagerank_csr` is the networkx-rule power iteration on the CSR arrays themselves
  (forward rows in chunks of edges, float64 only per chunk; the arrays may be stored blobs
  read in slices), with a warm start from
  the previous scores: a one-file change converges in a few iterations;
* :func:`assign_new_nodes_local` places new nodes in communities from their own edges only
  (same result as :func:`kgsearch.graph.graph_step.assign_new_nodes`, which sorts every edge).

Each has a reference in the tests: the shipped reader, ``Graph.from_edges`` on the spliced
edge list, ``pagerank``, ``assign_new_nodes``.
"""
from __future__ import annotations

import numpy as np

from ..config import edge_weight
from .csr import Graph
from .splice import (add_reverse, in_pointers, in_pointers_after_splice, place_new_edges, reverse_after_splice,  # noqa: F401
                     reverse_from_plan, splice, splice_column, splice_plan)

__all__ = ["read_edges", "splice", "splice_plan", "splice_column", "place_new_edges", "reverse_from_plan",
           "in_pointers", "in_pointers_after_splice",
           "add_reverse", "reverse_after_splice", "pagerank_csr", "out_weights", "assign_new_nodes_local", "place_by_edges", "changed_rows"]


def _ints(text):
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)


def _floats(text):
    return np.fromstring(text, dtype=np.float64, sep=",") if text else np.zeros(0, np.float64)


EDGE_CHUNK = 1 << 20      # edge ids per read_edges query


def read_edges(conn, node_ids: np.ndarray, table: dict, chunk: int = EDGE_CHUNK,
               where: str = "", args: tuple = ()):
    """Resolved edges as arrays: ``(src_pos int32, dst_pos int32, weight float32 (edge weight x
    type weight, computed in float64, below 0 -> 0), etype uint8/uint16, type names)``, in edge
    id order, types numbered in order of first appearance (as the graph step numbers them).
    ``node_ids``: ascending live ids (positions). ``where``/``args``: an extra SQL condition
    (e.g. ``src IN (...)``).

    Read in ranges of ``chunk`` edge ids, one ``group_concat`` row per edge type in a range,
    parsed by numpy and sorted back into id order, into arrays allocated once: no Python
    object per edge and one range's text alive at a time. (One ``group_concat`` over the whole
    table with a Python string per edge for its type, and int64/float64 arrays, peaked at
    1,370 MiB for a full graph rebuild at 1M nodes and 16.4M edges; 1,142 MiB with this.)
    """
    cond = "dst IS NOT NULL" + (f" AND ({where})" if where else "")
    n, lo, hi = conn.execute(f"SELECT count(*), min(id), max(id) FROM edges WHERE {cond}", args).fetchone()
    src, dst = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
    w, et = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.uint16)
    code: dict[str, int] = {}
    tw: list[float] = []
    at = 0
    for start in range(int(lo or 0), int(hi or -1) + 1, chunk):
        parts = [(t, _ints(i), _ints(a), _ints(b), _floats(c)) for t, i, a, b, c in conn.execute(
            f"SELECT type, group_concat(id), group_concat(src), group_concat(dst), group_concat(weight) "
            f"FROM edges WHERE {cond} AND id >= ? AND id < ? GROUP BY type", args + (start, start + chunk))]
        for t, eid, *_ in sorted(parts, key=lambda p: int(p[1].min())):     # first-seen order
            if t not in code:
                if len(code) >= 65536:
                    raise ValueError("more than 65536 edge types")
                code[t] = len(code)
                tw.append(edge_weight(t, table))
        if not parts:
            continue
        order = np.argsort(np.concatenate([p[1] for p in parts]), kind="stable")
        k = len(order)
        src[at:at + k] = np.searchsorted(node_ids, np.concatenate([p[2] for p in parts])[order])
        dst[at:at + k] = np.searchsorted(node_ids, np.concatenate([p[3] for p in parts])[order])
        w[at:at + k] = np.maximum(np.concatenate([p[4] * tw[code[p[0]]] for p in parts])[order], 0.0)
        et[at:at + k] = np.concatenate([np.full(len(p[1]), code[p[0]], dtype=np.uint16) for p in parts])[order]
        at += k
    if at != n:                                 # (edges changed under a read transaction: cannot happen)
        raise ValueError(f"read {at} edges, expected {n}")
    names = list(code)
    return src, dst, w, (et.astype(np.uint8) if len(names) <= 256 else et), names


def changed_rows(g: Graph, rows: np.ndarray) -> np.ndarray:
    """Forward edge numbers of the out-edges of ``rows`` (positions)."""
    return g.out_edge_ids(rows) if len(rows) else np.zeros(0, np.int64)


def out_weights(indptr: np.ndarray, weights, chunk: int = 1 << 20) -> np.ndarray:
    """Summed out-edge weight of each row (float64), ``weights`` sliced in row blocks of
    about ``chunk`` edges (an array, or a stored blob)."""
    n = len(indptr) - 1
    outw = np.zeros(n)
    for a, b, s, e in _row_blocks(indptr, chunk):
        if e > s:
            outw[a:b] = np.bincount(np.repeat(np.arange(b - a), np.diff(indptr[a:b + 1])),
                                    weights=weights[s:e].astype(np.float64), minlength=b - a)
    return outw


def _row_blocks(indptr: np.ndarray, chunk: int) -> list[tuple[int, int, int, int]]:
    n, m = len(indptr) - 1, int(indptr[-1])
    bounds = np.unique(np.r_[np.searchsorted(indptr, np.arange(0, m, max(1, chunk)), side="right") - 1, n])
    bounds = np.unique(np.r_[0, np.clip(bounds, 0, n)])
    return [(int(a), int(b), int(indptr[a]), int(indptr[b])) for a, b in zip(bounds[:-1], bounds[1:])]


def pagerank_csr(g: Graph, alpha: float = 0.85, tol: float = 1e-6, max_iter: int = 1000,
                 x0: np.ndarray | None = None, chunk: int = 1 << 20,
                 outw: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """PageRank with networkx's rule (stop at L1 change < n * tol), uniform teleport and dangling,
    on the forward CSR arrays in chunks of edges: besides the graph, one int32 source per edge
    and O(n + chunk) floats (the shipped operator holds 24 bytes an edge).
    ``x0``: warm start (e.g. last run's scores, new nodes 1/n), normalised; ``outw``: the
    rows' summed weights (:func:`out_weights`) when known. Returns (x, iterations).
    """
    n = g.n
    if n == 0:
        return np.zeros(0), 0
    # row blocks of about ``chunk`` edges: a block's sources are np.repeat(rows, degrees), so
    # no per-edge source array is kept (25 MB at 6.4M edges)
    deg = np.diff(g.indptr)
    blocks = _row_blocks(g.indptr, chunk)
    if outw is None:
        outw = out_weights(g.indptr, g.weights, chunk)
    dang = np.flatnonzero(outw <= 0)
    inv = np.divide(1.0, outw, out=np.zeros(n), where=outw > 0)
    x = np.full(n, 1.0 / n) if x0 is None else np.asarray(x0, dtype=np.float64) / float(np.sum(x0))
    for it in range(1, int(max_iter) + 1):
        xs = x * inv
        y = np.zeros(n)
        for a, b, s, e in blocks:
            if e > s:
                y += np.bincount(g.indices[s:e], weights=np.repeat(xs[a:b], deg[a:b]) * g.weights[s:e],
                                 minlength=n)
        ds = float(x[dang].sum()) if len(dang) else 0.0
        y *= alpha
        y += (alpha * ds + 1.0 - alpha) / n
        err = float(np.abs(y - x).sum())
        x = y
        if err < n * tol:
            return x, it
    from .pagerank import PowerIterationFailedConvergence
    raise PowerIterationFailedConvergence(max_iter, "pagerank")


def place_by_edges(labels: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray,
                   rounds: int = 10) -> np.ndarray:
    """The placing rule of :func:`kgsearch.graph.graph_step.assign_new_nodes`, on directed pairs
    ``a -> b`` (a: a node to place, b: its neighbour, weight ``w``; both directions listed):
    in rounds, an unlabelled node takes its neighbours' label of largest summed weight (ties to
    the smallest label); the rest form new communities, one per connected group. Changes
    ``labels`` in place and returns it."""
    for _ in range(rounds):
        sel = (labels[a] < 0) & (labels[b] >= 0)
        if not sel.any():
            break
        top = int(labels.max()) + 1
        na, lb, wt = a[sel], labels[b[sel]].astype(np.int64), w[sel]
        key = na * top + lb
        uk, inv = np.unique(key, return_inverse=True)
        tot = np.bincount(inv, weights=wt)
        node, lab = uk // top, uk % top
        order = np.lexsort((lab, -tot, node))
        node, lab = node[order], lab[order]
        first = np.ones(len(node), dtype=bool)
        first[1:] = node[1:] != node[:-1]
        labels[node[first]] = lab[first]
    rest = np.flatnonzero(labels < 0)
    if len(rest):
        parent = {int(x): int(x) for x in rest}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        inner = (labels[a] < 0) & (labels[b] < 0)
        for x, y in zip(a[inner].tolist(), b[inner].tolist()):
            rx, ry = find(x), find(y)
            if rx != ry:
                parent[max(rx, ry)] = min(rx, ry)
        nxt = int(labels.max()) + 1 if (labels >= 0).any() else 0
        names: dict[int, int] = {}
        for x in rest.tolist():
            r = find(x)
            if r not in names:
                names[r] = nxt
                nxt += 1
            labels[x] = names[r]
    return labels


def assign_new_nodes_local(g: Graph, labels: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, int]:
    """:func:`kgsearch.graph.graph_step.assign_new_nodes` reading only the unlabelled nodes' own
    edges (both directions), so the cost is proportional to the new nodes, not the graph."""
    labels = np.asarray(labels, dtype=np.int32).copy()
    todo = int((labels < 0).sum())
    if not todo:
        return labels, 0
    new = np.flatnonzero(labels < 0)
    a, b, w, _ = g.neighbors(new, "both")            # a: the new node, b: its neighbour
    keep = a != b
    a, b, w = a[keep], b[keep], w[keep].astype(np.float64)
    return place_by_edges(labels, a, b, w, rounds), todo
