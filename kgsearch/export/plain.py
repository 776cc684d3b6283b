"""A plain SQLite copy of the graph that any ``sqlite3`` client reads: node text as TEXT.

The index keeps node bodies of 128+ bytes deflate-compressed (``b"\\x01"`` + raw deflate:
:mod:`kgsearch.store.textcodec`), which only connections that register kgsearch's ``kgtext()``
function can read. This file has no encoding at all::

    nodes(id INTEGER PRIMARY KEY, key TEXT UNIQUE, kind, name, qualname, path, line_start,
          line_end, flags, props JSON, text TEXT)
    edges(id INTEGER PRIMARY KEY, src REFERENCES nodes(id), dst REFERENCES nodes(id),
          source TEXT (node key), target TEXT (node key), type, weight, line, derived)
    meta(key, value): format, source index, generation, kgsearch version, counts

Node and edge ids are the index's row ids at export time (keys are the stable names).
"""
from __future__ import annotations

import json
import os
import sqlite3

from ..version import __version__
from .rows import iter_edges, iter_nodes

__all__ = ["write_sqlite", "FORMAT_VERSION"]

FORMAT_VERSION = 1
SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE nodes(id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, kind TEXT, name TEXT, qualname TEXT,
                   path TEXT, line_start INTEGER, line_end INTEGER, flags INTEGER, props TEXT, text TEXT);
CREATE TABLE edges(id INTEGER PRIMARY KEY, src INTEGER REFERENCES nodes(id), dst INTEGER REFERENCES nodes(id),
                   source TEXT, target TEXT, type TEXT, weight REAL, line INTEGER, derived INTEGER);
"""
INDEXES = """
CREATE INDEX edges_src ON edges(src);
CREATE INDEX edges_dst ON edges(dst);
CREATE INDEX nodes_kind ON nodes(kind);
"""


def write_sqlite(ix, path: str, text: bool = True, types=None, derived: bool = True) -> tuple[int, int]:
    """Write a new SQLite file at ``path`` (replaced if it exists); returns (nodes, edges)."""
    tmp = f"{path}.tmp{os.getpid()}"
    if os.path.exists(tmp):
        os.remove(tmp)
    out = sqlite3.connect(tmp)
    try:
        out.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
        n = m = 0
        batch = []
        for d in iter_nodes(ix, text=text):
            batch.append((d["id"], d["key"], d["kind"], d["name"], d["qualname"], d["path"], d["line_start"],
                          d["line_end"], d["flags"], json.dumps(d["props"], ensure_ascii=False) if d["props"] else None,
                          d["text"]))
            if len(batch) >= 4096:
                out.executemany("INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?)", batch)
                n += len(batch)
                batch = []
        out.executemany("INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?)", batch)
        n += len(batch)
        batch = []
        for e in iter_edges(ix, types, derived):
            batch.append((e["id"], e["src"], e["dst"], e["source"], e["target"], e["type"],
                          e["weight"], e["line"], int(e["derived"])))
            if len(batch) >= 8192:
                out.executemany("INSERT INTO edges VALUES (?,?,?,?,?,?,?,?,?)", batch)
                m += len(batch)
                batch = []
        out.executemany("INSERT INTO edges VALUES (?,?,?,?,?,?,?,?,?)", batch)
        m += len(batch)
        out.executescript(INDEXES)
        meta = {"format": "kgsearch-plain", "format_version": FORMAT_VERSION, "source": str(ix.path),
                "generation": ix.generation, "kgsearch": __version__, "nodes": n, "edges": m,
                "text": text, "derived_edges": derived}
        out.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
        out.commit()
    finally:
        out.close()
    os.replace(tmp, path)
    return n, m
