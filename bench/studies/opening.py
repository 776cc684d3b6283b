"""How much of a node's opening its vector should weigh in (docs/models.md, "A node's vector
weighs in its opening"): every document of the seven shared BEIR sets embedded as
``unit(whole) + w x unit(first K tokens)`` for a grid of K and w, scored outside the pipeline
(cosine, the sets' test queries; and a stand-in fusion: z(BM25) x .45 + z(dense) x .25), each
setting then chosen leave one set out; and the CPU time of embedding with and without the
opening. Writes bench/results/opening_grid.{json,md}.

    python bench/studies/opening.py [--ks 16,24,32] [--weights 0.5,1] [--out-dir bench/results]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import embed_bench as E  # noqa: E402

from kgsearch.embed.model import load_model, resolve_model  # noqa: E402
from kgsearch.text.okapi import MemoryBM25  # noqa: E402
from kgsearch.text.tokenize import get_analyzer  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]


def unit(v):
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0)


def z(s):
    return (s - s.mean(1, keepdims=True)) / np.maximum(s.std(1, keepdims=True), 1e-9)


def one_set(m, an, name: str, ks, weights) -> dict:
    d = E.SHARED / name
    docs = [json.loads(x) for x in open(d / "corpus.jsonl", encoding="utf-8")]
    qs = {json.loads(x)["_id"]: json.loads(x)["text"] for x in open(d / "queries.jsonl", encoding="utf-8")}
    qrels: dict[str, dict[str, int]] = {}
    with open(d / "qrels.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            q, c, r = line.rstrip("\n").split("\t")
            qrels.setdefault(q, {})[c] = int(r)
    full = [(x.get("title", "") + "\n" + x["text"]).strip() for x in docs]
    texts = [t[:2000] for t in full]                 # the embed step's embed_max_chars
    qids = [q for q in qrels if q in qs]
    Q = m.encode([qs[q] for q in qids]).astype(np.float64)
    bm = MemoryBM25([an(t) for t in full])
    B = z(np.stack([bm.get_scores(an(qs[q])) for q in qids]))

    def ndcg(S):
        return [E.ndcg10([docs[j]["_id"] for j in np.argsort(-S[i], kind="stable")[:10]], qrels[q])
                for i, q in enumerate(qids)]

    whole = unit(m.encode(texts).astype(np.float64))
    row = {"dense": ndcg(Q @ whole.T), "fusion": ndcg(0.45 * B + 0.25 * z(Q @ whole.T))}
    for k in ks:
        _, lead = m.encode_with_lead(texts, k)
        lead = unit(lead.astype(np.float64))
        for w in weights:
            S = Q @ unit(whole + w * lead).T
            row[f"dense {k}x{w}"] = ndcg(S)
            row[f"fusion {k}x{w}"] = ndcg(0.45 * B + 0.25 * z(S))
    return row


def loso(res: dict, kind: str) -> dict:
    cands = [c for c in next(iter(res.values())) if c.startswith(kind + " ")] + [kind]
    mean = lambda s, c: float(np.mean(res[s][c]))          # noqa: E731
    out = {}
    for held in res:
        others = [s for s in res if s != held]
        best = max(cands, key=lambda c: statistics.mean(mean(s, c) for s in others))
        out[held] = {"choice": best, "score": mean(held, best), "base": mean(held, kind)}
    return out


def cost(m, runs: int = 7) -> dict:
    from kgsearch.embed.embed_step import node_vectors

    docs = [json.loads(x) for x in open(E.SHARED / "scifact" / "corpus.jsonl", encoding="utf-8")]
    texts = [(x.get("title", "") + "\n" + x["text"])[:500] for x in docs]
    texts = (texts * 2)[:10000]
    a, b = [], []
    for _ in range(runs):                            # alternating, CPU time of this process
        t = time.process_time(); m.encode(texts); a.append(time.process_time() - t)
        t = time.process_time(); node_vectors(m, texts); b.append(time.process_time() - t)
    return {"texts": len(texts), "runs": runs, "whole_s": a, "with_opening_s": b,
            "ratio_of_medians": statistics.median(b) / statistics.median(a)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="16,24,32")
    ap.add_argument("--weights", default="0.5,1")
    ap.add_argument("--out-dir", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    ks = [int(x) for x in args.ks.split(",")]
    weights = [float(x) for x in args.weights.split(",")]
    m, an = load_model(resolve_model(None)), get_analyzer()
    res = {}
    for name in SETS:
        res[name] = one_set(m, an, name, ks, weights)
        print(name, {k: round(float(np.mean(v)), 4) for k, v in res[name].items()}, flush=True)
    means = {c: statistics.mean(float(np.mean(r[c])) for r in res.values()) for c in next(iter(res.values()))}
    picks = {kind: loso(res, kind) for kind in ("dense", "fusion")}
    spent = cost(m)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "opening_grid.json").write_text(json.dumps({"means": means, "loso": picks, "cost": spent,
                                                       "per_query": res}))
    lines = ["# A node's vector weighs in its opening: the grid (outside the pipeline)", "",
             f"`python bench/studies/opening.py` ({time.strftime('%Y-%m-%d')}, model "
             f"{m.model_id}): each document as unit(whole) + w x unit(first K tokens), cosine with the "
             "query's vector; fusion is a stand-in, z(BM25) x .45 + z(dense) x .25. Means of the seven "
             "sets; then each setting chosen leave one set out.", "",
             "| setting | dense | fusion |", "|---|---|---|"]
    for c in [k for k in means if k.startswith("dense")]:
        tag = c[len("dense"):].strip() or "whole text only"
        lines.append(f"| {tag} | {means[c]:.4f} | {means['fusion' + c[len('dense'):]]:.4f} |")
    for kind, p in picks.items():
        got = statistics.mean(v["score"] for v in p.values())
        base = statistics.mean(v["base"] for v in p.values())
        worst = min(p.items(), key=lambda kv: kv[1]["score"] - kv[1]["base"])
        lines += ["", f"Leave one set out, {kind}: {got:.4f} (whole text only {base:.4f}); worst set {worst[0]} "
                  f"{worst[1]['score'] - worst[1]['base']:+.4f}; choices: "
                  + ", ".join(f"{s} {v['choice']}" for s, v in p.items())]
    lines += ["", f"CPU time to embed {spent['texts']:,} SciFact texts of 500 characters, median of {spent['runs']} "
              f"alternating runs: whole text {statistics.median(spent['whole_s']):.3f} s, with the opening "
              f"{statistics.median(spent['with_opening_s']):.3f} s (x{spent['ratio_of_medians']:.2f})."]
    (out / "opening_grid.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
