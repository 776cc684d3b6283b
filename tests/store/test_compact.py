"""An index run gives free pages back (VACUUM) when they are a large share of the file."""
from __future__ import annotations

import logging
import os

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store import db as store_db
from kgsearch.store.db import Index

from indexer.test_incremental import logical


def _notes(root, n=120):
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"note{i:03d}.md").write_text(
            f"# Note {i}\n\n" + " ".join(f"word{(i * 7 + j) % 997} topic{j % 31}" for j in range(400)) + "\n")


def _size(db) -> int:
    return sum(os.path.getsize(str(db) + s) for s in ("", "-wal") if os.path.exists(str(db) + s))


def test_vacuum_after_big_deletion_keeps_everything(tmp_path):
    tree, db = tmp_path / "notes", tmp_path / "i.db"
    _notes(tree)
    opts = dict(steps=("text",), compact=False)
    index_paths(db, [str(tree)], IndexOptions(**opts))
    for p in sorted(tree.iterdir())[10:]:
        p.unlink()
    rep = index_paths(db, [str(tree)], IndexOptions(**opts))
    assert rep.compacted_bytes == 0 and rep.nodes_removed > 0
    with Index.open(db) as ix:
        # the first (full) build asked for a VACUUM that compact=False did not run: still pending
        assert ix.meta("compact_pending") == "1"
        ix.conn.execute("DELETE FROM meta WHERE key='compact_pending'")
        free, total = ix.free_bytes()
        assert free > 0.5 * total                      # most pages are free now
        before, size_before = logical(db), _size(db)
        hits_before = ix.conn.execute("SELECT rowid FROM text_fts WHERE text_fts MATCH 'word5'").fetchall()
        assert ix.compact_if_sparse(min_fraction=0.6) == 0         # below the asked share: nothing done
        shrunk = ix.compact_if_sparse(min_fraction=0.1, min_bytes=0)
        assert shrunk > 0 and ix.free_bytes()[0] == 0
        assert ix.conn.execute("SELECT rowid FROM text_fts WHERE text_fts MATCH 'word5'").fetchall() == hits_before
    assert _size(db) <= size_before - shrunk
    assert logical(db) == before


def test_index_run_compacts_when_worth_it(tmp_path, monkeypatch):
    tree, db = tmp_path / "notes", tmp_path / "i.db"
    _notes(tree)
    index_paths(db, [str(tree)], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        assert ix.meta("compact_pending") is None       # the full build asked, and got, its VACUUM
    size_full = _size(db)
    for p in sorted(tree.iterdir())[10:]:
        p.unlink()
    monkeypatch.setattr(store_db, "COMPACT_BYTES", 0)            # the fixture is small
    reader = Index.open(db, readonly=True)                         # a reader mid-way is not blocked
    reader.conn.execute("BEGIN")
    n_before = reader.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    rep = index_paths(db, [str(tree)], IndexOptions(steps=("text",)))
    assert reader.conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == n_before   # its snapshot
    reader.conn.execute("COMMIT")
    reader.close()
    assert rep.compacted_bytes > 0 and "compact" in rep.phases
    with Index.open(db) as ix:
        assert ix.free_bytes()[0] == 0
        assert ix.conn.execute("SELECT count(*) FROM nodes WHERE kind='note'").fetchone()[0] == 10
    assert _size(db) < 0.5 * size_full    # without the VACUUM the file keeps its size (free pages)
    # a run with nothing freed does not vacuum
    assert index_paths(db, [str(tree)], IndexOptions(steps=("text",))).compacted_bytes == 0


class _NoVacuum:
    """A connection whose VACUUM fails as it does on a full disk."""

    def __init__(self, conn):
        self._conn = conn

    def execute(self, sql, *a):
        if sql.strip().upper() == "VACUUM":
            import sqlite3
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *a)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_failed_vacuum_leaves_the_index_as_it_was(tmp_path, caplog):
    tree, db = tmp_path / "notes", tmp_path / "i.db"
    _notes(tree)
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), compact=False))
    for p in sorted(tree.iterdir())[10:]:
        p.unlink()
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), compact=False))
    before = logical(db)
    with Index.open(db) as ix:
        ix.conn = _NoVacuum(ix.conn)
        with caplog.at_level(logging.WARNING):
            assert ix.compact_if_sparse(min_fraction=0.1, min_bytes=0) == 0
        ix.conn = ix.conn._conn
    assert any("could not compact" in r.getMessage() and "database or disk is full" in r.getMessage()
               and "index is intact" in r.getMessage() for r in caplog.records)
    assert logical(db) == before
