"""A method defined outside its type's declaration (a Go method in another file of the type's
package, a C++ out-of-line ``Cls::f`` in a ``.cpp`` beside the class's header) has a
``member_of`` edge to the type, chosen among types of one name by the method's file, and an
incremental run leaves the edges a full rebuild does when the type's or the method's file
changes, goes, moves or comes back."""
from __future__ import annotations

from indexer.test_incremental import assert_same, w

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.stats import related_nodes, show_node
from kgsearch.store.db import Index


def _members(db) -> list[tuple]:
    with Index.open(db, readonly=True) as ix:
        return sorted(ix.conn.execute(
            "SELECT s.key, d.key FROM edges e JOIN nodes s ON s.id = e.src LEFT JOIN nodes d ON d.id = e.dst "
            "WHERE e.type = 'member_of'").fetchall(), key=repr)


def _tree(tree):
    w(tree / "srv/go.mod", "module example.com/srv\n")
    w(tree / "srv/api/server.go", """
        package api

        type Server struct{ n int }

        func (s *Server) Start() {}
        """)
    w(tree / "srv/api/serve_loop.go", """
        package api

        func (s *Server) loop() { s.Start() }

        func helper() {}
        """)
    w(tree / "srv/other/server.go", "package other\n\ntype Server struct{}\n")
    w(tree / "cpp/include/lib/ref.h", """
        #pragma once
        namespace lib {
        class Ref {
        public:
            void swap(Ref& o);
            struct Inner { int f(); };
            struct Impl;
        };
        }
        """)
    # (another namespace's Ref, included too, and first by key: the namespace decides)
    w(tree / "cpp/include/alt/ref.h", "#pragma once\nnamespace alt {\nclass Ref { int x; };\n}\n")
    w(tree / "cpp/src/ref.cpp", """
        #include "alt/ref.h"
        #include "lib/ref.h"
        namespace lib {
        void Ref::swap(Ref& o) { }
        int Ref::Inner::f() { return 1; }
        struct Ref::Impl { int handles = 0; };
        struct Fwd;
        }
        struct lib::Fwd { int v; };
        void free_function() { }
        template <> int Holder<std::string>::get() { return 0; }
        """)


def test_methods_outside_their_type_link_to_it_and_follow_edits_as_a_full_rebuild(tmp_path):
    tree = tmp_path / "tree"
    _tree(tree)
    db = tmp_path / "inc.db"
    index_paths(db, [str(tree)], IndexOptions(steps=()))
    assert_same(db, tree, tmp_path, "initial")
    # by hand: the Go method in the other file of package api -> api's Server (not other's);
    # the out-of-line C++ methods -> lib::Ref (by namespace, not alt::Ref) and Ref::Inner, and so
    # does the pimpl struct Ref::Impl defined in the .cpp; a method in its type's file is its child
    # (contains), no member_of
    assert _members(db) == [
        ("c:cpp/src/ref.cpp:lib.Ref.Impl", "c:cpp/include/lib/ref.h:lib.Ref"),
        ("c:cpp/src/ref.cpp:lib.Ref.Inner.f", "c:cpp/include/lib/ref.h:lib.Ref.Inner"),
        ("c:cpp/src/ref.cpp:lib.Ref.swap", "c:cpp/include/lib/ref.h:lib.Ref"),
        ("go:srv/api/serve_loop.go:Server.loop", "go:srv/api/server.go:Server"),
    ]
    with Index.open(db, readonly=True) as ix:
        shown = show_node(ix, "go:srv/api/server.go:Server")
        assert ("member_of", "go:srv/api/serve_loop.go:Server.loop") in [(e["type"], e["key"]) for e in shown["in"]]
        rel = related_nodes(ix, "c:cpp/include/lib/ref.h:lib.Ref", types=["member_of"])
        assert [(e["direction"], e["key"]) for e in rel["edges"]["member_of"]] == [
            ("in", "c:cpp/src/ref.cpp:lib.Ref.Impl"), ("in", "c:cpp/src/ref.cpp:lib.Ref.swap")]

    def edit(tag, fn):
        fn()
        index_paths(db, [str(tree)], IndexOptions(steps=()))
        assert_same(db, tree, tmp_path, tag)

    server, loop = tree / "srv/api/server.go", tree / "srv/api/serve_loop.go"
    ssrc, lsrc = server.read_text(), loop.read_text()
    edit("go type's file deleted", lambda: server.unlink())
    assert ("go:srv/api/serve_loop.go:Server.loop", None) in _members(db)
    edit("go type's file back", lambda: server.write_text(ssrc))
    edit("go type moved to another file", lambda: (server.unlink(), (tree / "srv/api/types.go").write_text(ssrc)))
    assert ("go:srv/api/serve_loop.go:Server.loop", "go:srv/api/types.go:Server") in _members(db)
    edit("go method's file deleted", lambda: loop.unlink())
    edit("go method's file back", lambda: loop.write_text(lsrc))
    edit("go method moved into the type's file", lambda: (
        loop.unlink(), (tree / "srv/api/types.go").write_text(ssrc + "\n" + lsrc.split("\n", 1)[1])))
    assert not [m for m in _members(db) if m[0].startswith("go:")]
    lib = tree / "cpp/include/lib/ref.h"
    hsrc = lib.read_text()
    edit("c++ class's header deleted (alt::Ref is all there is)", lambda: lib.unlink())
    assert ("c:cpp/src/ref.cpp:lib.Ref.swap", "c:cpp/include/alt/ref.h:alt.Ref") in _members(db)
    edit("c++ class's header back", lambda: lib.write_text(hsrc))
    assert ("c:cpp/src/ref.cpp:lib.Ref.swap", "c:cpp/include/lib/ref.h:lib.Ref") in _members(db)
    edit("c++ class renamed", lambda: lib.write_text(hsrc.replace("class Ref", "class Handle")))
    edit("c++ class back", lambda: lib.write_text(hsrc))


def test_rust_impl_blocks_in_another_module_link_to_their_type_and_follow_edits(tmp_path):
    tree = tmp_path / "tree"
    w(tree / "net/Cargo.toml", '[package]\nname = "net"\nversion = "0.1.0"\n')
    w(tree / "net/src/lib.rs", "mod conn;\nmod imp;\nmod other;\n")
    w(tree / "net/src/conn.rs", "pub struct Conn;\n\nimpl Conn { pub fn new() -> Conn { Conn } }\n")
    w(tree / "net/src/other.rs", "pub struct Conn;\n")
    w(tree / "net/src/imp.rs", """
        use crate::conn::Conn;
        use std::sync::Arc;

        impl Conn {
            pub fn flush(&self) {}
        }

        impl Clone for Conn {
            fn clone(&self) -> Conn { Conn }
        }

        impl Drop for Arc<u8> { fn drop(&mut self) {} }

        impl<T> From<T> for T { fn from(t: T) -> T { t } }
        """)
    db = tmp_path / "inc.db"
    index_paths(db, [str(tree)], IndexOptions(steps=()))
    assert_same(db, tree, tmp_path, "initial")
    # by hand: both blocks of imp.rs -> conn.rs's Conn (through the use, not other.rs's); the
    # block beside its struct, wrappers and generic parameters: none
    assert sorted(_members(db)) == [
        ("rs:net/src/imp.rs:Conn", "rs:net/src/conn.rs:Conn"),
        ("rs:net/src/imp.rs:Conn#2", "rs:net/src/conn.rs:Conn"),
    ]

    def edit(tag, fn):
        fn()
        index_paths(db, [str(tree)], IndexOptions(steps=()))
        assert_same(db, tree, tmp_path, tag)

    conn, imp = tree / "net/src/conn.rs", tree / "net/src/imp.rs"
    csrc, isrc = conn.read_text(), imp.read_text()
    edit("rust type's file emptied", lambda: conn.write_text(""))
    assert ("rs:net/src/imp.rs:Conn", None) in _members(db)
    edit("rust type back", lambda: conn.write_text(csrc))
    edit("rust use changed to the other module", lambda: imp.write_text(isrc.replace("crate::conn::", "crate::other::")))
    assert ("rs:net/src/imp.rs:Conn", "rs:net/src/other.rs:Conn") in _members(db)
    edit("rust impl's file deleted", lambda: imp.unlink())
    assert _members(db) == []
    edit("rust impl's file back", lambda: imp.write_text(isrc))


def test_a_kg_files_member_of_and_field_like_edges_resolve_by_key(tmp_path):
    """``member_of`` is also a relation a person writes in a KG file (Alice member_of the search
    team), and ``"via": "field"`` a property: such edges name their target by id and resolve as
    any edge does. (They were left to the code loaders' own passes: the file failed with
    "edge target 'team' is not a known node", and with --allow-dangling the edge was lost.)"""
    kg = tmp_path / "people.jsonl"
    kg.write_text('{"id": "alice", "name": "Alice"}\n{"id": "team", "name": "Search team"}\n'
                  '{"source": "alice", "target": "team", "type": "member_of"}\n'
                  '{"source": "alice", "target": "team", "type": "calls", "via": "field"}\n', encoding="utf-8")
    db = tmp_path / "kg.db"
    index_paths(db, [str(kg)], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        edges = sorted(ix.conn.execute(
            "SELECT s.key, e.type, d.key FROM edges e JOIN nodes s ON s.id = e.src LEFT JOIN nodes d ON d.id = e.dst "
            "WHERE e.type != 'contains'").fetchall())
    assert edges == [("kg:alice", "calls", "kg:team"), ("kg:alice", "member_of", "kg:team")]


def test_an_exported_go_index_read_back_keeps_its_member_of_edges(tmp_path):
    """`export jsonl` writes a Go method's member_of edge by key; indexing the export gives the same
    graph (the edges were unresolved: 36 of cobra's 2,112 edges)."""
    from kgsearch.export import export
    tree = tmp_path / "tree"
    _tree(tree)
    db = tmp_path / "idx.db"
    index_paths(db, [str(tree / "srv")], IndexOptions(steps=()))
    before = _members(db)
    assert ("go:api/serve_loop.go:Server.loop", "go:api/server.go:Server") in before
    out = tmp_path / "graph.jsonl"
    with Index.open(db, readonly=True) as ix:
        export(ix, "jsonl", str(out))
    back = tmp_path / "back.db"
    index_paths(back, [str(out)], IndexOptions(steps=()))
    assert _members(back) == before
