"""`kgsearch doctor`: the file checks, the derived-data check (each can fail: tampered data is
found), and `doctor --rebuild` (a new file swapped in atomically, readers unharmed)."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import cli, write


def vault(root: Path, n: int = 24) -> Path:
    for i in range(n):
        write(root / f"n{i}.md", f"# Note {i}\napple banana w{i} cherry{i % 3} [[Note {(i + 1) % n}]] #t{i % 4}\n")
    write(root / "code.py", "def alpha():\n    return beta()\n\n\ndef beta():\n    return 1\n")
    return root


@pytest.fixture
def built(tmp_path):
    root = vault(tmp_path / "v")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    return root, db


def doctor(db, capsys, *flags) -> tuple[int, dict]:
    capsys.readouterr()
    rc = cli("doctor", "--db", db, "--json", *flags)
    return rc, json.loads(capsys.readouterr().out)


def test_healthy_index(built, capsys):
    _, db = built
    rc, rep = doctor(db, capsys)
    assert rc == 0 and rep["ok"]
    assert [c["name"] for c in rep["checks"]] == ["file", "fts5", "text", "neighbors", "graph", "vectors"]
    assert all(c["ok"] for c in rep["checks"])
    rc, rep = doctor(db, capsys, "--no-derived", "--thorough")
    assert rc == 0 and [c["name"] for c in rep["checks"]] == ["file", "fts5"]
    assert "integrity_check" in rep["checks"][0]["detail"]


TAMPER = {   # what a broken incremental update could leave, and the check that must see it
    "text": "DELETE FROM text_postings WHERE term = (SELECT min(term) FROM text_postings)",
    "neighbors": "UPDATE edges SET weight = weight + 1 WHERE id = (SELECT min(id) FROM edges "
                 "WHERE type = 'similar_text')",
    "graph": "DELETE FROM edges WHERE id = (SELECT min(id) FROM edges WHERE type = 'links_to')",
    "vectors": "DELETE FROM vec_blocks",
}


@pytest.mark.parametrize("check", sorted(TAMPER))
def test_derived_data_that_differs_from_a_rebuild_is_found(built, capsys, check):
    root, db = built
    with sqlite3.connect(db) as c:
        assert c.execute(TAMPER[check]).rowcount >= 1
    rc, rep = doctor(db, capsys)
    assert rc == 4 and not rep["ok"] and not rep["damaged"]
    failed = [c for c in rep["checks"] if not c["ok"]]
    assert [c["name"] for c in failed] == [check], failed
    assert "kgsearch index --full" in failed[0]["fix"]
    capsys.readouterr()
    assert cli("doctor", "--db", db) == 4
    assert "kgsearch index --full" in capsys.readouterr().err
    # the fix it names fixes it
    assert cli("index", root, "--db", db, "--full", "-q") == 0
    assert doctor(db, capsys)[0] == 0


def _corrupt(db: Path, table: str) -> None:
    with sqlite3.connect(db) as c:
        pages = [r[0] for r in c.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
        size = c.execute("PRAGMA page_size").fetchone()[0]
    with open(db, "r+b") as fh:
        for pg in pages:
            fh.seek((pg - 1) * size)
            fh.write(b"\xff" * size)


def test_damaged_file_exit_4_then_rebuild(built, capsys):
    root, db = built
    with sqlite3.connect(db) as c:
        keys = sorted(r[0] for r in c.execute("SELECT key FROM nodes"))
        gen = int(c.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
    _corrupt(db, "text_postings")
    rc, rep = doctor(db, capsys)
    assert rc == 4 and rep["damaged"] and "doctor --rebuild" in rep["checks"][0]["fix"]
    capsys.readouterr()
    assert cli("doctor", "--rebuild", "--db", db) == 0
    assert not Path(f"{db}.bak").exists() and not list(db.parent.glob(".i.db.rebuild*"))
    with sqlite3.connect(db) as c:
        assert sorted(r[0] for r in c.execute("SELECT key FROM nodes")) == keys
        assert [r[0] for r in c.execute("SELECT path FROM roots")] == [str(root.resolve())]
        assert int(c.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0]) == gen + 1
    assert doctor(db, capsys)[0] == 0


def test_rebuild_swaps_atomically_and_readers_keep_their_snapshot(tmp_path, capsys):
    a, b = vault(tmp_path / "a", 6), tmp_path / "b"
    write(b / "Home.md", "# Home\nkiwi\n")
    db = tmp_path / "i.db"
    assert cli("index", a, b, "--db", db, "-q") == 0
    with sqlite3.connect(db) as c:
        labels = c.execute("SELECT path, label FROM roots ORDER BY position").fetchall()
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    before = reader.execute("SELECT count(*) FROM nodes").fetchone()[0]
    write(a / "extra.md", "# Extra\nmango\n")          # the rebuild sees the sources as they are now
    old_inode = os.stat(db).st_ino
    assert cli("doctor", "--rebuild", "--db", db, "-q") == 0
    assert os.stat(db).st_ino != old_inode
    # the reader still reads its snapshot of the old file
    assert reader.execute("SELECT count(*) FROM nodes").fetchone()[0] == before
    reader.execute("COMMIT")
    reader.close()
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT path, label FROM roots ORDER BY position").fetchall() == labels
        assert c.execute("SELECT count(*) FROM nodes WHERE key = 'md:extra'").fetchone()[0] == 1
        assert c.execute("SELECT count(*) FROM nodes WHERE key = 'md://b/Home'").fetchone()[0] == 1
    assert doctor(db, capsys)[0] == 0


def test_rebuild_refuses_to_lose_a_missing_root(tmp_path, capsys):
    a, b = vault(tmp_path / "a", 4), vault(tmp_path / "b", 4)
    db = tmp_path / "i.db"
    assert cli("index", a, b, "--db", db, "-q") == 0
    ino = os.stat(db).st_ino
    b.rename(tmp_path / "b-away")
    capsys.readouterr()
    assert cli("doctor", "--rebuild", "--db", db) == 3
    assert f"root {b.resolve()} is missing" in capsys.readouterr().err
    assert os.stat(db).st_ino == ino and not list(tmp_path.glob(".i.db.rebuild*"))


def test_rebuild_of_an_unreadable_file_needs_the_roots(tmp_path, capsys):
    root = vault(tmp_path / "v", 4)
    db = tmp_path / "i.db"
    db.write_bytes(b"not an index at all " * 200)
    assert cli("doctor", "--rebuild", "--db", db) == 4
    assert "doctor --rebuild PATH" in capsys.readouterr().err
    assert cli("doctor", "--rebuild", root, "--db", db, "-q") == 0
    assert doctor(db, capsys)[0] == 0


def test_incremental_index_is_what_a_rebuild_gives(built, capsys):
    root, db = built
    for i in range(0, 24, 3):
        (root / f"n{i}.md").unlink()
    write(root / "n1.md", "# Note 1\na much longer text now " + "word " * 40 + "\n")
    write(root / "new.md", "# New\napple cherry1 [[Note 2]]\n")
    assert cli("index", "--db", db, "-q") == 0
    rc, rep = doctor(db, capsys)
    assert rc == 0, [c for c in rep["checks"] if not c["ok"]]


@pytest.mark.parametrize("strict", ["1", "0"])
def test_a_damaged_index_is_exit_4_for_search_whatever_the_strict_mode(built, capsys, monkeypatch, strict):
    """Outside strict mode a failing channel is skipped; a damaged file never is (it used to
    answer without BM25, exit 0)."""
    _, db = built
    monkeypatch.setenv("KGSEARCH_STRICT", strict)
    _corrupt(db, "text_postings")
    capsys.readouterr()
    assert cli("search", "apple", "--db", db, "--no-cache") == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(db) in err[0] and "doctor --rebuild" in err[0]
    import kgsearch
    from kgsearch.errors import BadIndex

    with pytest.raises(BadIndex, match="doctor --rebuild"):
        kgsearch.search("banana", db=str(db), k=3, use_cache=False)


def test_adjacency_rows_are_compared_with_a_rebuild(tmp_path, capsys):
    """Per-node adjacency rows (graphs over graph_adjacency_rows edges) are part of the graph
    check: equal after an incremental run, a tampered row is found, --full fixes it."""
    from kgsearch.indexer import IndexOptions, index_paths

    root, db = vault(tmp_path / "v"), tmp_path / "rows.db"
    index_paths(db, [str(root)], IndexOptions(settings={"graph_adjacency_rows": 0}))
    write(root / "n3.md", "# Note 3\nnew text [[Note 7]] [[Note 9]]\n")
    index_paths(db, [str(root)], IndexOptions(settings={"graph_adjacency_rows": 0}))
    rc, rep = doctor(db, capsys)
    graph = [c for c in rep["checks"] if c["name"] == "graph"][0]
    assert rc == 0 and graph["ok"] and "adjacency rows" in graph["detail"], graph
    with sqlite3.connect(db) as c:
        assert c.execute("UPDATE graph_adj SET nout = nout - 1 WHERE nout > 0 AND node = "
                         "(SELECT min(node) FROM graph_adj WHERE nout > 0)").rowcount == 1
    rc, rep = doctor(db, capsys)
    graph = [c for c in rep["checks"] if c["name"] == "graph"][0]
    assert rc == 4 and not graph["ok"] and "2 adjacency rows differ" in graph["detail"], graph
    assert cli("index", root, "--db", db, "--full", "-q") == 0
    assert doctor(db, capsys)[0] == 0


def test_rebuild_never_replaces_a_foreign_sqlite_file_and_keeps_a_non_sqlite_one(tmp_path, capsys):
    """`doctor --rebuild ROOT --db their.db` overwrote someone's SQLite database, and a text file
    saved where the index was, with no copy left."""
    root = vault(tmp_path / "v", 3)
    theirs = tmp_path / "theirs.db"
    with sqlite3.connect(theirs) as c:
        c.execute("CREATE TABLE t(x)")
        c.execute("INSERT INTO t VALUES (42)")
    before = theirs.read_bytes()
    capsys.readouterr()
    assert cli("doctor", "--rebuild", root, "--db", theirs) == 4
    err = capsys.readouterr().err
    assert "is a SQLite file but not a kgsearch index" in err and len(err.strip().splitlines()) == 1
    assert theirs.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db", "v"]      # no .lock, no .rebuild
    notes = tmp_path / "notes.db"
    for n, text in enumerate(["first\n", "second\n"]):
        notes.write_text(text)
        assert cli("doctor", "--rebuild", root, "--db", notes) == 0
        kept = tmp_path / ("notes.db.bak" + (f".{n + 1}" if n else ""))
        assert kept.read_text() == text
        assert f"kept as {kept}" in capsys.readouterr().err
    assert doctor(notes, capsys)[0] == 0


@pytest.mark.parametrize("command", [["index", "ROOT"], ["doctor"], ["doctor", "--rebuild"], ["roots", "remove", "x"]])
def test_a_foreign_file_gets_no_lock_file_beside_it(tmp_path, capsys, command):
    """`kgsearch index --db their.db` refused a SQLite file of other tables (or any other file)
    but left `their.db.lock` beside it, in the user's folder."""
    root = vault(tmp_path / "v", 2)
    theirs = tmp_path / "theirs.db"
    with sqlite3.connect(theirs) as c:
        c.execute("CREATE TABLE t(x)")
    other = tmp_path / "notes.db"
    other.write_text("not an index\n")
    for db in (theirs, other):
        before = sorted(p.name for p in tmp_path.iterdir())
        capsys.readouterr()
        assert cli(*[str(root) if a == "ROOT" else a for a in command], "--db", db) == 4
        assert "not a kgsearch index" in capsys.readouterr().err
        assert sorted(p.name for p in tmp_path.iterdir()) == before
