"""The JSON API: each endpoint returns what the same CLI command prints with ``--json`` for the
same arguments (``/api/search`` = ``kgsearch search --json --no-cache``, ``/api/show`` = ``show``,
``/api/related`` = ``related``, ``/api/context`` = ``context --format json``, ``/api/stats`` =
``stats``, ``/api/why`` = ``why``), by calling the same library functions with the same options.

Parameters are the CLI's flags by name (``q`` for the query, ``node``, ``k``, ``intent``, ...);
a bad value is a :class:`~kgsearch.errors.UsageError` naming the parameter (HTTP 400).
"""
from __future__ import annotations

import json

from ..errors import UsageError
from ..jsonable import jsonable
from ..lines import quoted
from ..numerals import parse_float, parse_int

__all__ = ["ENDPOINTS", "search_options", "dumps", "param", "int_param", "ascii_int", "takes", "check_names"]

MAX_K = 1000
MAX_EDGES = 1000


def param(params: dict, name: str, default: str | None = None, required: bool = False) -> str | None:
    """The last value of ``name`` (query string or form), or ``default``. A ``required`` one of
    blanks alone (spaces, NULs) is a usage error too: it would search for nothing."""
    vals = params.get(name)
    if not vals or vals[-1] == "":
        if required:
            raise UsageError(f"missing parameter {name!r}")
        return default
    if required and blank(vals[-1]):
        raise UsageError(f"parameter {name!r} is blank; give some words")
    return vals[-1]


def blank(text: str) -> bool:
    """Nothing but white space, NULs and other control characters."""
    return not "".join(c for c in text if c.isprintable()).strip()


def ascii_int(text: str) -> int:
    """``int(text)`` for ASCII digits only (:func:`kgsearch.numerals.parse_int`: Python's ``int``
    also reads ``'٣'``, ``'３'`` and ``'3_0'``); a ValueError otherwise."""
    return parse_int(text)


def int_param(params: dict, name: str, default: int | None, lo: int = 1, hi: int = 1_000_000) -> int | None:
    v = param(params, name)
    if v is None:
        return default
    try:
        n = ascii_int(v)
    except ValueError:
        raise UsageError(f"parameter {name!r} must be a whole number, got {quoted(v[:40])}") from None
    if not lo <= n <= hi:
        raise UsageError(f"parameter {name!r} must be from {lo} to {hi}, got {n}")
    return n


def _float_param(params: dict, name: str) -> float | None:
    v = param(params, name)
    if v is None:
        return None
    try:                    # (float() reads '３', 'nan' and 'inf' too)
        return parse_float(v)
    except ValueError:
        raise UsageError(f"parameter {name!r} must be a number, got {quoted(v[:40])}") from None


def _flag(params: dict, name: str) -> bool:
    return (param(params, name) or "").lower() in ("1", "true", "yes", "on")


def filter_params(params: dict) -> tuple:
    """The filter parameters (``kind``, ``path``, ``exclude_path``, ``tag``, ``lang``,
    ``modified_since``, ``root``: the CLI's filter flags; repeat one for alternatives) as
    FieldFilter objects, each value as given, checked (a bad value is a UsageError: HTTP 400)."""
    from ..query.filters import FIELDS, from_flags

    names = [fl[2:].replace("-", "_") for f in FIELDS.values() for fl in (f.flag, f.exclude_flag) if fl]
    vals = {n: [v for v in params.get(n, []) if v.strip()] or None for n in names}
    vals = {n: (v[-1] if n == "modified_since" and v else v) for n, v in vals.items()}
    return from_flags(vals)


def search_options(params: dict, explain: bool | None = None):
    """The CLI's search flags as :class:`~kgsearch.query.SearchOptions` (result cache off: the
    server never writes to the index)."""
    from ..query import SearchOptions

    return SearchOptions(k=int_param(params, "k", 10, 1, MAX_K), intent=param(params, "intent"),
                         weights=param(params, "weights"), fusion=param(params, "fusion"),
                         channels=param(params, "channels"), explain=_flag(params, "explain") if explain is None
                         else explain, use_cache=False, norm=param(params, "norm", "z"),
                         diversity=_float_param(params, "diversity"), group=param(params, "group"),
                         filters=filter_params(params), correct=(param(params, "correct") or "1").lower()
                         not in ("0", "false", "no", "off"))


def api_search(engine, params: dict) -> dict:
    return engine.search(param(params, "q", required=True), search_options(params)).as_dict()


def api_why(engine, params: dict) -> dict:
    """``kgsearch why``; over several indexes (``engine`` a MultiEngine) the node's rank in the one
    ranking, ``db`` naming its index (``why --index``)."""
    from ..query import why

    if getattr(engine, "engines", None) is not None:
        from ..query.api import why_over

        return why_over(engine, param(params, "q", required=True), param(params, "node", required=True),
                        param(params, "db"), search_options(params, explain=True))
    return why(param(params, "q", required=True), param(params, "node", required=True),
               options=search_options(params, explain=True), engine=engine)


def api_show(engine, params: dict) -> dict:
    from ..stats import show_node

    return show_node(engine.ix, param(params, "node", required=True), limit=int_param(params, "edges", 25, 0, MAX_EDGES))


def related_args(params: dict) -> dict:
    types = param(params, "types")
    direction = param(params, "direction", "both")
    if direction not in ("out", "in", "both"):
        raise UsageError(f"parameter 'direction' must be out, in or both, got {quoted(direction[:40])}")
    return {"types": [t for t in types.split(",") if t] if types else None, "direction": direction,
            "limit": int_param(params, "limit", 50, 1, MAX_EDGES)}


def api_related(engine, params: dict) -> dict:
    from ..stats import related_nodes

    return related_nodes(engine.ix, param(params, "node", required=True), **related_args(params),
                         what="parameter 'types'")


def context_result(engine, params: dict, fmt: str = "json"):
    """``kgsearch context``: ``task``, or ``files`` (repeated, or one per line), or ``diff`` (a unified
    diff's text, or ``git``); ``budget``, ``k``."""
    from ..context import ContextOptions, build_context
    from ..context.diff import git_diff, parse_given
    from ..query import SearchOptions

    task = param(params, "task")
    if task is not None and blank(task):
        raise UsageError("parameter 'task' is blank; describe the task")
    files = [f for v in params.get("files", []) for f in v.splitlines() if f.strip()] or None
    diff = param(params, "diff")
    several = getattr(engine, "engines", None)          # several indexes searched as one
    changes = None
    if diff is not None:
        roots = ([r for e in several.values() for r in e.ix.meta_json("roots", [])] if several
                 else engine.ix.meta_json("roots", []))
        changes = git_diff(roots) if diff.strip() == "git" else parse_given(diff, "parameter 'diff'")
    opts = ContextOptions(budget=int_param(params, "budget", 8000, 1, 1_000_000), fmt=fmt,
                          k=int_param(params, "k", None, 1, MAX_K), search=SearchOptions(use_cache=False, filters=filter_params(params)))
    if several:
        from ..context.multi import build_context_multi

        return build_context_multi(engine, task=task, files=files, diff=changes, opts=opts)
    return build_context(engine, task=task, files=files, diff=changes, opts=opts)


def api_context(engine, params: dict) -> dict:
    return json.loads(context_result(engine, params, "json").text)


def api_stats(engine, params: dict) -> dict:
    from ..stats import index_stats

    return index_stats(engine.ix)


_SEARCH = ("q", "k", "intent", "weights", "fusion", "channels", "norm", "diversity", "group", "explain", "correct")


def _filter_names() -> tuple:
    from ..query.filters import FIELDS

    return tuple(fl[2:].replace("-", "_") for f in FIELDS.values() for fl in (f.flag, f.exclude_flag) if fl)


def takes(path: str) -> tuple:
    """The parameters endpoint ``path`` takes (``db`` on every one: several indexes)."""
    own = {"/api/search": _SEARCH + _filter_names(), "/api/why": ("node",) + _SEARCH + _filter_names(),
           "/api/show": ("node", "edges"), "/api/related": ("node", "types", "direction", "limit"),
           "/api/context": ("task", "files", "diff", "budget", "k") + _filter_names(), "/api/stats": ()}[path]
    return own + ("db",)


def check_names(path: str, params: dict) -> None:
    """A parameter the endpoint does not take is a usage error naming it and those it takes (a
    typo, ``budgte=4000``, was ignored: the default budget, and no word of it)."""
    known = takes(path)
    unknown = [n for n in params if n not in known]
    if unknown:
        raise UsageError(f"unknown parameter {quoted(unknown[0][:40])} for {path}; it takes: {', '.join(known)}")


ENDPOINTS = {"/api/search": api_search, "/api/show": api_show, "/api/related": api_related,
             "/api/context": api_context, "/api/stats": api_stats, "/api/why": api_why}



def dumps(obj) -> bytes:
    """JSON as the CLI's ``--json`` writes it (same values; no indentation), UTF-8."""
    return json.dumps(obj, ensure_ascii=False, default=jsonable).encode("utf-8")
