"""The scores stored beside the graph: PageRank and community labels, after any write.

**PageRank** (blob ``graph.pagerank``, float32 by position): alpha 0.85, networkx's rule with
``tol = min(1e-6, 1e-4 / n)``, so the total L1 change at the stop is below 1e-4. After a
rebuild, :func:`pagerank_rebuilt` solves it cold (:func:`~kgsearch.graph.kernels.pagerank_lean.
pagerank_lean`). After an incremental write, :func:`pagerank_updated`: nothing when no edge
changed; up to :data:`WARM_FROM` nodes solved cold, exactly as a fresh build does (so an
updated index ranks like a fresh one: the incremental property test compares scores to 1e-9);
above it the power iteration with the same stopping rule, warm-started from the stored scores
(new nodes start at 1/n), reading the stored indices and weights in chunks
(:func:`~kgsearch.graph.kernels.pagerank_lean.pagerank_csr`). Both it and a fresh build stop
within ``alpha / (1 - alpha) * 1e-4`` (L1) of the exact vector, so they differ by at most
:data:`PAGERANK_L1_BOUND` (tested, with identical top-k on fixtures; ``doctor`` allows it).

**Communities** (blob ``graph.community``): greedy modularity (CNM) on the undirected
projection. A write that changed few nodes does not rerun CNM (17 s on the stdlib graph):
existing nodes keep their labels and new nodes join the community they are most strongly
linked to (:mod:`kgsearch.graph.kernels.placement`); once the nodes changed since the last full
CNM run exceed ``graph_communities_drift`` (default 0.02) of the nodes it saw, or on a full run
(``kgsearch index --full``), CNM runs again. So between full runs the partition is an
approximation of what a fresh run would give (meta ``graph.communities_drift`` counts). CNM's
cost grows with hubs (10 s for the 60K-node stdlib graph on a laptop core), so it is skipped
above ``graph_communities_max_pairs`` linked pairs (default 1,000,000; counted only when no
lower bound already exceeds it) or when its merges pass :func:`cnm_work_budget` (a hub that
makes it quadratic: a note with 20,000 links) or it runs past ``graph_communities_seconds`` (default
120; after a timeout it is not retried until the graph shrinks or the budget grows). When
skipped, the previous labels are kept for nodes that still exist (new nodes get -1); without
any, ``community_labels`` returns ``None``.
"""
from __future__ import annotations

import logging

import numpy as np

from ...settings import GraphSettings
from ..kernels.communities import CommunityTimeout, count_pairs, greedy_modularity, pairs_lower_bound
from ..kernels.csr import Graph
from ..kernels.pagerank import PowerIterationFailedConvergence, pagerank
from ..kernels.pagerank_delta import pagerank_delta, residual_bound
from ..kernels.pagerank_lean import pagerank_csr, pagerank_lean
from ..kernels.placement import assign_new_nodes, assign_new_nodes_local
from . import csr, rows
from .csr import PREFIX

__all__ = ["pagerank_rebuilt", "pagerank_updated", "pagerank_local", "communities", "communities_need_graph", "WARM_FROM",
           "PAGERANK_L1_BOUND", "RESIDUAL", "DANGLING"]

log = logging.getLogger(__name__)

PAGERANK_L1_BOUND = 2 * 0.85 / 0.15 * 1e-4   # warm vs fresh PageRank, L1 (both within 5.7e-4 of exact)
WARM_FROM = 200_000          # nodes: below, PageRank is solved cold, as a fresh build does (same scores)
ALPHA = 0.85
RESIDUAL = PREFIX + "pagerank_residual"   # meta: {"bound": L1 residual bound of the stored scores, "n": nodes}
DANGLING = PREFIX + "dangling"            # blob: uint8 by position, 1 where the out-weight is 0
LOCAL_SHARE = ALPHA          # local updates while the residual bound <= this x the stopping rule's n * tol
SOLVE_MARGIN = 10            # whole-graph solves above WARM_FROM (with rows) stop at a tenth of the rule


def _tol(n: int) -> float:
    return min(1e-6, 1e-4 / n)


def _keep_residual(ix, pr32: np.ndarray, exact: np.ndarray, err: float | None, dangling: np.ndarray | None) -> None:
    """Store what :func:`pagerank_local` needs after a whole-graph solve (graphs above
    WARM_FROM): the dangling flags and the residual bound ``alpha * err`` plus the rounding to
    float32 (``T(y) - y = T(y) - T(x)`` for the iteration's last ``y = T(x)``)."""
    if err is None or dangling is None or len(pr32) <= WARM_FROM:
        ix.drop_arrays(DANGLING)
        ix.set_meta_json(RESIDUAL, None)
        return
    ix.put_array(DANGLING, dangling.astype(np.uint8))
    ix.set_meta_json(RESIDUAL, {"bound": residual_bound(0.0, err, pr32, exact, ALPHA), "n": len(pr32)})


def pagerank_rebuilt(ix, g: Graph) -> None:
    """PageRank of a rebuilt graph, solved cold (blob ``graph.pagerank``). Above
    :data:`WARM_FROM` nodes with adjacency rows (written before this), to a tenth of the
    stopping rule (a few more iterations), so the updates after it can be local
    (:func:`pagerank_local`)."""
    if not g.n:
        return
    stats: dict = {}
    big = g.n > WARM_FROM and rows.stored_meta(ix) is not None
    try:
        pr = pagerank_lean(g, tol=_tol(g.n) / (SOLVE_MARGIN if big else 1), max_iter=1000, stats=stats)
    except PowerIterationFailedConvergence:          # cannot happen with alpha 0.85
        log.warning("pagerank did not converge; storing uniform scores")
        pr = np.full(g.n, 1.0 / g.n)
    pr32 = pr.astype(np.float32)
    ix.put_array(PREFIX + "pagerank", pr32)
    _keep_residual(ix, pr32, pr, stats.get("err") if big else None, stats.get("dangling"))


def pagerank_local(ix, ids: np.ndarray, old_ids: np.ndarray, changed: np.ndarray, new_edges: tuple,
                   info: dict, old_edges: tuple | None = None) -> bool:
    """PageRank after an incremental write from the changed rows alone
    (:func:`~kgsearch.graph.kernels.pagerank_delta.pagerank_delta`): above :data:`WARM_FROM`
    nodes, when the index keeps adjacency rows (the changed sources' old out-edges are read
    from them, so call this before they are rewritten) and the stored scores' residual bound
    stays within ``alpha`` times the stopping rule (the bound of a fresh solve). ``changed``:
    every source whose out-edges may differ (ids); ``new_edges``: their out-edges now (source
    id, target id, float32 weight); ``old_edges``: their stored out-edges when already read
    (:func:`~.rows.out_edges`). Returns False when it did nothing (the caller solves over the
    whole graph)."""
    n = len(ids)
    meta = ix.meta_json(RESIDUAL)
    if n <= WARM_FROM or not isinstance(meta, dict) or meta.get("n") != len(old_ids):
        return False
    old_pr, dang_old = ix.get_array(PREFIX + "pagerank"), ix.get_array(DANGLING)
    if old_pr is None or dang_old is None or len(old_pr) != len(old_ids) or len(dang_old) != len(old_ids):
        return False
    old_edges = rows.out_edges(ix, changed) if old_edges is None else old_edges
    if old_edges is None:
        return False
    x, dang, d_l1 = pagerank_delta(old_pr, old_ids, dang_old.astype(bool), ids, changed, old_edges,
                                   new_edges, ALPHA)
    x32 = x.astype(np.float32)
    bound = residual_bound(float(meta["bound"]), d_l1, x32, x, ALPHA)
    if bound > LOCAL_SHARE * n * _tol(n):
        info["pagerank_local"] = f"residual bound {bound:.3g} > {LOCAL_SHARE * n * _tol(n):.3g}: whole-graph solve"
        return False
    ix.put_array(PREFIX + "pagerank", x32)
    ix.put_array(DANGLING, dang.astype(np.uint8))
    ix.set_meta_json(RESIDUAL, {"bound": bound, "n": n})
    info["pagerank_start"] = "local"
    info["pagerank_residual"] = float(f"{bound:.3g}")
    return True


def pagerank_updated(ix, g: csr.StreamedGraph, old_ids, remap, outw, edges_same: bool, info: dict) -> None:
    """PageRank after an incremental write (see the module docstring). ``old_ids``: the node
    ids of the stored scores' positions; ``remap``: old position -> new (-1 gone); ``outw``:
    the rows' summed weights when the splice counted them; ``edges_same``: no edge changed
    (the scores stay)."""
    if edges_same:
        info["pagerank_start"] = "kept: no edge changed"
    elif g.n and g.n <= WARM_FROM:
        # small enough to solve cold (75K nodes: 40 ms): exactly what a fresh build stores
        pr = pagerank(g, tol=min(1e-6, 1e-4 / g.n), max_iter=1000)
        ix.put_array(PREFIX + "pagerank", pr.astype(np.float32))
        _keep_residual(ix, pr, pr, None, None)
        info["pagerank_start"] = "cold"
    elif g.n:
        old_pr = ix.get_array(PREFIX + "pagerank")
        hit = remap >= 0                 # old position -> new position, for the scores
        x0 = np.full(g.n, 1.0 / g.n)
        if old_pr is not None and len(old_pr) == len(old_ids) and hit.any():
            x0[remap[hit]] = old_pr[hit]
        del old_pr
        sg = g.stream()                          # (indices and weights read in chunks, per iteration)
        # with adjacency rows the next updates can be local: leave them room (SOLVE_MARGIN)
        local = rows.stored_meta(ix) is not None
        stats: dict = {}
        try:
            pr, iters = pagerank_csr(sg, tol=_tol(g.n) / (SOLVE_MARGIN if local else 1), max_iter=1000, x0=x0,
                                     outw=outw, chunk=csr.CHUNK_EDGES, stats=stats)
        finally:
            sg.indices.close()
            sg.weights.close()
        del x0, sg
        pr32 = pr.astype(np.float32)
        ix.put_array(PREFIX + "pagerank", pr32)
        _keep_residual(ix, pr32, pr, stats.get("err") if local else None, stats.get("dangling"))
        info["pagerank_iterations"] = iters
        info["pagerank_start"] = "warm"


def _kept_labels(old_ids, old_comm, ids) -> np.ndarray | None:
    """The previous community label of each node in ``ids`` (-1 for new nodes), or None."""
    if old_comm is None or old_ids is None or not (0 < len(old_ids) == len(old_comm)) or not len(ids):
        return None
    at = np.minimum(np.searchsorted(old_ids, ids), len(old_ids) - 1)
    hit = old_ids[at] == ids
    if not hit.any():
        return None
    return np.where(hit, old_comm[at], -1).astype(np.int32)


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


def _plan(ix, ids, old_ids, old_comm, changes, gs: GraphSettings):
    """(kept labels, drift meta, nodes moved since the last CNM run, whether new nodes are
    placed rather than CNM considered)."""
    kept = _kept_labels(old_ids, old_comm, ids)
    drift = ix.meta_json(PREFIX + "communities_drift") or {}
    moved = int(drift.get("changed", 0)) + len(changes.added) + len(changes.removed) + len(changes.modified)
    incremental = (kept is not None and not changes.full and bool(drift)
                   and moved <= gs.graph_communities_drift * max(1, drift.get("nodes", 0)))
    return kept, drift, moved, incremental


def communities_need_graph(ix, ids, old_ids, old_comm, changes, gs: GraphSettings, changed_edges: int) -> bool:
    """Whether :func:`communities` after this incremental write reads the graph: to place new
    nodes, or to count pairs or run CNM; not when the last pair count, less the edges changed,
    still exceeds ``graph_communities_max_pairs`` (it then skips, keeping the labels)."""
    if _plan(ix, ids, old_ids, old_comm, changes, gs)[3]:
        return True
    last = ix.meta_json(PREFIX + "pairs_at_least")
    return not (isinstance(last, int) and last - changed_edges > gs.graph_communities_max_pairs)


def communities(ix, g: Graph, ids, old_ids, old_comm, changes, gs: GraphSettings, info: dict,
                changed_edges: int | None = None, pairs_at_least: int | None = None) -> None:
    """Community labels (blob ``graph.community``), see the module docstring. Called after an
    incremental write with ``changed_edges`` (edges removed plus added): new nodes are then
    placed from their own edges. The CNM size check counts linked pairs only when no lower
    bound exceeds the limit: ``pairs_at_least`` (the splice counts it while it writes) or
    :func:`~kgsearch.graph.kernels.communities.pairs_lower_bound`, or the last run's count
    (meta ``graph.pairs_at_least``) minus ``changed_edges``."""
    max_pairs = gs.graph_communities_max_pairs
    seconds = gs.graph_communities_seconds
    drift_limit = gs.graph_communities_drift
    gave_up = ix.meta_json(PREFIX + "communities_gave_up") or {}
    kept, drift, moved, incremental = _plan(ix, ids, old_ids, old_comm, changes, gs)
    pairs = 0
    if not incremental:                  # (the linked-pair count only matters for a CNM run)
        least = pairs_lower_bound(g) if pairs_at_least is None else pairs_at_least
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
