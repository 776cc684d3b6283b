"""Java source: files, types, methods and constructors, and their edges.

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``); classes, interfaces,
enums, records and annotation types, nested and local ones too (``class``, ``decl`` says
which); methods and constructors (``method``; body-less interface and abstract methods
included; overloads get ``#2`` keys), also those of anonymous classes and enum constants
(under the enclosing definition). Spans start at the annotations and modifiers; the Javadoc
(or plain comment) right above is the doc. Tests: Maven/Gradle ``src/test/`` trees and
``*Test.java``, ``*Tests.java``, ``*IT.java``, ``Test*.java`` files.

Names (``ns='java'``): a type answers to its fully qualified name (``com.x.Outer.Inner``), a
method to ``<type>.<name>`` (every overload: the first one wins), a file to
``<package>.<file name>`` and to its package.

Edges:

* ``imports``: single-type imports -> the type; ``import static a.B.m`` -> ``a.B.m``, else
  ``a.B``; on-demand imports (``a.b.*``) -> the package (one of its files).
* ``calls``: ``m()``, ``this.m()`` -> the enclosing classes' ``m``, then the bases'; ``super.m()``
  -> the bases'; ``Type.m()`` and ``new Type()`` -> through the imports, the enclosing types,
  the package, on-demand imports; ``super(..)``/``this(..)`` -> the base / own class; static
  imports. Not resolved: calls on values (``x.m()``: the type of ``x`` is unknown), methods
  inherited from bases more than one level up, and anything outside the tree.
* ``inherits`` (``extends``) and ``implements``.
"""
from __future__ import annotations

import re

from .clex import lex
from .codemodel import Builder, Def
from .codescan import call_sites, find_end, read_source, split_chain
from .langspec import JAVA

NAME = "java"
EXTENSIONS = JAVA.extensions

__all__ = ["NAME", "EXTENSIONS", "load", "JavaBuilder", "NamespacedBuilder", "type_names", "boundary", "import_matches",
           "read_and_build"]

_PACKAGE = re.compile(r"\bpackage\s+([\w.\s]+?)\s*;")
_IMPORT = re.compile(r"\bimport\s+(static\s+)?([\w.\s]+?)(\.\s*\*)?\s*;")
_IMPORT_HEAD = re.compile(r"\bimport\s+")
_PACKAGE_HEAD = re.compile(r"\bpackage\s+")
_NOT_NAME = re.compile(r"[^\w.\s]")
_TYPE = re.compile(r"(?<![\w.$])(class|interface|enum|record|@\s*interface)\s+([A-Za-z_$][\w$]*)")
_ANON = re.compile(r"(?<![\w$])new\s+[\w$.]+\s*(?:<(?:[^<>;{}()]|<(?:[^<>;{}()]|<[^<>;{}()]*>)*>)*>)?\s*\(")
_MEMBER = re.compile(r"([A-Za-z_$][\w$]*)\s*\(")
_AFTER_PARAMS = re.compile(r"\s*(?:\[\s*\]\s*)*(?:throws\s+[\w$.<>,\s?\[\]&]+?)?\s*(\{|;|default\b)")
_PREV_WORD = re.compile(r"([\w$]+)\s*$")
# (`record R(int a) {`: the record's header, read as a constructor R of its class: its node's twin)
_NOT_BEFORE = frozenset("new return throw else case yield assert record".split())
_KEYWORDS = frozenset("if for while switch catch synchronized return new throw try do else case assert yield "
                      "instanceof".split())
_CLOSERS = re.compile(r"[)\]]")


def import_matches(code: str, pattern: re.Pattern = _IMPORT, head: re.Pattern = _IMPORT_HEAD,
                   first: bool = False) -> list[re.Match]:
    """``_IMPORT.finditer(code)`` (or the first match of ``_PACKAGE``), in linear time. The
    name is a lazy run of ``[\\w.\\s]`` that ends at ``;`` (or ``.*;``): from every keyword the
    regex ran to the end of that run, so a file of ``import import ...`` with no ``;`` cost n^2
    (60 KB: 8.9 s; ``package package ...`` 3.3 s). Once an attempt whose head matched fails,
    every later keyword of the same run fails at the same place, so the run is skipped; every
    match is still the regex's own (tested against finditer and search)."""
    out: list[re.Match] = []
    pos = 0
    skip = -1
    for k in head.finditer(code):
        at = k.start()
        if at < pos or at < skip:
            continue
        m = pattern.match(code, at)
        if m:
            out.append(m)
            if first:
                break
            pos = m.end()
        else:
            stop = _NOT_NAME.search(code, k.end())
            skip = stop.start() if stop else len(code)
    return out
_GROUP = re.compile(r"\([^()]*\)")
_HEADS = re.compile(r"\b(extends|implements|permits)\b")
_GENERIC = re.compile(r"<[^<>]*>")


def type_names(s: str) -> list[str]:
    """``A<B<C>>, d.E`` -> ``['A', 'd.E']``."""
    prev = None
    while prev != s:
        prev, s = s, _GENERIC.sub("", s)
    return [re.sub(r"\s+", "", t).removesuffix("[]") for t in s.split(",") if re.sub(r"\s+", "", t)]


def boundary(code: str, pairs: dict, lo: int, at: int) -> int:
    """Start of the declaration whose name is at ``at``: after the last ``;``, ``{`` or ``}``
    between ``lo`` and ``at`` that is not inside brackets (annotation arguments such as
    ``@A({1, 2})``), blanks skipped."""
    i = at
    while True:
        b = max(code.rfind(";", lo, i), code.rfind("{", lo, i), code.rfind("}", lo, i))
        if b < 0:
            b = lo - 1
            break
        opener = None
        for m in _CLOSERS.finditer(code, b, at):
            o = pairs.get(m.start(), -1)
            if 0 <= o < b and (opener is None or o < opener):
                opener = o
        if opener is None:
            break
        i = opener
    j = b + 1
    while j < at and code[j] in " \t\n":
        j += 1
    return j


class JavaBuilder(Builder):
    CALLS_IN_TYPES = True

    def __init__(self, lx, rel, spec, warning):
        super().__init__(lx, rel, spec, warning)
        m = next(iter(import_matches(lx.code, _PACKAGE, _PACKAGE_HEAD, first=True)), None)   # _PACKAGE.search
        self.pkg = re.sub(r"\s+", "", m.group(1)) if m else ""
        self.types: dict[str, str] = {}       # simple name -> imported qualified name
        self.stars: list[str] = []            # on-demand imports (packages or types)
        self.static: dict[str, list[str]] = {}
        self.static_stars: list[str] = []

    def q(self, name: str) -> str:
        return f"{self.pkg}.{name}" if self.pkg else name

    def not_calls(self) -> set[int]:
        """Offsets of names that look like calls but are none (besides the definitions' own)."""
        return set()

    def is_call(self, at: int, raw: str) -> bool:
        """The call site ``raw`` at ``at`` is a call (not a part of a definition's header)."""
        return True

    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod:
            out = [(self.q(self.mod.name), 1)]
            if self.pkg:
                out.append((self.pkg, 2))
            return out
        if d.data.get("anonymous"):
            return []
        return [(self.q(d.qual), 0)]

    def scan_imports(self) -> None:
        for m in import_matches(self.lx.code):
            name = re.sub(r"\s+", "", m.group(2))
            if m.group(1):
                if m.group(3):
                    self.static_stars.append(name)
                    self.imports([name], m.start())
                else:
                    self.static.setdefault(name.rsplit(".", 1)[-1], []).append(name)
                    self.imports([name, name.rpartition(".")[0]], m.start())
            elif m.group(3):
                self.stars.append(name)
                self.imports([name], m.start())
            else:
                self.types[name.rsplit(".", 1)[-1]] = name
                self.imports([name], m.start())

    # ---- definitions ---------------------------------------------------------------------
    def scan(self) -> None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        defs: list[Def] = []
        bodies: list[tuple[int, str, Def | None]] = []      # (class body "{", class name, the type)
        for m in _TYPE.finditer(code):
            kw = re.sub(r"\s+", "", m.group(1))
            at = m.end()
            if kw == "record" and not re.match(r"\s*[(<]", code[at:at + 40]):
                continue
            body = find_end(code, pairs, at, "{;")
            if body >= n or code[body] != "{":
                continue
            start = boundary(code, pairs, 0, m.start())
            d = Def("class", m.group(2), start, pairs.get(body, n) + 1, body, m.start(2),
                    {"@interface": "annotation"}.get(kw, kw))
            head = code[at:body]
            parts = _HEADS.split(head)
            for i in range(1, len(parts) - 1, 2):
                names = type_names(parts[i + 1])
                if parts[i] == "extends" and kw != "interface":
                    d.bases += [(self.type_candidates(t, None), m.start(2)) for t in names]
                elif parts[i] == "extends" or parts[i] == "implements":
                    target = d.bases if kw == "interface" else d.implements
                    target += [(self.type_candidates(t, None), m.start(2)) for t in names]
            defs.append(d)
            bodies.append((body, m.group(2), d))
        for m in _ANON.finditer(code):
            close = pairs.get(m.end() - 1, n)
            b = re.compile(r"\s*\{").match(code, close + 1)
            if b:
                bodies.append((b.end() - 1, "", None))
        for body, cname, d in list(bodies):
            if d is not None and d.decl == "enum":
                bodies += self._enum_constant_bodies(body)
        for body, cname, d in bodies:
            defs += self._members(body, cname, d)
        self.nest(defs)

    def _enum_constant_bodies(self, body: int) -> list[tuple[int, str, None]]:
        code, pairs = self.lx.code, self.lx.pairs
        close = pairs.get(body, len(code))
        end = find_end(code, pairs, body + 1, ";")
        out = []
        at = body + 1
        while at < min(end, close):
            o = code.find("{", at, min(end, close))
            if o < 0:
                break
            out.append((o, "", None))
            at = pairs.get(o, close) + 1
        return out

    def _members(self, body: int, cname: str, owner: Def | None) -> list[Def]:
        """Methods and constructors declared directly in the class body at ``body``."""
        code, pairs = self.lx.code, self.lx.pairs
        close = pairs.get(body, len(code))
        out = []
        seg = body + 1
        at = seg
        while at < close:
            o = code.find("{", at, close)     # (searched up to the next block only: read through
            m = _MEMBER.search(code, at, close if o < 0 else o)   # each nested class body, n^2)
            if m is None and o < 0:
                break
            if m is None:                     # a nested block first: skip it
                at = pairs.get(o, close) + 1
                seg = at
                continue
            pclose = pairs.get(m.end() - 1, close)
            name, nat = m.group(1), m.start(1)
            a = _AFTER_PARAMS.match(code, pclose + 1)
            if a is None or name in _KEYWORDS or not self._declared(nat, seg, name, cname):
                at = pclose + 1 if a is None else a.end()
                if a is not None and a.group(1) == "{":
                    at = pairs.get(a.end() - 1, close) + 1
                    seg = at
                continue
            kind_body = a.group(1)
            if kind_body == "{":
                b = a.end() - 1
                end = pairs.get(b, close) + 1
            else:
                b = None
                end = a.end() if kind_body == ";" else find_end(code, pairs, a.end(), ";") + 1
            start = boundary(code, pairs, seg, nat)
            d = Def("method", name, start, end, b, nat, "constructor" if name == cname else "method")
            if owner is None:
                d.data["anonymous"] = True
            out.append(d)
            at = end
            seg = at
        if owner is not None and owner.decl == "record":       # compact constructor: Name { ... }
            for m in re.finditer(r"(?<![\w$.])" + re.escape(cname) + r"\s*\{", code[body + 1:close]):
                o = body + 1 + m.end() - 1
                if code.count("{", body + 1, o) == code.count("}", body + 1, o):
                    nat = body + 1 + m.start()
                    out.append(Def("method", cname, boundary(code, pairs, body + 1, nat), pairs.get(o, close) + 1,
                                   o, nat, "constructor"))
        return out

    def _declared(self, nat: int, seg: int, name: str, cname: str) -> bool:
        """A declaration, not a call in a field initialiser: a type (or, for a constructor,
        modifiers or nothing) before the name; no ``=``, ``.``, ``@`` or ``new`` there."""
        code = self.lx.code
        head = code[boundary(code, self.lx.pairs, seg, nat):nat]
        prev = None
        while prev != head:                   # annotation arguments
            prev, head = head, _GROUP.sub("", head)
        head = head.strip()
        if not head:
            return name == cname
        if head[-1] in "=.@(,!&|?:+-*/%^~" or "=" in head:
            return False
        w = _PREV_WORD.search(head)
        return not (w and w.group(1) in _NOT_BEFORE)

    # ---- names -----------------------------------------------------------------------------
    def _classes_around(self, scope: Def) -> list[Def]:
        out, d = [], scope
        while d is not None and d is not self.mod:
            if d.kind == "class":
                out.append(d)
            d = d.parent
        return out

    def type_candidates(self, name: str, scope: Def | None) -> list[str]:
        head, _, rest = name.partition(".")
        tail = f".{rest}" if rest else ""
        out = []
        if head in self.types:
            out.append(self.types[head] + tail)
        for c in self._classes_around(scope) if scope is not None else []:
            out.append(self.q(f"{c.qual}.{name}"))
        out.append(self.q(name))
        out += [f"{s}.{name}" for s in self.stars]
        if rest:
            out.append(name)
        return out

    def _base_candidates(self, cls: Def) -> list[str]:
        return [c for cands, _ in cls.bases + cls.implements for c in cands]

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        classes = self._classes_around(scope)
        head = parts[0]
        if len(parts) == 1:
            if head in _KEYWORDS:
                return []
            if head == "super":
                return self._base_candidates(classes[0]) if classes else []
            if head == "this":
                return [self.q(classes[0].qual)] if classes else []
            out = [self.q(f"{c.qual}.{head}") for c in classes]
            if classes:
                out += [f"{b}.{head}" for b in self._base_candidates(classes[0])]
            out += self.static.get(head, [])
            out += [f"{s}.{head}" for s in self.static_stars]
            if head[:1].isupper():
                out += self.type_candidates(head, scope)
            return out
        if head in ("this", "super") and len(parts) == 2:
            if not classes:
                return []
            out = [self.q(f"{classes[0].qual}.{parts[1]}")] if head == "this" else []
            return out + [f"{b}.{parts[1]}" for b in self._base_candidates(classes[0])]
        if head[:1].isupper():
            types = self.type_candidates(".".join(parts[:-1]), scope)
            return [f"{t}.{parts[-1]}" for t in types]
        return []


class NamespacedBuilder(JavaBuilder):
    """A Java builder whose package is the namespace around each definition (C#'s ``namespace
    A.B``, PHP's ``namespace A\\B``): the language's scanner lists ``spaces`` (start, end, dotted
    name) and answers :meth:`ns_at`; a definition answers to its namespace's name, a file to
    ``<first namespace>.<file name>`` and to each namespace it declares."""

    spaces: list[tuple[int, int, str]]

    def ns_at(self, pos: int) -> str:
        raise NotImplementedError

    def scope_ns(self, d: Def | None) -> str:
        """The namespace of the definition ``d`` (the file's only one for the file itself)."""
        if d is None or d is self.mod:
            return self.spaces[0][2] if len(self.spaces) == 1 else ""
        if "ns" not in d.data:
            d.data["ns"] = self.ns_at(d.start)
        return d.data["ns"]

    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod:
            names = list(dict.fromkeys(name for _, _, name in self.spaces))
            out = [(f"{names[0]}.{self.mod.name}" if names else self.mod.name, 1)]
            return out + [(ns, 2) for ns in names]
        self.pkg = self.scope_ns(d)
        return super().aliases(d)


def read_and_build(builder, dialect: str, path, rel: str, spec):
    """Read ``path``, lex it in ``dialect`` and build its nodes and edges with ``builder`` (a
    :class:`JavaBuilder`: Java's, C#'s)."""
    text, warning = read_source(path)
    lx = lex(text, dialect)
    b = builder(lx, rel, spec, warning)
    b.scan_imports()
    b.scan()
    skip = {d.name_at for d in b.defs} | b.not_calls()
    return b.build([(at, split_chain(raw)) for at, raw in call_sites(lx.code, skip) if b.is_call(at, raw)])


def load(path, rel: str, opts, spec=JAVA):
    return read_and_build(JavaBuilder, "java", path, rel, spec)
