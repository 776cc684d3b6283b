"""`kgsearch search` from a fresh process with the index evicted from the page cache, this
checkout against another one, alternating on the same index.

    python bench/cold_cli.py --db bench/work/scale/index-1000000.db \
        --queries bench/work/scale/corpus-1000000.queries100.json \
        [--before DIR] [--runs 8] [--tag NAME]

Each run evicts the database (and its WAL) with ``posix_fadvise(DONTNEED)`` as bench/scale.py's
``cli`` step does (Python, numpy and the bytecode stay cached), then times ``python -m kgsearch
search Q --db DB -k 10 --no-cache -q`` on the next of the corpus's queries; then the same
query again warm. ``--before DIR``: a directory holding another checkout's ``kgsearch/`` and
``data/`` (``git archive REV | tar -x -C DIR``), run from that directory (``python -m``
imports from the current directory), one run of each alternating. Writes
bench/results/<--name>.{json,md} (default ``cold_cli_1m``; results added under ``--tag``).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale as sc  # noqa: E402
from _common import RESULTS, ROOT, git_commit, loadavg, machine  # noqa: E402


def once(cwd: Path, db: Path, q: str, env: dict) -> float:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "kgsearch", "search", q, "--db", str(db), "-k", "10", "--no-cache",
                        "-q"], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise SystemExit(f"kgsearch search failed in {cwd}: {p.stderr.decode()[-400:]}")
    return round((time.perf_counter() - t) * 1000, 1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--before", type=Path, help="another checkout's directory (kgsearch/ and data/)")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--tag", default="run")
    ap.add_argument("--name", default="cold_cli_1m", help="result file name under bench/results")
    args = ap.parse_args(argv)
    qs = [q["text"] for q in json.loads(args.queries.read_text())]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)          # (as installed: bytecode cached)
    env.pop("PYTHONPATH", None)
    sides = {"this": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    files = [args.db, Path(str(args.db) + "-wal")]
    for cwd in sides.values():
        once(cwd, args.db, qs[0], env)                # (bytecode written, Python warm)
    out = {name: {"cold_ms": [], "warm_ms": [], "load": []} for name in sides}
    for i in range(args.runs):
        for name, cwd in sides.items():
            q = qs[(10 + i) % len(qs)]
            out[name]["load"].append(loadavg()[:1])
            sc.evict(files)
            out[name]["cold_ms"].append(once(cwd, args.db, q, env))
            out[name]["warm_ms"].append(once(cwd, args.db, q, env))
    for r in out.values():
        r["cold_median_ms"] = statistics.median(r["cold_ms"])
        r["warm_median_ms"] = statistics.median(r["warm_ms"])
    rec = {"db": str(args.db), "runs": args.runs, "machine": machine(), "code": git_commit(),
           "date": time.strftime("%Y-%m-%d %H:%M"), "sides": out}
    RESULTS.mkdir(parents=True, exist_ok=True)
    jf = RESULTS / f"{args.name}.json"
    data = json.loads(jf.read_text()) if jf.exists() else {}
    data[args.tag] = rec
    jf.write_text(json.dumps(data, indent=1))
    lines = ["# `kgsearch search` in a fresh process, index evicted (`python bench/cold_cli.py`)", "",
             "| tag | code | side | cold median ms | warm median ms | cold runs | load (1 min) |", "|---|---|---|---|---|---|---|"]
    for tag, r in data.items():
        for name, s in r["sides"].items():
            lines.append(f"| {tag} | {r['code'] if name == 'this' else 'before'} | {name} | {s['cold_median_ms']:.0f} | "
                         f"{s['warm_median_ms']:.0f} | {', '.join(f'{x:.0f}' for x in s['cold_ms'])} | "
                         f"{min(x[0] for x in s['load']):.1f}-{max(x[0] for x in s['load']):.1f} |")
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
