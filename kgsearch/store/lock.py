"""Writer lock: ``flock`` on ``<db>.lock``, taken without waiting.

Overlapping cron runs are harmless: the second one gets :class:`IndexBusy` (exit code 75)
at once. The lock dies with the process (kill -9 included), so it is never stale.

The lock belongs to the index file, not to the name it was given by: ``<db>.lock`` sits next
to the file's real path (symlinks resolved), so ``--db link.db`` and ``--db real.db`` take the
same lock (it was keyed by the path string: a second indexer through a symlink waited out
SQLite's busy timeout and failed with exit 4 instead of 75). A lock file that cannot be
created or opened (a read-only folder) is :class:`BadIndex` naming the folder, unless the
caller only reads (``required=False``: ``doctor``, where no writer can run either).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import BadIndex, IndexBusy

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def lock_path(db_path: str | os.PathLike) -> Path:
    """``<db>.lock`` next to the index file's real path."""
    return Path(os.path.realpath(os.path.expanduser(str(db_path))) + ".lock")


class IndexLock:
    def __init__(self, db_path: str | os.PathLike, required: bool = True):
        self.path = lock_path(db_path)
        self.required = required
        self._fd: int | None = None

    def acquire(self) -> "IndexLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if not self.required:       # a reader in a read-only folder: no writer can run there either
                return self
            where = self.path.parent if not os.access(self.path.parent, os.W_OK) else self.path
            raise BadIndex(f"cannot create the lock file {self.path} ({exc.strerror}): {where} is read-only; "
                           f"kgsearch index writes the index, its journal and this lock there: make it writable "
                           f"or pass --db with a writable path; nothing was changed") from None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = ""
                try:
                    holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                except OSError:
                    pass
                os.close(fd)
                who = f" (pid {holder})" if holder else ""
                raise IndexBusy(f"another kgsearch index run holds {self.path}{who}; "
                                f"this run changed nothing, try again later") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            os.close(self._fd)   # closing drops the flock
            self._fd = None

    def __enter__(self) -> "IndexLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
