"""Python loader: nodes, qualified names, imports/calls/inherits resolution, test flags, errors."""
from __future__ import annotations

import textwrap

import pytest
from conftest import write

from kgsearch.ingest import pycode
from kgsearch.ingest.loaders import get_loader
from kgsearch.types import FLAG_TEST, LoadOptions

OPTS = LoadOptions()

CART = '''\
"""Shopping cart."""
import json
import shop.pricing as pricing
from .pricing import discount, Rule as R
from . import util
from ..outside import thing
from .stars import *

LIMIT = 10


class Base:
    def total(self):
        return 0


class Cart(Base, R):
    """A cart of items."""

    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)
        self.total()
        return util.log(item)

    @property
    async def checkout(self, fast: bool = False) -> str:
        """Pay for everything."""
        data = json.dumps({})
        pricing.apply(self)
        discount(1)
        super().total()
        starred(data)
        len(data)
        return helper()

    @staticmethod
    def make():
        return Cart()


def helper(x=discount(2)):
    def inner():
        return helper()
    return inner()


if __name__ == "__main__":
    helper()
'''


def load(tmp_path, rel, text, opts=OPTS):
    return pycode.load(write(tmp_path / rel, text), rel, opts)


def edges(res, *types):
    return [(e.src, e.dst, e.type, e.ns, e.line) for e in res.edges if not types or e.type in types]


def test_registry():
    assert get_loader("python") is pycode
    assert pycode.EXTENSIONS == (".py", ".pyi")


@pytest.mark.parametrize("rel, name", [
    ("src/shop/cart.py", "shop.cart"), ("shop/__init__.py", "shop"), ("mod.py", "mod"),
    ("a/b/c.pyi", "a.b.c"), ("src/tool.py", "tool"), ("src.py", "src"),
])
def test_module_name(rel, name):
    assert pycode.module_name(rel) == name


def test_module_name_of_a_root_init_is_the_folder():
    assert pycode.module_name("__init__.py", "/x/mypkg") == "mypkg"


@pytest.mark.parametrize("rel, is_test", [
    ("tests/test_x.py", True), ("pkg/x_test.py", True), ("conftest.py", True),
    ("pkg/test/helpers.py", True), ("test_a.py", True), ("pkg/testing.py", False),
    ("contest.py", False), ("pkg/latest/x.py", False),
])
def test_test_paths(rel, is_test):
    assert pycode.is_test_path(rel) is is_test


def test_nodes_of_a_module(tmp_path):
    res = load(tmp_path, "src/shop/cart.py", CART)
    assert res.warnings == []
    got = [(n.key, n.kind, n.name, n.qualname, n.line_start, n.line_end, n.parent)
           for n in res.nodes]
    assert got == [
        ("py:shop.cart", "module", "cart", "shop.cart", 1, 51, None),
        ("py:shop.cart.Base", "class", "Base", "shop.cart.Base", 12, 14, "py:shop.cart"),
        ("py:shop.cart.Base.total", "method", "total", "shop.cart.Base.total", 13, 14,
         "py:shop.cart.Base"),
        ("py:shop.cart.Cart", "class", "Cart", "shop.cart.Cart", 17, 41, "py:shop.cart"),
        ("py:shop.cart.Cart.__init__", "method", "__init__", "shop.cart.Cart.__init__", 20, 21,
         "py:shop.cart.Cart"),
        ("py:shop.cart.Cart.add", "method", "add", "shop.cart.Cart.add", 23, 26,
         "py:shop.cart.Cart"),
        ("py:shop.cart.Cart.checkout", "method", "checkout", "shop.cart.Cart.checkout", 28, 37,
         "py:shop.cart.Cart"),
        ("py:shop.cart.Cart.make", "method", "make", "shop.cart.Cart.make", 39, 41,
         "py:shop.cart.Cart"),
        ("py:shop.cart.helper", "function", "helper", "shop.cart.helper", 44, 47, "py:shop.cart"),
        ("py:shop.cart.helper.inner", "function", "inner", "shop.cart.helper.inner", 45, 46,
         "py:shop.cart.helper"),
    ]
    assert all(n.aliases == [("py", n.qualname)] for n in res.nodes)
    assert all(n.flags == 0 for n in res.nodes)
    by = {n.key: n for n in res.nodes}
    assert by["py:shop.cart"].text == "Shopping cart.\nBase Cart helper LIMIT"
    assert by["py:shop.cart.Cart"].text == "class Cart(Base, R)\nA cart of items.\n__init__ add checkout make"
    co = by["py:shop.cart.Cart.checkout"]
    assert co.text.startswith("@property\nasync def checkout(self, fast: bool=False) -> str\n"
                              "Pay for everything.\ndata = json.dumps({})\n")
    assert co.text.endswith("\nreturn helper()")
    assert co.props == {"decorators": ["property"], "async": True}


def test_edges_of_a_module(tmp_path):
    res = load(tmp_path, "src/shop/cart.py", CART)
    assert edges(res, "contains") == [
        ("py:shop.cart", "py:shop.cart.Base", "contains", "key", 12),
        ("py:shop.cart.Base", "py:shop.cart.Base.total", "contains", "key", 13),
        ("py:shop.cart", "py:shop.cart.Cart", "contains", "key", 17),
        ("py:shop.cart.Cart", "py:shop.cart.Cart.__init__", "contains", "key", 20),
        ("py:shop.cart.Cart", "py:shop.cart.Cart.add", "contains", "key", 23),
        ("py:shop.cart.Cart", "py:shop.cart.Cart.checkout", "contains", "key", 29),
        ("py:shop.cart.Cart", "py:shop.cart.Cart.make", "contains", "key", 40),
        ("py:shop.cart", "py:shop.cart.helper", "contains", "key", 44),
        ("py:shop.cart.helper", "py:shop.cart.helper.inner", "contains", "key", 45),
    ]
    assert edges(res, "imports") == [
        ("py:shop.cart", "json", "imports", "py", 2),
        ("py:shop.cart", "shop.pricing", "imports", "py", 3),
        ("py:shop.cart", "shop.pricing.discount\nshop.pricing", "imports", "py", 4),
        ("py:shop.cart", "shop.pricing.Rule\nshop.pricing", "imports", "py", 4),
        ("py:shop.cart", "shop.util\nshop", "imports", "py", 5),
        ("py:shop.cart", "outside.thing\noutside", "imports", "py", 6),
        ("py:shop.cart", "shop.stars", "imports", "py", 7),
    ]
    assert edges(res, "inherits") == [
        ("py:shop.cart.Cart", "shop.cart.Base", "inherits", "py", 17),
        ("py:shop.cart.Cart", "shop.pricing.Rule", "inherits", "py", 17),
    ]
    assert edges(res, "calls") == [
        # module level: a default argument and the __main__ block
        ("py:shop.cart", "shop.pricing.discount", "calls", "py", 44),
        ("py:shop.cart", "shop.cart.helper", "calls", "py", 51),
        # self.m(): own class, then in-file base, then the imported base
        ("py:shop.cart.Cart.add", "shop.cart.Cart.total\nshop.cart.Base.total\nshop.pricing.Rule.total",
         "calls", "py", 25),
        ("py:shop.cart.Cart.add", "shop.util.log", "calls", "py", 26),        # from . import util
        ("py:shop.cart.Cart.checkout", "json.dumps", "calls", "py", 31),
        ("py:shop.cart.Cart.checkout", "shop.pricing.apply", "calls", "py", 32),   # import .. as
        ("py:shop.cart.Cart.checkout", "shop.pricing.discount", "calls", "py", 33),
        ("py:shop.cart.Cart.checkout", "shop.cart.Base.total\nshop.pricing.Rule.total",
         "calls", "py", 34),                                                   # super()
        ("py:shop.cart.Cart.checkout", "shop.stars.starred", "calls", "py", 35),   # import *
        ("py:shop.cart.Cart.checkout", "shop.cart.helper", "calls", "py", 37),
        ("py:shop.cart.Cart.make", "shop.cart.Cart", "calls", "py", 41),
        ("py:shop.cart.helper", "shop.cart.helper.inner", "calls", "py", 47),
        ("py:shop.cart.helper.inner", "shop.cart.helper", "calls", "py", 46),
    ]


def test_calls_left_unresolved(tmp_path):
    res = load(tmp_path, "m.py", textwrap.dedent('''\
        import os
        class A:
            def f(self, other):
                other.run()          # unknown type
                self.items.clear()   # attribute of unknown type
                getattr(self, "g")() # dynamic
                print(os.sep)        # builtin
                os.getcwd()
                A.f(self, other)     # Class.meth()
        '''))
    assert edges(res, "calls") == [("py:m.A.f", "os.getcwd", "calls", "py", 8),
                                   ("py:m.A.f", "m.A.f", "calls", "py", 9)]


def test_package_init_and_relative_imports(tmp_path):
    res = load(tmp_path, "shop/__init__.py", '"""Shop."""\nfrom .cart import Cart\nfrom . import x\n')
    assert [(n.key, n.props) for n in res.nodes] == [("py:shop", {"package": True})]
    assert edges(res) == [("py:shop", "shop.cart.Cart\nshop.cart", "imports", "py", 2),
                          ("py:shop", "shop.x\nshop", "imports", "py", 3)]


def test_test_files_are_flagged(tmp_path):
    res = load(tmp_path, "tests/test_cart.py",
               "from shop.cart import Cart\n\ndef test_add():\n    Cart().add(1)\n    Cart()\n")
    assert [(n.key, n.flags) for n in res.nodes] == [("py:tests.test_cart", FLAG_TEST),
                                                      ("py:tests.test_cart.test_add", FLAG_TEST)]
    # one edge per caller and callee, at the first call; Cart().add() is a call on a value
    assert edges(res, "calls") == [("py:tests.test_cart.test_add", "shop.cart.Cart", "calls", "py", 4)]


def test_duplicate_names_get_numbered_keys(tmp_path):
    res = load(tmp_path, "d.py", textwrap.dedent('''\
        class C:
            @property
            def x(self):
                return 1
            @x.setter
            def x(self, v):
                pass
        try:
            def f(): pass
        except ImportError:
            def f(): pass
        '''))
    assert [(n.key, n.aliases) for n in res.nodes] == [
        ("py:d", [("py", "d")]), ("py:d.C", [("py", "d.C")]), ("py:d.C.x", [("py", "d.C.x")]),
        ("py:d.C.x#2", []), ("py:d.f", [("py", "d.f")]), ("py:d.f#2", [])]


def test_stubs_use_their_own_keys(tmp_path):
    res = load(tmp_path, "pkg/m.pyi", "def f(x: int) -> int: ...\n")
    assert [(n.key, n.qualname, n.aliases) for n in res.nodes] == [
        ("pyi:pkg.m", "pkg.m", []), ("pyi:pkg.m.f", "pkg.m.f", [])]


def test_function_text_is_capped(tmp_path):
    body = "".join(f"    x{i} = compute_something_long({i})\n" for i in range(400))
    res = load(tmp_path, "big.py", f"def big():\n{body}")
    text = res.nodes[1].text
    # cut at MAX_TEXT characters of source, then the body's indentation goes: same words
    assert text.startswith("def big()\nx0 = ")
    assert text.split() == ("def big()\n" + body)[:pycode.MAX_TEXT].split()
    assert len(text) == pycode.MAX_TEXT - 4 * text.count("\nx")


def test_body_keeps_its_relative_indentation(tmp_path):
    src = 'class C:\n    def m(self, x):\n        if x:\n            return """a\n  b"""\n        return 0\n'
    res = load(tmp_path, "c.py", src)
    assert res.nodes[2].text == 'def m(self, x)\nif x:\n    return """a\nb"""\nreturn 0'


def test_syntax_error_gives_module_node_and_one_warning(tmp_path):
    res = load(tmp_path, "pkg/broken.py", "def ok():\n    pass\n\ndef bad(:\n    pass\n")
    assert [(n.key, n.kind, n.text) for n in res.nodes] == [("py:pkg.broken", "module", "")]
    assert res.edges == []
    assert res.warnings == [f"{tmp_path / 'pkg/broken.py'}:4: syntax error, skipped (invalid syntax)"]


def test_encodings(tmp_path):
    res = load(tmp_path, "latin.py", "# -*- coding: latin-1 -*-\ndef caf\xe9():\n    'd\xe9j\xe0'\n"
               .encode("latin-1"))
    assert res.warnings == [] and res.nodes[1].key == "py:latin.caf\xe9"
    res = load(tmp_path, "bad.py", b"def f():\n    return '\xff'\n")
    assert [n.key for n in res.nodes] == ["py:bad", "py:bad.f"]
    assert res.warnings == [f"{tmp_path / 'bad.py'}:2: not valid UTF-8; decoded with replacement "
                            "characters (save the file as UTF-8 to fix)"]


def test_deeply_nested_expression_does_not_overflow(tmp_path):
    expr = " + ".join(f"f{i}()" for i in range(2000))    # parses, deeper than the recursion limit
    res = load(tmp_path, "deep.py", f"def f0(): pass\nx = {expr}\n")
    assert edges(res, "calls") == [("py:deep", "deep.f0", "calls", "py", 2)]


def test_crlf_source(tmp_path):
    res = load(tmp_path, "w.py", b'"""Doc."""\r\ndef f():\r\n    return g()\r\ndef g(): pass\r\n')
    assert [(n.key, n.line_start, n.line_end) for n in res.nodes] == [
        ("py:w", 1, 4), ("py:w.f", 2, 3), ("py:w.g", 4, 4)]
    assert res.nodes[1].text == "def f()\nreturn g()"


# A package indexed as its own root (``kgsearch index kgsearch/``): its modules are named from
# the root (``core``, ``sub.mod``), its ``__init__.py`` after the folder. Every form of relative
# import must reach them, and the calls made through them must resolve (issue 25, item 7: on
# kgsearch's own code ``fuse.normalize`` had no callers, ``from .. import fuse`` being lost).
OWN_ROOT = {
    "__init__.py": '"""Root."""\nfrom .core import run\nfrom . import util\n\n\ndef start():\n    return run() + util.helper()\n',
    "core.py": 'from . import util\nfrom .util import helper\n\n\ndef run():\n    return util.helper() + helper()\n',
    "util.py": 'def helper():\n    return 1\n',
    "sub/__init__.py": '',
    "sub/mod.py": ('from .. import core\nfrom ..util import helper as h\nfrom ..sub2.deep import f\nfrom . import sibling\n'
                   'from .. import start\n\n\ndef g():\n    return core.run() + h() + f() + sibling.s() + start()\n'),
    "sub/sibling.py": 'def s():\n    return 2\n',
    "sub2/__init__.py": '',
    "sub2/deep.py": 'def f():\n    return 3\n',
}


def test_every_relative_import_resolves_in_a_package_indexed_as_its_root(tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    root = tmp_path / "mypkg"
    for rel, src in OWN_ROOT.items():
        write(root / rel, src)
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        got = {(s, t, d) for s, t, d in ix.conn.execute(
            "SELECT a.key, e.type, b.key FROM edges e JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst "
            "WHERE e.type IN ('calls', 'imports')")}
    calls = {(s, d) for s, t, d in got if t == "calls"}
    imports = {(s, d) for s, t, d in got if t == "imports"}
    assert {("py:sub.mod.g", "py:core.run"),            # from .. import core; core.run()
            ("py:sub.mod.g", "py:util.helper"),         # from ..util import helper as h; h()
            ("py:sub.mod.g", "py:sub2.deep.f"),         # from ..sub2.deep import f; f()
            ("py:sub.mod.g", "py:sub.sibling.s"),       # from . import sibling; sibling.s()
            ("py:sub.mod.g", "py:mypkg.start"),         # from .. import start (defined in the root __init__)
            ("py:core.run", "py:util.helper"),          # from . import util; util.helper() / from .util import helper
            ("py:mypkg.start", "py:core.run"),          # the root __init__: from .core import run
            ("py:mypkg.start", "py:util.helper")} <= calls, sorted(calls)
    assert {("py:sub.mod", "py:core"), ("py:sub.mod", "py:util.helper"), ("py:sub.mod", "py:sub2.deep.f"),
            ("py:sub.mod", "py:sub.sibling"), ("py:core", "py:util"), ("py:core", "py:util.helper"),
            ("py:mypkg", "py:core.run"), ("py:mypkg", "py:util")} <= imports, sorted(imports)
