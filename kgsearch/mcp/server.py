"""``kgsearch mcp``: a Model Context Protocol server on stdio (JSON-RPC 2.0, one message per line),
standard library only.

Protocol revisions: the current one, **2026-07-28** (stateless: every request names its version
in ``params._meta["io.modelcontextprotocol/protocolVersion"]``; ``server/discover`` answers what
the server supports), and the handshake revisions 2025-11-25, 2025-06-18, 2025-03-26 and
2024-11-05 (``initialize`` first; the answer names the client's version when the server has it,
else 2025-11-25). A request for a version the server does not have gets error -32022 with the
supported list, so a client can retry or fall back.

The index is opened read-only (SQLite ``query_only``; the result cache is not used) and reopened
when the file was replaced; a reindex that commits while the server runs is seen by the next
call (WAL readers see each new commit, and the engine's caches follow the index generation).
Only the ``feedback`` tool writes, through a short connection of its own.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import time

from ..errors import BadIndex, KgsearchError, agent_message
from ..lines import one_line
from ..version import __version__
from ..store.damage import ensure_error
from .shapes import brief
from .tools import TOOL_NAMES, TOOLS, ToolError, check_args, filters_of

__all__ = ["Server", "dumps", "error_response", "scrub", "with_notices", "MODERN_VERSIONS", "HANDSHAKE_VERSIONS", "SUPPORTED_VERSIONS"]

log = logging.getLogger(__name__)

MODERN_VERSIONS = ("2026-07-28",)
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SUPPORTED_VERSIONS = MODERN_VERSIONS + HANDSHAKE_VERSIONS
META_VERSION = "io.modelcontextprotocol/protocolVersion"
UNSUPPORTED_VERSION = -32022
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = -32700, -32600, -32601, -32602, -32603
SESSION_IDLE = 3600.0          # seconds: a session handle unused this long is forgotten
MAX_SESSIONS = 256
INSTRUCTIONS = ("kgsearch: offline hybrid search over the indexed notes and code. Use `context` to get what "
                "matters for a task, files or a diff within a token budget; `search` for ranked hits; `show` to "
                "open a node; `related` for its neighbours by edge type; `path` for how two nodes are linked; "
                "`impact` for what depends on a node and which tests reach it; `communities` for the main "
                "topics; `feedback` to mark a hit (not) useful.")
SERVER_INFO = {"name": "kgsearch", "title": "kgsearch", "version": __version__}


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Server:
    """One MCP server on one index; :meth:`handle` answers one decoded JSON-RPC message."""

    def __init__(self, db=None, clock=time.monotonic):
        from ..config import default_db_path

        self.db = os.path.abspath(os.path.expanduser(str(db or default_db_path())))
        self.clock = clock
        self.engine = None
        self._ident = None
        self.legacy_version: str | None = None
        self.sessions: dict[str, object] = {}
        self.tools = TOOLS                              # the schemas it advertises and checks against

    # ------------------------------------------------------------------ the index
    def _engine(self):
        """The engine on the index as it is now: reopened when the file was replaced or appeared."""
        from ..query import Engine
        from ..store.db import Index

        try:
            st = os.stat(self.db)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            ident = None
        if self.engine is None or ident != self._ident:
            if self.engine is not None:
                self.engine.ix.close()
                self.engine = None
            ix = Index.open(self.db, readonly=True)
            ix.conn.execute("PRAGMA query_only=1")
            self.engine, self._ident = Engine(ix), ident
        return self.engine

    def index_paths(self) -> list[str]:
        """The index files a damaged one is looked for among (:func:`~kgsearch.store.damage.ensure_error`)."""
        return [self.db]

    def _session(self, handle: str | None):
        from ..query.feedback import Session

        now = self.clock()
        for k in [k for k, s in self.sessions.items() if now - s.last_used > SESSION_IDLE]:
            del self.sessions[k]
        if handle is None:
            return None
        s = self.sessions.get(handle)
        if s is None:
            if len(self.sessions) >= MAX_SESSIONS:
                del self.sessions[min(self.sessions, key=lambda k: self.sessions[k].last_used)]
            s = self.sessions[handle] = Session(clock=self.clock)
        s.last_used = now
        return s

    # ------------------------------------------------------------------ JSON-RPC
    def handle(self, msg) -> dict | None:
        """The response to one message (``None`` for a notification)."""
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
            rid = msg.get("id") if isinstance(msg, dict) else None
            return error_response(rid, INVALID_REQUEST, "invalid request: expected a JSON-RPC 2.0 object with a method "
                                                "(batches are not part of MCP)")
        if "id" not in msg:
            return None                         # notifications: initialized, cancelled, ... need no answer
        rid = msg["id"]
        try:
            params = scrub(msg.get("params", {}))       # absent: no parameters; null or a list: invalid
            return {"jsonrpc": "2.0", "id": rid, "result": self._dispatch(msg["method"], params)}
        except _RpcError as e:
            return error_response(rid, e.code, e.message, e.data)
        except Exception as e:                  # a bug: answer, keep serving
            log.exception("internal error in %s", msg.get("method"))
            return error_response(rid, INTERNAL, f"internal error {type(e).__name__}: {e}")

    def _dispatch(self, method: str, params) -> dict:
        if not isinstance(params, dict):
            raise _RpcError(INVALID_PARAMS, f"Invalid params: params of {method[:80]} must be an object (or left out), "
                                            f"got {_json_type(params)}")
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        version = meta.get(META_VERSION)
        if method == "initialize":
            asked = params.get("protocolVersion")
            self.legacy_version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
            self.sessions.pop("", None)
            return {"protocolVersion": self.legacy_version, "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": SERVER_INFO, "instructions": INSTRUCTIONS}
        if version is not None:
            if version not in MODERN_VERSIONS:
                raise _RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                                {"supported": list(SUPPORTED_VERSIONS), "requested": version})
            era = "modern"
        elif method == "server/discover":
            era = "modern"
        elif self.legacy_version is not None or method == "ping":
            era = "legacy"
        else:
            raise _RpcError(INVALID_REQUEST, f"no protocol version: put {META_VERSION!r} in params._meta "
                                             f"({', '.join(MODERN_VERSIONS)}) or send initialize first "
                                             f"({', '.join(HANDSHAKE_VERSIONS)})")
        if method == "server/discover":
            res = {"supportedVersions": list(MODERN_VERSIONS), "capabilities": {"tools": {"listChanged": False}},
                   "serverInfo": SERVER_INFO, "instructions": INSTRUCTIONS, "ttlMs": 3600000, "cacheScope": "public",
                   "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}
        elif method == "ping":
            res = {}
        elif method == "tools/list":
            res = {"tools": self.tools}
            if era == "modern":
                res.update(ttlMs=3600000, cacheScope="public")
        elif method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str):
                raise _RpcError(INVALID_PARAMS, f"Invalid params: tools/call needs params.name, a tool name (one of "
                                                f"{', '.join(TOOL_NAMES)}); got "
                                                f"{_json_type(name, 'null' if 'name' in params else 'nothing')}")
            if name not in TOOL_NAMES:
                raise _RpcError(INVALID_PARAMS, f"Unknown tool: {name[:80]}; the tools are {', '.join(TOOL_NAMES)}")
            if "arguments" in params and not isinstance(params["arguments"], dict):
                raise _RpcError(INVALID_PARAMS, f"Invalid params: params.arguments of tools/call must be an object "
                                                f"(the tool's arguments, or left out), got "
                                                f"{_json_type(params['arguments'])}")
            res = self.call(name, params.get("arguments"), legacy=era == "legacy")
        else:
            raise _RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if era == "modern":
            res = dict(res, resultType="complete")
        return res

    def _for_agent(self, e: BaseException) -> str:
        """An error as the agent should read it (:func:`_for_agent`; several indexes say which)."""
        return _for_agent(e)

    # ------------------------------------------------------------------ tools
    def call(self, name: str, arguments, legacy: bool = False) -> dict:
        """A ``tools/call`` result: content + structuredContent, or ``isError`` with the reason."""
        try:
            args = check_args(name, arguments, self.tools)
            handle = args.get("session", "" if legacy else None)
            text, structured = getattr(self, "tool_" + name)(args, self._session(handle))
        except (ToolError, KgsearchError) as e:
            return {"content": [{"type": "text", "text": f"error: {self._for_agent(e)}"}], "isError": True}
        except sqlite3.DatabaseError as e:              # a damaged file met past the engine's own mapping
            mapped = ensure_error(e, self.index_paths())
            if mapped is None:
                raise
            return {"content": [{"type": "text", "text": f"error: {self._for_agent(mapped)}"}], "isError": True}
        out = {"content": [{"type": "text", "text": text}], "isError": False}
        if structured is not None:
            out["structuredContent"] = structured
        return out

    def tool_search(self, a: dict, session):
        from ..query import SearchOptions

        opts = SearchOptions(k=a["k"], intent=a.get("intent"), fusion=a.get("fusion"), channels=a.get("channels"),
                             use_cache=False, filters=filters_of(a), correct=a.get("correct", True))
        d = self._engine().search(a["query"], opts, session=session).as_dict()
        return answer("search", a, d)

    def tool_context(self, a: dict, session):
        from ..context import ContextOptions, build_context
        from ..context.diff import git_diff, parse_given

        eng = self._engine()
        diff = a.get("diff")
        changes = None
        if diff is not None:
            changes = git_diff(eng.ix.meta_json("roots", [])) if diff.strip() == "git" else parse_given(diff)
        from ..query import SearchOptions
        res = build_context(eng, task=a.get("task"), files=a.get("files"), diff=changes, session=session,
                            opts=ContextOptions(budget=a["budget"], fmt=a["format"], impact=a.get("impact"),
                                                search=SearchOptions(use_cache=False, filters=filters_of(a))))
        d = res.as_dict()
        d.pop("text")
        return with_notices(res.text, res.format, res.notices), d

    def tool_why(self, a: dict, session):
        from ..query import SearchOptions, why

        d = why(a["query"], a["node"], options=SearchOptions(k=a["k"], use_cache=False, filters=filters_of(a)),
                engine=self._engine())
        return answer("why", a, d)

    def tool_show(self, a: dict, session):
        from ..stats import show_node

        d = show_node(self._engine().ix, a["node"], limit=a["edges"])
        d["node"] = {k: (v.hex() if isinstance(v, bytes) else v) for k, v in d["node"].items()}
        if session is not None:
            session.open(d["node"]["id"])
        return answer("show", a, d)

    def tool_related(self, a: dict, session):
        from ..stats import related_nodes

        d = related_nodes(self._engine().ix, a["node"], a.get("types"), a["direction"], a["limit"])
        return answer("related", a, d)

    def tool_stats(self, a: dict, session):
        from ..stats import index_stats

        d = index_stats(self._engine().ix)
        return dumps(d), d

    def tool_path(self, a: dict, session):
        from ..explore import find_paths

        d = find_paths(self._engine().ix, a["source"], a["target"], k=a["k"], max_len=a["max_len"],
                       types=a.get("types"), direction=a["direction"])
        return dumps(d), d

    def tool_impact(self, a: dict, session):
        from ..explore import impact

        d = impact(self._engine().ix, a["node"], depth=a["depth"], types=a.get("types"), tests=a["tests"],
                   limit=a["limit"])
        return dumps(d), d

    def tool_communities(self, a: dict, session):
        from ..explore import communities

        d = communities(self._engine().ix, limit=a["limit"], terms=a["terms"])
        return dumps(d), d

    def tool_feedback(self, a: dict, session):
        from ..query.feedback import record
        from ..stats import find_node
        from ..store.db import Index

        self._engine()                                   # the same index must exist and be current
        with Index.open(self.db, create=False) as ix:
            d = record(ix, a["query"], find_node(ix, a["node"]), a["useful"])
        return dumps(d), d


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(value):
    """``value`` (decoded JSON) with every lone surrogate in its strings (``"\\ud800"`` is valid
    JSON) replaced by U+FFFD: no string handed to SQLite, the index or the answer can hold one
    (UTF-8 has no encoding for it: SQLite's binding and the answer's encoding raised)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _has_surrogate(value) else value
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def with_notices(text: str, fmt: str, notices) -> str:
    """A ``context`` answer's text with its notices (a file not indexed, the filters' effect), as
    the CLI prints them on stderr: an agent reads the text, not only the structured content."""
    notices = [str(n) for n in notices or () if n]
    if not notices:
        return text
    if fmt == "json":
        try:
            d = json.loads(text)
        except ValueError:
            return text
        d["notices"] = notices
        return json.dumps(d, ensure_ascii=False) + "\n"
    if fmt == "xml":
        from ..context.render import quoteattr

        tail = "</context>\n"
        notes = "".join(f"<notice text={quoteattr(n)}/>\n" for n in notices)
        return text[:-len(tail)] + notes + tail if text.endswith(tail) else text + notes
    return text.rstrip("\n") + "\n\n" + "".join(f"note: {one_line(n)}\n" for n in notices)


def _json_type(value, missing: str = "null") -> str:
    """What a JSON value is, for an error message: ``null``, ``an array``, ``a string``, ..."""
    if value is None:
        return missing
    for t, name in ((bool, "a boolean"), (dict, "an object"), (list, "an array"), (str, "a string"),
                    ((int, float), "a number")):
        if isinstance(value, t):
            return name
    return type(value).__name__


def dumps(d) -> str:
    """Compact JSON (no indentation: an agent pays per character)."""
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"), default=str)


def answer(tool: str, a: dict, d: dict):
    """(text, structured) of a tool's answer in the detail asked for (``brief`` by default)."""
    if a.get("detail", "brief") != "full":
        d = brief(tool, d)
    return dumps(d), d


def _for_agent(e: BaseException) -> str:
    """An error as an agent should read it: the tool's own words for bad arguments and missing
    nodes; for an index that cannot be used (missing, damaged, never built), that no tool will
    work until the user runs the fix the message names."""
    if isinstance(e, BadIndex) and not getattr(e, "agent", None):
        return (f"the kgsearch index cannot be used: {e}. Ask the user to run the fix this names; "
                f"every kgsearch tool fails the same way until then")
    return agent_message(e)


def error_response(rid, code: int, message: str, data=None) -> dict:
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}
