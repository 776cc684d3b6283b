"""The graph stage: signals from the index graph around the first stage's best candidates.

Seeds are the best candidates by text and by embedding (:attr:`Tuning.seeds_per_signal`
each), weighted by their first-stage score; a part of a long definition's text (``FLAG_PART``)
is its definition there, and a definition takes one seed however many of its parts match
(:mod:`.families`); the graph reaches no part (:func:`without_parts`: a part hangs off its
definition by a ``contains`` edge, and the walk's mass in it is its definition's, not evidence
that would take a reached node's place). For prose the ``graph`` signal is the weighted
mean of a candidate's neighbours' first-stage scores over typed edges
(:func:`kgsearch.graph.kernels.proximity.pull_mean`; two hops for intents with ``two_hop``); for code
queries (decided before this stage, :func:`kgsearch.query.code.is_code_query`) it is a random
walk with restart from the seeds, net of each seed's own restart share (:func:`net_of_restart`,
:attr:`Tuning.walk_net_restart <kgsearch.query.tuning.Tuning.walk_net_restart>`: being a seed is
the first stage's evidence, not the graph's), and HITS on the walk's top nodes may adjust scores. The
``intent`` signal credits nodes along the intent's edge types; ``local`` and ``global`` score
the nodes around entities named in the query (the parsed query's ``entity_words``). Nodes
reached through the graph join the candidates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import fuse
from ..arrays import unique
from ..graph.context import CODE_KINDS, SkipTypes
from ..graph.kernels import proximity as prox_mod
from ..store.sql import in_chunks
from .channels import SIGNAL_OF
from .families import families, one_per_definition
from .signals import Signals, top_idx
from .tuning import TUNING, Tuning

__all__ = ["GraphStage", "Pull", "graph_stage", "graph_steps", "net_of_restart", "per_degree", "run", "WALK_RESTART",
           "without_parts"]


WALK_RESTART = 0.2      # the code walk's restart probability


def without_parts(gctx, ps: np.ndarray, vs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Graph positions ``ps`` (scores ``vs``) less those of parts (``FLAG_PART``)."""
    fam = families(gctx.ix)
    if not fam or not len(ps):
        return ps, vs
    keep = ~fam.is_part(gctx.ids_of(ps))
    return (ps, vs) if keep.all() else (ps[keep], vs[keep])


def net_of_restart(walk: dict[int, float], seed_pos, seed_w, restart: float) -> dict[int, float]:
    """``walk`` (position -> RWR score) with each seed's own restart share taken out:
    ``restart x w / sum(w)`` of seed weight ``w``. A walk with restart gives that share back to its
    seeds at every step whatever the graph says, so a seed (the first stage's best) would score
    high in the graph signal for being a seed; what remains is what reaches it over edges from
    every seed, itself included. Other nodes are unchanged; a score never goes below 0.

    >>> net_of_restart({0: 0.5, 1: 0.3, 7: 0.2}, [0, 1], [3.0, 1.0], 0.2)
    {0: 0.35, 1: 0.25, 7: 0.2}
    """
    w = np.asarray(seed_w, dtype=np.float64)
    total = float(w.sum())
    if not walk or total <= 0:
        return walk
    out = dict(walk)
    for p, share in zip(np.asarray(seed_pos).tolist(), (restart * w / total).tolist()):
        if p in out:
            out[p] = max(out[p] - share, 0.0)
    return out


def per_degree(walk: dict[int, float], g) -> dict[int, float]:
    """``walk`` with each score divided by its node's walk weight (``g.weight_of``: the summed
    weights of its edges both ways; a node without edges keeps its score). A walk with restart
    leaves mass on a node in proportion to its degree as well as to its nearness to the seeds
    (on an undirected graph its stationary share is degree / total); per degree, a hub that every
    walk passes through no longer outranks a leaf the seeds reach as directly."""
    if not walk:
        return walk
    pos = np.fromiter(walk.keys(), dtype=np.int64, count=len(walk))
    d = g.weight_of(pos)
    return {p: v / dv if dv > 0 else v for p, v, dv in zip(pos.tolist(), walk.values(), d.tolist())}


@dataclass
class GraphStage:
    graph: np.ndarray                 # graph signal, aligned with the candidates
    intent: np.ndarray                # intent-edge signal
    hits_adj: np.ndarray | None       # additive HITS adjustment (code queries, Tuning.code_hits)
    seeds: tuple = ()                 # node ids the walk / proximity started from


@dataclass
class Pull:
    """What a graph stage over several indexes waits for: the prose graph signal of ``ids`` (its
    candidates) pulled over the union's ``similar_text`` lists (``view``:
    :class:`kgsearch.query.across.AcrossView`). :meth:`answer` computes it for this index alone;
    :func:`kgsearch.query.across.pull_together` computes every index's at once, to the same
    values."""

    view: object
    gctx: object
    sig: Signals
    ids: np.ndarray
    a: float
    b: float
    two_hop: bool

    def answer(self) -> np.ndarray:
        return self.view.pull_mean(self.gctx, self.sig, self.ids, self.a, self.b, two_hop=self.two_hop)


def run(steps):
    """Drive a generator of :func:`graph_steps` (or a search built on it) to its end, answering
    each :class:`Pull` it yields on its own; returns what the generator returns. A pull that
    fails closes the generator (its ``finally`` blocks run now, not when it is collected)."""
    try:
        req = next(steps)
        while True:
            req = steps.send(req.answer())
    except StopIteration as stop:
        return stop.value
    finally:
        steps.close()


def graph_stage(gctx, q, it, requested, opts, sig: Signals, weights: dict, code_query: bool,
                tuning: Tuning = TUNING, across=None, seeds: dict | None = None) -> GraphStage:
    """:func:`graph_steps` run to its end (each index's pull over the union's lists on its own)."""
    return run(graph_steps(gctx, q, it, requested, opts, sig, weights, code_query, tuning, across, seeds))


def graph_steps(gctx, q, it, requested, opts, sig: Signals, weights: dict, code_query: bool,
                tuning: Tuning = TUNING, across=None, seeds: dict | None = None):
    """The graph stage as a generator that returns its :class:`GraphStage`; with ``across`` it
    yields one :class:`Pull` and takes the pulled values back (several indexes searched as one
    compute every index's pull at once, :func:`kgsearch.query.across.pull_together`).

    Seeds -> walk (``code_query``) or proximity, intent edges, entity channels for the parsed
    query ``q`` of intent ``it``; adds the nodes they reach to ``sig`` and returns the graph and
    intent signals aligned with ``sig.cand``. ``across`` (several indexes searched as one,
    :class:`kgsearch.query.across.AcrossView`): the prose graph signal pulls over the union's
    ``similar_text`` lists instead of this index's own; ``seeds`` (``{"text": n, "dense": n}``,
    the same search): this index's share of the union's seeds, instead of
    :attr:`Tuning.seeds_per_signal` by each."""

    a, b = weights.get("embedding", 0.0), weights.get("text", 0.0)
    text, emb = sig.text(), sig.get("dense")
    first = sig.first_stage(weights)
    # seeds from the signals that ran (with the dense channel off, its all-zero column would
    # pick arbitrary candidates)
    ran_text = any(SIGNAL_OF.get(n) == "text" for n in sig.raw_scores)

    def keys(idx):                      # ties at the cut go by node key (never by node id)
        by_id = dict(in_chunks(gctx.ix.conn, "SELECT id, key FROM nodes WHERE id IN ({})",
                               sig.cand[idx].tolist()))
        return [by_id.get(int(i), "") for i in sig.cand[idx]]

    n_text, n_emb = ((seeds or {}).get(s, tuning.seeds_per_signal) for s in ("text", "dense"))
    parts = families(gctx.ix)
    fam = parts.of(sig.cand) if parts and parts.is_part(sig.cand).any() else None   # (None: no part among them)
    one = (lambda s: s) if fam is None else (lambda s: one_per_definition(s, fam))
    seeds_idx = unique(np.concatenate([
        top_idx(one(text), n_text, positive=False, keys=keys) if ran_text else np.zeros(0, np.int64),
        top_idx(one(emb), n_emb, positive=False, keys=keys) if "dense" in sig.raw_scores
        else np.zeros(0, np.int64)]))
    seed_ids, seed_first = (sig.cand if fam is None else fam)[seeds_idx], first[seeds_idx]
    if fam is not None and len(seed_ids):            # a part's seed is its definition's (its best score)
        o = np.lexsort((-seed_first, seed_ids))
        keep = np.ones(len(o), dtype=bool)
        keep[1:] = seed_ids[o][1:] != seed_ids[o][:-1]
        seed_ids, seed_first = seed_ids[o[keep]], seed_first[o[keep]]
    seed_pos = gctx.positions(seed_ids)
    ok = seed_pos >= 0
    seed_pos, seed_first = seed_pos[ok], seed_first[ok]
    # seed strength in [0, 1] for walks and edge credits
    lo = float(seed_first.min(initial=0.0))
    hi = float(seed_first.max(initial=0.0))
    seed_w = (seed_first - lo) / (hi - lo) if hi > lo else np.ones(len(seed_first))
    seed_w = 0.1 + 0.9 * seed_w
    g = gctx.graph

    walk: dict[int, float] = {}
    reach: dict | tuple = {}         # (a walk: {position: score}; proximity: (positions, scores))
    hits_adj = None
    walked = bool(code_query and "graph" in requested and len(seed_pos) and g.m)   # else proximity
    if "graph" in requested and len(seed_pos) and g.m:
        if walked:
            wpos, ww = seed_pos, seed_w
            if tuning.walk_code_seeds:
                code = np.array([k in CODE_KINDS for k in gctx.kind_names] + [False], dtype=bool)
                keep = code[gctx.kinds[seed_pos]]
                if keep.any():
                    wpos, ww = seed_pos[keep], seed_w[keep]
            walk = gctx.walk(wpos, ww, restart=WALK_RESTART, prune=tuning.walk_prune,
                             **({"skip": tuning.walk_skip} if tuning.walk_skip else {}),
                             **({"skip_at": (("contains",), ("module",))} if tuning.walk_skip_module_contains
                                else {}))
            if tuning.walk_net_restart:
                walk = net_of_restart(walk, wpos, ww, WALK_RESTART)
            if tuning.walk_degree_norm:
                walk = per_degree(walk, SkipTypes(g, gctx.type_ids(tuning.walk_skip)))
            if tuning.walk_drop_kinds and walk:
                drop = {i for i, k in enumerate(gctx.kind_names) if k in tuning.walk_drop_kinds}
                walk = {p: (0.0 if int(gctx.kinds[p]) in drop else v) for p, v in walk.items()}
            if walk:                     # (at most the walk's limit of positions: one look-up)
                ps, vs = without_parts(gctx, np.fromiter(walk, dtype=np.int64, count=len(walk)),
                                       np.fromiter(walk.values(), dtype=np.float64, count=len(walk)))
                walk = dict(zip(ps.tolist(), vs.tolist()))
            reach = walk
        else:
            reach = prox_mod.proximity_arrays(g, seed_pos, seed_w)     # (positions, scores)
    ient: dict[int, float] = {}
    # (a relation question's answers come from its own channel: the edges into the named node)
    if "intent" in requested and it.edge_types and not it.spec.relation and len(seed_pos) and g.m:
        type_ids = gctx.type_ids(it.edge_types)
        if type_ids:
            ient = prox_mod.intent_edges(g, seed_pos, type_ids, seed_w)
    local: dict[int, float] = {}
    glob: dict[int, float] = {}
    if "local" in requested or "global" in requested:
        local, glob = gctx.entity_channels(q.text, opts.depth, want_local="local" in requested,
                                           want_global="global" in requested, words=q.entity_words)
    # nodes reached through the graph join the candidates (scored by every channel)
    reached: list = []          # (positions, repeats allowed: extend takes each node once)
    for d in (reach, ient):
        n_d = len(d[0]) if isinstance(d, tuple) else len(d)
        if not n_d:
            continue
        if sig.allowed is None and n_d <= opts.depth:                   # (all of them are the best depth)
            reached.append(without_parts(gctx, *d)[0] if isinstance(d, tuple) else list(d))
            continue
        # the best reached nodes (score down, position up), inside the filters' set if any
        ps, vs = d if isinstance(d, tuple) else (np.fromiter(d.keys(), dtype=np.int64, count=len(d)),
                                                 np.fromiter(d.values(), dtype=np.float64, count=len(d)))
        if sig.allowed is not None:
            ok = sig.allows(gctx.ids_of(ps))
            ps, vs = ps[ok], vs[ok]
        top = np.lexsort((ps, -vs))[:opts.depth + 64]
        ps, vs = without_parts(gctx, ps[top], vs[top])    # (the walk's are gone already)
        reached.append(ps[:opts.depth])
    new_ids = gctx.ids_of(np.concatenate(reached).astype(np.int64, copy=False)) if reached else \
        np.zeros(0, dtype=np.int64)
    sig.extend(np.concatenate([new_ids, np.fromiter(local.keys(), dtype=np.int64, count=len(local)),
                               np.fromiter(glob.keys(), dtype=np.int64, count=len(glob))]) if local or glob
               else new_ids)
    pos = gctx.positions(sig.cand)
    n = len(sig.cand)
    unit = sig.unit
    graph_sig = np.zeros(n)
    if "graph" in requested and g.m:
        if walked:
            pvec = fuse.normalize(np.array([walk.get(p, 0.0) for p in pos.tolist()])) * unit
        elif across is not None:
            pvec = yield Pull(across, gctx, sig, sig.cand, a, b, it.spec.two_hop)
        else:
            pvec = prox_mod.pull_mean(g, pos, lambda p: sig.first_stage_of(gctx.ids_of(p), a, b),
                                      two_hop=it.spec.two_hop)
        graph_sig = (1 - tuning.pr_blend) * pvec
        if tuning.pr_blend:
            graph_sig = graph_sig + tuning.pr_blend * unit * fuse.normalize(gctx.pagerank_at(pos))
        sig.add("graph", pvec, graph_sig)
        if walked:
            if tuning.code_hits:
                hits_adj = gctx.hits_adjust(pos, seed_pos, pvec) * unit
    if local:
        lv = np.array([local.get(i, 0.0) for i in sig.cand.tolist()])
        ln = fuse.normalize(lv) * unit
        sig.add("local", lv, ln)
        graph_sig = np.maximum(graph_sig, tuning.local_weight * ln)
    if glob:
        gv = np.array([glob.get(i, 0.0) for i in sig.cand.tolist()])
        gn = fuse.normalize(gv) * unit
        sig.add("global", gv, gn)
        graph_sig = np.maximum(graph_sig, tuning.global_weight * gn)
    intent_sig = np.zeros(n)
    if ient:
        iv = np.array([ient.get(p, 0.0) for p in pos.tolist()])
        intent_sig = fuse.normalize(iv) * unit
        sig.add("intent", iv, intent_sig)
    return GraphStage(graph_sig, intent_sig, hits_adj, tuple(gctx.ids_of(seed_pos).tolist()))
