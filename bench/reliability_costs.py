"""What hostile sizes and agents cost (issue 24), measured in one run:

* **queries**: one search of a short query, a 32 KB query and a 1 MB query (cut to 32,768
  characters by ``kgsearch/query/cut.py``) on the demo index and a code index, in-process,
  ``--rounds`` alternating rounds, median; and ``kgsearch search -`` reading the 1 MB query
  from stdin (a fresh process: start-up included);
* **MCP tokens**: ``search`` with k=10 in ``brief`` and ``full``, tokens = ceil(chars / 4) of
  the text content an agent reads, and of the whole JSON-RPC answer (text + structuredContent);
* **hostile files**: a fresh ``kgsearch index`` (own process, peak RSS = VmHWM) of a note on
  one line (``--one-line-mb``, default 100, size cap raised) and of a note with 20,000 links.

    python bench/reliability_costs.py [--code PATH] [--work DIR] [--rounds 5] [--one-line-mb 100]

Writes ``bench/results/reliability_costs.json`` and ``.md``. Timings on a shared machine are
noisy: the load average is recorded beside them; compare within one run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("KGSEARCH_SHARED", "/work/shared"))
CODE = SHARED / "bench" / "code-tasks" / "repos" / "flask@182ce3dd15"
PEAK = """
import sys, time
from kgsearch.cli import main
t = time.perf_counter()
try:
    rc = main(sys.argv[1:])
finally:
    hwm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
    sys.stderr.write(f"\\nbench {hwm / 1024:.1f} {time.perf_counter() - t:.3f}\\n")
sys.exit(rc)
"""
QUERIES = {"demo": "how do I back up my notes", "code": "url_for builds the wrong URL behind a proxy"}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def tokens(s: str) -> int:
    return math.ceil(len(s) / 4)


def index(db: Path, paths: list[str], *extra: str) -> dict:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    r = subprocess.run([sys.executable, "-c", PEAK, "index", *paths, "--db", str(db), "-q", *extra],
                       capture_output=True, text=True, cwd=ROOT)
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("bench ")][-1].split()
    return {"exit": r.returncode, "peak_mb": float(line[1]), "seconds": float(line[2]),
            "stderr": [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("bench ")][:4]}


def big_query(n: int) -> str:
    words = (ROOT / "README.md").read_text(encoding="utf-8").split()
    out, size, i = [], 0, 0
    while size < n:
        w = words[(i * 7919) % len(words)]
        out.append(w)
        size += len(w) + 1
        i += 1
    return " ".join(out)[:n]


def queries(dbs: dict, rounds: int) -> list[dict]:
    from kgsearch.query import SearchOptions, engine_for

    rows = []
    sizes = {"short": None, "32 KB": 32_768, "1 MB": 1_000_000}
    for name, db in dbs.items():
        eng = engine_for(str(db))
        eng.search("warm up", SearchOptions(use_cache=False))
        texts = {k: (QUERIES[name] if n is None else big_query(n)) for k, n in sizes.items()}
        times = {k: [] for k in texts}
        for _ in range(rounds):
            for k, q in texts.items():
                t = time.perf_counter()
                resp = eng.search(q, SearchOptions(use_cache=False))
                times[k].append(time.perf_counter() - t)
        for k in texts:
            rows.append({"index": name, "query": k, "chars": len(texts[k]), "median_s": round(statistics.median(times[k]), 4),
                         "max_s": round(max(times[k]), 4), "cut": any("cut" in n for n in resp.notices) if k == "1 MB" else None})
        q = texts["1 MB"]
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "kgsearch", "search", "-", "--db", str(db), "--json", "--no-cache"],
                           input=q, capture_output=True, text=True, cwd=ROOT)
        rows.append({"index": name, "query": "1 MB via `search -` (process)", "chars": len(q),
                     "median_s": round(time.perf_counter() - t, 3), "max_s": None,
                     "cut": r.returncode == 0 and "cut" in r.stderr})
    return rows


def mcp_tokens(dbs: dict) -> list[dict]:
    from kgsearch.mcp.server import Server

    rows = []
    for name, db in dbs.items():
        s = Server(str(db))
        for detail in ("brief", "full"):
            res = s.call("search", {"query": QUERIES[name], "k": 10, "detail": detail})
            whole = json.dumps({"jsonrpc": "2.0", "id": 1, "result": res}, ensure_ascii=False, separators=(",", ":"))
            rows.append({"index": name, "detail": detail, "text_tokens": tokens(res["content"][0]["text"]),
                         "message_tokens": tokens(whole), "hits": len(res["structuredContent"]["hits"])})
        old = json.dumps(s.call("search", {"query": QUERIES[name], "k": 10, "detail": "full"})["structuredContent"],
                         ensure_ascii=False, indent=2)
        rows.append({"index": name, "detail": "full, indented (before)", "text_tokens": tokens(old),
                     "message_tokens": None, "hits": 10})
    return rows


def hostile(work: Path, one_line_mb: int) -> list[dict]:
    rows = []
    d = work / "one-line"
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "line.md", "w") as fh:
        fh.write("# Big\n")
        chunk = " ".join(f"w{i % 5003} lorem ipsum dolor" for i in range(10_000)) + " "
        for _ in range(max(1, one_line_mb * 1_000_000 // len(chunk))):
            fh.write(chunk)
        fh.write("\n")
    size = (d / "line.md").stat().st_size
    r = index(work / "one-line.db", [str(d)], "--max-file-size", str(one_line_mb * 2))
    rows.append(dict(r, case=f"one note on one line, {size / 1e6:.0f} MB (--max-file-size {one_line_mb * 2})"))
    d = work / "links"
    d.mkdir(parents=True, exist_ok=True)
    (d / "hub.md").write_text("# Hub\n" + "\n".join(f"- [[note {i}]]" for i in range(20000)) + "\n")
    r = index(work / "links.db", [str(d)])
    rows.append(dict(r, case="one note with 20,000 links (first index)"))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", default=str(CODE), help="a code folder to index (default: flask from the shared set)")
    ap.add_argument("--work", default=str(ROOT / "bench" / "work" / "reliability"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--one-line-mb", type=int, default=100)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    res = {"load_before": load(), "python": sys.version.split()[0]}
    dbs = {"demo": work / "demo.db", "code": work / "code.db"}
    res["index"] = {"demo": index(dbs["demo"], [str(ROOT / "data" / "demo")]),
                    "code": index(dbs["code"], [args.code])}
    res["queries"] = queries(dbs, args.rounds)
    res["mcp"] = mcp_tokens(dbs)
    res["hostile"] = hostile(work, args.one_line_mb)
    res["load_after"] = load()
    out = ROOT / "bench" / "results" / "reliability_costs"
    out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    md = [f"# Reliability costs (issue 24)\n", f"Load average before {res['load_before']}, after {res['load_after']} "
          f"(2 shared cores); Python {res['python']}. Code index: `{Path(args.code).name}`.\n",
          "## Queries (in-process median of %d rounds; `search -` one fresh process)\n" % args.rounds,
          "| index | query | characters | median s | max s | cut |", "|---|---|---|---|---|---|"]
    md += [f"| {r['index']} | {r['query']} | {r['chars']:,} | {r['median_s']} | {r['max_s'] if r['max_s'] is not None else '-'} "
           f"| {'-' if r['cut'] is None else 'yes' if r['cut'] else 'no'} |" for r in res["queries"]]
    md += ["", "## MCP `search`, k=10 (tokens = ceil(characters / 4))\n", "| index | detail | text | whole answer |",
           "|---|---|---|---|"]
    md += [f"| {r['index']} | {r['detail']} | {r['text_tokens']:,} | {r['message_tokens'] or '-'} |" for r in res["mcp"]]
    md += ["", "## Hostile files (fresh `kgsearch index`, its own process)\n", "| case | exit | peak RSS MB | seconds |",
           "|---|---|---|---|"]
    md += [f"| {r['case']} | {r['exit']} | {r['peak_mb']} | {r['seconds']} |" for r in res["hostile"]]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
