"""The MCP tools: a JSON schema each, argument checks that answer with a tool error naming the
argument and what it accepts, and the handlers (search, context, why, show, related, stats,
feedback, path, impact, communities). Every handler returns ``(text, structured)``; :mod:`.server` wraps them in results.

``session`` (any string the agent picks, e.g. a UUID) is the explicit handle of the 2026-07-28
revision for state across calls: nodes opened with ``show`` in that session rank higher in its
later ``search``/``context`` calls (x1.2, half-life 180 s). On a legacy (initialize) connection
the connection is the session when no ``session`` is given.

The ``intent`` enum and the ``channels`` description of ``search`` come from the query side's
registries (:data:`kgsearch.query.intent.INTENTS`, :data:`kgsearch.query.channels.CHANNELS`),
as the CLI's ``--help`` does.
"""
from __future__ import annotations

import json

from ..lines import quoted
from ..query.channels import CHANNELS, DEFAULT_CHANNELS
from ..query.filters import FIELDS
from ..query.intent import INTENTS
from .shapes import DETAILS, OUTPUT_SCHEMAS

__all__ = ["TOOLS", "NODE_TOOLS", "ToolError", "check_args", "tools_over", "INTENT_NAMES"]

# The intent names a search may force: the one list every schema uses (from the intent registry;
# the CLI's --intent choices are the same).
INTENT_NAMES = list(INTENTS)

_SESSION = {"type": "string", "maxLength": 200,
            "description": "optional handle you choose (e.g. a UUID) to group calls: nodes you open with `show` "
                           "rank higher in later searches of the same session (half-life 180 s)"}
_NODE = {"type": "string", "minLength": 1, "description": "node key (e.g. py:pkg.mod.func, md:notes/foo), "
                                                          "qualified name or name"}


_DETAIL = {"type": "string", "enum": DETAILS, "default": "brief",
           "description": "brief (default): the same answer with fewer fields (hits: key, kind, name, path, "
                          "line, line_end, snippet, score); full: every field, every score part"}


def _filter_props() -> dict:
    """The field filters as tool arguments (the same names as the CLI flags, from
    :data:`kgsearch.query.filters.FIELDS`): applied before ranking; they can also be written in the
    query (``kind:function -path:tests/``)."""
    props = {}
    for f in FIELDS.values():
        for flag, help_ in ((f.flag, f.help), (f.exclude_flag, f"leave out what {f.flag[2:]} would keep")):
            if not flag:
                continue
            name = flag[2:].replace("-", "_")
            desc = f"filter before ranking: {help_}"
            props[name] = ({"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
                            "description": desc + " (several: any of them)"} if f.op == ":" else
                           {"type": "string", "minLength": 1, "description": desc})
    return props


FILTER_PROPS = _filter_props()


def filters_of(args: dict) -> tuple:
    """The filter arguments of a search/context/why call as FieldFilter objects (checked; a bad
    value is a usage error the agent is told): each value is taken as given, never re-read as a word."""
    from ..query.filters import from_flags

    return from_flags({k: args.get(k) for k in FILTER_PROPS})


def _schema(props: dict, required: list[str] = ()) -> dict:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


def _annotations(title: str, read_only: bool = True) -> dict:
    """MCP tool annotations: nothing here changes the world outside the index, deletes anything
    or reaches the network; calling a tool twice with the same arguments gives the same answer
    (``feedback`` stores the same row again: its only write)."""
    return {"title": title, "readOnlyHint": read_only, "destructiveHint": False, "idempotentHint": True,
            "openWorldHint": False}


TOOLS = [
    {"name": "search", "title": "Hybrid search",
     "description": "Search the kgsearch index (BM25 + embeddings + graph): ranked hits with key, kind, name, "
                    "path, lines, snippet and score. detail \"full\" gives the JSON of `kgsearch search --json` "
                    "(every channel score and signal part of each hit).",
     "inputSchema": _schema({"query": {"type": "string", "minLength": 1},
                             "k": {"type": "integer", "minimum": 1, "maximum": 200, "default": 10},
                             "intent": {"type": "string", "enum": INTENT_NAMES,
                                        "description": "force an intent (default: chosen from the query): "
                                                       + "; ".join(f"{n}: {s.help}" for n, s in INTENTS.items())},
                             "fusion": {"type": "string", "enum": ["linear", "rrf"]},
                             "channels": {"type": "string",
                                          "description": f"comma-separated channels (default "
                                                         f"{','.join(DEFAULT_CHANNELS)}): "
                                                         + "; ".join(f"{n}: {c.help}" for n, c in CHANNELS.items())},
                             "correct": {"type": "boolean", "default": True,
                                         "description": "replace a word no index holds by a known word one edit "
                                                        "away (bakc -> back; the answer's corrections list them); "
                                                        "false: the words as typed"},
                             "detail": _DETAIL, "session": _SESSION, **FILTER_PROPS}, ["query"])},
    {"name": "context", "title": "Context for a task, files or a diff",
     "description": "Pack the nodes that matter into a token budget (tokens = ceil(characters / 4)): for a task "
                    "text (a search), for files (their symbols plus callers, callees and linked notes) or for a "
                    "diff (the changed symbols, their callers/callees and linked notes). The top node is always "
                    "in; long bodies are trimmed to signature + docstring + matched lines before they are cut; "
                    "the output ends with what was cut and why. Give exactly one of task, files, diff. The filter "
                    "arguments choose which nodes may be packed (a task: its search is narrowed; files/diff: "
                    "ranked from every given or changed node, only the kept nodes packed).",
     "inputSchema": _schema({"task": {"type": "string", "minLength": 1},
                             "files": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                                       "description": "indexed files, or folders (every indexed file under "
                                                      "them), as paths from a root or absolute"},
                             "diff": {"type": "string", "description": "a unified diff, or \"git\" for `git diff "
                                                                       "HEAD` of the indexed roots"},
                             "budget": {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 8000},
                             "format": {"type": "string", "enum": ["markdown", "json", "xml"], "default": "markdown"},
                             "impact": {"type": "integer", "minimum": 1, "maximum": 10,
                                        "description": "files/diff: also what depends on the change within this "
                                                       "many hops (callers of callers, importers, subclasses)"},
                             "session": _SESSION, **FILTER_PROPS})},
    {"name": "why", "title": "Why a node ranked where it did",
     "description": "One node's rank for a query with every channel score and signal part, or why it missed "
                    "the top k.",
     "inputSchema": _schema({"query": {"type": "string", "minLength": 1}, "node": _NODE,
                             "k": {"type": "integer", "minimum": 1, "maximum": 200, "default": 10},
                             "detail": _DETAIL, **FILTER_PROPS}, ["query", "node"])},
    {"name": "show", "title": "Open a node",
     "description": "A node's text and its edges in and out. Opening a node boosts it in later searches of "
                    "the same session.",
     "inputSchema": _schema({"node": _NODE, "edges": {"type": "integer", "minimum": 0, "maximum": 500, "default": 25},
                             "detail": _DETAIL, "session": _SESSION}, ["node"])},
    {"name": "related", "title": "Neighbours by edge type",
     "description": "The nodes linked to a node, grouped by edge type (calls, contains, imports, inherits, "
                    "links_to, tagged, mentions, ...), each with its direction.",
     "inputSchema": _schema({"node": _NODE, "types": {"type": "array", "items": {"type": "string"}},
                             "direction": {"type": "string", "enum": ["out", "in", "both"], "default": "both"},
                             "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50},
                             "detail": _DETAIL}, ["node"])},
    {"name": "stats", "title": "Index statistics",
     "description": "Counts by node kind and edge type, size, roots, generation and last index time.",
     "inputSchema": {"type": "object", "additionalProperties": False}},
    {"name": "feedback", "title": "Feedback on a result",
     "description": "Say that a node was useful (or not) for a query. Later searches with similar words rank it "
                    "up to x1.5 (or down to x0.5). Stored in the index; expires when the node's text changes.",
     "inputSchema": _schema({"query": {"type": "string", "minLength": 1}, "node": _NODE,
                             "useful": {"type": "boolean"}}, ["query", "node", "useful"])},
]
TOOLS += [
    {"name": "path", "title": "Paths between two nodes",
     "description": "The k best paths between two nodes over typed edges, shortest first (a hop costs 1 / "
                    "weight: few strong edges beat many weak ones). Each step names its edge type and direction "
                    "(out: along the edge, in: against it). `paths` is empty when none is at most max_len hops.",
     "inputSchema": _schema({"source": _NODE, "target": _NODE,
                             "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 3},
                             "max_len": {"type": "integer", "minimum": 1, "maximum": 12, "default": 6},
                             "types": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                                       "description": "follow only these edge types"},
                             "direction": {"type": "string", "enum": ["both", "out", "in"], "default": "both"}},
                            ["source", "target"])},
    {"name": "impact", "title": "What depends on a node or file",
     "description": "Everything that depends on a node (or every node of an indexed file) within `depth` hops: "
                    "callers, importers, subclasses, notes that link to it, KG nodes that depend on it; ranked by "
                    "distance, then edge strength, each with the edge that brought it in. With tests=true, also "
                    "the test files to run after a change, ranked from five kinds of evidence: their tests reach it, "
                    "they name its symbols, their path names its files' subjects, their text reads like it, it "
                    "declares them as its own test modules.",
     "inputSchema": _schema({"node": {"type": "string", "minLength": 1,
                                      "description": "node key, qualified name, name, or an indexed file's path"},
                             "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                             "types": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                                       "description": "dependency edge types, each optionally with :in or :out "
                                                      "(default: calls, imports, inherits, links_to, depends_on, ...)"},
                             "tests": {"type": "boolean", "default": False},
                             "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}},
                            ["node"])},
    {"name": "communities", "title": "Main topics",
     "description": "The graph's communities, largest first, each summarised without a model: central nodes "
                    "(PageRank inside the community), distinctive terms (class-based TF-IDF) and a representative "
                    "sentence or signature. Answers 'what are the main topics' / 'what is this repository about'.",
     "inputSchema": _schema({"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 10},
                             "terms": {"type": "integer", "minimum": 1, "maximum": 30, "default": 8}})},
]

for _t in TOOLS:
    _t["annotations"] = _annotations(_t["title"], read_only=_t["name"] != "feedback")
    _t["outputSchema"] = OUTPUT_SCHEMAS[_t["name"]]
TOOL_NAMES = [t["name"] for t in TOOLS]
_BY_NAME = {t["name"]: t for t in TOOLS}

# the tools that answer about given nodes, or one graph: over several indexes they take ``index``
NODE_TOOLS = ("why", "show", "related", "feedback", "path", "impact", "communities")


def tools_over(names: list[str]) -> list[dict]:
    """:data:`TOOLS` for several indexes searched as one (``kgsearch mcp --db A --db B``): each of
    :data:`NODE_TOOLS` takes an optional ``index`` naming the index to answer from, and ``stats``
    answers ``{"indexes": [one index's stats with its "index"]}``."""
    out = []
    for t in TOOLS:
        if t["name"] in NODE_TOOLS:
            what = ("every index's, largest first, each naming its index" if t["name"] == "communities" else
                    "the first index, in --db order, that has the node" + ("s" if t["name"] == "path" else ""))
            props = dict(t["inputSchema"]["properties"], index={
                "type": "string", "enum": list(names),
                "description": f"the index to answer from (each search hit and context item names its index); "
                               f"default: {what}"})
            t = dict(t, inputSchema=dict(t["inputSchema"], properties=props))
        elif t["name"] == "stats":                  # one entry per index
            one = t["outputSchema"]
            each = dict(one, properties=dict(one["properties"], index={"type": "string"}),
                        required=list(one["required"]) + ["index"])
            t = dict(t, outputSchema={"type": "object", "properties": {"indexes": {"type": "array", "items": each}},
                                      "required": ["indexes"]})
        out.append(t)
    return out


class ToolError(Exception):
    """A tool execution error: the message goes back as a result with ``isError: true``."""


def _type_ok(v, spec: dict) -> bool:
    t = spec.get("type")
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "array":
        return isinstance(v, list) and all(_type_ok(x, spec.get("items", {})) for x in v)
    return True


def _accepts(spec: dict) -> str:
    t = spec.get("type")
    if "enum" in spec:
        return "one of " + ", ".join(spec["enum"])
    if t == "integer":
        return f"a whole number from {spec.get('minimum', '-inf')} to {spec.get('maximum', 'inf')}"
    if t == "array":
        return f"a list of {spec.get('items', {}).get('type', 'value')}s"
    if t == "string" and spec.get("minLength"):
        return "a non-empty string"
    return f"a {t}"


def check_args(name: str, args, tools: list[dict] | None = None) -> dict:
    """The arguments with defaults filled in; ToolError naming the first bad one. ``tools``: the
    schemas a server advertises (default :data:`TOOLS`; several indexes add ``index``)."""
    schema = (_BY_NAME[name] if tools is None else next(t for t in tools if t["name"] == name))["inputSchema"]
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(f"arguments must be an object, got {type(args).__name__}")
    props = schema.get("properties", {})
    extra = sorted(set(args) - set(props))
    if extra:
        raise ToolError(f"unknown argument {quoted(extra[0])} for {name}; it takes: {', '.join(props) or 'no arguments'}")
    for req in schema.get("required", []):
        if req not in args:
            raise ToolError(f"missing argument {req!r} for {name} ({_accepts(props[req])})")
    out = {}
    for k, spec in props.items():
        if k not in args:
            if "default" in spec:
                out[k] = spec["default"]
            continue
        v = args[k]
        bad = (not _type_ok(v, spec) or ("enum" in spec and v not in spec["enum"])
               or (isinstance(v, int) and not isinstance(v, bool)
                   and not spec.get("minimum", v) <= v <= spec.get("maximum", v))
               or (isinstance(v, str) and len(v) < spec.get("minLength", 0))
               or (isinstance(v, str) and spec.get("minLength") and not any(c.isprintable() and not c.isspace()
                                                                            for c in v))   # "   ", NULs
               or (isinstance(v, str) and len(v) > spec.get("maxLength", len(v)))
               or (isinstance(v, list) and len(v) < spec.get("minItems", 0)))
        if bad:
            raise ToolError(f"bad argument {k!r}: expected {_accepts(spec)}, got {json.dumps(v)[:80]}")
        out[k] = v
    return out
