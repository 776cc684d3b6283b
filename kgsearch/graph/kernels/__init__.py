"""The graph kernels, one algorithm per module, numpy only, each with its slow reference in
:mod:`.reference` (networkx's layout and conventions; ``kgsearch.graph`` re-exports the public
ones):

=====================  ===================================================================
``csr``                ``Graph``: CSR arrays (forward rows, reverse permutation), neighbours,
                       subgraphs, the blob layout; ``row_blocks``
``build``              ``from_edge_arrays``: the CSR from compact edge arrays in little memory
``pagerank``           ``pagerank`` (networkx's rule) and ``rwr`` (per-query personalised walk)
``pagerank_lean``      ``pagerank_lean`` (same floats, no operator), ``pagerank_csr`` (chunked,
                       warm start, stored arrays)
``rows_walk``          ``rwr_rows``: the pruned walk over per-node rows, step for step
``hits``               ``hits`` (Lanczos or power iteration, on a subgraph if asked)
``communities``        ``greedy_modularity`` (CNM, networkx's partition), ``modularity``,
                       linked-pair counts
``placement``          new nodes placed in existing communities
``splice``             rows of a CSR replaced without sorting the graph again
``proximity``          query-time typed-edge proximity, neighbour means, intent edges, HITS
                       adjustments
``reference``          the slow, obvious versions the tests compare with
=====================  ===================================================================

Nothing here touches an index: :mod:`kgsearch.graph.stored` keeps the index's graph and
:mod:`kgsearch.graph.context` reads it at query time.
"""
