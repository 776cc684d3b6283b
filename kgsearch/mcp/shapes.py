"""What each MCP tool answers: its ``outputSchema`` and its ``brief`` form.

``detail: "full"`` is the library's dict as it is (``search``: the JSON of ``kgsearch search
--json``). ``detail: "brief"``, the default, is the same answer with fewer fields: the same
top-level keys and hit fields, in the same order, as a subset (nothing renamed, no type
changed), so an agent can ask for ``full`` later and find the same hits in the same order.
A search with k=10 goes from about 3,750 tokens (indented full JSON) to under 2,000
(``bench/results/reliability_costs.md``).

Every schema types what the brief form keeps and leaves the rest open
(``additionalProperties`` is not restricted), so both forms validate against it.
"""
from __future__ import annotations

__all__ = ["DETAILS", "OUTPUT_SCHEMAS", "brief"]

DETAILS = ["brief", "full"]

SEARCH_HIT = ("key", "kind", "name", "path", "line", "line_end", "snippet", "score", "index")   # index: several
SEARCH_TOP = ("query", "intent", "hits", "notices")
NODE = ("key", "kind", "name", "qualname", "path", "line_start", "line_end")
EDGE = ("type", "key", "name", "kind")
RELATED = ("direction", "key", "name", "kind")
SHOW_TEXT_CHARS = 2000           # a brief `show` keeps the node's text up to here
SCORE_DIGITS = 4


def _pick(d: dict, keys) -> dict:
    return {k: d[k] for k in keys if k in d}


def _brief_search(d: dict) -> dict:
    out = _pick(d, SEARCH_TOP)
    out["intent"] = _pick(d.get("intent") or {}, ("name",))
    out["hits"] = [{k: (round(v, SCORE_DIGITS) if k == "score" else v) for k, v in _pick(h, SEARCH_HIT).items()}
                   for h in d["hits"]]
    if d.get("answer"):                      # the summary intent's topics: the answer itself, kept whole
        out["answer"] = d["answer"]
    return out


def _brief_why(d: dict) -> dict:
    out = _pick(d, ("query", "node", "index", "intent", "k", "rank", "hit", "represented_by", "top", "notices",
                    "reason"))
    out = {k: d[k] for k in d if k in out}                      # full's order
    out["intent"] = _pick(d.get("intent") or {}, ("name",))
    if d.get("hit"):
        out["hit"] = _pick(d["hit"], ("key", "score", "rank", "signals", "adjustments"))
    out["top"] = [_pick(t, ("rank", "key", "score", "index")) for t in d.get("top", [])[:5]]
    return out


def _brief_show(d: dict) -> dict:
    node = _pick(d["node"], NODE + ("text",))
    text = node.get("text") or ""
    if len(text) > SHOW_TEXT_CHARS:
        node["text"] = (text[:SHOW_TEXT_CHARS] + f"\u2026 [{len(text) - SHOW_TEXT_CHARS:,} more characters: "
                        f"detail \"full\"]")
    node = {k: node[k] for k in d["node"] if k in node}
    out = {k: d[k] for k in d if k != "node"}
    out = {"node": node, **{k: ([_pick(e, EDGE) for e in v] if k in ("out", "in") else v) for k, v in out.items()}}
    return {k: out[k] for k in d if k in out}


def _brief_related(d: dict) -> dict:
    out = {k: v for k, v in d.items() if k != "types"}           # every edge type of the index: full only
    out["node"] = _pick(d["node"], NODE)
    out["edges"] = {t: [_pick(e, RELATED) for e in es] for t, es in d["edges"].items()}
    return out


_BRIEF = {"search": _brief_search, "why": _brief_why, "show": _brief_show, "related": _brief_related}


def brief(tool: str, d: dict) -> dict:
    """The brief form of ``tool``'s full answer ``d`` (``d`` itself for a tool without one)."""
    fn = _BRIEF.get(tool)
    return d if fn is None else fn(d)


# ---------------------------------------------------------------------------- output schemas
_S, _I, _N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
_OPT_S, _OPT_I = {"type": ["string", "null"]}, {"type": ["integer", "null"]}


def _obj(props: dict, required=()) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


_NODE = _obj({"key": _S, "kind": _S, "name": _S, "qualname": _OPT_S, "path": _OPT_S, "line_start": _OPT_I,
              "line_end": _OPT_I}, ["key", "kind", "name"])
_HIT = _obj({"key": _S, "kind": _S, "name": _S, "path": _OPT_S, "line": _OPT_I, "line_end": _OPT_I,
             "snippet": _S, "score": _N, "index": _S}, ["key", "kind", "name", "score"])
_NOTICES = {"type": "array", "items": _S}

OUTPUT_SCHEMAS = {
    "search": _obj({"query": _S, "intent": _obj({"name": _S}, ["name"]), "hits": {"type": "array", "items": _HIT},
                    "notices": _NOTICES,
                    "answer": {"type": ["object", "null"], "properties": {"answer": _S, "topics": {"type": "array"}}}},
                   ["query", "hits"]),
    "context": _obj({"mode": _S, "query": _OPT_S, "budget": _I, "used": _I, "format": _S,
                     "items": {"type": "array", "items": _obj({"key": _S, "form": _S, "tokens": _I}, ["key"])},
                     "cut": {"type": "array", "items": _obj({"key": _S, "reason": _S}, ["key"])},
                     "notices": _NOTICES}, ["mode", "used", "items", "cut"]),
    "why": _obj({"query": _S, "node": _NODE, "rank": _OPT_I, "reason": _S,
                 "represented_by": _obj({"key": _S, "rank": _I}, ["key"]),
                 "top": {"type": "array", "items": _obj({"rank": _I, "key": _S, "score": _N}, ["key"])}},
                ["query", "node", "rank", "reason"]),
    "show": _obj({"node": _NODE, "out": {"type": "array", "items": _obj({"type": _S, "key": _S}, ["type", "key"])},
                  "in": {"type": "array", "items": _obj({"type": _S, "key": _S}, ["type", "key"])},
                  "out_total": _I, "in_total": _I}, ["node", "out", "in"]),
    "related": _obj({"node": _NODE, "edges": {"type": "object", "additionalProperties": {
        "type": "array", "items": _obj({"direction": {"enum": ["out", "in"]}, "key": _S, "name": _S, "kind": _S},
                                       ["direction", "key"])}}, "total": _I}, ["node", "edges"]),
    "stats": _obj({"nodes": _I, "edges": _I, "files": _I, "generation": _I}, ["nodes", "edges"]),
    "feedback": _obj({"query": _S, "node": _S, "useful": {"type": "boolean"}}, ["node", "useful"]),
    "path": _obj({"from": _obj({"key": _S}, ["key"]), "to": _obj({"key": _S}, ["key"]), "k": _I, "max_len": _I,
                  "direction": _S, "paths": {"type": "array", "items": _obj(
                      {"length": _N, "hops": _I, "nodes": {"type": "array", "items": _obj({"key": _S}, ["key"])},
                       "steps": {"type": "array"}}, ["hops", "nodes", "steps"])}}, ["from", "to", "paths"]),
    "impact": _obj({"depth": _I, "types": {"type": "object"}, "free": {"type": "array", "items": _S}, "start": _I, "total": _I,
                    "dependents": {"type": "array", "items": _obj(
                        {"key": _S, "distance": _I, "via": _obj({"type": _S, "direction": _S, "key": _S})},
                        ["key", "distance"])},
                    "tests": {"type": "array"}}, ["depth", "total", "dependents"]),
    "communities": _obj({"total": _I, "nodes": _I, "shown": _I, "notice": _OPT_S,
                         "communities": {"type": "array", "items": _obj(
                             {"id": _I, "size": _I, "terms": {"type": "array", "items": _S},
                              "central": {"type": "array", "items": _obj({"key": _S}, ["key"])}},
                             ["id", "size"])}}, ["total", "communities"]),
}
