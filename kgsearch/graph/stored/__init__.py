"""The graph as stored in the index, and the one policy that keeps it current.

Two stored forms:

* :mod:`.csr`: the CSR arrays as blobs (``graph.*``), edge arrays with room to spare, with the
  node ids, kinds, PageRank and community labels by position: every graph has them;
* :mod:`.rows`: per-node adjacency rows (table ``graph_adj``), written beside the blobs for
  graphs of at least ``graph_adjacency_rows`` edges (default 2,000,000), so that a query
  process reads the rows it needs instead of loading the CSR (docs/DESIGN.md says why both
  stay: measured in bench/results/graph_rows_small.md).

One write policy, :func:`.policy.apply` (the graph step's update): nothing, **patch**
(:mod:`.patch`: changed rows that keep their edge count, in place), **splice** (:mod:`.splice`:
the arrays rewritten one at a time around the changed rows) or **rebuild** (:mod:`.rebuild`:
everything from the ``edges`` table), or the splice deferred while the CSR may lag
(:mod:`.lag`, graphs with rows); the module docstring says which and when. Around it:
:mod:`.track` (which rows changed: the step's ``begin``/``end`` hooks), :mod:`.read` (nodes and
edges read from the tables as compact arrays) and :mod:`.scores` (PageRank and communities
after a write).

The kernels these use are in :mod:`kgsearch.graph.kernels`; the query-time view is
:mod:`kgsearch.graph.context`.
"""
