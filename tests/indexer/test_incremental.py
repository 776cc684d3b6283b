"""An incremental reindex leaves exactly what a full rebuild of the same files leaves.

A small mixed tree (a Python package with calls, imports, star imports and inheritance across
files; Markdown notes with links, tags, titles and aliases; KG files with cross-file edges;
plain text) goes through a series of edits. After every edit the incrementally maintained
index is compared, by keys (row ids differ), with a fresh index built from scratch.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index


def logical(db) -> dict:
    """Everything the index says about nodes, edges and names, keyed by node keys."""
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        key = dict(c.execute("SELECT id, key FROM nodes"))
        path = dict(c.execute("SELECT id, path FROM files"))
        nodes = sorted(
            (k, kind, name, qual, text, path.get(fid), ls, le, h, flags, props, key.get(pid))
            for _, k, kind, name, qual, text, fid, ls, le, h, flags, props, pid in c.execute(
                "SELECT id, key, kind, name, qualname, text, file_id, line_start, line_end, hash, flags, "
                "props, parent_id FROM nodes"))
        edges = sorted(
            ((key[s], t, key.get(d), None if d is not None else (ns, dn), w, path.get(fid), line, props)
             for s, d, ns, dn, t, w, fid, line, props in c.execute(
                 "SELECT src, dst, ns, dst_name, type, weight, file_id, line, props FROM edges")), key=repr)
        aliases = sorted((ns, name, key[nid], rank) for ns, name, nid, rank in c.execute(
            "SELECT ns, name, node_id, rank FROM aliases"))
        names = sorted(c.execute("SELECT ns, dst_name FROM edges WHERE dst IS NULL"))
    return {"nodes": nodes, "edges": edges, "aliases": aliases, "unresolved": names}


def assert_same(inc_db, tree: Path, tmp: Path, tag: str, **kw) -> None:
    fresh = tmp / f"fresh-{tag}.db"
    index_paths(fresh, [str(tree)], IndexOptions(steps=(), **kw))
    a, b = logical(inc_db), logical(fresh)
    for part in a:
        if a[part] != b[part]:
            only_inc = [x for x in a[part] if x not in b[part]][:8]
            only_full = [x for x in b[part] if x not in a[part]][:8]
            pytest.fail(f"after {tag!r}: {part} differ\n incremental only: {only_inc}\n full only: {only_full}")


def w(p: Path, text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def make_tree(root: Path) -> None:
    w(root / "pkg" / "__init__.py", '"""The package."""\nfrom .base import Base\n')
    w(root / "pkg" / "base.py", '''
        """Base classes."""
        import os


        class Base:
            def run(self):
                return self.step()

            def step(self):
                return os.getcwd()


        def helper(x):
            return x
        ''')
    w(root / "pkg" / "impl.py", '''
        from pkg.base import Base, helper
        from pkg.extra import *
        from . import base


        class Impl(Base):
            def step(self):
                helper(1)
                starred()
                return super().step()

            def other(self):
                return self.run()


        def use():
            Impl().other()
            base.helper(2)
            return later()
        ''')
    w(root / "pkg" / "extra.py", "def starred():\n    return 1\n")
    w(root / "notes" / "home.md", """
        ---
        title: Home Page
        aliases: [Start]
        tags: [hub]
        ---
        See [[Ideas]] and [[missing note]] and [[start]]. #project
        """)
    w(root / "notes" / "ideas.md", "# Ideas\n\nBack to [[Home Page]]. Links: [[Later]]. #project\n")
    (root / "kg").mkdir(parents=True, exist_ok=True)
    (root / "kg" / "nodes.jsonl").write_text(
        json.dumps({"node_id": "a", "name": "Alpha", "type": "thing"}) + "\n"
        + json.dumps({"node_id": "b", "name": "Beta", "type": "thing"}) + "\n", encoding="utf-8")
    (root / "kg" / "edges.jsonl").write_text(
        json.dumps({"source": "a", "target": "b", "type": "uses"}) + "\n"
        + json.dumps({"source": "b", "target": "c", "type": "uses"}) + "\n", encoding="utf-8")
    w(root / "text" / "story.txt", "Graph Neural Network notes. The Graph Neural Network learns.\n")


def test_same_file_changed_twice_keeps_its_edges_resolved(tmp_path):
    """The changed file's edges were the last ones written: deleting them frees their ids, and
    the new edges reuse them; they must still be resolved (they were not, once)."""
    tree = tmp_path / "tree"
    make_tree(tree)
    db = tmp_path / "inc.db"
    index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    impl = tree / "pkg" / "impl.py"
    src = impl.read_text()
    for i in range(3):
        impl.write_text(src + f"\n\ndef added{i}():\n    return use()\n")
        index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
        assert_same(db, tree, tmp_path, f"edit {i}", allow_dangling=True)


def test_incremental_equals_full_rebuild(tmp_path):
    tree = tmp_path / "tree"
    make_tree(tree)
    db = tmp_path / "inc.db"
    opts = dict(allow_dangling=True)
    steps = []

    def edit(tag, fn):
        steps.append(tag)
        fn()
        index_paths(db, [str(tree)], IndexOptions(steps=(), **opts))
        assert_same(db, tree, tmp_path, tag, **opts)

    index_paths(db, [str(tree)], IndexOptions(steps=(), **opts))
    assert_same(db, tree, tmp_path, "initial", **opts)

    impl = tree / "pkg" / "impl.py"
    src = impl.read_text()
    # the same file changed twice in a row (its edges were the last ones written)
    edit("append to impl", lambda: impl.write_text(src + "\n\ndef added():\n    return use()\n"))
    edit("append to impl again", lambda: impl.write_text(src + "\n\ndef added2():\n    return helper(3)\n"))
    # a call target appears in another file (unresolved -> resolved)
    edit("later() defined", lambda: (tree / "pkg" / "extra.py").write_text(
        "def starred():\n    return 1\n\n\ndef later():\n    return 2\n"))
    # a target file disappears (resolved -> unresolved) and comes back
    base = (tree / "pkg" / "base.py").read_text()
    edit("base deleted", lambda: (tree / "pkg" / "base.py").unlink())
    edit("base back", lambda: (tree / "pkg" / "base.py").write_text(base))
    # an earlier candidate appears: Impl.run now defined in impl (self.run() -> Impl.run first)
    edit("override run", lambda: impl.write_text(src.replace(
        "    def other(self):", "    def run(self):\n        return 0\n\n    def other(self):")))
    # a star-imported name defined in the module itself later: `from pkg.extra import starred`
    # resolves through the function once it exists in base (earlier candidate) -- rename in extra
    edit("starred removed", lambda: (tree / "pkg" / "extra.py").write_text("def later():\n    return 2\n"))
    # notes: a missing note appears, an alias goes away, a title changes, a note is deleted
    edit("missing note created", lambda: w(tree / "notes" / "missing note.md", "Now here. #hub\n"))
    edit("alias removed", lambda: w(tree / "notes" / "home.md", """
        ---
        title: Home Page
        tags: [hub]
        ---
        See [[Ideas]] and [[missing note]] and [[start]]. #project
        """))
    edit("title changed", lambda: w(tree / "notes" / "home.md", """
        ---
        title: Main
        tags: [hub]
        ---
        See [[Ideas]] and [[missing note]]. #project
        """))
    edit("note deleted", lambda: (tree / "notes" / "missing note.md").unlink())
    edit("alias added back", lambda: w(tree / "notes" / "home.md", """
        ---
        title: Home Page
        aliases: [Start, later]
        ---
        See [[Ideas]] and [[missing note]] and [[start]].
        """))
    # KG: the dangling target appears, then its file goes
    edit("kg target added", lambda: (tree / "kg" / "more.jsonl").write_text(
        json.dumps({"node_id": "c", "name": "Gamma", "type": "thing"}) + "\n", encoding="utf-8"))
    edit("kg target removed", lambda: (tree / "kg" / "more.jsonl").unlink())
    edit("text changed", lambda: w(tree / "text" / "story.txt", "Nothing about networks now.\n"))
    edit("package moved", lambda: ((tree / "pkg" / "base.py").rename(tree / "pkg" / "basis.py")))
    assert len(steps) > 10


def test_edges_changed_only_when_a_files_edges_differ(tmp_path):
    """A body edit that keeps the calls leaves the graph alone; losing a file's only edges does not."""
    tree = tmp_path / "tree"
    make_tree(tree)
    db = tmp_path / "inc.db"
    index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    impl = tree / "pkg" / "impl.py"
    src = impl.read_text()
    # same calls, other words and a shifted line: nodes modified, edges the same
    impl.write_text("\n" + src.replace("    Impl().other()", "    Impl().other()\n    # a comment, lines move"))
    rep = index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    assert rep.files_loaded == 1 and rep.nodes_modified > 0 and not rep.edges_changed
    assert_same(db, tree, tmp_path, "body edit", allow_dangling=True)
    # a new call: changed
    impl.write_text(src.replace("    return later()", "    starred()\n    return later()"))
    rep = index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    assert rep.edges_changed
    # a note loses its only link (no node added or removed): changed
    w(tree / "notes" / "ideas.md", "# Ideas\n\nBack to nothing. #project\n")
    index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    w(tree / "notes" / "ideas.md", "# Ideas\n\nNothing links from here. #project\n")
    rep = index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    assert rep.nodes_modified == 1 and not rep.edges_changed
    w(tree / "notes" / "ideas.md", "# Ideas\n\nNothing links from here.\n")
    rep = index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    assert rep.edges_changed
    assert_same(db, tree, tmp_path, "tag dropped", allow_dangling=True)
