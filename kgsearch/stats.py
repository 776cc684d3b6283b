"""What is in an index (``kgsearch stats``) and one node with its edges (``kgsearch show``)."""
from __future__ import annotations

import json
import time

from .errors import NotFound
from .store.db import Index, qualname_sql


def index_stats(ix: Index) -> dict:
    c = ix.conn
    last = ix.meta("last_index_time")
    derived = {}
    for name, gen, secs, info in c.execute("SELECT name, generation, seconds, info FROM derived ORDER BY name"):
        derived[name] = {"generation": gen, "seconds": secs, "info": json.loads(info or "{}")}
    return {
        "db": str(ix.path),
        "db_bytes": ix.size_bytes(),
        "schema_version": int(ix.meta("schema_version", "0") or 0),
        "tool_version": ix.meta("tool_version"),
        "created_with": ix.meta("created_with"),
        "generation": ix.generation,
        "last_index_time": float(last) if last else None,
        "last_index_time_iso": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(last))) if last else None,
        "roots": ix.meta_json("roots", []),
        "settings": ix.meta_json("settings", {}),
        "model_id": ix.meta("model_id"),
        "files": c.execute("SELECT count(*) FROM files").fetchone()[0],
        "nodes": c.execute("SELECT count(*) FROM nodes").fetchone()[0],
        "edges": c.execute("SELECT count(*) FROM edges WHERE dst IS NOT NULL").fetchone()[0],
        "edges_unresolved": c.execute("SELECT count(*) FROM edges WHERE dst IS NULL").fetchone()[0],
        "nodes_by_kind": dict(c.execute("SELECT kind, count(*) FROM nodes GROUP BY kind ORDER BY count(*) DESC, kind")),
        "edges_by_type": dict(c.execute("SELECT type, count(*) FROM edges WHERE dst IS NOT NULL GROUP BY type "
                                        "ORDER BY count(*) DESC, type")),
        "files_by_loader": dict(c.execute("SELECT loader, count(*) FROM files GROUP BY loader ORDER BY loader")),
        "derived": derived,
    }


NODE_FIELDS = ("id", "key", "kind", "name", "qualname", "text", "path", "line_start", "line_end", "flags", "props",
               "file_id", "parent_id")
# a file-owned node's path is its file's (nodes.path is NULL for those, see migration 0006)
# and a code node's qualname is its key's (see store.db.qualname_sql)
NODE_COLS = ", ".join("coalesce(nodes.path, (SELECT f.path FROM files f WHERE f.id = nodes.file_id))"
                      if c == "path" else qualname_sql() if c == "qualname" else "kgtext(text)" if c == "text" else c
                      for c in NODE_FIELDS)


def _node_dict(row) -> dict:
    d = dict(zip(NODE_FIELDS, row))
    d["props"] = json.loads(d["props"]) if d.get("props") else {}
    return d


def find_node(ix: Index, ref: str) -> dict:
    """A node by key, then by qualified name, then by name (case-insensitive); NotFound otherwise."""
    c = ix.conn
    for sql, arg in ((f"SELECT {NODE_COLS} FROM nodes WHERE key=?", ref),
                     (f"SELECT {NODE_COLS} FROM nodes WHERE key=?", "py:" + ref),      # a qualified name
                     (f"SELECT {NODE_COLS} FROM nodes WHERE {qualname_sql()}=? ORDER BY id LIMIT 1", ref),
                     (f"SELECT {NODE_COLS} FROM nodes WHERE name=? ORDER BY flags, id LIMIT 1", ref),
                     (f"SELECT {NODE_COLS} FROM nodes WHERE lower(name)=lower(?) ORDER BY flags, id LIMIT 1", ref)):
        row = c.execute(sql, (arg,)).fetchone()
        if row is not None:
            return _node_dict(row)
    if ref.isdigit():
        row = c.execute(f"SELECT {NODE_COLS} FROM nodes WHERE id=?", (int(ref),)).fetchone()
        if row is not None:
            return _node_dict(row)
    raise NotFound(f"no node {ref!r} in {ix.path}; try `kgsearch search {ref!r}` to find its key")


def show_node(ix: Index, ref: str, limit: int = 25) -> dict:
    node = find_node(ix, ref)
    c = ix.conn
    nid = node["id"]
    out_sql = ("SELECT e.type, e.weight, n.id, n.key, n.name, n.kind FROM edges e JOIN nodes n ON n.id = e.dst "
               "WHERE e.src=? ORDER BY e.type, n.name LIMIT ?")
    in_sql = ("SELECT e.type, e.weight, n.id, n.key, n.name, n.kind FROM edges e JOIN nodes n ON n.id = e.src "
              "WHERE e.dst=? ORDER BY e.type, n.name LIMIT ?")
    cols = ("type", "weight", "id", "key", "name", "kind")
    return {
        "node": node,
        "out": [dict(zip(cols, r)) for r in c.execute(out_sql, (nid, limit))],
        "in": [dict(zip(cols, r)) for r in c.execute(in_sql, (nid, limit))],
        "out_total": c.execute("SELECT count(*) FROM edges WHERE src=? AND dst IS NOT NULL", (nid,)).fetchone()[0],
        "in_total": c.execute("SELECT count(*) FROM edges WHERE dst=?", (nid,)).fetchone()[0],
        "unresolved_out": c.execute("SELECT count(*) FROM edges WHERE src=? AND dst IS NULL", (nid,)).fetchone()[0],
    }
