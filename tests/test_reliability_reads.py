"""Issue 24, "nothing outside the root": every read of an indexed file at query time (``context``
for a task, ``--files`` or a diff; the MCP ``context`` tool; the library's ``build_context``)
shows the file's lines only when the file is exactly the one indexed, reached without a
symlink, inside its root; otherwise the node's indexed text. Never the target of a link swapped
in after indexing, whatever its size and mtime.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run as cli

from kgsearch.context import ContextOptions, build_context
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.mcp.server import Server
from kgsearch.query import engine_for

SOURCE = ('def secret_handler(x):\n    """Handle the request."""\n    value = x + 1\n    return value\n\n\n'
          'def caller():\n    return secret_handler(2)\n')
LEAK = "LEAKED\n" * 400                 # what must never be shown: the content behind a swapped-in link
STEPS = IndexOptions(steps=("text", "graph"))




@pytest.fixture
def proj(tmp_path):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    f = root / "src" / "mod.py"
    f.write_text(SOURCE)
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], STEPS)
    outside = tmp_path / "outside"
    outside.mkdir()
    return root, f, db, outside


def same_size_and_mtime(target: Path, like: Path) -> Path:
    """``target`` rewritten to ``like``'s size (from LEAK) and mtime: the old check's blind spot."""
    st = like.stat()
    target.write_text(LEAK[:st.st_size])
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    return target


def swap_in_link(f: Path, outside: Path) -> None:
    """Replace ``f`` by a symlink to a file outside the root with its size and mtime."""
    secret = same_size_and_mtime(outside / "secret.txt", f)
    st = f.stat()
    f.unlink()
    f.symlink_to(secret)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def library_context(db, **kw) -> str:
    eng = engine_for(str(db))
    return build_context(eng, opts=ContextOptions(budget=4000), **kw).text


def mcp_context(db, **args) -> dict:
    return Server(str(db)).call("context", dict(args, budget=4000))


def test_the_indexed_file_is_read_from_disk(proj):
    root, f, db, _ = proj
    text = library_context(db, files=[str(f)])
    assert "value = x + 1" in text                      # source lines: read from the file


@pytest.mark.parametrize("how", ["cli files", "cli task", "cli diff", "library", "mcp files", "mcp task"])
def test_a_symlink_swapped_in_after_indexing_is_never_followed(proj, how, tmp_path):
    root, f, db, outside = proj
    swap_in_link(f, outside)
    assert f.read_text() == LEAK[:len(SOURCE)]          # what a naive open would show
    if how == "cli files":
        rc, out, err = cli("context", "--files", f, "--db", db)
    elif how == "cli task":
        rc, out, err = cli("context", "secret handler request", "--db", db)
    elif how == "cli diff":
        d = tmp_path / "c.diff"
        d.write_text("--- a/src/mod.py\n+++ b/src/mod.py\n@@ -3,1 +3,1 @@\n-    value = x + 1\n+    value = x + 2\n")
        rc, out, err = cli("context", "--diff", d, "--db", db)
    elif how == "library":
        rc, out = 0, library_context(db, files=[str(f)])
    else:
        res = mcp_context(db, **({"files": [str(f)]} if how == "mcp files" else {"task": "secret handler request"}))
        rc, out = int(res["isError"]), res["content"][0]["text"]
    assert rc == 0
    assert "LEAKED" not in out
    assert "secret_handler" in out                      # the node is there: its indexed text


def test_a_folder_swapped_for_a_link_is_never_followed(proj):
    root, f, db, outside = proj
    # the file itself is a plain file, but a folder on its path is now a link leaving the root
    fake = outside / "src"
    fake.mkdir()
    same_size_and_mtime(fake / "mod.py", f)
    shutil.rmtree(root / "src")
    (root / "src").symlink_to(fake)
    for kw in ({"files": [str(f)]}, {"task": "secret handler request"}):
        text = library_context(db, **kw)
        assert "LEAKED" not in text and "secret_handler" in text


def test_same_size_and_mtime_but_other_content_is_not_shown(proj):
    root, f, db, _ = proj
    same_size_and_mtime(f, f)                           # no link at all: rewritten, mtime put back
    text = library_context(db, files=[str(f)])
    assert "LEAKED" not in text and "secret_handler" in text


def test_a_fifo_swapped_in_does_not_hang_the_read(proj):
    from kgsearch.ingest.readback import read_indexed

    root, f, db, _ = proj
    st = f.stat()
    f.unlink()
    os.mkfifo(f)
    assert read_indexed(str(f), str(root), st.st_size, st.st_mtime_ns, "0" * 32) is None
    assert "secret_handler" in library_context(db, task="secret handler request")


def test_read_indexed_checks(tmp_path):
    from kgsearch.ingest.readback import content_hash, read_indexed

    root = tmp_path / "r"
    root.mkdir()
    f = root / "a.py"
    f.write_bytes(b"x = 1\n")
    st = f.stat()
    digest = content_hash(b"x = 1\n")
    ok = (str(f), str(root), st.st_size, st.st_mtime_ns, digest)
    assert read_indexed(*ok) == b"x = 1\n"
    assert read_indexed(str(f), str(tmp_path / "other"), *ok[2:]) is None      # not inside its root
    assert read_indexed(*ok[:4], content_hash(b"x = 2\n")) is None              # other content
    assert read_indexed(*ok[:4], None) is None                                   # nothing to compare with
    assert read_indexed(str(f), str(root), st.st_size + 1, st.st_mtime_ns, digest) is None
    link = root / "b.py"
    link.symlink_to(f)
    assert read_indexed(str(link), str(root), *ok[2:]) is None                   # a link, even inside


def test_the_content_hash_is_the_indexers():
    from kgsearch.ingest.readback import content_hash
    from kgsearch.indexer.load import hash_bytes

    assert content_hash(b"abc") == hash_bytes(b"abc")


def test_mcp_context_json_never_carries_the_target(proj):
    root, f, db, outside = proj
    swap_in_link(f, outside)
    res = mcp_context(db, files=[str(f)], format="json")
    assert not res["isError"]
    assert "LEAKED" not in json.dumps(res)
