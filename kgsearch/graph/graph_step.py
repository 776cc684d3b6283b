"""Derived-data step ``graph``: the typed, weighted graph of the resolved edges, PageRank and
communities, kept current in the index.

The step protocol (:mod:`kgsearch.indexer.steps`): ``NAME``, ``update(ix, changes, settings,
progress=None) -> dict`` (inside the index transaction, after the text and neighbour steps),
and the hooks ``begin(ix, changes)`` (before the run changes any row) and ``end(ix)`` (at the
end of the run, whether or not the step ran). The hooks track which nodes' out-edges change
(:mod:`kgsearch.graph.stored.track`), so the step updates only those rows and the indexer
knows nothing of how the graph is stored.

The graph: dense node positions ``0..n-1`` are the live node ids in ascending order; edge
weight = ``edges.weight * edge_weight(type)`` (:func:`kgsearch.config.edge_weights`: the
built-in table, or ``settings["edge_weights"]``, else the config file's ``edge_weights``),
stored in float32; only resolved edges (``dst`` not NULL). How it is stored and which write
path a run takes (nothing, patch, splice or rebuild): :mod:`kgsearch.graph.stored`, its policy
in :func:`kgsearch.graph.stored.policy.apply`. The step also keeps meta ``graph.entity_keys``
(:mod:`kgsearch.graph.entity_keys`) for the query-time entity channel.

The query-time side (positions, PageRank, communities, walks, HITS, entity channels) is
:mod:`kgsearch.graph.context`, which reads what is stored here.
"""
from __future__ import annotations

from ..config import edge_weights
from ..settings import GraphSettings, IndexSettings
from .stored import policy, track
from .stored.csr import PREFIX

__all__ = ["NAME", "update", "begin", "end", "PREFIX"]

NAME = "graph"


def _weight_table(gs: GraphSettings) -> dict[str, float]:
    if gs.edge_weights is not None:
        return edge_weights({"edge_weights": dict(gs.edge_weights)})
    return edge_weights()


def begin(ix, changes) -> None:
    """Start of an index run: track the rows that change, when an incremental update can use
    them (a stored graph and not a full run)."""
    if not changes.full and ix.get_array(PREFIX + "shape") is not None:
        track.track_edges(ix.conn)


def update(ix, changes, settings=None, progress=None) -> dict:
    """Bring the stored graph, PageRank and communities in line with ``changes``."""
    gs = IndexSettings.coerce(settings).graph
    return policy.apply(ix, changes, gs, _weight_table(gs), progress)


def end(ix) -> None:
    """End of an index run: stop tracking (rows the step did not take in make its next run a
    rebuild)."""
    track.end_tracking(ix)
