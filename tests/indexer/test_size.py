"""What the index no longer stores twice, that readers still see it, and the upgrade of old indexes."""
from __future__ import annotations

import sqlite3

import numpy as np

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.stats import find_node, show_node
from kgsearch.store.db import Index

from indexer.test_incremental import logical, make_tree


def _build(tmp_path):
    tree = tmp_path / "tree"
    make_tree(tree)
    w = tree / "notes" / "long.md"
    w.write_text("# Long\n\n" + "\n\n".join(f"## Part {i}\n\n" + "words about graphs " * 120 for i in range(3)))
    db = tmp_path / "i.db"
    index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    return tree, db


def test_names_and_paths_are_stored_once(tmp_path):
    tree, db = _build(tmp_path)
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        # a node answers to ('py', qualname) through its key: no aliases rows for those
        assert c.execute("SELECT count(*) FROM aliases WHERE ns='py'").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM aliases WHERE ns='note'").fetchone()[0] > 0
        # resolved loader edges through a key keep no name; the others keep theirs
        rows = c.execute("SELECT e.ns, e.dst_name, e.dst IS NULL, e.file_id IS NULL FROM edges e").fetchall()
        assert all(name == "" for ns, name, unresolved, _ in rows if ns == "key" and not unresolved)
        assert all(name for ns, name, unresolved, _ in rows if unresolved)
        assert all(name for ns, name, _, _ in rows if ns in ("note", "tag", "ent"))
        # paths live in files only
        assert c.execute("SELECT count(*) FROM nodes WHERE file_id IS NOT NULL AND path IS NOT NULL").fetchone()[0] == 0
        impl = str((tree / "pkg" / "impl.py").resolve())
        assert find_node(ix, "py:pkg.impl.Impl")["path"] == impl
        assert show_node(ix, "pkg.impl.Impl")["node"]["path"] == impl
        paths = {r[0] for r in c.execute("SELECT path FROM chunks")}
        assert paths == {str((tree / "notes" / "long.md").resolve())}
        from kgsearch.store.rows import node_meta as _fetch_meta
        nid = find_node(ix, "py:pkg.impl.use")["id"]
        assert _fetch_meta(ix.conn, [nid])[nid]["path"] == impl


def _to_old_layout(db) -> None:
    """Rewrite an index the way kgsearch wrote it before migrations 0005/0006."""
    c = sqlite3.connect(str(db))
    c.executescript("""
        INSERT INTO aliases(ns, name, node_id, rank)
            SELECT substr(key, 1, instr(key, ':') - 1), substr(key, instr(key, ':') + 1), id, 0 FROM nodes
            WHERE ((key LIKE 'py:%' AND key NOT LIKE '%#%') OR key LIKE 'kg:%' OR key LIKE 'tag:%'
                   OR key LIKE 'ent:%') AND NOT flags & 4;
        UPDATE edges SET dst_name = (SELECT CASE WHEN edges.ns = 'key' THEN n.key
            ELSE substr(n.key, length(edges.ns) + 2) END FROM nodes n WHERE n.id = edges.dst) WHERE dst_name = '';
        UPDATE nodes SET path = (SELECT path FROM files WHERE files.id = nodes.file_id) WHERE file_id IS NOT NULL;
        DROP INDEX edges_named;
        CREATE INDEX edges_unresolved ON edges(ns, dst_name) WHERE dst IS NULL;
        DROP VIEW chunks;
        CREATE VIEW chunks AS SELECT id, parent_id AS node_id, kind, name AS heading, text, path, line_start, line_end
            FROM nodes WHERE parent_id IS NOT NULL AND kind IN ('section', 'chunk');
        DELETE FROM migrations WHERE name IN ('0005_compact_names', '0006_node_paths');
    """)
    c.commit()
    c.close()


def test_an_old_index_is_upgraded_to_what_a_fresh_build_holds(tmp_path):
    tree, db = _build(tmp_path)
    fresh = logical(db)
    _to_old_layout(db)
    with sqlite3.connect(str(db)) as c:                 # the old layout: py aliases rows, paths
        assert c.execute("SELECT count(*) FROM aliases WHERE ns='py'").fetchone()[0] > 0
        assert c.execute("SELECT count(*) FROM nodes WHERE path IS NOT NULL").fetchone()[0] > 0
    Index.open(db).close()                              # applies 0005 and 0006
    assert logical(db) == fresh
    with Index.open(db, readonly=True) as ix:
        assert ix.conn.execute("SELECT count(*) FROM nodes WHERE file_id IS NOT NULL AND path IS NOT NULL"
                               ).fetchone()[0] == 0
        assert {r[1] for r in ix.conn.execute("PRAGMA index_list(edges)")} >= {"edges_named"}
    # and it goes on incrementally like a fresh one
    (tree / "pkg" / "base.py").unlink()
    index_paths(db, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    fresh2 = tmp_path / "fresh2.db"
    index_paths(fresh2, [str(tree)], IndexOptions(steps=(), allow_dangling=True))
    assert logical(db) == logical(fresh2)


def test_code_qualnames_come_from_keys(tmp_path):
    tree, db = _build(tmp_path)
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        code = c.execute("SELECT key, qualname FROM nodes WHERE kind IN ('module','class','function','method')").fetchall()
        assert code and all(q == "" for _, q in code)                   # stored once, in the key
        # readers see the full name: show, find by qualified name, search hits, the pattern symbols
        assert find_node(ix, "pkg.impl.Impl")["qualname"] == "pkg.impl.Impl"
        assert show_node(ix, "py:pkg.impl.use")["node"]["qualname"] == "pkg.impl.use"
        from kgsearch.store.rows import node_meta as _fetch_meta
        nid = find_node(ix, "py:pkg.impl.use")["id"]
        assert _fetch_meta(ix.conn, [nid])[nid]["qualname"] == "pkg.impl.use"
        # rows written by older versions (full qualname stored) read the same
    c = sqlite3.connect(str(db))
    c.execute("UPDATE nodes SET qualname = substr(key, 4) WHERE key = 'py:pkg.impl.use'")
    c.commit()
    c.close()
    with Index.open(db, readonly=True) as ix:
        assert find_node(ix, "pkg.impl.use")["qualname"] == "pkg.impl.use"


def test_pattern_symbols_keep_qualified_names(tmp_path):
    tree = tmp_path / "tree"
    make_tree(tree)
    db = tmp_path / "i.db"
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True))
    with Index.open(db, readonly=True) as ix:
        syms = dict(ix.conn.execute("SELECT n.key, s.sym FROM text_symbols s JOIN nodes n ON n.id = s.id"))
    assert syms["py:pkg.impl.use"] == "use\tpkg.impl.use"
