"""Writer lock: ``flock`` on ``<db>.lock``, taken without waiting.

Overlapping cron runs are harmless: the second one gets :class:`IndexBusy` (exit code 75)
at once. The lock dies with the process (kill -9 included), so it is never stale.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import IndexBusy

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class IndexLock:
    def __init__(self, db_path: str | os.PathLike):
        self.path = Path(str(db_path) + ".lock")
        self._fd: int | None = None

    def acquire(self) -> "IndexLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
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
