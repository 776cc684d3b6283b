"""What every part of the ``neighbors`` step shares: its constants, the prose nodes, the grid
statistics the lists are scored with, and how a node's terms and its query are read.

**Grid statistics** (:class:`Stats`). The step scores with N, avgdl and each term's df rounded
to a geometric grid of :data:`GRID` points per doubling (:func:`grid`; N below 64 and df up to
32 are used as they are). A fresh build of the same files has the same N, avgdl and dfs, so the
same grid values and the same lists. N or avgdl reach the next grid point once per ~4 % change
of the collection (then the whole step runs once); a term's df once per ~4 % change of its df
(then the lists of its holders: :mod:`.delta`). Rounding moves an idf by at most 0.022 and a
length norm by at most 2.2 % of its ``dl / avgdl`` part.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ...store.sql import exec_in_chunks
from ...types import FLAG_AUTO, FLAG_PART

__all__ = ["EDGE_TYPE", "K", "M", "MIN_SIM", "FULL_FRACTION", "STATE_KEY", "TIES", "CODE_KINDS", "NOT_PROSE", "BATCH",
           "GRID", "grid", "Stats", "node_terms", "query_terms", "prose_ids", "delete_edges"]

EDGE_TYPE = "similar_text"
K = 10                       # neighbours per node
M = 24                       # distinctive terms per node used as its query
MIN_SIM = 0.05               # drop weaker neighbours
FULL_FRACTION = 0.2          # more affected prose nodes than this share: one full pass instead
STATE_KEY = "text.neighbors"  # the statistics the stored lists were computed with
TIES = "key"                 # how ties at the K-th place are broken (recorded in the state)
CODE_KINDS = ("module", "class", "function", "method")
NOT_PROSE = FLAG_AUTO | FLAG_PART     # flags of nodes that are no prose: shared (tags, entities), code parts
BATCH = 500                  # nodes per SQL read and per written batch
GRID = 16                    # grid points per doubling (2 ** (1/16) = 1.044)


def grid(x: float) -> float:
    """``x`` rounded to the nearest point ``2 ** (k / GRID)``."""
    return 2.0 ** (round(GRID * math.log2(x)) / GRID) if x > 0 else 0.0


@dataclass(frozen=True)
class Stats:
    """The statistics the lists are scored with: the live ones (``on_grid=False``: the kernel
    comparisons in tests) or their grid values (the step)."""
    n: float
    avgdl: float
    on_grid: bool = True

    @classmethod
    def of(cls, st: dict, on_grid: bool = True) -> "Stats":
        n, avgdl = float(st["n"]), float(st["avgdl"])
        if not on_grid:
            return cls(n, avgdl, False)
        # (N >= 64 on the grid stays above the df window's floor of 50: every idf positive)
        return cls(n if n < 64 else grid(n), grid(avgdl), True)

    @property
    def max_df(self) -> int:
        return max(50, int(0.05 * self.n))

    def df(self, df: int) -> float:
        return float(df) if not self.on_grid or df <= 32 else grid(df)

    def idf(self, df: int) -> float:
        d = self.df(df)
        return math.log1p((self.n - d + 0.5) / (d + 0.5))

    def window(self, df: int) -> float | None:
        """The grid df a list sees, None outside the window."""
        return self.df(df) if 2 <= df <= self.max_df else None

    def key(self) -> dict:
        return {"n": self.n, "avgdl": self.avgdl, "max_df": self.max_df, "grid": GRID if self.on_grid else None}


def node_terms(an, nw: int, name: str | None, text: str | None) -> list[str]:
    """A node's terms as the kernel reads them: the name's ``nw`` times, then the text's."""
    return an(name or "") * nw + an(text or "")


def query_terms(counts: Counter, idf, m: int) -> list[tuple[str, int]]:
    """The ``m`` most distinctive of a node's window terms (``counts``): by ``count * idf``,
    ties by term; ``idf(term)`` as the kernel scores it."""
    return sorted(counts.items(), key=lambda kv: (-kv[1] * idf(kv[0]), kv[0]))[:m]


def prose_ids(conn) -> list[int]:
    """Ids of the prose nodes (not code symbols nor the parts of their texts, not shared
    tag/entity nodes), ascending: one
    ``group_concat`` parsed by numpy (a Python row per node took 0.48-0.59 s at 1M nodes, this
    0.30-0.34 s; most of it is SQLite's scan)."""
    marks = ",".join("?" * len(CODE_KINDS))
    text = conn.execute(f"SELECT group_concat(id) FROM (SELECT id FROM nodes WHERE flags & {NOT_PROSE} = 0 "
                        f"AND kind NOT IN ({marks}) ORDER BY id)", CODE_KINDS).fetchone()[0]
    return np.fromstring(text, dtype=np.int64, sep=",").tolist() if text else []


def delete_edges(conn, ids: list[int] | None) -> None:
    """Drop every ``similar_text`` edge (``ids`` None), or those from or to ``ids`` and those
    whose target is gone."""
    if ids is None:
        conn.execute("DELETE FROM edges WHERE type=? AND file_id IS NULL", (EDGE_TYPE,))
        return
    # (``+file_id``: not by the file_id index, which SQLite prefers without statistics and
    # which lists every similar_text edge, 10M at 1M nodes, 2-4 s; by src/dst instead)
    exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND (src IN ({}) OR dst IN ({}))",
                   ids, before=[EDGE_TYPE], repeat=2)
    conn.execute("DELETE FROM edges WHERE type=? AND +file_id IS NULL AND dst IS NULL", (EDGE_TYPE,))
