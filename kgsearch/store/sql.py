"""Small SQL helpers shared by every module that talks to the index.

SQLite limits the number of ``?`` parameters of one statement (999 in older builds), so a
query over many ids runs in chunks. :func:`in_chunks` is the one place that does it:

>>> import sqlite3
>>> c = sqlite3.connect(":memory:")
>>> _ = c.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
>>> _ = c.executemany("INSERT INTO t VALUES (?, ?)", [(i, str(i)) for i in range(1200)])
>>> len(in_chunks(c, "SELECT id FROM t WHERE id IN ({})", list(range(0, 1200, 2))))
600
>>> in_chunks(c, "SELECT v FROM t WHERE v != ? AND id IN ({})", [1, 2, 3], before=("2",))
[('1',), ('3',)]
"""
from __future__ import annotations

import sqlite3
from typing import Iterator, Sequence

__all__ = ["CHUNK", "WIDE", "marks", "in_chunks", "iter_in_chunks", "exec_in_chunks", "fetch_in", "bucket"]

CHUNK = 500        # values per statement (well under SQLite's 999-parameter floor)
# values per statement where SQLite allows 32,766 parameters (3.32 and later, by default): a
# query's 1,000 short-list rows in one statement instead of two
WIDE = 4096 if sqlite3.sqlite_version_info >= (3, 32, 0) else CHUNK


def marks(n: int) -> str:
    """``"?,?,?"`` for ``n`` parameters."""
    return ",".join("?" * n)


def iter_in_chunks(conn, sql: str, values: Sequence, before: Sequence = (), after: Sequence = (),
                   chunk: int = CHUNK, repeat: int = 1) -> Iterator[tuple]:
    """Rows of ``sql`` run once per chunk of ``values``; each ``{}`` in ``sql`` becomes the
    chunk's ``?`` marks (``repeat`` = how many ``{}`` there are: the chunk is bound that many
    times). ``before``/``after`` are parameters bound around the chunk(s)."""
    values = list(values)
    for s in range(0, len(values), chunk):
        part = values[s:s + chunk]
        q = sql.format(*([marks(len(part))] * repeat))
        yield from conn.execute(q, [*before, *(part * repeat), *after])


def in_chunks(conn, sql: str, values: Sequence, before: Sequence = (), after: Sequence = (),
              chunk: int = CHUNK, repeat: int = 1) -> list[tuple]:
    """:func:`iter_in_chunks` as a list."""
    return list(iter_in_chunks(conn, sql, values, before, after, chunk, repeat))


def exec_in_chunks(conn, sql: str, values: Sequence, before: Sequence = (), after: Sequence = (),
                   chunk: int = CHUNK, repeat: int = 1) -> int:
    """Run a statement (``DELETE``/``UPDATE ... IN ({})``) per chunk; returns the rows changed."""
    values = list(values)
    changed = 0
    for s in range(0, len(values), chunk):
        part = values[s:s + chunk]
        q = sql.format(*([marks(len(part))] * repeat))
        changed += max(conn.execute(q, [*before, *(part * repeat), *after]).rowcount, 0)
    return changed


def bucket(n: int) -> int:
    """The number of marks a statement of :func:`fetch_in` gets for ``n`` values: ``n`` rounded
    up to 2**k or 1.5 * 2**k (at least 8), so one SQL text takes ~2 log2(n) shapes."""
    size = 8
    while size < n:
        if size * 3 // 2 >= n:
            return size * 3 // 2
        size *= 2
    return size


def fetch_in(conn, sql: str, values: Sequence) -> list[tuple]:
    """Rows of ``sql``, whose one ``{}`` is the right side of an ``IN``, over ``values``: in as
    few statements as SQLite allows (:data:`WIDE` values each; :data:`CHUNK` when this SQLite
    was built with a lower parameter limit), each statement's rows taken with one ``fetchall``.

    Each statement's marks are padded to a :func:`bucket` size by repeating its last value
    (``x IN (a, b, b)`` is ``x IN (a, b)``: the same rows, in the same order). The sqlite3
    module caches 128 prepared statements by their text, and a statement of ~1,000 marks holds
    ~180 KB: one shape per length filled the cache with tens of MB at 1M nodes (the query's
    short lists vary in length), and each new length was parsed again. With ascending
    ``values`` and an ``ORDER BY`` on them the rows come sorted, as from :func:`in_chunks`."""
    values = list(values)
    try:
        return _fetch(conn, sql, values, WIDE)
    except sqlite3.OperationalError as exc:
        if WIDE == CHUNK or len(values) <= CHUNK or "too many SQL variables" not in str(exc):
            raise
        return _fetch(conn, sql, values, CHUNK)


def _fetch(conn, sql: str, values: list, chunk: int) -> list[tuple]:
    rows: list = []
    for s in range(0, len(values), chunk):
        part = values[s:s + chunk]
        size = min(bucket(len(part)), chunk)
        part += part[-1:] * (size - len(part))
        rows += conn.execute(sql.format(marks(size)), part).fetchall()
    return rows
