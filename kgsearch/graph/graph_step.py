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
* greedy-modularity communities of the undirected projection, blob ``graph.community``;
* meta ``graph.entity_keys`` (:func:`kgsearch.graph.entity_keys.update`): how many entity/tag nodes there are, their
  key prefixes and whether a name has capitals, which the query-time entity channel needs
  before it can match names in SQL (a GROUP BY over every entity node: 0.14 s warm and
  0.28 s cold at 1M nodes, paid by every CLI search until it was stored here).
  A reindex that changed few nodes does not rerun CNM (17 s on the stdlib graph): existing
  nodes keep their labels and new nodes join the community they are most strongly linked to
  (:func:`assign_new_nodes`); once the nodes changed since the last full CNM run exceed
  ``settings["graph_communities_drift"]`` (default 0.02) of the nodes it saw, or on a full
  run (``kgsearch index --full``), CNM runs again. So between full runs the partition is an
  approximation of what a fresh run would give (meta ``graph.communities_drift`` counts).
  CNM's cost grows with hubs (10 s for the 60K-node stdlib graph on a laptop core), so it is
  skipped above ``settings["graph_communities_max_pairs"]`` linked pairs (default 1,000,000)
  or when its merges pass :func:`cnm_work_budget` (a hub that makes it quadratic: a note with
  20,000 links) or it runs past ``settings["graph_communities_seconds"]`` (default 120; after a
  timeout it is not retried until the graph shrinks or the budget grows). When skipped, the
  previous labels are kept for nodes that still exist (new nodes get -1); without any,
  ``community_labels`` returns ``None``.

An incremental index run updates the stored arrays from the changed edge rows instead of
reading every edge (:mod:`kgsearch.graph.maintain`: splice, reverse permutation renumbered,
PageRank warm-started, new nodes placed from their own edges); anything it cannot do
(``full_because`` in the info) is the full rebuild below. The full rebuild reads the node and
edge arrays with one ``group_concat`` row per column, parsed by numpy (about half the time of
one Python tuple per edge). The CNM size check counts linked pairs only when
:func:`pairs_lower_bound` does not already exceed ``graph_communities_max_pairs``.

The query-time side (positions, PageRank, communities, walks, HITS, entity channels) is
:mod:`kgsearch.graph.context`, which reads the blobs written here.
"""
from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from ..config import edge_weights
from ..settings import GraphSettings, IndexSettings
from . import adjacency, entity_keys, maintain
from .build import CHUNK, from_edge_arrays, pagerank_lean
from .communities import CommunityTimeout, greedy_modularity
from .csr import Graph, GraphError
from .edge_room import EDGE_PARTS, edge_capacity
from .incremental import assign_new_nodes_local, place_by_edges, read_edges
from .pagerank import PowerIterationFailedConvergence

__all__ = ["NAME", "update", "assign_new_nodes", "PREFIX"]

NAME = "graph"

log = logging.getLogger(__name__)

PREFIX = "graph."
DEFAULT_MAX_PAIRS = 1_000_000
DEFAULT_SECONDS = 120.0
DEFAULT_DRIFT = 0.02          # full CNM again once this fraction of the nodes changed
# edge ids per read_edges query of a full rebuild: its text and parsed columns cost ~180 B an
# edge of a range (1M ids: +196 MiB over the arrays read at 1M nodes; 128K: +30 MiB, +3% CPU)
READ_CHUNK = 1 << 17


def _progress(progress, step: str) -> None:
    if progress is not None:
        try:
            progress({"phase": "graph", "step": step})
        except Exception:                   # a progress callback must never break indexing
            log.debug("progress callback failed", exc_info=True)


def _weight_table(gs: GraphSettings) -> dict[str, float]:
    if gs.edge_weights is not None:
        return edge_weights({"edge_weights": dict(gs.edge_weights)})
    return edge_weights()


# ---------------------------------------------------------------------- index time
def update(ix, changes, settings=None, progress=None) -> dict:
    """Rebuild the graph blobs, PageRank and communities when the graph changed."""
    t0 = time.perf_counter()
    gs = IndexSettings.coerce(settings).graph
    table = _weight_table(gs)
    have = ix.get_array(PREFIX + "shape") is not None
    structural = bool(changes.full or changes.edges_changed or changes.added or changes.removed
                      or ix.meta_json(maintain.NEEDS_FULL))
    if have and not structural and ix.meta_json(PREFIX + "edge_weights") == table:
        maintain.clear_dirty(ix.conn)            # (rows rewritten as they were)
        info = {"rebuilt": False, "reason": "graph unchanged"}
        known = ix.meta_json(entity_keys.META) is not None
        if not known or changes.modified:         # (an index stored before the meta; a kind changed)
            with ix.transaction():
                entity_keys.update(ix, changes if known else None)
        if _rows_due(ix, gs):                     # (an index stored before the rows, or a new threshold)
            with ix.transaction():
                g = Graph.from_blobs(lambda name: ix.get_array(PREFIX + name), ix.meta_json(PREFIX + "etypes", []))
                info["adjacency_rows"] = adjacency.sync(ix, g, ix.get_array(PREFIX + "node_ids"),
                                                        gs.graph_adjacency_rows)
        ix.mark_derived("graph", time.perf_counter() - t0, info)
        return info
    _check_budget(ix)
    with ix.transaction():
        info = None
        why_full = "full run" if changes.full else ("no stored graph" if not have else
                                                    "edge weights changed" if ix.meta_json(
                                                        PREFIX + "edge_weights") != table else
                                                    "" if maintain.tracking(ix.conn) else "changes not tracked")
        ids, kinds, kind_names = _nodes(ix.conn)
        if not why_full:
            _progress(progress, "csr")
            got = maintain.update_incremental(ix, changes, table, gs, ids, kinds, kind_names, PREFIX)
            if isinstance(got, str):
                why_full = got
            else:
                info = got
        if info is None:
            info = _rebuild(ix, changes, table, gs, progress, (ids, kinds, kind_names))
            info["full_because"] = why_full
        entity_keys.update(ix, None if why_full else changes)
        maintain.clear_dirty(ix.conn)
        ix.set_meta_json(maintain.NEEDS_FULL, None)
        info["seconds"] = round(time.perf_counter() - t0, 3)
        ix.mark_derived("graph", info["seconds"], info)
    return info


def _rows_due(ix, gs: GraphSettings) -> bool:
    """The stored graph's adjacency rows are missing, or stored while below the threshold."""
    shape = ix.get_array(PREFIX + "shape")
    if shape is None or len(shape) != 3:
        return False
    return (int(shape[2]) >= gs.graph_adjacency_rows) != (adjacency.stored_meta(ix) is not None)


# Peak growth of a rebuild, measured: about 260 B per edge with one group_concat over the whole
# table (docs/scale-study.md, section C); 60 B with incremental.read_edges and compact arrays
# (1,142 MiB at 1M nodes and 16.4M edges). With build.from_edge_arrays, build.pagerank_lean
# and blobs written in pieces: 398 MiB from 35 MiB at 1M nodes (bench/results/
# graph_rebuild_1m.md), i.e. the 13-14 B an edge read, a 4-byte permutation, one sorted array
# and 3 B of block masks (about 20 B an edge), plus the temporaries of a read range and a sort
# block (BYTES_PER_BLOCK_EDGE for each of the first build.CHUNK edges) and the node arrays; it
# ran under KGSEARCH_MEMORY_MB=450. The estimate keeps a margin (548 MiB at 1M), and is below
# the old 96 B an edge at every size (nothing refused before is refused now).
BYTES_PER_EDGE = 24
BYTES_PER_NODE = 128
BYTES_PER_BLOCK_EDGE = 48


def _check_budget(ix) -> None:
    """Refuse a rebuild that cannot fit KGSEARCH_MEMORY_MB before reading a single edge
    (estimates from the largest row ids: two index lookups, no count)."""
    from .. import budget

    if budget.budget_bytes() is None:
        return
    edges = ix.conn.execute("SELECT coalesce(max(id), 0) FROM edges").fetchone()[0]
    nodes = ix.conn.execute("SELECT coalesce(max(id), 0) FROM nodes").fetchone()[0]
    budget.need(NAME, int(edges) * BYTES_PER_EDGE + int(nodes) * BYTES_PER_NODE
                + min(int(edges), CHUNK) * BYTES_PER_BLOCK_EDGE)


def _ints(text: str | None) -> np.ndarray:
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)


def _floats(text: str | None) -> np.ndarray:
    return np.fromstring(text, dtype=np.float64, sep=",") if text else np.zeros(0, dtype=np.float64)




def _kept_labels(old_ids, old_comm, ids) -> np.ndarray | None:
    """The previous community label of each node in ``ids`` (-1 for new nodes), or None."""
    if old_comm is None or old_ids is None or not (0 < len(old_ids) == len(old_comm)) or not len(ids):
        return None
    at = np.minimum(np.searchsorted(old_ids, ids), len(old_ids) - 1)
    hit = old_ids[at] == ids
    if not hit.any():
        return None
    return np.where(hit, old_comm[at], -1).astype(np.int32)


def pairs_lower_bound(g: Graph) -> int:
    """At least this many undirected linked pairs (``len(g.undirected_pairs()[0])``): half the
    distinct (source, target) pairs, from the sorted CSR rows in O(m) with one bool per edge,
    where the exact count sorts every edge (1.7 GB at 1M nodes, 6.4M edges)."""
    if not g.m:
        return 0
    known = g._cache.get("pairs_lower_bound")        # (the incremental update counts it while splicing)
    if known is not None:
        return known
    first = np.ones(g.m, dtype=bool)
    np.not_equal(g.indices[1:], g.indices[:-1], out=first[1:])
    first[g.indptr[:-1][np.diff(g.indptr) > 0]] = True
    return (int(first.sum()) + 1) // 2


def count_pairs(g: Graph, chunk: int = 1 << 20) -> int:
    """``len(g.undirected_pairs()[0])`` with one int64 per distinct directed pair (the sorted
    CSR rows give them in order) instead of several per edge plus a sort: the distinct
    directed pairs, less those whose reverse is there too (counted once from the smaller end).
    About 50 MB at 6.4M edges where ``undirected_pairs`` took 1.7 GB."""
    if not g.m:
        return 0
    first = np.ones(g.m, dtype=bool)
    np.not_equal(g.indices[1:], g.indices[:-1], out=first[1:])
    first[g.indptr[:-1][np.diff(g.indptr) > 0]] = True
    deg = np.diff(g.indptr)
    keys = np.empty(int(first.sum()), dtype=np.int64)
    o = 0
    for a in range(0, g.n, max(1, chunk // 8)):            # rows in blocks
        b = min(g.n, a + max(1, chunk // 8))
        s, e = int(g.indptr[a]), int(g.indptr[b])
        if e == s:
            continue
        f = first[s:e]
        src = np.repeat(np.arange(a, b, dtype=np.int64), deg[a:b])[f]
        k = src * g.n + g.indices[s:e][f]
        keys[o:o + len(k)] = k
        o += len(k)
    del first
    both = 0
    for c in range(0, len(keys), chunk):
        k = keys[c:c + chunk]
        u, v = k // g.n, k % g.n
        up = u < v
        rk = v[up] * g.n + u[up]
        at = np.minimum(np.searchsorted(keys, rk), len(keys) - 1)
        both += int((keys[at] == rk).sum())
    return len(keys) - both


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
    return place_by_edges(labels, a, b, ww, rounds), todo


def _nodes(conn) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Live node ids (ascending: positions), their kind codes (uint8) and the kind names."""
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
    return ids, np.array(kind_codes, dtype=np.uint8), kind_names


def _rebuild(ix, changes, table: dict[str, float], gs: GraphSettings, progress, nodes) -> dict:
    conn = ix.conn
    _progress(progress, "csr")
    t = time.perf_counter()
    ids, kinds, kind_names = nodes
    *arrays, etypes = read_edges(conn, ids, table, chunk=READ_CHUNK)
    g = from_edge_arrays(arrays, len(ids), etypes)   # (frees each array once it is sorted)
    old_ids, old_comm = (None if a is None else np.array(a) for a in
                         (ix.get_array(PREFIX + "node_ids"), ix.get_array(PREFIX + "community")))
    info: dict[str, Any] = {"rebuilt": True, "nodes": g.n, "edges": g.m, "edge_types": len(etypes),
                            "csr_mb": round(g.nbytes / 1e6, 3), "csr_seconds": round(time.perf_counter() - t, 3)}
    ix.drop_arrays(PREFIX)
    for name, arr in g.to_blobs().items():            # (edge arrays with room: see edge_capacity)
        ix.put_array(PREFIX + name, arr, capacity=edge_capacity(g.m) if name in EDGE_PARTS else None)
    ix.put_array(PREFIX + "node_ids", ids)
    ix.put_array(PREFIX + "kind", kinds)
    ix.set_meta_json(PREFIX + "etypes", etypes)
    ix.set_meta_json(PREFIX + "kinds", kind_names)
    ix.set_meta_json(PREFIX + "edge_weights", table)
    info["adjacency_rows"] = adjacency.sync(ix, g, ids, gs.graph_adjacency_rows)

    _progress(progress, "pagerank")
    t = time.perf_counter()
    if g.n:
        try:
            pr = pagerank_lean(g, tol=min(1e-6, 1e-4 / g.n), max_iter=1000)
        except PowerIterationFailedConvergence:          # cannot happen with alpha 0.85
            log.warning("pagerank did not converge; storing uniform scores")
            pr = np.full(g.n, 1.0 / g.n)
        ix.put_array(PREFIX + "pagerank", pr.astype(np.float32))
    info["pagerank_seconds"] = round(time.perf_counter() - t, 3)

    _progress(progress, "communities")
    t = time.perf_counter()
    communities(ix, g, ids, old_ids, old_comm, changes, gs, info)
    info["communities_seconds"] = round(time.perf_counter() - t, 3)
    return info


# Greedy modularity's work budget, in heap entries its merges push (communities.greedy_modularity):
# real graphs push 2-38 per linked pair (demo 1.9, flask 6.6, pytest 12.9, sphinx 16.4, the
# stdlib 37.7: 6.6M in 22 s); a star of L leaves pushes L / 2 per pair (a 20,000-link note: 200M;
# it spent the whole 120 s time budget). 200 per pair, at least 2M (a few seconds on a 2-core
# x86_64), stops such a hub at the same merge on any machine and leaves real graphs 5x room.
CNM_WORK_PER_PAIR = 200
CNM_WORK_FLOOR = 2_000_000


def cnm_work_budget(pairs: int) -> int:
    """The heap entries greedy modularity may push on a graph of ``pairs`` linked pairs."""
    return max(CNM_WORK_FLOOR, CNM_WORK_PER_PAIR * int(pairs))


def communities(ix, g: Graph, ids, old_ids, old_comm, changes, gs: GraphSettings, info: dict,
                changed_edges: int | None = None) -> None:
    """Community labels (blob ``graph.community``), see the module docstring. Called by the
    incremental update (:mod:`kgsearch.graph.maintain`) with ``changed_edges`` (edges removed
    plus added): new nodes are then placed from their own edges. The CNM size check counts
    linked pairs only when no lower bound exceeds the limit: :func:`pairs_lower_bound`, or the
    last run's count (meta ``graph.pairs_at_least``) minus ``changed_edges``."""
    max_pairs = gs.graph_communities_max_pairs
    seconds = gs.graph_communities_seconds
    drift_limit = gs.graph_communities_drift
    gave_up = ix.meta_json(PREFIX + "communities_gave_up") or {}
    kept = _kept_labels(old_ids, old_comm, ids)
    drift = ix.meta_json(PREFIX + "communities_drift") or {}
    moved = int(drift.get("changed", 0)) + len(changes.added) + len(changes.removed) + len(changes.modified)
    incremental = (kept is not None and not changes.full and bool(drift)
                   and moved <= drift_limit * max(1, drift.get("nodes", 0)))
    pairs = 0
    if not incremental:                  # (the linked-pair count only matters for a CNM run)
        least = pairs_lower_bound(g)
        last = ix.meta_json(PREFIX + "pairs_at_least")
        if changed_edges is not None and isinstance(last, int):
            least = max(least, last - changed_edges)    # (one edge adds or removes at most one pair)
        if least > max_pairs:            # (counting them exactly took 1.7 GB at 1M nodes)
            pairs = info["pairs_at_least"] = least
        else:
            pairs = info["pairs"] = count_pairs(g)
        ix.set_meta_json(PREFIX + "pairs_at_least", pairs)
    labels = None
    if incremental:
        # a few files changed: keep everyone's community, place the new nodes next to their
        # neighbours; a full CNM run again once the changes add up to graph_communities_drift
        place = assign_new_nodes if changed_edges is None else assign_new_nodes_local
        labels, placed = place(g, kept)
        info["communities"] = (f"kept {int((kept >= 0).sum())} labels, placed {placed} new nodes "
                               f"(changed nodes since the last full run: {moved}, full run above "
                               f"{drift_limit:g} x {drift['nodes']})")
    elif pairs > max_pairs:
        info["communities"] = (f"skipped: {'at least ' if 'pairs_at_least' in info else ''}{pairs} linked pairs "
                               f"> graph_communities_max_pairs={max_pairs}")
    elif gave_up and pairs >= gave_up.get("pairs", 0) and seconds <= gave_up.get("seconds", 0):
        # do not burn the whole budget again on every reindex (cron on a phone)
        info["communities"] = (f"skipped: ran out of graph_communities_seconds={seconds:g} at "
                               f"{gave_up['pairs']} pairs before; raise it to retry")
    else:
        try:
            labels = greedy_modularity(g, max_seconds=seconds, max_work=cnm_work_budget(pairs))
        except CommunityTimeout as exc:
            ix.set_meta_json(PREFIX + "communities_gave_up", {"pairs": pairs, "seconds": seconds})
            info["communities"] = (f"skipped: {exc} (work budget: a hub linked to most of the graph makes "
                                   f"greedy modularity quadratic)" if "work budget" in str(exc) else
                                   f"skipped: took longer than graph_communities_seconds={seconds:g}")
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
    elif changed_edges is not None:
        ix.drop_arrays(PREFIX + "community")      # (the full build drops every blob first)
