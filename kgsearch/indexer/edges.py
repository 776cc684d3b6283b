"""Edges of a run: staged per file, resolved to node ids, re-resolved when names come and go.

Loaders give an edge's target as ``(ns, dst_name)``; resolution turns it into ``dst`` (see
docs/DESIGN.md, "The index"). A file's edges are replaced when it is reloaded: they are staged
in ``temp.edge_stage`` while files load and moved into ``edges`` once every file is in (an
edge may point at a node of a file loaded later). An edge is looked at again when its target
was removed, or when one of its candidate names gained or lost a node this run, so an
incremental run leaves the edges a full rebuild would. Python and Rust names that only resolve
through a module's re-export (``from .core import Foo`` in a package, ``pub use self::x::Foo;``)
are followed with :func:`kgsearch.ingest.pynames.reexport_resolver` (:data:`REEXPORT_NS`).
Calls through a field of a struct another file declares (Go, Rust: edges with
:data:`~kgsearch.ingest.codemodel.FIELD_PROPS`) are resolved through the fields its node lists
(:meth:`EdgeResolver.resolve_field_calls`), all of them again in every run that loads or
deletes a file, so that they follow the struct's file as a fresh build would. So are the
``member_of`` edges (:data:`~kgsearch.types.MEMBER_OF`: a method defined outside its type's
declaration, to the type; :meth:`EdgeResolver.resolve_members`), which choose among the types
of one name by the method's file.
"""
from __future__ import annotations

import json
import re
from collections import Counter

from ..errors import DataError
from ..ingest.codemodel import FIELD_PROPS
from ..ingest.pynames import reexport_resolver
from ..lines import quoted
from ..store.sql import CHUNK, iter_in_chunks
from ..types import FLAG_AUTO, FLAG_PLACEHOLDER, MEMBER_OF
from .keys import plain_name
from .load import dumps_props
from .state import RunState, edge_multiset
from .writer import Writer

__all__ = ["EdgeResolver", "AUTO_NS", "REEXPORT_NS"]

PRELOAD_NAMES = 2000       # staged names of one namespace from which its names may be read at once ...
PRELOAD_FRACTION = 0.05    # ... when they are at least this fraction of the nodes (else: batched lookups)
# The edges that name a target and may resolve again when names come and go: the files' edges
# only (index edges_named, migration 0017); derived edges (similar_text) belong to their step.
NAMED_EDGES_SQL = ("SELECT id, dst_name FROM edges WHERE ns IN (?, ?) AND dst_name != '' AND file_id IS NOT NULL "
                   "AND id < ?")
FEW_NAMES = 16             # changed names of a namespace up to which SQLite prefilters the edges naming them

# Namespaces whose unresolved targets become shared nodes: ns -> (key prefix, kind, flags)
AUTO_NS = {
    "tag": ("tag:", "tag", FLAG_AUTO),
    "ent": ("ent:", "entity", FLAG_AUTO),
    "note": ("md:", "placeholder", FLAG_AUTO | FLAG_PLACEHOLDER),
    "kgt": ("kg:", "entity", FLAG_AUTO),      # KG triples: an entity no file defines (ingest/triples.py)
}
LOOKUP_NS = {"kgt": "kg"}      # names of these namespaces are looked up in another one
# Namespaces whose unresolved names may reach a definition through a module's re-export
# (their modules answer to dotted names: Python's by key, Rust's by alias; see _reexports)
REEXPORT_NS = ("py", "rs")
FIELD_NS = ("go", "rs")        # namespaces whose loaders emit calls through fields (FIELD_PROPS)
# namespaces whose loaders emit ``member_of`` edges (a KG file's ``member_of`` relation, or an
# exported index read back, names its target by key and resolves as any edge does)
MEMBER_NS = ("go", "c", "rs")
FIELD_BATCH = 8192             # such edges resolved at a time (member_of edges too)
_FIELD_PROPS_JSON = dumps_props(FIELD_PROPS)
_DUP = re.compile(r"#\d+$")       # a key's second-definition suffix (`Foo#2`)


class EdgeResolver:
    def __init__(self, st: RunState, writer: Writer):
        self.st = st
        self.conn = st.conn
        self.changes = st.changes
        self.writer = writer
        self.first_new_edge = 0
        # edges of each reloaded file before this run, to tell whether the graph really changed
        self.old_file_edges: dict[int, Counter] = {}
        self.new_files: set[int] = set()
        conn = self.conn
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS edge_stage(src_id INTEGER, src_key TEXT, ns TEXT, "
                     "dst_name TEXT, type TEXT, weight REAL, file_id INTEGER, line INTEGER, props TEXT)")
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS resolve_ids(id INTEGER PRIMARY KEY)")

    def stage(self, file_id: int, new_file: bool, key_to_id: dict[str, int], edges) -> None:
        """Replace a (re)loaded file's edges with ``edges`` (resolved after every file is loaded)."""
        conn = self.conn
        if not new_file:
            if not self.changes.full:
                self.old_file_edges[file_id] = edge_multiset(conn, file_id)
            conn.execute("DELETE FROM edges WHERE file_id=?", (file_id,))
        else:
            self.new_files.add(file_id)
        conn.executemany("INSERT INTO temp.edge_stage(src_id, src_key, ns, dst_name, type, weight, file_id, line, "
                         "props) VALUES (?,?,?,?,?,?,?,?,?)",
                         ((key_to_id.get(e.src), e.src, e.ns, e.dst, e.type, float(e.weight), file_id, e.line,
                           dumps_props(e.props)) for e in edges))     # a generator: a KG file has 100Ks

    def move_staged_edges(self) -> None:
        """Staged edges get their source id and, when it resolves now, their target; sources
        that do not exist are dangling (KG) or dropped."""
        conn = self.conn
        conn.execute("UPDATE temp.edge_stage SET src_id = (SELECT id FROM nodes WHERE key = src_key) "
                     "WHERE src_id IS NULL")
        missing = conn.execute(
            "SELECT s.src_key, s.ns, s.line, f.path FROM temp.edge_stage s LEFT JOIN files f ON f.id = s.file_id "
            "WHERE s.src_id IS NULL ORDER BY s.rowid").fetchall()
        for src_key, ns, line, path in missing:
            if ns == "kgt" and src_key.startswith("kg:"):     # a triple's head: a shared entity
                self.writer.make_auto("kgt", [(src_key[3:], src_key[3:])], kind="entity", prefix="kg:",
                                      flags=FLAG_AUTO)
            elif ns == "kg":
                name = src_key[3:] if src_key.startswith("kg:") else src_key
                if not self.st.opts.allow_dangling:
                    raise DataError(f"edge source {quoted(name)} is not a known node; add it to a nodes file "
                                    f"or rerun with --allow-dangling", path, line)
                self.writer.make_auto("kg", [(name, name)], kind="placeholder", prefix="kg:",
                                flags=FLAG_AUTO | FLAG_PLACEHOLDER)
        if missing:
            conn.execute("UPDATE temp.edge_stage SET src_id = (SELECT id FROM nodes WHERE key = src_key) "
                         "WHERE src_id IS NULL")
            dropped = conn.execute("DELETE FROM temp.edge_stage WHERE src_id IS NULL").rowcount
            if dropped:
                self.st.warn(f"{dropped} edges from unknown source nodes dropped")
        self.first_new_edge = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM edges").fetchone()[0]
        names = _Names(conn)
        for ns in preload_namespaces(conn):
            names.preload(ns)
        next_id = self.first_new_edge
        new_file_edges = False
        pending = []                             # unresolved shared-node targets: resolve() makes them
        unresolved_re: dict[str, list[tuple[int, str]]] = {}  # Python/Rust names: perhaps re-exported (below)
        cur = conn.execute("SELECT src_id, ns, dst_name, type, weight, file_id, line, props FROM temp.edge_stage "
                           "ORDER BY rowid")
        while True:
            batch = cur.fetchmany(8192)
            if not batch:
                break
            # (calls through a struct's fields are resolved by resolve_field_calls, a method's
            # type by resolve_members)
            named = iter(names.resolve([(r[1], r[2]) for r in batch if not _own_pass(r[1], r[3], r[7])]))
            resolved = [(None, r[2]) if _own_pass(r[1], r[3], r[7]) else next(named) for r in batch]
            rows = []
            new_file_edges = new_file_edges or any(r[5] in self.new_files for r in batch)
            for (src, ns, dst_name, etype, weight, file_id, line, props), (dst, name) in zip(batch, resolved):
                if dst is None and (ns in AUTO_NS or ns == "kg"):
                    pending.append((next_id,))
                elif dst is None and ns in REEXPORT_NS and not _own_pass(ns, etype, props):
                    unresolved_re.setdefault(ns, []).append((next_id, dst_name))
                rows.append((next_id, src, dst, ns, name, etype, weight, file_id, line, props))
                next_id += 1
            conn.executemany("INSERT INTO edges(id, src, dst, ns, dst_name, type, weight, file_id, line, props) "
                             "VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        conn.execute("DELETE FROM temp.edge_stage")
        conn.executemany("INSERT OR IGNORE INTO temp.resolve_ids(id) VALUES (?)", pending)
        for ns, unresolved in unresolved_re.items():      # now that this run's imports edges are in place
            reexport = self._reexports(names, ns)
            conn.executemany("UPDATE edges SET dst=? WHERE id=?",
                             [(d, eid) for eid, name in unresolved if (d := reexport(name)) is not None])
        if next_id != self.first_new_edge and (self.changes.full or new_file_edges):
            self.changes.edges_changed = True

    def resolve(self) -> None:
        """Resolve orphaned and retry-worthy edges; create shared nodes for tag/ent/note targets.

        An edge is looked at again when its target was removed, or when one of its candidate
        names gained or lost a node this run (so it lands where a full rebuild would put it)."""
        conn = self.conn
        conn.executemany("INSERT OR IGNORE INTO temp.resolve_ids(id) VALUES (?)", ((i,) for i in self.writer.nulled_edges))
        for ns in sorted(self.st.names_changed):
            changed = self.st.names_changed[ns]
            sql = NAMED_EDGES_SQL
            args: list = [ns, next((k for k, v in LOOKUP_NS.items() if v == ns), ns), self.first_new_edge]
            if len(changed) <= FEW_NAMES:          # an edited file: SQLite prefilters by substring
                sql += " AND (" + " OR ".join(["instr(dst_name, ?)"] * len(changed)) + ")"
                args += sorted(changed)
            retry = []
            for eid, dst_name in conn.execute(sql, args):
                if dst_name in changed or ("\n" in dst_name and not changed.isdisjoint(dst_name.split("\n"))):
                    retry.append((eid,))
            conn.executemany("INSERT OR IGNORE INTO temp.resolve_ids(id) VALUES (?)", retry)
        self.st.names_changed = {}
        self._resolve_pass()
        # shared nodes for what is still unresolved
        created = False
        for ns, (prefix, kind, flags) in AUTO_NS.items():
            rows = conn.execute(
                "SELECT e.dst_name, min(e.props) FROM temp.resolve_ids r CROSS JOIN edges e ON e.id = r.id "
                "WHERE e.dst IS NULL AND e.ns=? GROUP BY e.dst_name", (ns,)).fetchall()
            if rows:
                names = []
                for name, props in rows:
                    name = plain_name(name)     # '//root/x\nx' (an edge of a labelled root) -> 'x'
                    display = name
                    if props:
                        try:
                            display = json.loads(props).get("display") or name
                        except (json.JSONDecodeError, AttributeError):
                            pass
                    names.append((name, display))
                self.writer.make_auto(ns, names, kind=kind, prefix=prefix, flags=flags)
                created = True
        dangling = conn.execute(
            "SELECT e.dst_name, f.path, e.line FROM temp.resolve_ids r CROSS JOIN edges e ON e.id = r.id "
            "LEFT JOIN files f ON f.id = e.file_id WHERE e.dst IS NULL AND e.ns='kg' "
            "ORDER BY f.path, e.line LIMIT 1").fetchone()
        if dangling:
            if not self.st.opts.allow_dangling:
                raise DataError(f"edge target {quoted(dangling[0])} is not a known node; add it to a nodes file "
                                f"or rerun with --allow-dangling", dangling[1], dangling[2])
            rows = conn.execute(
                "SELECT DISTINCT e.dst_name FROM temp.resolve_ids r CROSS JOIN edges e ON e.id = r.id "
                "WHERE e.dst IS NULL AND e.ns='kg'").fetchall()
            self.writer.make_auto("kg", [(r[0], r[0]) for r in rows], kind="placeholder", prefix="kg:",
                            flags=FLAG_AUTO | FLAG_PLACEHOLDER)
            created = True
        if created:
            self._resolve_pass()
        self.resolve_field_calls()
        self.resolve_members()

    def _resolve_pass(self) -> None:
        """(Re)resolve the edges listed in temp.resolve_ids against the current names."""
        conn = self.conn
        rows = conn.execute("SELECT e.id, e.ns, e.dst_name, e.dst, e.file_id FROM temp.resolve_ids r "
                            "CROSS JOIN edges e ON e.id = r.id WHERE (e.dst_name != '' OR e.dst IS NULL) "
                            f"AND NOT {_OWN_PASS_SQL}", _OWN_PASS_ARGS).fetchall()
        names = _Names(conn)
        updates = []
        reexports: dict = {}
        for (eid, ns, dst_name, dst, file_id), (new_dst, new_name) in zip(
                rows, names.resolve([(r[1], r[2]) for r in rows])):
            if file_id is None:                 # derived edges (similar_text) keep their names
                new_name = dst_name
            if new_dst is None and ns in REEXPORT_NS:
                if ns not in reexports:
                    reexports[ns] = self._reexports(names, ns)
                new_dst = reexports[ns](dst_name)
            if new_dst != dst or new_name != dst_name:
                updates.append((new_dst, new_name, eid))
        conn.executemany("UPDATE edges SET dst=?, dst_name=? WHERE id=?", updates)
        if updates:
            self.changes.edges_changed = True

    def resolve_field_calls(self) -> None:
        """Calls through a field of a struct declared in another file (``FIELD_PROPS`` edges, each
        candidate ``<struct>.<field>.<method>``): the struct's nodes (every node answering
        ``<struct>`` whose ``props["fields"]`` has the field; two that declare it differently
        give no edge) give the field's type candidates, and ``<type>.<method>`` resolves as any
        name does, the first candidate that names a node winning. The edge keeps its written name.
        Every such edge of the index is resolved again (a run that loads or deletes no file does
        nothing): its answer depends on the struct's file and the type's methods' files, any of
        which may have changed, and a few thousand look-ups cost less than tracking them."""
        if not (self.writer.stored_files or self.st.report.files_deleted or self.changes.full):
            return
        conn = self.conn
        marks = ",".join("?" * len(FIELD_NS))
        sql = (f"SELECT id, ns, dst_name, dst FROM edges WHERE ns IN ({marks}) AND dst_name != '' "
               f"AND file_id IS NOT NULL AND type = 'calls' AND props = ? AND id > ? ORDER BY id LIMIT ?")
        last, changed = 0, False
        while True:                     # (in batches: what one holds is bounded)
            rows = conn.execute(sql, (*FIELD_NS, _FIELD_PROPS_JSON, last, FIELD_BATCH)).fetchall()
            if not rows:
                break
            last = rows[-1][0]
            changed = self._resolve_field_batch(rows) or changed
        if changed:
            self.changes.edges_changed = True

    def resolve_members(self) -> None:
        """``member_of`` edges (a method defined outside its type's declaration -> the type, by
        the candidate names its loader gave, the first that a type answers winning): among the
        ``class`` nodes answering a name (``impl`` blocks aside), the one whose qualified name
        is the edge's ``props["type"]`` (a C++ namespace), else ends with it, then one in a file
        the method's file includes (imports), then one in a file of the method's file's stem
        (``format.cc``: ``format.h``), then by alias rank and key (never by node id: an
        incremental run and a fresh build number nodes differently). Like
        :meth:`resolve_field_calls`, every such edge is resolved again in each run that loads
        or deletes a file (the type's file may have come, gone or moved), in batches."""
        if not (self.writer.stored_files or self.st.report.files_deleted or self.changes.full):
            return
        marks = ",".join("?" * len(MEMBER_NS))
        sql = (f"SELECT id, ns, dst_name, dst, file_id, props FROM edges WHERE type = ? AND ns IN ({marks}) "
               f"AND file_id IS NOT NULL AND id > ? ORDER BY id LIMIT ?")
        last, changed = 0, False
        while True:
            rows = self.conn.execute(sql, (MEMBER_OF, *MEMBER_NS, last, FIELD_BATCH)).fetchall()
            if not rows:
                break
            last = rows[-1][0]
            changed = self._resolve_member_batch(rows) or changed
        if changed:
            self.changes.edges_changed = True

    def _resolve_member_batch(self, rows: list[tuple]) -> bool:
        """:meth:`resolve_members` for ``(id, ns, dst_name, dst, file_id, props)`` rows; whether
        an edge written before this run changed."""
        conn = self.conn
        wanted: dict[str, set[str]] = {}
        for _, ns, dst_name, _, _, _ in rows:
            wanted.setdefault(ns, set()).update(dst_name.split("\n"))
        types = {ns: self._types_named(ns, sorted(names)) for ns, names in wanted.items()}
        files = sorted({r[4] for r in rows} | {t[3] for per in types.values() for ts in per.values() for t in ts})
        stems = {fid: _stem(path) for fid, path in iter_in_chunks(conn, "SELECT id, path FROM files WHERE id IN ({})",
                                                                files)}
        includes: dict[int, set[int]] = {}
        for fid, dst_file in iter_in_chunks(conn, "SELECT e.file_id, n.file_id FROM edges e JOIN nodes n ON n.id = e.dst "
                                                  "WHERE e.type = 'imports' AND e.file_id IN ({})",
                                            sorted({r[4] for r in rows})):
            includes.setdefault(fid, set()).add(dst_file)
        moved = []
        for eid, ns, dst_name, dst, fid, props in rows:
            qual = ""
            if props:
                try:
                    qual = json.loads(props).get("type") or ""
                except (json.JSONDecodeError, AttributeError):
                    pass
            new_dst = None
            for cand in dst_name.split("\n"):
                found = types[ns].get(cand)
                if found:
                    inc, stem = includes.get(fid, ()), stems.get(fid)
                    best = min(found, key=lambda t: (
                        not (qual and t[2].endswith(":" + qual)), not (qual and t[2].endswith("." + qual)),
                        t[3] not in inc, stems.get(t[3]) != stem, t[4], t[1]))
                    new_dst = best[0]
                    break
            moved.append((eid, dst, new_dst))
        return self._retarget(moved)

    def _types_named(self, ns: str, names: list[str]) -> dict[str, list[tuple]]:
        """``name`` -> ``(id, key, key without #n, file_id, rank)`` of the ``class`` nodes of namespace
        ``ns`` answering it (by an alias or their key), Rust ``impl`` blocks aside."""
        conn = self.conn
        ranks: dict[str, dict[int, int]] = {}
        for name, nid, rank in iter_in_chunks(conn, "SELECT name, node_id, rank FROM aliases WHERE ns=? AND name IN ({})",
                                              names, before=(ns,)):
            got = ranks.setdefault(name, {})
            got[nid] = min(rank, got.get(nid, rank))
        cut = len(ns) + 1
        for key, nid in iter_in_chunks(conn, "SELECT key, id FROM nodes WHERE key IN ({})", [f"{ns}:{n}" for n in names]):
            ranks.setdefault(key[cut:], {})[nid] = 0
        rows = {}
        for nid, key, fid, props in iter_in_chunks(
                conn, "SELECT id, key, file_id, props FROM nodes WHERE id IN ({}) AND kind = 'class'",
                sorted({i for v in ranks.values() for i in v})):
            if '"impl"' in (props or "") and (json.loads(props) or {}).get("decl") == "impl":
                continue
            rows[nid] = (nid, key, _DUP.sub("", key), fid)       # (the key ends with its qualified name)
        return {name: [(*rows[i], r) for i, r in v.items() if i in rows] for name, v in ranks.items()}

    def _resolve_field_batch(self, rows: list[tuple]) -> bool:
        """:meth:`resolve_field_calls` for ``(id, ns, dst_name, dst)`` rows; whether an edge
        written before this run changed."""
        conn = self.conn
        wanted: dict[str, set[str]] = {}
        for _, ns, dst_name, _ in rows:
            for cand in dst_name.split("\n"):
                wanted.setdefault(ns, set()).add(cand.rsplit(".", 2)[0])
        fields = {ns: self._struct_fields(ns, sorted(names)) for ns, names in wanted.items()}
        items = []
        for _, ns, dst_name, _ in rows:
            out: list[str] = []
            for cand in dst_name.split("\n"):
                parts = cand.rsplit(".", 2)
                if len(parts) != 3:
                    continue
                declared = {tuple(f[parts[1]]) for f in fields[ns].get(parts[0], ()) if parts[1] in f}
                if len(declared) == 1:
                    out += [f"{t}.{parts[2]}" for t in next(iter(declared))]
            items.append((ns, "\n".join(dict.fromkeys(out))))
        found = iter(_Names(conn).resolve([x for x in items if x[1]]))
        return self._retarget([(eid, dst, next(found)[0] if name else None)
                               for (eid, _, _, dst), (_, name) in zip(rows, items)])

    def _retarget(self, moved: list[tuple]) -> bool:
        """Point each edge of ``moved`` (``(edge id, its dst, the dst resolved now)``) at its new
        dst; whether an edge that existed before this run changed (new edges:
        ``compare_file_edges``)."""
        updates = [(new, eid) for eid, old, new in moved if new != old]
        self.conn.executemany("UPDATE edges SET dst=? WHERE id=?", updates)
        return any(eid < self.first_new_edge for _, eid in updates)

    def _struct_fields(self, ns: str, names: list[str]) -> dict[str, list[dict]]:
        """``name`` -> the ``props["fields"]`` of the nodes of namespace ``ns`` answering it
        (by an alias or their key) that list fields."""
        conn = self.conn
        ids: dict[str, set[int]] = {}
        for name, nid in iter_in_chunks(conn, "SELECT name, node_id FROM aliases WHERE ns=? AND name IN ({})",
                                        names, before=(ns,)):
            ids.setdefault(name, set()).add(nid)
        cut = len(ns) + 1
        for key, nid in iter_in_chunks(conn, "SELECT key, id FROM nodes WHERE key IN ({})", [f"{ns}:{n}" for n in names]):
            ids.setdefault(key[cut:], set()).add(nid)
        props: dict[int, dict] = {}
        for nid, p in iter_in_chunks(conn, "SELECT id, props FROM nodes WHERE id IN ({}) AND kind = 'class' "
                                           "AND props LIKE '%\"fields\"%'", sorted({i for v in ids.values() for i in v})):
            try:
                got = json.loads(p).get("fields")
            except (json.JSONDecodeError, AttributeError):
                continue
            if isinstance(got, dict):
                props[nid] = got
        return {name: [props[i] for i in sorted(v) if i in props] for name, v in ids.items()}

    def _reexports(self, names: "_Names", ns: str = "py"):
        """:func:`~kgsearch.ingest.pynames.reexport_resolver` over this index's modules of
        namespace ``ns`` (Python's dotted names are their keys, Rust's ``crate.module`` names
        their aliases), their ``imports`` edges (as written, else the resolved node's key) and
        ``names`` for lookups. The edge keeps its written name, so every later run resolves it
        the same way; edges in other files are not revisited when only the re-exporting module
        changed (a full run does)."""
        conn = self.conn
        if ns == "py":
            modules = {key[3:]: nid for key, nid in conn.execute(
                "SELECT key, id FROM nodes WHERE kind='module' AND key >= 'py:' AND key < 'py;'")}
        else:
            modules = {}
            for name, nid, rank in conn.execute(
                    "SELECT a.name, a.node_id, a.rank FROM aliases a JOIN nodes n ON n.id = a.node_id "
                    "WHERE a.ns=? AND n.kind='module' ORDER BY a.rank DESC, a.node_id DESC", (ns,)):
                modules[name] = nid

        def imports_of(mid: int):
            rows = conn.execute("SELECT e.dst_name, n.key, e.dst FROM edges e LEFT JOIN nodes n ON n.id = e.dst "
                                "WHERE e.src=? AND e.type='imports' AND e.ns=?", (mid, ns)).fetchall()
            if ns == "py":
                return [(name, key) for name, key, _ in rows]
            # Rust: a `use` lists its candidates from the nearest scope out (``app.mac_kit.thing``
            # first, then ``mac_kit.thing``); the one the target answers to is the path it names
            out = []
            for name, key, dst in rows:
                if dst is not None and name:
                    known = {a for (a,) in conn.execute("SELECT name FROM aliases WHERE node_id=? AND ns=?",
                                                        (dst, ns))}
                    name = next((c for c in name.split("\n") if c in known), name)
                out.append((name, key))
            return out

        return reexport_resolver(modules, imports_of, lambda name: names.resolve([(ns, name)])[0][0])

    def compare_file_edges(self) -> None:
        """A reloaded file whose edges come out as they were (a function body edited without
        touching its calls, say) leaves the graph alone: edges_changed only when they differ
        (line numbers aside). Run after resolution, which decides where the new edges point."""
        if self.changes.edges_changed:
            return
        old_edges, self.old_file_edges = self.old_file_edges, {}
        for file_id, old in old_edges.items():
            if edge_multiset(self.conn, file_id) != old:
                self.changes.edges_changed = True
                return


def _own_pass(ns: str, etype: str, props: str | None) -> bool:
    """Whether a staged edge is resolved by a pass of its own (calls through a field:
    :meth:`EdgeResolver.resolve_field_calls`; a method's type: :meth:`EdgeResolver.resolve_members`).
    Only the code loaders' edges are: a KG file's ``member_of`` or ``calls`` edge (the same type
    names and props a user may write, or an exported index read back) names its target by key."""
    return ((etype == "calls" and ns in FIELD_NS and props == _FIELD_PROPS_JSON)
            or (etype == MEMBER_OF and ns in MEMBER_NS))


# _own_pass as SQL over ``edges e`` (with _OWN_PASS_ARGS)
_OWN_PASS_SQL = (f"((e.type = 'calls' AND e.ns IN ({','.join('?' * len(FIELD_NS))}) AND e.props IS ?) "
                 f"OR (e.type = ? AND e.ns IN ({','.join('?' * len(MEMBER_NS))})))")
_OWN_PASS_ARGS = (*FIELD_NS, _FIELD_PROPS_JSON, MEMBER_OF, *MEMBER_NS)


def _stem(path: str) -> str:
    """A file's name without its folder and extensions (``src/format-inl.h`` -> ``format-inl``)."""
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def preload_namespaces(conn) -> list[str]:
    """Namespaces whose names are worth reading at once: the staged edges name at least
    ``PRELOAD_NAMES`` distinct targets in it, and at least ``PRELOAD_FRACTION`` of the nodes
    (a first index run). A one-file reindex of a big KG shard names a few thousand of a
    million: reading the whole namespace into a dict cost 4 of 4.2 s at 1M nodes, the batched
    lookups (:meth:`_Names._fetch`) a few dozen queries. Both resolve every name the same way."""
    rows = conn.execute("SELECT ns, count(DISTINCT dst_name) FROM temp.edge_stage GROUP BY ns").fetchall()
    rows = [(ns, count) for ns, count in rows if count >= PRELOAD_NAMES]
    if not rows:
        return []
    nodes = conn.execute("SELECT max(id) FROM nodes").fetchone()[0] or 0     # (an upper bound, O(1))
    return [ns for ns, count in rows if count >= PRELOAD_FRACTION * nodes]


def _better(best: dict, name: str, cand: tuple) -> None:
    cur = best.get(name)
    if cur is None or cand[:2] < cur[:2]:
        best[name] = cand


class _Names:
    """Resolve edge targets: ``(ns, dst_name)`` -> node id.

    A name resolves to the best ``(rank, node id)`` among its ``aliases`` rows and the node whose
    key is ``ns:name`` (rank 0, see :func:`~kgsearch.indexer.writer.implied_name`); ns ``key`` names a key. ``dst_name`` may
    hold several candidates separated by newlines: the first that resolves wins. Lookups are
    batched and memoised; :meth:`preload` reads a whole namespace at once when most of it
    will be asked for (a first index run).

    The name an edge keeps: a single-candidate edge resolved through the target's key keeps
    ``''`` (the key gives the name back when the target is removed, see ``Writer.remove_nodes``).
    Edges to tags, entities and notes keep theirs (notes have many names, shared nodes are
    re-made from them), as does every multi-candidate edge (a removed or newly appearing
    candidate can move it)."""

    def __init__(self, conn):
        self.conn = conn
        self.memo: dict[str, dict[str, tuple[int, bool] | None]] = {}
        self.complete: set[str] = set()

    def preload(self, ns: str) -> None:
        self._preload(LOOKUP_NS.get(ns, ns))
        if ns in LOOKUP_NS:
            self.memo[ns] = self.memo[LOOKUP_NS[ns]]
            self.complete.add(ns)

    def _preload(self, ns: str) -> None:
        best: dict[str, tuple] = {}
        if ns == "key":
            for key, nid in self.conn.execute("SELECT key, id FROM nodes"):
                best[key] = (0, nid, True)
        else:
            for name, nid, rank in self.conn.execute("SELECT name, node_id, rank FROM aliases WHERE ns=?", (ns,)):
                _better(best, name, (rank, nid, False))
            prefix = ns + ":"
            for key, nid, flags in self.conn.execute(
                    "SELECT key, id, flags FROM nodes WHERE key >= ? AND key < ?", (prefix, ns + ";")):
                if not flags & FLAG_PLACEHOLDER:
                    _better(best, key[len(prefix):], (0, nid, True))
        self.memo[ns] = {name: (v[1], v[2]) for name, v in best.items()}
        self.complete.add(ns)

    def _fetch(self, ns: str, names: list[str]) -> None:
        best: dict[str, tuple] = {}
        conn = self.conn
        memo_ns, ns = ns, LOOKUP_NS.get(ns, ns)
        for s in range(0, len(names), CHUNK):
            chunk = names[s:s + CHUNK]
            marks = ",".join("?" * len(chunk))
            if ns == "key":
                for key, nid in conn.execute(f"SELECT key, id FROM nodes WHERE key IN ({marks})", chunk):
                    best[key] = (0, nid, True)
                continue
            for name, nid, rank in conn.execute(
                    f"SELECT name, node_id, rank FROM aliases WHERE ns=? AND name IN ({marks})", [ns, *chunk]):
                _better(best, name, (rank, nid, False))
            cut = len(ns) + 1
            for key, nid, flags in conn.execute(f"SELECT key, id, flags FROM nodes WHERE key IN ({marks})",
                                                [f"{ns}:{n}" for n in chunk]):
                if not flags & FLAG_PLACEHOLDER:
                    _better(best, key[cut:], (0, nid, True))
        memo = self.memo.setdefault(memo_ns, {})
        for name in names:
            hit = best.get(name)
            memo[name] = None if hit is None else (hit[1], hit[2])

    def resolve(self, items: list[tuple[str, str]]) -> list[tuple[int | None, str]]:
        """``[(ns, dst_name)]`` -> ``[(node id or None, dst_name to store for a loader edge)]``."""
        need: dict[str, set[str]] = {}
        for ns, dst_name in items:
            if ns in self.complete:
                continue
            memo = self.memo.get(ns, {})
            for cand in (dst_name.split("\n") if "\n" in dst_name else (dst_name,)):
                if cand not in memo:
                    need.setdefault(ns, set()).add(cand)
        for ns, names in need.items():
            self._fetch(ns, sorted(names))
        out: list[tuple[int | None, str]] = []
        for ns, dst_name in items:
            memo = self.memo.get(ns, {})
            if "\n" in dst_name:
                hit = None
                for cand in dst_name.split("\n"):
                    hit = memo.get(cand)
                    if hit is not None:
                        break
                out.append((None if hit is None else hit[0], dst_name))
                continue
            hit = memo.get(dst_name)
            if hit is None:
                out.append((None, dst_name))
            else:
                out.append((hit[0], "" if hit[1] and ns not in AUTO_NS else dst_name))
        return out
