"""``kgsearch export``: the index's graph in the formats other tools read.

=========  ====================================================================================
format     what is written (see each module)
=========  ====================================================================================
graphml    :mod:`.graphml`: Gephi, Cytoscape, yEd, ``networkx.read_graphml``
jsonl      :mod:`.jsonl`: one JSON object per node, then per edge, plain text (kgsearch's own
           KG record shape)
vault      :mod:`.vault`: a folder of Markdown notes with ``[[wikilinks]]`` (Obsidian)
sqlite     :mod:`.plain`: a plain SQLite file, node text as TEXT, for any ``sqlite3`` client
=========  ====================================================================================

:func:`export` writes one of them and returns ``{"format", "out", "nodes", "edges"}``.
"""
from __future__ import annotations

import os
import sqlite3
import sys

from ..errors import UsageError, name_choices
from ..lines import quoted
from ..types import resolve_types

__all__ = ["export", "FORMATS"]

FORMATS = ("graphml", "jsonl", "vault", "sqlite")


def export(ix, fmt: str, out: str, text: bool | None = None, types=None, derived: bool | None = None) -> dict:
    """Write the index's graph as ``fmt`` to ``out`` (a file; ``-`` is stdout for graphml and
    jsonl; a folder for vault). ``text``: include node text (default: yes, but no for
    graphml); ``types``: only these edge types; ``derived``: include derived ``similar_text``
    edges (default: yes, but no for vault)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")
    if types:
        known = {r[0] for r in ix.conn.execute("SELECT DISTINCT type FROM edges WHERE dst IS NOT NULL")}
        types, bad = resolve_types(types, known)
        if bad:
            raise UsageError(f"--types: no edge type {quoted(bad[0])} in this index; it has: "
                             f"{name_choices(sorted(known), bad[0])}")
    if out != "-":
        _check_out(ix, out, fmt)
    try:
        return _export(ix, fmt, out, text, types, derived)
    except BrokenPipeError:
        raise                         # `export jsonl - | head`: the reader has what it wanted (the CLI exits 0)
    except OSError as exc:
        from ..errors import DataError

        raise DataError(f"cannot write the export ({exc.strerror or exc}); choose a folder you can write to",
                        out) from None


def _check_out(ix, out: str, fmt: str | None = None) -> None:
    """The export never replaces the index itself or a file the index was made from (a typo such
    as ``export jsonl notes/plan.md`` replaced the note; ``export sqlite INDEX.db`` the index),
    nor writes what the next index run would read back (a vault or JSON Lines inside a root)."""
    real = os.path.realpath(os.path.expanduser(out))
    index = os.path.realpath(str(ix.path))
    if real in (index, index + "-wal", index + "-shm"):
        raise UsageError(f"{out} is the index being exported; write the export to another file")
    if os.path.isfile(real) and ix.conn.execute("SELECT 1 FROM files WHERE path = ?", (real,)).fetchone():
        raise UsageError(f"{out} is a file this index was made from; writing the export there would replace it: "
                         f"choose another path")
    if fmt in ("vault", "jsonl"):
        from pathlib import Path

        from ..ingest.loaders import loader_for
        from ..ingest.walk import inside
        from ..store.roots import list_roots

        if fmt == "vault" or loader_for(Path(real), None) is not None:
            for r in list_roots(ix.conn):
                if os.path.isdir(r.path) and inside(real, r.path):
                    raise UsageError(f"{out} is inside the indexed folder {r.path}: the next `kgsearch index` would "
                                     f"index the export too (every node twice); write it outside the indexed folders")


def _special(out: str) -> bool:
    """``out`` exists and is no regular file or folder: a device (``/dev/stdout``, ``/dev/null``)
    or a named pipe."""
    import stat

    try:
        mode = os.stat(out).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _export(ix, fmt: str, out: str, text, types, derived) -> dict:
    text = (fmt != "graphml") if text is None else bool(text)
    derived = (fmt != "vault") if derived is None else bool(derived)
    if fmt == "vault":
        from .vault import write_vault

        if out == "-":
            raise UsageError("a vault is a folder: give its path, not -")
        n, m = write_vault(ix, out, text, types, derived)
    elif fmt == "sqlite":
        from .plain import write_sqlite

        if out == "-" or _special(out):
            raise UsageError(f"an SQLite file cannot go to {'stdout' if out == '-' else out}: give a file's path")
        try:
            n, m = write_sqlite(ix, out, text, types, derived)
        except sqlite3.Error as exc:          # "unable to open database file" (/proc/x.db), a full disk
            from ..errors import DataError

            raise DataError(f"cannot write the export ({exc}); choose a folder you can write to", out) from None
    else:
        from .graphml import write_graphml
        from .jsonl import write_jsonl

        write = write_graphml if fmt == "graphml" else write_jsonl
        if out == "-":
            n, m = write(ix, sys.stdout, text, types, derived)
        elif _special(out):
            # /dev/stdout, /dev/null, a named pipe: written to as they are (a temporary file beside
            # /dev/null renamed over it replaced the device, as root, or failed, as anyone else)
            with open(out, "w", encoding="utf-8", newline="\n") as fh:
                n, m = write(ix, fh, text, types, derived)
        else:
            tmp = f"{out}.tmp{os.getpid()}"
            try:
                with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                    n, m = write(ix, fh, text, types, derived)
                os.replace(tmp, out)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
    return {"format": fmt, "out": out, "nodes": n, "edges": m, "text": text, "derived_edges": derived,
            "types": list(types) if types else None}
