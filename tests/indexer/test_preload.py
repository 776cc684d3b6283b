"""Edge resolution reads a whole namespace at once (``_Names.preload``) only when the staged
edges name a large part of it; otherwise it looks the names up in batches. Both must resolve
every edge the same way: a series of edits indexed both ways leaves identical indexes."""
from __future__ import annotations

import json

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.indexer import edges as edges_mod
from kgsearch.store.db import Index
from indexer.test_incremental import logical, make_tree, w


def _kg(tree, n: int) -> None:
    """A KG shard of ``n`` nodes in a chain, each also linked to a name no file defines."""
    rows = [json.dumps({"node_id": f"k{i}", "name": f"Node {i}", "type": "thing"}) for i in range(n)]
    rows += [json.dumps({"source": f"k{i}", "target": f"k{(i + 1) % n}", "edge_type": "next"}) for i in range(n)]
    rows += [json.dumps({"source": f"k{i}", "target": f"gone{i % 7}", "edge_type": "see_also"}) for i in range(n)]
    (tree / "kg").mkdir(parents=True, exist_ok=True)
    (tree / "kg" / "big.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_preload_and_batched_lookups_resolve_alike(tmp_path, monkeypatch, n=60):
    tree = tmp_path / "tree"
    make_tree(tree)
    _kg(tree, n)
    dbs = {"preload": tmp_path / "pre.db", "batched": tmp_path / "bat.db"}
    limits = {"preload": (1, 0.0), "batched": (10 ** 9, 1.0)}
    seen: dict[str, list] = {"preload": [], "batched": []}
    now = {"mode": "preload"}
    real = edges_mod._Names.preload

    def spy(self, ns, _real=real):
        seen[now["mode"]].append(ns)
        return _real(self, ns)

    monkeypatch.setattr(edges_mod._Names, "preload", spy)

    def run_both(tag):
        out = {}
        for m in dbs:
            now["mode"] = m
            monkeypatch.setattr(edges_mod, "PRELOAD_NAMES", limits[m][0])
            monkeypatch.setattr(edges_mod, "PRELOAD_FRACTION", limits[m][1])
            index_paths(dbs[m], [str(tree)], IndexOptions(steps=(), allow_dangling=True))
            out[m] = logical(dbs[m])
        assert out["preload"] == out["batched"], tag
        return out

    first = run_both("initial")
    assert any(e[0].startswith("kg:") for e in first["preload"]["edges"])
    big = (tree / "kg" / "big.jsonl").read_text()
    (tree / "kg" / "big.jsonl").write_text(big + json.dumps(
        {"source": "k3", "target": "k9", "edge_type": "see_also"}) + "\n", encoding="utf-8")
    run_both("kg edge added")
    (tree / "kg" / "more.jsonl").write_text(json.dumps({"node_id": "gone3", "name": "Back"}) + "\n",
                                            encoding="utf-8")
    run_both("a dangling target defined")
    w(tree / "notes" / "missing note.md", "Now here. #hub\n")
    run_both("note added")
    (tree / "kg" / "more.jsonl").unlink()
    run_both("target removed again")
    assert "kg" in seen["preload"] or "kgt" in seen["preload"]
    assert seen["batched"] == []


def test_preload_only_for_a_large_share_of_the_nodes(tmp_path, monkeypatch):
    """The decision itself: distinct staged names >= PRELOAD_NAMES and >= PRELOAD_FRACTION x
    nodes (max id)."""
    db = tmp_path / "x.db"
    tree = tmp_path / "t"
    tree.mkdir()
    _kg(tree, 40)
    index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    with Index.open(db) as ix:
        c = ix.conn
        nodes = c.execute("SELECT max(id) FROM nodes").fetchone()[0]
        c.execute("CREATE TEMP TABLE IF NOT EXISTS edge_stage(src_id INTEGER, src_key TEXT, ns TEXT, "
                  "dst_name TEXT, type TEXT, weight REAL, file_id INTEGER, line INTEGER, props TEXT)")
        c.executemany("INSERT INTO temp.edge_stage(ns, dst_name) VALUES (?, ?)",
                      [("kg", f"k{i % 10}") for i in range(100)] + [("tag", f"t{i}") for i in range(30)])
        monkeypatch.setattr(edges_mod, "PRELOAD_NAMES", 10)
        monkeypatch.setattr(edges_mod, "PRELOAD_FRACTION", 0.0)
        assert edges_mod.preload_namespaces(c) == ["kg", "tag"]      # 10 and 30 distinct names
        monkeypatch.setattr(edges_mod, "PRELOAD_NAMES", 11)
        assert edges_mod.preload_namespaces(c) == ["tag"]
        monkeypatch.setattr(edges_mod, "PRELOAD_FRACTION", 30 / nodes + 1e-9)
        assert edges_mod.preload_namespaces(c) == []
        monkeypatch.setattr(edges_mod, "PRELOAD_FRACTION", 30 / nodes)
        assert edges_mod.preload_namespaces(c) == ["tag"]
