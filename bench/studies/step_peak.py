"""Peak RSS of one derived step's full rebuild on an existing index, per phase.

    python bench/studies/step_peak.py DB STEP        (STEP: text, neighbors, embed, graph)

Fresh process; the step runs with a full ChangeSet inside an outer transaction that is rolled
back, so the index is left as it was (use a copy anyway: it is opened for writing). Prints one
JSON line: RSS before, peak (``ru_maxrss``), peak per progress phase (sampled every 20 ms),
the phases' start times, wall and CPU seconds.
"""
from __future__ import annotations

import json
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kgsearch.budget import fixed_mmap_threshold  # noqa: E402
from kgsearch.indexer.steps import STEPS  # noqa: E402
from kgsearch.store.db import Index  # noqa: E402
from kgsearch.types import ChangeSet  # noqa: E402


def _rss() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    db, name = sys.argv[1], sys.argv[2]
    mod = {m.NAME: m for m in STEPS}[name]
    fixed_mmap_threshold()          # as `kgsearch index` does (a process setting: the library leaves it to the caller)
    phase, peaks, starts = ["start"], {}, []

    def sample():
        while True:
            p = phase[0]
            peaks[p] = max(peaks.get(p, 0.0), _rss())
            time.sleep(0.02)

    threading.Thread(target=sample, daemon=True).start()
    t0, c0 = time.perf_counter(), time.process_time()

    def progress(d):
        p = str(d.get("step") or d.get("phase") or d)[:60]
        if p != phase[0]:
            phase[0] = p
            starts.append((p, round(time.perf_counter() - t0, 1)))

    with Index.open(db) as ix:
        ix.conn.execute("BEGIN IMMEDIATE")            # outer transaction: rolled back below
        before = _rss()
        mod.update(ix, ChangeSet(generation=ix.generation, full=True), ix.meta_json("settings"),
                   progress=progress)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ix.conn.execute("ROLLBACK")
    print(json.dumps({"step": name, "rss_before_mib": round(before), "peak_mib": round(peak),
                      "phase_peaks_mib": {k: round(v) for k, v in peaks.items()}, "phase_starts_s": starts,
                      "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}))


if __name__ == "__main__":
    main()
