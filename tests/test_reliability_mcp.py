"""Issue 24, what agents pay per MCP call and what they are told: a brief default (``detail``:
the same hits in the same order as ``full``, fewer fields), compact JSON, tool annotations, an
``outputSchema`` every structured result validates against, and errors phrased for an agent."""
from __future__ import annotations

import json
import math
import sqlite3
import sys

import pytest
from conftest import need

from kgsearch.config import shipped_data_dir
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.mcp import TOOLS
from kgsearch.mcp.server import Server

BRIEF_HIT = ["key", "kind", "name", "path", "line", "line_end", "snippet", "score"]
READ_ONLY = {"search", "context", "why", "show", "related", "stats", "path", "impact", "communities"}
CLI_ADVICE = ("--db", "--budget", "--files", "--diff", "--format", "kgsearch search", "try `kgsearch", "pass --")


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    index_paths(db, [str(shipped_data_dir() / "demo")], IndexOptions())
    return db


@pytest.fixture
def code_db(tmp_path):
    root = tmp_path / "proj"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "cart.py").write_text("class Mailer:\n    def send(self):\n        '''Send mail.'''\n"
                                           "        return 1\n\n\nclass Pager:\n    def send(self):\n"
                                           "        '''Send a page.'''\n        return 2\n")
    db = tmp_path / "code.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    return root, db


def call(db, name, args) -> dict:
    return Server(str(db)).call(name, args)


def test_every_tool_is_annotated_and_has_an_output_schema():
    jsonschema = need("jsonschema")
    for t in TOOLS:
        a = t["annotations"]
        assert a["readOnlyHint"] is (t["name"] in READ_ONLY), t["name"]
        assert a["destructiveHint"] is False and a["openWorldHint"] is False
        assert a["idempotentHint"] is True and a["title"] == t["title"]
        schema = t["outputSchema"]
        assert schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_intent_list_lives_in_one_place():
    from kgsearch.mcp import tools

    by = {t["name"]: t for t in TOOLS}
    assert by["search"]["inputSchema"]["properties"]["intent"]["enum"] is tools.INTENT_NAMES


@pytest.mark.parametrize("k", [3, 10])
def test_brief_is_the_default_and_a_projection_of_full(demo_db, k):
    brief = call(demo_db, "search", {"query": "how do I back up my notes", "k": k})
    full = call(demo_db, "search", {"query": "how do I back up my notes", "k": k, "detail": "full"})
    b, f = brief["structuredContent"], full["structuredContent"]
    assert [h["key"] for h in b["hits"]] == [h["key"] for h in f["hits"]] and len(b["hits"]) == k
    for hb, hf in zip(b["hits"], f["hits"]):
        assert list(hb) == BRIEF_HIT
        assert [x for x in hf if x in hb] == list(hb)                 # a subset of full's fields, in its order
        assert {x: hb[x] for x in hb if x != "score"} == {x: hf[x] for x in hb if x != "score"}
        assert abs(hb["score"] - hf["score"]) < 1e-3
    assert [x for x in f if x in b] == list(b) and b["intent"] == {"name": f["intent"]["name"]}
    for res in (brief, full):
        text = res["content"][0]["text"]
        assert "\n" not in text and ": " not in text[:200]            # compact: no indentation, no spaces
        assert json.loads(text) == res["structuredContent"]


def test_search_k10_brief_fits_2000_tokens(demo_db, code_db):
    for db in (demo_db, code_db[1]):
        res = call(db, "search", {"query": "how do I back up my notes" if db == demo_db else "send a page", "k": 10})
        assert tokens(res["content"][0]["text"]) <= 2000
        assert tokens(json.dumps(res["structuredContent"], separators=(",", ":"))) <= 2000


@pytest.mark.parametrize("name, args", [
    ("search", {"query": "backup notes"}), ("search", {"query": "backup notes", "detail": "full"}),
    ("context", {"task": "back up the vault", "budget": 600}), ("why", {"query": "backup", "node": "kg:git"}),
    ("why", {"query": "backup", "node": "kg:git", "detail": "full"}), ("show", {"node": "kg:git"}),
    ("show", {"node": "kg:git", "detail": "full"}), ("related", {"node": "kg:git"}),
    ("related", {"node": "kg:git", "detail": "full"}), ("stats", {}),
])
def test_every_result_validates_against_its_output_schema(demo_db, name, args):
    jsonschema = need("jsonschema")
    res = call(demo_db, name, args)
    assert not res["isError"], res
    schema = next(t["outputSchema"] for t in TOOLS if t["name"] == name)
    jsonschema.validate(res["structuredContent"], schema)


def test_brief_show_and_related_are_smaller(demo_db):
    for name, args in (("show", {"node": "kg:git"}), ("related", {"node": "kg:git"}), ("why", {"query": "backup", "node": "kg:git"})):
        brief = call(demo_db, name, args)["content"][0]["text"]
        full = call(demo_db, name, dict(args, detail="full"))["content"][0]["text"]
        assert len(brief) < len(full), name


# ---------------------------------------------------------------------------- errors for an agent
def agent_error(db, name, args) -> str:
    """The error text of a tool call: no CLI advice for the agent itself; a fix only a person at
    a shell can run (the index is missing or damaged) is named as what to ask the user for."""
    res = call(db, name, args)
    assert res["isError"] is True and "structuredContent" not in res
    text = res["content"][0]["text"]
    if "Ask the user" in text:
        assert "every kgsearch tool fails the same way" in text
    else:
        assert not any(a in text for a in CLI_ADVICE), text
    return text


def test_errors_are_phrased_for_an_agent(code_db, tmp_path):
    root, db = code_db
    assert "call `search`" in agent_error(db, "show", {"node": "nowhere"})
    text = agent_error(db, "show", {"node": "send"})
    assert "py:shop.cart.Mailer.send" in text and "py:shop.cart.Pager.send" in text and "call again" in text
    text = agent_error(db, "context", {"diff": "just some words, no diff"})
    assert "`diff` argument is not a unified diff" in text
    assert "exactly one of task, files, diff" in agent_error(db, "context", {"task": "x", "files": ["a.py"]})
    assert "not in the index" in agent_error(db, "context", {"files": [str(tmp_path / "elsewhere.py")]})
    assert "Ask the user" in agent_error(tmp_path / "none.db", "search", {"query": "x"})


def test_errors_on_a_damaged_or_empty_index_name_what_the_user_runs(code_db, tmp_path):
    from kgsearch.store.db import Index

    root, db = code_db
    with sqlite3.connect(db) as c:
        c.execute("UPDATE blobs SET data = x'00112233'")
    text = agent_error(db, "search", {"query": "send a page"})
    assert "Ask the user" in text and "kgsearch doctor --rebuild" in text
    empty = tmp_path / "empty.db"
    Index.open(empty).close()
    text = agent_error(empty, "search", {"query": "x"})
    assert "Ask the user" in text and "no index run" in text


# ---------------------------------------------------------------------------- the official SDK
def test_the_official_sdk_validates_every_result_and_sees_the_annotations(demo_db):
    mcp = need("mcp")
    import anyio
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "kgsearch", "mcp", "--db", str(demo_db)])
    seen = {}

    async def run():
        async with mcp.Client(params) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            seen["annotations"] = {n: t.annotations.read_only_hint for n, t in listed.items()}
            seen["schemas"] = all(t.output_schema for t in listed.values())
            for detail in ("brief", "full"):
                res = await client.call_tool("search", {"query": "back up my notes", "k": 10, "detail": detail})
                assert not res.is_error, res
                seen[detail] = res.content[0].text
            for name, args in (("show", {"node": "kg:git"}), ("related", {"node": "kg:git"}), ("stats", {}),
                               ("why", {"query": "backup", "node": "kg:git"}), ("context", {"task": "backup"})):
                res = await client.call_tool(name, args)                # validated against outputSchema
                assert not res.is_error, (name, res)

    anyio.run(run)
    assert seen["annotations"]["search"] is True and seen["annotations"]["feedback"] is False
    assert seen["schemas"]
    assert tokens(seen["brief"]) <= 2000 < tokens(seen["full"])


@pytest.mark.parametrize("args", [{"query": "   "}, {"query": "\x00\x00"}, {"query": "\x1b\n\t"}])
def test_a_query_of_blanks_or_nuls_is_an_argument_error(demo_db, args):
    """minLength 1 let "   " and NULs through: the agent got "no results" for a query it never
    wrote (a tool error naming the argument is what it can fix)."""
    res = call(demo_db, "search", args)
    assert res["isError"] is True and "'query'" in res["content"][0]["text"], res

