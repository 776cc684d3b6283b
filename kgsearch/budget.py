"""Memory as a budget (prototype, issue 16 item 4): ``KGSEARCH_MEMORY_MB``.

:func:`apply` turns a budget in MiB into a kernel limit on this process's private writable
memory (``RLIMIT_DATA``, Linux >= 4.7, which Android phones have): numpy, Python objects and
SQLite all raise :class:`MemoryError` cleanly when an allocation would cross it (measured),
instead of the phone's low-memory killer ending the process with nothing said. Because
``RLIMIT_DATA`` counts *virtual* private memory, and numpy with OpenBLAS reserves ~90 MiB it
never touches, the limit is set relative to now: ``VmData now + (budget - VmRSS now)``, so
the budget is close to a peak-RSS budget for what the process allocates from here on.

:func:`guard` names the step in the error: ``with guard("graph"):`` turns a MemoryError into
:class:`BudgetExceeded` with a one-line message naming the step, the budget and the fix, which
the CLI prints with its own exit code (proposed: 6, "over the memory budget; nothing
changed", next to 3 "bad input" and 4 "index missing"). The index run is one transaction, so
nothing is lost. Steps that can trade time for memory read :func:`budget_bytes` to size
their chunks before they start (and say so in the run report when they degrade).
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from .errors import KgsearchError

__all__ = ["apply", "budget_bytes", "guard", "BudgetExceeded", "ENV", "EXIT_MEMORY"]

ENV = "KGSEARCH_MEMORY_MB"
EXIT_MEMORY = 6             # proposed exit code: over the memory budget, nothing changed
_applied: dict = {}


class BudgetExceeded(KgsearchError, MemoryError):
    """A step needed more memory than ``KGSEARCH_MEMORY_MB`` allows."""

    code = EXIT_MEMORY


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def budget_bytes(env: dict | None = None) -> int | None:
    """The budget from ``KGSEARCH_MEMORY_MB`` in bytes (None: unset). A bad value raises
    ``ValueError`` with a one-line message naming the variable."""
    raw = (os.environ if env is None else env).get(ENV)
    if raw is None or raw.strip() == "":
        return None
    try:
        mb = float(raw)
    except ValueError:
        raise ValueError(f"{ENV}={raw!r} is not a number of MiB; set e.g. {ENV}=300") from None
    if mb <= 0:
        raise ValueError(f"{ENV}={raw!r} must be positive; set e.g. {ENV}=300")
    return int(mb * 2**20)


def apply(budget: int | None = None) -> int | None:
    """Limit this process to ``budget`` bytes more than it uses now (default: from the
    environment). Returns the RLIMIT_DATA set, or None when there is no budget or the platform
    has no such limit (then the budget is advisory: steps still size their chunks by it)."""
    if budget is None:
        budget = budget_bytes()
    if budget is None:
        return None
    try:
        import resource
    except ImportError:                 # Windows
        return None
    data, rss = _status_kb("VmData"), _status_kb("VmRSS")
    if data is None or rss is None or not hasattr(resource, "RLIMIT_DATA"):
        return None
    limit = data * 1024 + max(budget - rss * 1024, 16 << 20)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    _applied.update(budget=budget, limit=limit)
    return limit


@contextmanager
def guard(step: str):
    """Re-raise a MemoryError inside ``step`` as :class:`BudgetExceeded` with the fix in it."""
    try:
        yield
    except BudgetExceeded:
        raise
    except MemoryError as exc:
        b = _applied.get("budget")
        have = f"{ENV}={b / 2**20:.0f}" if b else "the memory available"
        raise BudgetExceeded(f"step {step!r} needed more memory than {have} allows; nothing was changed. "
                             f"Raise {ENV}, or index fewer files at a time") from exc
