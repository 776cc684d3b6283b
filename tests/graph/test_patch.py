"""Changed rows written over the stored CSR in place (kgsearch.graph.stored.patch) against the
argsort reference and against the graph step's full rebuild."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kgsearch.graph.stored import patch as inplace, policy, track
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store import blobio
from graph.test_policy import check


@pytest.mark.parametrize("seed", range(4))
def test_move_reverse_equals_a_stable_argsort(seed):
    """Edges moved to other targets: the patched rperm / rindptr are those of the new targets
    sorted afresh, whatever the chunk size (moves at the start, the end, into empty groups)."""
    rng = np.random.default_rng(seed)
    for _ in range(500):
        n, m = int(rng.integers(1, 12)), int(rng.integers(1, 60))
        old = rng.integers(0, n, m)
        pick = np.sort(rng.choice(m, int(rng.integers(0, min(m, 8) + 1)), replace=False))
        new = old.copy()
        new[pick] = rng.integers(0, n, len(pick))
        moved = pick[new[pick] != old[pick]]
        rperm = np.argsort(old, kind="stable").astype(np.int32)
        rindptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(old, minlength=n), out=rindptr[1:])
        got = inplace.move_reverse(rperm, rindptr, moved, old[moved], new[moved], chunk=int(rng.integers(1, 10)))
        assert np.array_equal(rperm, np.argsort(new, kind="stable"))
        assert np.array_equal(got[1:], np.cumsum(np.bincount(new, minlength=n)))


def test_move_reverse_refuses_an_edge_not_under_its_target():
    rperm = np.array([0, 1, 2], dtype=np.int32)
    with pytest.raises(ValueError, match="does not hold an edge"):
        inplace.move_reverse(rperm, np.array([0, 3, 3]), np.array([1]), np.array([1]), np.array([0]))


def _kg(path, nodes, edges):
    path.write_text("".join(json.dumps(x) + "\n" for x in nodes + edges), encoding="utf-8")


def _tree(tmp_path):
    """A KG folder of one file (NODES, EDGES) and the index path: (tree, the file, db)."""
    tree = tmp_path / "tree"
    (tree / "kg").mkdir(parents=True)
    kg = tree / "kg" / "g.jsonl"
    _kg(kg, NODES, EDGES)
    return tree, kg, tmp_path / "inc.db"


NODES = [{"node_id": k, "name": k.upper(), "type": "thing", "description": f"about {k}"} for k in "abcdefg"]
EDGES = [{"source": s, "target": t, "edge_type": "uses"} for s, t in
         ["ab", "ac", "bc", "bd", "ce", "df", "eg", "fa", "ga", "gb"]]


@pytest.mark.parametrize("blob_io", [True, False])
def test_same_shape_changes_are_written_in_place(tmp_path, monkeypatch, blob_io):
    """A file whose edges keep their number per source: one edge retargeted (a row and the
    reverse side), one edge's type changed, one's weight, all back; each time the graph equals a full
    rebuild's and a fresh index ranks the same. Without incremental blob I/O the splice runs
    instead, with the same result."""
    monkeypatch.setattr(policy, "MAX_CHANGED_FRACTION", 1.0)
    monkeypatch.setattr(inplace, "BLOB_IO", blob_io and blobio.BLOB_IO)
    monkeypatch.setattr(inplace, "CHUNK", 3)
    tree, kg, db = _tree(tmp_path)
    steps = ("text", "graph")
    run = lambda: index_paths(db, [str(tree)], IndexOptions(steps=steps)).steps["graph"]  # noqa: E731
    run()
    nodes = [dict(x) for x in NODES]
    nodes[2]["description"] = "about c, revised"
    retarget = [dict(x) for x in EDGES]
    retarget[3]["target"] = "g"                   # b -> d becomes b -> g
    retype = [dict(x) for x in retarget]
    retype[6]["edge_type"] = "cites"              # e -> g
    reweigh = [dict(x) for x in retype]
    reweigh[0]["weight"] = 2.5                    # a -> b
    expect = [("edge retargeted", nodes, retarget, 1, 1), ("edge type changed", nodes, retype, 1, 0),
              ("edge weight changed", nodes, reweigh, 1, 0), ("all back", NODES, EDGES, 3, 1)]
    for tag, ns, es, rows, moved in expect:
        _kg(kg, ns, es)
        info = run()
        if blob_io and blobio.BLOB_IO:
            assert info["in_place"] == f"{rows} rows rewritten, {moved} edges moved target", tag
            assert info["changed_rows"] == rows
        else:
            assert "in_place" not in info and info["incremental"]
        check(db, tree, tmp_path, tag, steps=steps)


def test_rows_rewritten_as_they_were_keep_the_graph_and_its_scores(tmp_path, monkeypatch):
    """Dirty rows whose edges did not change (a reloaded file: at 1M nodes ~2,000 rows for one
    changed description): nothing is written and PageRank is kept."""
    from kgsearch.graph import graph_step
    from kgsearch.store.db import Index
    from kgsearch.types import ChangeSet
    from graph.test_policy import snapshot

    monkeypatch.setattr(policy, "MAX_CHANGED_FRACTION", 1.0)
    tree, _, db = _tree(tmp_path)
    index_paths(db, [str(tree)], IndexOptions(steps=("text", "graph")))
    before = snapshot(db)
    with Index.open(db) as ix:
        track.track_edges(ix.conn)
        ix.conn.execute("UPDATE edges SET weight = weight")          # every row dirty, none changed
        assert len(track.dirty_sources(ix.conn)) == 7
        info = graph_step.update(ix, ChangeSet(generation=ix.generation, edges_changed=True), ix.meta_json("settings"))
        ix.conn.commit()
    assert info["in_place"] == "0 rows rewritten, 0 edges moved target"
    assert info["pagerank_start"] == "kept: no edge changed" and info["changed_rows"] == 0
    after = snapshot(db)
    for p in ("indptr", "indices", "weights", "etype", "rindptr", "rperm"):
        assert np.array_equal(getattr(before["g"], p), getattr(after["g"], p)), p
    assert np.array_equal(before["pr"], after["pr"]) and np.array_equal(before["comm"], after["comm"])


def test_a_row_that_gains_an_edge_is_spliced(tmp_path, monkeypatch):
    monkeypatch.setattr(policy, "MAX_CHANGED_FRACTION", 1.0)
    tree, kg, db = _tree(tmp_path)
    index_paths(db, [str(tree)], IndexOptions(steps=("text", "graph")))
    _kg(kg, NODES, EDGES + [{"source": "a", "target": "d", "edge_type": "uses"}])
    info = index_paths(db, [str(tree)], IndexOptions(steps=("text", "graph"))).steps["graph"]
    assert info["incremental"] and "in_place" not in info
    check(db, tree, tmp_path, "edge added", steps=("text", "graph"))
