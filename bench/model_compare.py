"""Two static models side by side in one run: encode speed (10,000 texts of 500 characters from the
shared BEIR corpora, one thread, fresh subprocess per run, runs alternating, first encode in the
process) and the query process's peak RSS after loading the model and encoding 200 queries.

    python bench/model_compare.py OLD_MODEL NEW_MODEL [--runs 5] [--out bench/results/model_compare.json]

The speed ratio is the median of per-pair ratios (new / old); the 1-minute load average is
recorded before each run: on a shared machine the absolute times are noisy, the ratio less so.
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
SHARED = Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared")) / "bench"

WORKER = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
texts = json.load(open(sys.argv[3]))
t0 = time.perf_counter()
from kgsearch.embed import load_model
m = load_model(sys.argv[2])
m.encode(["warm up the loader"])
load = time.perf_counter() - t0
t0 = time.perf_counter(); c0 = time.process_time()
m.encode(texts)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"load_s": load, "encode_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, "dims": m.dims,
                  "vocab": len(m.tokenizer.vocab)}))
"""


def texts(n: int = 10000) -> list[str]:
    out = []
    for s in ("scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"):
        for line in (SHARED / s / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            out.append(((d.get("title") or "") + "\n" + (d.get("text") or ""))[:500])
    return out[:n]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    tf = Path("/tmp") / f"kgsearch-model-compare-{os.getpid()}.json"
    tf.write_text(json.dumps(texts()))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    rows: dict[str, list] = {"old": [], "new": []}
    try:
        for r in range(args.runs):
            for which in ("old", "new") if r % 2 == 0 else ("new", "old"):
                load = os.getloadavg()[0]
                out = subprocess.run([sys.executable, "-c", WORKER, str(ROOT), getattr(args, which), str(tf)],
                                     env=env, capture_output=True, text=True, check=True).stdout
                d = json.loads(out)
                d["load1"] = round(load, 2)
                rows[which].append(d)
                print(which, d, flush=True)
    finally:
        tf.unlink()
    ratio = statistics.median(n["encode_s"] / o["encode_s"] for o, n in zip(rows["old"], rows["new"]))
    summary = {k: {"encode_s_median": statistics.median(x["encode_s"] for x in v),
                   "peak_rss_mib_median": statistics.median(x["peak_rss_mib"] for x in v),
                   "load_s_median": statistics.median(x["load_s"] for x in v)} for k, v in rows.items()}
    res = {"old": args.old, "new": args.new, "runs": rows, "summary": summary, "encode_ratio_new_over_old": ratio,
           "date": time.strftime("%Y-%m-%d %H:%M")}
    print(json.dumps({"summary": summary, "ratio": ratio}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
