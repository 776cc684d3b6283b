"""Query process with the graph read per node (``graph_adj`` rows) vs the whole CSR loaded.

    python bench/graph_rows.py --db bench/work/scale/index-1000000.db \
        --queries bench/work/scale/corpus-1000000.queries100.json [--runs 2]

The index must hold adjacency rows (a graph of ``graph_adjacency_rows`` edges or more; an
index stored before them gets them from ``kgsearch index`` after any change, or
``--full``). Each mode runs in a fresh process per run: the corpus's queries through the
default pipeline (k=10, cache off; one warm pass, one timed pass, as bench/scale.py's
``query`` child), reporting p50/p95, the first query's time, the process's VmHWM, the graph
stage's p50, and whether the two modes return the same top 10 for every query. ``csr`` is the
same code with the rows ignored (``kgsearch.graph.context.stored_meta`` patched to None in the
child), so the difference is the storage alone. Writes bench/results/graph_rows.{json,md}.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _scale():
    spec = importlib.util.spec_from_file_location("kgsearch_bench_scale", ROOT / "bench" / "scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def child(mode: str, db: str, queries: str) -> dict:
    if mode == "csr":
        from kgsearch.graph import context

        context.stored_meta = lambda ix: None
    return _scale().child_query(db, queries, None)


def _pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def run(mode: str, db: str, queries: str) -> dict:
    p = subprocess.run([sys.executable, __file__, "_child", mode, db, queries], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{mode} child failed: {p.stderr[-2000:]}")
    c = json.loads(p.stdout.strip().splitlines()[-1])
    lat = c["lat"]
    return {"p50_ms": round(_pct(lat, 50), 1), "p95_ms": round(_pct(lat, 95), 1), "first_ms": round(c["first_ms"]),
            "peak_rss_mib": round(c["hwm_kb"] / 1024, 1),
            "graph_p50_ms": round(statistics.median(c["stages"].get("graph", [0.0])), 1), "top10": c["top10"]}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        print(json.dumps(child(*sys.argv[2:5])))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    from kgsearch.graph.stored.rows import stored_meta
    from kgsearch.store.db import Index

    with Index.open(a.db, readonly=True) as ix:
        meta = stored_meta(ix)
        if meta is None:
            raise SystemExit(f"{a.db} holds no adjacency rows; run `kgsearch index --db {a.db}` after a change")
        shape = ix.get_array("graph.shape")
    res: dict = {"machine": _scale().machine(), "db": a.db, "nodes": int(shape[1]), "edges": int(shape[2]),
                 "runs": a.runs, "modes": {}}
    tops = {}
    for r in range(a.runs):
        for mode in ("csr", "rows"):                  # (alternating, so load spikes hit both)
            got = run(mode, a.db, a.queries)
            tops.setdefault(mode, got.pop("top10"))
            res["modes"].setdefault(mode, []).append(got)
            print(mode, r + 1, got, flush=True)
    res["same_top10"] = sum(x == y for x, y in zip(tops["csr"], tops["rows"]))
    res["queries"] = len(tops["csr"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "graph_rows.json").write_text(json.dumps(res, indent=1))
    lines = ["## Graph read per node (`graph_adj` rows) vs the whole CSR (`python bench/graph_rows.py`)", "",
             f"{res['nodes']:,} nodes, {res['edges']:,} edges; {res['queries']} queries through the default "
             f"pipeline, a fresh process per run ({a.runs} runs per mode, alternating); machine: "
             f"{res['machine'].get('cpu', '')}. Same top 10 for {res['same_top10']} of {res['queries']} queries.", "",
             "| mode | run | p50 ms | p95 ms | first query ms | graph stage p50 ms | peak RSS MiB |",
             "|---|---|---|---|---|---|---|"]
    for mode, runs in res["modes"].items():
        for i, g in enumerate(runs):
            lines.append(f"| {mode} | {i + 1} | {g['p50_ms']} | {g['p95_ms']} | {g['first_ms']} | "
                         f"{g['graph_p50_ms']} | {g['peak_rss_mib']} |")
    (RESULTS / "graph_rows.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
