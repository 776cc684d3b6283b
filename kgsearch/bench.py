"""``kgsearch bench``: what a phone user cares about, measured on this device.

On the user's index (``--db``) or on a built-in corpus (``--corpus demo`` = the shipped demo
knowledge base, ``--corpus stdlib`` = the standard library source of the running Python, real
code nobody here wrote): full index time, no-change reindex time, query latency p50/p95/p99
overall and per stage, queries/second, query-process peak RSS (measured in a child process
that only opens the index and queries), cold CLI start to first result, DB size, and the device
facts (device name, CPU, cores, RAM, Python, numpy, SQLite, FTS5, and whether the CPU is emulated).
"""
from __future__ import annotations

import json
import os
import platform
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError


@dataclass
class BenchOptions:
    db: str | None = None
    corpus: str | None = None          # 'demo', 'stdlib' or a path (ignored when db is given)
    queries: int = 200
    out: str | None = None
    seed: int = 0
    cold_runs: int = 5


BINFMT_DIR = "/proc/sys/fs/binfmt_misc"
ARM_MACHINES = ("aarch64", "arm64", "armv7l", "armv8l", "armv8b", "arm")
# the first 20 bytes of an aarch64 ELF executable as binfmt_misc prints them ("magic ...")
AARCH64_ELF_MAGIC = "7f454c460201010000000000000000000200b700"


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def getprop(name: str) -> str:
    """An Android system property ('' off Android, or when getprop is missing or hangs)."""
    exe = shutil.which("getprop")
    if exe is None:
        return ""
    try:
        out = subprocess.run([exe, name], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def cpu_name(cpuinfo: str) -> str:
    """The CPU as /proc/cpuinfo names it (x86 'model name', older ARM kernels' 'Hardware'),
    else what platform says."""
    for line in cpuinfo.splitlines():
        if line.lower().startswith(("model name", "hardware", "cpu model")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def device_name(prop=getprop, read=_read_text, cpuinfo: str | None = None) -> str:
    """What the device is called: on Android the manufacturer and model from ``getprop`` (e.g.
    'Google Pixel 7a'; /proc/cpuinfo there names the SoC at best), else a board's device-tree
    model (Raspberry Pi and other ARM boards), else the DMI product name (PCs, VMs), else the
    CPU."""
    model = prop("ro.product.model")
    if model:
        maker = prop("ro.product.manufacturer")
        return f"{maker} {model}" if maker and not model.lower().startswith(maker.lower()) else model
    for path in ("/proc/device-tree/model", "/sys/class/dmi/id/product_name"):
        name = read(path).replace("\x00", "").strip()
        if name and name.lower() not in ("none", "to be filled by o.e.m.", "system product name"):
            return name
    return cpu_name(read("/proc/cpuinfo") if cpuinfo is None else cpuinfo)


def detect_emulation(machine: str | None = None, cpuinfo: str | None = None, environ=None,
                     binfmt_dir: str = BINFMT_DIR) -> str | None:
    """Why this ARM process is (probably) emulated on another CPU, or None when it cannot tell
    (native, or no evidence). qemu-user runs ARM code on an x86 host and passes the host's
    /proc/cpuinfo through, so an aarch64 process that sees an x86 CPU (vendor_id, sse flags) or
    no ARM CPU fields at all is emulated; a QEMU_* variable or a qemu binfmt_misc handler for
    aarch64 ELF files, seen from an aarch64 process, say the same."""
    machine = (machine or platform.machine()).lower()
    if not machine.startswith(ARM_MACHINES):
        return None
    cpuinfo = _read_text("/proc/cpuinfo") if cpuinfo is None else cpuinfo
    environ = os.environ if environ is None else environ
    if cpuinfo:
        if re.search(r"^vendor_id\s*:", cpuinfo, re.M) or re.search(r"^flags\s*:.*\bsse2\b", cpuinfo, re.M):
            return (f"{machine} code on an x86 CPU ({cpu_name(cpuinfo)}): /proc/cpuinfo shows the host's CPU, "
                    "as under qemu-user")
        if not re.search(r"^(CPU implementer|CPU architecture|Features)\s*:", cpuinfo, re.M | re.I):
            return f"{machine} process but /proc/cpuinfo shows no ARM CPU"
    qemu_vars = sorted(k for k in environ if k.startswith("QEMU_"))
    if qemu_vars:
        return f"qemu-user: {', '.join(qemu_vars)} set"
    try:
        entries = sorted(os.listdir(binfmt_dir))
    except OSError:
        entries = []
    for name in entries:
        if name in ("register", "status"):
            continue
        text = _read_text(os.path.join(binfmt_dir, name))
        if text.startswith("enabled") and AARCH64_ELF_MAGIC in text.replace(" ", ""):
            interp = re.search(r"^interpreter\s+(\S+)", text, re.M)
            return (f"binfmt_misc handler '{name}' runs aarch64 programs"
                    + (f" through {interp.group(1)}" if interp else ""))
    return None


def device_facts() -> dict:
    import numpy as np

    cpuinfo = _read_text("/proc/cpuinfo")
    cpu = cpu_name(cpuinfo)
    ram = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    ram = round(int(line.split()[1]) / 1024 / 1024, 2)
                    break
    except OSError:
        pass
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        fts5 = True
    except sqlite3.OperationalError:
        fts5 = False
    try:
        con.execute("CREATE VIRTUAL TABLE t2 USING fts5(x, tokenize='trigram')")
        trigram = True
    except sqlite3.OperationalError:
        trigram = False
    con.close()
    return {
        "device": device_name(cpuinfo=cpuinfo), "emulated": detect_emulation(cpuinfo=cpuinfo),
        "machine": platform.machine(), "system": platform.system(), "release": platform.release(),
        "cpu": cpu, "cores": os.cpu_count(), "ram_gb": ram,
        "termux": "com.termux" in os.environ.get("PREFIX", ""),
        "python": platform.python_version(), "numpy": np.__version__, "sqlite": sqlite3.sqlite_version,
        "fts5": fts5, "fts5_trigram": trigram,
    }


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0}
    v = sorted(values)

    def pct(p):
        return round(v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))], 3)

    return {"p50": pct(50), "p95": pct(95), "p99": pct(99), "mean": round(sum(v) / len(v), 3)}


def make_queries(db: str, n: int, seed: int = 0) -> list[str]:
    """Deterministic sample of realistic queries from the index itself: node names, 2-4 word
    phrases from node texts, and a few natural-language questions built from them."""
    from .store.db import Index

    rng = random.Random(seed)
    with Index.open(db, readonly=True) as ix:
        rows = ix.conn.execute("SELECT name, kgtext(text) FROM nodes WHERE flags & 1 = 0 AND length(kgtext(text)) > 40 "
                               "ORDER BY id").fetchall()
    if not rows:
        return ["search"] * n
    words_rx = re.compile(r"[A-Za-z][A-Za-z_]{2,}")
    out = []
    while len(out) < n:
        name, text = rows[rng.randrange(len(rows))]
        kind = rng.random()
        words = words_rx.findall(text[:600])
        if kind < 0.3 and name:
            out.append(name[:60])
        elif kind < 0.8 and len(words) >= 4:
            i = rng.randrange(len(words) - 3)
            out.append(" ".join(words[i:i + rng.randint(2, 4)]))
        elif len(words) >= 6:
            i = rng.randrange(len(words) - 5)
            out.append("how do I " + " ".join(words[i:i + 3]))
        elif name:
            out.append(name[:60])
    return out


CHILD = """
import json, resource, sys, time
from kgsearch.query import Engine, SearchOptions
from kgsearch.store.db import Index
db, qfile = sys.argv[1], sys.argv[2]
queries = json.load(open(qfile))
ix = Index.open(db, readonly=True)
eng = Engine(ix)
opts = SearchOptions(k=10, use_cache=False)
t0 = time.perf_counter(); eng.search(queries[0], opts); first = time.perf_counter() - t0
for q in queries[:5]:
    eng.search(q, opts)
lat, stages = [], {}
t_all = time.perf_counter()
for q in queries:
    t = time.perf_counter()
    r = eng.search(q, opts)
    lat.append((time.perf_counter() - t) * 1000)
    for k, v in r.timings_ms.items():
        stages.setdefault(k, []).append(v)
wall = time.perf_counter() - t_all
# VmHWM is this process's own peak; ru_maxrss after fork+exec can carry the parent's peak on Linux
rss = None
try:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            rss = int(line.split()[1])
except OSError:
    pass
if rss is None:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.platform == "darwin":
        rss /= 1024
print(json.dumps({"lat": lat, "stages": stages, "wall": wall, "first_ms": first * 1000,
                  "rss_kb": rss, "channels": r.channels_run, "notices": eng.notices()}))
"""


def _cold_start(db: str, query: str, runs: int) -> dict:
    times = []
    help_times = []
    env = dict(os.environ)
    # an installed package runs from compiled bytecode; make sure this one does too
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    import compileall
    compileall.compile_dir(str(Path(__file__).resolve().parent), quiet=1)
    subprocess.run([sys.executable, "-m", "kgsearch", "search", query, "--db", db, "-k", "5", "--no-cache", "-q"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)   # warm-up
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kgsearch", "search", query, "--db", db, "-k", "5", "--no-cache",
                        "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        times.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kgsearch", "--help"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env, check=False)
        help_times.append((time.perf_counter() - t) * 1000)
    times.sort()
    help_times.sort()
    return {"search_ms": round(times[len(times) // 2], 1), "help_ms": round(help_times[len(help_times) // 2], 1),
            "runs": runs}


def run_bench(opts: BenchOptions) -> dict:
    from .indexer import IndexOptions, index_paths
    from .store.db import Index

    for flag, value in (("--queries", opts.queries), ("--cold-runs", opts.cold_runs)):
        if not isinstance(value, int) or value < 1:
            raise UsageError(f"{flag} must be a whole number >= 1, got {value!r}")
    if opts.out and os.path.isdir(os.path.expanduser(opts.out)):      # known now, not after the whole run
        raise UsageError(f"--out {opts.out} is a folder; give a file to write, e.g. "
                         f"{os.path.join(opts.out, 'bench.json')}")
    result: dict = {"device": device_facts(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    tmp = None
    if opts.db:
        db = str(Path(opts.db).expanduser())
        with Index.open(db, readonly=True):
            pass
        result["corpus"] = "user index"
        t = time.perf_counter()
        rep = index_paths(db, [], IndexOptions()) if _has_roots(db) else None
        result["index_seconds"] = None
        result["reindex_nochange_seconds"] = round(time.perf_counter() - t, 3) if rep else None
    else:
        corpus = opts.corpus or "demo"
        if corpus == "demo":
            from .demo import demo_dir
            src = demo_dir()
        elif corpus == "stdlib":
            src = stdlib_dir()
        else:
            src = Path(corpus).expanduser()
        tmp = tempfile.mkdtemp(prefix="kgsearch-bench-")
        db = os.path.join(tmp, "bench.db")
        result["corpus"] = f"{corpus} ({src})"
        t = time.perf_counter()
        rep = index_paths(db, [str(src)], IndexOptions())
        result["index_seconds"] = round(time.perf_counter() - t, 3)
        result["index_phases"] = rep.phases
        result["index_steps"] = {k: v.get("seconds") for k, v in rep.steps.items()}
        t = time.perf_counter()
        index_paths(db, [str(src)], IndexOptions())
        result["reindex_nochange_seconds"] = round(time.perf_counter() - t, 3)
    with Index.open(db, readonly=True) as ix:
        ix.checkpoint()
        result["db_mb"] = round(ix.size_bytes() / 1e6, 2)
        result["nodes"] = ix.node_count()
        result["edges"] = ix.conn.execute("SELECT count(*) FROM edges WHERE dst IS NOT NULL").fetchone()[0]
    queries = make_queries(db, opts.queries, opts.seed)
    qfile = os.path.join(tmp or tempfile.gettempdir(), f"kgsearch-bench-queries-{os.getpid()}.json")
    with open(qfile, "w", encoding="utf-8") as fh:
        json.dump(queries, fh)
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, db, qfile], capture_output=True, text=True, check=False)
    finally:
        os.unlink(qfile)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed: {proc.stderr.strip().splitlines()[-1:]}")
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    result["queries"] = len(queries)
    result["query_ms"] = _percentiles(child["lat"])
    result["first_query_ms"] = round(child["first_ms"], 2)
    result["qps"] = round(len(queries) / child["wall"], 1) if child["wall"] else None
    result["stages_ms"] = {k: _percentiles(v) for k, v in child["stages"].items()}
    result["peak_rss_mb"] = round(child["rss_kb"] / 1024, 1)
    result["channels"] = child["channels"]
    result["notices"] = child["notices"]
    cold = _cold_start(db, queries[0], opts.cold_runs)
    result["cold_start_ms"] = cold["search_ms"]
    result["help_start_ms"] = cold["help_ms"]
    result["cold_runs"] = cold["runs"]
    try:
        if opts.out:
            Path(opts.out).expanduser().parent.mkdir(parents=True, exist_ok=True)
            Path(opts.out).expanduser().write_text(json.dumps(result, indent=2))
    except OSError as exc:
        from .errors import DataError

        raise DataError(f"cannot write the result ({exc.strerror or exc}); choose a file you can write to",
                        opts.out) from None
    finally:
        if tmp:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    return result


def _has_roots(db: str) -> bool:
    from .store.db import Index

    with Index.open(db, readonly=True) as ix:
        return bool(ix.meta_json("roots", []))


def format_bench(r: dict) -> str:
    d = r["device"]
    name = d.get("device") or d["cpu"]
    cpu = "" if name == d["cpu"] else f"{d['cpu']}, "
    lines = [f"## kgsearch bench: {r['corpus']}",
             f"device: {name} ({cpu}{d['machine']}, {d['cores']} cores, {d['ram_gb']} GB), Python {d['python']}, "
             f"numpy {d['numpy']}, SQLite {d['sqlite']}, FTS5 {'yes' if d['fts5'] else 'no'}"]
    if d.get("emulated"):
        lines.append(f"EMULATED ({d['emulated']}): times measure the emulator, not the device")
    lines += ["",
             "| measure | value |", "|---|---|"]
    rows = [("nodes / edges", f"{r['nodes']} / {r['edges']}"),
            ("index (full)", f"{r['index_seconds']} s" if r.get("index_seconds") is not None else "-"),
            ("reindex (no change)", f"{r['reindex_nochange_seconds']} s" if r.get("reindex_nochange_seconds") is not None else "-"),
            ("DB size", f"{r['db_mb']} MB"),
            ("query p50 / p95 / p99", f"{r['query_ms']['p50']} / {r['query_ms']['p95']} / {r['query_ms']['p99']} ms"),
            ("queries/second", f"{r['qps']}"),
            ("first query (cold caches)", f"{r['first_query_ms']} ms"),
            ("peak RSS (query process)", f"{r['peak_rss_mb']} MB"),
            ("CLI start to first result", f"{r['cold_start_ms']} ms (median of {r['cold_runs']})"),
            ("kgsearch --help start", f"{r['help_start_ms']} ms")]
    lines += [f"| {a} | {b} |" for a, b in rows]
    lines += ["", "| stage | p50 ms | p95 ms |", "|---|---|---|"]
    for k, v in r["stages_ms"].items():
        lines.append(f"| {k} | {v['p50']} | {v['p95']} |")
    return "\n".join(lines)
