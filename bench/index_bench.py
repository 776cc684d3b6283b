"""Indexing benchmark: the standard library source of the running Python, indexed from scratch.

The source tree (default ``sysconfig.get_paths()["stdlib"]``; ``site-packages`` and
``__pycache__`` left out, as the walker does) is copied to a temporary folder first, so one
file can be changed. Each full index runs in a fresh process into a fresh database, once with
every derived step and once without embeddings (``--no-embed``), interleaved ``--runs``
times; the tables show medians. For each mode the last database is then reindexed with no
change, and with one mid-sized module changed (a function appended; a different one each
time; and a function body edited, its calls unchanged), ``--reindex-runs`` times each, every
run in a fresh process as cron would start it.
Finally the changed module is restored, reindexed, and the node/edge counts are compared
with the full index (an incremental run must leave what a full rebuild leaves).

Reported: files/s, nodes by kind, edges by type, database size after the final checkpoint
(and without the ``vec_blocks`` table, by ``dbstat``), the biggest tables and indexes,
per-phase and per-step seconds (``IndexReport.phases`` / ``.steps``), process CPU seconds
and peak RSS (VmHWM) of the index process, and machine load before and after.

    python bench/index_bench.py [--src PATH] [--out-dir bench/results] [--runs 3] [--reindex-runs 5]

Writes ``index.json`` and ``index.md`` into ``--out-dir``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, git_commit, loadavg, machine, peak_rss_mib  # noqa: E402

NO_EMBED_STEPS = ("text", "neighbors", "graph")
MODES = {"embed": None, "no-embed": NO_EMBED_STEPS}
TARGETS = {"full_s": 60.0, "nochange_s": 2.0, "onefile_s": 1.0, "db_ratio": 3.0}


# ---------------------------------------------------------------------------- worker side
def worker(db: str, src: str, mode: str) -> dict:
    """One index run in this (fresh) process; prints the report as JSON."""
    from kgsearch.budget import fixed_mmap_threshold
    from kgsearch.indexer import IndexOptions, index_paths

    fixed_mmap_threshold()          # as `kgsearch index` does (a process setting: the library leaves it to the caller)

    from kgsearch.indexer.run import PARALLEL_MIN_FILES
    from kgsearch.ingest.pool import default_workers

    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    rep = index_paths(db, [src], IndexOptions(keep_going=True, steps=MODES[mode]))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)     # loader worker processes (reaped)
    out = rep.as_dict()
    out.pop("warnings", None)
    out["n_warnings"] = len(rep.warnings)
    out["wall_s"] = round(time.perf_counter() - t0, 3)
    out["cpu_s"] = round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 3)
    out["workers_cpu_s"] = round(kids.ru_utime + kids.ru_stime, 3)
    out["peak_rss_mb"] = round(peak_rss_mib(), 1)
    out["workers_peak_rss_mb"] = round(kids.ru_maxrss / 1024.0, 1)
    out["workers"] = default_workers() if rep.files_loaded + rep.files_failed >= PARALLEL_MIN_FILES else 0
    return out


# ---------------------------------------------------------------------------- parent side
def run_worker(db: Path, src: Path, mode: str) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--db", str(db), "--src", str(src),
           "--mode", mode]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT))
    if proc.returncode != 0:
        raise SystemExit(f"index worker failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = round(time.perf_counter() - t0, 3)
    return out


def copy_source(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("site-packages", "__pycache__"))


def db_facts(db: Path) -> dict:
    """Sizes (file, dbstat per table/index) and counts of a finished index."""
    conn = sqlite3.connect(str(db))
    try:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        try:
            by_object = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
        except sqlite3.OperationalError:       # SQLite built without dbstat
            by_object = {}
        source = conn.execute("SELECT coalesce(sum(size), 0), count(*) FROM files").fetchone()
        py = conn.execute("SELECT coalesce(sum(size), 0) FROM files WHERE loader='python'").fetchone()[0]
        nodes_by_kind = dict(conn.execute("SELECT kind, count(*) FROM nodes GROUP BY kind ORDER BY 2 DESC"))
        edges_by_type = dict(conn.execute(
            "SELECT type, count(*) FROM edges WHERE dst IS NOT NULL GROUP BY type ORDER BY 2 DESC"))
        unresolved = conn.execute("SELECT count(*) FROM edges WHERE dst IS NULL").fetchone()[0]
    finally:
        conn.close()
    file_bytes = os.path.getsize(db)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(db) + suffix):
            file_bytes += os.path.getsize(str(db) + suffix)
    vec = by_object.get("vec_blocks", 0)
    return {
        "db_bytes": file_bytes, "page_size": page, "pages": pages, "free_pages": free,
        "vec_blocks_bytes": vec, "db_bytes_without_vectors": file_bytes - vec,
        "source_bytes": source[0], "files": source[1], "py_source_bytes": py,
        "nodes": sum(nodes_by_kind.values()), "nodes_by_kind": nodes_by_kind,
        "edges": sum(edges_by_type.values()), "edges_by_type": edges_by_type, "edges_unresolved": unresolved,
        "objects": dict(sorted(by_object.items(), key=lambda kv: -kv[1])),
    }


def pick_module(src: Path) -> Path:
    """A mid-sized top-level module (median size of the top-level .py files; stable choice)."""
    mods = sorted((p.stat().st_size, p.name, p) for p in src.glob("*.py") if p.is_file())
    if not mods:
        mods = sorted((p.stat().st_size, str(p), p) for p in src.rglob("*.py") if p.is_file())
    if not mods:
        raise SystemExit(f"no .py file under {src} to change")
    return mods[len(mods) // 2][2]


def body_edit(original: bytes, note: str) -> bytes:
    """The source with a comment added at the end of the first short top-level function's last
    line: its text changes, its calls and the file's other nodes do not."""
    import ast

    text = original.decode("utf-8")
    lines = text.split("\n")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno < 40:
            lines[node.end_lineno - 1] += f"  # edited by the index benchmark: {note}"
            return "\n".join(lines).encode("utf-8")
    raise SystemExit("no short top-level function to edit in the changed file")


def median(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 3) if xs else None


def median_dict(dicts: list[dict]) -> dict:
    keys = []
    for d in dicts:
        keys += [k for k in d if k not in keys]
    out = {}
    for k in keys:
        vals = [d.get(k) for d in dicts]
        if all(isinstance(v, (int, float)) or v is None for v in vals):
            out[k] = median(vals)
    return out


def step_seconds(run: dict) -> dict:
    return {name: (info or {}).get("seconds") for name, info in (run.get("steps") or {}).items()}


def summarise_full(runs: list[dict]) -> dict:
    seconds = [r["seconds"] for r in runs]
    files = runs[-1]["files_loaded"]
    return {
        "runs": len(runs),
        "seconds": median(seconds), "seconds_all": seconds,
        "cpu_s": median([r["cpu_s"] for r in runs]),
        "workers": runs[-1].get("workers"),
        "workers_cpu_s": median([r.get("workers_cpu_s") for r in runs]),
        "workers_peak_rss_mb": median([r.get("workers_peak_rss_mb") for r in runs]),
        "files_per_s": round(files / median(seconds), 1) if seconds else None,
        "files_loaded": files, "files_failed": runs[-1]["files_failed"], "warnings": runs[-1]["n_warnings"],
        "peak_rss_mb": median([r["peak_rss_mb"] for r in runs]),
        "phases": median_dict([r["phases"] for r in runs]),
        "steps": median_dict([step_seconds(r) for r in runs]),
    }


def summarise_re(runs: list[dict]) -> dict:
    seconds = [r["seconds"] for r in runs]
    return {
        "runs": len(runs), "seconds": median(seconds), "seconds_all": seconds,
        "process_s": median([r["process_s"] for r in runs]),
        "cpu_s": median([r["cpu_s"] for r in runs]),
        "peak_rss_mb": median([r["peak_rss_mb"] for r in runs]),
        "files_loaded": runs[-1]["files_loaded"],
        "nodes_added": runs[-1]["nodes_added"], "nodes_modified": runs[-1]["nodes_modified"],
        "phases": median_dict([r["phases"] for r in runs]),
        "steps": median_dict([step_seconds(r) for r in runs]),
    }


def _mb(b) -> str:
    return f"{b / 1e6:.1f} MB"


def _ok(value, target) -> str:
    if value is None:
        return "-"
    return "yes" if value <= target else "**no**"


def write_md(res: dict, path: Path) -> None:
    m = res["machine"]
    lines = ["# Indexing benchmark: the Python standard library", "",
             f"Machine: {m['cpu']}, {m['cores']} cores shared with other work (load average "
             f"{m['load'][:1]} at the start, {m.get('loadavg_end')} at the end), {m['os']}. "
             f"Python {m['python']}, numpy {m['numpy']}, SQLite {m['sqlite']}. {m['date']}. "
             f"Command: `{res['command']}`.", "",
             f"Source: {res['source']['path']} copied to a temporary folder ({res['source']['files']} files, "
             f"{_mb(res['source']['bytes'])}, of which .py {_mb(res['source']['py_bytes'])}). "
             f"Times are medians of fresh-process runs (run counts in the table); index seconds are "
             f"`IndexReport.seconds` (lock, walk, load, resolve, derived steps, commit, checkpoint, VACUUM when one is due), "
             f"process seconds add interpreter start-up and imports. A first index loads files in "
             f"worker processes (one per core, at most 4); reindex runs load their few files in-process. "
             f"kgsearch commit {res.get('commit', '?')}.", "",
             "| | with embeddings | without embeddings (`--no-embed`) | target |",
             "|---|---|---|---|"]
    e, n = res["modes"]["embed"], res["modes"]["no-embed"]

    def row(label, fe, fn, target=""):
        lines.append(f"| {label} | {fe(e)} | {fn(n)} | {target} |")

    both = lambda f: (f, f)  # noqa: E731
    row("full index, s (runs)", *both(lambda d: f"{d['full']['seconds']} ({d['full']['runs']}) "
                                      f"[{_ok(d['full']['seconds'], TARGETS['full_s'])}]"), "<= 60 s")
    row("full index CPU s: this process + loader workers",
        *both(lambda d: f"{d['full']['cpu_s']} + {d['full']['workers_cpu_s']} ({d['full']['workers']} workers)"))
    row("files/s", *both(lambda d: f"{d['full']['files_per_s']}"))
    row("peak RSS: index process (loader worker)",
        *both(lambda d: f"{d['full']['peak_rss_mb']} MB ({d['full']['workers_peak_rss_mb']} MB)"))
    row("nodes", *both(lambda d: f"{d['db']['nodes']:,}"))
    row("edges resolved (+ unresolved kept)", *both(lambda d: f"{d['db']['edges']:,} (+{d['db']['edges_unresolved']:,})"))
    row("DB size after checkpoint", *both(lambda d: f"{_mb(d['db']['db_bytes'])} "
                                          f"({d['db']['db_bytes'] / res['source']['bytes']:.2f}x source)"))
    row("DB size without vectors (minus vec_blocks)",
        *both(lambda d: f"{_mb(d['db']['db_bytes_without_vectors'])} "
              f"({d['db']['db_bytes_without_vectors'] / res['source']['bytes']:.2f}x) "
              f"[{_ok(d['db']['db_bytes_without_vectors'] / res['source']['bytes'], TARGETS['db_ratio'])}]"),
        "<= 3x source")
    row("no-change reindex, s (runs)", *both(lambda d: f"{d['nochange']['seconds']} ({d['nochange']['runs']}) "
                                             f"[{_ok(d['nochange']['seconds'], TARGETS['nochange_s'])}]"), "<= 2 s")
    row("no-change reindex, process s", *both(lambda d: f"{d['nochange']['process_s']}"))
    row("one file changed: a function appended, s (runs)",
        *both(lambda d: f"{d['onefile']['seconds']} ({d['onefile']['runs']}) "
              f"[{_ok(d['onefile']['seconds'], TARGETS['onefile_s'])}]"), "<= 1 s")
    row("one file changed: a function appended, process s", *both(lambda d: f"{d['onefile']['process_s']}"))
    row("one file changed: a function body edited (same calls), s (runs)",
        *both(lambda d: f"{d['bodyedit']['seconds']} ({d['bodyedit']['runs']}) "
              f"[{_ok(d['bodyedit']['seconds'], TARGETS['onefile_s'])}]"), "<= 1 s")
    row("after restoring the file: same nodes/edges as the full index",
        *both(lambda d: "yes" if d["consistent"] else "**no**"))
    lines += ["", f"Changed file: `{res['changed_file']}` (a function appended, a different one each run).", ""]

    lines += ["## Where the full-index time goes (median seconds)", "",
              "| phase / derived step | with embeddings | without embeddings |", "|---|---|---|"]
    for k in e["full"]["phases"]:
        lines.append(f"| phase {k} | {e['full']['phases'].get(k)} | {n['full']['phases'].get(k, '-')} |")
    for k in e["full"]["steps"]:
        lines.append(f"| step {k} | {e['full']['steps'].get(k)} | {n['full']['steps'].get(k, '-')} |")
    lines += ["", "One changed file, median seconds by phase / step (with embeddings): "
              + ", ".join(f"{k} {v}" for k, v in {**e['onefile']['phases'], **e['onefile']['steps']}.items()) + ". "
              "A new function is a new node and edge, so the graph step rebuilds the CSR arrays and "
              "PageRank over the whole graph and places the new node in a community (a full CNM run "
              "waits until 2 % of the nodes changed); a body edit that keeps the file's edges skips it: "
              + ", ".join(f"{k} {v}" for k, v in {**e['bodyedit']['phases'], **e['bodyedit']['steps']}.items())
              + ".", ""]

    lines += ["## Edges by type (resolved)", "", "| type | edges |", "|---|---|"]
    for t, c in e["db"]["edges_by_type"].items():
        lines.append(f"| {t} | {c:,} |")
    lines += ["", "## Nodes by kind", "", "| kind | nodes |", "|---|---|"]
    for t, c in e["db"]["nodes_by_kind"].items():
        lines.append(f"| {t} | {c:,} |")
    lines += ["", "## Space by table and index (dbstat, with embeddings)", "", "| object | size |", "|---|---|"]
    for name, b in list(e["db"]["objects"].items())[:20]:
        lines.append(f"| {name} | {_mb(b)} |")
    lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=sysconfig.get_paths()["stdlib"], help="source tree to index (copied first)")
    ap.add_argument("--out-dir", default=str(RESULTS))
    ap.add_argument("--runs", type=int, default=3, help="full index runs per mode")
    ap.add_argument("--reindex-runs", type=int, default=5, help="no-change and one-file reindex runs per mode")
    ap.add_argument("--modes", default="embed,no-embed")
    ap.add_argument("--keep", help="keep the copied source and databases in this folder")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="embed", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        print(json.dumps(worker(args.db, args.src, args.mode)))
        return 0

    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r}; choose from {', '.join(MODES)}")
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    res: dict = {"machine": machine(), "command": "python bench/index_bench.py " + " ".join(argv or sys.argv[1:]),
                 "targets": TARGETS, "commit": os.environ.get("KGSEARCH_BENCH_COMMIT") or git_commit()}
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kgsearch_index_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src"
    try:
        if src.exists():
            shutil.rmtree(src)
        log(f"copying {args.src} to {src} ...")
        copy_source(Path(args.src), src)
        full_runs: dict[str, list[dict]] = {m: [] for m in modes}
        dbs: dict[str, Path] = {}
        for r in range(args.runs):
            for m in (modes if r % 2 == 0 else modes[::-1]):     # alternate the order: load hits both
                db = work / f"{m}.db"
                for suffix in ("", "-wal", "-shm", ".lock"):
                    if os.path.exists(str(db) + suffix):
                        os.remove(str(db) + suffix)
                out = run_worker(db, src, m)
                full_runs[m].append(out)
                dbs[m] = db
                log(f"full index [{m}] run {r + 1}: {out['seconds']} s, phases {out['phases']}, "
                    f"steps {step_seconds(out)}, peak RSS {out['peak_rss_mb']} MB")
        target = pick_module(src)
        original = target.read_bytes()
        res["changed_file"] = str(target.relative_to(src))
        res["modes"] = {}
        for m in modes:
            db = dbs[m]
            facts = db_facts(db)
            nochange = []
            for i in range(args.reindex_runs):
                nochange.append(run_worker(db, src, m))
                if nochange[-1]["files_loaded"] or nochange[-1]["nodes_added"] or nochange[-1]["nodes_modified"]:
                    log(f"warning: no-change reindex [{m}] loaded files or changed nodes: {nochange[-1]}")
            log(f"no-change reindex [{m}]: {[x['seconds'] for x in nochange]}")
            onefile = []
            for i in range(args.reindex_runs):
                addition = (f"\n\ndef _kgsearch_bench_added_{m.replace('-', '_')}_{i}(value):\n"
                            f"    \"\"\"Added by the index benchmark (run {i}).\"\"\"\n"
                            f"    return {target.stem}_helper_{i}(value) if value else len(str(value))\n")
                target.write_bytes(original + addition.encode())
                onefile.append(run_worker(db, src, m))
            log(f"one-file reindex [{m}]: {[x['seconds'] for x in onefile]}")
            target.write_bytes(original)                  # the appended functions go (not timed)
            run_worker(db, src, m)
            bodyedit = []
            for i in range(args.reindex_runs):
                target.write_bytes(body_edit(original, f"{m} run {i}"))
                bodyedit.append(run_worker(db, src, m))
            log(f"body-edit reindex [{m}]: {[x['seconds'] for x in bodyedit]}")
            target.write_bytes(original)
            restore = run_worker(db, src, m)
            after = db_facts(db)
            consistent = all(after[k] == facts[k] for k in ("nodes", "nodes_by_kind", "edges", "edges_by_type",
                                                             "edges_unresolved"))
            if not consistent:
                log(f"warning: [{m}] counts after restoring differ from the full index")
            res["modes"][m] = {"full": summarise_full(full_runs[m]), "db": facts,
                               "nochange": summarise_re(nochange), "onefile": summarise_re(onefile),
                               "bodyedit": summarise_re(bodyedit),
                               "restore_s": restore["seconds"], "consistent": consistent,
                               "db_after_restore": {k: after[k] for k in ("db_bytes", "nodes", "edges",
                                                                          "edges_unresolved")}}
        first = res["modes"][modes[0]]["db"]
        res["source"] = {"path": args.src, "files": first["files"], "bytes": first["source_bytes"],
                         "py_bytes": first["py_source_bytes"]}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    res["machine"]["loadavg_end"] = (loadavg() or [None])[0]

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "index.json").write_text(json.dumps(res, indent=1, sort_keys=True), encoding="utf-8")
    if set(modes) == set(MODES):
        write_md(res, out_dir / "index.md")
        print((out_dir / "index.md").read_text(encoding="utf-8"))
    else:
        print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
