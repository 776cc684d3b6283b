"""``kgsearch context``: a chunked document's indexed text is the opening of its first chunk, so
packing the document beside that chunk showed the same text twice. The one whose packed form
holds the other's whole text stays; the other is listed as cut, saying where its text is."""
from __future__ import annotations

import json

from kgsearch.context import ContextOptions, build_context
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine
from kgsearch.store.db import Index

PARAS = ["Flux capacitor maintenance. Calibrate the flux capacitor before each run; a drift over two percent "
         "means the coils need cleaning.",
         "Cleaning the coils: switch the unit off, wait ten minutes, then wipe each coil with a dry cloth."]
PARAS += [f"Section {i}. " + " ".join(["Routine checks of the cooling loop, the fans and the cables."] * 6)
          for i in range(6)]
OTHER = "A short note about garden hoses and calibration of sprinklers."


def _engine(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.txt").write_text("\n\n".join(PARAS) + "\n", encoding="utf-8")
    (docs / "other.txt").write_text(OTHER + "\n", encoding="utf-8")
    db = tmp_path / "ix.db"
    index_paths(db, [str(docs)], IndexOptions(steps=("text",)))
    return Engine(Index.open(db, readonly=True))


def test_a_document_is_not_packed_beside_the_chunk_that_shows_its_text(tmp_path):
    engine = _engine(tmp_path)
    chunks = {k: t for k, t in engine.ix.conn.execute(
        "SELECT key, kgtext(text) FROM nodes WHERE key LIKE 'txt:manual.txt%'")}
    assert chunks["txt:manual.txt#1"].startswith(chunks["txt:manual.txt"])     # the premise: the same text
    res = build_context(engine, task="calibrate the flux capacitor", opts=ContextOptions(budget=2000))
    assert res.text == (
        "### manual.txt:1-9 · chunk manual.txt\n"
        "```\n" + "\n\n".join(PARAS[:5]) + "\n```\n\n"
        f"### other.txt:1 · document {OTHER}\n"
        f"```\n{OTHER}\n```\n\n"
        "Cut:\n"
        "- txt:manual.txt: its text is in txt:manual.txt#1, already packed\n")
    assert [(c["key"], c["tokens"]) for c in res.cut] == [("txt:manual.txt", 0)]


def test_a_document_ranked_below_its_packed_chunk_is_dropped(tmp_path):
    """The other order: the chunk is in first, the document does not go in after it (JSON too)."""
    engine = _engine(tmp_path)
    res = build_context(engine, task="routine checks of the cooling loop fans and cables flux",
                        opts=ContextOptions(budget=4000, fmt="json"))
    keys = [it["key"] for it in res.items]
    assert "txt:manual.txt#1" in keys and "txt:manual.txt" not in keys, keys
    out = json.loads(res.text)
    assert {"key": "txt:manual.txt", "reason": "its text is in txt:manual.txt#1, already packed", "tokens": 0} \
        in out["cut"]


def test_only_a_whole_text_at_a_line_start_counts_as_shown():
    """The packer on hand-made items: a note whose text is the start of a word in its section
    (``Guide`` in ``Guidelines``) is not shown by it; a document whose text opens its chunk is."""
    from kgsearch.context.pack import Form, Item, pack
    from kgsearch.context.render import renderer

    def item(key, kind, text, score, parent=None):
        return Item(id=hash(key) % 1000, key=key, kind=kind, name=key, path="a.md", line_start=1, line_end=9,
                    score=score, reason="rank", forms=[Form("full", text), Form("ref", "")], parent=parent)

    r = renderer("markdown", {"query": "q", "mode": "task", "budget": 500})
    note = item("md:a", "note", "Guide", 2.0)
    sec = item("md:a#guide", "section", "Guidelines for the flux capacitor.", 1.0, parent="md:a")
    p = pack([note, sec], 500, r.cost)
    assert [it.key for it, _, _ in p.chosen] == ["md:a", "md:a#guide"] and p.cut == []
    doc = item("txt:a", "document", "Flux capacitor manual.", 2.0)
    chunk = item("txt:a#1", "chunk", "Flux capacitor manual.\n\nCalibrate it before each run.", 1.0, parent="txt:a")
    p = pack([doc, chunk], 500, r.cost)
    assert [it.key for it, _, _ in p.chosen] == ["txt:a#1"]
    assert [(c.key, c.reason) for c in p.cut] == [("txt:a", "its text is in txt:a#1, already packed")]
    assert r.render(p)[0] == ("### a.md:1-9 · chunk txt:a#1\n```\nFlux capacitor manual.\n\nCalibrate it before each run.\n"
                              "```\n\nCut:\n- txt:a: its text is in txt:a#1, already packed\n")
