"""``kgsearch mcp --db A --db B``: the same tools over several indexes searched as one.

``search`` and ``context`` (a task) rank over every index (:mod:`kgsearch.query.multi`), each hit
and packed item naming its index; ``show``, ``related``, ``why``, ``feedback``, ``path`` and
``impact`` answer from the index their ``index`` argument names (a hit's ``"index"``: two indexes
may each hold a node of the same key, ``md:README``), else from the first index (in ``--db``
order) that has the node(s), and say which (``"index"``); ``communities`` lists every index's,
largest first, each naming its index (or one index's, with ``index``); ``stats`` lists every index. Each index is opened read-only and reopened when replaced, as with one index, and a
session remembers the nodes opened in each index apart (node ids are per index).
"""
from __future__ import annotations

from ..errors import BadIndex, NotFound
from ..lines import quoted
from .server import Server, answer, dumps, with_notices
from .tools import filters_of, tools_over

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
        self.tools = tools_over(list(self.parts))

    def index_paths(self) -> list[str]:
        return [part.db for part in self.parts.values()]

    def _for_agent(self, e: BaseException) -> str:
        """An index that cannot be used, among several, is named, and so is what still works: the
        tools that read every index fail, a tool given another index's name answers (one index:
        "every kgsearch tool fails the same way", which was said here too and was not true)."""
        import os

        if not isinstance(e, BadIndex) or getattr(e, "agent", None):
            return super()._for_agent(e)
        said = str(e)
        bad = [name for name, part in self.parts.items()
               if str(part.db) in said or os.path.abspath(str(part.db)) in said]
        others = [name for name in self.parts if name not in bad]
        if not bad or not others:
            return super()._for_agent(e)
        which = ", ".join(repr(b) for b in bad)
        return (f"the kgsearch index {which} cannot be used: {said}. Ask the user to run the fix this names, or "
                f"to start the server without that --db. Until then search, context, stats and communities fail "
                f"the same way, and so may a tool looking for a node in every index; a tool given "
                f"`index` {' or '.join(repr(o) for o in others)} still answers from "
                f"{'that index' if len(others) == 1 else 'those indexes'}")

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

    def _first(self, fn, node: str, index: str | None = None, missing=None):
        """``fn(name, part)`` on index ``index``, or on the first index that has ``node``, with
        ``"index"`` added; NotFound naming the index or every index otherwise (``missing``: the
        message for ``where``, when what is not there is not one node)."""
        parts = {index: self.parts[index]} if index is not None else self.parts
        for name, part in parts.items():
            try:
                d = fn(name, part)
            except NotFound:
                continue
            d["index"] = name
            return d
        where = f"index {index}" if index is not None else f"any of the indexes ({', '.join(self.parts)})"
        if missing is not None:
            raise NotFound(missing(where))
        raise NotFound(f"no node {quoted(node)} in {where}; search for it to find its key")

    # ------------------------------------------------------------------ tools over all indexes
    def tool_search(self, a: dict, session):
        from ..query import SearchOptions

        opts = SearchOptions(k=a["k"], intent=a.get("intent"), fusion=a.get("fusion"), channels=a.get("channels"),
                             use_cache=False, filters=filters_of(a), correct=a.get("correct", True))
        d = self._multi().search(a["query"], opts, session.parts if session is not None else None).as_dict()
        return answer("search", a, d)          # brief unless detail "full", as over one index

    def tool_context(self, a: dict, session):
        from ..context import ContextOptions
        from ..context.diff import git_diff, parse_given
        from ..context.multi import build_context_multi
        from ..query import SearchOptions

        multi = self._multi()
        diff = a.get("diff")
        changes = None
        if diff is not None:
            roots = [r for e in multi.engines.values() for r in e.ix.meta_json("roots", [])]
            changes = git_diff(roots) if diff.strip() == "git" else parse_given(diff)   # text no diff: an error
        res = build_context_multi(multi, task=a.get("task"), files=a.get("files"), diff=changes,
                                  sessions=session.parts if session is not None else None,
                                  opts=ContextOptions(budget=a["budget"], fmt=a["format"], impact=a.get("impact"),
                                                      search=SearchOptions(use_cache=False, filters=filters_of(a))))
        d = res.as_dict()
        d.pop("text")
        return with_notices(res.text, res.format, res.notices), d

    def tool_stats(self, a: dict, session):
        from ..stats import index_stats

        d = {"indexes": [dict(index_stats(part._engine().ix), index=name) for name, part in self.parts.items()]}
        return dumps(d), d

    # ------------------------------------------------------------------ tools on the index that has the node
    def tool_show(self, a: dict, session):
        def one(name, part):
            text, d = part.tool_show(a, session.part(name) if session is not None else None)
            return d
        d = self._first(one, a["node"], a.get("index"))
        return dumps(d), d

    def tool_related(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_related(a, None)[1], a["node"], a.get("index"))
        return dumps(d), d

    def tool_why(self, a: dict, session):
        """The node's rank in the one ranking over every index (what ``search`` answered), and
        what beat it there."""
        from ..query import SearchOptions
        from ..query.api import why_over

        d = why_over(self._multi(), a["query"], a["node"], a.get("index"),
                     SearchOptions(k=a["k"], use_cache=False, filters=filters_of(a)))
        return answer("why", a, d)

    def tool_feedback(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_feedback(a, None)[1], a["node"], a.get("index"))
        return dumps(d), d

    def tool_path(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_path(a, None)[1], a["source"], a.get("index"),
                        missing=lambda where: f"nodes {quoted(a['source'])} and {quoted(a['target'])} are not both in {where} "
                                              f"(a path stays inside one index); search for them to find their keys")
        return dumps(d), d

    def tool_impact(self, a: dict, session):
        d = self._first(lambda name, part: part.tool_impact(a, None)[1], a["node"], a.get("index"))
        return dumps(d), d

    def tool_communities(self, a: dict, session):
        """Each index's largest communities, merged largest first (ties: ``--db`` order), at most
        ``limit``; ``total`` and ``nodes`` summed; notices prefixed by their index."""
        names = [a["index"]] if a.get("index") is not None else list(self.parts)
        got = {name: self.parts[name].tool_communities(a, None)[1] for name in names}
        merged = sorted(((-c["size"], i, j, name, c) for i, (name, d) in enumerate(got.items())
                         for j, c in enumerate(d["communities"])), key=lambda x: x[:3])
        comms = [dict(c, index=name) for *_, name, c in merged[:a["limit"]]]
        notes = [f"{name}: {d['notice']}" for name, d in got.items() if d.get("notice")]
        d = {"total": sum(x["total"] for x in got.values()), "nodes": sum(x["nodes"] for x in got.values()),
             "shown": len(comms), "communities": comms, "notice": "; ".join(notes) or None}
        if len(names) == 1:
            d["index"] = names[0]
        return dumps(d), d
