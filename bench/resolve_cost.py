"""What re-resolving ``member_of`` and field-call edges costs an index run (issue 26).

``EdgeResolver.resolve_members`` and ``resolve_field_calls`` resolve every such edge of the
index again in each run that loads or deletes a file (so that an incremental run equals a fresh
build). On a copy of one code-tasks-multi repository: a fresh ``kgsearch index``, three runs
with no change, three runs each after appending a new function to one file; per run the wall
time of the ``kgsearch index`` process, its time inside ``main``, its phases and the time
inside the two resolvers (``time.perf_counter`` around them, patched in the child process).

    python bench/resolve_cost.py Catch2 include/internal/catch_message.cpp /tmp/resolve_cost

One JSON line per run on stdout, all of them in ``<out>/<repo>/rows.json``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPOS = Path(os.environ["KGSEARCH_SHARED"]) / "bench/code-tasks-multi/repos"
name, edit_rel = sys.argv[1], sys.argv[2]
out_dir = Path(sys.argv[3])
src = next(REPOS.glob(name + "@*"))
work = out_dir / name
if work.exists():
    shutil.rmtree(work)
shutil.copytree(src, work / "tree", symlinks=True)
db = work / "i.db"
RUNNER = r'''
import json, sys, time
from kgsearch.indexer import edges as E
acc = {"members": 0.0, "fields": 0.0}
def wrap(name, key):
    f = getattr(E.EdgeResolver, name)
    def g(self, *a, **k):
        t = time.perf_counter()
        try:
            return f(self, *a, **k)
        finally:
            acc[key] += time.perf_counter() - t
    setattr(E.EdgeResolver, name, g)
wrap("resolve_members", "members"); wrap("resolve_field_calls", "fields")
from kgsearch.cli import main
t = time.perf_counter()
rc = main(sys.argv[1:])
acc["main"] = time.perf_counter() - t
sys.stderr.write("TIMERS " + json.dumps(acc) + "\n")
raise SystemExit(rc)
'''

def run(tag):
    t = time.perf_counter()
    p = subprocess.run(["nice", "-n", "10", sys.executable, "-c", RUNNER, "index", "--db", str(db), "--json", "-q",
                        str(work / "tree")], capture_output=True, text=True)
    wall = time.perf_counter() - t
    assert p.returncode == 0, p.stderr[-2000:]
    timers = json.loads(next(l for l in p.stderr.splitlines() if l.startswith("TIMERS "))[7:])
    rep = json.loads(p.stdout)
    row = {"repo": name, "run": tag, "wall": round(wall, 3), "main": round(timers["main"], 3),
           "members": round(timers["members"], 4), "fields": round(timers["fields"], 4),
           "phases": rep.get("phases"), "files_loaded": rep.get("files_loaded", rep.get("files_indexed"))}
    print(json.dumps(row), flush=True)
    return row

rows = [run("fresh")]
for i in range(3):
    rows.append(run(f"nochange{i+1}"))
f = work / "tree" / edit_rel
orig = f.read_text()
for i in range(3):
    # an edit that changes the file's hash and a definition: a new function appended
    add = {".go": f"\nfunc kgsPerfProbe{i}() int {{ return {i} }}\n", ".rs": f"\nfn kgs_perf_probe{i}() -> u32 {{ {i} }}\n"}
    f.write_text(orig + add.get(f.suffix, f"\nint kgs_perf_probe{i}() {{ return {i}; }}\n"))
    rows.append(run(f"onefile{i+1}"))
(work / "rows.json").write_text(json.dumps(rows, indent=1))
shutil.rmtree(work / "tree")
