"""The hybrid query engine: one query in, ranked nodes out, each with the reason it is there.

:meth:`Engine.search` reads top to bottom as the stages run (each timed in
``Response.timings_ms``; a stage whose data or module is missing is skipped with a notice in
``Response.channels_skipped``):

1. parse and intent: the text is analysed once into a :class:`~kgsearch.query.parse.Query`
   (with the index's analyser) that every later stage reads, and
   :func:`kgsearch.query.intent.resolve` picks the intent spec (weights, edge types, keywords,
   flags);
2. channels (:mod:`.channels`): bm25, prf, fts, pattern, equiv, anchors, relation, dense, each
   answering its best ``depth`` nodes, a long code definition and the parts of its text counted
   as one (:mod:`.families`); a channel that can score every node is read once for both;
3. signals (:mod:`.signals`) on the union of candidates: text = best text channel, embedding =
   dense, standardised over the whole index (``norm="z"``) or mapped to [0, 1]; then whether
   this is a code query (:func:`kgsearch.query.code.is_code_query`, from the first stage's top);
4. graph stage (:mod:`.graph_stage`): graph and intent signals from the seeds; the nodes they
   reach join the candidates;
5. fusion (:mod:`kgsearch.fuse`): linear ``alpha*emb + beta*text + gamma*graph + delta*intent``
   or weighted RRF;
6. adjustments and the top k (:mod:`.adjust`); 7. hits with every part of their score
   (:mod:`.results`).

A channel that fails is skipped and named in ``channels_skipped``; in strict mode
(``Engine(ix, strict=True)``, or ``KGSEARCH_STRICT=1`` as the CLI read it, which the test
suite sets) it raises. A damaged index file ("database disk image is malformed") always
raises: the caller says which file and how to rebuild it (:func:`kgsearch.store.db.ensure_error`).

The result cache (:mod:`kgsearch.store.qcache`) is used only when asked
(``SearchOptions.use_cache``; the CLI's ``search`` asks); its key holds the query, the options,
the kgsearch version, the engine's :class:`~kgsearch.query.tuning.Tuning` and the intents'
weights, so a ranking change never answers from an old entry.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, replace

import numpy as np

from .. import fuse
from ..budget import ENV as BUDGET_ENV
from ..environment import current as current_environment
from ..errors import BadIndex
from ..graph.context import load_context
from ..store import qcache
from ..store.db import Index, is_corruption
from ..text.keywords import UNREAD
from ..text.pattern import regex_notice, search as pattern_search
from ..text.postings import doc_freqs
from ..version import __version__, code_stamp
from . import feedback
from . import filters as filters_mod
from .adjust import ADDITIVE, Unread, proximity, query_weights, rank
from .channels import ALL_CHANNELS, CHANNELS, DEFAULT_CHANNELS, GRAPH_CHANNELS, SIGNAL_OF, SIGNALS, dense_kwargs
from .code import code_share, has_typescript, implemented_stubs, is_code_query
from .graph_stage import graph_steps, run
from .group import file_hit, group_by_file
from .correct import correction_notice, corrected
from .families import families, top_families
from .intent import INTENTS, resolve
from .memory import fit_page_cache, graph_over_budget
from .options import Hit, Response, SearchOptions
from .parse import Query, index_analyzer, parse
from .results import make_hits
from .signals import Signals, candidates, in_set, top_ids
from .tuning import TUNING, Tuning

__all__ = ["Engine"]

log = logging.getLogger(__name__)


class _Clock:
    def __init__(self) -> None:
        self.start = self.t = time.perf_counter()
        self.ms: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round((now - self.t) * 1000, 3)
        self.t = now

    def total(self) -> float:
        return round((time.perf_counter() - self.start) * 1000, 3)

    def away(self, steps):
        """``yield from steps`` (a generator), the time between each of its yields and the value
        sent back left out of the stages (the caller works on other indexes meanwhile)."""
        try:
            req = next(steps)
        except StopIteration as stop:
            return stop.value
        while True:
            t = time.perf_counter()
            got = yield req
            gone = time.perf_counter() - t
            self.start += gone
            self.t += gone
            try:
                req = steps.send(got)
            except StopIteration as stop:
                return stop.value


class Engine:
    """Query engine bound to an open index; keeps per-generation caches of derived data.

    ``memo=True`` keeps every channel answer (evaluation runs that try many fusion settings);
    ``strict=True`` re-raises channel failures instead of skipping the channel (default: the
    configured environment's ``strict``, :mod:`kgsearch.environment`).
    """

    def __init__(self, ix: Index, memo: bool = False, strict: bool | None = None, tuning: Tuning = TUNING):
        self.ix = ix
        self.strict = current_environment().strict if strict is None else strict
        self.tuning = tuning
        self._memo: dict | None = {} if memo else None
        self._graph = None
        self._graph_gen = None
        self._graph_off: str | None = None
        self._notices: list[str] = []
        fit_page_cache(ix)

    def notices(self) -> list[str]:
        return list(self._notices)

    def parse(self, text) -> Query:
        """``text`` analysed once, with this index's analyser (its stemmer and splitting); its
        field filters (``kind:function -path:tests/``) taken out into :attr:`Query.filters`."""
        if isinstance(text, str):
            filters_mod.check_query_words(text)
        return parse(text, index_analyzer(self.ix), filters=True, paste=self.tuning.quiet_paste)

    def corrected(self, q: Query, df_of=None, known_of=None) -> tuple[Query, list[tuple[str, str]]]:
        """``q`` with the words this index does not know corrected to a known word one edit away
        (:func:`kgsearch.query.correct.corrected`), re-parsed, and the ``[(typed, fix)]`` pairs.
        ``df_of``: the document frequencies to judge by (several indexes pass their sum);
        default this index's; ``known_of``: which terms are known (several indexes: any of
        them), when cheaper than ``df_of``. Spellings the index's embedding model holds as whole
        words come first (:meth:`is_word`)."""
        if q.analyzer is None:
            q = replace(q, analyzer=index_analyzer(self.ix))
        return corrected(q, df_of or (lambda ts: doc_freqs(self.ix.conn, ts)), self.tuning.quiet_paste, self.is_word,
                         known_of)

    def is_word(self, word: str) -> bool:
        """Whether the index's embedding model has ``word`` as one whole token (False without a
        model): the vocabulary of real words typo correction prefers. The model is looked up only
        when a correction has several candidates to choose from."""
        from ..embed.index_model import query_model

        model = query_model(self.ix)
        return not isinstance(model, str) and model.is_whole_word(word)

    def allowed(self, q: Query, opts: SearchOptions) -> tuple[Query, np.ndarray | None]:
        """``q`` with the query's and the options' filters, checked (:mod:`.filters`), and the
        sorted node ids they keep (None: no filter). A ``/regex/`` query keeps the nodes whose
        names it matches, as a filter does (:meth:`regex_matches`)."""
        flt = tuple(dict.fromkeys(filters_mod.parse_filters(q.filters) + filters_mod.parse_filters(opts.filters)))
        allowed = None
        if flt:
            q = replace(q, filters=flt)
            allowed = filters_mod.allowed_ids(self.ix, flt, self.graph())
            if len(allowed) == filters_mod.node_count(self.ix):
                allowed = None                  # the filters keep every node: nothing to narrow
        names = self.regex_matches(q, opts)
        if names is not None:
            allowed = names if allowed is None else names[in_set(names, allowed)]
        return q, allowed

    def regex_matches(self, q: Query, opts: SearchOptions) -> np.ndarray | None:
        """For a ``/regex/`` query with the pattern channel asked for: the sorted ids of the nodes
        whose names the regex matches, which alone rank (the README's "regex over identifiers":
        other names had ranked above them on the regex's words, `/^Has\\w+Flags$/` -> `Flags`,
        `Command`). None when the query is no regex, the regex does not run (:func:`regex_notice`
        says why) or it matches no name: then the search ranks as for any query."""
        if not q.slash_regex or q.pattern[0] is None or "pattern" not in (opts.channel_list() or DEFAULT_CHANNELS) \
                or regex_notice(q.pattern[0]):
            return None                     # (a query that starts with a path, /usr/lib/x is slow, is no regex)
        ids, _ = pattern_search(self.ix, q.text, k=filters_mod.node_count(self.ix), fuzzy=False, parts=q.pattern)
        return np.sort(ids.astype(np.int64)) if len(ids) else None

    # ------------------------------------------------------------------ the query
    def search(self, query: str | Query, opts: SearchOptions | None = None, session=None, pool=None) -> Response:
        """Run the pipeline for ``query`` (a string, or a :class:`Query` this engine parsed).
        ``pool`` (:class:`kgsearch.query.multi.Pool`, when several indexes rank as one): extra
        channel arguments, whole-index scores already computed, and the union's mean and spread
        to standardise with. None: this index alone.

        The index's generation is read once for the search (:meth:`Index.pinned`): every cache
        the search consults (vectors, graph, postings statistics, the query vector) is checked
        against the same generation, not against whichever a reindex committed meanwhile left."""
        with self.ix.pinned():
            return run(self._steps(query, opts, session, pool))

    def steps(self, query: str | Query, opts: SearchOptions | None = None, session=None, pool=None):
        """:meth:`search` as a generator that returns the :class:`Response`: with the union's
        ``similar_text`` lists (``pool.across``) it yields its graph stage's
        :class:`~kgsearch.query.graph_stage.Pull` and takes the pulled values back, so several
        indexes searched as one compute every index's pull at once
        (:class:`kgsearch.query.multi.MultiEngine`); :func:`~kgsearch.query.graph_stage.run`
        answers each pull alone, as :meth:`search` does. The time spent away from the generator
        is left out of its stage timings.

        The generation is read once, as by :meth:`search`, and pinned only while the generator
        runs (:meth:`Index.pinned`), not while it waits at its pull: a search its caller abandons
        there leaves nothing pinned. Closing the generator closes the search."""
        inner = self._steps(query, opts, session, pool)
        gen, sent = None, None
        try:
            while True:
                with self.ix.pinned(gen) as ix:
                    gen = ix.generation
                    try:
                        req = inner.send(sent)
                    except StopIteration as stop:
                        return stop.value
                sent = yield req
        finally:
            inner.close()

    def _steps(self, query: str | Query, opts: SearchOptions | None, session, pool):
        opts = (opts or SearchOptions()).validated()
        clock = _Clock()
        q = query if isinstance(query, Query) else self.parse(query)
        fixes: list[tuple[str, str]] = []
        if opts.correct and not isinstance(query, Query):
            q, fixes = self.corrected(q)
        q, allowed = self.allowed(q, opts)
        it = self._intent(q, opts, pool)
        fusion = opts.fusion or "linear"
        requested = opts.channel_list() or list(DEFAULT_CHANNELS)
        clock.lap("intent")
        # Session boosts and feedback nudges (query/feedback.py): extra factors in rank(). None when
        # ``session`` (a feedback.Session) opened nothing and the index holds no similar feedback
        # (or ``opts.feedback`` is off): then nothing below changes. Nudged answers are not
        # cached (they change without a reindex).
        nudges = feedback.nudges_for(self.ix, q, session, feedback=opts.feedback)
        cache_key = self._cache_key(q, opts, requested) if opts.use_cache and nudges is None and not fixes else None
        if cache_key is not None:
            cached = self._cached(cache_key, clock)
            if cached is not None:
                return cached

        weights = dict(zip(SIGNALS, it.weights))
        if allowed is not None and not len(allowed):
            return self._nothing(q, it, fusion, clock, requested)
        raw, skipped, kwargs_of, fulls = self._run_channels(q, opts, it, requested, weights, fusion, clock, pool,
                                                            allowed)
        notices = ([q.cut] if q.cut else []) + ([correction_notice(q.text, fixes)] if fixes else []) \
            + self._failures(raw, skipped)
        if q.slash_regex and q.pattern[0] is not None and "pattern" in raw:   # a /regex/ that did not run as one says so
            bad_regex = regex_notice(q.pattern[0])
            if bad_regex:
                notices.append(bad_regex)
            elif not len(raw["pattern"][0]):
                notices.append(f"{q.text.strip()} matches no name in the index: the results match its words")
        sig = Signals(self, q, candidates(raw), raw, kwargs_of, opts.norm, fulls,
                      pool.stats if pool is not None else None, allowed=allowed)
        code_query = is_code_query(self.ix.conn, sig.cand, sig.first_stage(weights), self.ix)
        text, emb = sig.text(), sig.get("dense")
        clock.lap("candidates")

        gctx = self.graph() if any(c in requested for c in GRAPH_CHANNELS) else None
        if gctx is None:
            for c in GRAPH_CHANNELS:
                if c in requested:
                    skipped[c] = self._graph_off or "no graph in this index"
            if (self._graph_off or "").startswith("not available ("):
                notices.append(f"the graph channels are {self._graph_off}: this answer is without them; "
                               f"`kgsearch doctor` checks the index")
        stage = None
        if gctx is not None and len(sig.cand):
            stage = yield from clock.away(graph_steps(gctx, q, it, requested, opts, sig, weights, code_query,
                                                      self.tuning, across=pool.across if pool is not None else None,
                                                      seeds=pool.seeds if pool is not None else None))
            text, emb = sig.text(), sig.get("dense")
            clock.lap("graph")
        cand = sig.cand
        zeros = np.zeros(len(cand))
        intent_sig = stage.intent if stage else zeros
        if "relation" in sig.norm_scores:             # "who calls X": the callers, from the edges
            intent_sig = np.maximum(intent_sig, sig.get("relation") * sig.unit)
        signals = {"embedding": emb, "text": text, "graph": stage.graph if stage else zeros, "intent": intent_sig}

        weights = query_weights(self.ix, self.tuning, q, it, opts, weights, fusion,
                                pool.shared if pool is not None else None)
        if fusion == "linear":
            fused, parts = fuse.linear(signals, weights)
        else:
            chan_w = {n: weights.get(SIGNAL_OF.get(n, "graph"), 0.0) for n in sig.raw_scores}
            fused, parts = fuse.rrf(dict(sig.raw_scores), chan_w, k=opts.rrf_k, cap=opts.rrf_cap)
        adjustments: dict[str, np.ndarray] = {}
        if stage is not None and stage.hits_adj is not None:
            fused = fused + stage.hits_adj
            adjustments["hits"] = stage.hits_adj
        clock.lap("fuse")
        prox = self._proximity(q, it, opts, raw, cand, fused, fusion, notices) if pool is None else None
        if prox is not None:
            fused = fused + prox
            adjustments["proximity"] = prox
            clock.lap("proximity")

        deep = opts.but(k=max(opts.k * 20, 200), collapse=False, snippets=False) if opts.group else opts
        unread = pool is not None and pool.defer and pool.unread and not opts.group and opts.collapse
        ts = self.ix.cached("query.has_typescript", lambda: has_typescript(self.ix.conn))
        fused, order, meta = rank(self.ix.conn, cand, fused, adjustments, q=q, it=it, code_query=code_query,
                                  communities_of=gctx.communities_of if gctx is not None else None,
                                  opts=deep, tuning=self.tuning, nudges=nudges, read=not unread, compiled=ts)
        unit_of = (implemented_stubs(self.ix.conn, [m["path"] for m in meta.values() if m.get("path")], ts)
                   if opts.group == "file" else {})
        lifted: dict[str, float] = {}
        groups = (group_by_file(cand, fused, order, meta, opts.k, self.tuning.file_decay, self.tuning.file_members,
                                unit_of, self.tuning.declaring_module_rank, lifted) if opts.group == "file" else None)
        clock.lap("rank")

        shown = order if groups is None else list(dict.fromkeys(i for _, pos in groups
                                                                for i in pos[:self.tuning.file_members]))
        def build(positions, hit_class=Hit):
            return make_hits(self.ix.conn, q, cand, positions, fused, sig.raw_scores, sig.norm_scores, signals,
                             weights, parts, adjustments, meta, fusion, opts.but(collapse=True) if groups else opts,
                             set(sig.full), hit_class)

        if pool is not None and pool.defer and groups is None:
            # several indexes as one: the caller merges the rankings and builds only the hits it
            # keeps (pool.ranked: (position, score, additive shift, product of the factors))
            factor = np.ones(len(cand))
            for name, v in adjustments.items():
                if name not in ADDITIVE:
                    factor = factor * v
            shift = adjustments.get("shift", zeros)
            if unread:          # (the merge reads the display fields of the rows it needs)
                pool.ranked = Unread(self.ix.conn, cand, order, opts.k, meta, fused, shift, factor)
            else:
                pool.ranked = [(i, float(fused[i]), float(shift[i]), float(factor[i])) for i in shown]
            pool.build = build
            hits = []
        else:
            hits = build(shown)
        if groups is not None:
            by_pos = dict(zip(shown, hits))
            units = [_as_unit(meta[int(cand[pos[0]])], unit_of) for _, pos in groups]
            hits = [file_hit(by_pos[pos[0]], score, [by_pos[i] for i in pos[:self.tuning.file_members]], m,
                             lifted.get(m.get("path"), 0.0)) for (score, pos), m in zip(groups, units)]
            for r, h in enumerate(hits, 1):
                h.rank = r
        clock.lap("output")
        clock.ms["total"] = clock.total()
        resp = Response(query=q.text, intent=it.as_dict(weights), fusion=fusion, hits=hits,
                        channels_run=[c for c in ALL_CHANNELS if c in raw or c in sig.raw_scores],
                        channels_skipped=skipped, timings_ms=clock.ms, notices=list(self._notices) + notices,
                        generation=self.ix.generation, candidates=int(len(cand)), code_query=code_query,
                        seeds=list(stage.seeds) if stage is not None else [], corrections=[list(f) for f in fixes])
        if it.spec.summary:
            resp.answer = self._summary(q, resp)
        if cache_key is not None:
            qcache.put(self.ix, cache_key, resp.as_dict())
        return resp

    def _proximity(self, q: Query, it, opts: SearchOptions, raw: dict, cand: np.ndarray, fused: np.ndarray,
                   fusion: str, notices: list[str]) -> np.ndarray | None:
        """:func:`kgsearch.query.adjust.proximity` for this index; a failure is a notice (the answer
        goes on without it), not an error, unless strict or the index is damaged."""
        try:
            return proximity(self.ix, self.tuning, q, it, opts, "bm25" in raw, cand, fused, fusion)
        except Exception as exc:
            if self.strict or is_corruption(exc):
                raise
            log.debug("term proximity failed", exc_info=True)
            notices.append(f"term proximity failed ({type(exc).__name__}: {exc}): this answer is without it")
            return None

    def _summary(self, q: Query, resp: Response) -> dict | None:
        """The summary intent's answer: the largest communities, summarised (None, with a notice,
        when the index has none or they cannot be read)."""
        from ..explore.topics import global_answer

        try:
            ans = global_answer(self.ix, q.text)
        except Exception as exc:
            if self.strict or is_corruption(exc):
                raise
            log.debug("global answer failed", exc_info=True)
            resp.notices.append(f"no topic summary ({type(exc).__name__}: {exc}); the hits answer alone")
            return None
        if ans.get("notice"):
            resp.notices.append(ans["notice"])
        return ans

    def _nothing(self, q: Query, it, fusion: str, clock: _Clock, requested) -> Response:
        """The answer when the filters keep no node: no hits, and a notice saying so."""
        clock.ms["total"] = clock.total()
        kinds = ", ".join(k for (k,) in self.ix.conn.execute("SELECT DISTINCT kind FROM nodes ORDER BY kind"))
        note = (f"no node matches the filters {filters_mod.describe(q.filters)}"
                + (f" and the regular expression {q.text.strip()}" if q.slash_regex else "")
                + (f" (the kinds in this index: {kinds})" if any(f.field == "kind" for f in q.filters) else ""))
        return Response(query=q.text, intent=it.as_dict(), fusion=fusion, hits=[], channels_run=[],
                        channels_skipped={c: "no node matches the filters" for c in requested},
                        timings_ms=clock.ms, notices=list(self._notices) + [note],
                        generation=self.ix.generation, candidates=0, code_query=False)

    # ------------------------------------------------------------------ channels
    def _failures(self, raw: dict, skipped: dict) -> list[str]:
        """Never a quiet answer without a channel: each channel that failed is a notice, and when
        none answered because they failed, :class:`BadIndex` (exit 4) naming the fix."""
        failed = {c: why for c, why in skipped.items() if why.startswith("failed (")}
        if failed and not raw:
            what = "; ".join(f"{c} {why}" for c, why in failed.items())
            raise BadIndex(f"{self.ix.path}: no search channel could read the index ({what}); `kgsearch doctor` "
                           f"checks it and `kgsearch doctor --rebuild` rebuilds it from its sources")
        return [f"channel {c} {why}: this answer is without it; `kgsearch doctor` checks the index"
                for c, why in failed.items()] + \
            [f"{why[len(UNREAD):]} (searched without your equivalence classes)"
             for c, why in skipped.items() if c == "equiv" and why.startswith(UNREAD)]

    def code_share(self) -> tuple[int, int]:
        """``(code nodes, nodes)`` of the index (:func:`kgsearch.query.code.code_share`), read
        once per generation."""
        return self.ix.cached("query.code_share", lambda: code_share(self.ix.conn))

    def _intent(self, q: Query, opts: SearchOptions, pool):
        """``resolve(q, opts.intent, opts.weights, code_index)``, once for the indexes of one
        search that share the parsed query (a pure function of them and of the indexes' code
        share: ``pool.shared`` keeps it, with the union's ``code_share`` when several indexes
        are searched as one)."""
        shared = pool.shared if pool is not None else None
        got = shared.get("intent") if shared is not None else None
        if got is not None and got[0] is q and got[1] == (opts.intent, opts.weights):
            return got[2]
        code, total = (shared.get("code_share") if shared is not None else None) or self.code_share()
        it = resolve(q, opts.intent, opts.weights, code_index=2 * code > total)
        if shared is not None:
            shared["intent"] = (q, (opts.intent, opts.weights), it)
        return it

    def _run_channels(self, q: Query, opts, it, requested, weights, fusion, clock, pool=None, allowed=None):
        """Run the requested first-stage channels: (answers, skipped, kwargs, whole-index scores).
        ``allowed`` (sorted node ids, the filters' set): each channel answers its best nodes of it."""
        raw: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        skipped: dict[str, str] = {}
        kwargs_of: dict[str, dict] = {}
        fulls: dict[str, tuple] = {}
        for name, ch in CHANNELS.items():
            if ch.search is None or name not in requested:
                continue
            if weights.get(ch.signal, 0) <= 0 and fusion == "linear" and opts.channels is None:
                skipped[name] = "weight 0 for this intent"
                continue
            why_not = ch.gate(q, it) if ch.gate is not None and requested != [name] else None
            if why_not:                          # (a channel asked for alone always runs)
                skipped[name] = why_not
                continue
            kwargs_of[name] = self._kwargs(name, it, opts, requested)
            if pool is not None:
                kwargs_of[name].update(pool.kwargs.get(name, {}))
            kw = kwargs_of[name]
            best = None                          # best(m): the channel's best m nodes
            if allowed is not None:
                best = lambda m, name=name, kw=kw: self._run_filtered(name, q, opts.but(depth=m), kw, pool, fulls,
                                                                      allowed)
            elif opts.norm == "z" and ch.score_all is not None:
                # one pass scores every node: the channel's top k comes from it (no second scan)
                f = pool.fulls.get(name) if pool is not None else None
                f = f if f is not None else self.full(name, q, kw)
                if f is not None and f[2] > 0:
                    fulls[name] = f
                    best = lambda m, f=f: top_ids(f[0], f[1], m)
            if best is None:
                best = lambda m, name=name, kw=kw: self._run_channel(name, q, opts.but(depth=m), kw)
            # depth distinct definitions: a long definition and the parts of its text take one slot
            res = top_families(best, opts.depth, families(self.ix))
            if isinstance(res, str):
                skipped[name] = res
            else:
                raw[name] = res
            clock.lap(name)
        return raw, skipped, kwargs_of, fulls

    def _run_filtered(self, name: str, q: Query, opts, kwargs: dict, pool, fulls: dict, allowed: np.ndarray):
        """Channel ``name``'s best ``opts.depth`` nodes among ``allowed``.

        A channel that scores every node is read once and cut to the set (its whole-index
        scores still give the z statistics, so a filtered score means what it means unfiltered);
        another is asked for more (x8 each time) until it has ``depth`` nodes in the set or has
        nothing more to give."""
        ch = CHANNELS[name]
        if ch.score_all is not None:
            f = pool.fulls.get(name) if pool is not None else None
            f = f if f is not None else self.full(name, q, kwargs)
            if f is not None:
                if f[2] <= 0:
                    return np.zeros(0, np.int64), np.zeros(0)
                if opts.norm == "z":
                    fulls[name] = f
                ids, sc = f[0], f[1]
                keep = in_set(ids, allowed)
                ids, sc = ids[keep], sc[keep]
                lookup = getattr(f, "lookup", None)
                if lookup is not None:        # dense past the vector cache: the set's other nodes too
                    rest = np.setdiff1d(allowed, ids, assume_unique=True)
                    if len(rest):
                        ids = np.concatenate([ids, rest])
                        sc = np.concatenate([sc, np.asarray(lookup(rest), dtype=np.float64)])
                return top_ids(ids, sc, opts.depth)
        depth, total = opts.depth, max(len(allowed), 1)
        n_nodes = self.ix.conn.execute("SELECT max(id) FROM nodes").fetchone()[0] or 0
        while True:
            res = self._run_channel(name, q, opts.but(depth=depth), kwargs)
            if isinstance(res, str):
                return res
            ids, sc = res
            keep = in_set(ids, allowed)
            if int(keep.sum()) >= min(opts.depth, total) or len(ids) < depth or depth >= n_nodes:
                return ids[keep][:opts.depth], sc[keep][:opts.depth]
            depth *= 8

    def _kwargs(self, name: str, it, opts, requested=()) -> dict:
        if name in ("bm25", "prf") and it.keywords and opts.keyword_boost != 1.0:
            return {"boost_terms": list(it.keywords), "boost": opts.keyword_boost}
        if name == "relation":
            return {"target": it.target, "edge_types": list(it.edge_types)}
        if name == "anchors":      # a qualified name asks for itself, not for what it calls (an issue's symptom)
            return {"follow": self.tuning.anchor_follow if it.spec.names_code else 0.0, "lists": self.tuning.anchor_lists}
        if name == "dense":
            return dense_kwargs(self.tuning.dense_idf_power, requested)
        return {}

    def _run_channel(self, name: str, q: Query, opts: SearchOptions, kwargs: dict):
        if self._memo is None:
            return self._call(name, q, opts.depth, kwargs)
        mkey = (name, q.text, opts.depth, json.dumps(kwargs, sort_keys=True))
        if mkey not in self._memo:
            self._memo[mkey] = self._call(name, q, opts.depth, kwargs)
        return self._memo[mkey]

    def _call(self, name: str, q: Query, depth: int, kwargs: dict):
        try:
            out = CHANNELS[name].search(self.ix, q, depth, **kwargs)
        except Exception as exc:        # a failing channel is skipped, never fatal (unless strict)
            if self.strict or is_corruption(exc):   # a damaged file is never a channel to skip
                raise
            log.debug("channel %s failed", name, exc_info=True)
            return f"failed ({type(exc).__name__}: {exc})"
        if isinstance(out, str):        # a channel may answer with why it is off
            return out
        ids, scores = out
        return np.asarray(ids, dtype=np.int64), np.asarray(scores, dtype=np.float64)

    def full(self, name: str, q: Query, kwargs: dict):
        """(ids, scores, population) of channel ``name`` over the whole index, or None."""
        fn = CHANNELS[name].score_all
        if fn is None:
            return None
        key = ("full", name, q.text, json.dumps(kwargs, sort_keys=True)) if self._memo is not None else None
        if key is not None and key in self._memo:
            return self._memo[key]
        try:
            out = fn(self.ix, q, **kwargs)
        except Exception as exc:
            if self.strict or is_corruption(exc):   # a damaged file is never a channel to skip
                raise
            log.debug("full scores for %s failed", name, exc_info=True)
            out = None
        if key is not None:
            self._memo[key] = out
        return out

    def fill(self, name: str, q: Query, ids: np.ndarray, kwargs: dict) -> np.ndarray | None:
        """Exact scores of ``ids`` for channel ``name`` (None when the channel cannot fill in)."""
        fn = CHANNELS[name].score_ids if name in CHANNELS else None
        if fn is None or not len(ids):
            return None
        if self._memo is not None:
            key = ("fill", name, q.text, json.dumps(kwargs, sort_keys=True), ids.tobytes())
            if key not in self._memo:
                self._memo[key] = fn(self.ix, q, ids, **kwargs)
            return self._memo[key]
        try:
            return np.asarray(fn(self.ix, q, ids, **kwargs), dtype=np.float64)
        except Exception as exc:
            if self.strict or is_corruption(exc):   # a damaged file is never a channel to skip
                raise
            log.debug("fill-in for %s failed", name, exc_info=True)
            return None

    # ------------------------------------------------------------------ graph and cache
    def graph(self):
        """The index's :class:`~kgsearch.graph.context.GraphContext` for this generation, or None."""
        gen = self.ix.generation
        if self._graph_gen != gen:
            over = graph_over_budget(self.ix)
            try:
                if over:                # the query answers without the graph channels, and says why
                    self._graph, self._graph_off = None, over
                else:
                    self._graph, self._graph_off = load_context(self.ix), None
            except MemoryError:
                self._graph, self._graph_off = None, f"over the memory budget (raise {BUDGET_ENV})"
            except Exception as exc:
                if self.strict or is_corruption(exc):
                    raise
                log.debug("graph context failed", exc_info=True)
                self._graph, self._graph_off = None, f"not available ({type(exc).__name__}: {exc})"
            self._graph_gen = gen
        return self._graph

    def _cache_key(self, q: Query, opts: SearchOptions, channels: list[str]) -> str:
        """The result cache's key: everything the answer depends on besides the index generation
        (the query, the options, the channels asked for, the kgsearch version and the state of
        its code, this engine's tuning and the intents' weights, the environment (model, memory
        budget, strictness) and the equivalences file's stamp: the equiv channel reads it at
        query time, so an edit to it changes answers within one generation)."""
        from ..text.keywords import equivalences_path

        d = asdict(opts)
        for k in ("explain", "use_cache"):
            d.pop(k, None)
        d["channels"] = channels
        d["filters"] = [[f.field, f.op, f.value, f.negated] for f in q.filters]   # (not str: 'a b', '<x>')
        env = asdict(current_environment())
        env.pop("db", None)
        eq = equivalences_path()
        try:
            st = eq.stat()
            eq_stamp = [str(eq), st.st_size, st.st_mtime_ns]
        except OSError:
            eq_stamp = [str(eq), None, None]
        return json.dumps({"q": q.text, "o": d, "version": __version__, "code": code_stamp(),
                           "tuning": asdict(self.tuning), "intents": {n: s.weights for n, s in INTENTS.items()},
                           "env": env, "equivalences": eq_stamp}, sort_keys=True, default=str)

    def _cached(self, key: str, clock: _Clock) -> Response | None:
        d = qcache.get(self.ix, key)
        if d is None:
            return None
        try:
            resp = Response.from_dict(d)
        except (TypeError, KeyError):
            return None
        resp.cached = True
        resp.timings_ms = {"cache": clock.total()}
        return resp


def _as_unit(m: dict, unit_of: dict[str, str]) -> dict:
    """A file group's display fields: a type stub's node stands for its implementation file."""
    return {**m, "path": unit_of[m["path"]]} if m.get("path") in unit_of else m
