"""Graph queries against networkx on real indexes: ``path`` (k best paths) and ``impact``
(dependents) must give exactly networkx's answers (path costs, node sequences below the k-th
cost; dependent node sets and hop distances; dependent costs against the pure-Python
reference), and how long they and ``communities`` take.

    python bench/graph_queries.py                       # demo, WN18RR, FB15k-237, flask, sphinx
    python bench/graph_queries.py --only demo,wn18rr --pairs 20
    python bench/graph_queries.py --db stdlib=/tmp/stdlib.db --db vault=/tmp/vault.db

Indexes are built in ``--work`` (default bench/work/graph_queries; reused while they exist) from
the demo, ``../shared/bench/kg/{wn18rr,fb15k237}`` and the code-task snapshots of flask and
sphinx; ``--db NAME=PATH`` adds (or replaces) an index built elsewhere. Pairs and start nodes
are drawn with a fixed seed among nodes with edges. Writes bench/results/graph_queries.json
and .md (``--out``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

SHARED = next((p for p in (Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared")),
                            ROOT.parent.parent / "shared") if (p / "bench").is_dir()), ROOT.parent / "shared") / "bench"
SOURCES = {
    "demo": lambda: [str(ROOT / "data" / "demo")],
    "wn18rr": lambda: [str(SHARED / "kg" / "wn18rr")],
    "fb15k237": lambda: [str(SHARED / "kg" / "fb15k237")],
    "flask": lambda: [str(next((SHARED / "code-tasks" / "repos").glob("flask@*")))],
    "sphinx": lambda: [str(next((SHARED / "code-tasks" / "repos").glob("sphinx@*")))],
}


def _index(name: str, work: Path, given: dict[str, str], log) -> Path:
    from kgsearch.indexer import IndexOptions, index_paths

    if name in given:
        return Path(given[name])
    db = work / f"{name}.db"
    if not db.exists():
        t = time.time()
        db.parent.mkdir(parents=True, exist_ok=True)
        index_paths(db, SOURCES[name](), IndexOptions())
        log(f"indexed {name} in {time.time() - t:.0f} s")
    return db


def _ms(xs: list[float]) -> dict:
    return {"p50": round(statistics.median(xs) * 1000, 2), "max": round(max(xs) * 1000, 2)} if xs else {}


def check(name: str, db: Path, pairs: int, starts: int, k: int, log) -> dict:
    import numpy as np

    import networkx as nx

    from graph_oracles import nx_cost_graph, nx_dependents, nx_k_paths, same_paths
    from kgsearch.explore import communities
    from kgsearch.graph.context import load_context, load_graph
    from kgsearch.graph.kernels.impact import dependents, descendants, type_sides
    from kgsearch.graph.kernels.paths import k_shortest_paths
    from kgsearch.graph.kernels.reference_queries import dependents_ref
    from kgsearch.store.db import Index

    out: dict = {"db": str(db)}
    with Index.open(db, readonly=True) as ix:
        ctx = load_context(ix)
        g = load_graph(ix)
        out.update(nodes=g.n, edges=g.m)
        linked = np.flatnonzero((np.diff(g.indptr) + np.diff(g.rindptr)) > 0)
        rng = np.random.default_rng(0)
        t = time.perf_counter()
        G = nx_cost_graph(nx, g, "both")
        out["nx_build_s"] = round(time.perf_counter() - t, 2)
        agree = skipped = found = 0
        ours_t, nx_t, bad = [], [], []
        for _ in range(pairs):
            a, b = (int(x) for x in rng.choice(linked, 2, replace=False))
            t = time.perf_counter()
            want = nx_k_paths(nx, G, a, b, k)
            nx_t.append(time.perf_counter() - t)
            if any(len(p) - 1 > 12 for _, p in want):
                skipped += 1
                continue
            t = time.perf_counter()
            got = k_shortest_paths(g, a, b, k, 12, "both")
            ours_t.append(time.perf_counter() - t)
            why = same_paths([(p.cost, p.nodes) for p in got], want)
            agree += why is None
            found += bool(got)
            if why is not None:
                bad.append({"pair": [a, b], "why": why})
        out["path"] = {"pairs": pairs, "compared": pairs - skipped, "agree": agree, "with_a_path": found,
                       "over_12_hops": skipped, "k": k, "ours_ms": _ms(ours_t), "networkx_ms": _ms(nx_t),
                       "disagreements": bad[:5]}
        log(f"{name}: path {agree}/{pairs - skipped} agree")
        back, fwd = type_sides(ctx.etype_names)
        impact_types = "the dependency table (kgsearch.graph.kernels.impact.DEPENDENCY_TYPES)"
        if not np.isin(g.etype, np.concatenate([back, fwd])).any():      # a KG without dependency types
            back = np.array([i for i, t in enumerate(ctx.etype_names) if t != "similar_text"], dtype=np.int64)
            fwd = np.zeros(0, dtype=np.int64)
            impact_types = "every loader type, backwards (the graph has none of the table's types)"
        contains = ctx.etype_names.index("contains") if "contains" in ctx.etype_names else None
        bs, fs = set(back.tolist()), set(fwd.tolist())
        free = [contains] if contains is not None and contains in bs else []     # as kgsearch impact walks
        dep_linked = np.flatnonzero(np.isin(g.etype, np.concatenate([back, fwd]))) if len(back) + len(fwd) else []
        pool = np.unique(np.concatenate([g.src[dep_linked], g.dst[dep_linked]])) if len(dep_linked) else linked
        agree, sizes, ours_t, bad = 0, [], [], []
        for _ in range(starts):
            x = int(rng.choice(pool))
            st = descendants(g, [x], contains)
            t = time.perf_counter()
            r = dependents(g, st, back, fwd, 3, free=free)
            ours_t.append(time.perf_counter() - t)
            got = {int(v): (int(r.hops[v]), float(r.cost[v])) for v in np.flatnonzero(r.hops >= 0)}
            want_h = nx_dependents(nx, g, st.tolist(), bs, fs, 3, set(free))
            want_c = dependents_ref(g, st.tolist(), bs, fs, 3, set(free))
            ok = ({v: h for v, (h, _) in got.items()} == want_h and got.keys() == want_c.keys()
                  and all(abs(got[v][1] - c) <= 1e-9 * max(1.0, c) for v, (_, c) in want_c.items()))
            agree += ok
            sizes.append(len(got) - len(st))
            if not ok:
                bad.append({"start": x})
        out["impact"] = {"starts": starts, "agree": agree, "depth": 3, "types": impact_types, "dependents_p50": int(statistics.median(sizes)),
                         "dependents_max": max(sizes), "ours_ms": _ms(ours_t), "disagreements": bad[:5]}
        log(f"{name}: impact {agree}/{starts} agree")
        times = []
        for _ in range(3):
            t = time.perf_counter()
            res = communities(ix)
            times.append(time.perf_counter() - t)
        out["communities"] = {"count": res["total"], "seconds_min": round(min(times), 3),
                              "seconds_first": round(times[0], 3), "notice": res["notice"]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=",".join(SOURCES))
    ap.add_argument("--db", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--work", default=str(ROOT / "bench" / "work" / "graph_queries"))
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--starts", type=int, default=30)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "graph_queries"))
    args = ap.parse_args(argv)
    import kgsearch

    given = dict(x.split("=", 1) for x in args.db)
    names = [n for n in args.only.split(",") if n] + [n for n in given if n not in args.only.split(",")]
    log = lambda m: print(m, file=sys.stderr, flush=True)
    res = {"meta": {"kgsearch": kgsearch.__version__, "date": time.strftime("%Y-%m-%d %H:%M"),
                    "python": platform.python_version(), "machine": platform.machine(),
                    "load": os.getloadavg(), "pairs": args.pairs, "starts": args.starts, "k": args.k}, "indexes": {}}
    for name in names:
        db = _index(name, Path(args.work), given, log)
        res["indexes"][name] = check(name, db, args.pairs, args.starts, args.k, log)
    res["meta"]["load_after"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    md = [f"# Graph queries against networkx", "",
          f"{res['meta']['date']}, kgsearch {res['meta']['kgsearch']}, Python {res['meta']['python']}, load "
          f"{', '.join(f'{x:.1f}' for x in res['meta']['load'])} -> {', '.join(f'{x:.1f}' for x in res['meta']['load_after'])}"
          f" (shared 2-core machine: timings are indicative). path: k = {args.k} best paths, max 12 hops, both "
          f"directions, against networkx.shortest_simple_paths; impact: depth 3 from a node and what it contains, "
          f"hop distances against networkx (BFS; Dijkstra with containment weighing 0), costs against the pure-Python reference.", "",
          "| index | nodes | edges | path agree | path p50 / max ms (networkx p50) | impact agree | dependents p50 / max "
          "| impact p50 / max ms | communities | communities s (first) |", "|" + "---|" * 10]
    for name, r in res["indexes"].items():
        p, i, c = r["path"], r["impact"], r["communities"]
        md.append(f"| {name} | {r['nodes']:,} | {r['edges']:,} | {p['agree']}/{p['compared']} | "
                  f"{p['ours_ms'].get('p50', '-')} / {p['ours_ms'].get('max', '-')} ({p['networkx_ms'].get('p50', '-')}) | "
                  f"{i['agree']}/{i['starts']} | {i['dependents_p50']} / {i['dependents_max']} | "
                  f"{i['ours_ms'].get('p50', '-')} / {i['ours_ms'].get('max', '-')} | {c['count']:,} | "
                  f"{c['seconds_min']} ({c['seconds_first']}) |")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
