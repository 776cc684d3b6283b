"""Linux/Android inotify through the C library (ctypes), standard library only.

:class:`Inotify` holds one non-blocking inotify descriptor (select/poll it, then
:meth:`Inotify.read`); :func:`parse_events` turns the kernel's buffer of ``struct inotify_event``
records into :class:`Event` tuples. :func:`available` says whether this kernel and C library
have inotify (glibc, musl and Android's bionic do; macOS and Windows do not: the watcher polls
there).
"""
from __future__ import annotations

import ctypes
import errno
import os
import struct
from typing import NamedTuple

__all__ = ["Inotify", "Event", "parse_events", "available", "InotifyError",
           "IN_MODIFY", "IN_ATTRIB", "IN_CLOSE_WRITE", "IN_MOVED_FROM", "IN_MOVED_TO", "IN_CREATE",
           "IN_DELETE", "IN_DELETE_SELF", "IN_MOVE_SELF", "IN_UNMOUNT", "IN_Q_OVERFLOW", "IN_IGNORED",
           "IN_ISDIR", "WATCH_MASK"]

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

# What a folder is watched for: content written (MODIFY while writing, CLOSE_WRITE at the end),
# touched (ATTRIB: mtime, permissions), names coming and going (CREATE, DELETE, MOVED_*: editors
# that save by writing a temporary file and renaming it over the note), and the folder itself
# going away. Never the reads (ACCESS, OPEN, CLOSE_NOWRITE): searching must not wake the watcher.
WATCH_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
              | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

_HEADER = struct.Struct("iIII")           # int wd; uint32_t mask, cookie, len; char name[len]
READ_BYTES = 64 * 1024                     # one read: ~1,000 events of short names


class Event(NamedTuple):
    wd: int
    mask: int
    cookie: int
    name: str


class InotifyError(OSError):
    """inotify could not be set up or a folder could not be watched (``errno`` says why:
    ENOSPC = the per-user watch limit, EMFILE = the instance limit, EACCES, ENOENT...)."""


def parse_events(buf: bytes) -> list[Event]:
    r"""The events in one ``read()`` of an inotify descriptor. Names are NUL-padded by the
    kernel and decoded as the file system encoding does (undecodable bytes kept as surrogates).

    >>> raw = struct.pack("iIII", 1, IN_CREATE, 0, 8) + b"a.md\0\0\0\0" + struct.pack("iIII", -1, IN_Q_OVERFLOW, 0, 0)
    >>> parse_events(raw)
    [Event(wd=1, mask=256, cookie=0, name='a.md'), Event(wd=-1, mask=16384, cookie=0, name='')]
    """
    events, off, n = [], 0, len(buf)
    while off + _HEADER.size <= n:
        wd, mask, cookie, length = _HEADER.unpack_from(buf, off)
        off += _HEADER.size
        raw = buf[off:off + length].split(b"\0", 1)[0]
        off += length
        events.append(Event(wd, mask, cookie, os.fsdecode(raw)))
    return events


_LIBC = None


def _libc():
    """The C library's inotify functions, or None. ``CDLL(None)`` is the running program with
    the libraries it loaded, which include the C library on glibc, musl and bionic alike (where
    ``ctypes.util.find_library`` may find nothing)."""
    global _LIBC
    if _LIBC is None:
        lib = None
        try:
            cand = ctypes.CDLL(None, use_errno=True)
            if hasattr(cand, "inotify_init1") and hasattr(cand, "inotify_add_watch"):
                lib = cand
        except OSError:
            lib = None
        if lib is not None:
            lib.inotify_init1.argtypes = [ctypes.c_int]
            lib.inotify_init1.restype = ctypes.c_int
            lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            lib.inotify_add_watch.restype = ctypes.c_int
            lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
            lib.inotify_rm_watch.restype = ctypes.c_int
        _LIBC = lib or False
    return _LIBC or None


def available() -> bool:
    """This system has inotify: the C library has the functions and the kernel gives a descriptor."""
    lib = _libc()
    if lib is None:
        return False
    fd = lib.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        return False
    os.close(fd)
    return True


class Inotify:
    """One inotify instance: add and remove folder watches, read events without blocking."""

    def __init__(self) -> None:
        lib = _libc()
        if lib is None:
            raise InotifyError(errno.ENOSYS, "this system has no inotify")
        fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            e = ctypes.get_errno()
            raise InotifyError(e, f"inotify_init1: {os.strerror(e)}")
        self._lib, self.fd = lib, fd

    def fileno(self) -> int:
        return self.fd

    def add_watch(self, path: str, mask: int = WATCH_MASK) -> int:
        """The watch descriptor of ``path`` (the same one again for a folder already watched)."""
        wd = self._lib.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            e = ctypes.get_errno()
            raise InotifyError(e, f"{path}: {os.strerror(e)}")
        return wd

    def rm_watch(self, wd: int) -> None:
        """Stop watching (a folder already gone was dropped by the kernel: not an error)."""
        self._lib.inotify_rm_watch(self.fd, wd)

    def read(self) -> list[Event]:
        """The events queued now (empty when there are none: the descriptor never blocks)."""
        out: list[Event] = []
        while True:
            try:
                buf = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                return out
            except InterruptedError:        # pragma: no cover - PEP 475 retries reads
                continue
            if not buf:
                return out
            out.extend(parse_events(buf))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Inotify":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
