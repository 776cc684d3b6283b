"""Opening the SQLite connection of an index: its pragmas (WAL, busy timeout, page cache) and
the ``kgtext()`` function; a read-only index in a read-only folder opened ``immutable``."""
from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

from ..cjk import spaced as cjk_spaced
from . import textcodec

__all__ = ["connect", "BUSY_TIMEOUT_MS"]

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10000


def connect(p: Path, readonly: bool) -> sqlite3.Connection:
    """A configured connection. A read-only index in a read-only folder (an SD card, another
    user's index) cannot get the ``-shm`` file WAL readers need: then, when no ``-wal`` holds
    data the main file lacks, it is opened ``immutable`` (no locking, no journal)."""
    try:
        return _configure(sqlite3.connect(str(p), isolation_level=None, check_same_thread=False, timeout=10.0),
                          readonly)
    except sqlite3.OperationalError as exc:
        wal = Path(f"{p}-wal")
        if not readonly or os.access(p.parent, os.W_OK) or (wal.exists() and wal.stat().st_size > 0):
            raise
        log.debug("%s: %s; opening it immutable (read-only folder)", p, exc)
    uri = p.absolute().as_uri() + "?mode=ro&immutable=1"
    return _configure(sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False), readonly)


def _configure(conn: sqlite3.Connection, readonly: bool) -> sqlite3.Connection:
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal" and not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA cache_size=-16000")
        textcodec.register(conn)        # kgtext(): long node texts are stored compressed
        conn.create_function("kgcjk", 1, cjk_spaced, deterministic=True)   # FTS5 content, see schema 0016
    except BaseException:
        conn.close()
        raise
    return conn
