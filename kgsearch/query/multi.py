"""Several indexes searched as one: one ranking over all of them, each hit naming its index.

Scores are made comparable by computing them as one index holding everything would, where that
can be done exactly, and by one common scale where it cannot:

1. **BM25 with pooled collection statistics.** For the query's terms, each index's document
   frequency is read and summed, and so are the node counts and total lengths: every index then
   scores its nodes with the union's N, df and average length (``pooled`` in
   :mod:`kgsearch.text.bm25`), which is the score the node has in one index of the union (tested
   to 1e-9). Only when the indexes analyse text alike (stemmer, code splitting, k1, b, name
   weight); otherwise each keeps its own statistics and a notice says so.
2. **z-scores over the union.** Channels standardised over the whole index (bm25, dense) use the
   mean and spread over all indexes' nodes (pooled from each index's count, sum and sum of
   squares), not each index's own.
3. **Dense scores** are cosines of the same query vector when the indexes use the same embedding
   model, and comparable as they are; with different models the channel is standardised per index
   and a notice says the indexes' dense scores are not comparable.
4. **One floor.** Fused scores are shifted so the weakest candidate scores 0 (adjust.py); each
   index shifts by its own weakest, so the hits are put back on the union's floor (the largest
   shift) before they are merged, the multiplicative adjustments applied again on top.

5. **The graph signal over the union's ``similar_text`` lists** (:mod:`.across`): each prose
   node's neighbours over all the indexes, as one index of them all would list them, computed
   once outside the indexes and kept in the user's cache; a neighbour in another index is
   valued with that index's whole-index scores. Each index's own lists, which name only its own
   nodes, were the whole measured gap to one index (bench/results/multi_ablate.md).

6. **Shares of the union's best.** Each index takes as many candidates per channel, and as many
   graph seeds by text and by embedding, as it holds of the union's best by the whole-index
   scores (:func:`_share_out`), so the indexes together start from the
   seeds one index of them all would, not each its own ten.

What stays per index: typed edges (they never cross indexes), the nodes the graph stage adds as
candidates (reached from the index's share of the seeds over its own graph), random walks, HITS
and communities, and candidate generation (each index gives its own best; the union of
candidates is larger than one index's, never smaller).

Work done once: the query is parsed once per distinct analyser and encoded once per embedding
model (:func:`kgsearch.embed.dense.share_query_vector`; each index rotates it); hits (snippets,
explain parts) are built only for the merged top k, and only the merged top k's display fields
are read (:func:`kgsearch.query.merge.merge_unread`, :class:`kgsearch.query.adjust.Unread`); each index's generation
is read once per search (:meth:`~kgsearch.store.db.Index.pinned`). The indexes run in lockstep
(:meth:`MultiEngine._together`): each index's search (:meth:`Engine.steps`, a generator) runs up
to its graph stage's pull over the union's lists, every index's pull is computed at once
(:func:`kgsearch.query.across.pull_together`), then each search runs on to its end: the same
answers as the indexes in turn (``MultiEngine(together=False)``, the reference), to the last
digit. In threads (``threads=True``, each index its own pull) they were slower on 2 cores (the
interpreter lock; bench/results/multi_index.md).
"""
from __future__ import annotations

import math
import os
import time
from contextlib import ExitStack
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

from ..lines import quoted
from ..text import spelling
from ..text.postings import doc_freqs
from .channels import DEFAULT_CHANNELS, dense_kwargs, dense_query
from .correct import correction_notice
from .engine import Engine
from .merge import merge
from .options import Hit, Response, SearchOptions

__all__ = ["MultiEngine", "MultiHit", "MultiResponse", "Pool", "index_names", "multi_engine_for"]

POOLED_BM25 = ("stemmer", "split_code", "k1", "b", "name_weight", "fold", "analysis")


@dataclass
class Pool:
    """What one index's search takes from the others (see :meth:`Engine.search`)."""

    kwargs: dict = field(default_factory=dict)      # channel -> extra arguments (bm25: pooled statistics)
    fulls: dict = field(default_factory=dict)       # channel -> this index's whole-index scores, computed once
    stats: dict = field(default_factory=dict)       # channel -> (mean, spread) over the union
    depth: int | None = None                        # candidates per channel from this index (None: as asked)
    seeds: dict | None = None                       # graph seeds by "text" / "dense" from this index (None: as asked)
    query: object = None                            # the query parsed with this index's analyser (a Query)
    defer: bool = False                             # leave the hits to the caller (set: ranked, build)
    unread: bool = False                            # with defer: ranked is an adjust.Unread (rows read by the merge)
    ranked: object = None                           # [(position, score, additive shift, factor)] best first, or Unread
    build: object = None                            # build(positions, hit_class) -> [hit_class] of this index
    across: object = None                           # the union's similar_text lists (query/across.py)
    shared: dict | None = None                      # what the indexes of one search compute once (the intent,
                                                    # from the union's code_share; the embedding weight's factor)


@dataclass
class MultiHit(Hit):
    index: str = ""                                 # the name of the index the hit comes from


@dataclass
class MultiResponse(Response):
    indexes: list = field(default_factory=list)     # [{"name", "db", "generation", "nodes"}]
    seeds_of: dict = field(default_factory=dict, repr=False)   # index name -> its graph seeds (why), not shown

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("seeds_of")
        d["hits"] = [h.as_dict() for h in self.hits]
        return d


def index_names(paths: list[str]) -> list[str]:
    """Short distinct names for index files: the file name without ``.db``, made unique with
    ``-2``, ``-3``...

    >>> index_names(["/a/notes.db", "/b/work.db", "/c/notes.db"])
    ['notes', 'work', 'notes-2']
    """
    out, seen = [], set()
    for p in paths:
        base = str(p).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        base = base[:-3] if base.endswith(".db") and len(base) > 3 else base
        name, n = base or "index", 1
        while name in seen:
            n += 1
            name = f"{base}-{n}"
        seen.add(name)
        out.append(name)
    return out


def _moments(f) -> tuple[int, float, float] | None:
    """(population, sum, sum of squares) of a channel's whole-index scores (as Signals counts them)."""
    if f is None or f[2] <= 0:
        return None
    n = int(f[2])
    if getattr(f, "stats", None) is not None:
        mu, sd = f.stats
        return n, n * mu, n * (sd * sd + mu * mu)
    sc = np.asarray(f[1], dtype=np.float64)
    return n, float(sc.sum()), float((sc * sc).sum())


def _union(ms: list) -> tuple[float, float] | None:
    ms = [m for m in ms if m is not None]
    n = sum(m[0] for m in ms)
    if not n:
        return None
    mu = sum(m[1] for m in ms) / n
    return mu, math.sqrt(max(sum(m[2] for m in ms) / n - mu * mu, 1e-12))


def multi_engine_for(paths: list[str]) -> "MultiEngine":
    """The indexes at ``paths`` (each opened read-only once per process, as :func:`engine_for`
    does, and reopened when replaced), named by :func:`index_names`."""
    from ..config import distinct_dbs
    from .api import engine_for

    paths = distinct_dbs(paths)                 # one file under two spellings: searched once
    return MultiEngine(dict(zip(index_names(paths), (engine_for(p) for p in paths))))


class MultiEngine:
    """``{name: Engine}`` searched as one (:meth:`search` answers like :meth:`Engine.search`)."""

    def __init__(self, engines: dict[str, Engine], threads: bool = False, across: bool = True,
                 together: bool = True):
        if not engines:
            raise ValueError("no index")
        self.engines = engines
        self.threads = threads
        self.across = across                        # False: each index's own similar_text lists
        self.together = together                    # False: each index's pull on its own (the reference)
        self._executor = None
        self._across: dict = {}                     # the union's similar_text lists, kept between searches

    @property
    def ix(self):
        """The first index (for what one index answers: stats, show)."""
        return next(iter(self.engines.values())).ix

    def _each(self, fn) -> dict:
        """``{name: fn(name, engine)}``, the indexes in turn, or in threads with ``threads=True``
        (SQLite and numpy's larger steps let go of the interpreter lock; each engine is used by
        one thread at a time). A pin belongs to its thread (:meth:`Index.pinned`): each worker
        pins the generation this thread pinned."""
        items = list(self.engines.items())
        if len(items) == 1 or not self.threads:
            return {name: fn(name, eng) for name, eng in items}
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=min(len(items), 8), thread_name_prefix="kgsearch-multi")

        def pinned_as_here(name, eng, gen):
            with eng.ix.pinned(gen):
                return fn(name, eng)

        futs = [(name, self._executor.submit(pinned_as_here, name, eng, eng.ix._pinned)) for name, eng in items]
        return {name: f.result() for name, f in futs}

    def _together(self, args: dict, pools: dict) -> dict:
        """``{name: Response}``: each index's search (:meth:`Engine.steps`) run up to its graph
        stage's pull over the union's lists, every index's pull computed at once
        (:func:`kgsearch.query.across.pull_together`), then each search run on to its end."""
        from .across import pull_together

        steps, pulls, resps = {}, {}, {}
        try:
            for name, eng in self.engines.items():
                steps[name] = eng.steps(*args[name], pool=pools[name])
                try:
                    pulls[name] = next(steps[name])
                except StopIteration as stop:
                    resps[name] = stop.value
            while pulls:
                nxt = {}
                for (name, _), got in zip(pulls.items(), pull_together(list(pulls.values()))):
                    try:
                        nxt[name] = steps[name].send(got)
                    except StopIteration as stop:
                        resps[name] = stop.value
                pulls = nxt
        finally:                        # (an error in one: the others' searches end there too)
            for step in steps.values():
                step.close()
        return {name: resps[name] for name in self.engines}

    # ------------------------------------------------------------------ pooling
    def _parsed(self, query: str, first=None) -> dict:
        """``{name: Query}``: the query parsed with each index's analyser, once per distinct
        analyser (indexes of the same stemmer and identifier splitting share one parse).
        ``first``: ``query`` as the first index parsed it already (the typo check's parse,
        when it corrected nothing), taken for every index of its analyser."""
        from ..text.postings import stored_params

        out, by_analyser = {}, {}
        for name, eng in self.engines.items():
            _, params = stored_params(eng.ix)
            key = (params.stemmer, params.split_code, params.fold, params.analysis) if params is not None else None
            if key not in by_analyser:
                by_analyser[key] = first if first is not None and not out else eng.parse(query)
            out[name] = by_analyser[key]
        return out

    def _bm25_pool(self, query: str, notices: list[str]) -> dict | None:
        from ..text import bm25
        from ..text.postings import stored
        from ..text.tokenize import clean_query

        states = []
        for name, eng in self.engines.items():
            st, params, _ = stored(eng.ix)
            if st is None:
                continue
            states.append((name, eng, st, params))
        if len(states) < 2:
            return None
        keys = {tuple(getattr(p, k) for k in POOLED_BM25) for _, _, _, p in states}
        if len(keys) > 1:
            notices.append("the indexes analyse text differently (stemmer or BM25 parameters): each keeps its own "
                           "BM25 statistics, so their text scores are only roughly comparable")
            return None
        terms = sorted(bm25.query_weights(states[0][3].analyzer(), clean_query(query)))
        df: dict[str, int] = {}
        n = 0
        total = 0.0
        for _, eng, st, _ in states:
            n += int(st["n"])
            total += float(st["avgdl"]) * int(st["n"])
            if terms:       # (the rows whole: each index's scoring reads them from there, bm25.read_ahead)
                for t, d, _, _ in bm25.read_ahead(eng.ix, terms):
                    df[t] = df.get(t, 0) + int(d)
        if n == 0:
            return None
        return {"n": n, "avgdl": total / n, "df": df}

    def _seeds_per_signal(self) -> int:
        return next(iter(self.engines.values())).tuning.seeds_per_signal

    def _pools(self, query: str, opts: SearchOptions, notices: list[str], parsed=None) -> dict[str, Pool]:
        """``parsed``: ``query`` as the first index parsed it (None: parsed here)."""
        shares = [eng.code_share() for eng in self.engines.values()]   # the union's: one intent for all
        shared: dict = {"code_share": (sum(c for c, _ in shares), sum(t for _, t in shares))}
        pools = {name: Pool(query=q, shared=shared) for name, q in self._parsed(query, parsed).items()}
        eq = _equivalences()
        if eq is not None:                      # (the user's file, read once for every index)
            for p in pools.values():
                p.kwargs["equiv"] = {"equivalences": eq}
        if opts.norm != "z":
            return pools
        chans = opts.channel_list()
        pooled = self._bm25_pool(query, notices) if chans is None or "bm25" in chans or "dense" in chans else None
        for name, eng in self.engines.items():
            if pooled is not None:
                pools[name].kwargs["bm25"] = {"pooled": pooled}
            dk = dense_kwargs(eng.tuning.dense_idf_power, chans or DEFAULT_CHANNELS)
            if dk:                                  # words weighted by their idf over all the indexes
                pools[name].kwargs["dense"] = {**dk, **({"pooled": pooled} if pooled is not None else {})}
        from ..embed.dense import model_id_of

        models = {m for m in (model_id_of(eng.ix) for eng in self.engines.values()) if m}
        if len(models) > 1:
            notices.append(f"the indexes use different embedding models ({', '.join(sorted(models))}): their dense "
                           f"scores are standardised each over its own index, not comparable as cosines")
        for channel in ("bm25", "dense"):
            if chans is not None and channel not in chans:
                continue
            if channel == "dense" and len(models) > 1:
                continue
            if channel == "dense":                # one encode for the indexes of one model
                from ..embed.dense import share_query_vector

                texts = {p.query.text for p in pools.values()}
                if len(texts) == 1:
                    first, feng = next(iter(self.engines.items()))
                    share_query_vector([e.ix for e in self.engines.values()],
                                       dense_query(feng.ix, pools[first].query, **pools[first].kwargs.get("dense", {})))
            fulls = self._each(lambda name, eng: eng.full(channel, pools[name].query, pools[name].kwargs.get(channel, {})))
            for name, f in fulls.items():
                if f is not None and f[2] > 0:
                    pools[name].fulls[channel] = f
            u = _union([_moments(f) for f in fulls.values()])
            if u is not None:
                for p in pools.values():
                    p.stats[channel] = u
        if not opts.filters and not any(p.query.filters for p in pools.values()):
            _share_out(pools, opts.depth, self._seeds_per_signal())    # (unfiltered whole-index scores)
        if self.across and len(pools) > 1 and (chans is None or "graph" in chans) and all(p.fulls for p in pools.values()):
            from .across import across_for      # neighbours across the indexes, valued by their fulls

            across = across_for(self.engines, notices, self._across)
            if across is not None:
                contexts = {name: eng.graph() for name, eng in self.engines.items()}
                for name, p in pools.items():
                    p.across = across.view(name, pools, contexts)
        return pools

    # ------------------------------------------------------------------ the query
    def narrow(self, query: str, opts: SearchOptions):
        """``root:`` filters (in the query or the options) over several indexes: a value naming an
        index keeps (``-root:``: leaves out) that whole index and is dropped; another value is a
        root label, kept by the indexes that have such a root (the others cannot match). Returns
        ``(engines, query, opts)``; a value no index or root answers to is a UsageError."""
        if ":" not in query and not opts.filters:       # (no filter at all: the imports below cost 6 us)
            return self.engines, query, opts
        from ..errors import UsageError
        from . import filters as fmod
        from .parse import split_filters

        words = ([(w, fmod.parse_filter(w)) for w in query.split() if split_filters(w)[1]]
                 if ":" in query and fmod.reads_filters(query) else [])
        given = [(None, f) for f in fmod.parse_filters(opts.filters)] + words
        roots = [(w, f) for w, f in given if f.field == "root"]
        if not roots:
            return self.engines, query, opts
        keep = dict(self.engines)
        drop_words, drop_opts = set(), set()
        for w, f in roots:
            if f.value in self.engines:
                keep = {n: e for n, e in keep.items() if (n == f.value) != f.negated}
                (drop_words.add(w) if w is not None else drop_opts.add(f))
                continue
            knows = {n for n, e in self.engines.items() if fmod.root_paths(e.ix, f.value)}
            if not knows:
                labels = sorted({lab for e in self.engines.values() for lab in fmod.root_labels(e.ix)})
                raise UsageError(f"unknown root {quoted(f.value)} in {quoted(f)}; the indexes are "
                                 f"{', '.join(self.engines)} and their roots {', '.join(labels) or '(none)'}")
            if not f.negated:
                keep = {n: e for n, e in keep.items() if n in knows}
        if not keep:
            raise UsageError(f"the root filters {' '.join(str(f) for _, f in roots)} leave no index to search; "
                             f"the indexes are {', '.join(self.engines)}")
        if drop_words:
            query = " ".join(w for w in query.split() if w not in drop_words)
        if drop_opts:
            opts = opts.but(filters=tuple(f for f in fmod.parse_filters(opts.filters) if f not in drop_opts))
        return keep, query, opts

    def _corrected(self, query: str) -> tuple[str, list[tuple[str, str]], object]:
        """``query`` with the words no index knows corrected (:meth:`Engine.corrected`, the
        document frequencies summed over the indexes), the ``[(typed, fix)]`` pairs, and the
        first index's parse of ``query`` when nothing was corrected (None when something was):
        the search takes it as that analyser's parse instead of parsing the same text again."""
        first = next(iter(self.engines.values()))

        def df_of(terms):
            terms, total = list(terms), {}
            for eng in self.engines.values():
                for t, n in doc_freqs(eng.ix.conn, terms).items():
                    total[t] = total.get(t, 0) + n
            return total

        def known_of(terms):    # (a term any index holds is known: the next is asked for the rest)
            known, rest = set(), list(terms)
            for eng in self.engines.values():
                if not rest:
                    break
                known.update(doc_freqs(eng.ix.conn, rest))
                rest = [t for t in rest if t not in known]
            return known

        q = first.parse(query)
        _, fixes = first.corrected(q, df_of, known_of)
        return (spelling.apply(query, fixes), fixes, None) if fixes else (query, [], q)

    def search(self, query: str, opts: SearchOptions | None = None, sessions: dict | None = None) -> MultiResponse:
        """One ranking over every index; ``sessions``: ``{index name: feedback.Session}``.
        Each index's generation is read once for the search (:meth:`Index.pinned`): the pooling,
        the lists' key and each index's own search check it about a dozen times each."""
        with ExitStack() as stack:
            for eng in self.engines.values():
                stack.enter_context(eng.ix.pinned())
            return self._search(query, opts, sessions)

    def _search(self, query: str, opts: SearchOptions | None, sessions: dict | None) -> MultiResponse:
        t0 = time.perf_counter()
        opts = (opts or SearchOptions()).validated()
        engines, query, opts = self.narrow(query, opts)
        if engines is not self.engines:             # root:NAME keeps some of the indexes
            sub = MultiEngine(engines, threads=False, across=self.across, together=self.together)
            return sub.search(query, opts, sessions)
        notices: list[str] = []
        fixes: list[tuple[str, str]] = []
        parsed = None
        if opts.correct:        # judged on every index's words: one that any index knows is no typo
            query, fixes, parsed = self._corrected(query)
            opts = opts.but(correct=False)
            if fixes:
                notices.append(correction_notice(query, fixes))
        pools = self._pools(query, opts, notices, parsed)
        t_pool = time.perf_counter()
        # a few more hits than asked (the common floor may reorder), and each index's share of the depth
        own = {name: _own_roots(eng, pools[name], opts.but(k=opts.k + 5, use_cache=False, **(
            {"depth": pools[name].depth} if pools[name].depth is not None else {})))
            for name, eng in self.engines.items()}
        lockstep = self.together and not (self.threads and len(self.engines) > 1)
        for p in pools.values():
            p.defer = True                                    # hits built only for the merged top k
            p.unread = lockstep                               # their display fields read by the merge too
        args = {name: (pools[name].query, own[name], (sessions or {}).get(name)) for name in self.engines}
        if lockstep:
            resps = self._together(args, pools)
        else:
            resps = self._each(lambda name, eng: eng.search(*args[name], pool=pools[name]))
        hits = merge(resps, pools, opts.k, MultiHit)
        first = next(iter(resps.values()))
        skipped: dict[str, str] = {}
        for name, r in resps.items():
            for c, why in r.channels_skipped.items():
                skipped[c] = why if c not in skipped or skipped[c] == why else f"{skipped[c]}; {name}: {why}"
        timings = {f"{name}": r.timings_ms.get("total", 0.0) for name, r in resps.items()}
        timings["pool"] = round((t_pool - t0) * 1000, 3)
        timings["total"] = round((time.perf_counter() - t0) * 1000, 3)
        every = set.intersection(*(set(r.notices) for r in resps.values())) if resps else set()
        for name, r in resps.items():       # one index's own notice says which index it is about
            notices += [m for n in r.notices if (m := n if n in every else f"{name}: {n}") not in notices]
        answer = None
        if any(r.answer is not None for r in resps.values()):   # the summary intent: every index's topics
            from ..explore.topics import merged_answer

            answer = merged_answer({name: r.answer for name, r in resps.items()}, first.query)
        return MultiResponse(
            query=first.query, intent=first.intent, fusion=first.fusion, hits=hits,
            channels_run=[c for c in dict.fromkeys(c for r in resps.values() for c in r.channels_run)],
            channels_skipped=skipped, timings_ms=timings, notices=notices,
            generation=sum(r.generation for r in resps.values()), candidates=sum(r.candidates for r in resps.values()),
            code_query=any(r.code_query for r in resps.values()), answer=answer, corrections=[list(f) for f in fixes],
            indexes=[{"name": name, "db": os.path.abspath(eng.ix.path), "generation": resps[name].generation}
                     for name, eng in self.engines.items()],
            seeds_of={name: r.seeds for name, r in resps.items()})


def _equivalences() -> dict | None:
    """The equivalence classes every index's ``equiv`` channel reads (None: each reads, and
    reports, a broken file itself)."""
    from ..text.keywords import load_equivalences

    try:
        return load_equivalences()
    except Exception:
        return None


def _own_roots(eng: Engine, pool: Pool, opts: SearchOptions) -> SearchOptions:
    """``-root:LABEL`` for an index without such a root leaves nothing out of it: the filter is
    dropped from its query and options (an unknown label is an error only when no index has it)."""
    from dataclasses import replace

    if pool.query is not None and pool.query.filters:
        pool.query = replace(pool.query, filters=own_filters(eng.ix, pool.query.filters))
    if opts.filters:
        opts = opts.but(filters=own_filters(eng.ix, opts.filters))
    return opts


def own_filters(ix, filters) -> tuple:
    """``filters`` (words or parsed) without the ``-root:LABEL`` ones naming no root of ``ix``
    (over several indexes such a filter is about the other indexes; it leaves nothing out here)."""
    from . import filters as fmod

    return tuple(w for w in filters if (f := fmod.parse_filter(w)).field != "root" or not f.negated
                 or fmod.root_paths(ix, f.value) is not None)


def _shares(pools: dict[str, Pool], channel: str, cuts: tuple[int, ...]) -> list[dict[str, int]] | None:
    """For each ``n`` of ``cuts``, how many of the union's best ``n`` nodes by whole-index
    ``channel`` (z over the union) each index holds (ties at the cut count for every index that
    has them); None when fewer than two indexes have that channel's whole list."""
    most = max(cuts)
    zs = []
    for name, p in pools.items():
        f, st = p.fulls.get(channel), p.stats.get(channel)
        if f is None or st is None or getattr(f, "stats", None) is not None:
            continue                                  # (past the vector cache: no whole list to rank)
        sc = np.asarray(f[1], dtype=np.float64)
        top = np.partition(sc, len(sc) - most)[len(sc) - most:] if len(sc) > most else sc   # (the best, any order)
        zs.append((name, (top - st[0]) / st[1]))
    if len(zs) < 2:
        return None
    allz = np.sort(np.concatenate([z for _, z in zs]))          # (ascending: the n-th best is allz[-n])
    out = []
    for n in cuts:
        cut = allz[len(allz) - min(n, len(allz))] if len(allz) else 0.0
        out.append({name: int(np.count_nonzero(z >= cut)) for name, z in zs})
    return out


def _share_out(pools: dict[str, Pool], depth: int, seeds: int) -> None:
    """Each index's share of the union's best by each whole-index channel (bm25, dense):

    * candidates per channel (``Pool.depth``): as many as it holds of the union's best ``depth``
      (the most over the channels, at least 10), so the indexes together look at about the
      candidates one index of them all would, not ``depth`` each;
    * graph seeds by text and by embedding (``Pool.seeds``): as many as it holds of the union's
      best ``seeds`` by bm25 and by dense, so the indexes together start the graph stage from
      about the ``seeds`` + ``seeds`` one index of them all would (each taking ``seeds`` of its
      own doubled the walks' and proximity's work, and weighed a weak index's best as much as
      the union's)."""
    counts: dict[str, int] = {}
    for channel, signal in (("bm25", "text"), ("dense", "dense")):
        got = _shares(pools, channel, (depth, seeds))
        if got is None:
            continue
        for name, n in got[0].items():
            counts[name] = max(counts.get(name, 0), n)
        for name, k in got[1].items():
            pools[name].seeds = dict(pools[name].seeds or {}, **{signal: k})
    for name, n in counts.items():
        pools[name].depth = min(depth, max(10, n))
