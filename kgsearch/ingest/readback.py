"""Reading an indexed file back at query time (``context`` shows code as its source lines),
without ever showing anything but the file that was indexed.

The walker refuses a symlink that leaves its root when it indexes; a query runs later, when
anyone who can write into the folder may have replaced the file (or a folder on its path) by a
link to ``~/.ssh/id_ed25519`` with the same size and mtime. :func:`read_indexed` returns the
file's bytes only when all of these hold, else ``None`` (the caller shows the indexed text):

* the stored path lies inside the file's registered root, and resolving it now gives the same
  path (no component became a symlink: the stored path is the file's real path);
* it opens with ``O_NOFOLLOW`` (the last component is not a link) and ``O_NONBLOCK`` (a FIFO
  swapped in cannot hang the query), and the open descriptor is a regular file whose size and
  mtime are the indexed ones (``fstat``: what was opened, not what the path names a moment later);
* the bytes read hash to the indexed content hash (:func:`content_hash`, the indexer's). This
  is what closes the race between the checks and the read: whatever was opened, only the
  indexed content gets through.
"""
from __future__ import annotations

import hashlib
import os
import stat

__all__ = ["content_hash", "read_indexed"]

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def content_hash(data: bytes) -> str:
    """A file's content hash as the ``files`` table stores it (blake2b, 16 bytes, hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def read_indexed(path: str | None, root: str | None, size: int | None, mtime_ns: int | None,
                 digest: str | None) -> bytes | None:
    """The bytes of the indexed file at ``path`` (its ``files`` row: registered ``root``, ``size``,
    ``mtime_ns``, content ``digest``), or ``None`` when it is not exactly that file reached
    without a link inside its root (see the module docstring)."""
    if not path or not root or size is None or mtime_ns is None or not digest:
        return None
    if not _inside(path, root):
        return None
    try:
        if os.path.realpath(path) != path:
            return None
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != size or st.st_mtime_ns != mtime_ns:
            return None
        parts, left = [], size + 1          # one byte more: a file that grew is not the indexed one
        while left > 0:
            piece = os.read(fd, min(left, 1 << 20))
            if not piece:
                break
            parts.append(piece)
            left -= len(piece)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(parts)
    if len(data) != size or content_hash(data) != digest:
        return None
    return data
