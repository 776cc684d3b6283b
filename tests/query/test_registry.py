"""Intents and channels are described once (query/intent.py, query/channels.py); the CLI's
choices and --help and the MCP tool schema are generated from them and must agree."""
from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from kgsearch.cli import build_parser, main
from kgsearch.mcp.tools import TOOLS, check_args
from kgsearch.query.channels import ALL_CHANNELS, CHANNELS, DEFAULT_CHANNELS, GRAPH_CHANNELS, SIGNAL_OF
from kgsearch.query.intent import INTENTS

INTENT_NAMES = ["relation", "exact_match", "code_task", "debugging", "capability_check", "workflow", "comparison",
                "goal_based", "summary", "exploratory", "semantic", "default"]
CHANNEL_NAMES = ["bm25", "prf", "fts", "pattern", "equiv", "anchors", "relation", "dense", "browse", "graph", "intent",
                 "local", "global"]


def _sub(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _option(p: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(a for a in p._actions if flag in a.option_strings)


def test_the_registries():
    assert list(INTENTS) == INTENT_NAMES and list(CHANNELS) == CHANNEL_NAMES == list(ALL_CHANNELS)
    assert set(DEFAULT_CHANNELS) == set(CHANNEL_NAMES) - {"prf"}
    assert GRAPH_CHANNELS == ("graph", "intent", "local", "global")
    assert set(SIGNAL_OF.values()) == {"text", "embedding", "graph", "intent"}
    assert all(s.help for s in INTENTS.values()) and all(c.help for c in CHANNELS.values())


@pytest.mark.parametrize("command", ["search", "why", "eval"])
def test_cli_choices_and_help_come_from_the_registries(command):
    p = _sub(command)
    assert _option(p, "--intent").choices == INTENT_NAMES
    chan_help = _option(p, "--channels").help
    assert ",".join(DEFAULT_CHANNELS) in chan_help and "prf" in chan_help
    text = p.format_help()
    for name, spec in INTENTS.items():
        assert f"  {name}" in text and spec.help in text, name
    for name, ch in CHANNELS.items():
        assert f"  {name}{'*' if ch.default else ''} " in text and ch.help in text, name


def test_search_help_lists_every_intent_and_channel():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        main(["search", "--help"])
    out = buf.getvalue()
    assert all(n in out for n in INTENT_NAMES) and all(n in out for n in CHANNEL_NAMES)


def test_an_unknown_intent_is_a_usage_error_naming_the_choices(capsys):
    with pytest.raises(SystemExit) as e:
        main(["search", "x", "--intent", "nope"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope'" in err and "code_task" in err and "relation" in err


def test_the_mcp_search_schema_comes_from_the_registries():
    schema = next(t for t in TOOLS if t["name"] == "search")["inputSchema"]["properties"]
    assert schema["intent"]["enum"] == INTENT_NAMES
    for name, spec in INTENTS.items():
        assert f"{name}: {spec.help}" in schema["intent"]["description"]
    for name, ch in CHANNELS.items():
        assert f"{name}: {ch.help}" in schema["channels"]["description"]
    assert check_args("search", {"query": "q", "intent": "code_task"})["intent"] == "code_task"
    from kgsearch.mcp.tools import ToolError
    with pytest.raises(ToolError, match="one of relation, exact_match, code_task"):
        check_args("search", {"query": "q", "intent": "nope"})


def test_search_options_accept_exactly_the_registered_channels():
    from kgsearch.errors import UsageError
    from kgsearch.query import SearchOptions

    assert SearchOptions(channels=",".join(CHANNEL_NAMES)).validated().channel_list() == CHANNEL_NAMES
    with pytest.raises(UsageError, match="unknown channel\\(s\\) nope; choose from bm25, prf"):
        SearchOptions(channels="bm25,nope").validated()


def test_the_weights_table_of_docs_ranking_md_is_the_registry():
    """docs/ranking.md's weights table is INTENTS, row for row (a weight tuned in intent.py must be
    tuned in the doc too; the README once showed code_task's weights of before the model change)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "ranking.md").read_text(encoding="utf-8")
    table = text[text.index("| intent | α embedding |"):].split("\n\n", 1)[0].splitlines()[2:]
    rows = {}
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = (tuple(float(c) for c in cells[1:5]), cells[5])
    assert list(rows) == INTENT_NAMES
    for name, spec in INTENTS.items():
        assert rows[name][0] == pytest.approx(spec.weights, abs=0.005), name
        assert rows[name][1] == spec.help, name
    assert all(re.fullmatch(r"0|\.\d\d", c.strip()) for line in table for c in line.strip("|").split("|")[1:5])
