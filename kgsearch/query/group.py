"""Files as results (``--group file``): each file ranked by the evidence of its nodes.

A file's score is its best node's score plus the next ones' decayed,
``s1 + d*s2 + d^2*s3`` (:attr:`Tuning.file_decay` = d, at most :attr:`Tuning.file_members`
nodes): a file where three functions match the task is more likely the place to change than one
with a single equally good match, but ten weak matches do not outweigh one strong one. The
result hit of a file is its best node's hit (its channels and signals explain the file's
first term), renamed to the file, with its matching nodes listed in ``members``.
"""
from __future__ import annotations

import numpy as np

from ..store.rows import rel_path
from .options import Hit

__all__ = ["group_by_file", "file_hit"]


def group_by_file(cand: np.ndarray, fused: np.ndarray, order: list[int], meta: dict[int, dict], k: int,
                  decay: float, members: int, unit_of: dict[str, str] | None = None
                  ) -> list[tuple[float, list[int]]]:
    """``[(file score, positions of its nodes best first)]`` for the best ``k`` files, from
    candidate positions ``order`` (best first) and their display fields ``meta``.
    ``unit_of``: path -> the path it counts under (a type stub under its implementation,
    :func:`kgsearch.query.code.implemented_stubs`); its nodes join that file's."""
    files: dict[str, list[int]] = {}
    unit_of = unit_of or {}
    for i in order:
        m = meta.get(int(cand[i]))
        if m is None or not m.get("path") or not m.get("root"):
            continue                      # shared nodes (tags, entities) have no file
        files.setdefault(unit_of.get(m["path"], m["path"]), []).append(i)
    scored = []
    for rank, (path, pos) in enumerate(files.items()):
        score = sum(float(fused[i]) * decay ** j for j, i in enumerate(pos[:members]))
        scored.append((score, rank, pos))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [(s, pos) for s, _, pos in scored[:k]]


def file_hit(best: Hit, score: float, member_hits: list[Hit], meta: dict) -> Hit:
    """The file's result: the best node's hit, named after the file, scored as the file."""
    h = best
    h.members = [{"key": m.key, "kind": m.kind, "name": m.qualname or m.name, "line": m.line,
                  "score": m.score} for m in member_hits]
    h.adjustments = dict(h.adjustments)
    if len(member_hits) > 1:
        h.adjustments["file_members"] = round(score - best.score, 6)
    h.score = round(score, 6)
    h.kind, h.name = "file", rel_path(meta) or h.path or h.name
    if meta.get("path") and h.path != meta["path"]:       # a type stub grouped under its implementation
        h.path = meta["path"]
    return h
