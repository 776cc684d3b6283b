"""`kgsearch serve` under load: N concurrent requests, and one at a time.

    python bench/serve_bench.py [--notes 2000] [--concurrent 200] [--rounds 3]

The vault of bench/watch_bench.py (``--notes`` documents of a BEIR corpus as Markdown notes,
indexed with embeddings); ``kgsearch serve`` started as a separate process on a free port. Each
round fires ``--concurrent`` requests at once from as many threads (a mix: JSON searches with
the corpus's own queries, search pages, node pages, /api/show, /api/related, /api/stats) and
records each one's status and latency; then the same requests one after the other. The server's
RSS is read before and after. Writes bench/results/serve_load.{json,md}.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
import watch_bench as wb  # noqa: E402


def fetch(url: str) -> tuple[int, float]:
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=600) as r:
            r.read()
            st = r.status
    except urllib.error.HTTPError as e:
        st = e.code
    except OSError:
        st = -1
    return st, time.perf_counter() - t


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="scifact")
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--concurrent", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/tmp/kgsearch-serve-bench")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    notes = wb.make_vault(work, args.corpus, args.notes)
    db = work / "serve.db"
    index_s = wb.build_index(notes, db)
    queries = [json.loads(line)["text"] for line in open(wb.SHARED / args.corpus / "queries.jsonl", encoding="utf-8")]
    p = subprocess.Popen(wb.kg("--db", str(db), "serve", "--port", "0"), stderr=subprocess.PIPE, text=True, env=wb.env())
    line = p.stderr.readline()
    port = int(re.search(r":(\d+)/", line).group(1))
    base = f"http://127.0.0.1:{port}"
    keys = [f"md:f{i // 100:03d}/n{i:05d}" for i in range(0, args.notes, max(1, args.notes // 50))]
    targets = []
    for i in range(args.concurrent):
        q, key = queries[i % len(queries)], keys[i % len(keys)]
        targets.append([f"/api/search?q={quote(q)}", f"/?q={quote(q)}&explain=1", f"/node?node={quote(key, safe='')}",
                        f"/api/show?node={quote(key, safe='')}", f"/api/related?node={quote(key, safe='')}",
                        "/api/stats"][i % 6])
    fetch(base + targets[0])                     # engine caches loaded once
    rss0 = rss_mb(p.pid)
    rounds = []
    for r in range(args.rounds):
        load = wb.loadavg()
        res: list = [None] * len(targets)
        barrier = threading.Barrier(len(targets))

        def one(i):
            barrier.wait()
            res[i] = fetch(base + targets[i])

        t0 = time.perf_counter()
        ths = [threading.Thread(target=one, args=(i,)) for i in range(len(targets))]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        wall = time.perf_counter() - t0
        seq = []
        t1 = time.perf_counter()
        for tg in targets:
            seq.append(fetch(base + tg))
        seq_wall = time.perf_counter() - t1
        lat = [x[1] * 1000 for x in res]
        slat = [x[1] * 1000 for x in seq]
        rounds.append({"load": load, "ok": sum(1 for x in res if x[0] == 200), "errors": sum(1 for x in res if x[0] != 200),
                       "wall_s": round(wall, 2), "p50_ms": round(statistics.median(lat), 1),
                       "p95_ms": round(wb.pct(lat, 95), 1), "max_ms": round(max(lat), 1),
                       "seq_wall_s": round(seq_wall, 2), "seq_p50_ms": round(statistics.median(slat), 1),
                       "seq_p95_ms": round(wb.pct(slat, 95), 1), "seq_errors": sum(1 for x in seq if x[0] != 200)})
        print(json.dumps(rounds[-1]), file=sys.stderr)
    rss1 = rss_mb(p.pid)
    p.terminate()
    code = p.wait(60)
    out = {"what": "serve load", "corpus": args.corpus, "notes": args.notes, "concurrent": args.concurrent,
           "machine": wb.machine(), "commit": wb.commit(), "date": time.strftime("%Y-%m-%d %H:%M"),
           "index_seconds": round(index_s, 1), "rss_mb_before": round(rss0, 1), "rss_mb_after": round(rss1, 1),
           "exit": code, "rounds": rounds}
    wb.RESULTS.mkdir(parents=True, exist_ok=True)
    (wb.RESULTS / "serve_load.json").write_text(json.dumps(out, indent=1))
    lines = [f"# `kgsearch serve` under load (`python bench/serve_bench.py`)", "",
             f"{out['date']}, commit {out['commit']}, {out['machine']['cpu']} ({out['machine']['cores']} cores); "
             f"{args.notes} notes of {args.corpus} indexed with embeddings; {args.concurrent} requests fired at once "
             f"(JSON searches with the set's queries, search pages with explain, node pages, /api/show, /api/related, "
             f"/api/stats), then the same one at a time. Server RSS {out['rss_mb_before']} MB after the first request, "
             f"{out['rss_mb_after']} MB at the end. Shared machine: load beside each round.", "",
             "| round | answered 200 | errors | wall s | p50 ms | p95 ms | max ms | one at a time: wall s | p50 ms | p95 ms | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rounds, 1):
        lines.append(f"| {i} | {r['ok']} | {r['errors']} | {r['wall_s']} | {r['p50_ms']} | {r['p95_ms']} | {r['max_ms']} | "
                     f"{r['seq_wall_s']} | {r['seq_p50_ms']} | {r['seq_p95_ms']} | {r['load'][:1]} |")
    md = "\n".join(lines) + "\n"
    (wb.RESULTS / "serve_load.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
