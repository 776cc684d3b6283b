#!/usr/bin/env python3
"""Embedding benchmark: kgsearch's numpy encoder vs model2vec, int8 top-k, dense nDCG@10.

In one run:

1. encode throughput on 10,000 texts of 500 characters (title + text of the BEIR corpora in
   ../shared/bench, cut at 500 characters), kgsearch vs model2vec single-threaded
   (``use_multiprocessing=False``, ``RAYON_NUM_THREADS=1``, one BLAS thread for both); each run
   is a fresh subprocess so peak RSS (``ru_maxrss``) is per encoder; the runs alternate. The
   first encode in a process is the headline (kgsearch's per-word memo starts empty), the
   second is reported as "warm". Model load time is measured in the same subprocesses. Wall
   and CPU time are both recorded, the speed-up is the median of per-run ratios, and the
   1-minute load average is sampled before each run (the machine may be shared).
2. int8 top-10 over 100,000 x 256 vectors of real texts (WN18RR definitions, FB15k-237 names,
   BEIR documents and their sentences) stored through ``kgsearch.embed.store`` in a temp
   index: p50 per query (cached int8 matrix, one BLAS thread) and recall@10 against float32
   brute force over the unquantised vectors, with the float32 matmul p50 for comparison; also
   the streamed path (no cache) and a query-process RSS check (model + index + 200 queries).
3. embedding the Python standard library's code index (``kgsearch index`` without derived
   steps, then one full embed step): time and vector size.
4. dense-only nDCG@10 (gains 2^rel - 1) with the shipped model on SciFact, NFCorpus,
   Cranfield and CoSQA via ``kgsearch eval DIR --channels dense`` (falls back to a direct
   computation if the eval command is not available).

Writes bench/results/embed.json and bench/results/embed.md. ``--quick`` for a short run
(``--texts``/``--vectors``/``--queries`` set the sizes freely: the smoke test runs tiny ones);
a data file missing from ../shared/bench is left out.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED, loadavg, machine as _machine, peak_rss_mib  # noqa: E402
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "RAYON_NUM_THREADS": "1", "RAYON_RS_NUM_CPUS": "1", "TOKENIZERS_PARALLELISM": "false"}
SETS = ("scifact", "nfcorpus", "cranfield", "cosqa")


# ---------------------------------------------------------------------------- data
def encode_texts(n: int = 10_000, size: int = 500) -> list[str]:
    texts: list[str] = []
    for name in ("scifact", "nfcorpus", "cacm", "cisi", "med", "cranfield", "cosqa"):
        p = SHARED / name / "corpus.jsonl"
        if not p.exists():
            continue
        with open(p, encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                t = (d.get("title", "") + ". " + d.get("text", "")).strip()
                if len(t) >= size:
                    texts.append(t[:size])
                    if len(texts) == n:
                        return texts
    # not enough long documents: concatenate short ones
    pool = []
    for name in ("cosqa", "cranfield", "scifact"):
        if (SHARED / name / "corpus.jsonl").exists():
            with open(SHARED / name / "corpus.jsonl", encoding="utf-8") as fh:
                pool += [(json.loads(x).get("title", "") + ". " + json.loads(x)["text"]) for x in fh]
    buf = ""
    for t in pool:
        buf += " " + t
        while len(buf) >= size and len(texts) < n:
            texts.append(buf[:size].strip())
            buf = buf[size:]
    return texts[:n]


def vector_texts(n: int = 100_000) -> list[str]:
    texts: list[str] = []
    if (SHARED / "kg" / "wn18rr" / "entity2text.txt").exists():
        with open(SHARED / "kg" / "wn18rr" / "entity2text.txt", encoding="utf-8") as fh:
            texts += [" ".join(line.rstrip("\n").split("\t")[1:]) for line in fh]
    if (SHARED / "kg" / "fb15k237" / "entity_names.tsv").exists():
        with open(SHARED / "kg" / "fb15k237" / "entity_names.tsv", encoding="utf-8") as fh:
            texts += [line.rstrip("\n").split("\t")[-1] for line in fh]
    docs = []
    for name in ("scifact", "nfcorpus", "cosqa", "cranfield", "cisi", "med", "cacm"):
        if not (SHARED / name / "corpus.jsonl").exists():
            continue
        with open(SHARED / name / "corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                docs.append((d.get("title", "") + " " + d["text"]).strip())
    texts += docs
    for d in docs:
        if len(texts) >= n:
            break
        texts += [s for s in re.split(r"(?<=[.!?])\s+", d) if len(s) > 30][:6]
    return texts[:n]


def query_texts(n: int = 1000) -> list[str]:
    out = []
    for name in SETS:
        if not (SHARED / name / "queries.jsonl").exists():
            continue
        with open(SHARED / name / "queries.jsonl", encoding="utf-8") as fh:
            out += [json.loads(line)["text"] for line in fh]
    step = max(1, len(out) // n)
    return out[::step][:n]


# ---------------------------------------------------------------------------- workers
def _loadavg() -> float | None:
    """1-minute load average (other jobs on the machine), or None where unavailable."""
    return (loadavg() or [None])[0]


def _maxrss_mb() -> float:
    """Peak RSS of this process image (VmHWM: exec resets it, ru_maxrss would carry the
    parent's)."""
    return peak_rss_mib()


def worker_encode(which: str, model_path: str, texts_path: str) -> dict:
    texts = json.loads(Path(texts_path).read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    if which == "kgsearch":
        from kgsearch.embed import load_model
        t_imp = time.perf_counter() - t0
        t1 = time.perf_counter()
        m = load_model(model_path)
        load = time.perf_counter() - t1

        def enc(x):
            return m.encode(x)
    else:
        from model2vec import StaticModel
        t_imp = time.perf_counter() - t0
        t1 = time.perf_counter()
        m = StaticModel.from_pretrained(model_path)
        load = time.perf_counter() - t1

        def enc(x):
            return m.encode(x, use_multiprocessing=False)
    rss_loaded = _maxrss_mb()
    t1, c1 = time.perf_counter(), time.process_time()
    v = enc(texts)
    cold, cold_cpu = time.perf_counter() - t1, time.process_time() - c1
    rss_peak = _maxrss_mb()
    t1, c1 = time.perf_counter(), time.process_time()
    enc(texts)
    warm, warm_cpu = time.perf_counter() - t1, time.process_time() - c1
    import hashlib
    return {"which": which, "import_s": t_imp, "load_s": load, "cold_s": cold, "warm_s": warm,
            "cold_cpu_s": cold_cpu, "warm_cpu_s": warm_cpu,
            "rss_after_load_mb": rss_loaded, "rss_peak_mb": rss_peak, "n": len(texts),
            "sha256": hashlib.sha256(v.astype("float32").tobytes()).hexdigest()}


def worker_query(db: str, model_path: str, queries_path: str) -> dict:
    """A query process: open the index, embed each query, dense top-10; RSS at the end."""
    import numpy as np

    from kgsearch.embed import dense
    from kgsearch.store.db import Index

    from kgsearch import environment

    environment.configure(environment.Environment(model=model_path))     # (the library reads no variable)
    queries = json.loads(Path(queries_path).read_text(encoding="utf-8"))
    ix = Index.open(db, readonly=True)
    t0 = time.perf_counter()
    first = dense.search(ix, queries[0], k=10)
    first_s = time.perf_counter() - t0
    times = []
    for q in queries[1:]:
        t = time.perf_counter()
        dense.search(ix, q, k=10)
        times.append(time.perf_counter() - t)
    ix.close()
    return {"first_query_s": first_s, "p50_ms": float(np.median(times)) * 1000,
            "p95_ms": float(np.percentile(times, 95)) * 1000, "queries": len(times),
            "rss_peak_mb": _maxrss_mb(), "ok": not isinstance(first, str)}


def run_worker(args: list[str], extra_env: dict | None = None) -> dict:
    env = {**os.environ, **ONE_THREAD, **(extra_env or {})}
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"worker {args[:2]} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- parts
def bench_encode(model_path: Path, runs: int, n: int, tmp: Path) -> dict:
    texts = encode_texts(n)
    tp = tmp / "texts.json"
    tp.write_text(json.dumps(texts), encoding="utf-8")
    rows = {"kgsearch": [], "model2vec": []}
    have_m2v = True
    try:
        import model2vec  # noqa: F401
    except ImportError:
        have_m2v = False
    loads = []
    for r in range(runs):
        loads.append(_loadavg())
        rows["kgsearch"].append(run_worker(["--worker", "encode", "kgsearch", str(model_path), str(tp)]))
        if have_m2v:
            rows["model2vec"].append(run_worker(["--worker", "encode", "model2vec", str(model_path), str(tp)]))
        print(f"  encode run {r + 1}/{runs}: kgsearch {rows['kgsearch'][-1]['cold_s']:.2f}s"
              + (f", model2vec {rows['model2vec'][-1]['cold_s']:.2f}s" if have_m2v else ""), flush=True)
    med = {k: {f: statistics.median(x[f] for x in v) for f in
               ("import_s", "load_s", "cold_s", "warm_s", "cold_cpu_s", "warm_cpu_s", "rss_after_load_mb",
                "rss_peak_mb")}
           for k, v in rows.items() if v}
    res = {"texts": len(texts), "chars_each": 500, "runs": runs, "median": med, "raw": rows,
           "loadavg_before_runs": loads}
    if have_m2v:
        pairs = list(zip(rows["kgsearch"], rows["model2vec"]))
        res["speedup_cold_median"] = statistics.median(m["cold_s"] / k["cold_s"] for k, m in pairs)
        res["speedup_cold_runs"] = [m["cold_s"] / k["cold_s"] for k, m in pairs]
        res["speedup_cold_cpu_median"] = statistics.median(m["cold_cpu_s"] / k["cold_cpu_s"] for k, m in pairs)
        res["speedup_cold_cpu_runs"] = [m["cold_cpu_s"] / k["cold_cpu_s"] for k, m in pairs]
        res["speedup_warm_median"] = statistics.median(m["warm_s"] / k["warm_s"] for k, m in pairs)
        res["speedup_warm_cpu_median"] = statistics.median(m["warm_cpu_s"] / k["warm_cpu_s"] for k, m in pairs)
        res["identical_vectors"] = all(k["sha256"] == m["sha256"] for k, m in zip(rows["kgsearch"], rows["model2vec"]))
        res["texts_per_s_kgsearch"] = len(texts) / med["kgsearch"]["cold_s"]
        res["texts_per_s_model2vec"] = len(texts) / med["model2vec"]["cold_s"]
    return res


def bench_topk(model_path: Path, n: int, n_queries: int, tmp: Path) -> dict:
    import numpy as np

    from kgsearch.embed import dense, load_model, store
    from kgsearch.embed.embed_step import ensure_rotation
    from kgsearch.store.db import Index

    model = load_model(model_path)
    texts = vector_texts(n)
    t0 = time.perf_counter()
    X = model.encode(texts)
    embed_s = time.perf_counter() - t0
    qtexts = query_texts(n_queries)
    Q = model.encode(qtexts)
    db = tmp / "vec.db"
    ix = Index.open(db)
    ids = np.arange(1, len(X) + 1, dtype=np.int64)
    with ix.transaction():
        ix.set_meta("generation", 1)
        ix.set_meta("last_run_time", time.time())       # (a built index: readers refuse one no run finished)
        ensure_rotation(ix, model.dims, reset=True)
        for s in range(0, len(X), 8192):
            store.put_vectors(ix, ids[s:s + 8192], np.zeros(min(8192, len(X) - s)), X[s:s + 8192], model.model_id, 1)
        ix.set_meta("model_id", model.model_id)
        ix.set_meta("model_dims", model.dims)
        ix.set_meta("model", str(Path(model_path).resolve()))
    ix.checkpoint()
    db_mb = ix.size_bytes() / 1e6

    def brute(q):
        s = X @ q
        top = np.argpartition(-s, 10)[:10]
        return set((top + 1).tolist())

    dense.search_vector(ix, Q[0], 10)            # build the per-generation cache
    mat = dense.load_matrix(ix, model.model_id)   # (what that cache holds)
    cache_mb = (mat.codes.nbytes + mat.ids.nbytes + mat.scales.nbytes) / 1e6 if mat else 0.0
    del mat
    lat, cpu, rec = [], [], []
    for q in Q:
        t, c = time.perf_counter(), time.process_time()
        got, _ = dense.search_vector(ix, q, 10)
        lat.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        rec.append(len(set(got.tolist()) & brute(q)) / 10)
    f32, f32cpu = [], []
    for q in Q[:300]:
        t, c = time.perf_counter(), time.process_time()
        s = X @ q
        top = np.argpartition(-s, 10)[:10]
        top[np.argsort(-s[top])]
        f32.append(time.perf_counter() - t)
        f32cpu.append(time.process_time() - c)
    from kgsearch import environment

    before = environment.configure(environment.Environment(vec_cache_mb="0"))
    ix.close()
    ix = Index.open(db, readonly=True)            # (a fresh process's caches: nothing held)
    streamed = []
    for q in Q[:30]:
        t = time.perf_counter()
        dense.search_vector(ix, q, 10)
        streamed.append(time.perf_counter() - t)
    environment.configure(before)
    ix.close()
    qp = tmp / "queries.json"
    qp.write_text(json.dumps(qtexts[:201]), encoding="utf-8")
    proc = run_worker(["--worker", "query", str(db), str(model_path), str(qp)])
    return {"vectors": int(len(X)), "dims": int(X.shape[1]), "queries": len(Q), "embed_100k_s": embed_s,
            "int8_p50_ms": float(np.median(lat)) * 1000, "int8_p95_ms": float(np.percentile(lat, 95)) * 1000,
            "int8_cpu_p50_ms": float(np.median(cpu)) * 1000, "float32_cpu_p50_ms": float(np.median(f32cpu)) * 1000,
            "recall_at_10_vs_float32": float(np.mean(rec)), "float32_matmul_p50_ms": float(np.median(f32)) * 1000,
            "streamed_p50_ms": float(np.median(streamed)) * 1000, "cache_mb": cache_mb, "index_mb": db_mb,
            "query_process": proc}


def bench_stdlib(model_path: Path, tmp: Path) -> dict:
    """Embed the Python standard library's code index (built without derived steps first)."""
    import sysconfig

    from kgsearch.embed import embed_step as embed_index
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index
    from kgsearch.types import ChangeSet

    stdlib = sysconfig.get_paths()["stdlib"]
    db = tmp / "stdlib.db"
    t0 = time.perf_counter()
    index_paths(db, [stdlib], IndexOptions(steps=(), keep_going=True))
    build_s = time.perf_counter() - t0
    ix = Index.open(db)
    nodes = ix.node_count()
    try:        # node texts may be stored compressed, read through kgtext()
        chars = ix.conn.execute("SELECT sum(min(length(name) + 1 + length(kgtext(text)), 2000)) FROM nodes").fetchone()[0]
    except sqlite3.OperationalError:
        chars = ix.conn.execute("SELECT sum(min(length(name) + 1 + length(text), 2000)) FROM nodes").fetchone()[0]
    with ix.transaction():
        gen = ix.generation + 1
        ix.set_meta("generation", gen)
        ix.set_meta("last_run_time", time.time())
        t0, c0 = time.perf_counter(), time.process_time()
        info = embed_index.update(ix, ChangeSet(generation=gen, full=True), {"model": str(model_path)})
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    row = ix.conn.execute("SELECT count(*), sum(n), sum(length(ids) + length(hashes) + length(scales) + length(data)) "
                          "FROM vec_blocks").fetchone()
    ix.close()
    return {"stdlib": stdlib, "nodes": nodes, "embedded": info.get("embedded"), "chars_embedded": chars,
            "index_build_s_without_embed": round(build_s, 1), "embed_s": round(secs, 2), "embed_cpu_s": round(cpu, 2),
            "nodes_per_s": round(info.get("embedded", 0) / secs, 1) if secs else None,
            "vector_blocks": row[0], "vectors": row[1], "vector_bytes_mb": round((row[2] or 0) / 1e6, 2)}


def ndcg10(ranked: list[str], rel: dict[str, int]) -> float:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum((2 ** r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def direct_ndcg(model_path: Path, name: str) -> float:
    import numpy as np

    from kgsearch.embed import load_model

    m = load_model(model_path)
    docs = [json.loads(x) for x in open(SHARED / name / "corpus.jsonl", encoding="utf-8")]
    qs = {json.loads(x)["_id"]: json.loads(x)["text"] for x in open(SHARED / name / "queries.jsonl", encoding="utf-8")}
    qrels: dict[str, dict[str, int]] = {}
    with open(SHARED / name / "qrels.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            q, c, r = line.rstrip("\n").split("\t")
            qrels.setdefault(q, {})[c] = int(r)
    D = m.encode([(d.get("title", "") + "\n" + d["text"]).strip()[:2000] for d in docs])
    qids = [q for q in qrels if q in qs]
    S = m.encode([qs[q] for q in qids]) @ D.T
    return float(np.mean([ndcg10([docs[j]["_id"] for j in np.argsort(-S[i], kind="stable")[:10]], qrels[q])
                          for i, q in enumerate(qids)]))


def bench_ndcg(model_path: Path, tmp: Path) -> dict:
    out = {}
    for name in SETS:
        folder = SHARED / name
        if not (folder / "corpus.jsonl").exists():
            continue
        env = {**os.environ, "KGSEARCH_MODEL": str(model_path)}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "kgsearch", "eval", str(folder), "--channels", "dense",
                               "--json", "-q", "--index-dir", str(tmp / "eval")],
                              capture_output=True, text=True, env=env, cwd=str(ROOT))
        secs = time.perf_counter() - t0
        try:
            res = json.loads(proc.stdout)
            out[name] = {"ndcg@10": res["metrics"]["ndcg@10"], "recall@100": res["metrics"].get("recall@100"),
                         "queries": res.get("queries"), "via": "kgsearch eval --channels dense",
                         "index_s": res.get("index_seconds"), "seconds": round(secs, 1)}
        except (ValueError, KeyError):
            out[name] = {"ndcg@10": round(direct_ndcg(model_path, name), 4), "via": "direct (float32 brute force)",
                         "eval_error": (proc.stderr or "")[-300:]}
        print(f"  {name}: nDCG@10 {out[name]['ndcg@10']} ({out[name]['via']})", flush=True)
    out["mean"] = round(statistics.mean(v["ndcg@10"] for v in out.values()), 4)
    return out


# ---------------------------------------------------------------------------- report
def machine() -> dict:
    m = _machine()
    info = {**m, "platform": m["os"], "loadavg_start": _loadavg()}
    try:
        import model2vec
        import tokenizers
        info["model2vec"] = model2vec.__version__
        info["tokenizers"] = tokenizers.__version__
    except ImportError:
        info["model2vec"] = None
    return info


def write_md(res: dict, path: Path) -> None:
    m, e, t, nd = res["machine"], res.get("encode"), res.get("topk"), res.get("ndcg")
    lines = ["# Embedding benchmark (bench/embed_bench.py)", "",
             f"Machine: {m['cpu']} ({m['cores']} cores), {m['platform']}; Python {m['python']}, numpy {m['numpy']}, "
             f"model2vec {m.get('model2vec')}, tokenizers {m.get('tokenizers')}. Load average at start "
             f"{m.get('loadavg_start')}; other jobs shared the 2 cores, so compare ratios within the run.",
             f"Model: {res['model']['id']} ({res['model']['dims']} dims, {res['model']['dtype']}).", ""]
    if e:
        k, mm = e["median"]["kgsearch"], e["median"].get("model2vec")
        lines += [f"## Encode: {e['texts']:,} texts of {e['chars_each']} characters, single-threaded, "
                  f"{e['runs']} alternating runs (fresh process each), medians", "",
                  "| | kgsearch (numpy) | model2vec |", "|---|---|---|",
                  f"| encode, first pass (s) | {k['cold_s']:.2f} | {mm['cold_s']:.2f} |" if mm else "",
                  f"| encode, first pass, CPU time (s) | {k['cold_cpu_s']:.2f} | {mm['cold_cpu_s']:.2f} |" if mm else "",
                  f"| encode, second pass (s) | {k['warm_s']:.2f} | {mm['warm_s']:.2f} |" if mm else "",
                  f"| encode, second pass, CPU time (s) | {k['warm_cpu_s']:.2f} | {mm['warm_cpu_s']:.2f} |" if mm else "",
                  f"| texts/s (first pass) | {e.get('texts_per_s_kgsearch', 0):,.0f} | {e.get('texts_per_s_model2vec', 0):,.0f} |",
                  f"| peak RSS (MB) | {k['rss_peak_mb']:.0f} | {mm['rss_peak_mb']:.0f} |" if mm else "",
                  f"| RSS after load (MB) | {k['rss_after_load_mb']:.0f} | {mm['rss_after_load_mb']:.0f} |" if mm else "",
                  f"| import (s) | {k['import_s']:.3f} | {mm['import_s']:.3f} |" if mm else "",
                  f"| model load (s) | {k['load_s']:.3f} | {mm['load_s']:.3f} |" if mm else "", ""]
        if mm:
            lines += [f"Speed-up (model2vec time / kgsearch time, median of per-run ratios): first pass "
                      f"**{e['speedup_cold_median']:.2f}x** wall (runs: {', '.join(f'{r:.2f}' for r in e['speedup_cold_runs'])}), "
                      f"**{e['speedup_cold_cpu_median']:.2f}x** CPU time (runs: "
                      f"{', '.join(f'{r:.2f}' for r in e['speedup_cold_cpu_runs'])}); second pass "
                      f"{e['speedup_warm_median']:.2f}x wall, {e['speedup_warm_cpu_median']:.2f}x CPU. "
                      f"Identical vectors in every run: {e['identical_vectors']}.", ""]
            la = [x for x in e.get("loadavg_before_runs") or [] if x is not None]
            if la:
                per_run = ", ".join(f"{k['cold_s']:.2f} / {m2['cold_s']:.2f}"
                                    for k, m2 in zip(e["raw"]["kgsearch"], e["raw"]["model2vec"]))
                lines += [f"Per run, first pass (s), kgsearch / model2vec: {per_run}. 1-minute load average "
                          f"before each run: {', '.join(f'{x:.2f}' for x in la)} (2 cores; above ~1 another "
                          f"job was running).", ""]
    if t:
        qp = t["query_process"]
        lines += [f"## Dense top-10 over {t['vectors']:,} x {t['dims']} int8 vectors ({t['queries']} queries, one BLAS thread)", "",
                  "| | value |", "|---|---|",
                  f"| int8 top-10 p50 / p95 (ms, cached) | {t['int8_p50_ms']:.2f} / {t['int8_p95_ms']:.2f} |",
                  f"| int8 top-10 p50, CPU time (ms) | {t['int8_cpu_p50_ms']:.2f} |",
                  f"| float32 matmul top-10 p50, CPU time (ms) | {t['float32_cpu_p50_ms']:.2f} |",
                  f"| recall@10 vs float32 brute force | {t['recall_at_10_vs_float32']:.4f} |",
                  f"| float32 matmul top-10 p50 (ms, 102 MB matrix) | {t['float32_matmul_p50_ms']:.2f} |",
                  f"| streamed from SQLite, no cache, p50 (ms) | {t['streamed_p50_ms']:.1f} |",
                  f"| cached int8 matrix (MB) | {t['cache_mb']:.1f} |",
                  f"| index file with the vectors (MB) | {t['index_mb']:.1f} |",
                  f"| embedding the 100K texts (s) | {t['embed_100k_s']:.1f} |",
                  f"| query process: p50 incl. query embedding (ms) | {qp['p50_ms']:.2f} |",
                  f"| query process: first query incl. model load + cache fill (s) | {qp['first_query_s']:.2f} |",
                  f"| query process: peak RSS (MB) | {qp['rss_peak_mb']:.0f} |", ""]
    sl = res.get("stdlib")
    if sl:
        lines += [f"## Embedding the standard-library code index ({sl['stdlib']})", "",
                  f"{sl['embedded']:,} of {sl['nodes']:,} nodes embedded ({(sl['chars_embedded'] or 0) / 1e6:.1f} M "
                  f"characters) in {sl['embed_s']} s wall / {sl['embed_cpu_s']} s CPU ({sl['nodes_per_s']} nodes/s, "
                  f"full run incl. int8 quantisation and SQLite writes); vectors take {sl['vector_bytes_mb']} MB in "
                  f"{sl['vector_blocks']} blocks.", ""]
    if nd:
        lines += ["## Dense-only nDCG@10 with the shipped model", "", "| set | nDCG@10 | via |", "|---|---|---|"]
        lines += [f"| {k} | {v['ndcg@10']:.4f} | {v['via']} |" for k, v in nd.items() if k != "mean"]
        lines += [f"| mean | {nd['mean']:.4f} | |", ""]
    path.write_text("\n".join(x for x in lines if x is not None) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--model", default=None, help="model folder (default: the shipped model)")
    ap.add_argument("--quick", action="store_true", help="small sizes, one run")
    ap.add_argument("--texts", type=int, default=None, help="texts to encode (default 10,000; --quick 1,000)")
    ap.add_argument("--vectors", type=int, default=None, help="vectors for top-k (default 100,000; --quick 10,000)")
    ap.add_argument("--queries", type=int, default=None, help="top-k queries (default 1,000; --quick 100)")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: encode,topk,stdlib,ndcg")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        kind, *rest = args.worker
        res = worker_encode(*rest) if kind == "encode" else worker_query(*rest)
        print(json.dumps(res))
        return 0

    for k, v in ONE_THREAD.items():       # this process too (top-k timings)
        os.environ.setdefault(k, v)
    from kgsearch.embed import load_model
    from kgsearch.embed.model import resolve_model

    model_path = resolve_model(args.model)
    if model_path is None:
        print("no model found; build it with scripts/build_default_model.py", file=sys.stderr)
        return 1
    model = load_model(model_path)
    skip = set(filter(None, args.skip.split(",")))
    res: dict = {"machine": machine(), "model": {"path": str(model_path.relative_to(ROOT)) if model_path.is_relative_to(ROOT)
                                                  else str(model_path), "id": model.model_id, "dims": model.dims,
                                                  "dtype": str(model.embedding.dtype)},
                 "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        if "encode" not in skip:
            print("encode throughput ...", flush=True)
            res["encode"] = bench_encode(model_path, 1 if args.quick else args.runs,
                                         args.texts or (1000 if args.quick else 10_000), tmp)
        if "topk" not in skip:
            print("int8 top-k ...", flush=True)
            res["topk"] = bench_topk(model_path, args.vectors or (10_000 if args.quick else 100_000),
                                     args.queries or (100 if args.quick else 1000), tmp)
        if "stdlib" not in skip:
            print("embedding the stdlib code index ...", flush=True)
            res["stdlib"] = bench_stdlib(model_path, tmp)
            print(f"  {res['stdlib']['embedded']} nodes in {res['stdlib']['embed_s']} s", flush=True)
        if "ndcg" not in skip:
            print("dense nDCG@10 ...", flush=True)
            res["ndcg"] = bench_ndcg(model_path, tmp)
    res["machine"]["loadavg_end"] = _loadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embed.json").write_text(json.dumps(res, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    write_md(res, args.out / "embed.md")
    print((args.out / "embed.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
