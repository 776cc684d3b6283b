"""Design study for issue 16 (items 1-4), on the scaling corpora (public API only).

Runs on the databases and caches ``bench/scale.py`` leaves in ``bench/work/scale`` (build
those first).

    python bench/studies/scale_study.py sketch    --size 100K [--cands 250,500,1000,2000,4000]
    python bench/studies/scale_study.py rows      --size 100K      # rescoring rows read from SQLite
    python bench/studies/scale_study.py neighbors --size 100K [--sample 2000] [--caps 32,64,128]
    python bench/studies/scale_study.py neighbors-quality [--sets scifact,nfcorpus] [--caps 32,64]
    python bench/studies/scale_study.py memprofile-reindex --size 100K   # where the one-file reindex memory goes
    python bench/studies/scale_study.py memprofile-query   --size 1M     # where the query RSS goes
    python bench/studies/scale_study.py topk                       # np.argpartition vs a threshold select

(The ``graph`` subcommand, which compared the array-only graph prototype with the rebuild of
the time, went when that prototype became the graph step's write side; its tables are in
docs/scale-study.md, section C, and bench/results/scale_study/graph-*.md.)

Each writes ``bench/results/scale_study/<name>-<size>.json`` and prints a Markdown table.
The script re-executes itself with ``MALLOC_MMAP_THRESHOLD_=131072`` (glibc: no dynamic mmap
threshold), so memory a step frees goes back to the system and per-step peaks are not hidden.
Timings: medians over the queries (or runs) stated in each table, on a 2-core machine shared
with other jobs (noisy; compare rows of one table, not across tables). Peak RSS figures come
from /proc (VmHWM / VmRSS) and are reliable.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "studies"))

import numpy as np  # noqa: E402

from scale import evict, exact_topk, label, parse_size  # noqa: E402

WORK = ROOT / "bench" / "work" / "scale"
OUT = ROOT / "bench" / "results" / "scale_study"


def status_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_hwm() -> None:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def med(xs):
    return float(statistics.median(xs)) if xs else float("nan")


def save(name: str, size: int | None, data: dict, md: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-{label(size)}" if size else name
    (OUT / f"{stem}.json").write_text(json.dumps(data, indent=1))
    (OUT / f"{stem}.md").write_text(md)
    print(md)


def db_of(size: int) -> Path:
    p = WORK / f"index-{size}.db"
    if not p.exists():
        sys.exit(f"{p}: missing; run `python bench/scale.py --sizes {label(size)}` first")
    return p


# ---------------------------------------------------------------------------- item 1: dense
def load_codes(ix):
    from kgsearch.embed import store

    parts = list(store.iter_blocks(ix))
    ids = np.concatenate([p[0] for p in parts])
    scales = np.concatenate([p[2] for p in parts])
    codes = np.concatenate([p[3] for p in parts])
    return ids, scales, codes


def queries_of(size: int, ix, rot, ids, F, n_names: int = 200, seed: int = 0):
    """Rotated unit query vectors: the corpus's 100 real queries, and ``n_names`` node names."""
    from kgsearch.embed.index_model import query_model

    cache = WORK / f"vecs-{size}.queries.npy"
    model = query_model(ix)
    if cache.exists():
        Q = np.load(cache)
    else:
        qs = [q["text"] for q in json.loads((WORK / f"corpus-{size}.queries100.json").read_text())]
        Q = np.asarray(model.encode(qs), dtype=np.float32)
        Q /= np.maximum(np.linalg.norm(Q, axis=1), 1e-30)[:, None]
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(ids, n_names, replace=False))
    names = [r[0] or "" for r in ix.conn.execute(
        f"SELECT name FROM nodes WHERE id IN ({','.join(map(str, pick.tolist()))}) ORDER BY id")]
    N = np.asarray(model.encode(names), dtype=np.float32)
    N /= np.maximum(np.linalg.norm(N, axis=1), 1e-30)[:, None]
    return {"real100": Q, f"names{n_names}": N}


def cmd_sketch(args) -> None:
    from kgsearch.embed import kernel as sketch, store
    from kgsearch.store.db import Index

    size = args.size
    ix = Index.open(db_of(size), readonly=True)
    rot = store.rotation(ix)
    ids, scales, codes = load_codes(ix)
    F = np.load(WORK / f"vecs-{size}.f32.npy", mmap_mode="r")
    fids = np.load(WORK / f"vecs-{size}.ids.npy")
    assert np.array_equal(fids, ids), "float cache and stored vectors differ; rerun bench/scale.py --redo dense"
    qsets = queries_of(size, ix, rot, ids, F)
    t = time.perf_counter()
    sk = sketch.sketch_codes(codes)
    build_s = time.perf_counter() - t
    sk128 = sk[:2]                                   # the first 128 rotated dims
    cands = [int(c) for c in args.cands.split(",")]
    modes = [(m, int(b), None if p == "-" else int(p)) for m, b, p in (x.split(":") for x in args.modes.split(","))]
    rows = []
    out = {"size": size, "vectors": len(ids), "sketch_mb": round(sk.nbytes / 2**20, 1),
           "sketch_build_s": round(build_s, 2), "results": []}
    for qname, Qf in qsets.items():
        ex_i, _ = exact_topk(F, Qf, 10)
        exact = [set(ids[r].tolist()) for r in ex_i]
        QR = (Qf @ rot.T).astype(np.float32)             # rotated queries (rot @ q for each q)
        # the current int8 full scan, for reference (recall and time)
        full_sets, full_t = [], []
        for qr in QR:
            t = time.perf_counter()
            s = sketch.scan_scores(codes, scales, qr)
            fi, _ = sketch.topk(s, ids, 10)
            full_t.append((time.perf_counter() - t) * 1000)
            full_sets.append(set(fi.tolist()))
        rec_full = np.mean([len(a & b) / 10 for a, b in zip(full_sets, exact)])
        rows.append((qname, "int8 full scan (current)", "-", f"{rec_full:.4f}", "1.0000", f"{med(full_t):.1f}", "-", "-"))
        out["results"].append({"queries": qname, "mode": "int8_full_scan", "recall_vs_float": rec_full,
                               "scan_ms_p50": med(full_t)})
        for mode, bits, planes in modes:
            S = sk if bits == 256 else sk128
            pass_t, sel_t, per_q_pos = [], [], []
            for qr in QR:
                t = time.perf_counter()
                if mode == "cascade":
                    sc = None
                elif mode == "hamming":
                    sc = sketch.hamming(S, sketch.sketch_query(qr)[:S.shape[0]])
                else:
                    qp = sketch.query_planes(qr[:bits], planes)
                    sc = sketch.asym_scores(S, qp)
                t1 = time.perf_counter()
                per_q_pos.append((sc, None))
                pass_t.append((t1 - t) * 1000)
            for nc in cands:
                rec_f, rec_i, resc_t = [], [], []
                for qi, (qr, (sc, _)) in enumerate(zip(QR, per_q_pos)):
                    t = time.perf_counter()
                    if mode == "cascade":
                        pos = sketch.candidates(sk, qr, nc, "cascade", n_first=planes, first_words=bits // 64)
                    else:
                        pos = sketch.select_best(sc, nc, higher=(mode != "hamming"))
                    t1 = time.perf_counter()
                    got, _ = sketch.topk(sketch.scan_scores(codes[pos], scales[pos], qr), ids[pos], 10)
                    t2 = time.perf_counter()
                    sel_t.append((t1 - t) * 1000)
                    resc_t.append((t2 - t1) * 1000)
                    g = set(got.tolist())
                    rec_f.append(len(g & exact[qi]) / 10)
                    rec_i.append(len(g & full_sets[qi]) / 10)
                name = (f"cascade: hamming {bits}b keeps {planes}, asym q4" if mode == "cascade"
                        else f"{mode} {bits}b" + (f" q{planes}" if planes else ""))
                rows.append((qname, name, nc, f"{np.mean(rec_f):.4f}", f"{np.mean(rec_i):.4f}",
                             f"{med(pass_t):.1f}", f"{med(sel_t):.2f}", f"{med(resc_t):.2f}"))
                out["results"].append({"queries": qname, "mode": mode, "bits": bits, "planes": planes,
                                       "n_cand": nc, "recall_vs_float": float(np.mean(rec_f)),
                                       "recall_min": float(np.min(rec_f)),
                                       "recall_vs_int8": float(np.mean(rec_i)), "pass_ms_p50": med(pass_t),
                                       "select_ms_p50": med(sel_t), "rescore_ms_p50": med(resc_t)})
    # popcount paths
    qr = QR[0]
    qp = sketch.query_planes(qr, 4)
    tt = {}
    for name, fn in (("bitwise_count", lambda: sketch.asym_scores(sk, qp, use_lut=False)),
                     ("lut16", lambda: sketch.asym_scores(sk, qp, use_lut=True)),
                     ("hamming bitwise_count", lambda: sketch.hamming(sk, sketch.sketch_query(qr), use_lut=False)),
                     ("hamming lut16", lambda: sketch.hamming(sk, sketch.sketch_query(qr), use_lut=True))):
        ts = []
        for _ in range(7):
            t = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t) * 1000)
        tt[name] = med(ts)
    out["popcount_ms"] = tt
    md = [f"### Dense first pass with 1-bit sketches, {label(size)} nodes ({len(ids):,} vectors)", "",
          f"Sketch: {out['sketch_mb']} MiB in memory (256 bits/vector), built in {build_s:.2f} s from the "
          f"int8 codes. Recall@10 against exact float32 cosine (vs float) and against the current int8 "
          f"full scan (vs int8); times are per-query medians in ms: first pass over every sketch, cut "
          f"selection (cascade: both passes, the Hamming one over every sketch), exact int8 rescoring of the short list (codes already in memory here; reading "
          f"them from SQLite is measured by `rows`). Queries: the corpus's 100 real queries "
          f"(real100) and 200 random node names (names200).", "",
          "| queries | first pass | candidates | recall@10 vs float | vs int8 | pass ms | select ms | rescore ms |",
          "|---|---|---|---|---|---|---|---|"]
    md += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    md += ["", "Popcount kernels, one query, ms (median of 7): " +
           ", ".join(f"{k} {v:.1f}" for k, v in tt.items())]
    save("sketch", size, out, "\n".join(md) + "\n")


def cmd_sketch_time(args) -> None:
    """CPU and wall time of the candidate stage alone on the size's real sketches (the machine is
    shared: CPU time is the fairer figure), for the configurations the design recommends."""
    from kgsearch.embed import kernel as sketch, store
    from kgsearch.store.db import Index

    size = args.size
    ix = Index.open(db_of(size), readonly=True)
    rot = store.rotation(ix)
    ids, scales, codes = load_codes(ix)
    sk = sketch.sketch_codes(codes)
    del codes
    Q = np.load(WORK / f"vecs-{size}.queries.npy")
    QR = (Q @ rot.T).astype(np.float32)
    confs = {"hamming pass only (256 bits)": lambda qr: sketch.hamming(sk, sketch.sketch_query(qr)),
             "hamming 256b -> 1000": lambda qr: sketch.candidates(sk, qr, 1000, "hamming"),
             "cascade 256b keeps 4000 -> asym -> 1000": lambda qr: sketch.candidates(sk, qr, 1000, n_first=4000),
             "cascade 256b keeps 8000 -> asym -> 1000": lambda qr: sketch.candidates(sk, qr, 1000, n_first=8000),
             "cascade 128b keeps 16000 -> asym -> 1000": lambda qr: sketch.candidates(sk, qr, 1000, n_first=16000,
                                                                                   first_words=2),
             "int8 full scan (current, codes in memory)": None}
    out = {"size": size, "queries": len(QR), "rows": []}
    for name, fn in confs.items():
        if fn is None:
            _, _, codes = load_codes(ix)

            def fn(qr, codes=codes):
                return sketch.topk(sketch.scan_scores(codes, scales, qr), ids, 10)
        cpu, wall = [], []
        for qr in QR:
            c0, w0 = time.process_time(), time.perf_counter()
            fn(qr)
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
        out["rows"].append({"what": name, "cpu_ms_p50": med(cpu), "cpu_ms_min": min(cpu), "wall_ms_p50": med(wall)})
    md = [f"### Dense candidate stage alone at {label(size)}: time per query ({len(QR)} real queries)", "",
          f"Sketches in memory ({sk.nbytes / 2**20:.1f} MiB). CPU time of this process (the machine is shared; "
          f"the wall p50 is what a busy machine gave), load average {os.getloadavg()[0]:.1f}.", "",
          "| stage | CPU ms p50 | CPU ms min | wall ms p50 |", "|---|---|---|---|"]
    md += [f"| {r['what']} | {r['cpu_ms_p50']:.1f} | {r['cpu_ms_min']:.1f} | {r['wall_ms_p50']:.1f} |" for r in out["rows"]]
    save("sketch-time", size, out, "\n".join(md) + "\n")


def cmd_rows(args) -> None:
    """Per-row int8 table in a scratch SQLite file: cost of reading N candidate rows."""
    import sqlite3

    from kgsearch.store.db import Index

    size = args.size
    ix = Index.open(db_of(size), readonly=True)
    ids, scales, codes = load_codes(ix)
    ix.close()
    scratch = WORK / f"rows-{size}.db"
    if not scratch.exists():
        con = sqlite3.connect(scratch)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE vec_rows(id INTEGER PRIMARY KEY, scale REAL, code BLOB)")
        con.executemany("INSERT INTO vec_rows VALUES (?,?,?)",
                        ((int(i), float(s), c.tobytes()) for i, s, c in zip(ids, scales, codes)))
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
    rng = np.random.default_rng(1)
    out = {"size": size, "file_mb": round(scratch.stat().st_size / 1e6, 1), "results": []}
    md = [f"### Reading N int8 rows by id from a per-row table, {label(size)} vectors", "",
          f"Table `vec_rows(id INTEGER PRIMARY KEY, scale REAL, code BLOB)`, {out['file_mb']} MB "
          f"(vs the block table's int8 data {codes.nbytes / 1e6:.0f} MB). Random ids, sorted; median of 20 "
          f"draws with the file in the page cache (warm) / 5 draws after evicting it (cold).", "",
          "| N rows | IN (?,...) warm ms | json_each warm ms | IN (...) cold ms |", "|---|---|---|---|"]
    for n in (100, 500, 1000, 2000, 4000):
        with open(scratch, "rb") as fh:                 # warm = the whole file in the page cache
            while fh.read(1 << 24):
                pass
        con = sqlite3.connect(f"file:{scratch}?mode=ro", uri=True)
        res = {}
        for how in ("in", "json"):
            ts = []
            for _ in range(20):
                pick = np.sort(rng.choice(ids, n, replace=False)).tolist()
                t = time.perf_counter()
                if how == "in":
                    rows = con.execute(f"SELECT id, scale, code FROM vec_rows WHERE id IN ({','.join('?' * n)})",
                                       pick).fetchall()
                else:
                    rows = con.execute("SELECT id, scale, code FROM vec_rows WHERE id IN "
                                       "(SELECT value FROM json_each(?))", (json.dumps(pick),)).fetchall()
                np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int8).reshape(len(rows), -1)
                ts.append((time.perf_counter() - t) * 1000)
            res[how] = med(ts)
        con.close()
        cold = []
        for _ in range(5):
            evict([scratch])
            con = sqlite3.connect(f"file:{scratch}?mode=ro", uri=True)
            pick = np.sort(rng.choice(ids, n, replace=False)).tolist()
            t = time.perf_counter()
            rows = con.execute(f"SELECT id, scale, code FROM vec_rows WHERE id IN ({','.join('?' * n)})",
                               pick).fetchall()
            cold.append((time.perf_counter() - t) * 1000)
            con.close()
        res["cold"] = med(cold)
        out["results"].append({"n": n, **res})
        md.append(f"| {n} | {res['in']:.2f} | {res['json']:.2f} | {res['cold']:.1f} |")
    save("rows", size, out, "\n".join(md) + "\n")


# ---------------------------------------------------------------------------- item 3: neighbours
def _prose(ix):
    from kgsearch.text.neighbors.common import prose_ids

    return prose_ids(ix.conn)


def cmd_neighbors(args) -> None:
    import neighbors_capped as nc

    from kgsearch.store.db import Index
    from kgsearch.text.neighbors import approx, exact
    from kgsearch.text.postings import stored_params

    size = args.size
    ix = Index.open(db_of(size), readonly=True)
    st, params = stored_params(ix)
    n = int(st["n"])
    prose = _prose(ix)
    rng = np.random.default_rng(3)
    sample = np.sort(rng.choice(prose, min(args.sample, len(prose)), replace=False)).tolist()
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    texts = {}
    for s in range(0, len(sample), 500):
        part = sample[s:s + 500]
        for nid, name, text in ix.conn.execute(
                f"SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({','.join('?' * len(part))})", part):
            texts[nid] = an(name or "") * nw + an(text or "")
    allowed = np.zeros(max(prose) + 1, dtype=np.float64)
    allowed[prose] = 1.0
    out = {"size": size, "prose": len(prose), "sample": len(sample), "max_df": max(50, int(0.05 * n)), "rows": []}
    gc.collect()
    rss0 = status_kb("VmRSS")
    reset_hwm()
    t = time.perf_counter()
    shipped = exact.Postings(ix, n)
    build = time.perf_counter() - t
    hwm = status_kb("VmHWM")
    postings = sum(len(v[0]) for v in shipped.lists.values())
    t = time.process_time()              # CPU time: the machine is shared, wall time is not ours
    ref = {nid: exact.neighbours(texts[nid], nid, shipped, allowed) for nid in sample}
    per = (time.process_time() - t) / len(sample)
    out["rows"].append({"variant": "shipped (whole lists)", "build_s": build, "per_node_ms": per * 1000,
                        "postings": postings, "terms": len(shipped.lists), "mem_mb": (hwm - rss0) / 1024,
                        "est_step_s": build + per * len(prose)})
    del shipped
    gc.collect()
    for spec in args.caps.split(","):
        two = spec.startswith("ts")
        dfcap = spec.startswith("df")
        spec, _, top = spec.partition("r")
        top = int(top) if top else None
        cap = int(spec[2:] if (two or dfcap) else spec)
        gc.collect()
        rss0 = status_kb("VmRSS")
        reset_hwm()
        t = time.perf_counter()
        if dfcap:                       # whole lists, df window 2..min(5% N, cap)
            post = approx.CandidatePostings(ix, n, cap=2**62, max_df=min(max(50, int(0.05 * n)), cap))
        else:
            post = approx.CandidatePostings(ix, n, cap=cap)
        build = time.perf_counter() - t
        hwm = status_kb("VmHWM")
        def kernel(terms, nid, post, allowed, two=two, top=top, whole=dfcap):
            if two:
                return nc.neighbours_two_stage_top(terms, nid, post, allowed, rescore_top=top)
            return nc.neighbours(terms, nid, post, allowed, whole=whole)
        t = time.process_time()
        got = {nid: kernel(texts[nid], nid, post, allowed) for nid in sample}
        per = (time.process_time() - t) / len(sample)
        rec, wrec, jac = [], [], []
        for nid in sample:
            a = {x for x, _ in ref[nid]}
            b = {x for x, _ in got[nid]}
            if a:
                rec.append(len(a & b) / len(a))
                wa = dict(ref[nid])
                wrec.append(sum(wa[x] for x in a & b) / sum(wa.values()))
            if a or b:
                jac.append(len(a & b) / len(a | b))
        out["rows"].append({"variant": (f"df window 2..{cap}, whole lists" if dfcap else
                                        f"{'two-stage, candidates ' if two else ''}cap {cap}"
                                        + (f", exact for the best {top}" if top else "")), "build_s": build, "per_node_ms": per * 1000,
                            "postings": int(len(post.ids) if dfcap
                                            else len(post.cand_ids) + (len(post.ids) if two else 0)),
                            "terms": len(post.term_index),
                            "mem_mb": (hwm - rss0) / 1024, "est_step_s": build + per * len(prose),
                            "recall_of_shipped": float(np.mean(rec)), "weighted_recall": float(np.mean(wrec)),
                            "jaccard": float(np.mean(jac)),
                            "edges_per_node": float(np.mean([len(v) for v in got.values()])),
                            "edges_per_node_shipped": float(np.mean([len(v) for v in ref.values()]))})
        del post
    md = [f"### Text neighbours: shipped vs per-term caps, {label(size)} nodes ({len(prose):,} prose, "
          f"df window 2..{out['max_df']})", "",
          f"On {len(sample)} random prose nodes: per-node CPU time (process time: the machine is shared), postings held, memory growth while building "
          f"the lists (VmHWM - RSS before), the whole step estimated as build + per-node x prose nodes, and "
          f"how much of the shipped neighbour list each variant finds (recall, weighted by edge weight; "
          f"Jaccard).", "",
          "| variant | postings held | lists memory MiB | build s | per node CPU ms | est. step s | recall | weighted | Jaccard |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in out["rows"]:
        md.append(f"| {r['variant']} | {r['postings']:,} | {r['mem_mb']:.0f} | {r['build_s']:.1f} | "
                  f"{r['per_node_ms']:.2f} | {r['est_step_s']:.0f} | {r.get('recall_of_shipped', 1):.3f} | "
                  f"{r.get('weighted_recall', 1):.3f} | {r.get('jaccard', 1):.3f} |")
    save("neighbors", size, out, "\n".join(md) + "\n")


def cmd_neighbors_quality(args) -> None:
    """nDCG@10 of the default pipeline with the shipped step vs the capped one (same code as
    bench/quality.py / kgsearch eval, fresh index dirs)."""
    import neighbors_capped as nc
    from _common import SHARED as shared

    from kgsearch.evaluate import EvalOptions, evaluate
    from kgsearch.text import neighbors

    base = WORK / "quality-indexes"
    shipped_update = neighbors.update
    out = {"sets": {}}
    variants = [("shipped", None)] + [(f"{'two-stage ' if c.startswith('ts') else ''}cap {c.lstrip('ts')}", c)
                                      for c in args.caps.split(",")]
    for s in args.sets.split(","):
        out["sets"][s] = {}
        for name, cap in variants:
            if cap is None:
                neighbors.update = shipped_update
            else:
                neighbors.update = nc.make_update(int(cap.lstrip("ts")), two_stage=cap.startswith("ts"))
            d = base / f"{s}-{name.replace(' ', '-')}"
            t = time.perf_counter()
            r = evaluate(str(shared / s), EvalOptions(index_dir=str(d)))
            out["sets"][s][name] = {"ndcg@10": r["metrics"]["ndcg@10"], "recall@100": r["metrics"].get("recall@100"),
                                    "seconds": round(time.perf_counter() - t, 1),
                                    "neighbors_seconds": (r.get("index_steps") or {}).get("neighbors")}
            print(s, name, r["metrics"]["ndcg@10"], flush=True)
    neighbors.update = shipped_update
    md = ["### nDCG@10 with the shipped neighbour step vs per-term caps (default pipeline)", "",
          "| set | " + " | ".join(v for v, _ in variants) + " |", "|---|" + "---|" * len(variants)]
    for s, r in out["sets"].items():
        md.append(f"| {s} | " + " | ".join(f"{r[v]['ndcg@10']:.4f}" for v, _ in variants) + " |")
    save("neighbors-quality", None, out, "\n".join(md) + "\n")


def cmd_neighbors_scale_quality(args) -> None:
    """nDCG@10 of the default pipeline on the scaling corpus (its 100 queries, judged by the BEIR
    qrels of copy 0 of each document), with the similar_text edges rebuilt by each variant on a
    copy of the size's index (then the graph step rebuilt on it)."""
    import shutil

    import neighbors_capped as nc
    from _common import SHARED as shared

    from kgsearch.evaluate import find_qrels, query_metrics, read_qrels
    from kgsearch.graph import graph_step as gi
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index
    from kgsearch.types import ChangeSet

    size = args.size
    qs = json.loads((WORK / f"corpus-{size}.queries100.json").read_text())
    judged = []
    for s in sorted({q["set"] for q in qs}):
        by_text = {}
        for line in open(shared / s / "queries.jsonl", encoding="utf-8"):
            d = json.loads(line)
            by_text.setdefault(d["text"], str(d["_id"]))
        qrels = read_qrels(find_qrels(shared / s, None))
        for q in qs:
            if q["set"] == s and by_text.get(q["text"]) in qrels:
                rels = {f"kg:d0:{s}:{doc}": g for doc, g in qrels[by_text[q["text"]]].items() if g > 0}
                judged.append((q["text"], rels))
    with Index.open(db_of(size), readonly=True) as ix0:          # judge only documents in the corpus
        kept = []
        for text, rels in judged:
            keys = list(rels)
            have = {r[0] for r in ix0.conn.execute(f"SELECT key FROM nodes WHERE key IN ({','.join('?' * len(keys))})",
                                                   keys)}
            rels = {k: g for k, g in rels.items() if k in have}
            if rels:
                kept.append((text, rels))
        judged = kept
    out = {"size": size, "queries_judged": len(judged), "variants": {}}
    for spec in ["shipped"] + args.caps.split(","):
        if spec == "shipped":
            db = db_of(size)
            info = {}
        else:
            db = WORK / f"nsq-{size}-{spec}.db"
            if not db.exists():
                tmp = Path(str(db) + ".tmp")
                shutil.copyfile(db_of(size), tmp)
                ix = Index.open(tmp)
                settings = ix.meta_json("settings") or {}
                t = time.perf_counter()
                with ix.transaction():
                    ch = ChangeSet(generation=ix.generation + 1, full=True)
                    ix.set_meta("generation", ch.generation)
                    c, _, top = spec.partition("r")
                    upd = (nc.make_update(None) if spec == "whole" else
                           nc.make_update(int(c.lstrip("tscap")), two_stage=spec.startswith("ts"),
                                          rescore_top=int(top) if top else None))
                    info = upd(ix, ch, settings)
                    info["graph"] = {k: v for k, v in gi.update(ix, ch, settings).items() if not isinstance(v, dict)}
                info["rebuild_s"] = time.perf_counter() - t
                ix.close()
                os.replace(tmp, db)
                (WORK / f"nsq-{size}-{spec}.json").write_text(json.dumps(info))
            info = json.loads((WORK / f"nsq-{size}-{spec}.json").read_text())
        ix = Index.open(db, readonly=True)
        eng = Engine(ix)
        opts = SearchOptions(k=10, use_cache=False)
        per = []
        for text, rels in judged:
            r = eng.search(text, opts)
            per.append(query_metrics([h.key for h in r.hits], rels))
        ix.close()
        nd = float(np.mean([p["ndcg@10"] for p in per]))
        out["variants"][spec] = {"ndcg@10": nd, "per_query": [p["ndcg@10"] for p in per], **info}
        print(spec, round(nd, 4), flush=True)
    base = np.array(out["variants"]["shipped"]["per_query"])
    md = [f"### nDCG@10 on the {label(size)} scaling corpus with each neighbour variant", "",
          f"{len(judged)} of the corpus's 100 queries have BEIR judgements on documents of copy 0; default "
          f"pipeline, k = 10. Each variant rebuilt the similar_text edges (full) and the graph on a copy of the "
          f"index.", "", "| variant | nDCG@10 | diff vs shipped | queries better / worse | neighbours step s |",
          "|---|---|---|---|---|"]
    for spec, v in out["variants"].items():
        pq = np.array(v["per_query"])
        md.append(f"| {spec} | {v['ndcg@10']:.4f} | {v['ndcg@10'] - out['variants']['shipped']['ndcg@10']:+.4f} | "
                  f"{int((pq > base + 1e-9).sum())} / {int((pq < base - 1e-9).sum())} | {v.get('seconds', '-')} |")
    save("neighbors-scale-quality", size, out, "\n".join(md) + "\n")


# ---------------------------------------------------------------------------- memory profiles
class RssSampler(threading.Thread):
    """Every ``interval`` s: this process's RSS and the innermost kgsearch frame of the main
    thread; the peak RSS seen inside each function (file:function) and the overall peak's stack."""

    def __init__(self, interval: float = 0.01):
        super().__init__(daemon=True)
        self.interval = interval
        self.main = threading.main_thread().ident
        self.by_func: dict[str, int] = {}
        self.phase = "start"
        self.by_phase: dict[str, list[int]] = {}      # phase -> [RSS when it began, peak during it]
        self.peak = 0
        self.peak_stack: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        fd = open("/proc/self/statm")
        while not self.halt.is_set():
            fd.seek(0)
            rss = int(fd.read().split()[1]) * page
            frame = sys._current_frames().get(self.main)
            stack = []
            while frame is not None:
                f = frame.f_code.co_filename
                if "kgsearch" in f and "scale_study" not in f:
                    stack.append(f"{Path(f).parent.name}/{Path(f).name}:{frame.f_code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            if stack:
                key = stack[0].rsplit(":", 1)[0]
                self.by_func[key] = max(self.by_func.get(key, 0), rss)
            ph = self.by_phase.setdefault(self.phase, [rss, rss])
            ph[1] = max(ph[1], rss)
            if rss > self.peak:
                self.peak, self.peak_stack = rss, stack[:8]
            self.halt.wait(self.interval)

    def stop(self) -> None:
        self.halt.set()
        self.join()


def cmd_memprofile_reindex(args) -> None:
    """One-file reindex of a copy of the size's index, in this process, under the RSS sampler."""
    import shutil

    from kgsearch.indexer import IndexOptions, index_paths

    size = args.size
    src_db = db_of(size)
    tmp = WORK / f"memprof-{size}.db"
    shutil.copyfile(src_db, tmp)
    corpus = WORK / f"corpus-{size}"
    shard = corpus / "shard-00000.jsonl"
    orig = shard.read_bytes()
    lines = orig.decode().split("\n")
    d = json.loads(lines[0])
    if args.edge:                     # the file gains an edge: the graph step rebuilds at any size
        second = next(json.loads(x)["node_id"] for x in lines[1:] if x and "node_id" in json.loads(x))
        lines.insert(1, json.dumps({"source": d["node_id"], "target": second, "edge_type": "see_also"}))
    else:
        d["description"] = (d.get("description") or "") + " Profiled."
        lines[0] = json.dumps(d, ensure_ascii=False)
    rss0 = status_kb("VmRSS")
    samp = RssSampler()
    samp.start()
    try:
        shard.write_text("\n".join(lines))
        t = time.perf_counter()

        def progress(ev):
            name = ev.get("phase", "?") + ("/" + ev["step"] if ev.get("step") else "")
            samp.phase = name

        rep = index_paths(tmp, [str(corpus)], IndexOptions(progress=progress))
        wall = time.perf_counter() - t
    finally:
        shard.write_bytes(orig)
        samp.stop()
    for suffix in ("", "-wal", "-shm", ".lock"):
        p = Path(str(tmp) + suffix)
        if p.exists():
            p.unlink()
    top = sorted(samp.by_func.items(), key=lambda kv: -kv[1])[:15]
    phases = {k: (a / 2**20, b / 2**20) for k, (a, b) in samp.by_phase.items()}
    out = {"size": size, "wall_s": wall, "rss_before_mb": rss0 / 1024, "peak_mb": samp.peak / 2**20,
           "phases_mb": phases,
           "peak_stack": samp.peak_stack, "by_func_mb": {k: v / 2**20 for k, v in top},
           "steps": {k: {kk: vv for kk, vv in v.items() if not isinstance(vv, (dict, list))} for k, v in rep.steps.items()}}
    md = [f"### One-file reindex ({'an edge added' if args.edge else 'a description changed'}) at {label(size)}: peak RSS by phase and function (sampled every 10 ms, "
          f"glibc mmap threshold fixed so freed arrays leave the RSS)", "",
          f"Wall {wall:.1f} s, RSS before {rss0 / 1024:.0f} MiB, peak {samp.peak / 2**20:.0f} MiB at:", ""]
    md += [f"    {s}" for s in samp.peak_stack]
    md += ["", "| index phase (progress events) | RSS at its start MiB | peak during it MiB |", "|---|---|---|"]
    md += [f"| {k} | {a:.0f} | {b:.0f} |" for k, (a, b) in phases.items()]
    md += ["", "| innermost kgsearch function | peak RSS while inside, MiB |", "|---|---|"]
    md += [f"| {k} | {v / 2**20:.0f} |" for k, v in top]
    save("memprofile-reindex" + ("-edge" if args.edge else ""), size, out, "\n".join(md) + "\n")


def cmd_memprofile_query(args) -> None:
    """Where the query process's memory goes: RSS after each stage of the first queries, the
    sizes of what the index caches per process, and a tracemalloc top list."""
    import tracemalloc

    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    size = args.size
    qs = [q["text"] for q in json.loads((WORK / f"corpus-{size}.queries100.json").read_text())]
    steps = [("python + numpy imported", status_kb("VmRSS"))]
    ix = Index.open(db_of(size), readonly=True)
    eng = Engine(ix)
    steps.append(("index opened, Engine made", status_kb("VmRSS")))
    samp = RssSampler(0.002)
    samp.start()
    if args.tracemalloc:
        tracemalloc.start(8)
    opts = SearchOptions(k=10, use_cache=False, channels=args.channels)
    eng.search(qs[0], opts)
    steps.append(("first query", status_kb("VmRSS")))
    for q in qs[1:20]:
        eng.search(q, opts)
    steps.append(("20 queries", status_kb("VmRSS")))
    samp.stop()
    snap_top = []
    if args.tracemalloc:
        snap = tracemalloc.take_snapshot()
        cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        for stat in snap.statistics("lineno")[:15]:
            fr = stat.traceback[0]
            snap_top.append((f"{Path(fr.filename).parent.name}/{Path(fr.filename).name}:{fr.lineno}", stat.size))
        steps.append((f"tracemalloc current / peak {cur / 2**20:.0f} / {peak / 2**20:.0f} MiB", status_kb("VmRSS")))
    maps = _smaps_top()
    hwm = status_kb("VmHWM")
    by_func = sorted(samp.by_func.items(), key=lambda kv: -kv[1])[:15]
    out = {"size": size, "channels": args.channels, "steps_mb": [(a, b / 1024) for a, b in steps], "hwm_mb": hwm / 1024,
           "tracemalloc_top": snap_top,
           "by_func_mb": {k: v / 2**20 for k, v in by_func}, "peak_stack": samp.peak_stack, "smaps_mb": maps}
    md = [f"### Query process memory at {label(size)} ({args.channels or 'default pipeline'})", "",
          "| point | RSS MiB |", "|---|---|"]
    md += [f"| {a} | {b / 1024:.0f} |" for a, b in steps]
    md += [f"| peak (VmHWM) | {hwm / 1024:.0f} |", "", "Resident memory by mapping after the queries (/proc/self/smaps):", "",
           "| mapping | RSS MiB |", "|---|---|"]
    md += [f"| {k} | {v:.1f} |" for k, v in maps.items()]
    md += ["", "Peak RSS while inside each innermost kgsearch function (sampled every 2 ms):", "",
           "| function | MiB |", "|---|---|"]
    md += [f"| {k} | {v / 2**20:.0f} |" for k, v in by_func]
    if snap_top:
        md += ["", "tracemalloc, live allocations by line after 20 queries:", "", "| line | MiB |", "|---|---|"]
        md += [f"| {a} | {b / 2**20:.1f} |" for a, b in snap_top]
    save(f"memprofile-query{'-' + args.channels if args.channels else ''}", size, out, "\n".join(md) + "\n")


def _smaps_top(n: int = 12) -> dict:
    """Resident MiB per mapping name ([heap], [anon], file), largest first."""
    tot: dict[str, int] = {}
    name = "?"
    for line in open("/proc/self/smaps"):
        parts = line.split()
        if not parts:
            continue
        if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            name = parts[5] if len(parts) >= 6 else "[anon]"
            if "/" in name:
                name = name if "site-packages" not in name else "site-packages/" + name.split("site-packages/")[1].split("/")[0]
        elif parts[0] == "Rss:":
            tot[name] = tot.get(name, 0) + int(parts[1])
    top = sorted(tot.items(), key=lambda kv: -kv[1])[:n]
    return {k: round(v / 1024, 1) for k, v in top}


def cmd_topk(args) -> None:
    from kgsearch.embed.kernel import topk

    rng = np.random.default_rng(0)
    rows = []
    for n in (100_000, 1_000_000):
        x = rng.standard_normal(n).astype(np.float32)
        ids = np.arange(n, dtype=np.int64)
        fns = {"np.argpartition(-x, 9)": lambda: np.argpartition(-x, 9),
               "kernel.topk (argpartition + lexsort)": lambda: topk(x, ids, 10),
               "threshold select (sample, flatnonzero)": lambda: _thr_topk(x, 10)}
        for name, f in fns.items():
            ts = []
            for _ in range(9):
                t = time.perf_counter()
                f()
                ts.append((time.perf_counter() - t) * 1000)
            rows.append((n, name, med(ts)))
    md = ["### Top-10 of n float32 scores (median of 9, ms)", "", "| n | method | ms |", "|---|---|---|"]
    md += [f"| {n:,} | {a} | {b:.2f} |" for n, a, b in rows]
    save("topk", None, {"rows": rows}, "\n".join(md) + "\n")


def _thr_topk(x: np.ndarray, k: int) -> np.ndarray:
    """Top-k positions via a threshold from a strided sample (exact: falls back when short)."""
    step = max(1, len(x) // 4096)
    samp = np.sort(x[::step])
    want = min(len(samp) - 1, max(0, len(samp) - 1 - 4 * k * len(samp) // max(1, len(x)) - 4))
    thr = samp[want]
    cand = np.flatnonzero(x >= thr)
    if len(cand) < k:
        cand = np.arange(len(x))
    o = np.lexsort((cand, -x[cand]))[:k]
    return cand[o]


COMMANDS = {"sketch": cmd_sketch, "rows": cmd_rows, "neighbors": cmd_neighbors,
            "neighbors-quality": cmd_neighbors_quality, "memprofile-reindex": cmd_memprofile_reindex,
            "memprofile-query": cmd_memprofile_query, "topk": cmd_topk,
            "neighbors-scale-quality": cmd_neighbors_scale_quality, "sketch-time": cmd_sketch_time}


def main() -> None:
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        # glibc: big blocks always mmap'd and given back when freed (no dynamic threshold), so
        # a step's RSS growth is not hidden by heap memory an earlier step freed
        os.environ["MALLOC_MMAP_THRESHOLD_"] = "131072"
        os.environ["MALLOC_TRIM_THRESHOLD_"] = "131072"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=sorted(COMMANDS))
    ap.add_argument("--size", type=parse_size, default=100_000)
    ap.add_argument("--cands", default="250,500,1000,2000,4000")
    ap.add_argument("--modes", default="hamming:256:-,hamming:128:-,asym:256:2,asym:256:4,cascade:256:2000,cascade:256:4000",
                    help="first passes mode:bits:planes (cascade: mode:256:n_first)")
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--caps", default="32,64,128")
    ap.add_argument("--sets", default="scifact,nfcorpus")
    ap.add_argument("--channels", default=None)
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--edge", action="store_true", help="memprofile-reindex: the change adds an edge")
    args = ap.parse_args()
    COMMANDS[args.command](args)


if __name__ == "__main__":
    main()
