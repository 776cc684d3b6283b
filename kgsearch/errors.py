"""Exceptions with exit codes; the CLI prints ``str(exc)`` as one line and exits with ``exc.code``."""
from __future__ import annotations

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
