"""Golden rankings: capture the top hits of a fixed set of searches, then compare two captures.

A refactor that must not change any ranking (issue 25) is checked by capturing before and
after and comparing: same keys in the same order, scores equal to 1e-6.

    python bench/golden.py capture OUT.json [--work DIR] [--queries-per-set 40]
    python bench/golden.py compare BEFORE.json AFTER.json [--md OUT.md]

What is captured (public API only: ``kgsearch.indexer.index_paths`` and ``kgsearch.search``):

* the demo knowledge base (``data/demo``) with its probe queries, default options, ``rrf``
  fusion and ``channels=bm25,dense``;
* the first ``--queries-per-set`` queries of each shared BEIR set (``../shared/bench``);
* every task of ``../shared/bench/code-tasks`` over its whole snapshot, default options and
  ``group="file"``.

Indexes are built fresh under ``--work`` (default ``bench/work/golden``) unless ``--reuse``.
Exit codes: 0 equal (compare) or captured; 1 the captures differ; 2 usage error. The capture
records the machine and commit (``meta``); ``compare --md`` writes the comparison table.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import SHARED, WORK, git_commit, machine  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]
K = 10


def _index(db: Path, paths: list[str], fmt: str | None, reuse: bool) -> None:
    from kgsearch.indexer import IndexOptions, index_paths

    if db.exists() and reuse:
        return
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(db) + suffix)
        if p.exists():
            p.unlink()
    db.parent.mkdir(parents=True, exist_ok=True)
    index_paths(db, paths, IndexOptions(fmt=fmt) if fmt else IndexOptions())


def _run(db: Path, query: str, **opts) -> list[list]:
    import kgsearch

    resp = kgsearch.search(query, db=str(db), k=opts.pop("k", K), use_cache=False, **opts)
    return [[h.key, round(float(h.score), 6)] for h in resp.hits]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def capture(out: Path, work: Path, per_set: int, reuse: bool, log) -> dict:
    runs: dict[str, list] = {}
    t0 = time.time()
    demo = ROOT / "data" / "demo"
    db = work / "demo.db"
    _index(db, [str(demo)], None, reuse)
    probes = [p["query"] for p in _jsonl(demo / "probes.jsonl")]
    for q in probes:
        runs[f"demo|default|{q}"] = _run(db, q)
        runs[f"demo|rrf|{q}"] = _run(db, q, fusion="rrf")
        runs[f"demo|bm25,dense|{q}"] = _run(db, q, channels="bm25,dense")
    log(f"demo: {len(probes)} probes")
    for s in SETS:
        folder = SHARED / s
        if not folder.is_dir():
            log(f"skip {s}: {folder} missing")
            continue
        db = work / f"{s}.db"
        _index(db, [str(folder / "corpus.jsonl")], "beir", reuse)
        queries = _jsonl(folder / "queries.jsonl")[:per_set]
        for q in queries:
            runs[f"{s}|default|{q['_id']}"] = _run(db, str(q.get("text", "")))
        log(f"{s}: {len(queries)} queries ({time.time() - t0:.0f} s)")
    tasks_root = SHARED / "code-tasks"
    if tasks_root.is_dir():
        for e in json.loads((tasks_root / "index.json").read_text()):
            tree = tasks_root / e["source_tree"]
            tdir = tasks_root / e["task_dir"]
            db = work / f"code-{tree.name}.db"
            _index(db, [str(tree)], None, reuse)
            for q in _jsonl(tdir / "queries.jsonl"):
                runs[f"code|default|{q['_id']}"] = _run(db, q["text"], k=20)
                runs[f"code|file|{q['_id']}"] = _run(db, q["text"], k=20, group="file")
            log(f"{tdir.name} ({time.time() - t0:.0f} s)")
    import kgsearch

    doc = {"meta": {"kgsearch": kgsearch.__version__, "date": time.strftime("%Y-%m-%d %H:%M"),
                    "seconds": round(time.time() - t0, 1), "searches": len(runs),
                    "results": sum(len(v) for v in runs.values()), "commit": git_commit(),
                    "machine": machine()}, "runs": runs}
    out.write_text(json.dumps(doc, indent=0, sort_keys=True))
    return doc


def compare(a: dict, b: dict, tol: float = 1e-6) -> dict:
    ra, rb = a["runs"], b["runs"]
    missing = sorted(set(ra) ^ set(rb))
    order, score = [], []
    n = 0
    for key in sorted(set(ra) & set(rb)):
        x, y = ra[key], rb[key]
        n += max(len(x), len(y))
        if [h[0] for h in x] != [h[0] for h in y]:
            order.append(key)
        elif any(abs(h[1] - g[1]) > tol for h, g in zip(x, y)):
            score.append(key)
    return {"searches": len(set(ra) & set(rb)), "results": n, "missing": missing,
            "order_differs": order, "score_differs": score,
            "equal": not (missing or order or score)}


def _label(capture: dict) -> str:
    m = capture["meta"]
    return " ".join(str(x) for x in (m.get("kgsearch"), m.get("commit"), m.get("date")) if x)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out")
    c.add_argument("--work", default=str(WORK / "golden"))
    c.add_argument("--queries-per-set", type=int, default=40)
    c.add_argument("--reuse", action="store_true", help="reuse indexes already under --work")
    d = sub.add_parser("compare")
    d.add_argument("before")
    d.add_argument("after")
    d.add_argument("--md", default=None, help="write the comparison as a Markdown table here")
    args = ap.parse_args(argv)
    if args.cmd == "capture":
        work = Path(args.work)
        if not args.reuse and work.exists():
            shutil.rmtree(work)
        doc = capture(Path(args.out), work, args.queries_per_set, args.reuse,
                      lambda m: print(m, file=sys.stderr, flush=True))
        print(json.dumps(doc["meta"]))
        return 0
    a = json.loads(Path(args.before).read_text())
    b = json.loads(Path(args.after).read_text())
    res = compare(a, b)
    print(json.dumps({k: (v if not isinstance(v, list) else len(v)) for k, v in res.items()}))
    for k in res["missing"][:10] + res["order_differs"][:10] + res["score_differs"][:10]:
        print("differs:", k, file=sys.stderr)
    if args.md:
        md = ["| before | after | searches | results compared | missing | order differs | score differs | equal |",
              "|---|---|---|---|---|---|---|---|",
              f"| {_label(a)} | {_label(b)} | {res['searches']} | {res['results']} | {len(res['missing'])} | "
              f"{len(res['order_differs'])} | {len(res['score_differs'])} | {res['equal']} |"]
        Path(args.md).write_text("\n".join(md) + "\n")
    return 0 if res["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
