"""The graph at query time: what the query engine needs from the blobs the ``graph`` step wrote.

:func:`load_context` gives a :class:`GraphContext` (positions, PageRank, communities, walks,
HITS, entity channels) cached per index generation with ``Index.cached``;
:func:`load_graph`, :func:`pagerank_scores` and :func:`community_labels` are views of it.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..arrays import unique
from .entity_keys import ENTITY_KINDS as _ENTITY_KINDS
from .entity_keys import META as ENTITY_KEYS
from .kernels.csr import Graph, GraphError
from .kernels.hits import hits
from .kernels.pagerank import PowerIterationFailedConvergence, rwr
from .kernels.rows_walk import rwr_rows
from .stored.csr import PREFIX, read_blob
from .stored.lag import load_graph as load_stored
from .stored.rows import StoredGraph, stored_meta

__all__ = ["load_context", "load_graph", "pagerank_scores", "community_labels", "GraphContext", "CODE_KINDS",
           "entity_words"]

CODE_KINDS = frozenset({"module", "class", "function", "method"})
ENTITY_KINDS = frozenset(_ENTITY_KINDS)
# the walk copies a view without some edges (GraphContext.walk_graph) up to this many kept edges
# (~18 MB with the walk's operator, an eighth of the phone's query budget; the code repositories
# of the benchmarks keep 8K-18K); past it, the walk reads the view's rows (the same scores, a few
# times slower)
WALK_COPY_EDGES = 200_000
ENTITY_DICT_MAX = 20_000        # entity/tag nodes: past this, names are matched in SQL (no resident dict)

_WORDS = re.compile(r"[^\W_][\w'\-]*", re.UNICODE)


class SkipTypes:
    """A graph without the edges of some types, as :func:`~kgsearch.graph.kernels.rows_walk.rwr_rows`
    reads one (``n``, ``m``, ``neighbors``)."""

    def __init__(self, g, type_ids, at_types=(), at_nodes=None):
        """``type_ids``: edge types left out; ``at_types`` with ``at_nodes`` (a boolean mask over
        positions): edges of those types left out where either end is a masked node."""
        self.g, self.n, self.m = g, g.n, g.m
        self.drop = np.asarray(sorted(set(type_ids)), dtype=np.int64)
        self.at_types = np.asarray(sorted(set(at_types)), dtype=np.int64)
        self.at_nodes = at_nodes
        # (a table per type number: one gather per edge instead of np.isin's sort every step)
        self._drop_t, self._at_t = _type_table(self.drop), _type_table(self.at_types)

    def keep(self, a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Which of the edges ``a - b`` of types ``t`` the view has."""
        keep = ~_in_table(self._drop_t, self.drop, t)
        if self.at_nodes is not None and len(self.at_types):
            keep &= ~(_in_table(self._at_t, self.at_types, t) & (self.at_nodes[a] | self.at_nodes[b]))
        return keep

    def neighbors(self, nodes, direction: str = "out", types=None):
        node, nb, w, t = self.g.neighbors(nodes, direction, types)
        keep = self.keep(node, nb, t)
        return node[keep], nb[keep], w[keep], t[keep]

    def weight_of(self, pos) -> np.ndarray:
        """Each position's walk weight: the summed weights of its edges, both directions."""
        pos = np.asarray(pos, dtype=np.int64)
        u = unique(pos)
        node, _, w, _ = self.neighbors(u, "both")
        return np.bincount(np.searchsorted(u, node), weights=w.astype(np.float64), minlength=len(u))[
            np.searchsorted(u, pos)]

    def as_graph(self, max_edges: int | None = None) -> Graph | None:
        """The view as an in-memory :class:`Graph` (``g`` must be one): the kept edges, whose
        ``neighbors`` are the view's, in the view's order (a node's out-edges by target, its
        in-edges by source, parallel edges as ``g`` has them; weights of ``g``'s dtype).
        ``None`` when it would keep more than ``max_edges`` edges."""
        g = self.g
        src = np.repeat(np.arange(g.n, dtype=np.int64), np.diff(g.indptr))
        dst = g.indices.astype(np.int64)
        k = self.keep(src, dst, g.etype)
        if max_edges is not None and int(k.sum()) > max_edges:
            return None
        return Graph.from_edges(src[k], dst[k], g.weights[k], g.n, g.etype[k], g.etype_names,
                                weight_dtype=g.weights.dtype)


def _type_table(ids: np.ndarray) -> np.ndarray:
    """A boolean table over edge-type numbers (0..65535, :meth:`Graph.from_edges`), true at ``ids``."""
    table = np.zeros(max(65536, int(ids.max(initial=-1)) + 1), dtype=bool)
    table[ids] = True
    return table


def _in_table(table: np.ndarray, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``np.isin(t, ids)``, read from ``ids``' :func:`_type_table`."""
    if not len(ids) or not len(t):
        return np.zeros(len(t), dtype=bool)
    if t.dtype.kind == "u" or int(t.min()) >= 0:
        if t.dtype.itemsize <= 2 or int(t.max()) < len(table):
            return table[t]
    return np.isin(t, ids)


def entity_words(text: str) -> list[str]:
    """The lower-cased words of ``text`` whose runs can name an entity or a tag (``'s`` and
    edge quotes and hyphens dropped): what :meth:`GraphContext.match_entities` matches."""
    words = [w.strip("'-") for w in _WORDS.findall(text.lower())]
    return [w[:-2] if w.endswith("'s") else w for w in words if w]


class GraphContext:
    """What the query pipeline needs from the graph, loaded once per index generation.

    Positions are the graph's node numbers (``0..n-1``); ``node_ids[pos]`` is the node id.
    """

    def __init__(self, ix, graph: Graph, node_ids: np.ndarray, pr: np.ndarray | None,
                 community: np.ndarray | None, kinds: np.ndarray | None, kind_names: list[str]):
        self.ix = ix
        self.graph = graph
        self.node_ids = node_ids
        self.pagerank = pr if pr is not None else np.zeros(graph.n, dtype=np.float32)
        self.community = community
        self.kinds = kinds if kinds is not None else np.zeros(graph.n, dtype=np.uint8)
        self.kind_names = kind_names
        self.etype_names = graph.etype_names
        self._cache: dict[str, Any] = {}

    # -------------------------------------------------------------- lookups
    def positions(self, ids) -> np.ndarray:
        """Graph positions of node ids (-1 for ids the graph does not know)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        n = len(self.node_ids)
        if not n:
            return np.full(len(ids), -1, dtype=np.int64)
        # ids are mostly a range (a fresh index numbers its nodes 1..n): each is first looked
        # for at ``id - first id`` (one read), and only the misses are searched (a binary
        # search of ~2,000 candidates in the 1M-id array: ~20 cache misses each)
        pos = ids - int(self.node_ids[0])
        np.clip(pos, 0, n - 1, out=pos)
        miss = np.flatnonzero(self.node_ids[pos] != ids)
        if len(miss):
            want = ids[miss]
            at = np.searchsorted(self.node_ids, want)
            at[at >= n] = 0
            pos[miss] = np.where(self.node_ids[at] == want, at, -1)
        return pos

    def ids_of(self, pos) -> np.ndarray:
        """Node ids of graph positions."""
        return self.node_ids[np.asarray(pos, dtype=np.int64)]

    def pagerank_at(self, pos) -> np.ndarray:
        """PageRank at positions (0 where pos is -1)."""
        pos = np.asarray(pos, dtype=np.int64)
        out = np.zeros(len(pos))
        ok = pos >= 0
        out[ok] = self.pagerank[pos[ok]]
        return out

    def communities_of(self, ids) -> np.ndarray | None:
        """Community label of each node id (-1 unknown); ``None`` when none were computed."""
        if self.community is None:
            return None
        pos = self.positions(ids)
        return np.where(pos >= 0, self.community[np.maximum(pos, 0)], -1)

    def type_ids(self, names) -> list[int]:
        """Edge-type numbers of the given type names (unknown names are left out)."""
        return [self.etype_names.index(t) for t in names if t in self.etype_names]

    def is_code_query(self, ids) -> bool:
        """True when most of the given (top) nodes are code: module, class, function, method."""
        pos = self.positions(ids)
        pos = pos[pos >= 0]
        if not len(pos):
            return False
        code = np.array([k in CODE_KINDS for k in self.kind_names] + [False], dtype=bool)
        return bool(code[self.kinds[pos]].mean() > 0.5)

    # -------------------------------------------------------------- walks and HITS
    def walk(self, seed_pos, seed_w=None, limit: int = 200, restart: float = 0.2,
             directed: bool = False, prune: float = 1e-5, skip: tuple[str, ...] = (),
             skip_at: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()), reference: bool = False,
             **kw) -> dict[int, float]:
        """RWR from seed positions: ``{position: score}`` for the ``limit`` best nodes.

        The walk follows edges both ways (callers and callees, links and backlinks) unless
        ``directed``. ``prune=1e-5`` bounds the work per step to ~100K edges (on the stdlib
        graph: ~10 ms a query instead of ~70 ms, top-10 99% the same as the exact walk); other
        keywords go to :func:`~kgsearch.graph.kernels.pagerank.rwr`. ``skip``: edge type names
        the walk does not follow; ``skip_at`` (edge type names, node kinds): those types not
        followed where either end is of those kinds (undirected walks only).

        A walk that leaves edges out is the walk of :func:`~kgsearch.graph.kernels.rows_walk.
        rwr_rows` over the rows of a :class:`SkipTypes` view. On an in-memory graph it runs as
        the CSR walk's sparse phase over the view copied once into a :class:`Graph`
        (:meth:`walk_graph`), which takes the same steps and gives the same dict, bit for bit
        (``reference=True``: walk the view's rows, the slow reference).
        """
        seed_pos = np.asarray(seed_pos, dtype=np.int64)
        if not len(seed_pos) or self.graph.m == 0:
            return {}
        w = None if seed_w is None else np.maximum(np.asarray(seed_w, dtype=np.float64), 0.0)
        if w is not None and w.sum() <= 0:
            w = None
        drop = self.type_ids(skip) if skip and not directed else []
        at = self.type_ids(skip_at[0]) if skip_at[0] and not directed else []
        if (drop or at or isinstance(self.graph, StoredGraph)) and not directed:
            view, copy = self.walk_graph(drop, at, skip_at[1]) if drop or at else (self.graph, None)
            if copy is not None and not reference:
                # the sparse phase throughout: the rows walk has no dense phase (the CSR walk's
                # dense steps sum in another order)
                s = rwr(copy, seed_pos, restart=restart, weights=w, prune=prune, direction="both",
                        **kw, sparse_fraction=float("inf"))
                return _best(np.arange(len(s)), s, limit)
            nodes, vals = rwr_rows(view, seed_pos, restart=restart, weights=w, prune=prune, **kw)
            order = np.argsort(nodes, kind="stable")          # (position order, as the CSR walk's)
            return _best(nodes[order], vals[order], limit)
        s = rwr(self.graph, seed_pos, restart=restart, weights=w, prune=prune,
                direction="out" if directed else "both", **kw)
        return _best(np.arange(len(s)), s, limit)

    def walk_graph(self, drop, at=(), at_kinds=()) -> tuple[SkipTypes, Graph | None]:
        """The graph an undirected :meth:`walk` reads when it leaves edges out: the
        :class:`SkipTypes` view without edge types ``drop`` and without types ``at`` where
        either end is of a kind in ``at_kinds``, and (for an in-memory graph) the view copied
        into a :class:`Graph` (with the operator the walk builds on it: about 90 bytes per kept edge) (``None`` for
        stored rows, and past :data:`WALK_COPY_EDGES` kept edges: those walk the view's rows).
        Built on first use and kept with the context (one per index generation)."""
        drop, at = tuple(sorted(set(drop))), tuple(sorted(set(at)))
        kinds = tuple(sorted(set(at_kinds))) if at else ()
        key = f"walk_graph:{drop}:{at}:{kinds}"
        hit = self._cache.get(key)
        if hit is None:
            mask = None
            if at:
                mask = np.array([k in kinds for k in self.kind_names] + [False], dtype=bool)[self.kinds]
            view = SkipTypes(self.graph, drop, at, mask)
            copy = view.as_graph(WALK_COPY_EDGES) if isinstance(self.graph, Graph) else None
            hit = self._cache[key] = (view, copy)
        return hit

    def hits_adjust(self, pos, seed_pos, pvec, top: int = 200) -> np.ndarray:
        """HITS on the ``top`` walk nodes (plus seeds); additive adjustments aligned with ``pos``.

        Hubs and authorities are max-normalised to [0, 1] and passed to the pipeline's formula
        (``kgsearch.graph.kernels.proximity.hits_adjust``).
        """
        from .kernels.proximity import hits_adjust as formula

        pos = np.asarray(pos, dtype=np.int64)
        pvec = np.asarray(pvec, dtype=np.float64)
        ok = (pos >= 0) & (pvec > 0)
        order = np.flatnonzero(ok)[np.argsort(-pvec[ok], kind="stable")][:top]
        nodes = unique(np.concatenate([pos[order], np.asarray(seed_pos, dtype=np.int64)]))
        adj = np.zeros(len(pos))
        if len(nodes) < 2:
            return adj
        try:
            h, a = hits(self.graph, nodes=nodes, max_iter=200, tol=1e-6)
        except PowerIterationFailedConvergence:
            return adj
        h = h / h.max() if h.max() > 0 else h
        a = a / a.max() if a.max() > 0 else a
        at = np.searchsorted(nodes, pos)
        at[at >= len(nodes)] = 0
        inside = (pos >= 0) & (nodes[at] == pos)
        is_seed = np.isin(pos, seed_pos)
        adj[inside] = formula(is_seed[inside], h[at[inside]], a[at[inside]])
        return adj

    # -------------------------------------------------------------- entity channels
    def _entities(self) -> dict[str, int]:
        """Normalised entity/tag name -> graph position (names from the node keys)."""
        if "ents" not in self._cache:
            ents: dict[str, int] = {}
            rows = self.ix.conn.execute(
                "SELECT id, key FROM nodes WHERE kind IN ('entity', 'tag')").fetchall()
            if rows:
                ids = np.array([r[0] for r in rows], dtype=np.int64)
                pos = self.positions(ids)
                for (_, key), p in zip(rows, pos.tolist()):
                    if p >= 0:
                        ents[key.split(":", 1)[-1].lower()] = p
            self._cache["ents"] = ents
        return self._cache["ents"]

    def _entity_firsts(self) -> frozenset[str]:
        """The first words of the resident entity names (:meth:`_entities`)."""
        if "ent_firsts" not in self._cache:
            self._cache["ent_firsts"] = frozenset(name.split(" ", 1)[0] for name in self._entities())
        return self._cache["ent_firsts"]

    def _entity_prefixes(self) -> list[str] | None:
        """Key prefixes of the entity/tag nodes when names are matched in SQL (None: use the
        resident dict). SQL for more than ``ENTITY_DICT_MAX`` such nodes (the dict is 17.7 MiB
        of Python objects at 188K entities), unless a name has capitals (the dict lowercases).
        From the graph step's meta ``graph.entity_keys``; an index stored before it is asked
        with a GROUP BY over every entity node (0.28 s cold at 1M)."""
        if "ent_prefixes" not in self._cache:
            pref = None
            meta = self.ix.meta_json(ENTITY_KEYS)
            if meta is not None:
                n, raw, mixed = int(meta["n"]), list(meta["prefixes"]), bool(meta["mixed_case"])
            else:
                n = self.ix.conn.execute("SELECT count(*) FROM nodes WHERE kind IN ('entity', 'tag')").fetchone()[0]
                raw, mixed = [], False
                if n > ENTITY_DICT_MAX:
                    rows = self.ix.conn.execute(
                        "SELECT substr(key, 1, instr(key, ':') - 1) AS p, "
                        "max(substr(key, instr(key, ':') + 1) != lower(substr(key, instr(key, ':') + 1))) "
                        "FROM nodes WHERE kind IN ('entity', 'tag') GROUP BY p").fetchall()
                    raw, mixed = [r[0] for r in rows], any(r[1] for r in rows)
            if n > ENTITY_DICT_MAX and not mixed:
                # a key without ':' is its own name ('' prefix); ':x' has an empty prefix too
                pref = sorted({r + ":" for r in raw} | ({""} if "" in raw else set()))
            self._cache["ent_prefixes"] = pref
        return self._cache["ent_prefixes"]

    def _entities_sql(self, names: list[str], prefixes: list[str]) -> dict[str, int]:
        """What :meth:`_entities` would map ``names`` to, read through the key index: among the
        entity/tag nodes in the graph whose key is ``prefix:name``, the last in (kind, id)
        order, as the dict keeps it."""
        from ..store.sql import in_chunks

        keys = [p + n for p in prefixes for n in names]
        # (the kind is checked here: a kind filter in SQL made SQLite scan nodes_kind, 46 ms at 1M)
        rows = [r for r in in_chunks(self.ix.conn, "SELECT id, key, kind FROM nodes WHERE key IN ({})", keys)
                if r[2] in ENTITY_KINDS]
        if not rows:
            return {}
        rows.sort(key=lambda r: (r[2], r[0]))
        pos = self.positions(np.array([r[0] for r in rows], dtype=np.int64)).tolist()
        out: dict[str, int] = {}
        for (_, key, _), p in zip(rows, pos):
            if p >= 0:
                out[key.split(":", 1)[-1]] = p
        return out

    def match_entities(self, query: str, max_words: int = 5, *, words=None) -> np.ndarray:
        """Positions of entity/tag nodes whose name is a run of words in ``query``
        (``words``: its :func:`entity_words` when the caller has them)."""
        prefixes = self._entity_prefixes()
        firsts = None
        if prefixes is None:
            if not self._entities():          # (no entity to name: an issue's 5,000 runs unmade)
                return np.zeros(0, dtype=np.int64)
            firsts = self._entity_firsts()
        words = entity_words(query) if words is None else list(words)
        # a run names an entity only when it starts with the first word of one (``firsts``: every
        # word is a start when the names are asked in SQL)
        runs = [" ".join(words[i:j]) for i in range(len(words)) if firsts is None or words[i] in firsts
                for j in range(i + 1, min(len(words), i + max_words) + 1)]
        ents = self._entities() if prefixes is None else self._entities_sql(sorted(set(runs)), prefixes)
        if not ents:
            return np.zeros(0, dtype=np.int64)
        found = set()
        for r in runs:
            p = ents.get(r)
            if p is not None:
                found.add(p)
        return np.array(sorted(found), dtype=np.int64)

    def entity_channels(self, query: str, depth: int = 100, want_local: bool = True,
                        want_global: bool = True, *, words=None) -> tuple[dict[int, float], dict[int, float]]:
        """Graph-local and graph-global channels, keyed by node id.

        local: nodes linked to entities named in the query, scored by how many distinct matched
        entities they touch. global: the 3 communities holding most matched entities; their
        non-entity members, scored by the community's share of matches times
        ``0.5 + 0.5 * PageRank / max PageRank in the community``; ``depth`` best per community.
        ``words``: the query's :func:`entity_words` when the caller has them.
        """
        local: dict[int, float] = {}
        glob: dict[int, float] = {}
        ents = self.match_entities(query, words=words)
        if not len(ents):
            return local, glob
        not_entity = np.array([k not in ENTITY_KINDS for k in self.kind_names] + [True], dtype=bool)
        if want_local and self.graph.m:
            node, nb, _, _ = self.graph.neighbors(ents, "both")
            keep = not_entity[self.kinds[nb]]
            if keep.any():          # each (neighbour, entity) pair once, as one int64 key (not np.unique's axis=1)
                n = max(int(self.graph.n), 1)
                pairs = unique(nb[keep].astype(np.int64) * n + node[keep]) // n
                u, cnt = np.unique(pairs, return_counts=True)
                top = np.argsort(-cnt, kind="stable")[:depth]
                local = dict(zip(self.ids_of(u[top]).tolist(), cnt[top].astype(float).tolist()))
        if want_global and self.community is not None:
            labs, cnt = np.unique(self.community[ents], return_counts=True)
            best = np.argsort(-cnt, kind="stable")[:3]
            for lab, c in zip(labs[best].tolist(), cnt[best].tolist()):
                members = np.flatnonzero((self.community == lab) & not_entity[self.kinds])
                if not len(members):
                    continue
                pr = self.pagerank[members].astype(np.float64)
                rel = pr / pr.max() if pr.max() > 0 else np.ones(len(members))
                score = (c / len(ents)) * (0.5 + 0.5 * rel)
                top = np.argsort(-score, kind="stable")[:depth]
                for nid, sc in zip(self.ids_of(members[top]).tolist(), score[top].tolist()):
                    glob[nid] = max(glob.get(nid, 0.0), sc)
        return local, glob


def _best(nodes: np.ndarray, vals: np.ndarray, limit: int) -> dict[int, float]:
    """``{node: value}`` of the ``limit`` largest non-zero values (``nodes`` ascending)."""
    nz = np.flatnonzero(vals)
    if len(nz) > limit:
        nz = nz[np.argpartition(-vals[nz], limit - 1)[:limit]]
    return dict(zip(nodes[nz].tolist(), vals[nz].tolist()))


def _load(ix) -> GraphContext | None:
    def get(name: str):
        return read_blob(ix, name)

    shape = get(PREFIX + "shape")
    if shape is None:
        return None
    rows = stored_meta(ix)
    if rows is not None and len(shape) == 3:     # a big graph: read per node, never whole
        ids = get(PREFIX + "node_ids")
        if ids is None or len(ids) != int(shape[1]) or rows.get("edges") != int(shape[2]):
            raise GraphError("graph.node_ids or the adjacency rows disagree with the graph; "
                             "rebuild with `kgsearch index --full`")
        g = StoredGraph(ix, ids, int(shape[2]), ix.meta_json(PREFIX + "etypes", []), rows["id_dtype"])
    else:
        g = load_stored(ix, get)
        ids = get(PREFIX + "node_ids")
        if ids is None or len(ids) != g.n:
            raise GraphError("graph.node_ids blob is missing or inconsistent; rebuild with `kgsearch index --full`")
    return GraphContext(ix, g, ids, get(PREFIX + "pagerank"), get(PREFIX + "community"),
                        get(PREFIX + "kind"), ix.meta_json(PREFIX + "kinds", []))


def load_context(ix) -> GraphContext | None:
    """The graph context for this index generation (``None`` when the index has no graph)."""
    return ix.cached(PREFIX + "context", lambda: _load(ix))


def load_graph(ix) -> Graph | None:
    """The index's :class:`Graph` (positions = node ids in ascending order), or ``None``; the
    whole CSR even when queries read adjacency rows."""
    ctx = load_context(ix)
    if ctx is None or isinstance(ctx.graph, Graph):
        return None if ctx is None else ctx.graph
    return load_stored(ix)


def _by_id(ctx: GraphContext, values: np.ndarray, fill, dtype) -> np.ndarray:
    size = int(ctx.node_ids[-1]) + 1 if len(ctx.node_ids) else 0
    out = np.full(size, fill, dtype=dtype)
    out[ctx.node_ids] = values
    return out


def pagerank_scores(ix) -> np.ndarray | None:
    """PageRank indexed by node id (``scores[node_id]``; 0 for ids not in the graph), or ``None``."""
    ctx = load_context(ix)
    if ctx is None:
        return None
    return ix.cached(PREFIX + "pr_by_id", lambda: _by_id(ctx, ctx.pagerank, 0.0, np.float32))


def browse_scores(ix) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Every node with a PageRank, as (ids ascending, PageRank x their count, count): the mean
    is 1 in any index, so that several indexes' lists compare. ``None`` without graph scores."""
    pr = pagerank_scores(ix)
    if pr is None:
        return None
    ids = np.flatnonzero(pr > 0)
    return ids.astype(np.int64), pr[ids].astype(np.float64) * len(ids), len(ids)


def community_labels(ix) -> np.ndarray | None:
    """Community label indexed by node id (-1 for unknown ids), or ``None`` when not computed."""
    ctx = load_context(ix)
    if ctx is None or ctx.community is None:
        return None
    return ix.cached(PREFIX + "comm_by_id", lambda: _by_id(ctx, ctx.community, -1, np.int32))
