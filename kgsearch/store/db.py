"""``Index``: one SQLite file in WAL mode, with migrations, meta, numpy array blobs and generations."""
from __future__ import annotations

import json
import logging
import os
import shlex
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..version import __version__
from ..errors import BadIndex
from ..lines import quoted
from .connect import BUSY_TIMEOUT_MS, connect
from .damage import CORRUPTION, DamagedData, blob_layout, check_blobs, ensure_error, is_corruption  # noqa: F401
from .schema import COMPACT_PENDING, MIGRATIONS, clear_stale, mark_stale, schema_version, stale_steps

SCHEMA_VERSION = schema_version()

log = logging.getLogger(__name__)

PLANNER_TABLES = ("nodes", "files", "edges")     # Index.refresh_planner_stats
ANALYSIS_ROWS = 2000                             # rows read per index by it (PRAGMA analysis_limit)
# An index run ends with a VACUUM when free pages are at least this share of the file and size.
COMPACT_FRACTION = 0.10
COMPACT_BYTES = 4 << 20
QUICK_CHECK_EVERY = 86400.0      # seconds between two PRAGMA quick_check of an index run
PUT_STREAM_BYTES = 1 << 20       # put_array writes bigger arrays in pieces of this size

def foreign_kind(path: str | os.PathLike) -> str | None:
    """What the file at ``path`` is when it may not be a kgsearch index: ``"sqlite"`` (a SQLite
    file of other tables), ``"unknown"`` (not SQLite, or unreadable as such: another file, or a
    damaged header), or None (ours, empty, or no file). Read-only; no lock, no journal."""
    p = Path(path)
    try:
        if not p.is_file():
            return None
        wal = Path(f"{p}-wal")
        wal_size = wal.stat().st_size if wal.is_file() else 0
        if p.stat().st_size == 0 and not wal_size:
            return None
        tables = _tables(f"{p.resolve().as_uri()}?mode=ro&immutable=1") if p.stat().st_size else set()
        if not tables and wal_size:
            tables = _tables_with_wal(p, wal)     # (a WAL-mode file's tables may all be in its -wal yet)
    except (OSError, sqlite3.Error):
        return "unknown"
    return "sqlite" if tables and "migrations" not in tables else None


def _tables(uri: str) -> set[str]:
    conn = sqlite3.connect(uri, uri=True)           # (immutable: no -shm made, nothing written)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def _tables_with_wal(db: Path, wal: Path) -> set[str]:
    """The tables of ``db`` with its ``-wal`` applied, read from copies of the two (reading the
    WAL in place would make a ``-shm`` beside a file that may not be ours)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kgsearch-peek-") as tmp:
        copy = Path(tmp) / "db"
        shutil.copyfile(db, copy)
        shutil.copyfile(wal, f"{copy}-wal")
        return _tables(f"{copy.as_uri()}?mode=ro")


class Index:
    """An open index. Use :meth:`open`; close with :meth:`close` or as a context manager."""

    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path = path
        self.conn = conn
        self._cache: dict[str, Any] = {}   # per-process cache of derived arrays, keyed by name
        self._pins: dict[int, list] = {}    # thread id -> [generation] read once for a block (:meth:`pinned`)

    # ------------------------------------------------------------------ open/close
    @classmethod
    def open(cls, path: str | os.PathLike | None = None, readonly: bool = False,
             create: bool | None = None) -> "Index":
        """Open the index at ``path`` (default: ``config.default_db_path()``).

        ``readonly=True`` never creates or migrates and fails with :class:`BadIndex` when the
        file is missing. Otherwise the file is created (``create`` defaults to ``not readonly``)
        and pending migrations are applied.
        """
        if path is None:
            from ..config import default_db_path
            path = default_db_path()
        p = Path(path).expanduser()
        if create is None:
            create = not readonly
        try:
            exists = p.exists()
        except OSError as exc:            # a name too long, a path through a file: no index can be there
            raise BadIndex(f"no index can be at {quoted(str(p)[:200])} ({exc.strerror}); pass --db with another "
                           f"path") from None
        if not exists:
            if not create:
                raise BadIndex(f"no index at {p}; build one with `kgsearch index PATH --db {shlex.quote(str(p))}` "
                               f"(or pass another --db / set KGSEARCH_DB)")
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BadIndex(f"cannot create the index folder {p.parent} ({exc.strerror}); "
                               f"pass --db with a writable path") from None
        elif p.is_dir():
            raise BadIndex(f"{p} is a folder, not an index file; pass --db PATH/index.db")
        elif readonly and p.stat().st_size == 0 and not os.path.exists(f"{p}-wal"):
            raise BadIndex(_not_built(p, "is an empty file (0 bytes)"))
        elif os.path.exists(f"{p}-wal") and foreign_kind(p) == "sqlite":
            # said before a connection: closing one would checkpoint the other program's -wal into
            # its file (without a -wal, the migrations check below says it and changes nothing)
            raise BadIndex(f"{p} is a SQLite file but not a kgsearch index; pass another --db")
        try:
            conn = connect(p, readonly)
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc) and "read-only" not in str(exc):
                raise BadIndex(f"{p} is not a kgsearch index ({exc}); pass another --db or move the file away (if "
                               f"it was your index, `kgsearch doctor --rebuild PATH...` rebuilds it from its "
                               f"folders)") from None
            # a read-only index opened to write (feedback, index): read-only, not "not an index"
            raise ensure_error(exc, p) from None
        except sqlite3.DatabaseError as exc:
            raise BadIndex(f"{p} is not a kgsearch index ({exc}); pass another --db or move the file away (if it "
                           f"was your index, `kgsearch doctor --rebuild PATH...` rebuilds it from its folders)") from None
        ix = cls(p, conn)
        try:
            ix._check_and_migrate(readonly)
            if readonly and ix._never_built():
                raise BadIndex(_not_built(p, "holds no index: no index run into it finished (`kgsearch "
                                             "index` was interrupted or failed)"))
        except BaseException:
            conn.close()
            raise
        return ix

    def _never_built(self) -> bool:
        """A schema and nothing else: no index run ever committed (a first run killed with -9)."""
        c = self.conn
        return (self.meta("last_run_time") is None and self.meta("last_index_time") is None
                and c.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None
                and c.execute("SELECT 1 FROM nodes LIMIT 1").fetchone() is None)

    def close(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ migrations
    def _applied(self) -> list[str]:
        try:
            rows = self.conn.execute("SELECT name FROM migrations ORDER BY name").fetchall()
        except sqlite3.OperationalError:
            return []
        except sqlite3.DatabaseError as exc:
            raise BadIndex(f"{self.path} is not a kgsearch index ({exc}); pass another --db (if it was your index, "
                           f"`kgsearch doctor --rebuild PATH...` rebuilds it from its folders)") from None
        return [r[0] for r in rows]

    def _check_and_migrate(self, readonly: bool) -> None:
        applied = self._applied()
        known = [name for name, _ in MIGRATIONS]
        unknown = [a for a in applied if a not in known]
        if unknown or len(applied) > len(known):
            made = self.meta("tool_version", "?") if applied else "?"
            raise BadIndex(
                f"{self.path} was made by a newer kgsearch ({made}, schema {len(applied)}); "
                f"this is kgsearch {__version__} (schema {len(known)}): upgrade kgsearch or rebuild the index")
        if len(applied) == len(known):
            return
        if not applied:
            # a brand new file, or a SQLite file that is not ours
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if tables - {"migrations"}:
                raise BadIndex(f"{self.path} is a SQLite file but not a kgsearch index; pass another --db")
        if readonly:
            if not applied:
                raise BadIndex(_not_built(self.path, "holds no index (an empty SQLite file)"))
            raise BadIndex(f"{self.path} needs an upgrade (schema {len(applied)} -> {len(known)}); "
                           f"run `kgsearch index --db {shlex.quote(str(self.path))}` once to apply it")
        with self.transaction():
            self.conn.execute("CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at REAL)")
            done = set(self._applied())
            for name, fn in MIGRATIONS:
                if name in done:
                    continue
                fn(self.conn)
                self.conn.execute("INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (name, time.time()))
            if self.meta("created_with") is None:
                self.set_meta("created_with", __version__)
                self.set_meta("created_at", str(time.time()))
                self.set_meta("generation", "0")
            self.set_meta("schema_version", str(len(MIGRATIONS)))
            self.set_meta("tool_version", __version__)

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; any exception (Ctrl-C included) rolls back."""
        if self.conn.in_transaction:
            yield self.conn   # nested: the outer transaction decides
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise (ensure_error(exc, self.path)
                   or BadIndex(f"cannot write {self.path} ({exc}); is it on a read-only or full disk?")) from None
        try:
            yield self.conn
        except BaseException:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            self._cache.clear()
            raise
        else:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                self._cache.clear()
                raise (ensure_error(exc, self.path)
                       or BadIndex(f"could not commit to {self.path} ({exc}); the previous index is intact")) from None

    def checkpoint(self) -> None:
        """Fold the WAL back into the main file, best effort and without waiting: while a
        reader holds a snapshot the WAL cannot be reset, and waiting for it (the busy timeout)
        would stall the writer for nothing; what is left is folded in by a later run (or by
        SQLite's automatic checkpoints)."""
        try:
            self.conn.execute("PRAGMA busy_timeout=0")
            try:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        except sqlite3.Error:
            pass

    def health_probe(self) -> None:
        """A cheap look for a damaged file, at the start of every index run: the first and
        last row of every table (their b-tree roots and edges), and ``PRAGMA quick_check``
        when the last one is older than :data:`QUICK_CHECK_EVERY` seconds (cron runs an
        index every hour; this pays the full page scan about once a day), and every stored
        array's length against its dtype and shape (:func:`check_blobs`: no content read). Raises
        ``sqlite3.DatabaseError`` ("database disk image is malformed"), which callers turn
        into :class:`BadIndex` naming ``kgsearch doctor --rebuild``."""
        c = self.conn
        tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                          "AND sql NOT LIKE 'CREATE VIRTUAL%' AND name NOT LIKE 'sqlite_%'")]
        for t in tables:
            c.execute(f'SELECT * FROM "{t}" LIMIT 1').fetchall()
            try:
                c.execute(f'SELECT * FROM "{t}" ORDER BY rowid DESC LIMIT 1').fetchall()
            except sqlite3.OperationalError:        # WITHOUT ROWID: its primary key order
                pass
        check_blobs(c)
        last = float(self.meta("last_quick_check", "0") or 0)
        if time.time() - last >= QUICK_CHECK_EVERY:
            problems = [r[0] for r in c.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError(f"database disk image is malformed (quick_check: {problems[0]})")
            if not c.in_transaction:
                try:
                    self.set_meta("last_quick_check", time.time())
                except sqlite3.Error:
                    pass

    def free_bytes(self) -> tuple[int, int]:
        """(bytes in free pages, bytes in all pages) of the main file."""
        c = self.conn
        size = c.execute("PRAGMA page_size").fetchone()[0]
        return (c.execute("PRAGMA freelist_count").fetchone()[0] * size,
                c.execute("PRAGMA page_count").fetchone()[0] * size)

    def compact_if_sparse(self, min_fraction: float | None = None, min_bytes: int | None = None) -> int:
        """``VACUUM`` when free pages are at least ``min_fraction`` of the file and ``min_bytes``
        (after big deletions, an upgrade that rewrote tables, ``--no-embed`` dropping vectors).

        A migration that rewrote rows in place (half-empty pages, which the free list does not
        show) asks for one with :meth:`request_compaction`; the next call then runs it anyway.

        Returns how many bytes smaller the database is (0 when it was not worth it or could not
        run). Readers are not blocked (WAL: they keep their snapshot; the file itself shrinks at
        the checkpoint after the last of them). It needs free disk space about the size of the
        index for a moment; without it the index stays as it was, only larger.
        """
        min_fraction = COMPACT_FRACTION if min_fraction is None else min_fraction
        min_bytes = COMPACT_BYTES if min_bytes is None else min_bytes
        if self.conn.in_transaction:
            return 0
        free, total = self.free_bytes()
        pending = self.meta(COMPACT_PENDING) is not None
        if not pending and (free < min_bytes or free < min_fraction * total):
            return 0
        try:
            self.conn.execute("VACUUM")
        except sqlite3.Error as exc:
            log.warning("could not compact %s (%s); the index is intact, only larger than it needs to be",
                        self.path, exc)
            return 0
        if pending:
            self.conn.execute("DELETE FROM meta WHERE key=?", (COMPACT_PENDING,))
        self.checkpoint()
        return max(0, total - self.free_bytes()[1])

    def refresh_planner_stats(self) -> None:
        """``ANALYZE`` the tables whose indexes SQLite's query planner chooses between
        (:data:`PLANNER_TABLES`), from at most :data:`ANALYSIS_ROWS` rows of each index.

        Without statistics the planner takes every index as equally selective: ``kind IN (...)``
        (a dozen kinds over all the nodes) looked as good as ``name IN (...)`` or ``file_id IN
        (...)``, and for a traceback's dozen function names or a module's files it scanned
        every code node (stdlib index, 40 frames: 158 ms of anchor look-ups, 48 with
        statistics; tests/test_store.py). Run by every index run that changed the index, so
        they follow its growth; a bounded scan (SQLite 3.32+; older versions read every row)."""
        self.conn.execute(f"PRAGMA analysis_limit={ANALYSIS_ROWS}")
        for table in PLANNER_TABLES:
            self.conn.execute(f"ANALYZE {table}")

    def request_compaction(self) -> None:
        """Have the next :meth:`compact_if_sparse` run ``VACUUM`` whatever the free list says."""
        self.set_meta(COMPACT_PENDING, "1")

    def stale_steps(self) -> list[str]:
        """Derived steps a migration marked stale (rebuilt in full by the next index run)."""
        return stale_steps(self.conn)

    def mark_stale(self, *steps: str) -> None:
        mark_stale(self.conn, *steps)

    def clear_stale(self, steps) -> None:
        clear_stale(self.conn, steps)

    # ------------------------------------------------------------------ meta
    def meta(self, key: str, default: str | None = None) -> str | None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        except sqlite3.OperationalError:
            return default
        return default if row is None else row[0]

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                          "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, str(value)))

    def meta_json(self, key: str, default: Any = None) -> Any:
        raw = self.meta(key)
        if raw is None:
            return default
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return default

    def set_meta_json(self, key: str, value: Any) -> None:
        self.set_meta(key, json.dumps(value, sort_keys=True))

    @property
    def generation(self) -> int:
        pin = self._pins.get(threading.get_ident())
        if pin is not None:
            return pin[0]
        return int(self.meta("generation", "0") or 0)

    @property
    def _pinned(self) -> int | None:
        """The generation pinned for this thread's block (None: none; :meth:`pinned`)."""
        pin = self._pins.get(threading.get_ident())
        return None if pin is None else pin[0]

    @contextmanager
    def pinned(self, generation: int | None = None):
        """Read the generation once for the block (one search over several indexes checks each
        index's caches a dozen times, a read of the meta table each): a reindex committed
        meanwhile is seen after the block, as it is by a search that has already begun its
        reads. ``generation``: pin that one instead of reading it (a search resumed, or run in
        a worker thread for a caller that pinned it). Nested blocks keep the outer one's.

        A pin belongs to the thread and the block that set it: another thread reads the
        generation for itself (each request thread of ``serve`` pins its own search), and the
        end of a block takes away only its own pin. A generator must not hold a pin while it is
        suspended: abandoned there, it would pin the index for whatever its thread runs next
        (a long-running ``serve`` or ``mcp`` would not see a reindex); :meth:`Engine.steps
        <kgsearch.query.engine.Engine.steps>` pins only while it runs."""
        tid = threading.get_ident()
        if tid in self._pins:
            yield self
            return
        pin = [int(self.meta("generation", "0") or 0) if generation is None else generation]
        self._pins[tid] = pin
        try:
            yield self
        finally:
            if self._pins.get(tid) is pin:
                del self._pins[tid]

    # ------------------------------------------------------------------ arrays
    def put_array(self, name: str, arr, generation: int | None = None, capacity: int | None = None) -> None:
        """Store a numpy array as a blob (C order, native dtype string recorded). ``capacity``
        (1-d arrays): stored that many items long, zeros after the array (see
        :func:`kgsearch.store.blobio.put_stored`); its recorded shape is then ``[capacity]``."""
        import numpy as np

        a = np.ascontiguousarray(arr)
        shape, size = list(a.shape), a.nbytes
        if capacity is not None and a.ndim == 1:
            if capacity < len(a):
                raise ValueError(f"capacity {capacity} < {len(a)} items of {name!r}")
            shape, size = [int(capacity)], int(capacity) * a.dtype.itemsize
        gen = self.generation if generation is None else generation
        stream = size > PUT_STREAM_BYTES and hasattr(self.conn, "blobopen")
        self.conn.execute(
            "INSERT INTO blobs(name, generation, dtype, shape, data) VALUES (?,?,?,?,"
            + ("zeroblob(?))" if stream else "?)") +
            " ON CONFLICT(name) DO UPDATE SET generation=excluded.generation, dtype=excluded.dtype, "
            "shape=excluded.shape, data=excluded.data",
            (name, gen, a.dtype.str, json.dumps(shape),
             size if stream else a.tobytes() + bytes(size - a.nbytes)))
        if stream:
            # written 1 MiB at a time into the zero blob (incremental blob I/O, Python >= 3.11):
            # a whole-blob bind held Python's bytes, SQLite's copy and its record at once
            # (+190 MiB for the 66 MB graph arrays at 1M nodes)
            rowid = self.conn.execute("SELECT rowid FROM blobs WHERE name=?", (name,)).fetchone()[0]
            raw = a.reshape(-1).view(np.uint8)
            with self.conn.blobopen("blobs", "data", rowid) as blob:
                for c in range(0, len(raw), PUT_STREAM_BYTES):
                    blob.write(raw[c:c + PUT_STREAM_BYTES])
        self._cache.pop(name, None)

    def get_array(self, name: str, with_generation: bool = False):
        """Read a blob back as a read-only array (``None`` when absent)."""
        import numpy as np

        row = self.conn.execute("SELECT generation, dtype, shape, data FROM blobs WHERE name=?", (name,)).fetchone()
        if row is None:
            return (None, None) if with_generation else None
        gen, dtype, shape, data = row
        dt, dims = blob_layout(name, dtype, shape, len(data))
        arr = np.frombuffer(data, dtype=dt).reshape(dims)
        return (arr, gen) if with_generation else arr

    def drop_arrays(self, prefix: str) -> None:
        self.conn.execute("DELETE FROM blobs WHERE name >= ? AND name < ?", (prefix, prefix + "\uffff"))
        for k in [k for k in self._cache if k.startswith(prefix)]:
            del self._cache[k]

    def cached(self, name: str, build):
        """Per-process memo of derived data, keyed by name and index generation."""
        gen = self.generation
        hit = self._cache.get(name)
        if hit is not None and hit[0] == gen:
            return hit[1]
        value = build()
        self._cache[name] = (gen, value)
        return value

    # ------------------------------------------------------------------ derived bookkeeping
    def mark_derived(self, name: str, seconds: float, info: dict | None = None, generation: int | None = None) -> None:
        gen = self.generation if generation is None else generation
        self.conn.execute(
            "INSERT INTO derived(name, generation, seconds, info) VALUES (?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET generation=excluded.generation, seconds=excluded.seconds, info=excluded.info",
            (name, gen, float(seconds), json.dumps(info or {}, sort_keys=True)))

    def derived(self, name: str) -> dict | None:
        row = self.conn.execute("SELECT generation, seconds, info FROM derived WHERE name=?", (name,)).fetchone()
        if row is None:
            return None
        return {"generation": row[0], "seconds": row[1], "info": json.loads(row[2] or "{}")}

    # ------------------------------------------------------------------ convenience
    def node_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]

    def max_node_id(self) -> int:
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM nodes").fetchone()[0]

    def node_by_key(self, key: str) -> int | None:
        row = self.conn.execute("SELECT id FROM nodes WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                total += os.path.getsize(str(self.path) + suffix)
            except OSError:
                pass
        return total


def _not_built(p: Path, what: str) -> str:
    return (f"{p} {what}; build it with `kgsearch index PATH...` (or `kgsearch doctor --rebuild PATH...`), "
            f"or pass the --db of an index that was built")


