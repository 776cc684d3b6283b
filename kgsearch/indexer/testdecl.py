"""Files that only tests build, declared so by another file: Rust's ``#[cfg(test)] mod mocks;`` in
``fs/mod.rs`` makes ``fs/mocks.rs`` test code, as an inline ``#[cfg(test)] mod tests { .. }``
is, though nothing in ``mocks.rs`` says so. A loader reads one file, so the indexer decides,
after every edge is resolved: :func:`mark_declared_tests`.

The declarations are the ``imports`` edges whose props say ``decl: mod`` (the Rust loader's
``mod x;``, :mod:`kgsearch.ingest.rscode`), ``test`` when only tests build that declaration
(``#[cfg(test)]``, ``#[cfg(all(test, ..))]``, or inside an inline test module). A file is
declared test code when every declaration that resolves to it is a test one, or comes from a
file that is test code itself (a ``tests/`` folder, or declared test code in turn: the whole
subtree under ``#[cfg(test)] mod test_util;``); one plain ``mod x;`` anywhere keeps it
production code. Every node of such a file that the loader did not flag as test code gets
``FLAG_TEST | FLAG_DECLARED_TEST``; the second bit says the first came from here, so that it
goes again when the declaration changes (the attribute removed, the declaring file deleted),
and a reloaded file (written with its loader's flags) gets it back. Recomputed from the
index's edges whenever a run loads or deletes a file of a loader that declares modules, so an
incremental run leaves what a fresh build does (tests/indexer/test_declared_tests.py).
"""
from __future__ import annotations

import json

from ..store.sql import iter_in_chunks
from ..types import FLAG_DECLARED_TEST, FLAG_TEST, ChangeSet

__all__ = ["DECLARING_LOADERS", "involves", "declared_test_files", "mark_declared_tests"]

DECLARING_LOADERS = ("rust",)      # loaders whose ``imports`` edges may carry ``decl: mod``

_BOTH = FLAG_TEST | FLAG_DECLARED_TEST


def involves(conn, loaders, deleted_ids) -> bool:
    """Whether a run that loads files of ``loaders`` and deletes the files ``deleted_ids``
    (asked before they go) can change which files are declared test code."""
    if any(lo in DECLARING_LOADERS for lo in loaders):
        return True
    marks = ",".join("?" * len(DECLARING_LOADERS))
    return any(True for _ in iter_in_chunks(
        conn, f"SELECT 1 FROM files WHERE loader IN ({marks}) AND id IN ({{}})", list(deleted_ids),
        before=DECLARING_LOADERS))


def declared_test_files(conn) -> tuple[set[int], set[int]]:
    """``(declared, marked)``: the files the declarations make test code, and those whose nodes
    carry :data:`FLAG_DECLARED_TEST` now (the file's module node says)."""
    marks = ",".join("?" * len(DECLARING_LOADERS))
    files = [r[0] for r in conn.execute(f"SELECT id FROM files WHERE loader IN ({marks})", DECLARING_LOADERS)]
    if not files:
        return set(), set()
    module: dict[int, tuple[int, int]] = {}      # module node id -> (file id, flags)
    for nid, fid, flags in iter_in_chunks(
            conn, "SELECT id, file_id, flags FROM nodes WHERE kind = 'module' AND file_id IN ({})", files):
        module[nid] = (fid, flags)
    marked = {fid for fid, flags in module.values() if flags & FLAG_DECLARED_TEST}
    own_test = {fid for fid, flags in module.values() if flags & FLAG_TEST and not flags & FLAG_DECLARED_TEST}
    parents: dict[int, list[tuple[int, bool]]] = {}     # file -> (declaring file, test declaration)
    for src, dst, props in iter_in_chunks(
            conn, "SELECT src, dst, props FROM edges WHERE file_id IN ({}) AND type = 'imports' "
                  "AND dst IS NOT NULL AND props IS NOT NULL", files):
        if src not in module or dst not in module:
            continue
        p = json.loads(props)
        if p.get("decl") != "mod":
            continue
        parent, child = module[src][0], module[dst][0]
        if parent != child:
            parents.setdefault(child, []).append((parent, bool(p.get("test"))))
    declared: set[int] = set()
    grew = True
    while grew:                       # the least fixed point: a cycle of plain mods declares nothing
        grew = False
        for child, decls in parents.items():
            if child not in declared and child not in own_test and all(
                    test or parent in own_test or parent in declared for parent, test in decls):
                declared.add(child)
                grew = True
    return declared, marked


def mark_declared_tests(conn, changes: ChangeSet, reloaded: set[int]) -> None:
    """Flag the nodes of the declared test files, unflag those no longer declared. A change of a
    file's status outside the files reloaded this run (``reloaded``: written with their loader's
    flags) counts as an edge change, so that the run makes a new generation (search caches keep
    flags per generation); such a change comes with a changed declaration anyway."""
    declared, marked = declared_test_files(conn)
    for fid in sorted(marked - declared):
        conn.execute("UPDATE nodes SET flags = flags & ? WHERE file_id = ? AND flags & ?",
                     (~_BOTH, fid, FLAG_DECLARED_TEST))
    for fid in sorted(declared):
        conn.execute("UPDATE nodes SET flags = flags | ? WHERE file_id = ? AND flags & ? = 0",
                     (_BOTH, fid, FLAG_TEST))
    if (marked - declared) or (declared - marked - reloaded):
        changes.edges_changed = True
