"""Unified diffs for ``kgsearch context --diff``: read one (``git diff`` of the indexed roots, a
file, or stdin), and map its changed lines to the innermost nodes that hold them.

A hunk ``@@ -a,b +c,d @@`` changes lines ``c..c+d-1`` of the new file (a pure deletion, ``d = 0``,
touches line ``c``, where the lines went) and lines ``a..a+b-1`` of the old one. The index holds
one of the two: when the file on disk is the one indexed (same size and mtime as the ``files``
row), the new-side lines are used, otherwise the old side (the index predates the change).
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field

from ..errors import DataError, UsageError
from ..types import FLAG_PART
from .sources import STALE

__all__ = ["FileChange", "parse_unified", "parse_given", "git_diff", "changed_nodes"]

_PASS_TEXT = "pass the unified diff itself as the `diff` argument (the text `git diff` prints)"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class FileChange:
    path: str                                   # as the diff names it (b/ side, prefix stripped)
    old_path: str | None = None
    new_lines: set[int] = field(default_factory=set)
    old_lines: set[int] = field(default_factory=set)
    root: str | None = None                     # the folder git ran in (paths are relative to it)


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote(p: str) -> str:
    r"""A path as git quotes it (``core.quotePath``: in double quotes, C escapes, the bytes of
    non-ASCII characters in octal) decoded; a path not in quotes as it is.

    >>> unquote('"a/na\\303\\257ve \\"x\\".c"'), unquote("a/plain.c")
    ('a/naïve "x".c', 'a/plain.c')
    """
    if len(p) < 2 or not (p.startswith('"') and p.endswith('"')):
        return p
    body, out, i = p[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567":
                j = i + 1
                while j < min(i + 4, len(body)) and body[j] in "01234567":
                    j += 1
                out.append(int(body[i + 1:j], 8) & 0xFF)
                i = j
                continue
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", errors="replace")


def _strip(p: str) -> str | None:
    p = p.rstrip("\r\n")
    if p.startswith('"'):                       # a quoted path ends at its closing quote (a tab may follow)
        end = p.find('"', 1)
        while end > 0 and p[end - 1] == "\\" and (len(p[:end]) - len(p[:end].rstrip("\\"))) % 2:
            end = p.find('"', end + 1)
        p = unquote(p[:end + 1]) if end > 0 else p
    else:
        p = p.split("\t")[0].rstrip()
    if p == "/dev/null":
        return None
    return p[2:] if p[:2] in ("a/", "b/") else p


def parse_unified(text: str, source: str = "<diff>", root: str | None = None) -> list[FileChange]:
    r"""Files and changed line numbers of a unified diff (``git diff``, ``diff -u``), in order.

    >>> fc = parse_unified("--- a/x.py\n+++ b/x.py\n@@ -3,2 +3,3 @@\n a\n-b\n+c\n+d\n")[0]
    >>> fc.path, sorted(fc.new_lines), sorted(fc.old_lines)
    ('x.py', [4, 5], [4])
    """
    out: list[FileChange] = []
    cur: FileChange | None = None
    minus: str | None = None
    renamed: list[str | None] = [None, None]       # `rename from` / `rename to` of the current file
    old_no = new_no = left_old = left_new = 0
    lines = text.split("\n")                 # (not splitlines: a form feed, \x1c or U+2028 in a line
    if lines and lines[-1] == "":             #  of code is no line break for git)
        lines.pop()
    for n, line in enumerate(lines, 1):
        if line.endswith("\r"):
            line = line[:-1]
        if cur is not None and (left_old > 0 or left_new > 0):
            if line.startswith("+"):
                cur.new_lines.add(new_no)
                new_no, left_new = new_no + 1, left_new - 1
            elif line.startswith("-"):
                cur.old_lines.add(old_no)
                old_no, left_old = old_no + 1, left_old - 1
            elif not line.startswith("\\"):          # a context line
                old_no, new_no, left_old, left_new = old_no + 1, new_no + 1, left_old - 1, left_new - 1
            continue
        if line.startswith("diff --git "):
            renamed = [None, None]
        elif line.startswith(("rename from ", "copy from ")):
            renamed[0] = unquote(line.split(" ", 2)[2])
        elif line.startswith(("rename to ", "copy to ")):
            renamed[1] = unquote(line.split(" ", 2)[2])
        elif line.startswith("--- "):
            minus = _strip(line[4:])
        elif line.startswith("+++ "):
            cur = FileChange(path=_strip(line[4:]) or minus or "", old_path=minus or renamed[0], root=root)
            out.append(cur)
            minus = None
        elif (m := _HUNK.match(line)) is not None:
            if cur is None:
                raise DataError("a hunk before any '--- a/...' / '+++ b/...' file header; pass a unified diff "
                                "(git diff, diff -u)", source, n)
            old_no, left_old = int(m.group(1)), int(m.group(2) or 1)
            new_no, left_new = int(m.group(3)), int(m.group(4) or 1)
            if left_new == 0:                          # a pure deletion: where the lines went
                cur.new_lines.add(max(new_no, 1))
            if left_old == 0:
                cur.old_lines.add(max(old_no, 1))
    return [fc for fc in out if fc.path]


_DIFF_LINE = re.compile(r"^(?:diff --git |--- |\+\+\+ |@@ |Binary files |index [0-9a-f]|(?:new|deleted) file mode )", re.M)


def parse_given(text: str, source: str = "<diff>") -> list[FileChange]:
    """:func:`parse_unified` of a diff the user or an agent handed over: text with no line of a
    diff in it (no ``--- a/FILE`` / ``+++ b/FILE`` header, hunk or ``diff --git``) is a
    :class:`DataError` instead of "no change" (an empty text is no change)."""
    changes = parse_unified(text, source)
    if not changes and text.strip() and not _DIFF_LINE.search(text):
        raise DataError("not a unified diff (no '--- a/FILE' / '+++ b/FILE' header or '@@' hunk in it); pass what "
                        "`git diff` or `diff -u` prints", source,
                        agent="the `diff` argument is not a unified diff (no '--- a/FILE' / '+++ b/FILE' header or "
                              "'@@' hunk in it): pass the text `git diff` prints, or \"git\" for the uncommitted "
                              "changes of the indexed folders")
    return changes


def git_diff(roots: list[str]) -> list[FileChange]:
    """``git diff HEAD`` (staged and unstaged changes) of every indexed root inside a git work tree.

    UsageError (one line) when git is missing or no root is in a git repository.
    """
    if not roots:
        raise UsageError("the index has no roots to diff; pass a diff on stdin (git diff | kgsearch context --diff -)",
                         agent=f"the index has no folders to run git diff in; {_PASS_TEXT}")
    out: list[FileChange] = []
    seen_top: set[str] = set()
    for root in roots:
        try:
            top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True,
                                 text=True, timeout=30)
        except FileNotFoundError:
            raise UsageError("git is not installed (or not on PATH); install it, or pass a unified diff "
                             "on stdin: kgsearch context --diff - < change.diff",
                             agent=f"git is not installed where the server runs; {_PASS_TEXT}") from None
        if top.returncode != 0:
            continue
        toplevel = top.stdout.strip()
        if toplevel in seen_top:
            continue
        seen_top.add(toplevel)
        has_head = subprocess.run(["git", "-C", toplevel, "rev-parse", "--verify", "-q", "HEAD"],
                                  capture_output=True, text=True, timeout=30).returncode == 0
        cmd = ["git", "-C", toplevel, "-c", "core.quotepath=off", "diff", "--no-color", "--no-ext-diff",
               "--unified=0"] + (["HEAD"] if has_head else [])
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, errors="replace")
        if res.returncode != 0:
            why = res.stderr.strip().splitlines()[-1:] or ["?"]
            raise UsageError(f"`git diff` failed in {toplevel}: {why}",
                             agent=f"`git diff` failed in {toplevel} ({why}); {_PASS_TEXT}")
        out += parse_unified(res.stdout, f"git diff in {toplevel}", root=toplevel)
    if not seen_top:
        raise UsageError(f"not a git repository: {', '.join(roots)}; pass a unified diff on stdin instead "
                         "(kgsearch context --diff - < change.diff)",
                         agent=f"the indexed folders are not in a git repository; {_PASS_TEXT}")
    return out


def _file_row(ix, fc: FileChange, path: str | None = None):
    """(file id, absolute path, size, mtime_ns) of the indexed file a diff entry names (``path``:
    another name of it, the old one of a renamed file), or None."""
    path = path or fc.path
    rows = []
    cands = []
    if fc.root:
        cands.append(os.path.join(fc.root, path))
    cands += [os.path.join(r, path) for r in ix.meta_json("roots", [])]
    if os.path.isabs(path):
        cands.insert(0, path)
    for c in dict.fromkeys(cands + [os.path.realpath(c) for c in cands]):
        row = ix.conn.execute("SELECT id, path, size, mtime_ns FROM files WHERE path=?", (c,)).fetchone()
        if row is not None:
            return row
    # a diff made elsewhere: the one indexed file whose path ends with the diff's path
    tail = "/" + path.lstrip("/")
    rows = ix.conn.execute("SELECT id, path, size, mtime_ns FROM files WHERE path LIKE ? ESCAPE '\\'",
                           ("%" + tail.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),)).fetchall()
    rows = [r for r in rows if r[1].endswith(tail)]         # (LIKE ignores ASCII case: Foo.c is not foo.c)
    return rows[0] if len(rows) == 1 else None


def changed_nodes(ix, changes: list[FileChange]) -> tuple[dict[int, set[int]], list[str]]:
    """``{node id: changed line numbers}`` of the innermost nodes holding changed lines (a long
    definition's, not one of its parts': the definition is what changed, its calls are its), and notes
    (files the index does not hold, old-side lines used)."""
    out: dict[int, set[int]] = {}
    notes: list[str] = []
    for fc in changes:
        row = _file_row(ix, fc)
        renamed = row is None and fc.old_path not in (None, fc.path)
        if renamed:                           # renamed since the index was made: it holds the old name
            row = _file_row(ix, fc, fc.old_path)
        if row is None:
            notes.append(f"{fc.path}: not in the index, skipped")
            continue
        fid, path, size, mtime_ns = row
        try:
            st = os.lstat(path)               # a link swapped in is not the indexed file
            current = not renamed and st.st_size == size and st.st_mtime_ns == mtime_ns
        except OSError:
            current = False
        lines = fc.new_lines if current else fc.old_lines
        if renamed:
            notes.append(f"{fc.path}: renamed from {fc.old_path} since it was indexed; mapped the diff's "
                         f"old-side lines to {fc.old_path}; {STALE}")
        elif not current:
            notes.append(f"{fc.path}: changed on disk since it was indexed; mapped the diff's old-side lines, and "
                         f"{STALE}")
        nodes = ix.conn.execute(
            f"SELECT n.id, n.line_start, n.line_end FROM nodes n WHERE n.file_id=? AND n.line_start IS NOT NULL "
            f"AND n.flags & {FLAG_PART} = 0 ORDER BY n.id", (fid,)).fetchall()     # (a part: its definition)
        whole = ix.conn.execute("SELECT id FROM nodes WHERE file_id=? AND parent_id IS NULL ORDER BY id",
                                (fid,)).fetchall()
        for ln in sorted(lines):
            best = None
            for nid, a, b in nodes:
                b = b if b is not None else a
                if a <= ln <= b and (best is None or (b - a, -nid) < (best[1], -best[0])):
                    best = (nid, b - a)
            if best is None and whole:
                best = (whole[0][0], 0)          # outside every definition: the file's own node
            if best is not None:
                out.setdefault(best[0], set()).add(ln)
    return out, notes

