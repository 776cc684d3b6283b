"""``kgsearch doctor``: is the index file sound, and is its derived data what a rebuild would
give? ``doctor --rebuild``: a new index from the sources, swapped in atomically.

Checks (:func:`check_index`), in order, each a :class:`Check`:

1. ``file``: ``PRAGMA quick_check`` (``integrity_check`` with ``thorough``): pages, b-trees,
   records; and every stored array's length against its type and shape. A failure here means
   a damaged file; the fix is ``doctor --rebuild``.
2. ``fts5``: FTS5's ``integrity-check`` against its content (the ``nodes_fts`` view).
3. Derived data (``derived=True``): the index is copied (SQLite's backup API, into a temporary
   file next to it) and the derived steps ``text``, ``neighbors`` and ``graph`` rebuild their
   data from the copy's nodes and edges, as ``kgsearch index --full`` would; then per table:
   ``text`` (postings, lengths, symbols, trigrams, and the recorded BM25 state: avgdl, N),
   ``neighbors`` (``similar_text`` edges), ``graph`` (node positions, the CSR edges as a
   sorted list of (source, target, type, weight), PageRank within the
   warm-start bound, 1.1e-3 in L1). Community labels are
   not compared: between full runs they are kept and extended, a documented approximation
   (a full CNM would cost most of the check's time). ``vectors``: every node that has text
   to embed has a vector of that text (its stored hash equals the hash of its text now), and
   no vector belongs to a node that is gone -- checked without running the model.
   A difference means the incremental updates left something a rebuild would not; the fix is
   ``kgsearch index --full`` (rebuilds derived data in place) or ``doctor --rebuild``.

Cost, measured on the stdlib index (75K nodes, 108 MB with vectors; AMD EPYC, 2 shared cores,
one run): 10.9 s and 264 MB peak RSS for the whole check (``PRAGMA quick_check`` alone 0.2 s);
``--no-derived`` leaves the file checks alone.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import BadIndex
from ..graph.stored.scores import PAGERANK_L1_BOUND
from ..store.db import Index, check_blobs, foreign_kind, is_corruption
from ..store.lock import IndexLock
from ..types import ChangeSet

log = logging.getLogger(__name__)

__all__ = ["Check", "DoctorReport", "check_index"]

# PageRank: a reindex warm-starts the power iteration from the stored scores (kgsearch.graph.
# stored.scores); both it and a rebuild stop within alpha/(1-alpha) x 1e-4 (L1) of the exact vector,
# so they may differ by up to scores.PAGERANK_L1_BOUND in total (plus float32 rounding)
PAGERANK_L1_TOL = PAGERANK_L1_BOUND + 1e-6
WORDS = {"text_postings": "terms", "text_doclen": "lengths", "text_symbols": "symbols", "text_trigrams": "trigrams"}
DERIVED_TABLES = {           # step -> tables compared row for row (all columns)
    "text": ("text_postings", "text_doclen", "text_symbols", "text_trigrams"),
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


@dataclass
class DoctorReport:
    db: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def damaged(self) -> bool:
        return any(not c.ok and c.name in ("file", "fts5") for c in self.checks)

    def as_dict(self) -> dict:
        return {"db": self.db, "ok": self.ok, "damaged": self.damaged, "seconds": self.seconds,
                "checks": [c.__dict__ for c in self.checks], "notes": self.notes}


REBUILD = "run `kgsearch doctor --rebuild` (a new index from the roots, swapped in when done)"
FULL = "run `kgsearch index --full` (rebuilds the derived data in place) or `kgsearch doctor --rebuild`"


def check_index(db, thorough: bool = False, derived: bool = True, progress=None) -> DoctorReport:
    """Check the index at ``db`` (see the module docstring). Holds the writer lock while it
    runs (another indexer: :class:`~kgsearch.errors.IndexBusy`); a read-only index is checked
    as it is (no lock file can be made where no indexer can write either; the FTS5 check,
    which writes, runs on the copy)."""
    t0 = time.perf_counter()
    rep = DoctorReport(db=str(db))
    if foreign_kind(db) is not None:             # not an index: said before a .lock is made beside it
        Index.open(db, readonly=True).close()
    with IndexLock(db, required=False):
        ix = Index.open(db, readonly=True)
        try:
            _emit(progress, "file")
            rep.checks.append(_file_check(ix, thorough))
            if rep.checks[-1].ok:
                fts = _fts_check(ix)
                if fts is not None:
                    rep.checks.append(fts)
            if derived and not rep.damaged:
                try:
                    _derived_checks(ix, rep, progress)
                except sqlite3.DatabaseError as exc:
                    if not is_corruption(exc):
                        raise
                    rep.checks.append(Check("file", False, f"reading the data failed: {exc}", REBUILD))
        finally:
            ix.close()
    rep.seconds = round(time.perf_counter() - t0, 2)
    return rep


def _emit(progress, what: str) -> None:
    if progress is not None:
        progress({"phase": "doctor", "step": what})


def _file_check(ix: Index, thorough: bool) -> Check:
    pragma = "integrity_check" if thorough else "quick_check"
    try:
        rows = [r[0] for r in ix.conn.execute(f"PRAGMA {pragma}(20)")]
    except sqlite3.DatabaseError as exc:
        rows = [str(exc)]
    if rows == ["ok"]:
        try:
            check_blobs(ix.conn)                 # a stored array whose length fits no array
        except sqlite3.DatabaseError as exc:
            return Check("file", False, f"PRAGMA {pragma}: ok, but {exc}", REBUILD)
        return Check("file", True, f"PRAGMA {pragma}: ok")
    more = f" (+{len(rows) - 3} more)" if len(rows) > 3 else ""
    return Check("file", False, f"PRAGMA {pragma}: " + "; ".join(rows[:3]) + more, REBUILD)


def _fts_check(ix: Index) -> Check | None:
    from ..text.fts import TABLE

    if ix.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is None:
        return None
    sql = f"INSERT INTO {TABLE}({TABLE}, rank) VALUES('integrity-check', 1)"
    try:
        if _writable(ix):
            with ix.transaction():
                ix.conn.execute(sql)
        else:                                   # FTS5's check is an INSERT: run it on a copy
            path = _copy(ix)
            try:
                with Index.open(path) as copy:
                    with copy.transaction():
                        copy.conn.execute(sql)
            finally:
                _remove(path)
    except sqlite3.DatabaseError as exc:
        return Check("fts5", False, f"integrity-check: {exc}", REBUILD if is_corruption(exc) else FULL)
    except BadIndex as exc:
        return Check("fts5", False, f"integrity-check: {exc}", FULL)
    return Check("fts5", True, "integrity-check against its content: ok")


def _writable(ix: Index) -> bool:
    """Can this process write the index (file and folder), so a check may open a transaction?"""
    return os.access(ix.path, os.W_OK) and os.access(ix.path.parent, os.W_OK)


# ---------------------------------------------------------------------------- derived data
def _copy(ix: Index) -> Path:
    """The index copied (a consistent snapshot) into a temporary file next to it (else in the
    temp folder)."""
    for folder in (ix.path.parent, Path(tempfile.gettempdir())):
        try:
            fd, name = tempfile.mkstemp(prefix=".kgsearch-doctor-", suffix=".db", dir=folder)
        except OSError:                         # a read-only folder: the temp folder
            if folder != ix.path.parent:
                raise
            continue
        os.close(fd)
        try:
            dst = sqlite3.connect(name)
            try:
                ix.conn.backup(dst)
            finally:
                dst.close()
            return Path(name)
        except sqlite3.Error:
            _remove(Path(name))
            if folder != ix.path.parent:
                raise
    raise AssertionError("unreachable")


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def _derived_checks(ix: Index, rep: DoctorReport, progress) -> None:
    from ..graph import graph_step
    from ..settings import IndexSettings
    from ..text import neighbors, text_step

    if not ix.conn.execute("SELECT 1 FROM nodes LIMIT 1").fetchone():
        rep.notes.append("the index holds no nodes: no derived data to compare")
        return
    settings = dict(ix.meta_json("settings") or {})
    typed = IndexSettings.from_dict(settings)
    # the copy rebuilds the graph without community detection (not compared, see the docstring)
    typed = replace(typed, graph=replace(typed.graph, graph_communities_max_pairs=0))
    _emit(progress, "copy")
    path = _copy(ix)
    # the index as it is, attached to the rebuild: itself, or in a read-only folder (where a WAL
    # reader cannot attach it) a second copy
    current = None if os.access(ix.path.parent, os.W_OK) else _copy(ix)
    try:
        fresh = Index.open(path)
        try:
            gen = fresh.generation
            with fresh.transaction():
                for step in (text_step, neighbors, graph_step):
                    _emit(progress, step.NAME)
                    step.update(fresh, ChangeSet(generation=gen, full=True), typed)
            fresh.conn.execute("ATTACH DATABASE ? AS cur", (str(current or ix.path),))
            _emit(progress, "compare")
            rep.checks.append(_compare_text(fresh))
            rep.checks.append(_compare_neighbors(fresh))
            rep.checks.append(_compare_graph(ix, fresh))
        finally:
            fresh.close()
    finally:
        _remove(path)
        if current is not None:
            _remove(current)
    vec = _check_vectors(ix, settings)
    if vec is not None:
        rep.checks.append(vec)
    rep.notes.append("community labels are not compared: between full runs they are kept and extended "
                     "(an approximation `kgsearch index --full` recomputes)")


def _differ(conn, table: str) -> tuple[int, int]:
    """(rows in the rebuild, rows that differ either way) of ``table`` in main (the rebuild) vs cur."""
    n = conn.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0]
    d = conn.execute(f"SELECT (SELECT count(*) FROM (SELECT * FROM main.{table} EXCEPT SELECT * FROM cur.{table})) "
                     f"+ (SELECT count(*) FROM (SELECT * FROM cur.{table} EXCEPT SELECT * FROM main.{table}))"
                     ).fetchone()[0]
    return n, d


def _compare_text(fresh: Index) -> Check:
    from ..text.postings import STATE_KEY

    conn = fresh.conn
    parts, bad = [], []
    for table in DERIVED_TABLES["text"]:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is None:
            continue
        n, d = _differ(conn, table)
        parts.append(f"{n:,} {WORDS.get(table, table)}")
        if d:
            bad.append(f"{table}: {d:,} rows differ")
    cur = conn.execute("SELECT value FROM cur.meta WHERE key = ?", (STATE_KEY,)).fetchone()
    new = fresh.meta_json(STATE_KEY) or {}
    if cur is not None:
        import json

        cur = json.loads(cur[0])
        for k in ("avgdl", "n", "total"):
            a, b = cur.get(k), new.get(k)
            if a != b and not (isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-9 * max(1, abs(b))):
                bad.append(f"BM25 {k} {a} (a rebuild: {b})")
    if bad:
        return Check("text", False, "; ".join(bad), FULL)
    return Check("text", True, ", ".join(parts) + ": equal to a rebuild")


def _compare_neighbors(fresh: Index) -> Check:
    conn = fresh.conn
    q = "SELECT src, dst, weight FROM {}.edges WHERE file_id IS NULL AND type = 'similar_text'"
    n = conn.execute(f"SELECT count(*) FROM ({q.format('main')})").fetchone()[0]
    d = conn.execute(f"SELECT (SELECT count(*) FROM ({q.format('main')} EXCEPT {q.format('cur')})) + "
                     f"(SELECT count(*) FROM ({q.format('cur')} EXCEPT {q.format('main')}))").fetchone()[0]
    if d:
        return Check("neighbors", False, f"{d:,} similar_text edges differ from a rebuild's {n:,}", FULL)
    return Check("neighbors", True, f"{n:,} similar_text edges: equal to a rebuild")


def _graph_edges(ix: Index):
    """(node ids by position, sorted edge list (src id, dst id, type, weight)) of the stored graph."""
    import numpy as np

    from ..graph import GraphError
    from ..graph.stored.lag import load_graph

    ids = ix.get_array("graph.node_ids")
    if ids is None:
        return None, None
    try:
        g = load_graph(ix, ix.get_array)
    except GraphError:
        return ids, None
    names = np.array(ix.meta_json("graph.etypes", []) or [""], dtype=object)
    src = np.repeat(np.arange(g.n), np.diff(g.indptr))
    rows = list(zip(ids[src].tolist(), ids[g.indices].tolist(), names[g.etype].tolist() if len(g.etype) else [],
                    np.round(g.weights.astype(np.float64), 6).tolist()))
    rows.sort()
    return ids, rows


def _compare_graph(ix: Index, fresh: Index) -> Check:
    import numpy as np

    ids_cur, edges_cur = _graph_edges(ix)
    ids_new, edges_new = _graph_edges(fresh)
    if ids_new is None:
        return Check("graph", ids_cur is None, "no graph" if ids_cur is None else "a graph a rebuild would not make",
                     FULL)
    if ids_cur is None or edges_cur is None:
        return Check("graph", False, "the graph arrays are missing", FULL)
    bad = []
    if not np.array_equal(ids_cur, ids_new):
        bad.append(f"node positions differ ({len(ids_cur):,} stored, {len(ids_new):,} in a rebuild)")
    elif edges_cur != edges_new:
        diff = len(set(edges_cur) ^ set(edges_new))
        bad.append(f"{diff:,} graph edges differ from a rebuild's {len(edges_new):,}")
    else:
        a, b = ix.get_array("graph.pagerank"), fresh.get_array("graph.pagerank")
        if (a is None) != (b is None) or (a is not None and float(np.abs(a.astype(np.float64) - b).sum())
                                          > PAGERANK_L1_TOL):
            bad.append("PageRank differs from a rebuild's")
    rows = _compare_rows(ix, fresh) if not bad else ""
    if rows.startswith("!"):
        bad.append(rows[1:])
    if bad:
        return Check("graph", False, "; ".join(bad), FULL)
    return Check("graph", True, f"{len(ids_new):,} nodes, {len(edges_new):,} edges, PageRank{rows}: equal to a rebuild")


def _compare_rows(ix: Index, fresh: Index) -> str:
    """The per-node adjacency rows (kgsearch/graph/stored/rows.py) against the rebuild's: ``""``
    when neither has them, ``", adjacency rows"`` when equal, ``"!why"`` when not. Type numbers
    are compared by name (an incremental run numbers a new edge type after the old ones)."""
    import numpy as np

    from ..graph.stored import rows as adjacency

    a, b = adjacency.stored_meta(ix), adjacency.stored_meta(fresh)
    if a is None and b is None:
        return ""
    if (a is None) != (b is None) or a["id_dtype"] != b["id_dtype"]:
        return "!adjacency rows " + ("missing" if a is None else "stored where a rebuild has none" if b is None
                                     else "of another id type")
    et_cur, et_new = ix.meta_json("graph.etypes", []), fresh.meta_json("graph.etypes", [])
    if et_cur == et_new:
        n, d = _differ(fresh.conn, adjacency.TABLE)
    else:
        entry = adjacency.entry_dtype(a["id_dtype"])
        to_new = np.array([et_new.index(t) if t in et_new else -1 for t in et_cur] or [0], dtype=np.int64)
        cur = {r[0]: r[1:] for r in fresh.conn.execute(f"SELECT node, nout, data FROM cur.{adjacency.TABLE}")}
        n, d = 0, 0
        for node, k, data in fresh.conn.execute(f"SELECT node, nout, data FROM main.{adjacency.TABLE}"):
            n += 1
            got = cur.pop(node, None)
            if got is None or got[0] != k:
                d += 1
                continue
            rec = np.frombuffer(got[1], dtype=entry).copy()
            rec["t"] = to_new[rec["t"]]
            d += rec.tobytes() != bytes(data)
        d += len(cur)
    return f"!{d:,} adjacency rows differ from a rebuild's {n:,}" if d else ", adjacency rows"


def _check_vectors(ix: Index, settings: dict) -> Check | None:
    import numpy as np

    from ..embed import store as vectors
    from ..embed.embed_step import node_text, text_hash
    from ..settings import IndexSettings
    from ..store.rows import iter_node_texts

    es = IndexSettings.from_dict(settings).embed
    if ix.meta("model_id") is None and not vectors.vector_count(ix):
        return None
    sid, sh = vectors.stored_hashes(ix)
    if not es.embed:
        return Check("vectors", not len(sid), f"{len(sid):,} vectors kept with embed=false", FULL) if len(sid) else None
    want_ids, want_h = [], []
    for nid, name, text in iter_node_texts(ix.conn, None, batch=4096):
        s = node_text(name, text, es.embed_max_chars)
        if s.strip():
            want_ids.append(nid)
            want_h.append(text_hash(s))
    wid = np.asarray(want_ids, dtype=np.int64)
    wh = np.asarray(want_h, dtype=np.int64)
    order = np.argsort(wid)
    wid, wh = wid[order], wh[order]
    missing = int((~np.isin(wid, sid)).sum())
    extra = int((~np.isin(sid, wid)).sum())
    common, i_w, i_s = np.intersect1d(wid, sid, return_indices=True)
    stale = int((wh[i_w] != sh[i_s]).sum())
    if missing or extra or stale:
        return Check("vectors", False, f"{missing:,} nodes without a vector, {stale:,} vectors of old text, "
                                       f"{extra:,} vectors of nodes that are gone", FULL)
    return Check("vectors", True, f"{len(common):,} vectors, each of its node's current text")
