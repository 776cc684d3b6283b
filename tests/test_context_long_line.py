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


LINE = " ".join(("alpha", "beta", "gamma", "delta", "omega", "kappa")[(i * 7) % 6] for i in range(16000))
LINE = (LINE[:45000] + " zebrafish " + LINE[45000:])[:90000]     # 22,500 tokens: never packed whole here


def _long_note(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    (root / "long.md").write_text("# Long\n\n" + LINE + "\n", encoding="utf-8")
    (root / "normal.md").write_text("# Normal\n\nA note about fish tanks.\n", encoding="utf-8")
    db = tmp_path / "ix.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    return Engine(Index.open(db, readonly=True))


def _cut(width: int) -> str:
    at = LINE.index("zebrafish") + len("zebrafish") // 2 - width // 2
    return f"[... {at} characters cut] {LINE[at:at + width]} [... {len(LINE) - at - width} characters cut]"


def test_the_window_around_a_long_lines_match_grows_with_the_budget(tmp_path):
    """The window was 1,000 characters at any budget: at 16K tokens the top hit showed 1,000
    characters around its match while the rest of the budget went to nodes that did not match.
    The long lines of a trimmed form now share an eighth of the budget (at least 1,000)."""
    engine = _long_note(tmp_path)
    for budget, width in ((2000, 1000), (16000, 8000)):
        res = build_context(engine, task="zebrafish", opts=ContextOptions(budget=budget))
        assert res.text.startswith(
            "### long.md:1-3 · section Long\n"
            f"_trimmed: first paragraph and 0 matched lines of 1, long lines cut to {width} characters around the match_\n"
            "```markdown\n"
            f"{_cut(width)}\n"
            "```\n\n"), res.text[:300]


def test_the_long_lines_of_one_trimmed_form_share_the_window():
    """Several long matched lines split the window (each keeps at least 1,000 characters), so one
    note's trimmed form never takes more than its share of the budget."""
    from kgsearch.context.pack import trim_prose

    long = ["x " * 2000 + "key" + " y" * 2000 for _ in range(3)]           # 8,003 characters each
    lines = ["# Title", "", "Intro."] + [ln for pair in zip(["", "", ""], long) for ln in pair]

    def cut(width):
        at = 4001 - width // 2
        return f"[... {at} characters cut] {long[0][at:at + width]} [... {8003 - at - width} characters cut]"

    f = trim_prose(lines, ["key"], window=6000)
    assert f.body == "\n".join(["# Title", "", "Intro.", "[... 1 lines cut]", cut(2000), "[... 1 lines cut]",
                                cut(2000), "[... 1 lines cut]", cut(2000)])
    assert f.note == "first paragraph and 3 matched lines of 9, long lines cut to 2000 characters around the match"
    assert trim_prose(lines, ["key"], window=2000).body.split("\n")[4] == cut(1000)
