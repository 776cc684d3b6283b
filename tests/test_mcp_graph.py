"""The MCP graph tools (path, impact, communities): schemas with read-only annotations, the
same JSON as the library, and tool errors that name the argument."""
from __future__ import annotations

import json

import pytest
from conftest import MCP_MODERN

from kgsearch.mcp.server import Server
from kgsearch.mcp.tools import TOOLS



@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import IndexOptions, index_paths

    db = tmp_path_factory.mktemp("mcpgraph") / "demo.db"
    index_paths(db, [str(demo_dir())], IndexOptions(steps=("text", "neighbors", "graph")))
    return Server(db), db


def _call(srv, name, args):
    r = srv.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"_meta": MCP_MODERN, "name": name, "arguments": args}})
    return r["result"]


def test_graph_tools_are_listed_read_only():
    by = {t["name"]: t for t in TOOLS}
    for name in ("path", "impact", "communities"):
        t = by[name]
        assert t["annotations"]["readOnlyHint"] is True and t["annotations"]["destructiveHint"] is False
        assert t["inputSchema"]["additionalProperties"] is False
    assert by["path"]["inputSchema"]["required"] == ["source", "target"]
    assert by["impact"]["inputSchema"]["required"] == ["node"]
    assert "impact" in by["context"]["inputSchema"]["properties"]


def test_graph_tools_answer_as_the_library(server):
    from kgsearch.explore import communities, find_paths, impact
    from kgsearch.store.db import Index

    srv, db = server
    with Index.open(db, readonly=True) as ix:
        want_path = find_paths(ix, "kg:git", "kg:syncthing", k=2)
        want_impact = impact(ix, "kg:sqlite", depth=2, tests=True)
        want_comm = communities(ix, limit=3)
    r = _call(srv, "path", {"source": "kg:git", "target": "kg:syncthing", "k": 2})
    assert not r["isError"] and r["structuredContent"] == json.loads(json.dumps(want_path))
    r = _call(srv, "impact", {"node": "kg:sqlite", "depth": 2, "tests": True})
    assert r["structuredContent"] == json.loads(json.dumps(want_impact))
    r = _call(srv, "communities", {"limit": 3})
    got = r["structuredContent"]
    got.pop("seconds"), want_comm.pop("seconds")
    assert got == json.loads(json.dumps(want_comm)) and len(got["communities"]) == 3


def test_graph_tool_errors(server):
    srv, _ = server
    r = _call(srv, "path", {"source": "kg:git", "target": "kg:syncthing", "types": ["nope"]})
    assert r["isError"] and "no edge type 'nope'" in r["content"][0]["text"]
    r = _call(srv, "impact", {"node": "kg:sqlite", "depth": 0})
    assert r["isError"] and "bad argument 'depth'" in r["content"][0]["text"]
    r = _call(srv, "path", {"source": "kg:git"})
    assert r["isError"] and "missing argument 'target'" in r["content"][0]["text"]
    r = _call(srv, "impact", {"node": "no such node"})
    assert r["isError"] and "no node or indexed file" in r["content"][0]["text"]
