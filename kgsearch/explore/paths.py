"""``kgsearch path A B``: the best typed paths between two nodes of an index, and the path
from a query's seeds that brought a node in (for ``why``).

A hop costs ``1 / weight`` (the edge's weight times its type's weight, as the graph step
stored them: :data:`kgsearch.config.EDGE_WEIGHTS` or the config file's ``edge_weights``), so
paths over few strong edges come first; :mod:`kgsearch.graph.kernels.paths` finds them.
"""
from __future__ import annotations

from ..errors import UsageError
from ..graph.kernels.paths import DIRECTIONS, Path, k_shortest_paths, nearest_path
from .nodes import check_types, display, graph_of, resolve

__all__ = ["find_paths", "seed_path", "path_dict", "MAX_K", "MAX_LEN"]

MAX_K = 50
MAX_LEN = 12


def _check(k: int, max_len: int, direction: str) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise UsageError(f"--k must be a whole number from 1 to {MAX_K}, got {k!r}")
    if isinstance(max_len, bool) or not isinstance(max_len, int) or not 1 <= max_len <= MAX_LEN:
        raise UsageError(f"--max-len must be a whole number of hops from 1 to {MAX_LEN}, got {max_len!r}")
    if direction not in DIRECTIONS:
        raise UsageError(f"--direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")


def path_dict(ctx, p: Path, rows: dict[int, dict]) -> dict:
    """A path as JSON: its length (sum of 1 / weight), hops, nodes and each hop's edge."""
    ids = ctx.ids_of(list(p.nodes)).tolist()
    steps = []
    for h, a, b in zip(p.hops, ids, ids[1:]):
        steps.append({"from": rows[a]["key"], "to": rows[b]["key"], "type": ctx.etype_names[h.etype],
                      "direction": "out" if h.forward else "in", "weight": round(h.weight, 6)})
    return {"length": round(p.cost, 6), "hops": len(p.hops), "nodes": [rows[i] for i in ids], "steps": steps}


def find_paths(ix, a: str, b: str, k: int = 3, max_len: int = 6, types: list[str] | None = None,
               direction: str = "both") -> dict:
    """The ``k`` best paths of at most ``max_len`` hops from node ``a`` to node ``b``.

    ``direction``: ``both`` walks edges either way (each hop says which), ``out`` only along
    them, ``in`` only against them. ``types`` limits the edge types. Returns
    ``{"from", "to", "k", "max_len", "direction", "types", "paths": [{"length", "hops",
    "nodes", "steps": [{"from", "to", "type", "direction", "weight"}]}]}``, shortest first;
    ``paths`` is empty when no path is that short.
    """
    _check(k, max_len, direction)
    ctx = graph_of(ix)
    types = check_types(ctx, types)
    ra, pa = resolve(ix, ctx, a)
    rb, pb = resolve(ix, ctx, b)
    found = k_shortest_paths(ctx.graph, pa, pb, k, max_len, direction, types)
    rows = display(ix, {int(i) for p in found for i in ctx.ids_of(list(p.nodes)).tolist()} | {ra["id"], rb["id"]})
    return {"from": rows[ra["id"]], "to": rows[rb["id"]], "k": k, "max_len": max_len, "direction": direction,
            "types": types, "paths": [path_dict(ctx, p, rows) for p in found]}


def seed_path(ix, seed_ids, node_id: int, max_len: int = 4) -> dict | None:
    """The cheapest path (either direction, every edge type) from any of ``seed_ids`` (a query's
    graph seeds) to ``node_id``, as :func:`path_dict` gives it; None when none is that short."""
    ctx = graph_of(ix)
    pos = ctx.positions(list(seed_ids))
    target = int(ctx.positions([node_id])[0])
    if target < 0 or not (pos >= 0).any():
        return None
    p = nearest_path(ctx.graph, pos[pos >= 0], target, max_len, "both")
    if p is None:
        return None
    return path_dict(ctx, p, display(ix, ctx.ids_of(list(p.nodes)).tolist()))
