"""Context packing benchmark: does ``kgsearch context`` put the gold file and symbols of a code
task into the budget more often than plain top-k search at the same token cost? Plus the cost of
packing on the stdlib index, and a simulated-feedback run.

    python bench/context_bench.py                      # everything (code tasks, stdlib overhead, feedback)
    python bench/context_bench.py --parts tasks        # one part: tasks, overhead, feedback
    python bench/context_bench.py --parts overhead --overhead-src DIR   # overhead on another tree

Data: ../shared/bench/code-tasks (64 SWE-bench Lite issue texts over 9 repository snapshots; see its
README). Each snapshot is indexed whole (default settings) into bench/work/context/index/ (reused,
updated incrementally); the stdlib of this Python into bench/work/stdlib.db.

* tasks: per task and budget (2K/4K/8K/16K tokens), ``build_context(task=issue text)`` vs the
  longest prefix of the same engine's ranking (k=100) whose full bodies, printed as the same
  Markdown blocks, fit the budget ("top-k at the same token cost"). A gold file is in when a
  packed block shows a node of that file; a gold symbol when its node is packed (any form) or a
  block that shows full source covers its lines. Paired sign test per budget (files).
* overhead: p50 over stdlib queries of context(8K) time minus search time with the same k, both
  warm, alternating, in one process.
* feedback: on the code tasks, "useful" feedback on the gold symbols' nodes for the issue text,
  then (a) the same query replayed, (b) a near-duplicate (every 5th word dropped), (c) the other
  half of the tasks (feedback from odd tasks, measured on even ones: nothing should move). Gold
  symbol MRR@10 and file R@1 before/after, paired sign test. Feedback goes into a copy of each
  index, deleted afterwards.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS as OUT, SHARED, WORK, git_commit, machine as _machine, write_results  # noqa: E402

TASKS = SHARED / "code-tasks"
BUDGETS = (2000, 4000, 8000, 16000)
KINDS = ("function", "method", "class")
VALUE = "margin"               # --value: what the packer's density divides (ContextOptions.value)


# ---------------------------------------------------------------------------- helpers (after bench/code_tasks.py)
def symbol_id(rel: str, module_qual: str, qualname: str) -> str | None:
    if not module_qual or not qualname.startswith(module_qual + "."):
        return None
    return f"{rel}::{qualname[len(module_qual) + 1:]}"


def module_names(ix) -> dict[str, str]:
    from kgsearch.store.rows import qualname_sql

    return dict(ix.conn.execute(f"SELECT f.path, {qualname_sql('n')} FROM nodes n JOIN files f ON f.id = n.file_id "
                                "WHERE n.kind = 'module' AND n.key LIKE 'py:%'"))


def sign_test_p(wins: int, losses: int) -> float:
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(a: list[float], b: list[float]) -> dict:
    w = sum(x > y for x, y in zip(a, b))
    los = sum(x < y for x, y in zip(a, b))
    return {"wins": w, "losses": los, "ties": len(a) - w - los, "p": round(sign_test_p(w, los), 4)}


def load_tasks() -> list[dict]:
    repos = []
    for d in sorted((TASKS / "tasks").iterdir()):
        meta = json.loads((d / "meta.json").read_text())
        qrels = {}
        for kind in ("files", "symbols"):
            for line in (d / f"qrels.{kind}.tsv").read_text().splitlines()[1:]:
                if line.strip():
                    q, doc, _ = line.split("\t")
                    qrels.setdefault((kind, q), []).append(doc)
        spans = {}
        for line in (d / "corpus.symbols.jsonl").read_text().splitlines():
            r = json.loads(line)
            spans[r["_id"]] = (r["metadata"]["path"], r["metadata"]["spans"])
        tasks = []
        for line in (d / "queries.jsonl").read_text().splitlines():
            q = json.loads(line)
            tasks.append({"qid": q["_id"], "text": q["text"], "gold_files": qrels.get(("files", q["_id"]), []),
                          "gold_symbols": qrels.get(("symbols", q["_id"]), [])})
        repos.append({"name": d.name, "tree": meta["source_tree"], "snapshot": TASKS / "repos" / meta["source_tree"],
                      "tasks": tasks, "spans": spans})
    return repos


def ensure_index(db: Path, paths: list[str]) -> float:
    from kgsearch.indexer import IndexOptions, index_paths

    db.parent.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    index_paths(db, paths, IndexOptions())
    return time.perf_counter() - t


def machine() -> dict:
    m = _machine()
    return {**m, "commit": git_commit(), "load_1min": (m["load"] or [None])[0]}


# ---------------------------------------------------------------------------- part 1: context vs top-k
def coverage(blocks, root: str, mods: dict, gold_files, gold_symbols, spans) -> tuple[int, float]:
    """(gold file in?, share of gold symbols in) for packed blocks: (path, qualname, kind, form, a, b, source)."""
    files = {b[0] for b in blocks}
    got = set()
    for path, qual, kind, form, a, b, source in blocks:
        if kind in KINDS:
            sid = symbol_id(path, mods.get(os.path.join(root, path), ""), qual or "")
            if sid in gold_symbols:
                got.add(sid)
        if form == "full" and source == "file" and a and b:
            for g in gold_symbols:
                gp, gs = spans.get(g, (None, []))
                if gp == path and gs and all(a <= s <= e <= b for s, e in gs):
                    got.add(g)
    f = int(any(g in files for g in gold_files))
    s = len(got & set(gold_symbols)) / len(gold_symbols) if gold_symbols else None
    return f, s


def run_tasks(repos, log) -> dict:
    from kgsearch.context import ContextOptions, build_context
    from kgsearch.context.items import load_items
    from kgsearch.context.render import renderer
    from kgsearch.context.sources import Candidate
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    rows = []
    for repo in repos:
        db = WORK / "context" / "index" / f"{repo['tree'].split('/')[-1]}.db"
        secs = ensure_index(db, [str(repo["snapshot"])])
        log(f"{repo['name']}: index up to date ({secs:.1f}s)")
        ix = Index.open(db, readonly=True)
        eng = Engine(ix, memo=True)
        mods = module_names(ix)
        root = str(repo["snapshot"])
        for t in repo["tasks"]:
            resp = eng.search(t["text"], SearchOptions(k=100, snippets=False, use_cache=False))
            items = load_items(ix, [Candidate(h.id, h.score, "") for h in resp.hits], [])
            row = {"qid": t["qid"], "repo": repo["name"]}
            for b in BUDGETS:
                res = build_context(eng, task=t["text"], opts=ContextOptions(
                    budget=b, search=SearchOptions(use_cache=False), value=VALUE))
                blocks = [(i["path"], i["name"], i["kind"], i["form"], i["line_start"], i["line_end"], i["source"])
                          for i in res.items]
                cf, cs = coverage(blocks, root, mods, t["gold_files"], t["gold_symbols"], repo["spans"])
                r = renderer("markdown", {"mode": "task", "budget": b})
                used, top = 0, []
                for it in items:                        # the longest prefix of the ranking that fits
                    c = r.cost(it, it.forms[0])
                    if used + c > b:
                        break
                    used += c
                    top.append((it.path, it.name, it.kind, "full", it.line_start, it.line_end, it.source))
                tf, ts = coverage(top, root, mods, t["gold_files"], t["gold_symbols"], repo["spans"])
                used2, skip = 0, []
                for it in items:                        # rank order, skipping what does not fit
                    c = r.cost(it, it.forms[0])
                    if used2 + c <= b:
                        used2 += c
                        skip.append((it.path, it.name, it.kind, "full", it.line_start, it.line_end, it.source))
                kf, ks = coverage(skip, root, mods, t["gold_files"], t["gold_symbols"], repo["spans"])
                row[b] = {"ctx_file": cf, "ctx_sym": cs, "ctx_nodes": len(res.items), "ctx_used": res.used,
                          "ctx_ms": res.timings_ms["total"], "top_file": tf, "top_sym": ts, "top_k": len(top),
                          "top_used": used, "skip_file": kf, "skip_sym": ks, "skip_n": len(skip)}
            rows.append(row)
            log(f"  {t['qid']}: " + " ".join(f"{b // 1000}K ctx {row[b]['ctx_file']}/{row[b]['ctx_sym']} "
                                              f"top{row[b]['top_k']} {row[b]['top_file']}/{row[b]['top_sym']}"
                                              for b in BUDGETS))
        ix.close()
    summary = {}
    for b in BUDGETS:
        sym_rows = [r[b] for r in rows if r[b]["ctx_sym"] is not None]
        summary[b] = {
            "ctx_file": sum(r[b]["ctx_file"] for r in rows) / len(rows),
            "top_file": sum(r[b]["top_file"] for r in rows) / len(rows),
            "ctx_sym": sum(r["ctx_sym"] for r in sym_rows) / len(sym_rows),
            "top_sym": sum(r["top_sym"] for r in sym_rows) / len(sym_rows),
            "ctx_nodes": statistics.median(r[b]["ctx_nodes"] for r in rows),
            "top_k": statistics.median(r[b]["top_k"] for r in rows),
            "skip_file": sum(r[b]["skip_file"] for r in rows) / len(rows),
            "skip_sym": sum(r[b]["skip_sym"] for r in rows if r[b]["skip_sym"] is not None) / len(sym_rows),
            "skip_file_test": paired([r[b]["ctx_file"] for r in rows], [r[b]["skip_file"] for r in rows]),
            "skip_sym_test": paired([r["ctx_sym"] for r in sym_rows], [r["skip_sym"] for r in sym_rows]),
            "file_test": paired([r[b]["ctx_file"] for r in rows], [r[b]["top_file"] for r in rows]),
            "sym_test": paired([r["ctx_sym"] for r in sym_rows], [r["top_sym"] for r in sym_rows]),
            "n": len(rows), "n_sym": len(sym_rows)}
    return {"summary": summary, "rows": rows}


# ---------------------------------------------------------------------------- part 2: packing overhead
STDLIB_QUERIES = [
    "parse a csv file with a header row", "retry an http request after a timeout", "walk a directory tree",
    "compress data with gzip", "read a zip archive member", "format a date as ISO 8601", "parse command line options",
    "copy a file and keep its permissions", "thread pool executor map", "json encoder for custom objects",
    "temporary directory cleanup", "decode base64 text", "sqlite connection row factory", "url encode query string",
    "heap queue push pop", "ordered dictionary move to end", "regular expression named groups",
    "unit test assert raises", "logging rotating file handler", "socket connect with timeout",
    "subprocess capture output", "pickle protocol version", "decimal rounding mode", "email message attachments",
    "xml element tree iterparse", "shutil disk usage", "async event loop run until complete", "hash a file with sha256",
    "tar archive extract filter", "signal handler for SIGINT", "text wrap paragraph", "locale currency format",
    "ssl context verify certificate", "http server request handler", "calendar month range", "uuid from a name",
    "dataclass field default factory", "inspect function signature", "abstract base class register",
    "weak reference callback",
]


def run_overhead(log, runs: int = 3, src: str | None = None) -> dict:
    from kgsearch.context import ContextOptions, build_context
    from kgsearch.context.build import task_depth
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    src = src or sysconfig.get_paths()["stdlib"]
    db = WORK / ("stdlib.db" if src == sysconfig.get_paths()["stdlib"] else f"overhead-{Path(src).name}.db")
    secs = ensure_index(db, [src])
    log(f"{src} index up to date ({secs:.1f}s)")
    eng = Engine(Index.open(db, readonly=True))
    budget = 8000
    k = task_depth(budget)
    sopts = SearchOptions(k=k, snippets=False, use_cache=False)
    copts = ContextOptions(budget=budget, search=SearchOptions(use_cache=False))
    for q in STDLIB_QUERIES[:5]:                                # warm up
        eng.search(q, sopts)
        build_context(eng, task=q, opts=copts)
    diffs, ratios, s_ms, c_ms, parts = [], [], [], [], {"load": [], "pack": [], "render": []}
    for _ in range(runs):
        for i, q in enumerate(STDLIB_QUERIES):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            t = {}
            for which in order:
                t0 = time.perf_counter()
                if which == 0:
                    eng.search(q, sopts)
                else:
                    res = build_context(eng, task=q, opts=copts)
                t[which] = (time.perf_counter() - t0) * 1000
            diffs.append(t[1] - t[0])
            ratios.append(t[1] / t[0])
            s_ms.append(t[0])
            c_ms.append(t[1])
            for p in parts:
                parts[p].append(res.timings_ms[p])
    med = statistics.median
    return {"queries": len(STDLIB_QUERIES), "runs": runs, "budget": budget, "k": k,
            "search_p50_ms": round(med(s_ms), 2), "context_p50_ms": round(med(c_ms), 2),
            "added_p50_ms": round(med(diffs), 2), "ratio_p50": round(med(ratios), 3),
            "parts_p50_ms": {p: round(med(v), 2) for p, v in parts.items()}}


# ---------------------------------------------------------------------------- part 3: simulated feedback
def run_feedback(repos, log) -> dict:
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.query.feedback import record
    from kgsearch.store.db import Index

    def ranks(eng, text, mods, root, t):
        hits = eng.search(text, SearchOptions(k=10, snippets=False, use_cache=False)).hits
        files = []
        mrr = 0.0
        for h in hits:
            rel = os.path.relpath(h.path, root) if h.path else None
            files.append(rel)
            if h.kind in KINDS and rel and mrr == 0.0:
                if symbol_id(rel, mods.get(h.path, ""), h.qualname or "") in t["gold_symbols"]:
                    mrr = 1.0 / (len(files))
        return (1.0 if files and files[0] in t["gold_files"] else 0.0), mrr

    def near_dup(text):
        words = text.split()
        return " ".join(w for i, w in enumerate(words) if i % 5 != 4)

    out = {m: {"before_f": [], "after_f": [], "before_s": [], "after_s": []} for m in ("replay", "near_duplicate",
                                                                                    "other_half")}
    for repo in repos:
        src = WORK / "context" / "index" / f"{repo['tree'].split('/')[-1]}.db"
        db = WORK / "context" / "feedback" / src.name
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, db)
        root = str(repo["snapshot"])
        eng = Engine(Index.open(db, readonly=True), memo=False)
        mods = module_names(eng.ix)
        tasks = [t for t in repo["tasks"] if t["gold_symbols"]]
        keys = {}
        for t in tasks:                                      # the gold symbols' node keys
            ks = []
            for g in t["gold_symbols"]:
                path, qual = g.split("::")
                mod = mods.get(os.path.join(root, path))
                if mod:
                    k = f"py:{mod}.{qual}"
                    if eng.ix.node_by_key(k) is not None:
                        ks.append(k)
            keys[t["qid"]] = ks
        before = {t["qid"]: (ranks(eng, t["text"], mods, root, t), ranks(eng, near_dup(t["text"]), mods, root, t))
                  for t in tasks}
        with Index.open(db) as w:                            # feedback from the odd tasks only
            for i, t in enumerate(tasks):
                if i % 2 == 1:
                    for k in keys[t["qid"]]:
                        record(w, t["text"], {"key": k}, True)
        for i, t in enumerate(tasks):
            if i % 2 == 0:
                b = before[t["qid"]][0]
                a = ranks(eng, t["text"], mods, root, t)
                for n, v in (("before_f", b[0]), ("after_f", a[0]), ("before_s", b[1]), ("after_s", a[1])):
                    out["other_half"][n].append(v)
        with Index.open(db) as w:                            # now feedback from every task
            for t in tasks:
                for k in keys[t["qid"]]:
                    record(w, t["text"], {"key": k}, True)
        for t in tasks:
            for mode, text, b in (("replay", t["text"], before[t["qid"]][0]),
                                  ("near_duplicate", near_dup(t["text"]), before[t["qid"]][1])):
                a = ranks(eng, text, mods, root, t)
                for n, v in (("before_f", b[0]), ("after_f", a[0]), ("before_s", b[1]), ("after_s", a[1])):
                    out[mode][n].append(v)
        eng.ix.close()
        for suffix in ("", "-wal", "-shm", ".lock"):
            p = Path(str(db) + suffix)
            if p.exists():
                p.unlink()
        log(f"{repo['name']}: feedback runs done ({len(tasks)} tasks)")
    summary = {}
    for mode, d in out.items():
        summary[mode] = {"n": len(d["before_f"]),
                         "file_R@1": [round(statistics.mean(d["before_f"]), 4), round(statistics.mean(d["after_f"]), 4)],
                         "sym_MRR@10": [round(statistics.mean(d["before_s"]), 4), round(statistics.mean(d["after_s"]), 4)],
                         "file_test": paired(d["after_f"], d["before_f"]), "sym_test": paired(d["after_s"], d["before_s"])}
    return summary


# ---------------------------------------------------------------------------- report
def markdown(res: dict) -> str:
    m = res["machine"]
    lines = ["# kgsearch context benchmark", "",
             f"Machine: {m['cpu']} ({m['cores']} cores, shared with other jobs; 1-min load {m['load_1min']} at the start), "
             f"Python {m['python']}, commit {m['commit']}, {m['date']}. One run per task (the ranking is deterministic); "
             "token estimate ceil(characters / 4).", ""]
    if "tasks" in res:
        s = res["tasks"]["summary"]
        n = s[BUDGETS[0]]["n"]
        lines += [f"## Gold in the packed context: code-tasks ({n} tasks; symbols over {s[BUDGETS[0]]['n_sym']})", "",
                  "`context` = `kgsearch context ISSUE --budget B`; `top-k` = the longest prefix of the same ranking "
                  "(k=100) whose full bodies fit B (the same Markdown blocks, counted the same way).", "",
                  "| budget | gold file: context | gold file: top-k | wins/losses (p) | gold symbols: context | "
                  "gold symbols: top-k | wins/losses (p) | nodes packed (median) | top-k k (median) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for b in BUDGETS:
            r = s[b]
            ft, st = r["file_test"], r["sym_test"]
            lines.append(f"| {b // 1000}K | {r['ctx_file']:.3f} | {r['top_file']:.3f} | {ft['wins']}/{ft['losses']} "
                         f"({ft['p']}) | {r['ctx_sym']:.3f} | {r['top_sym']:.3f} | {st['wins']}/{st['losses']} "
                         f"({st['p']}) | {r['ctx_nodes']} | {r['top_k']} |")
        lines += ["", "Second baseline, `top-k skipping`: the ranking in order, every node that fits in full "
                  "(one that does not is skipped, the next ones still tried): no score density, no trimming.", "",
                  "| budget | gold file: context | gold file: top-k skipping | wins/losses (p) | gold symbols: context | "
                  "gold symbols: top-k skipping | wins/losses (p) |", "|---|---|---|---|---|---|---|"]
        for b in BUDGETS:
            r = s[b]
            ft, st = r["skip_file_test"], r["skip_sym_test"]
            lines.append(f"| {b // 1000}K | {r['ctx_file']:.3f} | {r['skip_file']:.3f} | {ft['wins']}/{ft['losses']} "
                         f"({ft['p']}) | {r['ctx_sym']:.3f} | {r['skip_sym']:.3f} | {st['wins']}/{st['losses']} ({st['p']}) |")
        lines.append("")
    if "overhead" in res:
        o = res["overhead"]
        lines += ["## Packing cost on the stdlib index", "",
                  f"{o['queries']} queries x {o['runs']} runs, warm, alternating order; context at {o['budget']} tokens "
                  f"vs search with the same k ({o['k']}), snippets off, no result cache.", "",
                  "| search p50 | context p50 | added p50 (per-query difference) | ratio p50 | load / pack / render p50 |",
                  "|---|---|---|---|---|",
                  f"| {o['search_p50_ms']} ms | {o['context_p50_ms']} ms | {o['added_p50_ms']} ms | {o['ratio_p50']} | "
                  f"{o['parts_p50_ms']['load']} / {o['parts_p50_ms']['pack']} / {o['parts_p50_ms']['render']} ms |", ""]
    if "feedback" in res:
        lines += ["## Simulated feedback (code tasks with gold symbols)", "",
                  "'useful' feedback on the gold symbols' nodes for the issue text; measured on the same query "
                  "(replay), on a near-duplicate (every 5th word dropped), and on the other half of the tasks "
                  "(feedback from odd tasks, measured on even ones).", "",
                  "| run | tasks | file R@1 before -> after | wins/losses (p) | symbol MRR@10 before -> after | wins/losses (p) |",
                  "|---|---|---|---|---|---|"]
        for mode, r in res["feedback"].items():
            ft, st = r["file_test"], r["sym_test"]
            lines.append(f"| {mode} | {r['n']} | {r['file_R@1'][0]:.3f} -> {r['file_R@1'][1]:.3f} | {ft['wins']}/{ft['losses']} "
                         f"({ft['p']}) | {r['sym_MRR@10'][0]:.3f} -> {r['sym_MRR@10'][1]:.3f} | "
                         f"{st['wins']}/{st['losses']} ({st['p']}) |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="tasks,overhead,feedback")
    ap.add_argument("--repos", default=None, help="comma-separated task folder name parts (default: all)")
    ap.add_argument("--runs", type=int, default=3, help="overhead runs over the query list (default 3)")
    ap.add_argument("--value", default="margin", choices=["score", "margin"], help="ContextOptions.value (tasks)")
    ap.add_argument("--overhead-src", default=None, help="tree indexed for the overhead part (default: the stdlib)")
    args = ap.parse_args(argv)
    global VALUE
    VALUE = args.value
    parts = args.parts.split(",")
    log = lambda s: print(s, file=sys.stderr, flush=True)       # noqa: E731
    res: dict = {"machine": machine()}
    repos = load_tasks() if {"tasks", "feedback"} & set(parts) else []
    if args.repos:
        repos = [r for r in repos if any(x in r["name"] for x in args.repos.split(","))]
    if "tasks" in parts:
        res["tasks"] = run_tasks(repos, log)
    if "overhead" in parts:
        res["overhead"] = run_overhead(log, args.runs, args.overhead_src)
    if "feedback" in parts:
        res["feedback"] = run_feedback(repos, log)
    text = markdown(res)
    print(text)
    suffix = "" if set(parts) == {"tasks", "overhead", "feedback"} and not args.repos else "." + "-".join(parts)
    if args.value != "margin":
        suffix += "." + args.value
    write_results(f"context{suffix}", res, text, OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
