"""A damaged index: which errors mean the file is damaged, stored arrays that cannot be what
their rows say, and the one-line :class:`~kgsearch.errors.BadIndex` (exit 4) each sqlite
failure becomes, with the fix (``kgsearch doctor --rebuild``, a writable path, free space)."""
from __future__ import annotations

import json
import shlex
import sqlite3

from ..errors import BadIndex, KgsearchError

__all__ = ["DamagedData", "blob_layout", "check_blobs", "is_corruption", "ensure_error", "damaged_among", "CORRUPTION"]


class DamagedData(sqlite3.DatabaseError):
    """Stored data that cannot be what its row says (a blob whose length does not fit its dtype
    and shape): the file is damaged as surely as when SQLite says so. A ``sqlite3.DatabaseError``
    whose message says "malformed", so every caller treats it as :func:`is_corruption` (never a
    channel to skip; ``BadIndex`` naming ``kgsearch doctor --rebuild``)."""


def blob_layout(name: str, dtype: str, shape: str, nbytes: int):
    """(numpy dtype, shape) of the stored array ``name``; :class:`DamagedData` when its recorded
    dtype or shape cannot be read or its ``nbytes`` do not fit them."""
    import numpy as np

    try:
        dt = np.dtype(dtype)
        dims = [int(d) for d in json.loads(shape)]
    except (TypeError, ValueError) as exc:
        raise DamagedData(f"database disk image is malformed: stored array {name!r} has an unreadable "
                          f"type or shape ({exc})") from None
    want = dt.itemsize
    for d in dims:
        want *= d
    if want != nbytes or any(d < 0 for d in dims):
        raise DamagedData(f"database disk image is malformed: stored array {name!r} holds {nbytes} bytes, "
                          f"its type {dtype} and shape {dims} need {want}")
    return dt, dims


def check_blobs(conn) -> None:
    """Every stored array's length against its dtype and shape (``length()`` reads no content):
    :class:`DamagedData` for the first that does not fit."""
    for name, dtype, shape, nbytes in conn.execute("SELECT name, dtype, shape, length(data) FROM blobs"):
        blob_layout(name, dtype, shape, nbytes or 0)


CORRUPTION = ("malformed", "not a database", "corrupt")


def is_corruption(exc: BaseException) -> bool:
    """Does this sqlite error mean the file is damaged ("database disk image is malformed",
    "file is not a database", FTS5's "corrupt")? Such an error is never a channel to skip."""
    return isinstance(exc, sqlite3.DatabaseError) and any(c in str(exc) for c in CORRUPTION)


def damaged_among(paths) -> list[str]:
    """Of several index files, those a fresh read finds damaged (``PRAGMA quick_check(1)``, then
    the stored arrays' lengths): which index an error met while using them all together came
    from (an error carries no file; the first index was blamed, and rebuilding it fixed nothing)."""
    from pathlib import Path

    from .connect import connect

    out = []
    for p in paths:
        try:
            conn = connect(Path(p), True)
        except (sqlite3.DatabaseError, OSError):
            out.append(str(p))
            continue
        try:
            row = conn.execute("PRAGMA quick_check(1)").fetchone()
            if row is None or row[0] != "ok":
                out.append(str(p))
            else:
                check_blobs(conn)
        except sqlite3.DatabaseError:
            out.append(str(p))
        finally:
            conn.close()
    return out


def ensure_error(exc: BaseException, path=None) -> KgsearchError | None:
    """Map sqlite errors to a user-facing :class:`BadIndex` (exit 4): disk full, read-only or
    I/O errors, and a damaged file (with the command that rebuilds it, naming it with ``--db``).
    None for others. ``path``: the index file, or a list of them (several indexes searched as
    one: a damaged file is found among them by :func:`damaged_among`)."""
    paths = [str(p) for p in path] if isinstance(path, (list, tuple)) else None
    if paths is not None:
        path = paths[0] if len(paths) == 1 else None
    msg = str(exc)
    if is_corruption(exc):
        if paths is not None and len(paths) > 1:
            bad = damaged_among(paths) or paths
            if len(bad) > 1:
                return BadIndex(f"one of the indexes {', '.join(bad)} is damaged ({msg}); `kgsearch doctor --db PATH` "
                                f"says which, `kgsearch doctor --rebuild --db PATH` rebuilds it from its sources")
            path = bad[0]
        if path is None:
            return BadIndex(f"the index file is damaged ({msg}); run `kgsearch doctor --rebuild` to rebuild it "
                            f"from its sources (`kgsearch doctor` says what is wrong)")
        db = shlex.quote(str(path))
        return BadIndex(f"{path}: the index file is damaged ({msg}); run `kgsearch doctor --rebuild --db {db}` to "
                        f"rebuild it from its sources (`kgsearch doctor --db {db}` says what is wrong)")
    if paths is not None and path is None:
        path = ", ".join(paths)
    where = f"{path}: " if path is not None else ""
    if isinstance(exc, sqlite3.OperationalError):
        if "readonly" in msg or "read-only" in msg:
            return BadIndex(f"{where}the index is read-only ({msg}); this command writes it: make the file and its "
                            f"folder writable, or pass --db with a writable path; nothing was changed",
                            agent=f"{where}the index is read-only ({msg}): nothing was stored; the read-only tools "
                                  f"work. Ask the user to make the file and its folder writable")
        if "full" in msg:
            return BadIndex(f"{where}cannot write the index ({msg}); free some space or pass --db elsewhere; "
                            f"the previous index is intact")
        if "disk I/O" in msg:
            return BadIndex(f"{where}cannot read or write the index ({msg}): the disk may be full or gone (a card "
                            f"removed?); free some space or check it, or pass --db elsewhere; the previous index "
                            f"is intact")
    return None
