"""Measure pipeline configurations on every shared BEIR set, side by side (nDCG@10).

    python bench/studies/tune_pipeline.py --config NAME=JSON ... [--sets scifact,nfcorpus,...] [--out FILE]

Each config is a JSON object: SearchOptions fields (``channels``, ``weights``, ``keyword_boost``,
``norm``, ``fusion``, ``intent`` ...) plus ``"tuning"``: fields of :class:`kgsearch.query.Tuning`
for that run (e.g. ``{"pr_blend": 0.3}``), ``"patch"``: {"module.CONSTANT": value} applied to
other kgsearch modules for that run (e.g. ``"text.neighbors.K": 5``), and ``"profiles"``: a
{intent: [a, b, g, d]} override of the intents' weights (``kgsearch.query.intent.with_weights``; ``"*"`` = every intent).
The evaluation indexes are built once (``kgsearch eval`` layout) and reused.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import SHARED  # noqa: E402

from kgsearch import evaluate as ev  # noqa: E402
from kgsearch.query import intent  # noqa: E402
from kgsearch.query import TUNING, Engine, SearchOptions  # noqa: E402
from kgsearch.store.db import Index  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]



def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

def load_set(name: str, index_dir: str | None):
    folder = SHARED / name
    opts = ev.EvalOptions(index_dir=index_dir)
    qrels = {q: r for q, r in ev.read_qrels(ev.find_qrels(folder, None)).items() if any(v > 0 for v in r.values())}
    queries = [(str(q["_id"]), str(q.get("text", ""))) for q in _jsonl(folder / "queries.jsonl")
               if str(q.get("_id")) in qrels]
    db, _ = ev.build_eval_index(folder, opts)
    return db, queries, qrels


ENGINES: dict = {}


def run_config(cfg: dict, data: dict) -> dict:
    cfg = dict(cfg)
    tuning = replace(TUNING, **cfg.pop("tuning", {}))
    patches = cfg.pop("patch", {})
    profiles = cfg.pop("profiles", None)
    saved = []
    for dotted, value in patches.items():
        mod_name, attr = dotted.rsplit(".", 1)
        mod = importlib.import_module("kgsearch." + mod_name)
        saved.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, value)
    if any(k.startswith("text.") for k in patches):
        ENGINES.clear()          # channel answers depend on these constants
    old_specs = intent.with_weights(profiles or {})
    try:
        out = {}
        for name, (db, queries, qrels) in data.items():
            if name not in ENGINES:
                ENGINES[name] = Engine(Index.open(db, readonly=True), memo=True)
            eng = ENGINES[name]
            eng.tuning = tuning
            if True:
                sopts = replace(SearchOptions(k=100, snippets=False, use_cache=False), **cfg)
                r = ev.run_queries(eng, queries, sopts, qrels)
                out[name] = {"ndcg@10": r["metrics"]["ndcg@10"], "recall@100": r["metrics"]["recall@100"],
                             "p50_ms": r["query_ms"]["p50"], "channels": r["channels_run"]}
        return out
    finally:
        for mod, attr, value in saved:
            setattr(mod, attr, value)
        intent.INTENTS.update(old_specs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", action="append", default=[], metavar="NAME=JSON")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    sets = args.sets.split(",")
    data = {s: load_set(s, args.index_dir) for s in sets}
    configs = [(c.split("=", 1)[0], json.loads(c.split("=", 1)[1])) for c in args.config] or \
        [("bm25", {"channels": ["bm25"], "intent": "default"})]
    rows = []
    print("| config | " + " | ".join(sets) + " | mean |")
    print("|---" * (len(sets) + 2) + "|")
    for name, cfg in configs:
        t = time.perf_counter()
        res = run_config(cfg, data)
        vals = [res[s]["ndcg@10"] for s in sets]
        mean = sum(vals) / len(vals)
        rows.append({"config": name, "spec": cfg, "results": res, "mean": round(mean, 4),
                     "seconds": round(time.perf_counter() - t, 1)})
        print(f"| {name} | " + " | ".join(f"{v:.4f}" for v in vals) + f" | {mean:.4f} |", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
