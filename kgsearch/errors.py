"""Exceptions with exit codes; the CLI prints ``str(exc)`` as one line and exits with ``exc.code``."""
from __future__ import annotations

import difflib

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_DATA = 3
EXIT_INDEX = 4
EXIT_NOT_FOUND = 5
EXIT_MEMORY = 6
EXIT_BUSY = 75
EXIT_INTERRUPTED = 130


class KgsearchError(Exception):
    """Base class. The message is one line that says what is wrong and how to fix it, for a
    person at a shell (`kgsearch ...` commands, flags). ``agent``, when given, says the same to
    an agent calling the MCP tools (their arguments and tools, no CLI advice); see
    :func:`agent_message`."""

    code = EXIT_INTERNAL

    def __init__(self, *args, agent: str | None = None):
        super().__init__(*args)
        self.agent = agent


class UsageError(KgsearchError):
    code = EXIT_USAGE


class DataError(KgsearchError):
    """Bad input data. Message names ``file:line``."""

    code = EXIT_DATA

    def __init__(self, message: str, path: str | None = None, line: int | None = None, agent: str | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message, agent=agent)
        self.path = path
        self.line = line


class BadIndex(KgsearchError):
    """The index is missing, unreadable, or from a newer kgsearch."""

    code = EXIT_INDEX


class NotFound(KgsearchError):
    code = EXIT_NOT_FOUND


class BudgetExceeded(KgsearchError, MemoryError):
    """A step needed more memory than the budget (``KGSEARCH_MEMORY_MB``) allows; nothing was
    changed. Raised by :mod:`kgsearch.budget` (``need``, ``guard``); a ``MemoryError`` too, so
    code that catches ``MemoryError`` keeps working."""

    code = EXIT_MEMORY


class IndexBusy(KgsearchError):
    """Another writer holds the index lock (harmless for overlapping cron runs)."""

    code = EXIT_BUSY


class Interrupted(KgsearchError):
    code = EXIT_INTERRUPTED


def agent_message(exc: BaseException) -> str:
    """What an agent (an MCP client) is told: the error's ``agent`` text, else its message."""
    return getattr(exc, "agent", None) or str(exc)


def name_choices(known, wanted: str, limit: int = 12, more: str = "`kgsearch stats` lists every type") -> str:
    """``known`` names (in their order) for a one-line error: all of them when there are at most
    ``limit`` or they fit in 400 characters; else those containing or resembling ``wanted`` (the
    first ones when none does), up to ``limit`` and about 400 characters, then how many more
    (FB15k-237 has 237 relation types: listing them all made one line of 14,000 characters).

    >>> name_choices(["a", "b"], "x")
    'a, b'
    >>> many = [f"type_{i:03}_name" for i in range(40)]
    >>> name_choices(many + ["/film/genre"], "genre")
    '/film/genre, ... 40 more (`kgsearch stats` lists every type)'
    >>> name_choices(many, "genre", limit=3)
    'type_000_name, type_001_name, type_002_name, ... 37 more (`kgsearch stats` lists every type)'
    """
    known = list(known)
    if len(known) <= limit or len(", ".join(known)) <= 400:
        return ", ".join(known)
    w = (wanted or "").lower()
    near = [k for k in known if w and w in k.lower()][:limit]
    near += [k for k in difflib.get_close_matches(wanted or "", known, n=limit, cutoff=0.6) if k not in near]
    shown = near[:limit] or known[:limit]
    while len(shown) > 1 and len(", ".join(shown)) > 400:      # (FB15k's types run to 130 characters)
        shown.pop()
    return f"{', '.join(shown)}, ... {len(known) - len(shown)} more ({more})"
