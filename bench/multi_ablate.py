"""Where the two-index search loses to one index: the nDCG@10 gap with one part of the pipeline
changed at a time.

    python bench/multi_ablate.py [--sets nfcorpus,scifact] [--work /tmp/kgsearch-multi-bench]

The indexes are :mod:`multi_bench`'s (built there when missing: each set split at random, seed
0). The two as one run with each index's own ``similar_text`` lists (``MultiEngine(across=False)``,
the search this ablation explained) except in ``union_lists``. Variants, each on the one index and
on the two as one, same queries:

* ``default``: the default pipeline;
* ``union_lists``: the default pipeline over the union's lists (:mod:`kgsearch.query.across`:
  what the two-index search does now);
* ``nograph``: every default channel but ``graph`` (the neighbours' first-stage scores);
* ``bm25dense``: the two channels whose scores are pooled exactly;
* ``oracle_graph``: the default pipeline, but every node's ``graph`` signal (the weighted mean
  of its neighbours' first-stage scores, :func:`kgsearch.graph.kernels.proximity.pull_mean`) is
  the one it has in the one index (computed there over every node for the same query, looked up
  by key): what the two-index search would give if its neighbour lists crossed the indexes;
* ``depth_full``: every index answers its channels' full ``depth`` instead of its share.

Writes bench/results/multi_ablate[_TAG].{json,md}.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import multi_bench as mb  # noqa: E402
import watch_bench as wb  # noqa: E402

VARIANTS = ("default", "union_lists", "nograph", "bm25dense", "oracle_graph", "depth_full")


class Oracle:
    """``pull_mean`` that, for the two-index search, answers the one index's values by key."""

    def __init__(self, prox):
        self.prox, self.orig = prox, prox.pull_mean
        self.on, self.one_ctx, self.ctx_of, self.cap, self.keys = False, None, {}, {}, {}

    def keys_of(self, gctx):
        k = self.keys.get(id(gctx))
        if k is None:
            ids = gctx.node_ids.tolist()
            m = {}
            for i in range(0, len(ids), 900):
                ch = ids[i:i + 900]
                m.update(gctx.ix.conn.execute(f"SELECT id, key FROM nodes WHERE id IN ({','.join('?' * len(ch))})",
                                              ch).fetchall())
            k = self.keys[id(gctx)] = np.array([m.get(i, "") for i in ids], dtype=object)
        return k

    def __call__(self, g, targets, value_of, two_hop=False, **kw):
        out = self.orig(g, targets, value_of, two_hop=two_hop, **kw)
        if not self.on:
            return out
        gctx = self.ctx_of[id(g)]
        keys = self.keys_of(gctx)
        if gctx is self.one_ctx:           # the one index runs first: every node's value, by key
            allv = self.orig(g, np.arange(g.n), value_of, two_hop=two_hop, **kw)
            self.cap = dict(zip(keys.tolist(), allv.tolist()))
            return out
        res = out.copy()
        for j, p in enumerate(np.asarray(targets).tolist()):
            if p >= 0 and keys[p] in self.cap:
                res[j] = self.cap[keys[p]]
        return res


def run_set(work: Path, name: str, oracle: Oracle) -> list[dict]:
    from kgsearch.evaluate import query_metrics
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.query.channels import DEFAULT_CHANNELS
    from kgsearch.query.multi import MultiEngine
    from kgsearch.store.db import Index

    one_db, a_db, b_db, queries, qrels = mb.build(work, name, 0)
    ixs = [Index.open(p, readonly=True) for p in (one_db, a_db, b_db)]
    one, ea, eb = Engine(ixs[0]), Engine(ixs[1]), Engine(ixs[2])
    own = MultiEngine({"a": ea, "b": eb}, across=False)
    union = MultiEngine({"a": ea, "b": eb})
    multi = own
    oracle.one_ctx = one.graph()
    oracle.ctx_of = {id(e.graph().graph): e.graph() for e in (one, ea, eb)}

    def keys(resp):
        return [h.key[4:] if h.key.startswith("doc:") else h.key for h in resp.hits]

    rows = []
    for var in VARIANTS:
        opts = SearchOptions(k=10, snippets=False, use_cache=False)
        if var == "nograph":
            opts = opts.but(channels=",".join(c for c in DEFAULT_CHANNELS if c != "graph"))
        if var == "bm25dense":
            opts = opts.but(channels="bm25,dense")
        oracle.on = var == "oracle_graph"
        saved = multi._pools
        if var == "depth_full":
            def full_depth(q, o, n, parsed=None, _s=saved):
                ps = _s(q, o, n, parsed)
                for p in ps.values():
                    p.depth = None
                return ps
            multi._pools = full_depth
        n1, nm = [], []
        two = union if var == "union_lists" else multi
        for qid, text in queries:
            n1.append(query_metrics(keys(one.search(text, opts)), qrels[qid])["ndcg@10"])
            nm.append(query_metrics(keys(two.search(text, opts)), qrels[qid])["ndcg@10"])
        multi._pools = saved
        oracle.on = False
        w = sum(x > y + 1e-12 for x, y in zip(nm, n1))
        lo = sum(x < y - 1e-12 for x, y in zip(nm, n1))
        row = {"set": name, "variant": var, "queries": len(queries), "ndcg_one": round(statistics.mean(n1), 4),
               "ndcg_multi": round(statistics.mean(nm), 4), "diff": round(statistics.mean(nm) - statistics.mean(n1), 4),
               "wins_losses": [w, lo], "sign_p": round(mb.sign_test(w, lo), 3)}
        print(json.dumps(row), file=sys.stderr)
        rows.append(row)
    for ix in ixs:
        ix.close()
    return rows


def main() -> None:
    from kgsearch.graph.kernels import proximity as prox

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="nfcorpus,scifact")
    ap.add_argument("--work", default="/tmp/kgsearch-multi-bench")
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    name = "multi_ablate" + (f"_{args.tag}" if args.tag else "")
    import os

    os.environ["XDG_CACHE_HOME"] = str(Path(args.work) / "cache")     # the union's lists
    oracle = Oracle(prox)
    prox.pull_mean = oracle            # graph_stage calls it through the module
    rows = [r for s in args.sets.split(",") for r in run_set(Path(args.work), s, oracle)]
    res = {"what": "multi-index ablation", "machine": wb.machine(), "commit": wb.commit(),
           "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}
    (wb.RESULTS / f"{name}.json").write_text(json.dumps(res, indent=1))
    lines = ["# Where two indexes lose to one (`python bench/multi_ablate.py`)", "",
             f"{res['date']}, commit {res['commit']}; each set split at random (seed 0) into two indexes, as in "
             f"multi_index.md. nDCG@10 of the one index and of the two as one for each variant (see the script's "
             f"docstring); W/L: queries where the two score above/below the one, two-sided sign test.", "",
             "| set | variant | nDCG@10 one | two as one | diff (W/L, p) |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['variant']} | {r['ndcg_one']} | {r['ndcg_multi']} | {r['diff']:+.4f} "
                     f"({r['wins_losses'][0]}/{r['wins_losses'][1]}, {r['sign_p']}) |")
    md = "\n".join(lines) + "\n"
    (wb.RESULTS / f"{name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
