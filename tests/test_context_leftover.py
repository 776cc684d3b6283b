"""``kgsearch context``: tokens left over after the greedy knapsack go to the items it dropped.

The greedy packs steps by value per token and drops an item whose step does not fit the tokens
left at that moment. Two things left budget unused while a dropped item would fit: tokens that
come back later (a document comes out when its chunk, which shows its text, goes in) were never
offered to the items dropped before; and an item whose trimmed form is not denser than its full
one offers only its full form, so when that did not fit it was dropped though its trimmed form fit.
A second pass offers the tokens left to the dropped items, in rank order."""
from __future__ import annotations

import textwrap

from kgsearch.context import ContextOptions, build_context, estimate
from kgsearch.context.pack import Form, Item, pack
from kgsearch.context.render import renderer
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine
from kgsearch.store.db import Index

R = renderer("markdown", {"mode": "task", "budget": 0})


def _item(r, key, path, score, full, trimmed=None, kind="function", name=None, parent=None):
    forms = [Form("full", full)] + ([Form("trimmed", trimmed, "t")] if trimmed else []) + [Form("ref", "")]
    return Item(r, key, kind, name or key, path, r * 100 + 1, r * 100 + 9, score, "r", forms, "python", parent=parent)


def _cost(it, level):
    return R.cost(it, next(f for f in it.forms if f.level == level))


def test_a_dropped_item_whose_trimmed_form_fits_the_tokens_left_goes_in():
    """Its trimmed form (60% of the full one) is not denser, so only its full form was offered;
    that did not fit and the item was dropped, leaving more than its trimmed form unused."""
    top = _item(0, "k0", "a.py", 10.0, "t" * 400)
    long_ = _item(1, "k1", "b.py", 5.0, "x" * 2000, trimmed="x" * 1200)
    small = _item(2, "k2", "c.py", 0.5, "y" * 200)
    c_top, c_small = _cost(top, "full"), _cost(small, "full")
    c_trim, c_full = _cost(long_, "trimmed"), _cost(long_, "full")
    assert 0.5 * 5.0 / c_trim < 5.0 / c_full                          # the premise: trimmed is not denser
    budget = c_top + c_trim + c_small + 3
    assert budget < c_top + c_full
    p = pack([top, long_, small], budget, R.cost)
    assert [(it.key, f.level) for it, f, _ in p.chosen] == [("k0", "full"), ("k1", "trimmed"), ("k2", "full")]
    assert p.cut == [] and p.used == budget - 3
    text, used = R.render(p)
    assert estimate(text) <= used <= budget


def test_tokens_that_come_back_go_to_an_item_dropped_before():
    """A document (its header long: its name is its first line) goes in, then an item does not fit
    and is dropped, then the document's chunk goes in and the document comes out: its tokens
    come back, and the dropped item fits them."""
    top = _item(0, "k0", "a.py", 10.0, "t" * 400)
    doc = _item(1, "txt:m", "m.txt", 3.0, "Flux capacitor manual.", kind="document", name="Flux capacitor " * 25)
    other = _item(2, "k2", "c.py", 2.0, "z" * 300)
    chunk = _item(3, "txt:m#1", "m.txt", 0.1, "Flux capacitor manual.\n\nCalibrate it.", kind="chunk",
                  name="m.txt", parent="txt:m")
    c = {it.key: _cost(it, "full") for it in (top, doc, other, chunk)}
    assert 3.0 / c["txt:m"] > 2.0 / c["k2"] > 0.1 / c["txt:m#1"]       # the order the steps go in
    budget = c["k0"] + c["txt:m"] + c["txt:m#1"]
    assert c["k2"] > budget - c["k0"] - c["txt:m"]                     # dropped when its turn comes
    assert c["k2"] <= budget - c["k0"] - c["txt:m#1"]                  # fits once the document is out
    p = pack([top, doc, other, chunk], budget, R.cost)
    assert [it.key for it, _, _ in p.chosen] == ["k0", "k2", "txt:m#1"]
    assert [(x.key, x.reason) for x in p.cut] == [("txt:m", "its text is in txt:m#1, already packed")]
    assert p.used <= budget


def test_nothing_changes_when_no_dropped_item_fits_the_tokens_left():
    top = _item(0, "k0", "a.py", 10.0, "t" * 400)
    long_ = _item(1, "k1", "b.py", 5.0, "x" * 2000, trimmed="x" * 1200)
    budget = _cost(top, "full") + _cost(long_, "trimmed") - 1
    p = pack([top, long_], budget, R.cost)
    assert [it.key for it, _, _ in p.chosen] == ["k0"]
    assert [x.reason for x in p.cut] == [f"over budget: body needs {_cost(long_, 'full')} tokens, "
                                        f"{budget - _cost(top, 'full')} left"]


def test_a_context_leaves_no_budget_unused_that_a_dropped_node_fits(tmp_path):
    """On a small index: a long function whose matched lines are most of it (its trimmed form is
    not denser than its whole body) ranks second; its body does not fit, its trimmed form does."""
    src = tmp_path / "src"
    src.mkdir()
    matched = "\n".join(f"    calibrate_flux(coil_{i}, drift_{i})  # calibrate the flux coil {i}" for i in range(12))
    plain = "\n".join(f"    x{i} = {i}" for i in range(40))
    (src / "flux.py").write_text(textwrap.dedent('''\
        def calibrate_flux(coil, drift):
            """Calibrate the flux capacitor coil against its drift."""
            return coil - drift
        ''') + "\n\ndef service():\n    \"\"\"Service the unit.\"\"\"\n" + matched + "\n" + plain + "\n",
        encoding="utf-8")
    (src / "other.py").write_text("def hoses():\n    \"\"\"Garden hoses.\"\"\"\n    return 1\n", encoding="utf-8")
    db = tmp_path / "ix.db"
    index_paths(db, [str(src)], IndexOptions())
    engine = Engine(Index.open(db, readonly=True))
    wide = build_context(engine, task="calibrate the flux coil drift", opts=ContextOptions(budget=4000))
    keys = [i["key"] for i in wide.items]
    assert keys[:2] == ["py:flux.calibrate_flux", "py:flux.service"], keys
    full = wide.items[1]["tokens"]
    assert wide.items[1]["form"] == "full"
    budget = wide.items[0]["tokens"] + full - 10                       # room for its trimmed form, not for its body
    res = build_context(engine, task="calibrate the flux coil drift", opts=ContextOptions(budget=budget))
    got = {i["key"]: i["form"] for i in res.items}
    assert got.get("py:flux.service") == "trimmed", (got, res.cut)     # before: left out, 2/3 of the budget unused
    assert list(got) == keys and res.cut == [] and res.used <= budget
