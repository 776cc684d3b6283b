"""One engine for the three entry points of ``kgsearch context``:

1. candidates (:mod:`.sources`): a task's search ranking, or the nodes of some files / of a diff's
   changed lines plus their callers, callees and linked notes, ranked by a walk from them;
2. items (:mod:`.items`): each candidate with its forms (full source, trimmed, header only);
3. packing (:mod:`.pack`): the greedy knapsack by score density within the budget, counted with
   the estimate of :mod:`.tokens` (ceil(characters / 4)) on the blocks the renderer prints;
4. rendering (:mod:`.render`): Markdown, JSON or XML, with the report of what was cut and why.

Nothing here depends on the clock or on dict order: the same index and input give the same text.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import UsageError
from .diff import FileChange, changed_nodes
from .items import load_items
from .pack import line_window, pack
from .render import FORMATS, ESTIMATE_RULE, renderer
from .sources import (Candidate, dependents, file_seeds, neighbours, resolve_files, stale_files, task_candidates,
                      walk_rank)

__all__ = ["ContextOptions", "ContextResult", "build_context", "exactly_one", "seeded_candidates", "task_depth",
           "IMPACT_WITH_TASK", "IMPACT_WITH_TASK_AGENT"]

MAX_BUDGET = 1_000_000
QUERY_ECHO_CHARS = 500       # the task as the output repeats it: an issue pasted whole would eat the budget


def task_depth(budget: int) -> int:
    """Search hits considered for a task: one per 100 tokens of budget, 20 to 100."""
    return max(20, min(100, budget // 100))


@dataclass
class ContextOptions:
    budget: int = 8000
    fmt: str = "markdown"
    k: int | None = None                 # task: search hits considered (None: task_depth(budget))
    search: object | None = None         # SearchOptions (None: the defaults); a task's search uses them all,
                                         # files/diff their filters (which nodes may be packed)
    impact: int | None = None            # files/diff: also the transitive dependents within this many hops
    value: str = "margin"                # task: what the density divides by the tokens: "margin" (a hit's
                                         # score minus the lowest of the k hits: its worth above the cutoff)
                                         # or "score" (the fused score as it is, whose offset is arbitrary)

    def validated(self) -> "ContextOptions":
        b = self.budget
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BUDGET:
            raise UsageError(f"--budget must be a whole number of tokens from 1 to {MAX_BUDGET:,}, got {b!r}")
        if self.value not in ("score", "margin"):
            raise UsageError(f"unknown value {self.value!r}; choose score or margin")
        if self.fmt not in FORMATS:
            raise UsageError(f"unknown format {self.fmt!r}; choose from {', '.join(FORMATS)}")
        if self.impact is not None and (isinstance(self.impact, bool) or not isinstance(self.impact, int)
                                        or not 1 <= self.impact <= 10):
            raise UsageError(f"--impact must be a whole number of hops from 1 to 10, got {self.impact!r}")
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1):
            raise UsageError(f"-k must be a whole number >= 1, got {self.k!r}")
        return self


@dataclass
class ContextResult:
    mode: str                            # task, files or diff
    query: str | None
    budget: int
    format: str
    text: str                            # the output, as printed
    used: int                            # tokens counted for it (<= budget; >= the estimate of text)
    items: list[dict]                    # packed: key, kind, name, path, lines, form, tokens, score, reason
    cut: list[dict]                      # every node left out: key, reason, tokens
    candidates: int
    notices: list[str] = field(default_factory=list)
    timings_ms: dict = field(default_factory=dict)
    estimate: str = ESTIMATE_RULE

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("mode", "query", "budget", "format", "estimate", "used", "items",
                                              "cut", "candidates", "notices", "timings_ms", "text")}


def _filtered(engine, cands: list[Candidate], search, notices: list[str]) -> list[Candidate]:
    """Files or a diff with field filters: the candidates the filters keep, in the walk's order.

    The walk ranks from every seed (the given files, the changed nodes), as a filtered search
    scores over the whole index; the filters then choose which nodes may be packed, seeds
    included (``--kind function`` packs the functions of the given files and their neighbours;
    ``-path:tests/`` leaves the tests out of a blast radius). A notice says how many they left out."""
    from ..query.filters import allowed_ids, describe, parse_filters

    filters = parse_filters(getattr(search, "filters", None) or ())
    if not filters or not cands:
        return cands
    import numpy as np

    keep = allowed_ids(engine.ix, filters, engine.graph())
    ids = np.fromiter((c.id for c in cands), dtype=np.int64, count=len(cands))
    ok = np.isin(ids, keep)
    kept = [c for c, y in zip(cands, ok.tolist()) if y]
    if len(kept) < len(cands):
        notices.append(f"the filters ({describe(filters)}) left out {len(cands) - len(kept)} of {len(cands)} "
                       f"nodes" + ("" if kept else ": nothing to pack"))
    return kept


def seeded_candidates(engine, opts: ContextOptions, notices: list[str], *, files: list[str] | None = None,
                      diff: list[FileChange] | None = None) -> list[Candidate]:
    """The candidates of ``files`` (their nodes) or of ``diff`` (its changed nodes), with their
    neighbours (and, with ``opts.impact``, their dependents), ranked by the walk from them and
    kept by ``opts.search``'s filters; notes go to ``notices``."""
    ix = engine.ix
    if files is not None:
        if not files:
            raise UsageError("--files needs at least one file path")
        given = resolve_files(ix, files)
        notices += stale_files(ix, given)
        seeds = {i: Candidate(i, 1.0, "in the given files") for i in file_seeds(ix, given)}
    else:
        changed, notes = changed_nodes(ix, diff)
        notices += notes
        if not changed:
            notices.append("the diff changes no indexed node")
        seeds = {i: Candidate(i, 1.0, "changed", set(lines)) for i, lines in sorted(changed.items())}
    near = neighbours(ix, seeds)
    if opts.impact:
        for nid, why in dependents(ix, seeds, opts.impact, set(seeds) | set(near)).items():
            near[nid] = why
    return _filtered(engine, walk_rank(engine, seeds, near), opts.search, notices)


IMPACT_WITH_TASK = "--impact widens --files or --diff (what depends on the change); a task is ranked by search"
IMPACT_WITH_TASK_AGENT = ("`impact` widens `files` or `diff` (what depends on the change); a `task` is ranked by search: "
                          "leave `impact` out")


def exactly_one(task, files, diff) -> str:
    """Which of ``task``, ``files`` and ``diff`` was given: a UsageError (phrased for the CLI and
    for an agent) unless exactly one was."""
    given = [n for n, v in (("task", task), ("files", files), ("diff", diff)) if v is not None]
    if len(given) != 1:
        got = f" (got {', '.join(given)})" if given else ""
        raise UsageError("give exactly one of a task text, --files or --diff" + got,
                         agent="give exactly one of task, files, diff" + got)
    return given[0]


def build_context(engine, *, task: str | None = None, files: list[str] | None = None,
                  diff: list[FileChange] | None = None, opts: ContextOptions | None = None,
                  session=None) -> ContextResult:
    """Pack the context for exactly one of ``task``, ``files`` or ``diff`` (parsed changes)."""
    opts = (opts or ContextOptions()).validated()
    mode = exactly_one(task, files, diff)
    t0 = time.perf_counter()
    ms: dict[str, float] = {}
    notices: list[str] = []
    ix = engine.ix
    if mode == "task" and opts.impact:
        raise UsageError(IMPACT_WITH_TASK, agent=IMPACT_WITH_TASK_AGENT)
    if mode == "task":
        if not str(task).strip():
            raise UsageError("the task text is empty; describe the task, e.g. kgsearch context \"fix the retry loop\"")
        q = engine.parse(task)                   # analysed once (and cut to its bound): the search and the matched lines read it
        notices += [q.cut] if q.cut else []
        cands, resp = task_candidates(engine, q, opts.k or task_depth(opts.budget), opts.search, session)
        if opts.value == "margin" and cands:
            low = min(c.score for c in cands)
            for c in cands:
                c.score -= low
        notices += list(resp.notices)
        terms = list(q.highlight)
    else:
        cands = seeded_candidates(engine, opts, notices, files=files, diff=diff)
        terms = []
    ms["candidates"] = round((time.perf_counter() - t0) * 1000, 3)

    t1 = time.perf_counter()
    items = load_items(ix, cands, terms, line_window(opts.budget))
    ms["load"] = round((time.perf_counter() - t1) * 1000, 3)

    t2 = time.perf_counter()
    echo = task if mode != "task" or len(task) <= QUERY_ECHO_CHARS else task[:QUERY_ECHO_CHARS].rstrip() + "\u2026"
    r = renderer(opts.fmt, {"query": echo if mode == "task" else None, "mode": mode, "budget": opts.budget})
    frame = r.frame(len(items))
    if opts.fmt != "markdown" and items and frame + r.cost(items[0], items[0].forms[-1]) > opts.budget:
        need = frame + r.cost(items[0], items[0].forms[-1])
        raise UsageError(f"--budget {opts.budget} is too small for {opts.fmt} output (its frame and the top node's "
                         f"header need {need} tokens); raise it or use markdown",
                         agent=f"budget {opts.budget} is too small for {opts.fmt} output (its frame and the top "
                               f"node's header need {need} tokens): raise budget or use format markdown")
    packed = pack(items, opts.budget, r.cost, frame=frame, shrink=r.shrink)
    ms["pack"] = round((time.perf_counter() - t2) * 1000, 3)
    t3 = time.perf_counter()
    text, used = r.render(packed)
    ms["render"] = round((time.perf_counter() - t3) * 1000, 3)
    ms["total"] = round((time.perf_counter() - t0) * 1000, 3)

    chosen = [{"key": it.key, "kind": it.kind, "name": it.name, "path": it.path, "line_start": it.line_start,
               "line_end": it.line_end, "form": f.level, "note": f.note, "tokens": toks,
               "score": round(it.score, 6), "reason": it.reason, "source": it.source}
              for it, f, toks in packed.chosen]
    cut = [{"key": c.key, "reason": c.reason, "tokens": c.tokens} for c in packed.cut]
    return ContextResult(mode=mode, query=task if mode == "task" else None, budget=opts.budget, format=opts.fmt,
                         text=text, used=used, items=chosen, cut=cut, candidates=len(items), notices=notices,
                         timings_ms=ms)
