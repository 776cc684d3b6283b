"""Candidates -> :class:`~kgsearch.context.pack.Item` s with their forms (full, trimmed, ref).

Code definitions (class, function, method) are shown as their source lines, read from the file
only when it is exactly the one indexed, reached without a symlink inside its root
(:func:`kgsearch.ingest.readback.read_indexed`: ``O_NOFOLLOW``, size, mtime and content hash of
its ``files`` row); otherwise, and for every other kind, as the node's indexed text (a module's
text is its docstring and top-level names).
Paths are shown relative to the indexed root that holds them.
"""
from __future__ import annotations

import functools
import os

import numpy as np

from ..ingest.common import decode, utf16_codec
from ..ingest.langspec import SPECS, spec_for
from ..ingest.readback import read_indexed
from ..store.rows import PATH_SQL, qualname_sql
from ..store.sql import iter_in_chunks
from .pack import LONG_LINE, Form, Item, trim_code, trim_prose
from .sources import Candidate

__all__ = ["load_items", "CODE_KINDS", "CODE_NS", "is_code_key", "code_lang"]

CODE_KINDS = ("class", "function", "method")
PART_KINDS = ("section", "chunk")     # parts of a note or document (Item.parent: its key)
LANG = {"note": "markdown", "section": "markdown"}
# the key namespaces of the code loaders: Python's, and one per source language (JavaScript and
# TypeScript share ``js``, C and C++ ``c``); a KG node typed "class" is not code
CODE_NS = tuple(dict.fromkeys(("py", "pyi") + tuple(s.ns for s in SPECS)))
_CODE_PREFIXES = tuple(ns + ":" for ns in CODE_NS)


def is_code_key(key: str, kind: str) -> bool:
    """A definition or module written by a code loader (of any language).

    >>> is_code_key("rs:src/lib.rs:Parser.advance", "method"), is_code_key("kg:Cls", "class")
    (True, False)
    """
    return kind in CODE_KINDS + ("module",) and key.startswith(_CODE_PREFIXES)


def code_lang(key: str, path: str | None) -> str:
    """The fence language of a code node: ``python``, else its file's language (``rust``, ``cpp``)."""
    if key.startswith(("py:", "pyi:")):
        return "python"
    spec = spec_for(path or "")
    return spec.name if spec is not None else ""


def code_comment(key: str, path: str | None) -> str:
    """How a line comment starts in a code node's language: ``#`` in Python, else its file's
    language's (``//``)."""
    if key.startswith(("py:", "pyi:")):
        return "#"
    spec = spec_for(path or "")
    return spec.line_comment[0] if spec is not None and spec.line_comment else "#"


def _read_file(path: str, root: str | None, size: int | None, mtime_ns: int | None,
               digest: str | None) -> "_Lines | None":
    """The file's bytes with its line offsets, or None when it is gone or not exactly the file
    that was indexed (a link swapped in, another content). Lines are sliced and decoded per item:
    most of a file is never shown."""
    data = read_indexed(path, root, size, mtime_ns, digest)
    if data is None:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif utf16_codec(data[:4]):               # lines as the loader counted them: of the decoded text
        data = decode(data, path)[0].encode("utf-8")
    elif path.endswith((".py", ".pyi")) and not data.isascii() and not _utf8(data):
        from ..ingest.pycode import source_text     # a coding cookie (latin-1): as the loader decoded it,
                                                    # not U+FFFD where the index has the characters
        data = source_text(data, path)[0].encode("utf-8")
    return _Lines(data)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class _Lines:
    """A file's bytes and the offsets of its line ends (found by numpy in one pass: splitting a
    large file into line objects took most of ``load`` on the stdlib). A line ends at ``\n``,
    ``\r\n`` or a lone ``\r``, as Python's tokenizer counts the lines the loader numbers (a
    lone-CR file's spans were counted by ``\n`` alone: the code shown was lines further on)."""

    __slots__ = ("data", "nl")

    def __init__(self, data: bytes):
        self.data = data
        b = np.frombuffer(data, dtype=np.uint8)
        self.nl = np.flatnonzero(b == 10)
        if b"\r" in data:
            cr = np.flatnonzero(b == 13)
            after = cr + 1
            lone = cr[(after >= len(b)) | (b[np.minimum(after, len(b) - 1)] != 10)]
            if len(lone):
                self.nl = np.sort(np.concatenate([self.nl, lone]))

    def __len__(self) -> int:
        return len(self.nl) + 1

    def span(self, a: int, b: int) -> list[str]:
        """Lines ``a..b`` (1-based, inclusive; ``b <= len(self)``), decoded, newlines normalised."""
        nl = self.nl
        start = 0 if a <= 1 else int(nl[a - 2]) + 1
        end = int(nl[b - 1]) if b - 1 < len(nl) else len(self.data)
        if b - 1 < len(nl) and end > start and self.data[end] == 10 and self.data[end - 1] == 13:   # line b's CRLF
            end -= 1
        text = self.data[start:end].decode("utf-8", errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def load_items(ix, cands: list[Candidate], terms: list[str], window: int = LONG_LINE) -> list[Item]:
    """One item per candidate that still exists, in the candidates' order. ``window``: the
    characters the long lines of a trimmed form may keep (:func:`~.pack.line_window` of the budget)."""
    if not cands:
        return []
    kinds = ",".join(f"'{k}'" for k in CODE_KINDS)          # code is read from its file: no need to inflate it
    parts = ",".join(f"'{k}'" for k in PART_KINDS)         # their note or document: never packed beside them
    code_keys = " OR ".join(f"n.key LIKE '{ns}:%'" for ns in CODE_NS)
    sql = (f"SELECT n.id, n.key, n.kind, n.name, {qualname_sql('n')}, {PATH_SQL.format(a='n')}, n.line_start, "
           f"n.line_end, CASE WHEN n.kind IN ({kinds}) AND ({code_keys}) THEN NULL "
           f"ELSE kgtext(n.text) END, f.size, f.mtime_ns, "
           f"f.root, f.hash, CASE WHEN n.kind IN ({parts}) THEN (SELECT p.key FROM nodes p WHERE p.id = n.parent_id) END "
           f"FROM nodes n LEFT JOIN files f ON f.id = n.file_id WHERE n.id IN ({{}})")
    rows = {r[0]: r for r in iter_in_chunks(ix.conn, sql, sorted({c.id for c in cands}))}
    files: dict[str, _Lines | None] = {}
    out = []
    for c in cands:
        r = rows.get(c.id)
        if r is None:
            continue
        nid, key, kind, name, qual, path, a, b, text, size, mtime_ns, root, digest, parent = r
        shown = path
        if path and root and path.startswith(root.rstrip(os.sep) + os.sep):
            shown = path[len(root.rstrip(os.sep)) + 1:].replace(os.sep, "/")
        lines, source = None, "index"
        code = is_code_key(key, kind)                 # any language's code; not a KG node typed "class"
        if code and kind != "module" and path and a and b:
            if path not in files:
                files[path] = _read_file(path, root, size, mtime_ns, digest)
            whole = files[path]
            if whole is not None and 1 <= a <= b <= len(whole):
                lines, source = whole.span(a, b), "file"
        if lines is None:
            if text is None:                          # code whose file changed: the indexed text
                text = ix.conn.execute("SELECT kgtext(text) FROM nodes WHERE id=?", (nid,)).fetchone()[0]
            lines = (text or "").split("\n")
        marked = {ln - a for ln in c.marked if a and a <= ln <= (b or a)} if source == "file" else set()
        full = Form("full", "\n".join(lines).strip("\n"))
        fn = (functools.partial(trim_code, comment=code_comment(key, path), window=window) if code and source == "file"
              else functools.partial(trim_prose, window=window))
        trimmer = (lambda fn=fn, lines=lines, marked=marked: fn(lines, terms, marked)) \
            if len(lines) > 1 or len(lines[0]) > LONG_LINE else None      # one long line: cut around its match
        display = name
        if code and qual:                             # py: pkg.mod.Cls.m; the others: Cls.m (after the file)
            display = qual if key.startswith(("py:", "pyi:")) else (qual.partition(":")[2] or name)
        out.append(Item(id=nid, key=key, kind=kind, name=display, path=shown, line_start=a, line_end=b,
                        score=c.score, reason=c.reason, forms=[full, Form("ref", "")],
                        lang=code_lang(key, path) if code else LANG.get(kind, ""),
                        source=source, parent=parent, trimmer=trimmer))
    return out
