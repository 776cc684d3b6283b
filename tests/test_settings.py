"""One settings surface (kgsearch.settings): typed, validated, a typo names the nearest key."""
from __future__ import annotations

import pytest

from kgsearch.errors import UsageError
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.settings import IndexSettings
from kgsearch.store.db import Index


def test_defaults_and_sections():
    s = IndexSettings.from_dict({})
    assert (s.text.stemmer, s.text.k1, s.embed.embed, s.graph.graph_communities_drift) == ("porter2", 1.5, True, 0.02)
    s = IndexSettings.from_dict({"k1": "1.2", "embed": "false", "text": {"b": 0.6}, "graph_communities_max_pairs": 10})
    assert (s.text.k1, s.text.b, s.embed.embed, s.graph.graph_communities_max_pairs) == (1.2, 0.6, False, 10)
    assert IndexSettings.coerce(s) is s


@pytest.mark.parametrize("given,message", [
    ({"stemer": "light"}, "unknown setting 'stemer' (did you mean 'stemmer'?)"),
    ({"stemmer": "snowball"}, "unknown stemmer 'snowball'; choose from porter2, light, none"),
    ({"k1": "fast"}, "setting k1='fast' is not a valid float"),
    ({"graph_communities_max_pairs": 1.5}, "not a valid int"),
    ({"edge_weights": [1]}, "edge_weights must be an object"),
])
def test_bad_settings_are_usage_errors(given, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        IndexSettings.from_dict(given)


def test_a_typo_changes_nothing_in_the_index(tmp_path):
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(notes)], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        gen, settings = ix.generation, ix.meta_json("settings")
    with pytest.raises(UsageError, match="did you mean 'stemmer'"):
        index_paths(db, [str(notes)], IndexOptions(steps=("text",), settings={"stemer": "light"}))
    with Index.open(db, readonly=True) as ix:              # no rebuild, nothing remembered
        assert (ix.generation, ix.meta_json("settings")) == (gen, settings)


def test_eval_set_typo_exits_2(tmp_path, capsys):
    from kgsearch.cli import main

    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "t", "text": "alpha"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "alpha"}\n')
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert main(["eval", str(folder), "--set", "stemer=light", "--index-dir", str(tmp_path / "ev")]) == 2
    assert "did you mean 'stemmer'" in capsys.readouterr().err


def test_unknown_step_name_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="unknown derived step"):
        index_paths(tmp_path / "i.db", [str(tmp_path)], IndexOptions(steps=("txet",)))
