"""Slow, obvious pure-Python versions of every graph kernel, for tests.

Each mirrors the textbook statement (and networkx's conventions) with dicts and loops, so the
fast numpy kernels can be checked against code that is easy to read. Do not use them on large
graphs: they are O(n * m) or worse.
"""
from __future__ import annotations

from collections import defaultdict

from .csr import Graph

__all__ = ["pagerank_ref", "rwr_ref", "hits_ref", "greedy_modularity_ref", "modularity_ref"]


def _edges(g: Graph) -> list[tuple[int, int, float]]:
    s, d, w, _ = g.edges()
    return list(zip(s.tolist(), d.tolist(), [float(x) for x in w]))


def _normalise(vec: dict[int, float] | None, n: int) -> dict[int, float]:
    if vec is None:
        return {i: 1.0 / n for i in range(n)}
    s = sum(vec.values())
    return {i: vec.get(i, 0.0) / s for i in range(n)}


def pagerank_ref(g: Graph, alpha: float = 0.85, personalization: dict | None = None,
                 tol: float = 1e-6, max_iter: int = 100, dangling: dict | None = None) -> list[float]:
    """PageRank as networkx's ``_pagerank_python``; raises ``RuntimeError`` when not converged."""
    n = g.n
    if n == 0:
        return []
    out_w = [0.0] * n
    for u, _, w in _edges(g):
        out_w[u] += w
    p = _normalise(personalization, n)
    dw = p if dangling is None else _normalise(dangling, n)
    x = [1.0 / n] * n
    for _ in range(max_iter):
        last = x
        x = [0.0] * n
        danglesum = alpha * sum(last[i] for i in range(n) if out_w[i] == 0)
        for u, v, w in _edges(g):
            if out_w[u] > 0:
                x[v] += alpha * last[u] * w / out_w[u]
        for i in range(n):
            x[i] += danglesum * dw[i] + (1.0 - alpha) * p[i]
        if sum(abs(x[i] - last[i]) for i in range(n)) < n * tol:
            return x
    raise RuntimeError(f"pagerank_ref did not converge in {max_iter} iterations")


def rwr_ref(g: Graph, seeds: dict[int, float], restart: float = 0.2, max_iter: int = 20,
            tol: float = 1e-3, topk: int | None = 10, patience: int | None = 2) -> list[float]:
    """Random walk with restart with ``rwr``'s stopping rules, starting at the seeds."""
    n = g.n
    out_w = [0.0] * n
    for u, _, w in _edges(g):
        out_w[u] += w
    s = _normalise(seeds, n)
    x = [s[i] for i in range(n)]
    prev, stable = None, 0
    for _ in range(max_iter):
        last = x
        x = [0.0] * n
        for u, v, w in _edges(g):
            if out_w[u] > 0:
                x[v] += (1 - restart) * last[u] * w / out_w[u]
        lost = sum(last[i] for i in range(n) if out_w[i] == 0)
        for i in range(n):
            x[i] += ((1 - restart) * lost + restart) * s[i]
        err = sum(abs(x[i] - last[i]) for i in range(n))
        if err < tol:
            break
        if topk and patience:
            top = sorted((i for i in range(n) if x[i] > 0), key=lambda i: (-x[i], i))[:topk]
            if top == prev:
                stable += 1
                if stable >= patience:
                    break
            else:
                stable = 0
            prev = top
    return x


def hits_ref(g: Graph, max_iter: int = 1000, tol: float = 1e-12) -> tuple[list[float], list[float]]:
    """HITS as networkx's ``_hits_python`` (power iteration from uniform hubs), sums 1 each."""
    n = g.n
    if n == 0:
        return [], []
    edges = _edges(g)
    h = [1.0 / n] * n
    for _ in range(max_iter):
        last = h
        a = [0.0] * n
        for u, v, w in edges:
            a[v] += last[u] * w
        h = [0.0] * n
        for u, v, w in edges:
            h[u] += a[v] * w
        mh, ma = max(h), max(a)
        if mh == 0:
            return [1.0 / n] * n, [1.0 / n] * n
        h = [x / mh for x in h]
        a = [x / ma for x in a]
        if sum(abs(h[i] - last[i]) for i in range(n)) < tol:
            break
    else:
        raise RuntimeError(f"hits_ref did not converge in {max_iter} iterations")
    sh, sa = sum(h), sum(a)
    return [x / sh for x in h], [x / sa for x in a]


def _undirected(g: Graph, weight: bool) -> tuple[dict[tuple[int, int], float], list[float]]:
    pairs: dict[tuple[int, int], float] = defaultdict(float)
    for u, v, w in _edges(g):
        key = (min(u, v), max(u, v))
        pairs[key] = 1.0 if not weight else pairs[key] + w
    deg = [0.0] * g.n
    for (u, v), w in pairs.items():
        deg[u] += w
        deg[v] += w
    return pairs, deg


def greedy_modularity_ref(g: Graph, resolution: float = 1.0, weight: bool = True) -> list[set[int]]:
    """CNM greedy modularity with networkx's update arithmetic and tie rule, by full scans.

    Every step scans all pairs for the largest gain (ties: smallest ``(u, v)``), merges
    ``u`` into ``v`` and updates the gains of the neighbours. Returns the communities sorted
    by size (largest first), ties by largest member, like networkx.
    """
    n = g.n
    pairs, deg = _undirected(g, weight)
    m = sum(deg) / 2
    if m <= 0:
        return [{i} for i in range(n)]
    q0 = 1 / m
    a = [d * q0 * 0.5 for d in deg]
    dq: dict[int, dict[int, float]] = {i: {} for i in range(n)}
    for (u, v), w in pairs.items():
        if u != v:
            dq[u][v] = dq[v][u] = q0 * w - resolution * (a[u] * a[v] + a[v] * a[u])
    comm = {i: {i} for i in range(n)}
    while True:
        best = None
        for u in dq:
            for v, d in dq[u].items():
                if best is None or (-d, u, v) < best:
                    best = (-d, u, v)
        if best is None or -best[0] < 0:
            break
        _, u, v = best
        for w in set(dq[u]) | set(dq[v]):
            if w in (u, v):
                continue
            if w in dq[u] and w in dq[v]:
                new = dq[v][w] + dq[u][w]
            elif w in dq[v]:
                new = dq[v][w] - resolution * (a[u] * a[w] + a[w] * a[u])
            else:
                new = dq[u][w] - resolution * (a[v] * a[w] + a[w] * a[v])
            dq[v][w] = dq[w][v] = new
        for w in dq[u]:
            del dq[w][u]
        del dq[u]
        comm[v] |= comm.pop(u)
        a[v] += a[u]
        a[u] = 0.0
    return sorted(comm.values(), key=lambda c: (-len(c), max(c)))


def modularity_ref(g: Graph, communities: list[set[int]], resolution: float = 1.0,
                   weight: bool = True) -> float:
    """Modularity from the definition over all node pairs (undirected projection)."""
    pairs, deg = _undirected(g, weight)
    m = sum(pairs.values())
    if m <= 0:
        return 0.0
    label = {x: c for c, members in enumerate(communities) for x in members}
    adj: dict[tuple[int, int], float] = defaultdict(float)
    for (u, v), w in pairs.items():
        adj[u, v] += w if u != v else 2 * w
        if u != v:
            adj[v, u] += w
    q = 0.0
    for i in range(g.n):
        for j in range(g.n):
            if label[i] == label[j]:
                q += adj.get((i, j), 0.0) - resolution * deg[i] * deg[j] / (2 * m)
    return q / (2 * m)
