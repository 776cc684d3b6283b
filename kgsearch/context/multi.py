"""``kgsearch context`` over several indexes (:class:`kgsearch.query.multi.MultiEngine`).

A task: the indexes' one ranking (:meth:`MultiEngine.search`) gives the candidates; each index
loads its own (:func:`~.items.load_items`, so code is read from its file as for one index), and
they are packed together by the same knapsack and renderer as :func:`~.build.build_context`,
each item naming its index. Files or a diff start from nodes of one index: the first index that
holds the files (or the diff's changed nodes) answers, and a notice says which; ``root:NAME``
filters choose among the indexes as in a search, the others choose the nodes packed.
"""
from __future__ import annotations

import time
from dataclasses import replace

from ..errors import NotFound, UsageError
from ..pack import query_terms
from ..query.multi import own_filters
from .build import ContextOptions, ContextResult, build_context, task_depth
from .items import load_items
from .pack import pack
from .render import renderer
from .sources import Candidate

__all__ = ["build_context_multi"]


def build_context_multi(multi, *, task: str | None = None, files: list[str] | None = None, diff=None,
                        opts: ContextOptions | None = None, sessions: dict | None = None) -> ContextResult:
    """Like :func:`~.build.build_context` on the indexes of ``multi`` searched as one."""
    opts = (opts or ContextOptions()).validated()
    if task is None:
        return _one_index(multi, files, diff, opts)
    if files is not None or diff is not None:
        raise UsageError("give exactly one of a task text, --files or --diff")
    if opts.impact:
        raise UsageError("--impact widens --files or --diff (what depends on the change); a task is ranked by search")
    if not str(task).strip():
        raise UsageError("the task text is empty; describe the task, e.g. kgsearch context \"fix the retry loop\"")
    from ..query import SearchOptions

    t0 = time.perf_counter()
    ms: dict[str, float] = {}
    sopts = (opts.search or SearchOptions()).but(k=opts.k or task_depth(opts.budget), snippets=False)
    resp = multi.search(task, sopts, sessions)
    cands = [(h.index, Candidate(h.id, float(h.score), f"rank {h.rank} ({h.methods or 'search'})")) for h in resp.hits]
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
        for it in load_items(eng.ix, mine, terms):
            loaded[(name, it.id)] = it
    items = []
    for name, c in cands:
        it = loaded.get((name, c.id))
        if it is not None:
            it.index = name
            items.append(it)
    ms["load"] = round((time.perf_counter() - t1) * 1000, 3)
    t2 = time.perf_counter()
    r = renderer(opts.fmt, {"query": task, "mode": "task", "budget": opts.budget})
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
    return ContextResult(mode="task", query=task, budget=opts.budget, format=opts.fmt, text=text, used=used,
                         items=chosen, cut=cut, candidates=len(items), notices=list(resp.notices), timings_ms=ms)


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
        if opts.search is not None and opts.search.filters:
            eopts = replace(opts, search=opts.search.but(filters=own_filters(eng.ix, opts.search.filters)))
        else:
            eopts = opts
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
        raise NotFound(f"no index holds all of {', '.join(files)}: {'; '.join(misses)}")
    eng = next(iter(engines.values()))
    if opts.search is not None and opts.search.filters:
        opts = replace(opts, search=opts.search.but(filters=own_filters(eng.ix, opts.search.filters)))
    return build_context(eng, diff=diff, opts=opts)
