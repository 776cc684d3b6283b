"""``kgsearch context``: a note whose matching text is one very long line (a minified export, a
pasted log) is cut around the match, not shown as a bare header while the budget stays unused."""
from __future__ import annotations

from kgsearch.context import ContextOptions, build_context
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine
from kgsearch.store.db import Index


def test_a_long_line_is_cut_around_the_match_so_the_top_hit_fits(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    words = ("alpha", "beta", "gamma", "delta", "omega", "kappa")
    line = " ".join(words[(i * 7) % 6] for i in range(50000))
    line = (line[:50000] + " zebrafish " + line[50000:])[:270000]
    (root / "long.md").write_text("# Long\n\n" + line + "\n", encoding="utf-8")
    (root / "normal.md").write_text("# Normal\n\nA note about fish tanks.\n", encoding="utf-8")
    db = tmp_path / "ix.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    engine = Engine(Index.open(db, readonly=True))
    res = build_context(engine, task="zebrafish", opts=ContextOptions(budget=2000))
    top = res.items[0]
    assert top["key"].startswith("md:long")
    assert top["form"] == "trimmed", res.text[:300]
    assert "zebrafish" in res.text
    assert "characters cut" in res.text           # the cut is visible
    assert res.used <= 2000 and res.used > 200     # the budget is used, not left idle
