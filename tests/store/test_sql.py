"""kgsearch.store.sql.fetch_in against in_chunks (the reference): the same rows, in few
statement shapes, and on an SQLite whose parameter limit refuses the wide statement."""
from __future__ import annotations

import sqlite3

import pytest

from kgsearch.store import sql


@pytest.fixture
def conn():
    c = sqlite3.connect(":memory:")
    c.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
    c.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(0, 20_000, 3)])
    yield c
    c.close()


def test_bucket_sizes():
    assert [sql.bucket(n) for n in (1, 8, 9, 13, 17, 100, 500, 1000, 1025, 1537, 4096)] == \
        [8, 8, 12, 16, 24, 128, 512, 1024, 1536, 2048, 4096]
    for n in range(1, 5000):
        b = sql.bucket(n)
        assert n <= b <= max(8, 1.5 * n)


@pytest.mark.parametrize("n", [1, 7, 499, 500, 501, 1000, 1301, 4096, 4097, 9000])
def test_fetch_in_is_in_chunks(conn, n):
    """Ascending ids (some missing) with ORDER BY: the same rows in the same order; any order
    without: the same set."""
    ids = list(range(1, 3 * n, 2))[:n]          # (0, a row of t, is not asked for)
    q = "SELECT id, v FROM t WHERE id IN ({}) ORDER BY id"
    assert sql.fetch_in(conn, q, ids) == sql.in_chunks(conn, q, ids)
    shuffled = ids[::-1]
    q2 = "SELECT id, v FROM t WHERE id IN ({})"
    assert sorted(sql.fetch_in(conn, q2, shuffled)) == sorted(sql.in_chunks(conn, q2, shuffled))
    assert sql.fetch_in(conn, q, []) == []


def test_fetch_in_uses_few_statement_shapes(conn):
    """Lengths 1..1,200 run as ~20 statement texts (the bucket sizes), not one per length."""
    texts = set()              # (the trace shows the values bound: count the marks)
    conn.set_trace_callback(lambda t: texts.add(t.count(",") + 1))
    for n in range(1, 1201):
        sql.fetch_in(conn, "SELECT id FROM t WHERE id IN ({})", list(range(n)))
    conn.set_trace_callback(None)
    assert len(texts) <= 2 * 11 and len(texts) == len({sql.bucket(n) for n in range(1, 1201)})


def test_fetch_in_falls_back_when_sqlite_refuses(conn, monkeypatch):
    monkeypatch.setattr(sql, "WIDE", 1200)
    ids = list(range(0, 3000, 2))
    ref = sql.in_chunks(conn, "SELECT id, v FROM t WHERE id IN ({}) ORDER BY id", ids)
    if hasattr(conn, "setlimit"):                          # Python 3.11+: a real refusal
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    else:
        real = sql._fetch

        def refusing(c, q, values, chunk):
            if chunk > 999:
                raise sqlite3.OperationalError("too many SQL variables")
            return real(c, q, values, chunk)
        monkeypatch.setattr(sql, "_fetch", refusing)
    assert sql.fetch_in(conn, "SELECT id, v FROM t WHERE id IN ({}) ORDER BY id", ids) == ref
    with pytest.raises(sqlite3.OperationalError, match="no such column"):          # other errors pass
        sql.fetch_in(conn, "SELECT nope FROM t WHERE id IN ({})", ids)
