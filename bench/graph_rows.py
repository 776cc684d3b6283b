"""Query process with the graph read per node (``graph_adj`` rows) vs the whole CSR loaded.

    python bench/graph_rows.py --db bench/work/scale/index-1000000.db \
        --queries bench/work/scale/corpus-1000000.queries100.json [--runs 2] [--out graph_rows]
    python bench/graph_rows.py --sizes 10K,100K [--runs 2] [--out graph_rows_small]

With ``--db``: the index must hold adjacency rows (a graph of ``graph_adjacency_rows`` edges or
more; an index stored before them gets them from ``kgsearch index`` after any change, or
``--full``). With ``--sizes``: for each size a scaling corpus (``make_scale_corpus.py N``, in
``bench/work/scale-rows``, reused) is indexed with ``graph_adjacency_rows=0``, so that even a
small graph stores its rows beside the CSR: the question is whether the rows alone could
serve every size (docs/DESIGN.md, "The graph's stored forms").

Each mode runs in a fresh process per run: the corpus's queries through the default pipeline
(k=10, cache off; one warm pass, one timed pass, as bench/scale.py's ``query`` child),
reporting p50/p95, the first query's time, the process's VmHWM, the graph stage's p50, and
whether the two modes return the same top 10 for every query. ``csr`` is the same code with
the rows ignored (``kgsearch.graph.context.stored_meta`` answers None in the child), so the
difference is the storage alone. Writes ``bench/results/<out>.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SHARED_ROOT, WORK, log, machine, pct, write_results  # noqa: E402


def child(mode: str, db: str, queries: str) -> dict:
    import scale

    if mode == "csr":
        from kgsearch.graph import context

        context.stored_meta = lambda ix: None
    return scale.child_query(db, queries, None)


def run(mode: str, db: str, queries: str) -> dict:
    p = subprocess.run([sys.executable, __file__, "_child", mode, db, queries], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{mode} child failed: {p.stderr[-2000:]}")
    c = json.loads(p.stdout.strip().splitlines()[-1])
    lat = c["lat"]
    return {"p50_ms": round(pct(lat, 50), 1), "p95_ms": round(pct(lat, 95), 1), "first_ms": round(c["first_ms"]),
            "peak_rss_mib": round(c["hwm_kb"] / 1024, 1),
            "graph_p50_ms": round(statistics.median(c["stages"].get("graph", [0.0])), 1), "top10": c["top10"]}


def compare(db: str, queries: str, runs: int) -> dict:
    """Both modes on one index, ``runs`` times each, alternating (load spikes hit both)."""
    from kgsearch.graph.stored.rows import stored_meta
    from kgsearch.store.db import Index

    with Index.open(db, readonly=True) as ix:
        meta = stored_meta(ix)
        if meta is None:
            raise SystemExit(f"{db} holds no adjacency rows; index it with graph_adjacency_rows=0 (or after a change)")
        shape = ix.get_array("graph.shape")
    res: dict = {"db": db, "nodes": int(shape[1]), "edges": int(shape[2]), "runs": runs, "modes": {}}
    tops = {}
    for r in range(runs):
        for mode in ("csr", "rows"):
            got = run(mode, db, queries)
            tops.setdefault(mode, got.pop("top10"))
            res["modes"].setdefault(mode, []).append(got)
            log(f"{Path(db).name} {mode} run {r + 1}: {got}")
    res["same_top10"] = sum(x == y for x, y in zip(tops["csr"], tops["rows"]))
    res["queries"] = len(tops["csr"])
    return res


def _size_index(n: int, seed: int = 0) -> tuple[str, str]:
    """A scaling corpus of ``n`` nodes indexed with rows for any graph size (built once)."""
    import scale

    from kgsearch.indexer import IndexOptions, index_paths

    work = WORK / "scale-rows"
    corpus = work / f"corpus-{n}"
    queries = work / f"corpus-{n}.queries100.json"
    if not queries.exists():
        if corpus.exists():
            shutil.rmtree(corpus)
        tool = SHARED_ROOT / "tools" / "make_scale_corpus.py"
        log(f"building the {scale.label(n)} corpus")
        subprocess.run([sys.executable, str(tool), str(n), str(corpus), "--seed", str(seed)], check=True,
                       env={**os.environ, "BENCH_DIR": str(SHARED_ROOT / "bench")})   # (queries beside it)
    db = work / f"index-{n}-rows.db"
    if not db.exists():
        log(f"indexing the {scale.label(n)} corpus with rows")
        tmp = Path(str(db) + ".tmp")
        for p in Path(work).glob(tmp.name + "*"):
            p.unlink()
        index_paths(tmp, [str(corpus)], IndexOptions(settings={"graph_adjacency_rows": 0}))
        tmp.rename(db)
        for suffix in ("-wal", "-shm", ".lock"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
    return str(db), str(queries)


def _md(results: list[dict], runs: int, m: dict) -> list[str]:
    lines = ["## Graph read per node (`graph_adj` rows) vs the whole CSR (`python bench/graph_rows.py`)", "",
             f"The corpus's queries through the default pipeline, a fresh process per run ({runs} runs per mode, "
             f"alternating); machine: {m.get('cpu', '')}, load {m.get('load')}. Timings on a shared machine: "
             "compare the modes of one index, not across tables.", "",
             "| nodes | edges | mode | run | p50 ms | p95 ms | first query ms | graph stage p50 ms | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        for mode, rs in res["modes"].items():
            for i, g in enumerate(rs):
                lines.append(f"| {res['nodes']:,} | {res['edges']:,} | {mode} | {i + 1} | {g['p50_ms']} | "
                             f"{g['p95_ms']} | {g['first_ms']} | {g['graph_p50_ms']} | {g['peak_rss_mib']} |")
    lines.append("")
    lines += [f"Same top 10 in both modes at {res['nodes']:,} nodes: {res['same_top10']} of {res['queries']} queries."
              for res in results]
    return lines


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_child":
        print(json.dumps(child(*argv[1:4])))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db")
    ap.add_argument("--queries")
    ap.add_argument("--sizes", help="build scaling corpora of these sizes (10K,100K) indexed with rows")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", default=None, help="result name (default graph_rows, or graph_rows_small with --sizes)")
    a = ap.parse_args(argv)
    if bool(a.db) == bool(a.sizes) or bool(a.db) != bool(a.queries):
        ap.error("give --db and --queries, or --sizes")
    import scale

    pairs = [(a.db, a.queries)] if a.db else [_size_index(scale.parse_size(s)) for s in a.sizes.split(",")]
    results = [compare(db, q, a.runs) for db, q in pairs]
    m = machine()
    lines = _md(results, a.runs, m)
    write_results(a.out or ("graph_rows_small" if a.sizes else "graph_rows"), {"indexes": results}, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
