"""``kgsearch mcp`` end to end over stdio: a plain JSON-RPC client (standard library, always runs)
and the official MCP Python SDK as a real client (test extra ``mcp``; both of its connection
modes). Tools listed with schemas, each one called, tool errors for bad arguments, protocol
errors, parity of ``search`` with ``kgsearch search --json``, sessions, and a reindex (and a
replaced index file) picked up while the server runs."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import MCP_MODERN, SHOP, write_files

from kgsearch.cli import main
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.mcp import TOOLS

FILES = {
    **SHOP,
    "notes/pricing.md": "# Pricing\n\nDiscounts apply at checkout, see [[cart]].\n",
    "notes/cart.md": "# Cart\n\nThe cart holds the items.\n",
}
STEPS = IndexOptions(steps=("text", "neighbors", "graph"))
TOOL_NAMES = ["search", "context", "why", "show", "related", "stats", "feedback", "path", "impact", "communities"]


@pytest.fixture
def proj(tmp_path):
    root = tmp_path / "proj"
    write_files(root, FILES)
    db = tmp_path / "proj.db"
    index_paths(db, [str(root)], STEPS)
    return root, db


class Stdio:
    """A minimal MCP client: one JSON object per line each way."""

    def __init__(self, db):
        self.p = subprocess.Popen([sys.executable, "-m", "kgsearch", "mcp", "--db", str(db)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.n = 0

    def send(self, method, params=None, notify=False, raw=None):
        if raw is not None:
            self.p.stdin.write(raw + "\n")
            self.p.stdin.flush()
            return json.loads(self.p.stdout.readline())
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self.n += 1
            msg["id"] = self.n
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        if notify:
            return None
        resp = json.loads(self.p.stdout.readline())
        assert resp["id"] == self.n
        return resp

    def call(self, name, args, meta=None):
        params = {"name": name, "arguments": args}
        if meta:
            params["_meta"] = meta
        return self.send("tools/call", params)["result"]

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=30)
        self.p.stdout.close()
        self.p.stderr.close()
        return rc


def _search_json(db, query, k):
    import io
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["search", query, "--db", str(db), "-k", str(k), "--json", "--no-cache", "-q"]) == 0
    return json.loads(buf.getvalue())


def _comparable(d):
    """Everything but the run's own facts: how long it took and whether the cache answered."""
    return {k: v for k, v in d.items() if k not in ("timings_ms", "cached")}


def test_stdlib_client_legacy_handshake_every_tool_and_errors(proj):
    root, db = proj
    c = Stdio(db)
    try:
        r = c.send("tools/list")                                # neither initialize nor _meta version
        assert r["error"]["code"] == -32600 and "initialize" in r["error"]["message"]
        r = c.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}})["result"]
        assert r["protocolVersion"] == "2025-06-18" and r["capabilities"]["tools"] == {"listChanged": False}
        assert c.send("notifications/initialized", notify=True) is None
        tools = c.send("tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == TOOL_NAMES
        assert all(t["inputSchema"]["type"] == "object" and t["description"] for t in tools)

        res = c.call("search", {"query": "apply discount", "k": 3, "detail": "full"})
        assert res["isError"] is False
        assert _comparable(res["structuredContent"]) == _comparable(_search_json(db, "apply discount", 3))
        assert json.loads(res["content"][0]["text"]) == res["structuredContent"]

        res = c.call("context", {"task": "apply the discount", "budget": 200})
        assert not res["isError"] and res["content"][0]["text"].startswith("### shop/pricing.py:4-6")
        assert res["structuredContent"]["used"] <= 200
        res = c.call("context", {"files": [str(root / "shop/pricing.py")], "format": "json"})
        keys = [i["key"] for i in json.loads(res["content"][0]["text"])["items"]]
        assert "py:shop.cart.Cart.add_item" in keys                 # a caller at distance 1
        res = c.call("why", {"query": "apply discount", "node": "apply_discount"})
        assert res["structuredContent"]["rank"] == 1
        res = c.call("show", {"node": "py:shop.cart.Cart"})
        assert res["structuredContent"]["node"]["key"] == "py:shop.cart.Cart"
        res = c.call("related", {"node": "apply_discount", "types": ["calls"]})
        assert res["structuredContent"]["edges"]["calls"][0]["key"] == "py:shop.cart.Cart.add_item"
        assert res["structuredContent"]["edges"]["calls"][0]["direction"] == "in"
        res = c.call("stats", {})
        assert res["structuredContent"]["nodes"] > 5
        res = c.call("feedback", {"query": "apply discount", "node": "py:shop.cart.Cart", "useful": False})
        assert res["structuredContent"]["useful"] is False

        # the connection is the session of a handshake client: Cart was opened with show above
        full = {"query": "cart items", "k": 5, "detail": "full"}
        hit = next(h for h in c.call("search", full)["structuredContent"]["hits"]
                   if h["key"] == "py:shop.cart.Cart")
        assert 1.19 < hit["adjustments"]["session"] <= 1.2

        for name, args, needle in [("search", {"query": "x", "k": 0}, "bad argument 'k'"),
                                   ("search", {}, "missing argument 'query'"),
                                   ("search", {"query": "x", "colour": 1}, "unknown argument 'colour'"),
                                   ("context", {"task": "x", "files": ["a.py"]}, "exactly one"),
                                   ("context", {"task": "x", "format": "yaml"}, "bad argument 'format'"),
                                   ("show", {"node": "nope"}, "no node 'nope'"),
                                   ("related", {"node": "Cart", "types": ["bogus"]}, "no edge type 'bogus'"),
                                   ("feedback", {"query": "q", "node": "Cart", "useful": "yes"}, "bad argument 'useful'")]:
            res = c.call(name, args)
            assert res["isError"] is True and needle in res["content"][0]["text"], (name, res)
        r = c.send("tools/call", {"name": "nope", "arguments": {}})
        assert r["error"]["code"] == -32602 and "Unknown tool: nope" in r["error"]["message"]
        assert c.send("resources/list")["error"]["code"] == -32601
        assert c.send(None, raw="{not json")["error"]["code"] == -32700
        assert c.send(None, raw="[1, 2]")["error"]["code"] == -32600
    finally:
        assert c.close() == 0


def test_stdlib_client_modern_requests_sessions_and_a_reindex(proj):
    root, db = proj
    c = Stdio(db)
    try:
        r = c.send("server/discover", {"_meta": MCP_MODERN})["result"]
        assert r["supportedVersions"] == ["2026-07-28"] and r["resultType"] == "complete"
        assert r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "kgsearch"
        r = c.send("tools/list", {"_meta": dict(MCP_MODERN, **{"io.modelcontextprotocol/protocolVersion": "2020-01-01"})})
        assert r["error"]["code"] == -32022 and "2025-11-25" in r["error"]["data"]["supported"]
        lst = c.send("tools/list", {"_meta": MCP_MODERN})["result"]
        assert lst["resultType"] == "complete" and lst["cacheScope"] == "public" and len(lst["tools"]) == len(TOOL_NAMES)

        # stateless: no session unless the call names one
        c.call("show", {"node": "py:shop.cart.Cart", "session": "s1"}, MCP_MODERN)
        hits = {h["key"]: h for h in c.call("search", {"query": "cart items", "k": 5, "detail": "full"},
                                            MCP_MODERN)["structuredContent"]["hits"]}
        assert "session" not in hits["py:shop.cart.Cart"]["adjustments"]
        ask = {"query": "cart items", "k": 5, "session": "s1", "detail": "full"}
        hits = {h["key"]: h for h in c.call("search", ask, MCP_MODERN)["structuredContent"]["hits"]}
        assert hits["py:shop.cart.Cart"]["adjustments"]["session"] > 1.19

        # a reindex (as cron would run it) while the server runs
        (root / "shop/tax.py").write_text('def vat_rate(country):\n    """Value added tax rate."""\n    return 0.2\n')
        index_paths(db, [str(root)], STEPS)
        res = c.call("search", {"query": "value added tax rate", "k": 3}, MCP_MODERN)
        assert res["structuredContent"]["hits"][0]["key"] == "py:shop.tax.vat_rate"
        # the index file replaced by a fresh build
        for suffix in ("", "-wal", "-shm"):
            p = db.parent / (db.name + suffix)
            if p.exists():
                p.unlink()
        (root / "shop/ship.py").write_text('def shipping_cost(weight):\n    """Parcel shipping cost."""\n    return 5\n')
        res = c.call("stats", {}, MCP_MODERN)
        assert res["isError"] and "no index at" in res["content"][0]["text"]
        index_paths(db, [str(root)], STEPS)
        res = c.call("search", {"query": "parcel shipping cost", "k": 3}, MCP_MODERN)
        assert res["structuredContent"]["hits"][0]["key"] == "py:shop.ship.shipping_cost"
    finally:
        assert c.close() == 0


def test_official_sdk_client_lists_and_calls_every_tool(proj):
    """The official MCP Python SDK (test extra) as a real client over stdio, in its default mode
    (server/discover probe, 2026-07-28) and in legacy mode (initialize handshake)."""
    mcp = pytest.importorskip("mcp", reason="the official MCP SDK is in the test extra: pip install -e '.[test]'")
    import anyio
    from mcp.client.stdio import StdioServerParameters

    root, db = proj
    params = StdioServerParameters(command=sys.executable, args=["-m", "kgsearch", "mcp", "--db", str(db)])
    calls = {"search": {"query": "apply discount", "k": 3, "detail": "full"},
             "context": {"task": "apply the discount", "budget": 300},
             "why": {"query": "apply discount", "node": "apply_discount"},
             "show": {"node": "Cart"},
             "related": {"node": "apply_discount"},
             "stats": {},
             "feedback": {"query": "apply discount", "node": "Cart", "useful": True}}
    seen = {}

    async def run(mode):
        async with mcp.Client(params, mode=mode) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == TOOL_NAMES
            for name, args in calls.items():
                res = await client.call_tool(name, args)
                assert not res.is_error, (mode, name, res)
                assert res.content[0].type == "text" and res.content[0].text
                seen[(mode, name)] = res.structured_content
            bad = await client.call_tool("search", {"query": "x", "k": "many"})
            assert bad.is_error and "bad argument 'k'" in bad.content[0].text
            return client

    for mode in ("auto", "legacy"):
        anyio.run(run, mode)
    assert _comparable(seen[("auto", "search")]) == _comparable(_search_json(db, "apply discount", 3))
    assert seen[("auto", "context")]["items"][0]["key"] == "py:shop.pricing.apply_discount"


def test_tool_schemas_are_valid_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    for t in TOOLS:
        jsonschema.Draft202012Validator.check_schema(t["inputSchema"])


def test_the_context_tool_says_files_may_be_folders():
    """`context --files DIR/` takes folders (every indexed file under them); the MCP schema said
    nothing of it, so an agent could not know."""
    from kgsearch.mcp.tools import TOOLS

    files = next(t for t in TOOLS if t["name"] == "context")["inputSchema"]["properties"]["files"]
    assert "folders" in files["description"]


def test_an_unknown_argument_is_quoted_as_sent():
    """`unknown argument` showed the name a client sent with repr: a backslash came back doubled."""
    from kgsearch.mcp.tools import ToolError, check_args

    with pytest.raises(ToolError) as e:
        check_args("search", {"query": "x", "a\\b": 1})
    assert str(e.value).startswith("unknown argument 'a\\b' for search; it takes: query, "), str(e.value)
