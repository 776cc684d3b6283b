"""The graph's second stored form: per-node adjacency rows, read one node at a time, for
indexes whose CSR would not fit a phone's query budget.

A query only looks at the edges around a few hundred candidates and seeds (proximity, intent
edges, neighbour means, a pruned walk, HITS on the walk's top nodes), but the CSR blobs are
loaded whole: 88 MB resident at 1M nodes and 6.4M edges, 222 MB with the ``similar_text``
lists (16.4M edges). For graphs of at least ``graph_adjacency_rows`` edges (a setting, default
:data:`ROWS_FROM_EDGES`) the graph step also writes table ``graph_adj``: one row per node with
edges, ``(node id, number of out-edges, data)``, where ``data`` packs the node's out-edges in
CSR order and then its in-edges in the reverse permutation's order, each entry ``(neighbour
node id, float32 weight, uint16 type number)`` (:data:`ENTRY`; ids int64 when an id needs it,
meta ``graph.adjacency``). Keyed by node id, so a node added or removed elsewhere does not
move any other row; an incremental run rewrites the rows of the changed sources and of their
old and new targets.

:class:`StoredGraph` answers :meth:`neighbors` and :meth:`subgraph` exactly as the in-memory
:class:`~kgsearch.graph.kernels.csr.Graph` does (same edges, same order, so the same
floating-point sums), and :func:`kgsearch.graph.kernels.rows_walk.rwr_rows` is the pruned walk
of :func:`kgsearch.graph.kernels.pagerank.rwr` over it (its sparse phase, step for step).
``tests/graph/test_rows.py`` checks both against the in-memory graph, and whole searches
against the CSR path.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...arrays import unique
from ..kernels.csr import Graph, GraphError

__all__ = ["StoredGraph", "sync", "write_all", "update_rows", "clear", "stored_meta", "entry_dtype", "out_edges",
           "id_dtype", "Size",
           "ROWS_FROM_EDGES", "TABLE", "META"]

TABLE = "graph_adj"
META = "graph.adjacency"
ROWS_FROM_EDGES = 2_000_000      # CSR of ~26 MB and up: about a fifth of the phone query budget
CACHE_ENTRIES = 1 << 18          # edges kept from earlier reads (about 2.5 MB): a walk reads its rows again


def entry_dtype(id_dtype: str) -> np.dtype:
    """One record of a row: (neighbour node id, float32 weight, uint16 type number)."""
    return np.dtype([("nb", id_dtype), ("w", "<f4"), ("t", "<u2")])


ENTRY = entry_dtype("<i4")
_EMPTY = (0, b"")


def stored_meta(ix) -> dict | None:
    """``{"id_dtype", "edges", "nodes"}`` when the index holds adjacency rows, else None."""
    m = ix.meta_json(META)
    return m if isinstance(m, dict) and m.get("id_dtype") else None


def clear(ix) -> None:
    """Drop the rows (the graph is small enough to be loaded whole)."""
    if stored_meta(ix) is not None:
        ix.conn.execute(f"DELETE FROM {TABLE}")
        ix.set_meta_json(META, None)


# ---------------------------------------------------------------------- writing
def _rows(g: Graph, ids: np.ndarray, a: int, b: int, entry: np.dtype):
    """``(node id, out-degree, data)`` for positions ``a..b-1`` with at least one edge."""
    ip = g.indptr
    deg_o = np.diff(ip[a:b + 1]).astype(np.int64)
    deg_i = np.diff(g.rindptr[a:b + 1]).astype(np.int64)
    tot = deg_o + deg_i
    start = np.zeros(len(tot) + 1, dtype=np.int64)
    np.cumsum(tot, out=start[1:])
    rec = np.empty(int(start[-1]), dtype=entry)
    e0, e1 = int(ip[a]), int(ip[b])
    if e1 > e0:
        at = np.arange(e1 - e0, dtype=np.int64) + np.repeat(start[:-1] - (ip[a:b].astype(np.int64) - e0), deg_o)
        rec["nb"][at] = ids[g.indices[e0:e1]]
        rec["w"][at] = g.weights[e0:e1]
        rec["t"][at] = g.etype[e0:e1]
    r0, r1 = int(g.rindptr[a]), int(g.rindptr[b])
    if r1 > r0:
        e = g.rperm[r0:r1].astype(np.int64)
        src = np.searchsorted(ip, e, side="right") - 1
        at = np.arange(r1 - r0, dtype=np.int64) + np.repeat(
            start[:-1] + deg_o - (g.rindptr[a:b].astype(np.int64) - r0), deg_i)
        rec["nb"][at] = ids[src]
        rec["w"][at] = g.weights[e]
        rec["t"][at] = g.etype[e]
    for k in np.flatnonzero(tot).tolist():
        yield int(ids[a + k]), int(deg_o[k]), rec[start[k]:start[k + 1]].tobytes()


def id_dtype(ids: np.ndarray) -> str:
    """How the rows store node ids: int32 while every id fits."""
    return "<i4" if not len(ids) or int(ids[-1]) < 2**31 - 1 else "<i8"



class Size(NamedTuple):
    """A graph's node and edge counts: what :func:`update_rows` needs of the graph when the
    new out-edges come from the ``edges`` table and the id width does not change."""
    n: int
    m: int


def write_all(ix, g: Graph, ids: np.ndarray, chunk: int = 1 << 16) -> None:
    """Write every node's row (``ids``: the node id of each position, ascending)."""
    width = id_dtype(ids)
    entry = entry_dtype(width)
    ix.conn.execute(f"DELETE FROM {TABLE}")
    for a in range(0, g.n, chunk):
        ix.conn.executemany(f"INSERT INTO {TABLE}(node, nout, data) VALUES (?, ?, ?)",
                            _rows(g, ids, a, min(g.n, a + chunk), entry))
    ix.set_meta_json(META, {"id_dtype": width, "edges": g.m, "nodes": g.n})


def update_rows(ix, g: "Graph | Size", ids: np.ndarray, old_ids: np.ndarray, dirty: np.ndarray,
                edges: tuple[list, dict] | None = None) -> int:
    """After an incremental update: patch the rows of the ``dirty`` sources (node ids) and of
    their old and new targets, and delete the rows of nodes that are gone. A dirty node's
    out-part is its new out-edges; every patched row's in-part keeps its entries from clean
    sources and takes the dirty sources' new edges, in source order (so a hub that gained one
    edge is not read edge by edge). The new out-edges of the dirty sources come from ``g``, or
    with ``edges = (edge type names, weight table)`` from the ``edges`` table (the graph
    update then never loads the whole edge arrays; ``g`` may then be a :class:`Size` while the
    id width stays). Returns the number of rows rewritten."""
    from ...store.sql import exec_in_chunks

    meta = stored_meta(ix)
    if meta is None:
        return 0
    if id_dtype(ids) != meta["id_dtype"]:
        write_all(ix, g, ids)
        return g.n
    entry = entry_dtype(meta["id_dtype"])
    dirty = np.unique(np.asarray(dirty, dtype=np.int64))
    gone = np.setdiff1d(old_ids, ids, assume_unique=True)
    live = np.intersect1d(dirty, ids, assume_unique=True)
    src, new = _new_out_edges(ix.conn, g, ids, live, edges, entry)        # by (source, target, edge id)
    old = _read_rows(ix.conn, dirty, entry)
    # a reloaded file marks all its nodes dirty; only sources whose out-edges differ matter
    # (at 1M nodes an edge added to a 2,000-node file touched 28K rows instead of a few)
    lo, hi = np.searchsorted(src, dirty, "left").tolist(), np.searchsorted(src, dirty, "right").tolist()
    dirty = np.array([d for d, a, b in zip(dirty.tolist(), lo, hi)
                      if new[a:b].tobytes() != (old[d][1][:old[d][0]].tobytes() if d in old else b"")], dtype=np.int64)
    old = {d: old[d] for d in dirty.tolist() if d in old}
    keep = np.isin(src, dirty)
    src, new = src[keep], new[keep]
    targets = [r[1]["nb"][:r[0]].astype(np.int64) for r in old.values()] + [new["nb"].astype(np.int64)]
    aff = np.setdiff1d(np.unique(np.concatenate([dirty, *targets])), gone)
    old.update(_read_rows(ix.conn, np.setdiff1d(aff, dirty), entry))
    by_dst = np.argsort(new["nb"], kind="stable")           # the new edges by (target, source, edge id)
    in_new, in_dst = new[by_dst], new["nb"][by_dst].astype(np.int64)
    in_new["nb"] = src[by_dst]
    is_dirty = set(dirty.tolist())
    empty = (0, np.zeros(0, dtype=entry))
    rows = []
    for a in aff.tolist():
        k, rec = old.get(a, empty)
        if a in is_dirty:
            out = new[np.searchsorted(src, a, "left"):np.searchsorted(src, a, "right")]
        else:
            out = rec[:k]
        inn = rec[k:]
        inn = np.concatenate([inn[~np.isin(inn["nb"], dirty)],
                              in_new[np.searchsorted(in_dst, a, "left"):np.searchsorted(in_dst, a, "right")]])
        inn = inn[np.argsort(inn["nb"], kind="stable")]
        if len(out) or len(inn):
            rows.append((a, len(out), out.tobytes() + inn.tobytes()))
    exec_in_chunks(ix.conn, f"DELETE FROM {TABLE} WHERE node IN ({{}})", np.concatenate([gone, aff]).tolist())
    ix.conn.executemany(f"INSERT INTO {TABLE}(node, nout, data) VALUES (?, ?, ?)", rows)
    ix.set_meta_json(META, {"id_dtype": meta["id_dtype"], "edges": g.m, "nodes": g.n})
    return len(aff)


def _read_rows(conn, nodes: np.ndarray, entry: np.dtype) -> dict:
    from ...store.sql import in_chunks

    return {int(n): (int(k), np.frombuffer(d, dtype=entry).copy())
            for n, k, d in in_chunks(conn, f"SELECT node, nout, data FROM {TABLE} WHERE node IN ({{}})",
                                     nodes.tolist())}


def out_edges(ix, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The stored out-edges of ``nodes`` (ids): ``(source id, target id, float32 weight)`` in
    each row's order, or None when the index holds no rows."""
    meta = stored_meta(ix)
    if meta is None:
        return None
    got = _read_rows(ix.conn, unique(np.asarray(nodes, dtype=np.int64)), entry_dtype(meta["id_dtype"]))
    parts = [(s, r[:k]) for s, (k, r) in sorted(got.items())]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return (np.repeat(np.array([s for s, _ in parts], dtype=np.int64), [len(r) for _, r in parts]),
            np.concatenate([r["nb"] for _, r in parts]).astype(np.int64),
            np.concatenate([r["w"] for _, r in parts]).astype(np.float32))


def _new_out_edges(conn, g: Graph, ids: np.ndarray, sources: np.ndarray, edges, entry: np.dtype):
    """(source id per edge, entries) of the out-edges of ``sources`` (ids, live) as the CSR
    orders them: by source, target, edge id; weights ``float32(max(weight x type weight, 0))``,
    types numbered as in the graph. From ``g``, or from the ``edges`` table."""
    if edges is None:
        node, nb, w, t = g.neighbors(np.searchsorted(ids, sources), "out")
        rec = np.empty(len(nb), dtype=entry)
        rec["nb"], rec["w"], rec["t"] = ids[nb], w, t
        return ids[node], rec
    from ...config import edge_weight
    from ...store.sql import in_chunks

    etypes, table = edges
    code = {t: i for i, t in enumerate(etypes)}
    tw = np.array([edge_weight(t, table) for t in etypes] or [0.0], dtype=np.float64)
    got = in_chunks(conn, "SELECT id, src, dst, weight, type FROM edges WHERE dst IS NOT NULL AND src IN ({})",
                    sources.tolist())
    if any(r[4] not in code for r in got):
        raise ValueError("an edge type the graph does not know")
    k = len(got)
    eid, s, d = (np.fromiter((r[j] for r in got), dtype=np.int64, count=k) for j in range(3))
    w = np.fromiter((r[3] for r in got), dtype=np.float64, count=k)
    t = np.fromiter((code[r[4]] for r in got), dtype=np.int64, count=k)
    order = np.lexsort((eid, d, s))
    rec = np.empty(k, dtype=entry)
    rec["nb"], rec["w"] = d[order], np.maximum(w * tw[t], 0.0).astype(np.float32)[order]
    rec["t"] = t[order]
    return s[order], rec


def sync(ix, g: Graph, ids: np.ndarray, rows_from: int, old_ids: np.ndarray | None = None,
         dirty: np.ndarray | None = None, edges: tuple[list, dict] | None = None) -> str:
    """Bring the rows in line with the graph just stored: all rows when the graph has at least
    ``rows_from`` edges and none are stored (or after a full rebuild: ``dirty`` None), the
    changed ones after an incremental update, none below the threshold. Returns what it did
    (for the step's info)."""
    if g.m < rows_from:
        had = stored_meta(ix) is not None
        clear(ix)
        return "dropped" if had else "none"
    if dirty is None or old_ids is None or stored_meta(ix) is None:
        write_all(ix, g, ids)
        return f"wrote {g.n} nodes"
    return f"rewrote {update_rows(ix, g, ids, old_ids, dirty, edges)} nodes"


# ---------------------------------------------------------------------- reading
class StoredGraph:
    """The query-time view of a graph kept in ``graph_adj`` rows: :meth:`neighbors` and
    :meth:`subgraph` as :class:`~kgsearch.graph.kernels.csr.Graph` has them, reading only the rows asked
    for (a bounded cache keeps recent rows across calls). Positions are indexes into
    ``node_ids``, as in the CSR."""

    def __init__(self, ix, node_ids: np.ndarray, m: int, etype_names, id_dtype: str):
        self.ix = ix
        self.node_ids = node_ids
        self.n = len(node_ids)
        self.m = int(m)
        self.etype_names = list(etype_names)
        self.entry = entry_dtype(id_dtype)
        self._rows: dict[int, tuple[int, bytes]] = {}
        self._held = 0
        self.rows_read = 0
        self.nbytes = 0                  # (no resident arrays beyond the cache)

    def __repr__(self) -> str:
        return f"StoredGraph(n={self.n}, m={self.m}, rows)"

    def _check_nodes(self, nodes: Any) -> np.ndarray:
        a = np.atleast_1d(np.asarray(nodes)).astype(np.int64).reshape(-1)
        if len(a) and (a.min() < 0 or a.max() >= self.n):
            raise GraphError(f"node numbers must be in 0..{self.n - 1}, got {int(a.min())}..{int(a.max())}")
        return a

    def _gather(self, pos: np.ndarray):
        """The rows of ``pos`` as one record array: ``(records, start, out-degree, degree)``,
        the last three aligned with ``pos``. Rows come from the cache or one chunked SQL read
        (raw bytes, joined once: no per-row array)."""
        from ...store.sql import fetch_in

        u, inv = np.unique(self.node_ids[pos], return_inverse=True)
        ul = u.tolist()
        if self._held > CACHE_ENTRIES:       # (before choosing what to read: every row asked for stays)
            self._rows.clear()
            self._held = 0
        want = [i for i in ul if i not in self._rows]
        if want:
            got = {i: (k, d) for i, k, d in fetch_in(
                self.ix.conn, f"SELECT node, nout, data FROM {TABLE} WHERE node IN ({{}})", want)}
            self.rows_read += len(got)
            size = self.entry.itemsize
            for i in want:
                r = got.get(i, _EMPTY)
                self._rows[i] = r
                self._held += len(r[1]) // size
        rows = [self._rows[i] for i in ul]
        rec = np.frombuffer(b"".join([r[1] for r in rows]), dtype=self.entry)
        tot = np.fromiter((len(r[1]) for r in rows), dtype=np.int64, count=len(rows)) // self.entry.itemsize
        nout = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        start = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(tot[:-1], out=start[1:])
        inv = inv.reshape(-1)
        return rec, start[inv], nout[inv], tot[inv]

    @staticmethod
    def _part(pos, rec, start, count):
        """(node, neighbour id, weight, type) of ``count`` records from ``start``, per node of ``pos``."""
        total = int(count.sum())
        if not total:
            z = np.zeros(0, dtype=np.int64)
            return z, z, np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.uint16)
        ends = np.cumsum(count)
        idx = np.arange(total, dtype=np.int64) + np.repeat(start - (ends - count), count)
        r = rec[idx]
        return np.repeat(pos, count), r["nb"].astype(np.int64), r["w"], r["t"]

    def positions(self, ids: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
        """Graph positions of node ids. Ids are mostly a range (a fresh index numbers its nodes
        1..n): each is first looked for at ``id - first id`` (one read), and only the misses
        are searched (``searchsorted`` alone: ~20 reads into the 8 MB id array each; 4 of a
        query's 15 ms at 1M went there). ``chunk`` ids at a time: a hub's row holds ~1M ids, and
        the lookup's temporaries must not grow with it (the query budget)."""
        ids = np.asarray(ids, dtype=np.int64)
        n = self.n
        pos = np.zeros(len(ids), dtype=np.int64)
        if not n:
            if len(ids):
                raise GraphError("an adjacency row names a node the graph does not hold; "
                                 "rebuild with `kgsearch index --full`")
            return pos
        first = int(self.node_ids[0])
        for c in range(0, len(ids), chunk):
            part = ids[c:c + chunk]
            p = pos[c:c + chunk]
            np.subtract(part, first, out=p)
            np.clip(p, 0, n - 1, out=p)
            miss = np.flatnonzero(self.node_ids[p] != part)
            if len(miss):
                p[miss] = np.minimum(np.searchsorted(self.node_ids, part[miss]), n - 1)
                if not np.array_equal(self.node_ids[p[miss]], part[miss]):
                    raise GraphError("an adjacency row names a node the graph does not hold; "
                                     "rebuild with `kgsearch index --full`")
        return pos

    def neighbors(self, nodes: Any, direction: str = "out", types: Any = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Edges touching ``nodes``: ``(node, neighbour, weight, etype)``, as
        :meth:`kgsearch.graph.kernels.csr.Graph.neighbors` (same order)."""
        if direction not in ("out", "in", "both"):
            raise GraphError(f"direction must be 'out', 'in' or 'both', got {direction!r}")
        parts = self._parts(nodes, direction in ("out", "both"), direction in ("in", "both"))
        part = parts[0] if len(parts) == 1 else tuple(np.concatenate(x) for x in zip(*parts))
        return _typed(self._mapped(part), types)

    def neighbors_out_in(self, nodes: Any, types: Any = None) -> tuple[tuple, tuple]:
        """``(neighbors(nodes, "out", types), neighbors(nodes, "in", types))`` from one read of
        the rows (as :meth:`kgsearch.graph.kernels.csr.Graph.neighbors_out_in`)."""
        out, inn = self._parts(nodes, True, True)
        return _typed(self._mapped(out), types), _typed(self._mapped(inn), types)

    def _parts(self, nodes: Any, out: bool, inn: bool) -> list:
        """The (node, neighbour id, weight, type) parts of the rows of ``nodes``, out then in."""
        pos = self._check_nodes(nodes)
        rec, start, nout, tot = self._gather(pos)
        parts = []
        if out:
            parts.append(self._part(pos, rec, start, nout))
        if inn:
            parts.append(self._part(pos, rec, start + nout, tot - nout))
        return parts

    def _mapped(self, part):
        """A part with its neighbour ids as positions and its edge types narrowed."""
        node, nb, w, t = part
        return node, self.positions(nb), w, (t.astype(np.uint8) if len(self.etype_names) <= 256 else t)

    def subgraph(self, nodes: Any) -> Graph:
        """The graph induced by ``nodes`` (as :meth:`kgsearch.graph.kernels.csr.Graph.subgraph`)."""
        keep = self._check_nodes(nodes)
        node, nb, w, t = self.neighbors(keep, "out")
        order = np.argsort(keep, kind="stable")
        at = np.searchsorted(keep[order], nb)
        at[at >= len(keep)] = 0
        inside = keep[order][at] == nb
        s = order[np.searchsorted(keep[order], node[inside])]        # (index in ``nodes``)
        return Graph.from_edges(s, order[at[inside]], w[inside], len(keep), t[inside],
                                self.etype_names, weight_dtype=np.float32)


def _typed(part, types):
    """``part`` with only the edges whose type is in ``types`` (all when None)."""
    if types is None:
        return part
    node, nb, w, t = part
    keep = np.isin(t, np.asarray(types))
    return node[keep], nb[keep], w[keep], t[keep]
