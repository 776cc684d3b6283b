"""A long code definition and the parts of its text as one family, wherever a search takes a
fixed number of nodes.

A definition's text past the loader's cut is in child nodes, its parts (kind ``chunk``,
``FLAG_PART``, keys ``<definition key>#part<n>``): more lines of one function, not more
functions. A channel's answer holding a definition and three of its parts has found one
definition, so every cut that takes a fixed number of nodes counts a family once:

* each channel's candidates (``SearchOptions.depth``): :func:`top_families` takes a channel's
  best nodes down to its ``depth``-th distinct definition, and keeps every node above that, parts
  included (the same ranking with depth 100 had four parts of two long docstrings take four of
  the dense channel's 100 slots, and the 101st, a gold method, fell out of the candidates);
* the graph stage's seeds (:func:`one_per_definition`): a family takes one seed slot, its best.

A part with no parent row counts as a definition of its own. An index without parts (every notes
or documents index: no file read by a code loader) reads nothing and cuts exactly as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..types import FLAG_PART
from .code import code_share

__all__ = ["Families", "NO_FAMILIES", "families", "read_families", "top_families", "one_per_definition"]


@dataclass(frozen=True)
class Families:
    """The parts of an index's long definitions: ``parts`` (sorted node ids) and ``owners``
    (each one's definition id, aligned). False when the index has none."""

    parts: np.ndarray
    owners: np.ndarray

    def __bool__(self) -> bool:
        return bool(len(self.parts))

    def _where(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.minimum(np.searchsorted(self.parts, ids), max(len(self.parts) - 1, 0))
        hit = self.parts[pos] == ids if len(self.parts) else np.zeros(len(ids), dtype=bool)
        return pos, hit

    def is_part(self, ids) -> np.ndarray:
        """Mask of ``ids`` that are parts.

        >>> Families(np.array([5, 9]), np.array([2, 2])).is_part(np.array([9, 2, 5])).tolist()
        [True, False, True]
        """
        ids = np.asarray(ids, dtype=np.int64)
        return self._where(ids)[1] if len(ids) else np.zeros(0, dtype=bool)

    def of(self, ids) -> np.ndarray:
        """The definition each of ``ids`` stands for: its definition for a part, else itself.

        >>> Families(np.array([5, 9]), np.array([2, 2])).of(np.array([9, 2, 7])).tolist()
        [2, 2, 7]
        """
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids) or not self:
            return ids.copy()
        pos, hit = self._where(ids)
        return np.where(hit, self.owners[pos], ids)


NO_FAMILIES = Families(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def read_families(conn) -> Families:
    """The index's parts and their definitions (nothing read when no file came from a code
    loader: :func:`kgsearch.query.code.code_share`, one pass over the files table)."""
    if not code_share(conn)[0]:
        return NO_FAMILIES
    rows = conn.execute(f"SELECT id, coalesce(parent_id, id) FROM nodes WHERE kind = 'chunk' AND flags & {FLAG_PART} "
                        f"ORDER BY id").fetchall()
    if not rows:
        return NO_FAMILIES
    a = np.array(rows, dtype=np.int64)
    return Families(a[:, 0].copy(), a[:, 1].copy())


def families(ix) -> Families:
    """:func:`read_families` of the open index ``ix``, once per generation."""
    return ix.cached("query.families", lambda: read_families(ix.conn))


def top_families(fetch: Callable[[int], tuple | str], k: int, fam: Families) -> tuple | str:
    """A ranking's best nodes down to its ``k``-th distinct definition (a part counts as its
    definition, :class:`Families`), every node above that kept: the nodes a cut at ``k`` takes
    when a family holds one slot. ``fetch(m)`` answers the ranking's best ``m`` as (ids, scores)
    best first, or a str saying why there is none (returned as it is); it is asked for more while
    parts of definitions already in take slots and the ranking has more to give. Without parts
    (``fam`` empty) this is ``fetch(k)``.

    >>> rank = (np.array([10, 11, 12, 13, 14]), np.array([5.0, 4.0, 3.0, 2.0, 1.0]))
    >>> fam = Families(np.array([11, 12]), np.array([10, 10]))      # 11 and 12: parts of 10
    >>> top_families(lambda m: (rank[0][:m], rank[1][:m]), 2, fam)[0].tolist()
    [10, 11, 12, 13]
    """
    res = fetch(k)
    if not fam or k <= 0:
        return res
    m = k
    while not isinstance(res, str):
        ids, scores = res
        _, first = np.unique(fam.of(ids), return_index=True)      # each family's first position
        if len(first) >= k:
            end = int(np.sort(first)[k - 1]) + 1
            return ids[:end], scores[:end]
        if len(ids) < m:                                         # the ranking has no more to give
            return res
        m += k - len(first)
        res = fetch(m)
    return res


def one_per_definition(s: np.ndarray, fam: np.ndarray) -> np.ndarray:
    """``s`` with every member of a family (``fam``: each position's definition,
    :meth:`Families.of`) but its best set to ``-inf``, so that a definition and its parts take
    one slot of a cut by score, not one each.

    >>> one_per_definition(np.array([3.0, 5.0, 1.0]), np.array([7, 7, 9])).tolist()
    [-inf, 5.0, 1.0]
    """
    o = np.lexsort((-s, fam))
    best = np.ones(len(o), dtype=bool)
    best[1:] = fam[o][1:] != fam[o][:-1]
    out = np.full(len(s), -np.inf)
    out[o[best]] = s[o[best]]
    return out
