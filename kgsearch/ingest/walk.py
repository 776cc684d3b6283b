"""Find the files to index under a root: ignore rules, ``.kgsearchignore``, symlinks, size caps.

Rules, in order:

* Directories never entered: VCS folders, virtualenvs (any folder with ``pyvenv.cfg``),
  ``node_modules``, ``__pycache__``, build/dist output, tool caches, Obsidian's ``.obsidian``
  and ``.trash``, and every hidden folder (name starting with ``.``).
* ``.kgsearchignore`` files (gitignore syntax: ``*``, ``**``, ``?``, ``[..]``, leading ``/``
  anchors, trailing ``/`` for folders only, ``!`` re-includes) apply to their folder and below.
* Symlinks are followed only when their target stays inside the root, and a file or folder is
  walked once, by its real path (a link to something the walk reaches anyway adds nothing); a
  broken or looping link is skipped with one line.
* A folder that cannot be listed (``~/storage/shared/Android/data`` on a phone) is skipped with
  one line, and what was indexed from it before is kept; the ignore rules are applied before
  anything inside a folder is looked at, so an ignored unreadable folder is not even mentioned.
* A ``.txt`` file whose lines are KG triples (``head<TAB>relation<TAB>tail``: ``train.txt`` of
  YAGO3-10 or CoDEx) is read by the triples loader, not as prose (:func:`sniff_loader`).
* Files larger than the size cap (16 MB; 64 MB for ``.tsv`` KG triples and ``.txt`` ones, whose lines are small
  and streamed; ``--max-file-size`` sets one cap for all), files that are not text though
  their name gives them a loader (a NUL byte in the first 8 KB, unless the file starts with a
  UTF-16 byte-order mark: UTF-16 text is decoded like UTF-8) and
  files with no loader are skipped, and so is anything that is not a regular file (a named
  pipe or device named ``x.md`` would block the read forever); skipped files are counted, and each large, unreadable or
  not-text one is one warning line (files with no loader are the normal case: counted only).
* Source code that is not the project's: installed dependencies are skipped (``node_modules``,
  ``bower_components``, ``jspm_packages``; a ``vendor`` folder of Go modules, i.e. with a
  ``modules.txt`` or beside a ``go.mod``/``Gopkg.lock``/``glide.lock``/``composer.json``; Bundler's
  ``vendor/bundle``; a
  ``target`` build folder beside a ``Cargo.toml`` or ``pom.xml``), and so are minified or
  bundled scripts (``*.min.js`` & co., or a script whose first 8 KB hold no line break),
  counted as ``generated``. Vendored copies (``third_party/``, ``vendor/`` elsewhere,
  ``external/`` ...) and generated sources (``*.pb.go``, "Code generated ... DO NOT EDIT")
  are indexed, their nodes flagged ``FLAG_VENDORED`` so that search can rank them below the
  project's own code (:mod:`kgsearch.ingest.langspec`).
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import DataError
from ..lines import quoted
from .loaders import loader_for
from .triples import is_side_file, looks_like_triples
from .common import decode, utf16_codec

SKIP_DIRS = {
    ".git", ".hg", ".svn", ".bzr", "_darcs", "CVS",
    "node_modules", "__pycache__", "venv", ".venv", "site-packages",
    "build", "dist", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".hypothesis", ".cache", ".gradle", ".idea", ".vscode",
    ".obsidian", ".trash", ".Trash", "__MACOSX", "bower_components", "jspm_packages",
}
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS"})    # never entered, whatever the ignore files say
# folder name -> files beside it (or, for vendor, inside it) that make it a dependency or build folder
DEPENDENCY_DIRS = {"vendor": ("go.mod", "Gopkg.lock", "glide.lock", "composer.json"),
                   "target": ("Cargo.toml", "pom.xml")}
MINIFIED_EXT = (".js", ".mjs", ".cjs")
IGNORE_FILE = ".kgsearchignore"
SNIFF_BYTES = 8192
DEFAULT_MAX_BYTES = 16_000_000            # "16 MB", as --max-file-size counts
TRIPLES_MAX_BYTES = 64_000_000            # KG triple files (FB15k-237's train.tsv is 21 MB)
TRIPLE_EXTENSIONS = (".tsv",)


def size_cap(path: Path, max_bytes: int | None, loader: str | None = None) -> int:
    """The size above which ``path`` is skipped: ``max_bytes`` when given, else the default of its
    type (``loader``: the one :func:`sniff_loader` chose; a ``.txt`` of triples is triples)."""
    if max_bytes is not None:
        return max_bytes
    triples = path.suffix.lower() in TRIPLE_EXTENSIONS or (loader == "triples" and path.suffix.lower() == ".txt"
                                                           and not is_side_file(path))
    return TRIPLES_MAX_BYTES if triples else DEFAULT_MAX_BYTES


def sniff_loader(path: Path, loader: str | None, fmt: str | None) -> str | None:
    """``loader``, but ``"triples"`` for a ``.txt`` file whose lines are ``head<TAB>relation<TAB>tail``
    (:func:`kgsearch.ingest.triples.looks_like_triples`: ``train.txt`` of YAGO3-10, CoDEx,
    FB15k), unless ``--format`` chose. Reads the first 8 KB."""
    if fmt or loader != "text" or path.suffix.lower() != ".txt":
        return loader
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES + 1)
    except OSError:
        return loader                           # unreadable: the loader says so
    whole = len(head) <= SNIFF_BYTES
    return "triples" if looks_like_triples(head[:SNIFF_BYTES], whole) else loader


@dataclass
class Found:
    path: Path        # absolute, resolved: a file is known by its real path
    rel: str          # its real path relative to the root, with '/' separators
    root: Path
    loader: str
    size: int
    mtime_ns: int
    origin: str = ""  # the registered root it was found under (files.root)
    label: str = ""   # that root's label: its keys are qualified with it (kgsearch.store.roots)


GENERATED_NAMED = 20     # minified or bundled scripts named in a run's report (the rest counted)


@dataclass
class WalkReport:
    skipped_large: list[str] = field(default_factory=list)
    skipped_binary: int = 0
    skipped_other: int = 0          # no loader, a link leaving the root
    skipped_generated: int = 0      # minified or bundled scripts
    generated: list[str] = field(default_factory=list)  # the first GENERATED_NAMED of them, by path
    problems: list[str] = field(default_factory=list)   # one line each: unreadable folders/files, bad links
    unlisted: list[str] = field(default_factory=list)   # folders not listed this run: their indexed files are kept
    unreadable: int = 0             # folders and files that could not be read
    bad_links: int = 0              # broken or looping symlinks

    def counts(self) -> dict[str, int]:
        return {"unreadable": self.unreadable, "bad_links": self.bad_links, "large": len(self.skipped_large),
                "binary": self.skipped_binary, "no_loader": self.skipped_other, "generated": self.skipped_generated}


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
            cls = _bracket(glob, i)
            if cls is None:                   # never closed: a literal '['
                out.append(re.escape(c))
            else:
                out.append(cls[0])
                i = cls[1]
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


POSIX_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
                 "xdigit": "0-9A-Fa-f", "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
                 "print": "\\x20-\\x7e", "graph": "\\x21-\\x7e", "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")}


class BadPattern(ValueError):
    """A ``.kgsearchignore`` pattern that means nothing (a reversed range, an unknown class)."""


def _bracket(glob: str, i: int) -> tuple[str, int] | None:
    """The regex class of the bracket expression starting at ``glob[i] == '['`` and the index
    of its ``]``, as git's wildmatch reads it: ``!``/``^`` negates, a ``]`` first is literal,
    ``[:alpha:]`` and the other POSIX classes (ASCII), ``a-z`` ranges, ``\\`` escapes; every
    other character is literal (a ``[`` inside is not a nested set). Never matches ``/``.
    ``None`` when it is never closed; :class:`BadPattern` for a reversed range or unknown class.
    """
    n, j = len(glob), i + 1
    negate = j < n and glob[j] in "!^"
    j += negate
    items, start = [], j
    while j < n and (glob[j] != "]" or j == start):
        if glob.startswith("[:", j) and (k := glob.find(":]", j + 2)) != -1:
            name = glob[j + 2:k]
            if name not in POSIX_CLASSES:
                raise BadPattern(f"unknown character class [:{name}:] (known: {', '.join(POSIX_CLASSES)})")
            items.append(POSIX_CLASSES[name])
            j = k + 2
            continue
        lo, j = (glob[j + 1], j + 2) if glob[j] == "\\" and j + 1 < n else (glob[j], j + 1)
        if j + 1 < n and glob[j] == "-" and glob[j + 1] != "]":
            hi, j = (glob[j + 2], j + 3) if glob[j + 1] == "\\" and j + 2 < n else (glob[j + 1], j + 2)
            if hi < lo:
                raise BadPattern(f"reversed range {lo}-{hi} (write it low to high: {hi}-{lo})")
            items.append(re.escape(lo) + "-" + re.escape(hi))
        else:
            items.append(re.escape(lo))
    if j >= n:
        return None
    return ("[^/" if negate else "(?!/)[") + "".join(items) + "]", j


class IgnoreRules:
    """gitignore-style rules collected from ``.kgsearchignore`` files; last match wins."""

    def __init__(self) -> None:
        self.patterns: list[_Pattern] = []

    def add_file(self, path: Path, base: str) -> None:
        try:
            text = decode(path.read_bytes(), str(path))[0]      # UTF-16 too: Notepad's "Unicode" hid nothing
        except OSError:
            return
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("\\"):
                line = line[1:]
            try:
                self.patterns.append(_Pattern(line, base))
            except (BadPattern, re.error) as exc:
                # fail the run rather than skip the line: a pattern left out could index what it hid
                raise DataError(f"bad ignore pattern {quoted(line)} ({exc}); fix or remove the line", str(path), n) from None

    def _last_match(self, rel: str, is_dir: bool) -> _Pattern | None:
        """The last pattern that matches ``rel`` (as gitignore reads them: the last one decides)."""
        last = None
        for p in self.patterns:
            if (is_dir or not p.dir_only) and p.regex.match(rel):
                last = p
        return last

    def ignored(self, rel: str, is_dir: bool) -> bool:
        last = self._last_match(rel, is_dir)
        return last is not None and not last.negate

    def included(self, rel: str, is_dir: bool) -> bool:
        """Whether the last pattern that matches ``rel`` is a ``!`` one: the user asked for it."""
        last = self._last_match(rel, is_dir)
        return last is not None and last.negate

    def reincludes(self, name: str, rel: str) -> bool:
        """Whether a folder the walk skips by default (``build``, ``dist``, ``node_modules``, a
        hidden folder, a virtualenv, Go's ``vendor``) is asked for by a ``!`` pattern
        (``!build/``: an npm package whose code is its ``build/`` folder); never a VCS folder."""
        return name not in VCS_DIRS and self.included(rel, True)

    def copy(self) -> "IgnoreRules":
        c = IgnoreRules()
        c.patterns = list(self.patterns)
        return c


def special_kind(mode: int) -> str:
    """What a file that is not a regular one is, in a word or two (for a warning)."""
    for test, name in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a special file"


def special_file(path: "str | Path") -> str | None:
    """What ``path`` is when it is neither a folder nor a regular file (a named pipe, a device...),
    else None (also when it cannot be looked at: the walk says so)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISDIR(mode) or stat.S_ISREG(mode) else special_kind(mode)


def not_text(path: Path) -> str | None:
    """Why a file its extension gives a loader to is not indexed (one warning each), or None:
    NUL bytes in the first 8 KB (binary data). UTF-16 with its byte-order mark is text (the
    loaders decode it, :func:`kgsearch.ingest.common.decode`); UTF-16 without one, and UTF-32,
    have NUL bytes: not text."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return None                          # unreadable: the loader says so
    if b"\0" in head and not utf16_codec(head):
        return (f"not text (NUL bytes in its first {SNIFF_BYTES // 1024} KB) though named {path.suffix or path.name}; "
                f"add it to .kgsearchignore if it is meant to be binary")
    return None


def is_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    return b"\0" in head and not utf16_codec(head)


def inside(child: "str | Path", folder: "str | Path") -> bool:
    """``child`` is ``folder`` or lies under it, lexically (no file system access; both normalised
    paths, as ``Path`` and the index's stored paths are).

    >>> inside("/a/b/c.md", "/a/b"), inside("/a/bc.md", "/a/b"), inside("/a/b", "/a/b"), inside("/x", "/")
    (True, False, True, True)
    """
    c, f = os.fspath(child), os.fspath(folder)
    return c == f or c.startswith(f.rstrip(os.sep) + os.sep)


def _skip_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.startswith(".")


def _dependency_dir(path: Path) -> bool:
    """A ``vendor`` folder of Go (or PHP) dependencies, Bundler's ``vendor/bundle`` (the gems
    installed with ``bundle install --path vendor/bundle``), a Rust or Maven ``target`` folder."""
    if path.name == "bundle" and path.parent.name == "vendor":
        return True
    marks = DEPENDENCY_DIRS.get(path.name)
    if not marks:
        return False
    try:
        if path.name == "vendor" and (path / "modules.txt").is_file():
            return True
        return any((path.parent / m).is_file() for m in marks)
    except OSError:
        return False


def is_minified(path: Path) -> bool:
    """A minified or bundled script: named so (``*.min.js``), or no line break in its first 8 KB."""
    from fnmatch import fnmatchcase

    from .langspec import MINIFIED_NAMES

    name = path.name.lower()
    if not name.endswith(MINIFIED_EXT):
        return False
    if any(fnmatchcase(name, p) for p in MINIFIED_NAMES):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    return len(head) == SNIFF_BYTES and b"\n" not in head


def _is_venv(path: Path) -> bool:
    try:
        return (path / "pyvenv.cfg").exists()
    except OSError:          # an unreadable folder: the listing says so
        return False


def walk(root: Path, fmt: str | None = None, max_bytes: int | None = None,
         report: WalkReport | None = None) -> Iterator[Found]:
    """Yield indexable files under ``root`` (a resolved folder), in a stable (sorted) order.

    Real folders are walked first without following any link; then the symlinks met on the
    way are looked at, so a link to a file or folder the walk reaches anyway adds nothing (a
    file is indexed once, by its real path). A link that points elsewhere inside the root (a
    hidden or ignored folder, say) is followed; one leaving the root is skipped; a broken or
    looping one is skipped with one line in ``report.problems``. A folder that cannot be
    listed is skipped with one line and listed in ``report.unlisted``: nobody can tell what
    it holds now, so the files indexed from it before are kept (see ``indexer.plan``)."""
    report = report if report is not None else WalkReport()
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[str] = set()
    links: list[tuple[Path, str, IgnoreRules]] = []

    def problem(path: Path, what: str) -> None:
        report.problems.append(f"{path}: {what}; skipped")

    def bad_name(path: Path) -> bool:
        """A name that is not UTF-8 (bytes on Linux; Python holds them as surrogates): the index
        stores paths as text, so the file is skipped with one line naming it."""
        try:
            str(path).encode("utf-8")
            return False
        except UnicodeEncodeError:
            report.skipped_other += 1
            report.problems.append(f"{shown_path(path)}: the name is not valid UTF-8; skipped (rename it to index it)")
            return True

    def file_found(path: Path, rel: str, rules: IgnoreRules) -> Found | None:
        if path.name == IGNORE_FILE or rules.ignored(rel, False):
            return None
        if bad_name(path):
            return None
        loader = loader_for(path, fmt)
        if loader is None:
            report.skipped_other += 1
            return None
        loader = sniff_loader(path, loader, fmt)
        try:
            st = path.stat()
        except OSError as exc:
            report.unreadable += 1
            problem(path, f"cannot read ({exc.strerror})")
            return None
        if not stat.S_ISREG(st.st_mode):
            # a FIFO would block the read forever (nobody writes to it); a device never ends
            report.skipped_other += 1
            problem(path, f"not a regular file ({special_kind(st.st_mode)})")
            return None
        cap = size_cap(path, max_bytes, loader)
        if st.st_size > cap:
            report.skipped_large.append(f"{path} ({st.st_size / 1e6:.1f} MB): larger than --max-file-size "
                                        f"({cap / 1e6:g} MB); skipped (--max-file-size "
                                        f"{int(st.st_size / 1e6) + 1} includes it)")
            return None
        why = not_text(path)
        if why:
            report.skipped_binary += 1
            problem(path, why)
            return None
        if is_minified(path):
            report.skipped_generated += 1
            if len(report.generated) < GENERATED_NAMED:
                report.generated.append(shown_path(path))
            return None
        seen_files.add(str(path))
        return Found(path, rel, root, loader, st.st_size, st.st_mtime_ns)

    def visit(dirpath: Path, rel: str, rules: IgnoreRules) -> Iterator[Found]:
        try:
            st = dirpath.stat()
            entries = sorted(os.scandir(dirpath), key=lambda e: e.name)
        except OSError as exc:
            report.unreadable += 1
            report.unlisted.append(str(dirpath))
            problem(dirpath, f"cannot list folder ({exc.strerror}); what was indexed from it is kept")
            return
        seen_dirs.add((st.st_dev, st.st_ino))
        ign = dirpath / IGNORE_FILE
        try:
            has_rules = ign.is_file()
        except OSError:
            has_rules = False
        if has_rules:
            rules = rules.copy()
            rules.add_file(ign, rel)
        for entry in entries:
            name = entry.name
            child_rel = f"{rel}/{name}" if rel else name
            path = Path(entry.path)
            try:
                if entry.is_symlink():
                    links.append((path, child_rel, rules))
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                report.unreadable += 1
                problem(path, "cannot read")
                continue
            if is_dir:
                if ((_skip_dir(name) or _is_venv(path) or _dependency_dir(path)) and not rules.reincludes(name, child_rel)) \
                        or rules.ignored(child_rel, True):
                    continue
                if bad_name(path):
                    continue
                yield from visit(path, child_rel, rules)
                continue
            f = file_found(path, child_rel, rules)
            if f is not None:
                yield f

    def follow(link: Path, rel: str, rules: IgnoreRules) -> Iterator[Found]:
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError):
            report.bad_links += 1
            problem(link, "broken or looping symlink")
            return
        if not inside(target, root):
            report.skipped_other += 1
            return
        target_rel = target.relative_to(root).as_posix()
        try:
            st = target.stat()
            is_dir = target.is_dir()
        except OSError as exc:
            report.unreadable += 1
            problem(link, f"cannot read its target ({exc.strerror})")
            return
        if is_dir:
            # a link is a choice: it may lead into a hidden folder, but never into .git & co.
            if _skip_dir(link.name) or target.name in SKIP_DIRS or rules.ignored(rel, True) or _is_venv(target):
                return
            if (st.st_dev, st.st_ino) in seen_dirs:
                if inside(link.parent, target):
                    report.bad_links += 1
                    problem(link, f"folder reached twice (a symlink loop back to {target})")
                return                      # a folder the walk lists anyway
            yield from visit(target, target_rel, rules)
        elif str(target) not in seen_files and not rules.ignored(rel, False):
            f = file_found(target, target_rel, rules)
            if f is not None:
                yield f

    yield from visit(root, "", IgnoreRules())
    while links:
        batch, links[:] = list(links), []
        for link, rel, rules in batch:
            yield from follow(link, rel, rules)


def shown_path(path) -> str:
    """A path as text that can be printed and stored: bytes that are not UTF-8 as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def found_file(path: Path, fmt: str | None = None) -> Found | None:
    """A file the user named: indexed whatever the ignore rules say (loader by type or --format).
    A named pipe, socket or device is refused: reading one may never end."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"not a regular file ({special_kind(st.st_mode)}); save it to a file and index that",
                        str(path))
    loader = sniff_loader(path, loader_for(path, fmt), fmt)
    if loader is None:
        loader = "text" if not is_binary(path) else None
    if loader is None:
        return None
    return Found(path, path.name, path.parent, loader, st.st_size, st.st_mtime_ns)
