"""C# source: files, types, methods, properties and local functions, and their edges.

C# reads as Java does (:mod:`kgsearch.ingest.javacode`: its names, imports and calls are
Java's, through a few overrides); what differs is the shape of a class body, read here member by
member.

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``); classes, structs,
interfaces, enums and records (``record struct`` too), nested ones too (``class``, ``decl`` says
which; a ``partial`` class is a node in each file); methods, constructors (static ones too),
finalizers (named after the class), operators (``operator+``, conversions ``operator int``),
body-less interface, abstract, ``partial`` and ``extern`` methods (``method``, ``decl`` says
which; overloads get ``#2`` keys); properties, indexers (``this``) and events whose accessors
have a body, and expression-bodied ones (``=>``), as methods named by the property (``decl``
``property``, ``indexer``, ``event``; an auto-property ``{ get; set; }`` is no node); local
functions (``function``, in methods, accessors, other local functions and top-level
statements). Spans start at the first attribute (``[Attr(..)]``) or modifier and end at the
closing brace or ``;``. Tests: ``*Tests.cs``, ``*Test.cs``, ``test/``, ``tests/`` and ``*.Tests/``
project folders, and any file with a ``using`` of NUnit, xUnit or MSTest (:data:`TEST_FRAMEWORKS`).

Names (``ns='cs'``): namespaces (``namespace A.B { }``, nested, or file-scoped ``namespace A.B;``)
qualify names as a Java package does: a type answers to ``A.B.Outer.Inner``, a member to
``<type>.<name>``, a file to ``<namespace>.<file name>`` and to each namespace it declares.

Edges:

* ``imports``: ``using A.B;`` (``global using`` too) -> the namespace (one of its files);
  ``using static A.B.C;`` and ``using X = A.B.C;`` -> the type (else the namespace).
* ``calls``: Java's rules (``M()``, ``this.M()`` -> the enclosing types' ``M``, then the bases';
  ``base.M()`` -> the bases'; ``Type.M()`` and ``new Type()`` -> through the aliases, the
  enclosing types, the namespace and the namespaces around it, the ``using`` namespaces;
  ``: base(..)``/``: this(..)`` -> the base / own class; ``using static`` members). Not
  resolved: calls on values (``x.M()``, extension methods: the type of ``x`` is unknown),
  methods of bases more than one level up, anything outside the tree.
* ``inherits`` / ``implements`` from the base list ``class A : B, IC``: C# does not say which
  is the class, so the first base is inherited unless its name reads as an interface's
  (``I`` + a capital), the others implemented; a struct implements all, an interface inherits all.
"""
from __future__ import annotations

import re
from bisect import bisect_right

from ..types import FLAG_TEST
from .codemodel import Builder, Def
from .codescan import find_end
from .javacode import NamespacedBuilder, boundary, import_matches, read_and_build, type_names
from .langspec import CSHARP

NAME = "csharp"
EXTENSIONS = CSHARP.extensions

__all__ = ["NAME", "EXTENSIONS", "load"]

_ANG = r"<(?:[^<>;{}()]|<(?:[^<>;{}()]|<[^<>;{}()]*>)*>)*>"          # generic arguments, 3 deep
_NAMESPACE = re.compile(r"namespace\s+([\w.\s]+?)\s*([{;])")
_NAMESPACE_HEAD = re.compile(r"namespace\s+")
# Namespaces of unit-test frameworks (NUnit, xUnit, MSTest): a file that uses one is test code,
# wherever it sits (pythonnet's NUnit tests are src/embed_tests/TestConverter.cs, Codecs.cs, ...).
TEST_FRAMEWORKS = ("NUnit.Framework", "Xunit", "Microsoft.VisualStudio.TestTools.UnitTesting")
_TEST_ROOTS = frozenset(t.split(".")[0] for t in TEST_FRAMEWORKS)
_USING = re.compile(r"using\s+(static\s+)?(?:(@?\w+)\s*=\s*)?([\w.\s]+?)\s*;")
_USING_HEAD = re.compile(r"using\s+")
_TYPE = re.compile(r"(class|struct|interface|enum|record(?:\s+struct|\s+class)?)\s+(@?[A-Za-z_]\w*)")
_KEYWORDS = frozenset(
    "abstract as base bool break byte case catch char checked class const continue decimal default delegate do "
    "double else enum event explicit extern false finally fixed float for foreach goto if implicit in int "
    "interface internal is lock long namespace new null object operator out override params private protected "
    "public readonly ref return sbyte sealed short sizeof stackalloc static string struct switch this throw "
    "true try typeof uint ulong unchecked unsafe ushort using virtual void volatile while "
    "await when where yield var nameof and or not with record async get set init add remove value global "
    "partial file required scoped managed unmanaged".split())
_TYPE_WORDS = frozenset("bool byte char decimal double float int long object sbyte short string uint ulong ushort "
                        "void var dynamic nint nuint".split())
# what a definition's header holds before its name: attributes are cut out first
_TERM = re.compile(r"[;{}()\[\]=]")
_NAME_BEFORE = re.compile(r"(?:(~)\s*)?(@?[A-Za-z_]\w*)\s*(" + _ANG + r")?\s*$")
_OPERATOR = re.compile(r"\boperator\s*(?:checked\s+)?(true|false|[^\s\w(]+|[\w.:<>,?\[\]\s]+?)\s*$")
_PROP_NAME = re.compile(r"(@?[A-Za-z_]\w*)\s*$")
_INIT = re.compile(r"\s*=(?!>)")
_STATEMENT_WORDS = _KEYWORDS - _TYPE_WORDS
_ACCESSOR = re.compile(r"\b(?:get|set|init|add|remove)\s*(?:\{|=>)")
_LOCAL_HEAD = re.compile(
    r"^\s*(?:(?:static|async|unsafe|extern)\s+)*"
    r"(?:(?:[\w.:]+|\([^()]*\))\s*(?:" + _ANG + r")?\s*\??(?:\s*\[[\s,]*\])*\s*\??\s*\**)\s+$")
_IFACE = re.compile(r"I[A-Z]")
_MAX_NEST = 32                                   # types (local functions) nested deeper are no nodes
_WS = re.compile(r"\s+")


_BRACKET = re.compile(r"[(\[]")


def _outside(code: str, pairs: dict, lo: int, hi: int) -> str:
    """``code[lo:hi]`` without its bracket groups (attributes, parameter lists and their
    arguments), read once: each group is jumped over by its pair."""
    parts, pos = [], lo
    while True:
        m = _BRACKET.search(code, pos, hi)
        if m is None:
            break
        parts.append(code[pos:m.start()])
        pos = min(pairs.get(m.start(), hi), hi - 1) + 1
    parts.append(code[pos:hi])
    return "".join(parts)


class _CSharp(NamespacedBuilder):
    CALLS_IN_TYPES = True

    def __init__(self, lx, rel, spec, warning):
        Builder.__init__(self, lx, rel, spec, warning)
        self.pkg = ""
        self.types: dict[str, str] = {}       # using X = A.B.C
        self.stars: list[str] = []            # using A.B;
        self.static: dict[str, list[str]] = {}
        self.static_stars: list[str] = []     # using static A.B.C;
        self.spaces: list[tuple[int, int, str]] = []     # (start, end, dotted name with the outer ones)
        self._up: list[int] = []              # the namespace around each (-1: none)
        self._starts: list[int] = []
        self.type_ends: set[int] = set()      # the "{" or ";" of every type declaration found
        self.named: set[int] = set()          # where delegates' names are (no calls)
        self._name_ends: set[int] | None = None

    # ---- namespaces ------------------------------------------------------------------------
    def scan_namespaces(self) -> None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        stack: list[int] = []
        for m in import_matches(code, _NAMESPACE, _NAMESPACE_HEAD):
            if m.start() > 0 and (code[m.start() - 1].isalnum() or code[m.start() - 1] in "_.@"):
                continue
            start = m.start()
            end = pairs.get(m.start(2), n) if m.group(2) == "{" else n
            while stack and self.spaces[stack[-1]][1] < start:
                stack.pop()
            up = stack[-1] if stack else -1
            name = _WS.sub("", m.group(1))
            if up >= 0:
                name = f"{self.spaces[up][2]}.{name}"
            self.spaces.append((start, end, name))
            self._up.append(up)
            self._starts.append(start)
            stack.append(len(self.spaces) - 1)

    def ns_at(self, pos: int) -> str:
        """The dotted namespace around ``pos`` (nested blocks' names joined)."""
        i = bisect_right(self._starts, pos) - 1
        while i >= 0 and self.spaces[i][1] < pos:
            i = self._up[i]
        return self.spaces[i][2] if i >= 0 else ""

    def type_candidates(self, name: str, scope: Def | None) -> list[str]:
        if scope is not None:
            self.pkg = self.scope_ns(scope)
        out = super().type_candidates(name, scope)
        parts = self.pkg.split(".") if self.pkg else []
        for i in range(len(parts) - 1, 0, -1):             # the namespaces around it: A.B.C sees A.B, A
            out.append(".".join(parts[:i]) + "." + name)
        if self.pkg:
            out.append(name)
        return out

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        if parts[0] in _KEYWORDS and parts[0] not in ("this", "base"):
            return []
        if parts[0] == "base":
            parts = ["super"] + parts[1:]
        self.pkg = self.scope_ns(scope)
        out = super().call_candidates(scope, parts)
        if len(parts) == 1:                           # local functions: the scope's own, then its parents'
            d, local = scope, []
            while d is not None and d.kind != "class":
                if "locals" not in d.data:
                    d.data["locals"] = {c.name for c in d.children if c.kind == "function"}
                if parts[0] in d.data["locals"]:
                    local.append(self.q(f"{d.qual}.{parts[0]}") if d is not self.mod else self.q(parts[0]))
                d = d.parent
            out = local + out
        return out

    def not_calls(self) -> set[int]:
        return self.named

    def is_call(self, at: int, raw: str) -> bool:
        if self._name_ends is None:
            self._name_ends = {d.name_at + len(d.name) for d in self.defs}
        return at + len(raw) not in self._name_ends             # void IDisposable.Dispose() is no call

    def scan_imports(self) -> None:
        self.scan_namespaces()
        code, lx = self.lx.code, self.lx
        opens = {lx.pairs.get(e) for s, e, _ in self.spaces}
        for m in import_matches(code, _USING, _USING_HEAD):
            if m.start() > 0 and (code[m.start() - 1].isalnum() or code[m.start() - 1] in "_.@"):
                continue
            o = lx.enclosing(m.start())
            while o >= 0 and o in opens:
                o = lx.up.get(o, -1)
            if o >= 0:
                continue                              # using var x = ..; in a body
            name = _WS.sub("", m.group(3))
            if name.split(".")[0] in _TEST_ROOTS and any(name == t or name.startswith(t + ".") for t in TEST_FRAMEWORKS):
                self.flags |= FLAG_TEST
            if m.group(1):
                self.static_stars.append(name)
            elif m.group(2):
                self.types[m.group(2).lstrip("@")] = name
            else:
                self.stars.append(name)
            self.imports([name], m.start())

    # ---- definitions ---------------------------------------------------------------------
    def scan(self) -> None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        found: list[tuple[re.Match, int]] = []
        for m in _TYPE.finditer(code):
            if m.start() > 0 and (code[m.start() - 1] in "_.@" or code[m.start() - 1].isalnum()):
                continue
            if m.group(2).lstrip("@") in _KEYWORDS:
                continue                              # where T : class where U : ...
            body = find_end(code, pairs, m.end(), "{;")
            if body >= n:
                continue
            if found and found[-1][1] == body:        # `class A class B {`: the last one declares
                found.pop()
            found.append((m, body))
        defs: list[Def] = []
        bodies: list[tuple[int, Def]] = []
        open_types: list[int] = []                   # ends of the types around the next one
        for m, body in found:
            kw = m.group(1).split()[0]
            at = m.end()
            head = _outside(code, pairs, at, body)
            if "=" in head:
                continue
            if code[body] == ";" and (kw not in ("record", "class", "struct")
                                      or not re.match(r"\s*(?:" + _ANG + r")?\s*\(", code[at:body])):
                continue                              # only a positional record (or class) ends at ";"
            end = pairs.get(body, n) + 1 if code[body] == "{" else body + 1
            while open_types and open_types[-1] <= m.start():
                open_types.pop()
            if len(open_types) >= _MAX_NEST:          # `class A { ` x 5,000: keys and call candidates
                self.type_ends.add(body)              # would grow with the depth, n^2 in all
                continue
            open_types.append(end)
            d = Def("class", m.group(2).lstrip("@"), boundary(code, pairs, 0, m.start()), end,
                    body if code[body] == "{" else None, m.start(2), kw)
            self._bases(d, kw, head, m.start(2))
            self.type_ends.add(body)
            defs.append(d)
            if code[body] == "{" and kw != "enum":
                bodies.append((body, d))
        for body, d in bodies:
            defs += self._members(body, d)
        defs += self._block(0, n, None)               # top-level statements' local functions
        self.nest(defs)

    def _bases(self, d: Def, kw: str, head: str, at: int) -> None:
        head = re.sub(r"^\s*(?:" + _ANG + r")?\s*", "", head)
        if not head.startswith(":"):
            return
        names = [t.replace("global::", "") for t in type_names(re.split(r"\bwhere\b", head[1:])[0])]
        self.pkg = self.ns_at(d.start)
        for i, t in enumerate(names):
            if not re.match(r"[A-Za-z_@]", t) or kw == "enum":
                continue
            cands = (self.type_candidates(t, None), at)
            if kw == "interface" or (i == 0 and kw in ("class", "record") and not _IFACE.match(t.rsplit(".", 1)[-1])):
                d.bases.append(cands)
            else:
                d.implements.append(cands)

    def _terminator(self, pos: int, close: int) -> int:
        """The first ``;``, ``{``, ``}``, ``=`` or ``=>`` at or after ``pos`` outside brackets
        (``==``, ``!=``, ``<=``, ``>=`` are operators' names and conditions)."""
        code, pairs = self.lx.code, self.lx.pairs
        while True:
            m = _TERM.search(code, pos, close)
            if m is None:
                return close
            p = m.start()
            c = code[p]
            if c in "([":
                pos = pairs.get(p, close) + 1
            elif c in ")]":
                pos = p + 1
            elif c == "=" and code.startswith("==", p):
                pos = p + 2
            elif c == "=" and not code.startswith("=>", p) and p > 0 and code[p - 1] in "!<>":
                pos = p + 1
            else:
                return p

    def _next_head(self, pos: int, hi: int) -> tuple[int, int] | None:
        """(start, terminator) of the next member or statement in ``code[pos:hi]`` that may
        declare something, blanks, empty statements, nested types (found on their own) and
        fields' initialisers or assignments passed over; None at the end."""
        code, pairs = self.lx.code, self.lx.pairs
        while True:
            while pos < hi and code[pos] in " \t\n":
                pos += 1
            t = self._terminator(pos, hi)
            if t >= hi:
                return None
            c = code[t]
            if t == pos or c == "}":
                pos = t + 1
            elif t in self.type_ends:
                pos = pairs.get(t, hi) + 1 if c == "{" else t + 1
            elif c == "=" and not code.startswith("=>", t):
                pos = find_end(code, pairs, t, ";") + 1
            else:
                return pos, t

    def _signature(self, seg: int, t: int) -> tuple[int, str, str] | None:
        """(offset, name, decl) of the method, constructor, finalizer or operator whose header is
        ``code[seg:t]``, else None: the first parameter list there that follows a name that is no
        keyword (a tuple return type's does not)."""
        code, pairs = self.lx.code, self.lx.pairs
        p = seg
        while True:
            m = _BRACKET.search(code, p, t)
            if m is None:
                return None
            o = m.start()
            p = pairs.get(o, t) + 1
            if code[o] == "[":
                continue
            lo = max(seg, o - 200)
            before = code[lo:o]
            op = _OPERATOR.search(before) if "operator" in before else None
            if op:
                sym = _WS.sub("", op.group(1))
                name = "operator" + (" " + sym if sym[:1].isalpha() and sym not in ("true", "false") else sym)
                return lo + op.start(), name, "operator"
            nm = _NAME_BEFORE.search(before)
            if nm and nm.group(2) not in _KEYWORDS:
                return lo + nm.start(2), nm.group(2).lstrip("@"), "finalizer" if nm.group(1) else ""

    def _accessor_body(self, lo: int, hi: int) -> bool:
        """An accessor in the list ``code[lo:hi]`` has a body (``get { .. }``, ``set => ..``):
        its top level read once, the accessors' bodies jumped over."""
        code, pairs = self.lx.code, self.lx.pairs
        pos = lo
        while pos < hi:
            e = min(find_end(code, pairs, pos, ";{"), hi)
            if _ACCESSOR.search(_outside(code, pairs, pos, e) + code[e:e + 1]):
                return True
            pos = pairs.get(e, hi) + 1 if e < hi and code[e] == "{" else e + 1
        return False

    def _delegate(self, pos: int, t: int, words: list[str]) -> bool:
        """The header ``code[pos:t]`` (its ``words`` outside brackets) declares a delegate type
        (``delegate void D(int x);``): its name is recorded, no call."""
        if "delegate" not in words:
            return False
        sig = self._signature(pos, t)
        if sig is not None:
            self.named.add(sig[0])
        return True

    def _members(self, body: int, owner: Def) -> list[Def]:
        """Methods, constructors, finalizers, operators and properties declared directly in the
        type body at ``body`` (and the local functions in their bodies)."""
        code, pairs = self.lx.code, self.lx.pairs
        close = pairs.get(body, len(code))
        out: list[Def] = []
        pos = body + 1
        while (head := self._next_head(pos, close)) is not None:
            pos, t = head
            c = code[t]
            arrow = code.startswith("=>", t)
            words = _outside(code, pairs, pos, t).split()
            if self._delegate(pos, t, words):
                pos = find_end(code, pairs, t, ";") + 1
                continue
            sig = self._signature(pos, t)
            if sig is not None:
                nat, name, decl = sig
                decl = decl or ("constructor" if name == owner.name else "method")
                if c == "{":
                    b, end = t, pairs.get(t, close) + 1
                elif arrow:
                    b, end = None, find_end(code, pairs, t + 2, ";") + 1
                else:
                    b, end = None, t + 1
                d = Def("method", name, pos, min(end, close), b, nat, decl)
                out.append(d)
                if b is not None:
                    out += self._block(b + 1, end - 1, d)
                pos = end
                continue
            if c == ";":                              # a field, an event, a delegate
                pos = t + 1
                continue
            # a property, an indexer or an event: `{ get {..} }` or `=> expr;`
            hi = pos + len(code[pos:t].rstrip())
            if code[hi - 1] == "]":                   # this[int i]
                hi = pairs.get(hi - 1, pos)
            nm = _PROP_NAME.search(code, pos, hi) if hi > pos else None
            if nm is None:
                pos = pairs.get(t, close) + 1 if c == "{" else find_end(code, pairs, t + 2, ";") + 1
                continue
            name = nm.group(1).lstrip("@")
            decl = "event" if "event" in words else "indexer" if name == "this" else "property"
            if c == "{":
                end = pairs.get(t, close) + 1
                if self._accessor_body(t + 1, end - 1):
                    d = Def("method", name, pos, end, t, nm.start(1), decl)
                    out.append(d)
                    out += self._block(t + 1, end - 1, d)
                after = _INIT.match(code, end)
                pos = find_end(code, pairs, after.end(), ";") + 1 if after else end
            else:
                end = find_end(code, pairs, t + 2, ";") + 1
                out.append(Def("method", name, pos, min(end, close), None, nm.start(1), decl))
                pos = end
        return out

    def _local(self, pos: int, t: int) -> tuple[int, str, str] | None:
        """The local function whose header is ``code[pos:t]`` (a return type before its name),
        else None (a statement)."""
        sig = self._signature(pos, t)
        if sig is None or sig[2] == "operator":
            return None
        head = _outside(self.lx.code, self.lx.pairs, pos, sig[0])
        if not head.strip() and self.lx.code[pos] == "(":
            return sig                                # a tuple return type: (int, int) F() => ..
        if not _LOCAL_HEAD.match(head) or head.split()[-1] in _STATEMENT_WORDS:
            return None
        return sig

    def _block(self, lo: int, hi: int, owner: Def | None) -> list[Def]:
        """The local functions of the statements in ``code[lo:hi]`` (a body, or the file's
        top level, where namespaces are looked into and types skipped), nested blocks too."""
        code, pairs = self.lx.code, self.lx.pairs
        out: list[Def] = []
        todo = [(lo, hi, 0)]                          # (from, to, local functions around)
        while todo:
            pos, hi, depth = todo.pop()
            while (head := self._next_head(pos, hi)) is not None:
                pos, t = head
                c = code[t]
                if c == ";":
                    if owner is None and "delegate" in code[pos:t]:
                        self._delegate(pos, t, _outside(code, pairs, pos, t).split())
                    pos = t + 1
                    continue
                sig = self._local(pos, t) if depth < _MAX_NEST else None
                if sig is None:
                    if c == "{":
                        end = pairs.get(t, hi)
                        todo.append((t + 1, end, depth))
                        pos = end + 1
                    else:
                        pos = find_end(code, pairs, t + 2, ";") + 1
                    continue
                nat, name, _ = sig
                if c == "{":
                    b, end = t, pairs.get(t, hi) + 1
                    todo.append((t + 1, end - 1, depth + 1))
                else:
                    b, end = None, find_end(code, pairs, t + 2, ";") + 1
                out.append(Def("function", name, pos, min(end, hi), b, nat, "function"))
                pos = end
        return out


def load(path, rel: str, opts, spec=CSHARP):
    return read_and_build(_CSharp, "cs", path, rel, spec)
