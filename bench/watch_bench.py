"""`kgsearch watch`: how soon a change is searchable, and what the watcher costs while idle.

    python bench/watch_bench.py latency [--notes 2000] [--rounds 20] [--backends inotify,poll]
    python bench/watch_bench.py idle [--minutes 10] [--backends inotify,poll]

The vault: the first ``--notes`` documents of a BEIR corpus (``--corpus``, default scifact from
../shared/bench) written as Markdown notes (``# title`` + text) in folders of 100, indexed in
full (embeddings included) before anything is measured.

latency: one ``kgsearch watch --json`` process per backend on the vault; ``--rounds`` changes of
each kind, one at a time: an edit (a unique word appended to a note), a new note (with a unique
word), a delete (of a note with a unique word) and a rename (of such a note, to a new name). The
latency of a change is the time from the file operation's return to the first search (the
library, in this process, polling every 20 ms) whose top 10 shows it: the note's key first for
the word, or no longer there after a delete. Between changes the watcher is let go idle.

idle: one watcher per backend (each on its own copy of the index), started, its catch-up run
done, then sampled every 5 s for ``--minutes``: CPU time (user + system, the process and any
child), RSS and peak RSS, voluntary context switches (wake-ups). Both run at once.

Writes bench/results/watch_latency.{json,md} or bench/results/watch_idle.{json,md}; every record
carries the machine, the commit and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import string
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SHARED = next((p / "bench" for p in [Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared")),
                                     ROOT.parent.parent / "shared"] if (p / "bench").is_dir()),
              ROOT.parent / "shared" / "bench")
sys.path.insert(0, str(ROOT))


# ------------------------------------------------------------------------------------ helpers
def loadavg() -> list[float]:
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return []


def machine() -> dict:
    cpu = platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "numpy": numpy.__version__,
            "sqlite": sqlite3.sqlite_version, "kernel": platform.release()}


def commit() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                                "kgsearch"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(p / 100 * (len(v) - 1))))]


def word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


def make_vault(work: Path, corpus: str, n: int) -> Path:
    notes = work / "notes"
    if notes.exists():
        shutil.rmtree(notes)
    src = SHARED / corpus / "corpus.jsonl"
    if not src.exists():
        raise SystemExit(f"{src} is missing (../shared/bench); pass --corpus NAME of a set that is there")
    with open(src, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n:
                break
            d = json.loads(line)
            folder = notes / f"f{i // 100:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            title = (d.get("title") or d["_id"]).replace("\n", " ")
            (folder / f"n{i:05d}.md").write_text(f"# {title}\n\n{d.get('text', '')}\n", encoding="utf-8")
    return notes


def kg(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgsearch", *args]


def env() -> dict:
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    return e


def build_index(notes: Path, db: Path) -> float:
    for p in db.parent.glob(db.name + "*"):
        p.unlink()
    t = time.perf_counter()
    subprocess.run(kg("--db", str(db), "index", str(notes), "-q"), check=True, env=env())
    return time.perf_counter() - t


class Watch:
    """A ``kgsearch watch --json`` process and its events."""

    def __init__(self, db: Path, notes: Path | None, backend: str):
        args = ["--db", str(db), "watch", "--json", "--backend", backend] + ([str(notes)] if notes else [])
        self.p = subprocess.Popen(kg(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        self.events: list[dict] = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            self.events.append(json.loads(line))

    def runs(self) -> list[dict]:
        return [e for e in self.events if e["event"] == "run"]

    def wait_runs(self, n: int, timeout: float = 600) -> None:
        end = time.monotonic() + timeout
        while len(self.runs()) < n:
            if time.monotonic() > end or self.p.poll() is not None:
                raise SystemExit(f"watcher gave no run {n} (exit {self.p.poll()}): {self.p.stderr.read()[-800:]}")
            time.sleep(0.05)

    def stop(self) -> int:
        self.p.terminate()
        return self.p.wait(60)


# ------------------------------------------------------------------------------------ latency
def searchable(db: Path, cond, timeout: float = 60.0) -> float:
    """Seconds from this call until ``cond()`` holds (a search, polled every 20 ms); NaN after ``timeout``."""
    t0 = time.perf_counter()
    while True:
        if cond():
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout:
            return float("nan")
        time.sleep(0.02)


def top_keys(db: Path, q: str) -> list[str]:
    import kgsearch

    # a note's sections are nodes of their own (md:f000/n00001#heading): the note is what they belong to
    return [h.key.split("#", 1)[0] for h in kgsearch.search(q, db=str(db), k=10, use_cache=False).hits]


def key_of(notes: Path, path: Path) -> str:
    return "md:" + path.relative_to(notes).with_suffix("").as_posix()


def latency_backend(work: Path, notes: Path, db: Path, backend: str, rounds: int, rng: random.Random) -> dict:
    w = Watch(db, notes, backend)
    w.wait_runs(1)
    kinds = {"edit": [], "new": [], "delete": [], "rename": []}
    run_s = {k: [] for k in kinds}
    existing = sorted(notes.rglob("*.md"))
    dirs = sorted({p.parent for p in existing})
    created: list[tuple[Path, str]] = []
    t_start = time.time()
    load0 = loadavg()

    def settle():
        time.sleep(0.6)                       # the watcher idle again: each change is its own burst

    def measure(kind: str, op, cond):
        n_runs = len(w.runs())
        op()
        lat = searchable(db, cond)            # from the operation's return
        kinds[kind].append(round(lat, 4) if lat == lat else lat)
        settle()
        run_s[kind].append(sum(r["seconds"] for r in w.runs()[n_runs:]))

    for i in range(rounds):
        # an edit: a unique word appended to an existing note
        p = existing[rng.randrange(len(existing))]
        wd = word(rng)
        text = p.read_text(encoding="utf-8")
        measure("edit", lambda p=p, text=text, wd=wd: p.write_text(text + f"\n{wd}\n", encoding="utf-8"),
                lambda p=p, wd=wd: top_keys(db, wd)[:1] == [key_of(notes, p)])
        # a new note
        wd = word(rng)
        p = dirs[rng.randrange(len(dirs))] / f"new_{wd}.md"
        measure("new", lambda p=p, wd=wd: p.write_text(f"# New {wd}\n\nwritten now: {wd}\n", encoding="utf-8"),
                lambda p=p, wd=wd: top_keys(db, wd)[:1] == [key_of(notes, p)])
        created.append((p, wd))
        # a rename of a note created earlier
        p, wd = created.pop(0)
        q = p.with_name(f"renamed_{word(rng)}.md")
        measure("rename", lambda p=p, q=q: p.rename(q), lambda q=q, wd=wd: top_keys(db, wd)[:1] == [key_of(notes, q)])
        created.append((q, wd))
        # a delete of a note created earlier
        p, wd = created.pop(0)
        measure("delete", lambda p=p: p.unlink(), lambda p=p, wd=wd: key_of(notes, p) not in top_keys(db, wd))
    code = w.stop()
    out = {"backend": backend, "rounds": rounds, "exit": code, "load_before": load0, "load_after": loadavg(),
           "seconds": round(time.time() - t_start, 1), "kinds": {}}
    for k, v in kinds.items():
        ok = [x for x in v if x == x]
        out["kinds"][k] = {"latency_s": v, "median_s": round(statistics.median(ok), 3) if ok else None,
                           "p95_s": round(pct(ok, 95), 3) if ok else None, "max_s": round(max(ok), 3) if ok else None,
                           "missed": len(v) - len(ok), "run_seconds_median": round(statistics.median(run_s[k]), 3)}
    allv = [x for v in kinds.values() for x in v if x == x]
    out["all"] = {"median_s": round(statistics.median(allv), 3), "p95_s": round(pct(allv, 95), 3),
                  "within_2s": sum(1 for x in allv if x <= 2.0), "n": len(allv)}
    return out


def cmd_latency(args) -> dict:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    notes = make_vault(work, args.corpus, args.notes)
    rng = random.Random(args.seed)
    res = {"what": "watch latency", "corpus": args.corpus, "notes": args.notes, "machine": machine(),
           "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M"), "backends": {}}
    for backend in args.backends.split(","):
        db = work / f"lat-{backend}.db"
        res[f"index_seconds_{backend}"] = round(build_index(notes, db), 1)
        res["backends"][backend] = latency_backend(work, notes, db, backend, args.rounds, rng)
        print(json.dumps({backend: res["backends"][backend]["all"]}), file=sys.stderr)
    return res


def md_latency(r: dict) -> str:
    lines = [f"# `kgsearch watch`: change to searchable (`python bench/watch_bench.py latency`)", "",
             f"{r['date']}, commit {r['commit']}, {r['machine']['cpu']} ({r['machine']['cores']} cores), "
             f"Python {r['machine']['python']}; vault: {r['notes']} notes of {r['corpus']} in folders of 100, "
             f"indexed with embeddings; {next(iter(r['backends'].values()))['rounds']} changes of each kind per "
             f"backend, one at a time. Latency: from the file operation's return to the first search (polled every "
             f"20 ms) that shows the change. Shared machine: load averages beside each row.", "",
             "| backend | change | median s | p95 s | max s | missed | index run s (median) | load before / after | "
             "run (commit, date) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for b, x in r["backends"].items():
        run = f"{x.get('commit', r['commit'])}, {x.get('date', r['date'])}"
        for k, v in x["kinds"].items():
            lines.append(f"| {b} | {k} | {v['median_s']} | {v['p95_s']} | {v['max_s']} | {v['missed']} | "
                         f"{v['run_seconds_median']} | {x['load_before'][:1]} / {x['load_after'][:1]} | {run} |")
        a = x["all"]
        lines.append(f"| {b} | **all** | **{a['median_s']}** | {a['p95_s']} | | | | {a['within_2s']}/{a['n']} "
                     f"within 2 s | {run} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------ idle
def proc_sample(pid: int) -> dict:
    """CPU seconds (the process and its children, reaped or alive), RSS, peak RSS, wake-ups."""
    tick = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    st = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            st[k] = v.strip()
    return {"t": time.monotonic(), "cpu_s": cpu, "rss_mb": int(st["VmRSS"].split()[0]) / 1024,
            "hwm_mb": int(st["VmHWM"].split()[0]) / 1024, "wakeups": int(st["voluntary_ctxt_switches"])}


def cmd_idle(args) -> dict:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    notes = make_vault(work, args.corpus, args.notes)
    backends = args.backends.split(",")
    base = work / "idle-base.db"
    index_s = build_index(notes, base)
    watchers = {}
    for b in backends:
        db = work / f"idle-{b}.db"
        for p in db.parent.glob(db.name + "*"):
            p.unlink()
        shutil.copy(base, db)
        watchers[b] = Watch(db, notes, b)
    for w in watchers.values():
        w.wait_runs(1)
    time.sleep(5)
    first = {b: proc_sample(w.p.pid) for b, w in watchers.items()}
    series = {b: [first[b]] for b in backends}
    load = [loadavg()]
    end = time.monotonic() + args.minutes * 60
    while time.monotonic() < end:
        time.sleep(5)
        for b, w in watchers.items():
            series[b].append(proc_sample(w.p.pid))
        load.append(loadavg())
    res = {"what": "watch idle", "corpus": args.corpus, "notes": args.notes, "minutes": args.minutes,
           "machine": machine(), "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M"),
           "index_seconds": round(index_s, 1), "load_1min": [x[0] for x in load if x], "backends": {}}
    for b, w in watchers.items():
        s = series[b]
        wall = s[-1]["t"] - s[0]["t"]
        cpu = s[-1]["cpu_s"] - s[0]["cpu_s"]
        res["backends"][b] = {
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 3), "cpu_pct": round(100 * cpu / wall, 4),
            "rss_mb_start": round(s[0]["rss_mb"], 1), "rss_mb_end": round(s[-1]["rss_mb"], 1),
            "rss_mb_max": round(max(x["rss_mb"] for x in s), 1), "hwm_mb": round(s[-1]["hwm_mb"], 1),
            "wakeups_per_min": round((s[-1]["wakeups"] - s[0]["wakeups"]) / wall * 60, 1),
            "runs_while_idle": len(w.runs()) - 1, "folders": w.events[0]["sources"][0]["folders"],
            "exit": w.stop()}
    return res


def md_idle(r: dict) -> str:
    lo = r["load_1min"]
    lines = [f"# `kgsearch watch` while nothing changes (`python bench/watch_bench.py idle`)", "",
             f"{r['date']}, commit {r['commit']}, {r['machine']['cpu']} ({r['machine']['cores']} cores), "
             f"Python {r['machine']['python']}; vault: {r['notes']} notes of {r['corpus']} in folders of 100; "
             f"{r['minutes']} minutes after the catch-up run, sampled every 5 s. Default "
             f"options (polling: a look every 1 s, 2,000 entries per look). Load (1 min) during the last run: "
             f"{min(lo)}-{max(lo)}.", "",
             "| backend | folders | CPU s | CPU % | wake-ups / min | RSS MB start / end / max | peak RSS MB (incl. start-up) | runs | "
             "run (commit, date) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for b, x in r["backends"].items():
        lines.append(f"| {b} | {x['folders']} | {x['cpu_s']} | {x['cpu_pct']} | {x['wakeups_per_min']} | "
                     f"{x['rss_mb_start']} / {x['rss_mb_end']} / {x['rss_mb_max']} | {x['hwm_mb']} | {x['runs_while_idle']} | "
                     f"{x.get('commit', r['commit'])}, {x.get('date', r['date'])} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["latency", "idle"])
    ap.add_argument("--corpus", default="scifact")
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--backends", default="inotify,poll")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="/tmp/kgsearch-watch-bench")
    ap.add_argument("--tag", default="", help="suffix for the result files")
    ap.add_argument("--merge", action="store_true",
                    help="keep the backends of an earlier result file that this run did not measure")
    ap.add_argument("--report", action="store_true", help="only write the Markdown table again from the JSON")
    args = ap.parse_args()
    if args.report:
        name = f"watch_{args.what}{'_' + args.tag if args.tag else ''}"
        res = json.loads((RESULTS / f"{name}.json").read_text())
        (RESULTS / f"{name}.md").write_text(md_latency(res) if args.what == "latency" else md_idle(res))
        return
    code = commit()                               # the code that runs (read before anything is edited meanwhile)
    res = cmd_latency(args) if args.what == "latency" else cmd_idle(args)
    res["commit"] = code
    name = f"watch_{args.what}{'_' + args.tag if args.tag else ''}"
    RESULTS.mkdir(parents=True, exist_ok=True)
    old = RESULTS / f"{name}.json"
    if args.merge and old.exists():               # e.g. one backend measured again: the others kept, with their own record
        prev = json.loads(old.read_text())
        for b, x in prev["backends"].items():
            if b not in res["backends"]:
                x.setdefault("commit", prev.get("commit"))
                x.setdefault("date", prev.get("date"))
                res["backends"][b] = x
        res["backends"] = dict(sorted(res["backends"].items()))
    (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1))
    md = md_latency(res) if args.what == "latency" else md_idle(res)
    (RESULTS / f"{name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
