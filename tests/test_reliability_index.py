"""Issue 24, "nothing silent": what a hostile or unlucky folder or index file still found, each
with its documented exit code and a one-line message naming the file and the fix. Damaged
blobs, read-only indexes and folders, a symlinked --db, bad ignore patterns, a failed first
run, empty and zero-byte index files, files skipped without a word. The scenarios that held
before (kill -9, disk full, two indexers, corrupt pages, newer schema) are in
``test_reliability_crash.py``.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import run as cli
from conftest import write


def run(*args, unprivileged: bool = False, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m kgsearch ARGS`` in a fresh process; ``unprivileged``: without root's power to
    write whatever the permissions say (CAP_DAC_OVERRIDE), so a read-only file is read-only."""
    cmd = [sys.executable, "-m", "kgsearch", *map(str, args)]
    if unprivileged and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a file read-only")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


@pytest.fixture(scope="module")
def _vault_once(tmp_path_factory):
    base = tmp_path_factory.mktemp("vault")
    root = base / "vault"
    for i in range(6):
        write(root / f"n{i}.md", f"# Note {i}\napple banana cherry w{i} [[Note {(i + 1) % 6}]]\n")
    db = base / "i.db"
    assert cli("index", root, "--db", db, "-q")[0] == 0
    return root, db


@pytest.fixture
def vault(_vault_once, tmp_path):
    """A small indexed vault: the folder is shared (read it, do not change it), the index is a
    fresh copy per test."""
    root, db = _vault_once
    shutil.copy(db, tmp_path / "i.db")
    return root, tmp_path / "i.db"


# ---------------------------------------------------------------------------- damaged blobs
def damage_blobs(db: Path, where: str = "1") -> None:
    with sqlite3.connect(db) as c:
        assert c.execute(f"UPDATE blobs SET data = x'00112233' WHERE {where}").rowcount > 0


@pytest.mark.parametrize("where", ["1", "name = 'graph.pagerank'", "name LIKE 'text.%'"])
@pytest.mark.parametrize("strict", ["1", "0"])
def test_search_on_a_damaged_blob_is_exit_4_never_a_quiet_answer(vault, monkeypatch, where, strict):
    monkeypatch.setenv("KGSEARCH_STRICT", strict)
    _, db = vault
    damage_blobs(db, where)
    rc, out, err = cli("search", "apple banana", "--db", db, "--no-cache")
    assert rc == 4, (out, err)
    line = one_error_line(err)
    assert str(db) in line and "doctor --rebuild" in line


@pytest.mark.parametrize("args", [["index"], ["index", "--full"], ["doctor"], ["doctor", "--no-derived"]])
def test_index_and_doctor_on_a_damaged_blob_are_exit_4(vault, args):
    root, db = vault
    damage_blobs(db)
    rc, out, err = cli(*args, "--db", db)
    assert rc == 4, (out, err)
    assert "doctor --rebuild" in err and "ValueError" not in err + out and "internal error" not in err


def test_doctor_rebuild_mends_damaged_blobs(vault):
    root, db = vault
    damage_blobs(db)
    assert cli("doctor", "--rebuild", "--db", db)[0] == 0
    rc, out, _ = cli("search", "apple banana", "--db", db, "--json", "--no-cache")
    assert rc == 0 and json.loads(out)["hits"]


# ---------------------------------------------------------------------------- read-only
@pytest.fixture
def read_only(tmp_path, vault):
    """The vault's index copied into folders made read-only: ``file`` (the file alone) and
    ``folder`` (the folder too); permissions restored afterwards."""
    root, db = vault
    made = {}
    for name in ("file", "folder"):
        d = tmp_path / f"ro-{name}"
        d.mkdir()
        shutil.copy(db, d / "i.db")
        (d / "i.db").chmod(0o444)
        if name == "folder":
            d.chmod(0o555)
        made[name] = d / "i.db"
    yield made
    for p in made.values():
        p.parent.chmod(0o755)
        p.chmod(0o644)


@pytest.mark.parametrize("which", ["file", "folder"])
def test_doctor_calls_a_healthy_read_only_index_healthy(read_only, which):
    r = run("doctor", "--db", read_only[which], unprivileged=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "doctor: healthy" in r.stdout and "PROBLEM" not in r.stdout


@pytest.mark.parametrize("which", ["file", "folder"])
def test_search_on_a_read_only_index_answers(read_only, which):
    r = run("search", "apple banana", "--db", read_only[which], "--json", unprivileged=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hits"]


@pytest.mark.parametrize("which", ["file", "folder"])
def test_index_on_a_read_only_index_says_read_only(read_only, which):
    r = run("index", "--db", read_only[which], unprivileged=True)
    assert r.returncode == 4, r.stderr
    line = one_error_line(r.stderr)
    assert "read-only" in line and "free some space" not in line and "PermissionError" not in line
    assert str(read_only[which].parent if which == "folder" else read_only[which]) in line


@pytest.mark.parametrize("which", ["file", "folder"])
def test_feedback_on_a_read_only_index_says_read_only(read_only, which):
    """`feedback` (the one write of the CLI's read commands and of the MCP tools) on a read-only
    index: in a read-only folder it said "is not a kgsearch index ... move the file away ...
    `kgsearch doctor --rebuild`", and the MCP tool told the agent that every tool fails until the
    user fixes it, while search works."""
    db = read_only[which]
    r = run("feedback", "apple", "md:n1", "--useful", "--db", db, unprivileged=True)
    assert r.returncode == 4, r.stderr
    line = one_error_line(r.stderr)
    assert f"{db}: the index is read-only" in line and "not a kgsearch index" not in line and "doctor" not in line
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    calls = [{"name": "feedback", "arguments": {"query": "apple", "node": "md:n1", "useful": True}},
             {"name": "search", "arguments": {"query": "apple banana", "k": 2}}]
    lines = "".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": dict(c, _meta=meta)}) + "\n"
                    for i, c in enumerate(calls, 1))
    cmd = [sys.executable, "-m", "kgsearch", "mcp", "--db", str(db)]
    if os.geteuid() == 0:
        cmd = [shutil.which("setpriv") or pytest.skip("no setpriv"), "--bounding-set", "-dac_override,-dac_read_search",
               "--"] + cmd
    r = subprocess.run(cmd, input=lines, capture_output=True, text=True, timeout=120)
    fb, search = [json.loads(x)["result"] for x in r.stdout.splitlines()]
    text = fb["content"][0]["text"]
    assert fb["isError"] and f"{db}: the index is read-only" in text and "the read-only tools work" in text, text
    assert "cannot be used" not in text and "every kgsearch tool fails" not in text and "not a kgsearch index" not in text
    assert not search["isError"] and search["structuredContent"]["hits"]


# ---------------------------------------------------------------------------- the lock
@pytest.mark.parametrize("held_through", ["real", "link"])
def test_the_lock_is_the_files_not_the_paths(vault, tmp_path, held_through):
    from kgsearch.store.lock import IndexLock

    root, db = vault
    link = tmp_path / "link.db"
    link.symlink_to(db)
    held, used = (db, link) if held_through == "real" else (link, db)
    with IndexLock(held):
        rc, _, err = cli("index", root, "--db", used)
    assert rc == 75, err
    assert "another kgsearch index run holds" in err


def test_a_failed_first_run_leaves_no_lock_beside_nothing(tmp_path):
    """`kgsearch index /nope --db x.db` failed and left x.db.lock in the folder, beside no index."""
    from kgsearch.store.lock import IndexLock, lock_path

    db = tmp_path / "x.db"
    rc, _, err = cli("index", tmp_path / "nope", "--db", db)
    assert rc == 3 and "no such file or folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\nhello\n")
    assert cli("index", root, "--db", db)[0] == 0
    assert lock_path(db).exists()                          # beside an index the lock file stays (flock)
    # a run that opened the lock file a failed first run then removed sees it gone once it holds
    # the flock (and takes a new one): two runs never hold two files of one name
    from kgsearch.store.lock import _same_file
    other = tmp_path / "y.db"
    first = IndexLock(other).acquire()
    fd = os.open(str(lock_path(other)), os.O_RDWR)
    assert _same_file(fd, lock_path(other))
    first.release()                                        # no y.db: the failed first run removes its lock
    assert not lock_path(other).exists() and not _same_file(fd, lock_path(other))
    os.close(fd)
    with IndexLock(other):
        assert lock_path(other).exists()


@pytest.mark.parametrize("why", ["missing root", "bad file mid-way"])
def test_a_failed_first_run_leaves_no_folder_it_made(tmp_path, why):
    """`kgsearch index /nope --db new/dir/x.db` removed its .lock but left new/dir behind, empty."""
    if why == "missing root":
        root, says = tmp_path / "nope", "no such file or folder"
    else:                                              # a named file that fails while loading
        root, says = write(tmp_path / "kg.json", '{"nodes": [{"id": 1}], "edges": [{"source": 1, "target": 9}]}'), \
            "is not a known node"
    (tmp_path / "kept").mkdir()
    for db in (tmp_path / "new" / "dir" / "x.db", tmp_path / "kept" / "sub" / "x.db"):
        rc, _, err = cli("index", root, "--db", db)
        assert rc == 3 and says in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["kept", *(["kg.json"] if why != "missing root"
                                                                        else [])])
    assert list((tmp_path / "kept").iterdir()) == []     # a folder that was there stays


def test_a_first_run_says_which_folders_it_made_for_the_index(tmp_path):
    root = tmp_path / "notes"
    write(root / "a.md", "# A\nhello\n")
    db = tmp_path / "new" / "dir" / "x.db"
    rc, _, err = cli("index", root, "--db", db)
    made = tmp_path.resolve() / "new"
    assert rc == 0 and err.splitlines()[0] == (f"note: created the folder {made / 'dir'} and its parent {made} "
                                               f"for the index")
    rc, out, _ = cli("index", root, "--db", tmp_path / "other" / "y.db", "--json")
    assert rc == 0 and json.loads(out)["created_dirs"] == [str(tmp_path.resolve() / "other")]
    rc, _, err = cli("index", root, "--db", db)           # nothing made: nothing said
    assert rc == 0 and "created" not in err
    rc, _, err = cli("index", root, "--db", tmp_path / "third" / "z.db", "-q")
    assert (rc, err) == (0, "")


def _wal_only(tmp_path, name: str, tables: list[str]) -> Path:
    """A WAL-mode SQLite file whose ``tables`` are still only in its -wal (copied while the
    writer held it open, as a crash leaves it)."""
    src = tmp_path / f"src-{name}"
    c = sqlite3.connect(src)
    c.execute("PRAGMA journal_mode=wal")
    c.execute("PRAGMA wal_autocheckpoint=0")
    for t in tables:
        c.execute(f"CREATE TABLE {t}(a)")
    c.commit()
    dst = tmp_path / name
    shutil.copyfile(src, dst)
    shutil.copyfile(f"{src}-wal", f"{dst}-wal")
    c.close()
    return dst


def test_a_foreign_sqlite_file_whose_tables_are_in_its_wal_is_refused_untouched(tmp_path):
    """Its main file held no table yet, so it passed for an empty index: a search or an index run
    opened it and the closing connection checkpointed the other program's -wal into its file."""
    from kgsearch.store.db import foreign_kind

    db = _wal_only(tmp_path, "other.db", ["photos", "albums"])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("other.db")}
    assert set(before) == {"other.db", "other.db-wal"}
    assert foreign_kind(db) == "sqlite"
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\nhello\n")
    for args in (("index", root, "--db", db), ("search", "hello", "--db", db), ("doctor", "--db", db)):
        rc, _, err = cli(*args)
        assert rc == 4 and "is a SQLite file but not a kgsearch index" in err, (args, err)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("other.db")}
    assert after == before                                  # no checkpoint, no -shm, no .lock
    # our own index cut off after its first commit (tables only in the -wal) is still ours
    assert foreign_kind(_wal_only(tmp_path, "ours.db", ["migrations", "nodes"])) is None


def hold_lock(db: Path) -> subprocess.Popen:
    """Another process holding the writer lock of ``db`` (as ``kgsearch index`` does) until its
    stdin closes."""
    code = ("import sys\nfrom kgsearch.store.lock import IndexLock\nwith IndexLock(sys.argv[1]):\n"
            "    print('held', flush=True)\n    sys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "held"
    return p


@pytest.mark.parametrize("held_through", ["first", "second"])
def test_two_hard_links_of_one_index_take_one_lock(vault, tmp_path, held_through):
    """Two runs given two hard links of one index file: the second is busy (75). Each name had
    its own ``<name>.lock``, so both ran, each believing it held the writer lock. Readers are not
    locked out, and once the holder is gone the other name indexes."""
    root, db = vault
    other = tmp_path / "elsewhere" / "same.db"
    other.parent.mkdir()
    os.link(db, other)
    held, used = (db, other) if held_through == "first" else (other, db)
    holder = hold_lock(held)
    try:
        r = run("index", root, "--db", used)
        assert r.returncode == 75, r.stderr
        line = one_error_line(r.stderr)
        assert "another kgsearch index run holds" in line and str(used) in line and "hard link" in line
        r = run("search", "apple", "--db", used, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["hits"], r.stderr
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    r = run("index", root, "--db", used)
    assert r.returncode == 0, r.stderr


def test_the_hard_link_lock_leaves_this_processs_sqlite_locks_alone(tmp_path):
    """Locking a hard-linked index opens the file itself; closing that descriptor would drop every
    fcntl lock this process holds on the file, SQLite's too (a reader's, here), and let another
    process take the file from under it. The descriptor is kept for the next lock instead."""
    from kgsearch.store.lock import IndexLock

    db, link = tmp_path / "r.db", tmp_path / "link.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t(x)")
        c.execute("INSERT INTO t VALUES (1)")
    os.link(db, link)
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]        # holds SQLite's SHARED lock
    for _ in range(3):
        with IndexLock(link):
            pass
    code = ("import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)\n"
            "try:\n    c.execute('BEGIN EXCLUSIVE')\n    print('took it')\nexcept sqlite3.OperationalError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(link)], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "database is locked", r.stdout + r.stderr
    reader.close()
    r = subprocess.run([sys.executable, "-c", code, str(link)], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "took it", r.stdout + r.stderr


# ---------------------------------------------------------------------------- ignore patterns
@pytest.mark.parametrize("pattern", ["[z-a]", "[a-", "x[9-0]y"])
def test_a_bad_ignore_pattern_is_one_line_naming_the_file(tmp_path, pattern):
    root = tmp_path / "v"
    write(root / "a.md", "# A\nalpha\n")
    write(root / ".kgsearchignore", f"# comment\n{pattern}\n")
    db = tmp_path / "i.db"
    rc, out, err = cli("index", root, "--db", db)
    if pattern == "[a-":            # an unclosed bracket is a literal '[' for git: a valid pattern
        assert rc == 0, err
        return
    assert rc == 3, err
    line = one_error_line(err)
    assert f"{root / '.kgsearchignore'}:2" in line and pattern in line
    assert not db.exists()                             # a failed first run leaves nothing behind


@pytest.mark.parametrize("pattern, ignored, kept", [
    ("[[:alpha:]].md", ["a.md"], ["1.md", "_.md"]),
    ("[[:digit:]].md", ["1.md"], ["a.md", "_.md"]),
    ("[![:alnum:]].md", ["_.md"], ["a.md", "1.md"]),
    ("[a-c[:digit:]].md", ["a.md", "1.md"], ["_.md"]),
    ("[[].md", ["[.md"], ["a.md"]),
    ("[]a].md", ["a.md", "].md"], ["1.md"]),
])
def test_posix_classes_in_ignore_patterns_work_silently(tmp_path, pattern, ignored, kept):
    root = tmp_path / "v"
    for name in set(ignored) | set(kept):
        write(root / name, "# note\nalpha\n")
    write(root / ".kgsearchignore", pattern + "\n")
    db = tmp_path / "i.db"
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # FutureWarning ("possible nested set") included
        rc, _, err = cli("index", root, "--db", db, "--json")
    assert rc == 0, err
    assert "Warning" not in err
    with sqlite3.connect(db) as c:
        paths = {Path(r[0]).name for r in c.execute("SELECT path FROM files")}
    assert paths == set(kept)


# ---------------------------------------------------------------------------- a failed first run
def test_a_failed_first_run_leaves_no_index_behind(tmp_path, monkeypatch):
    bad = write(tmp_path / "bad.json", "{oops")
    db = tmp_path / "i.db"
    rc, _, err = cli("index", bad, "--db", db)
    assert rc == 3, err
    assert not db.exists() and not Path(f"{db}-wal").exists()
    rc, _, err = cli("search", "x", "--db", db)
    assert rc == 4 and "no index at" in err
    # over the memory budget (exit 6): nothing behind either
    good = write(tmp_path / "v" / "a.md", "# A\nalpha\n")
    monkeypatch.setenv("KGSEARCH_MEMORY_MB", "1")
    rc, _, err = cli("index", good.parent, "--db", db)
    assert rc == 6, err
    assert not db.exists()


def test_a_failed_run_on_an_existing_index_keeps_it(vault):
    root, db = vault
    bad = write(db.parent / "bad.json", "{oops")
    assert cli("index", bad, "--db", db)[0] == 3
    assert db.exists()
    rc, out, _ = cli("search", "apple", "--db", db, "--json")
    assert rc == 0 and json.loads(out)["hits"]


def test_ctrl_c_in_a_first_run_leaves_nothing(tmp_path, monkeypatch):
    from kgsearch.indexer import run as run_mod

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(run_mod, "run_steps", ctrl_c)
    root = tmp_path / "v"
    write(root / "a.md", "# A\nalpha\n")
    db = tmp_path / "i.db"
    rc, _, err = cli("index", root, "--db", db)
    assert rc == 130, err
    assert not db.exists()


# ---------------------------------------------------------------------------- empty index files
def empty_index(tmp_path) -> Path:
    """A schema with nothing committed: what a first run killed with -9 leaves."""
    from kgsearch.store.db import Index

    db = tmp_path / "empty.db"
    Index.open(db).close()
    return db


@pytest.mark.parametrize("kind", ["zero-byte", "schema only"])
@pytest.mark.parametrize("command", [["search", "x"], ["why", "x", "y"], ["show", "y"], ["context", "x"],
                                     ["stats"]])
def test_an_empty_or_zero_byte_index_is_exit_4_naming_the_fix(tmp_path, kind, command):
    if kind == "zero-byte":
        db = tmp_path / "zero.db"
        db.write_bytes(b"")
    else:
        db = empty_index(tmp_path)
    rc, out, err = cli(*command, "--db", db)
    assert rc == 4, (out, err)
    line = one_error_line(err)
    assert str(db) in line and "doctor --rebuild" in line and "kgsearch index" in line
    assert "upgrade" not in line


def test_mcp_on_an_empty_index_says_so(tmp_path):
    from kgsearch.mcp.server import Server

    res = Server(str(empty_index(tmp_path))).call("search", {"query": "x"})
    assert res["isError"] and "no index run" in res["content"][0]["text"]


def test_index_fills_an_empty_or_zero_byte_file(tmp_path):
    root = write(tmp_path / "v" / "a.md", "# A\nalpha\n").parent
    for db in (empty_index(tmp_path), tmp_path / "zero.db"):
        if db.name == "zero.db":
            db.write_bytes(b"")
        assert cli("index", root, "--db", db, "-q")[0] == 0
        rc, out, _ = cli("search", "alpha", "--db", db, "--json")
        assert rc == 0 and json.loads(out)["hits"]


# ---------------------------------------------------------------------------- no silent skips
SKIPPED = {
    "nul.md": b"# Title\nsome text\x00more\n",
    "nul.py": b"x = 1\x00\n",
    "nul.txt": b"plain\x00text\n",
    "utf16.md": "# Hello\nunicode text\n".encode("utf-16-le"),       # no byte-order mark (with one: indexed)
    "utf32.txt": "plain words\n".encode("utf-32"),                   # FF FE 00 00: not UTF-16's mark
    "random.md": bytes((i * 7919 + 13) % 256 for i in range(3000)),
}


def test_every_skipped_file_is_one_warning_line_and_counted(tmp_path):
    root = tmp_path / "v"
    write(root / "ok.md", "# Fine\nfine text\n")
    for name, data in SKIPPED.items():
        (root / name).write_bytes(data)
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")       # no loader: not a warning
    db = tmp_path / "i.db"
    rc, _, err = cli("index", root, "--db", db)
    assert rc == 0, err
    warned = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    for name in SKIPPED:
        mine = [ln for ln in warned if str(root / name) in ln]
        assert len(mine) == 1, (name, err)
        assert "skipped" in mine[0]
    assert len(warned) == len(SKIPPED)
    assert f"skipped: {len(SKIPPED)} file(s) that are not text" in err
    rc, out, _ = cli("index", root, "--db", db, "--json")
    assert json.loads(out)["skipped"]["binary"] == len(SKIPPED)


def test_a_folder_of_only_skipped_files_names_them(tmp_path):
    root = tmp_path / "v"
    (root).mkdir()
    (root / "random.md").write_bytes(SKIPPED["random.md"])
    rc, _, err = cli("index", root, "--db", tmp_path / "i.db")
    assert rc == 0
    assert f"warning: {root / 'random.md'}" in err


# ---------------------------------------------------------------------------- hostile sizes
def test_a_huge_line_is_cut_at_read_time_with_one_warning(tmp_path):
    from kgsearch.ingest.common import MAX_LINE_CHARS, read_text

    p = tmp_path / "one.md"
    big = "word " * (MAX_LINE_CHARS // 2)                       # 2.5x the cap, one line
    p.write_text("# Title\n" + big + "\nlast line\n" + "é" * (MAX_LINE_CHARS + 7) + "\n")
    text, warnings = read_text(p)
    lines = text.split("\n")
    assert lines[0] == "# Title" and lines[2] == "last line"
    assert len(lines[1]) == MAX_LINE_CHARS and big.startswith(lines[1])
    assert lines[3] == "é" * len(lines[3]) and MAX_LINE_CHARS // 2 - 1 <= len(lines[3]) <= MAX_LINE_CHARS
    assert len(warnings) == 1 and f"{p}:2:" in warnings[0] and "2 lines" in warnings[0]


def test_a_huge_node_is_cut_with_a_warning_naming_it(tmp_path):
    from kgsearch.indexer.load import MAX_NODE_CHARS

    root = tmp_path / "v"
    para = ("lorem ipsum dolor sit amet " * 40 + "\n") * (MAX_NODE_CHARS // 1000 + 50)   # many short lines
    write(root / "big.md", "# Big\n" + para + "\nthe unmistakable tail words\n")
    db = tmp_path / "i.db"
    rc, out, err = cli("index", root, "--db", db, "--json")
    assert rc == 0
    rep = json.loads(out)
    assert any("md:big" in w and f"{MAX_NODE_CHARS:,}" in w for w in rep["warnings"]), rep["warnings"]
    with sqlite3.connect(db) as c:
        from kgsearch.store.textcodec import register
        register(c)
        n = c.execute("SELECT length(kgtext(text)) FROM nodes WHERE key = 'md:big'").fetchone()[0]
    assert n <= MAX_NODE_CHARS
    rc, out, _ = cli("search", "unmistakable", "--db", db, "--json", "--channels", "bm25")
    assert rc == 0 and not json.loads(out)["hits"]                         # documented: the tail is cut


def test_a_single_line_note_far_over_the_caps_stays_within_a_memory_bound(tmp_path):
    """A 24 MB note on one line (size cap raised): before the caps the run peaked at 323 MB
    without vectors (a 20 MB one with vectors: 594 MB); the line cap keeps the loader's copy at
    100,000 bytes."""
    root = tmp_path / "v"
    root.mkdir()
    with open(root / "line.md", "w") as fh:
        fh.write("# Big\n")
        for i in range(400_000):
            fh.write(f"w{i % 5003} lorem ipsum dolor sit amet consectetur adipiscing ")
        fh.write("\n")
    assert (root / "line.md").stat().st_size > 20_000_000
    code = ("import sys\nfrom kgsearch.cli import main\nrc = main(sys.argv[1:])\n"
            "print([int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0] // 1024)\n"
            "sys.exit(rc)\n")
    r = subprocess.run([sys.executable, "-c", code, "index", str(root), "--db", str(tmp_path / "i.db"),
                        "--max-file-size", "64", "--no-embed"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) < 200, r.stdout                       # MB; ~600 before
    assert "a line of" in r.stderr or "lines longer than" in r.stderr



def cut_lines(data: bytes, cap: int) -> tuple[bytes, list[int]]:
    """The reference of read_text's line cap, on the whole text at once: every line of UTF-8
    ``data`` longer than ``cap`` bytes cut to its first ``cap`` (no character split at the cut),
    and the numbers of the lines cut."""
    from kgsearch.ingest import common

    lines, cut = [], []
    for n, line in enumerate(data.split(b"\n"), 1):
        if len(line) > cap:
            piece = bytearray(line[:cap])
            del piece[len(piece) - common._partial_tail(piece, 0):]
            line = bytes(piece)
            cut.append(n)
        lines.append(line)
    return b"\n".join(lines), cut

def test_read_text_equals_cutting_every_line_of_the_whole_file(tmp_path, monkeypatch):
    """The block-wise reader against the obvious reference (split the whole file, cut each long
    line, drop a character split at the cut), for random bytes (valid and broken UTF-8) and
    random block sizes, so lines and characters straddle blocks."""
    import random

    from kgsearch.ingest import common

    rng = random.Random(24)
    for trial in range(400):
        data = bytes(rng.choice(b"ab\n\xc3\xa9\xe2\x82\xac ") for _ in range(rng.randint(0, 2000)))
        cap = rng.randint(1, 40)
        monkeypatch.setattr(common, "_BLOCK", rng.randint(1, 150))
        p = tmp_path / f"t{trial}.txt"
        p.write_bytes(data)
        got, warnings = common.read_text(p, cap)
        kept, cut = cut_lines(data, cap)
        assert got == common.decode(kept, str(p))[0], trial
        assert [w for w in warnings if "a line of" in w] == ([w for w in warnings if f"{p}:{cut[0]}: a line of" in w]
                                                             if cut else [])


def test_greedy_modularity_stops_at_a_work_budget_deterministically():
    """A star (one note linking to L missing notes) costs greedy modularity O(L ** 2): the hub's
    row moves at every merge (a 20,000-link note's first index spent its whole 120 s budget
    there). The work budget counts heap entries pushed, so it stops at the same merge on any
    machine."""
    import numpy as np

    from kgsearch.graph.kernels.communities import CommunityTimeout, greedy_modularity
    from kgsearch.graph.kernels.csr import Graph

    leaves = 1500
    star = Graph.from_edges(np.zeros(leaves, dtype=np.int64), np.arange(1, leaves + 1), np.ones(leaves),
                            num_nodes=leaves + 1)
    for _ in range(2):
        with pytest.raises(CommunityTimeout, match="after 382 merges"):      # the same merge every time
            greedy_modularity(star, max_work=500_000)
    small = Graph.from_edges(np.zeros(300, dtype=np.int64), np.arange(1, 301), np.ones(300), num_nodes=301)
    assert greedy_modularity(small, max_work=2_000_000).max() == 0         # within the budget: the whole star


def test_a_note_with_thousands_of_links_is_indexed_without_spending_the_time_budget(tmp_path):
    """(bench/reliability_costs.py times the 20,000-link note: 125 s before, see the README.)"""
    from kgsearch.graph.stored.scores import cnm_work_budget

    root = tmp_path / "v"
    write(root / "hub.md", "# Hub\n" + "\n".join(f"- [[note {i}]]" for i in range(5000)) + "\n")
    db = tmp_path / "i.db"
    rc, out, err = cli("index", root, "--db", db, "--json", "--no-embed")
    assert rc == 0, err
    rep = json.loads(out)
    info = rep["steps"]["graph"]
    assert info["communities"].startswith("skipped: greedy modularity passed its work budget")
    assert cnm_work_budget(20000) < 20000 ** 2 // 20             # far below the star's L**2 / 2 pushes


def test_names_that_are_not_utf8_are_skipped_with_one_line_each(tmp_path, capsys):
    """A file or folder whose name is not UTF-8 (bytes on Linux) stopped the whole run with
    'internal error UnicodeEncodeError ... surrogates not allowed' and no index."""
    import os

    from kgsearch.cli import main

    root = tmp_path / "r"
    root.mkdir()
    base = os.fsencode(root)
    with open(base + b"/bad\xff\xfename.md", "wb") as fh:
        fh.write(b"# Bad\nzebra one\n")
    os.mkdir(base + b"/dir\xe9")
    with open(base + b"/dir\xe9/inner.md", "wb") as fh:
        fh.write(b"# Inner\nzebra two\n")
    (root / "good.md").write_text("# Good\nzebra three\n", encoding="utf-8")
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert main(["index", str(root), "--db", str(db)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert f"warning: {root}/bad\\xff\\xfename.md: the name is not valid UTF-8; skipped (rename it to index it)" in err
    assert f"warning: {root}/dir\\xe9: the name is not valid UTF-8; skipped (rename it to index it)" in err
    with sqlite3.connect(db) as c:
        assert [r[0] for r in c.execute("SELECT path FROM files")] == [str(root / "good.md")]
    # named on the command line: one line, exit 3, nothing written
    assert main(["index", os.fsdecode(base + b"/bad\xff\xfename.md"), "--db", str(db)]) == 3
    assert capsys.readouterr().err == (f"error: {root}/bad\\xff\\xfename.md: the path is not valid UTF-8 (the index "
                                       f"stores paths as text); rename it\n")


def test_json_nested_100000_deep_is_one_line_everywhere(tmp_path, capsys):
    """'[' * 100000 raised RecursionError: an internal error for a config file, a dead request
    in `serve`, and the MCP stdio server died (no answer to the requests that followed)."""
    import io

    from kgsearch.cli import main
    from kgsearch.config import load_config
    from kgsearch.errors import DataError
    from kgsearch.mcp.stdio import serve
    from kgsearch.serve.holder import Holder
    from kgsearch.serve.server import App

    deep = "[" * 100_000
    root = tmp_path / "r"
    root.mkdir()
    (root / "deep.json").write_text(deep, encoding="utf-8")
    (root / "deep.jsonl").write_text('{"node_id": "a"}\n' + deep + "\n", encoding="utf-8")
    (root / "ok.md").write_text("# Ok\n\nzebra\n", encoding="utf-8")
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert main(["index", str(root), "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert "deep.json: invalid JSON: nested too deeply to read" in err
    assert "deep.jsonl:2: invalid JSON: nested too deeply to read" in err
    assert "Traceback" not in err and "RecursionError" not in err
    cfg = tmp_path / "config.json"
    cfg.write_text(deep, encoding="utf-8")
    with pytest.raises(DataError, match="config.json: JSON nested too deeply to read"):
        load_config(cfg)
    # serve: 400 naming the body
    h = Holder(str(db))
    try:
        st, _, payload = App({"i": h}, None).handle("POST", "/api/search", {"content-type": "application/json"},
                                                    deep.encode())
    finally:
        h.close()
    assert st == 400 and json.loads(payload)["error"].startswith("the request body is JSON nested too deeply")
    # MCP stdio: a JSON-RPC parse error, and the server answers what follows
    lines = [deep, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})]
    out = io.BytesIO()
    assert serve(str(db), io.BytesIO("\n".join(lines).encode() + b"\n"), out) == 0
    answers = [json.loads(x) for x in out.getvalue().decode().splitlines()]
    assert answers[0]["error"] == {"code": -32700, "message": "parse error: JSON nested too deeply to read"}
    assert answers[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_lone_surrogate_escapes_are_stored_as_replacement_characters(tmp_path, capsys):
    """A KG JSON string ``"\\ud800"`` or a Python docstring ``"\\udc00"`` (valid JSON, valid Python)
    decodes to a lone surrogate, which SQLite cannot bind: the whole run stopped with 'internal
    error UnicodeEncodeError ... surrogates not allowed', exit 1 and no index. Such a character is
    written as U+FFFD with one warning naming the file; the other files are indexed."""
    from kgsearch.cli import main

    root = tmp_path / "r"
    write(root / "n.jsonl", '{"id": "s1", "name": "lone \\ud800 name", "type": "thing", "description": '
                            '"text \\udc00 zebra", "extra": {"k\\ud801": ["v\\udfff"]}}\n'
                            '{"source": "s1", "target": "s2\\ud802", "type": "rel\\ud803"}\n'
                            '{"id": "s2\\ud802", "name": "two", "type": "thing"}\n')
    write(root / "m.py", 'def f():\n    """doc \\udc00 zebra"""\n    return 1\n')
    write(root / "good.md", "# Good\nzebra three\n")
    (root / "w.json").write_bytes('{"nodes": [{"id": "w1", "name": "wide \\udbff", "type": "thing"}]}'.encode("utf-16"))
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert main(["index", str(root), "--db", str(db), "--no-embed"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {root / 'w.json'}: lone surrogate" in err
    assert f"warning: {root / 'n.jsonl'}: lone surrogate" in err
    assert f"warning: {root / 'm.py'}: lone surrogate" in err
    with sqlite3.connect(db) as c:
        assert {r[0] for r in c.execute("SELECT path FROM files")} == {str(root / f) for f in ("n.jsonl", "m.py", "good.md", "w.json")}
        assert c.execute("SELECT name FROM nodes WHERE key='kg:s1'").fetchone()[0] == "lone \ufffd name"
        assert c.execute("SELECT count(*) FROM edges WHERE type='rel\ufffd' AND dst IS NOT NULL").fetchone()[0] == 1
    assert main(["search", "zebra", "--db", str(db), "--json", "--no-cache"]) == 0
    keys = {h["key"] for h in json.loads(capsys.readouterr().out)["hits"]}
    assert {"kg:s1", "py:m.f", "md:good"} <= keys


# ---------------------------------------------------------------- indexed text in index-time messages, as written
def _stored_setting(db):
    with sqlite3.connect(db) as c:
        (raw,) = c.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        c.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps({**json.loads(raw), "a\\b": 1}),))
    c.close()


@pytest.mark.parametrize("name, text, says", [
    ("a.md", "---\ntitle: A\nnot yaml \\ here\n---\n# A\nalpha\n",
     "a.md:3: front matter line not understood, skipped: 'not yaml \\ here'; "),
    (".kgsearchignore", "x\\y[z-a]\n", ".kgsearchignore:1: bad ignore pattern 'x\\y[z-a]' ("),
    ("a.x\\y", "alpha\n", "a.x\\y: kgsearch has no loader for '.x\\y' files; read as plain text"),   # named
    (None, None, "warning: setting 'a\\b' stored in the index is not a setting of this kgsearch; dropped"),
])
def test_index_messages_quote_indexed_text_as_written(tmp_path, name, text, says):
    """A front matter line, an ignore pattern, a file's extension and a setting stored in the
    index came back with repr in index-time messages: a backslash doubled."""
    root, db = tmp_path / "v", tmp_path / "i.db"
    write(root / "b.md", "# B\nbravo\n")
    if name is None:
        assert cli("index", root, "--db", db, "-q")[0] == 0
        _stored_setting(db)
    else:
        write(root / name, text)
    _, _, err = cli("index", root / name if name and name.startswith("a.x") else root, "--db", db)
    assert says in err, err
