"""Writer lock: ``flock`` on ``<db>.lock``, taken without waiting.

Overlapping cron runs are harmless: the second one gets :class:`IndexBusy` (exit code 75)
at once. The lock dies with the process (kill -9 included), so it is never stale.

The lock belongs to the index file, not to the name it was given by: ``<db>.lock`` sits next
to the file's real path (symlinks resolved), so ``--db link.db`` and ``--db real.db`` take the
same lock (it was keyed by the path string: a second indexer through a symlink waited out
SQLite's busy timeout and failed with exit 4 instead of 75). A hard link is another real path
of the same file, with a ``.lock`` of its own: when the index file has more than one link, the
lock also takes a ``flock`` on the index file itself, which every name of the file shares (two
runs through two hard links both went ahead, each holding "its" lock). Only on Linux (Android
included), where ``flock`` and SQLite's own ``fcntl`` byte-range locks never meet; a file with
one link (the ordinary case) is not even opened, so a network file system, where ``flock`` may
be emulated with ``fcntl`` locks, sees nothing new. The descriptor is never closed (closing one
would drop this process's SQLite locks on the file): the next lock on that file reuses it. A lock
file that cannot be created or opened (a read-only folder) is :class:`BadIndex` naming the folder, unless the
caller only reads (``required=False``: ``doctor``, where no writer can run either).
"""
from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from ..errors import BadIndex, IndexBusy

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

# flock and fcntl (SQLite's) locks are separate on Linux; on BSD and macOS they can conflict
_FLOCK_APART = sys.platform.startswith("linux") or sys.platform == "android"


def lock_path(db_path: str | os.PathLike) -> Path:
    """``<db>.lock`` next to the index file's real path."""
    return Path(os.path.realpath(os.path.expanduser(str(db_path))) + ".lock")


class IndexLock:
    def __init__(self, db_path: str | os.PathLike, required: bool = True):
        self.path = lock_path(db_path)
        self.db = str(self.path)[:-len(".lock")]
        self.required = required
        self._fd: int | None = None
        self._db_held: tuple[tuple[int, int], int] | None = None

    def acquire(self, _tries: int = 3) -> "IndexLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if not self.required:       # a reader in a read-only folder: no writer can run there either
                return self
            # the nearest folder that exists is the one that said no (a missing one was to be made
            # there); a file on the way (--db notes/plan.md/x.db) is no read-only folder
            near = next((a for a in (self.path.parent, *self.path.parent.parents) if os.path.lexists(a)), None)
            if near is not None and not near.is_dir():
                raise BadIndex(f"cannot create the lock file {self.path}: {near} is a file, not a folder; pass --db "
                               f"with a path in a folder; nothing was changed") from None
            where = (self.path if near == self.path.parent and os.access(near, os.W_OK) else near or self.path.parent)
            raise BadIndex(f"cannot create the lock file {self.path} ({exc.strerror}): {where} is read-only; "
                           f"kgsearch index writes the index, its journal and this lock there: make it writable "
                           f"or pass --db with a writable path; nothing was changed") from None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if not _same_file(fd, self.path):   # removed by a failed first run since we opened it
                    os.close(fd)
                    if _tries > 0:
                        return self.acquire(_tries - 1)
                    raise IndexBusy(f"{self.path} keeps being replaced by other kgsearch runs; "
                                    f"this run changed nothing, try again later")
            except OSError:
                holder = _holder(fd)
                os.close(fd)
                who = f" (pid {holder})" if holder else ""
                raise IndexBusy(f"another kgsearch index run holds {self.path}{who}; "
                                f"this run changed nothing, try again later") from None
        try:
            self._db_held = _lock_the_file(self.db)
        except IndexBusy:
            os.close(fd)
            raise
        self._fd = _claim(fd)
        return self

    def release(self) -> None:
        if self._db_held is not None:
            _unlock_the_file(self._db_held)
            self._db_held = None
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                if not os.path.lexists(self.db):
                    # a first run that failed before the index existed leaves no lock beside
                    # nothing (removed while held; a run that opened it meanwhile sees it gone
                    # once it has the lock, and takes a new one)
                    os.unlink(self.path)
            except OSError:
                pass
            os.close(self._fd)   # closing drops the flock
            self._fd = None

    def __enter__(self) -> "IndexLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class WatchLock:
    """One ``kgsearch watch`` per index: ``flock`` on ``<db>.watch.lock`` (next to the index file's
    real path) for the watcher's life, holding its pid. A second watcher of the same index did
    every run twice (the second finding nothing to do) and logged "another kgsearch index run
    holds the lock" at every save; it now stops at once with :class:`IndexBusy` (exit 75) naming
    the first. A folder where the file cannot be made (read-only: the runs say so) takes no lock."""

    def __init__(self, db_path: str | os.PathLike):
        self.path = Path(os.path.realpath(os.path.expanduser(str(db_path))) + ".watch.lock")
        self._fd: int | None = None

    def acquire(self) -> "WatchLock":
        if fcntl is None:
            return self
        try:
            fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return self                       # flock not supported here: no lock, as before
            who = f" (pid {holder})" if holder.isdigit() else ""
            db = str(self.path)[:-len(".watch.lock")]
            raise IndexBusy(f"another `kgsearch watch`{who} already watches {db}; one watcher keeps it current "
                            f"(give it every folder: `kgsearch watch A B`); stop the other first"
                            f"{f' (`kill {holder}`)' if holder.isdigit() else ''}") from None
        self._fd = _claim(fd)
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None


def _holder(fd: int) -> str:
    """The pid the holder of a lock file wrote in it ("" when unreadable)."""
    try:
        return os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""


def _claim(fd: int) -> int:
    """Write this process's pid into the lock file just locked, for the next one to name."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# Descriptors of hard-linked index files that no lock holds now, by (st_dev, st_ino): kept open for
# the next lock on the file, never closed, because closing any descriptor of a file drops every
# fcntl lock this process holds on it: SQLite's, of a connection still open here.
_IDLE: dict[tuple[int, int], list[int]] = {}


def _lock_the_file(db: str) -> tuple[tuple[int, int], int] | None:
    """The index file's ``(st_dev, st_ino)`` and a descriptor of it holding its ``flock``, when
    the file has other hard links (``None``: one link, no file yet, or a system or file system
    where it cannot be had; SQLite's own locking is then all there is, as before).
    :class:`IndexBusy` when another run holds it through another name."""
    if fcntl is None or not _FLOCK_APART:
        return None
    try:
        st = os.stat(db)
    except OSError:
        return None                          # no index yet (a first run), or unreadable: SQLite says so
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return None
    key = (st.st_dev, st.st_ino)
    idle = _IDLE.get(key)
    if idle:
        fd = idle.pop()
    else:
        try:
            fd = os.open(db, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
            st = os.fstat(fd)
        except OSError:
            return None
        key = (st.st_dev, st.st_ino)         # the file opened (replaced since the stat: that one)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        _IDLE.setdefault(key, []).append(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise IndexBusy(f"another kgsearch index run holds {db} through another of its {st.st_nlink} "
                            f"hard links; this run changed nothing, try again later") from None
        return None
    return key, fd


def _unlock_the_file(held: tuple[tuple[int, int], int]) -> None:
    key, fd = held
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        pass
    _IDLE.setdefault(key, []).append(fd)
