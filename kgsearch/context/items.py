"""Candidates -> :class:`~kgsearch.context.pack.Item` s with their forms (full, trimmed, ref).

Code definitions (class, function, method) are shown as their source lines, read from the file
when it is the one indexed (same size and mtime as its ``files`` row); otherwise, and for every
other kind, as the node's indexed text (a module's text is its docstring and top-level names).
Paths are shown relative to the indexed root that holds them.
"""
from __future__ import annotations

import os

from ..store.rows import PATH_SQL, qualname_sql
from ..store.sql import iter_in_chunks
from .pack import Form, Item, trim_code, trim_prose
from .sources import Candidate

__all__ = ["load_items", "CODE_KINDS"]

CODE_KINDS = ("class", "function", "method")
LANG = {"module": "python", "class": "python", "function": "python", "method": "python",
        "note": "markdown", "section": "markdown"}


def _read_lines(path: str, size: int | None, mtime_ns: int | None) -> list[str] | None:
    try:
        st = os.stat(path)
        if size is not None and (st.st_size != size or st.st_mtime_ns != mtime_ns):
            return None
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def load_items(ix, cands: list[Candidate], terms: list[str]) -> list[Item]:
    """One item per candidate that still exists, in the candidates' order."""
    if not cands:
        return []
    sql = (f"SELECT n.id, n.key, n.kind, n.name, {qualname_sql('n')}, {PATH_SQL.format(a='n')}, n.line_start, "
           f"n.line_end, kgtext(n.text), f.size, f.mtime_ns, f.root FROM nodes n LEFT JOIN files f "
           f"ON f.id = n.file_id WHERE n.id IN ({{}})")
    rows = {r[0]: r for r in iter_in_chunks(ix.conn, sql, sorted({c.id for c in cands}))}
    files: dict[str, list[str] | None] = {}
    out = []
    for c in cands:
        r = rows.get(c.id)
        if r is None:
            continue
        nid, key, kind, name, qual, path, a, b, text, size, mtime_ns, root = r
        shown = path
        if path and root and os.path.isabs(path):
            rel = os.path.relpath(path, root)
            shown = path if rel.startswith("..") else rel.replace(os.sep, "/")
        lines, source = None, "index"
        if kind in CODE_KINDS and path and a and b:
            if path not in files:
                files[path] = _read_lines(path, size, mtime_ns)
            whole = files[path]
            if whole is not None and b <= len(whole):
                lines, source = whole[a - 1:b], "file"
        if lines is None:
            lines = (text or "").split("\n")
        marked = {ln - a for ln in c.marked if a and a <= ln <= (b or a)} if source == "file" else set()
        full = Form("full", "\n".join(lines).strip("\n"))
        fn = trim_code if kind in CODE_KINDS and source == "file" else trim_prose
        trimmer = (lambda fn=fn, lines=lines, marked=marked: fn(lines, terms, marked)) if len(lines) > 1 else None
        display = qual if kind in CODE_KINDS + ("module",) and qual else name
        out.append(Item(id=nid, key=key, kind=kind, name=display, path=shown, line_start=a, line_end=b,
                        score=c.score, reason=c.reason, forms=[full, Form("ref", "")], lang=LANG.get(kind, ""),
                        source=source, trimmer=trimmer))
    return out
