"""Python source through the stdlib ``ast``: modules, classes, functions, methods and their edges.

Module names come from ``rel`` (the path under the indexed root): the path components with
``.py`` dropped, ``pkg/__init__.py`` -> ``pkg``, and a leading ``src/`` component stripped
(``src/pkg/mod.py`` -> ``pkg.mod``), so index a project from its top folder or from the folder
that holds its packages. A top-level ``__init__.py`` takes the name of the folder it is in.

Nodes (every node answers to ``('py', qualname)``):

* ``module``: key ``py:<module>``, name = last component, text = docstring + the names defined
  at top level (functions, classes, assigned names).
* ``class``: key ``py:<module>.<Class>``, text = ``class C(bases)`` + docstring + method names.
* ``function`` / ``method`` (a def directly in a class body): key ``py:<qualname>``, text =
  decorators + ``def f(args) -> ret`` + docstring + the source of the body, cut at
  :data:`MAX_TEXT` characters, then the body's own indentation taken off its lines (only
  whitespace goes: every word of the cut source stays, about a tenth of the stdlib's bytes
  do not). Nested defs read ``outer.inner`` (no ``<locals>``). ``props``: ``decorators``
  (as written), ``async`` for ``async def``; the signature is the text's first line after
  the decorators.
* ``chunk`` (``FLAG_PART``): the source lines of a function past its cut, in parts of about
  :data:`MAX_TEXT` characters cut at line ends (:func:`kgsearch.ingest.common.split_parts`),
  the functions defined inside it left out (their nodes hold them): key
  ``<function key>#part<n>`` (n from 2: the function's own text is the first), name the
  function's, ``parent`` the function, with a ``contains`` edge; its lines are its own.

A name defined twice in one scope (``@x.setter``, ``if``/``else`` variants) keeps its key for
the first definition; the next ones get ``#2``, ``#3`` keys and no alias. An overloaded function
(``@typing.overload`` signatures, then one implementation, in one body) is the exception: the
implementation holds the plain key and the alias and the signatures get ``#2``, ``#3``, so calls
and ``show`` reach the code (as TypeScript's overloads: :mod:`kgsearch.ingest.codemodel`).
Stubs (``.pyi``) use ``pyi:`` keys and no ``py`` aliases so that they never shadow the code.
Every node of a test file (:func:`kgsearch.codelike.is_test_path`: ``test_*.py``, ``*_test.py``,
``conftest.py``, anything under a ``test``/``tests``/``testing`` folder) has ``FLAG_TEST``.

Edges:

* ``contains`` (``ns='key'``): module -> class/function, class -> method, function -> nested def.
* ``imports`` (``ns='py'``): module -> imported module; ``from x import y`` -> ``x.y`` then ``x``
  (y may be a submodule or a symbol). Relative imports are resolved against the package of
  the file; in a package indexed as its own root (its modules named from the root, ``core``,
  ``sub.mod``, its ``__init__.py`` after the folder, ``pkg``) a relative import that reaches
  the root (``from .. import core``, ``from . import util`` in a top-level module or in the
  root ``__init__``) names ``core``, then ``pkg.core`` (a name the root ``__init__`` defines),
  then ``pkg``. Imports inside functions count for the module.
* ``inherits`` (``ns='py'``): class -> base, resolved like a name (below).
* ``calls`` (``ns='py'``): from the innermost function (module or class when the call is
  at module or class-body level) to the callee, with candidate qualified names in order:

  - ``f()``: a def in an enclosing function, then in the module, then ``x.f`` for
    ``from x import f`` (``as`` aliases followed), then ``m.f`` for each ``from m import *``;
  - ``a.b.f()``: the head name resolved the same way (``import pkg.mod as a`` -> ``pkg.mod``,
    a local class) with the attributes appended: ``mod.func()``, ``Class.meth()``;
  - ``self.m()`` / ``cls.m()`` (the first parameter of a method): the enclosing class's ``m``,
    then the same method on its base classes (in-file bases recursively, imported bases
    one level); ``super().m()``: the base classes only.

  What stays unresolved (no edge, or an edge the indexer drops): builtins, calls on values of
  unknown type (``x.f()`` with ``x`` a parameter or a local variable, ``self.attr.f()``),
  dynamic dispatch (``getattr``, dict of functions, callbacks), methods inherited from classes
  defined in other files beyond the direct base, and anything reached through the stdlib or
  third-party code that is not indexed. Names that go through a package's re-export
  (``pkg.Foo`` for ``from .core import Foo`` in ``pkg/__init__.py``) are followed by the
  indexer with :func:`kgsearch.ingest.pynames.reexport_resolver`, except re-exports renamed
  with ``as``. The candidate rules live in :class:`kgsearch.ingest.pynames.NameCandidates`.

A file that does not parse gives its module node (empty text) and one warning.
"""
from __future__ import annotations

import ast
import functools
import gc
import io
import re
import tokenize
from pathlib import Path

from ..codelike import is_test_path
from ..types import FLAG_PART, FLAG_TEST, EdgeRec, LoadOptions, LoadResult, NodeRec
from .common import MAX_TEXT, decode, part_key, split_parts, utf16_codec
from .pynames import NameCandidates

NAME = "python"
EXTENSIONS = (".py", ".pyi")

__all__ = ["NAME", "EXTENSIONS", "load", "module_name", "is_test_path", "source_text"]

# Node types that never contain a call, an import or a definition: not worth a visit.
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.alias, ast.Pass, ast.Break, ast.Continue, ast.Global,
     ast.Nonlocal, ast.TypeIgnore}
    | {c for base in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
       for c in base.__subclasses__()})
# Fields that never hold a node worth visiting (names, numbers, operators).
_NOT_AST = frozenset({"ctx", "id", "attr", "arg", "name", "asname", "module", "level", "kind",
                      "type_comment", "is_async", "conversion", "names", "kwd_attrs", "op", "ops",
                      "simple", "type_ignores", "tag"})
_FIELDS: dict[type, tuple[str, ...]] = {}     # node type -> fields to visit, last first


def module_name(rel: str, root: str = "") -> str:
    """Dotted module name for a path under the root.

    >>> module_name("src/pkg/sub/__init__.py"), module_name("pkg/mod.py")
    ('pkg.sub', 'pkg.mod')
    """
    parts = [p for p in rel.replace("\\", "/").split("/") if p and p != "."]
    if len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    last = parts[-1] if parts else ""
    for ext in EXTENSIONS:
        if last.endswith(ext):
            last = last[: -len(ext)]
    parts[-1:] = [last] if last != "__init__" else []
    if not parts:
        parts = [Path(root).name or "__init__"]
    return ".".join(parts)


def _is_overload(deco: ast.expr) -> bool:
    """``@overload``, ``@typing.overload``, ``@t.overload`` (any name or attribute ``overload``)."""
    return (deco.__class__ is ast.Name and deco.id == "overload") or \
        (deco.__class__ is ast.Attribute and deco.attr == "overload")

def _dedent(src: str, indent: int) -> str:
    """Take up to ``indent`` leading spaces/tabs off every line (a body's indentation is the
    ``col_offset`` of its first statement; less indented lines, in strings, lose what they have)."""
    if indent <= 0:
        return src
    return _indent_re(indent).sub("", src)


@functools.lru_cache(maxsize=64)
def _indent_re(indent: int) -> "re.Pattern[str]":
    return re.compile(r"^[ \t]{1,%d}" % indent, re.M)


def source_text(data: bytes, where: str) -> tuple[str, str | None]:
    """Decode as Python does: UTF-8 unless a coding cookie says otherwise; UTF-16 with its
    byte-order mark as :func:`decode` does (a file saved by a Windows editor)."""
    if utf16_codec(data[:4]):
        return decode(data, where)
    try:
        text = data.decode("utf-8")
        if text.startswith("\ufeff"):
            text = text[1:]
        return text, None
    except UnicodeDecodeError:
        pass
    try:
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if enc not in ("utf-8", "utf-8-sig"):
            return data.decode(enc), None
    except (SyntaxError, LookupError, UnicodeDecodeError):
        pass
    return decode(data, where)


class _Scope:
    __slots__ = ("key", "qual", "kind", "parent", "defs", "self_name", "cls", "rec", "calls",
                 "names", "params")

    def __init__(self, key, qual, kind, parent, rec):
        self.key, self.qual, self.kind, self.parent, self.rec = key, qual, kind, parent, rec
        self.defs: dict[str, str] = {}        # name -> qualname of defs directly inside
        self.self_name: str | None = None     # methods: name of the first parameter
        self.cls: _Scope | None = None        # methods: the class scope
        self.calls: list[tuple[ast.expr, int]] = []
        self.names: list[str] = []            # classes: method names; module: top-level names
        self.params: frozenset[str] = frozenset()   # functions: parameter names (unknown type)


def load(path: Path, rel: str, opts: LoadOptions) -> LoadResult:
    where = str(path)
    text, warning = source_text(Path(path).read_bytes(), where)
    # The tree is acyclic and dropped on return: cyclic GC passes over its hundreds of
    # thousands of fresh objects only cost time (about a fifth of the parse).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Loader(text, where, rel, opts).run(warning)
    finally:
        if enabled:
            gc.enable()


class _Loader(NameCandidates):
    def __init__(self, text: str, where: str, rel: str, opts: LoadOptions):
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.text, self.where, self.rel = text, where, rel
        self.stub = rel.endswith(".pyi")
        self.prefix = "pyi:" if self.stub else "py:"
        self.mod = module_name(rel, opts.root)
        base = rel.replace("\\", "/").rsplit("/", 1)[-1]
        self.is_pkg = base in ("__init__.py", "__init__.pyi")
        # the indexed root's own package: its __init__ is named after the folder (module_name), its
        # modules from the root; relative imports that reach it name the root's modules
        self.root_pkg = module_name("__init__.py", opts.root)
        parts = [p for p in rel.replace("\\", "/").split("/") if p and p != "."]
        self.is_root_init = self.is_pkg and len(parts) - (len(parts) > 1 and parts[0] == "src") == 1
        self.flags = FLAG_TEST if is_test_path(rel) else 0
        self.res = LoadResult()
        self.keys: set[str] = set()
        self._dups: dict[str, int] = {}          # key -> the first ``#n`` not yet tried for it
        self._impl: dict[int, str] = {}          # id(def node) -> the plain key kept for it (an overloaded name)
        self.imports: dict[str, str] = {}       # bound name -> dotted target
        self.stars: list[str] = []              # modules of `from m import *`
        self.bases: dict[str, list[list[str]]] = {}   # class qual -> candidates per base
        self.lines: list[str] = []
        self.scopes: list[_Scope] = []
        self._class_defs: list[tuple[_Scope, list, _Scope]] = []
        self._edge_imports: dict[str, int] = {}     # imports edge dst -> first line
        self._long: list[tuple[NodeRec, int]] = []  # functions whose text is cut: (node, first line not held)
        self._inner: dict[str, list[tuple[int, int]]] = {}   # function key -> spans of the functions in it

    # ---- entry ---------------------------------------------------------------------------

    def run(self, warning: str | None) -> LoadResult:
        res = self.res
        if warning:
            res.warnings.append(warning)
        nlines = self.text.count("\n") + (0 if self.text.endswith("\n") else 1)
        mrec = NodeRec(key=self.prefix + self.mod, kind="module", name=self.mod.rpartition(".")[2],
                       qualname=self.mod, line_start=1, line_end=max(nlines, 1), flags=self.flags,
                       props={"package": True} if self.is_pkg else {},
                       aliases=self._aliases(self.mod))
        res.nodes.append(mrec)
        self.keys.add(mrec.key)
        try:
            tree = ast.parse(self.text, filename=self.where)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None)
            msg = getattr(exc, "msg", None) or str(exc)
            at = f"{self.where}:{line}" if line else self.where
            res.warnings.append(f"{at}: syntax error, skipped ({msg})")
            return res
        self.lines = self.text.split("\n")
        module = _Scope(mrec.key, self.mod, "module", None, mrec)
        self._walk(tree, module)
        self._top_names(tree, module)
        doc = ast.get_docstring(tree) or ""
        mrec.text = "\n".join(x for x in (doc, " ".join(module.names)) if x)
        self._resolve(module)
        self._parts()
        return res

    def _parts(self) -> None:
        """The parts of the functions whose text is cut (see the module docstring), inner ones
        first: a line a part holds already is not taken again."""
        claimed: set[int] = set()
        for rec, rest in reversed(self._long):
            gone = sorted(self._inner.get(rec.key, ()))
            own, i = [], rest
            for ga, gb in gone + [(rec.line_end + 1, rec.line_end + 1)]:
                if ga > i:
                    own += [(n, self.lines[n - 1]) for n in range(i, min(ga, rec.line_end + 1))
                            if n not in claimed]
                i = max(i, gb + 1)
            claimed.update(n for n, _ in own)
            for n, (first, last, text) in enumerate(split_parts(own), 2):
                key = part_key(rec.key, n, self.keys)
                self.keys.add(key)
                self.res.nodes.append(NodeRec(key=key, kind="chunk", name=rec.name, text=text,
                                              qualname=rec.qualname + key[len(rec.key):], line_start=first,
                                              line_end=last, parent=rec.key, flags=rec.flags | FLAG_PART))
                self.res.edges.append(EdgeRec(rec.key, key, "contains", "key", line=first))

    def _aliases(self, qual: str) -> list[tuple[str, str]]:
        return [] if self.stub else [("py", qual)]

    # ---- traversal -----------------------------------------------------------------------

    def _walk(self, tree: ast.Module, module: _Scope) -> None:
        self.scopes.append(module)
        self._scan(tree.body, module)

    def _scan(self, roots: list, scope: _Scope) -> None:
        """Find calls, imports and defs under ``roots`` (the statements of one scope).

        Iterative pre-order walk in document order (deeply nested expressions would overflow
        recursion); it recurses only into nested defs, whose depth the parser bounds."""
        self._keep_for_implementations(roots, scope)
        stack = roots[::-1]
        pop, push = stack.pop, stack.append
        calls = scope.calls
        leaves, fields = _LEAVES, _FIELDS
        while stack:
            node = pop()
            t = node.__class__
            if t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
                if t is ast.ClassDef:
                    inner = self._class(node, scope)
                    outer = node.bases + [k.value for k in node.keywords]
                else:
                    inner = self._function(node, scope)
                    a = node.args
                    outer = a.defaults + [d for d in a.kw_defaults if d is not None]
                self.scopes.append(inner)
                self._scan(node.body, inner)
                # decorators, defaults and bases are evaluated in the enclosing scope
                for c in reversed(node.decorator_list + outer):
                    if c.__class__ not in leaves:
                        push(c)
                continue
            if t is ast.Call:
                calls.append((node.func, node.lineno))
            elif t is ast.Import or t is ast.ImportFrom:
                self._import(node)
                continue
            fs = fields.get(t)
            if fs is None:
                fs = fields[t] = tuple(f for f in reversed(getattr(t, "_fields", ()))
                                       if f not in _NOT_AST)     # () for a str or bool value
            for f in fs:
                v = getattr(node, f, None)
                if v.__class__ is list:
                    for c in reversed(v):
                        if c is not None and c.__class__ not in leaves:
                            push(c)
                elif v is not None and v.__class__ not in leaves:
                    push(v)

    def _top_names(self, tree: ast.Module, module: _Scope) -> None:
        names = list(module.defs)
        seen = set(names)                        # (a list search per name: n^2 for n assignments)
        for st in tree.body:
            targets = st.targets if type(st) is ast.Assign else \
                [st.target] if type(st) is ast.AnnAssign else []
            for tg in targets:
                for n in (tg.elts if type(tg) is ast.Tuple else [tg]):
                    if type(n) is ast.Name and n.id not in seen:
                        seen.add(n.id)
                        names.append(n.id)
        module.names = names

    def _keep_for_implementations(self, body: list, scope: _Scope) -> None:
        """For each name ``body`` defines as ``@overload`` signatures and one implementation
        after them, the plain key kept for the implementation (the signatures, met first, get
        ``#2``, ``#3``)."""
        groups: dict[str, list] = {}
        for st in body:
            if st.__class__ is ast.FunctionDef or st.__class__ is ast.AsyncFunctionDef:
                groups.setdefault(st.name, []).append(st)
        for name, defs in groups.items():
            if len(defs) < 2:
                continue
            impl = [d for d in defs if not any(_is_overload(x) for x in d.decorator_list)]
            key = self.prefix + f"{scope.qual}.{name}"
            if len(impl) == 1 and impl[0] is not defs[0] and key not in self.keys:
                self.keys.add(key)
                self._impl[id(impl[0])] = key

    def _unique(self, key: str) -> str:
        if key in self.keys:
            n = self._dups.get(key, 2)          # numbers below it are taken (counted from 2 each time: n^2)
            while f"{key}#{n}" in self.keys:
                n += 1
            self._dups[key] = n + 1
            key = f"{key}#{n}"
        self.keys.add(key)
        return key

    def _new(self, node, scope: _Scope, kind: str, text: str, props: dict) -> _Scope:
        qual = f"{scope.qual}.{node.name}"
        key = self._impl.pop(id(node), None) or self._unique(self.prefix + qual)
        first = key == self.prefix + qual
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        rec = NodeRec(key=key, kind=kind, name=node.name, text=text, qualname=qual,
                      line_start=start, line_end=node.end_lineno, parent=scope.key,
                      flags=self.flags, props=props,
                      aliases=self._aliases(qual) if first else [])
        self.res.nodes.append(rec)
        self.res.edges.append(EdgeRec(scope.key, key, "contains", "key", line=node.lineno))
        scope.defs.setdefault(node.name, qual)
        return _Scope(key, qual, "class" if kind == "class" else "function", scope, rec)

    def _function(self, node, scope: _Scope) -> _Scope:
        a = node.args
        is_async = type(node) is ast.AsyncFunctionDef
        sig = f"{'async ' if is_async else ''}def {node.name}({ast.unparse(a)})"
        if node.returns is not None:
            sig += f" -> {ast.unparse(node.returns)}"
        decos = [ast.unparse(d) for d in node.decorator_list]
        doc = ast.get_docstring(node) or ""
        body = node.body[1:] if doc else node.body
        parts = [f"@{d}" for d in decos] + [sig] + ([doc] if doc else [])
        head = "\n".join(parts)
        text = head[:MAX_TEXT]
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        rest = None                                  # the first source line the text does not hold
        if len(head) > MAX_TEXT:
            rest = start
        elif body and len(head) < MAX_TEXT:
            cut = MAX_TEXT - len(head) - 1
            src = self._src(body[0].lineno, node.end_lineno, MAX_TEXT - len(head))
            text = head + "\n" + _dedent(src[:cut], body[0].col_offset)
            rest, at = body[0].lineno, -1
            for line in src.split("\n"):
                at += 1 + len(line)
                if at > cut:
                    break
                rest += 1
        elif body:
            rest = body[0].lineno
        props: dict = {}
        if decos:
            props["decorators"] = decos
        if is_async:
            props["async"] = True
        inner = self._new(node, scope, "method" if scope.kind == "class" else "function", text, props)
        if rest is not None and rest <= node.end_lineno:
            self._long.append((inner.rec, rest))
        outer = scope
        while outer is not None and outer.kind == "class":
            outer = outer.parent
        if outer is not None and outer.kind == "function":     # its body: this function's, not the outer one's
            self._inner.setdefault(outer.key, []).append((start, node.end_lineno))
        inner.params = frozenset(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs
                                 + [a.vararg, a.kwarg] if x is not None)
        if scope.kind == "class":
            params = a.posonlyargs + a.args
            if params and "staticmethod" not in decos:
                inner.self_name = params[0].arg
            inner.cls = scope
        elif scope.kind == "function":           # closures see the method's self
            inner.self_name, inner.cls = scope.self_name, scope.cls
        return inner

    def _class(self, node: ast.ClassDef, scope: _Scope) -> _Scope:
        args = [ast.unparse(b) for b in node.bases]
        args += [f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}"
                 for k in node.keywords]
        sig = f"class {node.name}({', '.join(args)})" if args else f"class {node.name}"
        props: dict = {}
        if node.decorator_list:
            props["decorators"] = [ast.unparse(d) for d in node.decorator_list]
        inner = self._new(node, scope, "class", "", props)
        inner.calls = []
        inner.names = [sig, ast.get_docstring(node) or ""]     # text, finished in _resolve
        self.bases[inner.qual] = []
        self._class_defs.append((inner, node.bases, scope))
        return inner

    def _src(self, start: int, end: int, budget: int) -> str:
        out, n = [], 0
        for line in self.lines[start - 1:end]:
            out.append(line)
            n += len(line) + 1
            if n >= budget:
                break
        return "\n".join(out)

    def _import(self, node) -> None:
        line = node.lineno
        if type(node) is ast.Import:
            for a in node.names:
                self._edge_imports.setdefault(a.name, line)
                if a.asname:
                    self.imports[a.asname] = a.name
                else:
                    head = a.name.partition(".")[0]
                    self.imports[head] = head
            return
        base = self._from_base(node.module, node.level)
        if base is None:
            return
        for a in node.names:
            if a.name == "*":
                self.stars.append(base or self.root_pkg)
                self._edge_imports.setdefault(base or self.root_pkg, line)
            elif base:
                full = f"{base}.{a.name}"
                self.imports[a.asname or a.name] = full
                self._edge_imports.setdefault(f"{full}\n{base}", line)
            else:                          # from the indexed root: a module of it, or a name of its __init__
                full = f"{a.name}\n{self.root_pkg}.{a.name}"
                self.imports[a.asname or a.name] = full
                self._edge_imports.setdefault(f"{full}\n{self.root_pkg}", line)

    def _from_base(self, modname: str | None, level: int) -> str | None:
        """The dotted package a ``from`` import names (``""``: the indexed root itself; None:
        above the root, unresolvable)."""
        if not level:
            return modname
        if self.is_root_init:
            pkg = ""
        else:
            pkg = self.mod if self.is_pkg else self.mod.rpartition(".")[0]
        parts = pkg.split(".") if pkg else []
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        if modname:
            parts.append(modname)
        return ".".join(parts)
