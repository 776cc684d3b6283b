"""An index is one portable file: built here, copied on its own to another folder (as to a
phone), with the notes it was built from gone, and searched by a fresh Python process, it
gives exactly the same results (keys, order, scores, snippets) as in the process that built it.
The same check across CPU architectures (x86_64 <-> arm64 under emulation) is
termux/arm64-check.sh; its measured result is bench/results/arm64.md."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine, SearchOptions
from kgsearch.store.db import Index

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"
EXTRA = ["how do I back up my notes", "how do I reindex my notes every hour on my phone",
         "why does sync fail at night", "parse_headers", '"write-ahead log" AND readers', "sqlite", "x"]

SEARCH = """
import json, sys
from kgsearch.query import Engine, SearchOptions
from kgsearch.store.db import Index
db, queries = sys.argv[1], json.loads(sys.argv[2])
with Index.open(db, readonly=True) as ix:
    eng = Engine(ix)
    out = [[[h.key, h.score, h.rank, h.snippet] for h in eng.search(q, SearchOptions(k=10, use_cache=False)).hits]
           for q in queries]
print(json.dumps(out))
"""


def queries() -> list[str]:
    probes = [json.loads(line)["query"] for line in (DEMO / "probes.jsonl").read_text().splitlines() if line.strip()]
    return list(dict.fromkeys(probes + EXTRA))


def test_index_copied_alone_gives_identical_results_in_a_fresh_process(tmp_path):
    src = tmp_path / "laptop" / "demo"
    shutil.copytree(DEMO, src)
    db = tmp_path / "laptop" / "index.db"
    index_paths(db, [str(src)], IndexOptions())
    qs = queries()
    with Index.open(db, readonly=True) as ix:
        eng = Engine(ix)
        here = [[[h.key, h.score, h.rank, h.snippet] for h in eng.search(q, SearchOptions(k=10, use_cache=False)).hits]
                for q in qs]
    assert sum(len(r) for r in here) > 5 * len(qs)         # real result lists, not empty ones
    # copy the one file (no -wal/-shm beside it: the index is complete in it), then lose the notes
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    phone = tmp_path / "phone"
    phone.mkdir()
    shutil.copy2(db, phone / "index.db")
    shutil.rmtree(tmp_path / "laptop")
    r = subprocess.run([sys.executable, "-c", SEARCH, str(phone / "index.db"), json.dumps(qs)],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    there = json.loads(r.stdout)
    # json round-trips floats exactly (repr), so == is bit-for-bit on scores
    for q, a, b in zip(qs, here, there):
        assert a == b, q
