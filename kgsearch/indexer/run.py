"""One incremental, cron-safe index run, end to end: :func:`index_paths`.

1. take the writer lock (a second indexer gets :class:`~kgsearch.errors.IndexBusy` at once);
2. in ONE ``BEGIN IMMEDIATE`` transaction: plan (walk the roots, compare each file's
   size/mtime, then its hash, with the ``files`` table: :mod:`.plan`); drop deleted files;
   load changed files (in worker processes when there are many: :mod:`.load`) and write their
   nodes in walk order (:mod:`.writer`); move their edges in and resolve them (:mod:`.edges`);
   drop shared nodes nothing points to any more; run the derived-data steps on the
   :class:`~kgsearch.types.ChangeSet` (:mod:`.steps`); bump the generation; commit.
   Anything that goes wrong before ``COMMIT`` (a bad file, Ctrl-C, kill -9, a full disk)
   leaves the previous index exactly as it was; readers (WAL) are never blocked;
3. after the commit, ``VACUUM`` gives space back when it pays (:meth:`Index.compact_if_sparse`).
"""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from ..embed.embed_step import made_another_way
from ..embed.index_model import model_files_changed
from ..config import default_db_path
from ..errors import DataError, NotFound, UsageError
from ..ingest.pool import default_workers, ordered_map
from ..ingest.walk import Found, inside
from ..lines import quoted
from ..settings import IndexSettings
from ..store.db import Index, ensure_error, foreign_kind
from ..store.lock import IndexLock
from ..store.roots import file_counts, find_root, list_roots, mark_indexed, remove_root
from ..types import ChangeSet, LoadOptions
from .edges import EdgeResolver
from .load import load_job, pack_outcome, unpack_outcome
from .plan import plan, record_loader_versions, resolve_roots
from .state import IndexOptions, IndexReport, RunState
from .steps import begin_steps, check_step_names, end_steps, run_steps
from .testdecl import involves, mark_declared_tests
from .writer import Writer

__all__ = ["index_paths", "remove_roots", "check_options"]

PARALLEL_MIN_FILES = 64    # files to load from which worker processes pay off


def _settings(ix, given: dict, report: IndexReport) -> tuple[dict, IndexSettings]:
    """Stored settings with the ones given now on top, validated (an unknown key given now is a
    usage error; one stored by an older kgsearch is dropped with a warning)."""
    IndexSettings.from_dict(given)
    stored = dict(ix.meta_json("settings") or {})
    known = set(IndexSettings.known()) | {"text"}
    for key in [k for k in stored if k not in known]:
        report.warnings.append(f"setting {quoted(key)} stored in the index is not a setting of this kgsearch; dropped")
        del stored[key]
    merged = {**stored, **given}
    return merged, IndexSettings.from_dict(merged)


def _load_files(st: RunState, writer: Writer, edges: EdgeResolver, to_load: list[Found]) -> None:
    """Load (in worker processes when there are many files) and store, in walk order."""
    opts = st.opts
    jobs = [(f, LoadOptions(fmt=opts.fmt, allow_dangling=opts.allow_dangling, max_chunk_chars=opts.max_chunk_chars,
                            root=str(f.root), explicit=str(f.path) in st.explicit_files)) for f in to_load]
    workers = opts.workers
    if workers is None:
        workers = default_workers() if len(jobs) >= PARALLEL_MIN_FILES else 0
    total = len(jobs)
    outcomes = ordered_map(load_job, jobs, workers, pack=pack_outcome, unpack=unpack_outcome)
    try:
        for i, (f, outcome) in enumerate(zip(to_load, outcomes)):
            st.emit(phase="load", done=i, total=total, path=str(f.path))
            if outcome[0] == "fail":
                _fail_file(st, f, outcome[1], outcome[2] if len(outcome) > 2 else "malformed")
                continue
            digest, result = outcome[1], outcome[2]
            st.report.warnings.extend(result.warnings)
            file_id, new_file, key_to_id = writer.store_file(f, digest, result, outcome[3] if len(outcome) > 3 else None)
            edges.stage(file_id, new_file, key_to_id, result.edges)
            st.report.files_loaded += 1
    finally:
        outcomes.close()
    st.emit(phase="load", done=total, total=total)


def _orphaned(st: RunState, writer: Writer) -> list[Found]:
    """Unchanged files that lost edges because a node they start from was removed (another
    file defined it): loaded again, so their edges are what a fresh build would write (a KG
    edge to a now-unknown source fails as dangling, a triple's head becomes a shared entity)."""
    ids = sorted(writer.orphaned_files - writer.stored_files)
    writer.orphaned_files.clear()
    if not ids:
        return []
    labels = {r.path: r.label for r in list_roots(st.conn)}
    out = []
    marks = ",".join("?" * len(ids))
    for path, root, loader, size, mtime in st.conn.execute(
            f"SELECT path, root, loader, size, mtime_ns FROM files WHERE id IN ({marks}) ORDER BY path", ids):
        p, r = Path(path), Path(root)
        try:
            rel = p.name if p == r else p.relative_to(r).as_posix()
        except ValueError:                    # a row from before the roots registry
            rel = p.name
        out.append(Found(p, rel, r if p != r else p.parent, loader, size, mtime, origin=root,
                         label=labels.get(root, "")))
    return out


def _fail_file(st: RunState, f: Found, exc: DataError, why: str) -> None:
    """A file that could not be loaded. Met while walking a folder (no --format), it is skipped
    with one warning and counted: one bad file never stops the others (a tool's config with
    comments, a log that ends mid-line). A file the user named, or forced with --format, fails
    the run (nothing changes) unless --keep-going. Either way what it held before is kept, and
    its row is marked to be read again (size -1, no hash): a file re-read for a new loader
    version that fails under it would otherwise pass for read on the next run (its size and
    time unchanged, the root's loader versions recorded) and keep the old loader's nodes until
    it changed."""
    walked = str(f.path) not in st.explicit_files and st.opts.fmt is None
    if not walked and not st.opts.keep_going:
        raise exc
    st.conn.execute("UPDATE files SET size = -1, hash = '' WHERE path = ?", (str(f.path),))
    if walked:
        st.report.skipped[why] = st.report.skipped.get(why, 0) + 1
        st.warn(f"{exc} (skipped; what was indexed from it before is kept)")
        return
    st.report.files_failed += 1
    st.warn(f"{exc} (skipped; its previous contents are kept)")


def check_options(opts: IndexOptions) -> None:
    """Option values that would do harm are usage errors, before anything is touched: a size
    cap of 0 or less would skip every file and so empty the index; a model that cannot be
    found would be remembered and leave dense search off for good."""
    check_step_names(opts.steps)
    IndexSettings.from_dict(opts.settings)
    cap = opts.max_file_bytes
    if cap is not None and (not isinstance(cap, int) or cap <= 0):
        raise UsageError(f"--max-file-size must be a number of MB above 0, got {cap / 1e6 if cap else cap!r}")
    model = opts.settings.get("model")
    if model and (opts.steps is None or "embed" in opts.steps):
        from ..embed.model import no_model_message, resolve_model

        if resolve_model(model) is None:
            raise UsageError(f"--model {quoted(model)}: {no_model_message(model)}")


def index_paths(db: str | os.PathLike | None, paths: list[str], opts: IndexOptions | None = None) -> IndexReport:
    """Index (or incrementally reindex) ``paths`` into the index at ``db``. See the module docstring."""
    opts = opts or IndexOptions()
    check_options(opts)                              # a bad option fails before the lock is taken
    from ..store.roots import check_paths

    check_paths(paths)                               # (and an empty PATH)
    return locked_run(db, opts, lambda st: index_roots(st, resolve_roots(st.ix, list(paths))))


def remove_roots(db: str | os.PathLike | None, refs: list[str], opts: IndexOptions | None = None) -> IndexReport:
    """Remove roots (by path or label) and every node of their files, in one transaction;
    derived data is updated as for deleted files. An unknown root: :class:`NotFound`."""
    opts = opts or IndexOptions()
    check_options(opts)
    from ..store.roots import check_paths

    check_paths(refs, "kgsearch roots remove ~/notes")

    def body(st: RunState) -> None:
        gone = []
        for ref in refs:
            root = find_root(st.conn, ref)
            if root is None:
                known = ", ".join(r.path for r in list_roots(st.conn)) or "none"
                raise NotFound(f"no root {quoted(ref)} in {st.ix.path} (its roots: {known}); `kgsearch roots` lists them")
            gone.append(root)
        st.report.roots_removed = [r.path for r in gone]
        deleted = []
        gone_paths = {r.path for r in gone}
        for root in gone:
            # a file root's file is its own unless a folder root registered before it holds it
            # (that root owns the file: plan.py), a folder root's files are those it owns
            earlier = [r.path for r in list_roots(st.conn) if r.position < root.position
                       and r.path not in gone_paths and os.path.isdir(r.path)]
            deleted += [(i, p) for i, p in st.conn.execute(
                "SELECT id, path FROM files WHERE root = ? OR path = ?", (root.path, root.path))
                if p != root.path or not any(inside(p, e) for e in earlier)]
            remove_root(st.conn, root.path)
        deleted = [tuple(r) for r in deleted]
        # their rows go at the end of the run: an heir below must load them, not find them
        # unchanged (a file root's file's row names its folder, which may be an heir's path)
        st.conn.executemany("UPDATE files SET root = '' WHERE id = ?", [(i,) for i, _ in deleted])
        # files a root nested inside a removed one reaches again (its own since it was added
        # after): loaded under it in this run, not lost until the next `kgsearch index`
        heirs = [r for r in list_roots(st.conn)
                 if os.path.isdir(r.path) and any(inside(p, r.path) for _, p in deleted)]
        to_load: list = []
        if heirs:
            to_load, more = plan(st, heirs)
            ids = {i for i, _ in deleted}
            deleted += [d for d in more if d[0] not in ids]
        _apply(st, to_load, deleted, time.perf_counter())

    return locked_run(db, opts, body, create=False)


def locked_run(db, opts: IndexOptions, body, create: bool = True) -> IndexReport:
    """Run ``body(st)`` in one index transaction under the index lock: open (a health probe
    first), commit, checkpoint, compact when asked; a damaged file becomes ``BadIndex``, and so
    does a missing one unless ``create``. A first run that fails removes what it made: the
    index file, its lock and the folders it created for them (``report.created_dirs`` names
    those of a run that succeeded, outermost first)."""
    t_start = time.perf_counter()
    if db is None:
        db = default_db_path()
    if not create and not os.path.exists(db):
        Index.open(db, readonly=True)                # BadIndex: "no index at ...", naming the fix
    report = IndexReport(db=str(db))
    if foreign_kind(db) is not None:             # not an index: refused before a .lock is made beside it
        Index.open(db, readonly=True).close()   # (BadIndex naming what it is and the fix)
    made = _new_folders(db)
    try:
        _run_locked(db, opts, body, report)
    except BaseException:
        if made and not os.path.lexists(db):     # a failed first run leaves no empty folder behind
            _remove_empty(made)
        raise
    report.created_dirs = [str(d) for d in made]
    report.seconds = round(time.perf_counter() - t_start, 3)
    return report


def _run_locked(db, opts: IndexOptions, body, report: IndexReport) -> None:
    with IndexLock(db):
        first = not os.path.exists(db)
        try:
            ix = Index.open(db)
            try:
                ix.health_probe()                # a damaged file: BadIndex naming the fix, not "no change"
                st = RunState(ix, opts, report, ChangeSet(generation=ix.generation + 1, full=opts.full))
                with ix.transaction():
                    body(st)
                first = False                    # committed: an index now, whatever follows
                ix.checkpoint()
                if opts.compact:
                    t0 = time.perf_counter()
                    report.compacted_bytes = ix.compact_if_sparse()
                    if report.compacted_bytes:
                        report.phases["compact"] = round(time.perf_counter() - t0, 3)
            except sqlite3.DatabaseError as exc:
                raise (ensure_error(exc, db) or exc) from None
            finally:
                ix.close()
        except BaseException:
            if first:                            # a failed first run leaves no empty index behind
                _discard(db)
            raise


def _new_folders(db) -> list[Path]:
    """The folders on the way to ``db`` that do not exist yet, outermost first: the run makes
    them (for the lock, next to the real path, and the index)."""
    p = Path(os.path.realpath(os.path.expanduser(str(db)))).parent
    out = []
    while not os.path.lexists(p) and p != p.parent:
        out.append(p)
        p = p.parent
    return out[::-1]


def _remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (outermost first) from the innermost out, while they are empty."""
    for d in reversed(folders):
        try:
            os.rmdir(d)
        except OSError:
            return


def _discard(db) -> None:
    """Remove the index file (and its WAL and shared memory) a failed first run created."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(f"{db}{suffix}")
        except OSError:
            pass


def index_roots(st: RunState, roots) -> None:
    """Everything inside an index run's transaction: plan, load, resolve, derived steps."""
    ix, report = st.ix, st.report
    report.roots = [r.path for r in roots]
    st.explicit_files = {r.path for r in roots if os.path.isfile(r.path)}
    t0 = time.perf_counter()
    to_load, deleted = plan(st, roots)
    _apply(st, to_load, deleted, t0)
    now = time.time()
    counts = file_counts(ix.conn)
    for path in st.walked_roots:
        mark_indexed(ix.conn, path, now, counts.get(path, 0))


def _apply(st: RunState, to_load: list[Found], deleted: list[tuple[int, str]], t0: float) -> None:
    """Drop deleted files, load changed ones, resolve edges, run the derived steps."""
    ix, report, ch = st.ix, st.report, st.changes
    writer = Writer(st)
    edges = EdgeResolver(st, writer)
    st.had_edges = ix.conn.execute("SELECT 1 FROM edges LIMIT 1").fetchone() is not None
    report.phases["scan"] = round(time.perf_counter() - t0, 3)
    # settings persist between runs; flags given now override them
    stored = ix.meta_json("settings")
    settings, typed = _settings(ix, st.opts.settings, report)
    st.opts.settings = settings
    if st.opts.full or stored != settings:
        ch.full = True
    begin_steps(st)                           # (the graph step starts tracking the rows that change)
    t0 = time.perf_counter()
    declaring = involves(ix.conn, {f.loader for f in to_load}, [i for i, _ in deleted])
    for file_id, _ in deleted:
        writer.drop_file(file_id)
    _load_files(st, writer, edges, to_load)
    for _ in range(3):                        # (a reload can orphan more: rare, bounded)
        again = _orphaned(st, writer)
        if not again:
            break
        declaring = declaring or involves(ix.conn, {f.loader for f in again}, ())
        _load_files(st, writer, edges, again)
    report.phases["load"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    edges.move_staged_edges()
    edges.resolve()
    writer.collect_garbage()
    edges.compare_file_edges()
    if declaring:                             # Rust's #[cfg(test)] mod x;: x's file is test code
        mark_declared_tests(ix.conn, ch, writer.stored_files)
    report.phases["resolve"] = round(time.perf_counter() - t0, 3)
    stale = set(ix.stale_steps())
    recheck = set()
    if (not ch.any and "embed" not in stale and (st.opts.steps is None or "embed" in st.opts.steps)
            and (model_files_changed(ix, typed) or made_another_way(ix))):
        # other model files than the vectors' (a new default after an upgrade, or the same
        # model installed elsewhere): the step re-embeds only if the model's content differs;
        # vectors an older kgsearch made otherwise (without the lead) are made again
        recheck.add("embed")
    if ch.any or stale or recheck:
        if ch.full:
            # every table was (re)written in one go, in no particular key order:
            # a VACUUM after the commit packs the half-filled pages (stdlib: -5 %)
            ix.request_compaction()
        ix.set_meta("generation", ch.generation)
        t0 = time.perf_counter()
        run_steps(st, typed, stale, recheck)
        report.phases["derived"] = round(time.perf_counter() - t0, 3)
        if stale:
            ix.clear_stale(stale if st.opts.steps is None else stale & set(st.opts.steps))
        ix.refresh_planner_stats()            # (which index answers a look-up best, for the queries)
        if ch.any:
            ix.set_meta("last_index_time", time.time())
        ix.set_meta_json("settings", settings)
    end_steps(st)
    record_loader_versions(ix, st.walked_roots)
    ix.set_meta("last_run_time", time.time())
    report.generation = ix.generation
    report.nodes_added = len(ch.added)
    report.nodes_modified = len(ch.modified)
    report.nodes_removed = len(ch.removed)
    report.edges_changed = ch.edges_changed
