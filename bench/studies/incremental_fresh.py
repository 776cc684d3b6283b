"""Incremental vs fresh (issue 13): index a BEIR set, remove part of its corpus, reindex in
place, build the remaining corpus fresh, and compare every query's top 10 (keys and scores)
and nDCG@10. Prints a table; saves bench/results/incremental_fresh.{json,md}.

    python bench/studies/incremental_fresh.py [--sets nfcorpus,scifact] [--out-dir DIR]

Cuts: ``half`` (every other document: the corpus statistics move, community detection reruns)
and ``1pct`` (one document in a hundred: below the 2 % at which communities rerun, so community
labels are kept and extended, the one documented approximation).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED  # noqa: E402

CUTS = {"half": lambda i: i % 2 == 1, "1pct": lambda i: i % 100 != 7}



def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

def run(folder: Path, cut: str, work: Path) -> dict:
    from kgsearch.evaluate import mean_metrics, query_metrics, read_qrels
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    keep = [line for i, line in enumerate(lines) if CUTS[cut](i)]
    (work / "live").mkdir(parents=True)
    (work / "fresh").mkdir()
    live = work / "live" / "corpus.jsonl"
    opts = IndexOptions(fmt="beir")
    live.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index_paths(work / "inc.db", [str(live)], opts)
    live.write_text("\n".join(keep) + "\n", encoding="utf-8")
    t = time.perf_counter()
    rep = index_paths(work / "inc.db", [str(live)], opts)
    inc_s = time.perf_counter() - t
    (work / "fresh" / "corpus.jsonl").write_text("\n".join(keep) + "\n", encoding="utf-8")
    index_paths(work / "fresh.db", [str(work / "fresh" / "corpus.jsonl")], opts)
    qrels = {q: r for q, r in read_qrels(folder / "qrels.tsv").items() if any(v > 0 for v in r.values())}
    queries = [(str(q["_id"]), str(q.get("text", ""))) for q in _jsonl(folder / "queries.jsonl")
               if str(q.get("_id")) in qrels]
    hits, ndcg = {}, {}
    for name in ("inc", "fresh"):
        with Index.open(work / f"{name}.db", readonly=True) as ix:
            eng = Engine(ix)
            hits[name] = {q: [(h.key, h.score) for h in eng.search(text, SearchOptions(k=10, use_cache=False)).hits]
                          for q, text in queries}
        ranked = [query_metrics([k[4:] if k.startswith("doc:") else k for k, _ in hits[name][q]], qrels[q])
                  for q, _ in queries]
        ndcg[name] = round(mean_metrics(ranked)["ndcg@10"], 4)
    differ = sum(1 for q, _ in queries if [k for k, _ in hits["inc"][q]] != [k for k, _ in hits["fresh"][q]])
    worst = max((abs(a[1] - b[1]) for q, _ in queries for a, b in zip(hits["inc"][q], hits["fresh"][q])), default=0.0)
    return {"set": folder.name, "cut": cut, "docs": len(lines), "kept": len(keep), "queries": len(queries),
            "ndcg_incremental": ndcg["inc"], "ndcg_fresh": ndcg["fresh"], "queries_differing": differ,
            "largest_score_difference": round(worst, 6), "incremental_run_s": round(inc_s, 2),
            "communities": rep.steps.get("graph", {}).get("communities")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="nfcorpus")
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args()
    rows = []
    for name in args.sets.split(","):
        folder = (SHARED / name).resolve()
        for cut in CUTS:
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(run(folder, cut, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    machine = f"{platform.machine()}, Python {platform.python_version()}"
    head = ("| set | cut | docs kept | queries | nDCG@10 incremental | nDCG@10 fresh | queries whose top 10 "
            "differ | largest score difference | communities in the incremental run |\n|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(f"| {r['set']} | {r['cut']} | {r['kept']} of {r['docs']} | {r['queries']} | {r['ndcg_incremental']} "
                   f"| {r['ndcg_fresh']} | {r['queries_differing']} | {r['largest_score_difference']} "
                   f"| {r['communities']} |\n" for r in rows)
    md = (f"# Incremental vs fresh\n\nMachine {machine}; deterministic, one run. "
          f"`python bench/studies/incremental_fresh.py --sets {args.sets}` reproduces it.\n\n" + head + body)
    print(md)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "incremental_fresh.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    (out / "incremental_fresh.md").write_text(md, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
