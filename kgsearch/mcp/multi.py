"""``kgsearch mcp --db A --db B``: the same tools over several indexes searched as one.

``search`` and ``context`` (a task) rank over every index (:mod:`kgsearch.query.multi`), each hit
and packed item naming its index; ``show``, ``related``, ``why``, ``impact`` and ``feedback``
answer from the first index (in ``--db`` order) that has the node, ``path`` from the first that
has both ends, and say which (``"index"``); ``stats`` gives the totals and lists every index;
``communities`` are the first index's. Each index is opened read-only and reopened when replaced, as with one index, and a
session remembers the nodes opened in each index apart (node ids are per index).
"""
from __future__ import annotations

from ..errors import NotFound
from .server import Server, dumps
from .tools import filters_of

__all__ = ["MultiServer"]


class _Sessions:
    """One session per index under one handle (what :meth:`Server._session` keeps)."""

    def __init__(self, clock):
        from ..query.feedback import Session

        self.clock = clock
        self.parts: dict[str, Session] = {}
        self.last_used = clock()
        self._make = lambda: Session(clock=clock)

    def part(self, name: str):
        s = self.parts.get(name)
        if s is None:
            s = self.parts[name] = self._make()
        return s


class MultiServer(Server):
    def __init__(self, dbs, clock=None):
        import time

        from ..query.multi import index_names

        super().__init__(dbs[0], **({"clock": clock} if clock is not None else {}))
        self.clock = clock or time.monotonic
        self.parts = {name: Server(db, clock=self.clock) for name, db in zip(index_names([str(d) for d in dbs]), dbs)}

    def _multi(self):
        from ..query.multi import MultiEngine

        return MultiEngine({name: part._engine() for name, part in self.parts.items()}, threads=False)

    def _session(self, handle):
        now = self.clock()
        for k in [k for k, s in self.sessions.items() if now - s.last_used > 3600.0]:
            del self.sessions[k]
        if handle is None:
            return None
        s = self.sessions.get(handle)
        if s is None:
            if len(self.sessions) >= 256:
                del self.sessions[min(self.sessions, key=lambda k: self.sessions[k].last_used)]
            s = self.sessions[handle] = _Sessions(self.clock)
        s.last_used = now
        return s

    def _first(self, fn, node: str, where: str = "in any of the indexes"):
        """``fn(part)`` on the first index that has ``node``, with ``"index"`` added; NotFound
        naming every index otherwise."""
        misses = []
        for name, part in self.parts.items():
            try:
                d = fn(name, part)
            except NotFound as exc:
                misses.append(str(exc))
                continue
            d["index"] = name
            return d
        raise NotFound(f"no node {node} {where} ({', '.join(self.parts)}); search for it to find its key")

    # ------------------------------------------------------------------ tools over all indexes
    def tool_search(self, a: dict, session):
        from ..query import SearchOptions

        opts = SearchOptions(k=a["k"], intent=a.get("intent"), fusion=a.get("fusion"), channels=a.get("channels"),
                             use_cache=False, filters=filters_of(a))
        d = self._multi().search(a["query"], opts, session.parts if session is not None else None).as_dict()
        return dumps(d), d

    def tool_context(self, a: dict, session):
        from ..context import ContextOptions
        from ..context.diff import git_diff, parse_unified
        from ..context.multi import build_context_multi
        from ..query import SearchOptions

        multi = self._multi()
        diff = a.get("diff")
        changes = None
        if diff is not None:
            roots = [r for e in multi.engines.values() for r in e.ix.meta_json("roots", [])]
            changes = git_diff(roots) if diff.strip() == "git" else parse_unified(diff)
        res = build_context_multi(multi, task=a.get("task"), files=a.get("files"), diff=changes,
                                  sessions=session.parts if session is not None else None,
                                  opts=ContextOptions(budget=a["budget"], fmt=a["format"],
                                                      search=SearchOptions(use_cache=False, filters=filters_of(a))))
        d = res.as_dict()
        d.pop("text")
        return res.text, d

    def tool_stats(self, a: dict, session):
        from ..stats import index_stats

        parts = [dict(index_stats(part._engine().ix), index=name) for name, part in self.parts.items()]
        # the totals first: the tool's outputSchema requires nodes and edges (an MCP client that
        # validates structuredContent rejected the answer that listed the indexes only)
        d = {k: sum(p[k] for p in parts) for k in ("nodes", "edges", "files")}
        d["indexes"] = parts
        return dumps(d), d

    # ------------------------------------------------------------------ tools on the index that has the node
    def tool_show(self, a: dict, session):
        def one(name, part):
            text, d = part.tool_show(a, session.part(name) if session is not None else None)
            return d
        d = self._first(one, repr(a["node"]))
        return dumps(d), d

    def tool_related(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_related(a, None)[1], repr(a["node"]))
        return dumps(d), d

    def tool_why(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_why(a, None)[1], repr(a["node"]))
        return dumps(d), d

    def tool_path(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_path(a, None)[1], f"{a['source']!r} and {a['target']!r}",
                        "both in one index (a path runs inside one index)")
        return dumps(d), d

    def tool_impact(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_impact(a, None)[1], repr(a["node"]))
        return dumps(d), d

    def tool_feedback(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_feedback(a, None)[1], repr(a["node"]))
        return dumps(d), d
