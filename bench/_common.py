"""What every benchmark command shares: where things are, the machine it ran on, memory peaks,
the commit it measured, and how results are written (JSON + a Markdown table under
``bench/results/``).

A command does ``sys.path.insert(0, str(Path(__file__).resolve().parent))`` (or ``parents[1]``
from ``bench/studies/``) and ``from _common import ...``. Nothing here imports kgsearch, so a
command can measure its own import time.

Locations, each overridable by an environment variable (the smoke tests point them at a
temporary folder and at tiny inputs, so a test never writes into ``bench/results``):

* :data:`SHARED`: the shared benchmark data (``KGSEARCH_SHARED``/bench; default the first
  ``shared/bench`` found beside this checkout or above it: ``/work/shared`` for a worktree
  under ``/work/wt``);
* :data:`RESULTS`: where results go (``KGSEARCH_BENCH_RESULTS``, default ``bench/results``);
* :data:`WORK`: scratch indexes and caches (``KGSEARCH_BENCH_WORK``, default ``bench/work``,
  git-ignored).
"""
from __future__ import annotations

import json
import os
import platform
import resource
import shlex
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["ROOT", "SHARED", "SHARED_ROOT", "RESULTS", "WORK", "machine", "loadavg", "git_commit", "status_kb",
           "peak_rss_mib", "children_peak_rss_mib", "reset_peak", "pct", "median", "write_results", "md_table",
           "log"]

ROOT = Path(__file__).resolve().parents[1]


def _shared_root() -> Path:
    env = os.environ.get("KGSEARCH_SHARED")
    if env:
        return Path(env)
    for parent in ROOT.parents:
        if (parent / "shared" / "bench").is_dir():
            return parent / "shared"
    return ROOT.parent / "shared"


SHARED_ROOT = _shared_root()                 # (tools/ and bench/ live here)
SHARED = SHARED_ROOT / "bench"
RESULTS = Path(os.environ.get("KGSEARCH_BENCH_RESULTS") or ROOT / "bench" / "results")
WORK = Path(os.environ.get("KGSEARCH_BENCH_WORK") or ROOT / "bench" / "work")


def log(msg: str) -> None:
    """A timestamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- the machine
def loadavg() -> list[float]:
    """1, 5 and 15 minute load averages (empty where /proc is missing): recorded beside any
    timing, since the machine is shared."""
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return []


def machine() -> dict:
    """CPU model and cores, RAM, OS, Python, numpy and SQLite versions, load, date."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                ram = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass
    try:
        import numpy as np
        numpy = np.__version__
    except ImportError:
        numpy = None
    return {"cpu": cpu, "arch": platform.machine(), "cores": os.cpu_count(), "ram_gb": ram,
            "os": platform.platform(), "python": platform.python_version(), "numpy": numpy,
            "sqlite": sqlite3.sqlite_version, "load": loadavg(), "date": time.strftime("%Y-%m-%d %H:%M")}


def git_commit(paths: tuple[str, ...] = ("kgsearch", "data")) -> str:
    """The checkout's short commit, ``+dirty`` when ``paths`` have uncommitted changes (a
    result's own output files do not count); ``unknown`` outside a git checkout."""
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=10", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                                *paths], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


# ---------------------------------------------------------------------------- memory
def status_kb(field: str) -> int:
    """A ``/proc/self/status`` field in KiB (``VmRSS``, ``VmHWM``...); 0 where there is none."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_rss_mib() -> float:
    """This process's peak RSS: VmHWM (which :func:`reset_peak` and ``exec`` reset), else
    ``ru_maxrss``."""
    hwm = status_kb("VmHWM")
    if hwm:
        return hwm / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 1024)


def children_peak_rss_mib() -> float:
    """The largest peak RSS among the waited-for child processes (``ru_maxrss``)."""
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 1024)


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux: ``5`` into /proc/self/clear_refs), so the next
    :func:`peak_rss_mib` is the peak of what follows; False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------- numbers
def pct(values, p: float) -> float:
    """The ``p``-th percentile by nearest rank (NaN for no values)."""
    v = sorted(values)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def median(values) -> float:
    return pct(values, 50)


# ---------------------------------------------------------------------------- results
def md_table(header: list[str], rows: list[list]) -> list[str]:
    """Markdown table lines (cells as given, ``None`` shown as ``-``)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join("-" if c is None else str(c) for c in r) + " |" for r in rows]
    return out


def write_results(name: str, data: dict, md, out_dir: str | os.PathLike | None = None,
                  meta: dict | None = None) -> tuple[Path, Path]:
    """``<out_dir>/<name>.json`` (``data`` plus a ``meta`` block: machine, commit, the command
    line, unless ``data`` has its own ``meta``, which is then completed) and ``<name>.md``
    (``md``: a string or a list of lines). ``out_dir`` defaults to :data:`RESULTS`. Returns
    both paths."""
    out = Path(out_dir) if out_dir is not None else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    base = {"machine": machine(), "commit": git_commit(),
            "command": " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]])}
    doc = dict(data)
    doc["meta"] = {**base, **(meta or {}), **(data.get("meta") or {})}
    jp, mp = out / f"{name}.json", out / f"{name}.md"
    jp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    mp.write_text((md if isinstance(md, str) else "\n".join(md)).rstrip("\n") + "\n")
    return jp, mp
