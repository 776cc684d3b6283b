"""GraphML (Gephi, Cytoscape, yEd, networkx ``read_graphml``): one ``<node>`` per node, its id
the node key, and one ``<edge>`` per resolved edge, directed, with these attributes:

* nodes: ``label`` (the name: what Gephi and Cytoscape show), ``key``, ``kind``, ``qualname``,
  ``path``, ``line``, ``pagerank`` and ``community`` (from the graph step; -1 when not
  computed), and ``text`` with ``text=True``;
* edges: ``type`` (also as ``label``), ``weight`` (the edge's own weight, as the loader wrote
  it; the graph's type weights are not multiplied in), ``line``, ``derived``.

Characters XML 1.0 forbids (most C0 controls) are written as U+FFFD; everything else is
escaped as XML requires. Written as it is read, so memory stays flat.
"""
from __future__ import annotations

import re
from xml.sax.saxutils import quoteattr, escape

from .rows import iter_edges, iter_nodes

__all__ = ["write_graphml", "NODE_ATTRS", "EDGE_ATTRS"]

NODE_ATTRS = (("label", "string"), ("key", "string"), ("kind", "string"), ("qualname", "string"),
              ("path", "string"), ("line", "int"), ("pagerank", "double"), ("community", "int"))
EDGE_ATTRS = (("type", "string"), ("label", "string"), ("weight", "double"), ("line", "int"),
              ("derived", "boolean"))
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _x(value) -> str:
    return escape(_BAD_XML.sub("\ufffd", str(value)))


def _a(value) -> str:
    return quoteattr(_BAD_XML.sub("\ufffd", str(value)))


def write_graphml(ix, fh, text: bool = False, types=None, derived: bool = True) -> tuple[int, int]:
    """Write the index's graph to the text stream ``fh``; returns (nodes, edges) written."""
    from ..graph.context import community_labels, pagerank_scores

    pr = pagerank_scores(ix)
    comm = community_labels(ix)
    nattrs = NODE_ATTRS + ((("text", "string"),) if text else ())
    fh.write('<?xml version="1.0" encoding="UTF-8"?>\n'
             '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
             'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
             'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
             'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n')
    for i, (name, typ) in enumerate(nattrs):
        fh.write(f'  <key id="n{i}" for="node" attr.name="{name}" attr.type="{typ}"/>\n')
    for i, (name, typ) in enumerate(EDGE_ATTRS):
        fh.write(f'  <key id="e{i}" for="edge" attr.name="{name}" attr.type="{typ}"/>\n')
    fh.write('  <graph id="kgsearch" edgedefault="directed">\n')
    n = m = 0
    for d in iter_nodes(ix, text=text):
        nid = d["id"]
        vals = {"label": d["name"], "key": d["key"], "kind": d["kind"], "qualname": d["qualname"] or "",
                "path": d["path"] or "", "line": d["line_start"],
                "pagerank": float(pr[nid]) if pr is not None and nid < len(pr) else 0.0,
                "community": int(comm[nid]) if comm is not None and nid < len(comm) else -1}
        if text:
            vals["text"] = d["text"] or ""
        fh.write(f"    <node id={_a(d['key'])}>")
        for i, (name, typ) in enumerate(nattrs):
            v = vals.get(name)
            if v is not None:
                fh.write(f'<data key="n{i}">{_x(repr(v) if typ == "double" else v)}</data>')
        fh.write("</node>\n")
        n += 1
    for e in iter_edges(ix, types, derived):
        vals = {"type": e["type"], "label": e["type"], "weight": float(e["weight"]), "line": e["line"],
                "derived": "true" if e["derived"] else "false"}
        fh.write(f"    <edge id=\"e{e['id']}\" source={_a(e['source'])} target={_a(e['target'])}>")
        for i, (name, typ) in enumerate(EDGE_ATTRS):
            v = vals.get(name)
            if v is not None:
                fh.write(f'<data key="e{i}">{_x(repr(v) if typ == "double" else v)}</data>')
        fh.write("</edge>\n")
        m += 1
    fh.write("  </graph>\n</graphml>\n")
    return n, m
