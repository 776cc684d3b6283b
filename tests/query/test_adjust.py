"""The adjustments after fusion (kgsearch.query.adjust.rank), factor by factor, on a small real
index: source, test, docs and vendored code, notes, a changelog, a tag and an entity."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.query.adjust import rank
from kgsearch.query.feedback import Nudges
from kgsearch.query.intent import make
from kgsearch.query.options import SearchOptions
from kgsearch.query.parse import parse
from kgsearch.query.tuning import TUNING
from kgsearch.store.db import Index

KEYS = ["md:CHANGELOG", "py:docs.example_cart.example_cart_total", "md:notes/cart", "py:shop.cart.cart_total",
        "py:tests.test_cart.test_cart_total", "py:vendor.lib.cart.cart_total", "tag:cart", "ent:cart"]


@pytest.fixture
def conn(mixed_db):
    with Index.open(mixed_db, readonly=True) as ix:
        yield ix.conn


def _rank(conn, text, fused, *, intent="default", code_query=False, k=10, nudges=None, communities_of=None,
          diversity=None):
    by_key = dict(conn.execute("SELECT key, id FROM nodes"))
    cand = np.array(sorted(by_key[k] for k in KEYS), np.int64)
    key_of = {v: k for k, v in by_key.items()}
    f = np.array([fused[key_of[int(i)]] for i in cand], np.float64)
    q = parse(text)
    adjustments: dict = {}
    out, order, meta = rank(conn, cand, f, adjustments, q=q, it=make(q, intent), code_query=code_query,
                            communities_of=communities_of, opts=SearchOptions(k=k, diversity=diversity),
                            tuning=TUNING, nudges=nudges)
    scores = {key_of[int(cand[i])]: round(float(out[i]), 6) for i in range(len(cand))}
    factors = {key_of[int(cand[i])]: float(adjustments["test_or_vendored"][i]) for i in range(len(cand))} \
        if "test_or_vendored" in adjustments else {}
    return [key_of[int(cand[i])] for i in order], scores, factors, adjustments


EVEN = {k: 1.0 for k in KEYS}


def test_prose_query_tests_down_structure_out(conn):
    keys, scores, factors, adj = _rank(conn, "cart total", EVEN)
    assert factors["py:tests.test_cart.test_cart_total"] == TUNING.test_penalty == 0.3
    assert factors["tag:cart"] == factors["ent:cart"] == 0.0             # tags, entities: structure
    assert factors["py:vendor.lib.cart.cart_total"] == 1.0                # not a code query: no code filter
    assert "tag:cart" not in keys and "ent:cart" not in keys
    assert keys[-1] == "py:tests.test_cart.test_cart_total" and len(keys) == 6
    assert "shift" not in adj


def test_asking_for_tests_and_exact_names_keep_them(conn):
    _, _, factors, _ = _rank(conn, "the tests of the cart total", EVEN)
    assert factors.get("py:tests.test_cart.test_cart_total", 1.0) == 1.0
    keys, _, factors, _ = _rank(conn, "cart_total", EVEN, intent="exact_match")
    assert "tag:cart" in keys and factors["tag:cart"] == 1.0              # exact names keep shared nodes
    # a relation question wants every user, tests included; a code task's "tests" is not a request
    _, _, factors, _ = _rank(conn, "who calls cart_total", EVEN, intent="relation")
    assert factors["py:tests.test_cart.test_cart_total"] == 1.0
    _, _, factors, _ = _rank(conn, "the tests of cart_total fail", EVEN, intent="code_task")
    assert factors["py:tests.test_cart.test_cart_total"] == 0.3


def test_a_tests_name_asks_for_it(conn, mixed_db):
    """Searching a test by its name (``test_cart_total``) finds it first: the name asks for tests,
    and test code is not lowered (it was x 0.3, under the source it tests)."""
    import kgsearch
    _, _, factors, _ = _rank(conn, "test_cart_total", EVEN, intent="exact_match")
    assert factors.get("py:tests.test_cart.test_cart_total", 1.0) == 1.0
    hits = kgsearch.search("test_cart_total", db=str(mixed_db), k=3).hits
    assert hits[0].key == "py:tests.test_cart.test_cart_total"


def test_code_query_lowers_vendored_below_docs_and_prose(conn):
    keys, scores, factors, _ = _rank(conn, "cart_total sums the prices", EVEN, code_query=True)
    # vendored code ranks below the project's own code, docs and prose (issue 27 item 5), still reachable
    assert factors["py:vendor.lib.cart.cart_total"] == TUNING.vendored_penalty == 0.1
    assert keys[-1] == "py:vendor.lib.cart.cart_total"
    for k in ("py:docs.example_cart.example_cart_total", "md:notes/cart", "md:CHANGELOG"):
        assert factors[k] == TUNING.nonsource_penalty, k
    assert factors["py:shop.cart.cart_total"] == 1.0 and keys[0] == "py:shop.cart.cart_total"
    # asking for docs keeps docs and prose; a code task applies the filters without a code query
    _, _, factors, _ = _rank(conn, "cart_total in the changelog", EVEN, code_query=True)
    assert factors["md:CHANGELOG"] == 1.0 and factors["py:vendor.lib.cart.cart_total"] == 0.1
    _, _, factors, _ = _rank(conn, "cart_total sums the prices wrongly in the changelog", EVEN, intent="code_task")
    assert factors["md:CHANGELOG"] == 0.3 and factors["py:vendor.lib.cart.cart_total"] == 0.1


def test_negative_scores_shift_so_the_weakest_is_zero(conn):
    fused = {k: float(i) - 3.0 for i, k in enumerate(KEYS)}              # -3 .. 4
    keys, scores, _, adj = _rank(conn, "cart total", fused)
    assert np.allclose(adj["shift"], 3.0)
    assert scores["md:CHANGELOG"] == 0.0 and scores["md:notes/cart"] == 2.0 and scores["py:shop.cart.cart_total"] == 3.0
    assert "md:CHANGELOG" not in keys or keys[-1] == "md:CHANGELOG"


def test_order_k_and_ties(conn):
    fused = {k: 1.0 + 0.1 * i for i, k in enumerate(KEYS)}
    keys, scores, _, _ = _rank(conn, "cart total", fused, k=2)
    assert keys == ["py:vendor.lib.cart.cart_total", "py:shop.cart.cart_total"]


def test_nudges_multiply_after_the_filters(conn):
    by_key = dict(conn.execute("SELECT key, id FROM nodes"))
    nudges = Nudges({"feedback": {by_key["md:notes/cart"]: 1.5}})
    keys, scores, _, adj = _rank(conn, "cart total", EVEN, nudges=nudges)
    assert keys[0] == "md:notes/cart" and scores["md:notes/cart"] == 1.5
    assert "feedback" in adj


def test_diversity_boosts_the_first_hit_of_each_community(conn):
    fused = {k: 1.0 + 0.01 * i for i, k in enumerate(KEYS)}
    by_key = dict(conn.execute("SELECT key, id FROM nodes"))
    comm = {by_key[k]: (0 if k.startswith("py:") else 1) for k in KEYS}
    keys, scores, _, adj = _rank(conn, "cart total", fused, diversity=2.0,
                                 communities_of=lambda ids: np.array([comm[int(i)] for i in ids]))
    # best code node (vendored, 1.05) and best prose node (notes, 1.02) doubled; the rest not
    assert scores["py:vendor.lib.cart.cart_total"] == 2.1 and scores["md:notes/cart"] == 2.04
    assert scores["py:shop.cart.cart_total"] == 1.03
    assert sorted(np.unique(adj["diversity"]).tolist()) == [1.0, 2.0]


@pytest.fixture(scope="module")
def prose_db(tmp_path_factory):
    """60 short documents (a window of candidates well past 4 x k)."""
    import json
    import random

    from kgsearch.indexer import IndexOptions, index_paths

    tmp = tmp_path_factory.mktemp("adjust")
    rng = random.Random(3)
    words = "cart total price tax order basket item shop pay refund invoice stock".split()
    (tmp / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": f"doc {i}", "text": " ".join(
        rng.choice(words) for _ in range(12))}) + "\n" for i in range(60)), encoding="utf-8")
    db = tmp / "p.db"
    index_paths(db, [str(tmp / "corpus.jsonl")], IndexOptions(fmt="beir"))
    return db


def _prose_rank(conn, k, hide=(), monkeypatch=None, family=None):
    import kgsearch.query.adjust as adjust

    read: list[int] = []
    real = adjust.node_meta

    def counting(c, ids, text=True):
        ids = list(ids)
        read.extend(ids)
        out = {n: m for n, m in real(c, ids, text).items() if n not in hide}    # (gone since the flags)
        for n, m in out.items():            # family: {node id: parent key} (sections of one note)
            if family and n in family:
                out[n] = dict(m, kind="section", parent=family[n])
        return out

    monkeypatch.setattr(adjust, "node_meta", counting)
    cand = np.array([i for (i,) in conn.execute("SELECT id FROM nodes WHERE kind = 'doc' ORDER BY id")], np.int64)
    assert len(cand) == 60
    fused = np.linspace(1.0, 2.0, len(cand))[::-1].copy()             # the first candidate best
    q = parse("cart total")
    _, order, meta = rank(conn, cand, fused, {}, q=q, it=make(q, "default"), code_query=False, communities_of=None,
                          opts=SearchOptions(k=k), tuning=TUNING)
    assert all(int(cand[i]) in meta for i in order)
    return [int(cand[i]) for i in order], read, cand


def test_display_fields_read_for_the_collapsed_window_only(prose_db, monkeypatch):
    """rank reads the display fields of as many candidates as collapse to k hits (k when no two
    are one note's), not the whole 4 x k window (nor 4 x max(k, 10) + 50): the same hits."""
    with Index.open(prose_db, readonly=True) as ix:
        hits, read, cand = _prose_rank(ix.conn, 3, monkeypatch=monkeypatch)
        assert hits == cand[:3].tolist()
        assert len(read) == 3                                  # k (was 4 x k = 12, before that 90)


def test_sections_of_one_note_read_on_until_k_notes(prose_db, monkeypatch):
    """Sections of one note collapse to its best one, so reading goes on until k families (and
    never past the 4 x k window): the hits are those of collapsing the whole window."""
    from kgsearch import pack

    with Index.open(prose_db, readonly=True) as ix:
        ids = [i for (i,) in ix.conn.execute("SELECT id FROM nodes WHERE kind = 'doc' ORDER BY id")]
        family = {i: "doc:note" for i in ids[1:6]}            # 2nd-6th best: one note's sections
        hits, read, cand = _prose_rank(ix.conn, 3, monkeypatch=monkeypatch, family=family)
        assert hits == [ids[0], ids[1], ids[6]]
        assert len(read) == 7                                   # 3, then 4 more (2 hits short x 2)
        kinds = ["section" if i in family else "doc" for i in ids[:12]]
        whole = pack.collapse_sections(range(12), [f"doc:{i}" for i in ids[:12]], kinds,
                                       [family.get(i) for i in ids[:12]])
        assert [ids[j] for j in whole[:3]] == hits             # = collapsing the 4 x k window
        hits, read, _ = _prose_rank(ix.conn, 3, monkeypatch=monkeypatch, family={i: "doc:note" for i in ids})
        assert hits == [ids[0]] and len(read) == 12             # one note: the window's end


def test_a_node_gone_since_the_flags_reads_further(prose_db, monkeypatch):
    """A node that vanished between the flags and the display fields (a reindex in between) is
    left out and the next candidates read: the hits are the same as with the whole window."""
    with Index.open(prose_db, readonly=True) as ix:
        ids = [i for (i,) in ix.conn.execute("SELECT id FROM nodes WHERE kind = 'doc' ORDER BY id")]
        gone = set(ids[1:4])
        hits, read, cand = _prose_rank(ix.conn, 3, hide=gone, monkeypatch=monkeypatch)
        assert hits == [ids[0], ids[4], ids[5]]
        assert len(read) == 7                                   # 3 (one left), then 4 more
