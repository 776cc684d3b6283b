"""Python name resolution: the candidate names a file's calls and bases may mean (at load
time, per file) and the package re-exports the indexer follows across files (at index time).

Candidates are qualified names in order of preference, joined by newlines in an edge's
``dst_name``; the indexer resolves the first that names an indexed node. See
:mod:`kgsearch.ingest.pycode` for the rules.
"""
from __future__ import annotations

import ast
import builtins
from typing import Callable, Iterable

from ..types import EdgeRec

__all__ = ["NameCandidates", "reexport_resolver"]

_BUILTINS = frozenset(dir(builtins))


class NameCandidates:
    """The loader's resolution half (a mixin of ``pycode._Loader``: it uses the loader's
    ``res``, ``scopes``, ``imports``, ``stars``, ``bases``, ``_class_defs`` and
    ``_edge_imports``)."""

    def _resolve(self, module) -> None:
        edges = self.res.edges
        mkey = module.key
        for dst, line in self._edge_imports.items():
            edges.append(EdgeRec(mkey, dst, "imports", "py", line=line))
        for inner, bases, scope in self._class_defs:
            sig, doc = inner.names
            inner.rec.text = "\n".join(x for x in (sig, doc, " ".join(inner.defs)) if x)
            for b in bases:
                cands = self._expr_candidates(scope, b)
                self.bases[inner.qual].append(cands)
                if cands:
                    edges.append(EdgeRec(inner.key, "\n".join(cands), "inherits", "py",
                                         line=b.lineno))
        seen = set()
        for scope in self.scopes:
            for func, line in scope.calls:
                cands = self._call_candidates(scope, func)
                if not cands:
                    continue
                dst = "\n".join(cands)
                if (scope.key, dst) in seen:
                    continue
                seen.add((scope.key, dst))
                edges.append(EdgeRec(scope.key, dst, "calls", "py", line=line))

    def _name_candidates(self, scope, name: str) -> list[str]:
        s, first = scope, True
        while s.parent is not None:        # enclosing functions; a class body only if current
            if first or s.kind == "function":
                if name in s.defs:
                    return [s.defs[name]]
                if name in s.params:
                    return []
            first, s = False, s.parent
        if name in s.defs:
            return [s.defs[name]]
        if name in self.imports:                 # (several candidates: an import from the indexed root)
            return self.imports[name].split("\n")
        if name in _BUILTINS:
            return []
        return [f"{m}.{name}" for m in self.stars]

    def _expr_candidates(self, scope, expr) -> list[str]:
        if type(expr) is ast.Name:
            return self._name_candidates(scope, expr.id)
        chain = []
        while type(expr) is ast.Attribute:
            chain.append(expr.attr)
            expr = expr.value
        if type(expr) is not ast.Name or not chain:
            return []
        tail = ".".join(reversed(chain))
        return [f"{c}.{tail}" for c in self._name_candidates(scope, expr.id)]

    def _call_candidates(self, scope, func) -> list[str]:
        if type(func) is ast.Attribute:
            head = func.value
            if type(head) is ast.Name and head.id == scope.self_name and scope.cls is not None:
                return self._method_candidates(scope.cls.qual, func.attr, True)
            if (type(head) is ast.Call and type(head.func) is ast.Name
                    and head.func.id == "super" and scope.cls is not None):
                return self._method_candidates(scope.cls.qual, func.attr, False)
            while type(head) is ast.Attribute:
                head = head.value
            if type(head) is ast.Name and head.id == scope.self_name:
                return []                  # self.attr.f(): type of the attribute unknown
        return self._expr_candidates(scope, func)

    def _method_candidates(self, cls: str, meth: str, include_self: bool) -> list[str]:
        out: list[str] = []
        queue = [cls] if include_self else self._base_quals(cls)
        seen = {cls, *queue}
        while queue:
            q = queue.pop(0)
            out.append(f"{q}.{meth}")
            for b in self._base_quals(q):
                if b not in seen:
                    seen.add(b)
                    queue.append(b)
        return out

    def _base_quals(self, cls: str) -> list[str]:
        return [c for cands in self.bases.get(cls, ()) for c in cands]


def reexport_resolver(modules: dict[str, int], imports_of: Callable[[int], Iterable[tuple[str, str | None]]],
                      lookup: Callable[[str], int | None], hops: int = 3) -> Callable[[str], int | None]:
    """A resolver for Python names that reach a symbol through a package's re-export.

    ``unittest.TestCase`` is ``unittest.case.TestCase``: ``unittest/__init__.py`` says
    ``from .case import TestCase``. For a py name that did not resolve, the longest dotted
    prefix that is an indexed module (``modules``: dotted name -> node id) is looked up in that
    module's ``imports`` edges (``imports_of(module id)``: (name as written, resolved node key)
    pairs); the imported name (as written, else the resolved node's) ending in the next name
    component replaces the prefix (``pkg.Foo.meth`` -> ``pkg.core.Foo.meth``), up to ``hops``
    times, each time tried with ``lookup(name) -> node id``. Not followed: a re-export renamed
    with ``as``.

    >>> mods = {"pkg": 1, "pkg.core": 2}
    >>> imports = {1: [("pkg.core.Foo", None)], 2: []}
    >>> nodes = {"pkg.core.Foo.run": 7}
    >>> reexport_resolver(mods, imports.__getitem__, nodes.get)("pkg.Foo.run")
    7
    """
    exports: dict[int, dict[str, str]] = {}

    def exported(mid: int) -> dict[str, str]:
        got = exports.get(mid)
        if got is None:
            got = exports[mid] = {}
            # the name as written (``from lib import Engine`` -> ``lib.Engine``, which may be
            # a re-export itself: the next hop), else the resolved node's
            for name, key in imports_of(mid):
                if name:
                    qual = name.split("\n", 1)[0]
                elif key and key.startswith("py:"):
                    qual = key[3:].split("#", 1)[0]
                else:
                    continue
                got.setdefault(qual.rpartition(".")[2], qual)
        return got

    def rewrite(name: str) -> str | None:
        parts = name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mid = modules.get(".".join(parts[:i]))
            if mid is not None:
                target = exported(mid).get(parts[i])
                if target is None or target == ".".join(parts[:i + 1]):
                    return None
                return ".".join([target] + parts[i + 1:])
        return None

    def follow(name: str) -> int | None:
        seen = {name}
        for _ in range(hops):
            name = rewrite(name)
            if name is None or name in seen:
                return None
            seen.add(name)
            hit = lookup(name)
            if hit is not None:
                return hit
        return None

    def resolve(dst_name: str) -> int | None:
        for cand in dst_name.split("\n"):
            hit = follow(cand)
            if hit is not None:
                return hit
        return None
    return resolve
