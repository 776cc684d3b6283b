"""Issue 24, the scenarios that held: kill -9 during an index run (the first one too), a full
disk, two indexers, corrupt pages, an index from a newer kgsearch. Each is driven end to end
so none can come back: the previous index answers as before, the exit code is the documented
one and the one-line message names the fix. No wall-clock asserts: a paused indexer signals
through a file, and every wait has a generous limit."""
from __future__ import annotations

import base64
import json
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run as cli


PAUSING_INDEXER = """
import pathlib, sys, time
from kgsearch.indexer import IndexOptions, index_paths
marker = pathlib.Path(sys.argv[3])
def progress(ev):
    if ev.get("phase") == "load" and ev.get("done") == 3:
        marker.write_text("paused")
        time.sleep(120)
index_paths(sys.argv[1], [sys.argv[2]], IndexOptions(progress=progress, workers=0))
"""




def notes(root: Path, n: int, word: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"n{i:03d}.md").write_text(f"# Note {i}\n{word} number {i} [[Note {(i + 1) % n}]]\n")
    return root


def keys(db: Path) -> list[tuple]:
    """Every node's key and content hash: what a committed run changes."""
    with sqlite3.connect(db) as c:
        return sorted(c.execute("SELECT key, hex(hash) FROM nodes"))


def hits(db: Path, query: str) -> list[str]:
    """The keys BM25 finds (the words are there or not; the other channels rank anything)."""
    rc, out, err = cli("search", query, "--db", db, "--json", "--no-cache", "--channels", "bm25")
    assert rc == 0, err
    return [h["key"] for h in json.loads(out)["hits"]]


def paused_indexer(tmp_path, db, root) -> subprocess.Popen:
    marker = tmp_path / "paused"
    p = subprocess.Popen([sys.executable, "-c", PAUSING_INDEXER, str(db), str(root), str(marker)],
                         stderr=subprocess.PIPE)
    for _ in range(1200):
        if marker.exists():
            return p
        if p.poll() is not None:
            raise AssertionError(p.stderr.read().decode())
        time.sleep(0.05)
    p.kill()
    raise AssertionError("the indexer never reached its pause")


def stop(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    p.stderr.close()


@pytest.fixture
def built(tmp_path):
    root = notes(tmp_path / "vault", 12, "apple")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q")[0] == 0
    return root, db


def test_kill_9_during_an_index_run_leaves_the_previous_index(built, tmp_path):
    root, db = built
    before, found = keys(db), hits(db, "apple number")
    notes(root, 12, "banana")                                  # every note changes
    p = paused_indexer(tmp_path, db, root)
    try:
        assert keys(db) == before and hits(db, "apple number") == found    # readers never wait
    finally:
        stop(p)
    assert keys(db) == before and hits(db, "apple number") == found
    assert cli("doctor", "--db", db)[0] == 0
    assert cli("index", "--db", db, "-q")[0] == 0              # the next run completes
    assert hits(db, "banana number") and not hits(db, "apple")


def test_kill_9_during_the_first_run_leaves_an_index_that_says_so(tmp_path):
    root = notes(tmp_path / "vault", 12, "apple")
    db = tmp_path / "first.db"
    stop(paused_indexer(tmp_path, db, root))
    rc, _, err = cli("search", "apple", "--db", db)
    assert rc == 4 and "doctor --rebuild" in err and "kgsearch index" in err
    assert cli("index", root, "--db", db, "-q")[0] == 0       # and the next run builds it
    assert hits(db, "apple number")


def test_two_indexers(built, tmp_path):
    root, db = built
    notes(root, 12, "cherry")
    p = paused_indexer(tmp_path, db, root)
    try:
        rc, _, err = cli("index", root, "--db", db)
        assert rc == 75 and "another kgsearch index run holds" in err and f"pid {p.pid}" in err
        link = tmp_path / "link.db"
        link.symlink_to(db)
        assert cli("index", root, "--db", link)[0] == 75      # the same file through a link
    finally:
        stop(p)


def disk_of(limit: int):
    """A preexec_fn: files of the child cannot grow past ``limit`` bytes (a write past it fails
    with EFBIG, which SQLite reports as "database or disk is full")."""
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limited


def test_a_full_disk_fails_the_run_with_exit_4_and_keeps_the_index(built):
    root, db = built
    before = keys(db)
    rng = random.Random(7)
    for i in range(4):                                         # text that does not compress away
        big = base64.encodebytes(rng.randbytes(60_000)).decode()
        (root / f"big{i}.md").write_text(f"# Big {i}\n{big}\ndurian {i}\n")
    limit = max(os.path.getsize(db), os.path.getsize(f"{db}-wal") if os.path.exists(f"{db}-wal") else 0) + 100_000
    r = subprocess.run([sys.executable, "-m", "kgsearch", "index", "--db", str(db)], capture_output=True, text=True,
                       timeout=300, preexec_fn=disk_of(limit))
    assert r.returncode == 4, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "free some space" in lines[0] and "intact" in lines[0]
    assert keys(db) == before and not hits(db, "durian")
    assert cli("index", "--db", db, "-q")[0] == 0 and hits(db, "durian")


def corrupt_pages(db: Path, table: str) -> None:
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = [r[0] for r in c.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
        size = c.execute("PRAGMA page_size").fetchone()[0]
    with open(db, "r+b") as fh:
        for pg in pages:
            fh.seek((pg - 1) * size)
            fh.write(b"\xff" * size)


@pytest.mark.parametrize("table", ["text_postings", "nodes"])
def test_corrupt_pages(built, table):
    root, db = built
    corrupt_pages(db, table)
    for args in (["search", "apple"], ["index"], ["doctor"]):
        rc, out, err = cli(*args, "--db", db)
        assert rc == 4, (args, out, err)
        assert "doctor --rebuild" in err and "internal error" not in err
    assert cli("doctor", "--rebuild", "--db", db)[0] == 0
    assert hits(db, "apple number")


def test_an_index_from_a_newer_kgsearch(built):
    from kgsearch.mcp.server import Server

    root, db = built
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO migrations(name, applied_at) VALUES ('9999_future', 0)")
    for args in (["search", "apple"], ["index"], ["doctor"], ["stats"]):
        rc, _, err = cli(*args, "--db", db)
        assert rc == 4 and "newer kgsearch" in err and "upgrade kgsearch" in err, (args, err)
    res = Server(str(db)).call("search", {"query": "apple"})
    assert res["isError"] and "newer kgsearch" in res["content"][0]["text"]
