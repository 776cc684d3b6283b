"""Find the files to index under a root: ignore rules, ``.kgsearchignore``, symlinks, size caps.

Rules, in order:

* Directories never entered: VCS folders, virtualenvs (any folder with ``pyvenv.cfg``),
  ``node_modules``, ``__pycache__``, build/dist output, tool caches, Obsidian's ``.obsidian``
  and ``.trash``, and every hidden folder (name starting with ``.``).
* ``.kgsearchignore`` files (gitignore syntax: ``*``, ``**``, ``?``, ``[..]``, leading ``/``
  anchors, trailing ``/`` for folders only, ``!`` re-includes) apply to their folder and below.
* Symlinks are followed only when their target stays inside the root; a folder reached twice
  (a loop) is entered once.
* Files larger than ``max_bytes``, binary files (a NUL byte in the first 8 KB) and files with
  no loader are skipped; skipped files are counted, and large/unreadable ones reported.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import loader_for

SKIP_DIRS = {
    ".git", ".hg", ".svn", ".bzr", "_darcs", "CVS",
    "node_modules", "__pycache__", "venv", ".venv", "site-packages",
    "build", "dist", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".hypothesis", ".cache", ".gradle", ".idea", ".vscode",
    ".obsidian", ".trash", ".Trash", "__MACOSX",
}
IGNORE_FILE = ".kgsearchignore"
SNIFF_BYTES = 8192


@dataclass
class Found:
    path: Path        # absolute, resolved
    rel: str          # relative to the root, with '/' separators
    root: Path
    loader: str
    size: int
    mtime_ns: int


@dataclass
class WalkReport:
    skipped_large: list[str] = field(default_factory=list)
    skipped_binary: int = 0
    skipped_other: int = 0
    problems: list[str] = field(default_factory=list)   # unreadable folders, symlink loops, ...


class _Pattern:
    __slots__ = ("regex", "negate", "dir_only")

    def __init__(self, line: str, base: str):
        self.negate = line.startswith("!")
        if self.negate:
            line = line[1:]
        self.dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        rx = _glob_to_regex(line)
        prefix = re.escape(base + "/") if base else ""
        if anchored:
            self.regex = re.compile("^" + prefix + rx + "$")
        else:
            self.regex = re.compile("^" + prefix + "(?:.*/)?" + rx + "$")


def _glob_to_regex(glob: str) -> str:
    out, i, n = [], 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob[i:i + 2] == "**":
                i += 2
                if i < n and glob[i] == "/":
                    i += 1
                    out.append("(?:.*/)?")
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = glob.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1:j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


class IgnoreRules:
    """gitignore-style rules collected from ``.kgsearchignore`` files; last match wins."""

    def __init__(self) -> None:
        self.patterns: list[_Pattern] = []

    def add_file(self, path: Path, base: str) -> None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("\\"):
                line = line[1:]
            self.patterns.append(_Pattern(line, base))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        result = False
        for p in self.patterns:
            if p.dir_only and not is_dir:
                continue
            if p.regex.match(rel):
                result = not p.negate
        return result

    def copy(self) -> "IgnoreRules":
        c = IgnoreRules()
        c.patterns = list(self.patterns)
        return c


def is_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return b"\0" in fh.read(SNIFF_BYTES)
    except OSError:
        return False


def _inside(child: Path, root: Path) -> bool:
    try:
        child.relative_to(root)
        return True
    except ValueError:
        return False


def walk(root: Path, fmt: str | None = None, max_bytes: int = 16 << 20,
         report: WalkReport | None = None) -> Iterator[Found]:
    """Yield indexable files under ``root`` (a resolved folder), in a stable (sorted) order."""
    report = report if report is not None else WalkReport()
    seen_dirs: set[tuple[int, int]] = set()

    def visit(dirpath: Path, rel: str, rules: IgnoreRules) -> Iterator[Found]:
        try:
            st = dirpath.stat()
        except OSError as exc:
            report.problems.append(f"{dirpath}: cannot read folder ({exc.strerror}); skipped")
            return
        ident = (st.st_dev, st.st_ino)
        if ident in seen_dirs:
            report.problems.append(f"{dirpath}: folder reached twice (symlink loop?); skipped")
            return
        seen_dirs.add(ident)
        ign = dirpath / IGNORE_FILE
        if ign.is_file():
            rules = rules.copy()
            rules.add_file(ign, rel)
        try:
            entries = sorted(os.scandir(dirpath), key=lambda e: e.name)
        except OSError as exc:
            report.problems.append(f"{dirpath}: cannot list folder ({exc.strerror}); skipped")
            return
        for entry in entries:
            name = entry.name
            child_rel = f"{rel}/{name}" if rel else name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                report.skipped_other += 1
                continue
            path = Path(entry.path)
            if is_link:
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    report.problems.append(f"{path}: broken or looping symlink; skipped")
                    continue
                if not _inside(target, root):
                    report.skipped_other += 1
                    continue
            if is_dir:
                if name in SKIP_DIRS or name.startswith(".") or (path / "pyvenv.cfg").exists():
                    continue
                if rules.ignored(child_rel, True):
                    continue
                yield from visit(path, child_rel, rules)
                continue
            if name == IGNORE_FILE or rules.ignored(child_rel, False):
                continue
            loader = loader_for(path, fmt)
            if loader is None:
                report.skipped_other += 1
                continue
            try:
                st = path.stat()
            except OSError as exc:
                report.problems.append(f"{path}: cannot read ({exc.strerror}); skipped")
                continue
            if st.st_size > max_bytes:
                report.skipped_large.append(f"{path} ({st.st_size / 1e6:.1f} MB)")
                continue
            if is_binary(path):
                report.skipped_binary += 1
                continue
            real = path.resolve() if is_link else path
            yield Found(real, child_rel, root, loader, st.st_size, st.st_mtime_ns)

    yield from visit(root, "", IgnoreRules())


def found_file(path: Path, fmt: str | None = None) -> Found | None:
    """A file the user named: indexed whatever the ignore rules say (loader by type or --format)."""
    loader = loader_for(path, fmt)
    if loader is None:
        loader = "text" if not is_binary(path) else None
    if loader is None:
        return None
    st = path.stat()
    return Found(path, path.name, path.parent, loader, st.st_size, st.st_mtime_ns)
