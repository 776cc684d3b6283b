"""Derived step ``neighbors``: a text-similarity graph over prose nodes (``similar_text`` edges).

Plain documents have no links, yet documents that share rare terms are related; measured on
the shared benchmark sets, smoothing scores over such a neighbour graph was the strongest
single add-on to BM25 (docs/ranking.md). This step gives every prose node (not code symbols,
not shared tag/entity nodes) up to ``K`` out-edges ``similar_text`` to the nodes that score
highest when its own ``M`` most distinctive terms are used as a BM25 query. Edge weight =
that score divided by the node's score against itself, in (0, 1]. The graph step then treats
them like any typed edge (proximity, PageRank, communities); their type weight is in
``config.EDGE_WEIGHTS``.

Terms used: ``2 <= df <= max(50, 5% of N)`` (a term in one document links nothing; a common
term links everything), ranked by ``tf * idf`` within the node.

One concept, four modules:

* :mod:`.common`: the constants, the prose nodes, the grid statistics the lists are scored
  with (N, avgdl and dfs rounded to a geometric grid, so that an index updated in place scores
  exactly like a fresh build of the same files);
* :mod:`.exact`: the exact lists (every posting of the chosen terms) and the step at or below
  :data:`~.approx.EXACT_MAX_NODES` prose nodes; ties by node key, so an updated index keeps a fresh
  build's lists;
* :mod:`.delta`: which exact lists an incremental run must recompute (entry bars and the four
  rules), so a one-word edit at 100K prose nodes recomputes ~20 lists instead of all (113 s);
* :mod:`.approx`: the near-linear two-stage kernel above :data:`~.approx.EXACT_MAX_NODES` (200K) prose
  nodes; the run report says it approximates.

:func:`update` (below) picks between them. When the grid values, the BM25 parameters or the
tie rule differ from those the stored lists were computed with (:data:`STATE_KEY`), or more than
``FULL_FRACTION`` of the prose nodes are reached, every list is recomputed.
"""
from __future__ import annotations

from ...settings import IndexSettings
from ..postings import stored_params
from . import approx
from .common import EDGE_TYPE, K, M, STATE_KEY, delete_edges, prose_ids
from .exact import update_exact

__all__ = ["NAME", "update", "EDGE_TYPE", "K", "M", "STATE_KEY"]

NAME = "neighbors"


def update(ix, changes, settings=None, progress=None) -> dict:
    """Maintain ``similar_text`` edges for ``changes`` (see the module docstring)."""
    conn = ix.conn
    if not IndexSettings.coerce(settings).graph.neighbors:
        had = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
        if had:
            delete_edges(conn, None)
            changes.edges_changed = True
        ix.set_meta_json(STATE_KEY, None)
        return {"skipped": "neighbors=false in settings"}
    st, params = stored_params(ix)
    if st is None:
        return {"skipped": "no text index"}
    have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
    if have and not (changes.full or changes.added or changes.modified or changes.removed) \
            and ix.meta_json(STATE_KEY, None) is not None:
        return {"rebuilt": False}               # (before listing the prose nodes: 1.4 s at 1M)
    prose = prose_ids(conn)
    if len(prose) > approx.EXACT_MAX_NODES:     # near-linear, approximate: says so
        ix.set_meta_json(STATE_KEY, {"method": "scaled"})  # (back below the limit: one exact full pass)
        return approx.update_approx(ix, changes, prose, st, params, progress)
    return update_exact(ix, changes, prose, st, params, progress)
