"""One incremental, cron-safe index run.

``index_paths(db, paths, options)``:

1. takes the writer lock (a second indexer gets :class:`IndexBusy` at once);
2. walks the roots and compares each file's size/mtime, then its hash, with the ``files`` table;
3. in ONE ``BEGIN IMMEDIATE`` transaction: loads changed files (in forked worker processes when
   there are many, see :mod:`kgsearch.ingest.pool`; this process does every write, in walk
   order, so the result is the same) and upserts their nodes by key
   (a node keeps its row id while its key exists), replaces their edges, removes what deleted
   files contributed, resolves edge targets (creating shared tag/entity/placeholder nodes),
   drops shared nodes nothing points to any more, runs the derived-data steps (text, embed,
   graph) on the :class:`ChangeSet`, bumps the generation, and commits.

Anything that goes wrong before ``COMMIT`` (a bad file, Ctrl-C, kill -9, a full disk) leaves
the previous index exactly as it was; readers (WAL) are never blocked.

4. after the commit, ``VACUUM`` gives space back (:meth:`Index.compact_if_sparse`) when 10 %+
   of the file (and 4 MB+) is free pages -- big deletions, ``--no-embed`` dropping the vectors --
   and after a full build or an upgrade that rewrote tables (half-filled pages); a failure there
   (no disk for the copy) only leaves the file larger.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Callable

from .errors import DataError, UsageError
from .ingest import get_loader
from .ingest.pool import default_workers, ordered_map
from .ingest.walk import Found, WalkReport, found_file, walk
from .store.db import Index, packed_qualname
from .store.lock import IndexLock
from .store.textcodec import pack as pack_text
from .types import FLAG_AUTO, FLAG_PLACEHOLDER, ChangeSet, EdgeRec, LoadOptions, LoadResult, NodeRec

log = logging.getLogger(__name__)

# Derived-data steps, run in this order inside the index transaction.
DERIVED_STEPS = ("kgsearch.text.index", "kgsearch.text.neighbors", "kgsearch.embed.index",
                 "kgsearch.graph.index")


def step_name(modname: str) -> str:
    """'kgsearch.text.index' -> 'text', 'kgsearch.text.neighbors' -> 'neighbors'."""
    parts = modname.split(".")
    return parts[1] if parts[-1] == "index" else parts[-1]

PLACEHOLDER_RANK = 1000
PRELOAD_NAMES = 2000       # staged edges of one namespace above which its names are read at once
PARALLEL_MIN_FILES = 64    # files to load from which worker processes pay off
FEW_NAMES = 16             # changed names of a namespace up to which SQLite prefilters the edges naming them

# Namespaces whose unresolved targets become shared nodes: ns -> (key prefix, kind, flags)
AUTO_NS = {
    "tag": ("tag:", "tag", FLAG_AUTO),
    "ent": ("ent:", "entity", FLAG_AUTO),
    "note": ("md:", "placeholder", FLAG_AUTO | FLAG_PLACEHOLDER),
}


@dataclass
class IndexOptions:
    fmt: str | None = None
    allow_dangling: bool = False
    keep_going: bool = False
    full: bool = False                      # reload every file and rebuild derived data
    max_file_bytes: int = 16 << 20
    max_chunk_chars: int = 1500
    settings: dict = field(default_factory=dict)   # passed to derived steps (stemmer, model, ...)
    steps: tuple[str, ...] | None = None     # derived steps to run (default: all present)
    workers: int | None = None               # loader processes (None: one per core when many files)
    progress: Callable[[dict], None] | None = None
    compact: bool = True                     # VACUUM after the run when due (Index.compact_if_sparse)


@dataclass
class IndexReport:
    db: str = ""
    roots: list[str] = field(default_factory=list)
    files_seen: int = 0
    files_loaded: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    files_failed: int = 0
    nodes_added: int = 0
    nodes_modified: int = 0
    nodes_removed: int = 0
    edges_changed: bool = False
    generation: int = 0
    seconds: float = 0.0
    phases: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    compacted_bytes: int = 0           # the database got this much smaller (VACUUM after the run)

    @property
    def partial(self) -> bool:
        return self.files_failed > 0

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["partial"] = self.partial
        return d


def _hash_bytes(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _node_hash(kind: str, name: str, text: str) -> bytes:
    """What a node's derived data depends on: 8 bytes (a BLOB; indexes made before hold 24 hex
    characters, which never match, so such a node counts as modified once when its file is
    reloaded)."""
    h = hashlib.blake2b(digest_size=8)
    for part in (kind, name, text):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.digest()


def _stored_fields(nodes) -> list[tuple[bytes, str | None, str | bytes]]:
    """Per node: content hash, props JSON and the text as stored (long texts compressed, see
    :mod:`kgsearch.store.textcodec`). Loader workers compute these, so the compression runs in
    parallel and off the writing process."""
    return [(_node_hash(n.kind, n.name, n.text), _dumps(n.props), pack_text(n.text)) for n in nodes]


def _dumps(props: dict | None) -> str | None:
    if not props:
        return None
    return json.dumps(props, ensure_ascii=False, sort_keys=True, default=str)


def _step_present(modname: str) -> bool:
    try:
        return importlib.util.find_spec(modname) is not None
    except (ImportError, ValueError):
        return False


def _resolve_roots(ix: Index, paths: list[str]) -> list[Path]:
    if not paths:
        roots = ix.meta_json("roots", [])
        if not roots:
            raise UsageError("nothing to index: give a PATH (folder or file), e.g. `kgsearch index ~/notes`")
        paths = roots
    out = []
    for p in paths:
        rp = Path(p).expanduser()
        if not rp.exists():
            raise DataError("no such file or folder; check the path", str(rp))
        out.append(rp.resolve())
    return out


class _Run:
    """State of one index run (kept off the public API)."""

    def __init__(self, ix: Index, opts: IndexOptions, report: IndexReport):
        self.ix = ix
        self.conn = ix.conn
        self.opts = opts
        self.report = report
        self.changes = ChangeSet(generation=ix.generation + 1, full=opts.full)
        self.names_changed: dict[str, set[str]] = {}   # ns -> names that gained or lost a node this run
        self.nulled_edges: list[int] = []                # edges whose target node was removed
        self.first_new_edge = 0
        # edges of each reloaded file before this run, to tell whether the graph really changed
        self.old_file_edges: dict[int, Counter] = {}
        self.new_files: set[int] = set()
        self.had_edges = True             # False: an empty index, nothing to re-resolve
        self.explicit_files: set[str] = set()

    # ------------------------------------------------------------------ progress
    def emit(self, **event) -> None:
        if self.opts.progress is not None:
            self.opts.progress(event)

    # ------------------------------------------------------------------ files
    def plan(self, roots: list[Path]) -> tuple[list[Found], list[tuple[int, str]]]:
        """Files to load (changed) and files to drop (deleted), updating stats of touched files."""
        wr = WalkReport()
        found: list[Found] = []
        for root in roots:
            if root.is_dir():
                found.extend(walk(root, self.opts.fmt, self.opts.max_file_bytes, wr))
            else:
                f = found_file(root, self.opts.fmt)
                if f is None:
                    raise DataError("not a text file kgsearch can read; pass --format NAME to force a loader",
                                    str(root))
                found.append(f)
        self.report.warnings.extend(wr.problems)
        for big in wr.skipped_large:
            self.report.warnings.append(f"{big}: larger than --max-file-size; skipped")
        for root in roots:
            if root.is_dir() and not any(_inside(f.path, root) for f in found):
                self.report.warnings.append(f"{root}: no files kgsearch can index here")
        self.report.files_seen = len(found)

        known: dict[str, tuple] = {}
        for root in roots:
            prefix = str(root)
            rows = self.conn.execute(
                "SELECT id, path, size, mtime_ns, hash, loader FROM files WHERE path = ? OR "
                "(path >= ? AND path < ?)", (prefix, prefix + os.sep, prefix + chr(ord(os.sep) + 1)))
            for row in rows:
                known[row[1]] = row
        present = {str(f.path) for f in found}
        deleted = [(row[0], p) for p, row in known.items() if p not in present]

        to_load: list[Found] = []
        for f in found:
            row = known.get(str(f.path))
            if row is not None and not self.opts.full and row[5] == f.loader \
                    and row[2] == f.size and row[3] == f.mtime_ns:
                self.report.files_unchanged += 1
                continue
            if row is not None and not self.opts.full and row[5] == f.loader:
                try:
                    digest = _hash_bytes(f.path.read_bytes())
                except OSError:
                    digest = None
                if digest == row[4]:
                    self.conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE id=?",
                                      (f.size, f.mtime_ns, row[0]))
                    self.report.files_unchanged += 1
                    continue
            to_load.append(f)
        return to_load, deleted

    def load_files(self, to_load: list[Found]) -> None:
        """Load (in worker processes when there are many files) and store, in walk order."""
        jobs = [(f, LoadOptions(fmt=self.opts.fmt, allow_dangling=self.opts.allow_dangling,
                                max_chunk_chars=self.opts.max_chunk_chars, root=str(f.root),
                                explicit=str(f.path) in self.explicit_files)) for f in to_load]
        workers = self.opts.workers
        if workers is None:
            workers = default_workers() if len(jobs) >= PARALLEL_MIN_FILES else 0
        total = len(jobs)
        outcomes = ordered_map(_load_job, jobs, workers, pack=_pack_outcome, unpack=_unpack_outcome)
        try:
            for i, (f, outcome) in enumerate(zip(to_load, outcomes)):
                self.emit(phase="load", done=i, total=total, path=str(f.path))
                if outcome[0] == "fail":
                    self.fail_file(f, outcome[1])
                    continue
                digest, result = outcome[1], outcome[2]
                self.report.warnings.extend(result.warnings)
                self.store_file(f, digest, result, outcome[3] if len(outcome) > 3 else None)
                self.report.files_loaded += 1
        finally:
            outcomes.close()
        self.emit(phase="load", done=total, total=total)

    def fail_file(self, f: Found, exc: DataError) -> None:
        if not self.opts.keep_going:
            raise exc
        self.report.files_failed += 1
        self.report.warnings.append(f"{exc} (skipped; its previous contents are kept)")

    def store_file(self, f: Found, digest: str, result, hashed: list | None = None) -> None:
        """Upsert the file's nodes by key, replace its aliases, stage its edges. ``hashed``:
        each node's (hash, props JSON, stored text) when a worker process computed them already
        (:func:`_stored_fields`)."""
        conn = self.conn
        gen = self.changes.generation
        row = conn.execute("SELECT id FROM files WHERE path=?", (str(f.path),)).fetchone()
        new_file = row is None
        if new_file:
            file_id = conn.execute(
                "INSERT INTO files(path, root, loader, size, mtime_ns, hash, generation, nodes) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (str(f.path), str(f.root), f.loader, f.size, f.mtime_ns, digest, gen, len(result.nodes))).lastrowid
            old: dict[str, tuple] = {}
            old_aliases: set[tuple[str, str]] = set()
        else:
            file_id = row[0]
            conn.execute("UPDATE files SET root=?, loader=?, size=?, mtime_ns=?, hash=?, generation=?, nodes=? "
                         "WHERE id=?", (str(f.root), f.loader, f.size, f.mtime_ns, digest, gen,
                                        len(result.nodes), file_id))
            old = {r[1]: r for r in conn.execute(
                "SELECT id, key, hash, name, kgtext(text) FROM nodes WHERE file_id=?", (file_id,))}
            old_aliases = set(conn.execute(
                "SELECT a.ns, a.name FROM aliases a JOIN nodes n ON n.id=a.node_id WHERE n.file_id=?", (file_id,)))
            for k in old:
                old_aliases.update(_key_names(k))

        # keys this file did not have: one lookup for all (shared/placeholder nodes, other files)
        others: dict[str, tuple] = {}
        fresh = list(dict.fromkeys(n.key for n in result.nodes if n.key not in old))
        for chunk in _chunks(fresh, 500):
            for r in conn.execute(f"SELECT key, id, file_id, flags, name, kgtext(text) FROM nodes "
                                  f"WHERE key IN ({','.join('?' * len(chunk))})", chunk):
                others[r[0]] = r
        key_to_id: dict[str, int] = {}
        existing: list[int] = []               # ids that may carry aliases from before
        inserts = []
        late_parents = []                      # parent emitted after the child, or in another file
        next_id = 0
        rel_path = None          # nodes.path: the file's path comes from files (see migration 0006)
        emitted: set[str] = set()
        if hashed is None:
            hashed = _stored_fields(result.nodes)
        for n, (h, props, stored) in zip(result.nodes, hashed):
            if n.key in emitted:
                self.report.warnings.append(f"{f.path}: node {n.key!r} defined twice; keeping the first")
                continue
            emitted.add(n.key)
            pid = None
            if n.parent:
                pid = key_to_id.get(n.parent)
                if pid is None:
                    late_parents.append(n)
            prev = old.get(n.key)
            if prev is None:
                other = others.get(n.key)
                if other is not None and other[2] is not None:
                    owner = conn.execute("SELECT path FROM files WHERE id=?", (other[2],)).fetchone()
                    self.report.warnings.append(
                        f"{f.path}: node {n.key!r} is already defined in {owner[0] if owner else '?'}; "
                        f"keeping that one")
                    continue
                values = (n.kind, n.name, packed_qualname(n.key, n.kind, n.qualname), stored, rel_path,
                          n.line_start, n.line_end, h, file_id, n.flags, props, gen, pid)
                if other is not None:          # a shared/placeholder node becomes a real one
                    nid = other[1]
                    conn.execute("UPDATE nodes SET kind=?, name=?, qualname=?, text=?, path=?, line_start=?, "
                                 "line_end=?, hash=?, file_id=?, flags=?, props=?, generation=?, parent_id=? "
                                 "WHERE id=?", values + (nid,))
                    existing.append(nid)
                    self.changes.modified.append(nid)
                    self.changes.old[nid] = (other[4], other[5])
                else:
                    if not next_id:
                        next_id = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM nodes").fetchone()[0]
                    nid = next_id
                    next_id += 1
                    inserts.append(values + (n.key, nid))
                    self.changes.added.append(nid)
            else:
                nid = prev[0]
                existing.append(nid)
                if prev[2] != h:
                    self.changes.modified.append(nid)
                    self.changes.old[nid] = (prev[3], prev[4])
                    conn.execute("UPDATE nodes SET kind=?, name=?, qualname=?, text=?, path=?, line_start=?, "
                                 "line_end=?, hash=?, file_id=?, flags=?, props=?, generation=?, parent_id=? "
                                 "WHERE id=?",
                                 (n.kind, n.name, packed_qualname(n.key, n.kind, n.qualname), stored, rel_path,
                                  n.line_start, n.line_end, h,
                                  file_id, n.flags, props, gen, pid, nid))
                else:
                    conn.execute("UPDATE nodes SET qualname=?, path=?, line_start=?, line_end=?, flags=?, "
                                 "props=?, parent_id=? WHERE id=?",
                                 (packed_qualname(n.key, n.kind, n.qualname), rel_path, n.line_start, n.line_end,
                                  n.flags, props, pid, nid))
            key_to_id[n.key] = nid
        if inserts:
            conn.executemany(
                "INSERT INTO nodes(kind, name, qualname, text, path, line_start, line_end, hash, file_id, flags, "
                "props, generation, parent_id, key, id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", inserts)

        gone = [r[0] for k, r in old.items() if k not in key_to_id]
        if gone:
            self._remove_nodes(gone, {r[0]: (r[3], r[4]) for r in old.values()})

        for n in late_parents:
            if n.key in key_to_id:
                pid = key_to_id.get(n.parent) or self.ix.node_by_key(n.parent)
                conn.execute("UPDATE nodes SET parent_id=? WHERE id=?", (pid, key_to_id[n.key]))

        # aliases: replace. A node answers to (ns, name) for its key 'ns:name' without a row
        # (see _implied); only the other names are stored.
        for chunk in _chunks(existing, 500):
            conn.execute(f"DELETE FROM aliases WHERE node_id IN ({','.join('?' * len(chunk))})", chunk)
        alias_rows = []
        new_aliases = set()
        for n in result.nodes:
            nid = key_to_id.get(n.key)
            if nid is None:
                continue
            new_aliases.update(_key_names(n.key))
            implied = _implied(n.key)
            for rank, (ns, name) in enumerate(n.aliases):
                new_aliases.add((ns, name))
                if rank or (ns, name) != implied:
                    alias_rows.append((ns, name, nid, rank))
        conn.executemany("INSERT INTO aliases(ns, name, node_id, rank) VALUES (?,?,?,?)", alias_rows)
        if self.had_edges:                # names matter only to edges written before this run
            for ns, name in new_aliases.symmetric_difference(old_aliases):
                self.names_changed.setdefault(ns, set()).add(name)
        if old_aliases - new_aliases:
            self.changes.edges_changed = True

        # edges: replace this file's edges (resolved after every file is loaded)
        if not new_file:
            if not self.changes.full:
                self.old_file_edges[file_id] = _edge_multiset(conn, file_id)
            conn.execute("DELETE FROM edges WHERE file_id=?", (file_id,))
        else:
            self.new_files.add(file_id)
        stage = []
        for e in result.edges:
            stage.append((key_to_id.get(e.src), e.src, e.ns, e.dst, e.type, float(e.weight), file_id, e.line,
                          _dumps(e.props)))
        conn.executemany("INSERT INTO temp.edge_stage(src_id, src_key, ns, dst_name, type, weight, file_id, line, "
                         "props) VALUES (?,?,?,?,?,?,?,?,?)", stage)

    def _remove_nodes(self, ids: list[int], old_text: dict[int, tuple[str, str]] | None = None) -> None:
        conn = self.conn
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            if old_text is None:
                for nid, name, text in conn.execute(f"SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({marks})", chunk):
                    self.changes.old[nid] = (name, text)
            else:
                for nid in chunk:
                    self.changes.old[nid] = old_text[nid]
            # edges resolved through the key kept no name: give it back (from the key) so that
            # they resolve again if the name comes back
            conn.execute(
                f"UPDATE edges SET dst_name = (SELECT CASE WHEN edges.ns = 'key' THEN n.key "
                f"ELSE substr(n.key, length(edges.ns) + 2) END FROM nodes n WHERE n.id = edges.dst) "
                f"WHERE dst IN ({marks}) AND dst_name = ''", chunk)
            self.nulled_edges.extend(r[0] for r in conn.execute(
                f"SELECT id FROM edges WHERE dst IN ({marks}) AND src NOT IN ({marks})", chunk + chunk))
            conn.execute(f"DELETE FROM nodes WHERE id IN ({marks})", chunk)
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
            self._remove_nodes(ids)
        if self.conn.execute("SELECT 1 FROM edges WHERE file_id=? LIMIT 1", (file_id,)).fetchone():
            self.changes.edges_changed = True
        self.conn.execute("DELETE FROM files WHERE id=?", (file_id,))
        self.report.files_deleted += 1

    # ------------------------------------------------------------------ edges
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
            if ns == "kg":
                name = src_key[3:] if src_key.startswith("kg:") else src_key
                if not self.opts.allow_dangling:
                    raise DataError(f"edge source {name!r} is not a known node; add it to a nodes file "
                                    f"or rerun with --allow-dangling", path, line)
                self._make_auto("kg", [(name, name)], kind="placeholder", prefix="kg:",
                                flags=FLAG_AUTO | FLAG_PLACEHOLDER)
        if missing:
            conn.execute("UPDATE temp.edge_stage SET src_id = (SELECT id FROM nodes WHERE key = src_key) "
                         "WHERE src_id IS NULL")
            dropped = conn.execute("DELETE FROM temp.edge_stage WHERE src_id IS NULL").rowcount
            if dropped:
                self.report.warnings.append(f"{dropped} edges from unknown source nodes dropped")
        self.first_new_edge = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM edges").fetchone()[0]
        names = _Names(conn)
        for ns, count in conn.execute("SELECT ns, count(*) FROM temp.edge_stage GROUP BY ns"):
            if count >= PRELOAD_NAMES:
                names.preload(ns)
        next_id = self.first_new_edge
        new_file_edges = False
        pending = []                             # unresolved shared-node targets: resolve() makes them
        unresolved_py: list[tuple[int, str]] = []  # Python names: perhaps re-exported (below)
        cur = conn.execute("SELECT src_id, ns, dst_name, type, weight, file_id, line, props FROM temp.edge_stage "
                           "ORDER BY rowid")
        while True:
            batch = cur.fetchmany(8192)
            if not batch:
                break
            resolved = names.resolve([(r[1], r[2]) for r in batch])
            rows = []
            new_file_edges = new_file_edges or any(r[5] in self.new_files for r in batch)
            for (src, ns, dst_name, etype, weight, file_id, line, props), (dst, name) in zip(batch, resolved):
                if dst is None and (ns in AUTO_NS or ns == "kg"):
                    pending.append((next_id,))
                elif dst is None and ns == "py":
                    unresolved_py.append((next_id, dst_name))
                rows.append((next_id, src, dst, ns, name, etype, weight, file_id, line, props))
                next_id += 1
            conn.executemany("INSERT INTO edges(id, src, dst, ns, dst_name, type, weight, file_id, line, props) "
                             "VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        conn.execute("DELETE FROM temp.edge_stage")
        conn.executemany("INSERT OR IGNORE INTO temp.resolve_ids(id) VALUES (?)", pending)
        if unresolved_py:                        # now that this run's imports edges are in place
            reexport = self._reexports(names)
            conn.executemany("UPDATE edges SET dst=? WHERE id=?",
                             [(d, eid) for eid, name in unresolved_py if (d := reexport(name)) is not None])
        if next_id != self.first_new_edge and (self.changes.full or new_file_edges):
            self.changes.edges_changed = True

    def resolve(self) -> None:
        """Resolve orphaned and retry-worthy edges; create shared nodes for tag/ent/note targets.

        An edge is looked at again when its target was removed, or when one of its candidate
        names gained or lost a node this run (so it lands where a full rebuild would put it)."""
        conn = self.conn
        conn.executemany("INSERT OR IGNORE INTO temp.resolve_ids(id) VALUES (?)", ((i,) for i in self.nulled_edges))
        for ns in sorted(self.names_changed):
            changed = self.names_changed[ns]
            sql = "SELECT id, dst_name FROM edges WHERE ns=? AND dst_name != '' AND id < ?"
            args: list = [ns, self.first_new_edge]
            if len(changed) <= FEW_NAMES:          # an edited file: SQLite prefilters by substring
                sql += " AND (" + " OR ".join(["instr(dst_name, ?)"] * len(changed)) + ")"
                args += sorted(changed)
            retry = []
            for eid, dst_name in conn.execute(sql, args):
                if dst_name in changed or ("\n" in dst_name and not changed.isdisjoint(dst_name.split("\n"))):
                    retry.append((eid,))
            conn.executemany("INSERT OR IGNORE INTO temp.resolve_ids(id) VALUES (?)", retry)
        self.names_changed = {}
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
                    display = name
                    if props:
                        try:
                            display = json.loads(props).get("display") or name
                        except (json.JSONDecodeError, AttributeError):
                            pass
                    names.append((name, display))
                self._make_auto(ns, names, kind=kind, prefix=prefix, flags=flags)
                created = True
        dangling = conn.execute(
            "SELECT e.dst_name, f.path, e.line FROM temp.resolve_ids r CROSS JOIN edges e ON e.id = r.id "
            "LEFT JOIN files f ON f.id = e.file_id WHERE e.dst IS NULL AND e.ns='kg' "
            "ORDER BY f.path, e.line LIMIT 1").fetchone()
        if dangling:
            if not self.opts.allow_dangling:
                raise DataError(f"edge target {dangling[0]!r} is not a known node; add it to a nodes file "
                                f"or rerun with --allow-dangling", dangling[1], dangling[2])
            rows = conn.execute(
                "SELECT DISTINCT e.dst_name FROM temp.resolve_ids r CROSS JOIN edges e ON e.id = r.id "
                "WHERE e.dst IS NULL AND e.ns='kg'").fetchall()
            self._make_auto("kg", [(r[0], r[0]) for r in rows], kind="placeholder", prefix="kg:",
                            flags=FLAG_AUTO | FLAG_PLACEHOLDER)
            created = True
        if created:
            self._resolve_pass()

    def _resolve_pass(self) -> None:
        """(Re)resolve the edges listed in temp.resolve_ids against the current names."""
        conn = self.conn
        rows = conn.execute("SELECT e.id, e.ns, e.dst_name, e.dst, e.file_id FROM temp.resolve_ids r "
                            "CROSS JOIN edges e ON e.id = r.id WHERE e.dst_name != '' OR e.dst IS NULL").fetchall()
        names = _Names(conn)
        updates = []
        reexport = None
        for (eid, ns, dst_name, dst, file_id), (new_dst, new_name) in zip(
                rows, names.resolve([(r[1], r[2]) for r in rows])):
            if file_id is None:                 # derived edges (similar_text) keep their names
                new_name = dst_name
            if new_dst is None and ns == "py":
                reexport = reexport or self._reexports(names)
                new_dst = reexport(dst_name)
            if new_dst != dst or new_name != dst_name:
                updates.append((new_dst, new_name, eid))
        conn.executemany("UPDATE edges SET dst=?, dst_name=? WHERE id=?", updates)
        if updates:
            self.changes.edges_changed = True

    def _reexports(self, names: "_Names"):
        """A resolver for Python names that reach a symbol through a package's re-export.

        ``unittest.TestCase`` is ``unittest.case.TestCase``: ``unittest/__init__.py`` says
        ``from .case import TestCase``. For a py name that did not resolve, the longest dotted
        prefix that is an indexed module is looked up in that module's ``imports`` edges; the
        imported name (as written, else the resolved node's) ending in the next name component
        replaces the prefix
        (``pkg.Foo.meth`` -> ``pkg.core.Foo.meth``), up to 3 hops. The edge keeps its written
        name, so every later run resolves it the same way. Not followed: a re-export renamed
        with ``as``; edges in other files are not revisited when only the re-exporting
        ``__init__`` changed (a full run does).
        """
        conn = self.conn
        modules: dict[str, int] = {}
        for key, nid in conn.execute("SELECT key, id FROM nodes WHERE kind='module' AND key >= 'py:' AND key < 'py;'"):
            modules[key[3:]] = nid
        exports: dict[int, dict[str, str]] = {}

        def exported(mid: int) -> dict[str, str]:
            got = exports.get(mid)
            if got is None:
                got = exports[mid] = {}
                # the name as written (``from lib import Engine`` -> ``lib.Engine``, which may be
                # a re-export itself: the next hop), else the resolved node's
                for name, key in conn.execute(
                        "SELECT e.dst_name, n.key FROM edges e LEFT JOIN nodes n ON n.id = e.dst "
                        "WHERE e.src=? AND e.type='imports' AND e.ns='py'", (mid,)):
                    if name:
                        qual = name.split("\n", 1)[0]
                    elif key and key.startswith("py:"):
                        qual = key[3:].split("#", 1)[0]
                    else:
                        continue
                    got.setdefault(qual.rpartition(".")[2], qual)
            return got

        def rewrite(name: str) -> str | None:
            parts = name.split(".")
            for i in range(len(parts) - 1, 0, -1):
                mid = modules.get(".".join(parts[:i]))
                if mid is not None:
                    target = exported(mid).get(parts[i])
                    if target is None or target == ".".join(parts[:i + 1]):
                        return None
                    return ".".join([target] + parts[i + 1:])
            return None

        def follow(name: str) -> int | None:
            seen = {name}
            for _ in range(3):
                name = rewrite(name)
                if name is None or name in seen:
                    return None
                seen.add(name)
                hit = names.resolve([("py", name)])[0][0]
                if hit is not None:
                    return hit
            return None

        def resolve(dst_name: str) -> int | None:
            for cand in dst_name.split("\n"):
                hit = follow(cand)
                if hit is not None:
                    return hit
            return None
        return resolve

    def _make_auto(self, ns: str, names: list[tuple[str, str]], kind: str, prefix: str, flags: int) -> None:
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
                    (key, kind, shown, name, "", _node_hash(kind, shown, ""), flags, gen)).lastrowid
                self.changes.added.append(nid)
                node_flags = flags
            else:
                nid, node_flags = row
            # a placeholder answers to its name only when no real node does
            rank = PLACEHOLDER_RANK if flags & FLAG_PLACEHOLDER else 0
            if rank == 0 and _implied(key, node_flags) == (ns, name):
                continue
            if not conn.execute("SELECT 1 FROM aliases WHERE ns=? AND name=? AND node_id=?",
                                (ns, name, nid)).fetchone():
                conn.execute("INSERT INTO aliases(ns, name, node_id, rank) VALUES (?,?,?,?)", (ns, name, nid, rank))

    def compare_file_edges(self) -> None:
        """A reloaded file whose edges come out as they were (a function body edited without
        touching its calls, say) leaves the graph alone: edges_changed only when they differ
        (line numbers aside). Run after resolution, which decides where the new edges point."""
        if self.changes.edges_changed:
            return
        old_edges, self.old_file_edges = self.old_file_edges, {}
        for file_id, old in old_edges.items():
            if _edge_multiset(self.conn, file_id) != old:
                self.changes.edges_changed = True
                return

    def collect_garbage(self) -> None:
        """Shared nodes (tags, entities, placeholders) that no edge touches any more are removed."""
        ids = [r[0] for r in self.conn.execute(
            "SELECT id FROM nodes WHERE file_id IS NULL AND flags & ? "
            "AND NOT EXISTS (SELECT 1 FROM edges WHERE dst = nodes.id) "
            "AND NOT EXISTS (SELECT 1 FROM edges WHERE src = nodes.id)", (FLAG_AUTO,))]
        if ids:
            self._remove_nodes(ids)

    # ------------------------------------------------------------------ derived
    def run_steps(self) -> None:
        steps = self.opts.steps
        for modname in DERIVED_STEPS:
            short = step_name(modname)
            if steps is not None and short not in steps:
                continue
            if not _step_present(modname):
                continue
            mod = importlib.import_module(modname)
            t0 = time.perf_counter()
            self.emit(phase=short)
            info = mod.update(self.ix, self.changes, self.opts.settings, progress=self.opts.progress) or {}
            info.setdefault("seconds", round(time.perf_counter() - t0, 3))
            self.report.steps[short] = info


def _implied(key: str, flags: int = 0) -> tuple[str, str] | None:
    """The name a node answers to by its key alone: key ``ns:name`` -> ``(ns, name)`` at rank 0.

    Such aliases (every ``py`` qualified name, ``kg`` node ids, tags, entities) are not stored
    in ``aliases``: the key index answers them. Placeholders answer only through their stored
    (low-ranked) alias."""
    ns, sep, name = key.partition(":")
    if not sep or not ns or ns == "key" or flags & FLAG_PLACEHOLDER:
        return None
    return ns, name


def _key_names(key: str) -> list[tuple[str, str]]:
    implied = _implied(key)
    return [("key", key), implied] if implied else [("key", key)]


def _better(best: dict, name: str, cand: tuple) -> None:
    cur = best.get(name)
    if cur is None or cand[:2] < cur[:2]:
        best[name] = cand


class _Names:
    """Resolve edge targets: ``(ns, dst_name)`` -> node id.

    A name resolves to the best ``(rank, node id)`` among its ``aliases`` rows and the node whose
    key is ``ns:name`` (rank 0, see :func:`_implied`); ns ``key`` names a key. ``dst_name`` may
    hold several candidates separated by newlines: the first that resolves wins. Lookups are
    batched and memoised; :meth:`preload` reads a whole namespace at once when most of it
    will be asked for (a first index run).

    The name an edge keeps: a single-candidate edge resolved through the target's key keeps
    ``''`` (the key gives the name back when the target is removed, see ``_remove_nodes``).
    Edges to tags, entities and notes keep theirs (notes have many names, shared nodes are
    re-made from them), as does every multi-candidate edge (a removed or newly appearing
    candidate can move it)."""

    def __init__(self, conn):
        self.conn = conn
        self.memo: dict[str, dict[str, tuple[int, bool] | None]] = {}
        self.complete: set[str] = set()

    def preload(self, ns: str) -> None:
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
        for chunk in _chunks(names, 500):
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
        memo = self.memo.setdefault(ns, {})
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


def _edge_multiset(conn, file_id: int) -> Counter:
    return Counter(conn.execute("SELECT src, dst, ns, dst_name, type, weight, props FROM edges WHERE file_id=?",
                                (file_id,)))


def _load_job(job: tuple[Found, LoadOptions]) -> tuple:
    """Read, hash and load one file (pure: runs in a worker process too).
    ``("ok", digest, LoadResult)`` or ``("fail", DataError)``."""
    f, lopts = job
    try:
        data = f.path.read_bytes()
    except OSError as exc:
        return "fail", DataError(f"cannot read ({exc.strerror}); check its permissions", str(f.path))
    loader = get_loader(f.loader)
    try:
        result = loader.load(f.path, f.rel, lopts)
    except DataError as exc:
        return "fail", exc
    except (UnicodeError, ValueError, RecursionError, MemoryError) as exc:
        return "fail", DataError(f"could not be loaded ({type(exc).__name__}: {exc}); "
                                 f"fix it or add it to .kgsearchignore", str(f.path))
    return "ok", _hash_bytes(data), result


_NODE_FIELDS = attrgetter(*(fl.name for fl in fields(NodeRec)))
_EDGE_FIELDS = attrgetter(*(fl.name for fl in fields(EdgeRec)))


def _pack_outcome(outcome: tuple) -> tuple:
    """Plain tuples pickle ~4x faster than dataclass instances."""
    if outcome[0] != "ok":
        return outcome
    res = outcome[2]
    return ("ok", outcome[1], [_NODE_FIELDS(n) for n in res.nodes], [_EDGE_FIELDS(e) for e in res.edges],
            res.warnings, _stored_fields(res.nodes))


def _unpack_outcome(packed: tuple) -> tuple:
    """("ok", digest, LoadResult, [(hash, props JSON, stored text)] per node) -- the last computed
    in the worker."""
    if packed[0] != "ok":
        return packed
    _, digest, nodes, edges, warnings, hashed = packed
    return ("ok", digest, LoadResult([NodeRec(*n) for n in nodes], [EdgeRec(*e) for e in edges], warnings),
            hashed)


def _inside(child: Path, root: Path) -> bool:
    try:
        child.relative_to(root)
        return True
    except ValueError:
        return False


def _chunks(seq: list, n: int):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def index_paths(db: str | os.PathLike | None, paths: list[str], opts: IndexOptions | None = None) -> IndexReport:
    """Index (or incrementally reindex) ``paths`` into the index at ``db``. See the module docstring."""
    opts = opts or IndexOptions()
    t_start = time.perf_counter()
    if db is None:
        from .config import default_db_path
        db = default_db_path()
    report = IndexReport(db=str(db))
    with IndexLock(db):
        ix = Index.open(db)
        try:
            roots = _resolve_roots(ix, list(paths))
            report.roots = [str(r) for r in roots]
            run = _Run(ix, opts, report)
            run.explicit_files = {str(r) for r in roots if not r.is_dir()}
            with ix.transaction():
                conn = ix.conn
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS edge_stage(src_id INTEGER, src_key TEXT, ns TEXT, "
                             "dst_name TEXT, type TEXT, weight REAL, file_id INTEGER, line INTEGER, props TEXT)")
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS resolve_ids(id INTEGER PRIMARY KEY)")
                run.had_edges = conn.execute("SELECT 1 FROM edges LIMIT 1").fetchone() is not None
                t0 = time.perf_counter()
                to_load, deleted = run.plan(roots)
                report.phases["scan"] = round(time.perf_counter() - t0, 3)
                # settings persist between runs; flags given now override them
                stored = ix.meta_json("settings")
                settings = {**(stored or {}), **opts.settings}
                opts.settings = settings
                if opts.full or stored != settings:
                    run.changes.full = True
                t0 = time.perf_counter()
                for file_id, _ in deleted:
                    run.drop_file(file_id)
                run.load_files(to_load)
                report.phases["load"] = round(time.perf_counter() - t0, 3)
                t0 = time.perf_counter()
                run.move_staged_edges()
                run.resolve()
                run.collect_garbage()
                run.compare_file_edges()
                report.phases["resolve"] = round(time.perf_counter() - t0, 3)
                ch = run.changes
                known = set(json.loads(ix.meta("roots", "[]") or "[]"))
                new_roots = sorted(known | set(report.roots))
                if ch.any:
                    if ch.full:
                        # every table was (re)written in one go, in no particular key order:
                        # a VACUUM after the commit packs the half-filled pages (stdlib: -5 %)
                        ix.request_compaction()
                    ix.set_meta("generation", ch.generation)
                    t0 = time.perf_counter()
                    run.run_steps()
                    report.phases["derived"] = round(time.perf_counter() - t0, 3)
                    ix.set_meta("last_index_time", time.time())
                    ix.set_meta_json("settings", settings)
                if new_roots != sorted(known):
                    ix.set_meta_json("roots", new_roots)
                ix.set_meta("last_run_time", time.time())
                report.generation = ix.generation
                report.nodes_added = len(ch.added)
                report.nodes_modified = len(ch.modified)
                report.nodes_removed = len(ch.removed)
                report.edges_changed = ch.edges_changed
            ix.checkpoint()
            if opts.compact:
                t0 = time.perf_counter()
                report.compacted_bytes = ix.compact_if_sparse()
                if report.compacted_bytes:
                    report.phases["compact"] = round(time.perf_counter() - t0, 3)
        finally:
            ix.close()
    report.seconds = round(time.perf_counter() - t_start, 3)
    return report
