"""PHP source: files, classes, interfaces, traits, enums, functions and methods, and their edges.

PHP reads as Java does where the two agree (:mod:`kgsearch.ingest.javacode`: names qualified by
a package, here the namespace; imports; calls through names and types), on the lexer of
:mod:`kgsearch.ingest.phplex` (inline HTML, comments, strings, heredocs blanked).

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``); classes, interfaces, traits
and enums (``class``, ``decl`` says which; anonymous classes are none); functions (``function``,
top-level and nested in functions) and methods (``method``: body-less abstract and interface ones
too). Spans start at the first attribute (``#[Route('/x')]``) or modifier and end at the closing
brace or ``;``. Closures and arrow functions (``function () use ($x) {..}``, ``fn($x) => ..``)
are no nodes: their code belongs to the definition around them. Tests: ``tests/``, ``test/``,
``*Test.php``.

Names (``ns='php'``): namespaces (``namespace App\\Models;`` or ``namespace App\\Models { }``)
qualify names as a Java package does, with dots: a class answers to ``App.Models.User``, a method
to ``App.Models.User.find``, a function to ``App.Models.helper``, a file to
``<namespace>.<file name>`` and to its namespace.

Edges:

* ``imports``: ``use A\\B\\C;`` (``as D``, group uses ``use A\\B\\{C, D as E};``, ``use
  function A\\f;``) -> the class or function, else the namespace.
* ``calls``: ``f()`` -> an imported function, the namespace's, a global one (never a method:
  PHP calls methods through ``$this->``, ``self::``, ``static::``); ``$this->m()``,
  ``self::m()``, ``static::m()`` -> the enclosing classes' ``m``, then their bases' and traits';
  ``parent::m()`` -> the bases'; ``Cls::m()`` and ``new Cls()`` -> through the imports, the
  namespace and the global one. Not resolved: calls on values (``$x->m()``: the type of ``$x`` is
  unknown), variable functions (``$f()``), magic methods, anything outside the tree.
* ``inherits`` (``extends``; a ``use Trait;`` in a class body) and ``implements``.
"""
from __future__ import annotations

import re
from bisect import bisect_right

from .codemodel import Builder, Def
from .codescan import call_sites, read_source, split_chain
from .javacode import NamespacedBuilder
from .langspec import PHP
from .phplex import lex

NAME = "php"
EXTENSIONS = PHP.extensions

__all__ = ["NAME", "EXTENSIONS", "load", "PhpBuilder"]

_NAMESPACE = re.compile(r"\bnamespace\s+([\w\\]+)\s*([;{])")
_USE = re.compile(r"\buse\s+(?:(function|const)\s+)?([\\\w]+(?:\s*\{[^{}]*\})?(?:\s+as\s+\w+)?"
                  r"(?:\s*,\s*[\\\w]+(?:\s+as\s+\w+)?)*)\s*;")
_TYPE = re.compile(r"\b(class|interface|trait|enum)\s+([A-Za-z_]\w*)")
_FUNCTION = re.compile(r"\bfunction(?:\s+&?\s*|\s*&\s*)([A-Za-z_]\w*)\s*\(")      # (not function_exists()
_WORD = re.compile(r"[A-Za-z_]\w*")
_HEADS = re.compile(r"\b(extends|implements)\b")
_TRAIT_USE = re.compile(r"\buse\s+([\\\w]+(?:\s*,\s*[\\\w]+)*)\s*[;{]")
MODIFIERS = frozenset("public protected private static abstract final readonly var".split())
_KEYWORDS = frozenset("if elseif else for foreach while do switch match catch return new echo print isset unset empty "
                      "list array function fn use include include_once require require_once exit die eval declare "
                      "clone throw yield instanceof and or xor".split())
_SPACE = re.compile(r"\s*")


def _dotted(name: str) -> str:
    return name.strip().strip("\\").replace("\\", ".")


class PhpBuilder(NamespacedBuilder):
    def __init__(self, lx, rel, spec, warning):
        Builder.__init__(self, lx, rel, spec, warning)
        self.pkg = ""
        self.types: dict[str, str] = {}           # use A\B\C (as D): simple name -> qualified
        self.stars: list[str] = []
        self.static: dict[str, list[str]] = {}    # use function A\f: f -> [A.f]
        self.static_stars: list[str] = []
        self.spaces: list[tuple[int, int, str]] = []      # (start, end, dotted namespace)
        self._starts: list[int] = []

    # ---- namespaces and imports ------------------------------------------------------------
    def _scan_namespaces(self) -> None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        found = [m for m in _NAMESPACE.finditer(code)]
        for i, m in enumerate(found):
            end = pairs.get(m.start(2), n) if m.group(2) == "{" else (found[i + 1].start() if i + 1 < len(found) else n)
            self.spaces.append((m.start(), end, _dotted(m.group(1))))
            self._starts.append(m.start())

    def ns_at(self, pos: int) -> str:
        i = bisect_right(self._starts, pos) - 1
        return self.spaces[i][2] if i >= 0 and pos <= self.spaces[i][1] else ""

    def scan_imports(self) -> None:
        self._scan_namespaces()
        code, lx = self.lx.code, self.lx
        opens = {lx.pairs.get(e) for _, e, _ in self.spaces}
        for m in _USE.finditer(code):
            o = lx.enclosing(m.start())
            if o >= 0 and o not in opens:
                continue                                  # a trait use in a class body (scan reads it)
            kind = m.group(1)
            if kind == "const":
                continue
            for qual, alias in _use_names(m.group(2)):
                if kind == "function":
                    self.static.setdefault(alias, []).append(qual)
                else:
                    self.types[alias] = qual
                self.imports([qual, qual.rpartition(".")[0]], m.start())

    # ---- names -----------------------------------------------------------------------------
    def type_candidates(self, name: str, scope: Def | None) -> list[str]:
        if scope is not None:
            self.pkg = self.scope_ns(scope)
        if name.startswith("\\"):
            return [_dotted(name)]
        name = _dotted(name)
        out = super().type_candidates(name, scope)
        if self.pkg:
            out.append(name)                               # a global class
        return out

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        self.pkg = self.scope_ns(scope)
        head = parts[0]
        classes = self._classes_around(scope)
        if len(parts) == 1:
            if head in _KEYWORDS or head.startswith("$"):
                return []
            if head[:1].isupper():                     # Cls(..): written after `new`
                return self.type_candidates(head, scope)
            return self.static.get(head, []) + [self.q(head)] + ([head] if self.pkg else [])
        if len(parts) != 2:
            return []
        member = parts[1]
        if head in ("$this", "self", "static"):
            if not classes:
                return []
            out = [self.q(f"{c.qual}.{member}") for c in classes]
            return out + [f"{b}.{member}" for b in self._base_candidates(classes[0])]
        if head == "parent":
            return [f"{b}.{member}" for b in self._base_candidates(classes[0])] if classes else []
        if head.startswith("$"):
            return []
        return [f"{t}.{member}" for t in self.type_candidates(head, scope)]

    # ---- definitions ---------------------------------------------------------------------
    def scan(self) -> None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        defs: list[Def] = []
        trait_uses: dict[int, list[re.Match]] = {}        # a body's "{" -> the `use T;` right in it
        for u in _TRAIT_USE.finditer(code):                # (one pass: not each nested body again)
            trait_uses.setdefault(self.lx.enclosing(u.start()), []).append(u)
        for m in _TYPE.finditer(code):
            at = m.start()
            if at and (code[at - 1] in "$>:\\" or code[at - 2:at] == "::"):
                continue                                   # Foo::class, $x->class
            kw = m.group(1)
            if kw == "enum" and not re.match(r"\s*(?::\s*\w+\s*)?(?:implements\b[^{;]*)?\{", code[m.end():m.end() + 200]):
                continue                                   # `enum` as a name
            body = self._body(m.end())
            if body is None:
                continue
            d = Def("class", m.group(2), self._start(at), pairs.get(body, n) + 1, body, m.start(2), kw)
            self.pkg = self.ns_at(at)                      # (its bases are named from its namespace)
            head = code[m.end():body]
            if kw == "enum":
                head = re.sub(r"^\s*:\s*\w+", "", head)
            parts = _HEADS.split(head)
            for i in range(1, len(parts) - 1, 2):
                names = [x for x in (t.strip() for t in parts[i + 1].split(",")) if x]
                target = d.bases if parts[i] == "extends" else d.implements
                target += [(self.type_candidates(t, None), m.start(2)) for t in names]
            for u in trait_uses.get(body, ()):
                d.bases += [(self.type_candidates(t.strip(), None), u.start(1)) for t in u.group(1).split(",")]
            defs.append(d)
        for m in _FUNCTION.finditer(code):
            at = m.start()
            if at and code[at - 1] in "$>:\\":
                continue
            pclose = pairs.get(m.end() - 1, n - 1)
            end, body = self._function_end(pclose + 1)
            defs.append(Def("function", m.group(1), self._start(at), end, body, m.start(1)))
        self.nest(defs)

    def _body(self, pos: int) -> int | None:
        """The ``{`` of a type's body after its header (None: no body before a ``;`` or ``}``)."""
        code, n = self.lx.code, len(self.lx.code)
        k = pos
        while k < n:
            c = code[k]
            if c == "{":
                return k
            if c in ";}()":
                return None
            k += 1
        return None

    def _function_end(self, pos: int) -> tuple[int, int | None]:
        """After a function's parameters: its end and body ``{`` (None: abstract, interface)."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        k = pos
        while k < n:
            c = code[k]
            if c == "{":
                return pairs.get(k, n - 1) + 1, k
            if c == ";":
                return k + 1, None
            if c in "(":
                k = pairs.get(k, n - 1) + 1
                continue
            if c in "})=":
                return k, None
            k += 1
        return n, None

    def _start(self, at: int) -> int:
        """The first attribute or modifier before the keyword at ``at``."""
        code, pairs = self.lx.code, self.lx.pairs
        i = at
        while True:
            j = i - 1
            while j >= 0 and code[j] in " \t\r\n":
                j -= 1
            if j < 0:
                return i
            if code[j] == "]":                             # #[Attr(..)]
                o = pairs.get(j, -1)
                if o > 0 and code[o - 1] == "#":
                    i = o - 1
                    continue
                return i
            if code[j].isalnum() or code[j] == "_":
                k = j
                while k > 0 and (code[k - 1].isalnum() or code[k - 1] == "_"):
                    k -= 1
                if code[k:j + 1].lower() in MODIFIERS:
                    i = k
                    continue
            return i


def _use_names(spec: str) -> list[tuple[str, str]]:
    """``A\\B\\{C, D as E}`` -> [('A.B.C', 'C'), ('A.B.D', 'E')]; ``A\\B as X, C`` -> ..."""
    out = []
    spec = " ".join(spec.split())
    group = re.match(r"([\\\w]+)\s*\{([^{}]*)\}", spec)
    if group:
        prefix = group.group(1).rstrip("\\")
        items = [f"{prefix}\\{x.strip()}" for x in group.group(2).split(",") if x.strip()]
    else:
        items = [x.strip() for x in spec.split(",") if x.strip()]
    for item in items:
        name, _, alias = item.partition(" as ")
        qual = _dotted(name)
        out.append((qual, alias.strip() or qual.rsplit(".", 1)[-1]))
    return out


def load(path, rel: str, opts, spec=PHP):
    text, warning = read_source(path)
    lx = lex(text)
    b = PhpBuilder(lx, rel, spec, warning)
    b.scan_imports()
    b.scan()
    skip = {d.name_at for d in b.defs}
    return b.build([(at, split_chain(raw)) for at, raw in call_sites(lx.code, skip)])
