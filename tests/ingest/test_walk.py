"""kgsearch.ingest.walk: files that are not regular files (a named pipe, a device) are never
opened. A FIFO named ``x.md`` in a vault hung ``kgsearch index`` forever (the binary sniff and
the loader block on a pipe nobody writes to), and so did a root that is one (``roots`` too).

Each FIFO here holds a few bytes and stays open for writing, so the code before the fix read
it (and indexed it, or blocked) instead of skipping it: the tests fail rather than hang, except
the command-line one, which a subprocess timeout bounds."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, write

from kgsearch.ingest.walk import WalkReport, walk
from kgsearch.store.roots import probe

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system")


@pytest.fixture
def fifo(tmp_path):
    """``vault/pipe.md``: a FIFO holding more than the binary sniff reads (8 KB) and held open
    for writing (never at EOF)."""
    root = tmp_path / "vault"
    write(root / "a.md", "# A\n\nbody\n")
    path = root / "pipe.md"
    os.mkfifo(path)
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    os.write(fd, b"# pipe\n" + b"text " * 2000)
    yield root, path
    os.close(fd)


def test_walk_skips_a_fifo_with_one_warning(fifo):
    root, path = fifo
    report = WalkReport()
    found = [f.rel for f in walk(root, report=report)]
    assert found == ["a.md"]
    assert report.problems == [f"{path}: not a regular file (a named pipe); skipped"]


def test_probe_does_not_open_a_fifo_root(fifo):
    _, path = fifo
    assert probe(str(path)) == "unreadable"
    assert probe(str(path.parent)) == "ok"


def test_special_file():
    from kgsearch.ingest.walk import special_file

    assert special_file("/dev/null") == "a character device"
    assert special_file(ROOT) is None and special_file(ROOT / "README.md") is None
    assert special_file(ROOT / "no such file") is None


def test_indexing_a_named_fifo_is_one_line_exit_3(fifo, tmp_path):
    _, path = fifo
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "kgsearch", "index", str(path), "--db", str(tmp_path / "i.db")],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 3
    assert p.stderr == f"error: {path}: not a regular file (a named pipe); save it to a file and index that\n"
    assert not (tmp_path / "i.db").exists() or "pipe.md" not in Path(tmp_path / "i.db").read_bytes().decode("latin-1")
