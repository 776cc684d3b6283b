"""networkx oracles for the graph queries (paths, dependents), shared by the tests and
bench/graph_queries.py. Every function takes the networkx module, so nothing here imports it."""
from __future__ import annotations

import numpy as np


def nx_cost_graph(nx, g, direction: str = "both", types=None):
    """A networkx graph whose edge ``cost`` is the cheapest 1 / weight between two nodes, as a
    hop of :mod:`kgsearch.graph.kernels.paths` takes it (undirected for ``both``, reversed for ``in``)."""
    s, d, w, t = g.edges()
    G = nx.Graph() if direction == "both" else nx.DiGraph()
    G.add_nodes_from(range(g.n))
    keep = np.asarray(w, dtype=np.float64) > 0
    if types is not None:
        keep &= np.isin(t, np.asarray(list(types), dtype=np.int64))
    for u, v, ww in zip(s[keep].tolist(), d[keep].tolist(), np.asarray(w, dtype=np.float64)[keep].tolist()):
        if direction == "in":
            u, v = v, u
        c = 1.0 / ww
        if u == v:
            continue
        if not G.has_edge(u, v) or c < G[u][v]["cost"]:
            G.add_edge(u, v, cost=c)
    return G


def nx_k_paths(nx, G, a: int, b: int, k: int) -> list[tuple[float, tuple[int, ...]]]:
    """The first ``k`` of ``networkx.shortest_simple_paths`` (Yen's algorithm) with their costs
    summed left to right."""
    out = []
    try:
        for p in nx.shortest_simple_paths(G, a, b, weight="cost"):
            c = 0.0
            for u, v in zip(p, p[1:]):
                c += G[u][v]["cost"]
            out.append((c, tuple(p)))
            if len(out) >= k:
                break
    except nx.NetworkXNoPath:
        pass
    return out


def same_paths(got, want, tol: float = 1e-9) -> str | None:
    """None when two k-best lists agree: equal costs, and equal node sequences for every path
    strictly shorter than the last (paths tied at the last cost may differ); else the reason."""
    gc = [c for c, _ in got]
    wc = [c for c, _ in want]
    if len(gc) != len(wc) or not np.allclose(gc, wc, rtol=tol, atol=tol):
        return f"costs differ: {gc} vs {wc}"
    if wc:
        last = wc[-1]
        a = {p for c, p in got if c < last - 1e-7}
        b = {p for c, p in want if c < last - 1e-7}
        if a != b:
            return f"paths differ below the last cost: {sorted(a ^ b)[:3]}"
    return None


def nx_dependents(nx, g, starts, back, fwd, depth: int, free=frozenset()) -> dict[int, int]:
    """``{node: hops}`` within ``depth`` of ``starts`` by breadth-first search on the graph of
    dependency edges (types ``back`` reversed, ``fwd`` as they are); with ``free`` types (reversed,
    no hop), Dijkstra with those edges weighing 0 and the others 1."""
    s, d, w, t = g.edges()
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    ok = np.asarray(w, dtype=np.float64) > 0

    def add(a, b, hop):
        if not G.has_edge(a, b) or G[a][b]["hop"] > hop:
            G.add_edge(a, b, hop=hop)

    for u, v, tt in zip(s[ok].tolist(), d[ok].tolist(), t[ok].tolist()):
        if tt in free:
            add(v, u, 0)
        elif tt in back:
            add(v, u, 1)
        if tt in fwd:
            add(u, v, 1)
    if free:
        dist = nx.multi_source_dijkstra_path_length(G, {int(x) for x in starts}, cutoff=depth, weight="hop")
        return {int(v): int(h) for v, h in dist.items()}
    src = "__start__"
    G.add_edges_from((src, int(x)) for x in starts)
    dist = nx.single_source_shortest_path_length(G, src, cutoff=depth + 1)
    return {v: h - 1 for v, h in dist.items() if v != src}
