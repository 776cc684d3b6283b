"""Shared fixtures of the query-stage tests: a stand-in engine with hand-made channel scores (for
the signal table), a stand-in graph context over a hand-made graph (for the graph stage), and a
small real index of code, tests, docs, vendored code and notes (for the adjustments and hits)."""
from __future__ import annotations

import sqlite3
import textwrap

import numpy as np
import pytest

from kgsearch.query.tuning import TUNING


class FakeEngine:
    """What :class:`kgsearch.query.signals.Signals` asks of an engine: ``full`` (every node's score:
    ``fulls[name] = (ids, scores, population)``) and ``fill`` (``fills[name] = {id: score}``)."""

    def __init__(self, fulls=None, fills=None, tuning=TUNING):
        self.fulls, self.fills, self.tuning = fulls or {}, fills or {}, tuning
        self.calls: list[tuple] = []

    def full(self, name, q, kwargs):
        self.calls.append(("full", name))
        f = self.fulls.get(name)
        return None if f is None else (np.asarray(f[0], np.int64), np.asarray(f[1], np.float64), f[2])

    def fill(self, name, q, ids, kwargs):
        self.calls.append(("fill", name, tuple(int(i) for i in ids)))
        table = self.fills.get(name)
        if table is None:
            return None
        return np.array([table.get(int(i), 0.0) for i in ids], dtype=np.float64)


def arrays(pairs):
    """``{id: score}`` -> (ids int64, scores float64) best first (a channel's answer)."""
    items = sorted(pairs.items(), key=lambda p: (-p[1], p[0]))
    return np.array([i for i, _ in items], np.int64), np.array([s for _, s in items], np.float64)


@pytest.fixture
def fake_engine():
    return FakeEngine


class FakeGraphContext:
    """A graph context over ``graph`` whose positions are the node ids, with fixed answers for
    the walk and the entity channels, recording what it was asked."""

    def __init__(self, graph, walk=None, local=None, glob=None, keys=None):
        self.graph, self._walk = graph, walk or {}
        self._local, self._glob = local or {}, glob or {}
        self.asked: list[tuple] = []
        self.ix = type("Ix", (), {"cached": lambda ix, name, build: build()})()
        self.ix.conn = sqlite3.connect(":memory:")
        self.ix.conn.execute("CREATE TABLE nodes(id INTEGER PRIMARY KEY, key TEXT, kind TEXT, "
                             "flags INTEGER NOT NULL DEFAULT 0, parent_id INTEGER)")
        self.ix.conn.execute("CREATE TABLE files(loader TEXT, nodes INTEGER)")   # (no code file: no part)
        self.ix.conn.executemany("INSERT INTO nodes(id, key) VALUES (?, ?)",
                                 [(i, (keys or {}).get(i, f"k{i:03d}")) for i in range(graph.n)])

    def positions(self, ids):
        ids = np.asarray(ids, np.int64)
        return np.where((ids >= 0) & (ids < self.graph.n), ids, -1)

    def ids_of(self, pos):
        return np.asarray(pos, np.int64)

    def walk(self, seed_pos, seed_w, restart=0.2, prune=None, skip=(), skip_at=((), ())):
        self.asked.append(("walk", tuple(np.asarray(seed_pos).tolist())))
        self.walk_skip = (tuple(skip), skip_at)
        return dict(self._walk)

    def type_ids(self, names):
        return [self.graph.etype_names.index(t) for t in names if t in self.graph.etype_names]

    def entity_channels(self, text, depth, want_local=True, want_global=True, words=None):
        self.asked.append(("entities", tuple(words or ())))
        return (dict(self._local) if want_local else {}), (dict(self._glob) if want_global else {})

    def pagerank_at(self, pos):
        return np.ones(len(pos))

    def hits_adjust(self, pos, seed_pos, pvec):
        return np.zeros(len(pos))


@pytest.fixture
def fake_graph_context():
    return FakeGraphContext


MIXED = {
    "src/shop/cart.py": '''\
        """The shopping cart."""


        def cart_total(cart):
            """Total price of the cart."""
            return sum(cart)
        ''',
    "tests/test_cart.py": '''\
        def test_cart_total():
            """The cart total adds prices."""
            assert True
        ''',
    "docs/example_cart.py": '''\
        def example_cart_total():
            """An example: the cart total."""
            return 1
        ''',
    "vendor/lib/cart.py": '''\
        def cart_total(cart):
            """Vendored cart total."""
            return 0
        ''',
    "notes/cart.md": "# Cart notes\n\nThe cart total is the sum of prices. #cart\n\n## Totals\n\nMore about the cart total.\n",
    "CHANGELOG.md": "# Changelog\n\nThe cart total is fixed.\n",
}


@pytest.fixture(scope="package")
def mixed_db(tmp_path_factory):
    """Source, test, docs and vendored code, a note with a section and a tag, a changelog."""
    from kgsearch.indexer import IndexOptions, index_paths

    root = tmp_path_factory.mktemp("mixed")
    for rel, src in MIXED.items():
        p = root / "proj" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    db = root / "i.db"
    index_paths(db, [str(root / "proj")], IndexOptions(steps=("text",)))
    return db
