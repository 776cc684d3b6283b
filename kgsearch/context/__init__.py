"""``kgsearch context``: the nodes that matter for a task, some files or a diff, packed into a
token budget and printed as Markdown, JSON or XML. Read :mod:`.build` first."""
from __future__ import annotations

from .build import ContextOptions, ContextResult, build_context
from .tokens import estimate

__all__ = ["ContextOptions", "ContextResult", "build_context", "estimate"]
