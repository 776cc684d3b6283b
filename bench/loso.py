"""Fusion settings chosen leave-one-set-out (``python bench/quality.py --loso``).

Every candidate setting (the embedding and graph weights of the intent profiles, and the score
normalisation) is run on every shared set once, keeping each query's nDCG@10. Then, for each
set, the setting with the best mean nDCG@10 over the *other* sets is chosen and scored on the
held-out set: no weight or normalisation is picked with the set it is scored on. The table
gives, per set, BM25 alone, the current default, the LOSO choice, dense alone, and per-set sign
tests (queries that won / lost, two-sided exact binomial p) of the LOSO choice against BM25 and
against the current default. The setting chosen on all seven sets is what ships (it is printed
with the profiles it gives).

Candidate profiles keep each intent's leaning (exact names lean on text, exploratory/semantic
on embedding and graph) and move every prose intent's embedding and graph weights by the same
amounts: ``alpha_i + da``, ``gamma_i + dg`` (text and intent-edge weights kept), ``code_task``
and ``relation`` untouched (they are chosen on the code-task sets).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path

from kgsearch import evaluate as ev
from kgsearch.query import intent

PROSE_INTENTS = [k for k in intent.INTENTS if k not in ("code_task", "relation")]
DA = (-0.10, 0.0, 0.10, 0.20, 0.30)           # embedding weight moves
DG = (-0.10, 0.0, 0.10)                       # graph weight moves
NORMS = ("z", "max")


def profiles_for(base: dict, da: float, dg: float) -> dict:
    out = dict(base)
    for k in PROSE_INTENTS:
        a, b, g, d = base[k]
        out[k] = (round(max(0.0, a + da), 4), b, round(max(0.0, g + dg), 4), d)
    return out


def sign_test(a: list[float], b: list[float], eps: float = 1e-9) -> tuple[int, int, float]:
    """Wins of ``a`` over ``b``, losses, and the two-sided exact binomial p (ties dropped)."""
    w = sum(1 for x, y in zip(a, b) if x > y + eps)
    lo = sum(1 for x, y in zip(a, b) if y > x + eps)
    n = w + lo
    if n == 0:
        return w, lo, 1.0
    k = min(w, lo)
    p = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n * 2
    return w, lo, min(1.0, p)


def run(data: dict, engine_for, sopts_base) -> dict:
    """``data``: set -> (db, queries, qrels); ``engine_for(set)`` -> a warm Engine.
    Returns per-config, per-set per-query nDCG@10 lists."""
    base = {k: s.weights for k, s in intent.INTENTS.items()}
    specs = dict(intent.INTENTS)
    configs = {"bm25": {"channels": ["bm25"], "intent": "default"},
               "dense": {"channels": ["dense"], "intent": "default"},
               "current": {}}
    for norm in NORMS:
        for da in DA:
            for dg in DG:
                configs[f"{norm} da={da:+.2f} dg={dg:+.2f}"] = {"norm": norm, "_profiles": profiles_for(base, da, dg)}
    out: dict = {}
    for name, cfg in configs.items():
        t0 = time.perf_counter()
        cfg = dict(cfg)
        profs = cfg.pop("_profiles", None)
        if profs:
            intent.INTENTS.update({k: replace(specs[k], weights=tuple(w)) for k, w in profs.items()})
        try:
            res = {}
            for s, (db, queries, qrels) in data.items():
                sopts = replace(sopts_base, **cfg)
                r = ev.run_queries(engine_for(s), queries, sopts, qrels)
                res[s] = [q["ndcg@10"] for q in r["per_query"]]
        finally:
            intent.INTENTS.update(specs)
        out[name] = res
        mean = sum(sum(v) / len(v) for v in res.values()) / len(res)
        print(f"{name:28} mean {mean:.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return out


def _mean(results, c, on):
    return sum(sum(results[c][s]) / len(results[c][s]) for s in on) / len(on)


def _worst_gain(results, c, on):
    return min(sum(results[c][s]) / len(results[c][s]) - sum(results["bm25"][s]) / len(results["bm25"][s])
               for s in on)


CRITERIA = {"mean": _mean, "worst-set gain over BM25": _worst_gain}


def choose(results: dict, sets: list[str], criterion: str = "mean") -> dict:
    """Per held-out set, the candidate best by ``criterion`` on the other sets (ties: the current
    default). What ships: the candidate best on all sets by the mean, but only if the held-out
    (LOSO) mean of the procedure beats the current default's mean: a change must show a gain on
    sets it was not chosen on, else the current profiles stay."""
    cands = [c for c in results if c not in ("bm25", "dense")]
    score = CRITERIA[criterion]
    per_set = {}
    for held in sets:
        train = [s for s in sets if s != held]
        per_set[held] = max(cands, key=lambda c: (round(score(results, c, train), 6), c == "current"))
    final = max(cands, key=lambda c: (round(_mean(results, c, sets), 6), c == "current"))
    loso_mean = sum(sum(results[per_set[s]][s]) / len(results[per_set[s]][s]) for s in sets) / len(sets)
    ships = final if loso_mean > _mean(results, "current", sets) else "current"
    return {"held_out_choice": per_set, "all_sets_choice": final, "loso_mean": loso_mean, "ships": ships,
            "criterion": criterion}


def table(results: dict, sets: list[str], chosen: dict, meta: dict) -> tuple[str, dict]:
    def m(v):
        return sum(v) / len(v)

    rows, md = {}, []
    md += [f"# Leave-one-set-out fusion settings (nDCG@10), {meta['date']}", "",
           f"{meta['note']}", "",
           "| set | queries | BM25 | current default | LOSO choice (chosen on the other sets) | "
           "vs BM25 W/L (p) | vs current W/L (p) | dense only |",
           "|---|---|---|---|---|---|---|---|"]
    tot = {"bm25": 0.0, "current": 0.0, "loso": 0.0, "dense": 0.0}
    worst = None
    for s in sets:
        c = chosen["held_out_choice"][s]
        lo = results[c][s]
        b, cur, de = results["bm25"][s], results["current"][s], results["dense"][s]
        wb = sign_test(lo, b)
        wc = sign_test(lo, cur)
        rows[s] = {"queries": len(lo), "bm25": m(b), "current": m(cur), "loso": m(lo), "loso_config": c,
                   "dense": m(de), "vs_bm25": wb, "vs_current": wc}
        for k, v in (("bm25", b), ("current", cur), ("loso", lo), ("dense", de)):
            tot[k] += m(v)
        gain = m(lo) - m(b)
        worst = gain if worst is None else min(worst, gain)
        md.append(f"| {s} | {len(lo)} | {m(b):.4f} | {m(cur):.4f} | {m(lo):.4f} ({c}) | "
                  f"{wb[0]}/{wb[1]} ({wb[2]:.3g}) | {wc[0]}/{wc[1]} ({wc[2]:.3g}) | {m(de):.4f} |")
    n = len(sets)
    md.append(f"| **mean** | | **{tot['bm25'] / n:.4f}** | **{tot['current'] / n:.4f}** | **{tot['loso'] / n:.4f}** | "
              f"| | **{tot['dense'] / n:.4f}** |")
    md += ["", f"LOSO mean - BM25 mean: {(tot['loso'] - tot['bm25']) / n:+.4f}; worst set: {worst:+.4f}; "
           f"current default - BM25 mean: {(tot['current'] - tot['bm25']) / n:+.4f}. Best on all seven sets: "
           f"`{chosen['all_sets_choice']}`; what ships: `{chosen['ships']}` (a change ships only when the LOSO mean "
           f"beats the current default's mean)."]
    summary = {"mean": {k: v / n for k, v in tot.items()}, "worst_gain_vs_bm25": worst,
               "all_sets_choice": chosen["all_sets_choice"], "ships": chosen["ships"]}
    return "\n".join(md) + "\n", {"rows": rows, "summary": summary}


def variants_note(out_dir: Path) -> str:
    """A section summing up bench/studies/fusion_variants.py's results when they are there."""
    f = out_dir / "quality_loso_variants.json"
    if not f.exists():
        return ""
    summ = json.loads(f.read_text()).get("summary", {})
    rows = [f"- selection by {crit}: LOSO mean {v['mean']['loso']:.4f} ({v['mean']['loso'] - v['mean']['bm25']:+.4f} "
            f"over BM25), worst set {v['worst_gain_vs_bm25']:+.4f}, ships `{v['ships']}`"
            for crit, v in ((c, x["summary"]) for c, x in summ.items())]
    return ("\n## Other fusion variants\n\nRRF, RM3 (BM25 or fused feedback), z over the candidates or over the matching nodes, per-query "
            "weights from each signal's peak or from the query words the model knows, a CombMNZ-like agreement bonus, Rocchio in embedding space and the "
            "semantic/default profiles moved separately (BM25 k1/b: its own section there), selected among with the current profiles in the same way "
            "(per-set tables and sign tests: quality_loso_variants.md, `python bench/studies/fusion_variants.py`; "
            "docs/fusion-variants.md):\n\n" + "\n".join(rows) + "\n")


def report(results: dict, sets: list[str], meta: dict, out_dir: Path) -> None:
    """Tables and JSON from per-query results (``main`` runs them; ``--loso-from`` reuses a JSON)."""
    chosen = choose(results, sets)
    robust = choose(results, sets, "worst-set gain over BM25")
    md, summary = table(results, sets, chosen, meta)
    md2, summary2 = table(results, sets, robust, meta)
    md += ("\n## The same with another selection rule\n\nEach held-out set's setting chosen by the best *worst-set* "
           "gain over BM25 on the other sets (a rule that avoids settings that hurt one set):\n\n"
           + md2.split("\n\n", 2)[2])
    summary["robust_rule"] = summary2
    md += variants_note(out_dir)
    if chosen["ships"] != "current":
        final = chosen["ships"]
        norm, da, dg = final.split()[0], float(final.split("da=")[1].split()[0]), float(final.split("dg=")[1])
        md += "\nProfiles of the shipped setting (norm " + norm + "):\n\n"
        for k, w in profiles_for({k: sp.weights for k, sp in intent.INTENTS.items()}, da, dg).items():
            md += f"- `{k}`: {w}\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "quality_loso.md").write_text(md)
    (out_dir / "quality_loso.json").write_text(json.dumps({"meta": meta, **summary, "chosen": chosen, "robust": robust,
                                                            "per_query": results}, indent=None))
    print(md)


def main(args, sets: list[str], shared: Path, out_dir: Path) -> None:
    import platform

    import numpy as np

    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    data = {}
    for s in sets:
        folder = shared / s
        opts = ev.EvalOptions(index_dir=args.index_dir)
        qrels = {q: r for q, r in ev.read_qrels(ev.find_qrels(folder, None)).items() if any(v > 0 for v in r.values())}
        queries = [(str(q["_id"]), str(q.get("text", ""))) for q in ev._read_jsonl(folder / "queries.jsonl")
                   if str(q.get("_id")) in qrels]
        db, _ = ev.build_eval_index(folder, opts)
        data[s] = (db, queries, qrels)
    engines: dict = {}

    def engine_for(s):
        if s not in engines:
            engines[s] = Engine(Index.open(data[s][0], readonly=True), memo=True)
        return engines[s]

    t0 = time.time()
    results = run(data, engine_for, SearchOptions(k=100, snippets=False, use_cache=False))
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": platform.machine(), "numpy": np.__version__,
            "seconds": round(time.time() - t0), "grid": {"da": DA, "dg": DG, "norms": NORMS},
            "note": ("Each row's LOSO column uses the setting with the best mean nDCG@10 over the other six sets "
                     "(grid: every prose intent's embedding weight moved by da, graph weight by dg, norm z or max; "
                     f"{len(DA) * len(DG) * len(NORMS)} settings plus the current default); sign tests count queries "
                     "won/lost against BM25 alone and against the current default (two-sided exact binomial p, ties "
                     "dropped). `python bench/quality.py --loso`.")}
    report(results, sets, meta, out_dir)
