"""Reading node rows: the one home of the encodings that migrations gave the ``nodes`` table.

Three columns are not stored as they read (see docs/DESIGN.md, "The index"):

* ``text`` of 128+ bytes is a deflate BLOB (migration 0008): read it as ``kgtext(text)``
  (every :class:`~kgsearch.store.db.Index` connection registers the function);
* ``qualname`` is '' for a code node whose key is ``py:`` + qualname (migration 0005): read it
  through :func:`qualname_sql`, write it through :func:`packed_qualname`;
* ``path`` is NULL for a node that a file owns (migration 0006): read ``coalesce(n.path, f.path)``
  with ``LEFT JOIN files f ON f.id = n.file_id`` (:data:`PATH_SQL`).

Every reader outside the indexer's writer goes through the functions below, so a future
encoding changes one module.
"""
from __future__ import annotations

import json
from typing import Iterable, Iterator, Sequence

from ..types import FLAG_AUTO
from .sql import fetch_in, iter_in_chunks

__all__ = ["PACKED_QUALNAME_KINDS", "qualname_sql", "packed_qualname", "PATH_SQL", "NODE_FIELDS", "node_cols",
           "node_meta", "rel_path", "node_flags", "iter_node_texts", "node_texts", "find_node_row", "find_node_rows",
           "node_row_by_id"]

# A code node's qualified name is its key after the namespace (``py:pkg.mod.Class.method`` ->
# ``pkg.mod.Class.method``), so it is stored as '' and rebuilt on read: 3.8 MB less on the
# stdlib index. Rows written before keep their full qualname (read as is).
PACKED_QUALNAME_KINDS = ("module", "class", "function", "method")
PATH_SQL = "coalesce({a}.path, f.path)"        # with LEFT JOIN files f ON f.id = {a}.file_id


def qualname_sql(alias: str = "nodes") -> str:
    """SQL expression for the qualified name of the row ``alias`` of ``nodes``."""
    a = alias
    kinds = ",".join(f"'{k}'" for k in PACKED_QUALNAME_KINDS)
    return (f"(CASE WHEN {a}.qualname = '' AND {a}.kind IN ({kinds}) "
            f"THEN substr({a}.key, instr({a}.key, ':') + 1) ELSE {a}.qualname END)")


def packed_qualname(key: str, kind: str, qualname: str | None) -> str:
    """What to store in ``nodes.qualname`` ('' when the key gives it back).

    >>> packed_qualname("py:pkg.mod.f", "function", "pkg.mod.f")
    ''
    >>> packed_qualname("md:notes/a", "note", "notes/a")
    'notes/a'
    """
    q = qualname or ""
    if q and kind in PACKED_QUALNAME_KINDS and key.partition(":")[2] == q:
        return ""
    return q


# ---------------------------------------------------------------------------- display rows
def node_meta(conn, ids: Iterable[int], text: bool = True) -> dict[int, dict]:
    """Display fields of nodes by id: key, kind, name, qualname, path, line_start, line_end,
    flags, text (decoded; '' with ``text=False``, for candidate lists whose texts are not shown),
    the parent's key and the file's indexed root."""
    tcol = "kgtext(n.text)" if text else "''"
    sql = (f"SELECT n.id, n.key, n.kind, n.name, {qualname_sql('n')}, {PATH_SQL.format(a='n')}, n.line_start, "
           f"n.flags, {tcol}, p.key, f.root, n.line_end FROM nodes n LEFT JOIN nodes p ON p.id = n.parent_id "
           f"LEFT JOIN files f ON f.id = n.file_id WHERE n.id IN ({{}})")
    out = {}
    for r in fetch_in(conn, sql, [int(x) for x in ids]):
        out[r[0]] = {"key": r[1], "kind": r[2], "name": r[3], "qualname": r[4], "path": r[5],
                     "line_start": r[6], "flags": r[7], "text": r[8], "parent": r[9], "root": r[10],
                     "line_end": r[11]}
    return out


def rel_path(meta: dict) -> str:
    """A node's path relative to its indexed root (its absolute path when it has no root)."""
    path, root = meta.get("path") or "", meta.get("root") or ""
    if root and path.startswith(root.rstrip("/\\") + "/"):
        return path[len(root.rstrip("/\\")) + 1:]
    return path


def node_flags(conn, ids: Iterable[int]) -> dict[int, int]:
    """``flags`` of nodes by id (ids that no longer exist are absent)."""
    return dict(fetch_in(conn, "SELECT id, flags FROM nodes WHERE id IN ({})", [int(x) for x in ids]))


# ---------------------------------------------------------------------------- texts
def iter_node_texts(conn, ids: Sequence[int] | None = None, batch: int = 2048) -> Iterator[tuple[int, str, str]]:
    """``(id, name, text)`` in ascending id order, texts decoded: every node, or ``ids``."""
    if ids is None:
        cur = conn.execute("SELECT id, name, kgtext(text) FROM nodes ORDER BY id")
        while True:
            rows = cur.fetchmany(batch)
            if not rows:
                return
            yield from rows
    else:
        yield from iter_in_chunks(conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({}) ORDER BY id",
                                  sorted({int(i) for i in ids}))


def node_texts(conn, ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """``{id: (name, text)}`` for ``ids`` (texts decoded)."""
    return {nid: (name, text) for nid, name, text in iter_node_texts(conn, list(ids))}


# ---------------------------------------------------------------------------- whole rows
NODE_FIELDS = ("id", "key", "kind", "name", "qualname", "text", "path", "line_start", "line_end", "flags", "props",
               "file_id", "parent_id")


def node_cols() -> str:
    """SELECT list of :data:`NODE_FIELDS` from ``nodes`` (decoded, path and qualname filled in)."""
    return ", ".join("coalesce(nodes.path, (SELECT f.path FROM files f WHERE f.id = nodes.file_id))"
                     if c == "path" else qualname_sql() if c == "qualname" else "kgtext(text)" if c == "text" else c
                     for c in NODE_FIELDS)


def _node_dict(row) -> dict:
    d = dict(zip(NODE_FIELDS, row))
    d["props"] = json.loads(d["props"]) if d.get("props") else {}
    return d


def find_node_rows(conn, ref: str, limit: int = 20) -> list[dict]:
    """The nodes ``ref`` names, from the first way that names any: key, ``py:`` + ref (a
    qualified name), qualified name, name, name in any case, a stored alias (a note's
    front-matter alias, title, file name or path, in any case and spacing) (structural nodes
    last, then by id); at most ``limit``. Several rows mean several candidates (see ``stats.find_node``).
    Structural nodes (tags, entities: their qualified name is the bare word) named by a
    qualified name give way to the nodes of that name (``send``: the functions ``send``, not
    the entity ``ent:send``); they answer when nothing else does."""
    cols = node_cols()
    structural = None
    said = " ".join(ref.split()).lower()         # (how names are kept in ``aliases``)
    for i, (sql, args) in enumerate((
            (f"SELECT {cols} FROM nodes WHERE key=?", (ref,)),
            (f"SELECT {cols} FROM nodes WHERE key=?", ("py:" + ref,)),
            (f"SELECT {cols} FROM nodes WHERE {qualname_sql()}=? ORDER BY flags, id LIMIT ?", (ref, limit)),
            (f"SELECT {cols} FROM nodes WHERE name=? ORDER BY flags, id LIMIT ?", (ref, limit)),
            (f"SELECT {cols} FROM nodes WHERE lower(name)=lower(?) ORDER BY flags, id LIMIT ?", (ref, limit)),
            # a qualified name's suffix in any language (Cls.m, Cls::m, pkg.Cls.m): the rows of its
            # last name, kept below by their qualified names
            (f"SELECT {cols} FROM nodes WHERE name=? AND flags & {FLAG_AUTO} = 0 ORDER BY id LIMIT 1000",
             (_last_name(ref),)),
            # a note's front-matter alias, file name or path (the best-ranked holders: a note
            # before the placeholder of a dangling link to that name)
            # (the (ns, name) index answers it: one look-up, at any size)
            (f"SELECT {cols} FROM nodes WHERE id IN (SELECT node_id FROM aliases WHERE ns = 'note' AND name = ? "
             f"AND rank = (SELECT min(rank) FROM aliases WHERE ns = 'note' AND name = ?)) ORDER BY flags, id LIMIT ?",
             (said, said, limit)))):
        if i == 5:
            if _last_name(ref) == ref:
                continue
            rows = [r for r in conn.execute(sql, args).fetchall() if names_suffix(r[1], ref)][:limit]
        else:
            rows = conn.execute(sql, args).fetchall()
        if rows:
            found = [_node_dict(r) for r in rows]
            if i >= 2 and all(d["flags"] & FLAG_AUTO for d in found):
                structural = structural or found
                continue
            return found
    return structural or []


def _dotted(ref: str) -> str:
    return ref.strip().replace("::", ".").replace("#", ".")


def _last_name(ref: str) -> str:
    return _dotted(ref).rsplit(".", 1)[-1]


def names_suffix(key: str, ref: str) -> bool:
    """``ref`` (``Cls.m``, ``Cls::m``, ``pkg.Cls.m``; two names at least) ends the qualified name
    of the code node ``key`` in its language: Python's ``pkg.mod.Cls.m``; the other loaders' name
    inside the file (``rs:src/lib.rs:Parser.advance``), optionally after its file's stem and its
    folders (a Go package, a Java package, a JS module: ``pkg.Server.Start``, ``com.ex.Foo.bar``).

    >>> names_suffix("py:pkg.mod.Store.fetch", "Store.fetch"), names_suffix("rs:src/lib.rs:Parser.advance", "Parser::advance")
    (True, True)
    >>> names_suffix("java:src/com/ex/Foo.java:Foo.bar", "com.ex.Foo.bar"), names_suffix("go:pkg/s.go:T.Start", "pkg.T.Start")
    (True, True)
    >>> names_suffix("js:a/util.js:Cache.lookup", "Other.lookup"), names_suffix("md:notes/Foo.bar", "Foo.bar")
    (False, False)
    """
    want = _dotted(ref).strip(".")
    if "." not in want:
        return False
    ns, _, rest = key.partition(":")
    if rest.startswith("//"):                   # a later root's key: ns://label/...
        rest = rest[2:].partition("/")[2]
    rest = rest.split("#", 1)[0]
    if ns in ("py", "pyi"):
        forms = [rest]
    elif ":" in rest:
        path, _, qual = rest.partition(":")
        folder, _, base = path.rpartition("/")
        stem = base.rpartition(".")[0] or base
        dirs = ".".join(p for p in folder.split("/") if p)
        forms = [qual, f"{stem}.{qual}"] + ([f"{dirs}.{qual}", f"{dirs}.{stem}.{qual}"] if dirs else [])
    else:
        return False
    return any(f == want or f.endswith("." + want) for f in forms)


def find_node_row(conn, ref: str) -> dict | None:
    """The first of :func:`find_node_rows`; ``None`` when nothing matches."""
    rows = find_node_rows(conn, ref, 1)
    return rows[0] if rows else None


def node_row_by_id(conn, nid: int) -> dict | None:
    row = conn.execute(f"SELECT {node_cols()} FROM nodes WHERE id=?", (int(nid),)).fetchone()
    return None if row is None else _node_dict(row)
