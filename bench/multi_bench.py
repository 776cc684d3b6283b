"""Several indexes as one: a corpus split at random into two indexes should rank like the same
corpus in one index.

    python bench/multi_bench.py [--sets scifact,nfcorpus] [--seed 0]

For each BEIR set of ../shared/bench: its documents are split at random (``--seed``) into two
halves, each indexed on its own; the whole corpus is indexed once as well (every index with the
default settings, embeddings included). Every judged query then runs on the one index
(:class:`kgsearch.query.Engine`) and on the two halves searched as one
(:class:`kgsearch.query.multi.MultiEngine`, with the union's ``similar_text`` lists:
:mod:`kgsearch.query.across`), on the two as one with each index's own lists (``own``: what the
two-index search did before those lists, ``MultiEngine(across=False)``), and also on the two halves
merged without pooled statistics (each index's own scores, put on one floor: ``naive``), for
comparison. Reported:
nDCG@10 of each, the difference with the paired sign test, and the query latency p50/p95 of the
one index and of the two as one (a warm pass, then a timed pass alternating the order per query),
with the two indexes searched in lockstep (the default: one pull over the union's lists for both),
with their own lists (``own``) and in threads (``MultiEngine(threads=True)``, each its own pull); and the seconds the first search spends computing the union's lists
(kept in ``--work``/cache, as the user's cache would keep them). Writes
bench/results/multi_index[_TAG].{json,md}.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import watch_bench as wb  # noqa: E402  (machine, commit, load, shared data)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided sign test p-value (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    p = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * p)


def build(work: Path, name: str, seed: int) -> tuple[Path, Path, Path, list, dict]:
    from kgsearch.evaluate import find_qrels, read_qrels
    from kgsearch.indexer import IndexOptions, index_paths

    src = wb.SHARED / name
    docs = [line for line in open(src / "corpus.jsonl", encoding="utf-8") if line.strip()]
    rng = random.Random(seed)
    side = [rng.random() < 0.5 for _ in docs]
    d = work / name
    parts = []
    for tag, keep in (("a", True), ("b", False)):
        p = d / tag
        p.mkdir(parents=True, exist_ok=True)
        (p / "corpus.jsonl").write_text("".join(x for x, s in zip(docs, side) if s == keep), encoding="utf-8")
        parts.append(p / "corpus.jsonl")
    dbs = {}
    for tag, corpus in (("one", src / "corpus.jsonl"), ("a", parts[0]), ("b", parts[1])):
        db = d / f"{tag}.db"
        if not db.exists():
            t = time.perf_counter()
            index_paths(db, [str(corpus)], IndexOptions(fmt="beir"))
            print(f"{name}/{tag}: indexed in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        dbs[tag] = db
    qrels = {q: r for q, r in read_qrels(find_qrels(src, None)).items() if any(v > 0 for v in r.values())}
    queries = []
    for line in open(src / "queries.jsonl", encoding="utf-8"):
        q = json.loads(line)
        if str(q["_id"]) in qrels:
            queries.append((str(q["_id"]), str(q.get("text", ""))))
    return dbs["one"], dbs["a"], dbs["b"], queries, qrels


class Naive:
    """Each index's own scores, put on one floor: what merging without pooled statistics gives."""

    def __init__(self, multi):
        self.multi = multi

    def search(self, q, opts):
        from kgsearch.query.multi import Pool

        saved = self.multi._pools
        self.multi._pools = lambda query, o, notices, parsed=None: {n: Pool(query=e.parse(query))
                                                                    for n, e in self.multi.engines.items()}
        try:
            return self.multi.search(q, opts)
        finally:
            self.multi._pools = saved


def run_set(work: Path, name: str, seed: int, max_queries: int | None, snippets: bool = False) -> dict:
    from kgsearch.evaluate import query_metrics
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.query.multi import MultiEngine
    from kgsearch.store.db import Index

    one_db, a_db, b_db, queries, qrels = build(work, name, seed)
    if max_queries:
        queries = queries[:max_queries]
    opts = SearchOptions(k=10, snippets=snippets, use_cache=False)
    # every variant opens the indexes itself: sharing Index objects shared their caches, so a
    # search of the same query by another variant just before left the query vector encoded
    # (half of multi's timed searches came after own's, a third of a millisecond less)
    ixs = [Index.open(one_db, readonly=True)]

    def pair():
        ixs.extend(Index.open(p, readonly=True) for p in (a_db, b_db))
        return {"a": Engine(ixs[-2]), "b": Engine(ixs[-1])}

    one = Engine(ixs[0])
    from kgsearch.query.across import across_for, cache_path

    multi = MultiEngine(pair())                      # the default: in lockstep
    threads = MultiEngine(pair(), threads=True)      # the indexes in threads
    own = MultiEngine(pair(), across=False)          # each index's own lists
    naive = Naive(own)
    runs = {"one": one, "multi": multi, "naive": naive, "threads": threads, "own": own}
    cache_path(multi.engines).unlink(missing_ok=True)           # the first search's work, timed
    t = time.perf_counter()
    notes: list = []
    across_for(multi.engines, notes)
    link_s = time.perf_counter() - t

    def keys(resp):
        return [h.key[4:] if h.key.startswith("doc:") else h.key for h in resp.hits]

    for _, text in queries:                         # warm pass: caches, page cache
        one.search(text, opts)
        multi.search(text, opts)
    ndcg = {r: [] for r in runs}
    ms = {"one": [], "multi": [], "threads": [], "own": []}
    load = [wb.loadavg()]
    for i, (qid, text) in enumerate(queries):
        for r in (("one", "multi", "own", "threads") if i % 2 == 0 else ("threads", "own", "multi", "one")) + ("naive",):
            t = time.perf_counter()
            resp = runs[r].search(text, opts)
            dt = (time.perf_counter() - t) * 1000
            if r in ms:
                ms[r].append(dt)
            ndcg[r].append(query_metrics(keys(resp), qrels[qid])["ndcg@10"])
    load.append(wb.loadavg())
    for ix in ixs:
        ix.close()
    if threads._executor is not None:
        threads._executor.shutdown()
    out = {"set": name, "queries": len(queries), "docs": {"a": sum(1 for _ in open(a_db.parent / "a" / "corpus.jsonl")),
                                                          "b": sum(1 for _ in open(b_db.parent / "b" / "corpus.jsonl"))},
           "load": load, "link_seconds": round(link_s, 2), "link_notice": notes}
    for r in ("one", "multi", "naive", "own"):
        out[f"ndcg_{r}"] = round(statistics.mean(ndcg[r]), 4)
    for r in ("multi", "naive", "own"):
        w = sum(1 for x, y in zip(ndcg[r], ndcg["one"]) if x > y + 1e-12)
        lo = sum(1 for x, y in zip(ndcg[r], ndcg["one"]) if x < y - 1e-12)
        out[f"diff_{r}"] = round(out[f"ndcg_{r}"] - out["ndcg_one"], 4)
        out[f"wins_losses_{r}"] = [w, lo]
        out[f"sign_p_{r}"] = round(sign_test(w, lo), 3)
    for r in ms:
        out[f"p50_ms_{r}"] = round(statistics.median(ms[r]), 2)
        out[f"p95_ms_{r}"] = round(wb.pct(ms[r], 95), 2)
    out["p50_ratio"] = round(out["p50_ms_multi"] / out["p50_ms_one"], 3)
    out["p95_ratio"] = round(out["p95_ms_multi"] / out["p95_ms_one"], 3)
    out["p50_ratio_threads"] = round(out["p50_ms_threads"] / out["p50_ms_one"], 3)
    out["p50_ratio_own"] = round(out["p50_ms_own"] / out["p50_ms_one"], 3)
    w = sum(1 for x, y in zip(ndcg["multi"], ndcg["own"]) if x > y + 1e-12)
    lo = sum(1 for x, y in zip(ndcg["multi"], ndcg["own"]) if x < y - 1e-12)
    out["multi_vs_own"] = {"diff": round(out["ndcg_multi"] - out["ndcg_own"], 4), "wins_losses": [w, lo],
                           "sign_p": round(sign_test(w, lo), 3)}
    out["same_as_threads"] = sum(a == b for a, b in zip(ndcg["multi"], ndcg["threads"]))
    print(json.dumps(out), file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="scifact,nfcorpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--work", default="/tmp/kgsearch-multi-bench")
    ap.add_argument("--tag", default="")
    ap.add_argument("--snippets", action="store_true",
                    help="time the searches with snippets, as the CLI, serve and mcp search (default: without)")
    args = ap.parse_args()
    code = wb.commit()
    work = Path(args.work)
    import os

    os.environ["XDG_CACHE_HOME"] = str(work / "cache")      # the union's lists (kgsearch.query.across)
    rows = [run_set(work, s, args.seed, args.max_queries, args.snippets) for s in args.sets.split(",")]
    res = {"what": "multi-index", "seed": args.seed, "machine": wb.machine(), "commit": code,
           "date": time.strftime("%Y-%m-%d %H:%M"), "snippets": args.snippets, "sets": rows}
    name = "multi_index" + (f"_{args.tag}" if args.tag else "")
    wb.RESULTS.mkdir(parents=True, exist_ok=True)
    (wb.RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1))
    lines = ["# Two indexes searched as one vs one index (`python bench/multi_bench.py`)", "",
             f"{res['date']}, commit {code}, {res['machine']['cpu']} ({res['machine']['cores']} cores), Python "
             f"{res['machine']['python']}; each set's documents split at random (seed {args.seed}) into two indexes; "
             f"default settings (embeddings included), snippets {'on' if args.snippets else 'off'}. *multi*: the two as one (pooled BM25 statistics, z-scores over "
             f"the union, one floor, the union's similar_text lists); *own*: the same with each index's own "
             f"similar_text lists (before kgsearch/query/across.py); *naive*: each index's own scores on one floor. "
             f"nDCG@10 means over the judged queries; W/L = queries where the two-index search scores above/below "
             f"the one index (*multi vs own*: above/below own), with the two-sided sign test. Latency: p50/p95 of "
             f"the timed pass (the order alternating per query, after a warm pass), shared 2-core machine (load "
             f"beside); *threads*: multi with the indexes in threads (each its own pull) instead of in lockstep; "
             f"*lists s*: the first search's computing of the union's lists (once until an index changes).", "",
             "| set | queries | docs a / b | nDCG@10 one | multi | diff (W/L, p) | own | diff (W/L, p) | "
             "multi vs own (W/L, p) | naive | diff (W/L, p) | p50 ms one / multi / own | ratio multi / own | "
             "p95 ms one / multi | ratio | p50 threads (ratio) | lists s | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def d(r, v):
        return f"{r['diff_' + v]:+.4f} ({r['wins_losses_' + v][0]}/{r['wins_losses_' + v][1]}, {r['sign_p_' + v]})"

    for r in rows:
        mo = r["multi_vs_own"]
        lines.append(f"| {r['set']} | {r['queries']} | {r['docs']['a']} / {r['docs']['b']} | {r['ndcg_one']} | "
                     f"{r['ndcg_multi']} | {d(r, 'multi')} | {r['ndcg_own']} | {d(r, 'own')} | "
                     f"{mo['diff']:+.4f} ({mo['wins_losses'][0]}/{mo['wins_losses'][1]}, {mo['sign_p']}) | "
                     f"{r['ndcg_naive']} | {d(r, 'naive')} | "
                     f"{r['p50_ms_one']} / {r['p50_ms_multi']} / {r['p50_ms_own']} | {r['p50_ratio']} / "
                     f"{r['p50_ratio_own']} | {r['p95_ms_one']} / {r['p95_ms_multi']} | {r['p95_ratio']} | "
                     f"{r['p50_ms_threads']} ({r['p50_ratio_threads']}) | {r['link_seconds']} | "
                     f"{r['load'][0][:1]}-{r['load'][-1][:1]} |")
    md = "\n".join(lines) + "\n"
    (wb.RESULTS / f"{name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
