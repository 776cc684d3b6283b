"""An incremental reindex of a tree in the newer languages (Kotlin beside Java, PHP, Go with
methods under their type) leaves exactly what a full rebuild leaves (the comparison of
tests/indexer/test_incremental.py, by keys)."""
from __future__ import annotations

from indexer.test_incremental import assert_same, w

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index


def test_kotlin_java_php_and_go_edits_equal_a_full_rebuild(tmp_path):
    tree = tmp_path / "tree"
    w(tree / "app/src/main/kotlin/com/shop/Cart.kt", """
        package com.shop

        import com.shop.pricing.Prices

        class Cart(val items: List<String>) {
            companion object { fun empty(): Cart = Cart(emptyList()) }
            fun total() = Prices.round(items.size)
        }
        """)
    w(tree / "app/src/main/kotlin/com/shop/pricing/Prices.kt", """
        package com.shop.pricing

        object Prices { fun round(x: Int) = x }
        """)
    w(tree / "app/src/main/java/com/shop/Legacy.java", """
        package com.shop;

        class Legacy { int price() { return CartKt.helper(null) + Prices.INSTANCE.round(1); } }
        """)
    w(tree / "web/src/User.php", """
        <?php
        namespace App;

        use App\\Base\\Model;

        class User extends Model { public function save() { return parent::save(); } }
        """)
    w(tree / "web/src/Base/Model.php", "<?php\nnamespace App\\Base;\n\nclass Model { public function save() {} }\n")
    w(tree / "srv/go.mod", "module example.com/srv\n")
    w(tree / "srv/api/server.go", """
        package api

        func (s *Server) Start() error { return s.listen() }

        type Server struct{}

        func (s *Server) listen() error { return nil }
        """)
    db = tmp_path / "inc.db"
    opts = dict(allow_dangling=True)
    index_paths(db, [str(tree)], IndexOptions(steps=(), **opts))
    assert_same(db, tree, tmp_path, "initial", **opts)

    def edit(tag, fn):
        fn()
        index_paths(db, [str(tree)], IndexOptions(steps=(), **opts))
        assert_same(db, tree, tmp_path, tag, **opts)

    cart = tree / "app/src/main/kotlin/com/shop/Cart.kt"
    src = cart.read_text()
    edit("kotlin helper appears (Java's CartKt.helper resolves)",
         lambda: cart.write_text(src + "\nfun helper(c: Cart?): Int = 0\n"))
    prices = tree / "app/src/main/kotlin/com/shop/pricing/Prices.kt"
    ptext = prices.read_text()
    edit("object deleted", lambda: prices.unlink())
    edit("object back", lambda: prices.write_text(ptext))
    model = tree / "web/src/Base/Model.php"
    edit("php namespace moved", lambda: model.write_text(model.read_text().replace("App\\Base", "App\\Core")))
    server = tree / "srv/api/server.go"
    gsrc = server.read_text()
    edit("go type removed (methods back under the file)", lambda: server.write_text(gsrc.replace("type Server struct{}", "")))
    edit("go type back", lambda: server.write_text(gsrc))


def test_calls_through_fields_of_structs_in_other_files_follow_edits_as_a_full_rebuild(tmp_path):
    """A Go method's ``s.conns.Close()`` and a Rust impl's ``self.io.flush()`` resolve through a
    struct another file declares: editing, deleting or moving only that file (or the file of the
    field type's methods) leaves what a full rebuild does."""
    tree = tmp_path / "tree"
    w(tree / "srv/go.mod", "module example.com/srv\n")
    w(tree / "srv/api/types.go", """
        package api

        type Server struct {
        \tconns *ConnSet
        }
        """)
    w(tree / "srv/api/conns.go", """
        package api

        type ConnSet struct{}

        func (c *ConnSet) Close() {}

        type Pool struct{}

        func (p *Pool) Close() {}
        """)
    w(tree / "srv/api/server.go", """
        package api

        func (s *Server) Stop() { s.conns.Close() }
        """)
    w(tree / "net/Cargo.toml", '[package]\nname = "net"\nversion = "0.1.0"\n')
    w(tree / "net/src/lib.rs", "mod conn;\nmod imp;\nmod io;\n")
    w(tree / "net/src/conn.rs", "use crate::io::Io;\n\npub struct Conn {\n    io: Io,\n}\n")
    w(tree / "net/src/io.rs", """
        pub struct Io;
        impl Io { pub fn flush(&self) {} }
        pub struct Sink;
        impl Sink { pub fn flush(&self) {} }
        """)
    w(tree / "net/src/imp.rs", "use crate::conn::Conn;\n\nimpl Conn {\n    pub fn flush(&self) { self.io.flush(); }\n}\n")
    db = tmp_path / "inc.db"
    index_paths(db, [str(tree)], IndexOptions(steps=()))
    assert_same(db, tree, tmp_path, "initial")

    def edit(tag, fn):
        fn()
        index_paths(db, [str(tree)], IndexOptions(steps=()))
        assert_same(db, tree, tmp_path, tag)

    def target(src):
        with Index.open(db, readonly=True) as ix:
            return ix.conn.execute("SELECT d.key FROM edges e JOIN nodes s ON s.id = e.src LEFT JOIN nodes d "
                                   "ON d.id = e.dst WHERE s.key = ? AND e.type = 'calls'", (src,)).fetchall()

    stop, flush = "go:srv/api/server.go:Server.Stop", "rs:net/src/imp.rs:Conn.flush"
    assert target(stop) == [("go:srv/api/conns.go:ConnSet.Close",)]
    assert target(flush) == [("rs:net/src/io.rs:Io.flush",)]
    types, conns = tree / "srv/api/types.go", tree / "srv/api/conns.go"
    tsrc, csrc = types.read_text(), conns.read_text()
    edit("go field type changed", lambda: types.write_text(tsrc.replace("*ConnSet", "*Pool")))
    assert target(stop) == [("go:srv/api/conns.go:Pool.Close",)]
    edit("go struct deleted", lambda: types.unlink())
    edit("go struct back", lambda: types.write_text(tsrc))
    edit("go struct moved to another file", lambda: (types.unlink(), (tree / "srv/api/moved.go").write_text(tsrc)))
    edit("go method's file deleted", lambda: conns.unlink())
    edit("go method's file back", lambda: conns.write_text(csrc))
    conn, io = tree / "net/src/conn.rs", tree / "net/src/io.rs"
    rsrc, isrc = conn.read_text(), io.read_text()
    edit("rust field type changed", lambda: conn.write_text(rsrc.replace("io: Io", "io: crate::io::Sink")))
    assert target(flush) == [("rs:net/src/io.rs:Sink.flush",)]
    edit("rust struct deleted", lambda: conn.write_text(""))
    edit("rust struct back", lambda: conn.write_text(rsrc))
    edit("rust method removed", lambda: io.write_text(isrc.replace("impl Io { pub fn flush(&self) {} }", "")))
    edit("rust method back", lambda: io.write_text(isrc))
