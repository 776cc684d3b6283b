"""Patch: changed rows that keep their edge count, written over the stored CSR in place (issue 16).

A one-file text change at 1M nodes marked ~2,000 rows dirty (the loader writes every edge of
the changed file again, the neighbour step one ``similar_text`` list) although a few of them
differ, and the splice (:mod:`.splice`) reads, rebuilds and writes every edge array whenever
any row changes: 213 MB, 2.3-2.7 s of a 5 s reindex. When the node set is the same and every
dirty row keeps its edge count, :func:`patch_rows` instead

1. reads the dirty rows' stored spans of ``indices``, ``weights`` and ``etype`` and keeps the
   rows whose new edges differ (targets, float32 weights or type numbers, in CSR order);
2. writes those rows' spans over the stored arrays (incremental blob I/O);
3. moves, in ``rperm``, every edge whose target changed from its old target's group to its new
   one's, in edge-number order (:func:`move_reverse`): the stretch between the first and the
   last place touched is rewritten, read and written in chunks, and ``rindptr`` takes the
   in-degree changes.

The arrays are then those the splice writes (tested against it). Anything else (a row gains or
loses edges, a node comes or goes, no incremental blob I/O) returns None: the caller splices.
"""
from __future__ import annotations

import numpy as np

from ...store.blobio import BLOB_IO
from .csr import PREFIX, open_edges

__all__ = ["patch_rows", "move_reverse", "row_values", "unchanged_rows"]

CHUNK = 1 << 20


def row_values(col, indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The values of ``rows`` (ascending positions) of an edge array (an array or a stored
    one, sliced), concatenated; one read per run of consecutive rows."""
    if not len(rows):
        return np.zeros(0, dtype=col.dtype)
    brk = np.flatnonzero(np.diff(rows) != 1) + 1
    return np.concatenate([col[int(indptr[rows[a]]):int(indptr[rows[b - 1] + 1])]
                           for a, b in zip(np.r_[0, brk].tolist(), np.r_[brk, len(rows)].tolist())])


def move_reverse(rperm, rindptr: np.ndarray, edges: np.ndarray, old_t: np.ndarray, new_t: np.ndarray,
                 write=None, chunk: int = CHUNK) -> np.ndarray:
    """Move forward edges ``edges`` from target ``old_t`` to ``new_t`` in the reverse
    permutation (in-edges by target, then edge number). ``rperm``: sliced (``rperm[a:b]``)
    and written through ``write(start, values)`` (default: assignment into ``rperm``, an
    array). Only the stretch between the first and the last place touched is read and
    rewritten, ``chunk`` values at a time. Returns the new ``rindptr``."""
    if write is None:
        def write(a, v):
            rperm[a:a + len(v)] = v
    edges = np.asarray(edges, dtype=np.int64)
    old_t, new_t = np.asarray(old_t, dtype=np.int64), np.asarray(new_t, dtype=np.int64)
    n = len(rindptr) - 1
    new_rindptr = rindptr.copy()
    if not len(edges):
        return new_rindptr
    groups: dict[int, np.ndarray] = {}

    def group(t: int) -> np.ndarray:
        if t not in groups:
            groups[t] = np.asarray(rperm[int(rindptr[t]):int(rindptr[t + 1])], dtype=np.int64)
        return groups[t]

    # where each edge is now (to delete) and where it goes (insert before that old place)
    gone = np.zeros(len(edges), dtype=np.int64)
    for i, (t, e) in enumerate(zip(old_t.tolist(), edges.tolist())):
        g = group(t)
        p = int(np.searchsorted(g, e))
        if p >= len(g) or g[p] != e:
            raise ValueError("rperm does not hold an edge under its stored target")
        gone[i] = int(rindptr[t]) + p
    into = np.array([int(rindptr[t]) + int(np.searchsorted(group(t), e)) for t, e in
                     zip(new_t.tolist(), edges.tolist())], dtype=np.int64)
    order = np.lexsort((edges, new_t, into))
    into, ins = into[order], edges[order]
    gone.sort()
    lo, hi = int(min(gone[0], into[0])), int(max(gone[-1] + 1, into[-1]))
    pending = np.zeros(0, dtype=np.int64)
    out = lo
    for c0 in range(lo, hi, chunk):
        c1 = min(hi, c0 + chunk)
        piece = np.asarray(rperm[c0:c1], dtype=np.int64)
        d0, d1 = np.searchsorted(gone, [c0, c1])
        piece = np.delete(piece, gone[d0:d1] - c0)
        i0, i1 = np.searchsorted(into, [c0, c1], side="left")
        if c1 == hi:                       # (an insertion at ``hi`` goes at the very end)
            i1 = len(into)
        at = into[i0:i1]
        piece = np.insert(piece, at - c0 - (np.searchsorted(gone, at) - d0), ins[i0:i1])
        pending = np.concatenate([pending, piece])
        k = min(len(pending), c1 - out)    # (never past what has been read)
        write(out, pending[:k])
        out, pending = out + k, pending[k:]
    write(out, pending)
    if out + len(pending) != hi:
        raise ValueError(f"rperm stretch {lo}..{hi} rewritten as {out + len(pending) - lo} values")
    delta = np.bincount(new_t, minlength=n) - np.bincount(old_t, minlength=n)
    new_rindptr[1:] += np.cumsum(delta).astype(new_rindptr.dtype)
    return new_rindptr


def patch_rows(ix, indptr: np.ndarray, ids: np.ndarray, old_ids: np.ndarray, dirty: np.ndarray,
               src: np.ndarray, dst: np.ndarray, w: np.ndarray, et: np.ndarray, n_types: int, m: int) -> dict | None:
    """Steps 1-3 of the module docstring for the ``dirty`` sources (node ids) whose resolved
    out-edges are ``src``/``dst`` (ids), ``w`` (float32), ``et`` (type numbers). Returns
    ``{"rows": changed row positions, "edges": values written per array, "rindptr": the new
    one}``, or None when the change does not keep the rows' shapes (then splice)."""
    n = len(ids)
    if not BLOB_IO or n != len(old_ids) or not np.array_equal(ids, old_ids):
        return None
    rows = np.searchsorted(ids, dirty)
    if len(rows) and (int(rows.max()) >= n or not np.array_equal(ids[rows], dirty)):
        return None
    ns, nd = np.searchsorted(ids, src), np.searchsorted(ids, dst)
    o = np.lexsort((nd, ns))                                  # CSR order (parallel edges by id)
    ns, nd, w, et = ns[o], nd[o], w[o], et[o]
    deg = np.diff(indptr).astype(np.int64)[rows]
    if not np.array_equal(np.bincount(np.searchsorted(rows, ns), minlength=len(rows)), deg):
        return None
    cols = {}
    try:
        for part in ("indices", "weights", "etype", "rperm"):
            cols[part] = open_edges(ix, part, m, writable=True)
            if cols[part] is None:
                return None
        if n_types > np.iinfo(cols["etype"].dtype).max + 1:
            return None
        old = {p: row_values(cols[p], indptr, rows) for p in ("indices", "weights", "etype")}
        new = {"indices": nd.astype(old["indices"].dtype), "weights": w.astype(old["weights"].dtype),
               "etype": et.astype(old["etype"].dtype)}
        moved = old["indices"] != new["indices"]
        differs = moved | (old["weights"] != new["weights"]) | (old["etype"] != new["etype"])
        at = np.zeros(len(rows) + 1, dtype=np.int64)          # row k's values: at[k]..at[k + 1]
        np.cumsum(deg, out=at[1:])
        hit = np.unique(np.repeat(np.arange(len(rows)), deg)[differs])
        for k in hit.tolist():
            a, b, e0 = int(at[k]), int(at[k + 1]), int(indptr[rows[k]])
            for part in ("indices", "weights", "etype"):
                cols[part].write(e0, new[part][a:b])
        edge_no = np.repeat(indptr[rows].astype(np.int64) - at[:-1], deg) + np.arange(int(at[-1]))
        rindptr = ix.get_array(PREFIX + "rindptr")
        if rindptr is None or len(rindptr) != n + 1:
            raise ValueError("stored graph unreadable (blob rindptr)")
        rindptr = move_reverse(cols["rperm"], rindptr, edge_no[moved], old["indices"][moved],
                               new["indices"][moved], write=cols["rperm"].write)
        return {"rows": rows[hit], "edges": int((at[hit + 1] - at[hit]).sum()), "moved": int(moved.sum()),
                "rindptr": rindptr}
    finally:
        for c in cols.values():
            if c is not None:
                c.close()


def unchanged_rows(ix, indptr: np.ndarray, old_ids: np.ndarray, ids: np.ndarray, dirty: np.ndarray,
                   src: np.ndarray, dst: np.ndarray, w: np.ndarray, et: np.ndarray, m: int) -> np.ndarray:
    """Which of the ``dirty`` sources (ascending node ids, live before and after) hold exactly
    their stored row: the same targets (old positions renumbered to the new node set), float32
    weights and type numbers, in CSR order. A bool per dirty source.

    For the splice: a node added to a file reloads the whole file, so its ~2,000 nodes' rows
    are marked dirty although only the new node's row is new; kept as they are, the rows
    before it do not move, and the splice writes the edge arrays from the new row on (the
    tail, for a node at the end of the id space) instead of from the file's first row."""
    same = np.zeros(len(dirty), dtype=bool)
    if not BLOB_IO or not len(dirty):
        return same
    n_old = len(old_ids)
    at_old = np.minimum(np.searchsorted(old_ids, dirty), max(n_old - 1, 0))
    at_new = np.minimum(np.searchsorted(ids, dirty), max(len(ids) - 1, 0))
    live = (old_ids[at_old] == dirty) & (ids[at_new] == dirty) if n_old and len(ids) else same.copy()
    k = np.searchsorted(dirty, src)
    deg_new = np.bincount(k, minlength=len(dirty))
    deg_old = np.diff(indptr).astype(np.int64)[at_old]
    cand = live & (deg_new == deg_old)
    if not cand.any():
        return same
    rows = at_old[cand]
    edge_in = cand[k]                                      # the candidates' new edges
    ns, nd = np.searchsorted(ids, src[edge_in]), np.searchsorted(ids, dst[edge_in])
    o = np.lexsort((nd, ns))                               # CSR order (parallel edges by id)
    nd, nw, nt = nd[o], w[edge_in][o], et[edge_in][o].astype(np.int64)
    cols = {}
    try:
        for part in ("indices", "weights", "etype"):
            cols[part] = open_edges(ix, part, m)
            if cols[part] is None:
                return same
        old_t = row_values(cols["indices"], indptr, rows).astype(np.int64)
        old_w = row_values(cols["weights"], indptr, rows)
        old_e = row_values(cols["etype"], indptr, rows).astype(np.int64)
    finally:
        for c in cols.values():
            if c is not None:
                c.close()
    if len(ids) == n_old and np.array_equal(ids, old_ids):
        old_pos = old_t
    else:                                                  # old positions -> new ones (-1: gone)
        old_pos = np.full(len(old_t), -1, dtype=np.int64)
        if len(old_t):
            oid = old_ids[old_t]
            at = np.minimum(np.searchsorted(ids, oid), len(ids) - 1)
            ok = ids[at] == oid
            old_pos[ok] = at[ok]
    differs = (old_pos != nd) | (old_w != nw.astype(old_w.dtype)) | (old_e != nt)
    bad = np.zeros(int(cand.sum()), dtype=bool)
    bad[np.repeat(np.arange(len(rows)), deg_old[cand])[differs]] = True
    same[np.flatnonzero(cand)[~bad]] = True
    return same
