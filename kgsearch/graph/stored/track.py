"""Which nodes' out-edge rows changed in an index run: the graph step's ``begin`` and ``end`` hooks.

At the start of an incremental run (:func:`track_edges`, the graph step's ``begin``) TEMP
triggers on ``edges`` record the source of every inserted, deleted or updated edge row in
``temp.graph_dirty`` (foreign-key actions, a node removed under its edges, fire them too). No
indexer code has to report what it touched, and the neighbour step's ``similar_text`` edges are
covered as well. The graph step reads the set (:func:`dirty_sources`) and empties it
(:func:`clear_dirty`); at the end of the run (:func:`end_tracking`, the step's ``end``) the
triggers go, and rows the step did not take in (it did not run: ``--steps``) make its next run
a full rebuild (meta :data:`NEEDS_FULL`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["track_edges", "end_tracking", "tracking", "dirty_sources", "clear_dirty", "NEEDS_FULL"]

NEEDS_FULL = "graph.needs_full"  # meta: edges changed while the graph step did not run

_TRIGGERS = {
    "graph_dirty_ins": "AFTER INSERT ON main.edges BEGIN {add_new} END",
    "graph_dirty_del": "AFTER DELETE ON main.edges BEGIN {add_old} END",
    "graph_dirty_upd": "AFTER UPDATE OF src, dst, weight, type ON main.edges BEGIN {add_old} {add_new} END",
}
# (INSERT OR IGNORE would not do: a foreign-key action runs the trigger with ABORT conflicts)
_ADD = "INSERT INTO graph_dirty(src) SELECT {v}.src WHERE NOT EXISTS (SELECT 1 FROM graph_dirty WHERE src = {v}.src);"


def track_edges(conn) -> None:
    """Record, from now on in this connection, the source of every edge row that changes."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS graph_dirty(src INTEGER PRIMARY KEY)")
    for name, body in _TRIGGERS.items():
        conn.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {name} "
                     + body.format(add_new=_ADD.format(v="NEW"), add_old=_ADD.format(v="OLD")))


def tracking(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_temp_master WHERE type='trigger' AND name='graph_dirty_ins'"
                        ).fetchone() is not None


def dirty_sources(conn) -> np.ndarray:
    rows = conn.execute("SELECT src FROM temp.graph_dirty ORDER BY src").fetchall()
    return np.array([r[0] for r in rows], dtype=np.int64)


def clear_dirty(conn) -> None:
    if tracking(conn):
        conn.execute("DELETE FROM temp.graph_dirty")


def end_tracking(ix) -> None:
    """End of an index run: drop the triggers. Changed rows the graph step did not take in
    (it did not run: ``--steps``) make its next run a full rebuild."""
    conn = ix.conn
    if not tracking(conn):
        return
    if conn.execute("SELECT 1 FROM temp.graph_dirty LIMIT 1").fetchone() is not None:
        ix.set_meta_json(NEEDS_FULL, True)
    for name in _TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS temp.{name}")
    conn.execute("DROP TABLE IF EXISTS temp.graph_dirty")
