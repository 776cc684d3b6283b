"""User-flow defects found by an audit (fix10): each test failed before its fix."""
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


@pytest.fixture
def indexed(tmp_path):
    root = tmp_path / "vault"
    write(root / "a.md", "# A\nalpha [[b]]\n")
    write(root / "b.md", "# B\nbravo\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    return root, db


# ---------------------------------------------------------------- 1. related --types unknown
UNKNOWN_TYPE = "error: --types: no edge type 'nope' in this index; it has: links_to\n"


@pytest.mark.parametrize("command", [["related", "md:a"], ["path", "md:a", "md:b"], ["impact", "md:a"],
                                     ["export", "jsonl", "-"]])
def test_an_unknown_edge_type_is_a_usage_error_everywhere(command, indexed, capsys):
    """Before: `related --types nope` exited 5 (not found) with its own wording, while path,
    impact and export exit 2 with this one line."""
    capsys.readouterr()
    assert cli(*command, "--types", "nope", "--db", indexed[1]) == 2
    captured = capsys.readouterr()
    assert captured.err == UNKNOWN_TYPE and captured.out == ""


MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def test_an_unknown_edge_type_is_a_bad_request_over_http_and_a_tool_error_over_mcp(indexed):
    """Before: /api/related answered 404 "no edge type 'nope' in PATH; the index has: ..."; a bad
    parameter is a 400, in the CLI's words. The MCP related tool says the same as path does."""
    from kgsearch.mcp.server import Server
    from kgsearch.serve import App, Holder

    app = App({"i": Holder(indexed[1])})
    st, _, body = app.handle("GET", "/api/related?node=md:a&types=nope", {})
    assert (st, json.loads(body)) == (400, {"error": UNKNOWN_TYPE[len("error: "):-1], "status": 400})
    srv = Server(indexed[1])
    for name, args in (("related", {"node": "md:a", "types": ["nope"]}),
                       ("path", {"source": "md:a", "target": "md:b", "types": ["nope"]})):
        r = srv.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"_meta": MODERN, "name": name, "arguments": args}})
        assert r["result"]["isError"] is True
        assert r["result"]["content"] == [{"type": "text", "text": UNKNOWN_TYPE[:-1]}]
