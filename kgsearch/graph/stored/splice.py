"""Splice: the stored CSR arrays rewritten one at a time around the changed rows.

When a change does not keep every changed row's edge count, or the node set changed (the patch,
:mod:`.patch`, does not apply), :func:`splice_stored` replaces the out-edge rows of the changed
sources in the stored arrays without sorting the graph again (the plan and the array
operations are :mod:`kgsearch.graph.kernels.splice`: same arrays as ``Graph.from_edges`` on the
whole edge list, edges by (source, target), parallel edges in edge id order, the reverse
permutation by (target, source)). Each old blob is read in slices (incremental blob I/O), the
new array built, written in pieces (in place when the stored one has room:
:func:`~.csr.put_edges`, from the first value that can differ) and freed before the next kind,
so one new edge array (4 bytes an edge) is in memory at a time, where the old and the new CSR
together took ~450 MB at 1M nodes and 16.4M edges.
"""
from __future__ import annotations

import numpy as np

from ..kernels.communities import pairs_lower_bound
from ..kernels.csr import BLOB_VERSION, Graph
from ..kernels.pagerank_lean import out_weights
from ..kernels.splice import in_pointers, in_pointers_after_splice, place_new_edges, reverse_from_plan, splice_column
from . import csr
from .csr import PREFIX

__all__ = ["splice_stored"]


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


def splice_stored(ix, plan: dict, etypes: list[str], m_old: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Splice the stored arrays one at a time (read the old blob in slices, build the new
    array, write it, free it): one new edge array (4 bytes an edge) in memory, plus a bool
    an edge while the new edges' places in ``rperm`` are found. Returns the new ``rindptr``,
    the rows' summed weights (for PageRank), ``pairs_lower_bound`` (for the communities' size
    check: no second read of the indices) and the bytes written. A ValueError leaves a
    partial write that the caller's full rebuild replaces."""
    n, m = plan["n"], plan["m"]
    idx = plan["indptr"].dtype
    old_indptr = ix.get_array(PREFIX + "indptr")
    sizes = {}
    first = _first_moved(plan, m_old)
    for part, values, targets in (("indices", plan["dst"], True), ("etype", plan["t"], False),
                                  ("weights", plan["w"], False)):
        old = csr.open_edges(ix, part, m_old)
        if old is None:
            raise ValueError(f"stored graph unreadable (blob {part})")
        dtype = old.dtype
        if part == "etype" and len(etypes) > np.iinfo(dtype).max + 1:
            old.close()
            raise ValueError(f"more than {np.iinfo(dtype).max + 1} edge types")
        try:
            new = splice_column(plan, old, values, dtype, targets=targets, chunk=csr.CHUNK_EDGES)
            if part == "indices":
                old_rindptr = ix.get_array(PREFIX + "rindptr")
                if old_rindptr is not None and len(old_rindptr) == len(old_indptr):
                    rindptr = in_pointers_after_splice(plan, old_rindptr, old)
                else:
                    rindptr = in_pointers(new, n, idx, csr.CHUNK_EDGES)
                del old_rindptr
        finally:
            old.close()
        if part == "indices":
            place_new_edges(plan, new, rindptr)
            pairs = pairs_lower_bound(Graph(n, plan["indptr"], new, None, None, None, None))
        elif part == "weights":
            outw = out_weights(plan["indptr"], new, csr.CHUNK_EDGES)     # (for PageRank: no second read)
        # (targets are renumbered everywhere when node positions moved)
        csr.put_edges(ix, part, new, m, 0 if targets and not plan["same_layout"] else first)
        sizes[part] = new.nbytes
        del new
    old_rperm = csr.open_edges(ix, "rperm", m_old)
    if old_rperm is None:
        indices = ix.get_array(PREFIX + "indices")[:m]      # (no usable reverse side: sort)
        rperm = np.argsort(indices, kind="stable").astype(idx)
        del indices
    else:
        try:
            rperm = reverse_from_plan(plan, old_indptr, old_rperm, csr.CHUNK_EDGES)
        finally:
            old_rperm.close()
    csr.put_edges(ix, "rperm", rperm, m, 0)     # (edge numbers past the change all shift)
    sizes["rperm"] = rperm.nbytes
    del rperm
    ix.put_array(PREFIX + "indptr", plan["indptr"])
    ix.put_array(PREFIX + "rindptr", rindptr)
    ix.put_array(PREFIX + "shape", np.array([BLOB_VERSION, n, m], dtype=np.int64))
    sizes["pointers"] = plan["indptr"].nbytes + rindptr.nbytes
    return rindptr, outw, pairs, sum(sizes.values())
