"""The rows every export format writes: nodes with their decoded text, and resolved edges by
node key, read in id order with a cursor (memory stays flat on a million nodes)."""
from __future__ import annotations

import json
from typing import Iterator

from ..store.rows import PATH_SQL, qualname_sql

__all__ = ["iter_nodes", "iter_edges", "counts", "NODE_COLUMNS", "EDGE_COLUMNS"]

NODE_COLUMNS = ("id", "key", "kind", "name", "qualname", "path", "line_start", "line_end", "flags", "props", "text")
EDGE_COLUMNS = ("id", "src", "dst", "source", "target", "type", "weight", "line", "derived", "props")


def _where_edges(types, derived: bool) -> tuple[str, list]:
    cond, args = ["e.dst IS NOT NULL"], []
    if not derived:
        cond.append("e.file_id IS NOT NULL")
    if types:
        cond.append(f"e.type IN ({','.join('?' * len(types))})")
        args += list(types)
    return " AND ".join(cond), args


def iter_nodes(ix, text: bool = True, batch: int = 2048, full: bool = False) -> Iterator[dict]:
    """Every node as a dict of :data:`NODE_COLUMNS` (``props`` parsed; ``text`` decoded, or
    None without ``text``). ``full``: also ``parent`` (its container's key or None) and
    ``aliases`` (the stored names it answers to, ``[ns, name, rank]``), which a re-indexed
    export needs to be the same node."""
    tcol = "kgtext(n.text)" if text else "NULL"
    cur = ix.conn.execute(f"SELECT n.id, n.key, n.kind, n.name, {qualname_sql('n')}, {PATH_SQL.format(a='n')}, "
                          f"n.line_start, n.line_end, n.flags, n.props, {tcol} FROM nodes n "
                          f"LEFT JOIN files f ON f.id = n.file_id ORDER BY n.id")
    conn = ix.conn
    while True:
        rows = cur.fetchmany(batch)
        if not rows:
            return
        parents: dict[int, str] = {}
        aliases: dict[int, list] = {}
        if full:
            lo, hi = rows[0][0], rows[-1][0]
            parents = dict(conn.execute("SELECT n.id, p.key FROM nodes n JOIN nodes p ON p.id = n.parent_id "
                                        "WHERE n.id BETWEEN ? AND ?", (lo, hi)))
            for nid, ns, name, rank in conn.execute("SELECT node_id, ns, name, rank FROM aliases "
                                                    "WHERE node_id BETWEEN ? AND ? ORDER BY node_id, rank, ns, name",
                                                    (lo, hi)):
                aliases.setdefault(nid, []).append([ns, name, rank])
        for r in rows:
            d = dict(zip(NODE_COLUMNS, r))
            d["props"] = json.loads(d["props"]) if d["props"] else {}
            if full:
                d["parent"] = parents.get(d["id"])
                d["aliases"] = aliases.get(d["id"], [])
            yield d


def iter_edges(ix, types=None, derived: bool = True, batch: int = 8192) -> Iterator[dict]:
    """Every resolved edge as a dict of :data:`EDGE_COLUMNS` (``src``/``dst`` are node ids,
    ``source``/``target`` their keys, ``props`` parsed; ``derived`` is true for edges no file wrote: ``similar_text``). ``derived=False``
    leaves those out; ``types`` keeps only those edge types."""
    where, args = _where_edges(types, derived)
    cur = ix.conn.execute(f"SELECT e.id, e.src, e.dst, s.key, d.key, e.type, e.weight, e.line, e.file_id IS NULL, e.props FROM edges e "
                          f"JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst WHERE {where} ORDER BY e.id",
                          args)
    while True:
        rows = cur.fetchmany(batch)
        if not rows:
            return
        for r in rows:
            d = dict(zip(EDGE_COLUMNS, r))
            d["derived"] = bool(d["derived"])
            d["props"] = json.loads(d["props"]) if d["props"] else {}
            yield d


def counts(ix, types=None, derived: bool = True) -> tuple[int, int]:
    """(nodes, edges) that :func:`iter_nodes` and :func:`iter_edges` give."""
    where, args = _where_edges(types, derived)
    n = ix.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    m = ix.conn.execute(f"SELECT count(*) FROM edges e WHERE {where}", args).fetchone()[0]
    return int(n), int(m)
