"""Module-level entry points: :func:`search` and :func:`why` on an index path, with one
:class:`~kgsearch.query.engine.Engine` kept per index file."""
from __future__ import annotations

from dataclasses import replace

from ..config import default_db_path
from ..store.db import Index
from ..stats import find_node
from .engine import Engine
from .options import Response, SearchOptions

__all__ = ["engine_for", "search", "why", "find_node"]

_ENGINES: dict[str, Engine] = {}


def engine_for(db=None) -> Engine:
    """The engine for the index at ``db`` (default index when None), opened read-only once."""
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


def why(query: str, node: str, db=None, options: SearchOptions | None = None, engine: Engine | None = None) -> dict:
    """Where ``node`` ranked for ``query`` and why: its channel scores, signals, and what beat it
    (on ``engine`` when given, else on the engine for ``db``)."""
    eng = engine if engine is not None else engine_for(db)
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
