"""How long an agent waits for an issue's search: every code task's text searched as ``kgsearch
search`` runs it (k 10, snippets on, no cache), on the indexes the code-task benchmarks built.

    python bench/issue_latency.py [--tag T] [--out-dir bench/results]
    python bench/issue_latency.py --against OTHER_CHECKOUT [--against-dbs DIR] [--dbs DIR] --tag T

Each task's time is the least of ``--repeats`` searches in one process. With ``--against``, the
same tasks are searched by another checkout of kgsearch (its package first on ``PYTHONPATH``),
the two alternating for ``--rounds`` rounds so that the machine's load falls on both alike; each
task keeps its least time over the rounds, and the report gives p50 / p95 / max per task set and
the median of the per-task ratios. ``--dbs`` / ``--against-dbs``: folders holding the indexes
(``<repo>@<commit>.db``, as bench/code_tasks.py and bench/code_tasks_multi.py name them; default
their work folders), so that each checkout can search indexes its own index run made.
Writes ``issue_latency_<tag>.json`` and ``.md``.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import SHARED_ROOT, WORK as BENCH_WORK, git_commit, machine  # noqa: E402

SETS = {"python": "code-tasks", "multi": "code-tasks-multi"}
WORK = {"python": BENCH_WORK / "code_tasks" / "index", "multi": BENCH_WORK / "code_tasks_multi"}


def tasks(shared: Path) -> list[tuple[str, str, str]]:
    """(set, task id, repo tree name) of every task of both sets."""
    out = []
    for label, folder in SETS.items():
        root = shared / "bench" / folder / "tasks"
        for d in sorted(os.listdir(root)):
            meta = json.loads((root / d / "meta.json").read_text(encoding="utf-8"))
            tree = str(meta.get("source_tree") or meta.get("snapshot") or d)
            for line in (root / d / "queries.jsonl").read_text(encoding="utf-8").splitlines():
                if line.strip():
                    out.append((label, json.loads(line)["_id"], tree.split("@")[0].split("/")[-1]))
    return out


def child(dbs: dict[str, str], shared: Path, out: str, repeats: int) -> None:
    """Search every task in this process (the checkout first on ``sys.path``); write {task: ms}."""
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    texts = {}
    for folder in SETS.values():
        for f in glob.glob(str(shared / "bench" / folder / "tasks" / "*" / "queries.jsonl")):
            for line in Path(f).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    texts[r["_id"]] = r["text"]
    res: dict[str, float] = {}
    opened: dict[str, Engine] = {}
    for label, qid, repo in tasks(shared):
        found = sorted(glob.glob(os.path.join(dbs[label], f"{repo}@*.db")))
        if not found:
            continue
        if found[0] not in opened:
            eng = opened[found[0]] = Engine(Index.open(found[0], readonly=True))
            eng.search("warm up the caches", SearchOptions(k=10, use_cache=False))
        eng = opened[found[0]]
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            eng.search(texts[qid], SearchOptions(k=10, use_cache=False))
            best = min(best, time.perf_counter() - t)
        res[qid] = best * 1000
    Path(out).write_text(json.dumps(res), encoding="utf-8")


def run_child(checkout: str, dbs: dict[str, str], shared: Path, repeats: int, tmp: Path, name: str) -> dict:
    out = tmp / f"{name}.json"
    env = dict(os.environ, PYTHONPATH=checkout)
    subprocess.run([sys.executable, __file__, "--child", json.dumps(dbs), str(out), "--repeats", str(repeats)],
                   env=env, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def pct(v: list[float], p: float) -> float:
    v = sorted(v)
    return v[round(p * (len(v) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("DBS_JSON", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--against", help="another checkout of kgsearch to compare with, alternating")
    ap.add_argument("--dbs", help="folder of this checkout's indexes (default: the benchmarks' work folders)")
    ap.add_argument("--against-dbs", help="folder of the other checkout's indexes (default: --dbs)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tag", default="run")
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    args = ap.parse_args()
    shared = SHARED_ROOT
    if args.child:
        child(json.loads(args.child[0]), shared, args.child[1], args.repeats)
        return 0
    mine = {k: args.dbs or str(v) for k, v in WORK.items()}
    theirs = {k: args.against_dbs or mine[k] for k in WORK}
    tmp = Path(args.out_dir) / f".issue_latency_{args.tag}"
    tmp.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict]] = {"this": [], "against": []}
    t0 = time.time()
    for r in range(args.rounds):
        if args.against:
            runs["against"].append(run_child(args.against, theirs, shared, args.repeats, tmp, f"against{r}"))
        runs["this"].append(run_child(str(HERE.parent), mine, shared, args.repeats, tmp, f"this{r}"))
    sets = {}
    for label, qid, _ in tasks(shared):
        sets.setdefault(label, []).append(qid)
    best = {k: {q: min(run[q] for run in v) for q in v[0]} for k, v in runs.items() if v}
    summary = {}
    for label, ids in sets.items():
        ids = [q for q in ids if all(q in b for b in best.values())]
        s = {}
        for k, b in best.items():
            v = [b[q] for q in ids]
            s[k] = {"n": len(v), "p50": pct(v, .5), "p95": pct(v, .95), "max": max(v)}
        if "against" in best:
            s["ratio_median"] = statistics.median(best["this"][q] / best["against"][q] for q in ids)
        summary[label] = s
    meta = {"machine": machine(), "commit": git_commit(), "against": args.against, "rounds": args.rounds,
            "repeats": args.repeats, "seconds": round(time.time() - t0, 1)}
    out = Path(args.out_dir)
    (out / f"issue_latency_{args.tag}.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "per_task": best}, indent=1), encoding="utf-8")
    lines = ["# Issue-length searches: latency per code task (`python bench/issue_latency.py`)", "",
             f"{meta['machine'].get('date', '')}, commit {meta['commit']}, {meta['machine'].get('cpu', '')} "
             f"({meta['machine'].get('cores', '')} cores); each task's least time of {args.repeats} searches "
             f"(k 10, snippets, no cache) in one process, least over {args.rounds} rounds"
             + (f", alternating with `{args.against}`" if args.against else "") + ".", "",
             "| tasks | checkout | n | p50 ms | p95 ms | max ms | median ratio this / against |",
             "|---|---|---|---|---|---|---|"]
    for label, s in summary.items():
        for k in ("against", "this"):
            if k in s:
                lines.append(f"| {label} | {k} | {s[k]['n']} | {s[k]['p50']:.1f} | {s[k]['p95']:.1f} | {s[k]['max']:.1f} | "
                             + (f"{s['ratio_median']:.3f}" if k == "this" and "ratio_median" in s else "") + " |")
    (out / f"issue_latency_{args.tag}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
