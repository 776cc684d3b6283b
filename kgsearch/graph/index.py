"""Derived-data step ``graph`` and its query-time side.

Index time, ``update(ix, changes, settings, progress=None) -> dict`` (called by the indexer in
the index transaction) rebuilds, when nodes were added/removed, edges changed, on a full run,
or when the edge-type weight table changed:

* the CSR graph of the resolved edges (``dst`` not NULL): dense node positions ``0..n-1`` are
  the live node ids in ascending order (blob ``graph.node_ids``), edge weight =
  ``edges.weight * edge_weight(type)`` (``kgsearch.config.edge_weights``: the built-in table,
  or ``settings["edge_weights"]``, else the config file's ``edge_weights``), stored in float32;
  edge-type names in meta ``graph.etypes``, node kinds in blob ``graph.kind`` + meta
  ``graph.kinds``;
* PageRank (alpha 0.85, networkx's rule with ``tol = min(1e-6, 1e-4 / n)``, so the total L1
  change at the stop is below 1e-4), blob ``graph.pagerank`` (float32, by position);
* greedy-modularity communities of the undirected projection, blob ``graph.community``.
  A reindex that changed few nodes does not rerun CNM (17 s on the stdlib graph): existing
  nodes keep their labels and new nodes join the community they are most strongly linked to
  (:func:`assign_new_nodes`); once the nodes changed since the last full CNM run exceed
  ``settings["graph_communities_drift"]`` (default 0.02) of the nodes it saw, or on a full
  run (``kgsearch index --full``), CNM runs again. So between full runs the partition is an
  approximation of what a fresh run would give (meta ``graph.communities_drift`` counts).
  CNM's cost grows with hubs (10 s for the 60K-node stdlib graph on a laptop core), so it is
  skipped above ``settings["graph_communities_max_pairs"]`` linked pairs (default 1,000,000)
  or when it runs past ``settings["graph_communities_seconds"]`` (default 120; after a
  timeout it is not retried until the graph shrinks or the budget grows). When skipped, the
  previous labels are kept for nodes that still exist (new nodes get -1); without any,
  ``community_labels`` returns ``None``.

The node and edge arrays are read with one ``group_concat`` row per column, parsed by numpy
(about half the time of one Python tuple per edge).

Query time: :func:`load_context` (the pipeline's view: positions, PageRank, communities,
walks, HITS, entity channels), :func:`load_graph`, :func:`pagerank_scores`,
:func:`community_labels`; all cached per index generation with ``Index.cached``.
"""
from __future__ import annotations

import logging
import re
import time
from typing import Any

import numpy as np

from ..config import edge_weight, edge_weights
from .communities import CommunityTimeout, greedy_modularity
from .csr import Graph, GraphError
from .hits import hits
from .pagerank import PowerIterationFailedConvergence, pagerank, rwr

__all__ = ["update", "load_context", "load_graph", "pagerank_scores", "community_labels",
           "GraphContext", "CODE_KINDS"]

log = logging.getLogger(__name__)

PREFIX = "graph."
CODE_KINDS = frozenset({"module", "class", "function", "method"})
ENTITY_KINDS = frozenset({"entity", "tag"})
DEFAULT_MAX_PAIRS = 1_000_000
DEFAULT_SECONDS = 120.0
DEFAULT_DRIFT = 0.02          # full CNM again once this fraction of the nodes changed


def _progress(progress, step: str) -> None:
    if progress is not None:
        try:
            progress({"phase": "graph", "step": step})
        except Exception:                   # a progress callback must never break indexing
            log.debug("progress callback failed", exc_info=True)


def _weight_table(settings: dict) -> dict[str, float]:
    if isinstance(settings.get("edge_weights"), dict):
        return edge_weights(settings)
    return edge_weights()


# ---------------------------------------------------------------------- index time
def update(ix, changes, settings: dict | None = None, progress=None) -> dict:
    """Rebuild the graph blobs, PageRank and communities when the graph changed."""
    t0 = time.perf_counter()
    settings = settings or {}
    table = _weight_table(settings)
    have = ix.get_array(PREFIX + "shape") is not None
    structural = bool(changes.full or changes.edges_changed or changes.added or changes.removed)
    if have and not structural and ix.meta_json(PREFIX + "edge_weights") == table:
        info = {"rebuilt": False, "reason": "graph unchanged"}
        ix.mark_derived("graph", time.perf_counter() - t0, info)
        return info
    with ix.transaction():
        info = _rebuild(ix, changes, table, settings, progress)
        info["seconds"] = round(time.perf_counter() - t0, 3)
        ix.mark_derived("graph", info["seconds"], info)
    return info


def _ints(text: str | None) -> np.ndarray:
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)


def _floats(text: str | None) -> np.ndarray:
    return np.fromstring(text, dtype=np.float64, sep=",") if text else np.zeros(0, dtype=np.float64)


def _strs(text: str | None) -> list[str]:
    return text.split("\x1f") if text else []


def _kept_labels(old_ids, old_comm, ids) -> np.ndarray | None:
    """The previous community label of each node in ``ids`` (-1 for new nodes), or None."""
    if old_comm is None or old_ids is None or not (0 < len(old_ids) == len(old_comm)) or not len(ids):
        return None
    at = np.minimum(np.searchsorted(old_ids, ids), len(old_ids) - 1)
    hit = old_ids[at] == ids
    if not hit.any():
        return None
    return np.where(hit, old_comm[at], -1).astype(np.int32)


def assign_new_nodes(g: Graph, labels: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, int]:
    """Give every node labelled -1 a community: the one it is most strongly linked to.

    In rounds (so a chain of new nodes follows its labelled end): each unlabelled node takes
    the label with the largest summed undirected edge weight among its labelled neighbours,
    ties to the smallest label. Unlabelled nodes with no labelled neighbour after that form
    new communities, one per connected group among themselves (numbered after the largest
    label). Existing labels never change. Returns ``(labels, number of nodes placed)``.
    """
    labels = np.asarray(labels, dtype=np.int32).copy()
    todo = int((labels < 0).sum())
    if not todo:
        return labels, 0
    u, v, w = g.undirected_pairs(True)
    off = u != v
    u, v, w = u[off], v[off], w[off]
    a = np.concatenate([u, v])                  # node being placed
    b = np.concatenate([v, u])                  # its neighbour
    ww = np.concatenate([w, w])
    for _ in range(rounds):
        sel = (labels[a] < 0) & (labels[b] >= 0)
        if not sel.any():
            break
        na, lb, wt = a[sel], labels[b[sel]].astype(np.int64), ww[sel]
        key = na * (int(labels.max()) + 1) + lb
        uk, inv = np.unique(key, return_inverse=True)
        tot = np.bincount(inv, weights=wt)
        node, lab = uk // (int(labels.max()) + 1), uk % (int(labels.max()) + 1)
        order = np.lexsort((lab, -tot, node))            # per node: heaviest label, then smallest
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
    return labels, todo


def _rebuild(ix, changes, table: dict[str, float], settings: dict, progress) -> dict:
    conn = ix.conn
    _progress(progress, "csr")
    t = time.perf_counter()
    # one row with the columns joined by SQLite and parsed by numpy: about half the time of
    # fetching a Python tuple per edge (0.2 s for the stdlib's 150K edges)
    kind_names, parts = [], []
    for kind, ids_txt in conn.execute("SELECT kind, group_concat(id) FROM nodes GROUP BY kind ORDER BY kind"):
        kind_names.append(kind)                       # (the covering index nodes_kind: no table scan)
        parts.append(_ints(ids_txt))
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    codes = np.repeat(np.arange(len(parts), dtype=np.int64), [len(p) for p in parts])
    order = np.argsort(ids, kind="stable")
    ids, kind_codes = ids[order], codes[order]
    if len(kind_names) > 255:
        raise GraphError("more than 255 node kinds; the graph step stores kinds as uint8")
    kinds = np.array(kind_codes, dtype=np.uint8)
    s_txt, d_txt, w_txt, t_txt = conn.execute(
        "SELECT group_concat(src), group_concat(dst), group_concat(weight), group_concat(type, char(31)) "
        "FROM edges WHERE dst IS NOT NULL").fetchone()
    src, dst, w = _ints(s_txt), _ints(d_txt), _floats(w_txt)
    types = _strs(t_txt)
    type_of = {t: i for i, t in enumerate(dict.fromkeys(types))}         # first-seen order
    et = np.fromiter(map(type_of.__getitem__, types), dtype=np.int64, count=len(types))
    etypes = list(type_of)
    tw = np.array([edge_weight(x, table) for x in etypes], dtype=np.float64)
    if len(src):
        w = w * tw[et]
    s_pos, d_pos = np.searchsorted(ids, src), np.searchsorted(ids, dst)
    g = Graph.from_edges(s_pos, d_pos, np.maximum(w, 0.0), len(ids), et, etypes, weight_dtype=np.float32)
    old_ids, old_comm = (None if a is None else np.array(a) for a in
                         (ix.get_array(PREFIX + "node_ids"), ix.get_array(PREFIX + "community")))
    info: dict[str, Any] = {"rebuilt": True, "nodes": g.n, "edges": g.m, "edge_types": len(etypes),
                            "csr_mb": round(g.nbytes / 1e6, 3), "csr_seconds": round(time.perf_counter() - t, 3)}
    ix.drop_arrays(PREFIX)
    for name, arr in g.to_blobs().items():
        ix.put_array(PREFIX + name, arr)
    ix.put_array(PREFIX + "node_ids", ids)
    ix.put_array(PREFIX + "kind", kinds)
    ix.set_meta_json(PREFIX + "etypes", etypes)
    ix.set_meta_json(PREFIX + "kinds", kind_names)
    ix.set_meta_json(PREFIX + "edge_weights", table)

    _progress(progress, "pagerank")
    t = time.perf_counter()
    if g.n:
        try:
            pr = pagerank(g, tol=min(1e-6, 1e-4 / g.n), max_iter=1000)
        except PowerIterationFailedConvergence:          # cannot happen with alpha 0.85
            log.warning("pagerank did not converge; storing uniform scores")
            pr = np.full(g.n, 1.0 / g.n)
        ix.put_array(PREFIX + "pagerank", pr.astype(np.float32))
    info["pagerank_seconds"] = round(time.perf_counter() - t, 3)

    _progress(progress, "communities")
    t = time.perf_counter()
    max_pairs = int(settings.get("graph_communities_max_pairs", DEFAULT_MAX_PAIRS))
    seconds = float(settings.get("graph_communities_seconds", DEFAULT_SECONDS))
    drift_limit = float(settings.get("graph_communities_drift", DEFAULT_DRIFT))
    gave_up = ix.meta_json(PREFIX + "communities_gave_up") or {}
    kept = _kept_labels(old_ids, old_comm, ids)
    drift = ix.meta_json(PREFIX + "communities_drift") or {}
    moved = int(drift.get("changed", 0)) + len(changes.added) + len(changes.removed) + len(changes.modified)
    incremental = (kept is not None and not changes.full and bool(drift)
                   and moved <= drift_limit * max(1, drift.get("nodes", 0)))
    pairs = 0
    if not incremental:                  # (the linked-pair count only matters for a CNM run)
        pairs = info["pairs"] = len(g.undirected_pairs(False)[0]) if g.m else 0
    labels = None
    if incremental:
        # a few files changed: keep everyone's community, place the new nodes next to their
        # neighbours; a full CNM run again once the changes add up to graph_communities_drift
        labels, placed = assign_new_nodes(g, kept)
        info["communities"] = (f"kept {int((kept >= 0).sum())} labels, placed {placed} new nodes "
                               f"(changed nodes since the last full run: {moved}, full run above "
                               f"{drift_limit:g} x {drift['nodes']})")
    elif pairs > max_pairs:
        info["communities"] = f"skipped: {pairs} linked pairs > graph_communities_max_pairs={max_pairs}"
    elif gave_up and pairs >= gave_up.get("pairs", 0) and seconds <= gave_up.get("seconds", 0):
        # do not burn the whole budget again on every reindex (cron on a phone)
        info["communities"] = (f"skipped: ran out of graph_communities_seconds={seconds:g} at "
                               f"{gave_up['pairs']} pairs before; raise it to retry")
    else:
        try:
            labels = greedy_modularity(g, max_seconds=seconds)
        except CommunityTimeout:
            ix.set_meta_json(PREFIX + "communities_gave_up", {"pairs": pairs, "seconds": seconds})
            info["communities"] = f"skipped: took longer than graph_communities_seconds={seconds:g}"
        else:
            ix.set_meta_json(PREFIX + "communities_gave_up", None)
            ix.set_meta_json(PREFIX + "communities_drift", {"nodes": g.n, "changed": 0})
            info["communities"] = int(labels.max()) + 1 if len(labels) else 0
    if drift and "changed" in drift and not (isinstance(info.get("communities"), int)):
        ix.set_meta_json(PREFIX + "communities_drift", {"nodes": drift["nodes"], "changed": moved})
    if labels is None and kept is not None:
        # keep the last computed communities for the nodes that still exist (new nodes: -1)
        labels = kept
        info["communities"] += f"; kept the previous labels of {int((kept >= 0).sum())} nodes"
    if labels is not None:
        ix.put_array(PREFIX + "community", labels)
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info


# ---------------------------------------------------------------------- query time
_WORDS = re.compile(r"[^\W_][\w'\-]*", re.UNICODE)


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
        if not len(self.node_ids):
            return np.full(len(ids), -1, dtype=np.int64)
        pos = np.searchsorted(self.node_ids, ids)
        pos[pos >= len(self.node_ids)] = 0
        return np.where(self.node_ids[pos] == ids, pos, -1)

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
             directed: bool = False, prune: float = 1e-5, **kw) -> dict[int, float]:
        """RWR from seed positions: ``{position: score}`` for the ``limit`` best nodes.

        The walk follows edges both ways (callers and callees, links and backlinks) unless
        ``directed``. ``prune=1e-5`` bounds the work per step to ~100K edges (on the stdlib
        graph: ~10 ms a query instead of ~70 ms, top-10 99% the same as the exact walk); other
        keywords go to :func:`~kgsearch.graph.pagerank.rwr`.
        """
        seed_pos = np.asarray(seed_pos, dtype=np.int64)
        if not len(seed_pos) or self.graph.m == 0:
            return {}
        w = None if seed_w is None else np.maximum(np.asarray(seed_w, dtype=np.float64), 0.0)
        if w is not None and w.sum() <= 0:
            w = None
        s = rwr(self.graph, seed_pos, restart=restart, weights=w, prune=prune,
                direction="out" if directed else "both", **kw)
        nz = np.flatnonzero(s)
        if len(nz) > limit:
            nz = nz[np.argpartition(-s[nz], limit - 1)[:limit]]
        return dict(zip(nz.tolist(), s[nz].tolist()))

    def hits_adjust(self, pos, seed_pos, pvec, top: int = 200) -> np.ndarray:
        """HITS on the ``top`` walk nodes (plus seeds); additive adjustments aligned with ``pos``.

        Hubs and authorities are max-normalised to [0, 1] and passed to the pipeline's formula
        (``kgsearch.graph.proximity.hits_adjust``).
        """
        from .proximity import hits_adjust as formula

        pos = np.asarray(pos, dtype=np.int64)
        pvec = np.asarray(pvec, dtype=np.float64)
        ok = (pos >= 0) & (pvec > 0)
        order = np.flatnonzero(ok)[np.argsort(-pvec[ok], kind="stable")][:top]
        nodes = np.unique(np.concatenate([pos[order], np.asarray(seed_pos, dtype=np.int64)]))
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

    def match_entities(self, query: str, max_words: int = 5) -> np.ndarray:
        """Positions of entity/tag nodes whose name is a run of words in ``query``."""
        ents = self._entities()
        if not ents:
            return np.zeros(0, dtype=np.int64)
        words = [w.strip("'-") for w in _WORDS.findall(query.lower())]
        words = [w[:-2] if w.endswith("'s") else w for w in words if w]
        found = set()
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + max_words) + 1):
                p = ents.get(" ".join(words[i:j]))
                if p is not None:
                    found.add(p)
        return np.array(sorted(found), dtype=np.int64)

    def entity_channels(self, query: str, depth: int = 100, want_local: bool = True,
                        want_global: bool = True) -> tuple[dict[int, float], dict[int, float]]:
        """Graph-local and graph-global channels, keyed by node id.

        local: nodes linked to entities named in the query, scored by how many distinct matched
        entities they touch. global: the 3 communities holding most matched entities; their
        non-entity members, scored by the community's share of matches times
        ``0.5 + 0.5 * PageRank / max PageRank in the community``; ``depth`` best per community.
        """
        local: dict[int, float] = {}
        glob: dict[int, float] = {}
        ents = self.match_entities(query)
        if not len(ents):
            return local, glob
        not_entity = np.array([k not in ENTITY_KINDS for k in self.kind_names] + [True], dtype=bool)
        if want_local and self.graph.m:
            node, nb, _, _ = self.graph.neighbors(ents, "both")
            keep = not_entity[self.kinds[nb]]
            pairs = np.unique(np.stack([nb[keep], node[keep]]), axis=1) if keep.any() else np.zeros((2, 0), int)
            if pairs.shape[1]:
                u, cnt = np.unique(pairs[0], return_counts=True)
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


def _load(ix) -> GraphContext | None:
    get = ix.get_array
    if get(PREFIX + "shape") is None:
        return None
    g = Graph.from_blobs(lambda name: get(PREFIX + name), etype_names=ix.meta_json(PREFIX + "etypes", []))
    ids = get(PREFIX + "node_ids")
    if ids is None or len(ids) != g.n:
        raise GraphError("graph.node_ids blob is missing or inconsistent; rebuild with `kgsearch index --full`")
    return GraphContext(ix, g, ids, get(PREFIX + "pagerank"), get(PREFIX + "community"),
                        get(PREFIX + "kind"), ix.meta_json(PREFIX + "kinds", []))


def load_context(ix) -> GraphContext | None:
    """The graph context for this index generation (``None`` when the index has no graph)."""
    return ix.cached(PREFIX + "context", lambda: _load(ix))


def load_graph(ix) -> Graph | None:
    """The index's :class:`Graph` (positions = node ids in ascending order), or ``None``."""
    ctx = load_context(ix)
    return None if ctx is None else ctx.graph


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


def community_labels(ix) -> np.ndarray | None:
    """Community label indexed by node id (-1 for unknown ids), or ``None`` when not computed."""
    ctx = load_context(ix)
    if ctx is None or ctx.community is None:
        return None
    return ix.cached(PREFIX + "comm_by_id", lambda: _by_id(ctx, ctx.community, -1, np.int32))
