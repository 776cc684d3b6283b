"""Session boosts and stored feedback: bit-identical rankings when neither applies, the decay and
cap of the session boost, feedback nudges for similar queries, expiry when the node changes,
and the ``kgsearch feedback`` command."""
from __future__ import annotations

import json

import pytest
from conftest import SHOP, SHOP_CART_CHECKOUT, write_files

from kgsearch.cli import main
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine, SearchOptions, feedback
from kgsearch.query.feedback import Session, nudges_for, query_signature, record, similarity
from kgsearch.store.db import Index

PKG = {
    **SHOP,
    "shop/cart.py": SHOP_CART_CHECKOUT,
    "shop/pricing.py": '''\
        """Prices."""


        def apply_discount(cart):
            """Apply the discount rules to a cart total."""
            return cart


        def price_of(item):
            """The price of one item in the cart."""
            return item.price
        ''',
}
QUERIES = ["add item to the cart", "apply_discount", "cart total price", "discount rules", "Cart"]


@pytest.fixture
def code(tmp_path):
    root = tmp_path / "proj"
    write_files(root, PKG)
    db = tmp_path / "code.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "neighbors", "graph")))
    return root, db


def _hits(eng, q, session=None):
    r = eng.search(q, SearchOptions(use_cache=False, k=10, explain=True), session=session)
    return [h.as_dict() for h in r.hits]


def test_without_session_or_feedback_the_ranking_is_bit_identical(code, monkeypatch):
    """No session, an empty session, and feedback for unrelated queries all leave every hit (ids,
    ranks, scores to the last bit, every explain part) exactly as the pipeline without the hook."""
    root, db = code
    eng = Engine(Index.open(db, readonly=True))
    monkeypatch.setattr(feedback, "nudges_for", lambda ix, q, s=None, feedback=True: None)     # the pipeline without the hook
    base = {q: _hits(eng, q) for q in QUERIES}
    monkeypatch.undo()
    assert all(nudges_for(eng.ix, eng.parse(q), None) is None and nudges_for(eng.ix, eng.parse(q), Session()) is None
               for q in QUERIES)
    for q in QUERIES:
        assert _hits(eng, q) == base[q]
        assert _hits(eng, q, Session()) == base[q]
    with Index.open(db) as w:                                  # feedback on queries sharing < half their terms
        record(w, "completely different words about weather", {"key": "py:shop.cart.Cart"}, True)
        record(w, "discount rules for the holiday season sale", {"key": "py:shop.pricing.price_of"}, False)
    assert similarity(query_signature("discount rules"), query_signature("discount rules for the holiday season sale")) < 0.5
    for q in QUERIES:
        assert nudges_for(eng.ix, eng.parse(q), None) is None
        assert _hits(eng, q) == base[q]


def test_session_boost_decays_with_a_half_life_and_is_capped(code):
    root, db = code
    now = [1000.0]
    s = Session(clock=lambda: now[0])
    key = "py:shop.pricing.price_of"
    eng = Engine(Index.open(db, readonly=True))
    nid = eng.ix.node_by_key(key)
    before = {h["key"]: h for h in _hits(eng, "cart total price")}
    s.open(nid)
    s.open(nid)                                                 # twice: still capped at w = 1
    assert s.weights() == {nid: 1.0}
    got = {h["key"]: h for h in _hits(eng, "cart total price", s)}
    assert got[key]["adjustments"]["session"] == pytest.approx(1.2)
    assert got[key]["score"] == pytest.approx(before[key]["score"] * 1.2, abs=1e-5)
    assert all("session" not in h["adjustments"] for k, h in got.items() if k != key)
    now[0] += 180.0 * 3                                         # three half-lives: 2 x 0.125 = 0.25
    assert s.weights()[nid] == pytest.approx(0.25)
    got = {h["key"]: h for h in _hits(eng, "cart total price", s)}
    assert got[key]["adjustments"]["session"] == pytest.approx(1.05)
    now[0] += 180.0 * 20
    assert s.weights() == {} and nudges_for(eng.ix, eng.parse("cart total price"), s) is None


def test_feedback_nudges_similar_queries_and_expires_when_the_node_changes(code, capsys):
    root, db = code
    q = "price of one item in the cart"
    assert main(["feedback", q, "shop.pricing.price_of", "--useful", "--db", str(db), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["node"] == "py:shop.pricing.price_of" and row["useful"] is True
    eng = Engine(Index.open(db, readonly=True))
    nid = eng.ix.node_by_key("py:shop.pricing.price_of")
    assert nudges_for(eng.ix, eng.parse(q)).factors == {"feedback": {nid: 1.5}}
    similar = "the price of one item in a cart"                 # same analysed terms
    assert nudges_for(eng.ix, eng.parse(similar)).factors == {"feedback": {nid: 1.5}}
    near = "price of one cart item, quickly"                    # 4 of 5 terms shared: s = 0.8
    assert nudges_for(eng.ix, eng.parse(near)).factors["feedback"][nid] == pytest.approx(1.4)
    assert nudges_for(eng.ix, eng.parse("apply discount rules")) is None
    hit = next(h for h in _hits(eng, q) if h["key"] == "py:shop.pricing.price_of")
    assert hit["adjustments"]["feedback"] == 1.5

    assert main(["feedback", q, "shop.pricing.price_of", "--not-useful", "--db", str(db), "-q"]) == 0
    assert nudges_for(eng.ix, eng.parse(q)).factors == {"feedback": {nid: 0.5}}           # replaced, not added
    assert eng.ix.conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 1

    src = root / "shop/pricing.py"                              # the node's text changes: expired
    src.write_text(src.read_text().replace("return item.price", "return item.price * item.count"))
    index_paths(db, [str(root)], IndexOptions(steps=("text", "neighbors", "graph")))
    assert nudges_for(eng.ix, eng.parse(q)) is None


def test_feedback_is_not_hidden_by_the_result_cache(code):
    root, db = code
    eng = Engine(Index.open(db, readonly=True))
    q = "price of one item in the cart"
    first = eng.search(q, SearchOptions(k=5, use_cache=True))
    assert not first.cached and eng.search(q, SearchOptions(k=5, use_cache=True)).cached
    with Index.open(db) as w:
        record(w, q, {"key": "py:shop.cart.Cart.add_item"}, False)
    again = eng.search(q, SearchOptions(k=5, use_cache=True))
    assert not again.cached
    assert any(h.adjustments.get("feedback") == 0.5 for h in again.hits)


def test_feedback_command_errors(code, tmp_path, capsys):
    root, db = code
    assert main(["feedback", "q", "no_such_node", "--useful", "--db", str(db)]) == 5
    assert "no node 'no_such_node'" in capsys.readouterr().err
    assert main(["feedback", "q", "Cart", "--useful", "--db", str(tmp_path / "none.db")]) == 4
    assert "no index at" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["feedback", "q", "Cart", "--db", str(db)])        # --useful or --not-useful is required
    assert e.value.code == 2


def test_feedback_for_an_empty_query_is_a_usage_error(code, capsys):
    root, db = code
    for q in ("", "  \t"):
        assert main(["feedback", q, "Cart", "--useful", "--db", str(db)]) == 2
        assert capsys.readouterr().err == ("error: the query is empty; give the query the node was (not) useful "
                                           "for\n")
    with Index.open(str(db)) as ix:
        assert ix.conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 0
