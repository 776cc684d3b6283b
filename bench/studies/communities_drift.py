"""Communities between full runs: what a reindex keeps, and what a full CNM run would give.

    python bench/studies/communities_drift.py [--size 10K] [--add 50,100,200] [--work bench/work/scale]

A scaling corpus (``../shared/tools/make_scale_corpus.py``, built by ``bench/scale.py`` into
``--work``) is copied and indexed in full (CNM runs at 10K: ~100K linked pairs, under
``graph_communities_max_pairs``). Then, in rounds, a new file adds ``k`` notes, each a copy
of a random existing document's text linked to two of that document's neighbours and to it;
each reindex is incremental: existing nodes keep their labels, new nodes join the community
they link to most (:func:`kgsearch.graph.kernels.placement.assign_new_nodes_local`), until the
changed nodes pass ``graph_communities_drift`` (2 %) of the nodes the last CNM run saw, when
CNM runs again. After every round the stored labels are compared with CNM run on the same
graph: modularity of each, the graph step's seconds, and how many new nodes landed in the
community CNM puts their source document in. One run; the machine is shared (seconds noisy).
Writes ``bench/results/communities_drift.{md,json}``.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, WORK  # noqa: E402

import numpy as np  # noqa: E402

from kgsearch.graph import greedy_modularity, modularity  # noqa: E402
from kgsearch.graph.context import load_graph  # noqa: E402
from kgsearch.indexer import IndexOptions, index_paths  # noqa: E402
from kgsearch.store.db import Index  # noqa: E402


def label(n: int) -> str:
    return f"{n // 1000}K" if n % 1000 == 0 else str(n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="10K")
    ap.add_argument("--add", default="50,100,200")
    ap.add_argument("--work", default=str(WORK / "scale"))
    ap.add_argument("--out-dir", default=str(RESULTS))
    args = ap.parse_args()
    n = int(args.size.upper().rstrip("K")) * 1000 if args.size.upper().endswith("K") else int(args.size)
    src = Path(args.work) / f"corpus-{n}"
    if not src.is_dir():
        sys.exit(f"{src}: missing; run `python bench/scale.py --sizes {label(n)}` first")
    tmp = Path(args.work) / f"drift-{n}"
    shutil.rmtree(tmp, ignore_errors=True)
    corpus = tmp / "corpus"
    shutil.copytree(src, corpus)
    db = tmp / "index.db"
    steps = ("text", "neighbors", "graph")
    t = time.perf_counter()
    rep = index_paths(db, [str(corpus)], IndexOptions(steps=steps))
    first = {"index_s": round(time.perf_counter() - t, 1), "graph": rep.steps["graph"]}
    docs = []
    for f in sorted(corpus.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").split("\n"):
            if line and '"node_id"' in line:
                docs.append(json.loads(line))
    rng = random.Random(0)
    rounds = []
    added = 0
    for k in [int(x) for x in args.add.split(",")]:
        lines = []
        picked = []
        for i in range(k):
            d = rng.choice(docs)
            nid = f"new{added + i}"
            picked.append((nid, d["node_id"]))
            lines.append(json.dumps({"node_id": nid, "name": "Note on " + d["name"][:60], "type": "note",
                                     "description": d.get("description", "")[:400]}))
            lines.append(json.dumps({"source": nid, "target": d["node_id"], "edge_type": "related"}))
        added += k
        (corpus / f"added-{added}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        t = time.perf_counter()
        rep = index_paths(db, [str(corpus)], IndexOptions(steps=steps))
        wall = time.perf_counter() - t
        info = rep.steps["graph"]
        with Index.open(db, readonly=True) as ix:
            g = load_graph(ix)
            labels = np.array(ix.get_array("graph.community"))
            ids = np.array(ix.get_array("graph.node_ids"))
            pos = {key: int(np.searchsorted(ids, i)) for i, key in ix.conn.execute("SELECT id, key FROM nodes")}
        t = time.perf_counter()
        cnm = greedy_modularity(g)
        cnm_s = time.perf_counter() - t
        same = sum(labels[pos[f"kg:{a}"]] == labels[pos[f"kg:{b}"]] for a, b in picked) / len(picked)
        same_cnm = sum(cnm[pos[f"kg:{a}"]] == cnm[pos[f"kg:{b}"]] for a, b in picked) / len(picked)
        rounds.append({"added_total": added, "added_now": k, "reindex_s": round(wall, 2),
                       "graph_s": info.get("seconds"), "incremental": bool(info.get("incremental")),
                       "communities": info.get("communities"),
                       "modularity_stored": round(float(modularity(g, labels)), 4),
                       "modularity_cnm": round(float(modularity(g, cnm)), 4), "cnm_s": round(cnm_s, 2),
                       "new_with_their_source_stored": round(same, 3), "new_with_their_source_cnm": round(same_cnm, 3),
                       "communities_stored": int(labels.max()) + 1, "communities_cnm": int(cnm.max()) + 1})
        print(rounds[-1], flush=True)
    out = {"size": n, "first": first, "rounds": rounds}
    md = [f"### Communities between full runs, {label(n)}-node scaling corpus (one run, shared machine)", "",
          f"Full index {first['index_s']} s; its graph step ran CNM: {first['graph'].get('communities')} communities. "
          f"Each round adds a file of new notes (a random document's text, linked to it) and reindexes.", "",
          "| new nodes (total) | graph step s | what the step did | modularity stored / CNM now | "
          "new nodes with their source: stored / CNM | communities stored / CNM | CNM s |", "|---|---|---|---|---|---|---|"]
    for r in rounds:
        md.append(f"| {r['added_now']} ({r['added_total']}) | {r['graph_s']} | {r['communities']} | "
                  f"{r['modularity_stored']} / {r['modularity_cnm']} | {r['new_with_their_source_stored']} / "
                  f"{r['new_with_their_source_cnm']} | {r['communities_stored']} / {r['communities_cnm']} | {r['cnm_s']} |")
    outdir = Path(args.out_dir)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "communities_drift.json").write_text(json.dumps(out, indent=1))
    (outdir / "communities_drift.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
