"""JSON Lines: one node per line, then one edge per line, with plain (decoded) text.

* node: ``{"id": key, "name", "type": kind, "text", "qualname", "path", "line", "line_end",
  "flags", "props"}``;
* edge: ``{"source": key, "target": key, "edge_type", "weight", "line", "derived"}``.

A line with ``id`` is a node, a line with ``source`` and ``target`` an edge: the KG record
shape kgsearch reads itself (``kgsearch index export.jsonl`` loads it as a knowledge graph,
keys becoming ``kg:`` ids), and one ``json.loads`` per line for anything else.
"""
from __future__ import annotations

import json

from .rows import iter_edges, iter_nodes

__all__ = ["write_jsonl"]


def write_jsonl(ix, fh, text: bool = True, types=None, derived: bool = True) -> tuple[int, int]:
    n = m = 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for d in iter_nodes(ix, text=text):
        rec = {"id": d["key"], "name": d["name"], "type": d["kind"], "text": d["text"] if text else None,
               "qualname": d["qualname"] or None, "path": d["path"], "line": d["line_start"],
               "line_end": d["line_end"], "flags": d["flags"], "props": d["props"] or None}
        fh.write(dumps({k: v for k, v in rec.items() if v is not None}) + "\n")
        n += 1
    for e in iter_edges(ix, types, derived):
        fh.write(dumps({"source": e["source"], "target": e["target"], "edge_type": e["type"],
                        "weight": e["weight"], "line": e["line"], "derived": e["derived"]}) + "\n")
        m += 1
    return n, m
