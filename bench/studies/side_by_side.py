"""kgsearch and its rivals side by side, in ONE process, on the same data (bench extra).

    pip install -e ".[bench]" && python bench/studies/side_by_side.py [--runs 5]

* BM25 on SciFact (same Porter2 tokens for everyone): kgsearch's SQLite-backed channel,
  bm25s (numpy backend), rank_bm25, SQLite FTS5 (OR query, bm25 ranking): queries/second.
* Graph kernels on a Barabasi-Albert graph (20K nodes, 100K edges): PageRank, personalised
  PageRank (15 seeds), HITS: kgsearch (numpy) vs networkx vs igraph.
* Encoding 2,000 SciFact abstracts: kgsearch's numpy model2vec reader vs model2vec.

Writes bench/results/side_by_side.json and .md (machine, Python, numpy, SQLite versions, runs,
medians). The fuller per-area benchmarks (fresh processes for memory, more sizes) are
bench/text_bench.py, bench/graph_bench.py and bench/embed_bench.py.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED  # noqa: E402

import numpy as np  # noqa: E402

SCIFACT = SHARED / "scifact"


def timed(fn, runs):
    fn()                            # warm-up: first-call costs (imports, caches) are not the kernel
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def bm25_part(runs: int) -> list[dict]:
    import bm25s
    from rank_bm25 import BM25Okapi

    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index
    from kgsearch.text import bm25 as kbm25
    from kgsearch.text.tokenize import get_analyzer

    an = get_analyzer("porter2")
    docs = [json.loads(line) for line in open(SCIFACT / "corpus.jsonl", encoding="utf-8")]
    queries = [json.loads(line)["text"] for line in open(SCIFACT / "queries.jsonl", encoding="utf-8")][:300]
    toks = [an((d.get("title") or "") + " " + (d.get("text") or "")) for d in docs]
    qtoks = [an(q) for q in queries]
    tmp = Path(tempfile.mkdtemp())
    db = tmp / "sbs.db"
    corpus = tmp / "corpus.jsonl"
    # one field (title + text in the body) so every engine ranks the same token bags
    with open(corpus, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"_id": d["_id"], "title": "", "text": (d.get("title") or "") + " " + d["text"]}) + "\n")
    rows = []
    t = time.perf_counter()
    index_paths(db, [str(corpus)], IndexOptions(fmt="beir", steps=("text",), settings={"k1": 1.5, "b": 0.75}))
    build_ours = time.perf_counter() - t
    ix = Index.open(db, readonly=True)
    kbm25.search(ix, queries[0], 10)

    def ours():
        for q in queries:
            kbm25.search(ix, q, 10)

    t = time.perf_counter()
    bm = bm25s.BM25(k1=1.5, b=0.75, method="lucene", backend="numpy")
    bm.index([list(x) for x in toks], show_progress=False)
    build_bm25s = time.perf_counter() - t

    def rival_bm25s():
        for q in qtoks:
            if q:
                bm.retrieve([q], k=10, n_threads=1, show_progress=False, backend_selection="numpy")

    t = time.perf_counter()
    rb = BM25Okapi(toks, k1=1.5, b=0.75, epsilon=0.0)
    build_rank = time.perf_counter() - t

    def rival_rank():
        for q in qtoks[:50]:
            s = rb.get_scores(q)
            np.argpartition(-s, 10)[:10]

    con = sqlite3.connect(":memory:")
    t = time.perf_counter()
    con.execute("CREATE VIRTUAL TABLE f USING fts5(body, tokenize='unicode61')")
    con.executemany("INSERT INTO f(rowid, body) VALUES (?, ?)", [(i, " ".join(x)) for i, x in enumerate(toks)])
    con.commit()
    build_fts = time.perf_counter() - t

    def rival_fts():
        for q in qtoks:
            if q:
                expr = " OR ".join('"' + w.replace('"', '""') + '"' for w in q)
                con.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT 10", (expr,)).fetchall()

    for name, fn, nq, build in (("kgsearch (SQLite postings)", ours, len(queries), build_ours),
                                ("bm25s (numpy)", rival_bm25s, len(qtoks), build_bm25s),
                                ("rank_bm25", rival_rank, 50, build_rank),
                                ("SQLite FTS5", rival_fts, len(qtoks), build_fts)):
        sec = timed(fn, runs)
        rows.append({"what": "BM25 top-10, SciFact 5,183 docs", "engine": name, "qps": round(nq / sec, 1),
                     "build_s": round(build, 3)})
    ix.close()
    return rows


def graph_part(runs: int) -> list[dict]:
    import igraph
    import networkx as nx

    from kgsearch.graph import Graph, hits, pagerank, rwr

    rng = random.Random(0)
    G = nx.barabasi_albert_graph(20000, 5, seed=0).to_directed()
    edges = [(u, v) for u, v in G.edges() if rng.random() < 0.5]
    D = nx.DiGraph()
    D.add_nodes_from(range(20000))
    D.add_edges_from(edges)
    src = np.array([e[0] for e in edges])
    dst = np.array([e[1] for e in edges])
    g = Graph.from_edges(src, dst, num_nodes=20000)
    ig = igraph.Graph(n=20000, edges=edges, directed=True)
    seeds = rng.sample(range(20000), 15)
    pers = {s: 1.0 for s in seeds}
    rows = []
    cases = [
        ("PageRank", lambda: pagerank(g), lambda: nx.pagerank(D), lambda: ig.pagerank()),
        ("personalised PageRank, 15 seeds", lambda: pagerank(g, personalization=pers),
         lambda: nx.pagerank(D, personalization=pers), lambda: ig.personalized_pagerank(reset_vertices=seeds)),
        ("HITS", lambda: hits(g), lambda: nx.hits(D), lambda: (ig.hub_score(), ig.authority_score())),
        ("RWR per query (restart 0.2, top-10 early stop)", lambda: rwr(g, seeds), None, None),
    ]
    for name, ours, nxf, igf in cases:
        row = {"what": f"{name}, BA graph 20K nodes / {len(edges)} edges",
               "kgsearch_ms": round(1000 * timed(ours, runs), 2)}
        if nxf:
            row["networkx_ms"] = round(1000 * timed(nxf, max(1, runs // 2)), 2)
        if igf:
            row["igraph_ms"] = round(1000 * timed(igf, runs), 2)
        rows.append(row)
    return rows


def embed_part(runs: int) -> list[dict]:
    from model2vec import StaticModel

    from kgsearch.config import shipped_data_dir
    from kgsearch.embed import load_model

    from kgsearch.embed.model import DEFAULT_MODEL

    folder = shipped_data_dir() / "models" / DEFAULT_MODEL
    docs = [json.loads(line) for line in open(SCIFACT / "corpus.jsonl", encoding="utf-8")][:2000]
    texts = [(d.get("title") or "") + "\n" + d["text"] for d in docs]
    t = time.perf_counter()
    ours = load_model(folder)
    load_ours = time.perf_counter() - t
    t = time.perf_counter()
    theirs = StaticModel.from_pretrained(str(folder))
    load_theirs = time.perf_counter() - t
    a = ours.encode(texts)
    b = theirs.encode(texts)
    ident = bool(np.array_equal(a, b))
    cold = []
    for _ in range(runs):          # a fresh model each run: its word memo starts empty
        m = load_model(folder)
        t = time.perf_counter()
        m.encode(texts)
        cold.append(time.perf_counter() - t)
    t_ours = statistics.median(cold)
    t_theirs = timed(lambda: theirs.encode(texts, use_multiprocessing=False), runs)
    return [{"what": "encode 2,000 SciFact abstracts (cold memo), one thread", "kgsearch_s": round(t_ours, 3),
             "model2vec_s": round(t_theirs, 3), "load_kgsearch_s": round(load_ours, 3),
             "load_model2vec_s": round(load_theirs, 3), "identical_vectors": ident}]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args()
    if not SCIFACT.is_dir():
        raise SystemExit(f"{SCIFACT} not found: the benchmark data must sit in ../shared/bench")
    from kgsearch.bench import device_facts

    meta = {"machine": platform.machine(), "processor": device_facts()["cpu"], "python": platform.python_version(),
            "numpy": np.__version__, "sqlite": sqlite3.sqlite_version, "runs": args.runs,
            "date": time.strftime("%Y-%m-%d %H:%M"), "note": "medians; one process, interleaved engines"}
    res = {"meta": meta, "bm25": bm25_part(args.runs), "graph": graph_part(args.runs), "embed": embed_part(args.runs)}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "side_by_side.json").write_text(json.dumps(res, indent=1))
    md = [f"# Side by side, one process ({meta['date']})", "",
          f"Machine {meta['machine']} ({meta['processor']}), Python {meta['python']}, numpy {meta['numpy']}, "
          f"SQLite {meta['sqlite']}; medians of {meta['runs']} runs. `python bench/studies/side_by_side.py`.", "",
          "kgsearch's build time includes writing its postings, FTS5 and trigram tables to SQLite and "
          "committing; the rivals build in memory (bm25s, rank_bm25) or FTS5 only.", "",
          "| BM25 top-10 on SciFact | queries/s | build s |", "|---|---|---|"]
    md += [f"| {r['engine']} | {r['qps']} | {r['build_s']} |" for r in res["bm25"]]
    md += ["", "| graph kernel | kgsearch ms | igraph ms | networkx ms |", "|---|---|---|---|"]
    md += [f"| {r['what']} | {r['kgsearch_ms']} | {r.get('igraph_ms', '-')} | {r.get('networkx_ms', '-')} |"
           for r in res["graph"]]
    e = res["embed"][0]
    md += ["", "| encoding | kgsearch | model2vec |", "|---|---|---|",
           f"| {e['what']} | {e['kgsearch_s']} s | {e['model2vec_s']} s |",
           f"| model load | {e['load_kgsearch_s']} s | {e['load_model2vec_s']} s |",
           f"| identical vectors | {e['identical_vectors']} | |"]
    (out / "side_by_side.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
