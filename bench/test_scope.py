"""Test scope on the code-task sets: given the gold files of each task, ``kgsearch impact
--tests`` ranks the test files; scored with the set's own ``score.py --tests`` against its BM25
reference (``baselines/tests.bm25.run.jsonl``), per set and per language, with a paired sign
test on R@10 and the tasks' P@10 / R@10.

    python bench/test_scope.py                               # code-tasks (Python)
    python bench/test_scope.py --sets code-tasks,code-tasks-multi --depth 4
    python bench/test_scope.py --work /tmp/ts                # where indexes are kept (reused)

Each repository snapshot is indexed whole (``kgsearch index <snapshot>``, default settings)
into ``<work>/<source_tree>.db`` (reused while it exists; ``--rebuild`` rebuilds). The start
set of a task is every node of its gold files (``qrels.files.tsv``); the run lists
:func:`kgsearch.explore.impact_of_nodes`'s test files (``tests=True``), repo-relative.
Tasks whose gold files are not in the index (a language kgsearch does not read yet) get an
empty list and count as misses, as in score.py.

Writes ``bench/results/test_scope.json`` and ``.md`` (``--out``), and the run files next to
the indexes.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHARED = next((p for p in (Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared")),
                            ROOT.parent.parent / "shared") if (p / "bench").is_dir()), ROOT.parent / "shared") / "bench"
KEYS = ("test_P@10", "test_R@10", "test_P@5", "test_R@5", "test_R-prec")


def _jsonl(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]


def _qrels(p: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            q, d, s = line.split("\t")
            if int(s) > 0:
                out.setdefault(q, []).append(d)
    return out


def _index(db: Path, tree: Path, rebuild: bool) -> None:
    from kgsearch.indexer import IndexOptions, index_paths

    if db.exists() and not rebuild:
        return
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    index_paths(db, [str(tree)], IndexOptions())


def run_set(set_dir: Path, work: Path, depth: int, rebuild: bool, log) -> tuple[list[dict], dict]:
    from kgsearch.explore import impact_of_nodes
    from kgsearch.store.db import Index

    run, lang = [], {}
    for e in json.loads((set_dir / "index.json").read_text()):
        tree = (set_dir / e["source_tree"]).resolve()
        tdir = set_dir / e["task_dir"]
        db = work / f"{Path(e['source_tree']).name}.db"
        t0 = time.time()
        _index(db, tree, rebuild)
        gold = _qrels(tdir / "qrels.files.tsv")
        with Index.open(db, readonly=True) as ix:
            for q in _jsonl(tdir / "queries.jsonl"):
                qid = q["_id"]
                lang[qid] = e.get("language", "Python")
                fids = [r[0] for p in gold.get(qid, [])
                        for r in ix.conn.execute("SELECT id FROM files WHERE path=?", (str(tree / p),))]
                ids = [r[0] for f in fids for r in ix.conn.execute("SELECT id FROM nodes WHERE file_id=?", (f,))]
                tests = []
                if ids:
                    res = impact_of_nodes(ix, ids, depth=depth, tests=True, limit=100)
                    tests = [t["relpath"] for t in res["tests"]]
                run.append({"qid": qid, "tests": tests})
        log(f"{set_dir.name}/{tdir.name}: {time.time() - t0:.1f} s")
    return run, lang


def score(set_dir: Path, run_file: Path, qids: set[str] | None = None) -> dict:
    """score.py --tests --json over the set (its per-task rows are recomputed here for the
    sign test and the per-language split)."""
    out = subprocess.run([sys.executable, str(set_dir / "score.py"), "--tests", "--json", str(run_file),
                          str(set_dir / "tasks")], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def per_task(set_dir: Path, run: list[dict]) -> dict[str, dict]:
    """Per task with gold tests: P@k, R@k (k 5, 10) as score.py defines them."""
    gold: dict[str, list[str]] = {}
    for t in sorted((set_dir / "tasks").iterdir()):
        gold.update(_qrels(t / "qrels.tests.tsv"))
    ranked = {r["qid"]: list(dict.fromkeys(r.get("tests") or [])) for r in run}
    out = {}
    for q, g in gold.items():
        r = ranked.get(q, [])
        gs = set(g)
        out[q] = {f"test_{m}@{k}": len(gs & set(r[:k])) / (k if m == "P" else len(gs)) for m in "PR" for k in (5, 10)}
        out[q]["test_R-prec"] = len(gs & set(r[:len(gs)])) / len(gs)
    return out


def sign_test(wins: int, losses: int) -> float:
    n = wins + losses
    if not n:
        return 1.0
    k = min(wins, losses)
    p = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * p)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="code-tasks", help="comma list of set folders under ../shared/bench")
    ap.add_argument("--work", default=str(ROOT / "bench" / "work" / "test_scope"))
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "test_scope"))
    args = ap.parse_args(argv)
    import kgsearch

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    result = {"meta": {"kgsearch": kgsearch.__version__, "date": time.strftime("%Y-%m-%d %H:%M"),
                       "machine": platform.machine(), "python": platform.python_version(), "depth": args.depth,
                       "load": Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else None},
              "sets": {}}
    rows = []
    for name in args.sets.split(","):
        set_dir = SHARED / name
        t0 = time.time()
        run, lang = run_set(set_dir, work / name, args.depth, args.rebuild, lambda m: print(m, file=sys.stderr))
        run_file = work / f"{name}.tests.run.jsonl"
        run_file.write_text("".join(json.dumps(r) + "\n" for r in run))
        base_file = set_dir / "baselines" / "tests.bm25.run.jsonl"
        ours, base = per_task(set_dir, run), per_task(set_dir, _jsonl(base_file))
        official = {"impact": score(set_dir, run_file), "bm25": score(set_dir, base_file)}
        groups = {"all": sorted(ours)}
        for q in ours:
            groups.setdefault(lang.get(q, "?"), []).append(q)
        res = {"seconds": round(time.time() - t0, 1), "score_py": official, "groups": {}}
        for g, qs in groups.items():
            if not qs:
                continue
            w = sum(ours[q]["test_R@10"] > base[q]["test_R@10"] for q in qs)
            lo = sum(ours[q]["test_R@10"] < base[q]["test_R@10"] for q in qs)
            row = {"tasks": len(qs), **{f"impact {k}": round(sum(ours[q][k] for q in qs) / len(qs), 3) for k in KEYS},
                   **{f"bm25 {k}": round(sum(base[q][k] for q in qs) / len(qs), 3) for k in KEYS},
                   "R@10 W/L": f"{w}/{lo}", "p": round(sign_test(w, lo), 3)}
            res["groups"][g] = row
            rows.append((name, g, row))
        result["sets"][name] = res
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    head = ("| set | group | tasks | P@10 impact | P@10 BM25 | R@10 impact | R@10 BM25 | R@5 impact | R@5 BM25 | "
            "R-prec impact | R-prec BM25 | R@10 W/L (p) |")
    md = [f"# Test scope: `impact --tests` vs the sets' BM25 reference", "",
          f"{result['meta']['date']}, kgsearch {result['meta']['kgsearch']}, depth {args.depth}, "
          f"load {result['meta']['load']}; tasks with at least one gold test file; score.py --tests definitions.", "",
          head, "|" + "---|" * 12]
    for name, g, r in rows:
        md.append(f"| {name} | {g} | {r['tasks']} | {r['impact test_P@10']:.3f} | {r['bm25 test_P@10']:.3f} | "
                  f"{r['impact test_R@10']:.3f} | {r['bm25 test_R@10']:.3f} | {r['impact test_R@5']:.3f} | "
                  f"{r['bm25 test_R@5']:.3f} | {r['impact test_R-prec']:.3f} | {r['bm25 test_R-prec']:.3f} | "
                  f"{r['R@10 W/L']} ({r['p']}) |")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
