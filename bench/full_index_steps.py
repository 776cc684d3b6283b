"""A full index with the peak RSS of the load phase and of each derived step (Linux: VmHWM is
reset through /proc/self/clear_refs before each step, so each step's figure is its own peak,
counted from the memory the process held when it started).

    python bench/full_index_steps.py DB ROOT [--settings '{"neighbors": false}'] [--out NAME]

DB must not exist yet (a fresh build). Prints one line per step and writes
bench/results/NAME.{json,md} (default ``full_index_steps``). Loader worker processes are
reported apart (``children_peak_mib``).
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from kgsearch.budget import fixed_mmap_threshold
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.indexer import steps as S

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def _hwm() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) // 1024
    return 0


def _reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("root")
    ap.add_argument("--settings", default="{}")
    ap.add_argument("--out", default="full_index_steps")
    a = ap.parse_args()
    if Path(a.db).exists():
        raise SystemExit(f"{a.db} exists; give a new path (this measures a fresh build)")
    out: dict = {"db": a.db, "root": a.root, "settings": json.loads(a.settings), "steps": {}}
    fixed_mmap_threshold()          # as `kgsearch index` does (a process setting: the library leaves it to the caller)
    for mod in S.STEPS:
        def wrap(ix, ch, settings=None, progress=None, _orig=mod.update, _name=mod.NAME):
            out["steps"].setdefault(_name, {})["before_mib"] = _hwm()     # (the peak so far)
            _reset()
            t = time.perf_counter()
            try:
                return _orig(ix, ch, settings, progress=progress)
            finally:
                out["steps"][_name].update(peak_mib=_hwm(), seconds=round(time.perf_counter() - t, 1))
                print(_name, out["steps"][_name], flush=True)
        mod.update = wrap
    t = time.perf_counter()
    index_paths(a.db, [a.root], IndexOptions(settings=out["settings"]))
    out["total_s"] = round(time.perf_counter() - t, 1)
    first = next(iter(out["steps"].values()), {})
    out["load_phase_peak_mib"] = first.get("before_mib")
    out["process_peak_mib"] = max([out["load_phase_peak_mib"] or 0] + [s["peak_mib"] for s in out["steps"].values()])
    out["children_peak_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    print(json.dumps(out))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{a.out}.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = ["## Full index, peak RSS per step (`python bench/full_index_steps.py`)", "",
             f"Root {a.root}, settings {a.settings}; one run; {out['total_s']} s in all.", "",
             "| phase | peak MiB | seconds |", "|---|---|---|",
             f"| load (before the first step) | {out['load_phase_peak_mib']} | |"]
    lines += [f"| {k} | {v['peak_mib']} | {v['seconds']} |" for k, v in out["steps"].items()]
    lines.append(f"| **whole process** | **{out['process_peak_mib']}** | {out['total_s']} |")
    lines.append(f"| loader workers (largest) | {out['children_peak_mib']} | |")
    (RESULTS / f"{a.out}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
