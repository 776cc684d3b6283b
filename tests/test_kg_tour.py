"""The knowledge-graph side as a demanding user meets it (tour16a): keys with control
characters named back as printed, triples in a `.txt`, the model commands' exit codes, odd
KG inputs. Each test failed before its fix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgsearch.cli import main


def cli(*args) -> int:
    try:
        return main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- keys with control characters
@pytest.fixture
def hostile_keys(tmp_path):
    recs = [{"id": "line\nbreak", "name": "Broken key", "type": "thing", "description": "zebra quartz"},
            {"id": "esc\x1b[31mred", "name": "Red key", "type": "thing", "description": "zebra quartz two"},
            {"id": "b", "name": "Other", "type": "thing", "description": "other"},
            {"source": "line\nbreak", "target": "b", "edge_type": "rel"},
            {"source": "esc\x1b[31mred", "target": "b", "edge_type": "rel"}]
    write(tmp_path / "kg.jsonl", "".join(json.dumps(r) + "\n" for r in recs))
    db = tmp_path / "k.db"
    assert cli("index", tmp_path / "kg.jsonl", "--db", db, "-q") == 0
    return db


def test_a_key_with_a_line_break_is_named_back_as_search_prints_it(hostile_keys, capsys):
    """A KG id "line<LF>break" is printed `kg:line\\nbreak` (so that it cannot start a line of
    its own); `show`, `related`, `path`, `impact` and `why` given that printed key said "no node"
    (exit 5). The rule: a name that matches nothing is tried again with the escapes kgsearch
    prints read back (exact names first, so a key that holds a real backslash still wins)."""
    db = hostile_keys
    capsys.readouterr()
    assert cli("search", "zebra", "--db", db, "-k", "1") == 0
    shown = capsys.readouterr().out.splitlines()[1].split()[0]
    assert shown == "kg:line\\nbreak"
    for command in (["show", shown], ["related", shown], ["path", shown, "kg:b"], ["impact", shown, "--types", "rel"],
                    ["why", "zebra", shown], ["show", "kg:esc\\x1b[31mred"], ["related", "kg:esc\\x1b[31mred"]):
        assert cli(*command, "--db", db) == 0, command
        assert "no node" not in capsys.readouterr().err
    assert cli("show", shown, "--db", db, "--json") == 0
    assert json.loads(capsys.readouterr().out)["node"]["key"] == "kg:line\nbreak"
    assert cli("show", "kg:line\\x41break", "--db", db) == 5     # only the escapes kgsearch prints


def test_an_exact_key_with_a_backslash_wins_over_the_escape(tmp_path, capsys):
    recs = [{"id": "a\\nb", "name": "literal backslash"}, {"id": "a\nb", "name": "real break"}]
    write(tmp_path / "kg.jsonl", "".join(json.dumps(r) + "\n" for r in recs))
    db = tmp_path / "k.db"
    assert cli("index", tmp_path / "kg.jsonl", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("show", "kg:a\\nb", "--db", db, "--json") == 0
    assert json.loads(capsys.readouterr().out)["node"]["name"] == "literal backslash"
    assert cli("show", "kg:a\nb", "--db", db, "--json") == 0
    assert json.loads(capsys.readouterr().out)["node"]["name"] == "real break"
