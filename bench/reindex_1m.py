"""One-file reindex of a large index, per change kind, as ``bench/scale.py``'s ``reindex`` and
``reindex_edge`` and ``reindex_nodes`` steps make them: the first document of
``shard-00000.jsonl`` gets " Revised." appended to its description (then the file is
restored), the shard gains an edge between its first two nodes (then loses it), gains a new
node (then loses it), and a new file with one node comes (then goes). Each change is a fresh ``kgsearch index``
process: wall time, CPU seconds and peak RSS (wait4), and the per-step seconds the run reports;
each round starts with a run where nothing changed (bytecode written, page cache warm). The
code measured is the one ``python -m kgsearch`` imports from the current directory.

    python bench/reindex_1m.py --db bench/work/scale/index-1000000.db \
        --corpus bench/work/scale/corpus-1000000 --runs 2 --tag after --out bench/results/reindex_1m.json

``--prof`` runs each index process as this script's ``_prof`` child: the indexer in-process
with the peak RSS of each derived step (VmHWM reset before it through /proc/self/clear_refs;
Linux only), its seconds and CPU seconds (``KG_PROF_STEP=graph``: a cProfile of that step on
stderr). The corpus is left as it was. Results: ``--out`` (a JSON file, runs added under
``--tag``, with the machine and commit) and, with ``--md FILE``, the before/after table.
(bench/results/reindex_1m.md is a hand-written report around such tables: never overwritten.)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, loadavg, machine, peak_rss_mib, reset_peak, status_kb  # noqa: E402
from scale import (NEW_SHARD, add_shard_edge, append_shard_node, child_json, kg_cmd, revise_shard,  # noqa: E402
                   run_measured, write_new_shard)

KINDS = ("a description changed", "restored", "the file gains an edge", "the edge removed",
         "a node appended", "the node removed", "a new file with one node", "the file removed")


def _shard(corpus: Path) -> Path:
    return corpus / "shard-00000.jsonl"


def one(args, kind: str) -> dict:
    if args.prof:
        cmd = [sys.executable, str(Path(__file__).resolve()), "_prof", str(args.corpus), "--db", str(args.db)]
    else:
        cmd = kg_cmd("index", str(args.corpus), "--db", str(args.db), "--json")
    la = loadavg()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # (as installed: bytecode cached, not compiled per run)
    r = run_measured(cmd, env=env)
    rep = child_json(r)
    out = {"kind": kind, "wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_rss_mb": r["peak_rss_mb"],
           "load_before": la, "files_loaded": rep.get("files_loaded"), "phases": rep.get("phases"),
           "steps": {k: {kk: vv for kk, vv in v.items() if not isinstance(vv, (list, dict))}
                     for k, v in (rep.get("steps") or {}).items()}}
    for line in r["stderr"].splitlines():
        if line.startswith("PROF "):
            out["step_peaks"] = json.loads(line[5:])
    return out


def round_(args) -> list[dict]:
    one(args, "warm-up: nothing changed")        # (bytecode written, page cache warm)
    shard = _shard(args.corpus)
    backup = shard.with_suffix(".jsonl.orig")
    shutil.copyfile(shard, backup)
    res = []
    try:
        revise_shard(shard)
        res.append(one(args, KINDS[0]))
        shutil.copyfile(backup, shard)
        res.append(one(args, KINDS[1]))
        add_shard_edge(shard)
        res.append(one(args, KINDS[2]))
        shutil.copyfile(backup, shard)
        res.append(one(args, KINDS[3]))
        append_shard_node(shard)
        res.append(one(args, KINDS[4]))
        shutil.copyfile(backup, shard)
        res.append(one(args, KINDS[5]))
        write_new_shard(args.corpus)
        res.append(one(args, KINDS[6]))
        (args.corpus / NEW_SHARD).unlink()
        res.append(one(args, KINDS[7]))
    finally:
        shutil.copyfile(backup, shard)
        backup.unlink()
        if (args.corpus / NEW_SHARD).exists():
            (args.corpus / NEW_SHARD).unlink()
    return res


def report(data: dict, tags=("before", "after")) -> str:
    """Markdown table: per change kind and tag, wall / CPU seconds (median of the runs, and
    each run) and peak RSS (largest run), plus the graph step's seconds."""
    import statistics

    lines = ["| change | " + " | ".join(f"{t}: wall s / CPU s / peak MiB (runs)" for t in tags)
             + " | " + " | ".join(f"graph step s, {t}" for t in tags) + " |",
             "|---|" + "---|" * (2 * len(tags))]
    for kind in KINDS:
        cells, graph = [], []
        for t in tags:
            rs = [r for r in data.get(t, {}).get("runs", []) if r["kind"] == kind]
            if not rs:
                cells.append("-")
                graph.append("-")
                continue
            med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
            cells.append(f"**{med('wall_s'):.1f} / {med('cpu_s'):.1f} / {max(r['peak_rss_mb'] for r in rs):.0f}** ("
                         + "; ".join(f"{r['wall_s']:.1f}/{r['cpu_s']:.1f}/{r['peak_rss_mb']:.0f}" for r in rs) + ")")
            graph.append(", ".join(f"{r['steps'].get('graph', {}).get('seconds', 0):.1f}" for r in rs))
        lines.append(f"| {kind} | " + " | ".join(cells) + " | " + " | ".join(graph) + " |")
    return "\n".join(lines) + "\n"


def prof(argv: list[str]) -> int:
    """The ``_prof`` child: ``kgsearch index ARGV --json`` in this process, each derived step
    wrapped to record its peak RSS, seconds and CPU seconds (one ``PROF`` JSON line on stderr)."""
    from kgsearch.cli import main as cli
    from kgsearch.indexer import steps

    out: dict = {}
    for mod in steps.STEPS:
        def upd(*a, _orig=mod.update, _name=mod.NAME, **k):
            rss0, before = status_kb("VmRSS") / 1024, peak_rss_mib()
            reset_peak()
            t, c = time.perf_counter(), time.process_time()
            profile = None
            if os.environ.get("KG_PROF_STEP") == _name:           # a cProfile of one step, to stderr
                import cProfile
                profile = cProfile.Profile()
                profile.enable()
            try:
                return _orig(*a, **k)
            finally:
                if profile is not None:
                    import pstats
                    profile.disable()
                    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(35)
                out[_name] = {"rss_before": round(rss0), "hwm_before": round(before), "peak": round(peak_rss_mib()),
                              "rss_after": round(status_kb("VmRSS") / 1024), "s": round(time.perf_counter() - t, 2),
                              "cpu": round(time.process_time() - c, 2)}
        mod.update = upd
    t = time.perf_counter()
    try:
        return cli(["index"] + argv + ["--json"])
    finally:
        out["total"] = {"peak": round(peak_rss_mib()), "s": round(time.perf_counter() - t, 2)}
        print("PROF", json.dumps(out), file=sys.stderr)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_prof":
        sys.exit(prof(argv[1:]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--tag", default="run")
    ap.add_argument("--prof", action="store_true")
    ap.add_argument("--out", type=Path, help="JSON file: results are added under --tag")
    ap.add_argument("--md", type=Path, help="write the before/after table of --out here")
    ap.add_argument("--table", action="store_true", help="print the before/after table of --out and stop")
    args = ap.parse_args(argv)
    if args.table:
        if not args.out:
            ap.error("--table needs --out")
        print(report(json.loads(args.out.read_text())), end="")
        return
    runs = []
    for i in range(args.runs):
        for r in round_(args):
            r["run"] = i + 1
            runs.append(r)
            print(f"{args.tag} run {i + 1} {r['kind']}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, "
                  f"{r['peak_rss_mb']:.0f} MiB; steps "
                  + ", ".join(f"{k} {v.get('seconds')}" for k, v in r["steps"].items())
                  + (f"; step peaks {r['step_peaks']}" if "step_peaks" in r else ""), flush=True)
    if not args.out:
        return
    data = json.loads(args.out.read_text()) if args.out.exists() else {}
    data[args.tag] = {"machine": machine(), "commit": git_commit(), "db": str(args.db), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    if args.md:
        tags = tuple(t for t in ("before", "after") if t in data) or (args.tag,)
        args.md.write_text(f"## One-file reindex per change kind (`python bench/reindex_1m.py`), {args.db}\n\n"
                           + report(data, tags))


if __name__ == "__main__":
    main()
