"""Files as results (``--group file``): each file ranked by the evidence of its nodes.

A file's score is its best node's score plus the next ones' decayed,
``s1 + d*s2 + d^2*s3`` (:attr:`Tuning.file_decay` = d, at most :attr:`Tuning.file_members`
nodes): a file where three functions match the task is more likely the place to change than one
with a single equally good match, but ten weak matches do not outweigh one strong one. The
result hit of a file is its best node's hit (its channels and signals explain the file's
first term), renamed to the file, with its matching nodes listed in ``members``. A long
definition and the parts of its text (``FLAG_PART``) are one piece of evidence: its best-ranked
member counts, once (700 lines of one function cut into eight parts are not eight functions).

A Rust file's declaring module (:func:`declaring_modules`: the ``mod.rs``, ``lib.rs`` or
``<folder>.rs`` whose ``mod x;`` makes it part of the crate) often changes with it: a new or
renamed public item is re-exported there (``pub use``), a feature gate or a module's visibility
is set there. When the first file is a Rust file, its best-ranked declaring
module ranks at least :attr:`Tuning.declaring_module_rank` (5th), tied with the file it passes
(the lift is the hit's ``declaring_module`` adjustment). On code-tasks-multi, of the declaring
modules of the first file ranked 6th-20th, 7 of 26 were files the fix changed against 6 % of the
files ranked 5th (docs/code-tasks.md, session rank11). Python's ``__init__.py`` declares nothing
(ranked 6th-20th, 0 of 33 changed on the Python set): the rule is Rust's module system, not a
folder's root file.
"""
from __future__ import annotations

import posixpath

import numpy as np

from ..store.rows import rel_path
from ..types import FLAG_PART
from .options import Hit

__all__ = ["group_by_file", "file_hit", "declaring_modules"]


def declaring_modules(path: str, root: str = "") -> list[str]:
    """The files that may declare the Rust module ``path`` (``mod x;``), nearest first, up to
    the crate root: a module ``f/x.rs`` (or ``f/x/mod.rs``) is declared by folder ``f``'s module
    file, ``f/mod.rs``, ``f.rs`` or, for a crate's top folder, ``f/lib.rs`` / ``f/main.rs``; that
    file by its folder's parent's, and so on. The climb stops at a ``src`` folder (Cargo's crate
    root) and at the indexed ``root`` (a crate's ``src/`` indexed alone). Empty for a crate root
    and for other languages.

    >>> declaring_modules("/r/src/sync/mpsc/chan.rs", "/r")[:4]
    ['/r/src/sync/mpsc/mod.rs', '/r/src/sync/mpsc.rs', '/r/src/sync/mpsc/lib.rs', '/r/src/sync/mpsc/main.rs']
    >>> declaring_modules("/r/src/lib.rs"), declaring_modules("/r/src/a.py")
    ([], [])
    """
    folder, base = posixpath.split(path.replace("\\", "/"))
    if not base.endswith(".rs") or base in ("lib.rs", "main.rs"):
        return []
    root = root.replace("\\", "/").rstrip("/")
    if base == "mod.rs":                 # f/x/mod.rs is the module x of folder f
        folder = posixpath.dirname(folder)
    out = []
    while folder and (not root or folder == root or folder.startswith(root + "/")):
        out += [folder + "/mod.rs", folder + ".rs", folder + "/lib.rs", folder + "/main.rs"]
        if posixpath.basename(folder) == "src" or folder == root:
            break
        folder = posixpath.dirname(folder)
    return out


def group_by_file(cand: np.ndarray, fused: np.ndarray, order: list[int], meta: dict[int, dict], k: int,
                  decay: float, members: int, unit_of: dict[str, str] | None = None, declaring_rank: int = 0,
                  lifted: dict[str, float] | None = None) -> list[tuple[float, list[int]]]:
    """``[(file score, positions of its nodes best first)]`` for the best ``k`` files, from
    candidate positions ``order`` (best first) and their display fields ``meta``.
    ``unit_of``: path -> the path it counts under (a type stub under its implementation,
    :func:`kgsearch.query.code.implemented_stubs`); its nodes join that file's.
    ``declaring_rank`` (0: off): the first file's best-ranked declaring module
    (:func:`declaring_modules`) ranks at least this high, scored as the file it passes; its path
    and the score it gained go into ``lifted``."""
    files: dict[str, list[int]] = {}
    unit_of = unit_of or {}
    seen: set[str] = set()                # definitions counted (a part counts as its definition)
    for i in order:
        m = meta.get(int(cand[i]))
        if m is None or not m.get("path") or not m.get("root"):
            continue                      # shared nodes (tags, entities) have no file
        unit = m["parent"] if (m.get("flags") or 0) & FLAG_PART and m.get("parent") else m.get("key")
        if unit is not None:
            if unit in seen:
                continue
            seen.add(unit)
        files.setdefault(unit_of.get(m["path"], m["path"]), []).append(i)
    scored = []
    for rank, (path, pos) in enumerate(files.items()):
        score = sum(float(fused[i]) * decay ** j for j, i in enumerate(pos[:members]))
        scored.append((score, rank, pos))
    scored.sort(key=lambda t: (-t[0], t[1]))
    if declaring_rank > 0 and len(scored) > declaring_rank:
        _lift_declaring(scored, list(files), meta, cand, declaring_rank, lifted)
    return [(s, pos) for s, _, pos in scored[:k]]


def _lift_declaring(scored: list, paths: list[str], meta: dict, cand: np.ndarray, at: int,
                    lifted: dict[str, float] | None) -> None:
    """Move the first file's best-ranked declaring module up to rank ``at`` (in place)."""
    first = meta[int(cand[scored[0][2][0]])]
    chain = declaring_modules(paths[scored[0][1]], first.get("root") or "")
    if not chain:
        return
    where = {paths[r]: j for j, (_, r, _) in enumerate(scored)}
    j = min((where[p] for p in chain if p in where), default=None)
    if j is None or j < at:
        return
    s, r, pos = scored.pop(j)
    to = scored[at - 1][0]
    scored.insert(at - 1, (to, r, pos))
    if lifted is not None:
        lifted[paths[r]] = to - s


def file_hit(best: Hit, score: float, member_hits: list[Hit], meta: dict, lift: float = 0.0) -> Hit:
    """The file's result: the best node's hit, named after the file, scored as the file
    (``lift``: what :func:`group_by_file` added to rank a declaring module beside its file)."""
    h = best
    h.members = [{"key": m.key, "kind": m.kind, "name": m.qualname or m.name, "line": m.line,
                  "score": m.score} for m in member_hits]
    h.adjustments = dict(h.adjustments)
    if len(member_hits) > 1:
        h.adjustments["file_members"] = round(score - lift - best.score, 6)
    if lift:
        h.adjustments["declaring_module"] = round(lift, 6)
    h.score = round(score, 6)
    h.kind, h.name = "file", rel_path(meta) or h.path or h.name
    if meta.get("path") and h.path != meta["path"]:       # a type stub grouped under its implementation
        h.path = meta["path"]
    return h
