"""The index a server answers from: opened read-only, reopened when the file is replaced, used
by one request at a time, each within a time limit.

A reindex that commits while the server runs is seen by the next request (a WAL reader sees each
new commit; the engine's caches follow the index generation). ``doctor --rebuild`` (or a copy)
swaps another file in under the same name: its (device, inode) changes and the next request opens
it. The engine and its connection are shared by the request threads, so a lock lets one request
use them at a time (searches take milliseconds; the memory of one engine is what a phone can
give); a request that waits longer than ``wait`` seconds for it gets :class:`Busy`. While a request
holds the engine, SQLite calls check a deadline (a progress handler) and stop with
:class:`Busy` past ``limit`` seconds.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager

from ..errors import KgsearchError

__all__ = ["Holder", "Busy"]

PROGRESS_STEPS = 20_000          # SQLite virtual-machine steps between deadline checks


class Busy(KgsearchError):
    """The server could not answer in time (HTTP 503)."""

    code = 75


def _identity(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Holder:
    def __init__(self, db: str, limit: float = 30.0, wait: float = 60.0):
        self.db = os.path.abspath(os.path.expanduser(str(db)))
        self.limit, self.wait = limit, wait
        self.lock = threading.Lock()
        self.engine = None
        self._ident = None
        self._deadline = float("inf")

    def _current(self):
        from ..query import Engine
        from ..store.db import Index

        ident = _identity(self.db)
        if self.engine is None or ident != self._ident:
            if self.engine is not None:
                self.engine.ix.close()
                self.engine = None
            ix = Index.open(self.db, readonly=True)
            ix.conn.execute("PRAGMA query_only=1")
            ix.conn.set_progress_handler(self._past_deadline, PROGRESS_STEPS)
            self.engine, self._ident = Engine(ix), ident
        return self.engine

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    @contextmanager
    def use(self):
        """The engine on the index as it is now, for this request alone, within the time limit."""
        if not self.lock.acquire(timeout=self.wait):
            raise Busy(f"the server is busy (no answer within {self.wait:g}s); try again")
        try:
            self._deadline = time.monotonic() + self.limit
            try:
                yield self._current()
            except sqlite3.OperationalError as exc:
                if "interrupted" in str(exc) and time.monotonic() > self._deadline:
                    raise Busy(f"the request took longer than {self.limit:g}s and was stopped") from None
                raise
        finally:
            self._deadline = float("inf")
            self.lock.release()

    def close(self) -> None:
        with self.lock:
            if self.engine is not None:
                self.engine.ix.close()
                self.engine = None
