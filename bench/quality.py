"""Retrieval quality on every shared BEIR set: BM25 alone vs the default pipeline, with the
ablation table (each channel removed, each alone). Prints Markdown and writes
bench/results/quality.json and quality.md.

    python bench/quality.py [--sets scifact,nfcorpus,...] [--index-dir DIR] [--no-ablate] [--loso]

Same code path as `kgsearch eval DIR --json [--ablate]`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED, machine, write_results  # noqa: E402

from kgsearch.evaluate import EvalOptions, evaluate  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--no-ablate", action="store_true")
    ap.add_argument("--out-dir", default=str(RESULTS))
    ap.add_argument("--loso", action="store_true",
                    help="choose fusion settings leave-one-set-out (bench/loso.py; writes quality_loso.md/json)")
    args = ap.parse_args(argv)
    sets = args.sets.split(",")
    if args.loso:
        sys.path.insert(0, str(ROOT / "bench"))
        import loso

        loso.main(args, sets, SHARED, Path(args.out_dir))
        return
    rows = {}
    t0 = time.time()
    for s in sets:
        folder = SHARED / s
        bm = evaluate(str(folder), EvalOptions(channels="bm25", intent="default", index_dir=args.index_dir))
        full = evaluate(str(folder), EvalOptions(ablate=not args.no_ablate, index_dir=args.index_dir))
        rows[s] = {"bm25": bm["metrics"], "pipeline": full["metrics"], "channels": full["channels"],
                   "per_intent": full["per_intent"], "ablation": full.get("ablation", []),
                   "query_ms": full["query_ms"], "bm25_query_ms": bm["query_ms"], "queries": full["queries"]}
        print(f"{s}: bm25 {bm['metrics']['ndcg@10']:.4f} pipeline {full['metrics']['ndcg@10']:.4f}", flush=True)
    m = machine()
    meta = {"date": time.strftime("%Y-%m-%d"), "runs": 1, "note": "deterministic: one run",
            "seconds": round(time.time() - t0, 1)}
    md = [f"# Retrieval quality (nDCG@10), {meta['date']}", "",
          f"Machine {m['arch']} ({m['cpu']}), Python {m['python']}, numpy {m['numpy']}, SQLite {m['sqlite']}; "
          "deterministic, one run. `python bench/quality.py` reproduces it (same code as `kgsearch eval`).", "",
          "| set | queries | BM25 | pipeline | diff | recall@100 BM25 | recall@100 pipeline | pipeline p50 ms |",
          "|---|---|---|---|---|---|---|---|"]
    bsum = psum = 0.0
    for s, r in rows.items():
        b, p = r["bm25"]["ndcg@10"], r["pipeline"]["ndcg@10"]
        bsum += b
        psum += p
        md.append(f"| {s} | {r['queries']} | {b:.4f} | {p:.4f} | {p - b:+.4f} | {r['bm25']['recall@100']:.4f} | "
                  f"{r['pipeline']['recall@100']:.4f} | {r['query_ms']['p50']} |")
    n = len(rows)
    md.append(f"| **mean** | | **{bsum / n:.4f}** | **{psum / n:.4f}** | **{(psum - bsum) / n:+.4f}** | | | |")
    if any(r["ablation"] for r in rows.values()):
        runs = []
        for r in rows.values():
            for a in r["ablation"]:
                if a["run"] not in runs:
                    runs.append(a["run"])
        md += ["", "## Ablation (nDCG@10)", "", "| run | " + " | ".join(rows) + " | mean |",
               "|---" * (n + 2) + "|"]
        for run in runs:
            vals = []
            for r in rows.values():
                v = next((a["ndcg@10"] for a in r["ablation"] if a["run"] == run), None)
                vals.append(v)
            shown = [f"{v:.4f}" if v is not None else "-" for v in vals]
            got = [v for v in vals if v is not None]
            mean = f"{sum(got) / len(got):.4f}" if len(got) == n else "-"
            md.append(f"| {run} | " + " | ".join(shown) + f" | {mean} |")
    write_results("quality", {"sets": rows}, md, args.out_dir, meta=meta)
    print("\n".join(md))


if __name__ == "__main__":
    main()
