"""Term proximity (sequential dependence / BM25TP) chosen leave-one-set-out: does it earn a place?

    python bench/studies/proximity.py [--index-dir DIR] [--top 30] [--latency-set scifact] [--latency-runs 2]
    python bench/studies/proximity.py --report-from FILE.json       # tables from a saved run

For a query of two or more distinct analysed terms, the top ``N`` (``--top``: 100, or the
shipped 30) candidates of the default fusion are re-read (``name`` and ``text``, analysed with the
index's BM25 analyser: the term sequence BM25 counts, stop words dropped) and scored by how close
the query's terms occur in them, the way the sequential dependence model (Metzler and Croft
2005) and BM25TP (Rasolofo and Savoy 2003) do (:mod:`kgsearch.text.term_proximity`, the shipped
scorer):

* ``od(a, b)``: how often query term ``b`` directly follows ``a`` (``a``, ``b`` adjacent in the
  analysed query, in that order);
* ``uw(a, b)``: how often ``a`` and ``b`` (any two distinct query terms) occur less than ``w``
  terms apart (both orders);
* ``prox(d) = sum over pairs of min(idf a, idf b) x f (k1 + 1) / (f + k1 (1 - b + b dl / avgdl))``
  for ``f`` = od (adjacent pairs) and uw (all pairs): BM25's saturation and length norm (the
  stored norms, BM25's k1) applied to pair frequencies, with the rarer term's idf.

Two ways to put it on the fused scale (every other candidate, beyond the top N, scores 0):

* ``bm l``: BM25TP: ``l x prox`` added to the BM25 score before it is standardised, i.e. the
  text z-score plus ``l x prox / sd`` (sd: BM25's spread over the whole index, the text
  channel's own scale);
* ``sd w``: a channel of its own: ``w x prox / sd(prox over the top N)`` added to the fused
  score (a z-score over the top N shifted so that no proximity stays 0);
* ``fs l`` (``--family fs``): as ``bm l``, on the top N by the first stage (embedding and text z)
  instead of the fused score: per node, from what several indexes can pool before they search.

Each variant runs on the seven shared sets through the whole pipeline (per-query nDCG@10, the
code path of ``bench/quality.py --loso``, via ``fusion_variants.py``'s hook), then
``bench/loso.py``'s selection picks, per held-out set, the best variant on the other six (by
mean, and by worst-set gain over BM25), with the shipped profiles (``current``) a candidate.
Every variant runs with the engine's own proximity step off (``Tuning.proximity_weight`` 0, the
default); with ``--top 30`` the engine's step at the chosen setting (weight 0.1, window 8) runs
too, as ``engine step (Tuning)``, and must equal its variant (``sd w=0.1 win=8``). The latency part times the default search without and with the
shipped step, alternating query by query in one process, on the largest set by text (SciFact)
and by nodes (CoSQA).
Writes bench/results/quality_loso_proximity.md/json.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "studies"))

import fusion_variants as fv  # noqa: E402
import loso  # noqa: E402
from _common import RESULTS, SHARED  # noqa: E402

from kgsearch import evaluate as ev  # noqa: E402
from kgsearch import fuse  # noqa: E402
from kgsearch.query import Engine, SearchOptions  # noqa: E402
from kgsearch.query import engine as engine_mod  # noqa: E402
from kgsearch.query import signals as signals_mod  # noqa: E402
from kgsearch.query.tuning import TUNING  # noqa: E402
from kgsearch.store.db import Index  # noqa: E402
from kgsearch.text import term_proximity  # noqa: E402

SETS = fv.SETS
TOP = 100


# ---------------------------------------------------------------------------- the signal
def query_terms(q) -> list[str]:
    return term_proximity.query_terms(q.terms)


def prox_scores(ix, terms, ids, window: int) -> np.ndarray:
    """The shipped scorer (kgsearch/text/term_proximity.py), read from the index each time."""
    return term_proximity.scores(ix, terms, ids, window)


# ---------------------------------------------------------------------------- the variants
_PROX: dict = {}         # (id(index), query text, window, parts) -> (top ids, scores)


def proximity(mode: str, weight: float, window: int):
    def f(signals, weights):
        fused, _ = fv._LINEAR(signals, weights)
        sig = fv._LAST["sig"]
        terms = query_terms(sig.query)
        if len(terms) < 2 or not len(fused) or weights.get("text", 0) <= 0:
            return fv._LINEAR(signals, weights)
        ix = sig.engine.ix
        by = sig.first_stage(weights) if mode == "fs" else fused
        top = np.argsort(-by, kind="stable")[:TOP]
        key = (id(ix), sig.query.text, window, sig.cand[top].tobytes())
        if key not in _PROX:
            _PROX[key] = prox_scores(ix, terms, sig.cand[top], window)
        p = np.zeros(len(fused))
        p[top] = _PROX[key]
        if mode in ("bm", "fs"):
            if "bm25" not in sig.full:
                return fv._LINEAR(signals, weights)
            sd = sig.full["bm25"][3]
            return fv._LINEAR(dict(signals, text=np.asarray(signals["text"]) + weight * p / sd), weights)
        sd = float(p[top].std())
        fused2, parts_ = fv._LINEAR(signals, weights)
        if sd > 0:
            add = weight * p / sd
            fused2 = fused2 + add
            parts_ = dict(parts_, proximity=add)
        return fused2, parts_
    return f


OFF = replace(TUNING, proximity_weight=0.0)      # the profiles without the engine's own proximity step
ON = replace(TUNING, proximity_weight=0.1)       # the engine's step at the setting LOSO chose
SHIPPED, SHIPPED_AS = "engine step (Tuning)", f"sd w={ON.proximity_weight:g} win={ON.proximity_window}"


def variants(family: str = "main", windows=(4, 8, 16)) -> dict:
    v: dict = {"current": {}}
    if family == "fs":          # per node, from statistics several indexes can pool before they search
        for w in windows:
            for lam in (0.25, 0.5):
                v[f"fs l={lam:g} w={w}"] = {"fn": proximity("fs", lam, w)}
        return v
    for w in windows:
        for lam in (0.25, 0.5, 1.0):
            v[f"bm l={lam:g} w={w}"] = {"fn": proximity("bm", lam, w)}
        for wt in (0.05, 0.1, 0.2):
            v[f"sd w={wt:g} win={w}"] = {"fn": proximity("sd", wt, w)}
    return v


def load_sets(index_dir):
    data, engines = {}, {}
    for s in SETS:
        folder = SHARED / s
        qrels = {q: r for q, r in ev.read_qrels(ev.find_qrels(folder, None)).items() if any(v > 0 for v in r.values())}
        queries = [(str(q["_id"]), str(q.get("text", ""))) for q in fv._jsonl(folder / "queries.jsonl")
                   if str(q.get("_id")) in qrels]
        db, _ = ev.build_eval_index(folder, ev.EvalOptions(index_dir=index_dir))
        data[s] = (queries, qrels)
        engines[s] = Engine(Index.open(db, readonly=True), memo=True, tuning=OFF)
    return data, engines


def run(data, engines, todo: dict) -> dict:
    base = SearchOptions(k=100, snippets=False, use_cache=False)
    out: dict = {}
    engine_mod.Signals = fv._Recorded
    try:
        for name, v in todo.items():
            fuse.linear = v.get("fn", fv._LINEAR)
            for e in engines.values():
                e.tuning = v.get("tuning", OFF)
            t0 = time.perf_counter()
            try:
                out[name] = {s: [q["ndcg@10"] for q in ev.run_queries(engines[s], data[s][0], replace(
                    base, **v.get("opts", {})), data[s][1])["per_query"]] for s in SETS}
            finally:
                fuse.linear = fv._LINEAR
                for e in engines.values():
                    e.tuning = OFF
            mean = sum(sum(x) / len(x) for x in out[name].values()) / len(SETS)
            print(f"{name:24} mean {mean:.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        engine_mod.Signals = signals_mod.Signals
    return out


# ---------------------------------------------------------------------------- latency
def latency(engine, queries, runs: int) -> dict:
    """Per query, alternating: the default search (top 10, no snippets, no cache) without and with
    the engine's proximity step (Tuning), each on a fresh engine of the same index (no memo):
    median ms and the ratio; the step's own time (``timings_ms["proximity"]``); the Python heap
    peak of the step alone and the size of its memo of analysed pieces at the end."""
    base = SearchOptions(k=10, snippets=False, use_cache=False)
    off, on = Engine(engine.ix, tuning=OFF), Engine(engine.ix, tuning=ON)
    for _, text in queries[:20]:                # warm: the page cache, the analysers' memos
        off.search(text, base)
        on.search(text, base)
    t_off, t_on, step = [], [], []
    by_run = []
    for r in range(runs):
        n0 = len(t_on)
        for n, (_, text) in enumerate(queries):
            pair = (off, on) if (n + r) % 2 == 0 else (on, off)
            for e in pair:
                t0 = time.perf_counter()
                resp = e.search(text, base)
                (t_on if e is on else t_off).append((time.perf_counter() - t0) * 1000)
                if e is on:
                    step.append(resp.timings_ms.get("proximity", 0.0))
        by_run.append({"off_p50_ms": round(float(np.median(t_off[n0:])), 2), "on_p50_ms": round(float(np.median(
            t_on[n0:])), 2), "step_p50_ms": round(float(np.median([x for x in step[n0:] if x > 0] or [0.0])), 2)})
    peaks = []
    tracemalloc.start()
    for _, text in queries[:50]:
        resp = off.search(text, SearchOptions(k=ON.proximity_top, snippets=False, use_cache=False))
        ids = np.asarray([int(h.id) for h in resp.hits], dtype=np.int64)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        term_proximity.scores(engine.ix, off.parse(text).terms, ids, ON.proximity_window)
        peaks.append(tracemalloc.get_traced_memory()[1] - before)
    tracemalloc.stop()
    memo_entries, memo_bytes = term_proximity.memo_size(off.parse("x").analyzer)
    ran = [x for x in step if x > 0]
    m_off, m_on = float(np.median(t_off)), float(np.median(t_on))
    return {"queries": len(queries), "runs": runs, "with_step": len(ran) // runs,
            "off_p50_ms": round(m_off, 2), "off_p90_ms": round(float(np.percentile(t_off, 90)), 2),
            "on_p50_ms": round(m_on, 2), "on_p90_ms": round(float(np.percentile(t_on, 90)), 2),
            "ratio_p50": round(m_on / m_off, 3), "ratio_total": round(sum(t_on) / sum(t_off), 3),
            "step_p50_ms": round(float(np.median(ran)), 2) if ran else 0.0,
            "step_p90_ms": round(float(np.percentile(ran, 90)), 2) if ran else 0.0,
            "step_max_ms": round(float(np.max(ran)), 2) if ran else 0.0,
            "step_peak_kib_median": round(float(np.median(peaks)) / 1024, 1),
            "step_peak_kib_max": round(float(np.max(peaks)) / 1024, 1),
            "piece_memo_entries": memo_entries, "piece_memo_mib": round(memo_bytes / 2 ** 20, 2), "by_run": by_run}


# ---------------------------------------------------------------------------- report
def report(results: dict, lat: dict, out_dir: Path, meta: dict) -> str:
    def m(v):
        return sum(v) / len(v)

    bm = {s: m(results["bm25"][s]) for s in SETS}
    cur = {s: m(results["current"][s]) for s in SETS}
    lines = ["# Term proximity chosen leave-one-set-out (nDCG@10)", "",
             f"`python bench/studies/proximity.py`, {meta['date']}, {meta['machine']}; docs/fusion-variants.md "
             "(*Term proximity*) says what each variant is. `bm l w`: BM25TP, l x proximity added to BM25 before "
             "it is standardised; `sd w win`: w x proximity / its spread over the top N added to the fused score; "
             f"the fused top N = {meta.get('top', TOP)} re-read; "
             "window w / win in analysed terms. Every variant on all seven sets; then, per held-out set, the best "
             "candidate on the other six (the shipped profiles, `current`, among them).", "",
             "| variant | mean | - BM25 | - current | worst set - BM25 | " + " | ".join(SETS) + " |",
             "|---" * (5 + len(SETS)) + "|"]
    for c, res in results.items():
        per = {s: m(res[s]) for s in SETS}
        mean = sum(per.values()) / len(SETS)
        lines.append(f"| {c} | {mean:.4f} | {mean - sum(bm.values()) / len(SETS):+.4f} | "
                     f"{mean - sum(cur.values()) / len(SETS):+.4f} | {min(per[s] - bm[s] for s in SETS):+.4f} | "
                     + " | ".join(f"{per[s]:.4f}" for s in SETS) + " |")
    best = max((c for c in results if c not in ("bm25", "dense", "current", SHIPPED)),
               key=lambda c: sum(m(results[c][s]) for s in SETS))
    lines += ["", f"## The best variant on all seven sets (`{best}`) against the current default, per set", "",
              "| set | queries | BM25 | current | " + best + " | diff | W/L vs current (sign test p) |",
              "|---|---|---|---|---|---|---|"]
    for s in SETS:
        w, lo, p = loso.sign_test(results[best][s], results["current"][s])
        lines.append(f"| {s} | {len(results[best][s])} | {bm[s]:.4f} | {cur[s]:.4f} | {m(results[best][s]):.4f} | "
                     f"{m(results[best][s]) - cur[s]:+.4f} | {w}/{lo} ({p:.3g}) |")
    shipped = results.get(SHIPPED)
    if shipped is not None:
        meta["engine_step_equal"] = all(shipped[s] == results[SHIPPED_AS][s] for s in SETS)
    if "engine_step_equal" in meta:
        lines += ["", f"The pipeline's own step (`{SHIPPED}`, weight {ON.proximity_weight}, window "
                  f"{ON.proximity_window}, top {ON.proximity_top}) against its study variant `{SHIPPED_AS}`: "
                  + ("the same nDCG@10 on every query." if meta["engine_step_equal"] else "**differs**.")]
    results = {k: v for k, v in results.items() if k != SHIPPED}      # (not a candidate of its own)
    summary = {}
    for crit in ("mean", "worst-set gain over BM25"):
        ch = loso.choose(results, SETS, crit)
        md, summ = loso.table(results, SETS, ch, {"date": meta["date"], "note": ""})
        summary[crit] = {"chosen": ch, **summ}
        lines += ["", f"## LOSO selection by {crit}", "", md.split("\n\n", 2)[2].strip()]
    for lt in ([lat] if lat else []) + ([lat["other"]] if lat.get("other") else []):
        lines += ["", f"## Added latency and memory: {lt['set']}", "",
                  f"{lt['queries']} queries x {lt['runs']} run(s), one process, the two alternating query by query: "
                  f"the default search (top 10, no snippets, no result cache) without the proximity step and with it "
                  f"(top {ON.proximity_top}, window {ON.proximity_window}, weight {ON.proximity_weight}: "
                  f"the setting chosen), each on a fresh engine; {lt['with_step']} queries ran the step.", "",
                  "| | p50 ms | p90 ms |", "|---|---|---|",
                  f"| search without | {lt['off_p50_ms']} | {lt['off_p90_ms']} |",
                  f"| search with | {lt['on_p50_ms']} | {lt['on_p90_ms']} |",
                  f"| the step alone | {lt['step_p50_ms']} | {lt['step_p90_ms']} (max {lt['step_max_ms']}) |", "",
                  f"Ratio with / without: {lt['ratio_p50']} at the median, {lt['ratio_total']} of the total time. "
                  f"Python heap peak of the step (tracemalloc, 50 queries): median {lt['step_peak_kib_median']} KiB, "
                  f"max {lt['step_peak_kib_max']} KiB; its memo of analysed text pieces after the run: "
                  f"{lt['piece_memo_entries']} entries, {lt['piece_memo_mib']} MiB (at most "
                  f"{term_proximity.PIECE_MEMO} entries, then it starts again)."]
        if lt.get("by_run"):
            lines += ["", "By run (the first reads most texts for the first time: their pieces are analysed then; "
                      "later runs find them in the memo): " + "; ".join(
                          f"run {i + 1}: without {b['off_p50_ms']} ms, with {b['on_p50_ms']} ms, step {b['step_p50_ms']} ms"
                          for i, b in enumerate(lt["by_run"])) + " (p50)."]
    out_dir.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    (out_dir / "quality_loso_proximity.md").write_text(text)
    (out_dir / "quality_loso_proximity.json").write_text(json.dumps(
        {"meta": meta, "summary": summary, "latency": lat, "per_query": results}))
    return text


def main(argv=None) -> None:
    global TOP
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--report-from", nargs="+", default=None, help="saved quality_loso_proximity.json files to tabulate")
    ap.add_argument("--latency-only", default=None, help="a saved JSON: its results, the latency measured again")
    ap.add_argument("--family", choices=("main", "fs"), default="main",
                    help="main: the grid (bm, sd); fs: BM25TP on the first stage's top N (poolable)")
    ap.add_argument("--latency-set", default="scifact")
    ap.add_argument("--latency-other", default="cosqa")
    ap.add_argument("--latency-runs", type=int, default=2)
    ap.add_argument("--top", type=int, default=100, help="candidates re-read (the fused top N)")
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args(argv)
    TOP = args.top
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "numpy": np.__version__, "top": TOP}
    if args.latency_only:           # the grid's saved results, the latency measured again
        d = json.loads(Path(args.latency_only).read_text())
        data, engines = load_sets(args.index_dir)
        lat = dict(latency(engines[args.latency_set], data[args.latency_set][0], args.latency_runs),
                   set=args.latency_set)
        if args.latency_other:
            lat["other"] = dict(latency(engines[args.latency_other], data[args.latency_other][0], args.latency_runs),
                                set=args.latency_other)
        print(report(d["per_query"], lat, Path(args.out_dir), d.get("meta", meta)))
        return
    if args.report_from:
        results, lat, meta0 = {}, {}, None
        for f in args.report_from:
            d = json.loads(Path(f).read_text())
            results.update({k: v for k, v in d["per_query"].items() if k not in results})
            lat = lat or d.get("latency", {})
            meta0 = meta0 or d.get("meta")
        print(report(results, lat, Path(args.out_dir), meta0 or meta))
        return
    data, engines = load_sets(args.index_dir)
    t0 = time.time()
    todo = {"bm25": {"opts": {"channels": ["bm25"], "intent": "default"}},
            "dense": {"opts": {"channels": ["dense"], "intent": "default"}}, **variants(args.family)}
    if args.top == ON.proximity_top and args.family == "main":         # the pipeline's own step (Tuning): the same as its variant
        todo[SHIPPED] = {"tuning": ON}
    results = run(data, engines, todo)
    meta["seconds"] = round(time.time() - t0)
    lat = {}
    if args.latency_runs > 0:
        lat = dict(latency(engines[args.latency_set], data[args.latency_set][0], args.latency_runs),
                   set=args.latency_set)
        if args.latency_other:
            lat["other"] = dict(latency(engines[args.latency_other], data[args.latency_other][0], args.latency_runs),
                                set=args.latency_other)
    print(report(results, lat, Path(args.out_dir), meta))


if __name__ == "__main__":
    main()
