"""JSON Lines: a header line, one node per line, then one edge per line, with plain (decoded) text.

* header: ``{"kgsearch_export": 1}`` (:data:`kgsearch.ingest.kg.EXPORT_HEADER`);
* node: ``{"id": key, "name", "type": kind, "text", "qualname", "path", "line", "line_end",
  "flags", "props", "parent": key, "aliases": [[ns, name, rank], ...]}``;
* edge: ``{"source": key, "target": key, "edge_type", "weight", "line", "derived", "props"}``.

A line with ``id`` is a node, a line with ``source`` and ``target`` an edge: the KG record
shape kgsearch reads itself, and one ``json.loads`` per line for anything else. The header
tells ``kgsearch index`` that the ids are keys: the file indexes back to the same keys,
nodes and edges (``path`` and ``line`` then name the export file; derived edges are computed
again, not read).
"""
from __future__ import annotations

import json

from ..ingest.kg import EXPORT_HEADER
from .rows import iter_edges, iter_nodes

__all__ = ["write_jsonl"]


def write_jsonl(ix, fh, text: bool = True, types=None, derived: bool = True) -> tuple[int, int]:
    n = m = 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    fh.write(dumps(EXPORT_HEADER) + "\n")
    for d in iter_nodes(ix, text=text, full=True):
        rec = {"id": d["key"], "name": d["name"], "type": d["kind"], "text": d["text"] if text else None,
               "qualname": d["qualname"] or None, "path": d["path"], "line": d["line_start"],
               "line_end": d["line_end"], "flags": d["flags"], "props": d["props"] or None,
               "parent": d["parent"], "aliases": d["aliases"] or None}
        fh.write(dumps({k: v for k, v in rec.items() if v is not None}) + "\n")
        n += 1
    for e in iter_edges(ix, types, derived):
        rec = {"source": e["source"], "target": e["target"], "edge_type": e["type"], "weight": e["weight"],
               "line": e["line"], "derived": e["derived"], "props": e["props"] or None}
        fh.write(dumps({k: v for k, v in rec.items() if v is not None}) + "\n")
        m += 1
    return n, m
