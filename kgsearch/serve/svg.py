"""A drawing of a node's neighbourhood as inline SVG, sized for a phone: the node in the middle,
what points to it in a column on the left, what it points to on the right (one row per
neighbour, so labels never overlap), each line coloured by its edge type with an arrow for its
direction and a legend below; every neighbour is a link to its page. No script, no layout
library: positions follow the order of the edges, so the same node always draws the same way.
"""
from __future__ import annotations

import zlib

from .html import esc, url

__all__ = ["neighbourhood", "colours", "PER_SIDE"]

PER_SIDE = 14                  # neighbours drawn per side (the edge list below the drawing has them all)
LABEL = 22                     # characters of a label
ROW = 22                       # pixels per row
W = 420                        # about a phone's width in CSS pixels: drawn at its size, text stays readable
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22")


def colours(types: list[str]) -> dict[str, str]:
    """One colour per edge type of a drawing, in the order of the sorted type names (distinct up to
    ten types; the legend says which is which)."""
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(sorted(types))}


def _label(name: str) -> str:
    name = " ".join(str(name).split())
    return name if len(name) <= LABEL else name[:LABEL - 1] + "…"


def _sides(related: dict) -> dict[str, list[dict]]:
    """Neighbours once each, on the side of their first edge, with every edge type that joins them."""
    seen: dict[str, dict] = {}
    for etype, edges in related.get("edges", {}).items():
        for e in edges:
            n = seen.get(e["key"])
            if n is None:
                seen[e["key"]] = n = {"key": e["key"], "name": e["name"], "kind": e["kind"], "side": e["direction"],
                                      "types": []}
            if etype not in n["types"]:
                n["types"].append(etype)
    out = {"in": [], "out": []}
    for n in seen.values():
        out[n["side"]].append(n)
    return out


def neighbourhood(node: dict, related: dict, db: str | None = None) -> str:
    """``<svg>`` for ``node`` and its neighbours in ``related`` (:func:`kgsearch.stats.related_nodes`)."""
    sides = _sides(related)
    drawn = {s: v[:PER_SIDE] for s, v in sides.items()}
    rows = max(len(drawn["in"]), len(drawn["out"]), 1)
    types = list(dict.fromkeys(n["types"][0] for v in drawn.values() for n in v))    # the lines' colours
    if not types:
        return ""
    colour = colours(types).__getitem__
    top = 24
    body_h = rows * ROW
    legend_rows = (len(types) + 1) // 2
    h = top + body_h + 16 + legend_rows * 16 + 8
    cx, cy = W / 2, top + body_h / 2
    parts = [f"<svg class=hood viewBox='0 0 {W} {h}' role=img aria-label='{esc('neighbourhood of ' + str(node['name']))}' "
             f"xmlns='http://www.w3.org/2000/svg'><defs>"]
    for t in types:
        parts.append(f"<marker id='m{zlib.crc32(t.encode('utf-8')):x}' viewBox='0 0 10 10' refX='10' refY='5' "
                     f"markerWidth='6' markerHeight='6' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='{colour(t)}'/>"
                     f"</marker>")
    parts.append("</defs>")
    parts.append(f"<text x='8' y='14' class=muted>← points here ({len(sides['in'])})</text>"
                 f"<text x='{W - 8}' y='14' text-anchor='end'>points to ({len(sides['out'])}) →</text>")
    links = []
    for side, col_x in (("in", 150.0), ("out", W - 150.0)):
        v = drawn[side]
        y0 = top + (body_h - len(v) * ROW) / 2 + ROW / 2
        for i, n in enumerate(v):
            y = y0 + i * ROW
            t = n["types"][0]
            mid = f"m{zlib.crc32(t.encode('utf-8')):x}"
            if side == "in":          # neighbour -> node
                x1, y1, x2, y2 = col_x + 6, y, cx - 12, cy + (y - cy) * 0.15
            else:                     # node -> neighbour
                x1, y1, x2, y2 = cx + 12, cy + (y - cy) * 0.15, col_x - 6, y
            parts.append(f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' stroke='{colour(t)}' "
                         f"stroke-width='1.5' marker-end='url(#{mid})'><title>{esc(', '.join(n['types']))}</title></line>")
            tx, anchor = (col_x - 10, "end") if side == "in" else (col_x + 10, "start")
            links.append(f"<a href='{url('/node', node=n['key'], db=db)}'><circle class=n cx='{col_x:.1f}' cy='{y:.1f}' "
                         f"r='5' stroke='{colour(t)}'/><text x='{tx:.1f}' y='{y + 4:.1f}' text-anchor='{anchor}'>"
                         f"{esc(_label(n['name']))}<title>{esc(n['name'])} [{esc(n['kind'])}] · "
                         f"{esc(', '.join(n['types']))}</title></text></a>")
    parts += links
    parts.append(f"<circle class=c cx='{cx}' cy='{cy:.1f}' r='11'><title>{esc(node['name'])}</title></circle>")
    ly = top + body_h + 16
    for i, t in enumerate(types):
        x = 8 + (i % 2) * (W / 2)
        y = ly + (i // 2) * 16
        parts.append(f"<rect x='{x:.0f}' y='{y - 9:.0f}' width='10' height='10' fill='{colour(t)}'/>"
                     f"<text x='{x + 14:.0f}' y='{y:.0f}'>{esc(_label(t))}</text>")
    more = sum(len(v) for v in sides.values()) - sum(len(v) for v in drawn.values())
    if more > 0:
        parts.append(f"<text x='{W - 8}' y='{h - 4}' text-anchor='end'>+{more} more in the list below</text>")
    parts.append("</svg>")
    return "".join(parts)
