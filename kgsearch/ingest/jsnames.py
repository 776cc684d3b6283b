"""JavaScript and TypeScript: the loader, its names and its edges (definitions:
:mod:`kgsearch.ingest.jscode`).

Names (``ns='js'``, shared by both languages): a definition answers to its key's name,
``<path>:<qualname>`` (``src/utils.js:format``); the default export also to
``<path>:default`` (and its members to ``<path>:default.<member>``).

Edges:

* ``imports``: ``import .. from './x'``, ``export .. from './x'``, ``import('./x')``,
  ``require('./x')`` and TypeScript's ``import x = require('./x')`` -> the file, tried as Node
  and TypeScript resolve a relative path: as written, then with ``.js .ts .tsx .jsx .mjs
  .cjs .mts .cts``, then ``/index`` with those (``./x.js`` also as ``./x.ts`` for TypeScript's
  ES modules). Package imports (``lodash``, ``@scope/pkg``) and path aliases (``@/x`` from
  a tsconfig) are not resolved.
* ``calls``: ``f()`` -> a definition in the enclosing functions, then the file's, then the
  imported binding (named, default, namespace; CommonJS ``const {f} = require(..)``);
  ``ns.f()`` -> ``f`` in the imported module; ``obj.f()`` -> ``obj.f`` in the file (object
  literals and ``X.prototype.f`` assignments are named so); ``this.f()`` -> the class's (or
  constructor function's) ``f``, then its base class's; ``new C()`` -> ``C``. Not resolved:
  calls on other values (parameters, locals, returned objects), re-exports through index files
  (``export * from``), dynamic property access, globals and packages.
* ``inherits`` (``extends``) and ``implements``.
"""
from __future__ import annotations

import posixpath
import re
from bisect import bisect_right

from .codemodel import Builder, Def
from .codescan import call_sites, free, read_source, split_chain
from .jscode import scan
from .jslex import lex
from .langspec import JAVASCRIPT

__all__ = ["load", "module_candidates"]

RESOLVE_EXT = (".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs")
KNOWN_EXT = RESOLVE_EXT + (".mts", ".cts", ".json")
_KEYWORD = re.compile(r"import|export|require|module")
_IMPORT_FROM = re.compile(r"(import|export)\s+(?:type\s+)?([\w\s,{}*$]*?)\s*\bfrom\s*\"")
_FROM_HEAD = re.compile(r"(?:import|export)\s+")
_NOT_CLAUSE = re.compile(r"[^\w\s,{}*$]")
_IMPORT_BARE = re.compile(r"import\s*\"")
_IMPORT_CALL = re.compile(r"(?:import|require)\s*\(\s*\"")
_IMPORT_EQ = re.compile(r"import\s+([\w$]+)\s*=\s*require\s*\(\s*\"")
_REQUIRE_BINDING = re.compile(r"(?:const|let|var)\s+([\w$]+|\{[^{}]*\})\s*=\s*(?:await\s+)?$")
_DEFAULT_EXPORT = re.compile(r"export\s+default\s+(?:(?:async\s+)?function\s*\*?\s*|(?:abstract\s+)?class\s+)?"
                             r"([A-Za-z_$][\w$]*)|module\s*\.\s*exports\s*=\s*([A-Za-z_$][\w$]*)\s*[;\n]")
_GLOBALS = frozenset("console Math JSON Object Array Promise String Number Boolean Date RegExp Error TypeError "
                     "Symbol Map Set WeakMap WeakSet Reflect Proxy process require module exports window document "
                     "globalThis setTimeout setInterval clearTimeout clearInterval parseInt parseFloat isNaN "
                     "isFinite Buffer super if for while switch catch function return typeof import await new "
                     "Intl encodeURIComponent decodeURIComponent structuredClone queueMicrotask async "
                     "extends keyof infer instanceof in void delete throw case else do yield".split())
# (keywords before a "(": `<F extends (...args: any[]) => R>`, `x instanceof (A)`: no calls)


def import_from(code: str, at: int, skip: int) -> tuple[re.Match | None, int]:
    """``_IMPORT_FROM.match(code, at)`` and the offset before which it fails from any start.

    Its clause is a lazy run of ``[\\w\\s,{}*$]`` that must end in ``from "``: the ``"`` is the
    first character past the run, so once an attempt whose head matched fails, every later
    keyword of the same run fails at the same place. Trying each one ran to the end of the run
    again: ``import import ...`` cost n^2 (60 KB: 6.8 s). Tested against the plain match."""
    if at < skip:
        return None, skip
    m = _IMPORT_FROM.match(code, at)
    if m is None:
        h = _FROM_HEAD.match(code, at)
        if h:
            stop = _NOT_CLAUSE.search(code, h.end())
            skip = stop.start() if stop else len(code)
    return m, skip


def module_candidates(rel_dir: str, spec: str) -> list[str]:
    """The files a relative import may mean (see the module docstring; ``[]`` for a package).

    >>> module_candidates("src/a", "../b")[:3], module_candidates("src", "./x.js")
    (['src/b.js', 'src/b.ts', 'src/b.tsx'], ['src/x.js', 'src/x.ts', 'src/x.tsx'])
    """
    if not spec.startswith("."):
        return []
    base = posixpath.normpath(posixpath.join(rel_dir, spec)) if rel_dir else posixpath.normpath(spec)
    if base == ".." or base.startswith("../"):
        return []
    if base == ".":
        return [f"index{e}" for e in RESOLVE_EXT]
    stem, ext = posixpath.splitext(base)
    if ext in KNOWN_EXT:                       # as written (TypeScript's ES modules write .js for .ts)
        return [base] + ([stem + e for e in (".ts", ".tsx")] if ext in (".js", ".jsx") else
                         [stem + ".mts"] if ext == ".mjs" else [stem + ".cts"] if ext == ".cjs" else [])
    return [base + e for e in RESOLVE_EXT] + [f"{base}/index{e}" for e in RESOLVE_EXT]


class _JS(Builder):
    def __init__(self, lx, rel, spec, warning):
        super().__init__(lx, rel, spec, warning)
        self.dir = posixpath.dirname(self.rel)
        self.bindings: dict[str, tuple[list[str], str]] = {}   # local name -> (files, member or "*" / "default")
        self.default = ""
        self.local_heads: set[str] = set()

    def module_name(self) -> str:
        base = self.rel.rsplit("/", 1)[-1]
        stem = base.split(".", 1)[0]
        if stem == "index" and "/" in self.rel:
            return self.rel.rsplit("/", 2)[-2]
        return stem or base

    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod or not self.default:
            return []
        q = d.qual
        if q == self.default or q.startswith(self.default + "."):
            return [(f"{self.rel}:default{q[len(self.default):]}", 0)]
        return []

    # ---- imports -------------------------------------------------------------------------
    def _string_at(self, quote: int) -> str:
        close = self.lx.code.find('"', quote + 1)
        return self.lx.text[quote + 1:close] if close > quote else ""

    def _bind(self, clause: str, files: list[str]) -> None:
        clause = clause.strip()
        if not clause or not files:
            return
        m = re.match(r"([A-Za-z_$][\w$]*)\s*(?:,|$)", clause)
        if m and m.group(1) != "type":
            self.bindings[m.group(1)] = (files, "default")
        ns = re.search(r"\*\s*as\s+([\w$]+)", clause)
        if ns:
            self.bindings[ns.group(1)] = (files, "*")
        named = re.search(r"\{([^}]*)\}", clause)
        if named:
            for item in named.group(1).split(","):
                item = re.sub(r"^\s*type\s+", "", item).strip()
                if not item:
                    continue
                src, _, alias = item.partition(" as ")
                src, alias = src.strip(), (alias.strip() or src.strip())
                if re.fullmatch(r"[\w$]+", alias):
                    self.bindings[alias] = (files, src if src != "default" else "default")

    def scan_imports(self) -> None:
        code = self.lx.code
        skip = -1
        for k in _KEYWORD.finditer(code):
            at = k.start()
            if not free(code, at):
                continue
            m, skip = import_from(code, at, skip)
            if m:
                files = module_candidates(self.dir, self._string_at(m.end() - 1))
                self.imports(files, at)
                if m.group(1) == "import":
                    self._bind(m.group(2), files)
                continue
            m = _IMPORT_BARE.match(code, at) or _IMPORT_CALL.match(code, at)
            if m:
                files = module_candidates(self.dir, self._string_at(m.end() - 1))
                self.imports(files, at)
                if files and code.startswith("require", at):
                    b = _REQUIRE_BINDING.search(code, max(0, at - 200), at)
                    if b:
                        t = b.group(1)
                        if t.startswith("{"):
                            self._bind(t.replace(":", " as "), files)
                        else:
                            self.bindings[t] = (files, "*")
                continue
            m = _IMPORT_EQ.match(code, at)
            if m:
                files = module_candidates(self.dir, self._string_at(m.end() - 1))
                self.imports(files, at)
                if files:
                    self.bindings[m.group(1)] = (files, "*")
                continue
            m = _DEFAULT_EXPORT.match(code, at)
            if m and not self.default:
                self.default = m.group(1) or m.group(2) or ""

    # ---- names -----------------------------------------------------------------------------
    def _imported(self, name: str, tail: list[str]) -> list[str]:
        got = self.bindings.get(name)
        if got is None:
            return []
        files, member = got
        rest = ".".join(tail)
        if member == "*":
            heads = [rest] if rest else ["default"]
        elif member == "default":
            heads = [f"default.{rest}"] if rest else ["default"]
        else:
            heads = [f"{member}.{rest}" if rest else member]
        return [f"{f}:{h}" for h in heads for f in files]

    def _local(self, scope: Def, path: str) -> list[str]:
        out, d, ns = [], scope, []
        while d is not None and d is not self.mod:
            out.append(f"{self.rel}:{d.qual}.{path}")
            ns = d.data.get("ns") or ns
            d = d.parent
        out += [f"{self.rel}:{'.'.join(ns[:k])}.{path}" for k in range(len(ns), 0, -1)]   # namespaces X, A.B
        return out + [f"{self.rel}:{path}"]

    def _class_of(self, scope: Def) -> Def | None:
        d = scope
        while d is not None and d is not self.mod:
            if d.kind == "class":
                return d
            d = d.parent
        return None

    def type_candidates(self, name: str, scope: Def) -> list[str]:
        head, _, rest = name.partition(".")
        return self._local(scope, name) + self._imported(head, rest.split(".") if rest else [])

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        head = parts[0]
        if head in _GLOBALS or head == "":
            return []
        if head == "this":
            if len(parts) != 2:
                return []
            cls = self._class_of(scope)
            if cls is None:                        # a constructor function: this.f = function ..
                fn = scope
                while fn.parent is not None and fn.parent is not self.mod and fn.parent.kind != "class":
                    fn = fn.parent
                return [f"{self.rel}:{fn.qual}.{parts[1]}"] if fn is not self.mod else []
            out = [f"{self.rel}:{cls.qual}.{parts[1]}"]
            for b in cls.data.get("extends", []):
                out += [f"{c}.{parts[1]}" for c in self.type_candidates(b, cls.parent)]
            return out
        path = ".".join(parts)
        if head in self.bindings:
            return self._local(scope, path) + self._imported(head, parts[1:]) if len(parts) == 1 else \
                self._imported(head, parts[1:])
        if len(parts) > 1 and head not in self.local_heads:
            return []
        return self._local(scope, path)


_NAMESPACE = re.compile(r"(?:namespace|module)\s+([A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*)\s*\{")


def qualify_namespaces(lx, defs) -> None:
    """TypeScript ``namespace X { }`` / ``module X { }`` (``namespace A.B { }``, nested ones):
    not nodes, their names prefix the local names of the definitions directly in them
    (``X.f``, ``A.B.k``, as C++ namespaces prefix theirs); ``declare module "name" { }`` and
    ``declare global { }`` do not. ``defs`` are nested (:meth:`Builder.nest`). Not in declaration
    files (``.d.ts``): there ``declare namespace dayjs`` merges with the package's export and holds
    its whole API, and the package's name on each of its 300 members lifted dayjs'
    types/index.d.ts over the code for its issues (MRR@10 .559 -> .554 in code_tasks_multi)."""
    code, pairs = lx.code, lx.pairs
    spaces: list[tuple[int, int, str, int]] = []   # (body {, its }, name, index of the one around it)
    stack: list[int] = []
    for m in _NAMESPACE.finditer(code):
        if not free(code, m.start()):
            continue
        o = m.end() - 1
        while stack and spaces[stack[-1]][1] < o:
            stack.pop()
        spaces.append((o, pairs.get(o, len(code)), re.sub(r"\s+", "", m.group(1)), stack[-1] if stack else -1))
        stack.append(len(spaces) - 1)
    if not spaces:
        return
    opens = [sp[0] for sp in spaces]
    for d in defs:
        i = bisect_right(opens, d.start) - 1
        while i >= 0 and spaces[i][1] < d.start:
            i = spaces[i][3]
        outer = d.parent.start if d.parent is not None and d.parent.kind != "module" else -1
        names = []
        while i >= 0 and spaces[i][0] > outer:
            names.append(spaces[i][2])
            i = spaces[i][3]
        if names:
            d.data["ns"] = names[::-1]
            d.local = ".".join(names[::-1] + [d.local])


def load(path, rel: str, opts, spec=JAVASCRIPT):
    text, warning = read_source(path)
    lx = lex(text)
    b = _JS(lx, rel, spec, warning)
    b.scan_imports()
    defs = scan(lx, spec.name == "typescript")
    b.nest(defs)
    if not rel.endswith((".d.ts", ".d.mts", ".d.cts")):
        qualify_namespaces(lx, b.defs)
    b.local_heads = {d.local.split(".", 1)[0] for d in b.defs}
    for d in b.defs:
        for kind, target in (("extends", d.bases), ("implements", d.implements)):
            for t in d.data.get(kind, ()):
                target.append((b.type_candidates(t, d.parent), d.name_at))
    return b.build([(at, split_chain(raw)) for at, raw in call_sites(lx.code, {d.name_at for d in b.defs})])

