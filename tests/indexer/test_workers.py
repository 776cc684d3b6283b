"""Loading in worker processes: same index as loading in-process, errors in order, no leftovers."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgsearch.errors import DataError
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest.pool import ordered_map

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

ROOT = Path(__file__).resolve().parents[2]


def _square(x):
    if x == "boom":
        raise ValueError("boom at its turn")
    return x * x


def _no_children_left():
    """True when this process has no child processes (running or unreaped) any more."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_ordered_map_matches_a_loop():
    jobs = list(range(50))
    assert list(ordered_map(_square, jobs, 3)) == [x * x for x in jobs]
    assert list(ordered_map(_square, jobs, 3, pack=lambda r: -r, unpack=lambda r: -r)) == [x * x for x in jobs]
    assert list(ordered_map(_square, [], 3)) == []
    assert _no_children_left()


def test_exception_is_raised_at_its_turn():
    got = []
    with pytest.raises(ValueError, match="boom at its turn"):
        for r in ordered_map(_square, [1, 2, 3, "boom", 5, 6, 7], 2):
            got.append(r)
    assert got == [1, 4, 9]
    assert _no_children_left()


def test_stopping_early_reaps_the_workers():
    gen = ordered_map(_square, list(range(100)), 3)
    assert next(gen) == 0
    gen.close()
    assert _no_children_left()


PARENT = os.getpid()


def _dies_in_child(x):
    if x == 7 and os.getpid() != PARENT:
        os._exit(9)                       # a worker killed mid-way (out of memory, say)
    return x + 1


def test_a_dead_worker_is_replaced_in_process():
    assert list(ordered_map(_dies_in_child, list(range(20)), 3)) == list(range(1, 21))
    assert _no_children_left()


ORPHAN_CHECK = r"""
import os, sys, time
from kgsearch.ingest.pool import ordered_map
def slow(x):
    time.sleep(0.2)
    return x
gen = ordered_map(slow, list(range(1000)), 2)
next(gen)
print(" ".join(str(p) for p in os.listdir("/proc") if p.isdigit() and
               open(f"/proc/{p}/stat").read().split(")")[-1].split()[1] == str(os.getpid())), flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_workers_exit_when_the_parent_is_killed():
    proc = subprocess.Popen([sys.executable, "-c", ORPHAN_CHECK], stdout=subprocess.PIPE, text=True,
                            cwd=str(ROOT))
    kids = [int(p) for p in proc.stdout.readline().split()]
    assert len(kids) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    def alive(pid):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            return False
        return state not in ("Z", "X")

    deadline = time.time() + 10
    while any(alive(k) for k in kids) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(alive(k) for k in kids)


def _tree(root: Path) -> None:
    for i in range(30):
        (root / "pkg").mkdir(parents=True, exist_ok=True)
        (root / "pkg" / f"m{i}.py").write_text(textwrap.dedent(f"""
            from pkg.m{(i + 1) % 30} import f{(i + 1) % 30}
            def f{i}(x):
                \"\"\"Function {i}.\"\"\"
                return f{(i + 1) % 30}(x)
            """))
        (root / "notes").mkdir(exist_ok=True)
        (root / "notes" / f"n{i}.md").write_text(f"# Note {i}\n\nSee [[n{(i + 3) % 40}]] #tag{i % 4}\n")
    (root / "kg").mkdir(exist_ok=True)
    (root / "kg" / "g.jsonl").write_text(json.dumps({"node_id": "a", "name": "A"}) + "\n")


def _dump(db):
    from indexer.test_incremental import logical
    return logical(db)


def test_index_with_workers_equals_in_process(tmp_path):
    tree = tmp_path / "tree"
    _tree(tree)
    bad = tree / "bad.json"
    bad.write_text('{"nodes": [')         # malformed: a DataError from a worker
    # named as well as walked, it is a file that failed (met only while walking it would be
    # skipped with a warning: tests/test_real_folders.py)
    paths = [str(tree), str(bad)]
    seq = index_paths(tmp_path / "seq.db", paths, IndexOptions(steps=(), workers=0, keep_going=True))
    par = index_paths(tmp_path / "par.db", paths, IndexOptions(steps=(), workers=3, keep_going=True))
    assert (par.files_loaded, par.files_failed, par.warnings) == (seq.files_loaded, seq.files_failed, seq.warnings)
    assert par.files_failed == 1
    assert _dump(tmp_path / "par.db") == _dump(tmp_path / "seq.db")
    walked = index_paths(tmp_path / "walked.db", [str(tree)], IndexOptions(steps=(), workers=3))
    assert walked.skipped["malformed"] == 1 and walked.files_failed == 0
    with pytest.raises(DataError) as a:
        index_paths(tmp_path / "seq2.db", paths, IndexOptions(steps=(), workers=0))
    with pytest.raises(DataError) as b:
        index_paths(tmp_path / "par2.db", paths, IndexOptions(steps=(), workers=3))
    assert str(a.value) == str(b.value)
    assert _no_children_left()
