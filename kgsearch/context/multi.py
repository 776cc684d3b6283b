"""``kgsearch context`` over several indexes (:class:`kgsearch.query.multi.MultiEngine`).

A task: the indexes' one ranking (:meth:`MultiEngine.search`) gives the candidates; each index
loads its own (:func:`~.items.load_items`, so code is read from its file as for one index), and
they are packed together by the same knapsack and renderer as :func:`~.build.build_context`,
each item naming its index. Files or a diff start from nodes of one index: the first index that
holds the files (or the diff's changed nodes) answers, and a notice says which; files that no one
index holds all of are each read from the first index that holds it and packed as one (a file that
none holds is an error naming it); ``root:NAME``
filters choose among the indexes as in a search, the others choose the nodes packed.
"""
from __future__ import annotations

import time
from dataclasses import replace

from ..errors import NotFound, UsageError
from ..pack import query_terms
from ..query.multi import own_filters
from .build import (IMPACT_WITH_TASK, IMPACT_WITH_TASK_AGENT, ContextOptions, ContextResult, build_context,
                    exactly_one, seeded_candidates, task_depth)
from .items import load_items
from .pack import line_window, pack
from .render import renderer
from .sources import as_definitions, part_definitions

__all__ = ["build_context_multi"]


def build_context_multi(multi, *, task: str | None = None, files: list[str] | None = None, diff=None,
                        opts: ContextOptions | None = None, sessions: dict | None = None) -> ContextResult:
    """Like :func:`~.build.build_context` on the indexes of ``multi`` searched as one."""
    opts = (opts or ContextOptions()).validated()
    exactly_one(task, files, diff)
    if task is None:
        return _one_index(multi, files, diff, opts)
    if opts.impact:
        raise UsageError(IMPACT_WITH_TASK, agent=IMPACT_WITH_TASK_AGENT)
    if not str(task).strip():
        raise UsageError("the task text is empty; describe the task, e.g. kgsearch context \"fix the retry loop\"")
    from ..query import SearchOptions

    t0 = time.perf_counter()
    ms: dict[str, float] = {}
    sopts = (opts.search or SearchOptions()).but(k=opts.k or task_depth(opts.budget), snippets=False,
                                                 collapse=False)     # as task_candidates: sections not hidden
    resp = multi.search(task, sopts, sessions)
    defs = {(name, h): d for name, eng in multi.engines.items()          # a part stands for its definition
            for h, d in part_definitions(eng.ix.conn, [h for h in resp.hits if h.index == name]).items()}
    cands = as_definitions(resp.hits, defs, lambda h: h.index)
    if opts.value == "margin" and cands:
        low = min(c.score for _, c in cands)
        for _, c in cands:
            c.score -= low
    ms["candidates"] = round((time.perf_counter() - t0) * 1000, 3)
    t1 = time.perf_counter()
    terms = query_terms(task)
    loaded: dict[tuple[str, int], object] = {}
    for name, eng in multi.engines.items():
        mine = [c for n, c in cands if n == name]
        for it in load_items(eng.ix, mine, terms, line_window(opts.budget)):
            loaded[(name, it.id)] = it
    items = []
    for name, c in cands:
        it = loaded.get((name, c.id))
        if it is not None:
            it.index = name
            items.append(it)
    ms["load"] = round((time.perf_counter() - t1) * 1000, 3)
    return _packed(items, opts, "task", task, list(resp.notices), ms, t0)


def _packed(items: list, opts: ContextOptions, mode: str, task: str | None, notices: list[str], ms: dict[str, float],
            t0: float) -> ContextResult:
    """The items of several indexes (best first, each naming its index) packed and rendered as one."""
    t2 = time.perf_counter()
    r = renderer(opts.fmt, {"query": task, "mode": mode, "budget": opts.budget})
    frame = r.frame(len(items))
    if opts.fmt != "markdown" and items and frame + r.cost(items[0], items[0].forms[-1]) > opts.budget:
        raise UsageError(f"--budget {opts.budget} is too small for {opts.fmt} output (its frame and the top node's "
                         f"header need {frame + r.cost(items[0], items[0].forms[-1])} tokens); raise it or use markdown")
    packed = pack(items, opts.budget, r.cost, frame=frame, shrink=r.shrink)
    ms["pack"] = round((time.perf_counter() - t2) * 1000, 3)
    text, used = r.render(packed)
    ms["total"] = round((time.perf_counter() - t0) * 1000, 3)
    chosen = [{"key": it.key, "kind": it.kind, "name": it.name, "path": it.path, "line_start": it.line_start,
               "line_end": it.line_end, "form": f.level, "note": f.note, "tokens": toks, "score": round(it.score, 6),
               "reason": it.reason, "source": it.source, "index": it.index}
              for it, f, toks in packed.chosen]
    cut = [{"key": c.key, "reason": c.reason, "tokens": c.tokens, "index": c.index} for c in packed.cut]
    return ContextResult(mode=mode, query=task, budget=opts.budget, format=opts.fmt, text=text, used=used,
                         items=chosen, cut=cut, candidates=len(items), notices=notices, timings_ms=ms)


def _one_index(multi, files, diff, opts: ContextOptions) -> ContextResult:
    """Files or a diff: the first index that holds them."""
    from .diff import changed_nodes
    from .sources import resolve_files

    engines = multi.engines
    if opts.search is not None and opts.search.filters:   # root:NAME keeps indexes, as in a search
        engines, _, sopts = multi.narrow("", opts.search)
        opts = replace(opts, search=sopts)
    misses = []
    for name, eng in engines.items():
        eopts = _own_opts(eng, opts)
        try:
            if files is not None:
                resolve_files(eng.ix, files)
            elif diff is not None and not changed_nodes(eng.ix, diff)[0]:
                misses.append(name)
                continue
        except NotFound as exc:
            misses.append(f"{name} ({exc})")
            continue
        res = build_context(eng, files=files, diff=diff, opts=eopts)
        res.notices.insert(0, f"from the index {name}" + (f" (not in {', '.join(misses)})" if misses else ""))
        return res
    if files is not None:
        return _files_across(engines, files, opts)
    eng = next(iter(engines.values()))
    if opts.search is not None and opts.search.filters:
        opts = replace(opts, search=opts.search.but(filters=own_filters(eng.ix, opts.search.filters)))
    return build_context(eng, diff=diff, opts=opts)


def _own_opts(eng, opts: ContextOptions) -> ContextOptions:
    """``opts`` with its filters as one index reads them."""
    if opts.search is not None and opts.search.filters:
        return replace(opts, search=opts.search.but(filters=own_filters(eng.ix, opts.search.filters)))
    return opts


def _files_across(engines: dict, files: list[str], opts: ContextOptions) -> ContextResult:
    """Files that no one index holds all of: each from the first index that holds it, their
    candidates packed as one (each item naming its index); NotFound names a file none holds."""
    from .sources import resolve_files

    if not files:
        raise UsageError("--files needs at least one file path")
    t0 = time.perf_counter()
    owner: dict[str, str] = {}
    for f in files:
        for name, eng in engines.items():
            try:
                resolve_files(eng.ix, [f])
            except NotFound:
                continue
            owner[f] = name
            break
        else:
            raise NotFound(f"{f}: this file is in none of the indexes {', '.join(engines)}; index it with "
                           f"`kgsearch index`, or leave it out of --files",
                           agent=f"{f} is in none of the indexes ({', '.join(engines)}): pass files under their "
                                 f"indexed folders")
    notices = ["from the indexes " + "; ".join(
        f"{name} ({', '.join(f for f in files if owner[f] == name)})" for name in engines if name in owner.values())]
    ms: dict[str, float] = {}
    items = []
    for name, eng in engines.items():
        mine = [f for f in files if owner[f] == name]
        if mine:
            for it in load_items(eng.ix, seeded_candidates(eng, _own_opts(eng, opts), notices, files=mine), [],
                                 line_window(opts.budget)):
                it.index = name
                items.append(it)
    items.sort(key=lambda it: -it.score)            # (stable: each index's own order among equals)
    ms["candidates"] = round((time.perf_counter() - t0) * 1000, 3)
    return _packed(items, opts, "files", None, notices, ms, t0)
