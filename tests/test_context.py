"""``kgsearch context``: the packer's budget and top-hit guarantees (property test), trimming,
the three formats, determinism, and --files / --diff neighbours against an independent BFS over
the index's edges on a small git repository."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import textwrap
import xml.etree.ElementTree as ET

import pytest
from conftest import hypothesis_api, write_files

from kgsearch.cli import main
from kgsearch.context import ContextOptions, build_context, estimate
from kgsearch.context.diff import changed_nodes, parse_unified
from kgsearch.context.pack import Form, Item, pack, trim_code
from kgsearch.context.render import renderer
from kgsearch.context.sources import neighbours
from kgsearch.errors import UsageError
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine
from kgsearch.store.db import Index

given, settings, st, HealthCheck = hypothesis_api()     # stand-ins that skip when hypothesis is missing

REPO = {
    "shop/__init__.py": "",
    "shop/cart.py": '''\
        """Shopping cart."""
        from shop.pricing import apply_discount, round_price


        class Cart:
            """A cart of items."""

            def add_item(self, item):
                """Add one item to the cart."""
                self.items.append(item)
                return apply_discount(self)

            def checkout_total(self):
                """Total price after discounts."""
                total = apply_discount(self)
                return round_price(total)
        ''',
    "shop/pricing.py": '''\
        """Prices."""


        def apply_discount(cart):
            """Apply the discount rules to a cart total."""
            rate = discount_rate(cart)
            return cart.total * (1 - rate)


        def discount_rate(cart):
            """The discount for this cart."""
            return 0.1 if len(cart.items) > 3 else 0.0


        def round_price(value):
            """Round to cents."""
            return round(value, 2)
        ''',
    "tests/test_cart.py": '''\
        from shop.cart import Cart


        def test_add_item():
            """add_item puts the item into the cart."""
            Cart().add_item(1)
        ''',
    "docs/pricing.md": "# Pricing\n\nDiscounts are applied at checkout. See [[cart notes]].\n\nRates change yearly.\n",
    "docs/cart notes.md": "# Cart notes\n\nThe cart holds items. Back to [[pricing]].\n",
}


def _git(root, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "proj"
    write_files(root, REPO)
    db = tmp_path / "proj.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "neighbors", "graph")))
    return root, db


def _engine(db):
    return Engine(Index.open(db, readonly=True))


# ---------------------------------------------------------------------------- packing properties
_text = st.text(alphabet="abc xyz_()\n:=.", min_size=0, max_size=400)


@st.composite
def _items(draw):
    n = draw(st.integers(1, 12))
    out = []
    for i in range(n):
        body = draw(_text)
        forms = [Form("full", body)]
        if draw(st.booleans()) and len(body) > 10:
            forms.append(Form("trimmed", body[: len(body) // 3], "trimmed"))
        forms.append(Form("ref", ""))
        path = draw(st.sampled_from([None, "a.py", "dir/very/long/path/name/module_file.py"]))
        start = draw(st.integers(1, 50))
        out.append(Item(id=i, key=f"py:k{i}", kind="function", name=f"f{i}", path=path, line_start=start,
                        line_end=start + draw(st.integers(0, 40)), score=draw(st.floats(0, 10)), reason="r",
                        forms=forms, lang="python", source=draw(st.sampled_from(["file", "index"]))))
    out.sort(key=lambda it: -it.score)
    return out


@settings(max_examples=300, deadline=None)
@given(items=_items(), extra=st.integers(0, 3000), fmt=st.sampled_from(["markdown", "json", "xml"]))
def test_output_never_exceeds_the_budget_and_keeps_the_top_hit(items, extra, fmt):
    """For any budget >= the smallest item (its full block), the printed output estimates at most
    the budget, and the top item is packed first (JSON/XML: when the budget holds their frame)."""
    r0 = renderer(fmt, {"query": "q", "mode": "task", "budget": 1})
    smallest = min(r0.cost(it, it.forms[0]) for it in items)
    budget = smallest + extra
    r = renderer(fmt, {"query": "q", "mode": "task", "budget": budget})
    frame = r.frame(len(items))
    if fmt != "markdown" and frame + r.cost(items[0], items[0].forms[-1]) > budget:
        return                                     # build_context refuses such a budget (tested below)
    p = pack(items, budget, r.cost, frame=frame, shrink=r.shrink)
    text, used = r.render(p)
    assert estimate(text) <= used <= budget
    assert p.chosen and p.chosen[0][0] is items[0]
    assert {it.key for it, _, _ in p.chosen}.isdisjoint({c.key for c in p.cut})
    assert len(p.chosen) + len(p.cut) == len(items)
    if fmt == "json":
        assert json.loads(text)["items"][0]["key"] == items[0].key
    elif fmt == "xml":
        assert ET.fromstring(text).find("node").get("key") == items[0].key
    elif p.chosen[0][1].note != "header cut to the budget":
        assert text.startswith("### ")


def _pack_reference(items, budget, cost, frame=0):
    """The knapsack of pack() the slow, obvious way: every item trimmed up front, all steps sorted
    once (pack trims lazily from a heap), then the tokens left offered to the dropped items in rank
    order. Returns the chosen (key, level) in rank order."""
    from kgsearch.context.pack import TRIM_FROM, TRIMMED_VALUE as th

    left = budget - frame
    top = items[0]
    f = next((f for f in ([top.forms[0]] if cost(top, top.forms[0]) <= left else top.forms)
              if cost(top, f) <= left), top.forms[-1])
    chosen = {top.key: (top, f, cost(top, f))}
    left -= min(cost(top, f), max(left, 0))
    steps = []
    for it in items[1:]:
        v, full = max(it.score, 0.0), max(1, cost(it, it.forms[0]))
        t = next((g for g in it.forms if g.level == "trimmed"), None) if full > TRIM_FROM else None
        ct = max(1, cost(it, t)) if t is not None else None
        if ct is not None and ct < full and th * v / ct > v / full:
            steps += [(-(th * v / ct), -it.score, it.key, 0, it, t),
                      (-((1 - th) * v / (full - ct)), -it.score, it.key, 1, it, it.forms[0])]
        else:
            steps.append((-(v / full), -it.score, it.key, 1, it, it.forms[0]))
    dropped = set()
    for *_, it, f in sorted(steps, key=lambda s: s[:4]):
        if it.key in dropped:
            continue
        if any(o.key != it.key and g.level == "full" and o.contains(it) for o, g, _ in chosen.values()):
            dropped.add(it.key)
            continue
        have = chosen.get(it.key)
        if f.level == "full" and any(k != it.key and it.contains(o) for k, (o, _, _) in chosen.items()):
            if have is None:
                dropped.add(it.key)
            continue
        need = max(1, cost(it, f)) - (have[2] if have else 0)
        if need > left:
            if have is None:
                dropped.add(it.key)
            continue
        chosen[it.key] = (it, f, max(1, cost(it, f)))
        left -= need
    for it in items[1:]:                 # the tokens left to the dropped items, in rank order: the
        if it.key in chosen or any(     # largest form each offered (full; trimmed over TRIM_FROM) that fits
                g.level == "full" and o.contains(it) for o, g, _ in chosen.values()):
            continue
        full = max(1, cost(it, it.forms[0]))
        t = next((g for g in it.forms if g.level == "trimmed"), None) if full > TRIM_FROM else None
        holds = any(it.contains(o) for o, _, _ in chosen.values())
        f = next((g for g in ([] if holds else [it.forms[0]]) + ([t] if t else []) if max(1, cost(it, g)) <= left), None)
        if f is not None:
            chosen[it.key] = (it, f, max(1, cost(it, f)))
            left -= max(1, cost(it, f))
    rank = {it.key: r for r, it in enumerate(items)}
    return sorted(((k, g.level) for k, (_, g, _) in chosen.items()), key=lambda x: rank[x[0]])


@st.composite
def _long_items(draw):
    """Items long enough to trim (60+ tokens), most with a trimmed form, in two files with nested spans."""
    n = draw(st.integers(2, 14))
    out = []
    for i in range(n):
        size = draw(st.integers(10, 3000))
        forms = [Form("full", "x" * size)]
        if draw(st.integers(0, 3)) and size > 40:
            forms.append(Form("trimmed", "y" * draw(st.integers(1, size // 2)), "t"))
        forms.append(Form("ref", ""))
        start = draw(st.integers(1, 60))
        out.append(Item(id=i, key=f"py:k{i}", kind="function", name=f"f{i}", path=draw(st.sampled_from(["a.py", "b.py"])),
                        line_start=start, line_end=start + draw(st.integers(0, 60)), score=draw(st.floats(0, 10)),
                        reason="r", forms=forms, lang="python", source="file"))
    out.sort(key=lambda it: -it.score)
    return out


@settings(max_examples=400, deadline=None)
@given(items=st.one_of(_items(), _long_items()), extra=st.integers(0, 6000))
def test_lazy_knapsack_equals_the_reference(items, extra):
    r = renderer("markdown", {"query": "q", "mode": "task", "budget": 1})
    budget = min(r.cost(it, it.forms[0]) for it in items) + extra
    p = pack(items, budget, r.cost)
    assert [(it.key, f.level) for it, f, _ in p.chosen] == _pack_reference(items, budget, r.cost)


def test_knapsack_steps_trimmed_then_full():
    """Hand-computed: the trimmed step of a long item (value 5 x 0.5 over its trimmed tokens) goes
    before a small low-scored item (value 1 over ~20 tokens); the step up to full (the other 2.5
    over ~480 tokens) comes last and only when it fits; what fits in no form is reported."""
    r = renderer("markdown", {"mode": "task", "budget": 0})

    def item(i, score, body, trimmed=None):
        forms = [Form("full", body)] + ([Form("trimmed", trimmed, "t")] if trimmed else []) + [Form("ref", "")]
        return Item(i, f"k{i}", "function", f"f{i}", "a.py", i * 100, i * 100 + 5, score, "r", forms, "python")

    top = item(1, 10.0, "x" * 400)
    small = item(2, 1.0, "y" * 40)
    long_ = item(3, 5.0, "z" * 2000, trimmed="z" * 100)
    c_top, c_small = r.cost(top, top.forms[0]), r.cost(small, small.forms[0])
    c_trim, c_full = r.cost(long_, long_.forms[1]), r.cost(long_, long_.forms[0])
    assert 2.5 / c_trim > 1.0 / c_small > 2.5 / (c_full - c_trim)      # the order the steps go in
    budget = c_top + c_small + c_trim
    p = pack([top, long_, small], budget, r.cost)
    assert [(it.key, f.level) for it, f, _ in p.chosen] == [("k1", "full"), ("k3", "trimmed"), ("k2", "full")]
    assert p.used == budget and not p.cut
    p = pack([top, long_, small], budget - 5, r.cost)                # no room for the small one now
    assert [(it.key, f.level) for it, f, _ in p.chosen] == [("k1", "full"), ("k3", "trimmed")]
    assert [(c.key, c.reason) for c in p.cut] == [("k2", f"over budget: body needs {c_small} tokens, "
                                                          f"{budget - 5 - c_top - c_trim} left")]
    p = pack([top, long_, small], c_top + c_full + c_small, r.cost)   # room for all in full
    assert [(it.key, f.level) for it, f, _ in p.chosen] == [("k1", "full"), ("k3", "full"), ("k2", "full")]
    assert c_trim > c_small
    p = pack([top, long_, small], c_top + c_small - 1, r.cost)        # nothing but the top fits
    assert [it.key for it, _, _ in p.chosen] == ["k1"]
    assert [c.reason.split(" needs")[0] for c in p.cut] == ["over budget: trimmed form", "over budget: body"]


def test_an_item_holding_packed_items_goes_in_trimmed_at_most():
    """A class packed trimmed, then its method in full: the class's step up to full would repeat
    the method, so it stays trimmed; a container without a trimmed form is cut, saying why."""
    r = renderer("markdown", {"mode": "task", "budget": 0})
    top = Item(0, "k0", "function", "top", "b.py", 1, 2, 10.0, "r", [Form("full", "t" * 80), Form("ref", "")], "python",
               source="file")
    cls = Item(1, "k1", "class", "C", "a.py", 10, 60, 6.0, "r",
               [Form("full", "c" * 1200), Form("trimmed", "c" * 100, "t"), Form("ref", "")], "python", source="file")
    meth = Item(2, "k2", "method", "C.m", "a.py", 20, 25, 5.0, "r", [Form("full", "m" * 120), Form("ref", "")],
                "python", source="file")
    p = pack([top, cls, meth], 10_000, r.cost)
    assert [(it.key, f.level) for it, f, _ in p.chosen] == [("k0", "full"), ("k1", "trimmed"), ("k2", "full")]
    plain = Item(3, "k3", "class", "D", "a.py", 5, 90, 1.0, "r", [Form("full", "d" * 200), Form("ref", "")], "python",
                 source="file")
    p = pack([top, cls, meth, plain], 10_000, r.cost)
    assert [(c.key, c.reason) for c in p.cut] == [("k3", "holds nodes already packed and has no trimmed form")]


def test_an_item_holding_packed_items_says_why_its_trimmed_form_stayed_out():
    """A container whose trimmed form is not denser than its body is offered in full only; the
    body repeats a packed method, so it is cut. It has a trimmed form: the reason says that form
    did not fit (it said "has no trimmed form"), or that a short body is not trimmed."""
    r = renderer("markdown", {"mode": "task", "budget": 0})
    top = Item(0, "k0", "function", "top", "b.py", 1, 2, 10.0, "r", [Form("full", "t" * 80), Form("ref", "")], "python",
               source="file")
    meth = Item(1, "k1", "method", "C.m", "a.py", 20, 25, 5.0, "r", [Form("full", "m" * 120), Form("ref", "")],
                "python", source="file")
    big = Item(2, "k2", "class", "C", "a.py", 10, 60, 1.0, "r",
               [Form("full", "c" * 1200), Form("trimmed", "c" * 1100, "t"), Form("ref", "")], "python", source="file")
    budget = r.cost(top, top.forms[0]) + r.cost(meth, meth.forms[0]) + 40
    p = pack([top, meth, big], budget, r.cost)
    assert [it.key for it, _, _ in p.chosen] == ["k0", "k1"]
    need = r.cost(big, big.forms[1])
    assert [(c.key, c.reason, c.tokens) for c in p.cut] == [
        ("k2", f"holds nodes already packed; its trimmed form needs {need} tokens, {budget - p.used} left", need)]
    small = Item(2, "k2", "class", "C", "a.py", 10, 60, 1.0, "r",
                 [Form("full", "c" * 60), Form("trimmed", "c" * 55, "t"), Form("ref", "")], "python", source="file")
    p = pack([top, meth, small], 10_000, r.cost)
    full = r.cost(small, small.forms[0])
    assert full <= 60
    assert [(c.key, c.reason) for c in p.cut] == [("k2", f"holds nodes already packed; its body ({full} tokens) is too short to trim")]


def test_items_of_the_same_key_and_path_from_two_indexes_are_packed_apart():
    """Several indexes packed as one: each may have a node ``md:README`` at ``README.md`` (and a
    Python function at the same relative path). They are two items: both go in, neither is
    "inside" the other, and a cut one names its index. Before, the knapsack's heap compared two
    such items (TypeError: '<' not supported between instances of 'Item'), and keys were its
    slots, so one index's item took the other's place."""
    r = renderer("json", {"mode": "task", "budget": 0})

    def two(index, score, body):
        return Item(0, "md:README", "note", "README", "README.md", 1, 9, score, "r",
                    [Form("full", body), Form("ref", "")], "markdown", index=index)

    top = Item(0, "py:a.py:f", "function", "f", "a.py", 1, 40, 9.0, "r", [Form("full", "x" * 400), Form("ref", "")],
               "python", source="file", index="a")
    inner = Item(1, "py:a.py:g", "function", "g", "a.py", 5, 9, 8.0, "r", [Form("full", "y" * 40), Form("ref", "")],
                 "python", source="file", index="b")
    a, b = two("a", 1.0, "same text"), two("b", 1.0, "same text")
    p = pack([top, a, b, inner], 10_000, r.cost)
    assert [(it.index, it.key) for it, _, _ in p.chosen] == [("a", "py:a.py:f"), ("a", "md:README"),
                                                              ("b", "md:README"), ("b", "py:a.py:g")]
    assert not p.cut
    tight = r.cost(top, top.forms[0]) + r.cost(a, a.forms[0])
    p = pack([top, a, b], tight, r.cost)
    assert [(it.index, it.key) for it, _, _ in p.chosen] == [("a", "py:a.py:f"), ("a", "md:README")]
    assert [(c.index, c.key) for c in p.cut] == [("b", "md:README")]


def test_trim_code_keeps_signature_docstring_and_matched_lines():
    src = textwrap.dedent('''\
        @decorator
        def retry(fn, attempts=3):
            """Call fn until it succeeds.

            Gives up after attempts."""
            count = 0
            while True:
                count += 1
                try:
                    return fn()
                except OSError:
                    if count >= attempts:
                        raise
                    sleep(backoff(count))
        ''').rstrip("\n").split("\n")
    f = trim_code(src, ["backoff"], marked={5})
    lines = f.body.split("\n")
    assert lines[:5] == src[:5]                               # decorator, def, the whole docstring
    assert src[5] in lines and src[13] in lines                # the marked line and the matched one
    assert "# ... 7 lines cut" in f.body
    assert f.note == "signature, docstring and 2 matched lines of 14"



def test_trim_code_keeps_a_brace_languages_whole_declaration():
    """A C# or Java method's span starts at its first attribute or annotation, and the trimmed
    form kept the span's first line only: `[Test]`, `@Override`, `[SuppressUnmanagedCodeSecurity]`
    (no name at all), or half a parameter list (`bool ToManagedValue(BorrowedReference value,
    Type obType,`). It keeps the attributes and the declaration up to its `{`, `=>` or `;`."""
    body = ["        int n = 0;"] + ["        n += 1;"] * 20 + ["        return Retry(n);", "    }"]
    cs = ["    [Test]", "    [Category(\"slow\")]", "    internal static bool ToManagedValue(BorrowedReference value,",
          "                                        Type obType, out object? result)", "    {"] + body
    f = trim_code(cs, ["retry"], comment="//")
    assert f.body.split("\n")[:5] == cs[:5] and cs[-2] in f.body.split("\n")
    java = ["    @Override", "    public void run() {"] + body
    assert trim_code(java, ["retry"], comment="//").body.split("\n")[:2] == java[:2]
    rust = ["    #[inline]", "    pub fn run(&self)", "        -> usize", "    where T: Clone {"] + body
    assert trim_code(rust, ["retry"], comment="//").body.split("\n")[:4] == rust[:4]
    kt = ["    @JvmStatic", "    fun run(a: Int,", "            b: Int): Int =", "        listOf(a).map { it + b }.sum()"] + body
    assert trim_code(kt, ["retry"], comment="//").body.split("\n")[:3] == kt[:3]
    one = ["    public void Run() {"] + body                        # the first line is the declaration
    assert trim_code(one, ["retry"], comment="//").body.split("\n")[:2] == [one[0], "        // ... 21 lines cut"]


# ---------------------------------------------------------------------------- the engine
def test_three_formats_same_selection_and_deterministic(repo):
    root, db = repo
    outs = {}
    for fmt in ("markdown", "json", "xml"):
        a = build_context(_engine(db), task="apply the discount at checkout", opts=ContextOptions(budget=300, fmt=fmt))
        b = build_context(_engine(db), task="apply the discount at checkout", opts=ContextOptions(budget=300, fmt=fmt))
        assert a.text == b.text                                # a fresh engine, the same bytes
        assert estimate(a.text) <= a.used <= 300
        outs[fmt] = a
    md = outs["markdown"].text
    heads = [ln for ln in md.splitlines() if ln.startswith("### ")]
    # the search's top hit first (HITS off on code queries since issue 14 put checkout_total on top)
    assert heads[0] == "### shop/cart.py:13-16 · method shop.cart.Cart.checkout_total"
    assert heads[1] == "### shop/pricing.py:4-7 · function shop.pricing.apply_discount"
    assert "```python\ndef apply_discount(cart):" in md
    js = json.loads(outs["json"].text)
    assert [i["key"] for i in js["items"]] == [i["key"] for i in outs["json"].items]
    assert js["estimate"] == "tokens = ceil(characters / 4)" and js["budget"] == 300
    root_el = ET.fromstring(outs["xml"].text)
    assert root_el.tag == "context" and root_el.find("node").get("key") == "py:shop.cart.Cart.checkout_total"
    assert root_el.find("node").text.strip().startswith("def checkout_total(self):")


def test_budget_and_mode_errors(repo):
    _, db = repo
    eng = _engine(db)
    with pytest.raises(UsageError, match="exactly one"):
        build_context(eng, task="x", files=["shop/cart.py"])
    with pytest.raises(UsageError, match="--budget must be"):
        build_context(eng, task="x", opts=ContextOptions(budget=0))
    with pytest.raises(UsageError, match="too small for json"):
        build_context(eng, task="apply discount", opts=ContextOptions(budget=5, fmt="json"))
    tiny = build_context(eng, task="apply discount", opts=ContextOptions(budget=5))
    assert estimate(tiny.text) <= 5 and tiny.items[0]["key"] == "py:shop.pricing.apply_discount"


def _bfs_neighbours(db, seeds):
    """Independent oracle: every edge of the index in memory, one BFS step both ways."""
    ix = Index.open(db, readonly=True)
    kind = dict(ix.conn.execute("SELECT id, kind FROM nodes"))
    adj = collections.defaultdict(set)
    for src, dst, typ, fid in ix.conn.execute("SELECT src, dst, type, file_id FROM edges WHERE dst IS NOT NULL"):
        if typ == "calls" or (fid is not None and kind[dst] in ("note", "section")):
            adj[src].add(dst)
        if typ == "calls" or (fid is not None and kind[src] in ("note", "section")):
            adj[dst].add(src)
    ix.close()
    frontier = collections.deque(seeds)
    seen = set(seeds)
    found = set()
    while frontier:
        n = frontier.popleft()
        for m in adj[n]:
            if m not in seen:
                seen.add(m)
                found.add(m)                                   # depth 1: not expanded further
    return found


def _ids(db, keys):
    ix = Index.open(db, readonly=True)
    out = {ix.node_by_key(k) for k in keys}
    ix.close()
    return out


def test_files_callers_and_callees_equal_a_bfs(repo, capsys):
    root, db = repo
    ix = Index.open(db, readonly=True)
    fid = ix.conn.execute("SELECT id FROM files WHERE path LIKE '%pricing.py'").fetchone()[0]
    seeds = [r[0] for r in ix.conn.execute("SELECT id FROM nodes WHERE file_id=?", (fid,))]
    near = neighbours(ix, seeds)
    ix.close()
    assert set(near) == _bfs_neighbours(db, seeds)
    assert set(near) == _ids(db, ["py:shop.cart.Cart.add_item", "py:shop.cart.Cart.checkout_total"])
    assert main(["context", "--db", str(db), "--files", str(root / "shop/pricing.py"), "--json", "-q"]) == 0
    got = json.loads(capsys.readouterr().out)
    keys = [i["key"] for i in got["items"]]
    assert set(keys) == {"py:shop.pricing", "py:shop.pricing.apply_discount", "py:shop.pricing.discount_rate",
                         "py:shop.pricing.round_price", "py:shop.cart.Cart.add_item", "py:shop.cart.Cart.checkout_total"}
    assert keys.index("py:shop.cart.Cart.add_item") > keys.index("py:shop.pricing.round_price")   # seeds first


def test_diff_maps_changed_lines_and_neighbours_equal_a_bfs(tmp_path, capsys):
    root = tmp_path / "proj"
    write_files(root, REPO)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    pricing = root / "shop/pricing.py"
    pricing.write_text(pricing.read_text().replace("return 0.1 if", "return 0.15 if"))
    note = root / "docs/pricing.md"
    note.write_text(note.read_text().replace("Rates change yearly.", "Rates change monthly."))
    db = tmp_path / "proj.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "neighbors", "graph")))

    from kgsearch.context.diff import git_diff
    ix = Index.open(db, readonly=True)
    changes = git_diff(ix.meta_json("roots"))
    changed, notes = changed_nodes(ix, changes)
    assert notes == []
    assert set(changed) == _ids(db, ["py:shop.pricing.discount_rate", "md:docs/pricing"])
    assert changed[ix.node_by_key("py:shop.pricing.discount_rate")] == {12}
    near = neighbours(ix, changed)
    ix.close()
    assert set(near) == _bfs_neighbours(db, list(changed))
    assert set(near) == _ids(db, ["py:shop.pricing.apply_discount", "md:docs/cart notes"])

    assert main(["context", "--db", str(db), "--diff", "--json", "-q"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [i["reason"] for i in got["items"]][:2] == ["changed", "changed"]
    assert {i["key"] for i in got["items"]} == {"py:shop.pricing.discount_rate", "md:docs/pricing",
                                                "py:shop.pricing.apply_discount", "md:docs/cart notes"}
    diff_text = _git(root, "diff", "HEAD").stdout                 # the same diff from stdin
    import io, sys
    old = sys.stdin
    sys.stdin = io.StringIO(diff_text)
    try:
        assert main(["context", "--db", str(db), "--diff", "-", "--json", "-q"]) == 0
    finally:
        sys.stdin = old
    assert json.loads(capsys.readouterr().out)["items"] == got["items"]


def test_diff_errors_are_one_line(repo, tmp_path, capsys, monkeypatch):
    _, db = repo
    assert main(["context", "--db", str(db), "--diff"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: not a git repository:") and "--diff -" in err[0]
    monkeypatch.setenv("PATH", str(tmp_path))                  # no git on PATH
    assert main(["context", "--db", str(db), "--diff"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: git is not installed")
    assert main(["context", "--db", str(db), "--diff", str(tmp_path / "missing.diff")]) == 3
    assert "missing.diff: cannot read the diff" in capsys.readouterr().err


def test_parse_unified_deletions_and_stale_index(repo):
    changes = parse_unified("--- a/shop/pricing.py\n+++ b/shop/pricing.py\n@@ -11,2 +10,0 @@\n-x\n-y\n")
    assert changes[0].new_lines == {10} and changes[0].old_lines == {11, 12}
    root, db = repo
    (root / "shop/pricing.py").write_text((root / "shop/pricing.py").read_text() + "\n# touched\n")
    ix = Index.open(db, readonly=True)
    changed, notes = changed_nodes(ix, changes)                # the file changed after indexing: old side
    assert notes == ["shop/pricing.py: changed on disk since it was indexed; mapped the diff's old-side lines, and "
                     "the context shows its indexed text; run `kgsearch index` to pack the current one"]
    assert set(changed) == {ix.node_by_key("py:shop.pricing.discount_rate")}
    ix.close()


def test_files_changed_since_indexed_are_named_not_packed_silently(repo, capsys):
    """`context --files` of a file edited (or deleted) since it was indexed packed the indexed
    text of its code as if it were the file, with no word. The current text is not read (the
    indexed line spans no longer match it): a notice names the file and `kgsearch index`."""
    root, db = repo
    pricing, cart = root / "shop/pricing.py", root / "shop/cart.py"
    args = ["context", "--db", str(db), "--files", str(pricing), str(cart), "--budget", "2000"]
    assert main(args) == 0
    assert "since it was indexed" not in capsys.readouterr().err          # current files: nothing said
    pricing.write_text(pricing.read_text() + "\n# touched\n")
    with Index.open(db, readonly=True) as ix:
        before = ix.conn.execute("SELECT path, size FROM files WHERE path = ?", (str(pricing),)).fetchone()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert ("note: shop/pricing.py: changed on disk since it was indexed; the context shows its indexed text; "
            "run `kgsearch index` to pack the current one\n") in err and "cart.py" not in err
    cart.unlink()
    assert main([*args, "--json"]) == 0
    got = capsys.readouterr()
    assert "note: shop/cart.py: gone from disk since it was indexed; the context shows its indexed text" in got.err
    assert json.loads(got.out)["items"]                                   # still packed, from the index
    with Index.open(db, readonly=True) as ix:                            # (the index is only read)
        assert ix.conn.execute("SELECT path, size FROM files WHERE path = ?", (str(pricing),)).fetchone() == before


def test_readme_context_block_is_real_output(tmp_path, capsys):
    """docs/context.md's `kgsearch context` example: the same headers, cut lines and summary numbers."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "docs" / "context.md").read_text(encoding="utf-8")
    start = readme.index('$ kgsearch context "how do I back up my notes" --budget 400')
    block = readme[start:readme.index("````", start)].splitlines()[1:]
    db = str(tmp_path / "demo.db")
    assert main(["demo", "--db", db, "-q"]) == 0
    capsys.readouterr()
    assert main(["context", "how do I back up my notes", "--budget", "400", "--db", db]) == 0
    cap = capsys.readouterr()
    got = cap.out.splitlines() + cap.err.splitlines()

    def keep(lines):
        cut = lines.index("Cut:")
        return [ln for ln in lines[:cut] if ln.startswith("### ")] + lines[cut:]

    assert keep(got) == keep(block)


@pytest.mark.parametrize("data", [b"a\nb\r\nc\rd\n\ne", b"x\r\ry\r", b"\r\n\r", b"p\rq\r\n\rr", b"one line", b"\xef\xbb\xbfx = 1\ny\n", b"\n\n\n",
                                  "caf\u00e9\n\u00fcber\nz".encode()])
def test_file_line_spans_equal_splitting_the_whole_file(tmp_path, data):
    """The line-end slicing of load_items gives exactly the lines that splitting the whole file
    at LF, CRLF and lone CR gives (as Python numbers a module's lines; BOM dropped), for every
    span; the CR of a span's last CRLF ends its last line (it made an empty line after a Windows
    file's function)."""
    from kgsearch.context.items import _read_file

    from kgsearch.ingest.readback import content_hash

    p = tmp_path / "f.py"
    p.write_bytes(data)
    st = os.stat(p)
    lines = _read_file(str(p), str(tmp_path), st.st_size, st.st_mtime_ns, content_hash(data))
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    raw = body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    assert len(lines) == len(raw)
    for a in range(1, len(raw) + 1):
        for b in range(a, len(raw) + 1):
            assert lines.span(a, b) == raw[a - 1:b], (a, b)
    assert _read_file(str(p), str(tmp_path), st.st_size + 1, st.st_mtime_ns, content_hash(data)) is None
    assert _read_file(str(tmp_path / "gone.py"), str(tmp_path), st.st_size, st.st_mtime_ns, content_hash(data)) is None


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet="ab_ .\n-éİ1", max_size=80),
       terms=st.lists(st.text(alphabet="ab_.-é1", min_size=1, max_size=4), min_size=1, max_size=4))
def test_find_terms_equals_the_regex_alternation(text, terms):
    """find_terms (str.find) gives exactly the matches of the regex it replaced, \\b(alt1|alt2...)
    with the alternatives longest first, on any text (word and non-word first characters too)."""
    import re

    from kgsearch.context.pack import _alternatives, find_terms

    alts = _alternatives(tuple(terms))
    rx = re.compile(r"\b(" + "|".join(re.escape(t) for t in alts) + r")")
    assert find_terms(text, alts) == [(m.start(), m.group(1)) for m in rx.finditer(text)]


def test_parse_unified_breaks_lines_at_newlines_only():
    """A diff's lines end at ``\\n`` (``\\r\\n`` for a CRLF file), as git writes them; a form feed
    (Emacs page breaks in C and Python sources), ``\\x1c`` or U+2028 inside a line of code split
    it in two with ``str.splitlines``, and every later line of the hunk was counted one off."""
    diff = ("--- a/x.py\n+++ b/x.py\n@@ -1,6 +1,6 @@\n a\n \x0c\n s = 'p\u2028q'\n \x1cz\n-old\n+new\n t\n"
            "--- a/w.c\r\n+++ b/w.c\r\n@@ -2,2 +2,2 @@\r\n-int a;\r\n+int b;\r\n c\x0c\r\n")
    x, w = parse_unified(diff)
    assert (x.path, sorted(x.old_lines), sorted(x.new_lines)) == ("x.py", [5], [5])
    assert (w.path, sorted(w.old_lines), sorted(w.new_lines)) == ("w.c", [2], [2])


def test_xml_holds_text_with_characters_xml_forbids():
    """A note holding an ANSI escape (or a NUL, U+FFFE...) made `context --format xml`
    unparseable: XML 1.0 allows those characters nowhere, not even in CDATA. They are written
    as the escapes the terminal shows; the budget still holds."""
    body = "a\x1b[31mb\x00c ]]> d\ufffe\tend"
    it = Item(id=1, key="md:k\x01", kind="note", name="n\x07", path="p\x1b.md", line_start=1, line_end=2, score=1.0,
              reason="r\x0c", forms=[Form("full", body), Form("ref", "")], lang="markdown", source="index")
    r = renderer("xml", {"query": "q\x1b[2J", "mode": "task", "budget": 500})
    p = pack([it], 500, r.cost, frame=r.frame(1), shrink=r.shrink)
    text, used = r.render(p)
    assert estimate(text) <= used <= 500
    root = ET.fromstring(text)
    assert root.get("query") == "q\\x1b[2J"
    node = root.find("node")
    assert (node.get("key"), node.get("name"), node.get("path"), node.get("reason")) == \
        ("md:k\\x01", "n\\x07", "p\\x1b.md", "r\\x0c")
    assert node.text == "\na\\x1b[31mb\\x00c ]]> d\\ufffe\tend\n"


def test_a_python_file_with_a_coding_cookie_is_shown_as_indexed(tmp_path, capsys):
    """A latin-1 file declaring `# -*- coding: latin-1 -*-` is indexed with its characters (the
    loader decodes as Python does); context read its lines back as UTF-8: "caf\ufffd" in the packed
    code while the index (and show) had "café"."""
    root = tmp_path / "src"
    root.mkdir()
    (root / "lat.py").write_bytes(b'# -*- coding: latin-1 -*-\ndef d():\n    return "caf\xe9"\n')
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    capsys.readouterr()
    assert main(["context", "--files", "lat.py", "--db", str(db), "--json"]) == 0
    items = {it["key"]: it for it in json.loads(capsys.readouterr().out)["items"]}
    assert items["py:lat.d"]["text"] == 'def d():\n    return "café"'


def test_names_with_line_breaks_cannot_forge_context_lines_or_warnings(tmp_path, capsys):
    """A note named "evil\\n### fake.py:1 · function f.md" printed a header line of its own in the
    Markdown context, and a binary file named "x\\nerror: forged.md" an 'error:' line among the
    warnings of `kgsearch index`."""
    from kgsearch.cli import main

    root = tmp_path / "r"
    root.mkdir()
    (root / "evil\n### fake.py:1 · function f.md").write_text("# Evil\n\nzebra evil body\n", encoding="utf-8")
    (root / "good.md").write_text("# Good\n\nzebra good body\n", encoding="utf-8")
    (root / "x\nerror: forged.md").write_bytes(b"\x00\x01binary")
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert main(["index", str(root), "--db", str(db)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert not any(line.startswith("error:") for line in err), err
    assert any("x\\nerror: forged.md: not text" in line for line in err)
    assert main(["context", "zebra evil", "--db", str(db), "--budget", "2000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if line.startswith("### ")]
    assert len(heads) == 2 and not any(line.startswith("### fake") for line in lines), heads
    assert any(h.startswith("### ") and "evil\\n### fake.py:1" in h for h in heads)


def test_paths_from_diffs_and_anchors_match_case_exactly(tmp_path, capsys):
    """SQLite's LIKE ignores ASCII case: a diff of src/foo.py made elsewhere was mapped onto the
    indexed src/Foo.py (another file), and an anchor `src/foo.py` in a code task found it too."""
    import sqlite3

    from kgsearch.query.anchors import _files_by_suffix

    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "Foo.py").write_text("def upper_case():\n    return 1\n", encoding="utf-8")
    (root / "src" / "bar.py").write_text("def lower_case():\n    return 2\n", encoding="utf-8")
    db = tmp_path / "i.db"
    assert main(["index", str(root), "--db", str(db), "-q"]) == 0
    diff = tmp_path / "d.diff"
    for name, found in (("foo.py", False), ("Foo.py", True)):
        diff.write_text(f"--- a/src/{name}\n+++ b/src/{name}\n@@ -1,2 +1,2 @@\n-def upper_case():\n+def upper_case():\n"
                        f"     return 1\n", encoding="utf-8")
        capsys.readouterr()
        assert main(["context", "--diff", str(diff), "--db", str(db), "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert any(it["name"].endswith("upper_case") for it in got["items"]) is found, (name, got)
    conn = sqlite3.connect(db)
    try:
        assert _files_by_suffix(conn, "src/foo.py") == []
        assert len(_files_by_suffix(conn, "src/Foo.py")) == 1 and len(_files_by_suffix(conn, "lib/src/Foo.py")) == 1
    finally:
        conn.close()


def test_cut_lines_in_trimmed_code_are_marked_in_its_language(tmp_path, capsys):
    """A trimmed JavaScript method said `# ... 40 lines cut`: `#` is no comment in JS, Go, Rust,
    Java, C#, C or C++ (a private field in JS), so the marker read as code; it is `// ...` there."""
    root = tmp_path / "src"
    root.mkdir()
    body = "\n".join(f"    const step{i} = compute({i});" for i in range(40))
    (root / "queue.js").write_text("class Queue {\n  drainQueue(items) {\n" + body
                                   + "\n    return retryBackoff(items);\n  }\n}\nmodule.exports = { Queue };\n")
    (root / "q.py").write_text("def drain_py(items):\n" + "\n".join(f"    step{i} = compute({i})" for i in range(40))
                               + "\n    return retry_backoff(items)\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    capsys.readouterr()
    assert main(["context", "retryBackoff retry_backoff drain", "--db", str(db), "--budget", "300", "--json"]) == 0
    trimmed = {it["key"]: it["text"] for it in json.loads(capsys.readouterr().out)["items"] if it["form"] == "trimmed"}
    js = [t for k, t in trimmed.items() if k.startswith("js:")]
    py = [t for k, t in trimmed.items() if k.startswith("py:")]
    assert js and py, trimmed
    assert all("// ... " in t and "# ... " not in t for t in js), js
    assert all("# ... " in t for t in py), py


def test_a_node_without_text_is_its_header_not_an_empty_fence(tmp_path, capsys):
    """An empty note (or a tag, `context kind:tag`) was packed as its header and an empty
    ```markdown fence: three lines of nothing for the agent to read, paid from the budget."""
    root = tmp_path / "v"
    root.mkdir()
    (root / "empty.md").write_text("")
    (root / "b.md").write_text("# B\nsee [[empty]]\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    capsys.readouterr()
    assert main(["context", "--files", "empty.md", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "### empty.md:1 · note empty\n(no text)\n\n### b.md" in out, out
    assert "```markdown\n\n```" not in out
