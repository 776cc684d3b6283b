"""Several indexes as one at a larger size: the query latency of two indexes searched as one
against one index of the same nodes, where the per-node work outweighs the per-index fixed cost.

    python bench/multi_scale.py N [--work /tmp/kgsearch-multi-scale] [--queries 100] [--tag TAG]

The corpus is ../shared/tools/make_scale_corpus.py's N nodes (BEIR documents, WordNet, Freebase,
typed edges), all in one index; its nodes split at random (seed 0) into index a and index b,
each keeping the edges between its own nodes (an edge across the halves is in the one index only:
typed edges never cross indexes). The union's similar_text lists are
computed with :func:`kgsearch.query.across.ensure` (as ``kgsearch link`` does: N is over what a
search computes itself) and timed. Then the first ``--queries`` judged queries of scifact and
nfcorpus (half each) run on the one index, on the two as one, and on the two as one with their
own lists (``MultiEngine(across=False)``), a warm pass and then a timed pass alternating the order.
No relevance judgements exist for this corpus: latency only. Writes
bench/results/multi_scale[_TAG].{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import watch_bench as wb  # noqa: E402


def build(work: Path, n: int) -> dict:
    from kgsearch.indexer import IndexOptions, index_paths

    corpus = work / f"corpus{n}"
    if not corpus.exists():
        subprocess.run([sys.executable, str(wb.SHARED.parent / "tools" / "make_scale_corpus.py"), str(n), str(corpus)],
                       check=True)
    shards = sorted(str(p) for p in corpus.glob("shard-*.jsonl"))
    halves = work / f"halves{n}"
    if not halves.exists():
        rng = random.Random(0)
        side, lines = {}, {"a": [], "b": []}
        rows = [json.loads(line) for f in shards for line in open(f, encoding="utf-8") if line.strip()]
        for r in rows:
            if "node_id" in r:
                side[r["node_id"]] = "a" if rng.random() < 0.5 else "b"
        for r in rows:
            if "node_id" in r:
                lines[side[r["node_id"]]].append(r)
            elif side.get(r["source"]) is not None and side.get(r["source"]) == side.get(r["target"]):
                lines[side[r["source"]]].append(r)
        for tag, part in lines.items():
            (halves / tag).mkdir(parents=True, exist_ok=True)
            (halves / tag / "nodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    parts = {"one": shards, "a": [str(halves / "a" / "nodes.jsonl")], "b": [str(halves / "b" / "nodes.jsonl")]}
    out = {}
    for tag, files in parts.items():
        db = work / f"{tag}{n}.db"
        if not db.exists():
            t = time.perf_counter()
            index_paths(db, files, IndexOptions(fmt="kg", allow_dangling=True))
            print(f"{tag}: indexed in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        out[tag] = db
    return out


def queries(k: int) -> list[str]:
    qs = []
    for s in ("scifact", "nfcorpus"):
        with open(wb.SHARED / s / "queries.jsonl", encoding="utf-8") as fh:
            qs += [json.loads(line)["text"] for _, line in zip(range(k // 2), fh)]
    return qs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("--work", default="/tmp/kgsearch-multi-scale")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    dbs = build(work, args.n)
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.query.across import cache_path, ensure
    from kgsearch.query.multi import MultiEngine
    from kgsearch.store.db import Index

    ixs = {t: Index.open(p, readonly=True) for t, p in dbs.items()}
    nodes = {t: ix.conn.execute("SELECT count(*) FROM nodes").fetchone()[0] for t, ix in ixs.items()}
    one = Engine(ixs["one"])
    multi = MultiEngine({"a": Engine(ixs["a"]), "b": Engine(ixs["b"])})
    # own opens the two indexes itself: sharing multi's Index objects shared their caches, and
    # multi searched right after own found the same query's vector already encoded
    own_ixs = [Index.open(dbs[t], readonly=True) for t in ("a", "b")]
    own = MultiEngine({"a": Engine(own_ixs[0]), "b": Engine(own_ixs[1])}, across=False)
    cache_path(multi.engines).unlink(missing_ok=True)
    t = time.perf_counter()
    _, info = ensure(multi.engines, limit=None)
    link_s = time.perf_counter() - t
    runs = {"one": one, "multi": multi, "own": own}
    opts = SearchOptions(k=10, snippets=False, use_cache=False)
    qs = queries(args.queries)
    for q in qs:
        for e in runs.values():
            e.search(q, opts)
    ms = {r: [] for r in runs}
    same = 0
    load = [wb.loadavg()]
    for i, q in enumerate(qs):
        order = ("one", "multi", "own") if i % 2 == 0 else ("own", "multi", "one")
        keys = {}
        for r in order:
            t = time.perf_counter()
            resp = runs[r].search(q, opts)
            ms[r].append((time.perf_counter() - t) * 1000)
            keys[r] = [h.key for h in resp.hits]
        same += keys["one"] == keys["multi"]
    load.append(wb.loadavg())
    res = {"what": "multi-index at scale", "n": args.n, "nodes": nodes, "queries": len(qs), "machine": wb.machine(),
           "commit": wb.commit(), "date": time.strftime("%Y-%m-%d %H:%M"), "load": load,
           "link_seconds": round(link_s, 1), "link": info, "same_top10_as_one": same}
    for r in runs:
        res[f"p50_ms_{r}"] = round(statistics.median(ms[r]), 2)
        res[f"p95_ms_{r}"] = round(wb.pct(ms[r], 95), 2)
    for r in ("multi", "own"):
        res[f"p50_ratio_{r}"] = round(res[f"p50_ms_{r}"] / res["p50_ms_one"], 3)
        res[f"p95_ratio_{r}"] = round(res[f"p95_ms_{r}"] / res["p95_ms_one"], 3)
    name = "multi_scale" + (f"_{args.tag}" if args.tag else "")
    (wb.RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1))
    md = "\n".join([
        f"# Two indexes as one at {args.n:,} nodes (`python bench/multi_scale.py {args.n}`)", "",
        f"{res['date']}, commit {res['commit']}, {res['machine']['cpu']} ({res['machine']['cores']} cores), shared "
        f"machine (load {load[0][:1]}-{load[-1][:1]}). make_scale_corpus.py's {args.n:,} nodes split at random into "
        f"index a ({nodes['a']:,} nodes) and b ({nodes['b']:,}), each with the edges inside it, all in one "
        f"({nodes['one']:,}); {len(qs)} queries "
        f"(scifact and nfcorpus), a warm pass then a timed pass alternating the order; no relevance judgements "
        f"(latency only). *multi*: the two as one with the union's similar_text lists; *own*: with each index's "
        f"own lists. The union's lists: {res['link_seconds']} s ({info.get('prose_nodes', 0):,} prose nodes, "
        f"{info.get('edges', 0):,} edges). Top 10 equal to the one index's: {same} of {len(qs)} queries.", "",
        "| | one | multi | own |", "|---|---|---|---|",
        f"| p50 ms | {res['p50_ms_one']} | {res['p50_ms_multi']} ({res['p50_ratio_multi']} x) | "
        f"{res['p50_ms_own']} ({res['p50_ratio_own']} x) |",
        f"| p95 ms | {res['p95_ms_one']} | {res['p95_ms_multi']} ({res['p95_ratio_multi']} x) | "
        f"{res['p95_ms_own']} ({res['p95_ratio_own']} x) |", ""])
    (wb.RESULTS / f"{name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
