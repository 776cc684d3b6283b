"""New nodes placed in the communities of the last full CNM run, without running it again.

Between full community runs (``graph_communities_drift``, :mod:`kgsearch.graph.stored.scores`)
existing nodes keep their labels and a new node joins the community it is most strongly linked
to: :func:`assign_new_nodes` reads the whole undirected projection (the reference),
:func:`assign_new_nodes_local` only the new nodes' own edges (same result, cost proportional to
the new nodes), both through :func:`place_by_edges`.
"""
from __future__ import annotations

import numpy as np

from .csr import Graph

__all__ = ["assign_new_nodes", "assign_new_nodes_local", "place_by_edges"]


def assign_new_nodes(g: Graph, labels: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, int]:
    """Give every node labelled -1 a community: the one it is most strongly linked to.

    In rounds (so a chain of new nodes follows its labelled end): each unlabelled node takes
    the label with the largest summed undirected edge weight among its labelled neighbours,
    ties to the smallest label. Unlabelled nodes with no labelled neighbour after that form
    new communities, one per connected group among themselves (numbered after the largest
    label). Existing labels never change. Returns ``(labels, number of nodes placed)``.
    """
    labels = np.asarray(labels, dtype=np.int32).copy()
    todo = int((labels < 0).sum())
    if not todo:
        return labels, 0
    u, v, w = g.undirected_pairs(True)
    off = u != v
    u, v, w = u[off], v[off], w[off]
    a = np.concatenate([u, v])                  # node being placed
    b = np.concatenate([v, u])                  # its neighbour
    ww = np.concatenate([w, w])
    return place_by_edges(labels, a, b, ww, rounds), todo


def place_by_edges(labels: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray,
                   rounds: int = 10) -> np.ndarray:
    """The placing rule of :func:`assign_new_nodes`, on directed pairs
    ``a -> b`` (a: a node to place, b: its neighbour, weight ``w``; both directions listed):
    in rounds, an unlabelled node takes its neighbours' label of largest summed weight (ties to
    the smallest label); the rest form new communities, one per connected group. Changes
    ``labels`` in place and returns it."""
    for _ in range(rounds):
        sel = (labels[a] < 0) & (labels[b] >= 0)
        if not sel.any():
            break
        top = int(labels.max()) + 1
        na, lb, wt = a[sel], labels[b[sel]].astype(np.int64), w[sel]
        key = na * top + lb
        uk, inv = np.unique(key, return_inverse=True)
        tot = np.bincount(inv, weights=wt)
        node, lab = uk // top, uk % top
        order = np.lexsort((lab, -tot, node))
        node, lab = node[order], lab[order]
        first = np.ones(len(node), dtype=bool)
        first[1:] = node[1:] != node[:-1]
        labels[node[first]] = lab[first]
    rest = np.flatnonzero(labels < 0)
    if len(rest):
        parent = {int(x): int(x) for x in rest}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        inner = (labels[a] < 0) & (labels[b] < 0)
        for x, y in zip(a[inner].tolist(), b[inner].tolist()):
            rx, ry = find(x), find(y)
            if rx != ry:
                parent[max(rx, ry)] = min(rx, ry)
        nxt = int(labels.max()) + 1 if (labels >= 0).any() else 0
        names: dict[int, int] = {}
        for x in rest.tolist():
            r = find(x)
            if r not in names:
                names[r] = nxt
                nxt += 1
            labels[x] = names[r]
    return labels


def assign_new_nodes_local(g: Graph, labels: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, int]:
    """:func:`assign_new_nodes` reading only the unlabelled nodes' own
    edges (both directions), so the cost is proportional to the new nodes, not the graph."""
    labels = np.asarray(labels, dtype=np.int32).copy()
    todo = int((labels < 0).sum())
    if not todo:
        return labels, 0
    new = np.flatnonzero(labels < 0)
    a, b, w, _ = g.neighbors(new, "both")            # a: the new node, b: its neighbour
    keep = a != b
    a, b, w = a[keep], b[keep], w[keep].astype(np.float64)
    return place_by_edges(labels, a, b, w, rounds), todo
