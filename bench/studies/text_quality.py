"""BM25 quality on the shared BEIR-layout sets (nDCG@10, recall@100, MRR@10, P@10).

Default run: every set, each stemmer, through the real channel: the corpus is inserted as
nodes (kind 'doc', key 'doc:<_id>', name=title, text=text) into a fresh Index, the text step
builds the index (``kgsearch.text.text_step.update`` with ``ChangeSet(full=True)``) and queries go
through ``kgsearch.text.bm25.search``. ``--grid`` sweeps k1, b, name weight and stemmer with the
in-memory scorer (same impacts, checked against the channel) to choose the defaults by the
mean over all sets. Writes bench/results/text_quality.json and .md.

    python bench/studies/text_quality.py [--sets scifact,nfcorpus] [--grid] [--bench DIR]
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED  # noqa: E402

from kgsearch.text.bm25 import BM25Params, MemoryBM25  # noqa: E402
from kgsearch.text.tokenize import Analyzer  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]
DEFAULT_BENCH = SHARED


def load_set(d: Path):
    corpus = []
    with open(d / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            corpus.append((str(o["_id"]), o.get("title") or "", o.get("text") or ""))
    queries = {}
    with open(d / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            queries[str(o["_id"])] = o.get("text") or ""
    qrels: dict[str, dict[str, int]] = {}
    with open(d / "qrels.tsv", encoding="utf-8") as fh:
        next(fh)                                      # header line
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(float(parts[2]))
    qrels = {q: r for q, r in qrels.items() if q in queries and any(v > 0 for v in r.values())}
    return corpus, queries, qrels


def metrics(ranked: list[str], rels: dict[str, int]) -> dict[str, float]:
    gains = [(2 ** rels.get(d, 0) - 1) for d in ranked[:10]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((2 ** v - 1 for v in rels.values() if v > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    relevant = {d for d, v in rels.items() if v > 0}
    hit100 = len(relevant.intersection(ranked[:100]))
    mrr = 0.0
    for i, d in enumerate(ranked[:10]):
        if d in relevant:
            mrr = 1.0 / (i + 1)
            break
    return {"ndcg@10": dcg / idcg if idcg else 0.0, "recall@100": hit100 / len(relevant),
            "mrr@10": mrr, "p@10": sum(1 for d in ranked[:10] if d in relevant) / 10.0}


def mean_metrics(rows: list[dict]) -> dict[str, float]:
    return {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]} if rows else {}


# ---------------------------------------------------------------------------- channel path
def run_channel(corpus, queries, qrels, settings: dict) -> tuple[dict, dict]:
    from kgsearch.store.db import Index
    from kgsearch.text import bm25, text_step as tindex
    from kgsearch.types import ChangeSet

    with tempfile.TemporaryDirectory() as tmp:
        ix = Index.open(Path(tmp) / "q.db")
        with ix.transaction():
            ix.conn.executemany(
                "INSERT INTO nodes(key, kind, name, text) VALUES (?, 'doc', ?, ?)",
                ((f"doc:{i}", t, x) for i, t, x in corpus))
        t0 = time.perf_counter()
        info = tindex.update(ix, ChangeSet(generation=1, full=True), settings)
        build = time.perf_counter() - t0
        key_of = dict(ix.conn.execute("SELECT id, substr(key, 5) FROM nodes"))
        rows = []
        t0 = time.perf_counter()
        for qid, rels in qrels.items():
            ids, _ = bm25.search(ix, queries[qid], k=100)
            rows.append(metrics([key_of[i] for i in ids.tolist()], rels))
        qtime = time.perf_counter() - t0
        ix.close()
    return mean_metrics(rows), {"build_s": round(build, 3), "query_s": round(qtime, 3),
                                "terms": info["bm25"].get("terms")}


# ---------------------------------------------------------------------------- in-memory grid
def tokenize_set(corpus, queries, qrels, stemmer: str):
    an = Analyzer(stemmer)
    docs = [(an(t), an(x)) for _, t, x in corpus]
    qtok = {q: an(queries[q]) for q in qrels}
    return docs, qtok


def run_memory(corpus, docs, qtok, qrels, params: BM25Params) -> dict:
    m = MemoryBM25(docs, params, fields=True)
    ids = [c[0] for c in corpus]
    rows = []
    for qid, rels in qrels.items():
        top, _ = m.search(qtok[qid], 100)
        rows.append(metrics([ids[i] for i in top.tolist()], rels))
    return mean_metrics(rows)


def machine() -> dict:
    return {"machine": platform.machine(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__,
            "sqlite": sqlite3.sqlite_version}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--grid", action="store_true", help="sweep parameters in memory (slow)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--md-only", action="store_true", help="rewrite the .md from the saved .json")
    args = ap.parse_args(argv)
    if args.md_only:
        saved = json.loads((args.out / "text_quality.json").read_text())
        write_md(saved, [s for s in SETS if s in saved["sets"]], args.out / "text_quality.md")
        return 0
    sets = [s for s in args.sets.split(",") if (args.bench / s / "corpus.jsonl").exists()]
    if not sets:
        print(f"no benchmark sets under {args.bench}", file=sys.stderr)
        return 1
    data = {s: load_set(args.bench / s) for s in sets}
    result: dict = {"machine": machine(), "sets": {s: {"docs": len(data[s][0]), "queries": len(data[s][2])}
                                                   for s in sets}, "defaults": {}, "channel": {}}
    d = BM25Params()
    result["defaults"] = {"k1": d.k1, "b": d.b, "name_weight": d.name_weight, "idf": d.idf,
                          "stemmer": d.stemmer}

    if args.grid:
        grid = []
        for stemmer in ("porter2", "light", "none"):
            toks = {s: tokenize_set(*data[s], stemmer) for s in sets}
            for k1, b, nw in itertools.product((0.9, 1.2, 1.5), (0.5, 0.6, 0.75), (1.0, 2.0, 3.0)):
                p = BM25Params(k1=k1, b=b, name_weight=nw, stemmer=stemmer)
                per = {s: run_memory(data[s][0], toks[s][0], toks[s][1], data[s][2], p)["ndcg@10"]
                       for s in sets}
                row = {"stemmer": stemmer, "k1": k1, "b": b, "name_weight": nw,
                       "mean": round(float(np.mean(list(per.values()))), 4), **per}
                grid.append(row)
                print(json.dumps(row), flush=True)
        grid.sort(key=lambda r: -r["mean"])
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "text_quality_grid.json").write_text(json.dumps(grid, indent=1) + "\n")
        return 0

    for stemmer in ("porter2", "light"):
        settings = {"stemmer": stemmer}
        per = {}
        for s in sets:
            m, extra = run_channel(*data[s], settings)
            per[s] = {**m, **extra}
            print(f"{stemmer:8s} {s:10s} " + " ".join(f"{k}={v:.4f}" for k, v in m.items()), flush=True)
        per["mean"] = {k: round(float(np.mean([per[s][k] for s in sets])), 4)
                       for k in ("ndcg@10", "recall@100", "mrr@10", "p@10")}
        result["channel"][stemmer] = per
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "text_quality.json").write_text(json.dumps(result, indent=1) + "\n")
    write_md(result, sets, args.out / "text_quality.md")
    return 0


def write_md(result: dict, sets: list[str], path: Path) -> None:
    d = result["defaults"]
    lines = ["# BM25 quality (kgsearch.text.bm25 channel)", "",
             f"Defaults: k1={d['k1']}, b={d['b']}, name weight={d['name_weight']}, idf={d['idf']}, "
             f"stemmer={d['stemmer']}. Title = node name, text = node text. One run (deterministic).", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in result["machine"].items()), "",
             "| set | docs | queries | stemmer | nDCG@10 | recall@100 | MRR@10 | P@10 |",
             "|---|---|---|---|---|---|---|---|"]
    for s in sets + ["mean"]:
        for stemmer, per in result["channel"].items():
            m = per[s]
            info = result["sets"].get(s, {"docs": "", "queries": ""})
            lines.append(f"| {s} | {info['docs']} | {info['queries']} | {stemmer} | {m['ndcg@10']:.4f} | "
                         f"{m['recall@100']:.4f} | {m['mrr@10']:.4f} | {m['p@10']:.4f} |")
    grid_path = path.parent / "text_quality_grid.json"
    if grid_path.exists():
        grid = json.loads(grid_path.read_text())
        lines += ["", "## How the defaults were chosen (`--grid`, in-memory scorer, nDCG@10)", "",
                  f"{len(grid)} configurations: stemmer x k1 (0.9, 1.2, 1.5) x b (0.5, 0.6, 0.75) x name "
                  "weight (1, 2, 3), one fixed configuration for all sets, ranked by the mean over the sets. "
                  "Best per stemmer and the top 8 overall:", "",
                  "| stemmer | k1 | b | name w | mean | " + " | ".join(sets) + " |",
                  "|---|---|---|---|---|" + "---|" * len(sets)]
        best = {}
        for row in grid:
            best.setdefault(row["stemmer"], row)
        shown = list(best.values()) + [r for r in grid[:8] if r not in best.values()]
        for r in shown:
            lines.append(f"| {r['stemmer']} | {r['k1']} | {r['b']} | {r['name_weight']} | {r['mean']:.4f} | "
                         + " | ".join(f"{r.get(s, float('nan')):.4f}" for s in sets) + " |")
        lines += ["", "At the defaults Porter2 beats the light stemmer and no stemming on every one of the 7 sets "
                  "(mean over all 27 k1/b/name-weight points: Porter2 0.486, light 0.459, none 0.455). "
                  "The best grid point (b=0.6) is +0.001 in mean over the issue's k1=1.5, b=0.75, within "
                  "single-query noise and better on only 4 of 7 sets, so the defaults stay at the standard "
                  "k1=1.5, b=0.75; a name (title) weight of 3 beats 1 and 2 in the mean for every stemmer (Porter2, "
                  "averaged over k1/b: 0.482 / 0.486 / 0.489), so it is the default. (The grid ran before the tokenizer stopped emitting stop-word parts of "
                  "identifiers such as `self.x`; the channel table above is the current code.)"]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
