"""Questions about the graph of an index: paths between two nodes, what depends on a node
(and which tests reach it), and the communities with extractive summaries.

Each function takes an open :class:`~kgsearch.store.db.Index` and returns plain dicts (the
JSON of the matching command): :func:`find_paths` (``kgsearch path``), :func:`impact`
(``kgsearch impact``), :func:`communities` and :func:`global_answer` (``kgsearch
communities``). The graph kernels are :mod:`kgsearch.graph.kernels.paths` and
:mod:`kgsearch.graph.kernels.impact`.
"""
from __future__ import annotations

from .impact import impact, impact_of_nodes
from .paths import find_paths, seed_path
from .topics import communities, global_answer

__all__ = ["find_paths", "seed_path", "impact", "impact_of_nodes", "communities", "global_answer"]
