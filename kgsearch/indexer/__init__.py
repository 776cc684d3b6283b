"""The index side of kgsearch: :func:`index_paths` runs one incremental, crash-safe index run.

Read :mod:`.run` first (the run end to end), then :mod:`.plan` (what changed), :mod:`.load`
(loading files), :mod:`.writer` (nodes, aliases, files), :mod:`.edges` (edge resolution) and
:mod:`.steps` (derived data: text, neighbors, embed, graph).
"""
from __future__ import annotations

from .run import index_paths
from .state import IndexOptions, IndexReport
from .steps import STEP_NAMES, STEPS

__all__ = ["index_paths", "IndexOptions", "IndexReport", "STEPS", "STEP_NAMES"]
