"""Graph signals in numpy: CSR adjacency, PageRank, random walk with restart, HITS and
greedy-modularity communities. No scipy, networkx or igraph at run time.

Nodes are numbered ``0 .. n-1`` and every kernel returns arrays aligned with them.
The kernels live in ``kgsearch.graph.kernels`` (one algorithm per module, slow references in
``kernels/reference.py``); ``kgsearch.graph.graph_step`` is the index step, which keeps the
stored graph current through ``kgsearch.graph.stored`` (one write policy: patch, splice or
rebuild); ``kgsearch.graph.context`` reads it at query time.

=========================================  ===============================================
``Graph.from_edges(src, dst, weight=None,  directed weighted graph; parallel edges count as
num_nodes=None, etype=None)``              one edge with the summed weight
``pagerank(g, alpha=.85,                   networkx's conventions (dangling nodes, stop at
personalization=None, tol=1e-6,            L1 change < n * tol); raises
max_iter=100, dangling=None)``             ``PowerIterationFailedConvergence``
``rwr(g, seeds, restart=.2, max_iter=20,   per-query personalized PageRank from weighted
tol=1e-3, topk=10, patience=2,             seeds; stops early once the top ``topk`` is
hops=None, direction="out")``              stable; ``direction="both"`` walks edges either way
``hits(g, max_iter=100, tol=1e-8,          hubs and authorities (sum 1 each), as
nodes=None)``                              ``networkx.hits``; ``nodes=`` runs on a subgraph
``greedy_modularity(g, resolution=1.0,     community label per node (0 = largest), the same
weight=True)``                             partition as networkx's CNM, ties included
``modularity(g, labels, resolution=1.0)``  networkx's modularity of the undirected projection
=========================================  ===============================================

Examples
--------
>>> from kgsearch.graph import Graph, pagerank, rwr, hits, greedy_modularity, modularity
>>> g = Graph.from_edges([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3])
>>> pagerank(g).round(3).tolist()
[0.064, 0.08, 0.093, 0.269, 0.254, 0.241]
>>> rwr(g, {0: 1.0}).argmax().item()
0
>>> hubs, authorities = hits(g)
>>> labels = greedy_modularity(g)
>>> labels.tolist(), round(modularity(g, labels), 4)
([0, 0, 0, 1, 1, 1], 0.3571)
"""
from __future__ import annotations

from .kernels.communities import greedy_modularity, modularity
from .kernels.csr import Graph, GraphError
from .kernels.hits import hits
from .kernels.pagerank import PowerIterationFailedConvergence, pagerank, rwr

__all__ = ["Graph", "GraphError", "PowerIterationFailedConvergence", "pagerank", "rwr", "hits",
           "greedy_modularity", "modularity"]
