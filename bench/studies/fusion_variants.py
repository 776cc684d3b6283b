"""Fusion variants chosen leave-one-set-out (issue 31): does anything beat the shipped profiles?

    python bench/studies/fusion_variants.py [--index-dir DIR] [--only NAME,...]
    python bench/studies/fusion_variants.py --report-from FILE.json ...    # tables from saved runs

Every variant runs on the seven shared sets (per-query nDCG@10, same code path as
``bench/quality.py --loso``); then ``bench/loso.py``'s selection picks, for each held-out set, the
best variant on the other six (by mean, and by worst-set gain over BM25), with the shipped
profiles (``current``) among the candidates. Writes bench/results/quality_loso_variants.md/json.

Variants (each a replacement of the final linear fusion, or search options):

* ``rrf``: weighted Reciprocal Rank Fusion (``--fusion rrf``) instead of linear z fusion;
* ``prf``: the RM3 channel added to the default channels (text = max of BM25 and RM3 z);
* ``zk``: embedding and text re-standardised over the candidate list instead of the index;
* ``peak p``: per query, embedding and text weights times (top-1 minus 10th best z)^p, rescaled
  to the same sum (a peaked signal trusted more, p > 0; less, p < 0);
* ``mnz m``: CombMNZ-like agreement bonus, m x sd(fused) for candidates in both the embedding's
  and the text's top 20;
* ``vprf k b [+a]``: Rocchio in embedding space: the query vector plus b x the mean vector of the
  fused top k, re-scored over the index (z), replaces the embedding signal (+a: its weight + a);
* ``tprf k``: RM3 whose feedback documents are the fused top k (not BM25's), its z averaged
  with the text signal (avg) or max-ed with it (max);
* ``zpos da``: BM25 standardised over the nodes that match a query term (not the whole index),
  every prose profile's embedding weight moved by da;
* ``oov p``: the embedding weight times (share of the query's words the model has as one
  token)^p;
* ``sem da, def da``: the embedding weights of the ``semantic`` and ``default`` intents (most of
  the sets' queries) moved separately.

``--family s20`` (session 20, the vectors that weigh in their opening): the variants whose value
depends on the dense signal crossed with a small grid of every prose intent's embedding weight
(da 0, +0.1, +0.2, as ``bench/loso.py`` moves it):

* ``vprf k b da``, ``oov p da``, ``vprf+oov da``: as above, on profiles moved by da;
* ``qlen r da``: the embedding weight times (the query's words / 8)^r, clipped to [0.5, 2]
  (r > 0: long queries lean on the embedding; r < 0: on text), with ``oov p=1``;
* ``logit``: a pairwise logistic fusion over each candidate's signals (``--logit FILE``, fitted
  leave one set out by ``bench/studies/fusion_logit.py`` on the features ``--dump`` writes):
  each set is ranked by the weights fitted on the other six.

``--family old`` is the first study's list, ``all`` both. ``--name`` sets the result files'
name (quality_loso_variants_NAME.md/json).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import loso  # noqa: E402
from _common import RESULTS, SHARED  # noqa: E402

from kgsearch import evaluate as ev  # noqa: E402
from kgsearch import fuse  # noqa: E402
from kgsearch.query import Engine, SearchOptions, intent  # noqa: E402
from kgsearch.query import engine as engine_mod  # noqa: E402
from kgsearch.query import signals as signals_mod  # noqa: E402
from kgsearch.query.channels import DEFAULT_CHANNELS  # noqa: E402
from kgsearch.store.db import Index  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]
_LINEAR = fuse.linear
_LAST: dict = {}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class _Recorded(signals_mod.Signals):
    """The engine's signal table, kept so a fusion variant can see the candidates and the query.
    With ``_LAST["zpos"]`` BM25 is standardised over the matching nodes only (the ``stats`` hook
    that several indexes use for the union's mean and spread)."""

    def __init__(self, engine, query, cand, raw, kwargs, norm, fulls=None, stats=None, allowed=None):
        if _LAST.get("zpos") and fulls and "bm25" in fulls and stats is None and len(fulls["bm25"][1]) > 1:
            fsc = np.asarray(fulls["bm25"][1], float)
            stats = {"bm25": (float(fsc.mean()), max(float(fsc.std()), 1e-9))}
        super().__init__(engine, query, cand, raw, kwargs, norm, fulls, stats, allowed=allowed)
        _LAST["sig"] = self


def _gap(s, k: int = 10) -> float:
    s = np.sort(np.asarray(s, float))[::-1]
    return 1.0 if len(s) < 2 else max(1e-6, float(s[0] - s[min(k, len(s)) - 1]))


def zk(signals, weights):
    out = {}
    for n, s in signals.items():
        s = np.asarray(s, float)
        ok = weights.get(n, 0) and n in ("embedding", "text") and len(s) > 1 and s.std() > 0
        out[n] = (s - s.mean()) / s.std() if ok else s
    return _LINEAR(out, weights)


def peak(p: float):
    def f(signals, weights):
        a, b = weights.get("embedding", 0), weights.get("text", 0)
        if a > 0 and b > 0:
            a2, b2 = a * _gap(signals["embedding"]) ** p, b * _gap(signals["text"]) ** p
            sc = (a + b) / (a2 + b2)
            weights = dict(weights, embedding=a2 * sc, text=b2 * sc)
        return _LINEAR(signals, weights)
    return f


def mnz(m: float, k: int = 20):
    def f(signals, weights):
        fused, parts = _LINEAR(signals, weights)
        e, t = np.asarray(signals["embedding"]), np.asarray(signals["text"])
        if len(e) > k and weights.get("embedding", 0) > 0:
            te = np.zeros(len(e), bool)
            te[np.argsort(-e)[:k]] = True
            tt = np.zeros(len(t), bool)
            tt[np.argsort(-t)[:k]] = True
            fused = fused + m * fused.std() * (te & tt)
        return fused, parts
    return f


def vprf(k: int, beta: float, mode: str = "replace", extra: float = 0.0):
    from kgsearch.embed import dense

    def f(signals, weights):
        fused, parts = _LINEAR(signals, weights)
        sig = _LAST["sig"]
        if weights.get("embedding", 0) <= 0 or "dense" not in sig.raw_scores or len(fused) < k:
            return fused, parts
        ix = sig.engine.ix
        mat = ix.cached(dense.MATRIX_KEY, lambda: dense.load_matrix(ix, ix.meta("model_id")) or False)
        qr = dense.query_vector(ix, sig.query.text)
        if not mat or qr is None:
            return fused, parts
        top = sig.cand[np.argsort(-fused, kind="stable")[:k]]
        order = np.argsort(mat.ids, kind="stable")
        sid = mat.ids[order]
        pos = np.minimum(np.searchsorted(sid, top), len(sid) - 1)
        rows = order[pos[sid[pos] == top]]
        if not len(rows):
            return fused, parts
        c = (mat.codes[rows].astype(np.float64) * mat.scales[rows, None]).mean(0)
        q2 = qr / np.linalg.norm(qr) + beta * c
        s = mat.scores(q2 / np.linalg.norm(q2))
        mu, sd = s.mean(), max(s.std(), 1e-9)
        cpos = np.minimum(np.searchsorted(sid, sig.cand), len(sid) - 1)
        cok = sid[cpos] == sig.cand
        z = np.zeros(len(sig.cand))
        z[cok] = (s[order[cpos[cok]]] - mu) / sd
        sg = dict(signals, embedding=z if mode == "replace" else np.asarray(signals["embedding"]) + z)
        return _LINEAR(sg, dict(weights, embedding=weights["embedding"] + extra))
    return f


def tprf(k: int, mode: str, orig_weight: float = 0.5):
    from kgsearch.text import bm25, prf

    def f(signals, weights):
        fused, parts = _LINEAR(signals, weights)
        sig = _LAST["sig"]
        if "bm25" not in sig.full or len(fused) < k:
            return fused, parts
        ix = sig.engine.ix
        fb = sig.cand[np.argsort(-fused, kind="stable")[:k]].astype(np.int64)
        real = prf.score_terms
        prf.score_terms = lambda *a, **kw: (fb, np.ones(len(fb)))      # feedback = the fused top k
        try:
            _, q2 = prf.expand(ix, sig.query.term_weights(), orig_weight=orig_weight)
        finally:
            prf.score_terms = real
        fid, fsc, n = bm25.score_all(ix, q2) if q2 else (None, None, 0)
        if n <= 0:
            return fused, parts
        mu = float(fsc.sum()) / n
        sd = math.sqrt(max(float((fsc * fsc).sum()) / n - mu * mu, 1e-12))
        raw = np.zeros(len(sig.cand))
        if len(fid):
            pos = np.minimum(np.searchsorted(fid, sig.cand), len(fid) - 1)
            hit = fid[pos] == sig.cand
            raw[hit] = fsc[pos[hit]]
        t = np.asarray(signals["text"])
        z = (raw - mu) / sd
        return _LINEAR(dict(signals, text=np.maximum(t, z) if mode == "max" else 0.5 * (t + z)), weights)
    return f


def oov(p: float, share_only: bool = False):
    """The embedding weight times (share of the query's words of 3+ letters that are one token
    of the static model)^p: words the model only knows as pieces carry little meaning in it."""
    import re

    from kgsearch.embed.model import load_model

    model = load_model(None)
    known: dict = {}

    def share(text: str) -> float:
        if text not in known:
            toks = model.tokenize([w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)] or [""])
            toks = [t for t in toks if t]
            known[text] = sum(len(t) == 1 for t in toks) / len(toks) if toks else 1.0
        return known[text]

    if share_only:
        return share

    def f(signals, weights):
        w = dict(weights, embedding=weights.get("embedding", 0.0) * share(_LAST["sig"].query.text) ** p)
        return _LINEAR(signals, w)
    return f


def words_of(text: str) -> int:
    import re
    return max(1, len(re.findall(r"\w+", text)))


def qlen(r: float, p: float = 1.0):
    """The embedding weight times clip((query words / 8)^r, 0.5, 2) and (``p`` > 0) the ``oov``
    share^p: the query's own evidence of how far its embedding can be trusted."""
    share = oov(p, share_only=True) if p else (lambda _t: 1.0)

    def f(signals, weights):
        text = _LAST["sig"].query.text
        fac = min(2.0, max(0.5, (words_of(text) / 8.0) ** r)) * (share(text) ** p if p else 1.0)
        return _LINEAR(signals, dict(weights, embedding=weights.get("embedding", 0.0) * fac))
    return f


def oov_then(p: float, g):
    """``g`` (a fusion) on the weights ``oov p`` leaves."""
    share = oov(p, share_only=True)

    def f(signals, weights):
        return g(signals, dict(weights, embedding=weights.get("embedding", 0.0) * share(_LAST["sig"].query.text) ** p))
    return f


LOGIT_FEATURES = ("embedding", "text", "graph", "intent", "alpha*embedding", "beta*text", "gamma*graph",
                  "delta*intent", "share*embedding", "loglen*embedding", "loglen*text")


def logit_features(signals: dict, weights: dict, text: str, share) -> np.ndarray:
    """One row per candidate: the four signals, each times its profile weight (the intent as a
    feature), and the embedding and text signals times the query's evidence (known-word share,
    log of its words / 8)."""
    e, t, g, i = (np.asarray(signals[k], float) for k in ("embedding", "text", "graph", "intent"))
    a, b, c, d = (float(weights.get(k, 0.0)) for k in ("embedding", "text", "graph", "intent"))
    sh, ll = share(text), math.log(words_of(text) / 8.0)
    return np.stack([e, t, g, i, a * e, b * t, c * g, d * i, sh * e, ll * e, ll * t], axis=1)


def logit(path: str):
    """Linear fusion with the weights fitted on the other six sets (``_LAST["set"]`` is the set
    being scored); a query whose profile gives the embedding no weight keeps the profiles."""
    folds = json.loads(Path(path).read_text())["folds"]
    share = oov(1.0, share_only=True)

    def f(signals, weights):
        if weights.get("embedding", 0) <= 0:
            return _LINEAR(signals, weights)
        w = np.asarray(folds[_LAST["set"]], float)
        x = logit_features(signals, weights, _LAST["sig"].query.text, share)
        fused = x @ w
        return fused, {"embedding": fused}
    return f


def dumper(rows: list):
    """The current fusion, recording each query's candidates and features (``--dump``)."""
    share = oov(1.0, share_only=True)

    def f(signals, weights):
        sig = _LAST["sig"]
        rows.append({"set": _LAST["set"], "cand": sig.cand.tolist(),
                     "x": np.round(logit_features(signals, weights, sig.query.text, share), 5).tolist(),
                     "emb_w": float(weights.get("embedding", 0.0))})
        return _LINEAR(signals, weights)
    return f


def intent_moves(moves: dict):
    return {k: (round(max(0.0, intent.INTENTS[k].weights[0] + da), 4),) + intent.INTENTS[k].weights[1:]
            for k, da in moves.items()}


DA20 = (0.0, 0.1, 0.2)


def variants_s20(logit_file: str | None = None) -> dict:
    """Session 20: the dense-dependent variants crossed with every prose intent's embedding weight
    moved by da (0 / +0.1 / +0.2), and the query's own evidence (length, known words)."""
    v: dict = {"current": {}}
    for da in DA20:
        prof = {"profiles": intent_moves({k: da for k in loso.PROSE_INTENTS})} if da else {}
        v[f"vprf k=5 b=1.0 da={da:+.1f}"] = {"fn": vprf(5, 1.0), **prof}
        v[f"vprf k=10 b=2.0 da={da:+.1f}"] = {"fn": vprf(10, 2.0), **prof}
        v[f"oov p=1 da={da:+.1f}"] = {"fn": oov(1.0), **prof}
        v[f"oov p=2 da={da:+.1f}"] = {"fn": oov(2.0), **prof}
        v[f"vprf+oov p=1 da={da:+.1f}"] = {"fn": oov_then(1.0, vprf(5, 1.0)), **prof}
        for r in (-0.5, 0.5):
            v[f"qlen r={r:+.1f} oov p=1 da={da:+.1f}"] = {"fn": qlen(r, 1.0), **prof}
    if logit_file:
        v["logit"] = {"fn": logit(logit_file)}
    return v


def variants_names() -> list[str]:
    """The first study's variant names (without building them: no model load)."""
    return [k for k in variants() if k != "current"]


def variants() -> dict:
    v = {"current": {}, "rrf": {"opts": {"fusion": "rrf"}},
         "prf": {"opts": {"channels": list(DEFAULT_CHANNELS) + ["prf"]}}, "zk": {"fn": zk}}
    for p in (0.5, 1.0, -0.5):
        v[f"peak {p:g}"] = {"fn": peak(p)}
    for m in (0.25, 0.5):
        v[f"mnz {m:g}"] = {"fn": mnz(m)}
    for k in (5, 10):
        for b in (0.5, 1.0, 2.0):
            v[f"vprf k={k} b={b}"] = {"fn": vprf(k, b)}
    for ex in (0.1, 0.2):
        v[f"vprf k=5 b=1.0 +a{ex}"] = {"fn": vprf(5, 1.0, extra=ex)}
        v[f"vprf k=10 b=2.0 +a{ex}"] = {"fn": vprf(10, 2.0, extra=ex)}
        v[f"vprf add k=5 b=1.0 +a{ex}"] = {"fn": vprf(5, 1.0, mode="add", extra=ex)}
    for p in (1.0, 2.0, 4.0):
        v[f"oov p={p:g}"] = {"fn": oov(p)}
    for m in ("avg", "max"):
        v[f"tprf k=5 {m}"] = {"fn": tprf(5, m)}
    for da in (-0.1, 0.0, 0.1, 0.2, 0.3):
        v[f"zpos da={da:+.2f}"] = {"zpos": True, "profiles": intent_moves({k: da for k in loso.PROSE_INTENTS})}
    for ds in (-0.1, 0.0, 0.1, 0.2):
        for dd in (-0.1, 0.0, 0.1, 0.2):
            if ds or dd:
                v[f"sem da={ds:+.2f} def da={dd:+.2f}"] = {"profiles": intent_moves({"semantic": ds, "default": dd})}
    return v


def run(only: list[str] | None, index_dir: str | None, family: str = "all", logit_file: str | None = None,
        dump: str | None = None) -> dict:
    data, engines = {}, {}
    for s in SETS:
        folder = SHARED / s
        qrels = {q: r for q, r in ev.read_qrels(ev.find_qrels(folder, None)).items() if any(v > 0 for v in r.values())}
        queries = [(str(q["_id"]), str(q.get("text", ""))) for q in _jsonl(folder / "queries.jsonl")
                   if str(q.get("_id")) in qrels]
        db, _ = ev.build_eval_index(folder, ev.EvalOptions(index_dir=index_dir))
        data[s] = (queries, qrels)
        engines[s] = Engine(Index.open(db, readonly=True), memo=True)
    base = SearchOptions(k=100, snippets=False, use_cache=False)
    todo = {"bm25": {"opts": {"channels": ["bm25"], "intent": "default"}},
            "dense": {"opts": {"channels": ["dense"], "intent": "default"}},
            **(variants() if family in ("old", "all") else {}),
            **(variants_s20(logit_file) if family in ("s20", "all") else {})}
    rows: list = []
    if dump:
        todo["current"] = {"fn": dumper(rows)}
    out: dict = {}
    engine_mod.Signals = _Recorded
    try:
        for name, v in todo.items():
            if only and name not in only and name not in ("bm25", "dense", "current"):
                continue
            fuse.linear = v.get("fn", _LINEAR)
            _LAST["zpos"] = v.get("zpos", False)
            before = intent.with_weights(v.get("profiles", {}))
            t0 = time.perf_counter()
            try:
                out[name] = {}
                for s in SETS:
                    _LAST["set"] = s
                    out[name][s] = [q["ndcg@10"] for q in ev.run_queries(engines[s], data[s][0], replace(
                        base, **v.get("opts", {})), data[s][1])["per_query"]]
            finally:
                fuse.linear = _LINEAR
                _LAST["zpos"] = False
                intent.INTENTS.update(before)
            mean = sum(sum(x) / len(x) for x in out[name].values()) / len(SETS)
            print(f"{name:30} mean {mean:.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        engine_mod.Signals = signals_mod.Signals
    if dump:
        keys = {}
        for s in SETS:
            keys[s] = dict(engines[s].ix.conn.execute("SELECT id, key FROM nodes").fetchall())
        for r in rows:      # candidates' document ids (None: not a document: tags, entities)
            k = keys[r["set"]]
            r["doc"] = [k.get(c, "")[4:] if k.get(c, "").startswith("doc:") else None for c in r["cand"]]
        Path(dump).write_text(json.dumps({"queries": {s: data[s][0] for s in SETS},
                                          "qrels": {s: data[s][1] for s in SETS}, "rows": rows,
                                          "features": LOGIT_FEATURES, "current": out.get("current")}))
    return out


BM25_GRID = ((0.9, 0.4), (1.2, 0.75), (1.5, 0.6), (1.5, 0.9), (2.0, 0.75), (1.2, 0.6))


def bm25_grid(index_dir: str | None) -> dict:
    """BM25 k1/b (index settings: one index per setting): BM25 alone and the default fusion."""
    base = SearchOptions(k=100, snippets=False, use_cache=False)
    out: dict = {}
    for k1, b in BM25_GRID:
        res_b, res_f = {}, {}
        for s in SETS:
            folder = SHARED / s
            qrels = {q: r for q, r in ev.read_qrels(ev.find_qrels(folder, None)).items()
                     if any(v > 0 for v in r.values())}
            queries = [(str(q["_id"]), str(q.get("text", ""))) for q in _jsonl(folder / "queries.jsonl")
                       if str(q.get("_id")) in qrels]
            db, _ = ev.build_eval_index(folder, ev.EvalOptions(index_dir=index_dir, settings={"k1": k1, "b": b}))
            eng = Engine(Index.open(db, readonly=True), memo=True)
            res_b[s] = [q["ndcg@10"] for q in ev.run_queries(eng, queries, replace(
                base, channels=["bm25"], intent="default"), qrels)["per_query"]]
            res_f[s] = [q["ndcg@10"] for q in ev.run_queries(eng, queries, base, qrels)["per_query"]]
        out[f"k1={k1} b={b}"] = {"bm25": res_b, "fusion": res_f}
        print(f"k1={k1} b={b} done", flush=True)
    return out


def bm25_report(grid: dict, results: dict) -> str:
    """k1/b chosen leave-one-set-out by the fusion's mean on the other sets (k1=1.5 b=0.75 = current)."""
    def m(v):
        return sum(v) / len(v)

    fus = {"current": results["current"], **{k: v["fusion"] for k, v in grid.items()}}
    bms = {"current": results["bm25"], **{k: v["bm25"] for k, v in grid.items()}}
    lines = ["", "## BM25 k1/b (index settings) chosen leave-one-set-out", "",
             "`current` is k1=1.5 b=0.75. Fusion = the default pipeline on an index built with that setting.", "",
             "| setting | BM25 mean | fusion mean | fusion - current BM25 | worst set (fusion - current BM25) |",
             "|---|---|---|---|---|"]
    bm0 = {s: m(results["bm25"][s]) for s in SETS}
    for k in fus:
        fm = sum(m(fus[k][s]) for s in SETS) / len(SETS)
        lines.append(f"| {k} | {sum(m(bms[k][s]) for s in SETS) / len(SETS):.4f} | {fm:.4f} | "
                     f"{fm - sum(bm0.values()) / len(SETS):+.4f} | {min(m(fus[k][s]) - bm0[s] for s in SETS):+.4f} |")
    held = {}
    for h in SETS:
        train = [s for s in SETS if s != h]
        held[h] = max(fus, key=lambda k: (round(sum(m(fus[k][s]) for s in train), 6), k == "current"))
    lo = sum(m(fus[held[s]][s]) for s in SETS) / len(SETS)
    lines += ["", f"LOSO (by fusion mean on the other sets): mean {lo:.4f}, worst set vs current BM25 "
              f"{min(m(fus[held[s]][s]) - bm0[s] for s in SETS):+.4f}; choices: "
              + ", ".join(f"{s} `{held[s]}`" for s in SETS) + "."]
    return "\n".join(lines) + "\n"


FAMILIES = (   # name, test on a candidate's name (``current`` is in every family)
    ("profiles (da, dg, norm; bench/loso.py's grid)", lambda c: c.startswith(("z da=", "max da="))),
    ("first study's variants", lambda c: c in OLD_NAMES),
    ("vprf x da", lambda c: c.startswith("vprf k=") and " da=" in c),
    ("oov x da", lambda c: c.startswith("oov p=") and " da=" in c),
    ("vprf+oov x da", lambda c: c.startswith("vprf+oov")),
    ("qlen x da (with oov p=1)", lambda c: c.startswith("qlen")),
    ("vprf x da + profiles", lambda c: (c.startswith("vprf k=") and " da=" in c) or c.startswith(("z da=", "max da="))),
    ("oov x da + profiles", lambda c: (c.startswith("oov p=") and " da=" in c) or c.startswith(("z da=", "max da="))),
    ("logit (LOSO-fitted weights)", lambda c: c.startswith("logit")),
    ("session 20 (all x da) + profiles", lambda c: c not in OLD_NAMES and not c.startswith("logit") and " da=" in c),
)
OLD_NAMES: set = set()


def family_report(results: dict) -> str:
    """Per family of candidates (with ``current``): the LOSO mean over BM25 and the worst set by
    both selection rules, the held-out value of every set, and the pool of every candidate."""
    def m(v):
        return sum(v) / len(v)

    bm = {s: m(results["bm25"][s]) for s in SETS}
    bmean, cmean = sum(bm.values()) / len(SETS), sum(m(results["current"][s]) for s in SETS) / len(SETS)
    fams = [(n, t) for n, t in FAMILIES if any(t(c) for c in results if c not in ("bm25", "dense", "current"))]
    fams.append(("whole pool", lambda c: True))
    lines = ["", "## Families chosen leave-one-set-out", "",
             f"Each family with `current` among its candidates; BM25 {bmean:.4f}, current {cmean:.4f} "
             f"(+{cmean - bmean:.4f}). Per set: the held-out value by the mean rule (its BM25 in the header).", "",
             "| family | candidates | LOSO mean rule | - BM25 | worst set - BM25 | LOSO worst-set rule | - BM25 | "
             "worst set - BM25 | " + " | ".join(f"{s} ({bm[s]:.4f})" for s in SETS) + " |",
             "|---" * (8 + len(SETS)) + "|"]
    for name, test in fams:
        sub = {c: v for c, v in results.items() if c in ("bm25", "dense", "current") or test(c)}
        cells = []
        per = None
        for crit in ("mean", "worst-set gain over BM25"):
            ch = loso.choose(sub, SETS, crit)
            held = {s: m(sub[ch["held_out_choice"][s]][s]) for s in SETS}
            per = per or held
            lo = sum(held.values()) / len(SETS)
            cells += [f"{lo:.4f}", f"{lo - bmean:+.4f}", f"{min(held[s] - bm[s] for s in SETS):+.4f}"]
        lines.append(f"| {name} | {len(sub) - 2} | " + " | ".join(cells) + " | "
                     + " | ".join(f"{per[s]:.4f}" for s in SETS) + " |")
    return "\n".join(lines) + "\n"


def report(results: dict, out_dir: Path, grid: dict | None = None, name: str = "") -> str:
    def m(v):
        return sum(v) / len(v)

    bm = {s: m(results["bm25"][s]) for s in SETS}
    lines = ["# Fusion variants chosen leave-one-set-out (nDCG@10)", "",
             "`python bench/studies/fusion_variants.py` (docs/fusion-variants.md says what each variant is). Every variant "
             "on all seven sets; then, per held-out set, the best candidate on the other six (the shipped profiles, "
             "`current`, among them).", "",
             "| variant | mean | - BM25 | worst set - BM25 | " + " | ".join(SETS) + " |",
             "|---" * (4 + len(SETS)) + "|"]
    for c, res in results.items():
        per = {s: m(res[s]) for s in SETS}
        mean = sum(per.values()) / len(SETS)
        worst = min(per[s] - bm[s] for s in SETS)
        lines.append(f"| {c} | {mean:.4f} | {mean - sum(bm.values()) / len(SETS):+.4f} | {worst:+.4f} | "
                     + " | ".join(f"{per[s]:.4f}" for s in SETS) + " |")
    summary = {}
    for crit in ("mean", "worst-set gain over BM25"):
        ch = loso.choose(results, SETS, crit)
        md, summ = loso.table(results, SETS, ch, {"date": time.strftime("%Y-%m-%d"), "note": ""})
        summary[crit] = {"chosen": ch, **summ}
        lines += ["", f"## LOSO selection by {crit}", "", md.split("\n\n", 2)[2].strip()]
    out_dir.mkdir(parents=True, exist_ok=True)
    OLD_NAMES.update(variants_names())
    text = "\n".join(lines) + "\n" + family_report(results) + (bm25_report(grid, results) if grid else "")
    stem = "quality_loso_variants" + (f"_{name}" if name else "")
    (out_dir / f"{stem}.md").write_text(text)
    (out_dir / f"{stem}.json").write_text(json.dumps({"summary": summary, "per_query": results,
                                                                          "bm25_grid": grid or {}}))
    return text


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--only", default=None, help="comma-separated variant names (bm25, dense, current always run)")
    ap.add_argument("--report-from", nargs="*", default=None, help="saved per-query JSON files to tabulate")
    ap.add_argument("--bm25-grid", action="store_true", help="also BM25 k1/b (one index per setting)")
    ap.add_argument("--bm25-from", default=None, help="saved BM25 grid JSON ({setting: {bm25, fusion}})")
    ap.add_argument("--out-dir", default=str(RESULTS))
    ap.add_argument("--family", choices=("old", "s20", "all"), default="all",
                    help="the first study's variants (old), session 20's crossed with da (s20), or both")
    ap.add_argument("--logit", default=None, help="fold weights JSON (bench/studies/fusion_logit.py): adds `logit`")
    ap.add_argument("--dump", default=None, help="write each query's candidates and features (current fusion) here")
    ap.add_argument("--name", default="", help="result files quality_loso_variants_NAME.md/json")
    args = ap.parse_args(argv)
    if args.report_from:
        results: dict = {}
        for f in args.report_from:
            d = json.loads(Path(f).read_text())
            results.update(d.get("per_query", d))
    else:
        results = run(args.only.split(",") if args.only else None, args.index_dir, args.family, args.logit,
                      args.dump)
    grid = json.loads(Path(args.bm25_from).read_text()) if args.bm25_from else (
        bm25_grid(args.index_dir) if args.bm25_grid else None)
    print(report(results, Path(args.out_dir), grid, args.name))


if __name__ == "__main__":
    main()
