"""Smoke benchmark: index real-world trees with default settings, as a new user would.

Every tree is indexed from scratch by one fresh ``kgsearch index TREE --db DB`` process (the
console script of the running environment, no other flag: default settings), then
``kgsearch stats --db DB --json`` reads the counts back. Per tree it reports the exit code,
the error line, files seen (what the walker yields, computed in this process), files loaded
(the CLI's "indexed N changed file(s)" line) and failed, warnings (count and the first few),
wall time, the peak RSS of the index process and the database size.

Peak RSS, two figures:

* ``rss_mb``: ``ru_maxrss`` from ``os.wait4`` on the index process. Linux reports the largest
  single process of the tree (the index process or one of its forked loader workers), exact.
* ``rss_tree_mb``: psutil polling every 50 ms of the index process plus its children, summed:
  sampled (a short peak can be missed), and pages the forked workers share with their parent
  count once per process (so it can exceed the real use); blank without psutil.

Trees (``_code_tasks``, ``PACKAGE_TREES``, ``KG_TREES``; 38 in all):

* the 9 code-task repositories in ``../shared/bench/code-tasks/repos``, read in place;
* 17 Python projects from their sdists on PyPI, pinned (``PACKAGES``), each indexed whole, and
  9 of their documentation folders (Markdown or reStructuredText) on their own;
* the basic-memory wheel (Python and Markdown) and its man pages on their own: a real
  Markdown tree whose notes link each other with ``[[wikilinks]]`` (no sdist on PyPI ships an
  Obsidian vault that we found);
* the WN18RR and FB15k-237 knowledge-graph folders in ``../shared/bench/kg`` (TSV triples),
  read in place.

Fetching: packages missing from ``bench/work/trees/`` are downloaded into
``bench/work/trees/archives`` with ``pip download --no-deps --no-binary :all: NAME==VERSION``
(falling back to ``--no-binary NAME``, which lets pip use wheels for the build backend it runs
to read the sdist's metadata; the wheel with ``--only-binary :all: --python-version X``) and
unpacked next to it. This is the only network use, and it happens only when a tree is
missing; ``--offline`` never fetches and skips missing trees. ``bench/work/`` is git-ignored.
The trees read in place must not change: each one's file listing (path, size, mtime) is
compared before and after its run.

``--cap-mb N`` runs every index process under ``RLIMIT_AS`` = N MB (``--cap-rlimit data`` for
``RLIMIT_DATA``) set in ``preexec_fn``, to simulate a phone's memory. Address space is not
RSS: numpy and SQLite reserve virtual memory they never touch, so a cap must sit above the
process's virtual size at start (about 0.5 GB here); ``RLIMIT_DATA`` is closer to RSS.

    python bench/studies/real_trees.py [--only NAME,...] [--offline] [--fetch-only] [--cap-mb N]
                               [--timeout S] [--out-dir bench/results]

Writes ``real_trees.json`` and ``real_trees.md`` (``real_trees_capN.*`` with ``--cap-mb``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED_ROOT as SHARED, WORK  # noqa: E402
TREES_DIR = WORK / "trees"
ARCHIVE_DIR = TREES_DIR / "archives"
DB_DIR = WORK / "real_trees_db"

# name -> (pinned version, "sdist" or a wheel's Python version). Versions: the latest release
# that installs on Python 3.10/3.11 when this benchmark was written. basic-memory ships only a
# wheel (Python >= 3.12): its man pages are a real Markdown tree linked with [[wikilinks]].
PACKAGES = {
    "requests": ("2.34.2", "sdist"),
    "flask": ("3.1.3", "sdist"),
    "click": ("8.5.1", "sdist"),
    "attrs": ("26.1.0", "sdist"),
    "rich": ("15.0.0", "sdist"),
    "httpx": ("0.28.1", "sdist"),
    "pydantic": ("2.14.3", "sdist"),
    "jinja2": ("3.1.6", "sdist"),
    "mkdocs": ("1.6.1", "sdist"),
    "black": ("26.10.1", "sdist"),
    "pytest": ("9.2.0", "sdist"),
    "sphinx": ("8.2.3", "sdist"),
    "pylint": ("4.1.4", "sdist"),
    "xarray": ("2026.9.0", "sdist"),
    "sympy": ("1.14.0", "sdist"),
    "django": ("5.2.8", "sdist"),
    "obsidianhtml": ("4.0.1", "sdist"),
    "basic-memory": ("0.24.1", "3.12"),
}


def _code_tasks() -> list[dict]:
    base = SHARED / "bench" / "code-tasks" / "repos"
    if not base.is_dir():
        return []
    return [{"name": p.name.split("@")[0] + " (repo)", "kind": "repo", "path": str(p), "in_place": True}
            for p in sorted(base.iterdir()) if p.is_dir()]


# (tree name, kind, package, sub-folder inside the unpacked package or "")
PACKAGE_TREES = [
    ("requests", "python", "requests", ""),
    ("flask", "python", "flask", ""),
    ("flask docs", "docs-rst", "flask", "docs"),
    ("click", "python", "click", ""),
    ("click docs", "docs-md", "click", "docs"),
    ("attrs", "python", "attrs", ""),
    ("attrs docs", "docs-md", "attrs", "docs"),
    ("rich", "python", "rich", ""),
    ("httpx", "python", "httpx", ""),
    ("pydantic", "python", "pydantic", ""),
    ("jinja2", "python", "jinja2", ""),
    ("mkdocs", "python", "mkdocs", ""),
    ("black", "python", "black", ""),
    ("black docs", "docs-md", "black", "docs"),
    ("pytest", "python", "pytest", ""),
    ("pytest docs", "docs-rst", "pytest", "doc/en"),
    ("sphinx", "python", "sphinx", ""),
    ("sphinx docs", "docs-rst", "sphinx", "doc"),
    ("pylint", "python", "pylint", ""),
    ("xarray", "python", "xarray", ""),
    ("xarray docs", "docs-rst+md", "xarray", "doc"),
    ("sympy", "python", "sympy", ""),
    ("django", "python", "django", ""),
    ("django docs", "docs-rst", "django", "docs"),
    ("obsidianhtml", "python", "obsidianhtml", ""),
    ("basic-memory (wheel)", "python+md", "basic-memory", ""),
    ("basic-memory man vault", "vault", "basic-memory", "basic_memory/man"),
]

KG_TREES = [("wn18rr (kg tsv)", "wn18rr"), ("fb15k237 (kg tsv)", "fb15k237")]

# What a tree must yield besides exit 0 (tree name -> (edge type substring, what it means)): a
# run that exits 0 but drops what the tree is for is a failed run too.
EXPECT_EDGES = {
    "wn18rr (kg tsv)": ("hypernym", "the TSV triples loaded as typed edges"),
    "fb15k237 (kg tsv)": ("film", "the TSV triples loaded as typed edges"),
    "basic-memory man vault": ("links_to", "the [[wikilinks]] resolved"),
}


def package_root(name: str) -> Path | None:
    """The unpacked package folder of ``name`` (an sdist's single top folder), or None."""
    version, form = PACKAGES[name]
    marker = TREES_DIR / f"{name}-{version}"
    if not marker.is_dir():
        return None
    subs = [p for p in marker.iterdir() if p.is_dir()]
    return subs[0] if form == "sdist" and len(subs) == 1 else marker


def all_trees() -> list[dict]:
    trees = _code_tasks()
    for tname, kind, pname, sub in PACKAGE_TREES:
        base = package_root(pname)
        path = None if base is None else (base / sub if sub else base)
        version, form = PACKAGES[pname]
        trees.append({"name": tname, "kind": kind, "package": f"{pname}=={version}",
                      "form": "sdist" if form == "sdist" else "wheel",
                      "path": str(path) if path else None, "sub": sub, "in_place": False})
    for tname, folder in KG_TREES:
        p = SHARED / "bench" / "kg" / folder
        trees.append({"name": tname, "kind": "kg", "path": str(p) if p.is_dir() else None, "in_place": True})
    return trees


# ---------------------------------------------------------------------------- fetching
def _pip_download(name: str, version: str, form: str) -> Path | None:
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    spec = f"{name}=={version}"
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(ARCHIVE_DIR)]
    if form == "sdist":
        # the second form: the sdist itself, with wheels allowed for the build backend pip runs
        # to read the sdist's metadata (some backends do not build from source here)
        tries = (["--no-binary", ":all:"], ["--no-binary", name])
    else:
        tries = (["--only-binary", ":all:", "--python-version", form],)
    for extra in tries:
        print(f"  fetching {spec} ({' '.join(extra)})", file=sys.stderr)
        r = subprocess.run(pip + extra + [spec], capture_output=True, text=True)
        got = _find_archive(name, version)
        if r.returncode == 0 and got is not None:
            return got
        tail = [ln for ln in (r.stderr or "").splitlines() if ln.strip() and "is ignored" not in ln][-2:]
        print("  pip failed: " + " | ".join(t[:300] for t in tail), file=sys.stderr)
    return None


def _find_archive(name: str, version: str) -> Path | None:
    norm = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]+", name))
    rx = re.compile(rf"^{norm}-{re.escape(version)}(\.tar\.gz|\.zip|\.tar\.bz2|-.*\.whl)$", re.I)
    for p in sorted(ARCHIVE_DIR.glob("*")) if ARCHIVE_DIR.is_dir() else []:
        if rx.match(p.name):
            return p
    return None


def _unpack(archive: Path, dest: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=dest.parent))
    try:
        if archive.name.endswith((".zip", ".whl")):
            with zipfile.ZipFile(archive) as z:
                z.extractall(tmp)
        else:
            with tarfile.open(archive) as t:
                t.extractall(tmp, filter="tar")    # keeps in-tree symlinks, refuses escaping ones
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def fetch(names: list[str], offline: bool) -> dict[str, str]:
    """Make sure each package is downloaded and unpacked; name -> problem for those that are not."""
    problems = {}
    for name in names:
        version, form = PACKAGES[name]
        dest = TREES_DIR / f"{name}-{version}"
        if dest.is_dir():
            continue
        archive = _find_archive(name, version)
        if archive is None:
            if offline:
                problems[name] = "not downloaded (--offline)"
                continue
            archive = _pip_download(name, version, form)
            if archive is None:
                problems[name] = "pip download failed"
                continue
        TREES_DIR.mkdir(parents=True, exist_ok=True)
        _unpack(archive, dest)
    return problems


# ---------------------------------------------------------------------------- measuring
def listing(path: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime_ns) of every file and folder under ``path`` (no following)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[os.path.relpath(p, path)] = (st.st_size if not os.path.isdir(p) else 0, st.st_mtime_ns)
    return out


def files_seen(path: Path) -> tuple[int | None, str | None]:
    """How many files the walker yields under ``path`` with default settings (None + the error
    when the walk itself raises)."""
    from kgsearch.ingest.walk import WalkReport, walk

    try:
        return sum(1 for _ in walk(path.resolve(), None, None, WalkReport())), None    # the CLI's default caps
    except Exception as exc:  # the walk crashing is a finding, not a reason to stop the bench
        return None, f"{type(exc).__name__}: {exc}"


class _TreeRss:
    """Polls the RSS of a process and its children (psutil), keeping the largest sum seen."""

    def __init__(self, pid: int):
        self.peak = None
        self._stop = threading.Event()
        try:
            import psutil
        except ImportError:
            self._thread = None
            return
        self.peak = 0
        self._proc = psutil.Process(pid)
        self._psutil = psutil
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ps = self._psutil
        while not self._stop.is_set():
            try:
                procs = [self._proc] + self._proc.children(recursive=True)
                total = 0
                for p in procs:
                    try:
                        total += p.memory_info().rss
                    except (ps.NoSuchProcess, ps.AccessDenied, ps.ZombieProcess):
                        pass
                self.peak = max(self.peak, total)
            except (ps.NoSuchProcess, ps.ZombieProcess):
                return
            except Exception:
                return
            self._stop.wait(0.05)

    def stop(self) -> float | None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        return None if self.peak is None else self.peak / 2**20


def kgsearch_exe() -> list[str]:
    exe = Path(sys.executable).parent / "kgsearch"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("kgsearch")
    if found:
        return [found]
    return [sys.executable, "-m", "kgsearch"]


def _limit(cap_mb: int | None, kind: str):
    if not cap_mb:
        return None
    which = resource.RLIMIT_AS if kind == "as" else resource.RLIMIT_DATA
    cap = cap_mb * 2**20

    def preexec():
        resource.setrlimit(which, (cap, cap))
    return preexec


def run_index(path: Path, db: Path, timeout: float, cap_mb: int | None, cap_kind: str) -> dict:
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    cmd = kgsearch_exe() + ["index", str(path), "--db", str(db)]
    errf = tempfile.TemporaryFile(mode="w+b")
    outf = tempfile.TemporaryFile(mode="w+b")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=outf, stderr=errf, stdin=subprocess.DEVNULL,
                            preexec_fn=_limit(cap_mb, cap_kind))
    poller = _TreeRss(proc.pid)
    killed = False
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    tree_mb = poller.stop()
    if proc.returncode == -9 and wall >= timeout:
        killed = True
    errf.seek(0)
    stderr = errf.read().decode("utf-8", "replace")
    errf.close()
    outf.close()
    return {"cmd": " ".join(cmd), "exit": proc.returncode, "timed_out": killed, "seconds": round(wall, 2),
            "rss_mb": round(ru.ru_maxrss / 1024, 1),
            "rss_tree_mb": None if tree_mb is None else round(tree_mb, 1),
            "cpu_s": round(ru.ru_utime + ru.ru_stime, 2), "stderr": stderr}


_INDEXED = re.compile(r"^indexed (\d+) changed file\(s\), (\d+) unchanged, (\d+) deleted")
_MORE = re.compile(r"^warning: \.\.\. and (\d+) more")


def parse_stderr(text: str) -> dict:
    warnings, errors, notes = [], [], []
    skipped = None
    loaded = more = None
    for line in text.splitlines():
        m = _MORE.match(line)
        if m:
            more = int(m.group(1))
            continue
        if line.startswith("warning: "):
            warnings.append(line[len("warning: "):])
        elif line.startswith("error: "):
            errors.append(line[len("error: "):])
        elif line.startswith("note: "):
            notes.append(line[len("note: "):])
        elif line.startswith("skipped: "):
            skipped = line[len("skipped: "):]
        elif line.startswith("Traceback") or line.startswith("  File "):
            errors.append(line)
        m = _INDEXED.match(line)
        if m:
            loaded = int(m.group(1))
    return {"warnings": warnings, "warnings_total": len(warnings) + (more or 0), "errors": errors,
            "notes": notes, "files_loaded": loaded, "skipped": skipped}


def db_stats(db: Path) -> dict | None:
    if not db.exists():
        return None
    r = subprocess.run(kgsearch_exe() + ["stats", "--db", str(db), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1], "exit": r.returncode}
    try:
        st = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {"error": "stats printed no JSON"}
    return {k: st.get(k) for k in ("files", "nodes", "edges", "edges_unresolved", "nodes_by_kind", "edges_by_type")}


def _db_bytes(db: Path) -> int:
    return sum(Path(str(db) + s).stat().st_size for s in ("", "-wal") if Path(str(db) + s).exists())


def tree_size(path: Path) -> tuple[int, int]:
    files = total = 0
    for dirpath, _, filenames in os.walk(path):
        for n in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
                files += 1
            except OSError:
                pass
    return files, total


def bench_tree(tree: dict, timeout: float, cap_mb: int | None, cap_kind: str, keep_db: bool) -> dict:
    path = Path(tree["path"])
    n_files, n_bytes = tree_size(path)
    before = listing(path) if tree.get("in_place") else None
    seen, walk_error = files_seen(path)
    slug = re.sub(r"[^\w]+", "-", tree["name"]).strip("-")
    db = DB_DIR / f"{slug}.db"
    DB_DIR.mkdir(parents=True, exist_ok=True)
    run = run_index(path, db, timeout, cap_mb, cap_kind)
    parsed = parse_stderr(run.pop("stderr"))
    st = db_stats(db) if run["exit"] == 0 else None
    changed = None
    if before is not None:
        after = listing(path)
        changed = sorted(set(before.items()) ^ set(after.items()))[:5]
    row = {**tree, "tree_files": n_files, "tree_mb": round(n_bytes / 1e6, 1),
           "files_seen": seen, "walk_error": walk_error, **run,
           "files_loaded": parsed["files_loaded"],
           "files_failed": (seen - parsed["files_loaded"]) if (seen is not None and parsed["files_loaded"] is not None
                                                                and run["exit"] not in (0,)) else
                           (0 if run["exit"] == 0 else None),
           "warnings_total": parsed["warnings_total"], "warnings_first": parsed["warnings"][:5],
           "errors": parsed["errors"][:5], "notes": parsed["notes"][:5], "skipped_files": parsed["skipped"],
           "db_mb": round(_db_bytes(db) / 1e6, 2) if db.exists() else None, "stats": st,
           "tree_changed": changed}
    if run["exit"] != 0 and parsed["files_loaded"] is None:
        row["files_failed"] = "run aborted"
    want = EXPECT_EDGES.get(tree["name"])
    if want is not None and run["exit"] == 0:
        types = (st or {}).get("edges_by_type") or {}
        n = sum(v for k, v in types.items() if want[0] in k)
        row["content_check"] = (f"ok: {n} edges of a type containing {want[0]!r}" if n else
                                f"FAILED: no edge type contains {want[0]!r} ({want[1]} expected); "
                                f"edge types: {', '.join(sorted(types)) or 'none'}")
    if not keep_db:
        for suffix in ("", "-wal", "-shm", ".lock"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    return row


# ---------------------------------------------------------------------------- report
def machine() -> dict:
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    import numpy

    import kgsearch
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"cpu": model, "cores": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version(),
            "numpy": numpy.__version__, "sqlite": sqlite3.sqlite_version, "kgsearch": kgsearch.__version__,
            "commit": commit, "load_before": os.getloadavg()}


def _short(s: str, n: int = 150) -> str:
    s = s.replace("|", "\\|")
    return s if len(s) <= n else s[:n - 1] + "…"


def _result(r: dict) -> str:
    if r["exit"] != 0:
        return "timed out" if r.get("timed_out") else "FAILED"
    if r.get("tree_changed"):
        return "FAILED (wrote into the tree)"
    if str(r.get("content_check", "")).startswith("FAILED"):
        return "FAILED (content)"
    return "ok"


def markdown(result: dict) -> str:
    m = result["machine"]
    cap = result["cap"]
    lines = [
        "# Real trees: default `kgsearch index TREE` on real-world folders",
        "",
        f"`python bench/studies/real_trees.py{' --cap-mb %d' % cap['mb'] if cap else ''}` on {result['date']}: "
        f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, numpy {m['numpy']}, SQLite {m['sqlite']}, "
        f"kgsearch {m['kgsearch']} (commit {m['commit']}); load {m['load_before'][0]:.2f} before, "
        f"{result['load_after'][0]:.2f} after. One run per tree (a fresh process, a fresh database); "
        "times are noisy (2 shared cores), peak RSS is reliable."
        + (f" Memory cap: RLIMIT_{cap['kind'].upper()} = {cap['mb']} MB per index process." if cap else ""),
        "",
        f"**{result['summary']['ok']} of {result['summary']['trees']} trees ok** (exit 0, the content checks "
        "below pass, trees read in place unchanged)"
        f" ({result['summary']['failed']} failed: {', '.join(result['summary']['failed_names']) or 'none'}).",
        "",
        "RSS = `ru_maxrss` of the index process from `os.wait4` (largest single process, loader workers "
        "included; exact); tree RSS = psutil-polled sum over the process and its workers (sampled every "
        "50 ms; pages shared by forked workers count once per process).",
        "",
        "| tree | kind | files in tree | MB | exit | result | seen | loaded | failed | warnings | wall s | RSS MB | tree RSS MB | DB MB | nodes | edges |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["trees"]:
        if r.get("skipped"):
            lines.append(f"| {r['name']} | {r['kind']} | | | | skipped: {r['skipped']} | | | | | | | | | | |")
            continue
        st = r.get("stats") or {}
        lines.append(
            f"| {r['name']} | {r['kind']} | {r['tree_files']} | {r['tree_mb']} | {r['exit']} | **{_result(r)}** | "
            f"{r['files_seen'] if r['files_seen'] is not None else 'walk crashed'} | "
            f"{r['files_loaded'] if r['files_loaded'] is not None else '-'} | {r['files_failed']} | "
            f"{r['warnings_total']} | {r['seconds']} | {r['rss_mb']} | {r['rss_tree_mb'] or ''} | "
            f"{r['db_mb'] if r['db_mb'] is not None else '-'} | {st.get('nodes', '-')} | {st.get('edges', '-')} |")
    lines += ["", "## Errors (exit != 0)", ""]
    any_err = False
    for r in result["trees"]:
        if r.get("skipped") or r["exit"] == 0:
            continue
        any_err = True
        lines.append(f"- **{r['name']}** exit {r['exit']}{' (timed out)' if r['timed_out'] else ''}: "
                     + "; ".join(f"`{_short(e, 300)}`" for e in r["errors"][:2]))
    if not any_err:
        lines.append("none")
    lines += ["", "## Skipped while walking (one warning each, counted; the run goes on)", ""]
    skipped = [r for r in result["trees"] if not r.get("skipped") and r.get("skipped_files")]
    for r in skipped:
        lines.append(f"- **{r['name']}**: {r['skipped_files']}")
    if not skipped:
        lines.append("none")
    lines += ["", "## First warnings per tree", ""]
    for r in result["trees"]:
        if r.get("skipped") or not r["warnings_first"]:
            continue
        lines.append(f"- **{r['name']}** ({r['warnings_total']}): "
                     + "; ".join(f"`{_short(w)}`" for w in r["warnings_first"][:3]))
    lines += ["", "## Content checks (exit 0 is not enough for these trees)", ""]
    for r in result["trees"]:
        if r.get("content_check"):
            lines.append(f"- **{r['name']}**: {_short(r['content_check'], 300)}")
    changed = [r for r in result["trees"] if r.get("tree_changed")]
    lines += ["", "## Trees read in place", "",
              "changed by the run: " + (", ".join(r["name"] for r in changed) if changed else "none")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help="comma-separated tree names (or parts of them) to run")
    ap.add_argument("--offline", action="store_true", help="never download; skip trees that are missing")
    ap.add_argument("--fetch-only", action="store_true", help="download and unpack, then stop")
    ap.add_argument("--cap-mb", type=int, default=None, metavar="N", help="memory cap per index process (MB)")
    ap.add_argument("--cap-rlimit", choices=["as", "data"], default="as", help="which rlimit --cap-mb sets")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per tree before the run is killed")
    ap.add_argument("--keep-db", action="store_true", help="keep the databases in bench/work/real_trees_db")
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))

    problems = fetch(sorted(PACKAGES), args.offline)
    for name, why in problems.items():
        print(f"warning: {name}: {why}", file=sys.stderr)
    if args.fetch_only:
        return 0 if not problems else 1
    trees = all_trees()
    if args.only:
        wanted = [w.strip().lower() for w in args.only.split(",") if w.strip()]
        trees = [t for t in trees if any(w in t["name"].lower() for w in wanted)]
    load_before = os.getloadavg()
    rows = []
    for t in trees:
        if not t["path"] or not Path(t["path"]).is_dir():
            rows.append({**t, "skipped": "tree missing" + (f" ({problems.get(t['package'].split('==')[0])})"
                                                          if t.get("package") else "")})
            print(f"{t['name']:<28} skipped: tree missing", file=sys.stderr)
            continue
        r = bench_tree(t, args.timeout, args.cap_mb, args.cap_rlimit, args.keep_db)
        rows.append(r)
        err = f"  {r['errors'][0][:140]}" if r["errors"] else ""
        if str(r.get("content_check", "")).startswith("FAILED"):
            err += "  " + r["content_check"][:140]
        print(f"{t['name']:<28} exit {r['exit']:>3}  seen {r['files_seen']!s:>5}  loaded {r['files_loaded']!s:>5}  "
              f"warn {r['warnings_total']:>4}  {r['seconds']:>7.1f}s  rss {r['rss_mb']:>7.1f} MB  "
              f"db {r['db_mb']!s:>7} MB{err}", flush=True)
    done = [r for r in rows if not r.get("skipped")]
    failed = [r for r in done if r["exit"] != 0 or r.get("tree_changed")
              or str(r.get("content_check", "")).startswith("FAILED")]
    result = {"date": time.strftime("%Y-%m-%d"), "machine": {**machine(), "load_before": load_before},
              "load_after": os.getloadavg(),
              "cap": {"mb": args.cap_mb, "kind": args.cap_rlimit} if args.cap_mb else None,
              "summary": {"trees": len(done), "ok": len(done) - len(failed), "failed": len(failed),
                          "failed_names": [r["name"] for r in failed],
                          "skipped": [r["name"] for r in rows if r.get("skipped")]},
              "trees": rows}
    out = Path(args.out_dir)
    if args.only and args.out_dir == ap.get_default("out_dir"):
        out = WORK                      # a partial run does not replace the committed results
    out.mkdir(parents=True, exist_ok=True)
    stem = "real_trees" + (f"_cap{args.cap_mb}" if args.cap_mb else "")
    if args.only:
        stem += "_only"
    (out / f"{stem}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (out / f"{stem}.md").write_text(markdown(result))
    print(f"\n{result['summary']['ok']} of {result['summary']['trees']} trees ok; "
          f"failed: {', '.join(result['summary']['failed_names']) or 'none'}")
    print(f"wrote {out / (stem + '.json')} and {out / (stem + '.md')}")
    return 0 if not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
