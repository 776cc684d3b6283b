"""The query side of kgsearch: :class:`Engine` (one index, many queries), :func:`search` and
:func:`why` on an index path, the options and result types. Read :mod:`.engine` first: its
``Engine.search`` is the whole pipeline, stage by stage."""
from __future__ import annotations

from .api import engine_for, find_node, search, why
from .channels import ALL_CHANNELS, CHANNELS, DEFAULT_CHANNELS
from .engine import Engine
from .options import Hit, Response, SearchOptions
from .tuning import TUNING, Tuning

__all__ = ["Engine", "SearchOptions", "Hit", "Response", "search", "why", "engine_for", "find_node",
           "CHANNELS", "ALL_CHANNELS", "DEFAULT_CHANNELS", "Tuning", "TUNING"]
