"""Source-language loaders, end to end: one small project per language is indexed and its
nodes (keys, kinds, spans, flags) and resolved ``imports``/``calls``/``inherits``/``implements``
edges are compared with hand-computed answers."""
from __future__ import annotations

import textwrap

import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store.db import Index
from kgsearch.types import FLAG_TEST, FLAG_VENDORED


def build(tmp_path, files: dict[str, str]):
    root = tmp_path / "proj"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(root)], IndexOptions(steps=()))
    assert rep.files_failed == 0 and not [w for w in rep.warnings if "defined twice" in w], rep.warnings
    with Index.open(db, readonly=True) as ix:
        nodes = {r[0]: r[1:] for r in ix.conn.execute(
            "SELECT key, kind, name, line_start, line_end, flags FROM nodes WHERE file_id IS NOT NULL")}
        edges = ix.conn.execute(
            "SELECT s.key, e.type, d.key FROM edges e JOIN nodes s ON s.id = e.src "
            "LEFT JOIN nodes d ON d.id = e.dst WHERE e.type != 'contains'").fetchall()
    return nodes, set(edges)


def has(edges, src, etype, dst):
    return (src, etype, dst) in edges


# ---------------------------------------------------------------------------------------- Go
GO = {
    "go.mod": "module example.com/shop\n",
    "cart/cart.go": """\
        package cart

        import (
        \t"fmt"
        \t"example.com/shop/pricing"
        \tp2 "example.com/shop/pricing"
        )

        // Cart holds items.
        type Cart struct {
        \tBase
        \titems []string
        }

        type Base struct{}

        func (b *Base) Log() {}

        // Add adds an item.
        func (c *Cart) Add(item string) error {
        \tc.Total()
        \tc.Log()
        \tfmt.Println(item)
        \tpricing.Discount(1)
        \tp2.Discount(2)
        \treturn helper()
        }

        func (c *Cart) Total() int { return len(c.items) }

        func helper() error { return nil }
        """,
    "cart/cart_test.go": "package cart\n\nfunc TestAdd(t *testing.T) { helper() }\n",
    "pricing/pricing.go": """\
        package pricing

        func Discount(x int) int { return x }

        type Rule interface {
        \tApply(x int) int
        }
        """,
    "pricing/zz_gen.pb.go": "package pricing\n\nfunc Gen() {}\n",
}


def test_go(tmp_path):
    nodes, edges = build(tmp_path, GO)
    assert nodes["go:cart/cart.go:Cart"] == ("class", "Cart", 10, 13, 0)
    assert nodes["go:cart/cart.go:Cart.Add"] == ("method", "Add", 20, 27, 0)
    assert nodes["go:cart/cart.go:Cart.Total"][:4] == ("method", "Total", 29, 29)
    assert nodes["go:pricing/pricing.go:Rule.Apply"][:4] == ("method", "Apply", 6, 6)
    assert nodes["go:cart/cart_test.go:TestAdd"][4] & FLAG_TEST
    assert nodes["go:pricing/zz_gen.pb.go:Gen"][4] & FLAG_VENDORED
    assert has(edges, "go:cart/cart.go", "imports", "go:pricing/pricing.go")
    assert has(edges, "go:cart/cart.go", "imports", None)                       # fmt: not in the tree
    add = "go:cart/cart.go:Cart.Add"
    for dst in ("go:cart/cart.go:Cart.Total", "go:pricing/pricing.go:Discount", "go:cart/cart.go:helper"):
        assert has(edges, add, "calls", dst)
    assert has(edges, add, "calls", None)                                       # c.Log(): promoted, unresolved
    assert has(edges, "go:cart/cart.go:Cart", "inherits", "go:cart/cart.go:Base")
    assert has(edges, "go:cart/cart_test.go:TestAdd", "calls", "go:cart/cart.go:helper")


# -------------------------------------------------------------------------------------- Rust
RUST = {
    "Cargo.toml": '[package]\nname = "shop-lib"\nversion = "0.1.0"\n',
    "src/lib.rs": "pub mod cart;\nmod pricing;\npub use crate::pricing::Rule;\n",
    "src/cart.rs": """\
        use crate::pricing::{self, discount};
        use super::Rule;

        /// A cart.
        #[derive(Debug)]
        pub struct Cart {
            items: Vec<u32>,
        }

        impl Cart {
            pub fn new() -> Self { Self::empty() }
            fn empty() -> Self { Cart { items: vec![] } }
            pub fn total(&self) -> u32 {
                self.count();
                discount(1);
                pricing::apply(2);
                helper!()
            }
            fn count(&self) -> usize { self.items.len() }
        }

        impl Rule for Cart {
            fn apply(&self) -> u32 { let s = r#"fn fake() {"#; 0 }
        }

        #[cfg(test)]
        mod tests {
            use super::*;
            #[test]
            fn it_works() { Cart::new(); }
        }
        """,
    "src/pricing.rs": """\
        pub trait Rule: Clone + Base {
            fn apply(&self) -> u32;
        }
        pub trait Base {}
        pub fn discount(x: u32) -> u32 { x }
        pub fn apply(x: u32) -> u32 { x }
        #[macro_export]
        macro_rules! helper { () => { 0 } }
        """,
}


def test_rust(tmp_path):
    nodes, edges = build(tmp_path, RUST)
    c = "rs:src/cart.rs:"
    assert nodes[c + "Cart"] == ("class", "Cart", 5, 8, 0)                   # from #[derive]
    assert nodes[c + "Cart#2"][:4] == ("class", "Cart", 10, 20)              # impl Cart
    assert nodes[c + "Cart#3"][:4] == ("class", "Cart", 22, 24)              # impl Rule for Cart
    assert nodes[c + "Cart.apply"][:4] == ("method", "apply", 23, 23)
    assert "rs:src/cart.rs:fake" not in nodes                                 # inside a raw string
    assert nodes[c + "tests"][4] & FLAG_TEST and nodes[c + "tests.it_works"][4] & FLAG_TEST
    assert not nodes[c + "Cart.new"][4] & FLAG_TEST
    assert nodes["rs:src/pricing.rs:Rule.apply"][:2] == ("method", "apply")    # a body-less trait method
    lib = "rs:src/lib.rs"
    assert has(edges, lib, "imports", "rs:src/cart.rs") and has(edges, lib, "imports", "rs:src/pricing.rs")
    assert has(edges, lib, "imports", "rs:src/pricing.rs:Rule")
    assert has(edges, "rs:src/cart.rs", "imports", "rs:src/pricing.rs:discount")
    assert has(edges, "rs:src/cart.rs", "imports", "rs:src/lib.rs")           # use super::Rule: the crate root
    assert not has(edges, "rs:src/cart.rs", "imports", "rs:src/cart.rs")      # use super::* in its own mod tests
    assert has(edges, c + "Cart.new", "calls", c + "Cart.empty")               # Self::empty()
    for dst in (c + "Cart.count", "rs:src/pricing.rs:discount", "rs:src/pricing.rs:apply",
                "rs:src/pricing.rs:helper"):
        assert has(edges, c + "Cart.total", "calls", dst), dst
    assert has(edges, c + "tests.it_works", "calls", c + "Cart.new")           # through use super::*
    assert has(edges, c + "Cart#3", "implements", "rs:src/pricing.rs:Rule")
    assert has(edges, "rs:src/pricing.rs:Rule", "inherits", "rs:src/pricing.rs:Base")


# -------------------------------------------------------------------------------------- Java
JAVA = {
    "src/main/java/com/shop/Cart.java": """\
        package com.shop;

        import com.shop.pricing.Rule;
        import com.shop.pricing.*;
        import static com.shop.pricing.Prices.discount;

        /** A cart. */
        @Entity(name = "cart")
        public class Cart extends Base implements Rule {
            private final List<String> items = new ArrayList<>();

            public Cart() { super(); }

            @Override
            public int apply(int x) {
                total();
                this.log("x");
                discount(1);
                Prices.round(2);
                return helper(x);
            }

            int total() { return items.size(); }
            private static int helper(int x) { return x; }

            static class Inner { void run() { Runnable r = new Runnable() { public void run() {} }; } }
        }
        """,
    "src/main/java/com/shop/Base.java": """\
        package com.shop;
        public abstract class Base {
            protected void log(String s) {}
            abstract int size();
        }
        """,
    "src/main/java/com/shop/pricing/Rule.java": "package com.shop.pricing;\npublic interface Rule { int apply(int x); }\n",
    "src/main/java/com/shop/pricing/Prices.java": """\
        package com.shop.pricing;
        public final class Prices {
            public static int discount(int x) { return x; }
            public static int round(int x) { return x; }
        }
        """,
    "src/test/java/com/shop/CartTest.java": "package com.shop;\nclass CartTest { void testApply() { } }\n",
}


def test_java(tmp_path):
    nodes, edges = build(tmp_path, JAVA)
    c = "java:src/main/java/com/shop/Cart.java:"
    assert nodes[c + "Cart"] == ("class", "Cart", 8, 27, 0)                  # from @Entity
    assert nodes[c + "Cart.Cart"][:4] == ("method", "Cart", 12, 12)          # the constructor
    assert nodes[c + "Cart.apply"][:4] == ("method", "apply", 14, 21)        # from @Override
    assert nodes[c + "Cart.Inner.run.run"][:2] == ("method", "run")          # the anonymous class's
    assert nodes["java:src/main/java/com/shop/Base.java:Base.size"][:4] == ("method", "size", 4, 4)
    assert nodes["java:src/test/java/com/shop/CartTest.java:CartTest"][4] & FLAG_TEST
    mod = "java:src/main/java/com/shop/Cart.java"
    assert has(edges, mod, "imports", "java:src/main/java/com/shop/pricing/Rule.java:Rule")
    assert has(edges, mod, "imports", "java:src/main/java/com/shop/pricing/Prices.java:Prices.discount")
    apply = c + "Cart.apply"
    for dst in (c + "Cart.total", "java:src/main/java/com/shop/Base.java:Base.log",
                "java:src/main/java/com/shop/pricing/Prices.java:Prices.discount",
                "java:src/main/java/com/shop/pricing/Prices.java:Prices.round", c + "Cart.helper"):
        assert has(edges, apply, "calls", dst), dst
    assert has(edges, c + "Cart.Cart", "calls", "java:src/main/java/com/shop/Base.java:Base")   # super()
    assert has(edges, c + "Cart", "inherits", "java:src/main/java/com/shop/Base.java:Base")
    assert has(edges, c + "Cart", "implements", "java:src/main/java/com/shop/pricing/Rule.java:Rule")


def test_java_nested_records_are_one_node_each(tmp_path):
    """A record declared in a class body is its ``class`` node only: the member scan read its
    header ``record A(..) {`` as a constructor ``A`` of the outer class too, a twin node with the
    record's span, the compact constructor under it (gson's ``Java17RecordTest.MyRecord.MyRecord.MyRecord``)."""
    nodes, _ = build(tmp_path, {"src/main/java/p/T.java": """\
        package p;
        class T {
          private static record A(@Ann(value = "x", alt = {"y", "z"}) String b) {
            A { check(b); }
          }
          record B(int x) {
            B(int x, int y) { this(x); }
            int twice() { return 2 * x; }
          }
          T(int v) { }
        }
        """})
    t = "java:src/main/java/p/T.java:"
    assert {k: v[:4] for k, v in nodes.items()} == {
        "java:src/main/java/p/T.java": ("module", "T", 1, 11),
        t + "T": ("class", "T", 2, 11),
        t + "T.A": ("class", "A", 3, 5),
        t + "T.A.A": ("method", "A", 4, 4),
        t + "T.B": ("class", "B", 6, 9),
        t + "T.B.B": ("method", "B", 7, 7),
        t + "T.B.twice": ("method", "twice", 8, 8),
        t + "T.T": ("method", "T", 10, 10),
    }


# ----------------------------------------------------------------------------------- C / C++
CPP = {
    "include/shop/cart.h": """\
        #pragma once
        #include "pricing.h"
        #include <vector>
        namespace shop {
        /// A cart.
        class Cart : public Base {
         public:
          int total() const;
          int count() const { return n_; }
         private:
          int n_ = 0;
        };
        }
        """,
    "include/shop/pricing.h": "#pragma once\nstruct Base { virtual ~Base() {} };\nint discount(int x);\n",
    "src/cart.cc": """\
        #include "shop/cart.h"
        #include "util.h"
        namespace shop {
        static int helper(int x) { return x; }
        #if defined(FAST)
        int Cart::total() const {
        #else
        int Cart::total() const noexcept(false) {
        #endif
          count();
          this->count();
          discount(1);
          shop::helper(2);
          const char* s = R"x(int fake() {)x";
          return helper(3);
        }
        }
        """,
    "src/util.h": "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
    "src/pricing.c": "#include \"../include/shop/pricing.h\"\nint discount(int x) { return x; }\n",
    "third_party/lib/x.c": "int vendored(void) { return 0; }\n",
}


def test_c_and_cpp(tmp_path):
    nodes, edges = build(tmp_path, CPP)
    h = "c:include/shop/cart.h:"
    assert nodes[h + "shop.Cart"] == ("class", "Cart", 6, 12, 0)
    assert nodes[h + "shop.Cart.count"][:4] == ("method", "count", 9, 9)
    cc = "c:src/cart.cc:"
    assert nodes[cc + "shop.Cart.total"][:4] == ("method", "total", 6, 16)   # the #if's first branch
    assert nodes[cc + "shop.helper"][:4] == ("function", "helper", 4, 4)
    assert not any("fake" in k for k in nodes)
    assert nodes["c:third_party/lib/x.c:vendored"][4] & FLAG_VENDORED
    assert has(edges, "c:src/cart.cc", "imports", "c:include/shop/cart.h")       # from an include folder
    assert has(edges, "c:src/cart.cc", "imports", "c:src/util.h")                # beside the file
    assert has(edges, "c:include/shop/cart.h", "imports", "c:include/shop/pricing.h")
    assert has(edges, "c:src/pricing.c", "imports", "c:include/shop/pricing.h")
    assert has(edges, "c:include/shop/cart.h", "imports", None)                 # <vector>
    total = cc + "shop.Cart.total"
    for dst in (h + "shop.Cart.count", "c:src/pricing.c:discount", cc + "shop.helper"):
        assert has(edges, total, "calls", dst), dst
    assert has(edges, h + "shop.Cart", "inherits", "c:include/shop/pricing.h:Base")


def test_c_function_whose_header_an_else_branch_spells_differently(tmp_path):
    """``#ifdef _WIN32 int wmain(..) { #else int main(..) { #endif`` + one body: both names are
    functions with that body (jq's src/main.c); an #else header of the same name adds nothing."""
    nodes, edges = build(tmp_path, {"src/main.c": """\
        #include <stdio.h>
        static int helper(void) { return 1; }
        #ifdef _WIN32
        int wmain(int argc, wchar_t **argv) {
        #else /*}*/
        int main(int argc, char **argv) {
        #endif
          return helper();
        }
        #if A
        int f(int x) {
        #else
        int f(void) {
        #endif
          return 0;
        }
        """})
    assert nodes["c:src/main.c:wmain"][:4] == ("function", "wmain", 4, 9)
    assert nodes["c:src/main.c:main"][:4] == ("function", "main", 6, 9)
    assert nodes["c:src/main.c:f"][:4] == ("function", "f", 11, 16)
    assert not any(k.startswith("c:src/main.c:f#") or ".main" in k or "wmain." in k for k in nodes)
    assert has(edges, "c:src/main.c:main", "calls", "c:src/main.c:helper")


def test_cpp_classes_nested_in_a_namespaces_class_are_keyed_once_by_their_namespace(tmp_path):
    """A class inside a class inside ``namespace ns`` is ``ns.Outer.Inner``: the namespace prefixed
    the nested class's own name too and its parent's qualified name went before that
    (``ns.Outer.ns.Inner``, Catch2's ``Catch.clara.TextFlow.Column.Catch.clara.TextFlow.iterator``),
    so ``Outer.Inner`` named no class and out-of-line ``ns::Outer::Inner::f`` lost its type. A class
    written ``Outer::Deferred`` inside ``namespace ns`` is ``ns.Outer.Deferred``, as a function
    ``Outer::h2`` there is ``ns.Outer.h2``, and ``ns::Outer::h3`` there too
    (Catch2's ``Catch::MessageBuilder::MessageBuilder`` inside ``namespace Catch`` was
    ``Catch.Catch.MessageBuilder.MessageBuilder``)."""
    nodes, edges = build(tmp_path, {
        "include/outer.h": """\
            namespace ns {
            namespace detail { struct Tag { enum class Kind { A }; }; }
            class Outer {
            public:
                class Inner {
                public:
                    int f();
                    int g() { return 1; }
                    struct Leaf { int h() { return 2; } };
                };
                enum Mode { On, Off };
                int h() { return 3; }
            };
            }
            """,
        "src/outer.cpp": """\
            #include "outer.h"
            int ns::Outer::Inner::f() { return g(); }
            namespace ns {
            int Outer::h2() { return 4; }
            class Outer::Deferred { int k() { return 5; } };
            int ns::Outer::h3() { return 6; }
            int Outer::h4() { return 7; }
            }
            namespace Gen { class Gen { int get(); }; int Gen::get() { return 8; } }
            """})
    h, cc = "c:include/outer.h:", "c:src/outer.cpp:"
    assert {k: v[:4] for k, v in nodes.items()} == {
        "c:include/outer.h": ("module", "outer", 1, 14),
        h + "ns.detail.Tag": ("class", "Tag", 2, 2),
        h + "ns.detail.Tag.Kind": ("class", "Kind", 2, 2),
        h + "ns.Outer": ("class", "Outer", 3, 13),
        h + "ns.Outer.Inner": ("class", "Inner", 5, 10),
        h + "ns.Outer.Inner.g": ("method", "g", 8, 8),
        h + "ns.Outer.Inner.Leaf": ("class", "Leaf", 9, 9),
        h + "ns.Outer.Inner.Leaf.h": ("method", "h", 9, 9),
        h + "ns.Outer.Mode": ("class", "Mode", 11, 11),
        h + "ns.Outer.h": ("method", "h", 12, 12),
        "c:src/outer.cpp": ("module", "outer", 1, 9),
        cc + "ns.Outer.Inner.f": ("method", "f", 2, 2),
        cc + "ns.Outer.h2": ("method", "h2", 4, 4),
        cc + "ns.Outer.Deferred": ("class", "Deferred", 5, 5),
        cc + "ns.Outer.Deferred.k": ("method", "k", 5, 5),
        cc + "ns.Outer.h3": ("method", "h3", 6, 6),         # (ns::Outer inside ns: the same class)
        cc + "ns.Outer.h4": ("method", "h4", 7, 7),
        cc + "Gen.Gen": ("class", "Gen", 9, 9),             # a class named as its namespace
        cc + "Gen.Gen.get": ("method", "get", 9, 9),         # (was a function: Gen is a namespace too)
    }
    from kgsearch.ingest import ccode, langspec
    from kgsearch.types import LoadOptions
    root = tmp_path / "proj"
    got = ccode.load(root / "include/outer.h", "include/outer.h", LoadOptions(root=str(root)), langspec.CPP)
    assert [(n.qualname, n.parent) for n in got.nodes if n.name in ("Inner", "Leaf")] == [
        ("include/outer.h:ns.Outer.Inner", h + "ns.Outer"),
        ("include/outer.h:ns.Outer.Inner.Leaf", h + "ns.Outer.Inner")]
    # its names: `Outer.Inner` (what an out-of-line `Outer::Inner::f` asks for) and `Inner`
    assert [a[1:] for n in got.nodes if n.name == "Inner" for a in n.aliases] == [("Outer.Inner", 0), ("Inner", 1)]
    assert has(edges, cc + "ns.Outer.Inner.f", "member_of", h + "ns.Outer.Inner")
    assert has(edges, cc + "ns.Outer.Inner.f", "calls", h + "ns.Outer.Inner.g")
    for m in ("h2", "h3", "h4"):
        assert has(edges, cc + "ns.Outer." + m, "member_of", h + "ns.Outer"), m


# -------------------------------------------------------------------------- JavaScript / TS
JS = {
    "src/index.js": """\
        import Cart, { helper as h } from './cart'
        import * as util from './util/index.js'
        const { format } = require('./util')
        export default function main() {
          const c = new Cart()
          h(1)
          util.log(`x ${ {a: '}'}.a }`)
          format(2 / 1, /[{]/)
          return api.get()
        }
        const api = {
          get() { return local() },
          put: async (x) => x,
        }
        function local() {}
        """,
    "src/cart.ts": """\
        import { Base } from './base'
        /** A cart. */
        export default class Cart extends Base {
          total(): number { this.count(); this.log(); return 0 }
          count() { return 1 }
        }
        export function helper(x: number) { return x }
        export const tax = (x: number): number =>
          x * 2
        """,
    "src/base.ts": "export class Base { log() {} }\n",
    "src/util/index.js": "exports.log = function (m) {}\nmodule.exports.format = (x) => x\n",
    "src/__tests__/cart.test.js": "test('adds', () => {})\nfunction setup() {}\n",
    "dist/bundle.js": "function bundled() {}\n",
    "src/vendor.min.js": "function minified() {}\n",
}


def test_javascript_and_typescript(tmp_path):
    nodes, edges = build(tmp_path, JS)
    assert nodes["js:src/index.js:main"] == ("function", "main", 4, 10, 0)
    assert nodes["js:src/index.js:api.get"][:4] == ("function", "get", 12, 12)   # named after its object
    assert nodes["js:src/index.js:api.put"][:4] == ("function", "put", 13, 13)
    assert nodes["js:src/cart.ts:Cart"][:4] == ("class", "Cart", 3, 6)
    assert nodes["js:src/cart.ts:Cart.total"][:4] == ("method", "total", 4, 4)
    assert nodes["js:src/cart.ts:tax"][:4] == ("function", "tax", 8, 9)          # an expression body
    assert nodes["js:src/__tests__/cart.test.js:setup"][4] & FLAG_TEST
    assert not any(k.startswith(("js:dist/", "js:src/vendor.min")) for k in nodes)
    assert has(edges, "js:src/index.js", "imports", "js:src/cart.ts")
    assert has(edges, "js:src/index.js", "imports", "js:src/util/index.js")
    main = "js:src/index.js:main"
    for dst in ("js:src/cart.ts:Cart", "js:src/cart.ts:helper", "js:src/util/index.js:log",
                "js:src/util/index.js:format", "js:src/index.js:api.get"):
        assert has(edges, main, "calls", dst), dst
    assert has(edges, "js:src/index.js:api.get", "calls", "js:src/index.js:local")
    assert has(edges, "js:src/cart.ts:Cart.total", "calls", "js:src/cart.ts:Cart.count")
    assert has(edges, "js:src/cart.ts:Cart.total", "calls", "js:src/base.ts:Base.log")   # through extends
    assert has(edges, "js:src/cart.ts:Cart", "inherits", "js:src/base.ts:Base")


def test_javascript_named_function_expressions_passed_as_arguments(tmp_path):
    """A named callback is a definition (tree-sitter's tags name it; a stack trace shows its
    name); a named function called in place, or assigned (named after the left side), is not
    a second one."""
    nodes, edges = build(tmp_path, {"lib/req.js": """\
        defineGetter(req, 'hostname', function hostname() {
          var host = this.get('Host');
          return trim(host);
        });
        function outer(xs) {
          return xs.map(async function toRow(x) { return trim(x); });
        }
        (function iife() { var a = 1; })();
        const f = function named() {};
        function trim(s) { return s; }
        """})
    assert nodes["js:lib/req.js:hostname"][:4] == ("function", "hostname", 1, 4)
    assert nodes["js:lib/req.js:outer.toRow"][:4] == ("function", "toRow", 6, 6)
    assert nodes["js:lib/req.js:f"][:4] == ("function", "f", 9, 9)
    assert not any(k.endswith((":iife", ":named")) for k in nodes)
    assert has(edges, "js:lib/req.js:hostname", "calls", "js:lib/req.js:trim")     # its calls are its own
    assert has(edges, "js:lib/req.js:outer.toRow", "calls", "js:lib/req.js:trim")


def test_javascript_named_function_expressions_as_object_keys_and_class_fields_are_one_node(tmp_path):
    """``key: function named() {}`` is the key's function (``obj.key``) and nothing else: the
    member scan also read ``named() {`` as a method shorthand of the object, a second node under
    the first (``obj.key.obj.named``; axios' ``defaults.validateStatus.defaults.validateStatus``);
    so did a class field ``f = function fe() {}`` (``K.f.fe``) and generators (``function* g``).
    Shorthand generator methods (``*gen() {}``) stay methods."""
    nodes, _ = build(tmp_path, {"lib/a.js": """\
        const obj = {
          key: function named() { return 1; },
          same: function same() { return 2; },
          gen: function* gg() { yield 3; },
          as: async function aa() { return 4; },
          *star() { yield 5; },
          short() { return 6; },
        };
        class K {
          f = function fe() { return 7; };
          static g = function* ge() { yield 8; };
          *m() { yield 9; }
        }
        """})
    assert {k: v[:4] for k, v in nodes.items()} == {
        "js:lib/a.js": ("module", "a", 1, 13),
        "js:lib/a.js:obj.key": ("function", "key", 2, 2),
        "js:lib/a.js:obj.same": ("function", "same", 3, 3),
        "js:lib/a.js:obj.gen": ("function", "gen", 4, 4),
        "js:lib/a.js:obj.as": ("function", "as", 5, 5),
        "js:lib/a.js:obj.star": ("function", "star", 6, 6),
        "js:lib/a.js:obj.short": ("function", "short", 7, 7),
        "js:lib/a.js:K": ("class", "K", 9, 13),
        "js:lib/a.js:K.f": ("method", "f", 10, 10),
        "js:lib/a.js:K.g": ("method", "g", 11, 11),
        "js:lib/a.js:K.m": ("method", "m", 12, 12),
    }


@pytest.mark.parametrize("files", [GO, RUST, JAVA, CPP, JS], ids=["go", "rust", "java", "cpp", "js"])
def test_a_second_root_resolves_inside_itself(tmp_path, files):
    """Keys of a labelled root are qualified, and its edges resolve inside it first."""
    for name in ("a", "b"):
        for rel, text in files.items():
            p = tmp_path / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(textwrap.dedent(text))
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "a"), str(tmp_path / "b")], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        rows = ix.conn.execute(
            "SELECT s.key, d.key FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
            "WHERE e.type IN ('calls', 'imports')").fetchall()
    crossed = [(s, d) for s, d in rows if s.partition(":")[2].startswith("//b/") != d.partition(":")[2].startswith("//b/")]
    assert rows and not crossed


def test_rust_impl_trait_in_a_type_is_no_impl_block(tmp_path):
    # `impl Trait` as an argument or return type (and `dyn`/`&impl`) is a type, not an `impl`
    # block: it used to give a class named after the trait's last type (`R`, `Future`) holding
    # the function's body, with the function's nested items under it
    nodes, _ = build(tmp_path, {"Cargo.toml": '[package]\nname = "t"\n', "src/lib.rs": """\
        pub fn budget<R>(f: impl FnOnce() -> R) -> R {
            struct Guard;
            f()
        }
        fn later(x: &impl AsRef<str>, y: &mut impl Iterator<Item = u8>) -> impl Future<Output = ()> {
            async {}
        }
        unsafe impl Send for Guard2 {}
        struct Guard2;
        impl<T> Wrap<T> where T: Clone {
            fn get(&self) -> impl Fn(T) -> T { |t| t }
        }
        """})
    c = "rs:src/lib.rs:"
    assert sorted(k[len(c):] for k in nodes if k.startswith(c)) == [
        "Guard2", "Guard2#2", "Wrap", "Wrap.get", "budget", "budget.Guard", "later"]
    assert nodes[c + "Guard2"][:4] == ("class", "Guard2", 8, 8)              # unsafe impl Send for Guard2
    assert nodes[c + "budget.Guard"][:4] == ("class", "Guard", 2, 2)


def test_single_header_amalgamations_are_generated(tmp_path):
    # Catch2's single_include/catch2/catch.hpp and SQLite's sqlite3.c are merged from the
    # headers and sources that a fix edits: generated code, as a `DO NOT EDIT` file
    nodes, _ = build(tmp_path, {
        "single_include/catch.hpp": "/*\n *  Catch v2.8.0\n *  Generated: 2019-05-26\n *  ---\n"
                                    " *  This file has been merged from multiple headers. Please don't edit it directly\n"
                                    " */\nnamespace Catch { int run(); }\n",
        "sqlite3.c": "/*\n** This file is an amalgamation of many separate C source files from SQLite\n*/\n"
                     "int sqlite3_open(void) { return 0; }\n",
        "include/catch.hpp": "/* The headers merged from multiple places: see the amalgamation script. */\n"
                             "namespace Catch { int run(); }\n",
    })
    assert nodes["c:single_include/catch.hpp"][4] & FLAG_VENDORED
    assert nodes["c:sqlite3.c:sqlite3_open"][4] & FLAG_VENDORED
    assert not nodes["c:include/catch.hpp"][4] & FLAG_VENDORED


def test_go_import_comments_stand_for_a_missing_go_mod(tmp_path):
    # A GOPATH-era checkout without go.mod (grpc-go's snapshot: `package grpc // import
    # "google.golang.org/grpc"` in doc.go): its subpackages resolved by dropping the path's
    # leading elements, but the root package, the project's main API, had no folder to resolve
    # to, so no import of it and no `grpc.NewServer()` call had an edge. The nearest import
    # comment up the folders now stands for the module line; a folder's own comment counts up
    # the folders its path names (`metadata/` is `.../grpc/metadata`); other paths as before.
    _, edges = build(tmp_path, {
        "doc.go": '// Package grpc.\npackage grpc // import "google.golang.org/grpc"\n',
        "server.go": "package grpc\n\ntype Server struct{}\n\nfunc NewServer() *Server { return nil }\n",
        "balancer/base/base.go": "package base\n\nfunc NewBuilder() {}\n",
        "balancer/roundrobin/rr.go": """\
            package roundrobin

            import (
            \t"google.golang.org/grpc"
            \t"google.golang.org/grpc/balancer/base"
            \t"github.com/golang/protobuf/proto"
            )

            func init() {
            \tgrpc.NewServer()
            \tbase.NewBuilder()
            \tproto.Marshal()
            }
            """,
        "metadata/md.go": 'package metadata // import "google.golang.org/grpc/metadata"\n\n'
                          'import "google.golang.org/grpc"\n\nfunc F() { grpc.NewServer() }\n',
    })
    rr = "go:balancer/roundrobin/rr.go"
    assert {d for s, t, d in edges if s == rr and t == "imports"} == {"go:doc.go", "go:balancer/base/base.go", None}
    assert calls_of(edges, rr + ":init") == {"go:server.go:NewServer", "go:balancer/base/base.go:NewBuilder", None}
    assert has(edges, "go:metadata/md.go", "imports", "go:doc.go")
    assert calls_of(edges, "go:metadata/md.go:F") == {"go:server.go:NewServer"}


def test_go_names_bound_to_a_composite_literal_have_its_type(tmp_path):
    # `cc := &ClientConn{..}` then `cc.connect()` (grpc-go's DialContext): the literal says the
    # value's type exactly, as `var cc *ClientConn` does; a name also bound otherwise, two names
    # bound at once, slices, maps and anonymous structs give no type (no inference)
    _, edges = build(tmp_path, {
        "go.mod": "module example.com/m\n",
        "resolver/r.go": "package resolver\n\ntype Builder struct{}\n\nfunc (b Builder) Build() {}\n",
        "cc/cc.go": """\
            package cc

            import "example.com/m/resolver"

            type ClientConn struct{ n int }

            func (cc *ClientConn) connect() {}

            func Dial() {
            \tcc := &ClientConn{n: 1}
            \tcc.connect()
            \tr := resolver.Builder{}
            \tr.Build()
            }

            func Others() {
            \tp := []ClientConn{}
            \tp.connect()
            \tq, w := ClientConn{}, 1
            \tq.connect()
            \ts := struct{ a int }{}
            \ts.connect()
            \tv := ClientConn{}
            \tv := f()
            \tv.connect()
            }
            """})
    c = "go:cc/cc.go:"
    assert calls_of(edges, c + "Dial") == {c + "ClientConn", c + "ClientConn.connect", "go:resolver/r.go:Builder",
                                           "go:resolver/r.go:Builder.Build"}
    assert calls_of(edges, c + "Others") == {c + "ClientConn", None}        # the literals; f() unresolved


def test_go_composite_literals_call_their_type(tmp_path):
    # `&stats.InPayload{..}` builds a value as Python's `InPayload(..)` does: a calls edge to the
    # type, so the walk joins a type to the code that fills it in (gofmt: `T{`; a block: ` {`)
    files = {**GO, "cart/new.go": """\
        package cart

        import "example.com/shop/pricing"

        type rules []pricing.Rule

        func New(n int) *Cart {
        \tif n > 0 {
        \t\treturn &Cart{items: []string{}}
        \t}
        \tm := map[string]Base{"a": Base{}}
        \t_ = m
        \tvar _ = pricing.Rule(nil)
        \treturn &Cart{Base: Base{}}
        }
        """}
    _, edges = build(tmp_path, files)
    new = "go:cart/new.go:New"
    assert has(edges, new, "calls", "go:cart/cart.go:Cart") and has(edges, new, "calls", "go:cart/cart.go:Base")
    assert has(edges, new, "calls", "go:pricing/pricing.go:Rule")
    assert {d for s, t, d in edges if s == new and t == "calls"} == {
        "go:cart/cart.go:Cart", "go:cart/cart.go:Base", "go:pricing/pricing.go:Rule"}   # no `n`, `string`


def test_parser_and_scanner_generators_output_is_generated(tmp_path):
    # Bison's parser.c/.h and flex's lexer.c (committed in jq and many C trees): their fixes are
    # in the grammar; a search ranks them below the hand-written code
    nodes, _ = build(tmp_path, {
        "src/parser.c": "/* A Bison parser, made by GNU Bison 3.8.2.  */\n\nint yyparse(void) { return 0; }\n",
        "src/lexer.c": '#line 1 "src/lexer.c"\n\n/* A lexical scanner generated by flex */\n\nint yylex(void) { return 0; }\n',
        "src/hash.c": "/* ANSI-C code produced by gperf version 3.1 */\nint in_word_set(void) { return 0; }\n",
        "src/main.c": "/* Parses what a Bison parser made by hand would: no banner here. */\nint main(void) { return 0; }\n",
    })
    for key in ("c:src/parser.c:yyparse", "c:src/lexer.c:yylex", "c:src/hash.c:in_word_set"):
        assert nodes[key][4] & FLAG_VENDORED, key
    assert not nodes["c:src/main.c:main"][4] & FLAG_VENDORED


@pytest.mark.parametrize("fmt,text,kind", [("rust", "pub fn split_off(at: usize) -> usize {\n    at\n}\n", "function"),
                                           ("go", "package x\n\nfunc SplitOff(at int) int {\n\treturn at\n}\n", "function"),
                                           ("typescript", "export function splitOff(at: number): number {\n  return at;\n}\n",
                                            "function")])
def test_format_forces_any_language_loader(tmp_path, fmt, text, kind):
    """``kgsearch index --format rust FILE`` (a source file without its usual extension): the
    CLI offered only the first six loaders (kg, triples, markdown, python, text, beir) and
    argparse refused every source language added since; the choices are the loaders' names."""
    from conftest import run as cli

    src = tmp_path / "snippet.txt"
    src.write_text(text)
    db = tmp_path / "i.db"
    rc, _, err = cli("index", src, "--format", fmt, "--db", db, "-q", "--no-embed")
    assert rc == 0, err
    with Index.open(db, readonly=True) as ix:
        kinds = [k for (k,) in ix.conn.execute("SELECT kind FROM nodes WHERE name IN ('split_off', 'SplitOff', 'splitOff')")]
    assert kinds == [kind]


def calls_of(edges, src):
    return {d for s, t, d in edges if s == src and t == "calls"}


def test_rust_dollar_crate_paths_in_macros_are_the_defining_crate(tmp_path):
    # `$crate::a::f()` in a macro's body is `crate::a::f()` of the crate that defines the macro
    # (the macro's expansion reaches its support code that way: tokio's `select!` and
    # `macros/support.rs`); the calls, macro calls and `use` trees on `$crate` had no edge
    _, edges = build(tmp_path, {
        "Cargo.toml": '[package]\nname = "mac"\nversion = "0.1.0"\n',
        "src/lib.rs": "#[macro_use]\nmod macros;\npub mod support;\n",
        "src/support.rs": "pub fn poll_fn() {}\npub fn ready() {}\n",
        "src/macros/mod.rs": "#[macro_use]\nmod select;\n",
        "src/macros/select.rs": """\
            #[macro_export]
            macro_rules! select {
                ($($t:tt)*) => {{
                    use $crate::support::ready;
                    $crate::support::poll_fn();
                    $crate :: helper!();
                    $x.poll_fn();
                }};
            }
            #[macro_export]
            macro_rules! helper { () => {} }
            """})
    s = "rs:src/macros/select.rs"
    assert has(edges, s, "imports", "rs:src/support.rs:ready")
    assert calls_of(edges, s + ":select") == {"rs:src/support.rs:poll_fn", s + ":helper"}


def test_rust_crate_macros_by_bare_name_and_no_pub_calls(tmp_path):
    # A file's `macro_rules!` reaches the rest of its crate by its bare name (`#[macro_use] mod
    # macros;`: tokio's `cfg_rt! { .. }`, `ready!(..)`), so `cfg_rt!` elsewhere calls it; one
    # defined inside a function stays local. `pub(crate)` / `pub(super)` are visibilities, not
    # calls of a `pub` (1,605 unresolved `pub` calls in tokio).
    _, edges = build(tmp_path, {
        "Cargo.toml": '[package]\nname = "m"\nversion = "0.1.0"\n',
        "src/lib.rs": "#[macro_use]\nmod macros;\npub mod a;\nmod b;\n",
        "src/macros.rs": "macro_rules! cfg_rt {\n    ($($i:item)*) => { $($i)* }\n}\n",
        "src/a.rs": """\
            cfg_rt! {
                pub(crate) fn f() { local!(); }
            }
            pub(crate) fn g() {
                macro_rules! local { () => {} }
                cfg_rt!();
            }
            """,
        "src/b.rs": "pub(super) fn h() { local!(); }\n",
    })
    mac = "rs:src/macros.rs:cfg_rt"
    assert calls_of(edges, "rs:src/a.rs") == {mac}
    assert calls_of(edges, "rs:src/a.rs:g") == {mac}
    assert calls_of(edges, "rs:src/a.rs:f") == calls_of(edges, "rs:src/b.rs:h") == {None}   # g's local!: not theirs
    assert calls_of(edges, "rs:src/b.rs") == set()


def test_rust_let_bound_struct_literals_have_their_type(tmp_path):
    # `let t = Task { .. }; t.poll()`: a struct literal says the value's type exactly, as
    # `let t: Task` does; blocks (`= match x {`, `= if c {`) and a name bound again give none
    _, edges = build(tmp_path, {
        "Cargo.toml": '[package]\nname = "t"\nversion = "0.1.0"\n',
        "src/lib.rs": "pub mod task;\npub mod run;\n",
        "src/task.rs": "pub struct Task { id: u64 }\nimpl Task { pub fn poll(&self) {} }\n",
        "src/run.rs": """\
            use crate::task::{self, Task};

            pub fn a() {
                let t = Task { id: 1 };
                t.poll();
            }
            pub fn b() {
                let mut t = task::Task { id: 1 };
                t.poll();
            }
            pub fn c() {
                let t = match x { _ => 1 };
                t.poll();
                let u = if y { 1 } else { 2 };
                u.poll();
            }
            pub fn d() {
                let t = Task { id: 1 };
                let t = other();
                t.poll();
            }
            """})
    r, poll = "rs:src/run.rs:", "rs:src/task.rs:Task.poll"
    assert calls_of(edges, r + "a") == calls_of(edges, r + "b") == {poll}
    assert calls_of(edges, r + "c") == set() and calls_of(edges, r + "d") == {None}    # other() unresolved


def test_rust_methods_on_values_of_declared_types(tmp_path):
    # `self.chan.recv()` reaches the channel's implementation through the field's declared type
    # (tokio: `Receiver::recv_many` -> `chan::Rx::recv_many`); parameters and `let x: T` alike;
    # through references and Arc/Mutex-style wrappers, the innermost in-tree type first
    files = {
        "Cargo.toml": '[package]\nname = "chan"\nversion = "0.1.0"\n',
        "src/lib.rs": "mod chan;\nmod pool;\npub mod recv;\n",
        "src/chan.rs": """\
            pub struct Rx<T> { v: Vec<T> }
            impl<T> Rx<T> {
                pub fn recv(&mut self) -> Option<T> { None }
                pub fn len(&self) -> usize { 0 }
            }
            pub struct Store;
            impl Store { pub fn put(&self) {} }
            """,
        "src/pool.rs": "pub struct Pool;\nimpl Pool { pub fn get(&self) {} }\n",
        "src/recv.rs": """\
            use std::sync::{Arc, Mutex};
            use crate::chan::{self, Store};
            use crate::pool::Pool;

            pub struct Receiver<T> {
                chan: chan::Rx<T>,
                shared: Arc<Mutex<Store>>,
                items: Vec<Store>,
                gen: T,
            }

            impl<T> Receiver<T> {
                pub fn recv(&mut self) -> Option<T> {
                    self.chan.recv()
                }
                pub fn put(&self) {
                    self.shared.put();
                    self.items.len();
                    self.gen.put();
                }
                pub fn take<P: Clone>(&self, pool: &mut Pool, p: P, n: usize) {
                    pool.get();
                    p.get();
                    n.get();
                    let s: Store = Store;
                    s.put();
                    let t = Store;
                    t.put();
                }
                pub fn shadowed(&self, s: &Store) {
                    s.put();
                    let s = other();
                    for pool in list() { pool.get(); }
                }
            }
            """,
    }
    _, edges = build(tmp_path, files)
    r, c = "rs:src/recv.rs:Receiver.", "rs:src/chan.rs:"
    assert calls_of(edges, r + "recv") == {c + "Rx.recv"}
    assert calls_of(edges, r + "put") == {c + "Store.put"}          # Arc<Mutex<Store>>; not Vec's len, not T's
    assert calls_of(edges, r + "take") == {"rs:src/pool.rs:Pool.get", c + "Store.put"}   # not P, usize, `let t =`
    assert calls_of(edges, r + "shadowed") == {None}    # other(), list() unresolved; `s`, `pool` rebound: no edge


def test_rust_field_declared_differently_by_two_structs_of_one_name_gives_no_edge(tmp_path):
    files = {
        "Cargo.toml": '[package]\nname = "io"\nversion = "0.1.0"\n',
        "src/lib.rs": """\
            pub struct A;
            impl A { pub fn flush(&self) {} }
            pub struct B;
            impl B { pub fn flush(&self) {} }
            #[cfg(unix)]
            pub struct Conn { io: A }
            #[cfg(windows)]
            pub struct Conn { io: B }
            impl Conn {
                pub fn flush(&self) { self.io.flush(); }
            }
            """,
    }
    _, edges = build(tmp_path, files)
    assert not calls_of(edges, "rs:src/lib.rs:Conn.flush")


def test_go_methods_on_values_of_declared_types(tmp_path):
    # `s.conn.Write()` reaches the connection's method through the field's declared type; an
    # embedded field by its type's name; typed parameters (grouped, variadic) and `var x T`
    files = {**GO, "srv/srv.go": """\
        package srv

        import "example.com/shop/pricing"

        type Listener interface {
        \tAccept() error
        }

        type Queue struct{}

        func (q *Queue) Push(x int) {}

        type Server struct {
        \t*Queue
        \tconn, backup *Conn "json"
        \trule pricing.Rule
        \tconns []*Conn
        \tinner struct {
        \t\tq Listener
        \t}
        }

        type Conn struct{}

        func (c *Conn) Write() {}

        func (s *Server) Serve(l, m Listener, opts ...Conn) {
        \ts.conn.Write()
        \ts.backup.Write()
        \ts.rule.Apply(1)
        \ts.Queue.Push(1)
        \ts.conns.Write()
        \ts.q.Accept()
        \tl.Accept()
        \tm.Accept()
        \topts.Write()
        \tvar q Queue
        \tq.Push(2)
        }

        func Run(c *Conn, n int) {
        \tc.Write()
        \tif n > 0 {
        \t\tc := other()
        \t\tc.Write()
        \t}
        \tvar x = other()
        \tx.Write()
        \tpricing := pricing.Discount(1)
        \t_ = pricing
        }

        func Use(pricing *Conn) { pricing.Write() }

        func other() *Conn { return nil }
        """}
    _, edges = build(tmp_path, files)
    g = "go:srv/srv.go:"
    assert calls_of(edges, g + "Server.Serve") == {
        g + "Conn.Write", "go:pricing/pricing.go:Rule.Apply", g + "Queue.Push", g + "Listener.Accept"}
    # `c` rebound by :=, `x` untyped: no edge; `pricing := pricing.F()` still calls the package
    assert calls_of(edges, g + "Run") == {g + "other", "go:pricing/pricing.go:Discount"}
    assert calls_of(edges, g + "Use") == {g + "Conn.Write"}  # a typed parameter shadows the package


def test_go_calls_through_fields_of_a_struct_declared_in_another_file_of_the_package(tmp_path, monkeypatch):
    # a package is its folder: `s.conns.Close()` in server.go reaches the field's type through
    # Server's struct in types.go (grpc-go declares its types apart from their methods); a typed
    # name's field (`x.conns`, `p.inner` of another package's struct) alike; a field two build
    # variants declare with other types, or no struct declares, gives no target
    files = {
        "go.mod": "module example.com/shop\n",
        "srv/types.go": """\
            package srv

            import "example.com/shop/pool"

            type Server struct {
            \tconns *ConnSet
            \tpool  pool.Pool
            }

            type ConnSet struct{}
            """,
        "srv/server.go": """\
            package srv

            import "example.com/shop/pool"

            func (s *Server) Serve() {
            \ts.conns.Close()
            \ts.pool.Get()
            \ts.missing.Close()
            }

            func (c *ConnSet) Close() {}

            func Run(x *Server) { x.conns.Close() }

            func Use(p pool.Pool) { p.inner.Close() }
            """,
        "srv/conn_linux.go": "package srv\n\ntype Conn struct {\n\tio *ConnSet\n}\n",
        "srv/conn_windows.go": "package srv\n\ntype Conn struct {\n\tio *Server\n}\n",
        "srv/flush.go": "package srv\n\nfunc (c *Conn) Flush() { c.io.Close() }\n",
        "pool/pool.go": """\
            package pool

            type Pool struct {
            \tinner *Inner
            }

            func (p Pool) Get() {}

            type Inner struct{}

            func (i *Inner) Close() {}
            """,
    }
    _, edges = build(tmp_path, files)
    g, p = "go:srv/server.go:", "go:pool/pool.go:"
    assert calls_of(edges, g + "Server.Serve") == {g + "ConnSet.Close", p + "Pool.Get", None}   # s.missing: none
    assert calls_of(edges, g + "Run") == {g + "ConnSet.Close"}
    assert calls_of(edges, g + "Use") == {p + "Inner.Close"}
    assert calls_of(edges, "go:srv/flush.go:Conn.Flush") == {None}      # *ConnSet or *Server: no target
    # resolved a batch at a time, one edge per batch, they come out the same
    from kgsearch.indexer import edges as edges_mod
    monkeypatch.setattr(edges_mod, "FIELD_BATCH", 1)
    _, again = build(tmp_path / "batched", files)
    assert again == edges


def test_rust_calls_through_fields_of_a_struct_declared_in_another_module(tmp_path):
    # `self.io.flush()` in an `impl` of imp.rs reaches the field's type through the `struct` in
    # conn.rs (named by the path the impl's type names: `use crate::conn::Conn`), its type read
    # through conn.rs's own `use` names, the innermost wrapped type first; a generic parameter,
    # a collection or an unknown field gives no target
    files = {
        "Cargo.toml": '[package]\nname = "net"\nversion = "0.1.0"\n',
        "src/lib.rs": "mod conn;\nmod imp;\npub mod io;\n",
        "src/conn.rs": """\
            use std::sync::{Arc, Mutex};
            use crate::io::Io;

            pub struct Conn<T> {
                io: Io,
                shared: Arc<Mutex<Io>>,
                gen: T,
                items: Vec<Io>,
            }
            """,
        "src/io.rs": "pub struct Io;\nimpl Io {\n    pub fn flush(&self) {}\n}\n",
        "src/imp.rs": """\
            use crate::conn::Conn;

            impl<T> Conn<T> {
                pub fn flush(&self) {
                    self.io.flush();
                }
                pub fn shared(&self) {
                    self.shared.flush();
                }
                pub fn others(&self) {
                    self.gen.flush();
                    self.items.flush();
                    self.none.flush();
                }
            }
            """,
    }
    _, edges = build(tmp_path, files)
    r, io = "rs:src/imp.rs:Conn.", "rs:src/io.rs:Io.flush"
    assert calls_of(edges, r + "flush") == calls_of(edges, r + "shared") == {io}
    assert calls_of(edges, r + "others") == {None}


def test_rust_methods_of_an_impl_in_another_module_answer_to_the_types_path(tmp_path):
    # tokio: `worker.rs` declares `Shared` and `mod metrics;`, whose `use super::Shared; impl
    # Shared { fn injection_queue_depth .. }` Rust sees as `Shared`'s methods: a call through a
    # field of that type (`self.shared.depth()` in handle.rs), or by the type's path, reaches
    # them; a name `use` binds to guesses (no crate path) adds no name, nor a trait's `impl`
    files = {
        "Cargo.toml": '[package]\nname = "rt"\nversion = "0.1.0"\n',
        "src/lib.rs": "mod handle;\nmod worker;\nmod other;\nmod conv;\n",
        "src/worker.rs": "mod metrics;\n\npub struct Shared {\n    n: usize,\n}\n\nfn f() { Shared::depth(); }\n",
        "src/worker/metrics.rs": "use super::Shared;\n\nimpl Shared {\n    pub fn depth(&self) -> usize { 0 }\n}\n",
        "src/other.rs": "use Shared;\n\nimpl Shared {\n    pub fn size(&self) -> usize { 0 }\n}\n",
        "src/conv.rs": "use crate::worker::Shared;\n\nimpl From<u8> for Shared {\n    fn from(n: u8) -> Shared { .. }\n}\n",
        "src/handle.rs": """\
            use crate::worker;

            pub struct Handle {
                shared: worker::Shared,
            }

            impl Handle {
                pub fn depth(&self) -> usize {
                    self.shared.depth()
                }
                pub fn size(&self) -> usize {
                    self.shared.size()
                }
                pub fn conv(&self) {
                    worker::Shared::from(1);
                }
            }
            """,
    }
    _, edges = build(tmp_path, files)
    assert calls_of(edges, "rs:src/handle.rs:Handle.conv") == {None}
    depth = "rs:src/worker/metrics.rs:Shared.depth"
    assert calls_of(edges, "rs:src/handle.rs:Handle.depth") == {depth}
    assert calls_of(edges, "rs:src/worker.rs:f") == {depth}
    assert calls_of(edges, "rs:src/handle.rs:Handle.size") == {None}


@pytest.mark.parametrize("lang", ["go", "rust"])
def test_declared_field_types_are_read_once_per_file(tmp_path, monkeypatch, lang):
    """Each ``self.field.f()`` / ``r.field.M()`` call site read its struct's fields again: a file
    of n fields and n such calls cost n^2 (2,000 of each: 6.8 s for one Go file, 4.4 s for one
    Rust file). The file's struct fields are read once; the edges are the same."""
    import re as re_mod

    from kgsearch.ingest import gocode, rscode
    from kgsearch.types import LoadOptions

    n = 60
    if lang == "go":
        src = ("package x\n\n" + "".join(f"type T{i} struct{{}}\n\nfunc (t *T{i}) Run() {{}}\n\n" for i in range(7))
               + "type S struct {\n" + "".join(f"\tf{i} *T{i % 7}\n" for i in range(n)) + "}\n\n"
               + "func (r *S) Go() {\n" + "".join(f"\tr.f{i}.Run()\n" for i in range(n)) + "}\n")
        mod, attr, path = gocode, "_FIELD_LINE", tmp_path / "x.go"
    else:
        src = ("".join(f"struct T{i};\n\nimpl T{i} {{\n    fn run(&self) {{}}\n}}\n\n" for i in range(7))
               + "struct S {\n" + "".join(f"    f{i}: T{i % 7},\n" for i in range(n)) + "}\n\n"
               + "impl S {\n    fn go(&self) {\n" + "".join(f"        self.f{i}.run();\n" for i in range(n)) + "    }\n}\n")
        mod, attr, path = rscode, "_FIELD", tmp_path / "x.rs"
    path.write_text(src)
    real = getattr(mod, attr)
    used = []

    class Counting:
        def finditer(self, *a):
            used.append(1)
            return real.finditer(*a)

        def match(self, *a):
            used.append(1)
            return real.match(*a)

    monkeypatch.setattr(mod, attr, Counting())
    res = mod.load(path, path.name, LoadOptions(root=str(tmp_path)))
    calls = [e for e in res.edges if e.type == "calls" and re_mod.search(r"T\d\.(Run|run)$", str(e.dst))]
    assert len(calls) == 7                                  # every field's type's method, once per target
    assert len(used) <= (8 if lang == "go" else n + 7)      # one read per struct (was one per call site)


def test_rust_bench_targets_are_tests(tmp_path):
    # Cargo builds benches/*.rs as bench targets with the dev-dependencies, as tests/*.rs: not the
    # library a fix changes (bytes' benches/bytes_mut.rs ranked 3rd for two bytes issues)
    nodes, _ = build(tmp_path, {
        "Cargo.toml": "[package]\nname = \"shop\"\n",
        "src/lib.rs": "pub fn total() -> u32 { 1 }\n",
        "benches/total.rs": "fn bench_total() { shop::total(); }\n",
        "src/benches.rs": "pub fn speed() -> u32 { 2 }\n",
    })
    assert nodes["rs:benches/total.rs:bench_total"][4] & FLAG_TEST
    assert not nodes["rs:src/lib.rs:total"][4] & FLAG_TEST
    assert not nodes["rs:src/benches.rs:speed"][4] & FLAG_TEST            # a module named benches


def test_rust_workspace_test_crates_are_tests(tmp_path):
    # tokio's tests-integration/ and tests-build/ member crates exist only to test tokio (one took a
    # top-5 slot in tokio-4613); a crate named for tests under another name is library code
    nodes, _ = build(tmp_path, {
        "Cargo.toml": "[workspace]\nmembers = [\"shop\", \"tests-integration\", \"shop-testkit\"]\n",
        "shop/src/lib.rs": "pub fn total() -> u32 { 1 }\n",
        "tests-integration/src/bin/test-cat.rs": "fn main() { shop::total(); }\n",
        "integration_tests/src/lib.rs": "pub fn check() {}\n",
        "shop-testkit/src/lib.rs": "pub fn mock_total() -> u32 { 0 }\n",
    })
    assert nodes["rs:tests-integration/src/bin/test-cat.rs:main"][4] & FLAG_TEST
    assert nodes["rs:integration_tests/src/lib.rs:check"][4] & FLAG_TEST
    assert not nodes["rs:shop/src/lib.rs:total"][4] & FLAG_TEST
    assert not nodes["rs:shop-testkit/src/lib.rs:mock_total"][4] & FLAG_TEST


def test_c_family_test_projects_named_for_tests_are_tests(tmp_path):
    # Catch2's projects/ExtraTests/X01-PrefixedMacros.cpp (and WebKit's LayoutTests/, unit_tests/,
    # integration-tests/): test programs, not the library; they took top-5 slots in Catch2 issues
    nodes, _ = build(tmp_path, {
        "include/catch_message.cpp": "void capture() {}\n",
        "projects/ExtraTests/X01-PrefixedMacros.cpp": "int main() { return 0; }\n",
        "src/unit_tests/run.c": "int run(void) { return 0; }\n",
        "src/integration-tests/all.cc": "int all() { return 0; }\n",
        "src/Latest/news.c": "int news(void) { return 0; }\n",          # not a test folder
        "src/contests/score.c": "int score(void) { return 0; }\n",
    })
    for key in ("c:projects/ExtraTests/X01-PrefixedMacros.cpp:main", "c:src/unit_tests/run.c:run",
                "c:src/integration-tests/all.cc:all"):
        assert nodes[key][4] & FLAG_TEST, key
    for key in ("c:include/catch_message.cpp:capture", "c:src/Latest/news.c:news", "c:src/contests/score.c:score"):
        assert not nodes[key][4] & FLAG_TEST, key


def test_go_methods_are_members_of_their_type_declared_in_the_file(tmp_path):
    # `func (s *Server) Serve()` hung off the file: `contains` went file -> Server.Serve, so the
    # walk from a type, `impact Server` and `related Server` never reached its methods
    files = {
        "go.mod": "module example.com/m\n",
        "srv/server.go": """\
            package srv

            func (s *Server) Early() {}

            // Server serves.
            type Server struct{ port int }

            func (s *Server) Serve() error {
            \ts.Early()
            \treturn nil
            }

            func New() *Server { return &Server{} }
            """,
        "srv/more.go": "package srv\n\nfunc (s Server) Port() int { return s.port }\n",
        "srv/local.go": "package srv\n\nfunc f() {\n\ttype Server struct{}\n}\n\nfunc (s *Server) Stop() {}\n",
        "app/main.go": "package main\n\nimport \"example.com/m/srv\"\n\nfunc main() { var s srv.Server; s.Serve() }\n",
    }
    build(tmp_path, files)
    index_paths(tmp_path / "g.db", [str(tmp_path / "proj")], IndexOptions(steps=("graph",)))
    from kgsearch.explore.impact import impact
    from kgsearch.stats import related_nodes

    with Index.open(tmp_path / "g.db", readonly=True) as ix:
        contains = set(ix.conn.execute(
            "SELECT s.key, d.key FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
            "WHERE e.type = 'contains'").fetchall())
        parent = dict(ix.conn.execute("SELECT n.key, p.key FROM nodes n LEFT JOIN nodes p ON p.id = n.parent_id"))
        # the type contains its methods (one written before it too); their names are unchanged
        for m in ("Early", "Serve"):
            key = f"go:srv/server.go:Server.{m}"
            assert ("go:srv/server.go:Server", key) in contains and parent[key] == "go:srv/server.go:Server"
            assert ("go:srv/server.go", key) not in contains
        # a method in another file of the package stays its file's (`show Server` lists it: below)
        assert parent["go:srv/more.go:Server.Port"] == "go:srv/more.go"
        # a type declared inside a function has no methods: this Stop is the package's Server's
        assert parent["go:srv/local.go:Server.Stop"] == "go:srv/local.go"
        got = related_nodes(ix, "go:srv/server.go:Server", types=["contains"])["edges"]["contains"]
        assert {(e["direction"], e["name"]) for e in got} == {("out", "Early"), ("out", "Serve"), ("in", "server")}
        # the file's text still lists what is written in it and leaves the methods' bodies out
        text = ix.conn.execute("SELECT kgtext(text) FROM nodes WHERE key = 'go:srv/server.go'").fetchone()[0]
        assert "Early Server Serve New" in text and "s.Early()" not in text
        # what calls a method depends on its type
        deps = {d["key"] for d in impact(ix, "go:srv/server.go:Server")["dependents"]}
        assert "go:app/main.go:main" in deps


def test_rust_mod_declarations_say_whether_only_tests_build_them(tmp_path):
    # the edge of `mod x;` carries decl: mod, and test when only tests build it (its own
    # #[cfg(test)] / #[cfg(all(test, ..))], or an inline test module around it): the indexer
    # flags the file it resolves to (kgsearch/indexer/testdecl.py); a plain `mod` of the same
    # file in the same file keeps it production code
    from kgsearch.ingest import rscode
    from kgsearch.types import LoadOptions

    root = tmp_path / "c"
    (root / "src").mkdir(parents=True)
    lib = root / "src" / "lib.rs"
    lib.write_text(textwrap.dedent("""\
        mod plain;
        #[cfg(test)]
        pub(crate) mod mocks;
        #[cfg(all(test, loom))]
        mod loom;
        #[cfg(any(test, feature = "x"))]
        mod either;
        #[cfg(test)]
        #[path = "fake.rs"]
        mod fake;
        #[cfg(test)]
        mod twice;
        #[cfg(not(test))]
        mod twice;
        #[cfg(test)]
        mod tests {
            mod inner;
        }
        """))
    res = rscode.load(lib, "src/lib.rs", LoadOptions(root=str(root)))
    props = {e.dst.split("\n")[0]: e.props for e in res.edges if e.type == "imports"}
    test, plain = {"decl": "mod", "test": True}, {"decl": "mod"}
    assert props == {"src/plain.rs": plain, "src/mocks.rs": test, "src/loom.rs": test, "src/either.rs": plain,
                     "src/fake.rs": test, "src/twice.rs": plain, "src/tests/inner.rs": test}


def test_cpp_a_global_qualifier_after_the_return_type_is_not_part_of_the_name(tmp_path):
    """`int ::ns::Outer::f()` is the type `int` and the globally qualified `::ns::Outer::f`: it was
    read `int.ns.Outer.f` (the space before `::` let the type join the qualifiers); `A :: B` with
    spaces on both sides is still one qualified name."""
    from kgsearch.ingest.loaders import get_loader
    from kgsearch.types import LoadOptions

    src = tmp_path / "a.cpp"
    src.write_text("namespace ns {\nclass Outer { int f(); static int g(); int h(); };\n}\n"
                   "int ::ns::Outer::f() { return 1; }\n"
                   "static int ns::Outer::g() { return 2; }\n"
                   "int ns :: Outer :: h() { return 3; }\n"
                   "::std::string free_fn() { return {}; }\n")
    got = [(n.kind, n.qualname, n.line_start) for n in get_loader("cpp").load(src, "a.cpp", LoadOptions()).nodes]
    assert got == [("module", "a.cpp", 1), ("class", "a.cpp:ns.Outer", 2), ("method", "a.cpp:ns.Outer.f", 4),
                   ("method", "a.cpp:ns.Outer.g", 5), ("method", "a.cpp:ns.Outer.h", 6),
                   ("function", "a.cpp:free_fn", 7)], got


# ---------------------------------------------------------------------------- type aliases and macros
def defs_of(tmp_path, rel: str, text: str) -> list[tuple]:
    """(kind, key, first line, last line, decl) of the definitions a loader makes of one file."""
    from kgsearch.ingest.loaders import get_loader, loader_for
    from kgsearch.types import LoadOptions

    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))
    res = get_loader(loader_for(p)).load(p, rel, LoadOptions(root=str(tmp_path)))
    return [(n.kind, n.key, n.line_start, n.line_end, n.props.get("decl")) for n in res.nodes if n.kind != "module"]


def test_typescript_type_aliases_are_classes_of_decl_alias(tmp_path):
    got = defs_of(tmp_path, "a.ts", """\
        export type Handler<T = unknown> = (req: T) => void;
        type Props = {
          onClick(x: number): void
        }
        declare type U =
          | 'a'
          | 'b'
        let type = 1; type = 2; obj.type = 3
        type
        Foo = 1
        const o = { type: 'x' }
        function f(type: string) { type Local = number; return type }
        """)
    assert got == [("class", "js:a.ts:Handler", 1, 1, "alias"), ("class", "js:a.ts:Props", 2, 4, "alias"),
                   ("method", "js:a.ts:Props.onClick", 3, 3, "signature"), ("class", "js:a.ts:U", 5, 7, "alias"),
                   ("function", "js:a.ts:f", 12, 12, None)]         # (a function's own `type Local` is none)
    # JavaScript has no type aliases: a variable named type is none
    assert defs_of(tmp_path, "b.js", "var type = 1\ntype = 2\nfunction g() { return type }\n") == [
        ("function", "js:b.js:g", 3, 3, None)]


def test_typescript_overload_signatures_say_so(tmp_path):
    got = defs_of(tmp_path, "q.ts", """\
        export function useQuery(a: string): void;
        export function useQuery(a: number): void;
        export function useQuery(a: any) {
          return a
        }
        """)
    # the implementation holds the plain key (and the name calls and imports resolve to), the
    # signatures #2, #3 (before loader version 4 the signatures were useQuery and useQuery#2)
    assert got == [("function", "js:q.ts:useQuery#2", 1, 1, "signature"),
                   ("function", "js:q.ts:useQuery#3", 2, 2, "signature"),
                   ("function", "js:q.ts:useQuery", 3, 5, None)]
    got = defs_of(tmp_path, "c.ts", """\
        class C {
          m(a: string): void;
          m(a: any) { return a }
        }
        interface I { n(a: string): void; n(a: number): void }
        """)
    assert got == [("class", "js:c.ts:C", 1, 4, None), ("method", "js:c.ts:C.m#2", 2, 2, "signature"),
                   ("method", "js:c.ts:C.m", 3, 3, "method"), ("class", "js:c.ts:I", 5, 5, "interface"),
                   ("method", "js:c.ts:I.n", 5, 5, "signature"), ("method", "js:c.ts:I.n#2", 5, 5, "signature")]


def test_rust_type_aliases_in_modules_not_associated_types(tmp_path):
    got = defs_of(tmp_path, "src/lib.rs", """\
        pub type Result<T, E = Error> = std::result::Result<T, E>;
        /// callbacks
        #[cfg(unix)]
        pub(crate) type Cb =
            fn(i32) -> i32;
        struct S;
        impl Iterator for S {
            type Item = u32;
            fn next(&mut self) -> Option<u32> { None }
        }
        trait T { type Output; }
        mod m { type Inner = u8; }
        fn f() { let r#type = 1; type Local = u8; }
        """)
    assert got == [("class", "rs:src/lib.rs:Result", 1, 1, "alias"), ("class", "rs:src/lib.rs:Cb", 3, 5, "alias"),
                   ("class", "rs:src/lib.rs:S", 6, 6, "struct"), ("class", "rs:src/lib.rs:S#2", 7, 10, "impl"),
                   ("method", "rs:src/lib.rs:S.next", 9, 9, "fn"), ("class", "rs:src/lib.rs:T", 11, 11, "trait"),
                   ("class", "rs:src/lib.rs:m", 12, 12, "mod"), ("class", "rs:src/lib.rs:m.Inner", 12, 12, "alias"),
                   ("function", "rs:src/lib.rs:f", 13, 13, "fn")]


def test_c_typedefs_and_function_like_macros(tmp_path):
    got = defs_of(tmp_path, "a.h", """\
        #ifndef A_H
        #define A_H
        /* #define NOT_ME(x) x */
        // #define NOR_ME(x) x
        typedef unsigned long size_type;
        typedef int (*cb_t)(int, int);
        typedef void fn_t(int);
        typedef char buf_t[16];
        typedef struct foo foo_t, *foo_p;
        typedef struct { int a; } anon_t;
        typedef struct bar { int b; } bar_t;
        const char *s = "#define NOPE(x) x";
        #define MAX(a, b) \\
          ((a) > (b) ? \\
           (a) : (b))
        #if X
        #define MIN(a, b) ((a) < (b) ? (a) : (b))
        #else
        #define MIN(a, b) 0
        #endif
        #define OBJ 1
        int use(int typedef_count) { typedef int local_t; return typedef_count; }
        #endif
        #define TAIL(y) y \\
        """)
    assert got == [("class", "c:a.h:size_type", 5, 5, "alias"), ("class", "c:a.h:cb_t", 6, 6, "alias"),
                   ("class", "c:a.h:fn_t", 7, 7, "alias"), ("class", "c:a.h:buf_t", 8, 8, "alias"),
                   ("class", "c:a.h:foo_t", 9, 9, "alias"), ("class", "c:a.h:anon_t", 10, 10, "struct"),
                   ("class", "c:a.h:bar", 11, 11, "struct"), ("function", "c:a.h:MAX", 13, 15, "macro"),
                   ("function", "c:a.h:MIN", 17, 17, "macro"), ("function", "c:a.h:MIN#2", 19, 19, "macro"),
                   ("function", "c:a.h:use", 22, 22, None), ("function", "c:a.h:TAIL", 24, 24, "macro")]


def test_cpp_using_aliases_at_namespace_and_class_level(tmp_path):
    got = defs_of(tmp_path, "b.hpp", """\
        namespace ns {
        template <class T>
        using vec = std::vector<T>;
        using namespace std;
        using std::string;
        class C : public B {
         public:
          using B::B;
          using value_type = int;
          typedef std::pair<int, char> pair_type;
          bool f(int a) { using It = int*; return a == b; }
        };
        }
        using Fn = void (*)(int);
        """)
    assert got == [("class", "c:b.hpp:ns.vec", 2, 3, "alias"), ("class", "c:b.hpp:ns.C", 6, 12, None),
                   ("class", "c:b.hpp:ns.C.value_type", 9, 9, "alias"),
                   ("class", "c:b.hpp:ns.C.pair_type", 10, 10, "alias"), ("method", "c:b.hpp:ns.C.f", 11, 11, None),
                   ("class", "c:b.hpp:Fn", 14, 14, "alias")]        # (a function's own `using It` is none)
