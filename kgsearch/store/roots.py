"""The roots of an index: the folders and files ``kgsearch index PATH`` was given, in the order
they were first given, each with a label that keeps its keys apart from the other roots'.

Table ``roots(path, label, position, added_at, last_indexed, last_files)`` (migration
``0011_roots``); meta ``roots`` mirrors the paths in order (a JSON list) for older readers.

Keys unique per root: the first root registered (position 0) has the label ``''`` and its nodes
keep the keys their loader gives (``md:notes/foo``, ``py:pkg.mod.f``), so every index made with
one root keeps its keys. Every later root gets a label of its own (its folder or file name,
``-2``, ``-3``... when taken), written into the keys of its files' nodes:
``md://work/Home``, ``py://lib/pkg.mod.f`` (:mod:`kgsearch.indexer.keys`). A relative path
never starts with ``/``, so a qualified key never equals a plain one. A label never changes
while the root is registered, so keys stay stable; removing the first root does not rename the
others. ``kg:`` keys are node ids shared across files by design and are never qualified.
"""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Root", "list_roots", "find_root", "register_roots", "remove_root", "mark_indexed", "new_label",
           "root_health", "sync_meta", "file_counts"]


@dataclass(frozen=True)
class Root:
    path: str                 # absolute, resolved when it was registered
    label: str                # '' for the first root: its keys are not qualified
    position: int
    added_at: float | None = None
    last_indexed: float | None = None
    last_files: int | None = None


_COLS = "path, label, position, added_at, last_indexed, last_files"


def check_paths(paths, example: str = "kgsearch index ~/notes") -> None:
    """An empty PATH is a usage error: ``Path("")`` is the current folder, so ``kgsearch index
    "$NOTES"`` with the variable unset would index (or watch, or remove) wherever it ran."""
    from ..errors import UsageError

    if any(str(p) == "" for p in paths):
        raise UsageError(f"an empty PATH ('') names no folder or file (an unset shell variable?); give one, "
                         f"e.g. `{example}`, or . for the current folder")


def list_roots(conn: sqlite3.Connection) -> list[Root]:
    return [Root(*r) for r in conn.execute(f"SELECT {_COLS} FROM roots ORDER BY position")]


def find_root(conn: sqlite3.Connection, ref: str) -> Root | None:
    """A registered root by its path (as given, expanded, or resolved) or its label."""
    cands = [ref, os.path.expanduser(ref)]
    try:
        cands.append(str(Path(ref).expanduser().resolve()))
    except (OSError, RuntimeError):
        pass
    cands.append(os.path.abspath(os.path.expanduser(ref)))
    for c in cands:
        row = conn.execute(f"SELECT {_COLS} FROM roots WHERE path = ?", (c.rstrip(os.sep) or os.sep,)).fetchone()
        if row is not None:
            return Root(*row)
    row = conn.execute(f"SELECT {_COLS} FROM roots WHERE label = ? AND label != ''", (ref,)).fetchone()
    return Root(*row) if row is not None else None


def new_label(path: str, taken: set[str]) -> str:
    """A label for a root that is not the first: its base name, made unique among ``taken``.

    >>> new_label("/home/me/notes", {""}), new_label("/x/notes", {"", "notes"}), new_label("/", {""})
    ('notes', 'notes-2', 'root')
    """
    base = (os.path.basename(path.rstrip(os.sep)) or "root").replace("/", "_")
    label, n = base, 1
    while label in taken:
        n += 1
        label = f"{base}-{n}"
    return label


def register_roots(conn: sqlite3.Connection, paths: list[str]) -> list[Root]:
    """Add the paths that are not registered yet (in the order given) and return the entries
    of ``paths``, in that order. The first root of an empty registry gets the label ''."""
    existing = {r.path: r for r in list_roots(conn)}
    taken = {r.label for r in existing.values()}
    pos = max((r.position for r in existing.values()), default=-1) + 1
    out = []
    for p in paths:
        r = existing.get(p)
        if r is None:
            label = "" if not existing else new_label(p, taken)
            r = Root(p, label, pos, time.time())
            conn.execute(f"INSERT INTO roots({_COLS}) VALUES (?,?,?,?,?,?)",
                         (r.path, r.label, r.position, r.added_at, None, None))
            existing[p] = r
            taken.add(label)
            pos += 1
        out.append(r)
    sync_meta(conn)
    return out


def remove_root(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("DELETE FROM roots WHERE path = ?", (path,))
    sync_meta(conn)


def mark_indexed(conn: sqlite3.Connection, path: str, when: float, files: int) -> None:
    conn.execute("UPDATE roots SET last_indexed = ?, last_files = ? WHERE path = ?", (when, files, path))


def sync_meta(conn: sqlite3.Connection) -> None:
    paths = [r.path for r in list_roots(conn)]
    conn.execute("INSERT INTO meta(key, value) VALUES ('roots', ?) ON CONFLICT(key) DO UPDATE SET "
                 "value = excluded.value", (json.dumps(paths),))


def file_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many files of the index each root holds, each file counted once, under the root that
    owns it (as `kgsearch roots remove` takes them): :func:`held_by`."""
    return _holdings(conn)[0]


def held_by(conn: sqlite3.Connection) -> dict[str, str]:
    """The roots that are files another root holds: file root -> the folder root registered
    before it that holds its file (the file is that root's, ``plan.py``; the file root counts 0)."""
    return _holdings(conn)[1]


def _holdings(conn) -> tuple[dict[str, int], dict[str, str]]:
    """A root that is a file holds its one file, whose row names a folder as its root: the
    file's own folder, or the folder root that owns it. A folder root registered before the
    file root owns the file; otherwise the file root does, and the folder root named in the row
    (a file root in a folder root given later, `index ~/n/todo.md ~/n`) counts it no more (it
    was counted under both: 4 files in `roots` for an index of 3)."""
    counts = dict(conn.execute("SELECT root, count(*) FROM files GROUP BY root"))
    roots = {r.path: r for r in list_roots(conn)}
    held: dict[str, str] = {}
    for r in roots.values():
        if r.path in counts:
            continue
        row = conn.execute("SELECT root FROM files WHERE path = ?", (r.path,)).fetchone()
        if row is None:
            continue
        owner = roots.get(row[0])
        if owner is not None and owner.path != r.path and owner.position < r.position:
            counts[r.path], held[r.path] = 0, owner.path
            continue
        counts[r.path] = 1
        if owner is not None and counts.get(owner.path):
            counts[owner.path] -= 1
    return counts, held


def root_health(conn: sqlite3.Connection) -> list[dict]:
    """Every root with what a look at the disk says now: ``status`` is ``ok``, ``missing`` or
    ``unreadable`` (exists but cannot be listed or read); ``files`` is how many of its files
    the index holds, each file counted once, under the root that owns it; ``held_by`` names
    the folder root that owns a file root's file (registered before it), else None."""
    counts, held = _holdings(conn)
    out = []
    for r in list_roots(conn):
        out.append({"path": r.path, "label": r.label, "position": r.position, "status": probe(r.path),
                    "files": counts.get(r.path, 0), "held_by": held.get(r.path),
                    "last_indexed": r.last_indexed,
                    "last_indexed_iso": (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.last_indexed))
                                         if r.last_indexed else None),
                    "added_at": r.added_at})
    return out


def probe(path: str) -> str:
    """``ok``, ``missing`` or ``unreadable`` for a root path (a folder is listed, a file opened)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return "unreadable"                  # a named pipe or device: opening it may block forever
    try:
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(path) as it:
                next(it, None)
        else:
            with open(path, "rb") as fh:
                fh.read(1)
    except OSError:
        return "unreadable"
    return "ok"
