"""What a field filter costs a query (issue 28: filtered p50 <= 1.2x unfiltered p50).

    python bench/filters.py --corpus DIR [--queries FILE] [--work DIR]   # indexes DIR once
    python bench/filters.py --db PATH --queries FILE [--runs 3] [-k 10] [--out filters]

The corpus is ``../shared/tools/make_scale_corpus.py 100000 DIR --seed 0`` (its queries are
``DIR.queries100.json``); the index is built in ``--work`` (default bench/work/filters) unless
``--db`` names one. The filters are picked from the index so that each cuts differently: the
commonest kind (a broad set), a rare kind (a narrow one), one file's path (narrow), everything but
that file (``-path:``), the language, a modification day and the root (the whole index: the pure
cost of the mask), and two together. Each query runs unfiltered and with every filter in turn,
in one process (``Engine.search``, k hits, no result cache), one untimed pass first, then
``--runs`` timed passes interleaved so the machine's load falls on all alike; p50/p95 per
filter and the ratio of p50s (filtered / unfiltered, same run). Also how often the filtered
query brought back ``k`` hits when its set holds ``k`` nodes. Load averages are recorded before
and after: timings on a shared machine are noisy; compare the ratios. Writes
``bench/results/<out>.json`` and ``.md``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, WORK, git_commit, loadavg, log, machine  # noqa: E402


def pick_filters(ix) -> list[tuple[str, list[str]]]:
    """(label, filter words) that cut the index in different ways."""
    import os

    kinds = ix.conn.execute("SELECT kind, count(*) c FROM nodes GROUP BY kind ORDER BY c DESC").fetchall()
    big = kinds[0][0]
    rare = next((k for k, c in reversed(kinds) if c >= 20), kinds[-1][0])
    f = ix.conn.execute("SELECT path, root, loader, mtime_ns FROM files WHERE nodes > 0 ORDER BY path LIMIT 1").fetchone()
    rel = f[0][len(f[1]) + 1:] if f[0].startswith(f[1] + "/") else f[0]
    low = ix.conn.execute("SELECT min(mtime_ns) FROM files").fetchone()[0]
    day = dt.datetime.fromtimestamp(low / 1e9).date().isoformat()
    roots = ix.conn.execute("SELECT path, label FROM roots ORDER BY position").fetchall()
    root = roots[0][1] or os.path.basename(roots[0][0].rstrip("/"))
    return [(f"commonest kind ({big})", [f"kind:{big}"]),
            (f"rare kind ({rare})", [f"kind:{rare}"]),
            ("one file", [f"path:{rel}"]),
            ("all but one file", [f"-path:{rel}"]),
            ("language (all)", [f"lang:{f[2]}"]),
            ("modified since (all)", [f"modified:>={day}"]),
            ("root (all)", [f"root:{root}"]),
            ("kind and -path", [f"kind:{big}", f"-path:{rel}"])]


def run(db: Path, queries: list[str], runs: int, k: int) -> dict:
    from kgsearch.query.engine import Engine
    from kgsearch.query.filters import allowed_ids, parse_filters
    from kgsearch.query.options import SearchOptions
    from kgsearch.store.db import Index

    ix = Index.open(db, readonly=True)
    eng = Engine(ix)
    nodes = ix.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    specs = pick_filters(ix)
    sizes = {label: int(len(allowed_ids(ix, parse_filters(words)))) for label, words in specs}
    opts = SearchOptions(k=k, feedback=False)
    variants = [("unfiltered", None)] + [(label, words) for label, words in specs]
    times: dict[str, list[float]] = {label: [] for label, _ in variants}
    graph_ms: dict[str, list[float]] = {label: [] for label, _ in variants}
    set_ms: dict[str, list[float]] = {label: [] for label, _ in specs}
    full_k: dict[str, list[bool]] = {label: [] for label, _ in specs}
    load_before = loadavg()
    for q in queries:                                   # untimed pass: page cache, vector cache
        for label, words in variants:
            eng.search(q, opts.but(filters=words))
    for r in range(runs):
        for q in queries:
            for label, words in variants:
                t = time.perf_counter()
                resp = eng.search(q, opts.but(filters=words))
                times[label].append((time.perf_counter() - t) * 1000)
                graph_ms[label].append(resp.timings_ms.get("graph", 0.0))
                if words is not None and r == 0:
                    t = time.perf_counter()
                    allowed_ids(ix, parse_filters(words), eng.graph())
                    set_ms[label].append((time.perf_counter() - t) * 1000)
                if r == 0 and words is not None:
                    full_k[label].append(len(resp.hits) >= min(k, sizes[label]))
    load_after = loadavg()
    ix.close()
    base = statistics.median(times["unfiltered"])
    rows = []
    for label, words in variants:
        ts = sorted(times[label])
        p50 = statistics.median(ts)
        rows.append({"filter": label, "words": " ".join(words or []), "set": sizes.get(label, nodes),
                     "p50_ms": round(p50, 2), "p95_ms": round(ts[int(0.95 * (len(ts) - 1))], 2),
                     "ratio_p50": round(p50 / base, 3),
                     "graph_stage_p50_ms": round(statistics.median(graph_ms[label]), 2),
                     "set_p50_ms": round(statistics.median(set_ms[label]), 2) if words else None,
                     "k_back": round(sum(full_k[label]) / len(full_k[label]), 3) if words else None})
    return {"db": str(db), "nodes": nodes, "queries": len(queries), "runs": runs, "k": k, "rows": rows,
            "worst_ratio": max(r["ratio_p50"] for r in rows[1:]), "load_before": load_before,
            "load_after": load_after}


def markdown(res: dict) -> str:
    lines = [f"# Field filters: cost per query ({res['nodes']:,} nodes)", "",
             f"{res['queries']} queries x {res['runs']} timed runs, k={res['k']}, one process, `Engine.search` "
             f"(no result cache), unfiltered and every filter interleaved per query. Ratio = filtered p50 / "
             f"unfiltered p50 in the same run (the issue-28 bound is 1.2). k back = share of queries whose "
             f"filtered answer had k hits (the set holds k or more). Load average before "
             f"{res['load_before']}, after {res['load_after']} (2 shared cores: absolute times are noisy, "
             f"compare ratios).", "",
             "| filter | words | nodes in set | p50 ms | p95 ms | ratio p50 | set ms (p50) | graph stage ms (p50) | k back |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        kb = "-" if r["k_back"] is None else f"{r['k_back']:.2f}"
        lines.append(f"| {r['filter']} | `{r['words'] or '-'}` | {r['set']:,} | {r['p50_ms']:.1f} | "
                     f"{r['p95_ms']:.1f} | {r['ratio_p50']:.2f} | "
                     f"{'-' if r['set_p50_ms'] is None else format(r['set_p50_ms'], '.2f')} | "
                     f"{r['graph_stage_p50_ms']:.1f} | {kb} |")
    lines += ["", "set ms: computing the filters' node set alone (`allowed_ids`, warm: the per-generation file "
                  "layout already read). graph stage ms: the graph stage of the same searches; a filter "
                  "whose nodes are graph hubs (many edges each) makes that stage costlier on its own "
                  "candidates, whatever the filter costs.",
              "", f"Worst ratio: **{res['worst_ratio']:.2f}**. Machine: {res['machine']['cpu']}, "
                  f"{res['machine']['cores']} cores; commit {res['commit']}; {res['date']}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, default=None, help="an index to measure (default: build one from --corpus)")
    ap.add_argument("--corpus", type=Path, default=None, help="a make_scale_corpus.py folder to index")
    ap.add_argument("--queries", type=Path, default=None, help="queries JSON (default CORPUS.queries100.json)")
    ap.add_argument("--work", type=Path, default=WORK / "filters")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--max-queries", type=int, default=100)
    ap.add_argument("--out", default="filters", help="results name under bench/results (default filters)")
    a = ap.parse_args(argv)
    if a.db is None and a.corpus is None:
        ap.error("give --db or --corpus")
    db = a.db
    if db is None:
        from kgsearch.indexer import index_paths

        a.work.mkdir(parents=True, exist_ok=True)
        db = a.work / f"{a.corpus.name}.db"
        if not db.exists():
            log(f"indexing {a.corpus} into {db}")
            index_paths(db, [str(a.corpus)])
    qfile = a.queries or (a.corpus.parent / f"{a.corpus.name}.queries100.json" if a.corpus else None)
    if qfile is None:
        ap.error("give --queries with --db")
    queries = [q["text"] if isinstance(q, dict) else str(q) for q in json.loads(qfile.read_text())][:a.max_queries]
    res = run(db, queries, a.runs, a.k)
    res.update(machine=machine(), commit=git_commit(), date=time.strftime("%Y-%m-%d %H:%M"))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{a.out}.json").write_text(json.dumps(res, indent=1) + "\n")
    (RESULTS / f"{a.out}.md").write_text(markdown(res))
    log(f"worst ratio {res['worst_ratio']:.2f} (filtered p50 / unfiltered p50); wrote {RESULTS / a.out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
