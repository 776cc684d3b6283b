"""Planning a run: the roots, the files under them, and which of those changed since the last run.

A file is re-read when its size or mtime differs from the ``files`` row *and* its content hash
does too (a touched but unchanged file only gets its new size/mtime recorded), or when its
root's files were read by an older version of its loader (``LOADER_VERSIONS``: an upgrade
whose loader makes other nodes of the same file); a file that is
in the index under a root but no longer on disk is deleted -- unless nobody can tell: the
files of a root that is missing or cannot be listed, and of a folder that cannot be listed,
are kept as they are (the run reports the root and exits non-zero; an unreadable subfolder is
one warning). A file reached from two roots belongs to the first registered one.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataError, UsageError
from ..ingest.loaders import LOADER_VERSIONS, loader_for
from ..ingest.walk import Found, WalkReport, found_file, inside, shown_path, special_file, walk
from ..lines import quoted
from ..store.roots import Root, check_paths, list_roots, probe, register_roots
from .load import hash_bytes
from .state import RunState

__all__ = ["resolve_roots", "plan", "loader_versions", "record_loader_versions"]

_VERSIONS = "loader_versions"         # meta: {root path: {loader: version its files were read with}}


def _abs(p: str) -> str:
    return str(Path(p).expanduser().resolve())


def resolve_roots(ix, paths: list[str]) -> list[Root]:
    """The roots of this run, registered (new ones get their label; the caller's transaction
    decides whether they stay): the given paths, or every registered root (cron). A path that
    is neither registered nor on disk is an error (exit 3, nothing changes); a registered root
    that is missing is planned, reported and kept (:func:`plan`)."""
    conn = ix.conn
    check_paths(paths)
    if not paths:
        roots = list_roots(conn)
        if not roots:
            raise UsageError("nothing to index: give a PATH (folder or file), e.g. `kgsearch index ~/notes`")
        return roots
    known = {r.path for r in list_roots(conn)}
    out = []
    for p in paths:
        rp = Path(p).expanduser()
        full = _abs(p)
        try:
            full.encode("utf-8")
        except UnicodeEncodeError:
            raise DataError("the path is not valid UTF-8 (the index stores paths as text); rename it",
                            shown_path(full)) from None
        if full not in known and not rp.exists():
            raise DataError("no such file or folder; check the path", str(rp))
        if full not in known:
            special = special_file(full)
            if special:
                raise DataError(f"not a regular file ({special}); save it to a file and index that", str(rp))
        out.append(full)
    return register_roots(conn, list(dict.fromkeys(out)))


def _walk_root(st: RunState, root: Root, wr: WalkReport) -> list[Found] | None:
    """The files under one root (None: the root cannot be read; its files are kept)."""
    opts, report = st.opts, st.report
    path = Path(root.path)
    status = probe(root.path)
    if status != "ok":
        (report.roots_missing if status == "missing" else report.roots_unreadable).append(root.path)
        return None
    if path.is_dir():
        found = list(walk(path, opts.fmt, opts.max_file_bytes, wr))
        if not found and root.path not in wr.unlisted:
            report.warnings.append(f"{root.path}: no files kgsearch can index here")
        return found
    if loader_for(path, opts.fmt) is None:
        if path.suffix:
            report.warnings.append(f"{path}: kgsearch has no loader for {quoted(path.suffix)} files; read as plain text "
                                   f"(pass --format kg|markdown|python|text to choose one)")
    f = found_file(path, opts.fmt)
    if f is None:
        raise DataError("not a text file kgsearch can read; pass --format NAME to force a loader", str(path))
    return [f]


def loader_versions(ix) -> dict[str, dict[str, int]]:
    """Per root, the loader versions its files were read with (none kept: 1 for every loader)."""
    got = ix.meta_json(_VERSIONS)
    return got if isinstance(got, dict) else {}


def record_loader_versions(ix, walked: list[str]) -> None:
    """The roots walked this run now hold what today's loaders read (every changed file of theirs
    was re-read); roots no longer registered are forgotten."""
    got = loader_versions(ix)
    registered = {r.path for r in list_roots(ix.conn)}
    new = {root: v for root, v in got.items() if root in registered}
    new.update({root: dict(LOADER_VERSIONS) for root in walked})
    if new != got:
        ix.set_meta_json(_VERSIONS, new)


def _unnamed_triples(st: RunState, roots: list[Root], found: list[Found], to_load: list[Found]) -> None:
    """A ``.txt`` read as triples (its lines are: :func:`kgsearch.ingest.walk.sniff_loader`) is
    said when it is read. A triples file indexed as a root of its own (`kgsearch index wn18rr/train.tsv`) without the
    names file beside it: its entities are named by their ids ("00260881"), so say which file
    names them, unless this run or the index holds it; said when the triples file is read (a
    cron run that finds it unchanged says nothing again)."""
    from ..ingest.triples import is_side_file, names_files

    loading = {str(f.path) for f in found}
    reading = {str(f.path): f.loader for f in to_load}
    for f in to_load:
        if f.loader == "triples" and not st.opts.fmt and f.path.suffix.lower() == ".txt" and not is_side_file(f.path):
            st.report.warnings.append(f"{f.path}: read as KG triples, not prose: its lines are "
                                      f"head<TAB>relation<TAB>tail (--format text reads it as prose)")
    for root in roots:
        path = Path(root.path)
        if not path.is_file() or str(path) not in reading or is_side_file(path):
            continue
        if reading[str(path)] != "triples":
            continue
        for names in names_files(path.parent):
            if str(names) in loading or st.conn.execute("SELECT 1 FROM files WHERE path = ?", (str(names),)).fetchone():
                continue
            st.report.warnings.append(f"{path}: its entities are named by {names}, which is not indexed: index the "
                                      f"folder ({path.parent}) or name that file too")
            break


def plan(st: RunState, roots: list[Root]) -> tuple[list[Found], list[tuple[int, str]]]:
    """Files to load (changed) and files to drop (deleted), updating stats of touched files."""
    opts, report, conn = st.opts, st.report, st.conn
    wr = WalkReport()
    found: list[Found] = []
    seen: set[str] = set()
    kept_roots: list[str] = []                  # missing or unreadable: their files stay
    registered = [r for r in list_roots(conn) if os.path.isdir(r.path)]
    for root in roots:
        files = _walk_root(st, root, wr)
        if files is None:
            kept_roots.append(root.path)
            continue
        # a file inside an earlier registered root (nested roots) belongs to that one, whichever
        # roots this run walks, so its keys do not depend on the command line: the earlier root
        # may hold this one, or lie inside it (registered first: `index ~/notes/work`, then
        # `index ~/notes` must not take work's files over, nor give them back on the next run)
        owners = [r for r in registered if r.position < root.position
                  and (inside(root.path, r.path) or inside(r.path, root.path))]
        for f in files:
            if str(f.path) in seen:             # reached from an earlier root too: that one owns it
                continue
            seen.add(str(f.path))
            owner = next((r for r in owners if inside(str(f.path), r.path)), root)
            f.origin, f.label = owner.path, owner.label
            if owner is not root:
                f.root = Path(owner.path)
                f.rel = f.path.relative_to(f.root).as_posix()
            found.append(f)
        st.walked_roots.append(root.path)
    report.warnings.extend(wr.problems)
    report.warnings.extend(wr.skipped_large)
    report.skipped_generated.extend(wr.generated)
    for k, v in wr.counts().items():
        report.skipped[k] = report.skipped.get(k, 0) + v
    report.files_seen = len(found)

    known: dict[str, tuple] = {}
    for root in roots:
        prefix = root.path
        rows = conn.execute(
            "SELECT id, path, size, mtime_ns, hash, loader, root FROM files WHERE root = ? OR path = ? OR "
            "(path >= ? AND path < ?)", (prefix, prefix, prefix + os.sep, prefix + chr(ord(os.sep) + 1)))
        for row in rows:
            known[row[1]] = row
    present = {str(f.path) for f in found}
    keep = kept_roots + wr.unlisted
    deleted = [(row[0], p) for p, row in known.items()
               if p not in present and not any(inside(p, k) for k in keep)
               and not (row[6] in kept_roots)]

    to_load: list[Found] = []
    versions = loader_versions(st.ix)
    for f in found:
        row = known.get(str(f.path))
        # (files.root is the root, or for a root that is a file its folder: the row the writer wrote)
        same = row is not None and not opts.full and row[5] == f.loader and row[6] in (f.origin, str(f.root))
        if same and versions.get(f.origin, {}).get(f.loader, 1) != LOADER_VERSIONS.get(f.loader, 1):
            report.reread[f.loader] = report.reread.get(f.loader, 0) + 1     # read by an older loader
            to_load.append(f)
            continue
        if same and row[2] == f.size and row[3] == f.mtime_ns:
            report.files_unchanged += 1
            continue
        if same:
            try:
                digest = hash_bytes(f.path.read_bytes())
            except OSError:
                digest = None
            if digest == row[4]:
                conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE id=?", (f.size, f.mtime_ns, row[0]))
                report.files_unchanged += 1
                continue
        to_load.append(f)
    _unnamed_triples(st, roots, found, to_load)
    return to_load, deleted
