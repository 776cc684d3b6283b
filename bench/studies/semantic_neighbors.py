"""Neighbours chosen by meaning (issue 31): does a ``similar_text`` graph built from the node
vectors, instead of (or beside) the shared rare terms, make a better graph signal?

    python bench/studies/semantic_neighbors.py --from-dir /tmp/fuse20/idx --work /tmp/sem21
    python bench/studies/semantic_neighbors.py --report-from /tmp/sem21/runs.json     # tables only

The graph signal of a prose candidate is the weighted mean of its neighbours' first-stage scores
(:func:`kgsearch.graph.kernels.proximity.pull_mean`): score regularisation over a neighbour graph
(the cluster hypothesis; Diaz 2005). Today's neighbours are lexical (:mod:`kgsearch.text.neighbors`:
the 10 nodes that score highest when a node's 24 most distinctive rare terms are its BM25 query).
Variants, each written into a copy of every evaluation index (the originals are not touched):

* ``rerank W``: the ``W`` best by the lexical rule (the exact kernel with ``K = W``), the 10 of
  them nearest by vector cosine kept; edge weight the lexical similarity (``lex``) or the cosine
  (``cos``). Cheap at index time (``W`` cosines a node), and the same candidates at 1M nodes;
* ``dense k``: the ``k`` nearest prose nodes by exact cosine over the node vectors (blockwise
  numpy), weight the cosine, replacing the lexical lists;
* ``union``: the lexical 10 and the dense 10 together (a node in both once), weight the cosine
  for all (``cos``), or each list's own (``own``: lexical similarity, cosine).

How a copy is changed: the neighbour selection of the exact kernel
(:func:`kgsearch.text.neighbors.exact.neighbours_bar`, as the step calls it) is replaced for the
run, the ``neighbors`` and ``graph`` steps are marked stale and the indexer runs
(:func:`kgsearch.evaluate.build_eval_index`): it recomputes every list, writes the edges and
rebuilds the graph, PageRank and communities as any index run would.

Scoring: ``bench/loso.py``'s ``run`` (every query's nDCG@10, the pipeline's own code path) on each
variant with a small grid of the profile moves (``da`` 0/+0.1, ``dg`` 0/+0.1/+0.2, norm z), and
``loso.choose`` per family with ``current`` (today's lists, today's profiles) among the
candidates, by the mean rule and the worst-set rule. Writes
bench/results/semantic_neighbors.md/json.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import loso  # noqa: E402
from _common import RESULTS, SHARED  # noqa: E402

from kgsearch import evaluate as ev  # noqa: E402
from kgsearch.embed import store as vstore  # noqa: E402
from kgsearch.query import Engine, SearchOptions  # noqa: E402
from kgsearch.store.db import Index  # noqa: E402
from kgsearch.text.neighbors import common, exact  # noqa: E402

SETS = ["scifact", "nfcorpus", "cranfield", "cisi", "med", "cacm", "cosqa"]
VARIANTS = {          # name -> (kind, wide/k, weight)
    "rerank W=30 lex": ("rerank", 30, "lex"),
    "rerank W=50 lex": ("rerank", 50, "lex"),
    "rerank W=50 cos": ("rerank", 50, "cos"),
    "rerank W=20 lex": ("rerank", 20, "lex"),
    "rerank W=40 lex": ("rerank", 40, "lex"),
    "rerank W=70 lex": ("rerank", 70, "lex"),
    "rerank W=100 lex": ("rerank", 100, "lex"),
    "rerank W=30 cos": ("rerank", 30, "cos"),
    "rerank W=100 cos": ("rerank", 100, "cos"),
    "rerank W=50 prod": ("rerank", 50, "prod"),
    "dense k=10": ("dense", 10, "cos"),
    "union 10+10 cos": ("union", 10, "cos"),
    "union 10+10 own": ("union", 10, "own"),
}
GRID = {"DA": (0.0, 0.10), "DG": (0.0, 0.10, 0.20), "NORMS": ("z",)}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def slug(name: str) -> str:
    return name.replace(" ", "_").replace("=", "").replace("+", "p")


class Vectors:
    """Every prose node's stored vector (int8 code x scale, made unit), by node id."""

    def __init__(self, ix):
        prose = np.asarray(common.prose_ids(ix.conn), dtype=np.int64)
        ids, vecs = [], []
        for bid, _h, sc, codes in vstore.iter_blocks(ix):
            ids.append(bid)
            vecs.append(codes.astype(np.float32) * sc[:, None])
        ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        v = np.concatenate(vecs) if vecs else np.zeros((0, 1), np.float32)
        keep = np.isin(ids, prose)
        self.ids, v = ids[keep], v[keep]
        n = np.linalg.norm(v, axis=1)
        ok = n > 0
        self.ids, self.v = self.ids[ok], v[ok] / n[ok, None]
        self.row = {int(i): r for r, i in enumerate(self.ids.tolist())}

    def cos(self, a: int, bs: list[int]) -> np.ndarray:
        ra = self.row.get(a)
        out = np.full(len(bs), -1.0)
        if ra is None:
            return out
        for j, b in enumerate(bs):
            rb = self.row.get(b)
            if rb is not None:
                out[j] = float(self.v[ra] @ self.v[rb])
        return out

    def knn(self, k: int, block: int = 2048) -> dict[int, list[tuple[int, float]]]:
        """Each node's ``k`` nearest others by cosine (ties by node id), blockwise."""
        out = {}
        for s in range(0, len(self.ids), block):
            sims = self.v[s:s + block] @ self.v.T
            for r in range(sims.shape[0]):
                sims[r, s + r] = -np.inf
            top = np.argpartition(-sims, min(k, sims.shape[1] - 1), axis=1)[:, :k + 1]
            for r in range(sims.shape[0]):
                cand = top[r]
                order = np.lexsort((self.ids[cand], -sims[r, cand]))[:k]
                out[int(self.ids[s + r])] = [(int(self.ids[cand[i]]), float(sims[r, cand[i]])) for i in order
                                             if np.isfinite(sims[r, cand[i]])]
        return out


def selection(kind: str, n: int, weight: str, vec: Vectors):
    """A stand-in for :func:`exact.neighbours_bar` choosing by ``kind`` (the entry bars it
    returns do not matter: every list is recomputed)."""
    orig = exact.neighbours_bar
    knn = vec.knn(n) if kind in ("dense", "union") else None

    def lexical(terms, self_id, post, allowed, rank, wide):
        k0 = exact.K
        exact.K = wide
        try:
            return orig(terms, self_id, post, allowed, rank)[0]
        finally:
            exact.K = k0

    def f(terms, self_id, post, allowed=None, rank=None):
        if kind == "dense":
            return [(d, c) for d, c in knn.get(self_id, []) if c >= common.MIN_SIM], np.inf
        if kind == "rerank":
            found = lexical(terms, self_id, post, allowed, rank, n)
            cs = vec.cos(self_id, [d for d, _ in found])
            by = cs * np.array([w for _, w in found]) if weight == "prod" else cs     # (prod: both kinds of evidence)
            order = sorted(range(len(found)), key=lambda i: (-by[i], -found[i][1], found[i][0]))[:common.K]
            return [(found[i][0], max(float(cs[i]), common.MIN_SIM) if weight == "cos" else found[i][1])
                    for i in order], np.inf
        lex = dict(lexical(terms, self_id, post, allowed, rank, common.K))
        dense = dict(knn.get(self_id, []))
        both = sorted(set(lex) | set(dense))
        cs = vec.cos(self_id, both)
        out = []
        for d, c in zip(both, cs):
            w = max(float(c), common.MIN_SIM) if weight == "cos" else max(lex.get(d, 0.0), dense.get(d, 0.0))
            out.append((d, w))
        return out, np.inf
    return f


def source_db(src: Path, s: str) -> Path:
    """``s``'s index in ``src`` (by the set's name: the shared files' times may have changed
    since it was built, which changes the name :func:`ev.eval_index_path` gives)."""
    found = sorted(src.glob(f"{s}-*.db"))
    if len(found) != 1:
        raise SystemExit(f"{src}: expected one {s}-*.db, found {len(found)}")
    return found[0]


def copy_today(src: Path, work: Path) -> Path:
    """Today's lists: a plain copy of every set's index (scored there, never in ``src``)."""
    out = work / "lex"
    out.mkdir(parents=True, exist_ok=True)
    for s in SETS:
        dst = ev.eval_index_path(SHARED / s, ev.EvalOptions(index_dir=str(out)))
        if not dst.exists():
            shutil.copyfile(source_db(src, s), dst)
    return out


def make_variant(name: str, src: Path, work: Path) -> Path:
    """A copy of every set's index with ``name``'s lists (the indexer's own run writes them)."""
    kind, n, weight = VARIANTS[name]
    out = work / slug(name)
    out.mkdir(parents=True, exist_ok=True)
    for s in SETS:
        dst = ev.eval_index_path(SHARED / s, ev.EvalOptions(index_dir=str(out)))
        if (out / (dst.name + ".done")).exists():
            continue
        shutil.copyfile(source_db(src, s), dst)
        with Index.open(dst) as ix:
            vec = Vectors(ix)
            with ix.transaction():
                ix.mark_stale("neighbors", "graph")
        orig = exact.neighbours_bar
        exact.neighbours_bar = selection(kind, n, weight, vec)
        try:
            t0 = time.perf_counter()
            _, rep = ev.build_eval_index(SHARED / s, ev.EvalOptions(index_dir=str(out)))
        finally:
            exact.neighbours_bar = orig
        print(f"  {name} {s}: {rep.steps.get('neighbors', {}).get('edges')} edges "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        (out / (dst.name + ".done")).write_text("ok")
    return out


def score(index_dir: Path, grid: bool) -> dict:
    """Every query's nDCG@10 for bm25, dense, current and (``grid``) the small profile grid."""
    saved = loso.DA, loso.DG, loso.NORMS
    loso.DA, loso.DG, loso.NORMS = (GRID["DA"], GRID["DG"], GRID["NORMS"]) if grid else ((), (), ())
    try:
        data = {}
        for s in SETS:
            folder = SHARED / s
            qrels = {q: r for q, r in ev.read_qrels(ev.find_qrels(folder, None)).items()
                     if any(v > 0 for v in r.values())}
            queries = [(str(q["_id"]), str(q.get("text", ""))) for q in _jsonl(folder / "queries.jsonl")
                       if str(q.get("_id")) in qrels]
            db, _ = ev.build_eval_index(folder, ev.EvalOptions(index_dir=str(index_dir)))
            data[s] = (db, queries, qrels)
        engines = {s: Engine(Index.open(data[s][0], readonly=True), memo=True) for s in SETS}
        return loso.run(data, engines.__getitem__, SearchOptions(k=100, snippets=False, use_cache=False))
    finally:
        loso.DA, loso.DG, loso.NORMS = saved


def shown(c: str) -> str:
    """A candidate's name in a Markdown table (its ``|`` would split the cell)."""
    return c.replace(" | ", " @ ")


def _m(v):
    return sum(v) / len(v)


def families(results: dict) -> list[tuple[str, list[str]]]:
    """Candidate families (``current`` is added to each)."""
    names = [c for c in results if c not in ("bm25", "dense", "current")]
    base = [c for c in names if c.startswith("lex ")]
    fams = [("today's lists x grid (da 0/+.1, dg 0/+.1/+.2)", base)]
    for v in VARIANTS:
        own = [c for c in names if c.startswith(v + " |")]
        if own:
            fams.append((f"{v}, default profiles", [c for c in own if c.endswith("| current")]))
            fams.append((f"{v} x grid", own))
    rerank = [c for c in names if c.startswith("rerank ")]
    fams.append(("rerank, every W (lex weights), default profiles",
                 [c for c in rerank if c.endswith("lex | current")]))
    fams.append(("rerank, every W and weight, default profiles", [c for c in rerank if c.endswith("| current")]))
    fams.append(("rerank, every W (lex weights) x grid", [c for c in rerank if " lex | " in c]))
    fams.append(("rerank, every W and weight x grid", rerank))
    fams.append(("every variant, default profiles", [c for c in names if c.endswith("| current")
                                                     and not c.startswith("lex ")]))
    fams.append(("whole pool", names))
    prof = [c for c in names if c.startswith(("z da=", "max da="))]
    if prof:
        fams.insert(0, ("bench/loso.py's profile grid (quality_loso.json)", prof))
        fams.append(("profile grid + every variant, default profiles",
                     prof + [c for c in names if c.endswith("| current") and not c.startswith("lex ")]))
    return fams


def report(results: dict, out_dir: Path, meta: dict) -> str:
    bm = {s: _m(results["bm25"][s]) for s in SETS}
    bmean = sum(bm.values()) / len(SETS)
    cur = {s: _m(results["current"][s]) for s in SETS}
    cmean = sum(cur.values()) / len(SETS)
    lines = ["# Neighbours chosen by meaning: the similar_text graph from the node vectors (nDCG@10)", "",
             f"{meta['date']}; `python bench/studies/semantic_neighbors.py` (docs/fusion-variants.md, *Neighbours "
             f"chosen by meaning*). BM25 {bmean:.4f}, current {cmean:.4f} (+{cmean - bmean:.4f}). Every variant's "
             "lists were written into a copy of each evaluation index by the indexer's own neighbors and graph steps. "
             "`V @ P`: variant V (`lex`: today's lists) with profile move P (`current`: the shipped profiles); "
             "`z da=.. dg=..` and `max ...` without a variant: bench/loso.py's grid on today's lists, read from "
             "quality_loso.json (its current and BM25 equal this run's query for query).",
             "", "## Each candidate on all seven sets", "",
             "Sign test: queries won/lost against `current` over all sets (two-sided exact binomial p).", "",
             "| candidate | mean | - BM25 | worst set - BM25 | W/L vs current (p) | " + " | ".join(SETS) + " |",
             "|---" * (5 + len(SETS)) + "|"]
    for c, res in results.items():
        per = {s: _m(res[s]) for s in SETS}
        mean = sum(per.values()) / len(SETS)
        a = [x for s in SETS for x in res[s]]
        b = [x for s in SETS for x in results["current"][s]]
        w, lo, p = loso.sign_test(a, b)
        lines.append(f"| {shown(c)} | {mean:.4f} | {mean - bmean:+.4f} | {min(per[s] - bm[s] for s in SETS):+.4f} | "
                     f"{w}/{lo} ({p:.3g}) | " + " | ".join(f"{per[s]:.4f}" for s in SETS) + " |")
    lines += ["", "## Per set against current, default profiles (queries won/lost, two-sided sign test)", "",
              "| variant | " + " | ".join(SETS) + " |", "|---" * (1 + len(SETS)) + "|"]
    for c in results:
        if c.endswith("| current"):
            cells = []
            for s in SETS:
                w, lo, p = loso.sign_test(results[c][s], results["current"][s])
                cells.append(f"{_m(results[c][s]) - cur[s]:+.4f} {w}/{lo} ({p:.2g})")
            lines.append(f"| {shown(c)} | " + " | ".join(cells) + " |")
    lines += ["", "## Families chosen leave-one-set-out", "",
              "Each family with `current` among its candidates. Per set: the held-out value by the mean rule.", "",
              "| family | candidates | LOSO mean rule | - BM25 | worst set - BM25 | LOSO worst-set rule | - BM25 | "
              "worst set - BM25 | " + " | ".join(f"{s} ({bm[s]:.4f})" for s in SETS) + " | choices (mean rule) |",
              "|---" * (9 + len(SETS)) + "|"]
    summary = {}
    for name, cands in families(results):
        sub = {c: results[c] for c in ["bm25", "dense", "current"] + cands}
        cells, per, picks, summ = [], None, None, {}
        for crit in ("mean", "worst-set gain over BM25"):
            ch = loso.choose(sub, SETS, crit)
            held = {s: _m(sub[ch["held_out_choice"][s]][s]) for s in SETS}
            if per is None:
                per, picks = held, ch["held_out_choice"]
            lo = sum(held.values()) / len(SETS)
            worst = min(held[s] - bm[s] for s in SETS)
            cells += [f"{lo:.4f}", f"{lo - bmean:+.4f}", f"{worst:+.4f}"]
            summ[crit] = {"loso_mean": lo, "worst_gain_vs_bm25": worst, "held_out_choice": ch["held_out_choice"]}
        summary[name] = summ
        lines.append(f"| {name} | {len(cands) + 1} | " + " | ".join(cells) + " | "
                     + " | ".join(f"{per[s]:.4f}" for s in SETS) + " | "
                     + "; ".join(f"{s}: {shown(picks[s])}" for s in SETS) + " |")
    text = "\n".join(lines) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "semantic_neighbors.md").write_text(text)
    own = {c: v for c, v in results.items() if not c.startswith(("z da=", "max da="))}   # (those: quality_loso.json)
    (out_dir / "semantic_neighbors.json").write_text(json.dumps({"meta": meta, "summary": summary,
                                                                 "per_query": own}))
    return text


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from-dir", default="/tmp/fuse20/idx", help="the evaluation indexes to copy (not changed)")
    ap.add_argument("--work", default="/tmp/sem21", help="where the variants' copies and the runs go")
    ap.add_argument("--only", default=None, help="comma-separated variant names")
    ap.add_argument("--profiles-from", default=str(RESULTS / "quality_loso.json"),
                    help="bench/quality.py --loso's JSON: its profile grid joins the pool when its current equals ours")
    ap.add_argument("--report-from", default=None, help="a saved runs JSON: tables only")
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args(argv)
    work = Path(args.work)
    runs_file = work / "runs.json"
    if args.report_from:
        results = json.loads(Path(args.report_from).read_text())
    else:
        work.mkdir(parents=True, exist_ok=True)
        results = json.loads(runs_file.read_text()) if runs_file.exists() else {}
        if "current" not in results:
            t0 = time.perf_counter()
            base = score(copy_today(Path(args.from_dir), work), grid=True)
            results.update({c if c in ("bm25", "dense", "current") else f"lex | {c}": v for c, v in base.items()})
            print(f"today's lists: {time.perf_counter() - t0:.0f} s", flush=True)
            runs_file.write_text(json.dumps(results))
        for name in (args.only.split(",") if args.only else VARIANTS):
            if f"{name} | current" in results:
                continue
            t0 = time.perf_counter()
            d = make_variant(name, Path(args.from_dir), work)
            got = score(d, grid=True)
            for s in SETS:       # the first stage does not read the lists: BM25 and dense equal today's
                assert got["bm25"][s] == results["bm25"][s] and got["dense"][s] == results["dense"][s], (name, s)
            results.update({f"{name} | {c}": v for c, v in got.items() if c not in ("bm25", "dense")})
            print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
            runs_file.write_text(json.dumps(results))
    prof = Path(args.profiles_from)
    if prof.exists():
        pq = json.loads(prof.read_text()).get("per_query", {})
        if pq.get("current") == results["current"] and pq.get("bm25") == results["bm25"]:
            results.update({c: v for c, v in pq.items() if c.startswith(("z da=", "max da="))})
        else:
            print(f"{prof}: its current or BM25 differ from this run's; its profile grid left out", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d"), "grid": GRID, "variants": VARIANTS, "from": args.from_dir}
    print(report(results, Path(args.out_dir), meta))


if __name__ == "__main__":
    main()
