"""The Ruby loader: its lexer (comments, ``=begin`` blocks, strings with ``#{}`` holes, ``%``
literals, heredocs, regular expressions told from division, ``?a`` characters), its definitions
with hand-computed names, kinds and lines (statement modifiers, ``while .. do``, ``class <<
self``, ``A::B``, endless methods), ``require`` imports, calls, superclasses and mixins, Ruby's
backtrace lines, hostile files, a search from a backtrace and the CLI. The comparison with
tree-sitter is in tests/test_lang_oracle.py (and ``bench/lang_oracle.py`` on real trees)."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from kgsearch.ingest import rblex
from kgsearch.ingest.langspec import find_frames, is_test_path, spec_for
from kgsearch.ingest.loaders import get_loader, loader_for
from kgsearch.query.codetask import stack_frames
from kgsearch.types import FLAG_TEST, LoadOptions
from conftest import need, run, size_ratio, write
from test_ingest_langs import build, has


def _code(text: str) -> list[str]:
    lx = rblex.lex(text)
    assert len(lx.code) == len(text) and lx.code.count("\n") == text.count("\n")
    return lx.code.split("\n")


def test_comments_strings_literals_and_heredocs_are_blanked():
    text = textwrap.dedent('''\
        # a comment { end
        x = "a #{foo("}") + 'x'} b" + 'c\\'d end'
        y = %w(a (b) end) + %q[x] + %i<p q> + %Q{#{ {k: 1} } end} + %(end)
        z = f(<<~EOS, <<-'B') + 1
          body #{ end } end
        EOS
          more end
          B
        r = a / b / c
        s = str.split /,|end/
        t = x =~ /end\\/[/]/i
        u = ?" + ?# + ?( + :"sym end" + $' + $"
        =begin
        def gone
        =end
        w = x % 3 + y %2
        __END__
        def data
        ''')
    lines = _code(text)
    assert lines[0].strip() == ""
    assert re.fullmatch(r'x = " +" \+ " {8}"', lines[1]), lines[1]
    assert "end" not in lines[2] and lines[2].count("(") == 0 and lines[2].startswith('y = "')
    assert lines[3].startswith("z = f(") and lines[3].endswith(") + 1")
    assert lines[4:8] == ["", "", "", ""] or all(not x.strip() for x in lines[4:8])
    assert lines[8] == "r = a / b / c"
    assert "end" not in lines[9] and lines[9].startswith("s = str.split ")
    assert "end" not in lines[10] and lines[10].endswith('"')
    assert "(" not in lines[11] and "#" not in lines[11] and "end" not in lines[11]
    assert all(not x.strip() for x in lines[12:15])
    assert lines[15] == "w = x % 3 + y %2"
    assert all(not x.strip() for x in lines[16:])


SRC = {
    "lib/shop/cart.rb": """\
        require_relative "item"
        require "shop/base"

        module Shop
          # A cart of items.
          class Cart < Base
            include Enumerable
            include Pricing

            def initialize(items = [])
              @items = items
              return if items.empty?
              log "made" unless quiet?
            end

            def total
              items.sum { |i| i.price } if true
              while busy? do
                wait
              end
              x = if ready then 1 else 2 end
              Item.new(1)
              self.add(2)
              discount 3
            end

            def add(x) = @items << x

            class << self
              def build(*a)
                text = <<~SQL
                  select * from carts where id = #{a} end
                SQL
                %w(end if) + [text]
              end
            end

            def self.find(id)
              Item::Loader.fetch(id)
            end
          end
        end

        class Shop::Cart::Line
          def to_s; "#{x}"; end
        end
        """,
    "lib/shop/item.rb": """\
        module Shop
          class Item
            module Loader
              def self.fetch(id) = new(id)
            end
          end
        end
        """,
    "lib/shop/base.rb": """\
        module Shop
          class Base
            def log(msg)
              puts msg
            end
          end

          module Pricing
            def discount(pct)
              pct
            end
          end
        end
        """,
    "spec/shop/cart_spec.rb": """\
        require "spec_helper"

        describe Shop::Cart do
          it "totals" do
            Shop::Cart.new.total
          end
        end
        """,
    "spec/spec_helper.rb": "def helper_here\nend\n",
    "Rakefile": "task :default do\n  sh 'rspec'\nend\n\ndef rake_helper = 1\n",
}


def test_definitions_names_and_lines(tmp_path):
    nodes, _ = build(tmp_path, SRC)
    c = "rb:lib/shop/cart.rb:"
    got = {k[len(c):]: v[:4] for k, v in nodes.items() if k.startswith(c) and "#part" not in k}
    assert got == {
        "Shop": ("class", "Shop", 4, 42),
        "Shop.Cart": ("class", "Cart", 6, 41),
        "Shop.Cart.initialize": ("method", "initialize", 10, 14),
        "Shop.Cart.total": ("method", "total", 16, 25),           # modifiers, while .. do, x = if
        "Shop.Cart.add": ("method", "add", 27, 27),               # endless
        "Shop.Cart.build": ("method", "build", 30, 35),           # class << self; a heredoc with `end`
        "Shop.Cart.find": ("method", "find", 38, 40),             # def self.find
        "Shop.Cart.Line": ("class", "Line", 44, 46),              # class Shop::Cart::Line
        "Shop.Cart.Line.to_s": ("method", "to_s", 45, 45),
    }
    assert nodes["rb:lib/shop/item.rb:Shop.Item.Loader.fetch"][:4] == ("method", "fetch", 4, 4)
    assert nodes["rb:spec/spec_helper.rb:helper_here"][0] == "function"
    assert nodes["rb:spec/spec_helper.rb:helper_here"][4] & FLAG_TEST
    assert nodes["rb:Rakefile:rake_helper"][:4] == ("function", "rake_helper", 5, 5)


def test_props_say_singleton_methods_and_modules(tmp_path):
    path = write(tmp_path / "lib/shop/cart.rb", textwrap.dedent(SRC["lib/shop/cart.rb"]))
    res = get_loader("ruby").load(path, "lib/shop/cart.rb", LoadOptions())
    props = {n.key.rsplit(":", 1)[-1]: n.props for n in res.nodes}
    assert props["Shop"] == {"decl": "module"}
    assert props["Shop.Cart.build"] == {"singleton": True}
    assert props["Shop.Cart.find"] == {"receiver": "self"}
    assert props["Shop.Cart.total"] == {}


def test_define_method_with_a_literal_name_is_a_method(tmp_path):
    path = write(tmp_path / "line.rb", textwrap.dedent("""\
        class Line
          %w(a b).each do |n|
            define_method("#{n}_x") { n }
          end
          define_method(:==) { |o| o.equal?(self) }
          define_method "empty?" do
            if true then false end
          end
          define_method(:other, instance_method(:to_s))
          def to_s; end
        end
        """))
    res = get_loader("ruby").load(path, "line.rb", LoadOptions())
    got = [(n.kind, n.name, n.line_start, n.line_end, n.props.get("decl")) for n in res.nodes]
    assert got == [("module", "line", 1, 11, None), ("class", "Line", 1, 11, None),
                   ("method", "==", 5, 5, "define_method"), ("method", "empty?", 6, 8, "define_method"),
                   ("method", "to_s", 10, 10, None)]


def test_imports_calls_superclasses_and_mixins(tmp_path):
    _, edges = build(tmp_path, SRC)
    c, item, base = "rb:lib/shop/cart.rb", "rb:lib/shop/item.rb", "rb:lib/shop/base.rb"
    assert has(edges, c, "imports", item)                                       # require_relative
    assert has(edges, c, "imports", base)                                       # require "shop/base": lib/
    assert has(edges, "rb:spec/shop/cart_spec.rb", "imports", "rb:spec/spec_helper.rb")
    assert has(edges, c + ":Shop.Cart", "inherits", base + ":Shop.Base")        # < Base, looked up in Shop
    assert has(edges, c + ":Shop.Cart", "inherits", base + ":Shop.Pricing")     # include Pricing
    assert has(edges, c + ":Shop.Cart.initialize", "calls", base + ":Shop.Base.log")       # bare, a base's
    assert has(edges, c + ":Shop.Cart.total", "calls", c + ":Shop.Cart.add")                # self.add(2)
    assert has(edges, c + ":Shop.Cart.total", "calls", item + ":Shop.Item")                 # Item.new
    assert has(edges, c + ":Shop.Cart.total", "calls", base + ":Shop.Pricing.discount")     # a mixin's
    assert has(edges, c + ":Shop.Cart.find", "calls", item + ":Shop.Item.Loader.fetch")    # Item::Loader.fetch
    assert has(edges, "rb:spec/shop/cart_spec.rb", "calls", c + ":Shop.Cart")            # Shop::Cart.new
    assert not has(edges, "rb:spec/shop/cart_spec.rb", "calls", c + ":Shop.Cart.total")  # on a value


def test_files_tests_vendored_and_frames():
    assert loader_for(Path("app/models/user.rb")) == "ruby"
    assert loader_for(Path("Rakefile")) == loader_for(Path("x/Gemfile")) == loader_for(Path("lib/t.rake")) == "ruby"
    assert spec_for("Gemfile").name == "ruby" and spec_for("a.gemspec").name == "ruby"
    assert is_test_path("spec/models/user_spec.rb") and is_test_path("app/user_spec.rb")
    assert is_test_path("test/test_user.rb") and is_test_path("lib/user_test.rb")
    assert not is_test_path("app/models/spectrum.rb")
    log = textwrap.dedent("""\
        /app/models/user.rb:12:in `save': boom (RuntimeError)
        \tfrom app/models/user.rb:30:in `block in save_all'
        \tfrom /app/lib/shop/cart.rb:7:in 'Shop::Cart#total'
        \tfrom /app/lib/shop/cart.rb:9:in 'block (2 levels) in Shop::Cart.find'
        \tfrom /app/bin/run.rb:3:in '<main>'
        """)
    got = [(f["path"], f["line"], f.get("func")) for f in find_frames(log)]
    assert got == [("/app/models/user.rb", 12, "save"), ("app/models/user.rb", 30, "save_all"),
                   ("/app/lib/shop/cart.rb", 7, "total"), ("/app/lib/shop/cart.rb", 9, "find"),
                   ("/app/bin/run.rb", 3, None)]
    assert stack_frames(log)[2] == ("/app/lib/shop/cart.rb", 7, "total")


def test_vendor_bundle_is_skipped_and_vendor_flagged(tmp_path):
    from kgsearch.ingest.walk import walk
    from kgsearch.ingest.langspec import is_vendored_path

    root = tmp_path / "app"
    write(root / "Gemfile", "source 'https://rubygems.org'\n")
    write(root / "vendor/bundle/ruby/3.2.0/gems/rack-2.2/lib/rack.rb", "module Rack\nend\n")
    write(root / "vendor/plugins/x/lib/x.rb", "module X\nend\n")
    write(root / "app/models/user.rb", "class User\nend\n")
    rels = sorted(f.path.relative_to(root).as_posix() for f in walk(root))
    assert rels == ["Gemfile", "app/models/user.rb", "vendor/plugins/x/lib/x.rb"]
    assert is_vendored_path("vendor/plugins/x/lib/x.rb")


def test_a_backtrace_finds_the_method_of_its_frame(tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    root = tmp_path / "proj"
    for rel, text in SRC.items():
        write(root / rel, textwrap.dedent(text))
    db = tmp_path / "p.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    classic = ("lib/shop/cart.rb:23:in `total': undefined method `new' for nil:NilClass (NoMethodError)\n"
               "\tfrom spec/shop/cart_spec.rb:5:in `block (2 levels) in <top (required)>'\n")
    ruby34 = "/app/lib/shop/cart.rb:23:in 'Shop::Cart#total': undefined method 'new' for nil (NoMethodError)\n"
    with Index.open(db, readonly=True) as ix:
        keys = [h.key for h in Engine(ix).search(classic, SearchOptions(k=5)).hits]
        assert keys[:2] == ["rb:lib/shop/cart.rb", "rb:lib/shop/cart.rb:Shop.Cart.total"], keys
        # Ruby 3.4 names the class too (its words rank the class's outline by BM25): the method
        # is in the top three, and the anchors channel puts it above the class (Shop::Cart#total
        # reads Shop.Cart.total)
        keys = [h.key for h in Engine(ix).search(ruby34, SearchOptions(k=5)).hits]
        assert "rb:lib/shop/cart.rb:Shop.Cart.total" in keys[:3], keys


def test_the_cli_finds_a_method_by_name(tmp_path):
    root = tmp_path / "proj"
    for rel, text in SRC.items():
        write(root / rel, textwrap.dedent(text))
    db = tmp_path / "i.db"
    rc, out, err = run("index", root, "--db", db, "--no-embed")
    assert rc == 0, err
    rc, out, err = run("search", "discount", "--db", db, "--json", "--lang", "rb")
    assert rc == 0, err
    hits = json.loads(out)["hits"]
    assert hits[0]["key"] == "rb:lib/shop/base.rb:Shop.Pricing.discount"


HOSTILE = ['"#{', "<<~EOS\n", "<<~A <<~B\n", "'\\", "%w(", "%q<<", "/[", "x = /", "=begin\n", "?", "def x\n",
           "class A\n", "if x\n", "while x do\n", "def m = (\n", "module M; ", "x if y\n", "require_relative '",
           '"#{"#{"#{', "a %(", "#{/[", ":'", "do\n", "define_method(:a) do\n",
           'define_method "', "define_method(:a, (\n"]


@pytest.mark.parametrize("unit", HOSTILE)
def test_hostile_ruby_files_load_in_time_proportional_to_their_size(tmp_path, unit):
    small = write(tmp_path / "small.rb", unit * (6000 // len(unit)))
    big = write(tmp_path / "big.rb", unit * (60000 // len(unit)))
    loader = get_loader("ruby")
    assert size_ratio(lambda: loader.load(small, "small.rb", LoadOptions()),
                      lambda: loader.load(big, "big.rb", LoadOptions())) < 40


def test_the_oracle_compares_ruby_and_says_when_its_grammar_is_missing(tmp_path, monkeypatch):
    from test_lang_oracle import lo

    monkeypatch.setitem(sys.modules, "tree_sitter_ruby", None)
    # the first module that cannot be imported is named: Ruby's grammar, or tree_sitter itself (or
    # an earlier grammar) where the oracles are not installed (the numpy-floor run)
    first = next(n for n in lo.GRAMMARS if n == "tree_sitter_ruby" or importlib.util.find_spec(n) is None)
    assert f"({first}: " in (lo.oracle_missing() or "")
    monkeypatch.undo()
    need("tree_sitter")
    need("tree_sitter_ruby")
    path = write(tmp_path / "lib/shop/cart.rb", textwrap.dedent(SRC["lib/shop/cart.rb"]))
    r = lo.compare_file(path, "lib/shop/cart.rb", tmp_path, cpp_tree=False)
    assert r["lang"] == "ruby" and r["oracle"] == 9
    assert r["start"] == r["end"] == 9, r["misses"]
