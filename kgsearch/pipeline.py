"""The hybrid query engine: one query in, ranked nodes out, each with the reason it is there.

Stages (each timed, each skipped with a notice when its data or module is missing):

1. intent: ``intent.resolve`` picks the weight profile (alpha embedding, beta text, gamma graph,
   delta intent edges) and the intent's keywords and edge types;
2. channels: bm25 (intent keywords repeated), fts, pattern, equiv, dense, local, global, each
   returning its best ``depth`` nodes;
3. signals on the union of candidates, each normalised to [0, 1]: text = max of the text
   channels, embedding = dense, graph = 0.7 proximity (typed 1-hop/2-hop edges from the seeds,
   or a random walk with restart for code queries) + 0.3 PageRank, intent = intent-edge credit;
   graph walks may add candidates the text channels missed;
4. fusion: linear (``alpha*emb + beta*text + gamma*graph + delta*intent``) or weighted RRF;
5. adjustments: HITS (code queries), test-file penalty, community diversity;
6. output: top k with kind, path:line, snippet, per-channel scores and ranks, method tags.
"""
from __future__ import annotations

import importlib
import json
import logging
import math
import re
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from . import fuse, intent as intent_mod, pack
from .errors import UsageError
from .store.db import Index, qualname_sql

log = logging.getLogger(__name__)

# channel -> (module, function); imported on first use
CHANNEL_FUNCS = {
    "bm25": ("kgsearch.text.bm25", "search"),
    "prf": ("kgsearch.text.prf", "search"),
    "fts": ("kgsearch.text.fts", "search"),
    "pattern": ("kgsearch.text.pattern", "search"),
    "equiv": ("kgsearch.text.keywords", "search_equivalences"),
    "dense": ("kgsearch.embed.vectors", "search"),
}
# channel -> (module, function) giving exact scores for any node ids (fill-in)
# channel -> (module, function) scoring every node at once (for standardisation, norm="z")
FULL_FUNCS = {
    "bm25": ("kgsearch.text.bm25", "score_all"),
    "fts": ("kgsearch.text.fts", "score_all"),
    "prf": ("kgsearch.text.prf", "score_all"),
    "dense": ("kgsearch.embed.scoring", "score_all"),
}
FILL_FUNCS = {
    "bm25": ("kgsearch.text.bm25", "score_ids"),
    "prf": ("kgsearch.text.prf", "score_ids"),
    "dense": ("kgsearch.embed.scoring", "score_ids"),
}
GRAPH_CHANNELS = ("graph", "intent", "local", "global")
ALL_CHANNELS = tuple(CHANNEL_FUNCS) + GRAPH_CHANNELS
# Which fused signal each channel feeds (linear mode) / whose weight it takes (RRF mode).
SIGNAL_OF = {"bm25": "text", "prf": "text", "fts": "text", "pattern": "text", "equiv": "text",
             "dense": "embedding", "graph": "graph", "local": "graph", "global": "graph",
             "intent": "intent"}
# Channels of the default pipeline (chosen by `kgsearch eval --ablate` on ../shared/bench; README).
DEFAULT_CHANNELS = ("bm25", "fts", "dense", "graph", "intent", "pattern", "equiv", "local", "global")

CODE_KINDS = ("module", "class", "function", "method")
SEEDS_PER_SIGNAL = 10
PR_BLEND = 0.0            # graph = (1 - PR_BLEND) * proximity + PR_BLEND * pagerank (0.3 measured -0.006)
LOCAL_WEIGHT = 0.5        # graph signal >= LOCAL_WEIGHT * graph-local channel (demo probes: recall@5 .76 -> .81)
GLOBAL_WEIGHT = 0.25      # graph signal >= GLOBAL_WEIGHT * graph-global channel
TEST_PENALTY = 0.3
DIVERSITY = 1.0           # community diversity factor; 1.05 measured -0.0016 nDCG@10 (off by default)
CACHE_TTL = 300.0
WALK_PRUNE = 5e-5         # RWR pruning: stdlib graph 10.2 -> 6.9 ms a query, top-10 98.7% the same as 1e-5


@dataclass
class SearchOptions:
    k: int = 10
    intent: str | None = None
    weights: str | tuple | None = None
    fusion: str | None = None              # 'linear' (default) or 'rrf'
    channels: str | list[str] | None = None
    explain: bool = False
    use_cache: bool = True
    snippets: bool = True
    depth: int = 100                       # candidates per channel
    norm: str = "z"                        # channel normalisation: z (default), max, minmax, auto
    rrf_k: int = 60
    rrf_cap: int = 50
    keyword_boost: float = 1.0             # intent keywords repeated this often in the BM25 query
                                           # (x5 measured -0.027 nDCG@10 mean on the shared sets)
    collapse: bool = True                  # one hit per note (a section stands for its note)
    diversity: float | None = None         # x factor for the first hit of each new community (None: DIVERSITY)


@dataclass
class Hit:
    id: int
    key: str
    kind: str
    name: str
    qualname: str = ""
    parent: str | None = None                        # key of the containing node (note of a section)
    path: str | None = None
    line: int | None = None
    snippet: str = ""
    score: float = 0.0
    rank: int = 0
    methods: str = ""
    channels: dict = field(default_factory=dict)     # channel -> {"score", "rank", "norm"}
    signals: dict = field(default_factory=dict)      # signal -> {"value", "weight", "part"}
    adjustments: dict = field(default_factory=dict)  # name -> additive delta or factor

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Response:
    query: str
    intent: dict
    fusion: str
    hits: list[Hit]
    channels_run: list[str]
    channels_skipped: dict
    timings_ms: dict
    notices: list[str]
    generation: int
    candidates: int = 0
    code_query: bool = False
    cached: bool = False

    def as_dict(self) -> dict:
        d = asdict(self)
        d["hits"] = [h.as_dict() for h in self.hits]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Response":
        d = dict(d)
        d["hits"] = [Hit(**h) for h in d["hits"]]
        return cls(**d)


def _channel_list(ch) -> list[str] | None:
    if ch is None:
        return None
    items = [c.strip() for c in (ch.split(",") if isinstance(ch, str) else ch) if c and c.strip()]
    bad = [c for c in items if c not in ALL_CHANNELS]
    if bad:
        raise UsageError(f"unknown channel(s) {', '.join(bad)}; choose from {', '.join(ALL_CHANNELS)}")
    return items


class Engine:
    """Query engine bound to an open index; keeps per-generation caches of derived data."""

    def __init__(self, ix: Index, memo: bool = False):
        self.ix = ix
        # memo=True keeps every channel answer (evaluation runs that try many fusion settings)
        self._memo: dict | None = {} if memo else None
        self._funcs: dict[str, Any] = {}
        self._unavailable: dict[str, str] = {}
        self._graph = None
        self._graph_gen = None
        self._notices: list[str] = []

    def notices(self) -> list[str]:
        return list(self._notices)

    # ------------------------------------------------------------------ channels
    def _func(self, name: str):
        if name in self._funcs:
            return self._funcs[name]
        mod_name, fn_name = CHANNEL_FUNCS[name]
        try:
            fn = getattr(importlib.import_module(mod_name), fn_name)
        except (ImportError, AttributeError) as exc:
            self._unavailable[name] = f"not available ({exc})"
            fn = None
        self._funcs[name] = fn
        return fn

    def _run_channel(self, name: str, query: str, opts: SearchOptions, it: intent_mod.Intent,
                     notices: list[str]) -> tuple[np.ndarray, np.ndarray] | str:
        fn = self._func(name)
        if fn is None:
            return self._unavailable.get(name, "not available")
        kwargs = self._kwargs(name, it, opts)
        if self._memo is not None:
            mkey = (name, query, opts.depth, json.dumps(kwargs, sort_keys=True))
            if mkey not in self._memo:
                self._memo[mkey] = self._call(fn, name, query, opts, kwargs)
            return self._memo[mkey]
        return self._call(fn, name, query, opts, kwargs)

    def _call(self, fn, name, query, opts, kwargs):
        try:
            out = fn(self.ix, query, opts.depth, **kwargs)
        except Exception as exc:  # a failing channel is skipped, never fatal
            log.debug("channel %s failed", name, exc_info=True)
            return f"failed ({type(exc).__name__}: {exc})"
        if isinstance(out, str):       # a channel may answer with why it is off
            return out
        ids, scores = out
        return np.asarray(ids, dtype=np.int64), np.asarray(scores, dtype=np.float64)

    # ------------------------------------------------------------------ graph context
    def graph(self):
        """(Graph, node ids by position, position lookup, pagerank by position, communities, type ids)
        or None when the index has no graph."""
        gen = self.ix.generation
        if self._graph_gen == gen:
            return self._graph
        ctx = None
        try:
            gi = importlib.import_module("kgsearch.graph.index")
            ctx = gi.load_context(self.ix)
        except (ImportError, AttributeError) as exc:
            self._unavailable["graph"] = f"not available ({exc})"
        self._graph, self._graph_gen = ctx, gen
        return ctx

    # ------------------------------------------------------------------ main
    def search(self, query: str, opts: SearchOptions | None = None) -> Response:
        opts = opts or SearchOptions()
        t_all = time.perf_counter()
        timings: dict[str, float] = {}
        notices: list[str] = []
        query = query if isinstance(query, str) else str(query)

        def lap(name: str, t0: float) -> float:
            now = time.perf_counter()
            timings[name] = round((now - t0) * 1000, 3)
            return now

        t = time.perf_counter()
        it = intent_mod.resolve(query, opts.intent, opts.weights)
        fusion = opts.fusion or "linear"
        if fusion not in ("linear", "rrf"):
            raise UsageError(f"unknown fusion {fusion!r}; choose 'linear' or 'rrf'")
        requested = _channel_list(opts.channels) or list(DEFAULT_CHANNELS)
        t = lap("intent", t)

        cache_key = None
        if opts.use_cache:
            cache_key = _cache_key(query, opts, requested)
            hit = _cache_get(self.ix, cache_key)
            if hit is not None:
                hit.cached = True
                hit.timings_ms = {"cache": round((time.perf_counter() - t_all) * 1000, 3)}
                return hit

        weights = dict(zip(("embedding", "text", "graph", "intent"), it.weights))
        raw: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        skipped: dict[str, str] = {}
        kwargs_of: dict[str, dict] = {}
        fulls: dict[str, tuple] = {}
        for name in CHANNEL_FUNCS:
            if name not in requested:
                continue
            if weights.get(SIGNAL_OF[name], 0) <= 0 and fusion == "linear" and opts.channels is None:
                skipped[name] = "weight 0 for this intent"
                continue
            alone = requested == [name]        # asked for this channel only: always run it
            if name == "pattern" and not alone and not wants_pattern(query, it):
                skipped[name] = "not an identifier, file name or /regex/ query"
                continue
            if name == "fts" and not alone and not wants_fts(query):
                skipped[name] = "no quoted phrase or boolean operator"
                continue
            kwargs_of[name] = self._kwargs(name, it, opts)
            res = None
            if opts.norm == "z" and name in FULL_FUNCS:
                # one pass scores every node: the channel's top k comes from it (no second scan)
                f = self.full(name, query, kwargs_of[name])
                if f is not None and f[2] > 0:
                    fulls[name] = f
                    res = _topk(f[0], f[1], opts.depth)
            if res is None:
                res = self._run_channel(name, query, opts, it, notices)
            if isinstance(res, str):
                skipped[name] = res
            else:
                raw[name] = res
            t = lap(name, t)

        # ---------------------------------------------------------------- candidates and signals
        ids_list = [r[0] for r in raw.values() if len(r[0])]
        cand = np.unique(np.concatenate(ids_list)) if ids_list else np.zeros(0, dtype=np.int64)
        sig = _Signals(self, query, cand, raw, kwargs_of, opts.norm, fulls)
        text, emb = sig.text(), sig.get("dense")
        t = lap("candidates", t)

        # ---------------------------------------------------------------- graph signals
        gctx = None
        if any(c in requested for c in GRAPH_CHANNELS):
            gctx = self.graph()
            if gctx is None:
                for c in GRAPH_CHANNELS:
                    if c in requested:
                        skipped[c] = self._unavailable.get("graph", "no graph in this index")
        graph_sig = np.zeros(len(sig.cand))
        intent_sig = np.zeros(len(sig.cand))
        code_query = False
        hits_adj = None
        if gctx is not None and len(sig.cand):
            graph_sig, intent_sig, code_query, hits_adj = self._graph_stage(
                gctx, it, requested, opts, sig, weights, query)
            text, emb = sig.text(), sig.get("dense")
            t = lap("graph", t)
        cand = sig.cand

        # ---------------------------------------------------------------- fusion
        signals = {"embedding": emb, "text": text, "graph": graph_sig, "intent": intent_sig}
        if fusion == "linear":
            fused, parts = fuse.linear(signals, weights)
        else:
            chan_w = {n: weights.get(SIGNAL_OF.get(n, "graph"), 0.0) for n in sig.raw_scores}
            fused, parts = fuse.rrf(dict(sig.raw_scores), chan_w, k=opts.rrf_k, cap=opts.rrf_cap)
        adjustments: dict[str, np.ndarray] = {}
        if hits_adj is not None:
            fused = fused + hits_adj
            adjustments["hits"] = hits_adj
        t = lap("fuse", t)

        # ---------------------------------------------------------------- adjustments, top k
        flags_of = _fetch_flags(self.ix, cand) if len(cand) else {}
        meta: dict[int, dict] = {}
        order: list = []
        if len(cand):
            about_tests = "test" in query.lower()
            # multiplicative adjustments need a positive scale: standardised scores are shifted
            # so that the weakest candidate scores 0
            low = float(fused.min())
            if low < 0:
                fused = fused - low
                adjustments["shift"] = np.full(len(cand), -low)
            flags = np.array([flags_of.get(n, -1) for n in cand.tolist()], dtype=np.int64)
            factor = np.ones(len(cand))
            if not about_tests:
                factor[(flags >= 0) & (flags & 2 > 0)] = TEST_PENALTY
            if it.name != "exact_match":
                factor[(flags >= 0) & (flags & 1 > 0)] = 0.0   # tags, entities, placeholders: structure
            factor[flags < 0] = 0.0                            # deleted since the channel ran
            if code_query:
                top = np.argsort(-fused, kind="stable")[:max(opts.k, 10) * 4]
                meta = _fetch_meta(self.ix, cand[top], text=False)
                for i in top.tolist():
                    if factor[i] and _vendored(meta.get(int(cand[i]), {})):
                        factor[i] = 0.0
            if (factor != 1.0).any():
                adjustments["test_or_vendored"] = factor
                fused = fused * factor
            order_arr = np.argsort(-fused, kind="stable")
            div = DIVERSITY if opts.diversity is None else opts.diversity
            comm = gctx.communities_of(cand) if gctx is not None and div != 1.0 else None
            if comm is not None and len(order_arr) > 3:
                before = fused
                fused = pack.diversify(order_arr[:max(opts.k, 10) * 3], fused, comm, div)
                ratio = np.divide(fused, before, out=np.ones(len(fused)), where=before != 0)
                if (ratio != 1.0).any():
                    adjustments["diversity"] = ratio
                order_arr = np.argsort(-fused, kind="stable")
            # every candidate matched some channel; only removed ones (factor 0) drop out
            order = [i for i in order_arr[:max(opts.k, 10) * 4 + 50] if factor[i] > 0]
            meta = _fetch_meta(self.ix, cand[order], text=opts.snippets and not opts.collapse)
            order = [i for i in order if int(cand[i]) in meta]
            if opts.collapse:
                order = order[:opts.k * 4]
                order = pack.collapse_sections(order, {i: meta[int(cand[i])]["key"] for i in order},
                                               {i: meta[int(cand[i])]["kind"] for i in order},
                                               {i: meta[int(cand[i])]["parent"] for i in order})
            order = order[:opts.k]
        t = lap("rank", t)

        if order and opts.snippets and opts.collapse:
            for nid, m in _fetch_meta(self.ix, cand[order]).items():
                meta[nid]["text"] = m["text"]
        hits = self._make_hits(query, cand, order, fused, sig.raw_scores, sig.norm_scores, signals, weights,
                               parts, adjustments, meta, fusion, opts, set(sig.full))
        lap("output", t)
        timings["total"] = round((time.perf_counter() - t_all) * 1000, 3)
        channels_run = [c for c in ALL_CHANNELS if c in raw or c in sig.raw_scores]
        resp = Response(query=query, intent=it.as_dict(), fusion=fusion, hits=hits, channels_run=channels_run,
                        channels_skipped=skipped, timings_ms=timings, notices=notices + self._notices,
                        generation=self.ix.generation, candidates=int(len(cand)), code_query=code_query)
        if cache_key is not None:
            _cache_put(self.ix, cache_key, resp)
        return resp

    def _kwargs(self, name: str, it, opts) -> dict:
        if name in ("bm25", "prf") and it.keywords and opts.keyword_boost != 1.0:
            return {"boost_terms": it.keywords, "boost": opts.keyword_boost}
        return {}

    def full(self, name: str, query: str, kwargs: dict):
        """(ids, scores, population) of channel ``name`` over the whole index, or None."""
        spec = FULL_FUNCS.get(name)
        if spec is None:
            return None
        fn = self._funcs.get("full:" + name)
        if fn is None:
            try:
                fn = getattr(importlib.import_module(spec[0]), spec[1])
            except (ImportError, AttributeError):
                fn = False
            self._funcs["full:" + name] = fn
        if not fn:
            return None
        key = ("full", name, query, json.dumps(kwargs, sort_keys=True))
        if self._memo is not None and key in self._memo:
            return self._memo[key]
        try:
            out = fn(self.ix, query, **kwargs)
        except Exception:
            log.debug("full scores for %s failed", name, exc_info=True)
            out = None
        if self._memo is not None:
            self._memo[key] = out
        return out

    def fill(self, name: str, query: str, ids: np.ndarray, kwargs: dict) -> np.ndarray | None:
        """Exact scores of ``ids`` for channel ``name`` (None when the channel cannot fill in)."""
        spec = FILL_FUNCS.get(name)
        if spec is None or not len(ids):
            return None
        fn = self._funcs.get("fill:" + name)
        if fn is None:
            try:
                fn = getattr(importlib.import_module(spec[0]), spec[1])
            except (ImportError, AttributeError):
                fn = False
            self._funcs["fill:" + name] = fn
        if not fn:
            return None
        if self._memo is not None:
            key = ("fill", name, query, json.dumps(kwargs, sort_keys=True), ids.tobytes())
            if key not in self._memo:
                self._memo[key] = fn(self.ix, query, ids, **kwargs)
            return self._memo[key]
        try:
            return np.asarray(fn(self.ix, query, ids, **kwargs), dtype=np.float64)
        except Exception:
            log.debug("fill-in for %s failed", name, exc_info=True)
            return None

    # ------------------------------------------------------------------ graph stage
    def _graph_stage(self, gctx, it, requested, opts, sig: "_Signals", weights: dict, query: str):
        from .graph import proximity as prox_mod

        a, b = weights.get("embedding", 0.0), weights.get("text", 0.0)
        text, emb = sig.text(), sig.get("dense")
        first = (a * emb + b * text) / (a + b) if a + b > 0 else np.maximum(text, emb)
        seeds_idx = np.unique(np.concatenate([_top_idx(text, SEEDS_PER_SIGNAL, positive=False),
                                              _top_idx(emb, SEEDS_PER_SIGNAL, positive=False)]))
        seed_pos = gctx.positions(sig.cand[seeds_idx])
        ok = seed_pos >= 0
        seed_pos, seed_first = seed_pos[ok], first[seeds_idx][ok]
        # seed strength in [0, 1] for walks and edge credits
        lo = float(seed_first.min(initial=0.0))
        hi = float(seed_first.max(initial=0.0))
        seed_w = (seed_first - lo) / (hi - lo) if hi > lo else np.ones(len(seed_first))
        seed_w = 0.1 + 0.9 * seed_w
        g = gctx.graph

        code_query = False
        walk: dict[int, float] = {}
        reach: dict[int, float] = {}
        hits_adj = None
        if "graph" in requested and len(seed_pos) and g.m:
            code_query = gctx.is_code_query(sig.cand[np.argsort(-first, kind="stable")[:10]])
            if code_query:
                walk = gctx.walk(seed_pos, seed_w, prune=WALK_PRUNE)
                reach = walk
            else:
                reach = prox_mod.proximity(g, seed_pos, seed_w)
        ient: dict[int, float] = {}
        if "intent" in requested and it.edge_types and len(seed_pos) and g.m:
            type_ids = gctx.type_ids(it.edge_types)
            if type_ids:
                ient = prox_mod.intent_edges(g, seed_pos, type_ids, seed_w)
        local: dict[int, float] = {}
        glob: dict[int, float] = {}
        if "local" in requested or "global" in requested:
            local, glob = gctx.entity_channels(query, opts.depth, want_local="local" in requested,
                                               want_global="global" in requested)
        # nodes reached through the graph join the candidates (scored by every channel)
        reached: set[int] = set()
        for d in (reach, ient):
            if d:
                reached.update(p for p, _ in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:opts.depth])
        new_ids = gctx.ids_of(np.fromiter(reached, dtype=np.int64, count=len(reached))) if reached else \
            np.zeros(0, dtype=np.int64)
        sig.extend(np.concatenate([new_ids, np.fromiter(local.keys(), dtype=np.int64, count=len(local)),
                                   np.fromiter(glob.keys(), dtype=np.int64, count=len(glob))]))
        pos = gctx.positions(sig.cand)
        n = len(sig.cand)
        unit = sig.unit
        graph_sig = np.zeros(n)
        if "graph" in requested and g.m:
            if code_query:
                pvec = fuse.normalize(np.array([walk.get(p, 0.0) for p in pos.tolist()])) * unit
            else:
                pvec = prox_mod.pull_mean(g, pos, lambda p: sig.first_stage_of(gctx.ids_of(p), a, b),
                                          two_hop=it.name in ("workflow", "exploratory"))
            graph_sig = (1 - PR_BLEND) * pvec
            if PR_BLEND:
                graph_sig = graph_sig + PR_BLEND * unit * fuse.normalize(gctx.pagerank_at(pos))
            sig.add("graph", pvec, graph_sig)
            if code_query:
                hits_adj = gctx.hits_adjust(pos, seed_pos, pvec) * unit
        if local:
            lv = np.array([local.get(i, 0.0) for i in sig.cand.tolist()])
            ln = fuse.normalize(lv) * unit
            sig.add("local", lv, ln)
            graph_sig = np.maximum(graph_sig, LOCAL_WEIGHT * ln)
        if glob:
            gv = np.array([glob.get(i, 0.0) for i in sig.cand.tolist()])
            gn = fuse.normalize(gv) * unit
            sig.add("global", gv, gn)
            graph_sig = np.maximum(graph_sig, GLOBAL_WEIGHT * gn)
        intent_sig = np.zeros(n)
        if ient:
            iv = np.array([ient.get(p, 0.0) for p in pos.tolist()])
            intent_sig = fuse.normalize(iv) * unit
            sig.add("intent", iv, intent_sig)
        return graph_sig, intent_sig, code_query, hits_adj

    # ------------------------------------------------------------------ output
    def _make_hits(self, query, cand, order, fused, chan_sig, norm_sig, signals, weights, parts, adjustments,
                   meta, fusion, opts, full_names=frozenset()) -> list[Hit]:
        if not len(order):
            return []
        terms = pack.query_terms(query) if opts.snippets else []
        ranks = {n: fuse.ranks(s) for n, s in chan_sig.items()}
        hits = []
        for r, i in enumerate(order, 1):
            nid = int(cand[i])
            m = meta[nid]
            chans = {}
            for n, s in chan_sig.items():
                if s[i] > 0 or n in full_names:
                    chans[n] = {"score": round(float(s[i]), 6), "rank": int(ranks[n][i]),
                                "norm": round(float(norm_sig.get(n, s)[i]), 6)}
            sigs = {}
            if fusion == "linear":
                for n, s in signals.items():
                    if s[i] > 0 or n in parts:
                        sigs[n] = {"value": round(float(s[i]), 6), "weight": weights.get(n, 0.0),
                                   "part": round(float(parts[n][i]), 6) if n in parts else 0.0}
            else:
                for n, p in parts.items():
                    if p[i] > 0:
                        sigs[n] = {"value": int(ranks.get(n, np.zeros(len(cand), dtype=int))[i]),
                                   "weight": weights.get(SIGNAL_OF.get(n, "graph"), 0.0),
                                   "part": round(float(p[i]), 6)}
            adj = {k: round(float(v[i]), 6) for k, v in adjustments.items() if v[i] not in (0.0, 1.0)}
            methods = "+".join(sorted({SIGNAL_OF[n] if SIGNAL_OF[n] != "embedding" else "embedding"
                                       for n in chans}, key=["text", "embedding", "graph", "intent"].index))
            text = m.get("text", "")
            snip = pack.snippet(text or m["name"], terms) if opts.snippets else ""
            hits.append(Hit(id=nid, key=m["key"], kind=m["kind"], name=m["name"], qualname=m["qualname"] or "",
                            parent=m["parent"], path=m["path"], line=m["line_start"], snippet=snip, score=round(float(fused[i]), 6),
                            rank=r, methods=methods, channels=chans, signals=sigs, adjustments=adj))
        return hits



class _Signals:
    """Channel scores on one growing candidate list.

    ``norm="z"`` (default): a channel that can score every node (bm25, prf, dense) is
    standardised over the whole index, ``z = (s - mean) / std`` (zeros included for lexical
    channels; a node without a vector counts as average for dense). The spread across the
    index says how much a difference means for this query, so a query with one outstanding
    lexical match trusts it more than a query where everything matches a little. Channels that
    only name a few nodes (fts, pattern, equiv, local, global, intent) keep a [0, 1] value,
    put on the same scale by multiplying it by ``unit`` (the best first-stage score, at least 1).

    ``norm="max"|"minmax"|"auto"``: every channel is mapped to [0, 1] over the first candidate
    list (later candidates with the same statistics, clipped); missing scores are filled in.
    """

    def __init__(self, engine: "Engine", query: str, cand: np.ndarray, raw: dict, kwargs: dict, norm: str,
                 fulls: dict | None = None):
        self.engine, self.query, self.kwargs, self.norm = engine, query, kwargs, norm
        self.cand = cand
        self.raw = raw
        self.full: dict[str, tuple] = {}
        self.raw_scores: dict[str, np.ndarray] = {}
        self.norm_scores: dict[str, np.ndarray] = {}
        self.stats: dict[str, tuple[float, float]] = {}
        for name, (ids, scores) in raw.items():
            if norm == "z" and name in FULL_FUNCS:
                f = (fulls or {}).get(name) or engine.full(name, query, kwargs.get(name, {}))
                if f is not None and f[2] > 0:
                    fid, fsc, n = f
                    mu = float(fsc.sum()) / n
                    sd = math.sqrt(max(float((fsc * fsc).sum()) / n - mu * mu, 1e-12))
                    default = mu if name == "dense" else 0.0
                    self.full[name] = (fid, fsc, mu, sd, default)
                    raw_c = self._lookup(name, cand)
                    self.raw_scores[name] = raw_c
                    self.norm_scores[name] = (raw_c - mu) / sd
                    continue
            s = _align(cand, ids, scores)
            filled = engine.fill(name, query, cand, kwargs.get(name, {}))
            if filled is not None:
                s = np.maximum(s, filled)
            self.raw_scores[name] = s
            pos = s[s > 0]
            lo = float(pos.min()) if len(pos) else 0.0
            hi = float(pos.max()) if len(pos) else 0.0
            if norm in ("max", "z") or (norm == "auto" and name != "dense"):
                lo = 0.0          # a lexical score of 0 means "no match": keep it apart from weak matches
            self.stats[name] = (lo, hi)
            self.norm_scores[name] = self._normalize(name, s)
        self.unit = 1.0
        if norm == "z" and len(cand):
            self.unit = max(1.0, float(self.text().max(initial=0.0)), float(self.get("dense").max(initial=0.0)))

    # ---------------------------------------------------------------- values
    def _lookup(self, name: str, ids: np.ndarray) -> np.ndarray:
        fid, fsc, _, _, default = self.full[name]
        out = np.full(len(ids), default, dtype=np.float64)
        if len(fid) and len(ids):
            pos = np.minimum(np.searchsorted(fid, ids), len(fid) - 1)
            hit = fid[pos] == ids
            out[hit] = fsc[pos[hit]]
        return out

    def _normalize(self, name: str, s: np.ndarray) -> np.ndarray:
        lo, hi = self.stats[name]
        out = np.zeros(len(s))
        pos = s > 0
        if hi <= lo:
            out[pos] = 1.0
        else:
            out[pos] = np.clip((s[pos] - lo) / (hi - lo), 0.0, 1.0)
        return out

    def get(self, name: str) -> np.ndarray:
        return self.norm_scores.get(name, np.zeros(len(self.cand)))

    def text(self) -> np.ndarray:
        names = [n for n in self.norm_scores if SIGNAL_OF.get(n) == "text"]
        if not names:
            return np.zeros(len(self.cand))
        if self.norm != "z":
            return np.max([self.norm_scores[n] for n in names], axis=0)
        dense_z = [self.norm_scores[n] for n in names if n in self.full]
        sparse = [self.norm_scores[n] for n in names if n not in self.full]
        t = np.max(dense_z, axis=0) if dense_z else None
        if sparse:
            scale = max(1.0, float(t.max(initial=0.0))) if t is not None else 1.0
            sp = np.max(sparse, axis=0) * scale
            t = sp if t is None else np.maximum(t, sp)
        return t

    def first_stage_of(self, ids: np.ndarray, a: float, b: float) -> np.ndarray:
        """(a * embedding + b * text) / (a + b) for any node ids (full-index channels; others 0)."""
        ids = np.asarray(ids, dtype=np.int64)
        text = np.zeros(len(ids))
        emb = np.zeros(len(ids))
        tnames = [n for n in self.raw_scores if SIGNAL_OF.get(n) == "text"]
        if self.norm == "z":
            tz = [(self._lookup(n, ids) - self.full[n][2]) / self.full[n][3] for n in tnames if n in self.full]
            if tz:
                text = np.max(tz, axis=0)
            if "dense" in self.full:
                emb = (self._lookup("dense", ids) - self.full["dense"][2]) / self.full["dense"][3]
        else:
            tv = []
            for n in tnames:
                f = self.engine.fill(n, self.query, ids, self.kwargs.get(n, {}))
                if f is not None:
                    tv.append(self._normalize(n, f))
            if tv:
                text = np.max(tv, axis=0)
            if "dense" in self.stats:
                f = self.engine.fill("dense", self.query, ids, {})
                if f is not None:
                    emb = self._normalize("dense", f)
        if "dense" not in self.raw_scores:
            return text
        return (a * emb + b * text) / (a + b) if a + b > 0 else np.maximum(text, emb)

    # ---------------------------------------------------------------- changes
    def add(self, name: str, raw: np.ndarray, norm: np.ndarray) -> None:
        self.raw_scores[name] = raw
        self.norm_scores[name] = norm

    def extend(self, ids: np.ndarray) -> None:
        """Add candidates (after the existing ones), with every channel's score for them."""
        add = np.setdiff1d(np.unique(np.asarray(ids, dtype=np.int64)), self.cand)
        if not len(add):
            return
        self.cand = np.concatenate([self.cand, add])
        for name in list(self.raw_scores):
            if name in self.full:
                extra = self._lookup(name, add)
                _, _, mu, sd, _ = self.full[name]
                self.raw_scores[name] = np.concatenate([self.raw_scores[name], extra])
                self.norm_scores[name] = np.concatenate([self.norm_scores[name], (extra - mu) / sd])
                continue
            extra = np.zeros(len(add))
            if name in self.raw:
                ids_, scores = self.raw[name]
                idx = {int(v): i for i, v in enumerate(ids_.tolist())}
                for j, v in enumerate(add.tolist()):
                    if v in idx:
                        extra[j] = scores[idx[v]]
                filled = self.engine.fill(name, self.query, add, self.kwargs.get(name, {}))
                if filled is not None:
                    extra = np.maximum(extra, filled)
            self.raw_scores[name] = np.concatenate([self.raw_scores[name], extra])
            self.norm_scores[name] = np.concatenate([self.norm_scores[name],
                                                     self._normalize(name, extra) if name in self.stats
                                                     else np.zeros(len(add))])


# ---------------------------------------------------------------------------- helpers
_CODE_TOKEN = re.compile(r"[a-z0-9]_[a-z0-9]|[a-z][A-Z][a-z]|\b[A-Za-z_]\w+\.[A-Za-z_]\w+|\w\(\)|`", re.ASCII)


_FTS_SYNTAX = re.compile(r'"[^"]+"|\b(AND|OR|NOT|NEAR)\b')


def wants_fts(query: str) -> bool:
    """FTS5 adds what BM25 cannot: quoted phrases and AND/OR/NOT/NEAR. Otherwise it is the same
    bag-of-words ranking without stemming and is not run by default."""
    return bool(_FTS_SYNTAX.search(query))


def wants_pattern(query: str, it) -> bool:
    """The pattern channel (identifiers, typos, regex) runs for exact-match intents, ``/regex/``
    queries and queries holding an identifier (snake_case, camelCase, dotted, ``call()``,
    backticks). Scientific tokens such as ``mRNA`` or ``e.g.`` do not count: measured, letting
    them through cost 0.003 nDCG@10 on the shared sets."""
    q = query.strip()
    if len(q) > 2 and q.startswith("/") and q.rfind("/") > 0:
        return True
    if it.name == "exact_match" and it.reason != "quoted phrase":
        return True
    return bool(_CODE_TOKEN.search(q))


def _align(cand: np.ndarray, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
    out = np.zeros(len(cand))
    if len(ids):
        pos = np.searchsorted(cand, ids)
        out[pos] = np.maximum(out[pos], scores)
    return out


def _topk(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` (ids, scores) by score, ties by smaller id; scores <= 0 kept only for dense."""
    if not len(ids) or k <= 0:
        return np.zeros(0, np.int64), np.zeros(0)
    if len(ids) > k:
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(len(ids))
    order = part[np.lexsort((ids[part], -scores[part]))]
    return ids[order].astype(np.int64), scores[order].astype(np.float64)


def _top_idx(s: np.ndarray, k: int, positive: bool = True) -> np.ndarray:
    if not len(s) or k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, len(s))
    idx = np.argpartition(-s, k - 1)[:k]
    return idx[s[idx] > 0] if positive else idx


_VENDORED = re.compile(r"/(vendor|vendored|_vendor|third_party|node_modules|mocks)/|\.min\.")


def _vendored(m: dict) -> bool:
    p = (m.get("path") or "").replace("\\", "/").lower()
    return bool(_VENDORED.search(p)) or (m.get("name") or "").startswith(("Mock", "mock_"))


def _fetch_flags(ix: Index, ids: np.ndarray) -> dict[int, int]:
    out: dict[int, int] = {}
    idl = [int(x) for x in ids]
    for start in range(0, len(idl), 900):
        chunk = idl[start:start + 900]
        out.update(ix.conn.execute(f"SELECT id, flags FROM nodes WHERE id IN ({','.join('?' * len(chunk))})",
                                   chunk))
    return out


def _fetch_meta(ix: Index, ids: np.ndarray, text: bool = True) -> dict[int, dict]:
    """Display fields of nodes; ``text=False`` leaves the (large) text out: it is fetched for the
    final hits only."""
    out = {}
    idl = [int(x) for x in ids]
    tcol = "kgtext(n.text)" if text else "''"
    for start in range(0, len(idl), 900):
        chunk = idl[start:start + 900]
        rows = ix.conn.execute(
            f"SELECT n.id, n.key, n.kind, n.name, {qualname_sql('n')}, coalesce(n.path, f.path), n.line_start, n.flags, "
            f"{tcol}, p.key FROM nodes n LEFT JOIN nodes p ON p.id = n.parent_id LEFT JOIN files f ON f.id = n.file_id "
            f"WHERE n.id IN ({','.join('?' * len(chunk))})", chunk)
        for r in rows:
            out[r[0]] = {"key": r[1], "kind": r[2], "name": r[3], "qualname": r[4], "path": r[5],
                         "line_start": r[6], "flags": r[7], "text": r[8], "parent": r[9]}
    return out


def _cache_key(query: str, opts: SearchOptions, channels: list[str]) -> str:
    d = asdict(opts)
    for k in ("explain", "use_cache"):
        d.pop(k, None)
    d["channels"] = channels
    return json.dumps({"q": query, "o": d}, sort_keys=True, default=str)


def _cache_get(ix: Index, key: str) -> Response | None:
    try:
        row = ix.conn.execute("SELECT generation, created, response FROM qcache WHERE key=?", (key,)).fetchone()
    except Exception:
        return None
    if row is None or row[0] != ix.generation or time.time() - row[1] > CACHE_TTL:
        return None
    try:
        return Response.from_dict(json.loads(row[2]))
    except (ValueError, TypeError):
        return None


def _cache_put(ix: Index, key: str, resp: Response) -> None:
    """Best effort, never blocking: a busy or read-only index just skips the cache."""
    try:
        conn = ix.conn
        old = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("DELETE FROM qcache WHERE created < ? OR generation != ?",
                         (time.time() - CACHE_TTL, ix.generation))
            conn.execute("INSERT OR REPLACE INTO qcache(key, generation, created, response) VALUES (?,?,?,?)",
                         (key, ix.generation, time.time(), json.dumps(resp.as_dict(), default=str)))
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(old)}")
    except Exception:
        log.debug("result cache not written", exc_info=True)


# ---------------------------------------------------------------------------- module API
_ENGINES: dict[str, Engine] = {}


def engine_for(db=None) -> Engine:
    from .config import default_db_path

    path = str(db or default_db_path())
    eng = _ENGINES.get(path)
    if eng is None:
        eng = Engine(Index.open(path, readonly=True))
        _ENGINES[path] = eng
    return eng


def search(query: str, db=None, options: SearchOptions | None = None, k: int | None = None, **kw) -> Response:
    """Run the pipeline on the index at ``db`` (default index when None)."""
    opts = options or SearchOptions()
    if k is not None or kw:
        opts = replace(opts, **({"k": k} if k is not None else {}), **kw)
    return engine_for(db).search(query, opts)


def why(query: str, node: str, db=None, options: SearchOptions | None = None) -> dict:
    """Where ``node`` ranked for ``query`` and why: its channel scores, signals, and what beat it."""
    from .stats import find_node

    eng = engine_for(db)
    target = find_node(eng.ix, node)
    opts = replace(options or SearchOptions(), use_cache=False, explain=True)
    wide = eng.search(query, replace(opts, k=max(1000, opts.k)))
    pos = next((h for h in wide.hits if h.id == target["id"]), None)
    top = wide.hits[:opts.k]
    out = {"query": query, "node": {k: target[k] for k in ("id", "key", "kind", "name", "path")},
           "intent": wide.intent, "fusion": wide.fusion, "channels_run": wide.channels_run,
           "k": opts.k, "rank": pos.rank if pos else None, "hit": pos.as_dict() if pos else None,
           "cutoff_score": top[-1].score if len(top) >= opts.k else None,
           "top": [{"rank": h.rank, "key": h.key, "name": h.name, "score": h.score} for h in top]}
    if pos is None:
        out["reason"] = ("no channel returned this node among its candidates: none of the query terms match "
                         "its text closely enough, its embedding is not among the nearest, and no seed links to it")
    elif pos.rank > opts.k:
        out["reason"] = f"ranked {pos.rank}, below the top {opts.k} (score {pos.score} < cutoff {out['cutoff_score']})"
    else:
        out["reason"] = f"in the top {opts.k} at rank {pos.rank}"
    return out


# ---------------------------------------------------------------------------- formatting
def format_response(resp: Response, explain: bool = False) -> str:
    lines = []
    it = resp.intent
    w = it["weights"]
    head = (f"intent {it['name']} (emb {w['embedding']:.2f} text {w['text']:.2f} graph {w['graph']:.2f} "
            f"intent {w['intent']:.2f}), fusion {resp.fusion}, channels {'+'.join(resp.channels_run) or '-'}"
            f"{', cached' if resp.cached else ''}, {resp.timings_ms.get('total', resp.timings_ms.get('cache', 0)):.1f} ms")
    if not resp.hits:
        return f"no results for {resp.query!r}\n({head})"
    for h in resp.hits:
        loc = f"{h.path}:{h.line}" if h.path and h.line else (h.path or "")
        lines.append(f"{h.rank:>2}. {h.name}  [{h.kind}]  {h.score:.4f}  {h.methods}")
        lines.append(f"    {h.key}" + (f"  {loc}" if loc else ""))
        if h.snippet:
            lines.append(f"    {h.snippet}")
        if explain:
            for n, c in h.channels.items():
                lines.append(f"      {n:<8} score {c['score']:.4f}  rank {c['rank']:>3}  norm {c['norm']:.3f}")
            for n, s in h.signals.items():
                lines.append(f"      = {n:<9} {s['value']:.3f} x {s['weight']:.2f} = {s['part']:.4f}")
            for n, v in h.adjustments.items():
                lines.append(_adj_line(n, v, "      "))
    lines.append("")
    lines.append(f"({head})")
    if explain:
        lines.append("(timings ms: " + ", ".join(f"{k} {v:.1f}" for k, v in resp.timings_ms.items()) + ")")
        for c, why_ in resp.channels_skipped.items():
            lines.append(f"(skipped {c}: {why_})")
    return "\n".join(lines)


ADDITIVE_ADJUSTMENTS = ("hits", "shift")
_ADJ_NOTES = {"shift": "(every candidate moved up so the weakest scores 0)",
              "hits": "(HITS on the walk's top nodes)", "test_or_vendored": "(test, vendored or structural node)",
              "diversity": "(community diversity)"}


def _adj_line(name: str, value: float, indent: str) -> str:
    """Adjustments apply in order: additive ones to the sum of the parts, then factors."""
    note = _ADJ_NOTES.get(name, "")
    if name in ADDITIVE_ADJUSTMENTS:
        return f"{indent}+ {name:<9} {value:+.4f} {note}".rstrip()
    return f"{indent}x {name:<9} {value:.4f} {note}".rstrip()


def format_why(info: dict) -> str:
    lines = [f"{info['node']['name']} [{info['node']['kind']}] {info['node']['key']}",
             f"query {info['query']!r}: intent {info['intent']['name']}, fusion {info['fusion']}, "
             f"channels {'+'.join(info['channels_run'])}",
             info["reason"]]
    h = info.get("hit")
    if h:
        lines.append(f"score {h['score']:.4f} at rank {h['rank']}")
        for n, c in h["channels"].items():
            lines.append(f"  {n:<8} score {c['score']:.4f} rank {c['rank']} norm {c['norm']:.3f}")
        for n, s in h["signals"].items():
            lines.append(f"  = {n:<9} {s['value']:.3f} x {s['weight']:.2f} = {s['part']:.4f}")
        for n, v in h["adjustments"].items():
            lines.append(_adj_line(n, v, "  "))
    lines.append("top results:")
    for t in info["top"]:
        lines.append(f"  {t['rank']:>2}. {t['score']:.4f} {t['name']} ({t['key']})")
    return "\n".join(lines)
