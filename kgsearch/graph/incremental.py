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
* :func:`splice` replaces the out-edge rows of the changed source nodes in an existing CSR
  (node ids may be added or removed: positions are remapped) without sorting the graph
  again, except for the reverse permutation (a stable argsort of int32 targets);
* :func:`pagerank_csr` is the networkx-rule power iteration on the CSR arrays themselves
  (in-edges by ``rperm``, chunks of edges, float64 only per chunk), with a warm start from
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

__all__ = ["read_edges", "splice", "splice_plan", "splice_column", "place_new_edges", "reverse_from_plan",
           "in_pointers",
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


def splice_plan(old_indptr: np.ndarray, old_ids: np.ndarray, new_ids: np.ndarray, changed: np.ndarray,
                new_src: np.ndarray, new_dst: np.ndarray, new_w: np.ndarray, new_t: np.ndarray) -> dict:
    """What :func:`splice` does to every edge array, from the old row pointers alone: the new
    ``indptr``, the runs of unchanged rows to copy (``(old first edge, old end, new first
    edge)``), and where the new edges go with their (sorted) targets, weights and types. Then
    :func:`splice_column` makes one array at a time and :func:`reverse_from_plan` the reverse
    permutation, so a caller can hold one old and one new array of one kind at once."""
    n_new = len(new_ids)
    old_ids = np.asarray(old_ids, dtype=np.int64)
    new_ids = np.asarray(new_ids, dtype=np.int64)
    # old position -> new position (-1: node removed)
    at = np.searchsorted(new_ids, old_ids)
    at_c = np.minimum(at, max(n_new - 1, 0))
    remap = np.where((at < n_new) & (new_ids[at_c] == old_ids), at, -1).astype(np.int64)
    del at, at_c
    # old nodes keep their positions (nothing removed, new ids only after the old ones)
    same_layout = bool((remap == np.arange(len(old_ids))).all())
    ch_old = np.searchsorted(old_ids, changed)
    ch_old = ch_old[(ch_old < len(old_ids)) & (old_ids[np.minimum(ch_old, len(old_ids) - 1)] == changed)]
    keep_row = np.ones(len(old_ids), dtype=bool)
    keep_row[ch_old] = False
    keep_row &= remap >= 0
    # new rows, sorted by (src, dst) like from_edges (stable: parallel edges keep their order)
    ns = np.searchsorted(new_ids, np.asarray(new_src, dtype=np.int64))
    nd = np.searchsorted(new_ids, np.asarray(new_dst, dtype=np.int64))
    o = np.lexsort((nd, ns))
    ns, nd = ns[o], nd[o]
    kept_rows = np.flatnonzero(keep_row)
    if len(ns):
        kept_mark = np.zeros(n_new, dtype=bool)
        kept_mark[remap[kept_rows]] = True
        if kept_mark[ns].any():
            raise ValueError("a new edge starts at a node whose row is kept; list its source in `changed`")
        del kept_mark
    deg = np.zeros(n_new, dtype=np.int64)
    deg[remap[kept_rows]] = np.diff(old_indptr).astype(np.int64)[kept_rows]
    deg += np.bincount(ns, minlength=n_new)
    indptr = np.zeros(n_new + 1, dtype=old_indptr.dtype)
    np.cumsum(deg, out=indptr[1:])
    del deg
    runs = []                     # unchanged rows in runs of consecutive rows (one copy per run)
    if len(kept_rows):
        brk = np.flatnonzero((np.diff(kept_rows) != 1) | (np.diff(remap[kept_rows]) != 1)) + 1
        for a, b in zip(np.r_[0, brk].tolist(), np.r_[brk, len(kept_rows)].tolist()):
            r0, r1 = int(kept_rows[a]), int(kept_rows[b - 1]) + 1
            runs.append((int(old_indptr[r0]), int(old_indptr[r1]), int(indptr[remap[r0]])))
    # new rows go after whatever a row already holds (a changed row holds nothing old)
    first = np.searchsorted(ns, ns, side="left")
    pos = indptr[ns].astype(np.int64) + (np.arange(len(ns)) - first)
    return {"n": n_new, "m": int(indptr[-1]), "indptr": indptr, "remap": remap, "keep_row": keep_row,
            "same_layout": same_layout, "runs": runs, "pos": pos, "dst": nd,
            "w": np.asarray(new_w)[o], "t": np.asarray(new_t)[o]}


def splice_column(plan: dict, old, new_values: np.ndarray, dtype, targets: bool = False,
                  chunk: int = 1 << 20) -> np.ndarray:
    """One spliced edge array: the unchanged rows' part of ``old`` (anything sliced with
    ``old[a:b]``: an array, or a stored blob read ``chunk`` values at a time) and the new
    edges' ``new_values`` in their places. ``targets``: ``old`` holds node positions, remapped
    when positions moved (a kept edge to a removed node is a ValueError)."""
    out = np.empty(plan["m"], dtype=dtype)
    remap = None if plan["same_layout"] or not targets else plan["remap"]
    for e0, e1, p0 in plan["runs"]:
        for c0 in range(e0, e1, chunk):
            c1 = min(e1, c0 + chunk)
            seg = old[c0:c1]
            out[p0 + c0 - e0:p0 + c1 - e0] = seg if remap is None else remap[seg]
            del seg
    out[plan["pos"]] = np.asarray(new_values).astype(dtype, copy=False)
    if remap is not None and len(out) and int(out.min()) < 0:
        raise ValueError("an unchanged row points to a removed node; its source must be in `changed`")
    return out


def splice(g: Graph, old_ids: np.ndarray, new_ids: np.ndarray, changed: np.ndarray,
           new_src: np.ndarray, new_dst: np.ndarray, new_w: np.ndarray, new_t: np.ndarray,
           etype_names=None, reverse: bool = True, chunk: int = 1 << 20) -> Graph:
    """A new graph: ``g`` (positions = ``old_ids``) with the out-edges of the node ids in
    ``changed`` replaced by the given edges (``new_src``/``new_dst`` are node *ids*), on the
    node set ``new_ids`` (ascending; ids gone from it must be in ``changed``, and so must the
    sources of every edge that pointed to them).

    Unchanged rows are copied (their targets remapped, ``chunk`` edges at a time, when node
    positions moved); only the new rows are sorted, and the reverse permutation is updated
    (:func:`reverse_after_splice`). ``reverse=False`` leaves ``rindptr``/``rperm`` as None:
    call :func:`reverse_after_splice` with the old ``indptr`` and ``rperm`` once the old
    forward arrays are freed (a lower peak). The same steps as :func:`splice_plan`,
    :func:`splice_column` and :func:`reverse_from_plan`, which the index's update runs one
    stored array at a time.
    """
    plan = splice_plan(g.indptr, old_ids, new_ids, changed, new_src, new_dst, new_w, new_t)
    et_dtype = g.etype.dtype if len(g.etype) else np.uint8
    nt = plan["t"].astype(et_dtype)
    et_dtype = nt.dtype if nt.dtype.itemsize > g.etype.dtype.itemsize else g.etype.dtype
    out = Graph(plan["n"], plan["indptr"],
                splice_column(plan, g.indices, plan["dst"], g.indices.dtype, targets=True, chunk=chunk),
                splice_column(plan, g.weights, plan["w"], g.weights.dtype, chunk=chunk),
                splice_column(plan, g.etype, nt, et_dtype, chunk=chunk), None, None,
                etype_names if etype_names is not None else g.etype_names)
    out._cache["splice"] = plan
    if reverse:
        reverse_after_splice(out, g.indptr, g.rperm, g.rindptr, chunk)
    return out


def in_pointers(indices, n: int, dtype, chunk: int = 1 << 20) -> np.ndarray:
    """``rindptr`` from the targets (``indices``: an array or anything sliced, in chunks)."""
    count = np.zeros(n, dtype=np.int64)
    for c in range(0, len(indices), chunk):
        count += np.bincount(indices[c:c + chunk], minlength=n)
    rindptr = np.zeros(n + 1, dtype=dtype)
    np.cumsum(count, out=rindptr[1:])
    return rindptr


def reverse_after_splice(g: Graph, old_indptr: np.ndarray, old_rperm: np.ndarray | None,
                         old_rindptr: np.ndarray | None = None, chunk: int = 1 << 18) -> Graph:
    """Fill ``rindptr``/``rperm`` of a graph :func:`splice` made, from the old graph's forward
    row pointers and ``rperm`` (:func:`place_new_edges`, :func:`reverse_from_plan`); without
    an old reverse side, by :func:`add_reverse`."""
    plan = g._cache.pop("splice")
    if old_rperm is None or old_rindptr is None:
        return add_reverse(g)
    g.rindptr = in_pointers(g.indices, g.n, g.indptr.dtype)
    place_new_edges(plan, g.indices, g.rindptr)
    g.rperm = reverse_from_plan(plan, old_indptr, old_rperm, chunk)
    return g


def place_new_edges(plan: dict, indices: np.ndarray, rindptr: np.ndarray) -> None:
    """Where the new edges go in the new ``rperm`` (in-edges by target, then edge number): at
    ``rindptr[target]`` + the number of in-edges of that target with a smaller edge number,
    counted on the new ``indices`` (one gather of a bool per edge, then only the in-edges of
    the new edges' targets). Kept in ``plan`` as ``rnew`` (edge numbers, in ``rperm`` order)
    and ``rat`` (the number of kept in-edges before each)."""
    order = np.lexsort((plan["pos"], plan["dst"]))
    ne, nt = np.asarray(plan["pos"], dtype=np.int64)[order], np.asarray(plan["dst"], dtype=np.int64)[order]
    place = np.zeros(len(ne), dtype=np.int64)
    if len(ne):
        mark = np.zeros(plan["n"], dtype=bool)
        mark[nt] = True
        sel = np.flatnonzero(mark[indices])               # in-edges of those targets, by edge number
        big = np.int64(len(indices) + 1)
        key = indices[sel].astype(np.int64) * big + sel
        del sel
        key.sort()
        place = (rindptr[nt].astype(np.int64) + np.searchsorted(key, nt * big + ne)
                 - np.searchsorted(key, nt * big))
    plan["rnew"], plan["rat"] = ne, place - np.arange(len(ne))


def reverse_from_plan(plan: dict, old_indptr: np.ndarray, old_rperm, chunk: int = 1 << 20) -> np.ndarray:
    """The new ``rperm`` of a splice, without sorting every edge: an unchanged edge keeps its
    place among the in-edges of its target (positions and edge numbers only shift), so the old
    ``rperm`` (an array, or a stored blob: only sliced, in order) is renumbered in chunks (edge
    number + the shift of its row, found by binary search among the few rows where the shift
    changes) straight into the new array, around the new edges (:func:`place_new_edges` first).
    Same array as :func:`add_reverse` (tested)."""
    keep_row, remap, indptr, m = plan["keep_row"], plan["remap"], plan["indptr"], plan["m"]
    rows = np.flatnonzero(np.diff(old_indptr) > 0)               # rows that hold edges
    gone = np.iinfo(np.int64).min
    shift = np.full(len(rows), gone, dtype=np.int64)
    kr = keep_row[rows]
    shift[kr] = indptr[remap[rows[kr]]].astype(np.int64) - old_indptr[rows[kr]].astype(np.int64)
    run = np.ones(len(rows), dtype=bool)
    run[1:] = shift[1:] != shift[:-1]
    bp_edge, bp_val = old_indptr[rows[run]], shift[run]          # few: where the shift changes
    del rows, shift, kr, run
    ne, at = plan["rnew"], plan["rat"]
    out = np.empty(m, dtype=indptr.dtype)
    out[at + np.arange(len(at))] = ne
    o = 0
    for c in range(0, len(old_rperm), chunk):
        e = old_rperm[c:c + chunk]
        v = bp_val[np.searchsorted(bp_edge, e, side="right") - 1]
        keep = v != gone
        kept = e[keep] + v[keep]
        del e, v, keep
        # kept edge k goes to k + (new edges placed before it): a step function of k
        lo, hi = np.searchsorted(at, [o, o + len(kept)])
        before = o + int(lo)
        if lo == hi:                     # (no new edge among these)
            out[before:before + len(kept)] = kept
        else:
            step = np.cumsum(np.bincount(at[lo:hi] - o, minlength=len(kept))[:len(kept)])
            out[np.arange(before, before + len(kept), dtype=np.int64) + step] = kept
        o += len(kept)
    if o + len(ne) != m:
        raise ValueError(f"reverse update: {o} unchanged edges + {len(ne)} new, expected {m}")
    return out


def add_reverse(g: Graph) -> Graph:
    """Fill ``rindptr``/``rperm`` of a graph from its forward arrays (as ``from_edges`` does:
    forward edge numbers by target, then source)."""
    idx = g.indptr.dtype
    g.rindptr = np.zeros(g.n + 1, dtype=idx)
    np.cumsum(np.bincount(g.indices, minlength=g.n), out=g.rindptr[1:])
    g.rperm = np.argsort(g.indices, kind="stable").astype(idx)     # (target, source) order
    return g


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
