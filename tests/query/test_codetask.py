"""Code tasks: what makes a query an issue/traceback, its anchors, relation questions, and how
anchors resolve against an index (exactly, weighted by specificity)."""
from __future__ import annotations

import json
import textwrap

import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query.anchors import resolve
from kgsearch.query.codetask import Anchor, asks_for_prose, asks_for_tests, code_task_reason, extract, relation
from kgsearch.query.intent import classify
from kgsearch.query.parse import parse
from kgsearch.store.db import Index

TRACEBACK = '''DateTime fields cannot be used as inner field for List
Traceback (most recent call last):
  File "test-mm.py", line 8, in <module>
    s = MySchema()
  File "/home/u/.venv/lib/python3.6/site-packages/shop/pricing.py", line 5, in apply_discount
    return cart
AttributeError: 'List' object has no attribute 'opts'
'''


def test_traceback_frames_are_anchors_per_file_and_function():
    anchors = extract(TRACEBACK)
    frames = [a for a in anchors if a.kind == "frame"]
    assert [(a.text, a.line, a.func) for a in frames] == [
        ("test-mm.py", 8, None), ("/home/u/.venv/lib/python3.6/site-packages/shop/pricing.py", 5, "apply_discount")]
    kinds = {a.text: a.kind for a in anchors}
    assert kinds["AttributeError"] == "error" and kinds["MySchema"] == "call"
    assert code_task_reason(TRACEBACK) == "traceback"


def test_backticks_dotted_names_and_prose_in_backticks():
    q = "After upgrading, `Dataset.to_json_dict` fails and `WARNING: no number is assigned` shows up in the logs"
    texts = [a.text for a in extract(q)]
    assert "Dataset.to_json_dict" in texts and "to_json_dict" in texts and "Dataset" in texts
    assert not {"no", "number", "assigned", "WARNING"} & set(texts)         # a message, not names
    assert code_task_reason(q) == "names in backticks"


@pytest.mark.parametrize("query", [
    "Regulatory T cells and IL6 signalling in mRNA vaccines reduce inflammation in older adults",   # not code
    "how do I back up my notes every night",
    "parse_args and os.path",                                  # code, but a short query: not an issue
])
def test_prose_and_short_queries_are_not_code_tasks(query):
    assert code_task_reason(query) is None
    assert classify(parse(query)).name not in ("code_task", "relation")


def test_issue_without_backticks_needs_two_code_names():
    one = "The report is wrong when register_hook gets a list of hooks for the response event"
    two = "The report is wrong when register_hook gets a list of hooks and Session.send is called"
    assert code_task_reason(one) is None
    assert code_task_reason(two) == "names code: Session.send, register_hook"
    assert classify(parse(two)).name == "code_task"


@pytest.mark.parametrize("query,want", [
    ("who calls `rwr`?", ("calls", "rwr")), ("what calls parse_headers", ("calls", "parse_headers")),
    ("callers of Engine.search", ("calls", "Engine.search")), ("where is Engine used", ("uses", "Engine")),
    ("who imports kgsearch.store.db", ("imports", "kgsearch.store.db")),
    ("subclasses of Documenter", ("inherits", "Documenter")), ("how do I call the API", None),
])
def test_relation_questions(query, want):
    assert relation(query) == want
    assert (classify(parse(query)).name == "relation") == (want is not None)


def test_asking_for_tests_and_docs_uses_word_boundaries():
    assert asks_for_tests("test add item") and asks_for_tests("the tests of the cart")
    assert not asks_for_tests("pytest --fixtures shows the latest scope")
    assert asks_for_prose("changelog entry for 2.0") and not asks_for_prose("dockerfile layers")


@pytest.fixture
def shop_db(tmp_path):
    files = {
        "shop/__init__.py": "",
        "shop/pricing.py": "def apply_discount(cart):\n    return cart\n\n\ndef get(x):\n    return x\n",
        "shop/cart.py": "from shop.pricing import apply_discount\n\n\nclass Cart:\n    def get(self):\n        return 1\n\n"
                        "    def total(self):\n        return apply_discount(self)\n",
        "shop/util.py": "def get():\n    return 2\n",
    }
    for rel, src in files.items():
        p = tmp_path / "proj" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "proj")], IndexOptions(steps=("text",)))
    return db


def _keys(conn, scores):
    key = dict(conn.execute("SELECT id, key FROM nodes"))
    return {key[n]: round(v, 4) for n, v in scores.items()}


def test_anchors_resolve_exactly_with_specificity(shop_db):
    with Index.open(shop_db, readonly=True) as ix:
        got = _keys(ix.conn, resolve(ix.conn, [Anchor("apply_discount", "backtick"), Anchor("get", "identifier"),
                                               Anchor("Cart.total", "dotted"), Anchor("apply_discounts", "identifier")]))
    assert got["py:shop.pricing.apply_discount"] == 0.8                # one node: the kind's full weight
    assert got["py:shop.cart.Cart.total"] == 0.8                       # dotted: qualname suffix
    # three nodes are named get: each gets 0.6 / (1 + log2 3)
    for k in ("py:shop.pricing.get", "py:shop.cart.Cart.get", "py:shop.util.get"):
        assert got[k] == pytest.approx(round(0.6 / (1 + 1.5849625), 4), abs=1e-4)
    assert not any("discounts" in k for k in got)                       # no fuzzy matching


def test_frame_paths_resolve_by_suffix_to_the_module_and_function(shop_db):
    with Index.open(shop_db, readonly=True) as ix:
        got = _keys(ix.conn, resolve(ix.conn, [a for a in extract(TRACEBACK) if a.kind == "frame"]))
    assert got == {"py:shop.pricing": 1.0, "py:shop.pricing.apply_discount": 1.0}


def test_run_files_show_the_code_task_path(tmp_path):
    """JSON of a code-task search names the intent and the anchors channel (for agents)."""
    from kgsearch.cli import main

    root = tmp_path / "p"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def parse_headers(raw):\n    '''Split raw header lines.'''\n    return raw\n")
    db = tmp_path / "x.db"
    assert main(["index", str(root), "--db", str(db), "-q", "--no-embed"]) == 0
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["search", "parse_headers drops the last line of raw headers when `parse_headers` gets CRLF",
                     "--db", str(db), "--json", "--group", "file"]) == 0
    out = json.loads(buf.getvalue())
    assert out["intent"]["name"] == "code_task" and "anchors" in out["channels_run"]
    assert out["hits"][0]["kind"] == "file" and out["hits"][0]["name"] == "pkg/mod.py"
    assert out["hits"][0]["members"][0]["name"] == "pkg.mod.parse_headers"
