"""The query result cache (table ``qcache``, migration 0003): answers keyed by query + options,
valid for one index generation and :data:`TTL` seconds, so a repeated search from a fresh
process (the CLI) costs one row read. Best effort both ways: a busy or read-only index just
skips it."""
from __future__ import annotations

import json
import logging
import time

__all__ = ["TTL", "get", "put"]

log = logging.getLogger(__name__)

TTL = 300.0


def get(ix, key: str) -> dict | None:
    """The cached answer (a JSON object) for ``key`` at the current generation, or ``None``."""
    try:
        row = ix.conn.execute("SELECT generation, created, response FROM qcache WHERE key=?", (key,)).fetchone()
    except Exception:
        return None
    if row is None or row[0] != ix.generation or time.time() - row[1] > TTL:
        return None
    try:
        value = json.loads(row[2])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def put(ix, key: str, value: dict) -> None:
    """Store an answer; never waits for a lock (``busy_timeout`` 0 for the write)."""
    try:
        conn = ix.conn
        old = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("DELETE FROM qcache WHERE created < ? OR generation != ?",
                         (time.time() - TTL, ix.generation))
            conn.execute("INSERT OR REPLACE INTO qcache(key, generation, created, response) VALUES (?,?,?,?)",
                         (key, ix.generation, time.time(), json.dumps(value, default=str)))
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(old)}")
    except Exception:
        log.debug("result cache not written", exc_info=True)
