"""What is in an index (``kgsearch stats``) and one node with its edges (``kgsearch show``)."""
from __future__ import annotations

import json
import os
import posixpath
import time

from .errors import NotFound, UsageError, name_choices
from .lines import quoted, unescape_shown
from .store.db import Index
from .store.rows import find_node_rows, node_row_by_id
from .types import FLAG_PART, resolve_types


def index_stats(ix: Index) -> dict:
    c = ix.conn
    last = ix.meta("last_index_time")
    derived = {}
    for name, gen, secs, info in c.execute("SELECT name, generation, seconds, info FROM derived ORDER BY name"):
        derived[name] = {"generation": gen, "seconds": secs, "info": json.loads(info or "{}")}
    return {
        "db": os.path.abspath(ix.path),       # as `serve` and `mcp` say it, whatever the --db given
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


def find_node(ix: Index, ref: str) -> dict:
    """A node by key, then by qualified name, then by name (case-insensitive), then by row id;
    NotFound otherwise. A name several nodes answer to (two methods ``send``) is a
    :class:`UsageError` listing their keys, never one picked silently; a note and its own
    section of the same name are one candidate (the note), a source file and the class or
    function it holds of its name one candidate (the class), and structural nodes (tags,
    entities, placeholders) only count when nothing else has the name. A name that matches
    nothing is tried once more with the escapes the CLI prints turned back
    (:func:`kgsearch.lines.unescape_shown`: the key ``kg:a\\nb`` shown for ``"a\\nb"``)."""
    rows = find_node_rows(ix.conn, ref)
    if not rows and ref.isascii() and ref.isdigit() and len(ref) < 19:     # a row id (SQLite's: 64-bit)
        row = node_row_by_id(ix.conn, int(ref))
        rows = [row] if row is not None else []
    if not rows:
        rows = file_node_rows(ix, ref)
    if not rows and (plain := unescape_shown(ref)) != ref:
        rows = find_node_rows(ix.conn, plain)       # a key as the CLI prints it: `kg:a\nb` for "a<LF>b"
    if not rows:
        raise NotFound(f"no node {quoted(ref)} in {ix.path}; try `kgsearch search {quoted(ref)}` to find its key",
                       agent=f"no node {quoted(ref)} in the index; call `search` with words from it to find its key")
    best = [r for r in rows if r["flags"] == rows[0]["flags"]]
    by_id = {r["id"]: r for r in best}
    # a source file and the class it is named after (Foo.java, Foo.kt, Foo.cs: class Foo) are one
    # candidate, the class (the file answers to its path); a note and its own section of the same
    # name are one candidate, the note
    files = {r["parent_id"] for r in best if r["kind"] in ("class", "function", "method")
             and by_id.get(r.get("parent_id"), {}).get("kind") == "module"}
    best = [r for r in best if r["id"] not in files and (r.get("parent_id") not in by_id or r["parent_id"] in files)]
    if any(r["key"].startswith("py:") for r in best):
        best = [r for r in best if not r["key"].startswith("pyi:")]       # a stub stands behind its code
    best = _types_before_impls(best)
    best = _implementations_over_signatures(ix, best, ref)
    if len(best) > 1:
        more = ", and more" if len(rows) >= 20 else ""
        names = ", ".join(f"{r['key']} ({r['kind']}{', ' + _where(r) if _where(r) else ''})" for r in best[:10])
        raise UsageError(f"{quoted(ref)} names {len(best)}{'+' if more else ''} nodes in {ix.path}: {names}{more}; "
                         f"pass one of these keys",
                         agent=f"{quoted(ref)} names several nodes: {names}{more}; call again with one of these keys")
    return best[0]


# a type whose methods live outside its body: Rust's `impl` blocks, Go's methods with receivers
_OUTSIDE_TYPES = {"rs": ("struct", "enum", "union"), "go": ("struct", "type")}


def _ns(key: str) -> str:
    return key.partition(":")[0]


def _types_before_impls(rows: list[dict]) -> list[dict]:
    """``rows`` without the Rust ``impl`` blocks named like a type that one of them defines (in
    the same language): ``Parser`` names the ``struct Parser``, not each ``impl Parser``;
    :func:`show_node` lists the blocks under the type."""
    types = {_ns(r["key"]) for r in rows if r["props"].get("decl") in _OUTSIDE_TYPES.get(_ns(r["key"]), ())}
    if not types or len(rows) < 2:
        return rows
    return [r for r in rows if not (r["props"].get("decl") == "impl" and _ns(r["key"]) in types)]


def _base_key(key: str) -> str:
    """A key without the ``#n`` of a second definition of its name (``js:a.ts:f#3`` -> ``js:a.ts:f``)."""
    head, sep, tail = key.rpartition("#")
    return head if sep and tail.isdigit() else key


def _is_signature(props: dict) -> bool:
    """A body-less overload signature: TypeScript's (``decl`` ``signature``), Python's
    ``@typing.overload``."""
    return props.get("decl") == "signature" or any(
        d == "overload" or d.endswith(".overload") for d in props.get("decorators") or ())


def overload_set(ix: Index, node: dict) -> list[dict]:
    """The definitions of ``node``'s name in its file and scope, told apart only by ``#n``
    (TypeScript overloads, Python ``@overload`` s and the implementation), ``node`` included,
    each ``{id, key, line_start, signature}`` in line order; ``[]`` for a node that has none."""
    if not node.get("file_id") or node.get("kind") not in ("function", "method"):
        return []
    base = _base_key(node["key"])
    out = []
    for nid, key, line, props in ix.conn.execute(
            "SELECT id, key, line_start, props FROM nodes WHERE file_id = ? AND name = ? ORDER BY line_start, id",
            (node["file_id"], node["name"])):
        if _base_key(key) == base:
            out.append({"id": nid, "key": key, "line_start": line,
                        "signature": _is_signature(json.loads(props or "{}"))})
    return out if len(out) > 1 else []


def _implementations_over_signatures(ix: Index, rows: list[dict], ref: str) -> list[dict]:
    """``rows`` with each overload signature that one implementation follows (the same name in
    one file and scope, the others body-less) replaced by that implementation: ``useQuery``
    names the function, not its three TypeScript overloads; :func:`show_node` lists them. A
    signature named by its own key stays itself."""
    if not any(_is_signature(r["props"]) and r["key"] != ref for r in rows):
        return rows
    out, seen = [], set()
    for r in rows:
        if _is_signature(r["props"]) and r["key"] != ref:
            impl = [m for m in overload_set(ix, r) if not m["signature"]]
            if len(impl) == 1:
                r = node_row_by_id(ix.conn, impl[0]["id"])
        if r["id"] not in seen:
            seen.add(r["id"])
            out.append(r)
    return out


def _qual_in_file(key: str) -> str:
    """The name inside its file of a Go or Rust node's key (``go:pkg/a.go:Server.Start`` ->
    ``Server.Start``; a later root's ``go://label/a.go:T`` -> ``T``)."""
    rest = key.partition(":")[2]
    if rest.startswith("//"):
        rest = rest[2:].partition("/")[2]
    return rest.partition(":")[2].split("#", 1)[0]


def outside_members(ix: Index, node: dict) -> dict:
    """What a type defines outside its own body (empty for other nodes): a Rust ``struct``,
    ``enum`` or ``union``'s ``impl`` blocks (``{"impls": [{key, trait, path, line_start,
    methods}]}``: the blocks in its file, and in other files when no other type of its language
    has its name), a Go named type's methods with receivers in its package's folder
    (``{"methods": [{key, name, path, line_start}]}``)."""
    ns, decl, c = _ns(node["key"]), (node.get("props") or {}).get("decl"), ix.conn
    if decl not in _OUTSIDE_TYPES.get(ns, ()) or not node.get("path"):
        return {}
    rows = [(nid, key, props, fid) for nid, key, props, fid in c.execute(
        "SELECT id, key, props, file_id FROM nodes WHERE name = ? AND kind = 'class' AND key LIKE ? ORDER BY id",
        (node["name"], ns + ":%"))]
    if ns == "rs":
        twins = [r for r in rows if r[0] != node["id"] and json.loads(r[2] or "{}").get("decl") in _OUTSIDE_TYPES[ns]]
        impls = []
        for nid, key, props, fid in rows:
            props = json.loads(props or "{}")
            if props.get("decl") != "impl" or (twins and fid != node["file_id"]):
                continue
            block = node_row_by_id(c, nid)
            methods = [{"key": k, "name": n, "line_start": ln} for k, n, ln in c.execute(
                f"SELECT key, name, line_start FROM nodes WHERE parent_id = ? AND flags & {FLAG_PART} = 0 "
                f"ORDER BY line_start, id", (nid,))]        # (not the parts of a long block's text)
            impls.append({"key": key, "trait": props.get("trait"), "path": block["path"],
                          "line_start": block["line_start"], "methods": methods})
        return {"impls": impls} if impls else {}
    folder = posixpath.dirname(node["path"])
    files = {fid: path for fid, path in c.execute(
        "SELECT id, path FROM files WHERE path LIKE ? ESCAPE '\\'",
        (folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%",))
        if posixpath.dirname(path) == folder}
    methods = []
    for fid, path in sorted(files.items(), key=lambda p: p[1]):
        for key, name, line in c.execute("SELECT key, name, line_start FROM nodes WHERE file_id = ? AND kind = 'method' "
                                         "ORDER BY line_start, id", (fid,)):
            if _qual_in_file(key) == f"{node['name']}.{name}":
                methods.append({"key": key, "name": name, "path": path, "line_start": line})
    return {"methods": methods} if methods else {}


def file_ids(ix: Index, ref: str) -> list[int]:
    """Ids of the indexed files a path names: absolute, relative to the current folder or to an
    indexed root; else the one indexed file whose path ends with it (``[]``: none, or several)."""
    import os
    from pathlib import Path

    if "\0" in ref or not ref.strip() or ("/" not in ref and "." not in ref):
        return []                                # (a NUL byte: no file has it; realpath raises)
    roots = [Path(r) for r in ix.meta_json("roots", [])]
    p = Path(ref).expanduser()
    tries = [p] if p.is_absolute() else [Path.cwd() / p] + [r / p for r in roots]
    for t in tries:
        for cand in dict.fromkeys([str(t), os.path.abspath(t), os.path.realpath(t)]):
            row = ix.conn.execute("SELECT id FROM files WHERE path=?", (cand,)).fetchone()
            if row is not None:
                return [row[0]]
    if p.is_absolute() or "/" not in ref.strip("/"):
        return []
    tail = "/" + ref.strip().lstrip("./").replace("\\", "/")
    rows = ix.conn.execute("SELECT id FROM files WHERE path LIKE ? ESCAPE '\\' LIMIT 2",
                           ("%" + tail.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),)).fetchall()
    return [rows[0][0]] if len(rows) == 1 else []


def file_node_rows(ix: Index, ref: str) -> list[dict]:
    """The node of the file a path names (its module or note: the file's first top-level node),
    in every language (``src/x.py`` names ``py:src.x``, ``src/a.rs`` names ``rs:src/a.rs``)."""
    rows = []
    for fid in file_ids(ix, ref):
        row = ix.conn.execute("SELECT id FROM nodes WHERE file_id = ? AND parent_id IS NULL "
                              "ORDER BY kind NOT IN ('module', 'note'), id LIMIT 1", (fid,)).fetchone()
        if row is not None:
            rows.append(node_row_by_id(ix.conn, row[0]))
    return rows


def _where(row: dict) -> str:
    path = row.get("path") or ""
    return f"{path}:{row['line_start']}" if path and row.get("line_start") else path


def show_node(ix: Index, ref: str, limit: int = 25) -> dict:
    """A node with up to ``limit`` edges each way (0: none; SQLite reads a negative LIMIT as
    no limit at all, so a negative one is a usage error)."""
    if not isinstance(limit, int) or limit < 0:
        raise UsageError(f"--edges must be a whole number >= 0, got {limit!r}")
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
        **outside_members(ix, node),
        **_overloads(ix, node),
    }


def _overloads(ix: Index, node: dict) -> dict:
    """The other definitions of an overloaded name (``{"overloads": [{key, line_start,
    signature}]}``), empty for a name defined once."""
    others = [{k: m[k] for k in ("key", "line_start", "signature")} for m in overload_set(ix, node)
              if m["id"] != node["id"]]
    return {"overloads": others} if others else {}


def related_nodes(ix: Index, ref: str, types: list[str] | None = None, direction: str = "both",
                  limit: int = 50, what: str = "--types") -> dict:
    """The neighbours of a node grouped by edge type: ``{"node", "edges": {type: [...]}, "total",
    "types"}``; each neighbour with its direction (``out``: node -> it, ``in``: it -> node).
    ``types`` (None: all) must name edge types of the index: an unknown one is a
    :class:`UsageError` listing them, as ``path``, ``impact`` and ``export`` answer; ``what``
    names the argument in it (the CLI's flag, the HTTP API's parameter)."""
    from .store.rows import PATH_SQL

    node = find_node(ix, ref)
    c = ix.conn
    known = [r[0] for r in c.execute("SELECT DISTINCT type FROM edges WHERE dst IS NOT NULL ORDER BY type")]
    if types:
        types, bad = resolve_types(types, known)
        if bad:
            says = f"no edge type {quoted(bad[0])} in this index; it has: {name_choices(known, bad[0]) or 'no edges'}"
            raise UsageError(f"{what}: {says}", agent=f"types: {says}")
    want = types or known
    cols = (f"e.type, e.weight, n.id, n.key, n.name, n.kind, {PATH_SQL.format(a='n')}, n.line_start")
    parts = []
    if direction in ("out", "both"):
        parts.append(("out", f"SELECT {cols} FROM edges e JOIN nodes n ON n.id = e.dst "
                             f"LEFT JOIN files f ON f.id = n.file_id WHERE e.src=?"))
    if direction in ("in", "both"):
        parts.append(("in", f"SELECT {cols} FROM edges e JOIN nodes n ON n.id = e.src "
                            f"LEFT JOIN files f ON f.id = n.file_id WHERE e.dst=?"))
    rows = []
    for d, sql in parts:
        for t, w, nid, key, name, kind, path, line in c.execute(sql, (node["id"],)):
            if t in want:
                rows.append((t, d, key, {"direction": d, "key": key, "name": name, "kind": kind, "path": path,
                                         "line": line, "weight": w}))
    rows.sort(key=lambda r: (r[0], r[1] != "out", r[2]))
    edges: dict[str, list] = {}
    for t, _, _, d in rows[:limit]:
        edges.setdefault(t, []).append(d)
    return {"node": {k: node[k] for k in ("id", "key", "kind", "name", "path", "line_start")},
            "edges": edges, "total": len(rows), "shown": min(len(rows), limit), "types": known}
