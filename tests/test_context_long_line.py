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


def test_the_matching_section_is_packed_when_its_note_ranks_on_headings(tmp_path):
    """Search keeps one hit per note; a note ranked on its name and heading list ("Tuning") hid
    its section that holds the matching text, and the pack spent its budget on headings."""
    root = tmp_path / "vault"
    root.mkdir()
    body = "\n".join(f"Filler line {i} about gardening, compost and seasons." for i in range(10))
    secs = [f"## {n}\n\n{body}\n" for n in ("Intro", "Setup", "Usage", "Tuning", "Troubleshooting", "History")]
    secs[3] = "## Tuning\n\nThe flux capacitor needs calibration before each run.\n\n" + body + "\n"
    (root / "guide.md").write_text("# Guide\n\n" + "\n".join(secs), encoding="utf-8")
    for i, w in enumerate(("birds", "trees", "rivers", "stones", "clouds")):
        (root / f"other{i}.md").write_text(f"# Other {i}\n\nSomething about {w}.\n", encoding="utf-8")
    db = tmp_path / "ix.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    engine = Engine(Index.open(db, readonly=True))
    res = build_context(engine, task="guide tuning calibration", opts=ContextOptions(budget=300))
    keys = [it["key"] for it in res.items]
    assert "md:guide#tuning" in keys, keys
    assert "calibration" in res.text
