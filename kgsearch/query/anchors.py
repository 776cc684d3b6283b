"""The ``anchors`` channel: the names and paths a code task mentions that exist in the index.

:func:`kgsearch.query.codetask.extract` finds candidate anchors in the query text (the parser
keeps them in :attr:`Query.anchors <kgsearch.query.parse.Query.anchors>`); here each is looked
up exactly (no fuzzy matching: a near miss of a junk token is what made the pattern channel
rank ``…With743`` second for "line 743"):

* a name (``to_json_dict``, ``DateTime``, ``L031``) -> code nodes with that name;
* a dotted name (``Dataset.to_json_dict``, ``sphinx.ext.viewcode``) -> code nodes whose
  qualified name is it or ends with it, or whose module its qualifier names: a file's stem or
  folder, a Go file's package (``grpc.Dial``), the modules of a Rust file's crate path
  (``tokio::sync::OnceCell``: the crate folder ``tokio/``, then ``src/sync/``);
* a path or a traceback frame's file (``…/site-packages/pydicom/dataset.py``) -> the indexed
  file with the longest matching path suffix (its module node), and the frame's function in it.

Each anchor's evidence is its kind's weight (frames and paths most) times its specificity in
this index, ``1 / (1 + log2(matches))``: a name that one node has says much, one that 300
nodes have (``__init__``, ``get``) says little. A name the issue only lists with others
(``'pkg.a', 'pkg.b', 'pkg.c'``, "`x` or `y`") shares that mention with them
(:attr:`Anchor.share <kgsearch.query.codetask.Anchor.share>`, ``lists``). A node's score is the
sum over the anchors that name it, capped at 1. The scores are absolute, not divided by the
query's best: when a task names only weak anchors, its best match stays weak.

(Weighing a named node by its callers as well, ``1 / (1 + log10(1 + callers))``, was measured
leave-one-repository-out: 3 tasks better, 12 worse, p .035; it was removed. docs/code-tasks.md)

Call following (``follow`` > 0, issue 27 item 2): the issue names the API where the symptom
shows, the fix is often in what that API calls. From the :data:`FOLLOW_SEEDS` strongest anchored
nodes the channel walks ``calls`` edges forward (and a method's class to the methods it defines is
not walked: that is file grouping's job) up to :data:`FOLLOW_DEPTH` hops, each hop x
:data:`FOLLOW_DECAY` and x the callee's use specificity (a helper everything calls is no
evidence), at most :data:`FOLLOW_MAX` nodes a hop; a reached node scores ``follow`` x the best
path's evidence, below the node that was named.
"""
from __future__ import annotations

import json
import math
import posixpath
import re
import sqlite3
from dataclasses import replace

import numpy as np

from ..store.sql import in_chunks
from .codetask import CODE_EXTENSIONS, Anchor
from .code import CODE_KINDS

__all__ = ["search", "resolve", "file_names", "files_by_suffix", "follow_calls", "use_specificity", "relation_search",
           "FOLLOW_SEEDS", "FOLLOW_DEPTH", "FOLLOW_DECAY", "FOLLOW_MAX"]

FOLLOW_SEEDS = 20       # anchored nodes the call walk starts from (strongest first)
FOLLOW_DEPTH = 2        # hops along calls edges
FOLLOW_DECAY = 0.5      # evidence kept per hop
FOLLOW_MAX = 200        # nodes kept per hop (best first): the walk's bound

_KINDS_SQL = ",".join(f"'{k}'" for k in CODE_KINDS)
_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))


def _qualname(key: str) -> str:
    """The qualified name inside its module of a code node's key: ``py:pkg.mod.f#2`` ->
    ``pkg.mod.f``; a later root's ``py://label/pkg.mod.f`` -> ``pkg.mod.f``; the other
    languages' ``rs:src/bytes.rs:Bytes.split_off`` -> ``Bytes.split_off`` (their keys name the
    file, then the name inside it).

    >>> _qualname("py:pkg.mod.f#2"), _qualname("py://lib/pkg.mod.f")
    ('pkg.mod.f', 'pkg.mod.f')
    >>> _qualname("rs:src/bytes.rs:Bytes.split_off"), _qualname("c:a.cpp:Catch.StringRef.operator std::string")
    ('Bytes.split_off', 'Catch.StringRef.operator std::string')
    """
    ns, _, rest = key.partition(":")
    if rest.startswith("//"):
        rest = rest[2:].partition("/")[2]
    if ns != "py" and ":" in rest:
        rest = rest.partition(":")[2]
    return rest.split("#", 1)[0]


def _module_names(key: str) -> tuple[str, ...]:
    """What a qualifier may call the module of a code node whose language names modules by
    files or folders: its file's stem and its folder (Go ``http.Server``, a JS ``utils.merge``,
    a Rust ``bytes::Bytes``, a Java package). Python keys hold their module already; C and C++
    qualified names hold their namespaces (``fmt.detail.format_to``), and a folder named like a
    namespace (``include/fmt/``) would credit every name in it.

    >>> _module_names("go:internal/transport/http2_client.go:newHTTP2Client")
    ('http2_client', 'transport')
    >>> _module_names("py:pkg.mod.f"), _module_names("c:include/fmt/core.h:fmt.format")
    ((), ())
    """
    ns, _, rest = key.partition(":")
    if ns in ("py", "c") or ":" not in rest:
        return ()
    path = rest.partition(":")[0]
    folder, _, base = path.rpartition("/")
    names = (base.rpartition(".")[0] or base, folder.rpartition("/")[2])
    return tuple(n for n in names if n)


_CRATE_VERSION = re.compile(r"-\d+\.\d+\.\d+(?:[-+][\w.+-]*)?$")     # semver-1.0.14, x-0.3.0-alpha.1


def _rust_module_path(key: str) -> tuple[str, ...]:
    """The module path a Rust item's file gives it, crate first: the folder holding ``src/``
    (Cargo's crate folder, ``-`` read as ``_`` as Rust names it), the folders under ``src/``,
    then the file's stem unless it is a module root (``mod.rs``, ``lib.rs``, ``main.rs``). Empty
    for other languages and for files outside a ``src/`` tree (tests, examples, benches).

    >>> _rust_module_path("rs:tokio-util/src/sync/cancellation_token.rs:CancellationToken")
    ('tokio_util', 'sync', 'cancellation_token')
    >>> _rust_module_path("rs:src/buf/mod.rs:Buf"), _rust_module_path("rs:tests/a.rs:f"), _rust_module_path("go:a.go:F")
    (('buf',), (), ())

    A crate folder as Cargo's registry and Debian's ``librust-*-dev`` unpack it names the crate's
    version after it, which no path in the code names:

    >>> _rust_module_path("rs:registry/semver-1.0.14/src/lib.rs:VersionReq.matches")
    ('semver',)
    """
    ns, _, rest = key.partition(":")
    if ns != "rs" or ":" not in rest:
        return ()
    parts = rest.partition(":")[0].split("/")
    if "src" not in parts[:-1]:
        return ()
    i = parts.index("src")
    stem = parts[-1].rpartition(".")[0] or parts[-1]
    crate = (_CRATE_VERSION.sub("", parts[i - 1]).replace("-", "_"),) if i > 0 else ()
    return crate + tuple(parts[i + 1:-1]) + (() if stem in ("mod", "lib", "main") else (stem,))


def _in_module(text: str, qual: str, path: tuple[str, ...]) -> bool:
    """A Rust path ``text`` (``tokio.sync.OnceCell``, as the query's ``tokio::sync::OnceCell``
    is read) names the item ``qual`` of a file whose module path is ``path``: its qualifier's
    modules stand in ``path`` one after another (``tokio.sync``, ``sync.mpsc``). The item may be
    defined deeper: a module re-exports its children's items (``pub use self::once_cell::OnceCell``)
    and a crate its macros (``tokio::select!`` is written in ``tokio/src/macros/select.rs``).

    >>> _in_module("tokio.sync.OnceCell", "OnceCell", ("tokio", "sync", "once_cell"))
    True
    >>> _in_module("std.sync.OnceCell", "OnceCell", ("tokio", "sync", "once_cell"))
    False
    """
    if not path or not text.endswith("." + qual):
        return False
    q = tuple(text[:-len(qual) - 1].split("."))
    return any(path[i:i + len(q)] == q for i in range(len(path) - len(q) + 1))


def _in_folders(text: str, qual: str, key: str) -> bool:
    """A dotted name ``text`` names the item ``qual`` of a file whose folders end with its
    qualifier's names (and then, perhaps, the file's stem): a Java or Kotlin package is its
    folders (``org.jpype.JPypeContext.getTypeManager`` in ``src/main/java/org/jpype/JPypeContext.java``),
    as a JS or PHP namespace often is. Python keys hold their module already; C and C++
    qualified names hold their namespaces (see :func:`_module_names`).

    >>> _in_folders("org.jpype.JPypeContext.run", "JPypeContext.run", "java:src/org/jpype/JPypeContext.java:JPypeContext.run")
    True
    >>> _in_folders("com.jpype.JPypeContext.run", "JPypeContext.run", "java:src/org/jpype/JPypeContext.java:JPypeContext.run")
    False
    >>> _in_folders("lib.utils.merge", "merge", "js:src/lib/utils.js:merge")
    True
    """
    ns, _, rest = key.partition(":")
    if ns in ("py", "pyi", "c") or ":" not in rest or not text.endswith("." + qual):
        return False
    q = text[:-len(qual) - 1].split(".")
    parts = rest.partition(":")[0].split("/")
    folders, stem = parts[:-1], parts[-1].rpartition(".")[0] or parts[-1]
    return q == folders[len(folders) - len(q):] or (len(q) > 1 and q == folders[len(folders) - len(q) + 1:] + [stem])


def _go_packages(conn, files: set[int]) -> dict[int, str]:
    """File id -> the package its Go module node names (the loader's ``package`` prop)."""
    out: dict[int, str] = {}
    try:
        rows = list(in_chunks(conn, "SELECT file_id, props FROM nodes WHERE kind = 'module' AND file_id IN ({}) "
                                    "AND props IS NOT NULL", sorted(files)))
    except sqlite3.OperationalError:            # a nodes table without props: no package is known
        return out
    for fid, props in rows:
        try:
            pkg = json.loads(props).get("package")
        except (ValueError, AttributeError):
            continue
        if isinstance(pkg, str) and pkg:
            out[int(fid)] = pkg
    return out


def _path_parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p and p not in (".", "..")]


def _from_a_root(conn, path: str, parts: list[str]) -> list[int] | None:
    """The file a relative path written from a root names (`src/a/b.go:12`), when a root holds
    it: that file, not a copy whose path ends the same (vendor/x/src/a/b.go); else None."""
    if len(parts) > 1 and not path.startswith(("/", "\\")) and ":" not in parts[0]:
        rel = "/".join(parts)
        try:
            roots = [r[0] for r in conn.execute("SELECT path FROM roots")]
        except sqlite3.OperationalError:        # an index older than the roots table
            roots = []
        rows = [r for root in roots
                for r in conn.execute("SELECT id FROM files WHERE path = ?", (root.rstrip("/") + "/" + rel,))]
        if rows:
            return sorted({r[0] for r in rows})
    return None


def _files_by_suffix(conn, path: str, least: int = 1) -> list[int]:
    """Ids of the files whose path ends with the longest suffix of ``path`` (at least the file
    name, or ``least`` components when the path has them; two or more components win over the
    name alone); a relative path that a root holds as it is written names that file alone.
    The reference: one scan of the files table per suffix tried (:func:`files_by_suffix` is
    the same answer from the file names' map)."""
    parts = _path_parts(path)
    rooted = _from_a_root(conn, path, parts)
    if rooted is not None:
        return rooted
    for n in range(min(len(parts), 4), min(least, len(parts)) - 1, -1):
        suffix = "/".join(parts[-n:])
        rows = conn.execute("SELECT id, path FROM files WHERE path = ? OR path LIKE ? ESCAPE '\\'",
                            (suffix, "%/" + suffix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"))
                            ).fetchall()
        # (LIKE ignores ASCII case: src/Foo.c is no match for src/foo.c)
        rows = [r for r in rows if r[1] == suffix or r[1].endswith("/" + suffix)]
        if rows:
            return sorted(r[0] for r in rows)
    return []


def file_names(conn) -> dict[str, tuple[int, ...]]:
    """File name (a path's last component, its case kept) -> the ids of the indexed files with
    it: one scan of the files table, kept per index generation by :func:`search`, so that a
    traceback of 200 frames looks its files up without 200-800 scans of that table."""
    out: dict[str, list[int]] = {}
    for fid, path in conn.execute("SELECT id, path FROM files"):
        out.setdefault(path.rpartition("/")[2], []).append(int(fid))
    return {name: tuple(ids) for name, ids in out.items()}


def files_by_suffix(conn, path: str, least: int, names: dict[str, tuple[int, ...]]) -> list[int]:
    """:func:`_files_by_suffix` answered from ``names`` (:func:`file_names`): the files with the
    path's name are read by id, and each suffix is tried on their paths (a path that ends with
    a suffix ends with its name)."""
    parts = _path_parts(path)
    rooted = _from_a_root(conn, path, parts)
    if rooted is not None:
        return rooted
    ids = names.get(parts[-1], ()) if parts else ()
    if not ids:
        return []
    rows = sorted(in_chunks(conn, "SELECT id, path FROM files WHERE id IN ({})", list(ids)))
    for n in range(min(len(parts), 4), min(least, len(parts)) - 1, -1):
        suffix = "/".join(parts[-n:])
        hit = [fid for fid, p in rows if p == suffix or p.endswith("/" + suffix)]
        if hit:
            return hit
    return []


def _innermost(conn, files: list[int], line: int) -> list[int]:
    """Per file, the innermost code definition (class, function, method) whose lines hold ``line``."""
    out = []
    for fid in files:
        row = conn.execute(f"SELECT id FROM nodes WHERE file_id = ? AND kind IN ({_KINDS_SQL}) AND kind != 'module' "
                           f"AND line_start <= ? AND line_end >= ? ORDER BY line_end - line_start, line_start DESC, id "
                           f"LIMIT 1", (fid, line, line)).fetchone()
        if row is not None:
            out.append(row[0])
    return out


def use_specificity(uses: int) -> float:
    """``1 / (1 + log10(1 + uses))``: 1 for a node nothing calls, 0.5 for 9 callers.

    >>> use_specificity(0), use_specificity(9), round(use_specificity(99), 4)
    (1.0, 0.5, 0.3333)
    """
    return 1.0 / (1.0 + math.log10(1 + max(0, uses)))


def _uses(conn, ids) -> dict[int, int]:
    """Node id -> number of resolved ``calls`` edges into it."""
    return {int(d): int(c) for d, c in in_chunks(
        conn, "SELECT dst, count(*) FROM edges WHERE dst IN ({}) AND type = 'calls' GROUP BY dst", list(ids))}


def resolve(conn, anchors: list[Anchor], names: dict[str, tuple[int, ...]] | None = None) -> dict[int, float]:
    """Node id -> summed evidence of the anchors that name it (see the module docstring).
    ``names``: the index's :func:`file_names`, to look up paths without scanning the files
    table (None: one scan per suffix, :func:`_files_by_suffix`). A path, its files' modules and
    a line's definition are looked up once however many frames repeat them."""
    scores: dict[int, float] = {}
    files_of: dict[tuple[str, int], list[int]] = {}
    modules_of: dict[tuple[int, ...], list[int]] = {}
    innermost_of: dict[tuple[tuple[int, ...], int], list[int]] = {}

    def credit(ids: list[int], weight: float) -> None:
        if not ids:
            return
        spec = 1.0 / (1.0 + math.log2(len(ids)))
        for nid in ids:
            scores[nid] = scores.get(nid, 0.0) + weight * spec

    named = [a for a in anchors if a.kind not in ("frame", "path")]
    lasts = sorted({a.text.rsplit(".", 1)[-1] for a in named} | {a.func for a in anchors if a.func})
    rows = list(in_chunks(conn, f"SELECT id, name, key, file_id FROM nodes WHERE name IN ({{}}) AND kind IN ({_KINDS_SQL})",
                          lasts))
    # a Go qualifier is the package clause's name, which a folder need not have (a module's root
    # package: grpc-go's `grpc.Dial` is in `clientconn.go` at the top of the tree)
    pkgs = (_go_packages(conn, {f for _, _, key, f in rows if key.startswith("go:") and f is not None})
            if any("." in a.text for a in named) else {})
    by_name: dict[str, list[tuple[int, str, int | None, tuple[str, ...], tuple[str, ...]]]] = {}
    key_of = {nid: key for nid, _, key, _ in rows}
    for nid, name, key, file_id in rows:
        mods = _module_names(key)
        if pkgs.get(file_id) and pkgs[file_id] not in mods:
            mods += (pkgs[file_id],)
        by_name.setdefault(name, []).append((nid, _qualname(key), file_id, mods, _rust_module_path(key)))
    for a in named:
        cands = by_name.get(a.text.rsplit(".", 1)[-1], [])
        if "." in a.text:
            cands = [c for c in cands if c[1] == a.text or c[1].endswith("." + a.text)
                     or any(f"{m}.{c[1]}" == a.text for m in c[3]) or _in_module(a.text, c[1], c[4])
                     or _in_folders(a.text, c[1], key_of[c[0]])]
        credit([c[0] for c in cands], a.weight)
    for a in anchors:
        if a.kind not in ("frame", "path"):
            continue
        stem = posixpath.basename(a.text.replace("\\", "/"))
        if stem.rpartition(".")[2] not in CODE_EXTENSIONS:
            continue
        least = 2 if a.link else 1                  # (a link to another repository's index.js)
        files = files_of.get((a.text, least))
        if files is None:
            files = files_of[(a.text, least)] = (_files_by_suffix(conn, a.text, least) if names is None
                                                 else files_by_suffix(conn, a.text, least, names))
        if not files:
            continue
        fkey = tuple(files)
        mods = modules_of.get(fkey)
        if mods is None:
            mods = modules_of[fkey] = [r[0] for r in in_chunks(
                conn, "SELECT id FROM nodes WHERE kind='module' AND file_id IN ({})", files)]
        credit(mods, a.weight)
        if a.func:
            fset = set(files)
            credit([c[0] for c in by_name.get(a.func, []) if c[2] in fset], a.weight)
        elif a.kind == "frame" and a.line is not None:    # a diagnostic: the definition holding its line
            inner = innermost_of.get((fkey, a.line))
            if inner is None:
                inner = innermost_of[(fkey, a.line)] = _innermost(conn, files, a.line)
            credit(inner, a.weight)
    return scores


def follow_calls(conn, seeds: dict[int, float], *, n_seeds: int = FOLLOW_SEEDS, depth: int = FOLLOW_DEPTH,
                 decay: float = FOLLOW_DECAY, max_nodes: int = FOLLOW_MAX) -> dict[int, float]:
    """Nodes reached from ``seeds`` (node id -> evidence) along ``calls`` edges: node id -> best
    path evidence ``seed x prod(decay x use_specificity(callee))`` (seeds themselves excluded).
    Bounded: the ``n_seeds`` strongest seeds, ``depth`` hops, ``max_nodes`` a hop."""
    start = sorted(seeds.items(), key=lambda p: (-p[1], p[0]))[:n_seeds]
    frontier = {n: min(v, 1.0) for n, v in start}
    best: dict[int, float] = {}
    for _ in range(depth):
        if not frontier:
            break
        rows = list(in_chunks(conn, "SELECT src, dst FROM edges WHERE src IN ({}) AND type = 'calls' "
                                    "AND dst IS NOT NULL", list(frontier)))
        uses = _uses(conn, {int(d) for _, d in rows})
        nxt: dict[int, float] = {}
        for src, dst in rows:
            dst = int(dst)
            if dst in seeds or dst == src:
                continue
            v = frontier[int(src)] * decay * use_specificity(uses.get(dst, 0))
            if v > nxt.get(dst, 0.0):
                nxt[dst] = v
        nxt = dict(sorted(nxt.items(), key=lambda p: (-p[1], p[0]))[:max_nodes])
        frontier = {}
        for n, v in nxt.items():
            if v > best.get(n, 0.0):
                best[n] = v
                frontier[n] = v
    return best


def search(ix, q, k: int = 100, *, follow: float = 0.0, lists: bool = True, **opts
           ) -> tuple[np.ndarray, np.ndarray]:
    """Anchors channel: (node ids, evidence in (0, 1]) best first for the anchors of the parsed
    query ``q``; empty when it names nothing in the index. ``follow`` > 0 adds the nodes the
    anchored ones call (:func:`follow_calls`) at ``follow`` x their path evidence; ``lists``
    False weighs a listed name as one mentioned alone (its share 1)."""
    anchors = list(q.anchors)
    if not anchors:
        return _EMPTY
    if not lists:
        anchors = [replace(a, share=1.0) if a.share != 1.0 else a for a in anchors]
    paths = any(a.kind in ("frame", "path") for a in anchors)
    scores = resolve(ix.conn, anchors, ix.cached("anchors.file_names", lambda: file_names(ix.conn)) if paths else None)
    if not scores:
        return _EMPTY
    if follow > 0:
        for n, v in follow_calls(ix.conn, scores).items():
            scores[n] = max(scores.get(n, 0.0), follow * v)
    items = sorted(scores.items(), key=lambda p: (-p[1], p[0]))[:max(0, int(k))]
    return (np.array([p[0] for p in items], dtype=np.int64),
            np.array([min(p[1], 1.0) for p in items], dtype=np.float32))


def relation_search(ix, q, k: int = 100, *, target: str | None = None, edge_types=(), **opts
                    ) -> tuple[np.ndarray, np.ndarray] | str:
    """Relation channel ("who calls X", "where is X used"): the nodes with an edge of
    ``edge_types`` into the node(s) ``target`` names (the parsed query's
    :attr:`~kgsearch.query.parse.Query.relation_anchors`), scored by the summed edge weight
    (in (0, 1] after dividing by the best), plus the named nodes themselves at 0.5."""
    if not target or not edge_types:
        return "no relation question"
    named = resolve(ix.conn, list(q.relation_anchors))
    if not named:
        return f"{target!r} names nothing in this index"
    best = max(named.values())
    targets = sorted(n for n, v in named.items() if v >= best - 1e-9)
    types = list(edge_types)
    rows = in_chunks(ix.conn, f"SELECT src, sum(weight) FROM edges WHERE dst IN ({{}}) AND type IN "
                              f"({','.join('?' * len(types))}) GROUP BY src", targets, after=types)
    scores = {int(src): float(w) for src, w in rows if src not in named}
    top = max(scores.values(), default=1.0)
    out = {n: v / top for n, v in scores.items()}
    for n in targets:
        out[n] = max(out.get(n, 0.0), 0.5)
    items = sorted(out.items(), key=lambda p: (-p[1], p[0]))[:max(0, int(k))]
    return (np.array([p[0] for p in items], dtype=np.int64),
            np.array([p[1] for p in items], dtype=np.float32))
