"""What the watcher looks at: the folders under the roots (the indexer's folder rules), which
file names can change the index, and which roots inotify cannot be trusted with.

The folders are those the index walk enters (``kgsearch.ingest.walk``): hidden folders, VCS
and tool folders, virtualenvs and folders a ``.kgsearchignore`` excludes are neither watched nor
polled; symlinks are not followed (a link inside a root leads to a folder the walk reaches by
its real path, or out of the root). A file name matters when a loader takes it or it is a
``.kgsearchignore`` (it changes what is indexed); the index file and its companions (``-wal``,
``-shm``, ``.lock``, ``doctor --rebuild``'s ``.NAME.rebuild`` and ``NAME.bak``) never do, so an
index kept inside a watched folder does not wake the watcher it is written by.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..ingest.loaders import loader_for
from ..ingest.walk import IGNORE_FILE, SKIP_DIRS, IgnoreRules

__all__ = ["Root", "WatchSpec", "folders", "relevant_name", "remote_fs", "fs_type", "REMOTE_FS"]

# File systems where inotify does not see every change: changes made by another machine (NFS,
# SMB, 9p, sshfs) or, on Android, by another app through the shared-storage daemon (fuse,
# sdcardfs: ~/storage/shared). Roots on them are polled.
REMOTE_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse", "sdcardfs", "ncpfs", "afs", "ceph",
             "glusterfs", "vboxsf", "virtiofs", "davfs", "lustre")


@dataclass
class Root:
    """One root: a folder watched with everything under it, or a file (its folder watched for
    that one name)."""

    path: str                   # resolved
    is_dir: bool

    @property
    def folder(self) -> str:
        return self.path if self.is_dir else os.path.dirname(self.path)


@dataclass
class WatchSpec:
    """What to watch for a set of roots, and what to ignore."""

    roots: list[Root]
    ignore: set[str] = field(default_factory=set)       # absolute paths of the index and its companions
    fmt: str | None = None
    _names: dict = field(default_factory=dict, repr=False)  # file name -> relevant_name() (a bounded cache)

    def relevant(self, folder: str, name: str, is_dir: bool) -> bool:
        """Can ``name`` appearing, changing or going away in ``folder`` change the index?"""
        return self.in_folder(folder)(name, is_dir)

    def in_folder(self, folder: str):
        """:meth:`relevant` for the entries of one folder, with what does not depend on the name
        worked out once (the poller asks this for every entry of every folder on every look)."""
        ignored = {os.path.basename(p) for p in self.ignore if os.path.dirname(p) == folder}
        named = {os.path.basename(r.path) for r in self.roots if not r.is_dir and folder == r.folder}
        inside = any(r.is_dir and _inside(folder, r.path) for r in self.roots)
        names = self._names

        def test(name: str, is_dir: bool) -> bool:
            if name in ignored:
                return False
            if name in named:
                return True
            if not inside:
                return False
            if is_dir:
                return not skip_folder_name(name)
            ok = names.get(name)
            if ok is None:
                if len(names) > 100_000:
                    names.clear()
                ok = names[name] = relevant_name(name, self.fmt)
            return ok

        return test


def index_companions(db: str) -> set[str]:
    """The index file and every file kgsearch keeps beside it."""
    d, base = os.path.split(os.path.abspath(db))
    names = [base, base + "-wal", base + "-shm", base + "-journal", base + ".lock", base + ".watch.lock", base + ".bak",
             f".{base}.rebuild", f".{base}.rebuild-wal", f".{base}.rebuild-shm", f".{base}.rebuild-journal"]
    return {os.path.join(d, n) for n in names}


def _inside(child: str, folder: str) -> bool:
    return child == folder or child.startswith(folder.rstrip(os.sep) + os.sep)


def skip_folder_name(name: str) -> bool:
    """Folders the index walk skips unless an ignore file's ``!`` pattern asks for them
    (:meth:`IgnoreRules.reincludes <kgsearch.ingest.walk.IgnoreRules.reincludes>`)."""
    return name in SKIP_DIRS or name.startswith(".")


def relevant_name(name: str, fmt: str | None = None) -> bool:
    """A file of this name can be indexed (a loader takes it) or changes what is indexed.

    >>> [relevant_name(n) for n in ("a.md", ".a.md.swp", "a.md~", "4913", "README", ".kgsearchignore")]
    [True, False, False, False, True, True]
    """
    return name == IGNORE_FILE or loader_for(Path(name), fmt) is not None


def folders(root: Root, limit: int | None = None) -> list[str]:
    """The folders to watch for ``root``, parents first: its folder and (a folder root) every
    folder the index walk enters below it. Unlistable folders are left out (the walk reports
    them). ``limit``: stop after that many."""
    if not root.is_dir:
        return [root.folder] if os.path.isdir(root.folder) else []
    out: list[str] = []
    stack: list[tuple[str, str, IgnoreRules]] = [(root.path, "", IgnoreRules())]
    while stack:
        path, rel, rules = stack.pop()
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        out.append(path)
        if limit is not None and len(out) >= limit:
            break
        if any(e.name == IGNORE_FILE for e in entries):
            rules = rules.copy()
            rules.add_file(Path(path) / IGNORE_FILE, rel)
        for e in entries:
            try:
                if not e.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            child_rel = f"{rel}/{e.name}" if rel else e.name
            if ((skip_folder_name(e.name) or _is_venv(e.path)) and not rules.reincludes(e.name, child_rel)) \
                    or rules.ignored(child_rel, True):
                continue
            stack.append((e.path, child_rel, rules))
    return out


def _is_venv(path: str) -> bool:
    try:
        return os.path.exists(os.path.join(path, "pyvenv.cfg"))
    except OSError:
        return False


def fs_type(path: str, mounts: str = "/proc/self/mounts") -> str | None:
    """The file system type of the mount holding ``path`` (None when unknown: no /proc)."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        if _inside(path, point) and len(point) >= len(best):
            best, kind = point, parts[2]
    return kind


def remote_fs(kind: str | None) -> bool:
    """inotify misses changes made elsewhere on this kind of file system.

    >>> remote_fs("ext4"), remote_fs("fuse.sshfs"), remote_fs("sdcardfs"), remote_fs("nfs4"), remote_fs(None)
    (False, True, True, True, False)
    """
    if not kind:
        return False
    base = kind.split(".", 1)[0]
    return kind in REMOTE_FS or base in REMOTE_FS
