"""Code at query time: which nodes are code, whether a search is a code query, and which code
is not the project's own source.

"Is this a code query" is decided once per search, by :func:`is_code_query` on the first
stage's best candidates (before the graph stage, which walks the call graph for code queries
and pulls from neighbours for prose), from the nodes' kinds in the index: so it holds whatever
channels ran (``--channels bm25,dense`` too), and the ranking's filters (vendored code out,
docs/examples and prose down: :mod:`.adjust`) apply whenever it is true. A part of a long
definition's text (kind ``chunk``, ``FLAG_PART``) is code as its definition is (:func:`is_code`).
"""
from __future__ import annotations

import re

import numpy as np

from ..codelike import path_role
from ..ingest.langspec import SPECS
from ..store.rows import rel_path
from ..store.sql import in_chunks
from ..types import FLAG_PART, FLAG_VENDORED

__all__ = ["CODE_KINDS", "CODE_LOADERS", "TOP", "code_share", "has_code", "is_code", "is_code_query", "is_vendored", "stub_twins",
           "is_source", "compiled_sources", "has_typescript", "stub_implementations", "implemented_stubs"]

CODE_KINDS = ("module", "class", "function", "method")
TOP = 10            # first-stage candidates whose kinds decide
CODE_LOADERS = ("python",) + tuple(s.name for s in SPECS)      # the loaders that read source code

_VENDORED = re.compile(r"/(vendor|vendored|_vendor|third_party|node_modules|mocks)/|\.min\.")


def is_code(kind: str | None, flags: int | None) -> bool:
    """A code node: module, class, function, method, or a part of a definition's text.

    >>> is_code("method", 0), is_code("chunk", FLAG_PART), is_code("chunk", 0)
    (True, True, False)
    """
    return kind in CODE_KINDS or bool((flags or 0) & FLAG_PART)


def is_code_query(conn, cand: np.ndarray, first: np.ndarray, ix=None) -> bool:
    """True when most of the :data:`TOP` best candidates by first-stage score ``first``
    (aligned with ``cand``, node ids) are code (:func:`is_code`). ``ix`` (the
    :class:`~kgsearch.store.db.Index` of ``conn``): whether it holds code is looked up once per
    generation (nodes change only with the generation), not once per search."""
    if not len(cand) or not (ix.cached("query.has_code", lambda: has_code(conn)) if ix is not None
                             else has_code(conn)):
        return False
    top = cand[np.argsort(-first, kind="stable")[:TOP]].tolist()
    kinds = {r[0]: r[1:] for r in in_chunks(conn, "SELECT id, kind, flags FROM nodes WHERE id IN ({})", top)}
    known = [kinds[i] for i in top if i in kinds]
    return bool(known) and sum(is_code(k, f) for k, f in known) / len(known) > 0.5


def has_code(conn) -> bool:
    """Whether the index holds any code node (one look-up in the kinds' index: a notes or
    documents index skips reading its candidates' kinds)."""
    marks = ",".join("?" * len(CODE_KINDS))
    return conn.execute(f"SELECT 1 FROM nodes WHERE kind IN ({marks}) LIMIT 1", CODE_KINDS).fetchone() is not None


def code_share(conn) -> tuple[int, int]:
    """``(code nodes, nodes)`` of the index's files: the nodes that files read by a code loader
    (:data:`CODE_LOADERS`) hold, and all files' nodes (one pass over the files table, which
    keeps each file's node count: 500 rows for a million-node corpus, not a million)."""
    marks = ",".join("?" * len(CODE_LOADERS))
    code, total = conn.execute(f"SELECT coalesce(sum(CASE WHEN loader IN ({marks}) THEN nodes END), 0), "
                               f"coalesce(sum(nodes), 0) FROM files", CODE_LOADERS).fetchone()
    return int(code), int(total)


def has_typescript(conn) -> bool:
    """Whether any indexed file was read by the TypeScript loader (one pass over the files
    table: callers keep the answer per generation)."""
    return conn.execute("SELECT 1 FROM files WHERE loader = 'typescript' LIMIT 1").fetchone() is not None


def is_vendored(m: dict) -> bool:
    """Vendored, generated, minified or mock code: the loader's ``FLAG_VENDORED`` (each
    language's conventions, ``DO NOT EDIT`` marks: :mod:`kgsearch.ingest.langspec`), else by
    path and name."""
    if (m.get("flags") or 0) & FLAG_VENDORED:
        return True
    p = (m.get("path") or "").replace("\\", "/").lower()
    return bool(_VENDORED.search(p)) or (m.get("name") or "").startswith(("Mock", "mock_"))


# a type stub -> the implementation files it describes (first found wins)
# (and a CommonJS build -> its ES module twin beside it: dual packages ship both)
_STUBS = ((".pyi", (".py",)), (".d.ts", (".ts", ".tsx", ".js", ".jsx")), (".d.mts", (".mts", ".mjs")),
          (".d.cts", (".cts", ".cjs")), (".cjs", (".js", ".mjs")))
# what TypeScript compiles to (a script, a declaration file) and what it compiles from
_COMPILED = (".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs", ".jsx")
_TS_SOURCES = (".ts", ".tsx", ".mts", ".cts")
SOURCE_DIR = "src"          # the folder an output folder mirrors (tsc's rootDir, by convention)
LAYOUT_DEPTH = 4            # folders an output file may sit below its output folder


def compiled_sources(path: str) -> tuple[str, ...]:
    """The TypeScript files a script or declaration file (``.js``, ``.cjs``, ``.mjs``, ``.d.ts`` ...)
    may be compiled from, nearest first: beside it (tsc in place), then under a ``src`` folder that
    its output folder mirrors (tsc's ``rootDir: src`` with ``outDir`` the package itself, ``lib/``,
    ``esm/``, ``cjs/`` ...: npm packages ship both), the output at most :data:`LAYOUT_DEPTH` folders
    below it. Empty for anything else. (``dist/`` and ``build/`` are not indexed at all.)

    >>> [s for s in compiled_sources("/p/v4/core.cjs") if s.endswith(".ts")][:4]
    ['/p/v4/core.ts', '/p/v4/src/core.ts', '/p/src/core.ts', '/p/src/v4/core.ts']
    >>> "/p/src/v4/core.ts" in compiled_sources("/p/v4/core.js"), "/p/src/a/b.ts" in compiled_sources("/p/lib/a/b.js")
    (True, True)
    >>> compiled_sources("/p/src/a.ts"), compiled_sources("/p/a.py")
    ((), ())
    """
    ext = next((e for e in _COMPILED if path.endswith(e)), None)
    if ext is None:
        return ()
    *parents, name = path[:-len(ext)].split("/")
    out = [path[:-len(ext)] + e for e in _TS_SOURCES]
    for j in range(min(LAYOUT_DEPTH, len(parents) - 1) + 1):      # j folders kept below the output folder
        base, kept = parents[:len(parents) - j], parents[len(parents) - j:] + [name]
        if kept[0] == SOURCE_DIR:
            continue
        layouts = [base + [SOURCE_DIR] + kept]                     # outDir: base itself
        if len(base) > 1 and base[-1] != SOURCE_DIR:
            layouts.append(base[:-1] + [SOURCE_DIR] + kept)        # outDir: base's last folder (lib/, esm/ ...)
        out += ["/".join(parts) + e for parts in layouts for e in _TS_SOURCES]
    return tuple(dict.fromkeys(out))


def stub_implementations(path: str, compiled: bool = True) -> tuple[str, ...]:
    """The paths of the code a type stub describes or a script was compiled from (empty: neither),
    the likeliest first: a ``.pyi``'s ``.py``; a TypeScript declaration's or output's TypeScript
    source (:func:`compiled_sources`; ``compiled`` False: the index holds no TypeScript, none is
    looked for), then a declaration's script, and a CommonJS build's (``.cjs``) ES module twin
    beside it (``.js``, ``.mjs``).

    >>> stub_implementations("pkg/mod.pyi"), stub_implementations("lib/a.d.ts")[:2], stub_implementations("a.py")
    (('pkg/mod.py',), ('lib/a.ts', 'lib/a.tsx'), ())
    """
    out = compiled_sources(path) if compiled else ()
    for suffix, impls in _STUBS:
        if path.endswith(suffix):
            out += tuple(path[:-len(suffix)] + e for e in impls)
            break
    return tuple(dict.fromkeys(out))


def implemented_stubs(conn, paths, compiled: bool = True) -> dict[str, str]:
    """Stub path -> its indexed implementation's path, for the stubs among ``paths`` (file
    paths as stored) whose implementation is indexed too. ``compiled``: whether the index holds
    TypeScript (:func:`has_typescript`); without it a script's ~20-50 candidate sources each are
    not looked up (40 ``.cjs`` paths: 1,840 keys, 2.5 ms a search)."""
    want = {p: stub_implementations(p, compiled) for p in set(paths)}
    want = {p: c for p, c in want.items() if c}
    if not want:
        return {}
    have = {r[0] for r in in_chunks(conn, "SELECT path FROM files WHERE path IN ({})",
                                    sorted({c for cs in want.values() for c in cs}))}
    return {p: next(c for c in cs if c in have) for p, cs in want.items() if any(c in have for c in cs)}


def stub_twins(conn, metas: dict[int, dict], stubs: dict[str, str]) -> set[int]:
    """The ids among ``metas`` (node id -> display fields) in a stub file of ``stubs`` (stub path
    -> its implementation's path) whose name the implementation defines too: a stand-in for code
    indexed beside it. A definition only the stub has (a TypeScript declaration file's types, a
    ``.pyi``'s aliases: no JavaScript or Python holds them) is no stand-in: the one place it is
    written."""
    want = {(stubs[m["path"]], m["name"]) for m in metas.values() if m.get("path") in stubs}
    if not want:
        return set()
    have = set()
    for impl in {p for p, _ in want}:
        names = sorted({n for p, n in want if p == impl})
        have |= {(impl, r[0]) for r in in_chunks(
            conn, "SELECT DISTINCT n.name FROM nodes n JOIN files f ON f.id = n.file_id WHERE f.path = ? "
                  "AND n.name IN ({})", names, before=(impl,))}
    return {nid for nid, m in metas.items() if m.get("path") in stubs and (stubs[m["path"]], m["name"]) in have}


def is_source(m: dict, about_tests: bool = False) -> bool:
    """Source code: a code node outside test and docs/examples folders (tests count when the
    query is about tests)."""
    if not is_code(m.get("kind"), m.get("flags")):
        return False
    role = path_role(rel_path(m))
    return role == "source" or (role == "test" and about_tests)
