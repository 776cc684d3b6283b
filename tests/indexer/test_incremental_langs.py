"""An incremental reindex of a tree in the newer languages (Kotlin beside Java, PHP, Go with
methods under their type) leaves exactly what a full rebuild leaves (the comparison of
tests/indexer/test_incremental.py, by keys)."""
from __future__ import annotations

from indexer.test_incremental import assert_same, w

from kgsearch.indexer import IndexOptions, index_paths


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
