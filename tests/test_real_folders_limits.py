"""Issue 13, bounded resources: reproductions that cost their whole limit while the defect is
there (a regex that never ends, a star graph's memory, a writer waiting for readers), kept
apart from ``test_real_folders.py`` so that file stays fast. Each is ``xfail(strict=True)``
until the defect is fixed (see that file's docstring). No test asserts a wall-clock time:
each gives the operation a generous limit (a subprocess timeout, a memory cap, a reader that
lets go after a while) and asserts it finished within it.
"""
from __future__ import annotations

import resource
import sqlite3
import subprocess
import sys
import threading

import pytest
from conftest import write

from kgsearch.cli import main


def xfail13(defect: str):
    return pytest.mark.xfail(strict=True, reason=f"issue 13: {defect}")


def test_regex_query_ends_within_its_limit(tmp_path):
    root = tmp_path / "code"
    write(root / "m.py", f"def {'a' * 40}():\n    pass\n")      # one 40-letter name: 2**40 paths
    db = tmp_path / "i.db"
    assert main(["index", str(root), "--db", str(db)]) == 0
    # (\w|\w)* passed the nested-repetition guard and backtracked exponentially inside one
    # re.search call; now it is refused (a repeat of alternatives, text/regex.py), and any
    # match that runs is stopped by a timer at the channel's budget (0.25 s); 15 s is the hard
    # limit of this test (process start and model load included)
    try:
        r = subprocess.run([sys.executable, "-m", "kgsearch", "search", r"/(\w|\w)*!/", "--db", str(db)],
                           capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("the regex search was still running after 15 s")
    assert r.returncode == 0, r.stderr


CAP_MB = 400        # address space of the index process: a phone-sized budget (baseline ~220 MB)
# Peak RSS allowed for the index process itself. Measured (VmHWM, Python 3.11, numpy 2.4.6):
# 113-115 MB for this vault, 70 MB with 600 links; the embedding model and the graph arrays
# dominate. The defect cost ~1 GB. 200 MB leaves room for other numpy/Python allocators.
RSS_BOUND_MB = 200

# The index process reports its own peak (VmHWM) on its last stderr line. ``ru_maxrss`` from
# wait4 is NOT that peak: exec records the forked parent's high-water mark in the child's
# rusage, so it was max(pytest's RSS at the fork, the index run's peak), and the test failed
# (256-257 MB) whenever the whole suite had grown pytest past the bound.
_PEAK_WRAPPER = """
import sys
from kgsearch.cli import main
try:
    rc = main(sys.argv[1:])
finally:
    with open("/proc/self/status", encoding="ascii") as fh:
        hwm = [line.split()[1] for line in fh if line.startswith("VmHWM:")]
    sys.stderr.write(f"\\npeak-rss-kb {hwm[0] if hwm else -1}\\n")
sys.exit(rc)
"""


def run_with_peak(argv: list[str], cap_bytes: int, timeout: float) -> tuple[int, float, str]:
    """(exit code, the process's own peak RSS in MB, stderr) of ``kgsearch ARGV`` run under an
    address-space cap."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    p = subprocess.Popen([sys.executable, "-c", _PEAK_WRAPPER, *argv], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, preexec_fn=limit)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"kgsearch {argv[0]} was still running after {timeout} s")
    text = err.decode("utf-8", "replace")
    peaks = [line.split()[1] for line in text.splitlines() if line.startswith("peak-rss-kb ")]
    assert peaks and int(peaks[-1]) > 0, text[-500:]
    return p.returncode, int(peaks[-1]) / 1024, text


def test_child_peak_is_its_own_not_the_parents(tmp_path):
    # the measurement itself: a parent holding 300 MB must not show in the child's peak
    # (wait4's ru_maxrss does show it: see _PEAK_WRAPPER)
    ballast = bytearray(300 << 20)
    ballast[::4096] = b"\x01" * len(ballast[::4096])
    rc, peak, err = run_with_peak(["--version"], 1 << 34, 60)
    del ballast
    assert rc == 0, err
    assert peak < 150



def test_star_graph_index_stays_within_a_memory_bound(tmp_path):
    vault = tmp_path / "vault"
    write(vault / "hub.md", "# Hub\n" + "\n".join(f"- [[missing note {i}]]" for i in range(6000)) + "\n")
    db = tmp_path / "i.db"
    # greedy_modularity merges the hub, the smallest node id, into each leaf in turn, moving
    # its whole row every time: it used to allocate a new pair slot per leaf at each merge
    # (~1 GB, ~95 s, and an out-of-memory failure under the cap); now it reuses the slots
    # (peak ~115 MB), and its work budget (graph.stored.scores.cnm_work_budget) stops the O(leaves^2)
    # merges after 2M heap entries instead of 15-40 s of them (issue 24)
    rc, peak, err = run_with_peak(["index", str(vault), "--db", str(db)], CAP_MB << 20, 300)
    assert rc == 0, err[-500:]
    assert peak < RSS_BOUND_MB, err[-500:]
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT count(*) FROM nodes WHERE kind = 'placeholder'").fetchone()[0] == 6000


def test_writer_does_not_wait_for_a_reader_snapshot(tmp_path):
    vault = tmp_path / "vault"
    write(vault / "a.md", "# A\nalpha\n")
    db = tmp_path / "i.db"
    assert main(["index", str(vault), "--db", str(db)]) == 0
    holding, release, released = threading.Event(), threading.Event(), threading.Event()

    def reader():
        c = sqlite3.connect(db, isolation_level=None)
        c.execute("BEGIN")
        c.execute("SELECT count(*) FROM nodes").fetchone()      # holds a WAL snapshot
        holding.set()
        release.wait(6)                 # a reader (a long search, a phone app) lets go later
        c.execute("COMMIT")
        c.close()
        released.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    assert holding.wait(10)
    write(vault / "b.md", "# B\nbravo\n")
    assert main(["index", str(vault), "--db", str(db)]) == 0
    finished_while_held = not released.is_set()
    release.set()
    t.join(10)
    # the run commits (readers never block it); folding the WAL back is best effort and must
    # not wait for readers: the index run returns while the reader still holds its snapshot
    assert finished_while_held
