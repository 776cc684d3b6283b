"""Planning a run: the roots, the files under them, and which of those changed since the last run.

A file is re-read when its size or mtime differs from the ``files`` row *and* its content hash
does too (a touched but unchanged file only gets its new size/mtime recorded); a file that is
in the index under a root but no longer on disk is deleted.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataError, UsageError
from ..ingest.walk import Found, WalkReport, found_file, walk
from .load import hash_bytes
from .state import RunState

__all__ = ["resolve_roots", "plan"]


def resolve_roots(ix, paths: list[str]) -> list[Path]:
    """The roots of this run: the given paths, or every root already in the index (cron)."""
    if not paths:
        roots = ix.meta_json("roots", [])
        if not roots:
            raise UsageError("nothing to index: give a PATH (folder or file), e.g. `kgsearch index ~/notes`")
        paths = roots
    out = []
    for p in paths:
        rp = Path(p).expanduser()
        if not rp.exists():
            raise DataError("no such file or folder; check the path", str(rp))
        out.append(rp.resolve())
    return out


def _inside(child: Path, root: Path) -> bool:
    try:
        child.relative_to(root)
        return True
    except ValueError:
        return False


def plan(st: RunState, roots: list[Path]) -> tuple[list[Found], list[tuple[int, str]]]:
    """Files to load (changed) and files to drop (deleted), updating stats of touched files."""
    opts, report, conn = st.opts, st.report, st.conn
    wr = WalkReport()
    found: list[Found] = []
    for root in roots:
        if root.is_dir():
            found.extend(walk(root, opts.fmt, opts.max_file_bytes, wr))
        else:
            f = found_file(root, opts.fmt)
            if f is None:
                raise DataError("not a text file kgsearch can read; pass --format NAME to force a loader",
                                str(root))
            found.append(f)
    report.warnings.extend(wr.problems)
    for big in wr.skipped_large:
        report.warnings.append(f"{big}: larger than --max-file-size; skipped")
    for root in roots:
        if root.is_dir() and not any(_inside(f.path, root) for f in found):
            report.warnings.append(f"{root}: no files kgsearch can index here")
    report.files_seen = len(found)

    known: dict[str, tuple] = {}
    for root in roots:
        prefix = str(root)
        rows = conn.execute(
            "SELECT id, path, size, mtime_ns, hash, loader FROM files WHERE path = ? OR "
            "(path >= ? AND path < ?)", (prefix, prefix + os.sep, prefix + chr(ord(os.sep) + 1)))
        for row in rows:
            known[row[1]] = row
    present = {str(f.path) for f in found}
    deleted = [(row[0], p) for p, row in known.items() if p not in present]

    to_load: list[Found] = []
    for f in found:
        row = known.get(str(f.path))
        if row is not None and not opts.full and row[5] == f.loader \
                and row[2] == f.size and row[3] == f.mtime_ns:
            report.files_unchanged += 1
            continue
        if row is not None and not opts.full and row[5] == f.loader:
            try:
                digest = hash_bytes(f.path.read_bytes())
            except OSError:
                digest = None
            if digest == row[4]:
                conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE id=?", (f.size, f.mtime_ns, row[0]))
                report.files_unchanged += 1
                continue
        to_load.append(f)
    return to_load, deleted
