"""Peak memory of the full graph rebuild (graph step of `kgsearch index --full`) on an index.

Each run is a fresh process that runs ``graph_step.update`` with a full ChangeSet inside an
outer transaction and rolls it back, so the index is left as it was (``Index.transaction`` on
its own would commit). It reports the peak RSS (``ru_maxrss``), the peak RSS per phase
(``csr`` = read edges + CSR + blobs, ``pagerank``, ``communities``; sampled every 20 ms),
wall and CPU seconds, and a SHA-256 of every ``graph.*`` blob and meta value it wrote, so two
code versions can be checked for identical output.

    python bench/studies/graph_rebuild.py DB [--runs 2] [--before DIR] [--out NAME]

``--before DIR``: also run the kgsearch package found in DIR (e.g. ``git archive <commit>
kgsearch | tar -x -C DIR``), alternating with this checkout's; the table then shows both and
whether their outputs are identical. ``--out NAME`` writes bench/results/NAME.json (the
Markdown table is printed). Use a copy of the index: it is opened for writing.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS  # noqa: E402

CHILD = r"""
import hashlib, json, resource, sys, threading, time
sys.path.insert(0, sys.argv[2])                   # the code to measure, before an editable install
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
import kgsearch
from kgsearch.store.db import Index
from kgsearch.types import ChangeSet
from kgsearch.graph import graph_step as gs
try:
    from kgsearch.budget import fixed_mmap_threshold
    fixed_mmap_threshold()          # as `kgsearch index` does (a process setting: the library leaves it to the caller)
except ImportError:
    pass
phase = ["start"]; peaks = {}
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
def sample():
    while True:
        p = phase[0]; peaks[p] = max(peaks.get(p, 0), rss()); time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
def progress(d):
    phase[0] = d.get("step") or d.get("phase") or "?"
t0, c0 = time.perf_counter(), time.process_time()
with Index.open(sys.argv[1]) as ix:
    ix.conn.execute("BEGIN IMMEDIATE")            # outer transaction: rolled back below
    info = gs.update(ix, ChangeSet(generation=ix.generation, full=True), ix.meta_json("settings"),
                     progress=progress)
    phase[0] = "done"; wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ru = resource.getrusage(resource.RUSAGE_SELF)     # (before reading the blobs back)
    digests = {}
    for name, data in ix.conn.execute("SELECT name, data FROM blobs WHERE name LIKE 'graph.%' ORDER BY name"):
        digests[name] = hashlib.sha256(data).hexdigest()[:16]
    for k, v in ix.conn.execute("SELECT key, value FROM meta WHERE key LIKE 'graph.%' ORDER BY key"):
        digests["meta:" + k] = hashlib.sha256(str(v).encode()).hexdigest()[:16]
    ix.conn.execute("ROLLBACK")
print(json.dumps({"peak_mib": round(ru.ru_maxrss / 1024, 1), "phase_peaks_mib": {k: round(v) for k, v in peaks.items()},
                  "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "user_s": round(ru.ru_utime, 1),
                  "sys_s": round(ru.ru_stime, 1), "nodes": info.get("nodes"), "edges": info.get("edges"),
                  "communities": info.get("communities"), "code": kgsearch.__file__, "digests": digests}))
"""


def run_once(db: str, code: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, db, str(code)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--before", help="directory holding the kgsearch package to compare with")
    ap.add_argument("--out", help="write bench/results/OUT.json and OUT.md")
    a = ap.parse_args()
    codes = ([("before", Path(a.before).resolve())] if a.before else []) + [("after", ROOT)]
    runs: dict[str, list] = {k: [] for k, _ in codes}
    for i in range(a.runs):
        for label, code in codes:
            r = run_once(a.db, code)
            runs[label].append(r)
            print(label, i + 1, {k: v for k, v in r.items() if k != "digests"}, flush=True)
    same = None
    if a.before:
        da, db_ = runs["before"][0]["digests"], runs["after"][0]["digests"]
        same = {k: da.get(k) == db_.get(k) for k in sorted(set(da) | set(db_))}
        print("identical output:", all(same.values()), [k for k, v in same.items() if not v])
    if a.out:
        doc = {"db": os.path.basename(a.db), "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
               f"{platform.processor() or 'cpu?'}", "python": platform.python_version(), "runs": runs,
               "identical": same}
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"{a.out}.json").write_text(json.dumps(doc, indent=1) + "\n")
        lines = ["| code | run | peak RSS MiB | csr phase | pagerank phase | wall s | CPU s |",
                 "|---|---|---|---|---|---|---|"]
        for label, rs in runs.items():
            for i, r in enumerate(rs, 1):
                ph = r["phase_peaks_mib"]
                lines.append(f"| {label} | {i} | {r['peak_mib']:.0f} | {ph.get('csr', 0)} | {ph.get('pagerank', 0)} "
                             f"| {r['wall_s']} | {r['cpu_s']} |")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
