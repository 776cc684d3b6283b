"""Code tasks, leave one repository out (issue 27): every tuned constant of the code path is
chosen without the repository it scores, on the Python set, the seven-language set, or both.

    python bench/code_tasks.py --loro --set python|multi|all      # the same as this module's main()
    python bench/code_tasks_loro.py --set all [--repos flask,dayjs] [--rebuild]

For each task and each point of the grid :data:`GRID` (the anchor weight, the call-following
weight, and the features under test: call following, listed names sharing a mention, the walk
net of its restart share, pasted-output handling) one search ranks symbols and one ``group="file"`` search ranks files, both with k = 100
(channels memoised per task, so a grid point costs its own anchors, graph and ranking only).
Per held-out repository, the grid point with the best unweighted mean over the OTHER repositories
(of the set being reported) of the objective (file R@1 + file R@5 + symbol R@10 + MRR@10)/4 is
chosen and scored on the held-out one: that is the ``loro`` row. ``loro -X`` rows repeat the
selection on the half of the grid where feature X is off (the ablations); ``default`` is the
library's shipped constants (one fixed grid point); ``bm25`` the BM25 channel alone (the
project's own BM25-only run); ``set bm25`` the set's own reference run (``baselines/``).

Metrics per task as each set's score.py: file R@1/5/10, file MRR@10, symbol R@10 and symbol
MRR@10 (Python: ``path::qualname`` exact; multi: path and last name component). Reported per
repository, as the unweighted mean of repositories, the worst repository, and pooled over tasks
(micro), per language for multi; paired sign tests on the rank of the first gold file (and
MRR@10 for symbols) against ``bm25`` and between ablation pairs. Latency: ``kgsearch search``
as a user runs it (k = 10, snippets) on every task of the largest repository, p50/p95/max.

Indexes are cached under ``--cache`` (default ``/tmp/codepath``; ``$KGSEARCH_LORO_CACHE``),
rebuilt when the index-building code changes (bench/code_tasks.py's fingerprint); per-repository
grid results are cached there too, keyed by the query-side code. Writes
``code_tasks_loro[.<set>].json|md`` into ``--out`` (default bench/results).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import inspect
import itertools
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED, git_commit, loadavg, machine  # noqa: E402

# the grid: (anchor_weight, anchor_follow, anchor_lists, walk_net_restart, quiet_paste, walk_skip_module_contains)
WEIGHTS = (0.25, 0.5, 1.0)
FOLLOWS = (0.0, 0.25, 0.5, 1.0)
GRID = list(itertools.product(WEIGHTS, FOLLOWS, (False, True), (False, True), (False, True), (False, True)))
FEATURES = {"follow": lambda g: g[1] > 0, "lists": lambda g: g[2], "netwalk": lambda g: g[3],
            "paste": lambda g: g[4], "modcontains": lambda g: g[5]}
# the constants before this grid (anchor weight 0.5, nothing else); vendored code x0.1 and stubs as now
PREVIOUS_POINT = (0.5, 0.0, False, False, False, False)
PREVIOUS = "previous (w0.5 f0)"
OBJECTIVE = ("file_R@1", "file_R@5", "sym_R@10", "MRR@10")
KEYS = ("file_R@1", "file_R@5", "file_R@10", "file_MRR@10", "sym_R@10", "sym_MRR@10", "MRR@10")


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


ct = _load("bench_code_tasks", "code_tasks.py")


def gname(g) -> str:
    return f"w{g[0]:g} f{g[1]:g}{' lists' if g[2] else ''}{' netwalk' if g[3] else ''}{' paste' if g[4] else ''}{' modcontains' if g[5] else ''}"


def default_point() -> tuple:
    from kgsearch.query import TUNING
    return (TUNING.anchor_weight, TUNING.anchor_follow, TUNING.anchor_lists, TUNING.walk_net_restart, TUNING.quiet_paste,
            TUNING.walk_skip_module_contains)


# ---------------------------------------------------------------------------- tasks of both sets
@dataclass
class LTask:
    qid: str
    repo: str
    lang: str
    text: str
    gold_files: list[str]
    gold_symbols: list          # python: "path::qual"; multi: (path, name)


@dataclass
class LRepo:
    set: str
    name: str
    lang: str
    tree: Path
    tasks: list[LTask] = field(default_factory=list)


def load_set(which: str, only: list[str] | None) -> list[LRepo]:
    out = []
    if which == "python":
        root = SHARED / "code-tasks"
        for r in ct.load_tasks(root, None):
            if only and not any(x in r.name for x in only):
                continue
            lr = LRepo("python", r.name, "Python", r.snapshot)
            lr.tasks = [LTask(t.qid, r.name, "Python", t.text, t.gold_files, t.gold_symbols) for t in r.tasks]
            out.append(lr)
    else:
        mt = _load("bench_code_tasks_multi", "code_tasks_multi.py")
        mt.TASKS = SHARED / "code-tasks-multi"
        for r in mt.load_tasks(only):
            lr = LRepo("multi", r.name, r.lang, r.tree)
            lr.tasks = [LTask(t.qid, r.name, t.lang, t.text, t.gold_files, t.gold_symbols) for t in r.tasks]
            out.append(lr)
    return out


def baseline_runs(which: str) -> dict[str, dict]:
    p = SHARED / ("code-tasks" if which == "python" else "code-tasks-multi") / "baselines" / "bm25.run.jsonl"
    if not p.is_file():
        return {}
    return {r["qid"]: r for r in map(json.loads, p.read_text(encoding="utf-8").splitlines()) if r}


def _sym_key(s: str):
    path, _, name = s.partition("::")
    import re
    return path, re.split(r"::|\.|#|->", re.sub(r"\(\)$", "", name.strip()))[-1].strip()


def metrics(which: str, t: LTask, files: list[str], syms: list[str]) -> dict:
    files, syms = ct.dedup(files), ct.dedup(syms)
    gold = set(t.gold_files)
    m: dict = {}
    if gold:
        for k in (1, 5, 10):
            m[f"file_R@{k}"] = len(gold & set(files[:k])) / len(gold)
        m["file_MRR@10"] = next((1 / (i + 1) for i, f in enumerate(files[:10]) if f in gold), 0.0)
        m["file_rank"] = next((i + 1 for i, f in enumerate(files) if f in gold), None)
    if t.gold_symbols:
        keyed = syms if which == "python" else [_sym_key(s) for s in syms]
        gs = set(t.gold_symbols) if which == "python" else {tuple(x) for x in t.gold_symbols}
        top = keyed[:10]
        m["sym_R@10"] = len(gs & set(top)) / len(gs)
        m["sym_MRR@10"] = next((1 / (i + 1) for i, s in enumerate(top) if s in gs), 0.0)
        m["sym_rank"] = next((i + 1 for i, s in enumerate(keyed) if s in gs), None)
    # each set's headline MRR@10: symbols for Python (score.py), files for multi (its score.py)
    m["MRR@10"] = m.get("sym_MRR@10") if which == "python" else m.get("file_MRR@10")
    if m["MRR@10"] is None:
        del m["MRR@10"]
    return m


# ---------------------------------------------------------------------------- running
_FP: list[str] = []


def query_fingerprint() -> str:
    """Hash of the kgsearch code and this bench, read once per process (the code it runs)."""
    if _FP:
        return _FP[0]
    h = hashlib.sha1()
    for p in sorted((ROOT / "kgsearch").rglob("*.py")):
        src = p.read_bytes()
        if p.name == "tuning.py":     # the grid sets these six itself: their shipped defaults change no point
            src = re.sub(rb"(?m)^(    (?:anchor_weight|anchor_follow|anchor_lists|walk_net_restart|quiet_paste|walk_skip_module_contains): \w+ = ).*$",
                         rb"\1*", re.sub(rb"(?m)^\s*#.*\n", b"", src))
        h.update(src)
    # what a cached result depends on besides kgsearch: the grid and how a task is scored
    h.update(repr(GRID).encode())
    for f in (metrics, _sym_key, symbols_of, run_repo):
        h.update(inspect.getsource(f).encode())
    _FP.append(h.hexdigest()[:12])
    return _FP[0]


def symbols_of(which: str, hits, root: str, mods) -> list[str]:
    """As code_tasks.py and code_tasks_multi.py list them by default."""
    if which == "python":
        return ct.rank_lists(hits, root, mods)[1]
    return sys.modules["bench_code_tasks_multi"].symbols_of(hits, root)


def run_repo(r: LRepo, cache: Path, rebuild: bool, log) -> dict:
    """Per task: metrics for every grid point and for bm25 (cached by the query-side code)."""
    from kgsearch.query import TUNING, Engine, SearchOptions
    from kgsearch.store.db import Index

    out_file = cache / "runs" / r.set / f"{r.tree.name}.{query_fingerprint()}.json"
    if out_file.is_file() and not rebuild:
        return json.loads(out_file.read_text())
    root = str(r.tree.resolve())
    db = cache / "index" / r.set / f"{r.tree.name}.db"
    info = ct.ensure_index(db, [root], {}, rebuild)
    log(f"{r.set}/{r.name}: index {'rebuilt' if info['rebuilt'] else 'reused'} ({info['build_seconds']} s)")
    res: dict = {"info": info, "tasks": {}}
    t0 = time.time()
    with Index.open(db, readonly=True) as ix:
        eng = Engine(ix, memo=True)
        mods = ct.module_names(ix) if r.set == "python" else None
        for t in r.tasks:
            per = {}
            points = [("bm25", None)] + [(gname(g), g) for g in GRID]
            for name, g in points:
                if g is None:         # BM25 alone on the issue text as written (no paste handling)
                    eng.tuning, chans = replace(TUNING, quiet_paste=False), ["bm25"]
                else:
                    eng.tuning, chans = replace(TUNING, anchor_weight=g[0], anchor_follow=g[1], anchor_lists=g[2],
                                                walk_net_restart=g[3], quiet_paste=g[4],
                                                walk_skip_module_contains=g[5]), None
                resp = eng.search(t.text, SearchOptions(k=100, channels=chans, use_cache=False, snippets=False))
                syms = symbols_of(r.set, resp.hits, root, mods)
                gr = eng.search(t.text, SearchOptions(k=100, channels=chans, use_cache=False, snippets=False,
                                                      group="file"))
                files = ct.dedup(r_ for r_ in (ct.hit_rel(h, root) for h in gr.hits) if r_)
                per[name] = metrics(r.set, t, files, syms)
            eng._memo.clear()
            res["tasks"][t.qid] = per
    eng.tuning = TUNING
    res["seconds"] = round(time.time() - t0, 1)
    log(f"{r.set}/{r.name}: {len(r.tasks)} tasks x {len(GRID) + 1} points in {res['seconds']} s")
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(res))
    return res


def latency(r: LRepo, cache: Path, runs: int = 2) -> dict:
    """A user's search (k = 10, snippets, as ``kgsearch search``) on every task of ``r``."""
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    ms = []
    with Index.open(cache / "index" / r.set / f"{r.tree.name}.db", readonly=True) as ix:
        eng = Engine(ix)
        eng.search("warm up the caches", SearchOptions(k=10, use_cache=False))
        for _ in range(runs):
            for t in r.tasks:
                t0 = time.perf_counter()
                eng.search(t.text, SearchOptions(use_cache=False))
                ms.append((time.perf_counter() - t0) * 1000)
    return {"repo": r.name, "queries": len(ms), "chars_p50": sorted(len(t.text) for t in r.tasks)[len(r.tasks) // 2],
            **ct.percentiles(ms), "load": loadavg()}


# ---------------------------------------------------------------------------- selection and report
def mean(vals):
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


def repo_means(tasks: list[LTask], runs: dict, name: str) -> dict:
    return {k: mean([runs[t.qid][name].get(k) for t in tasks]) for k in KEYS}


def objective(m: dict) -> float:
    return sum(m[k] or 0.0 for k in OBJECTIVE) / len(OBJECTIVE)


def choose(repos: list[LRepo], runs: dict, held: str | None, allowed) -> tuple:
    """The grid point (among ``allowed``) with the best unweighted mean objective over the
    repositories other than ``held``; the shipped default when there is none."""
    others = [r for r in repos if r.name != held]
    if not others:
        return default_point()
    best, best_v = None, -1.0
    for g in GRID:
        if not allowed(g):
            continue
        v = mean([objective(repo_means(r.tasks, runs, gname(g))) for r in others])
        if v > best_v + 1e-12:
            best, best_v = g, v
    return best


def assemble(repos: list[LRepo], runs: dict) -> tuple[dict, dict]:
    """Per task the metrics of every reported row (loro rows use the fold's chosen point)."""
    rows: dict[str, dict] = {"loro": {}, "default": {}, PREVIOUS: {}, "bm25": {}}
    for f in FEATURES:
        rows[f"loro +{f}"], rows[f"loro -{f}"] = {}, {}
    chosen: dict[str, dict] = {}
    dflt = gname(default_point())
    for r in repos:
        picks = {"loro": choose(repos, runs, r.name, lambda g: True)}
        for f, on in FEATURES.items():
            picks[f"loro +{f}"] = choose(repos, runs, r.name, on)
            picks[f"loro -{f}"] = choose(repos, runs, r.name, lambda g, on=on: not on(g))
        chosen[r.name] = {k: gname(v) for k, v in picks.items()}
        for t in r.tasks:
            for k, g in picks.items():
                rows[k][t.qid] = runs[t.qid][gname(g)]
            rows["default"][t.qid] = runs[t.qid][dflt]
            rows[PREVIOUS][t.qid] = runs[t.qid][gname(PREVIOUS_POINT)]
            rows["bm25"][t.qid] = runs[t.qid]["bm25"]
    return rows, chosen


def paired(tasks, a: dict, b: dict, key: str) -> dict:
    w = lo = 0
    for t in tasks:
        if key == "sym_rank" and not t.gold_symbols:
            continue
        x, y = a[t.qid].get(key), b[t.qid].get(key)
        x = math.inf if x is None else x
        y = math.inf if y is None else y
        w += x < y
        lo += x > y
    return {"wins": w, "losses": lo, "p": ct.sign_test_p(w, lo)}


def f3(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def report(which: str, repos: list[LRepo], runs: dict, lat: dict | None, base: dict) -> tuple[list[str], dict]:
    rows, chosen = assemble(repos, runs)
    tasks = [t for r in repos for t in r.tasks]
    if base:
        rows["set bm25"] = {t.qid: metrics(r.set, t, base.get(t.qid, {}).get("files", []),
                                           base.get(t.qid, {}).get("symbols", [])) for r in repos for t in r.tasks}
    order = ["loro", "default", PREVIOUS] + [f"loro {sg}{f}" for f in FEATURES for sg in "+-"] + ["bm25"] + \
        (["set bm25"] if base else [])
    summ: dict = {}
    lines = [f"### {which}: {len(tasks)} tasks, {len(repos)} repositories", "",
             "| row | repo mean R@1 | R@5 | R@10 | sym R@10 | MRR@10 | worst repo (R@1 / R@5) | pooled R@1 | R@5 | R@10 "
             "| sym R@10 | MRR@10 | files W/L vs bm25 (p) | MRR W/L vs bm25 (p) |", "|---" * 15 + "|"]
    for row in order:
        per_repo = {r.name: {k: mean([rows[row][t.qid].get(k) for t in r.tasks]) for k in KEYS} for r in repos}
        rmean = {k: mean([per_repo[n][k] for n in per_repo]) for k in KEYS}
        pooled = {k: mean([rows[row][t.qid].get(k) for t in tasks]) for k in KEYS}
        worst = min(per_repo, key=lambda n: (objective(per_repo[n]), n))
        pf = paired(tasks, rows[row], rows["bm25"], "file_rank") if row != "bm25" else None
        pm = _paired_val(tasks, rows[row], rows["bm25"], "MRR@10") if row != "bm25" else None
        summ[row] = {"repo_mean": rmean, "pooled": pooled, "per_repo": per_repo, "worst": worst,
                     "vs_bm25_files": pf, "vs_bm25_mrr": pm}
        lines.append(f"| {row} | " + " | ".join(f3(rmean[k]) for k in ("file_R@1", "file_R@5", "file_R@10",
                                                                       "sym_R@10", "MRR@10"))
                     + f" | {worst} ({f3(per_repo[worst]['file_R@1'])} / {f3(per_repo[worst]['file_R@5'])}) | "
                     + " | ".join(f3(pooled[k]) for k in ("file_R@1", "file_R@5", "file_R@10", "sym_R@10", "MRR@10"))
                     + (f" | {pf['wins']}/{pf['losses']} ({pf['p']:.3g}) | {pm['wins']}/{pm['losses']} ({pm['p']:.3g}) |"
                        if pf else " | - | - |"))
    pf, pm = paired(tasks, rows["default"], rows[PREVIOUS], "file_rank"), \
        _paired_val(tasks, rows["default"], rows[PREVIOUS], "MRR@10")
    summ["default_vs_previous"] = {"files": pf, "mrr": pm}
    lines += ["", f"`default` against `{PREVIOUS}`: files W/L {pf['wins']}/{pf['losses']} (p {pf['p']:.3g}), MRR@10 W/L "
              f"{pm['wins']}/{pm['losses']} (p {pm['p']:.3g})."]
    lines += ["", "Ablations: the leave-one-repository-out selection on the half of the grid with the feature on "
              "(`loro +X`) vs the half with it off (`loro -X`); per task, first gold file rank and MRR@10; W = better "
              "with the feature; two-sided sign test:", "",
              "| feature | files W/L (p) | MRR@10 W/L (p) | repo-mean R@1 with / without | MRR@10 with / without |",
              "|---|---|---|---|---|"]
    abl = {}
    for f in FEATURES:
        a, b = rows[f"loro +{f}"], rows[f"loro -{f}"]
        pf, pm = paired(tasks, a, b, "file_rank"), _paired_val(tasks, a, b, "MRR@10")
        abl[f] = {"files": pf, "mrr": pm}
        lines.append(f"| {f} | {pf['wins']}/{pf['losses']} ({pf['p']:.3g}) | {pm['wins']}/{pm['losses']} "
                     f"({pm['p']:.3g}) | {f3(summ[f'loro +{f}']['repo_mean']['file_R@1'])} / "
                     f"{f3(summ[f'loro -{f}']['repo_mean']['file_R@1'])} | {f3(summ[f'loro +{f}']['repo_mean']['MRR@10'])}"
                     f" / {f3(summ[f'loro -{f}']['repo_mean']['MRR@10'])} |")
    lines += ["", "Per repository (loro / default / bm25; the point chosen without the repository):", "",
              "| repository | lang | n | R@1 loro / default / bm25 | R@5 loro / default / bm25 | sym R@10 loro / bm25 "
              "| MRR@10 loro / bm25 | chosen without it |", "|---|---|---|---|---|---|---|---|"]
    for r in repos:
        g = {row: summ[row]["per_repo"][r.name] for row in ("loro", "default", "bm25")}
        lines.append(f"| {r.name} | {r.lang} | {len(r.tasks)} | "
                     + " / ".join(f3(g[x]["file_R@1"]) for x in g) + " | "
                     + " / ".join(f3(g[x]["file_R@5"]) for x in g) + " | "
                     + f"{f3(g['loro']['sym_R@10'])} / {f3(g['bm25']['sym_R@10'])} | "
                     + f"{f3(g['loro']['MRR@10'])} / {f3(g['bm25']['MRR@10'])} | {chosen[r.name]['loro']} |")
    langs = sorted({t.lang for t in tasks})
    if len(langs) > 1:
        lines += ["", "Per language (pooled over its tasks; loro / bm25; files W/L vs bm25):", "",
                  "| language | n | R@1 | R@5 | R@10 | sym R@10 | MRR@10 | files W/L (p) |", "|---|---|---|---|---|---|---|---|"]
        for lg in langs:
            ts = [t for t in tasks if t.lang == lg]
            a = {k: mean([rows["loro"][t.qid].get(k) for t in ts]) for k in KEYS}
            b = {k: mean([rows["bm25"][t.qid].get(k) for t in ts]) for k in KEYS}
            pf = paired(ts, rows["loro"], rows["bm25"], "file_rank")
            summ.setdefault("languages", {})[lg] = {"n": len(ts), "loro": a, "bm25": b, "files": pf}
            lines.append(f"| {lg} | {len(ts)} | " + " | ".join(f"{f3(a[k])} / {f3(b[k])}" for k in
                         ("file_R@1", "file_R@5", "file_R@10", "sym_R@10", "MRR@10"))
                         + f" | {pf['wins']}/{pf['losses']} ({pf['p']:.3g}) |")
    if lat:
        lines += ["", f"Latency (`kgsearch search` as a user runs it, k = 10, snippets; every task of the largest "
                  f"repository {lat['repo']}, {lat['queries']} searches, median issue {lat['chars_p50']} chars): "
                  f"p50 {lat['p50']} ms, p95 {lat['p95']} ms, max {lat['max']} ms; load {lat['load']}."]
    summ["ablations"], summ["chosen"], summ["latency"] = abl, chosen, lat
    return lines, summ


def _paired_val(tasks, a: dict, b: dict, key: str) -> dict:
    w = lo = 0
    for t in tasks:
        x, y = a[t.qid].get(key), b[t.qid].get(key)
        if x is None or y is None:
            continue
        w += x > y
        lo += x < y
    return {"wins": w, "losses": lo, "p": ct.sign_test_p(w, lo)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loro", action="store_true", help="(accepted: this command is the --loro mode)")
    ap.add_argument("--set", choices=("python", "multi", "all"), default="all")
    ap.add_argument("--repos", help="comma-separated parts of task folder names")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("KGSEARCH_LORO_CACHE", "/tmp/codepath")))
    ap.add_argument("--rebuild", action="store_true", help="rebuild the indexes and rerun the grid")
    ap.add_argument("--latency-runs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    log = (lambda m: None) if a.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    query_fingerprint()            # the code this process runs: later edits do not relabel its results
    sets = ["python", "multi"] if a.set == "all" else [a.set]
    only = a.repos.split(",") if a.repos else None
    t0 = time.time()
    load0 = loadavg()
    md = [f"# Code tasks, leave one repository out ({time.strftime('%Y-%m-%d %H:%M')})", "",
          f"`python bench/code_tasks.py --loro --set {a.set}`. kgsearch {git_commit()}; load {load0} at start "
          f"(a shared 2-core machine: latency is noisy). Grid: anchor weight {WEIGHTS} x call following "
          f"{FOLLOWS} x listed names sharing a mention off/on x walk net of restart off/on x pasted-output handling "
          f"off/on x module contains edges skipped by the walk off/on ({len(GRID)} points); objective "
          f"(file R@1 + file R@5 + symbol R@10 + MRR@10)/4, unweighted mean over the other repositories. MRR@10 is "
          "each set's score.py's: symbol MRR@10 for Python, file MRR@10 for multi. Default: the shipped "
          f"constants {gname(default_point())}.", ""]
    out: dict = {"meta": {"machine": machine(), "commit": git_commit(), "grid": [gname(g) for g in GRID]}}
    all_repos, all_runs = [], {}
    for s in sets:
        try:
            repos = load_set(s, only)
        except Exception as exc:      # a missing set is a one-line message
            print(f"code_tasks --loro: cannot read the {s} set: {exc}", file=sys.stderr)
            return 3
        if not repos:
            continue
        runs = {}
        for r in repos:
            runs.update(run_repo(r, a.cache, a.rebuild, log)["tasks"])
        largest = max(repos, key=lambda r: (cache_size(a.cache, r), r.name))
        lat = latency(largest, a.cache, a.latency_runs) if a.latency_runs else None
        lines, summ = report(s, repos, runs, lat, baseline_runs(s))
        md += lines + [""]
        out[s] = summ
        all_repos += repos
        all_runs.update(runs)
    if len(sets) > 1 and all_repos:
        lines, summ = report("all (both sets, folds over all 22 repositories)", all_repos, all_runs, None, {})
        md += lines + [""]
        out["all"] = summ
    md.append(f"Ran in {time.time() - t0:.0f} s.")
    suffix = "" if a.set == "all" and not only else f".{a.set}" + (f".{'_'.join(only)}" if only else "")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"code_tasks_loro{suffix}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (a.out / f"code_tasks_loro{suffix}.json").write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
    if not a.quiet:
        print("\n".join(md))
    return 0


def cache_size(cache: Path, r: LRepo) -> int:
    p = cache / "index" / r.set / f"{r.tree.name}.db"
    return p.stat().st_size if p.is_file() else 0


if __name__ == "__main__":
    sys.exit(main())
