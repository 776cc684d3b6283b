"""What the graph questions share: the index's graph, nodes named by the user, display rows."""
from __future__ import annotations

import numpy as np

from ..errors import BadIndex, NotFound, UsageError, name_choices
from ..lines import quoted
from ..graph.context import GraphContext, load_context
from ..stats import file_ids, find_node
from ..store.rows import find_node_rows, node_meta, rel_path
from ..store.sql import iter_in_chunks
from ..types import resolve_types

__all__ = ["graph_of", "resolve", "resolve_start", "display", "check_types", "TEST_FLAG"]

TEST_FLAG = 2                 # nodes.flags bit 1: test code (see docs/DESIGN.md)


def graph_of(ix) -> GraphContext:
    """The index's graph; BadIndex (exit 4) when no index run has stored one."""
    ctx = load_context(ix)
    if ctx is not None and ctx.graph.n == 0 and not ix.conn.execute("SELECT 1 FROM nodes LIMIT 1").fetchone():
        roots = [r[0] for r in ix.conn.execute("SELECT path FROM roots ORDER BY position")]
        raise BadIndex(f"{ix.path} holds no nodes: " + (f"its roots ({', '.join(roots[:3])}) have no file kgsearch "
                       f"can index; " if roots else "") + "index a folder of notes or code with `kgsearch index PATH`")
    if ctx is None or ctx.graph.n == 0:
        raise BadIndex(f"{ix.path} has no graph yet (nothing indexed, or the graph step never finished); "
                       f"run `kgsearch index PATH`")
    return ctx


def resolve(ix, ctx: GraphContext, ref: str) -> tuple[dict, int]:
    """A node the user named (key, qualified name, name or row id) and its graph position."""
    row = find_node(ix, ref)
    pos = int(ctx.positions([row["id"]])[0])
    if pos < 0:
        raise NotFound(f"node {quoted(row['key'])} is not in the graph of {ix.path} yet; run `kgsearch index` to update it")
    return row, pos


def resolve_start(ix, ctx: GraphContext, ref: str) -> tuple[dict, list[int]]:
    """What ``impact`` starts from: a node (key, name, ...), else an indexed file (every node
    it holds). Returns (a description, node ids)."""
    fids = [] if find_node_rows(ix.conn, ref, 1) else file_ids(ix, ref)
    if not fids:                                 # a node (key, name, ...), before a file of that path
        try:
            row = find_node(ix, ref)
        except NotFound:
            raise NotFound(f"no node or indexed file {quoted(ref)} in {ix.path}; try `kgsearch search {quoted(ref)}` "
                           f"to find its key") from None
        return {k: row[k] for k in ("id", "key", "kind", "name", "path", "line_start")}, [row["id"]]
    ids = [r[0] for r in iter_in_chunks(ix.conn, "SELECT id FROM nodes WHERE file_id IN ({}) ORDER BY id", fids)]
    path = ix.conn.execute("SELECT path FROM files WHERE id=?", (fids[0],)).fetchone()[0]
    return {"file": path, "nodes": len(ids)}, ids


def display(ix, ids) -> dict[int, dict]:
    """``{id: {id, key, name, kind, path, relpath, line}}`` (no texts)."""
    meta = node_meta(ix.conn, [int(i) for i in ids], text=False)
    return {i: {"id": i, "key": m["key"], "name": m["name"], "kind": m["kind"], "path": m["path"],
                "relpath": rel_path(m) or None, "line": m["line_start"], "test": bool((m["flags"] or 0) & TEST_FLAG)}
            for i, m in meta.items()}


def check_types(ctx: GraphContext, types, what: str = "--types") -> list[str] | None:
    """Edge type names the graph has, as it has them (``Depends On`` is ``depends_on``; None
    passes); UsageError naming the valid ones."""
    if types is None:
        return None
    known = sorted(ctx.etype_names)
    types, bad = resolve_types([t for t in types if t], known)
    if bad or not types:
        says = (f"no edge type {quoted(bad[0] if bad else '')} in this index; it has: "
                f"{name_choices(known, bad[0] if bad else '') or 'no edges'}")
        raise UsageError(f"{what}: {says}", agent=f"{what.lstrip('-')}: {says}")
    return types


def ids_at(ctx: GraphContext, pos) -> np.ndarray:
    return ctx.ids_of(np.asarray(pos, dtype=np.int64))
