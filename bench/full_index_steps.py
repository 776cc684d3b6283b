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
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import children_peak_rss_mib, peak_rss_mib, reset_peak, write_results  # noqa: E402

from kgsearch.budget import fixed_mmap_threshold  # noqa: E402
from kgsearch.indexer import IndexOptions, index_paths  # noqa: E402
from kgsearch.indexer import steps as S  # noqa: E402


def _hwm() -> int:
    return int(peak_rss_mib())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("root")
    ap.add_argument("--settings", default="{}")
    ap.add_argument("--out", default="full_index_steps")
    a = ap.parse_args(argv)
    if Path(a.db).exists():
        raise SystemExit(f"{a.db} exists; give a new path (this measures a fresh build)")
    out: dict = {"db": a.db, "root": a.root, "settings": json.loads(a.settings), "steps": {}}
    fixed_mmap_threshold()          # as `kgsearch index` does (a process setting: the library leaves it to the caller)
    originals = {mod: mod.update for mod in S.STEPS}
    for mod in S.STEPS:
        def wrap(ix, ch, settings=None, progress=None, _orig=mod.update, _name=mod.NAME):
            out["steps"].setdefault(_name, {})["before_mib"] = _hwm()     # (the peak so far)
            reset_peak()
            t = time.perf_counter()
            try:
                return _orig(ix, ch, settings, progress=progress)
            finally:
                out["steps"][_name].update(peak_mib=_hwm(), seconds=round(time.perf_counter() - t, 1))
                print(_name, out["steps"][_name], flush=True)
        mod.update = wrap
    t = time.perf_counter()
    try:
        index_paths(a.db, [a.root], IndexOptions(settings=out["settings"]))
    finally:
        for mod, update in originals.items():
            mod.update = update
    out["total_s"] = round(time.perf_counter() - t, 1)
    first = next(iter(out["steps"].values()), {})
    out["load_phase_peak_mib"] = first.get("before_mib")
    out["process_peak_mib"] = max([out["load_phase_peak_mib"] or 0] + [s["peak_mib"] for s in out["steps"].values()])
    out["children_peak_mib"] = int(children_peak_rss_mib())
    print(json.dumps(out))
    lines = ["## Full index, peak RSS per step (`python bench/full_index_steps.py`)", "",
             f"Root {a.root}, settings {a.settings}; one run; {out['total_s']} s in all.", "",
             "| phase | peak MiB | seconds |", "|---|---|---|",
             f"| load (before the first step) | {out['load_phase_peak_mib']} | |"]
    lines += [f"| {k} | {v['peak_mib']} | {v['seconds']} |" for k, v in out["steps"].items()]
    lines.append(f"| **whole process** | **{out['process_peak_mib']}** | {out['total_s']} |")
    lines.append(f"| loader workers (largest) | {out['children_peak_mib']} | |")
    write_results(a.out, out, lines)


if __name__ == "__main__":
    main()
