"""The query process at 1M nodes without the graph channels: peak RSS per stage, latency, CLI.

    python bench/query_1m.py --db bench/work/index-1m.db \
        --queries ../wt-graphinc/bench/work/scale/corpus-1000000.queries100.json \
        [--code DIR] [--tag after] [--runs 1] [--cli-runs 8] [--out bench/results/query_1m.json]

``python bench/query_1m.py _report bench/results/query_1m.json`` prints the tables of every
tagged run. ``--code DIR`` runs another checkout's ``kgsearch`` (``PYTHONPATH=DIR``), for before/after in
one session. Everything runs in fresh processes:

* ``query``: ``Engine.search`` over the 100 queries with the default pipeline minus the four
  graph channels (``graph``, ``intent``, ``local``, ``global``; ``engine.DEFAULT_CHANNELS``
  patched, so the other channels keep their default gates), ``k=10``, no result cache: one
  first query, one untimed warm pass, one timed pass. Recorded: VmRSS / VmHWM after
  ``import numpy``, after the imports, after opening the index; the VmHWM rise inside each
  stage of the engine's clock (``timings_ms``: the largest over all queries), p50/p95 of the
  wall time and of the process CPU time, per-stage p50, and every query's top 10 (to compare
  rankings across code versions);
* ``cli``: ``kgsearch search Q --db DB -k 10 --no-cache -q --channels ...`` (the same
  channels): cold = the .db file evicted from the page cache first (``posix_fadvise``), then
  warm = the same query again; medians over ``--cli-runs`` queries, peak RSS from
  ``/usr/bin/time``-free ``wait4``. Also ``python -X importtime`` of one CLI search (top
  imports by cumulative time).

Timings on a shared 2-core machine are noisy; peak RSS is not.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ("graph", "intent", "local", "global")


def _status_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")


def child_query(db: str, queries: str, graph: bool) -> dict:
    marks = {"start": (_status_kb("VmRSS"), _status_kb("VmHWM"))}
    import numpy  # noqa: F401
    marks["numpy"] = (_status_kb("VmRSS"), _status_kb("VmHWM"))
    from kgsearch.query import engine as engine_mod
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index
    marks["imports"] = (_status_kb("VmRSS"), _status_kb("VmHWM"))

    if not graph:
        engine_mod.DEFAULT_CHANNELS = tuple(c for c in engine_mod.DEFAULT_CHANNELS if c not in GRAPH)
    stage_rise: dict[str, int] = {}
    stage_rss: dict[str, int] = {}
    lap0 = engine_mod._Clock.lap
    state = {"hwm": _status_kb("VmHWM")}

    def lap(self, name):
        lap0(self, name)
        h = _status_kb("VmHWM")
        if h > state["hwm"]:
            stage_rise[name] = stage_rise.get(name, 0) + h - state["hwm"]
            state["hwm"] = h
        stage_rss[name] = max(stage_rss.get(name, 0), h)

    init0 = engine_mod._Clock.__init__

    def init(self):
        init0(self)
        state["hwm"] = _status_kb("VmHWM")
        h = state["hwm"]
        if h > state.get("last_end", h):      # between two queries (outside the clock)
            stage_rise["between"] = stage_rise.get("between", 0) + h - state["last_end"]

    engine_mod._Clock.lap = lap
    engine_mod._Clock.__init__ = init

    qs = [q["text"] for q in json.loads(Path(queries).read_text())]
    ix = Index.open(db, readonly=True)
    marks["open"] = (_status_kb("VmRSS"), _status_kb("VmHWM"))
    eng = Engine(ix)
    opts = SearchOptions(k=10, use_cache=False)
    t = time.perf_counter()
    r0 = eng.search(qs[0], opts)
    first = (time.perf_counter() - t) * 1000
    marks["first_query"] = (_status_kb("VmRSS"), _status_kb("VmHWM"))
    first_rise = dict(stage_rise)
    for q in qs:
        eng.search(q, opts)
        state["last_end"] = _status_kb("VmHWM")
    marks["warm_pass"] = (_status_kb("VmRSS"), _status_kb("VmHWM"))
    lat, cpu, stages, top10, per_query = [], [], {}, [], []
    r = r0
    for q in qs:
        t, c = time.perf_counter(), time.process_time()
        r = eng.search(q, opts)
        lat.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        for k, v in r.timings_ms.items():
            stages.setdefault(k, []).append(v)
        top10.append([h.id for h in r.hits[:10]])
        per_query.append((round(lat[-1], 1), round(cpu[-1], 1), q[:60], r.timings_ms))
        state["last_end"] = _status_kb("VmHWM")
    marks["timed_pass"] = (_status_kb("VmRSS"), _status_kb("VmHWM"))
    return {"marks": {k: {"rss_mb": round(a / 1024, 1), "hwm_mb": round(b / 1024, 1)} for k, (a, b) in marks.items()},
            "stage_hwm_rise_mb": {k: round(v / 1024, 1) for k, v in stage_rise.items()},
            "first_query_stage_rise_mb": {k: round(v / 1024, 1) for k, v in first_rise.items()},
            "stage_hwm_after_mb": {k: round(v / 1024, 1) for k, v in stage_rss.items()},
            "first_ms": round(first, 1), "lat": lat, "cpu": cpu,
            "stages_p50": {k: round(statistics.median(v), 2) for k, v in stages.items()},
            "channels_run": r.channels_run, "channels_skipped": r.channels_skipped, "top10": top10,
            "slowest": sorted(per_query, key=lambda x: -x[0])[:8]}


def _env(code: str | None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(code).resolve()) if code else str(ROOT)
    env.pop("KGSEARCH_MEMORY_MB", None)
    return env


def run_child(db, queries, graph, code) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "_child", db, queries, "1" if graph else "0"]
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=_env(code), stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    res = json.loads(out.strip().splitlines()[-1])
    res["process_peak_rss_mb"] = round(ru.ru_maxrss / 1024, 1)
    res["wall_s"] = round(time.perf_counter() - t, 1)
    lat, cpu = res.pop("lat"), res.pop("cpu")
    res["p50_ms"], res["p95_ms"] = round(pct(lat, 50), 1), round(pct(lat, 95), 1)
    res["cpu_p50_ms"], res["cpu_p95_ms"] = round(pct(cpu, 50), 1), round(pct(cpu, 95), 1)
    res["mean_ms"] = round(statistics.mean(lat), 1)
    return res


def evict(db: str) -> None:
    for p in (db, db + "-wal"):
        if os.path.exists(p):
            fd = os.open(p, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def cli_once(db, q, channels, code, extra=()) -> tuple[float, float, float, str]:
    # run from the checkout's root: ``-m`` puts the working directory first on sys.path
    cmd = [sys.executable, *extra, "-m", "kgsearch", "search", q, "--db", str(Path(db).resolve()), "-k", "10",
           "--no-cache", "-q"]
    if channels:
        cmd += ["--channels", channels]
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=_env(code), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         cwd=str(Path(code).resolve()) if code else str(ROOT))
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t) * 1000
    if status != 0:
        raise SystemExit(f"CLI failed: {err[-800:]}")
    return wall, (ru.ru_utime + ru.ru_stime) * 1000, ru.ru_maxrss / 1024, err


def cli(db, queries, runs, graph, code) -> dict:
    from_json = [q["text"] for q in json.loads(Path(queries).read_text())]
    chans = None
    if not graph:
        sys.path.insert(0, str(Path(code).resolve()) if code else str(ROOT))
        from kgsearch.query.channels import DEFAULT_CHANNELS
        chans = ",".join(c for c in DEFAULT_CHANNELS if c not in GRAPH)
    cold, warm, cold_cpu, warm_cpu, rss = [], [], [], [], []
    for q in from_json[:runs]:
        evict(db)
        w, c, m, _ = cli_once(db, q, chans, code)
        cold.append(w), cold_cpu.append(c), rss.append(m)
        w, c, m, _ = cli_once(db, q, chans, code)
        warm.append(w), warm_cpu.append(c), rss.append(m)
    _, _, _, imp = cli_once(db, from_json[0], chans, code, extra=("-X", "importtime"))
    rows = []
    for line in imp.splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = [x.strip() for x in line[len("import time:"):].split("|")]
            try:
                rows.append((int(parts[1]), parts[2].strip()))
            except ValueError:
                pass
    total_us = sum(int(x.split("|")[0].split(":")[1]) for x in imp.splitlines()
                   if x.startswith("import time:") and x.split("|")[0].split(":")[1].strip().isdigit())
    top = sorted((r for r in rows if not r[1].startswith(" ") or True), reverse=True)[:15]
    return {"runs": runs, "channels": chans or "default",
            "cold_ms": [round(x) for x in cold], "warm_ms": [round(x) for x in warm],
            "cold_median_ms": round(statistics.median(cold)), "warm_median_ms": round(statistics.median(warm)),
            "cold_cpu_median_ms": round(statistics.median(cold_cpu)),
            "warm_cpu_median_ms": round(statistics.median(warm_cpu)),
            "peak_rss_max_mb": round(max(rss), 1), "import_self_total_ms": round(total_us / 1000),
            "import_top_cumulative_ms": [(round(us / 1000, 1), name) for us, name in top]}


def report(allres: dict) -> str:
    """Markdown tables of every tagged run in the JSON (tags ``before-N`` / ``after-N`` etc.)."""
    out = ["| run | when | peak RSS MiB | RSS after MiB | HWM after 1st query | p50 / p95 ms | CPU p50 / p95 ms "
           "| bm25 / dense stage p50 ms | 1st query ms | peak rise in bm25 / dense stage MiB |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for tag, r in allres.items():
        for q in r.get("query", []):
            st, rise = q["stages_p50"], q["stage_hwm_rise_mb"]
            out.append(f"| {tag}{' (graph on)' if r.get('graph') else ''} | {r['when'][11:]} | "
                       f"{q['process_peak_rss_mb']} | {q['marks']['timed_pass']['rss_mb']} | "
                       f"{q['marks']['first_query']['hwm_mb']} | {q['p50_ms']} / {q['p95_ms']} | "
                       f"{q['cpu_p50_ms']} / {q['cpu_p95_ms']} | {st.get('bm25')} / {st.get('dense')} | "
                       f"{q['first_ms']} | {rise.get('bm25', 0)} / {rise.get('dense', 0)} |")
    out += ["", "| run | channels | runs | cold median ms (CPU) | warm median ms (CPU) | peak RSS MiB | "
            "import self time ms |", "|---|---|---|---|---|---|---|"]
    for tag, r in allres.items():
        c = r.get("cli")
        if c:
            out.append(f"| {tag} | {'default' if c['channels'] == 'default' else 'no graph'} | {c['runs']} | "
                       f"{c['cold_median_ms']} ({c['cold_cpu_median_ms']}) | {c['warm_median_ms']} "
                       f"({c['warm_cpu_median_ms']}) | {c['peak_rss_max_mb']} | {c['import_self_total_ms']} |")
    return "\n".join(out) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_report":
        print(report(json.loads(Path(sys.argv[2]).read_text())), end="")
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        db, queries, graph = sys.argv[2], sys.argv[3], sys.argv[4] == "1"
        print(json.dumps(child_query(db, queries, graph)))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--code", default=None, help="checkout to run (PYTHONPATH); default: this one")
    ap.add_argument("--tag", default="after")
    ap.add_argument("--runs", type=int, default=1, help="query processes")
    ap.add_argument("--cli-runs", type=int, default=8)
    ap.add_argument("--graph", action="store_true", help="keep the graph channels")
    ap.add_argument("--skip", default="", help="comma list: query,cli")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "query_1m.json"))
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    res = {"tag": a.tag, "code": a.code or str(ROOT), "graph": a.graph, "db": a.db,
           "load_before": open("/proc/loadavg").read().split()[:3], "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    if "query" not in skip:
        res["query"] = [run_child(a.db, a.queries, a.graph, a.code) for _ in range(a.runs)]
    if "cli" not in skip:
        res["cli"] = cli(a.db, a.queries, a.cli_runs, a.graph, a.code)
    res["load_after"] = open("/proc/loadavg").read().split()[:3]
    out = Path(a.out)
    allres = json.loads(out.read_text()) if out.exists() else {}
    allres[a.tag] = res
    out.write_text(json.dumps(allres, indent=1))
    show = {k: v for k, v in res.items() if k != "query"}
    for q in res.get("query", []):
        show.setdefault("query", []).append({k: v for k, v in q.items() if k != "top10"})
    print(json.dumps(show, indent=1))


if __name__ == "__main__":
    main()
