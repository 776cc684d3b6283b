"""C and C++ source: files, classes/structs/unions/enums, functions and methods, and their edges.

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``); every named ``class``,
``struct``, ``union`` and ``enum`` with a body, wherever it is (``class``; ``decl`` says which;
``typedef struct { } name;`` takes the typedef's name; a template specialisation
``formatter<T, char>`` is named ``formatter``); every function definition with a body at file,
namespace, ``extern "C"`` or class level (``function``; ``method`` in a class body, and for an
out-of-line ``Cls::f``), K&R ones (``int f(a, b) int a; char *b; {``) and those returning a
function pointer (``void (*signal(int sig, void (*f)(int)))(int) {``: ``signal``); type aliases at
file, namespace and class level (``class``, ``decl`` ``alias``): ``typedef <type> name;`` by its
first declarator (``typedef int (*cb_t)(int);``: ``cb_t``; a typedef with a body is its struct's
node) and C++ ``using X = ..;`` (from its ``template<..>``; not ``using namespace``, ``using
ns::name;``); function-like macros ``#define F(args) ..`` (``function``, ``decl`` ``macro``) over
their ``\\``-continued lines, in every ``#if`` branch (object-like ``#define X 1`` are none: as many
again, and code-tasks-multi's symbol ranks 0/4 worse with them). Prototypes and member
declarations are not nodes: they stay in the text of their file or class. Namespaces are not nodes; their names prefix the qualified names
(``fmt.detail.write``) once: a class nested in a class is named under its parent
(``ns.Outer.Inner``), a class or function written ``Outer::X`` inside ``namespace ns`` is
``ns.Outer.X``. Spans start at ``template<...>`` and the specifiers; the comment right
above is the doc. Preprocessor lines are blanked first, and of an ``#if``/``#else`` whose
branches open braces differently only the first branch is read (see :mod:`kgsearch.ingest.clex`);
a later branch's header of the same body under another name (``#ifdef WIN32`` ``int umain(..) {``
``#else`` ``int main(..) {``) is a function too, with that body.
Macros are not expanded: a definition that only a macro spells (``FMT_BEGIN_NAMESPACE``,
``DEFINE_FUNC(x)``) is seen as written.

Names (``ns='c'``, shared by C and C++): a function answers to its name (``static`` ones a
rank lower), a method to ``Cls.name``, a class to its name; a file to its path and to every
shorter suffix of it (``fmt/format.h``, ``format.h``), which is how ``#include`` finds it from
any include folder in the tree.

Edges:

* ``imports``: ``#include "x.h"`` -> ``x.h`` beside the file, else any file ending with that
  path; ``#include <x.h>`` -> the latter only (system headers do not resolve).
* ``calls``: ``f()`` -> the enclosing classes' ``f`` (and their bases'), the file's ``f``, any
  ``f``; ``A::f()`` -> ``A.f``, then ``f``; ``this->f()`` -> the class's. Calls on values
  (``x.f()``, ``p->f()``), through function pointers and macros are not resolved.
* ``inherits``: a class -> its bases.
* ``member_of``: an out-of-line ``Cls::f`` outside a class body -> ``Outer.Cls``, then ``Cls``
  (``props["type"]``: the qualified ``ns.Cls``, by which the indexer picks among classes of the
  name, then by the file's includes and stem).
"""
from __future__ import annotations

import posixpath
import re
from bisect import bisect_left

from .clex import lex
from ..types import MEMBER_OF, EdgeRec
from .codemodel import Builder, Def
from .codescan import call_sites, find_end, find_end_before, free, outside_bodies, read_source, split_chain
from .javacode import boundary
from .langspec import C

NAME = "c"
EXTENSIONS = C.extensions

__all__ = ["NAME", "EXTENSIONS", "load", "norm_name"]

_CLASS_KW = re.compile(r"(?<![\w.])(class|struct|union|enum(?:\s+(?:class|struct))?)\b(?!\s*[=,>)])")
_ATTRS = re.compile(r"\[\[.*?\]\]|__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)|__declspec\s*\([^()]*\)"
                    r"|alignas\s*\((?:[^()]|\([^()]*\))*\)", re.S)
_CLASS_HEAD = re.compile(r"\s*(?:[A-Z_][A-Z0-9_]*(?:\s*\([^()]*\))?\s+(?=[A-Za-z_]))*"
                         r"((?:\w+\s*(?:<(?:[^{;:]|::)*?>)?\s*::\s*)*\w+)?\s*(?P<targs><(?:[^{;:]|::)*>)?"
                         r"\s*(?:final\s*)?(?::(?!:)(?P<bases>[^{;]*))?$", re.S)
# the name after a typedef'd anonymous body: `} name;`, `} __attribute__((packed)) name;`
_TYPEDEF_NAME = re.compile(r"\s*(?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*)*(\w+)\s*[;,\[]")
_NAMESPACE = re.compile(r"(?<![\w])(?:inline\s+)?namespace\b\s*((?:\w+\s*::\s*)*\w+)?\s*(?:\[\[[^\]]*\]\]\s*)?$")
_EXTERN = re.compile(r"(?<![\w])extern\s*\"\s*\"\s*$")
# access labels, also macros standing for one (JSON_PRIVATE_UNLESS_TESTED:, Q_SLOTS:)
_ACCESS = re.compile(r"(?:(?:public|protected|private|signals|slots|[A-Z_][A-Z0-9_]{2,})\s*(?:slots\s*)?:(?!:)\s*)+")
_TRAILING = re.compile(
    r"(?:\s*(?:const|volatile|override|final|mutable|try|&&?|noexcept|throw\s*\([^()]*\)"
    r"|noexcept\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|requires\b[^{]*"
    r"|__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)|\[\[.*?\]\]|[A-Z_][A-Z0-9_]{2,}(?:\s*\([^()]*\))?))*\s*$", re.S)
_QUALIFIER = re.compile(r"\s*(const|volatile|noexcept|throw|mutable|override|final|&&|&|[A-Z_][A-Z0-9_]{2,})(?![\w])")
# (a qualifier's "::" may have spaces around it, but not before it alone: `int ::ns::f` is the
# type `int` and the global `::ns::f`, not `int::ns::f`)
_DECLARATOR = re.compile(
    r"((?:[A-Za-z_]\w*(?:\s*<(?:[^<>;{}]|<(?:[^<>;{}]|<[^<>;{}]*>)*>)*>)?(?:\s+::(?=\s)|::)\s*)*)"
    r"(operator\s*(?:\(\s*\)|\[\s*\]|(?:new|delete)(?:\s*\[\s*\])?|\"\s*\"\s*\w+|[^\w\s(]+|[\w\s:*&<>,]+?)|~?[A-Za-z_]\w*)"
    r"\s*(?:<(?:[^<>;{}]|<[^<>;{}]*>)*>)?\s*$")
_INIT_ITEM = re.compile(r"\s*(?:[\w:~<>,\s&*]*?[\w>])\s*(?=[({])")      # Base<To&>(x), m_(x)
_GROUPS = re.compile(r"\([^()]*\)|<[^<>;{}()]*>")
_OPENERS = re.compile(r"[(\[]")
_OPERATOR = re.compile(r"operator\s*(?:\(\s*\)|[^\w\s(]+)")
_PAREN_NAME = re.compile(r"\s*[A-Za-z_]\w*\s*")
_POINTER_DECL = re.compile(r"\s*(?:[*&^]\s*(?:const\b|volatile\b|restrict\b|__restrict\b)?\s*)+")
# K&R: the identifier list, and the declarations between it and the body (brackets taken out)
_KNR_PARAMS = re.compile(r"\s*[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*\s*")
_KNR_DECLS = re.compile(r"(?:\s*(?:register\s+)?[A-Za-z_][\w\s*,\[\]]*;)+\s*")
_TOP_EQ = re.compile(r"(?<![=!<>+\-*/%&|^~])=(?!=)")
_INCLUDE = re.compile(r"[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"\n]+)[>\"]")
_STATIC = re.compile(r"\bstatic\b")
# type aliases: `typedef <type> name;` (C, C++), `using name = <type>;` (C++, `template<..>` too)
_ALIAS = re.compile(r"typedef\b|using\s+(\w+)\s*(?:\[\[.*?\]\]\s*)?=(?!=)")
_LAST_WORD = re.compile(r"[A-Za-z_]\w*$")           # (searched with an end: the word that ends there)
_COMMA_OR_OPEN = re.compile(r"[,(\[{<>]")
_TEMPLATE = re.compile(r"(?<![\w])template\s*<")
_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\()?")
_GUARD = re.compile(r"[ \t]*#[ \t]*(?:ifndef[ \t]+(\w+)|if[ \t]+!\s*defined\s*\(?\s*(\w+))")
_THIS_CALL = re.compile(r"this\s*->\s*(\w+)")
_NOT_NAMES = frozenset("if for while switch return sizeof alignof decltype typeid catch defined static_cast "
                       "dynamic_cast reinterpret_cast const_cast noexcept throw new delete co_await co_return "
                       "co_yield __attribute__ __declspec __typeof__ typeof alignas static_assert do else case "
                       "using typedef template".split())
# type keywords: `void (*fn)(int)`, `decltype(void())`, `int(x)` are no calls
_NOT_CALLED = _NOT_NAMES | frozenset("void bool char wchar_t char8_t char16_t char32_t short int long float double "
                                     "signed unsigned auto".split())


def _last_open(seg: str) -> int | None:
    """Offset of the one ``{`` of ``seg`` left open at its end (None: none, or several)."""
    opened: list[int] = []
    for i, c in enumerate(seg):
        if c == "{":
            opened.append(i)
        elif c == "}" and opened:
            opened.pop()
    return opened[0] if len(opened) == 1 and seg.count("}") <= seg.count("{") - 1 else None


def _params_open(head: str) -> int | None:
    """The ``(`` of a header's last top-level ``(...)`` group when only qualifiers follow it."""
    depth, last_open, last_close = 0, None, None
    for i, c in enumerate(head):
        if c == "(":
            if depth == 0:
                last_open = i
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                last_close = i
    if last_open is None or last_close is None or depth != 0 or not _TRAILING.fullmatch(head[last_close + 1:]):
        return None
    return last_open


def _after_qualifiers(code: str, pairs: dict, at: int, stop: int) -> int:
    """Where the qualifiers after a parameter list end (``const``, ``&&``, ``noexcept(..)`` and
    ``throw(..)`` with any nesting, ``override``, an upper-case macro), blanks after them
    skipped: an initialiser list's ``:``, a trailing return type's ``->`` or the body is there."""
    n = len(code)
    p = at
    while True:
        m = _QUALIFIER.match(code, p, stop)
        if m is None:
            break
        p = m.end()
        if m.group(1) in ("noexcept", "throw"):
            q = p
            while q < stop and code[q] in " \t\n":
                q += 1
            if q < stop and code[q] == "(":
                p = pairs.get(q, n) + 1
    while p < stop and code[p] in " \t\n":
        p += 1
    return p


def _declarator_name(code: str, pairs: dict, openers: dict, lo: int, hi: int) -> tuple[str, int] | None:
    """The name a typedef's first declarator between ``lo`` and ``hi`` declares, and where it
    is: ``unsigned long size_t`` -> size_t, ``int (*cb_t)(int)`` -> cb_t, ``void fn_t(int)`` ->
    fn_t, ``char buf_t[16]`` -> buf_t, ``struct foo foo_t, *foo_p`` -> foo_t."""
    p, angles = lo, 0                              # the first declarator: up to a comma outside brackets
    while True:                                    # and template arguments (`std::pair<int, char> p_t`)
        m = _COMMA_OR_OPEN.search(code, p, hi)
        if m is None:
            break
        c = m.group()
        if c == "," and not angles:
            hi = m.start()
            break
        angles = max(0, angles + (c == "<") - (c == ">"))
        p = pairs.get(m.start(), hi) + 1 if c in "([{" else m.end()
    while True:
        while hi > lo and code[hi - 1] in " \t\n":
            hi -= 1
        if hi <= lo:
            return None
        c = code[hi - 1]
        if c in ")]":
            o = openers.get(hi - 1, -1)
            if o < lo:
                return None
            q = o
            while q > lo and code[q - 1] in " \t\n":
                q -= 1
            if c == ")" and q > lo and code[q - 1] == ")":      # (*name)(params): the name inside
                o2 = openers.get(q - 1, -1)
                if o2 < lo:
                    return None
                lo, hi = o2 + 1, q - 1
                continue
            if c == ")" and (q <= lo or not (code[q - 1].isalnum() or code[q - 1] == "_")):
                lo, hi = o + 1, hi - 1                 # (*name) alone, `int (name)`
                continue
            hi = q
            continue
        w = _LAST_WORD.search(code, max(lo, hi - 256), hi)
        if w is None or w.start() > lo and (code[w.start() - 1].isalnum() or code[w.start() - 1] == "_"):
            return None
        if w.group() in _C_TYPE_WORDS or w.group().startswith("__"):
            return None
        return w.group(), w.start()


_C_TYPE_WORDS = frozenset("int char short long unsigned signed float double void bool const volatile struct "
                          "union enum class typename".split())


def norm_name(name: str) -> str:
    """A declarator's name without inner blanks: ``operator ==`` -> ``operator==``; a
    conversion ``operator  const char *`` -> ``operator const char*``."""
    name = re.sub(r"\s+", " ", name.strip())
    if name.startswith("operator"):
        name = re.sub(r"\s*([^\w\s])\s*", r"\1", name)
        name = re.sub(r"^operator(?=[A-Za-z_])", "operator ", name.replace("operator ", "operator", 1))
    return name


def _strip_groups(s: str) -> str:
    prev = None
    while prev != s:
        prev, s = s, _GROUPS.sub("", s)
    return s


class _C(Builder):
    CALLS_IN_TYPES = False

    def __init__(self, lx, rel, spec, warning):
        super().__init__(lx, rel, spec, warning)
        self.class_bodies: dict[int, Def] = {}
        self.namespaces: set[str] = set()
        self.ns_spans: list[tuple[int, int, str]] = []
        self.anon_bodies: set[int] = set()
        self.walked: set[int] = set()
        self._dir_ends = [e for _, e in lx.directives]
        self._class_names: set[str] | None = None

    def calls_at_top(self) -> bool:
        return False

    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod:
            parts = self.rel.split("/")
            return [("/".join(parts[i:]), i) for i in range(1, len(parts))]
        parts = d.qual.split("#")[0].split(".")
        if d.kind == "method":
            return [(".".join(parts[-2:]), 0)]
        if d.kind == "class" and d.parent.kind == "class":
            return [(".".join(parts[-2:]), 0), (parts[-1], 1)]
        return [(parts[-1], 1 if d.data.get("static") else 0)]

    # ---- includes ----------------------------------------------------------------------
    def scan_includes(self) -> None:
        text = self.lx.text
        d = posixpath.dirname(self.rel)
        for s, _ in self.lx.directives:
            m = _INCLUDE.match(text, s)
            if not m:
                continue
            target = m.group(2).strip()
            cands = [target]
            if m.group(1) == '"':
                near = posixpath.normpath(posixpath.join(d, target))
                if not near.startswith("../"):
                    cands.insert(0, near)
            self.imports(cands, s)

    # ---- classes -----------------------------------------------------------------------
    def scan_classes(self) -> list[Def]:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        out = []
        for m in _CLASS_KW.finditer(code):
            body = find_end(code, pairs, m.end(), ";{")
            if body >= n or code[body] != "{" or body in self.class_bodies:
                continue
            head = _ATTRS.sub(" ", code[m.end():body])
            h = _CLASS_HEAD.match(head)
            if h is None:
                continue
            close = pairs.get(body, n)
            name = h.group(1)
            start = boundary(code, pairs, 0, m.start())
            if name is None:                         # typedef struct { ... } name;
                t = _TYPEDEF_NAME.match(code, close + 1)
                if not t or not re.match(r"typedef\b", code[start:m.start()].strip()):
                    self.anon_bodies.add(body)       # its methods are still read
                    continue
                name, name_at = t.group(1), t.start(1)
            else:
                name_at = m.end() + len(head) - len(head.lstrip()) if "::" in name else code.find(name, m.end(), body)
                name = re.sub(r"\s+", "", name)
            start = m.start() if code[start:m.start()].strip().startswith("typedef") else start
            start = self._after_access(self._after_directives(start, m.start()), m.start())
            kw = re.sub(r"\s+", " ", m.group(1))
            local = name.replace("::", ".")
            d = Def("class", local.rsplit(".", 1)[-1], start, close + 1, body, name_at, kw, local)
            if "." in local and not h.group("targs"):    # `class Outer::Impl {}`: a member of Outer
                d.data["cls"] = local.rsplit(".", 2)[-2]     # (not `struct fmt::formatter<T> {}`, a
                #                                              specialization in a namespace)
            if h.group("bases"):
                for base in _strip_groups(h.group("bases")).split(","):
                    b = re.sub(r"\b(?:public|protected|private|virtual)\b", " ", base)
                    b = re.sub(r"<.*", "", b).strip()
                    if b:
                        parts = [p for p in re.split(r"\s*::\s*", b) if p]
                        d.bases.append(([".".join(parts[-2:]), parts[-1]] if len(parts) > 1 else parts, body))
            self.class_bodies[body] = d
            out.append(d)
        return out

    def scan_aliases(self) -> list[Def]:
        """Type aliases: ``typedef <type> name;`` and C++ ``using name = <type>;``
        (``class``, ``decl`` ``alias``), named after the first declarator (``typedef int
        (*cb_t)(int);``: ``cb_t``); not a typedef with a body (``typedef struct {..} name;`` is the
        struct's node, ``typedef struct foo {..} foo_t;`` the struct ``foo``'s)."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        out = []
        found = [m for m in _ALIAS.finditer(code) if free(code, m.start(), "$.:")]
        openers = None
        for i, m in enumerate(found):
            limit = found[i + 1].start() if i + 1 < len(found) else n
            end = find_end_before(code, pairs, m.end(), limit, ";{")
            if end >= limit or code[end] != ";":
                continue                       # (no `;`, a body, or another alias before it: none)
            if m.group(1):
                name, name_at = m.group(1), m.start(1)
            else:
                if openers is None:
                    openers = {c: o for o, c in pairs.items()}
                got = _declarator_name(code, pairs, openers, m.end(), end)
                if got is None:
                    continue
                name, name_at = got
            start = m.start()                  # (after a label, an access specifier, a macro call)
            if m.group(1):                     # `template <class T>` before a `using`
                b = boundary(code, pairs, 0, m.start())
                t = _TEMPLATE.search(code, b, m.start())
                if t:
                    start = t.start()
            out.append(Def("class", name, start, end + 1, None, name_at, "alias"))
        return out

    def scan_macros(self, function_like_only: bool = True) -> list[Def]:
        """``#define NAME(args) ..`` (``function``, ``decl`` ``macro``) over its ``\\``-continued
        lines, in every ``#if`` branch; object-like ``#define NAME value`` only when
        ``function_like_only`` is false, and never an include guard (``#ifndef X_H`` ``#define X_H``)."""
        text = self.lx.text
        out = []
        guard = None
        for s, e in self.lx.directives:
            m = _DEFINE.match(text, s, e)
            if m is None:
                if guard is None:
                    g = _GUARD.match(text, s, e)
                    guard = (g.group(1) or g.group(2)) if g else ""
                continue
            if not m.group(2) and (function_like_only or m.group(1) == guard):
                continue
            end = e + 1 if text.startswith("\n", e) else e   # its last line: that of the newline that
            #                                                   ends it (a `\\` before a blank line: that one)
            out.append(Def("function", m.group(1), text.index("#", s), end, None, m.start(1), "macro"))
        return out

    def _after_directives(self, start: int, limit: int) -> int:
        """After the last preprocessor line between ``start`` and ``limit`` (a declaration
        does not run across one: tree-sitter starts it after the ``#endif``)."""
        dirs = self.lx.directives
        if not dirs:
            return start
        i = bisect_left(self._dir_ends, limit) - 1
        if i >= 0 and dirs[i][1] > start:
            start = dirs[i][1]
            while start < limit and self.lx.code[start] in " \t\n":
                start += 1
        return start

    def _after_access(self, start: int, limit: int) -> int:
        a = _ACCESS.match(self.lx.code, start, limit)
        if a:
            start = a.end()
            while start < limit and self.lx.code[start] in " \t\n":
                start += 1
        return start

    # ---- functions (at declaration level) ----------------------------------------------
    def walk(self, lo: int, hi: int, prefix: list[str], cls: Def | None, out: list[Def]) -> None:
        """Functions at declaration level between ``lo`` and ``hi`` into ``out``, in order, the
        bodies of classes, namespaces and ``extern "C"`` walked in turn (a stack of them, not
        recursion: 1,000 nested ``extern "C" {`` raised RecursionError)."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        stack = [[lo, lo, hi, prefix, cls]]       # per body: where its scan goes on, its segment, end, ...
        while stack:
            frame = stack[-1]
            at, seg, hi, prefix, cls = frame
            o = code.find("{", at, hi)
            if o < 0:
                stack.pop()
                continue
            c = pairs.get(o, n)
            d = self.class_bodies.get(o)
            inner = None
            if d is not None:
                self.walked.add(o)
                if d.decl != "enum":
                    inner = (prefix + [d.name], d)
            elif o in self.anon_bodies:
                self.walked.add(o)
                inner = (prefix, cls)
            else:
                g = self._open_group(seg, o)
                if g is not None:                 # a { inside (...) or [...]: a lambda, a braced argument
                    frame[0] = pairs.get(g, n) + 1
                    continue
                hs = boundary(code, pairs, seg, o)
                head = code[hs:o]
                ns = _NAMESPACE.search(head) if "namespace" in head else None
                if ns:
                    name = re.sub(r"\s+", "", ns.group(1) or "")
                    if name:
                        self.namespaces.update(name.split("::"))
                        self.ns_spans.append((o, c, name.replace("::", ".")))
                    inner = (prefix + ([name.replace("::", ".")] if name else []), None)
                elif _EXTERN.search(head):
                    inner = (prefix, cls)
                else:
                    f = self._function(hs, o, prefix, cls)
                    if f is None and cls is None:
                        f = self._knr(seg, hs, o, prefix)
                    if f is not None:
                        out.append(f)
                        c = f.end - 1
            frame[0] = frame[1] = c + 1
            if inner is not None:
                stack.append([o + 1, o + 1, c, inner[0], inner[1]])

    def _open_group(self, seg: int, o: int) -> int | None:
        """The ``(`` or ``[`` opened after ``seg`` that is still open at ``o``."""
        code, pairs = self.lx.code, self.lx.pairs
        p = seg
        while True:
            m = _OPENERS.search(code, p, o)
            if m is None:
                return None
            e = pairs.get(m.start(), len(code))
            if e > o:
                return m.start()
            p = e + 1

    def _function(self, hs: int, o: int, prefix: list[str], cls: Def | None) -> Def | None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        groups = []                              # top-level (...) groups of the header
        p = hs
        while True:
            q = code.find("(", p, o)
            if q < 0:
                break
            e = pairs.get(q, n)
            if e >= o:
                return None
            groups.append((q, e))
            p = e + 1
        if not groups:
            return None
        body = o
        params = None
        after = [_after_qualifiers(code, pairs, e + 1, o) for q, e in groups]
        for (q, e), a in zip(groups, after):
            if code.startswith(":", a) and not code.startswith("::", a):
                params = (q, e)
                body = self._init_list_body(a + 1, o)
                if body is None:
                    return None
                break
        if params is None:
            params = next(((q, e) for (q, e), a in zip(groups, after) if code.startswith("->", a)), None)
        if params is None:
            params = next(((q, e) for (q, e), a in zip(groups, after) if _TRAILING.fullmatch(code, a, o)), None)
            if params is None:
                return None
            if _TOP_EQ.search(_OPERATOR.sub("", _strip_groups(code[hs:params[0]]))):
                return None
        q, e = params
        m = _DECLARATOR.search(code, *self._declarator_span(hs, q))
        if m is None:
            return None
        name = norm_name(m.group(2))
        if name in _NOT_NAMES or (name[:1].isdigit()):
            return None
        quals = [re.sub(r"<.*", "", x).strip() for x in m.group(1).split("::") if x.strip()]
        start = self._after_access(self._after_directives(hs, m.start()), m.start())
        if cls is not None:
            local = ".".join(quals + [name])
        else:
            local = ".".join(self.under(prefix, quals) + [name])
        kind = "method" if cls is not None or (quals and (quals[-1] not in self.namespaces
                                                          or quals[-1] in self.class_names())) else "function"
        d = Def(kind, name, start, pairs.get(body, n) + 1, body, m.start(2), "function", local)
        if _STATIC.search(code, hs, m.start()):
            d.data["static"] = True
        if quals:
            d.data["cls"] = quals[-1]
        if cls is not None:
            d.parent = cls
        return d

    def under(self, prefix: list[str], quals: list[str]) -> list[str]:
        """The names of what ``quals`` (``Outer::X`` split) names inside the namespaces ``prefix``:
        ``prefix + quals``, but when ``quals`` starts with one of those namespaces' names (and no
        class of the file has that name), the path from there (``Catch::MessageBuilder::f``
        inside ``namespace Catch`` is ``Catch.MessageBuilder.f``, not ``Catch.Catch...``), as
        C++'s look-up of the first name finds that namespace."""
        segs = [s for p in prefix for s in p.split(".")]
        if quals and quals[0] in segs and quals[0] not in self.class_names():
            return segs[:len(segs) - 1 - segs[::-1].index(quals[0])] + quals
        return segs + quals

    def class_names(self) -> set[str]:
        """The names of the file's classes (read once :meth:`scan_classes` has found them all)."""
        if self._class_names is None:
            self._class_names = {d.name for d in self.class_bodies.values()}
        return self._class_names

    def _declarator_span(self, lo: int, hi: int) -> tuple[int, int]:
        """Where the name of a function whose parameter list opens at ``hi`` ends: before that
        ``(``, or, when a parenthesised declarator stands there, inside it: a function returning a
        function pointer (``void (*signal(int sig, void (*f)(int)))(int)``: ``signal``, its own
        parameters the first group inside), a name in parentheses (``int (max)(int a, int b)``)."""
        code, pairs = self.lx.code, self.lx.pairs
        for _ in range(8):
            r = hi
            while r > lo and code[r - 1] in " \t\n":
                r -= 1
            if r <= lo or code[r - 1] != ")":
                break
            g = pairs.get(r - 1, -1)
            if g < lo:
                break
            p, at = -1, g + 1                    # the last group inside: that level's parameters
            while True:
                k = code.find("(", at, r - 1)
                if k < 0:
                    break
                p, at = k, pairs.get(k, len(code)) + 1
            if p < 0:
                if _PAREN_NAME.fullmatch(code, g + 1, r - 1):
                    return g + 1, r - 1
                break
            if not _POINTER_DECL.match(code, g + 1, p):
                break
            lo, hi = g + 1, p
        return lo, hi

    def _knr(self, seg: int, hs: int, o: int, prefix: list[str]) -> Def | None:
        """A K&R definition whose body opens at ``o`` after its parameters' declarations
        (``int f(a, b) int a; char *b; {``): its header ends at the ``)`` of an identifier list
        followed by declarations only; ``hs`` is where the last of them ends."""
        code, pairs = self.lx.code, self.lx.pairs
        if code[hs:o].strip():
            return None
        b = hs - 1
        while b > seg and code[b] in " \t\n":
            b -= 1
        if b <= seg or code[b] != ";":
            return None
        e = code.rfind(")", seg, b)
        while e >= 0:                             # the ) before the declarations: not inside one
            q = pairs.get(e, -1)
            if q < seg:
                return None
            if _KNR_DECLS.fullmatch(_strip_groups(code[e + 1:o])):
                break
            e = code.rfind(")", seg, q)
        if e < 0 or not _KNR_PARAMS.fullmatch(code, q + 1, e):
            return None
        hs2 = boundary(code, pairs, seg, q)
        m = _DECLARATOR.search(code, hs2, q)
        if m is None:
            return None
        name = norm_name(m.group(2))
        if name in _NOT_NAMES or name[:1].isdigit() or m.group(1).strip():
            return None
        start = self._after_access(self._after_directives(hs2, m.start()), m.start())
        d = Def("function", name, start, pairs.get(o, len(code)) + 1, o, m.start(2), "function",
                ".".join(prefix + [name]))
        if _STATIC.search(code, hs2, m.start()):
            d.data["static"] = True
        return d

    def alternatives(self, funcs: list[Def]) -> list[Def]:
        """Functions whose header a later ``#else``/``#elif`` branch spells differently with the
        same body (``#ifdef WIN32`` ``int umain(..) {`` ``#else`` ``int main(..) {`` ``#endif``): the
        lexer blanked that branch; its header is read there and gets the kept function's body
        (and parent), under its own name. A header of the same name adds nothing."""
        code = self.lx.code
        out = []
        for s, e, seg in self.lx.branches:
            o = _last_open(seg)
            if o is None:
                continue
            kept = [d for d in funcs if d.body is not None and d.body < s and d.end > e
                    and not code[d.body + 1:s].strip()]
            if not kept:
                continue
            d = max(kept, key=lambda x: x.body)
            h = max(seg.rfind(";", 0, o), seg.rfind("}", 0, o)) + 1
            while h < o and seg[h] in " \t\n":
                h += 1
            head = seg[h:o]
            q = _params_open(head)
            if q is None:
                continue
            m = _DECLARATOR.search(head, 0, q)
            if m is None:
                continue
            name = norm_name(m.group(2))
            if name == d.name or name in _NOT_NAMES or name[:1].isdigit():
                continue
            up, _, _ = d.local.rpartition(".")
            alt = Def(d.kind, name, s + h, d.end, s + o, s + h + m.start(2), "function",
                      f"{up}.{name}" if up else name)
            alt.parent = d.parent or self.mod
            alt.data.update(d.data)
            out.append(alt)
        return out

    def _init_list_body(self, at: int, o: int) -> int | None:
        """The body after a constructor's initialiser list ``: a(1), b{2} {``."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        for _ in range(200):
            m = _INIT_ITEM.match(code, at)
            if m is None:
                w = re.compile(r"\s*\{").match(code, at)
                return w.end() - 1 if w else None
            g = m.end()
            at = pairs.get(g, n) + 1
            w = re.compile(r"\s*(\.\.\.)?\s*(,|\{)").match(code, at)
            if w is None:
                return None
            if w.group(2) == "{":
                return w.end() - 1
            at = w.end()
        return None

    # ---- names -----------------------------------------------------------------------------
    def _classes_around(self, scope: Def) -> list[Def]:
        out, d = [], scope
        while d is not None and d is not self.mod:
            if d.kind == "class":
                out.append(d)
            d = d.parent
        return out

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        head, last = parts[0], parts[-1]
        if head in _NOT_CALLED:
            return []
        classes = [c.name for c in self._classes_around(scope)]
        if scope.kind == "method" and "cls" in scope.data and not classes:
            classes = [scope.data["cls"]]
        if head == "this":
            if len(parts) != 2 or not classes:
                return []
            return [f"{classes[0]}.{last}"] + [f"{b}.{last}" for b in self._bases(scope)]
        if len(parts) == 1:
            out = [f"{c}.{head}" for c in classes] + [f"{b}.{head}" for b in self._bases(scope)]
            ns = scope.qual.split(".")[:-1] if scope.kind == "function" else []
            for i in range(len(ns), -1, -1):
                out.append(f"{self.rel}:{'.'.join(ns[:i] + [head])}")
            return out + [head]
        quals = [p for p in parts[:-1] if p]
        return [".".join(quals[-1:] + [last]), ".".join(quals + [last]), last]

    def _bases(self, scope: Def) -> list[str]:
        for c in self._classes_around(scope):
            return [x[-1] for x, _ in c.bases if x]
        return []


def load(path, rel: str, opts, spec=C):
    text, warning = read_source(path)
    lx = lex(text, "c")
    b = _C(lx, rel, spec, warning)
    b.scan_includes()
    classes = b.scan_classes()
    funcs: list[Def] = []
    b.walk(0, len(lx.code), [], None, funcs)
    for _ in range(8):                          # classes inside function bodies, and their classes
        todo = [(o, d) for o, d in b.class_bodies.items() if o not in b.walked] + \
               [(o, None) for o in b.anon_bodies if o not in b.walked]
        if not todo:
            break
        for o, d in todo:
            b.walked.add(o)
            if d is None or d.decl != "enum":
                found: list[Def] = []
                b.walk(o + 1, lx.pairs.get(o, len(lx.code)), [d.name] if d else [], d, found)
                for f in found:
                    if d is None and f.kind == "function":
                        f.kind = "method"
                funcs += found
    funcs += b.alternatives(funcs)
    classes += outside_bodies(b.scan_aliases(), funcs)
    funcs += b.scan_macros()
    b.nest(classes + funcs)
    for d in classes:           # namespaces prefix a class of the file's top level (`ns.Outer`, and
        if d.parent is b.mod:   # `ns.Outer.Deferred` for `class Outer::Deferred {}` in `ns`); a nested
            pre = [n for o, c, n in b.ns_spans if o < d.start < c]      # one reads its parent's
            if pre:                                                     # (`ns.Outer.Inner`, not
                d.local = ".".join(b.under(pre, d.local.split(".")))    # `ns.Outer.ns.Inner`)
    code = lx.code
    skip = {d.name_at for d in b.defs}
    calls = []
    for at, raw in call_sites(code, skip):
        if "." in raw or "->" in raw:
            t = _THIS_CALL.fullmatch(raw)
            if t:
                calls.append((at, ["this", t.group(1)]))
            continue
        calls.append((at, split_chain(raw)))
    res = b.build(calls)
    for d in b.defs:            # an out-of-line `Cls::f` or `class Cls::Impl {}` outside a class body:
        if (d.kind in ("method", "class") and d.parent is b.mod and d.data.get("cls")   # member_of the class
                and d.qual.endswith("." + d.name)):
            quals = d.qual[:-len(d.name) - 1].split(".")
            if not all(q.isidentifier() for q in quals[-2:]):   # (`Cls<std::string>::f` is read
                continue                                        # as Cls.string>.f: no class name)
            if d.kind == "class" and quals[-1] in b.namespaces and quals[-1] not in b.class_names():
                continue                                        # `struct ns::Fwd {}`: ns is no class
            names = [".".join(quals[-2:])] if len(quals) > 1 else []
            res.edges.append(EdgeRec(d.key, "\n".join(names + [quals[-1]]), MEMBER_OF, "c",
                                     line=lx.line(d.name_at), props={"type": ".".join(quals)}))
    return res
