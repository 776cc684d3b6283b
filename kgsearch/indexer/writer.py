"""The writer: every change a run makes to ``files``, ``nodes`` and ``aliases``.

Nodes are upserted by key: a node keeps its row id while its key exists, so derived data
(postings, vectors) changes only for nodes whose content hash changed. What each change did
goes into the run's :class:`~kgsearch.types.ChangeSet` (added, modified, removed ids, and the
old name/text of modified and removed nodes so postings can be retracted without a forward
index). Names a node answers to (``aliases``) are replaced with the file's; a name that gained
or lost a node is recorded so edges naming it are resolved again.
"""
from __future__ import annotations

from ..ingest.walk import Found
from ..lines import quoted
from ..store.rows import packed_qualname
from ..store.sql import exec_in_chunks, in_chunks, iter_in_chunks
from ..types import FLAG_AUTO, FLAG_PLACEHOLDER, LoadResult, NodeRec
from .load import node_hash, stored_fields
from .state import RunState

__all__ = ["Writer", "implied_name", "key_names", "PLACEHOLDER_RANK"]

PLACEHOLDER_RANK = 1000
_NODE_COLS = "kind=?, name=?, qualname=?, text=?, path=?, line_start=?, line_end=?, hash=?, file_id=?, flags=?, " \
             "props=?, generation=?, parent_id=?"


def implied_name(key: str, flags: int = 0) -> tuple[str, str] | None:
    """The name a node answers to by its key alone: key ``ns:name`` -> ``(ns, name)`` at rank 0.

    Such aliases (every ``py`` qualified name, ``kg`` node ids, tags, entities) are not stored
    in ``aliases``: the key index answers them. Placeholders answer only through their stored
    (low-ranked) alias.

    >>> implied_name("py:pkg.mod.f"), implied_name("key:x")
    (('py', 'pkg.mod.f'), None)
    """
    ns, sep, name = key.partition(":")
    if not sep or not ns or ns == "key" or flags & FLAG_PLACEHOLDER:
        return None
    return ns, name


def key_names(key: str) -> list[tuple[str, str]]:
    implied = implied_name(key)
    return [("key", key), implied] if implied else [("key", key)]


class Writer:
    def __init__(self, st: RunState):
        self.st = st
        self.conn = st.conn
        self.changes = st.changes
        self.nulled_edges: list[int] = []        # edges whose target node was removed
        self.orphaned_files: set[int] = set()    # files that lost edges with a removed source node
        self.stored_files: set[int] = set()      # files (re)loaded this run
        self._next_id = 0

    # ------------------------------------------------------------------ one file
    def store_file(self, f: Found, digest: str, result: LoadResult, hashed: list | None = None
                   ) -> tuple[int, bool, dict[str, int]]:
        """Upsert the file's row and its nodes by key, replace their aliases. ``hashed``: each
        node's (hash, props JSON, stored text) when a worker process computed them already
        (:func:`~kgsearch.indexer.load.stored_fields`). Returns (file id, whether the file is
        new, node id by key)."""
        file_id, new_file, old, old_aliases = self._file_row(f, digest, len(result.nodes))
        self.stored_files.add(file_id)
        key_to_id, existing = self._upsert_nodes(f, file_id, result.nodes, old,
                                                 hashed if hashed is not None else stored_fields(result.nodes))
        gone = [r[0] for k, r in old.items() if k not in key_to_id]
        if gone:
            self.remove_nodes(gone, {r[0]: (r[3], r[4]) for r in old.values()})
        self._replace_aliases(result.nodes, key_to_id, existing, old_aliases)
        return file_id, new_file, key_to_id

    def _file_row(self, f: Found, digest: str, n_nodes: int):
        """Insert or update the ``files`` row; the file's nodes and names before this run."""
        conn = self.conn
        gen = self.changes.generation
        row = conn.execute("SELECT id FROM files WHERE path=?", (str(f.path),)).fetchone()
        if row is None:
            file_id = conn.execute(
                "INSERT INTO files(path, root, loader, size, mtime_ns, hash, generation, nodes) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (str(f.path), str(f.root), f.loader, f.size, f.mtime_ns, digest, gen, n_nodes)).lastrowid
            return file_id, True, {}, set()
        file_id = row[0]
        conn.execute("UPDATE files SET root=?, loader=?, size=?, mtime_ns=?, hash=?, generation=?, nodes=? "
                     "WHERE id=?", (str(f.root), f.loader, f.size, f.mtime_ns, digest, gen, n_nodes, file_id))
        old = {r[1]: r for r in conn.execute(
            "SELECT id, key, hash, name, kgtext(text) FROM nodes WHERE file_id=?", (file_id,))}
        old_aliases = set(conn.execute(
            "SELECT a.ns, a.name FROM aliases a JOIN nodes n ON n.id=a.node_id WHERE n.file_id=?", (file_id,)))
        for k in old:
            old_aliases.update(key_names(k))
        return file_id, False, old, old_aliases

    def _upsert_nodes(self, f: Found, file_id: int, nodes: list[NodeRec], old: dict, hashed: list
                      ) -> tuple[dict[str, int], list[int]]:
        """Node ids by key, and the ids that existed before (they may carry aliases)."""
        conn, changes, gen = self.conn, self.changes, self.changes.generation
        # keys this file did not have: one lookup for all (shared/placeholder nodes, other files)
        fresh = list(dict.fromkeys(n.key for n in nodes if n.key not in old))
        others = {r[0]: r for r in in_chunks(
            conn, "SELECT key, id, file_id, flags, name, kgtext(text) FROM nodes WHERE key IN ({})", fresh)}
        key_to_id: dict[str, int] = {}
        existing: list[int] = []
        emitted: set[str] = set()
        inserts = []
        late_parents = []                      # parent emitted after the child, or in another file
        rel_path = None          # nodes.path: the file's path comes from files (see migration 0006)
        for n, (h, props, stored) in zip(nodes, hashed):
            if n.key in emitted:
                self.st.warn(f"{f.path}: node {quoted(n.key)} defined twice; keeping the first")
                continue
            emitted.add(n.key)
            pid = key_to_id.get(n.parent) if n.parent else None
            if n.parent and pid is None:
                late_parents.append(n)
            qual = packed_qualname(n.key, n.kind, n.qualname)
            values = (n.kind, n.name, qual, stored, rel_path, n.line_start, n.line_end, h, file_id, n.flags, props,
                      gen, pid)
            prev = old.get(n.key)
            if prev is None:
                other = others.get(n.key)
                if other is not None and other[2] is not None:
                    owner = conn.execute("SELECT path FROM files WHERE id=?", (other[2],)).fetchone()
                    self.st.warn(f"{f.path}: node {quoted(n.key)} is already defined in {owner[0] if owner else '?'}; "
                                 f"keeping that one")
                    continue
                if other is not None:          # a shared/placeholder node becomes a real one
                    nid = other[1]
                    conn.execute(f"UPDATE nodes SET {_NODE_COLS} WHERE id=?", values + (nid,))
                    existing.append(nid)
                    changes.modified.append(nid)
                    changes.old[nid] = (other[4], other[5])
                else:
                    nid = self._new_id()
                    inserts.append(values + (n.key, nid))
                    changes.added.append(nid)
            else:
                nid = prev[0]
                existing.append(nid)
                if prev[2] != h:
                    changes.modified.append(nid)
                    changes.old[nid] = (prev[3], prev[4])
                    conn.execute(f"UPDATE nodes SET {_NODE_COLS} WHERE id=?", values + (nid,))
                else:
                    conn.execute("UPDATE nodes SET qualname=?, path=?, line_start=?, line_end=?, flags=?, "
                                 "props=?, parent_id=? WHERE id=?",
                                 (qual, rel_path, n.line_start, n.line_end, n.flags, props, pid, nid))
            key_to_id[n.key] = nid
        if inserts:
            conn.executemany(
                "INSERT INTO nodes(kind, name, qualname, text, path, line_start, line_end, hash, file_id, flags, "
                "props, generation, parent_id, key, id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", inserts)
        for n in late_parents:
            if n.key in key_to_id:
                pid = key_to_id.get(n.parent) or self.st.ix.node_by_key(n.parent)
                conn.execute("UPDATE nodes SET parent_id=? WHERE id=?", (pid, key_to_id[n.key]))
        return key_to_id, existing

    def _new_id(self) -> int:
        if not self._next_id:
            self._next_id = self.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM nodes").fetchone()[0]
        nid = self._next_id
        self._next_id += 1
        return nid

    def _replace_aliases(self, nodes: list[NodeRec], key_to_id: dict[str, int], existing: list[int],
                         old_aliases: set) -> None:
        """A node answers to (ns, name) for its key 'ns:name' without a row (see
        :func:`implied_name`); only the other names are stored."""
        conn = self.conn
        exec_in_chunks(conn, "DELETE FROM aliases WHERE node_id IN ({})", existing)
        alias_rows = []
        new_aliases = set()
        for n in nodes:
            nid = key_to_id.get(n.key)
            if nid is None:
                continue
            new_aliases.update(key_names(n.key))
            implied = implied_name(n.key)
            for rank, alias in enumerate(n.aliases):      # (ns, name) or (ns, name, rank)
                ns, name = alias[0], alias[1]
                if len(alias) > 2:
                    rank = alias[2]
                new_aliases.add((ns, name))
                if rank or (ns, name) != implied:
                    alias_rows.append((ns, name, nid, rank))
        conn.executemany("INSERT INTO aliases(ns, name, node_id, rank) VALUES (?,?,?,?)", alias_rows)
        if self.st.had_edges:                # names matter only to edges written before this run
            for ns, name in new_aliases.symmetric_difference(old_aliases):
                self.st.names_changed.setdefault(ns, set()).add(name)
        if old_aliases - new_aliases:
            self.changes.edges_changed = True

    # ------------------------------------------------------------------ removals
    def remove_nodes(self, ids: list[int], old_text: dict[int, tuple[str, str]] | None = None) -> None:
        conn = self.conn
        for s in range(0, len(ids), 500):
            chunk = ids[s:s + 500]
            if old_text is None:
                for nid, name, text in in_chunks(conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({})",
                                                 chunk):
                    self.changes.old[nid] = (name, text)
            else:
                for nid in chunk:
                    self.changes.old[nid] = old_text[nid]
            # edges resolved through the key kept no name: give it back (from the key) so that
            # they resolve again if the name comes back
            exec_in_chunks(conn, "UPDATE edges SET dst_name = (SELECT CASE WHEN edges.ns = 'key' THEN n.key "
                                 "ELSE substr(n.key, length(edges.ns) + 2) END FROM nodes n WHERE n.id = edges.dst) "
                                 "WHERE dst IN ({}) AND dst_name = ''", chunk)
            self.nulled_edges.extend(r[0] for r in iter_in_chunks(
                conn, "SELECT id FROM edges WHERE dst IN ({}) AND src NOT IN ({})", chunk, repeat=2))
            # edges that start at these nodes go with them (ON DELETE CASCADE); those written by
            # another file (a KG edge whose source another file defines, a triple whose head a
            # names file named) come back when that file is loaded again this run
            self.orphaned_files.update(r[0] for r in iter_in_chunks(
                conn, "SELECT DISTINCT file_id FROM edges WHERE src IN ({}) AND file_id IS NOT NULL", chunk))
            exec_in_chunks(conn, "DELETE FROM nodes WHERE id IN ({})", chunk)
        added = set(self.changes.added)
        for nid in ids:
            if nid in added:
                self.changes.added.remove(nid)
            else:
                self.changes.removed.append(nid)
        mod = set(ids)
        self.changes.modified = [m for m in self.changes.modified if m not in mod]
        self.changes.edges_changed = True

    def drop_file(self, file_id: int) -> None:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM nodes WHERE file_id=?", (file_id,))]
        if ids:
            self.remove_nodes(ids)
        if self.conn.execute("SELECT 1 FROM edges WHERE file_id=? LIMIT 1", (file_id,)).fetchone():
            self.changes.edges_changed = True
        self.conn.execute("DELETE FROM files WHERE id=?", (file_id,))
        self.st.report.files_deleted += 1

    def collect_garbage(self) -> None:
        """Shared nodes (tags, entities, placeholders) that no edge touches any more are removed."""
        ids = [r[0] for r in self.conn.execute(
            "SELECT id FROM nodes WHERE file_id IS NULL AND flags & ? "
            "AND NOT EXISTS (SELECT 1 FROM edges WHERE dst = nodes.id) "
            "AND NOT EXISTS (SELECT 1 FROM edges WHERE src = nodes.id)", (FLAG_AUTO,))]
        if ids:
            self.remove_nodes(ids)

    # ------------------------------------------------------------------ shared nodes
    def make_auto(self, ns: str, names: list[tuple[str, str]], kind: str, prefix: str, flags: int) -> None:
        """Shared nodes (tags, entities, placeholders) for ``(name, display)`` pairs, and their names."""
        conn = self.conn
        gen = self.changes.generation
        for name, display in names:
            key = prefix + name
            row = conn.execute("SELECT id, flags FROM nodes WHERE key=?", (key,)).fetchone()
            if row is None:
                shown = ("#" + display) if ns == "tag" else display
                nid = conn.execute(
                    "INSERT INTO nodes(key, kind, name, qualname, text, hash, flags, generation) "
                    "VALUES (?,?,?,?,?,?,?,?)",
                    (key, kind, shown, name, "", node_hash(kind, shown, ""), flags, gen)).lastrowid
                self.changes.added.append(nid)
                node_flags = flags
            else:
                nid, node_flags = row
            # a placeholder answers to its name only when no real node does
            rank = PLACEHOLDER_RANK if flags & FLAG_PLACEHOLDER else 0
            alias_ns = "kg" if ns == "kgt" else ns         # a triples entity answers to its kg id
            if rank == 0 and implied_name(key, node_flags) == (alias_ns, name):
                continue
            if not conn.execute("SELECT 1 FROM aliases WHERE ns=? AND name=? AND node_id=?",
                                (alias_ns, name, nid)).fetchone():
                conn.execute("INSERT INTO aliases(ns, name, node_id, rank) VALUES (?,?,?,?)",
                             (alias_ns, name, nid, rank))
