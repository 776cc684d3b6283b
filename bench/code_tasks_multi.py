"""Code tasks in JavaScript, TypeScript, Go, Rust, Java, C and C++: kgsearch on the issue texts of
``../shared/bench/code-tasks-multi`` over whole repository snapshots, scored as its ``score.py``
does (file R@1/5/10, file MRR@10, symbol-name R@10), per language and per repository, with
ablations, paired sign tests against the project's own BM25-only run, latency and index cost.

    python bench/code_tasks_multi.py [--repos dayjs,tokio] [--configs default,bm25] [--rebuild] [--check]

Each snapshot folder is indexed whole with default settings by a fresh ``kgsearch index`` process
(its wall time and peak RSS reported) into ``bench/work/code_tasks_multi/<tree>.db``, reused while
the index-building code is unchanged (the fingerprint of ``bench/code_tasks.py``). Every task is
searched with each configuration (:data:`CONFIGS`); files are ranked by the library's file grouping
(``SearchOptions(group="file")``, as ``kgsearch search --group file``), symbols are the code hits
(class, function, method) as ``<path>::<qualified name in the file>``, which ``score.py`` matches by
path and last name component. Latency: a search as ``kgsearch search`` runs it (k = 10,
snippets), every task of a repository, ``--latency-runs`` times, p50/p95/max per repository.
``--check`` also scores the written run files with the set's own ``score.py`` and compares.

Writes ``code_tasks_multi.json`` and ``code_tasks_multi.md`` into ``--out-dir`` (default
bench/results) and one run file per configuration into ``bench/work/code_tasks_multi/runs``.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared"))
TASKS = SHARED / "bench" / "code-tasks-multi"
WORK = ROOT / "bench" / "work" / "code_tasks_multi"
GRAPH = ("graph", "intent", "local", "global")
SYMBOL_KINDS = ("class", "function", "method")

# name -> (channels or None for the default list, channels taken off the default list[, Tuning
# fields for this row]); the walk/... rows are the research switches of docs/code-tasks.md
CONFIGS = {
    "default": (None, ()),
    "bm25": (("bm25",), ()),
    "-anchors": (None, ("anchors",)),
    "-graph": (None, GRAPH),
    "-dense": (None, ("dense",)),
    "walk.deg": (None, (), (("walk_degree_norm", True),)),
    "walk-sim": (None, (), (("walk_skip", ("similar_text",)),)),
    "walk-contains": (None, (), (("walk_skip", ("contains",)),)),
    "walk-imports": (None, (), (("walk_skip", ("imports",)),)),
    "walk-modules": (None, (), (("walk_drop_kinds", ("module",)),)),
    "walk-prose": (None, (), (("walk_code_seeds", True),)),
    "walk-modcontains": (None, (), (("walk_skip_module_contains", True),)),
    "walk-mentions": (None, (), (("walk_skip", ("mentions", "links_to", "tagged")),)),
}
BASELINE, REFERENCE = "bm25", "default"


def _code_tasks():
    """bench/code_tasks.py (its fingerprint, sign test and percentiles are reused)."""
    if "bench_code_tasks" in sys.modules:
        return sys.modules["bench_code_tasks"]
    spec = importlib.util.spec_from_file_location("bench_code_tasks", ROOT / "bench" / "code_tasks.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_code_tasks", mod)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Task:
    qid: str
    text: str
    repo: str
    lang: str
    fix_status: str
    gold_files: list[str]
    gold_symbols: list[tuple[str, str]]


@dataclass
class Repo:
    name: str
    lang: str
    tree: Path
    tasks: list[Task] = field(default_factory=list)


def load_tasks(only: list[str] | None) -> list[Repo]:
    out = []
    for d in sorted((TASKS / "tasks").iterdir()):
        if not (d / "queries.jsonl").is_file():
            continue
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        if only and not any(x in d.name for x in only):
            continue
        repo = Repo(d.name, meta["language"], TASKS / "repos" / meta["source_tree"].split("/")[-1])
        files: dict[str, list[str]] = collections.defaultdict(list)
        for line in (d / "qrels.files.tsv").read_text(encoding="utf-8").splitlines()[1:]:
            q, p, s = line.split("\t")
            if int(s) > 0:
                files[q].append(p)
        syms = {}
        for line in (d / "gold.symbols.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                syms[r["_id"]] = [(s["path"], s["name"]) for s in r["symbols"]]
        for line in (d / "queries.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                md = q.get("metadata", {})
                repo.tasks.append(Task(q["_id"], q["text"], d.name, md.get("language", repo.lang),
                                       md.get("fix_status_at_snapshot", "?"), files[q["_id"]], syms.get(q["_id"], [])))
        out.append(repo)
    return out


# ---------------------------------------------------------------------------- scoring (as score.py)
def sym_key(s: str) -> tuple[str | None, str]:
    if "::" not in s:
        return None, s
    path, name = s.split("::", 1)
    name = re.sub(r"\(\)$", "", name.strip())
    return path, re.split(r"::|\.|#|->", name)[-1].strip()


def dedup(xs) -> list:
    return list(dict.fromkeys(xs))


def metrics(files: list[str], syms: list[str], t: Task) -> dict:
    files, syms = dedup(files), dedup(syms)
    gold = set(t.gold_files)
    m = {f"file_R@{k}": len(gold & set(files[:k])) / len(gold) for k in (1, 5, 10)}
    m["file_MRR@10"] = next((1 / (i + 1) for i, f in enumerate(files[:10]) if f in gold), 0.0)
    m["file_rank"] = next((i + 1 for i, f in enumerate(files) if f in gold), None)
    if t.gold_symbols:
        top = {sym_key(s) for s in syms[:10]}
        m["sym_R@10"] = len(set(t.gold_symbols) & top) / len(set(t.gold_symbols))
        m["sym_rank"] = next((i + 1 for i, s in enumerate(syms) if sym_key(s) in set(t.gold_symbols)), None)
    return m


KEYS = ["file_R@1", "file_R@5", "file_R@10", "file_MRR@10", "sym_R@10"]


def mean(rows: list[dict], k: str):
    v = [r[k] for r in rows if k in r]
    return sum(v) / len(v) if v else None


# ---------------------------------------------------------------------------- index and search
def index_repo(repo: Repo, rebuild: bool, fingerprint: str) -> dict:
    db = WORK / f"{repo.tree.name}.db"
    stamp = Path(str(db) + ".stamp.json")
    old = json.loads(stamp.read_text()) if stamp.is_file() else {}
    if not rebuild and db.is_file() and old.get("fingerprint") == fingerprint:
        return {**old, "db": str(db), "reused": True}
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    # this checkout's kgsearch (python -m with the checkout first on the path), not whichever
    # one the environment's `kgsearch` script was installed from
    exe, root = sys.executable, str(Path(__file__).resolve().parents[1])
    t0 = time.time()
    pid = os.fork()
    if pid == 0:
        with open(str(db) + ".log", "wb") as out:
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))
            os.execv(exe, [exe, "-m", "kgsearch", "index", str(repo.tree.resolve()), "--db", str(db)])
    _, status, ru = os.wait4(pid, 0)
    rec = {"fingerprint": fingerprint, "exit": os.waitstatus_to_exitcode(status), "index_s": round(time.time() - t0, 1),
           "rss_mb": round(ru.ru_maxrss / 1024, 1), "load": round(os.getloadavg()[0], 2)}
    if rec["exit"] != 0:
        raise RuntimeError(f"{db}: kgsearch index exited {rec['exit']}: {Path(str(db) + '.log').read_text()[-500:]}")
    stamp.write_text(json.dumps(rec))
    return {**rec, "db": str(db), "reused": False}


def symbol_id(hit, root: str) -> str | None:
    """``<path>::<qualified name inside the file>`` of a code hit (``#2`` duplicates as their first;
    a part of a long definition's text as its definition: ``bench/code_tasks.py`` ``definition_of``)."""
    kind, _, qual = _code_tasks().definition_of(hit)
    if kind not in SYMBOL_KINDS or not hit.path:
        return None
    rel = os.path.relpath(hit.path, root) if os.path.isabs(hit.path) else hit.path
    qual = qual or ""
    if qual.startswith("//"):
        qual = qual[2:].partition("/")[2]
    prefix = rel.replace(os.sep, "/") + ":"
    if not qual.startswith(prefix):
        return None
    return f"{rel}::{qual[len(prefix):].split('#', 1)[0]}"


def symbols_of(hits, root: str, is_definition=None, enclosing: int = 0) -> list[str]:
    """The symbol list of a search: its code hits as :func:`symbol_id`, best first; with
    ``enclosing`` N > 0 also the definitions enclosing N of them (``bench/code_tasks.py``
    ``with_enclosing``, ``--enclosing``: off by default)."""
    first: dict[str, str] = {}
    for h in hits:
        sid = symbol_id(h, root)
        if sid:
            first.setdefault(sid, _code_tasks().definition_of(h)[1])
    if enclosing > 0 and is_definition is not None:
        return _code_tasks().with_enclosing(list(first.items()), is_definition, enclosing)
    return list(first)


def run_repo(repo: Repo, configs: dict, args, fingerprint: str, log) -> dict:
    from dataclasses import replace

    from kgsearch.query import DEFAULT_CHANNELS, Engine, SearchOptions
    from kgsearch.query.tuning import TUNING
    from kgsearch.store.db import Index

    info = index_repo(repo, args.rebuild, fingerprint)
    log(f"{repo.name}: index {'reused' if info['reused'] else 'built'} {info['index_s']} s {info['rss_mb']} MB")
    root = str(repo.tree.resolve())
    out = {"info": info, "configs": {c: {} for c in configs}, "user_ms": []}
    ct = _code_tasks()
    with Index.open(info["db"], readonly=True) as ix:
        eng = Engine(ix)
        is_def = ct.definition_keys(ix)
        eng.search("warm up the caches", SearchOptions(k=10, use_cache=False, snippets=False))
        for t in repo.tasks:
            for name, (chans, minus, *tun) in configs.items():
                eng.tuning = replace(TUNING, **dict(tun[0] if tun else ()))
                channels = list(chans) if chans else [c for c in DEFAULT_CHANNELS if c not in minus] if minus else None
                t0 = time.perf_counter()
                resp = eng.search(t.text, SearchOptions(k=args.k, channels=channels, use_cache=False, snippets=False))
                ms = (time.perf_counter() - t0) * 1000
                syms = symbols_of(resp.hits, root, is_def, args.enclosing)
                g = eng.search(t.text, SearchOptions(k=args.k, channels=channels, use_cache=False, snippets=False,
                                                     group="file"))
                files = dedup(os.path.relpath(h.path, root) if os.path.isabs(h.path) else h.path
                              for h in g.hits if h.path)
                out["configs"][name][t.qid] = {"files": files[:100], "symbols": syms[:100], "ms": round(ms, 1),
                                               "metrics": metrics(files, syms, t)}
        eng.tuning = TUNING
        for _ in range(args.latency_runs):
            for t in repo.tasks:
                t0 = time.perf_counter()
                eng.search(t.text, SearchOptions(use_cache=False))
                out["user_ms"].append((time.perf_counter() - t0) * 1000)
    return out


# ---------------------------------------------------------------------------- report
def fmt(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def paired(tasks: list[Task], res: dict, a: str, b: str, key: str, ct) -> dict:
    w = lo = 0
    for t in tasks:
        x = res[a][t.qid]["metrics"].get(key)
        y = res[b][t.qid]["metrics"].get(key)
        if key == "sym_rank" and not t.gold_symbols:
            continue
        x = math.inf if x is None else x
        y = math.inf if y is None else y
        w += x < y
        lo += x > y
    return {"wins": w, "losses": lo, "p": ct.sign_test_p(w, lo)}


def table(groups: list[tuple[str, list[Task]]], res: dict, configs: list[str]) -> list[str]:
    lines = ["| tasks | config | n | n_sym | file R@1 | file R@5 | file R@10 | MRR@10 | symbol R@10 |",
             "|---" * 9 + "|"]
    for label, ts in groups:
        for c in configs:
            rows = [res[c][t.qid]["metrics"] for t in ts]
            lines.append(f"| {label} | {c} | {len(ts)} | {sum(1 for t in ts if t.gold_symbols)} | "
                         + " | ".join(fmt(mean(rows, k)) for k in KEYS) + " |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", help="comma-separated parts of task folder names")
    ap.add_argument("--configs", default=",".join(c for c in CONFIGS if not c.startswith("walk")),
                    help=f"comma list from: {', '.join(CONFIGS)} (default: all but the walk/... research rows)")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--latency-runs", type=int, default=2)
    ap.add_argument("--enclosing", type=int, default=0, metavar="N",
                    help="list a class/function enclosing N listed symbols after the N-th of them (default 0: off)")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--check", action="store_true", help="score the run files with the set's score.py too")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    a = ap.parse_args(argv)
    if not TASKS.is_dir():
        print(f"code_tasks_multi: {TASKS} is missing; set KGSEARCH_SHARED to the shared folder", file=sys.stderr)
        return 2
    configs = {c: CONFIGS[c] for c in a.configs.split(",")}
    ct = _code_tasks()
    fingerprint = ct.code_fingerprint({})
    repos = load_tasks(a.repos.split(",") if a.repos else None)
    t0 = time.time()
    log = lambda m: print(m, file=sys.stderr, flush=True)        # noqa: E731
    res = {c: {} for c in configs}
    per_repo = {}
    for r in repos:
        got = run_repo(r, configs, a, fingerprint, log)
        for c in configs:
            res[c].update(got["configs"][c])
        per_repo[r.name] = {"info": got["info"], "latency": ct.percentiles(got["user_ms"]), "lang": r.lang,
                            "tasks": len(r.tasks)}
    tasks = [t for r in repos for t in r.tasks]
    run_dir = WORK / "runs"
    run_dir.mkdir(parents=True, exist_ok=True)
    for c in configs:
        with open(run_dir / f"{c}.run.jsonl", "w", encoding="utf-8") as f:
            for t in tasks:
                x = res[c][t.qid]
                f.write(json.dumps({"qid": t.qid, "files": x["files"], "symbols": x["symbols"]}) + "\n")
    langs = sorted({t.lang for t in tasks})
    groups = [("**all**", tasks)] + [(lg, [t for t in tasks if t.lang == lg]) for lg in langs]
    lines = ["## Overall and per language", ""] + table(groups, res, list(configs))
    lines += ["", "## Per repository (default and BM25 alone)", ""]
    lines += table([(r.name, r.tasks) for r in repos], res, [c for c in (REFERENCE, BASELINE) if c in configs])
    sig = {}
    if BASELINE in configs:
        lines += ["", f"## Paired against `{BASELINE}` (first gold file / first gold symbol rank; W/L = better/worse "
                  "tasks; two-sided sign test)", "", "| config | tasks | files W/L (p) | symbols W/L (p) |",
                  "|---|---|---|---|"]
        for c in configs:
            if c == BASELINE:
                continue
            for label, ts in groups:
                fl, sy = paired(ts, res, c, BASELINE, "file_rank", ct), paired(ts, res, c, BASELINE, "sym_rank", ct)
                sig[f"{c}|{label}"] = {"files": fl, "symbols": sy}
                if label == "**all**" or c == REFERENCE:
                    lines.append(f"| {c} | {label} | {fl['wins']}/{fl['losses']} ({fl['p']:.3g}) | "
                                 f"{sy['wins']}/{sy['losses']} ({sy['p']:.3g}) |")
    lines += ["", "## Index and latency per repository", "",
              "| repository | language | tasks | index s | peak RSS MB | load | search p50 ms | p95 ms | max ms |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, p in per_repo.items():
        i, lat = p["info"], p["latency"]
        lines.append(f"| {name} | {p['lang']} | {p['tasks']} | {i['index_s']} | {i['rss_mb']} | {i.get('load')} | "
                     f"{lat['p50']} | {lat['p95']} | {lat['max']} |")
    if a.check:
        lines += ["", "## score.py on the run files", ""]
        for c in configs:
            out = subprocess.run([sys.executable, str(TASKS / "score.py"), str(run_dir / f"{c}.run.jsonl"),
                                  *[str(TASKS / "tasks" / r.name) for r in repos]], capture_output=True, text=True).stdout
            line = next((x for x in out.splitlines() if x.startswith("ALL")), "")
            lines.append(f"- {c}: `{line.strip()}`")
    head = (f"# Code tasks in seven languages (code-tasks-multi)\n\n`python bench/code_tasks_multi.py` "
            f"({time.strftime('%Y-%m-%d')}, {time.time() - t0:.0f} s, {os.cpu_count()} cores, shared machine: "
            f"latencies are noisy). Default settings, whole snapshots indexed; files by `group=file`. The set's own "
            "plain BM25 reference (bm25_baseline.py): file R@1/5/10 .326/.638/.752, MRR@10 .557, symbol R@10 .415.\n\n")
    a.out_dir.mkdir(parents=True, exist_ok=True)
    suffix = f".{a.repos.replace(',', '_')}" if a.repos else ""
    (a.out_dir / f"code_tasks_multi{suffix}.md").write_text(head + "\n".join(lines) + "\n", encoding="utf-8")
    summary = {c: {label: {k: mean([res[c][t.qid]["metrics"] for t in ts], k) for k in KEYS} for label, ts in groups}
               for c in configs}
    (a.out_dir / f"code_tasks_multi{suffix}.json").write_text(json.dumps(
        {"summary": summary, "paired": sig, "repos": per_repo,
         "per_task": {c: {q: v["metrics"] for q, v in res[c].items()} for c in configs}}, indent=1), encoding="utf-8")
    print(head + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
