"""Module-level entry points: :func:`search` and :func:`why` on an index path, with one
:class:`~kgsearch.query.engine.Engine` kept per index file."""
from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from dataclasses import replace

from ..config import default_db_path
from ..lines import quoted
from ..store.db import Index, ensure_error
from ..types import FLAG_AUTO
from ..stats import find_node
from .engine import Engine
from .options import Response, SearchOptions

__all__ = ["engine_for", "search", "why", "why_over", "find_node"]

_ENGINES: dict[str, tuple[tuple[int, int] | None, Engine]] = {}


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def engine_for(db=None) -> Engine:
    """The engine for the index at ``db`` (default index when None), opened read-only once and
    kept while the file is the same file: when it was replaced (``doctor --rebuild``, an index
    copied over it: another (st_dev, st_ino)), the next call opens the new one."""
    path = str(db or default_db_path())
    ident = _identity(path)
    cached = _ENGINES.get(path)
    if cached is not None and cached[0] == ident and ident is not None:
        return cached[1]
    if cached is not None:
        cached[1].ix.close()
        del _ENGINES[path]
    eng = Engine(Index.open(path, readonly=True))
    _ENGINES[path] = (_identity(path), eng)
    return eng


@contextmanager
def _damage_named(db):
    """sqlite's "database disk image is malformed" and friends as BadIndex (exit 4) naming the
    file and ``kgsearch doctor --rebuild``."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        mapped = ensure_error(exc, db or default_db_path())
        if mapped is None:
            raise
        raise mapped from exc


def search(query: str, db=None, options: SearchOptions | None = None, k: int | None = None, **kw) -> Response:
    """Run the pipeline on the index at ``db`` (default index when None)."""
    opts = options or SearchOptions()
    if k is not None or kw:
        opts = replace(opts, **({"k": k} if k is not None else {}), **kw)
    with _damage_named(db):
        return engine_for(db).search(query, opts)


def why(query: str, node: str, db=None, options: SearchOptions | None = None, engine: Engine | None = None) -> dict:
    """Where ``node`` ranked for ``query`` and why: its channel scores, signals, and what beat it
    (on ``engine`` when given, else on the engine for ``db``)."""
    with _damage_named(db):
        return _why(query, node, db, options, engine)


def _why(query: str, node: str, db, options: SearchOptions | None, engine: Engine | None) -> dict:
    eng = engine if engine is not None else engine_for(db)
    target = find_node(eng.ix, node)
    opts = replace(options or SearchOptions(), use_cache=False, explain=True)
    wide = eng.search(query, replace(opts, k=max(1000, opts.k)))
    return _explain(query, eng, target, wide, wide.hits, wide.seeds, opts)


def why_over(multi, query: str, node: str, index: str | None = None, options: SearchOptions | None = None) -> dict:
    """:func:`why` over several indexes searched as one (a :class:`~kgsearch.query.multi.MultiEngine`):
    ``node`` in index ``index``, or in the first index that has it; its rank in the one ranking
    over every index, and what beat it there (``top`` names each hit's index)."""
    from ..errors import NotFound, UsageError

    if index is not None and index not in multi.engines:
        raise UsageError(f"no index named {quoted(index[:80])}; the indexes are {', '.join(multi.engines)}")
    names = [index] if index is not None else list(multi.engines)
    for name in names:
        try:
            target = find_node(multi.engines[name].ix, node)
            break
        except NotFound:
            continue
    else:
        where = f"index {index}" if index is not None else f"any of the indexes ({', '.join(multi.engines)})"
        raise NotFound(f"no node {quoted(node)} in {where}; search for it to find its key")
    opts = replace(options or SearchOptions(), use_cache=False, explain=True)
    wide = multi.search(query, replace(opts, k=max(1000, opts.k)))
    out = _explain(query, multi.engines[name], target, wide, [h for h in wide.hits if h.index == name],
                   wide.seeds_of.get(name, []), opts)
    for t, h in zip(out["top"], wide.hits):
        t["index"] = h.index
    out["index"] = name
    return out


def _explain(query: str, eng: Engine, target: dict, wide: Response, mine: list, seeds: list, opts) -> dict:
    """The answer of :func:`why` for ``target`` of ``eng``'s index, from the wide search ``wide``
    (``mine``: its hits of that index; ``seeds``: that index's graph seeds)."""
    pos = next((h for h in mine if h.id == target["id"]), None)
    top = wide.hits[:opts.k]
    out = {"query": query, "node": {k: target[k] for k in ("id", "key", "kind", "name", "path")},
           "intent": wide.intent, "fusion": wide.fusion, "channels_run": wide.channels_run,
           "k": opts.k, "rank": pos.rank if pos else None, "hit": pos.as_dict() if pos else None,
           "cutoff_score": top[-1].score if len(top) >= opts.k else None,
           "top": [{"rank": h.rank, "key": h.key, "name": h.name, "score": h.score} for h in top]}
    out["notices"] = list(wide.notices)
    filtered, allowed = eng.allowed(eng.parse(query), opts)
    out["filters"] = [str(f) for f in filtered.filters]
    if allowed is not None and not (allowed == target["id"]).any():
        out["graph"] = None
        by_filters = eng.allowed(replace(filtered, slash_regex=False), opts)[1] if filtered.slash_regex else allowed
        if by_filters is None or (by_filters == target["id"]).any():      # the filters keep it: the regex did not
            out["reason"] = (f"its names do not match the regular expression {filtered.text.strip()} "
                             f"(a /regex/ query ranks the names it matches)")
        else:
            out["reason"] = f"left out by the filters {' '.join(out['filters'])} (applied before ranking)"
        return out
    out["graph"] = _graph_route(eng, target["id"], seeds)
    stand_in = _stand_in(eng, target, mine) if pos is None and opts.collapse else None
    if stand_in is not None:
        out["represented_by"] = {"key": stand_in.key, "kind": stand_in.kind, "name": stand_in.name,
                                 "rank": stand_in.rank, "score": stand_in.score}
        out["reason"] = (f"not listed on its own (one hit per note): its {stand_in.kind} {quoted(stand_in.name)} "
                         f"({stand_in.key}) stands for it at rank {stand_in.rank}")
    elif pos is None and target.get("flags", 0) & FLAG_AUTO:
        out["reason"] = (f"a {target['kind']} is structure, not a result: tags, entities and placeholders rank "
                         f"only for an exact name or when the query asks for their kind (kind:{target['kind']}); "
                         f"`kgsearch related {target['key']}` lists what it links")
    elif pos is None:
        out["reason"] = ("no channel returned this node among its candidates: none of the query terms match "
                         "its text closely enough, its embedding is not among the nearest, and no seed links to it")
    elif pos.rank > opts.k:
        out["reason"] = f"ranked {pos.rank}, below the top {opts.k} (score {pos.score} < cutoff {out['cutoff_score']})"
    else:
        out["reason"] = f"in the top {opts.k} at rank {pos.rank}"
    return out


def _graph_route(eng: Engine, node_id: int, seeds: list) -> dict | None:
    """How the graph stage reached ``node_id``: ``{"seed": True}`` when it was one of the
    ``seeds`` (a best text or embedding match), else the cheapest path from a seed
    (:func:`seed_path`: hops with edge types), or None (no graph stage, or no path of at most 4 hops)."""
    if not seeds:
        return None
    if node_id in seeds:
        return {"seed": True}
    from ..explore.paths import seed_path

    try:
        p = seed_path(eng.ix, seeds, node_id)
    except Exception:            # the graph is an explanation here, never a reason to fail
        return None
    return None if p is None else {"seed": False, "path": p}


def _stand_in(eng: Engine, target: dict, hits):
    """The hit that stands for ``target`` when results keep one hit per note
    (:func:`kgsearch.pack.collapse_sections`): a section of that note, the note of that section,
    or a sibling section; None when no hit is of its family."""
    from ..pack import CHILD_KINDS, family

    fam = target["key"]              # (only sections and chunks join a family: a method is no stand-in for its class)
    if target["kind"] in CHILD_KINDS and target.get("parent_id") is not None:
        row = eng.ix.conn.execute("SELECT key FROM nodes WHERE id = ?", (target["parent_id"],)).fetchone()
        fam = row[0] if row else fam
    return next((h for h in hits if h.id != target["id"] and family(h.key, h.kind, h.parent) == fam), None)
