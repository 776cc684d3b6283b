"""The query side of kgsearch: :class:`Engine` (one index, many queries), :func:`search` and
:func:`why` on an index path, the options and result types. Read :mod:`.engine` first: its
``Engine.search`` is the whole pipeline, stage by stage; :mod:`.parse` analyses the text once,
:mod:`.intent` and :mod:`.channels` describe the intents and channels once each.

Importing this package (or :mod:`.intent` and :mod:`.channels`, which the CLI reads for its
``--help``) loads no engine and no numpy: the names below are imported on first use.
"""
from __future__ import annotations

__all__ = ["Engine", "SearchOptions", "Hit", "Response", "Query", "search", "why", "engine_for",
           "find_node", "CHANNELS", "ALL_CHANNELS", "DEFAULT_CHANNELS", "INTENTS", "Tuning", "TUNING"]


def __getattr__(name: str):
    if name in ("search", "why", "engine_for", "find_node"):
        from . import api
        return getattr(api, name)
    if name == "Engine":
        from .engine import Engine
        return Engine
    if name in ("SearchOptions", "Hit", "Response"):
        from . import options
        return getattr(options, name)
    if name == "Query":
        from .parse import Query
        return Query
    if name in ("CHANNELS", "ALL_CHANNELS", "DEFAULT_CHANNELS"):
        from . import channels
        return getattr(channels, name)
    if name == "INTENTS":
        from .intent import INTENTS
        return INTENTS
    if name in ("Tuning", "TUNING"):
        from . import tuning
        return getattr(tuning, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
