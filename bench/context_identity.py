"""Rankings without a session or feedback are bit-identical to the code before them.

    python bench/context_identity.py [--base f777147] [--repos flask,requests,marshmallow] [--demo-queries N]

Checks out ``--base`` (the commit before session boosts and feedback) with ``git archive`` into
bench/work/identity/base, builds the demo index and the chosen code-task snapshots with each
version (each with its own index: the schemas differ by migration 0009), and compares
``kgsearch search --json -k 20 --no-cache`` for the demo queries and the code-task issue texts:
keys, ranks, scores, channel scores, signal parts and adjustments must be equal.
Writes bench/results/context_identity.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import SHARED, WORK as _WORK, write_results  # noqa: E402

WORK = _WORK / "identity"
TASKS = SHARED / "code-tasks"
DEMO_QUERIES = ["how do I back up my notes", "why does sync fail at night", "sqlite locked", "personalized pagerank seeds",
                "git", "compare syncthing and git", "tags", "offline search on a phone", "write-ahead log readers",
                "battery optimisation"]


def kg(src: Path, *args) -> str:
    env = dict(os.environ, PYTHONPATH=str(src), KGSEARCH_STRICT="1")
    return subprocess.run([sys.executable, "-m", "kgsearch", *args], env=env, check=True, capture_output=True,
                          text=True, cwd=str(src)).stdout


def hits(src: Path, db: Path, q: str):
    d = json.loads(kg(src, "search", q, "--db", str(db), "--json", "--no-cache", "-k", "20", "-q"))
    return [(h["key"], h["rank"], h["score"], h["channels"], h["signals"], h["adjustments"]) for h in d["hits"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="f777147")
    ap.add_argument("--repos", default="flask,requests,marshmallow")
    ap.add_argument("--demo-queries", type=int, default=len(DEMO_QUERIES), help="the first N demo queries")
    a = ap.parse_args(argv)
    base = WORK / "base"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    subprocess.run(f"git -C {ROOT} archive {a.base} | tar -x -C {base}", shell=True, check=True)
    sets = [("demo", None, DEMO_QUERIES[:a.demo_queries])]
    for d in sorted((TASKS / "tasks").iterdir()):
        if any(r in d.name for r in a.repos.split(",")):
            tree = json.loads((d / "meta.json").read_text())["source_tree"]
            qs = [json.loads(ln)["text"] for ln in (d / "queries.jsonl").read_text().splitlines() if ln.strip()]
            sets.append((d.name, TASKS / "repos" / tree, qs))
    rows, total, same = [], 0, 0
    for name, folder, qs in sets:
        out = {}
        for label, src in (("base", base), ("new", ROOT)):
            db = WORK / f"{label}-{name}.db"
            for suffix in ("", "-wal", "-shm", ".lock"):
                Path(str(db) + suffix).unlink(missing_ok=True)
            kg(src, "demo", "--db", str(db), "-q") if folder is None else kg(src, "index", str(folder), "--db", str(db), "-q")
            out[label] = [hits(src, db, q) for q in qs]
        n = sum(x == y for x, y in zip(out["base"], out["new"]))
        rows.append({"set": name, "queries": len(qs), "identical": n})
        total, same = total + len(qs), same + n
        print(f"{name}: {n}/{len(qs)} identical", file=sys.stderr)
    res = {"base": a.base, "rows": rows, "queries": total, "identical": same}
    md = [f"# Rankings without session or feedback vs {a.base}", "",
          "`kgsearch search --json -k 20 --no-cache`: keys, ranks, scores, channel scores, signal parts, adjustments.", "",
          "| set | queries | identical |", "|---|---|---|"] + [f"| {r['set']} | {r['queries']} | {r['identical']} |" for r in rows]
    md += [f"| **all** | {total} | {same} |", ""]
    write_results("context_identity", res, md)
    print("\n".join(md))
    return 0 if same == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
