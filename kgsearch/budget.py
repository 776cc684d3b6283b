"""Memory as a budget (issue 16 item 4): ``KGSEARCH_MEMORY_MB``.

:func:`apply` turns a budget in MiB into a kernel limit on this process's private writable
memory (``RLIMIT_DATA``, Linux >= 4.7, which Android phones have): numpy, Python objects and
SQLite all raise :class:`MemoryError` cleanly when an allocation would cross it (measured),
instead of the phone's low-memory killer ending the process with nothing said. Because
``RLIMIT_DATA`` counts *virtual* private memory, and numpy with OpenBLAS reserves ~90 MiB it
never touches, the limit is set relative to now: ``VmData now + (budget - VmRSS now)``, so
the budget is close to a peak-RSS budget for what the process allocates from here on.

:func:`guard` names the step in the error: ``with guard("graph"):`` turns a MemoryError into
:class:`BudgetExceeded` with a one-line message naming the step, the budget and the fix, which
the CLI prints with exit code 6 ("over the memory budget; nothing changed", next to 3 "bad
input" and 4 "index missing"); any other MemoryError is exit 6 too, never "internal error".
The index run is one transaction, so nothing is lost. :func:`need` lets a step that knows its size refuse before it allocates;
the query path sizes its caches with :func:`share` (the vector cache: a quarter of the
budget, at most its default).
"""
from __future__ import annotations

from contextlib import contextmanager

from .environment import current
from .errors import EXIT_MEMORY, BudgetExceeded
from .numerals import parse_float

__all__ = ["apply", "restore", "budget_bytes", "guard", "need", "headroom", "share", "message", "fixed_mmap_threshold",
           "BudgetExceeded", "ENV", "EXIT_MEMORY", "VEC_ENV", "mib_bytes", "vec_cache_bytes"]

ENV = "KGSEARCH_MEMORY_MB"
VEC_ENV = "KGSEARCH_VEC_CACHE_MB"
_applied: dict = {}


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def mib_bytes(raw: str | None, var: str, zero: bool = False) -> int | None:
    """``raw`` MiB (an environment variable's text; ASCII digits, :mod:`kgsearch.numerals`) in
    bytes, None when unset or blank; above 0 (or 0 too with ``zero``). A bad value raises
    ``ValueError`` with a one-line message naming ``var`` and what to set."""
    if raw is None or raw.strip() == "":
        return None
    try:
        mb = parse_float(raw)
    except ValueError:
        raise ValueError(f"{var}={raw!r} is not a number of MiB in ASCII digits; set e.g. {var}=300") from None
    if mb < 0 or (mb == 0 and not zero):
        raise ValueError(f"{var}={raw!r} must be {'0 or more' if zero else 'positive'}; set e.g. {var}=300")
    return int(mb * 2**20)


def budget_bytes(env: dict | None = None) -> int | None:
    """The budget from ``KGSEARCH_MEMORY_MB`` in bytes (None: unset): as the CLI read it
    (:mod:`kgsearch.environment`), or from ``env`` (a mapping of variables) when given. A bad
    value raises ``ValueError`` with a one-line message naming the variable."""
    return mib_bytes(current().memory_mb if env is None else env.get(ENV), ENV)


def vec_cache_bytes() -> int | None:
    """``KGSEARCH_VEC_CACHE_MB`` in bytes (None: unset; 0: no vector cache), as the CLI read it;
    a bad value raises ``ValueError`` naming the variable (the CLI checks it when a command
    starts, with ``KGSEARCH_MEMORY_MB``)."""
    return mib_bytes(current().vec_cache_mb, VEC_ENV, zero=True)


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
    limit = min(limit, 1 << 62)             # (KGSEARCH_MEMORY_MB=1e300: no C long holds it)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    _applied.update(budget=budget, limit=limit, previous=soft)
    return limit


def restore() -> None:
    """Undo :func:`apply` (the CLI runs in-process in tests and embedders: the limit is the
    command's, not the interpreter's)."""
    prev = _applied.pop("previous", None)
    _applied.pop("budget", None)
    _applied.pop("limit", None)
    if prev is None:
        return
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (prev, hard))


def rss_bytes() -> int:
    """This process's resident set now (0 where /proc is missing)."""
    kb = _status_kb("VmRSS")
    return (kb or 0) * 1024


def headroom(env: dict | None = None) -> int | None:
    """Bytes the budget leaves above what this process holds now (None: no budget; may be
    negative when the process is already over it)."""
    b = budget_bytes(env)
    if b is None:
        return None
    return b - rss_bytes()


def share(fraction: float, default: int, env: dict | None = None) -> int:
    """``fraction`` of the budget (bytes), or ``default`` when no budget is set; never more
    than ``default`` (the budget only ever shrinks a structure)."""
    try:
        b = budget_bytes(env)
    except ValueError:
        return default
    return default if b is None else min(default, int(b * fraction))


def message(step: str | None = None) -> str:
    """The one-line explanation for a MemoryError (the CLI prints it with exit 6)."""
    try:
        b = budget_bytes()
    except ValueError:
        b = None
    what = f"step {step!r}" if step else "kgsearch"
    if not b:
        return (f"{what} ran out of memory; nothing was changed. Free memory, set {ENV} (MiB) so "
                f"the steps size themselves to it, or index fewer files at a time")
    return (f"{what} needed more memory than {ENV}={b / 2**20:.0f} allows; nothing was changed. "
            f"Raise {ENV}, or index fewer files at a time")


def need(step: str, nbytes: int, env: dict | None = None) -> None:
    """Raise :class:`BudgetExceeded` before a step allocates ``nbytes`` (its estimate) when the
    budget's headroom cannot hold them. No budget set: nothing is checked."""
    room = headroom(env)
    if room is None or nbytes <= room:
        return
    raise BudgetExceeded(f"step {step!r} needs about {nbytes / 2**20:.0f} MiB but {ENV}="
                         f"{budget_bytes(env) / 2**20:.0f} leaves {max(room, 0) / 2**20:.0f} MiB; "
                         f"nothing was changed. Raise {ENV}, or index fewer files at a time")


@contextmanager
def guard(step: str):
    """Re-raise a MemoryError inside ``step`` as :class:`BudgetExceeded` with the fix in it."""
    try:
        yield
    except BudgetExceeded:
        raise
    except MemoryError as exc:
        raise BudgetExceeded(message(step)) from exc


def fixed_mmap_threshold(size: int = 1 << 17) -> bool:
    """glibc only: allocations of ``size`` bytes and more (default 128 KiB, glibc's own starting
    value) are mapped and unmapped on their own, so a freed array leaves the RSS. By default
    glibc raises this threshold to the size of the largest freed block (up to 32 MB): after the
    first 25 MB blob is read, the next arrays of that size come from the heap and stay in the
    RSS when freed (measured at 1M nodes: a peak
    of 304 instead of 257 MiB for the graph update; the text step's full rebuild at 1M nodes
    peaked at 982 instead of 718 MiB, its chunk arrays interleaved with freed temporaries).
    For the rest of this process: a process-wide setting, so only the CLI sets it, for the
    commands that index (a program that embeds kgsearch decides for itself); a no-op elsewhere
    (musl, bionic). Returns whether it was set."""
    import ctypes
    import platform

    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        return bool(ctypes.CDLL(None).mallopt(-3, int(size)))       # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        return False
