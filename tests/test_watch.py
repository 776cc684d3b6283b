"""``kgsearch watch``: the inotify binding, the polling scanner, the debounced loop on both paths
(an edit, a new file, a delete, a rename become searchable), the index lock (the watcher waits
and never indexes while another run holds it), a root that goes away and comes back, and the
command line end to end (SIGTERM, SIGINT, kill -9 then a catch-up start).

No wall-clock asserts: every wait is for a condition, with a generous timeout."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index
from kgsearch.watch import WatchOptions, Watcher
from kgsearch.watch import inotify as ino
from kgsearch.watch.poll import PollScanner
from kgsearch.watch.sources import InotifySource, PollSource
from kgsearch.watch.tree import Root, WatchSpec, folders, fs_type, index_companions, remote_fs

TIMEOUT = 90.0
NO_EMBED = IndexOptions(settings={"embed": False})
HAS_INOTIFY = ino.available()
needs_inotify = pytest.mark.skipif(not HAS_INOTIFY, reason="no inotify on this system (the polling tests still run)")


def wait_for(cond, what: str, timeout: float = TIMEOUT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def vault(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\n\nThe first note.\n")
    (root / "sub" / "b.md").write_text("# Beta\n\nThe second note.\n")
    return root


def files(db) -> dict[str, int]:
    with Index.open(db, readonly=True) as ix:
        return dict(ix.conn.execute("SELECT path, size FROM files"))


def has_word(db, word: str) -> bool:
    with Index.open(db, readonly=True) as ix:
        return ix.conn.execute("SELECT 1 FROM nodes WHERE kgtext(text) LIKE ?", (f"%{word}%",)).fetchone() is not None


# --------------------------------------------------------------------------- pieces
def test_parse_events_reads_every_record_of_a_buffer():
    import struct

    raw = b"".join(struct.pack("iIII", wd, mask, cookie, len(name)) + name for wd, mask, cookie, name in
                   [(3, ino.IN_MOVED_FROM, 7, b"old.md\0\0"), (3, ino.IN_MOVED_TO, 7, b"new.md\0\0"),
                    (4, ino.IN_CREATE | ino.IN_ISDIR, 0, b"dir\0"), (5, ino.IN_IGNORED, 0, b"")])
    evs = ino.parse_events(raw)
    assert [(e.wd, e.mask, e.cookie, e.name) for e in evs] == [
        (3, ino.IN_MOVED_FROM, 7, "old.md"), (3, ino.IN_MOVED_TO, 7, "new.md"),
        (4, ino.IN_CREATE | ino.IN_ISDIR, 0, "dir"), (5, ino.IN_IGNORED, 0, "")]


def test_folders_follow_the_walk_rules(tmp_path):
    root = vault(tmp_path)
    for d in (".git/objects", "node_modules/x", "build", "venv2", "skipme", "keep/deeper"):
        (root / d).mkdir(parents=True)
    (root / "venv2" / "pyvenv.cfg").write_text("")
    (root / ".kgsearchignore").write_text("skipme/\n")
    got = [Path(p).relative_to(root).as_posix() for p in folders(Root(str(root), True))]
    assert got == [".", "keep", "keep/deeper", "sub"]


def test_folders_follow_a_bang_pattern_as_the_walk_does(tmp_path):
    root = vault(tmp_path)
    for d in (".git/objects", "build/lib", "dist"):
        (root / d).mkdir(parents=True)
    (root / ".kgsearchignore").write_text("!build/\n!.git/\n")
    got = [Path(p).relative_to(root).as_posix() for p in folders(Root(str(root), True))]
    assert got == [".", "build", "build/lib", "sub"]


def test_relevant_names_and_the_index_files_are_ignored(tmp_path):
    root = tmp_path / "r"
    db = root / "idx.db"
    spec = WatchSpec([Root(str(root), True)], index_companions(str(db)))
    r = str(root)
    assert spec.relevant(r, "note.md", False) and spec.relevant(r, "mod.py", False)
    assert spec.relevant(r, ".kgsearchignore", False) and spec.relevant(r, "newdir", True)
    for name in ("idx.db", "idx.db-wal", "idx.db-shm", "idx.db.lock", ".idx.db.rebuild", ".note.md.swp", "note.md~"):
        assert not spec.relevant(r, name, False), name
    assert not spec.relevant(r, ".git", True) and not spec.relevant(r, "node_modules", True)
    assert not spec.relevant(str(tmp_path), "elsewhere.md", False)       # outside the root
    f = WatchSpec([Root(str(tmp_path / "one.json"), False)])              # a file root: that name only
    assert f.relevant(str(tmp_path), "one.json", False) and not f.relevant(str(tmp_path), "two.json", False)


def test_remote_file_systems_are_recognised_from_the_mount_table(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\n/dev/fuse /storage/emulated fuse rw 0 0\n"
                      "host:/x /mnt/nfs nfs4 rw 0 0\n/dev/sdb1 /mnt/my\\040disk ext4 rw 0 0\n")
    assert fs_type("/home/me/notes", str(mounts)) == "ext4"
    assert fs_type("/storage/emulated/0/Obsidian", str(mounts)) == "fuse"
    assert fs_type("/mnt/nfs/vault", str(mounts)) == "nfs4"
    assert fs_type("/mnt/my disk/notes", str(mounts)) == "ext4"
    assert [remote_fs(fs_type(p, str(mounts))) for p in ("/home", "/storage/emulated/0", "/mnt/nfs")] == [False, True, True]


def test_poll_scanner_costs_a_bounded_number_of_entries_per_tick_and_sees_every_change(tmp_path):
    root = tmp_path / "r"
    for d in range(6):
        (root / f"d{d}").mkdir(parents=True)
        for i in range(10):
            (root / f"d{d}" / f"n{i}.md").write_text("x")
    sc = PollScanner(WatchSpec([Root(str(root), True)]), budget=15)
    sc.first_pass()
    assert sc.folders == 7 and not sc.baseline
    calls = []
    real = os.scandir

    def counting(path):
        it = list(real(path))
        calls.append(len(it))
        return iter(it)

    os.scandir, saved = counting, os.scandir
    try:
        assert sc.tick() == []
        assert sum(calls) <= 15 + 10            # the budget, overshot by at most one folder
        (root / "d4" / "n3.md").write_text("changed, longer")
        seen = []
        for _ in range(7):                      # a whole round: every folder once
            seen += sc.tick()
        assert seen == [str(root / "d4")]
    finally:
        os.scandir = saved
    (root / "d9").mkdir()
    (root / "d9" / "new.md").write_text("y")
    seen = []
    for _ in range(8):
        seen += sc.tick()
    assert str(root) in seen and str(root / "d9") in seen     # the new folder counts as a change


def test_poll_scanner_sees_a_new_deleted_or_renamed_file_on_the_next_tick_from_its_folder_time(tmp_path):
    # budget 15: one folder of 10 files listed per tick, a round of 7 folders takes 7 ticks; a
    # file created, deleted or renamed moves its folder's time, so that folder is listed at once
    root = tmp_path / "r"
    for d in range(6):
        (root / f"d{d}").mkdir(parents=True)
        for i in range(10):
            (root / f"d{d}" / f"n{i}.md").write_text("x")
    sc = PollScanner(WatchSpec([Root(str(root), True)]), budget=15)
    sc.first_pass()
    assert sc.tick() == []
    # the folder the round-robin would list last
    last = str(root / "d5") if sc.queue[-1] != str(root / "d5") else str(root / "d4")
    ops = [lambda: (Path(last) / "new.md").write_text("y"),
           lambda: (Path(last) / "new.md").rename(Path(last) / "moved.md"),
           lambda: (Path(last) / "moved.md").unlink()]
    for op in ops:
        before = os.stat(last).st_mtime_ns
        op()
        if os.stat(last).st_mtime_ns == before:         # a coarse clock: make the move visible
            os.utime(last, ns=(before + 10**9, before + 10**9))
        assert sc.tick() == [last]
        assert sc.last_save_ns >= os.stat(last).st_mtime_ns
    # an edit in place does not move the folder's time: the round-robin still sees it
    (root / "d2" / "n3.md").write_text("changed, longer")
    seen = []
    for _ in range(7):
        seen += sc.tick()
    assert seen == [str(root / "d2")]


def test_poll_scanner_with_more_folders_than_its_budget_still_lists_files(tmp_path):
    # 7 folders, budget 3: the folder times take 3 stats a tick, the listing still gets its budget
    # (an edit in place moves no folder time: only the listing sees it)
    root = tmp_path / "r"
    for d in range(6):
        (root / f"d{d}").mkdir(parents=True)
        (root / f"d{d}" / "n.md").write_text("x")
    sc = PollScanner(WatchSpec([Root(str(root), True)]), budget=3)
    sc.first_pass()
    (root / "d3" / "n.md").write_text("changed, longer")
    seen = []
    for _ in range(7):
        seen += sc.tick()
    assert seen == [str(root / "d3")]


def test_poll_source_dates_a_change_by_its_save_not_by_the_tick_that_saw_it(tmp_path):
    root = tmp_path / "r"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.md").write_text("x")
    src = PollSource(WatchSpec([Root(str(root), True)]), interval=1.0, budget=1000)
    assert src.tick() == 0
    f = root / "d" / "a.md"
    f.write_text("changed")
    t = time.time() - 5.0
    os.utime(f, (t, t))
    os.utime(root / "d", (t - 1, t - 1))
    assert src.tick() == 1
    assert src.quiet_since(100.0) == pytest.approx(95.0, abs=0.5)    # saved 5 s before the tick
    f.write_text("again, later")
    t = time.time() + 60.0                                           # stamped in the future
    os.utime(f, (t, t))
    assert src.tick() == 1 and src.quiet_since(100.0) == 100.0
    assert src.tick() == 0 and src.quiet_since(100.0) == 100.0


@needs_inotify
def test_inotify_source_counts_relevant_events_and_watches_new_folders(tmp_path):
    root = vault(tmp_path)
    db = root / "idx.db"
    src = InotifySource(WatchSpec([Root(str(root), True)], index_companions(str(db))))
    try:
        assert src.folders == 2
        db.write_bytes(b"x")
        (root / "idx.db-wal").write_bytes(b"x")
        (root / ".a.md.swp").write_text("x")
        assert src.changes() == 0               # the index's own files and editor scratch files
        (root / "a.md").write_text("changed")
        assert src.changes() >= 1
        (root / "new" / "deep").mkdir(parents=True)
        src.changes()
        wait_for(lambda: src.folders >= 3, "the new folder to be watched")
        new_dir = root / "new"
        (new_dir / "c.md").write_text("in a new folder")
        assert src.changes() >= 1
        # an overflowed queue: the folders are listed again (one made meanwhile gets its watch) and it is a change
        (root / "unseen").mkdir()
        src.changes()
        before = src.folders
        (root / "later").mkdir()
        real = src.ino.read
        src.ino.read = lambda: [ino.Event(-1, ino.IN_Q_OVERFLOW, 0, "")]
        try:
            assert src.changes() == 1 and src.overflows == 1
        finally:
            src.ino.read = real
        assert src.folders == before + 1 and str(root / "later") in src.wds.values()
    finally:
        src.close()


# --------------------------------------------------------------------------- the loop, in this process
class Run:
    """A watcher in a thread, its events collected."""

    def __init__(self, db, paths, **opts):
        self.events: list[dict] = []
        opts.setdefault("isolate", False)
        opts.setdefault("debounce", 0.05)
        opts.setdefault("interval", 0.1)
        self.w = Watcher(str(db), [str(p) for p in paths], WatchOptions(**opts), on_event=self.events.append)
        self.t = threading.Thread(target=self.w.run, daemon=True)

    def runs(self, status="ok"):
        return [e for e in self.events if e["event"] == "run" and e["result"].status == status]

    def __enter__(self):
        self.t.start()
        wait_for(lambda: self.runs(), "the catch-up run")
        return self

    def __exit__(self, *exc):
        self.w.stop()
        self.t.join(TIMEOUT)
        assert not self.t.is_alive()


@pytest.mark.parametrize("backend", ["inotify", "poll"])
def test_watch_makes_edits_new_files_deletes_and_renames_searchable(tmp_path, backend):
    if backend == "inotify" and not HAS_INOTIFY:
        pytest.skip("no inotify on this system")
    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    with Run(db, [root], backend=backend) as run:
        kinds = {s.kind for s in run.w.sources}
        assert kinds == {backend}
        (root / "a.md").write_text("# Alpha\n\nNow about quokkas.\n")
        wait_for(lambda: has_word(db, "quokkas"), "the edit")
        (root / "sub" / "c.md").write_text("# Gamma\n\nWombats dig.\n")
        wait_for(lambda: has_word(db, "Wombats"), "the new file")
        (root / "sub" / "b.md").unlink()
        wait_for(lambda: str(root / "sub" / "b.md") not in files(db), "the delete")
        (root / "sub" / "c.md").rename(root / "c2.md")
        wait_for(lambda: str(root / "c2.md") in files(db) and str(root / "sub" / "c.md") not in files(db),
                 "the rename")
        (root / "sub").rename(root / "moved")                 # a folder renamed: its files move with it
        (root / "moved" / "d.md").write_text("numbats")       # and it is still watched under its new name
        wait_for(lambda: has_word(db, "numbats"), "a file in the renamed folder")
        assert not run.runs("error")


def test_the_catch_up_run_is_said_as_such_not_as_a_change(tmp_path):
    from kgsearch.cli.live import WatchLog

    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    with Run(db, [root], backend="poll") as run:
        first = run.runs()[0]
        assert first["changes"] == 0 and first["catch_up"] is True       # no save asked for it
        assert WatchLog.line(first).startswith("catch-up run: 0 file(s) reindexed")
        (root / "a.md").write_text("# Alpha\n\nNow about quokkas.\n")
        wait_for(lambda: has_word(db, "quokkas"), "the edit")
        wait_for(lambda: len(run.runs()) >= 2, "the run event")
        later = run.runs()[-1]
        assert later["changes"] >= 1 and later["catch_up"] is False
        assert WatchLog.line(later).startswith(f"{later['changes']} change(s): 1 file(s) reindexed")


def test_a_burst_of_saves_is_one_run(tmp_path):
    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    # a debounce far longer than the burst: all twenty saves land before the first run can start
    with Run(db, [root], backend="poll" if not HAS_INOTIFY else "inotify", debounce=1.0, max_wait=60) as run:
        n = len(run.runs())
        for i in range(20):
            (root / "a.md").write_text(f"# Alpha\n\nsave number {i} burstword{i}\n")
        # the run that made the last save searchable is the first since the burst began (its event comes
        # just after its commit)
        wait_for(lambda: has_word(db, "burstword19") and len(run.runs()) > n, "the last save")
        assert len(run.runs()) == n + 1
        last = run.runs()[-1]
        assert last["result"].report["files_loaded"] == 1
        assert last["changes"] >= (20 if HAS_INOTIFY else 1)         # every save was an event: one run


def test_watcher_waits_while_another_run_holds_the_lock_and_never_gives_up(tmp_path):
    from kgsearch.store.lock import IndexLock

    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    with Run(db, [root], backend="poll", retry=0.05, retry_max=0.2) as run:
        with IndexLock(db):                                 # a scheduled `kgsearch index` running
            (root / "a.md").write_text("# Alpha\n\nwritten while locked: lockword\n")
            wait_for(lambda: len([e for e in run.events if e["event"] == "busy"]) >= 3, "three busy retries")
            assert not has_word(db, "lockword")             # it never indexed under the lock
            assert run.t.is_alive()
        wait_for(lambda: has_word(db, "lockword"), "the run after the lock was released")


def test_a_root_that_goes_away_and_comes_back(tmp_path):
    import shutil

    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    with Run(db, [], backend="auto") as run:               # no PATH: the index's roots
        assert [r.path for r in run.w.roots] == [str(root)]
        shutil.rmtree(root)
        wait_for(lambda: any(e["event"] == "notice" and "missing" in e["message"] for e in run.events),
                 "the missing root to be noticed")
        wait_for(lambda: any(e["result"].report.get("roots_missing") for e in run.runs()), "a run naming it missing")
        assert files(db)                                    # its files are kept while it is away
        root.mkdir()
        (root / "back.md").write_text("it is back: returnword")
        wait_for(lambda: has_word(db, "returnword"), "the root's return to be indexed")


@pytest.mark.parametrize("given", ["folder", "symlink"])
def test_a_path_given_that_goes_away_and_comes_back(tmp_path, given):
    """`kgsearch watch PATH` (a folder, or a link to one: ~/storage/shared on a phone) whose folder
    is moved away and back, or unmounted: the watcher raised "no such file or folder" and exited 3
    at the first change after it went, as it does for a typo at the start; it now keeps its files
    and polls for the folder's return, as it does for the index's own roots."""
    root = vault(tmp_path)
    path = root
    if given == "symlink":
        path = tmp_path / "link"
        path.symlink_to(root, target_is_directory=True)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    with Run(db, [path], backend="auto") as run:
        assert [r.path for r in run.w.roots] == [str(root)]
        away = tmp_path / "away"
        root.rename(away)
        wait_for(lambda: any(e["event"] == "notice" and "missing" in e["message"] for e in run.events),
                 "the missing folder to be noticed")
        assert run.t.is_alive() and files(db)               # still watching; its files are kept
        away.rename(root)
        (root / "back.md").write_text("it is back: returnword")
        wait_for(lambda: has_word(db, "returnword"), "the folder's return to be indexed")
        assert run.t.is_alive()


def test_a_second_watcher_of_the_same_index_stops_at_once_with_75(tmp_path):
    """Two watchers of one index (a systemd unit and a forgotten `kgsearch watch &`, or the same
    one through a symlinked --db) both ran: every save was indexed twice (the second run finding
    nothing), each logging "another kgsearch index run holds the lock" in turn. The second now
    stops at once, exit 75, naming the first's pid; once the first stops, another may start."""
    from kgsearch.errors import IndexBusy

    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    link = tmp_path / "link.db"
    link.symlink_to(db)
    with Run(db, [root], backend="poll"):
        for other_db, paths in ((db, [root]), (db, []), (link, [root / "sub"])):
            second = Watcher(str(other_db), [str(p) for p in paths], WatchOptions(isolate=False))
            raised = []

            def run_second(second=second, raised=raised):
                try:
                    second.run()
                except IndexBusy as exc:
                    raised.append(exc)

            t = threading.Thread(target=run_second, daemon=True)
            t.start()
            t.join(10)
            if t.is_alive():                                  # it went on watching: stop it, then fail
                second.stop()
                t.join(TIMEOUT)
            assert raised and raised[0].code == 75, "the second watcher ran"
            assert str(raised[0]).startswith(f"another `kgsearch watch` (pid {os.getpid()}) already watches {db}")
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        r = subprocess.run([sys.executable, "-m", "kgsearch", "watch", "--db", str(db)], capture_output=True,
                           text=True, env=env, timeout=TIMEOUT)
        assert r.returncode == 75 and r.stderr.count("\n") == 1 and "already watches" in r.stderr, r.stderr
    with Run(db, [root], backend="poll") as again:            # the first stopped: its lock went with it
        assert again.runs()


def test_bad_options_and_nothing_to_watch_are_usage_errors(tmp_path):
    from kgsearch.errors import DataError, UsageError

    with pytest.raises(UsageError, match="interval"):
        Watcher(str(tmp_path / "x.db"), [], WatchOptions(interval=0))
    with pytest.raises(UsageError, match="backend"):
        Watcher(str(tmp_path / "x.db"), [], WatchOptions(backend="fanotify"))
    w = Watcher(str(tmp_path / "x.db"), [])
    with pytest.raises(UsageError, match="nothing to watch"):
        w.run()
    w = Watcher(str(tmp_path / "x.db"), [str(tmp_path / "nope")])
    with pytest.raises(DataError, match="no such file"):
        w.run()


# --------------------------------------------------------------------------- the command, end to end
def _start(db, *args):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    return subprocess.Popen([sys.executable, "-m", "kgsearch", "--db", str(db), "watch", "--json", "--debounce", "0.05",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


class Lines:
    """The watcher's JSON lines, read in a thread."""

    def __init__(self, proc):
        self.items: list[dict] = []
        self.t = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.t.start()

    def _read(self, proc):
        for line in proc.stdout:
            self.items.append(json.loads(line))

    def runs(self):
        return [e for e in self.items if e["event"] == "run" and e["result"]["status"] == "ok"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_watch_stops_cleanly_on_a_signal(tmp_path, sig):
    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    p = _start(db, str(root))
    lines = Lines(p)
    try:
        wait_for(lambda: lines.runs(), "the first run")
        (root / "a.md").write_text("cliword")
        wait_for(lambda: has_word(db, "cliword"), "the edit through the CLI")
        p.send_signal(sig)
        assert p.wait(TIMEOUT) == 0
        lines.t.join(TIMEOUT)
        assert lines.items[-1]["event"] == "stop"
        assert lines.items[0]["event"] == "start" and lines.items[0]["sources"][0]["kind"] in ("inotify", "poll")
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_cli_watch_stopped_in_the_middle_of_a_run_changes_nothing(tmp_path):
    # a catch-up run long enough to be cut short: on a fast machine the first bulk import may be
    # indexed before the signal lands, so each attempt imports four times as many notes
    for attempt, bulk in enumerate((1500, 6000, 24000)):
        base = tmp_path / f"try{attempt}"
        base.mkdir()
        root = vault(base)
        db = base / "idx.db"
        index_paths(db, [str(root)], NO_EMBED)
        before = files(db)
        for i in range(bulk):
            (root / "sub" / f"n{i:05d}.md").write_text(f"# Note {i}\n\nbody {i} of the bulk import\n")
        p = _start(db, str(root))
        lines = Lines(p)
        wait_for(lambda: lines.items, "the start line")
        kids = Path(f"/proc/{p.pid}/task/{p.pid}/children")
        if kids.exists():                                   # signal while the run's child process works
            wait_for(lambda: p.poll() is not None or kids.read_text().strip(), "the index run's child process")
        p.send_signal(signal.SIGTERM)
        assert p.wait(TIMEOUT) == 0
        lines.t.join(TIMEOUT)
        assert lines.items[-1]["event"] == "stop"
        run = [e for e in lines.items if e["event"] == "run"]
        if not (run and run[0]["result"]["status"] == "ok"):
            break
    else:
        pytest.skip("every run ended before the signal came: nothing to cut short on this machine")
    assert run[0]["result"]["status"] == "interrupted", run[0]
    assert files(db) == before                             # rolled back: the next start does the work
    with Index.open(db, readonly=True) as ix:
        assert ix.conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_cli_watch_killed_with_sigkill_loses_nothing(tmp_path):
    root = vault(tmp_path)
    db = tmp_path / "idx.db"
    index_paths(db, [str(root)], NO_EMBED)
    p = _start(db)                                         # the index's roots
    lines = Lines(p)
    wait_for(lambda: lines.runs(), "the first run")
    (root / "a.md").write_text("# Alpha\n\nkilled mid-way: killword\n")
    p.kill()                                               # kill -9, perhaps in the middle of its run
    p.wait()
    (root / "sub" / "while_dead.md").write_text("written while no watcher ran: deadword")
    with Index.open(db, readonly=True) as ix:
        assert ix.conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    p = _start(db)
    lines = Lines(p)
    try:
        wait_for(lambda: has_word(db, "killword") and has_word(db, "deadword"), "the catch-up run")
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(TIMEOUT) == 0


def test_cli_watch_usage_errors(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, "-m", "kgsearch", "--db", str(tmp_path / "none.db"), "watch"],
                       capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert r.returncode == 2 and "nothing to watch" in r.stderr and r.stderr.count("\n") == 1
    r = subprocess.run([sys.executable, "-m", "kgsearch", "--db", str(tmp_path / "none.db"), "watch",
                        str(tmp_path / "missing")], capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert r.returncode == 3 and "no such file or folder" in r.stderr


def test_polling_defaults_agree_between_the_cli_the_options_and_the_scanner():
    from kgsearch.cli import build_parser
    from kgsearch.watch.poll import DEFAULT_BUDGET

    args = build_parser().parse_args(["watch"])
    assert args.budget == WatchOptions().budget == DEFAULT_BUDGET
    assert args.interval == WatchOptions().interval and args.debounce == WatchOptions().debounce
