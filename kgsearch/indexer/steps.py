"""The derived-data steps, run in this order inside the index transaction.

The step protocol (docs/DESIGN.md, "Derived-data steps"): each step module has ``NAME`` and
``update(ix, changes, settings, progress=None) -> dict``, which brings its tables in line with
the nodes and edges for a :class:`~kgsearch.types.ChangeSet` and rebuilds from scratch when
``changes.full`` is set; and it may have the hooks ``begin(ix, changes)``, called
(:func:`begin_steps`) once ``changes.full`` is known and before the run changes any row, and
``end(ix)``, called (:func:`end_steps`) after the steps, whichever of them ran: the graph step
tracks there which rows change, so that nothing else in the indexer knows how it stores the
graph. ``neighbors`` writes derived edges and sets ``changes.edges_changed`` so that
``graph``, after it, updates.
"""
from __future__ import annotations

import time
from dataclasses import replace

from ..budget import guard
from ..embed import embed_step
from ..errors import UsageError
from ..graph import graph_step
from ..text import neighbors, text_step
from .state import RunState

__all__ = ["STEPS", "STEP_NAMES", "run_steps", "begin_steps", "end_steps", "check_step_names"]

STEPS = (text_step, neighbors, embed_step, graph_step)
STEP_NAMES = tuple(m.NAME for m in STEPS)


def check_step_names(names) -> None:
    bad = [n for n in (names or ()) if n not in STEP_NAMES]
    if bad:
        raise UsageError(f"unknown derived step(s) {', '.join(bad)}; choose from {', '.join(STEP_NAMES)}")


def begin_steps(st: RunState) -> None:
    """Each step's ``begin(ix, changes)`` hook, when it has one (every step, whatever
    ``opts.steps`` chooses: a step left out must still learn what changed)."""
    for mod in STEPS:
        hook = getattr(mod, "begin", None)
        if hook is not None:
            hook(st.ix, st.changes)


def end_steps(st: RunState) -> None:
    """Each step's ``end(ix)`` hook, when it has one."""
    for mod in STEPS:
        hook = getattr(mod, "end", None)
        if hook is not None:
            hook(st.ix)


def run_steps(st: RunState, settings, stale: set[str], recheck: set[str] = frozenset()) -> None:
    """Run the steps (``opts.steps`` chooses some by name). A step in ``stale`` (a migration
    invalidated its data) gets a full rebuild; one in ``recheck`` runs with the run's changes
    as they are (it checks its own inputs: the embed step, when the model files are not the
    recorded ones); when no node or edge changed, only those run."""
    wanted = st.opts.steps
    changes = st.changes
    for mod in STEPS:
        name = mod.NAME
        if wanted is not None and name not in wanted:
            continue
        if not changes.any and name not in stale and name not in recheck:
            continue
        t0 = time.perf_counter()
        st.emit(phase=name)
        ch = changes if changes.full or name not in stale else replace(changes, full=True)
        with guard(name):               # a MemoryError names the step and KGSEARCH_MEMORY_MB
            info = mod.update(st.ix, ch, settings, progress=st.opts.progress) or {}
        if ch is not changes:
            changes.edges_changed = changes.edges_changed or ch.edges_changed
        info.setdefault("seconds", round(time.perf_counter() - t0, 3))
        st.report.steps[name] = info
