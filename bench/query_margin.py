"""Default query at 1M nodes: two source trees, alternating fresh processes (issue 30's margin).

    python bench/query_margin.py --before /tmp/base [--after .] [--runs 4] [--db DB --queries Q]
        [--out bench/results/query_1m_margin]

``--before`` / ``--after`` are kgsearch source trees (e.g. ``git archive main | tar -x -C
/tmp/base``); each run is a fresh process with ``PYTHONPATH`` set to the tree and
``PYTHONHASHSEED=0`` (snippet highlighting depends on set order: with a random seed two runs of
one tree can differ in a snippet's brackets). A run is bench/scale.py's ``child_query``: open the
index read-only, one first query, one untimed warm pass, one timed pass of the 100 queries,
then VmHWM; runs alternate before/after so both see the same machine load. Besides the
timings, every run records each query's hits (id, score) and a digest of every hit field
(channels, signals, adjustments, snippet): the two trees must agree on all of them.

Writes OUT.json (every run, with load averages) and OUT.md (the table). Exit 1 when the
answers differ.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DB = "/work/scale1m/index-1000000.db"
QUERIES = "/work/scale1m/corpus-1000000.queries100.json"

CHILD = r"""
import hashlib, json, statistics, sys, time
from pathlib import Path
from kgsearch.query import Engine, SearchOptions
from kgsearch.store.db import Index

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])

db, queries = sys.argv[1], sys.argv[2]
qs = [q["text"] for q in json.loads(Path(queries).read_text())]
ix = Index.open(db, readonly=True)
eng = Engine(ix)
opts = SearchOptions(k=10, use_cache=False)
eng.search(qs[0], opts)
for q in qs:
    eng.search(q, opts)
lat, stages, hits, digest = [], {}, [], hashlib.sha256()
for q in qs:
    t = time.perf_counter()
    r = eng.search(q, opts)
    lat.append((time.perf_counter() - t) * 1000)
    for k, v in r.timings_ms.items():
        stages.setdefault(k, []).append(v)
    hits.append([[h.id, h.score] for h in r.hits])
    digest.update(json.dumps([h.as_dict() for h in r.hits], sort_keys=True, default=str).encode())
print(json.dumps({"lat": lat, "stages": {k: statistics.median(v) for k, v in stages.items()},
                  "hwm_kb": status("VmHWM"), "hits": hits, "digest": digest.hexdigest()}))
"""


def _run(tree: Path, db: str, queries: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", CHILD, db, queries], env=env, cwd=str(tree),
                         capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    lat = r.pop("lat")
    r.update(p50=statistics.median(lat), p95=sorted(lat)[int(0.95 * len(lat)) - 1], max=max(lat),
             mean=statistics.mean(lat), hwm_mib=r.pop("hwm_kb") / 1024, load=load,
             when=time.strftime("%H:%M:%S"))
    return r


STAGES = ("bm25", "dense", "candidates", "graph", "rank", "output")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="kgsearch source tree to compare against")
    ap.add_argument("--after", default=str(ROOT), help="kgsearch source tree (default: this one)")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--db", default=DB)
    ap.add_argument("--queries", default=QUERIES)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "query_1m_margin"))
    a = ap.parse_args(argv)
    trees = {"before": Path(a.before).resolve(), "after": Path(a.after).resolve()}
    runs: list[dict] = []
    for i in range(a.runs):
        for name in ("before", "after"):
            r = _run(trees[name], a.db, a.queries)
            r.update(tree=name, run=i + 1)
            runs.append(r)
            print(f"{name}-{i + 1} p50 {r['p50']:.2f} ms, VmHWM {r['hwm_mib']:.1f} MiB, load {r['load']:.2f}",
                  file=sys.stderr)
    ref = runs[0]
    same_hits = all(r["hits"] == ref["hits"] for r in runs)
    same_fields = all(r["digest"] == ref["digest"] for r in runs)
    summary = {}
    for name in ("before", "after"):
        rs = [r for r in runs if r["tree"] == name]
        summary[name] = {"p50": statistics.median(r["p50"] for r in rs),
                         "p95": statistics.median(r["p95"] for r in rs),
                         "hwm_mib_max": max(r["hwm_mib"] for r in rs),
                         "stages": {s: statistics.median(r["stages"].get(s, 0.0) for r in rs) for s in STAGES}}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    slim = [{k: v for k, v in r.items() if k != "hits"} for r in runs]
    out.with_suffix(".json").write_text(json.dumps(
        {"db": a.db, "queries": a.queries, "trees": {k: str(v) for k, v in trees.items()}, "runs": slim,
         "summary": summary, "same_top10_ids_and_scores": same_hits, "same_hit_fields": same_fields},
        indent=1) + "\n")
    lines = ["| run | when | load (1 min) | p50 / p95 / max ms | peak RSS (VmHWM) MiB | "
             + " / ".join(STAGES) + " p50 ms |", "|---|---|---|---|---|---|"]
    for r in runs:
        st = " / ".join(f"{r['stages'].get(s, 0.0):.2f}" for s in STAGES)
        lines.append(f"| {r['tree']}-{r['run']} | {r['when']} | {r['load']:.2f} | {r['p50']:.2f} / {r['p95']:.1f} / "
                     f"{r['max']:.1f} | {r['hwm_mib']:.1f} | {st} |")
    for name in ("before", "after"):
        s = summary[name]
        st = " / ".join(f"{s['stages'][x]:.2f}" for x in STAGES)
        lines.append(f"| **{name}, median of runs** | | | **{s['p50']:.2f}** / {s['p95']:.1f} / | max {s['hwm_mib_max']:.1f} "
                     f"| {st} |")
    lines.append("")
    lines.append(f"Answers: top-10 ids and scores of the 100 queries equal in every run: **{same_hits}**; "
                 f"every hit field (channels, signals, adjustments, snippet) equal: **{same_fields}**.")
    head = [f"# Default query at 1M: before / after (`python bench/query_margin.py`)", "",
            f"Index {a.db}, queries {a.queries}; before = {trees['before']}, after = {trees['after']}; "
            f"{a.runs} alternating fresh processes each (PYTHONHASHSEED=0), {time.strftime('%Y-%m-%d %H:%M')}; "
            f"Python {sys.version.split()[0]}. Each run: one first query, a warm pass, a timed pass.", ""]
    out.with_suffix(".md").write_text("\n".join(head + lines) + "\n")
    print("\n".join(lines))
    return 0 if same_hits and same_fields else 1


if __name__ == "__main__":
    sys.exit(main())
