"""Typo correction on the shared BEIR sets: each query with one typing error, searched with and
without correction, and the clean queries the same way (what correction costs when nothing
is misspelt). Writes bench/results/typos.json and typos.md.

    python bench/typos.py [--sets scifact,nfcorpus,...] [--index-dir DIR] [--seed 0] [--out-dir DIR]

The typo: one word of five or more letters per query (chosen at random, seeded), one edit at
random among a deleted letter, an inserted letter, a replaced letter and two neighbours
swapped (the edits a spelling corrector of distance 1 undoes; most typing errors are one of
them). Queries with no such word stay as they are and are counted. Scores: nDCG@10 with the
default pipeline (the code of `kgsearch eval`), paired sign tests per set (queries that
won / lost, two-sided exact binomial p).
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED, machine, md_table, write_results  # noqa: E402
from loso import sign_test  # noqa: E402

from kgsearch.evaluate import EvalOptions, _read_jsonl, build_eval_index, find_qrels, query_metrics, read_qrels  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
_LONG = re.compile(r"\b[A-Za-z]{5,}\b")


def typo(text: str, rng: random.Random) -> str:
    """``text`` with one edit in one of its words of 5+ letters (unchanged when it has none)."""
    words = list(_LONG.finditer(text))
    if not words:
        return text
    m = rng.choice(words)
    w = m.group(0)
    i = rng.randrange(len(w))
    kind = rng.choice(("delete", "insert", "replace", "swap"))
    if kind == "delete":
        new = w[:i] + w[i + 1:]
    elif kind == "insert":
        new = w[:i] + rng.choice(LETTERS) + w[i:]
    elif kind == "replace":
        new = w[:i] + rng.choice(LETTERS.replace(w[i].lower(), "")) + w[i + 1:]
    else:
        i = min(i, len(w) - 2)
        new = w[:i] + w[i + 1] + w[i] + w[i + 2:] if w[i] != w[i + 1] else w[:i] + w[i + 1:]
    return text[:m.start()] + new + text[m.end():]


def run(engine, queries, qrels, correct: bool) -> tuple[list[float], int, float]:
    from kgsearch.query import SearchOptions

    opts = SearchOptions(k=100, snippets=False, feedback=False, correct=correct)
    scores, fixed, t0 = [], 0, time.perf_counter()
    for qid, text in queries:
        r = engine.search(text, opts)
        fixed += bool(r.corrections)
        scores.append(query_metrics([h.key[4:] if h.key.startswith("doc:") else h.key for h in r.hits],
                                    qrels[qid])["ndcg@10"])
    return scores, fixed, (time.perf_counter() - t0) * 1000 / max(1, len(queries))


def main(argv=None) -> None:
    from kgsearch.query import Engine
    from kgsearch.store.db import Index

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args(argv)
    rows, t_start = {}, time.time()
    for s in args.sets.split(","):
        folder = SHARED / s
        qrels = {q: r for q, r in read_qrels(find_qrels(folder, None)).items() if any(v > 0 for v in r.values())}
        queries = [(str(q["_id"]), str(q.get("text", ""))) for q in _read_jsonl(folder / "queries.jsonl")
                   if str(q.get("_id")) in qrels]
        rng = random.Random(f"{args.seed}:{s}")
        typed = [(qid, typo(text, rng)) for qid, text in queries]
        db, _ = build_eval_index(folder, EvalOptions(index_dir=args.index_dir))
        with Index.open(db, readonly=True) as ix:
            eng = Engine(ix)
            res = {name: run(eng, qs, qrels, correct) for name, qs, correct in (
                ("clean_off", queries, False), ("clean_on", queries, True),
                ("typo_off", typed, False), ("typo_on", typed, True))}
        mean = {k: sum(v[0]) / len(v[0]) for k, v in res.items()}
        rows[s] = {"queries": len(queries), "with_typo": sum(a != b for (_, a), (_, b) in zip(queries, typed)),
                   "ndcg@10": {k: round(v, 4) for k, v in mean.items()},
                   "corrected": {k: v[1] for k, v in res.items()},
                   "ms_per_query": {k: round(v[2], 2) for k, v in res.items()},
                   "sign_typo": sign_test(res["typo_on"][0], res["typo_off"][0]),
                   "sign_clean": sign_test(res["clean_on"][0], res["clean_off"][0])}
        print(f"{s}: typo off {mean['typo_off']:.4f} on {mean['typo_on']:.4f}; "
              f"clean off {mean['clean_off']:.4f} on {mean['clean_on']:.4f}", flush=True)
    n = len(rows)
    avg = {k: round(sum(r["ndcg@10"][k] for r in rows.values()) / n, 4)
           for k in ("clean_off", "clean_on", "typo_off", "typo_on")}
    m = machine()
    meta = {"date": time.strftime("%Y-%m-%d"), "seed": args.seed, "runs": 1,
            "note": "deterministic: one run", "seconds": round(time.time() - t_start, 1)}
    table = md_table(
        ["set", "queries", "with a typo", "typo: as typed", "typo: corrected", "W/L/T (p)",
         "clean: as typed", "clean: corrected", "clean queries corrected", "W/L/T (p)"],
        [[s, r["queries"], r["with_typo"], f"{r['ndcg@10']['typo_off']:.4f}", f"{r['ndcg@10']['typo_on']:.4f}",
          _wlt(r["sign_typo"], r["queries"]), f"{r['ndcg@10']['clean_off']:.4f}", f"{r['ndcg@10']['clean_on']:.4f}",
          r["corrected"]["clean_on"], _wlt(r["sign_clean"], r["queries"])] for s, r in rows.items()]
        + [["**mean**", "", "", f"**{avg['typo_off']:.4f}**", f"**{avg['typo_on']:.4f}**", "",
            f"**{avg['clean_off']:.4f}**", f"**{avg['clean_on']:.4f}**", "", ""]])
    md = [f"# Typo correction (nDCG@10), {meta['date']}", "",
          f"Machine {m['arch']} ({m['cpu']}), Python {m['python']}, numpy {m['numpy']}; deterministic, one run, "
          f"seed {args.seed}. `python bench/typos.py` reproduces it. Each query has one typing error in one "
          "word of 5+ letters (a letter deleted, inserted, replaced or two swapped); 'as typed' is "
          "`--no-correct`, 'corrected' the default.", "", *table]
    write_results("typos", {"meta": meta, "sets": rows, "mean": avg}, md, args.out_dir)
    print("\n".join(md))


def _wlt(st, n: int) -> str:
    w, lo, p = st
    return f"{w}/{lo}/{n - w - lo} ({p:.3g})"


if __name__ == "__main__":
    main()
