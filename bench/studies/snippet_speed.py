"""Snippets: the search with `pack.snippet` (matches by str.find) against `pack.snippet_reference`
(the terms' expression over the whole text), in one process, the two alternating per query.

    python bench/studies/snippet_speed.py [--runs 3] [--prose DB:QUERIES ...] [--code REPO ...]

Default indexes: NFCorpus and SciFact as `bench/multi_bench.py --work /tmp/mb` built them
(`one.db`), and three code-tasks-multi repositories as `bench/code_tasks_multi.py` built them
(bench/work/code_tasks_multi); the queries are each set's queries (the issue texts for code).
Every search runs k=10 with snippets, as `kgsearch search`, `serve` and `mcp` do; a third
column times the same search without snippets. The two snippet functions must give the same
hits, snippets included (exit 1 otherwise).

Writes bench/results/snippet_speed.json and .md.
"""
from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED, WORK, loadavg, md_table, median, pct, write_results  # noqa: E402

PROSE = [("nfcorpus", "/tmp/mb/nfcorpus/one.db"), ("scifact", "/tmp/mb/scifact/one.db")]
CODE = ["iamkun__dayjs", "fmtlib__fmt", "tokio-rs__tokio"]


def _queries(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def measure(label: str, db: str, queries: list[str], runs: int) -> dict:
    from kgsearch import pack
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    eng = Engine(Index.open(db, readonly=True))
    on = SearchOptions(k=10, snippets=True, use_cache=False)
    off = SearchOptions(k=10, snippets=False, use_cache=False)
    fast, ref = pack.snippet, pack.snippet_reference
    differ = 0
    try:
        for q in queries:                                   # warm pass, and the answers compared
            pack.snippet = ref
            a = eng.search(q, on).as_dict()["hits"]
            pack.snippet = fast
            b = eng.search(q, on).as_dict()["hits"]
            differ += a != b
            eng.search(q, off)
        times: dict[str, list[float]] = {"reference": [], "find": [], "off": []}
        for r in range(runs):
            for i, q in enumerate(queries):
                order = ("reference", "find", "off") if (i + r) % 2 == 0 else ("find", "reference", "off")
                for name in order:
                    pack.snippet = ref if name == "reference" else fast
                    t = time.perf_counter()
                    eng.search(q, off if name == "off" else on)
                    times[name].append((time.perf_counter() - t) * 1000)
    finally:
        pack.snippet = fast
    row = {"set": label, "queries": len(queries), "differ": differ}
    for name, v in times.items():
        row[f"{name}_p50"], row[f"{name}_p95"], row[f"{name}_mean"] = median(v), pct(v, 95), sum(v) / len(v)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out-dir", default=None)
    args = ap.parse_args()
    load = [loadavg()]
    rows = []
    for name, db in PROSE:
        if Path(db).is_file():
            rows.append(measure(name, db, _queries(SHARED / name / "queries.jsonl")[:300], args.runs))
    for repo in CODE:
        dbs = glob.glob(str(WORK / "code_tasks_multi" / f"{repo.split('__')[1]}@*.db"))
        if dbs:
            qs = _queries(SHARED / "code-tasks-multi" / "tasks" / repo / "queries.jsonl")
            rows.append(measure(repo, dbs[0], qs, args.runs))
    load.append(loadavg())
    md = ["# Snippets by str.find against the terms' expression (`python bench/studies/snippet_speed.py`)", "",
          f"Searches at k=10 with snippets, the two functions alternating per query, {args.runs} timed passes "
          f"after a warm pass; *off*: the same search without snippets. Load {load[0]} -> {load[-1]}.", ""]
    md += md_table(["set", "queries", "hits differ", "p50 ms reference / find / off", "mean ms reference / find / off",
                    "snippets' share of the mean: reference / find"],
                   [[r["set"], r["queries"], r["differ"],
                     f"{r['reference_p50']:.2f} / {r['find_p50']:.2f} / {r['off_p50']:.2f}",
                     f"{r['reference_mean']:.2f} / {r['find_mean']:.2f} / {r['off_mean']:.2f}",
                     f"{r['reference_mean'] - r['off_mean']:.2f} / {r['find_mean'] - r['off_mean']:.2f} ms"]
                    for r in rows])
    jp, mp = write_results("snippet_speed", {"rows": rows, "load": load}, md, args.out_dir)
    print("\n".join(md))
    return 1 if any(r["differ"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
