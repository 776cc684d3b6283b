"""``Graph``: a directed, weighted, typed graph as compressed sparse row (CSR) arrays.

Nodes are ``0 .. n-1``. Edges are kept sorted by (source, target); parallel edges are kept
(every kernel treats them as one edge with the summed weight, like networkx's sparse matrices).

Forward arrays (``indptr``, ``indices``, ``weights``, ``etype``) list each node's out-edges;
the reverse side is ``rindptr`` plus ``rperm``, the forward edge numbers sorted by target, so
in-edges cost one extra gather instead of a second copy of the weights and types.
Sizes for 1M edges: int32 ``indices`` and ``rperm`` (4 MB each), float32 ``weights`` (4 MB;
float64 only when float32 would change a weight and the caller did not ask for float32),
uint8 ``etype`` (1 MB) and two int32 ``indptr`` of n + 1: about 14 MB at 200K nodes.

Kernels (``pagerank``, ``hits``) build a transient "operator" (int64 source and target per edge
and float64 transition weights, 24 bytes an edge) on first use and keep it on the graph,
because numpy's gathers and ``bincount`` are ~40% faster with native-size indices. Call
:meth:`Graph.drop_caches` to free it.

Examples
--------
>>> g = Graph.from_edges([0, 0, 1], [1, 2, 2], weight=[1.0, 2.0, 1.0])
>>> g.n, g.m
(3, 3)
>>> g.successors(0).tolist()
[1, 2]
>>> g.predecessors(2).tolist()
[0, 1]
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ...arrays import unique
from ...errors import KgsearchError

__all__ = ["Graph", "GraphError", "scatter_add", "index_dtype", "row_blocks", "BLOB_VERSION", "PARTS", "EDGE_PARTS"]

BLOB_VERSION = 1
PARTS = ("indptr", "indices", "weights", "etype", "rindptr", "rperm")
EDGE_PARTS = ("indices", "weights", "etype", "rperm")      # one value an edge


class GraphError(KgsearchError, ValueError):
    """Bad arguments to a graph kernel (wrong lengths, node ids out of range, bad blobs)."""


def scatter_add(idx: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """``out[idx[k]] += weights[k]`` into a new float64 array of length ``n`` (``np.bincount``,
    which returns integers when there are no weights at all)."""
    if not len(idx):
        return np.zeros(n)
    return np.bincount(idx, weights=weights, minlength=n)


def index_dtype(limit: int) -> np.dtype:
    """int32 positions while ``limit`` fits, else int64."""
    return np.dtype(np.int32) if limit < 2**31 - 1 else np.dtype(np.int64)


def row_blocks(indptr: np.ndarray, chunk: int) -> list[tuple[int, int, int, int]]:
    """``(a, b, s, e)``: node ranges ``a:b`` of about ``chunk`` edges ``s:e`` each (one node may
    hold more); empty nodes are covered too, so the ranges tile ``0..n``."""
    n, m = len(indptr) - 1, int(indptr[-1])
    cuts = np.searchsorted(indptr, np.arange(0, max(m, 1), max(1, chunk)), side="right") - 1
    bounds = unique(np.r_[0, np.clip(cuts, 0, n), n])
    return [(int(a), int(b), int(indptr[a]), int(indptr[b])) for a, b in zip(bounds[:-1], bounds[1:])]


def _as_ids(a: Any, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1:
        raise GraphError(f"{name} must be a 1-D array of node numbers, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.mod(arr, 1) == 0):
            arr = arr.astype(np.int64)
        else:
            raise GraphError(f"{name} must hold integer node numbers 0..n-1, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


class Graph:
    """A directed weighted graph in CSR form; build it with :meth:`from_edges` or :meth:`from_blobs`.

    Attributes
    ----------
    n, m : int
        Number of nodes and of (directed) edges.
    indptr : ndarray of int32, shape (n + 1,)
        Out-edges of node ``i`` are ``indptr[i]:indptr[i + 1]``.
    indices : ndarray of int32, shape (m,)
        Target of each edge.
    weights : ndarray of float32 or float64, shape (m,)
        Edge weights (all 1 when the graph was built without weights).
    etype : ndarray of uint8/uint16, shape (m,)
        Edge-type number of each edge (0 when built without types); names in ``etype_names``.
    rindptr, rperm : ndarray of int32
        In-edges of node ``j`` are the forward edges ``rperm[rindptr[j]:rindptr[j + 1]]``,
        sorted by source.
    """

    def __init__(self, n: int, indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray,
                 etype: np.ndarray, rindptr: np.ndarray, rperm: np.ndarray,
                 etype_names: Sequence[str] = ()):
        self.n = int(n)
        self.m = int(len(indices))
        self.indptr = indptr
        self.indices = indices
        self.weights = weights
        self.etype = etype
        self.rindptr = rindptr
        self.rperm = rperm
        self.etype_names = list(etype_names)
        self._cache: dict[str, Any] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(cls, src: Any, dst: Any, weight: Any = None, num_nodes: int | None = None,
                   etype: Any = None, etype_names: Sequence[str] = (),
                   weight_dtype: Any = None) -> "Graph":
        """Build a graph from parallel arrays of edges ``src[i] -> dst[i]``.

        Parameters
        ----------
        src, dst : array_like of int
            Edge endpoints, node numbers ``0 .. num_nodes - 1``.
        weight : array_like of float, optional
            Non-negative edge weights (default 1.0 each).
        num_nodes : int, optional
            Number of nodes (default ``max(src, dst) + 1``, or 0 without edges).
        etype : array_like of int, optional
            Edge-type number per edge (``0 <= etype < 65536``), names in ``etype_names``.
        etype_names : sequence of str, optional
            Names of the edge types, indexed by type number.
        weight_dtype : dtype, optional
            Storage type of the weights. Default: float32 when that keeps every weight exact
            (integers, halves, ...), float64 otherwise.

        Returns
        -------
        Graph

        Raises
        ------
        GraphError
            Lengths differ, a node number is out of range, a weight is negative or not finite.
        """
        s = _as_ids(src, "src")
        d = _as_ids(dst, "dst")
        if len(s) != len(d):
            raise GraphError(f"src and dst must have the same length, got {len(s)} and {len(d)}")
        m = len(s)
        hi = int(max(s.max(), d.max())) + 1 if m else 0
        n = hi if num_nodes is None else int(num_nodes)
        if m and (min(s.min(), d.min()) < 0 or hi > n):
            raise GraphError(f"node numbers must be in 0..{n - 1} (num_nodes={n}); "
                             f"got {int(min(s.min(), d.min()))}..{hi - 1}")
        if n < 0:
            raise GraphError(f"num_nodes must be >= 0, got {n}")
        if weight is None:
            w = np.ones(m, dtype=np.float32 if weight_dtype is None else weight_dtype)
        else:
            w = np.asarray(weight, dtype=np.float64).reshape(-1)
            if len(w) != m:
                raise GraphError(f"weight must have one value per edge ({m}), got {len(w)}")
            if m and (not np.all(np.isfinite(w)) or w.min() < 0):
                raise GraphError("edge weights must be finite and >= 0")
            if weight_dtype is None:
                w32 = w.astype(np.float32)
                w = w32 if np.array_equal(w32.astype(np.float64), w) else w
            else:
                w = w.astype(weight_dtype)
        if etype is None:
            t = np.zeros(m, dtype=np.uint8)
        else:
            t = _as_ids(etype, "etype")
            if len(t) != m:
                raise GraphError(f"etype must have one value per edge ({m}), got {len(t)}")
            if m and (t.min() < 0 or t.max() >= 65536):
                raise GraphError("edge-type numbers must be in 0..65535")
            t = t.astype(np.uint8 if (m == 0 or t.max() < 256) else np.uint16)
        order = np.lexsort((d, s))                       # by source, then target
        idx = index_dtype(max(n, m) + 1)
        s, d, w, t = s[order], d[order], w[order], t[order]
        del order                                        # (m int64s: gone before the reverse sort)
        indptr = np.zeros(n + 1, dtype=idx)
        np.cumsum(np.bincount(s, minlength=n), out=indptr[1:])
        rorder = np.lexsort((s, d))                      # forward edge numbers by target, then source
        rindptr = np.zeros(n + 1, dtype=idx)
        np.cumsum(np.bincount(d, minlength=n), out=rindptr[1:])
        return cls(n, indptr, d.astype(idx), np.ascontiguousarray(w), t, rindptr,
                   rorder.astype(idx), etype_names)

    # ------------------------------------------------------------------ persistence
    def to_blobs(self) -> dict[str, np.ndarray]:
        """The arrays to persist (``Index.put_array`` each under a prefix); see :meth:`from_blobs`."""
        out = {p: getattr(self, p) for p in PARTS}
        out["shape"] = np.array([BLOB_VERSION, self.n, self.m], dtype=np.int64)
        return out

    @classmethod
    def from_blobs(cls, blobs: Mapping[str, np.ndarray] | Callable[[str], np.ndarray | None],
                   etype_names: Sequence[str] = (), longest: Callable[[int], int] | None = None) -> "Graph":
        """Rebuild a graph from :meth:`to_blobs` arrays (zero-copy: arrays are used as given).

        ``blobs`` is a mapping or a function ``name -> array``. ``longest(m)``: the most values
        an edge array (:data:`EDGE_PARTS`) of an ``m``-edge graph may hold (arrays stored with
        room to spare, :mod:`kgsearch.graph.stored.csr`: the first ``m`` are used); without it
        every array must have its exact length. Raises :class:`GraphError`
        when a part is missing or inconsistent.
        """
        get = blobs.get if isinstance(blobs, Mapping) else blobs
        shape = get("shape")
        if shape is None or len(shape) != 3 or int(shape[0]) != BLOB_VERSION:
            raise GraphError("graph blobs are missing or from another kgsearch version; "
                             "rebuild the index with `kgsearch index --full`")
        n, m = int(shape[1]), int(shape[2])
        parts = {}
        for p in PARTS:
            a = get(p)
            if a is None:
                raise GraphError(f"graph blob {p!r} is missing; rebuild with `kgsearch index --full`")
            parts[p] = a
        sizes = {"indptr": n + 1, "rindptr": n + 1, "indices": m, "weights": m, "etype": m, "rperm": m}
        cap = m if longest is None else longest(m)
        for p, size in sizes.items():
            if p in EDGE_PARTS and m < len(parts[p]) <= cap:   # (stored with room: the first m)
                parts[p] = parts[p][:m]
            if len(parts[p]) != size:
                raise GraphError(f"graph blob {p!r} has {len(parts[p])} values, expected {size}; "
                                 f"rebuild with `kgsearch index --full`")
        return cls(n, parts["indptr"], parts["indices"], parts["weights"], parts["etype"],
                   parts["rindptr"], parts["rperm"], etype_names)

    @property
    def nbytes(self) -> int:
        """Bytes held by the CSR arrays (not counting kernel caches)."""
        return int(sum(getattr(self, p).nbytes for p in PARTS))

    def drop_caches(self) -> None:
        """Free the transient arrays kernels keep on the graph (operator, degrees)."""
        self._cache.clear()

    def __repr__(self) -> str:
        return f"Graph(n={self.n}, m={self.m}, {self.nbytes / 1e6:.1f} MB)"

    # ------------------------------------------------------------------ degrees and caches
    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = build()
        return hit

    def out_degree(self) -> np.ndarray:
        """Number of out-edges per node (int64)."""
        return np.diff(self.indptr).astype(np.int64)

    def in_degree(self) -> np.ndarray:
        """Number of in-edges per node (int64)."""
        return np.diff(self.rindptr).astype(np.int64)

    @property
    def src(self) -> np.ndarray:
        """Source of each forward edge (int64, built on first use and cached)."""
        return self._cached("src", lambda: np.repeat(np.arange(self.n, dtype=np.int64), self.out_degree()))

    @property
    def rsrc(self) -> np.ndarray:
        """Source of each edge in reverse order (``rindptr``/``rperm``: the in-edges of a node are a
        slice), so in-edge neighbours are a gather, not a search per edge (built on first use and
        cached; int32 below 2**31 nodes: 4 bytes per edge, 2.6 MB at the 100K corpus's 658K edges)."""
        def build():
            dt = np.int32 if self.n < 2 ** 31 else np.int64
            return np.repeat(np.arange(self.n, dtype=dt), np.diff(self.indptr))[self.rperm]
        return self._cached("rsrc", build)

    def _in_sources(self, pos: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Sources (int64) of the edges at reverse positions ``pos`` (forward numbers ``e``): from
        :attr:`rsrc` once asked for more than building it costs (a search per edge costs about
        log2(n) steps, the array m), else searched for in ``indptr`` (a few nodes' edges at index
        time never build it)."""
        rs = self._cache.get("rsrc")
        if rs is None and len(pos) * max(1, int(self.n).bit_length()) > self.m:
            rs = self.rsrc
        if rs is not None:
            return rs[pos].astype(np.int64)
        return np.searchsorted(self.indptr, e, side="right").astype(np.int64) - 1

    @property
    def dst(self) -> np.ndarray:
        """Target of each forward edge as int64 (cached)."""
        return self._cached("dst", lambda: self.indices.astype(np.int64))

    @property
    def out_weight(self) -> np.ndarray:
        """Sum of out-edge weights per node (float64, cached)."""
        return self._cached("out_weight", lambda: scatter_add(
            self.src, self.weights.astype(np.float64), self.n))

    @property
    def in_weight(self) -> np.ndarray:
        """Sum of in-edge weights per node (float64, cached)."""
        return self._cached("in_weight", lambda: scatter_add(
            self.dst, self.weights.astype(np.float64), self.n))

    # ------------------------------------------------------------------ neighbourhoods
    def _check_nodes(self, nodes: Any) -> np.ndarray:
        a = np.atleast_1d(_as_ids(nodes, "nodes")) if np.ndim(nodes) else np.array([int(nodes)], np.int64)
        if len(a) and (a.min() < 0 or a.max() >= self.n):
            raise GraphError(f"node numbers must be in 0..{self.n - 1}, got {int(a.min())}..{int(a.max())}")
        return a

    def successors(self, node: int) -> np.ndarray:
        """Targets of ``node``'s out-edges (a view, sorted, repeats for parallel edges)."""
        i = int(self._check_nodes(node)[0])
        return self.indices[self.indptr[i]:self.indptr[i + 1]]

    def predecessors(self, node: int) -> np.ndarray:
        """Sources of ``node``'s in-edges (sorted)."""
        e = self.in_edge_ids(node)
        return self.src[e] if len(e) else np.zeros(0, dtype=np.int64)

    def out_edge_ids(self, nodes: Any) -> np.ndarray:
        """Forward edge numbers of all out-edges of ``nodes`` (int64), node by node."""
        return _ranges(self.indptr, self._check_nodes(nodes))

    def in_edge_ids(self, nodes: Any) -> np.ndarray:
        """Forward edge numbers of all in-edges of ``nodes`` (int64), node by node."""
        pos = _ranges(self.rindptr, self._check_nodes(nodes))
        return self.rperm[pos].astype(np.int64)

    def edges(self, ids: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(src, dst, weight, etype)`` of the given forward edge numbers (default: all edges).

        Examples
        --------
        >>> g = Graph.from_edges([0, 1], [1, 2])
        >>> [a.tolist() for a in g.edges(g.in_edge_ids(2))]
        [[1], [2], [1.0], [0]]
        """
        if ids is None:
            return self.src, self.dst, self.weights, self.etype
        e = np.asarray(ids, dtype=np.int64)
        src = np.searchsorted(self.indptr, e, side="right") - 1
        return src, self.indices[e].astype(np.int64), self.weights[e], self.etype[e]

    def neighbors(self, nodes: Any, direction: str = "out", types: Any = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Edges touching ``nodes``: ``(node, neighbour, weight, etype)`` arrays.

        Parameters
        ----------
        nodes : int or array_like of int
        direction : {"out", "in", "both"}
            Follow out-edges, in-edges, or both. For in-edges ``neighbour`` is the source.
        types : array_like of int, optional
            Keep only edges whose type number is in ``types``.
        """
        if direction not in ("out", "in", "both"):
            raise GraphError(f"direction must be 'out', 'in' or 'both', got {direction!r}")
        # the queried end of each edge is its node repeated by its degree, an in-edge's source
        # read from ``rsrc``: no search per edge (hub neighbourhoods hold tens of thousands)
        nodes = self._check_nodes(nodes)
        parts = []
        if direction in ("out", "both"):
            e, counts = _ranges_counts(self.indptr, nodes)
            parts.append((np.repeat(nodes, counts), self.indices[e].astype(np.int64),
                          self.weights[e], self.etype[e]))
        if direction in ("in", "both"):
            pos, counts = _ranges_counts(self.rindptr, nodes)
            e = self.rperm[pos]
            parts.append((np.repeat(nodes, counts), self._in_sources(pos, e), self.weights[e], self.etype[e]))
        node, nb, w, t = (np.concatenate(x) for x in zip(*parts))
        if types is not None:
            keep = np.isin(t, np.asarray(types))
            node, nb, w, t = node[keep], nb[keep], w[keep], t[keep]
        return node, nb, w, t

    def neighbors_out_in(self, nodes: Any, types: Any = None) -> tuple[tuple, tuple]:
        """Out- then in-edges of ``nodes``: ``(neighbors(nodes, "out", types), neighbors(nodes,
        "in", types))`` (a StoredGraph reads its rows once for both), the nodes checked once and
        no direction's arrays copied (the query pipeline asks a few times a search: a third of
        the numpy calls of the two :meth:`neighbors` calls)."""
        nodes = self._check_nodes(nodes)
        e, counts = _ranges_counts(self.indptr, nodes)
        out = (np.repeat(nodes, counts), self.indices[e].astype(np.int64), self.weights[e], self.etype[e])
        pos, counts = _ranges_counts(self.rindptr, nodes)
        e = self.rperm[pos]
        inn = (np.repeat(nodes, counts), self._in_sources(pos, e), self.weights[e], self.etype[e])
        if types is not None:
            types = np.asarray(types)
            keep_o, keep_i = np.isin(out[3], types), np.isin(inn[3], types)
            out, inn = tuple(x[keep_o] for x in out), tuple(x[keep_i] for x in inn)
        return out, inn

    def out_in_counts(self, nodes: Any) -> tuple[tuple, tuple]:
        """:meth:`neighbors_out_in` without the queried ends and the types: ``(neighbour,
        weight, count per node)`` of the out- then the in-edges of ``nodes``, node by node (a
        node's edges are ``count`` long, in ``nodes`` order: ``np.repeat(nodes, count)`` are
        the queried ends). For kernels that spread a value per node over its edges."""
        nodes = self._check_nodes(nodes)
        e, co = _ranges_counts(self.indptr, nodes)
        pos, ci = _ranges_counts(self.rindptr, nodes)
        ei = self.rperm[pos]
        return (self.indices[e].astype(np.int64), self.weights[e], co), (self._in_sources(pos, ei), self.weights[ei], ci)

    def bfs(self, seeds: Any, hops: int, direction: str = "out") -> np.ndarray:
        """Nodes within ``hops`` steps of ``seeds`` (sorted int64, seeds included)."""
        seen = np.zeros(self.n, dtype=bool)
        frontier = unique(self._check_nodes(seeds))
        seen[frontier] = True
        for _ in range(int(hops)):
            if not len(frontier):
                break
            nb = self.neighbors(frontier, direction)[1]
            nb = unique(nb[~seen[nb]])
            seen[nb] = True
            frontier = nb
        return np.flatnonzero(seen)

    # ------------------------------------------------------------------ derived graphs
    def subgraph(self, nodes: Any) -> "Graph":
        """The graph induced by ``nodes``; node ``k`` of the result is ``nodes[k]``."""
        keep = self._check_nodes(nodes)
        pos = np.full(self.n, -1, dtype=np.int64)
        pos[keep] = np.arange(len(keep))
        e = self.out_edge_ids(keep)
        d = self.indices[e]
        inside = pos[d] >= 0
        e = e[inside]
        s = np.repeat(np.arange(len(keep)), self.out_degree()[keep])[inside]
        return Graph.from_edges(s, pos[self.indices[e]], self.weights[e], len(keep),
                                self.etype[e], self.etype_names, weight_dtype=self.weights.dtype)

    def edge_subgraph(self, mask: np.ndarray) -> "Graph":
        """The graph with only the edges where ``mask`` (per forward edge) is true."""
        mask = np.asarray(mask, dtype=bool)
        return Graph.from_edges(self.src[mask], self.indices[mask], self.weights[mask], self.n,
                                self.etype[mask], self.etype_names, weight_dtype=self.weights.dtype)

    def filter_types(self, types: Any) -> "Graph":
        """The graph with only edges whose type number (or name) is in ``types``."""
        ids = [self.etype_names.index(t) if isinstance(t, str) else int(t) for t in types
               if not isinstance(t, str) or t in self.etype_names]
        return self.edge_subgraph(np.isin(self.etype, np.asarray(ids, dtype=np.int64)))

    def reverse(self) -> "Graph":
        """The graph with every edge turned around."""
        return Graph.from_edges(self.indices, self.src, self.weights, self.n, self.etype,
                                self.etype_names, weight_dtype=self.weights.dtype)

    def symmetrize(self) -> "Graph":
        """Edges in both directions (adjacency ``A + A.T``): for walks that ignore direction."""
        return Graph.from_edges(np.concatenate([self.src, self.dst]),
                                np.concatenate([self.dst, self.src]),
                                np.concatenate([self.weights, self.weights]), self.n,
                                np.concatenate([self.etype, self.etype]), self.etype_names,
                                weight_dtype=self.weights.dtype)

    def undirected_pairs(self, weight: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The undirected projection as unique pairs ``(u <= v, w)`` sorted by (u, v).

        The weight of a pair is the sum of all edge weights between ``u`` and ``v`` in either
        direction (1 per pair when ``weight`` is false); self-loops become pairs ``(u, u)``.
        """
        s, d = self.src, self.dst
        u, v = np.minimum(s, d), np.maximum(s, d)
        if not len(u):
            z = np.zeros(0, dtype=np.int64)
            return z, z.copy(), np.zeros(0)
        key = u * self.n + v
        uniq, inv = np.unique(key, return_inverse=True)
        w = scatter_add(inv, self.weights.astype(np.float64), len(uniq)) if weight else np.ones(len(uniq))
        return uniq // self.n, uniq % self.n, w


def _ranges(indptr: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Concatenate ``arange(indptr[i], indptr[i+1])`` for each ``i`` in ``nodes`` without a loop."""
    return _ranges_counts(indptr, nodes)[0]


def _ranges_counts(indptr: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_ranges` and each node's count (its range's length)."""
    starts = indptr[nodes].astype(np.int64)
    counts = indptr[nodes + 1].astype(np.int64) - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), counts
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return np.arange(total, dtype=np.int64) + offsets, counts
