"""Graph signals in numpy: CSR adjacency, PageRank, random walk with restart, HITS and
greedy-modularity communities. Nodes are ``0 .. n-1``; every kernel returns arrays aligned
with them. ``kgsearch.graph.index`` connects these to the index (build, persist, load).

Examples
--------
>>> from kgsearch.graph import Graph, pagerank, rwr, hits, greedy_modularity, modularity
>>> g = Graph.from_edges([0, 1, 2, 3], [1, 2, 0, 0])
>>> pagerank(g).argmax().item()
0
"""
from __future__ import annotations

from .communities import greedy_modularity, modularity
from .csr import Graph, GraphError
from .hits import hits
from .pagerank import PowerIterationFailedConvergence, pagerank, rwr

__all__ = ["Graph", "GraphError", "PowerIterationFailedConvergence", "pagerank", "rwr", "hits",
           "greedy_modularity", "modularity"]
