"""Kotlin source (``.kt``, ``.kts`` scripts): files, classes, objects and functions, and their edges.

Kotlin reads as Java does where the two agree (:mod:`kgsearch.ingest.javacode`: packages,
imports, calls through names and types; the two share the ``java`` namespace, so a Kotlin file
and a Java file of one Android tree import and call each other); what differs is read here:
declarations without semicolons, bodies that are an expression (``fun f() = x``), classes
without a body, primary constructors and supertype lists in the header, companion objects and
top-level functions.

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``); classes, interfaces
(``fun interface`` too), enum and annotation classes, objects and companion objects (``class``,
``decl`` says which: ``class``, ``interface``, ``object``, ``companion``; a companion without a
name is ``Companion``), nested and local ones too; functions (``function``: top-level, local,
extension functions named without their receiver, which ``receiver`` keeps), methods (a function
directly in a class or object body; body-less abstract and interface ones included) and
secondary constructors (``method`` named after the class, ``decl`` ``constructor``); overloads
get ``#2`` keys. Spans start at the first annotation or modifier and end at the closing brace or
the end of the expression body. Anonymous objects (``object : Runnable { .. }``), lambdas,
anonymous functions, properties and ``init`` blocks are no nodes (their code belongs to the
definition around them). Tests: Gradle's test source sets (``src/test/``, ``src/androidTest/``,
Kotlin Multiplatform's ``src/commonTest/`` ...) and ``*Test.kt``, ``*Tests.kt``, ``*Spec.kt`` files.

Names (``ns='java'``): a class answers to its qualified name (``com.x.Outer.Inner``), a member
to ``<class>.<name>`` (a companion object's members also to ``<class>.<name>``, as Kotlin calls
them; an object's also to ``<object>.INSTANCE.<name>``, as Java calls them), a top-level
function to ``<package>.<name>`` and ``<package>.<file name>Kt.<name>`` (the class Java sees:
``@file:JvmName("X")`` renames it), a file to ``<package>.<file name>``, to
``<package>.<file name>Kt`` and to its package.

Edges:

* ``imports``: ``import a.b.C`` (``as D`` too) -> ``a.b.C`` (a class, object or top-level
  function), else the package ``a.b``; ``import a.b.*`` -> the package (one of its files).
* ``calls``: Java's rules (``f()``, ``this.f()`` -> the enclosing classes' ``f``, then the bases';
  ``super.f()`` -> the bases'; ``Type.f()`` and ``Type()`` (a constructor call: Kotlin has no
  ``new``) through the imports, the enclosing classes, the package and star imports), and
  ``f()`` -> an imported or same-package top-level function. Not resolved: calls on values
  (``x.f()``, extension functions: the type of ``x`` is unknown), trailing-lambda calls without
  parentheses (``run { }``), anything outside the tree.
* ``inherits`` / ``implements`` from the supertype list ``class A(..) : B(), I, J by j``: a
  supertype called with arguments (``B()``) is the superclass, the others are implemented (an
  interface inherits them all).
"""
from __future__ import annotations

import re
from bisect import bisect_right

from .codemodel import Def
from .codescan import skip_angles
from .javacode import JavaBuilder, read_and_build
from .langspec import KOTLIN

NAME = "kotlin"
EXTENSIONS = KOTLIN.extensions

__all__ = ["NAME", "EXTENSIONS", "load", "KotlinBuilder"]

_PACKAGE = re.compile(r"^[ \t]*package[ \t]+([\w.`]+)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.`]+?)([ \t]*\.[ \t]*\*)?(?:[ \t]+as[ \t]+(`[^`\n]+`|\w+))?[ \t]*;?[ \t]*$",
                     re.M)
_JVM_NAME = re.compile(r"@file\s*:\s*JvmName\s*\(\s*\"(\w+)\"\s*\)")
_DECL = re.compile(r"\b(class|interface|object|fun|constructor)\b")
_WORD = re.compile(r"[A-Za-z_][\w]*|`[^`\n]+`")
_TYPE_REF = re.compile(r"[A-Za-z_][\w]*(?:[ \t]*\.[ \t]*[A-Za-z_][\w]*)*")
_SPACE = re.compile(r"[ \t\r\n]*")
_BLANKS = " \t\r\n"
_OPERATORS = frozenset("=+-*/%<>!&|?:.,([")
MODIFIERS = frozenset(
    "public private protected internal open abstract final override sealed data enum annotation inner value "
    "companion inline noinline crossinline infix operator tailrec external suspend lateinit const actual expect "
    "vararg reified".split())
_KEYWORDS = frozenset("if for while when catch return throw try do else is as in super this constructor init "
                      "object fun val var typeof get set".split())
# a line that ends with one of these, or a next line that starts with one, continues an expression
_CONTINUES_AFTER = frozenset("+-*/%&|=<!,.:([{")     # (not ">" nor "?": `as? List<T>`, `as T?` end a line)
_CONTINUING_START = re.compile(r"(?:\.|\?\.|\?:|&&|\|\||as\b|is\b|!is\b|in\b|!in\b|else\b)")
_DECLARATION_START = re.compile(r"(?:@|(?:fun|class|interface|object|val|var|typealias|constructor|init|companion"
                                r"|private|public|protected|internal|override|abstract|open|suspend|inline)\b)")
_ENDS_WITH_WORD = re.compile(r"\b(?:else|in|is|as)$")


def _name(raw: str) -> str:
    return raw[1:-1] if raw.startswith("`") else raw


class KotlinBuilder(JavaBuilder):
    def __init__(self, lx, rel, spec, warning):
        super().__init__(lx, rel, spec, warning)
        m = _PACKAGE.search(lx.code)
        self.pkg = m.group(1).replace("`", "") if m else ""
        j = _JVM_NAME.search(lx.text, 0, m.start() if m else 4000)
        self.jvm_name = j.group(1) if j else self.mod.name + "Kt"     # the class Java sees the file as
        self._headers: list[tuple[int, int]] = []     # class headers (primary constructors live there)
        self._receivers: list[int] = []               # where extension functions' receivers start

    # ---- names -----------------------------------------------------------------------------
    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod:
            out = [(self.q(self.mod.name), 1), (self.q(self.jvm_name), 1)]
            if self.pkg:
                out.append((self.pkg, 2))
            return out
        out = [(self.q(d.qual), 0)]
        p = d.parent
        if p is self.mod and d.kind == "function":              # Java: FileKt.f() (or @file:JvmName's)
            out.append((self.q(f"{self.jvm_name}.{d.local}"), 0))
        elif p is not None and p.kind == "class" and p.decl == "companion" and p.parent is not None \
                and p.parent is not self.mod:
            out.append((self.q(f"{p.parent.qual}.{d.local}"), 0))    # Kotlin: Cls.f() of a companion's f
        elif p is not None and p.kind == "class" and p.decl == "object":
            out.append((self.q(f"{p.qual}.INSTANCE.{d.local}"), 0))   # Java: Obj.INSTANCE.f()
        return out

    def scan_imports(self) -> None:
        for m in _IMPORT.finditer(self.lx.code):
            name = re.sub(r"\s+", "", m.group(1)).replace("`", "")
            if m.group(2):
                self.stars.append(name)
                self.imports([name], m.start(1))
                continue
            simple = _name(m.group(3)) if m.group(3) else name.rsplit(".", 1)[-1]
            self.types[simple] = name
            self.static.setdefault(simple, []).append(name)
            self.imports([name, name.rpartition(".")[0]], m.start(1))

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        if parts[0] in _KEYWORDS and parts[0] not in ("this", "super"):
            return []
        out = super().call_candidates(scope, parts)
        if len(parts) == 1 and parts[0] not in ("this", "super"):
            out.append(self.q(parts[0]))
        return out

    def not_calls(self) -> set[int]:
        """``constructor(`` of a primary constructor (in a class header); an extension
        function's receiver and name (``fun String.ext(``: the chain ``String.ext`` is no call)."""
        out = set(self._receivers)
        for a, b in self._headers:
            for m in re.finditer(r"\bconstructor\b", self.lx.code[a:b]):
                out.add(a + m.start())
        return out

    # ---- definitions ---------------------------------------------------------------------
    def scan(self) -> None:
        code = self.lx.code
        defs: list[Def] = []
        ctors: list[int] = []
        for m in _DECL.finditer(code):
            kw, at = m.group(1), m.start()
            if at and code[at - 1] in ".:$@`":        # Foo::class, x.object, @fun
                continue
            if kw == "fun":
                d = self._function(m)
            elif kw == "constructor":
                ctors.append(at)
                continue
            else:
                d = self._class(m)
            if d is not None:
                defs.append(d)
        starts = [a for a, _ in self._headers]               # in order, none inside another
        for at in ctors:
            i = bisect_right(starts, at) - 1
            if i < 0 or at >= self._headers[i][1]:
                d = self._constructor(at)
                if d is not None:
                    defs.append(d)
        self.nest(defs)
        for d in defs:
            if d.decl == "constructor" and d.parent is not None and d.parent.kind == "class":
                d.name = d.local = d.parent.name

    def _start(self, at: int) -> int:
        """The first annotation or modifier before the keyword at ``at``."""
        code, pairs = self.lx.code, self.lx.pairs
        i = at
        while True:
            j = i - 1
            while j >= 0 and code[j] in _BLANKS:
                j -= 1
            if j < 0:
                return i
            c = code[j]
            if c == ")":                              # @Ann(args)
                o = pairs.get(j, -1)
                if o < 0:
                    return i
                k = o
                while k > 0 and (code[k - 1].isalnum() or code[k - 1] in "_.:"):
                    k -= 1
                if k > 0 and code[k - 1] == "@" and k < o:
                    i = k - 1
                    continue
                return i
            if c.isalnum() or c == "_":
                k = j
                while k > 0 and (code[k - 1].isalnum() or code[k - 1] in "_.:"):
                    k -= 1
                word = code[k:j + 1]
                if k > 0 and code[k - 1] == "@":      # @Ann, @field:Ann, @a.b.Ann
                    i = k - 1
                    continue
                if word in MODIFIERS or word == "fun" and code.startswith("interface", at):
                    b = k - 1
                    while b >= 0 and code[b] in _BLANKS:
                        b -= 1
                    if b >= 0 and code[b] in _OPERATORS:  # `= value`, `x.data`: a soft keyword as a name
                        return i
                    i = k
                    continue
            return i

    def _skip_blanks(self, pos: int) -> tuple[int, bool]:
        e = _SPACE.match(self.lx.code, pos).end()
        return e, "\n" in self.lx.code[pos:e]

    def _class(self, m: re.Match) -> Def | None:
        code, pairs = self.lx.code, self.lx.pairs
        kw, at = m.group(1), m.start()
        pos, _ = self._skip_blanks(m.end())
        w = _WORD.match(code, pos)
        companion = kw == "object" and re.search(r"\bcompanion\s*$", code[max(0, at - 40):at]) is not None
        if w is None or w.group() in ("constructor",) or code.startswith("::", pos):
            if not companion:
                return None                            # an object expression, or Foo::class
            name, name_at, pos = "Companion", at, m.end()
        else:
            name, name_at, pos = _name(w.group()), w.start(), w.end()
        body, end, supers = self._header(pos, kw)
        self._headers.append((at, end if body is None else body))
        decl = "companion" if companion else kw
        start = self._start(at)
        close = pairs.get(body, len(code)) + 1 if body is not None else end
        d = Def("class", name, start, close, body, name_at, decl)
        for sname, called, sat in supers:
            cands = self.type_candidates(sname, None)
            if kw == "interface" or called:
                d.bases.append((cands, sat))
            else:
                d.implements.append((cands, sat))
        return d

    def _header(self, pos: int, kw: str) -> tuple[int | None, int, list[tuple[str, bool, int]]]:
        """A class header from after its name: (its body's ``{`` or None, the header's end,
        supertypes as (name, called with arguments, offset))."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        supers: list[tuple[str, bool, int]] = []
        end = pos
        expect_type = in_supers = False
        for _ in range(10_000):
            j, nl = self._skip_blanks(pos)
            if j >= n:
                break
            c = code[j]
            if c == "{":
                return j, j, supers
            if nl and not expect_type and c not in ":," and not code.startswith("where", j):
                break
            if c == "<" and not in_supers:
                pos = end = skip_angles(code, j, pairs)
            elif c == "(":
                if in_supers and supers and not expect_type:
                    supers[-1] = (supers[-1][0], True, supers[-1][2])
                pos = end = pairs.get(j, n - 1) + 1
            elif c in ":,":
                in_supers, expect_type = True, True
                pos = j + 1
            elif in_supers and code.startswith("->", j):             # a function type: () -> Unit
                expect_type = True
                pos = j + 2
            elif c == "@":                                        # an annotation (primary constructor's)
                t = _TYPE_REF.match(code, j + 1)
                pos = end = t.end() if t else j + 1
            else:
                w = _WORD.match(code, j)
                if w is None:
                    break
                word = w.group()
                if word == "where":                               # where T : A, U : B
                    k = j
                    while True:
                        e = code.find("\n", k)
                        e = n if e < 0 else e
                        b = code.find("{", k, e)
                        if b >= 0:
                            return b, b, supers
                        if not code[k:e].rstrip().endswith(","):
                            return None, e, supers
                        k = e + 1
                elif word == "by" and in_supers and not expect_type:      # I by delegate
                    k = j + 2
                    while k < n and code[k] not in ",{\n":
                        k = pairs.get(k, k) + 1 if code[k] in "([" else k + 1
                    pos = end = k
                elif expect_type:
                    t = _TYPE_REF.match(code, j)
                    k = t.end()
                    if k < n and code[k] == "<":
                        k = skip_angles(code, k, pairs)
                    while k < n and code[k] == "?":
                        k += 1
                    supers.append((re.sub(r"\s+", "", t.group()), False, j))
                    expect_type = False
                    pos = end = k
                elif word == "constructor" or word in MODIFIERS:
                    pos = end = w.end()
                else:
                    break
        return None, end, supers

    def _function(self, m: re.Match) -> Def | None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        at = m.start()
        pos, _ = self._skip_blanks(m.end())
        if code.startswith("interface", pos) or pos >= n or code[pos] == "(":
            return None                                # fun interface (a class), an anonymous function
        if code[pos] == "<":
            pos, _ = self._skip_blanks(skip_angles(code, pos, pairs))
        # the receiver and the name: up to the parameters' "(" (generic receivers skipped)
        k, last, last_at = pos, None, -1
        while k < n:
            c = code[k]
            if c == "<":
                k = skip_angles(code, k, pairs)
                continue
            if c == "(":
                if last is None:                       # fun (A.() -> Unit).ext(): a receiver in parentheses
                    k = pairs.get(k, n - 1) + 1
                    continue
                break
            w = _WORD.match(code, k)
            if w is not None:
                last, last_at = w.group(), w.start()
                k = w.end()
                continue
            if c in ".? \t":
                k += 1
                continue
            return None
        if last is None or k >= n:
            return None
        receiver = code[pos:last_at].strip().rstrip(".").strip()
        pclose = pairs.get(k, n - 1)
        end, body = self._function_end(pclose + 1)
        d = Def("function", _name(last), self._start(at), end, body, last_at)
        if receiver:
            d.props["receiver"] = re.sub(r"\s+", "", receiver)
            self._receivers.append(pos)
        return d

    def _constructor(self, at: int) -> Def | None:
        """A secondary constructor: ``constructor(..) : this(..) { .. }``."""
        code, pairs = self.lx.code, self.lx.pairs
        pos, _ = self._skip_blanks(at + len("constructor"))
        if pos >= len(code) or code[pos] != "(":
            return None
        end, body = self._function_end(pairs.get(pos, len(code) - 1) + 1)
        return Def("function", "constructor", self._start(at), end, body, at, "constructor")

    def _function_end(self, pos: int) -> tuple[int, int | None]:
        """After a function's parameters: (its end, its body's ``{`` or None). The return type,
        a ``where`` clause and a constructor's ``: this(..)`` are read over; then a block body,
        an expression body (``= expr``) or nothing (abstract, interface, ``expect``)."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        end = pos
        k = pos
        while k < n:
            c = code[k]
            if c == "{":
                return pairs.get(k, n - 1) + 1, k
            if c == "=" and not code.startswith("==", k):
                return self._expression_end(k + 1), None
            if c in "([":
                k = end = pairs.get(k, n - 1) + 1
                continue
            if c == "<":
                k = end = skip_angles(code, k, pairs)
                continue
            if c in ";})]":
                return end, None
            if c == "\n":
                j, _ = self._skip_blanks(k)
                prev = code[:k].rstrip()[-1:]
                if j < n and (code[j] in "{=:" or code.startswith("where", j)) or prev in (":", ",") \
                        or code.startswith("->", j):
                    k = j
                    continue
                return end, None
            if c not in _BLANKS:
                end = k + 1
            k += 1
        return end, None

    def _expression_end(self, pos: int) -> int:
        """End of the expression that starts at ``pos`` (after a function's ``=``): its line,
        and the next lines while an operator at a line's end or at the next line's start, or an
        open bracket, carries it on."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        k, _ = self._skip_blanks(pos)
        while k < n and code[k] == "@":                  # = @SuppressLint("x") expr: annotations first
            t = _TYPE_REF.match(code, k + 1)
            if t is None:
                break
            k = t.end()
            if k < n and code[k] == "(":
                k = pairs.get(k, n - 1) + 1
            k, _ = self._skip_blanks(k)
        end = k
        while k < n:
            c = code[k]
            if c in "([{":
                k = end = pairs.get(k, n - 1) + 1
                continue
            if c in ";)]}":
                return end
            if c == "\n":
                j, _ = self._skip_blanks(k)
                if _DECLARATION_START.match(code, j):     # the next declaration: no expression goes on
                    return end                            # into it (and n bodies never scan n lines)
                tail = code[max(0, end - 5):end]
                if (tail[-1:] in _CONTINUES_AFTER and not tail.endswith(("!!", "++", "--"))) \
                        or _ENDS_WITH_WORD.search(tail) or tail.endswith("->") \
                        or j < n and _CONTINUING_START.match(code, j):
                    k = j
                    continue
                return end
            if c not in _BLANKS:
                end = k + 1
            k += 1
        return end


def load(path, rel: str, opts, spec=KOTLIN):
    return read_and_build(KotlinBuilder, "kotlin", path, rel, spec)
