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

import json
import os
import time

from ..config import default_db_path
from ..errors import DataError
from ..ingest.pool import default_workers, ordered_map
from ..ingest.walk import Found
from ..settings import IndexSettings
from ..store.db import Index
from ..store.lock import IndexLock
from ..types import ChangeSet, LoadOptions
from .edges import EdgeResolver
from .load import load_job, pack_outcome, unpack_outcome
from .plan import plan, resolve_roots
from .state import IndexOptions, IndexReport, RunState
from .steps import check_step_names, run_steps
from .writer import Writer

__all__ = ["index_paths"]

PARALLEL_MIN_FILES = 64    # files to load from which worker processes pay off


def _settings(ix, given: dict, report: IndexReport) -> tuple[dict, IndexSettings]:
    """Stored settings with the ones given now on top, validated (an unknown key given now is a
    usage error; one stored by an older kgsearch is dropped with a warning)."""
    IndexSettings.from_dict(given)
    stored = dict(ix.meta_json("settings") or {})
    known = set(IndexSettings.known()) | {"text"}
    for key in [k for k in stored if k not in known]:
        report.warnings.append(f"setting {key!r} stored in the index is not a setting of this kgsearch; dropped")
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
                _fail_file(st, outcome[1])
                continue
            digest, result = outcome[1], outcome[2]
            st.report.warnings.extend(result.warnings)
            file_id, new_file, key_to_id = writer.store_file(f, digest, result, outcome[3] if len(outcome) > 3 else None)
            edges.stage(file_id, new_file, key_to_id, result.edges)
            st.report.files_loaded += 1
    finally:
        outcomes.close()
    st.emit(phase="load", done=total, total=total)


def _fail_file(st: RunState, exc: DataError) -> None:
    if not st.opts.keep_going:
        raise exc
    st.report.files_failed += 1
    st.warn(f"{exc} (skipped; its previous contents are kept)")


def index_paths(db: str | os.PathLike | None, paths: list[str], opts: IndexOptions | None = None) -> IndexReport:
    """Index (or incrementally reindex) ``paths`` into the index at ``db``. See the module docstring."""
    opts = opts or IndexOptions()
    check_step_names(opts.steps)
    IndexSettings.from_dict(opts.settings)           # a bad setting fails before the lock is taken
    t_start = time.perf_counter()
    if db is None:
        db = default_db_path()
    report = IndexReport(db=str(db))
    with IndexLock(db):
        ix = Index.open(db)
        try:
            roots = resolve_roots(ix, list(paths))
            report.roots = [str(r) for r in roots]
            st = RunState(ix, opts, report, ChangeSet(generation=ix.generation + 1, full=opts.full),
                          explicit_files={str(r) for r in roots if not r.is_dir()})
            with ix.transaction():
                _run(st, roots)
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


def _run(st: RunState, roots) -> None:
    """Everything inside the run's transaction."""
    ix, report, ch = st.ix, st.report, st.changes
    writer = Writer(st)
    edges = EdgeResolver(st, writer)
    st.had_edges = ix.conn.execute("SELECT 1 FROM edges LIMIT 1").fetchone() is not None
    t0 = time.perf_counter()
    to_load, deleted = plan(st, roots)
    report.phases["scan"] = round(time.perf_counter() - t0, 3)
    # settings persist between runs; flags given now override them
    stored = ix.meta_json("settings")
    settings, typed = _settings(ix, st.opts.settings, report)
    st.opts.settings = settings
    if st.opts.full or stored != settings:
        ch.full = True
    t0 = time.perf_counter()
    for file_id, _ in deleted:
        writer.drop_file(file_id)
    _load_files(st, writer, edges, to_load)
    report.phases["load"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    edges.move_staged_edges()
    edges.resolve()
    writer.collect_garbage()
    edges.compare_file_edges()
    report.phases["resolve"] = round(time.perf_counter() - t0, 3)
    known = set(json.loads(ix.meta("roots", "[]") or "[]"))
    new_roots = sorted(known | set(report.roots))
    stale = set(ix.stale_steps())
    if ch.any or stale:
        if ch.full:
            # every table was (re)written in one go, in no particular key order:
            # a VACUUM after the commit packs the half-filled pages (stdlib: -5 %)
            ix.request_compaction()
        ix.set_meta("generation", ch.generation)
        t0 = time.perf_counter()
        run_steps(st, typed, stale)
        report.phases["derived"] = round(time.perf_counter() - t0, 3)
        if stale:
            ix.clear_stale(stale if st.opts.steps is None else stale & set(st.opts.steps))
        if ch.any:
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
