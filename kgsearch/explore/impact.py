"""``kgsearch impact X``: what depends on X, transitively, and which tests reach it.

The start set is X and what it contains (a file: all its nodes); from there
:func:`kgsearch.graph.kernels.impact.dependents` follows the dependency types backwards (callers,
importers, subclasses, notes that link, KG nodes that depend on or require it) or forwards
(``feeds_into``, ``causes``, ...), see :data:`kgsearch.graph.kernels.impact.DEPENDENCY_TYPES`.
Dependents are ranked by distance (hops), then by the cheapest sum of ``1 / weight`` over
their shortest paths (strong edges first), then by key.

Tests (``tests=True``): the test files ranked by :mod:`.testscope`, from the tests the walk
reached and the tests that name the changed code.
"""
from __future__ import annotations

from ..errors import UsageError
from ..lines import quoted
from ..graph.kernels.impact import CONTAINS, DEPENDENCY_TYPES, dependents, descendants, type_sides
from .nodes import check_types, display, graph_of, resolve_start
from .testscope import test_files

__all__ = ["impact", "impact_of_nodes", "parse_types", "MAX_DEPTH"]

MAX_DEPTH = 10


def parse_types(spec) -> dict[str, str] | None:
    """``--types calls,imports:in,feeds_into:out`` -> ``{type: side}``; a type without a side
    takes its side from DEPENDENCY_TYPES ("in" when it is not listed there)."""
    if spec is None:
        return None
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: dict[str, str] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        name, _, side = item.partition(":")
        if side and side not in ("in", "out"):
            raise UsageError(f"--types: {quoted(item)}: the side after ':' must be in or out")
        out[name] = side or DEPENDENCY_TYPES.get(name, "in")
    if not out:
        raise UsageError("--types is empty; give edge types such as calls,imports")
    return out


def _check(depth: int, limit: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"--depth must be a whole number from 1 to {MAX_DEPTH}, got {depth!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"--limit must be a whole number >= 1, got {limit!r}")


def impact(ix, ref: str, depth: int = 3, types=None, tests: bool = False, limit: int = 50) -> dict:
    """What depends on node (or indexed file) ``ref`` within ``depth`` hops; with ``tests``, the
    test files that reach it, ranked. See :func:`impact_of_nodes` for the result."""
    _check(depth, limit)
    ctx = graph_of(ix)
    start, ids = resolve_start(ix, ctx, ref)
    out = impact_of_nodes(ix, ids, depth, types, tests, limit)
    out["of"] = start
    return out


def impact_of_nodes(ix, ids, depth: int = 3, types=None, tests: bool = False, limit: int = 50) -> dict:
    """Dependents of the nodes ``ids`` (and what they contain): ``{"depth", "types": {type:
    side}, "free": [the types followed at no hop: contains], "start": n, "total", "dependents": [{id, key, name, kind, path, relpath, line, test,
    distance, cost, via: {type, direction, key}}], "tests": [...] (with ``tests``)}``.
    ``via`` is the edge that brought the node in, seen from it (``out``: node -[type]-> key)."""
    _check(depth, limit)
    ctx = graph_of(ix)
    spec = parse_types(types)
    if spec is not None:                      # the names as the index has them ("Depends On": depends_on)
        spec = dict(zip(check_types(ctx, list(spec)), spec.values()))
    names = ctx.etype_names
    g = ctx.graph
    pos = ctx.positions(list(ids))
    pos = pos[pos >= 0]
    contains = names.index(CONTAINS) if CONTAINS in names else None
    start = descendants(g, pos, contains)
    back, fwd = type_sides(names, spec)
    free = [contains] if contains is not None and contains in back else None   # a container is as near as what it holds
    reach = dependents(g, start, back, fwd, depth, free=free)
    order = reach.nodes()
    shown = order[:limit]
    want = set(ctx.ids_of(shown).tolist()) | set(ctx.ids_of(reach.parent[shown]).tolist())
    rows = display(ix, want)
    deps = []
    for p in shown.tolist():
        nid = int(ctx.node_ids[p])
        parent = int(ctx.node_ids[reach.parent[p]])
        deps.append(dict(rows[nid], distance=int(reach.hops[p]), cost=round(float(reach.cost[p]), 6),
                         via={"type": names[int(reach.etype[p])], "direction": "in" if reach.forward[p] else "out",
                              "key": rows[parent]["key"]}))
    used = {t: s for t, s in (spec or DEPENDENCY_TYPES).items() if t in names}
    out = {"depth": depth, "types": used, "free": [CONTAINS] if free else [], "start": int(len(start)),
           "total": int(len(order)), "dependents": deps}
    has = sorted(n for n in names if n not in DEPENDENCY_TYPES and n != "similar_text")
    if spec is None and not any(t != CONTAINS for t in used) and has:
        # (a KG of its own edge types, `_hypernym`: none is a default dependency, so no dependent
        # would ever be found, and the answer "0 dependents" would read as a fact about the node)
        out["notice"] = (f"no edge type of this index is a default dependency type (calls, imports, links_to, "
                         f"depends_on, ...); it has {', '.join(has[:8])}{', ...' if len(has) > 8 else ''}: pass "
                         f"--types TYPE[:in|out] (e.g. --types {has[0]}:in)")
    elif spec is None and not len(order):
        notice = _own_types_notice(ix, ctx, start, set(used))
        if notice:
            out["notice"] = notice
    if tests:
        out["tests"] = test_files(ix, ctx, reach, start, limit)
    return out


def _own_types_notice(ix, ctx, start, followed: set[str]) -> str | None:
    """No dependents with the default types: when the start nodes' own edges are all of other
    types (a KG node, `_hypernym`, in an index that also has notes or code), say so, or "0
    dependents" reads as a fact about the node."""
    ids = [int(i) for i in ctx.ids_of(start)[:500]]
    if not ids:
        return None
    marks = ",".join("?" * len(ids))
    own = sorted(t for (t,) in ix.conn.execute(
        f"SELECT DISTINCT type FROM edges WHERE dst IS NOT NULL AND (src IN ({marks}) OR dst IN ({marks}))",
        ids + ids) if t not in followed and t not in ("similar_text", CONTAINS))
    if not own:
        return None
    who = display(ix, ids[:1])[ids[0]]["name"] if len(ids) == 1 else "the start nodes"
    return (f"{who} has no edge of the types followed (calls, imports, links_to, depends_on, ...); its edges are "
            f"{', '.join(own[:8])}{', ...' if len(own) > 8 else ''}: pass --types TYPE[:in|out] "
            f"(e.g. --types {own[0]}:in)")
