"""``kgsearch doctor --rebuild``: a new index from the sources, swapped in atomically.

1. Take the writer lock of the index (no indexer runs meanwhile; readers go on).
2. Read the roots (in order, with their labels, so every key stays what it was) and the
   settings from the old index; when it is too damaged to say, the caller names the roots.
3. Index them from scratch into ``.<name>.rebuild`` next to the index (same folder: same
   file system, so the swap is a rename). A root that is missing or unreadable stops the
   rebuild (its files would be lost): bring it back or ``kgsearch roots remove`` it first.
4. Fold the new file's WAL in, close it, ``quick_check`` it.
5. Swap: the old file gets a second name ``<name>.bak`` (a hard link; a rename where links are
   not possible), its ``-wal``/``-shm`` move along with it (a WAL left behind would be replayed
   into the new file), and ``os.replace`` puts the new file in place: a reader opening the
   index sees the old file or the new one, never neither; readers that have it open keep
   their snapshot of the old one. Once the new index opens and passes ``quick_check``, the
   ``.bak`` is removed; if that check fails, the old file is put back.

A file at ``db`` that is not a kgsearch index is never lost: a SQLite file of other tables is
refused before anything is written (not even the lock file: exit 4, one line), and a file that
is not SQLite (a damaged header, or something else saved there) is rebuilt over but kept as
``<name>.bak`` (``.bak.2``... when that name is taken), and the report says so.
"""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from ..errors import BadIndex, DataError
from ..store.db import Index, foreign_kind
from ..store.lock import IndexLock
from ..store.roots import Root, list_roots, sync_meta
from .state import IndexOptions, IndexReport

__all__ = ["rebuild_index"]

SIDECARS = ("-wal", "-shm")


def _remove(path: str) -> None:
    for suffix in ("",) + SIDECARS + (".lock",):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def _old_state(db: Path) -> tuple[list[Root], dict, int]:
    with Index.open(db, readonly=True) as ix:
        return list_roots(ix.conn), dict(ix.meta_json("settings") or {}), ix.generation


def rebuild_index(db, paths: list[str] | None = None, opts: IndexOptions | None = None) -> IndexReport:
    """Rebuild the index at ``db`` from its roots (or ``paths``) and swap it in. Returns the
    new index's run report."""
    from .run import check_options, index_roots, locked_run

    db = Path(os.path.realpath(os.path.expanduser(str(db))))   # through a symlink: the file it names
    opts = opts or IndexOptions()
    from ..store.roots import check_paths

    check_paths(paths or [], "kgsearch doctor --rebuild ~/notes")
    kind = foreign_kind(db) if db.is_file() else None
    if kind == "sqlite":
        raise _refusal(db)                       # (before the lock: no .lock file beside it either)
    if kind == "unknown" and not paths:
        try:
            _old_state(db)
        except (sqlite3.DatabaseError, BadIndex) as exc:
            raise BadIndex(f"{db}: cannot read its roots ({exc}); name them: "
                           f"`kgsearch doctor --rebuild PATH...`") from None
    with IndexLock(db):
        roots: list[Root] = []
        settings: dict = {}
        generation = 0
        keep_old = False
        if db.exists():
            try:
                roots, settings, generation = _old_state(db)
            except (sqlite3.DatabaseError, BadIndex) as exc:
                kind = foreign_kind(db)
                if kind == "sqlite":
                    raise _refusal(db) from None
                if not paths:
                    raise BadIndex(f"{db}: cannot read its roots ({exc}); name them: "
                                   f"`kgsearch doctor --rebuild PATH...`") from None
                keep_old = kind == "unknown"     # maybe not an index at all: never deleted
        if paths:
            from ..store.roots import new_label

            given = list(dict.fromkeys(str(Path(p).expanduser().resolve()) for p in paths))   # (a path given twice: once)
            old = {r.path: r for r in roots}
            taken = {r.label for r in roots if r.path in given}
            fresh = []
            for i, p in enumerate(given):
                r = old.get(p)
                if r is None:
                    label = "" if i == 0 and "" not in taken else new_label(p, taken)
                    taken.add(label)
                    r = Root(p, label, i)
                fresh.append(Root(r.path, r.label, i))
            roots = fresh
        if not roots:
            raise BadIndex(f"{db}: no roots to rebuild from; give them: `kgsearch doctor --rebuild PATH...`")
        opts.settings = {**settings, **opts.settings}
        opts.full = True
        check_options(opts)
        tmp = str(db.parent / f".{db.name}.rebuild")
        _remove(tmp)

        def body(st) -> None:
            # generations go on from the old index's (caches keyed by generation never mix the two)
            st.ix.set_meta("generation", generation)
            st.changes.generation = generation + 1
            for r in roots:
                st.conn.execute("INSERT INTO roots(path, label, position, added_at) VALUES (?,?,?,?)",
                                (r.path, r.label, r.position, r.added_at or time.time()))
            sync_meta(st.conn)
            index_roots(st, list_roots(st.conn))
            problems = st.report.roots_missing + st.report.roots_unreadable
            if problems:
                raise DataError(f"root {problems[0]} is missing or cannot be listed: a rebuild would lose its "
                                f"files; bring it back, or `kgsearch roots remove {problems[0]}` first "
                                f"(the index was not changed)")

        try:
            report = locked_run(tmp, opts, body)
            with Index.open(tmp) as ix:          # fold the WAL in: the new file stands alone
                ix.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                if [r[0] for r in ix.conn.execute("PRAGMA quick_check")] != ["ok"]:
                    raise BadIndex(f"the rebuilt index {tmp} fails its check; the index was not changed")
            kept = _swap(db, tmp, keep_old)
        finally:
            _remove(tmp)                        # what is left of the new file's names (its lock)
    report.db = str(db)
    if kept:
        report.warnings.append(f"{db}: the file there was not readable as a kgsearch index; kept as {kept}")
    return report


def _refusal(db: Path) -> BadIndex:
    return BadIndex(f"{db} is a SQLite file but not a kgsearch index; doctor --rebuild does not replace it: "
                    f"pass another --db, or move the file away first")


def _free_bak(path: str) -> str:
    """``<path>.bak``, or ``.bak.2``, ``.bak.3``... : a name no file (nor its sidecars) has."""
    n = 1
    while True:
        bak = f"{path}.bak" + (f".{n}" if n > 1 else "")
        if not any(os.path.lexists(bak + s) for s in ("",) + SIDECARS):
            return bak
        n += 1


def _swap(db: Path, tmp: str, keep_old: bool = False) -> str | None:
    """Put ``tmp`` in ``db``'s place; the old file's second name when it is kept (``keep_old``)."""
    path, bak = str(db), _free_bak(str(db))
    had_old = db.exists()
    if had_old:
        try:
            os.link(path, bak)                   # the old file, under a second name
            linked = True
        except OSError:
            linked = False
        for suffix in SIDECARS:
            if os.path.exists(path + suffix):
                os.replace(path + suffix, bak + suffix)
        if not linked:
            os.replace(path, bak)
    for suffix in SIDECARS:
        try:
            os.remove(tmp + suffix)
        except FileNotFoundError:
            pass
    os.replace(tmp, path)
    try:
        with Index.open(path, readonly=True) as ix:
            ok = [r[0] for r in ix.conn.execute("PRAGMA quick_check")] == ["ok"]
    except (sqlite3.DatabaseError, BadIndex):
        ok = False
    if not ok and had_old:
        os.replace(bak, path)
        raise BadIndex(f"the new index at {path} did not open after the swap; the old one is back")
    if had_old and keep_old:
        return bak
    if had_old:
        for suffix in ("",) + SIDECARS:
            try:
                os.remove(bak + suffix)
            except FileNotFoundError:
                pass
    return None
