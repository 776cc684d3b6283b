"""Speed of kgsearch's BM25 vs bm25s (numpy backend), rank_bm25 and SQLite FTS5, side by side.

All engines get the same token lists (our Porter2 analyzer, one field: title + text) and the
same queries. Each engine is built in a fresh subprocess (build seconds) and queried in
another fresh subprocess that loads the saved index (queries/s, top-10, one query at a time,
one thread; peak RSS of that process from getrusage). Each measurement runs ``--runs`` times;
the tables show medians. Also: light/Porter2 stemmer words/s, and pattern-channel fuzzy
latency for two-typo identifiers among the symbol corpus (plus an FTS5-trigram alternative).

Corpora: SciFact (../shared/bench/scifact) and "symbols": every function/class/module of the
standard library and installed packages, name + qualified name + docstring (>= 50,000 docs).

    python bench/text_bench.py [--runs 3] [--quick] [--symbols N] [--queries N]

``--quick``: 60,000 symbols and 300 symbol queries (``--symbols``/``--queries`` set them
freely: the smoke test runs a few hundred). A rival that is not installed (the ``bench`` extra:
bm25s, rank_bm25) is left out with a note. Writes bench/results/text.json and text.md.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED, log, machine  # noqa: E402



# ---------------------------------------------------------------------------- corpora
def symbol_corpus(limit: int = 120_000) -> list[tuple[str, str, str]]:
    """(qualname, name, docstring) for the first ``limit`` classes and functions of installed
    Python code, in a fixed order (cached per size in the temporary folder)."""
    cache = Path(tempfile.gettempdir()) / f"kgsearch_bench_symbols_{limit}.jsonl"
    if cache.exists():
        return [tuple(json.loads(line)) for line in cache.open(encoding="utf-8")][:limit]
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for root in roots:
        for p in sorted(root.rglob("*.py")):
            if len(out) >= limit:
                break
            try:
                tree = ast.parse(p.read_bytes())
            except (SyntaxError, ValueError, OSError, RecursionError):
                continue
            mod = ".".join(p.relative_to(root).with_suffix("").parts)
            stack = [(tree, mod)]
            while stack:
                node, prefix = stack.pop()
                for ch in ast.iter_child_nodes(node):
                    if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        q = f"{prefix}.{ch.name}"
                        if q not in seen:
                            seen.add(q)
                            out.append((q, ch.name, (ast.get_docstring(ch) or "")[:2000]))
                        stack.append((ch, q))
    out = out[:limit]
    with cache.open("w", encoding="utf-8") as fh:
        for row in out:
            fh.write(json.dumps(row) + "\n")
    return out


def load_scifact():
    docs, queries = [], []
    with open(SHARED / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            docs.append((o.get("title") or "") + " " + (o.get("text") or ""))
    with open(SHARED / "scifact" / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            queries.append(json.loads(line)["text"])
    return docs, queries


# ---------------------------------------------------------------------------- child processes
CHILD = r'''
import json, os, sys, time, resource, pickle
sys.path.insert(0, {root!r})
import numpy as np
engine, mode, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def rss_mb():
    # VmHWM: peak RSS of this process image (ru_maxrss would carry the forking parent's peak over exec)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
if mode == "build":
    docs = [json.loads(l) for l in open(os.path.join(work, "docs.jsonl"))]
    base = rss_mb()
    t0 = time.perf_counter()
    if engine == "kgsearch":
        from kgsearch.store.db import Index
        from kgsearch.text import bm25, postings
        p = os.path.join(work, "kg.db")
        for suf in ("", "-wal", "-shm"):
            if os.path.exists(p + suf): os.remove(p + suf)
        ix = Index.open(p)
        params = bm25.BM25Params(k1=1.5, b=0.75, name_weight=1.0)
        with ix.transaction():
            postings.write_postings(ix, (((), d) for d in docs), list(range(1, len(docs) + 1)), params)
            ix.set_meta("last_run_time", time.time())   # (a built index: readers refuse one no run finished)
        ix.checkpoint(); ix.close()
    elif engine == "bm25s":
        import bm25s
        r = bm25s.BM25(k1=1.5, b=0.75, method="lucene", backend="numpy")
        r.index(docs, show_progress=False)
        t_idx = time.perf_counter() - t0
        r.save(os.path.join(work, "bm25s"))
    elif engine == "rank_bm25":
        from rank_bm25 import BM25Okapi
        r = BM25Okapi(docs, k1=1.5, b=0.75)
        t_idx = time.perf_counter() - t0
        pickle.dump(r, open(os.path.join(work, "rank.pkl"), "wb"))
    elif engine == "fts5":
        import sqlite3
        p = os.path.join(work, "fts.db")
        if os.path.exists(p): os.remove(p)
        c = sqlite3.connect(p)
        c.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61')")
        with c:
            c.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", ((i + 1, " ".join(d)) for i, d in enumerate(docs)))
        c.close()
    total = time.perf_counter() - t0
    out = {{"build_s": total, "build_peak_mb": rss_mb(), "base_mb": base}}
    if engine in ("bm25s", "rank_bm25"):
        out["build_s"] = t_idx; out["build_and_save_s"] = total
    print(json.dumps(out))
else:
    queries = [json.loads(l) for l in open(os.path.join(work, "queries.jsonl"))]
    import gc
    t0 = time.perf_counter()
    if engine == "kgsearch":
        from kgsearch.store.db import Index
        from kgsearch.text import bm25
        from collections import Counter
        ix = Index.open(os.path.join(work, "kg.db"), readonly=True)
        def run(q):
            return bm25.score_terms(ix, Counter(q), 10)
    elif engine == "bm25s":
        import bm25s
        r = bm25s.BM25.load(os.path.join(work, "bm25s"), mmap=False)
        def run(q):
            if not any(t in r.vocab_dict for t in q):
                return None
            return r.retrieve([q], k=10, n_threads=1, show_progress=False, backend_selection="numpy")
    elif engine == "rank_bm25":
        r = pickle.load(open(os.path.join(work, "rank.pkl"), "rb"))
        def run(q):
            s = r.get_scores(q)
            return np.argpartition(-s, 10)[:10]
    elif engine == "fts5":
        import sqlite3
        c = sqlite3.connect(os.path.join(work, "fts.db"))
        def run(q):
            expr = " OR ".join('"' + t + '"' for t in q)
            return c.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 10", (expr,)).fetchall() if expr else []
    load_s = time.perf_counter() - t0
    for q in queries[:20]:
        run(q)
    rates = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        for q in queries:
            run(q)
        rates.append(len(queries) / (time.perf_counter() - t0))
    print(json.dumps({{"qps_runs": rates, "load_s": load_s, "query_peak_mb": rss_mb()}}))
'''


def child(engine: str, mode: str, work: Path, runs: int) -> dict:
    code = CHILD.format(root=str(ROOT))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", code, engine, mode, str(work), str(runs)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{engine} {mode} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_corpus(name: str, docs_tok: list[list[str]], q_tok: list[list[str]], runs: int,
                 engines: list[str], q_limit: dict[str, int]) -> dict:
    res: dict = {"docs": len(docs_tok), "queries": len(q_tok),
                 "tokens": int(sum(map(len, docs_tok)))}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with open(work / "docs.jsonl", "w") as fh:
            for d in docs_tok:
                fh.write(json.dumps(d) + "\n")
        for eng in engines:
            builds = [child(eng, "build", work, 1) for _ in range(runs)]
            n_q = q_limit.get(eng, len(q_tok))
            with open(work / "queries.jsonl", "w") as fh:
                for q in q_tok[:n_q]:
                    fh.write(json.dumps(q) + "\n")
            queries = [child(eng, "query", work, 1) for _ in range(runs)]
            qps = [q["qps_runs"][0] for q in queries]
            res[eng] = {
                "build_s": statistics.median(b["build_s"] for b in builds),
                "build_runs": [round(b["build_s"], 3) for b in builds],
                "build_and_save_s": statistics.median(b.get("build_and_save_s", b["build_s"]) for b in builds),
                "qps": statistics.median(qps), "qps_runs": [round(x, 1) for x in qps],
                "queries_timed": n_q,
                "query_peak_mb": statistics.median(q["query_peak_mb"] for q in queries),
                "load_s": statistics.median(q["load_s"] for q in queries),
            }
            print(f"{name:8s} {eng:10s} build {res[eng]['build_s']:.2f}s  qps {res[eng]['qps']:.0f}  "
                  f"peak {res[eng]['query_peak_mb']:.0f} MB", flush=True)
    return res


# ---------------------------------------------------------------------------- stemmers, fuzzy
def stemmer_speed(words: list[str], runs: int) -> dict:
    from kgsearch.text import stem
    out = {}
    for name, fn in (("light", stem.light_stem), ("porter2", stem.porter2_stem)):
        fn.__self__.clear()                # (the stemmer's memo: a stem.Memo; cold = empty)
        t0 = time.perf_counter()
        for w in words:
            fn(w)
        cold = len(words) / (time.perf_counter() - t0)
        warm = []
        for _ in range(runs):
            t0 = time.perf_counter()
            for w in words:
                fn(w)
            warm.append(len(words) / (time.perf_counter() - t0))
        out[name] = {"cold_words_per_s": cold, "warm_words_per_s": statistics.median(warm),
                     "warm_runs": [round(x) for x in warm], "words": len(words),
                     "distinct": len(set(words))}
    return out


def _typo(s: str, rng: random.Random, n: int = 2) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    for _ in range(n):
        i = rng.randrange(1, len(s) - 1)
        op = rng.choice("sdit")
        if op == "s":
            s = s[:i] + rng.choice(letters) + s[i + 1:]
        elif op == "d":
            s = s[:i] + s[i + 1:]
        elif op == "i":
            s = s[:i] + rng.choice(letters) + s[i:]
        else:
            s = s[:i - 1] + s[i] + s[i - 1] + s[i + 1:]
    return s


def fuzzy_bench(symbols: list[tuple[str, str, str]], runs: int, n_queries: int = 100) -> dict:
    from kgsearch.store.db import Index
    from kgsearch.text import pattern, trigrams
    from kgsearch.types import ChangeSet
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        ix = Index.open(Path(tmp) / "f.db")
        with ix.transaction():
            ix.conn.executemany("INSERT INTO nodes(key, kind, name, qualname) VALUES (?, 'sym', ?, ?)",
                                ((f"py:{q}", n, q) for q, n, _ in symbols))
            t0 = time.perf_counter()
            trigrams.update(ix, ChangeSet(generation=1, full=True), full=True)
            build = time.perf_counter() - t0
        by_name: dict[str, list[int]] = {}
        for nid, name in ix.conn.execute("SELECT id, name FROM nodes"):
            by_name.setdefault(name, []).append(nid)
        cands = sorted(n for n in by_name if len(n) >= 10 and n.isidentifier())
        targets = rng.sample(cands, min(n_queries, len(cands)))
        qs = [(_typo(t, rng), t) for t in targets]
        lat, hits1, hits5 = [], 0, 0
        for r in range(runs):
            for q, t in qs:
                t0 = time.perf_counter()
                ids, _ = pattern.search(ix, q, 10)
                lat.append((time.perf_counter() - t0) * 1000)
                if r == 0:
                    want = set(by_name[t])
                    top = ids.tolist()
                    names_top = [n for n in top[:1]]
                    hits1 += bool(want & set(names_top))
                    hits5 += bool(want & set(top[:5])) or _same_name(ix, top[:5], t)
        # the FTS5 trigram alternative: OR of the query's trigrams ranked by bm25 (candidates only)
        fts_lat = []
        try:
            c = ix.conn
            c.execute("CREATE VIRTUAL TABLE tri USING fts5(sym, tokenize='trigram')")
            c.execute("INSERT INTO tri(rowid, sym) SELECT id, name FROM nodes")
            for q, _ in qs:
                ql = q.lower()
                expr = " OR ".join('"' + ql[i:i + 3].replace('"', '""') + '"' for i in range(len(ql) - 2))
                t0 = time.perf_counter()
                c.execute("SELECT rowid FROM tri WHERE tri MATCH ? ORDER BY rank LIMIT 300", (expr,)).fetchall()
                fts_lat.append((time.perf_counter() - t0) * 1000)
        except sqlite3.Error as exc:
            fts_lat = [float("nan")]
            print("fts5 trigram unavailable:", exc)
        ix.close()
    lat.sort()
    return {"symbols": len(symbols), "queries": len(qs), "runs": runs, "build_s": build,
            "p50_ms": statistics.median(lat), "p95_ms": lat[int(0.95 * (len(lat) - 1))],
            "max_ms": lat[-1], "hit@1": hits1 / len(qs), "hit@5": hits5 / len(qs),
            "fts5_trigram_candidates_p50_ms": statistics.median(fts_lat),
            "examples": qs[:5]}


def _same_name(ix, ids, name) -> bool:
    if not ids:
        return False
    rows = ix.conn.execute(f"SELECT name FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids)
    return any(r[0] == name for r in rows)


# ---------------------------------------------------------------------------- main
RIVALS = {"bm25s": "bm25s", "rank_bm25": "rank_bm25"}      # engine -> module (the bench extra)


def _machine() -> dict:
    m = machine()
    if importlib.util.find_spec("bm25s") is not None:
        import bm25s
        m["bm25s"] = getattr(bm25s, "__version__", "?")
    return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="smaller symbol corpus, fewer queries")
    ap.add_argument("--symbols", type=int, default=None, help="symbol corpus size (default 120,000; --quick 60,000)")
    ap.add_argument("--queries", type=int, default=None, help="symbol queries (default 1,000; --quick 300)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--fuzzy-only", action="store_true", help="rerun only the fuzzy part into text.json")
    args = ap.parse_args(argv)
    n_sym = args.symbols or (60_000 if args.quick else 120_000)
    n_q = args.queries or (300 if args.quick else 1000)
    if args.fuzzy_only:
        saved = json.loads((args.out / "text.json").read_text())
        symbols = symbol_corpus(n_sym)
        saved["fuzzy"] = fuzzy_bench(symbols[:n_sym // 2], args.runs)
        saved["fuzzy_120k"] = fuzzy_bench(symbols, args.runs)
        print(json.dumps({k: saved[k] for k in ("fuzzy", "fuzzy_120k")}, indent=1))
        (args.out / "text.json").write_text(json.dumps(saved, indent=1) + "\n")
        write_md(saved, args.out / "text.md")
        return 0
    from kgsearch.text.tokenize import Analyzer
    an = Analyzer("porter2")
    result: dict = {"machine": _machine(), "runs": args.runs, "corpora": {}}
    engines = ["kgsearch", "bm25s", "rank_bm25", "fts5"]
    missing = [e for e, mod in RIVALS.items() if importlib.util.find_spec(mod) is None]
    if missing:
        log(f"not installed, left out: {', '.join(missing)} (pip install -e '.[bench]')")
        engines = [e for e in engines if e not in missing]
        result["left_out"] = missing

    if (SHARED / "scifact" / "corpus.jsonl").exists():
        docs, queries = load_scifact()
        d_tok = [an(d) for d in docs]
        q_tok = [an(q) for q in queries]
        result["corpora"]["scifact"] = bench_corpus("scifact", d_tok, q_tok, args.runs, engines,
                                                    {"rank_bm25": 300})

    symbols = symbol_corpus(n_sym)
    s_docs = [f"{q} {n} {doc}" for q, n, doc in symbols]
    s_tok = [an(d) for d in s_docs]
    rng = random.Random(1)
    # queries: 2-5 terms drawn from random symbols' docstrings (or names when no docstring)
    sq = []
    while len(sq) < n_q:
        d = s_tok[rng.randrange(len(s_tok))]
        if len(d) >= 3:
            sq.append(rng.sample(d, min(len(d), rng.randint(2, 5))))
    result["corpora"]["symbols"] = bench_corpus("symbols", s_tok, sq, args.runs, engines,
                                                {"rank_bm25": 50, "fts5": 300})

    import re
    words = re.findall(r"[a-z]+", " ".join(s_docs).lower())[:1_000_000]
    result["stemmers"] = stemmer_speed(words, args.runs)
    print("stemmers", json.dumps(result["stemmers"]))
    result["fuzzy"] = fuzzy_bench(symbols[:n_sym // 2], args.runs)
    result["fuzzy_120k"] = fuzzy_bench(symbols, args.runs)
    print("fuzzy", json.dumps(result["fuzzy"]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "text.json").write_text(json.dumps(result, indent=1) + "\n")
    write_md(result, args.out / "text.md")
    return 0


def write_md(r: dict, path: Path) -> None:
    m = r["machine"]
    lines = ["# Text retrieval speed (bench/text_bench.py)", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in m.items()) + f". Runs per measurement: {r['runs']} "
             "(medians shown; every run listed in text.json). Two cores shared with other work: compare ratios.", "",
             "Same Porter2 tokens for every engine (one field). Build = index from tokens in a fresh process "
             "(kgsearch: postings written to SQLite and committed; bm25s/rank_bm25: in memory, save not counted; "
             "FTS5: inserts of pre-tokenized text). Query = fresh process loading the saved index, top-10, one "
             "query at a time, one thread; peak RSS = VmHWM of that process (Python + numpy included).", "",
             "| corpus | docs | engine | build s | vs bm25s | queries/s | vs bm25s | query peak RSS MB | queries timed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for cname, c in r["corpora"].items():
        base = c.get("bm25s")
        for eng in ("kgsearch", "bm25s", "rank_bm25", "fts5"):
            e = c.get(eng)
            if not e:
                continue
            vs_build = f"{e['build_s'] / base['build_s']:.2f}x" if base else "-"
            vs_qps = f"{e['qps'] / base['qps']:.2f}x" if base else "-"
            lines.append(f"| {cname} | {c['docs']} | {eng} | {e['build_s']:.2f} | {vs_build} | {e['qps']:.0f} | "
                         f"{vs_qps} | {e['query_peak_mb']:.0f} | {e['queries_timed']} |")
    if r.get("left_out"):
        lines += ["", f"Left out (not installed): {', '.join(r['left_out'])}."]
    s = r["stemmers"]
    lines += ["", "| stemmer | words/s cold (memo empty) | words/s warm (memo) | words | distinct |", "|---|---|---|---|---|"]
    for name, v in s.items():
        lines.append(f"| {name} | {v['cold_words_per_s']:,.0f} | {v['warm_words_per_s']:,.0f} | {v['words']} | {v['distinct']} |")
    lines += ["", "Fuzzy (pattern channel): identifiers (>= 10 characters) with two random typos "
              "(substitution, deletion, insertion or transposition), top 10 from the trigram index + "
              "bit-parallel edit distance. An FTS5 `trigram` table that only produces the 300 best "
              "candidates (OR of the query's trigrams ranked by bm25) is shown for comparison.", "",
              "| symbols | queries x runs | p50 ms | p95 ms | max ms | found at rank 1 | in top 5 | "
              "index build s | FTS5-trigram candidates p50 ms |", "|---|---|---|---|---|---|---|---|---|"]
    for key in ("fuzzy", "fuzzy_120k"):
        f = r.get(key)
        if not f:
            continue
        lines.append(f"| {f['symbols']} | {f['queries']} x {f['runs']} | {f['p50_ms']:.1f} | {f['p95_ms']:.1f} | "
                     f"{f['max_ms']:.1f} | {f['hit@1']:.0%} | {f['hit@5']:.0%} | {f['build_s']:.1f} | "
                     f"{f['fts5_trigram_candidates_p50_ms']:.1f} |")
    f = r["fuzzy"]
    lines += ["", "Examples (typo -> target): " + "; ".join(f"`{a}` -> `{b}`" for a, b in f["examples"])]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
