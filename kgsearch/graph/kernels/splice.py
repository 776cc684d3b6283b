"""Splicing a CSR graph (issue 16 item 2): replace the out-edge rows of some nodes, on a node
set that may have gained and lost nodes, without sorting the graph again.

:func:`splice_plan` works out, from the old row pointers alone, where every kept run of rows
and every new edge goes; :func:`splice_column` then makes one edge array at a time from an old
one that is only sliced (an array, or a stored blob read in pieces: the index's update,
:mod:`kgsearch.graph.stored.splice`, never holds an old and a new array of every kind at once);
:func:`in_pointers_after_splice`, :func:`place_new_edges` and :func:`reverse_from_plan` the
reverse side (the old ``rperm`` renumbered, in order). :func:`splice` does all of it in memory.
Reference in the tests: ``Graph.from_edges`` on the spliced edge list.
"""
from __future__ import annotations

import numpy as np

from .csr import Graph

FEW_BREAKPOINTS = 32     # reverse_from_plan: up to this many row-shift changes, found by comparisons

__all__ = ["splice", "splice_plan", "splice_column", "place_new_edges", "reverse_from_plan", "in_pointers",
           "in_pointers_after_splice", "add_reverse", "reverse_after_splice"]


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
    if n_new:
        at_c = np.minimum(at, n_new - 1)
        remap = np.where((at < n_new) & (new_ids[at_c] == old_ids), at, -1).astype(np.int64)
        del at_c
    else:                         # every node removed (the last file of an index deleted)
        remap = np.full(len(old_ids), -1, dtype=np.int64)
    del at
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
    return {"n": n_new, "m": int(indptr[-1]), "indptr": indptr, "old_indptr": old_indptr, "remap": remap, "keep_row": keep_row,
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


def in_pointers_after_splice(plan: dict, old_rindptr: np.ndarray, old_indices) -> np.ndarray:
    """The new ``rindptr`` of a splice from the old one: each kept node's in-degree, less the
    old edges of the changed rows (read from ``old_indices``, sliced by row runs), plus the new
    edges; work in the nodes and the changed edges, where :func:`in_pointers` reads every edge."""
    remap, n = plan["remap"], plan["n"]
    deg = np.zeros(n, dtype=np.int64)
    live = remap >= 0
    deg[remap[live]] = np.diff(old_rindptr).astype(np.int64)[live]
    gone = np.flatnonzero(~plan["keep_row"])
    if len(gone):
        old_indptr = plan["old_indptr"]
        brk = np.flatnonzero(np.diff(gone) != 1) + 1
        for a, b in zip(np.r_[0, brk].tolist(), np.r_[brk, len(gone)].tolist()):
            lost = remap[old_indices[int(old_indptr[gone[a]]):int(old_indptr[gone[b - 1] + 1])]]
            deg -= np.bincount(lost[lost >= 0], minlength=n)
    deg += np.bincount(plan["dst"], minlength=n)
    rindptr = np.zeros(n + 1, dtype=plan["indptr"].dtype)
    np.cumsum(deg, out=rindptr[1:])
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
    few = len(bp_edge) <= FEW_BREAKPOINTS     # (a few: compare, ~3x cheaper than a binary search)
    for c in range(0, len(old_rperm), chunk):
        e = old_rperm[c:c + chunk]
        if few:
            at_bp = np.zeros(len(e), dtype=np.int8)
            for t in bp_edge[1:].tolist():
                at_bp += e >= t
            v = bp_val[at_bp]
        else:
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
