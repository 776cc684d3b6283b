"""A pairwise logistic fusion fitted leave one set out (issue 31, session 20).

    python bench/studies/fusion_variants.py --family s20 --only current --dump /tmp/feat.json ...
    python bench/studies/fusion_logit.py /tmp/feat.json --out /tmp/logit.json
    python bench/studies/fusion_variants.py --family s20 --only logit --logit /tmp/logit.json ...

The dump holds, for every query of the seven shared sets, the default pipeline's candidates with
the features of ``fusion_variants.logit_features``: the four signals (embedding z, text z, graph,
intent edges), each times its intent profile's weight (the intent as a feature: the current
fusion is the sum of these four), and the embedding and text signals times the query's own
evidence (share of its words the static model holds whole, log of its words / 8). For each
held-out set, a linear scorer is fitted on the other six by pairwise logistic regression
(RankNet with a linear model): every relevant candidate against the ``--neg`` best non-relevant
ones by the current fusion, each set weighing the same and each query the same within its set,
L2 (``--lam``) to the current weights; ``--lambdas N``: N LambdaRank rounds, each pair weighted
by the change of nDCG@10 swapping it would make under the previous round's ranking. Scored offline here (re-ranking the candidates; checked against the
pipeline's own nDCG@10 of the current fusion) and, with ``--logit``, through the pipeline.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]
CURRENT = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0], float)
SUBSETS = {"all": list(range(11)), "profile": list(range(8)), "profile+evidence": [4, 5, 6, 7, 8, 9, 10]}


def dcg(g):
    return sum(x / math.log2(i + 2) for i, x in enumerate(g))


def ndcg10(docs: list, rels: dict) -> float:
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:10]
    idcg = dcg([2 ** r - 1 for r in ideal])
    gains = [(2 ** rels.get(d, 0) - 1) if rels.get(d, 0) > 0 else 0 for d in docs[:10]]
    return dcg(gains) / idcg if idcg else 0.0


def load(path: str) -> dict:
    d = json.loads(Path(path).read_text())
    per: dict = {s: [] for s in SETS}
    for r in d["rows"]:
        per[r["set"]].append(r)
    out = {}
    for s in SETS:
        qs = d["queries"][s]
        assert len(per[s]) == len(qs), (s, len(per[s]), len(qs))
        items = []
        for (qid, _), r in zip(qs, per[s]):
            keep = [i for i, doc in enumerate(r["doc"]) if doc is not None]
            x = np.asarray(r["x"], float)[keep]
            docs = [r["doc"][i] for i in keep]
            rels = d["qrels"][s][qid]
            items.append({"x": x, "docs": docs, "rels": rels, "emb_w": r["emb_w"],
                          "y": np.array([rels.get(doc, 0) for doc in docs], float)})
        out[s] = items
    return {"sets": out, "current": d.get("current")}


def score_set(items: list, w: np.ndarray) -> list[float]:
    out = []
    for it in items:
        ww = w if it["emb_w"] > 0 else CURRENT
        sc = it["x"] @ ww
        order = np.argsort(-sc, kind="stable")
        seen, docs = set(), []
        for i in order.tolist():
            if it["docs"][i] not in seen:
                seen.add(it["docs"][i])
                docs.append(it["docs"][i])
            if len(docs) == 10:
                break
        out.append(ndcg10(docs, it["rels"]))
    return out


def pairs(items: list, neg: int = 50, w: np.ndarray | None = None, lambdas: bool = False
          ) -> tuple[np.ndarray, np.ndarray]:
    """Relevant minus non-relevant feature rows of every query (the ``neg`` best non-relevant by
    the scorer ``w``, the current fusion by default), each query's pairs weighing 1 in all. With
    ``lambdas`` a pair weighs what swapping the two would change nDCG under the ranking by ``w``
    (LambdaRank's |delta nDCG|), so pairs near the top count and pairs far down hardly do."""
    w = CURRENT if w is None else w
    diffs, wts = [], []
    for it in items:
        if it["emb_w"] <= 0:
            continue
        pos = np.flatnonzero(it["y"] > 0)
        if not len(pos):
            continue
        cur = it["x"] @ w
        nz = np.flatnonzero(it["y"] <= 0)
        nz = nz[np.argsort(-cur[nz], kind="stable")[:neg]]
        if not len(nz):
            continue
        d = (it["x"][pos][:, None, :] - it["x"][nz][None, :, :]).reshape(-1, it["x"].shape[1])
        if lambdas:
            rank = np.empty(len(cur), int)
            rank[np.argsort(-cur, kind="stable")] = np.arange(len(cur))
            disc = 1.0 / np.log2(rank + 2.0)
            disc[rank >= 10] = 0.0
            gain = 2.0 ** it["y"] - 1
            lam = (gain[pos][:, None] * np.abs(disc[pos][:, None] - disc[nz][None, :])).reshape(-1)
            keep = lam > 0
            d, lam = d[keep], lam[keep]
            if not len(d):
                continue
            wts.append(lam / lam.sum())
        else:
            wts.append(np.full(len(d), 1.0 / len(d)))
        diffs.append(d)
    return np.concatenate(diffs), np.concatenate(wts)


def fit(train: dict, cols: list[int], lam: float = 1.0, iters: int = 50, neg: int = 50, lambdas: int = 0
        ) -> np.ndarray:
    """Newton's method on sum w_pair log(1 + exp(-d.w)) + lam/2 |w - current|^2 (each set sums to 1);
    ``lambdas`` > 0: that many LambdaRank rounds, the pair weights from the last round's ranking."""
    full = CURRENT.copy()
    for _ in range(max(1, lambdas)):
        full = _fit_once(train, cols, lam, iters, neg, full, lambdas > 0)
    return full


def _fit_once(train, cols, lam, iters, neg, start, lambdas):
    ds, ws = [], []
    for s, items in train.items():
        d, w = pairs(items, neg, start, lambdas)
        n_q = sum(1 for it in items if it["emb_w"] > 0 and (it["y"] > 0).any())
        ds.append(d[:, cols])
        ws.append(w / max(n_q, 1))
    d, sw = np.concatenate(ds), np.concatenate(ws)
    w0 = CURRENT[cols]

    def loss(w):
        return float((sw * np.logaddexp(0.0, -(d @ w))).sum() + lam / 2 * ((w - w0) ** 2).sum())

    w = start[cols].copy()
    f0 = loss(w)
    for _ in range(iters):
        m = d @ w
        p = 1.0 / (1.0 + np.exp(np.clip(m, -50, 50)))           # sigma(-m)
        g = -(d * (sw * p)[:, None]).sum(0) + lam * (w - w0)
        h = (d * (sw * p * (1 - p))[:, None]).T @ d + lam * np.eye(len(w))
        step = np.linalg.solve(h, g)
        t = 1.0
        while t > 1e-4 and loss(w - t * step) > f0 - 1e-4 * t * float(g @ step):   # backtracking (Armijo)
            t /= 2
        if t <= 1e-4:
            break
        w, f0 = w - t * step, loss(w - t * step)
        if np.abs(t * step).max() < 1e-7:
            break
    full = np.zeros(len(CURRENT))
    full[cols] = w
    return full


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--out", required=True)
    ap.add_argument("--features", default="all", choices=sorted(SUBSETS))
    ap.add_argument("--lam", type=float, default=1.0)
    ap.add_argument("--lambdas", type=int, default=0, help="LambdaRank rounds (0: plain pairwise logistic)")
    ap.add_argument("--neg", type=int, default=50, help="non-relevant candidates per query (the current fusion's best)")
    args = ap.parse_args(argv)
    d = load(args.dump)
    sets = d["sets"]
    m = {s: float(np.mean(score_set(sets[s], CURRENT))) for s in SETS}
    if d["current"]:
        pipe = {s: float(np.mean(d["current"][s])) for s in SETS}
        print("offline current vs pipeline:", {s: f"{m[s]:.4f}/{pipe[s]:.4f}" for s in SETS})
    cols = SUBSETS[args.features]
    folds, held = {}, {}
    for h in SETS:
        w = fit({s: sets[s] for s in SETS if s != h}, cols, args.lam, neg=args.neg, lambdas=args.lambdas)
        folds[h] = w.tolist()
        held[h] = float(np.mean(score_set(sets[h], w)))
    wall = fit(sets, cols, args.lam, neg=args.neg, lambdas=args.lambdas)
    print(f"features {args.features} lam {args.lam}")
    print("set        current  logit(LOSO)  fold weights")
    for s in SETS:
        print(f"{s:10} {m[s]:.4f}   {held[s]:.4f}  {held[s] - m[s]:+.4f}  " + " ".join(f"{x:+.2f}" for x in folds[s]))
    print(f"mean       {np.mean(list(m.values())):.4f}   {np.mean(list(held.values())):.4f}")
    print("all sets:", " ".join(f"{x:+.3f}" for x in wall))
    Path(args.out).write_text(json.dumps({"features": args.features, "lam": args.lam, "neg": args.neg, "lambdas": args.lambdas, "folds": folds,
                                          "all_sets": wall.tolist(), "offline_loso": held, "offline_current": m}))


if __name__ == "__main__":
    main()
