"""Query memory and speed at 300K / 1M nodes, before and after the sketch path (issue 16, query side).

    python bench/studies/dense_scale.py measure --tag after [--sizes 300K,1M]   # ~5 min here
    python bench/studies/dense_scale.py report                                  # table from the saved tags

``measure`` runs, in fresh processes (the children of bench/scale.py, so the figures are the
scaling benchmark's): the 100 real queries of the scaling corpus through the default pipeline
and BM25 alone (one warm pass, one timed pass: p50/p95, the process's VmHWM), and the dense
channel alone against exact float32 search (recall@10). Indexes and float vectors are read
from bench/work/scale (copies of the scaling run's, ``index-N.db``, ``vecs-N.*``,
``corpus-N.queries100.json``); results go to bench/work/densemem/TAG-*.json.

The "before" tag was measured with the code before the sketch path (commit 1b76620, indexes at
schema 11) in the same session; its dense recall is the scaling run's (the same int8 scan on
the same data: bench/results/scale.json), since schema-11 code cannot open the migrated index.
``report`` writes bench/results/dense_scale.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, WORK as _WORK  # noqa: E402

WORK = _WORK / "scale"
OUT = _WORK / "densemem"
SIZES = {"300K": 300_000, "1M": 1_000_000}


def _child(name: str, **kw) -> dict:
    cmd = [sys.executable, str(ROOT / "bench" / "scale.py"), "_child", name, json.dumps(kw)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        raise SystemExit(f"{name} child failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(tag: str, sizes: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for lab in sizes:
        n = SIZES[lab]
        db, qf = str(WORK / f"index-{n}.db"), str(WORK / f"corpus-{n}.queries100.json")
        for name, ch in (("default", None), ("bm25", "bm25")):
            r = _child("query", db=db, queries=qf, channels=ch)
            (OUT / f"{tag}-{name}-{n}.json").write_text(json.dumps(r))
            print(lab, name, "done", flush=True)
        r = _child("dense", db=db, queries=qf, cache=str(WORK / f"vecs-{n}"))
        (OUT / f"{tag}-dense-{n}.json").write_text(json.dumps(r))
        print(lab, "dense done", flush=True)


def _pct(v: list[float], p: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def _query(tag: str, name: str, n: int) -> dict | None:
    f = OUT / f"{tag}-{name}-{n}.json"
    if not f.exists():
        return None
    d = json.loads(f.read_text())
    return {"p50_ms": round(_pct(d["lat"], 50), 1), "p95_ms": round(_pct(d["lat"], 95), 1),
            "peak_rss_mb": round(d["hwm_kb"] / 1024, 1),
            "stages_p50_ms": {k: round(_pct(v, 50), 1) for k, v in d["stages"].items()}}


def _dense(tag: str, n: int) -> dict | None:
    f = OUT / f"{tag}-dense-{n}.json"
    if f.exists():
        return json.loads(f.read_text())
    if tag == "before":
        sc = json.loads((RESULTS / "scale.json").read_text())["sizes"].get(str(n), {})
        return sc.get("dense")
    return None


def report() -> None:
    data = {"machine": f"{platform.machine()}, 2 cores shared with other jobs (AMD EPYC), Python "
                       f"{platform.python_version()}", "sizes": {}}
    rows = []
    for lab, n in SIZES.items():
        d = {t: {"default": _query(t, "default", n), "bm25": _query(t, "bm25", n), "dense": _dense(t, n)}
             for t in ("before", "after")}
        data["sizes"][lab] = d
        for t in ("before", "after"):
            q, b, de = d[t]["default"], d[t]["bm25"], d[t]["dense"]
            if not q:
                continue
            st = q["stages_p50_ms"]
            rows.append(f"| {lab} | {t} | {q['peak_rss_mb']:.1f} | {q['p50_ms']:.1f} / {q['p95_ms']:.1f} | "
                        f"{st.get('dense', 0):.1f} / {st.get('graph', 0):.1f} | "
                        f"{b['peak_rss_mb']:.1f} | {b['p50_ms']:.1f} / {b['p95_ms']:.1f} | "
                        f"{de['recall_at_10']:.3f} | {de['int8_p50_ms']:.1f} |")
    md = ["## Query side at 300K / 1M nodes: before and after the sketch path "
          "(`python bench/studies/dense_scale.py`)", "",
          f"Machine: {data['machine']}. Load average 3-4 during the runs: **timings are noisy** "
          "(compare within a row pair, stage times included); peak RSS (VmHWM of the query process) is "
          "reliable. Data: the scaling corpus (make_scale_corpus.py --seed 0), its 100 real queries, one "
          "warm and one timed pass per fresh process, one run per cell. Dense recall@10 is against exact "
          "float32 cosine over every node (before: the int8 scan, streamed; after: sketch cascade "
          "8000 -> 1000 + exact int8 rescoring).", "",
          "| size | code | default peak RSS MiB | default p50 / p95 ms | dense / graph stage p50 ms | "
          "BM25-only peak RSS MiB | BM25-only p50 / p95 ms | dense recall@10 vs exact | dense channel p50 ms |",
          "|---|---|---|---|---|---|---|---|---|", *rows, ""]
    extra = []
    for mb in (150, 250):
        q = _query(f"budget{mb}", "default", 1_000_000)
        if q:
            f = json.loads((OUT / f"budget{mb}-default-1000000.json").read_text())
            data.setdefault("budget_1M", {})[mb] = {**q, "channels": f["channels"]}
            extra.append(f"| {mb} | {q['peak_rss_mb']:.1f} | {q['p50_ms']:.1f} / {q['p95_ms']:.1f} | "
                         f"{', '.join(f['channels'])} |")
    if extra:
        md += ["Default pipeline at 1M under `KGSEARCH_MEMORY_MB` (the query process, after code; "
               "`KGSEARCH_MEMORY_MB=150 PYTHONPATH=. python bench/scale.py _child query ...`): the graph "
               "arrays (100 MiB) are loaded only when they fit the headroom, otherwise the graph channels "
               "are left out and `channels_skipped` says why. This child uses the library, so the budget only "
               "sizes its structures; the CLI also sets it as RLIMIT_DATA (a search there under 250 "
               "peaked at 244 MiB with the graph).", "",
               "| KGSEARCH_MEMORY_MB | peak RSS MiB | p50 / p95 ms | channels run |", "|---|---|---|---|",
               *extra, ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "dense_scale.md").write_text("\n".join(md))
    (RESULTS / "dense_scale.json").write_text(json.dumps(data, indent=1))
    print("\n".join(md))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--tag", default="after")
    m.add_argument("--sizes", default="300K,1M")
    sub.add_parser("report")
    a = ap.parse_args(argv)
    if a.cmd == "measure":
        measure(a.tag, a.sizes.split(","))
    else:
        report()


if __name__ == "__main__":
    main()
