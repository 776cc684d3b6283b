"""JavaScript and TypeScript source (JSX, TSX, ES modules and CommonJS): definitions.

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``; ``index.js`` is named
after its folder); function and generator declarations; classes (declarations and named
class expressions; TypeScript abstract classes, interfaces and enums as ``class`` with their
``decl``, and type aliases ``type X<T> = ..`` outside function bodies, ``decl`` ``alias``); methods
of classes (constructors, getters, setters, ``#private`` ones, fields whose value is a function,
TypeScript overload and abstract signatures) and of interfaces and type literals (signatures);
body-less ``function f(..): T;`` (overloads, ``declare``: ``decl`` ``signature``; an overloaded
name's implementation takes the plain key, :func:`kgsearch.ingest.codemodel.Builder.build`); and every function or arrow function given a name by where it is
written, as tree-sitter's tags name them: ``const f = () => ..``, ``x.y = function () ..``
(``X.prototype.m = ..`` reads ``X.m``; ``exports.f``/``module.exports.f`` read ``f``;
``module.exports = ..`` reads ``exports``), ``key: function () ..`` and ``key() { }`` in an
object literal (named ``<object>.<key>`` when the object is assigned to a name); a named
function expression passed as a call's argument (``defineGetter(req, 'host', function host()
{..})``, ``arr.map(function toRow(x) {..})``: tree-sitter's tags name it, stack traces show it)
by its own name. Anonymous functions are not nodes (their code belongs to the definition
around them); nor is a named function expression called in place (``(function f() {..})()``). Arrow functions
with an expression body end where the expression does. Doc comments (JSDoc or plain) are the
comments right above. TypeScript namespaces (``namespace X {}``, ``module X {}``) are no
nodes: :func:`kgsearch.ingest.jsnames.qualify_namespaces` prefixes their names. Tests: ``*.test.*``, ``*.spec.*`` and ``__tests__``/``test``/``spec``
folders; ``*.min.js`` and bundles are generated.

Names and edges: :mod:`kgsearch.ingest.jsnames`.
"""
from __future__ import annotations

import re

from .codemodel import Def
from .codescan import KeptSearch, free, outside_bodies, skip_angles_paired
from .jsblocks import Blocks, local_of, owner_prefix

__all__ = ["scan", "owner_prefix"]

_FUNCTION = re.compile(r"(?:async\s+)?function\b\s*(\*\s*)?([\w$]+)?\s*")        # .match at a position
_FUNCTION_KW = re.compile(r"function\b\s*(\*\s*)?([\w$]+)?\s*")
_ASYNC_BEFORE = re.compile(r"async\s+$")
_CLASS = re.compile(r"class\b\s*([A-Za-z_$][\w$]*)?")
_TYPE_ALIAS_BEFORE = re.compile(r"(?<![\w$.])type\s+$")
_ANONYMOUS_CLASS = re.compile(r"\{|<|extends\b|implements\b")
_ABSTRACT_BEFORE = re.compile(r"abstract\s+$")
_TS_TYPE = re.compile(r"(interface|enum)\s+([\w$]+)")
_CONST_BEFORE = re.compile(r"const\s+$")
# `type X<T> = ..`: no line break after `type` (TypeScript reads `type\nX = 1` as two statements), at
# a statement's start (a JavaScript variable named `type` is none: `type = 1`, `let type = x`)
_TYPE_ALIAS = re.compile(r"type[ \t]+([A-Za-z_$][\w$]*)[ \t]*")
_DECLARE_BEFORE = re.compile(r"(?<![\w$.])(?:export|declare)$")
_VALUE = re.compile(r"[=:]")
_VALUE_AFTER = re.compile(r"\s*(?=(?:async\b\s*)?(?:function\b|\(|<|[A-Za-z_$][\w$]*\s*=>))")
_ARROW_AFTER = re.compile(r"\s*(?::(?:[^=;{}]|\{[^{}]*\}|=>(?=[^{]*=>))*?)?=>")
_SIMPLE_ARROW = re.compile(r"(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>")
_LHS = re.compile(r"((?:this|[A-Za-z_$][\w$]*)(?:\s*\??\.\s*#?[\w$]+)*)\s*(?:[!?]\s*)?"
                  r"(?::(?:[^;{}=()\n]|\([^()\n]*\)|=>|<(?:[^<>;{}]|<[^<>;{}]*>)*>)*?)?\s*$")
_WORD_RUN = re.compile(r"[\w$]+")
_ID_START = re.compile(r"[A-Za-z_$]")
_KEY = re.compile(r"([A-Za-z_$][\w$]*)\s*\??\s*$")
_MEMBER = re.compile(r"(?<![\w$.#])(#?[A-Za-z_$][\w$]*|\[[^\[\]\n]*\])\s*\??\s*(?=[(<])")
_MODIFIERS = re.compile(r"((?:@[\w$.]+(?:\s*\((?:[^()]|\([^()]*\))*\))?\s*|(?:static|async|get|set|public|private|protected"
                        r"|readonly|abstract|override|declare|accessor|export|default)\s+|\*\s*)*)$")
_EXPR_BEFORE = re.compile(r"[=(,:\[?!&|+\-*/%<>~^]\s*$|\b(?:return|yield|await|new|typeof|void|delete|in|of|case|throw)\s*$")
_PREV = re.compile(r"([\w$]+|\S)\s*$")
_NOT_METHODS = frozenset("if for while switch catch with function return typeof new await yield super import "
                         "constructor_".split())
# keywords a class or interface may name a method with (Promise-likes' catch(), iterators' return());
# `new (..)` in an interface is a construct signature, `super(..)` a call
_MEMBER_KEYWORDS = _NOT_METHODS - {"new", "super", "constructor_"}
_TYPE_TOKEN = re.compile(r"[\w$.]+|=>|\S|\n")
_TYPE_OPERAND_WORDS = frozenset("extends keyof typeof infer is asserts readonly unique new".split())
_BRACE = re.compile(r"\{")


def return_type_end(code: str, pairs: dict, at: int) -> tuple[int, bool]:
    """After the parameter list that closes right before ``at``: ``(offset of the body's {,
    True)``, or ``(offset where the header ends, False)`` for an overload or abstract signature
    (its ``;``, ``,``, closing bracket or line break), past a TypeScript return type. The type
    may span lines inside its brackets (``Promise<\n A,\n B\n>``, a tuple, a type literal
    ``{ a: T }``) and after an operator that leaves it open (``A |``, ``=>``); elsewhere a line
    break ends it, unless the next line opens the body or goes on with ``|``, ``&`` or a
    conditional type's ``?``/``:``."""
    n = len(code)
    p = at
    while p < n and code[p] in " \t\n":
        p += 1
    if p >= n:
        return n, False
    if code[p] == "{":
        return p, True
    if code[p] != ":":
        return p, False
    return type_end(code, pairs, p + 1)


def type_end(code: str, pairs: dict, p: int) -> tuple[int, bool]:
    """Where the type that starts at ``p`` ends (:func:`return_type_end`'s rules): ``(offset, True)``
    at a ``{`` that follows a whole type (a body), else ``(offset of the ;, comma, closing bracket
    or line break that ends it, False)``."""
    n = len(code)
    operand = True                                 # a type is expected: a `{` opens a type literal
    while True:
        m = _TYPE_TOKEN.search(code, p)
        if m is None:
            return n, False
        t, p = m.group(), m.end()
        if t == "\n":
            if operand:
                continue
            q = p
            while q < n and code[q] in " \t\n":
                q += 1
            if q < n and code[q] in "{|&?:":
                continue
            return m.start(), False
        c = t[0]
        if c == "{":
            if not operand:
                return m.start(), True
            p = pairs.get(m.start(), n) + 1
            operand = False
        elif c == "<":
            p = skip_angles_paired(code, m.start(), pairs)
            if p <= m.start() or code[p - 1] != ">":
                return p, False
            operand = False
        elif c in "([":
            p = pairs.get(m.start(), n) + 1
            operand = False
        elif t == "=>" or c in "|&?:":
            operand = True
        elif c in ";,})]=>":
            return m.start(), False
        elif c == '"':
            p = code.find('"', p) + 1 or n
            operand = False
        elif c.isalnum() or c in "_$":
            operand = t in _TYPE_OPERAND_WORDS
        else:
            operand = False


def _signature_end(code: str, stop: int, close: int) -> int:
    """One past a signature whose header stops at ``stop`` (its ``;`` included)."""
    if code.startswith(";", stop):
        return stop + 1
    while stop > close and code[stop - 1] in " \t\n":
        stop -= 1
    return stop


def _function_value(lx, at: int) -> tuple[int, int, int | None] | None:
    """A function or arrow function starting at ``at``: (start, end, body ``{`` or None)."""
    code, pairs = lx.code, lx.pairs
    n = len(code)
    m = _FUNCTION.match(code, at)
    if m:
        p = m.end()
        if code.startswith("<", p):
            p = skip_angles_paired(code, p, pairs)
            while p < n and code[p] in " \t\n":
                p += 1
        if not code.startswith("(", p):
            return None
        body, has_body = return_type_end(code, pairs, pairs.get(p, n) + 1)
        if not has_body:
            return None
        return at, pairs.get(body, n) + 1, body
    a = re.compile(r"(?:async\s+)?").match(code, at).end()
    if code.startswith("<", a):
        a = skip_angles_paired(code, a, pairs)
        while a < n and code[a] in " \t\n":
            a += 1
    if code.startswith("(", a):
        arrow = _ARROW_AFTER.match(code, pairs.get(a, n) + 1)
    else:
        s = _SIMPLE_ARROW.match(code, at)
        arrow = s if s and s.start() == at else None
    if arrow is None:
        return None
    p = arrow.end()
    while p < n and code[p] in " \t\n":
        p += 1
    if code.startswith("{", p):
        return at, pairs.get(p, n) + 1, p
    return at, expression_end(lx, p), None


_EXPR_STOP = re.compile(r"[;,)\]}\n({\[]")
_CONTINUES = re.compile(r"\s*(?:[.?:+\-*/%&|^<>=,]|\binstanceof\b|\bin\b)")
_ENDS_OPEN = re.compile(r"(?:[=+\-*/%&|^<>?:,(\[]|=>|\b(?:return|typeof|new|await|in|of|instanceof))\s*$")


def expression_end(lx, at: int) -> int:
    """One past the last character of the expression starting at ``at`` (an arrow function's
    expression body): up to a ``;`` or ``,`` or a closing bracket around it, or a line break
    after which nothing continues the expression."""
    code, pairs = lx.code, lx.pairs
    n = len(code)
    p = at
    last = at
    while True:
        m = _EXPR_STOP.search(code, p)
        if m is None:
            return n
        c, s = m.group(), m.start()
        if c in "({[":
            p = pairs.get(s, n) + 1
            last = p
            continue
        if c == "\n":
            seg = code[last:s]
            if seg.strip():
                last = s
            if not _CONTINUES.match(code, s) and not _ENDS_OPEN.search(code, max(at, s - 40), s) and s > at \
                    and code[at:s].strip():
                break
            p = s + 1
            continue
        break
    e = s
    while e > at and code[e - 1] in " \t\n":
        e -= 1
    return e


def _after_type_params(code: str, pairs: dict, at: int) -> int:
    """After ``<T extends {k: string}>`` when one starts at ``at`` (blanks first)."""
    p = at
    while p < len(code) and code[p] in " \t\n":
        p += 1
    return skip_angles_paired(code, p, pairs) if code.startswith("<", p) else at


_HEAD_END = re.compile(r"[;{}(\[<=]")
_next_head = KeptSearch(_HEAD_END)    # the first ``;{}([<=`` at or after an offset (class heads with no body)


def _head_end(code: str, pairs: dict, at: int, stop: str) -> int:
    """:func:`~.codescan.find_end` for a class or interface head: also past the generic arguments of its
    bases, which may hold type literals (``extends Partial<{ a: T }> {``)."""
    n = len(code)
    while True:
        s = _next_head(code, at)
        if s >= n:
            return n
        c = code[s]
        if c == "<":
            at = skip_angles_paired(code, s, pairs)
            if at <= s:
                return s
            continue
        if c in stop or c in "};":
            return s
        if c == "=":
            at = s + 1
            continue
        at = pairs.get(s, n) + 1


def _start_with_modifiers(code: str, at: int, lo: int) -> int:
    m = _MODIFIERS.search(code, max(lo, at - 120), at) if at > lo else None
    if m and m.group(1):
        s = m.start(1)
        while s < at and code[s] in " \t\n":
            s += 1
        return s
    return at


def scan(lx, typescript: bool = True) -> list[Def]:
    """Every definition of a lexed JavaScript/TypeScript file (see the module docstring);
    ``typescript``: the file may hold type literals (``A & {..}``), which JavaScript's JSX text
    (``Terms & {link()}``) would be taken for."""
    code, pairs = lx.code, lx.pairs
    n = len(code)
    defs: list[Def] = []
    fixed: dict[int, str] = {}
    taken: set[int] = set()                       # offsets of function values already named
    for m in _CLASS.finditer(code):
        if not free(code, m.start()) or not m.group(1) and not _ANONYMOUS_CLASS.match(code, m.end()):
            continue                               # `class="x"` in JSX is no class expression
        body = _head_end(code, pairs, _after_type_params(code, pairs, m.end()), "{;")
        if body >= n or code[body] != "{":
            continue
        fixed[body] = "class"
        if not m.group(1):                         # an anonymous class expression: its methods only
            continue
        ab = _ABSTRACT_BEFORE.search(code, max(0, m.start() - 20), m.start())
        start = _start_with_modifiers(code, ab.start() if ab else m.start(), 0)
        d = Def("class", m.group(1), start, pairs.get(body, n) + 1, body, m.start(1),
                "abstract class" if ab else "class")
        _heritage(d, code[m.end():body])
        defs.append(d)
    for m in _TS_TYPE.finditer(code):
        if not free(code, m.start()):
            continue
        body = _head_end(code, pairs, _after_type_params(code, pairs, m.end()), "{;=")
        if body >= n or code[body] != "{":
            continue
        fixed[body] = "interface" if m.group(1) == "interface" else "enum"
        c = _CONST_BEFORE.search(code, max(0, m.start() - 12), m.start())
        start = c.start() if c else m.start()
        d = Def("class", m.group(2), start, pairs.get(body, n) + 1, body, m.start(2), m.group(1))
        _heritage(d, code[m.end():body])
        defs.append(d)
    aliases = _type_aliases(code, pairs) if typescript else []
    blocks = Blocks(lx, fixed, typescript)
    callbacks: list[Def] = []                     # named function expressions passed as arguments
    for m in _FUNCTION_KW.finditer(code):
        if not m.group(2) or not free(code, m.start()):
            continue
        a = _ASYNC_BEFORE.search(code, max(0, m.start() - 12), m.start())
        start = a.start() if a else m.start()
        if _EXPR_BEFORE.search(code, max(0, start - 40), start):
            if _is_argument(lx, start):
                f = _function_value(lx, start)
                if f is not None:
                    callbacks.append(Def("function", m.group(2), start, f[1], f[2], m.start(2),
                                         "generator" if m.group(1) else "function"))
            continue
        f = _function_value(lx, start)
        if f is None:                              # a TypeScript overload or `declare function` signature
            p = m.end()
            if code.startswith("<", p):
                p = skip_angles_paired(code, p, pairs)
            p = code.find("(", p, p + 5)
            if p < 0:
                continue
            close = pairs.get(p, n)
            end = _signature_end(code, return_type_end(code, pairs, close + 1)[0], close)
            defs.append(Def("function", m.group(2), start, end, None, m.start(2), "signature"))
            continue
        taken.add(start)
        defs.append(Def("function", m.group(2), start, f[1], f[2], m.start(2),
                        "generator" if m.group(1) else "function"))
    memo: dict[int, str] = {}
    for m in _VALUE.finditer(code):
        s = m.start()
        if s and code[s - 1] in "=!<>+-*/%&|^?:" or code[s + 1:s + 2] in ("=", ">", ":"):
            continue
        v = _VALUE_AFTER.match(code, s + 1)
        if v is None:
            continue
        at = v.end()
        if at in taken:
            continue
        f = _function_value(lx, at)
        if f is None:
            continue
        up = lx.enclosing(m.start())
        if up >= 0 and code[up] in "([":
            continue                               # a default parameter value, an argument
        if _in_type_params(code, pairs, up, s):
            continue                               # <F extends (..) => any = () => void>: a default type
        if code[s] == ":":
            k = _KEY.search(code, max(0, m.start() - 120), m.start())
            if not k or up < 0 or code[up] != "{" or blocks.kind(up) != "object":
                continue
            owner = owner_prefix(lx, blocks, up, memo)
            name = k.group(1)
            d = Def("function", name, k.start(1), f[1], f[2], k.start(1), "function",
                    f"{owner}.{name}" if owner else name)
        else:
            lhs = lhs_before(code, max(0, m.start() - 200), m.start())
            if not lhs or _TYPE_ALIAS_BEFORE.search(code, max(0, lhs.start(1) - 12), lhs.start(1)):
                continue                           # `type Handler = (req: Req) => void`: a type
            raw = re.sub(r"\s+", "", lhs.group(1))
            local = local_of(raw)
            name = local.rsplit(".", 1)[-1]
            kind = "method" if up >= 0 and code[up] == "{" and blocks.kind(up) == "class" else "function"
            start = lhs.start(1)
            if kind == "method":
                start = _start_with_modifiers(code, start, up + 1)
            d = Def(kind, name, start, f[1], f[2], lhs.start(1), "function", local)
        taken.add(at)
        defs.append(d)
    defs += [d for d in callbacks if d.start not in taken]
    defs += _members(lx, blocks, memo)
    return defs + outside_bodies(aliases, [d for d in defs if d.kind in ("function", "method")])


def _type_aliases(code: str, pairs: dict) -> list[Def]:
    """TypeScript ``type X<T> = ..;`` (``export``, ``declare`` too): a ``class`` of decl ``alias``
    from ``type`` to the end of its type (its ``;`` included), as Go's ``type A = B`` (:func:`scan`
    keeps those outside function bodies)."""
    n = len(code)
    out = []
    for m in _TYPE_ALIAS.finditer(code):
        s = m.start()
        j = s
        while j > 0 and code[j - 1] in " \t":
            j -= 1
        if not free(code, s) or j and code[j - 1] not in ";{}\n" and not _DECLARE_BEFORE.search(code, max(0, j - 8), j):
            continue
        p = _after_type_params(code, pairs, m.end())
        while p < n and code[p] in " \t\n":
            p += 1
        if not code.startswith("=", p) or code.startswith(("==", "=>"), p):
            continue
        e, _ = type_end(code, pairs, p + 1)
        out.append(Def("class", m.group(1), s, _signature_end(code, min(e, n), p), None, m.start(1), "alias"))
    return out


def lhs_before(code: str, lo: int, hi: int):
    """``_LHS.search(code, lo, hi)`` (the assignment target ending at ``hi``), trying only the
    starts of words: a match starts with an identifier and runs through the end of its word (what
    follows a chain is space, ``?``, ``!``, ``.`` or ``:``), so if one starts inside a word it
    starts at the word's first ``[A-Za-z_$]`` too. The plain search tried every character of the
    200-character window, each try able to read to its end: 60 % of a 1.2 MB bundle's load time."""
    for run in _WORD_RUN.finditer(code, lo, hi):
        first = _ID_START.search(code, run.start(), run.end())
        if first is not None:
            m = _LHS.match(code, first.start(), hi)
            if m is not None:
                return m
    return None


def _in_type_params(code: str, pairs: dict, up: int, at: int) -> bool:
    """The ``=`` at ``at`` gives a type parameter its default (``<T = () => void>``): a ``<``
    before it in its bracket group (up to 400 characters back) opens a list that closes after it."""
    lo = max(up + 1, at - 400)
    j = code.rfind("<", lo, at)
    while j >= 0:
        e = skip_angles_paired(code, j, pairs)
        if e > at and code[e - 1] == ">":
            return True
        j = code.rfind("<", lo, j)
    return False


_CALLEE_END = re.compile(r"[\w$)\]]\s*$")
_ARG_BEFORE = re.compile(r"[(,]\s*$")


def _is_argument(lx, at: int) -> bool:
    """The function expression at ``at`` is an argument of a call (``f(a, function name() {})``,
    not ``(function name() {})()``): directly after the call's ``(`` or a ``,`` in it."""
    code = lx.code
    up = lx.enclosing(at)
    return (up >= 0 and code[up] == "(" and bool(_ARG_BEFORE.search(code, max(up, at - 40), at))
            and bool(_CALLEE_END.search(code, max(0, up - 40), up)))


def _heritage(d: Def, head: str) -> None:
    prev = None
    while prev != head:
        prev, head = head, re.sub(r"<[^<>]*>", "", head)
    ext = re.search(r"\bextends\s+(.+?)(?=\bimplements\b|$)", head, re.S)
    imp = re.search(r"\bimplements\s+(.+)$", head, re.S)
    if ext:
        for t in ext.group(1).split(","):
            t = re.sub(r"\s+", "", t)
            if re.fullmatch(r"[\w$.]+", t):
                d.data.setdefault("extends", []).append(t)
    if imp:
        for t in imp.group(1).split(","):
            t = re.sub(r"\s+", "", t)
            if re.fullmatch(r"[\w$.]+", t):
                d.data.setdefault("implements", []).append(t)


def _own_level(code: str, pairs: dict, o: int):
    """(start, end) stretches of the block at ``o`` outside the blocks nested in it."""
    close = pairs.get(o, len(code))
    p = o + 1
    while p < close:
        q = code.find("{", p, close)
        if q < 0:
            yield p, close
            return
        yield p, q
        p = pairs.get(q, close) + 1


def _member_sites(lx, blocks: Blocks):
    """(match, block, kind) for every name followed by ``(`` or ``<`` directly in a class,
    object, interface or type body (code blocks, where the calls are, are not read)."""
    code, pairs = lx.code, lx.pairs
    for o in _BRACE.finditer(code):
        o = o.start()
        kind = blocks.kind(o)
        if kind == "code" or kind == "enum":
            continue
        for a, b in _own_level(code, pairs, o):
            for m in _MEMBER.finditer(code, a, b):
                yield m, o, kind


def _function_before(code: str, lo: int, at: int) -> bool:
    """The word before ``at`` (back to ``lo``) is ``function`` (``function* g``)."""
    w = _PREV.search(code, max(lo, at - 40), at)
    return bool(w) and w.group(1) == "function"


def _members(lx, blocks: Blocks, memo: dict) -> list[Def]:
    """Method definitions and signatures directly in class, object, interface and type bodies."""
    code, pairs = lx.code, lx.pairs
    n = len(code)
    out = []
    header_end: dict[int, int] = {}               # per block: where the last member found ends
    for m, up, kind in _member_sites(lx, blocks):
        name = m.group(1)
        if name in _NOT_METHODS and (kind not in ("class", "interface") or name not in _MEMBER_KEYWORDS) \
                or m.start() < header_end.get(up, 0):
            continue                               # a keyword (a class may name a method catch(),
            #                                        return()); a name inside a signature's type
        if lx.enclosing(m.start()) != up:
            continue                               # inside (...) or [...]
        p = m.end()
        if code.startswith("<", p):
            p = skip_angles_paired(code, p, pairs)
            while p < n and code[p] in " \t\n":
                p += 1
        if not code.startswith("(", p):
            continue
        close = pairs.get(p, n)
        prev = _PREV.search(code, max(up + 1, m.start() - 40), m.start())
        if prev and prev.group(1) in (".", "=", "new", "await", "return", "(", ",", ":", "?", "!", "&", "|"):
            if not (prev.group(1) == "," and kind in ("object", "interface", "type")):
                continue
        if prev and (prev.group(1) == "function" or prev.group(1) == "*" and _function_before(code, up + 1, prev.start())):
            continue                               # `key: function named() {}`, `f = function* g() {}`: the
            #                                        key's (field's) node holds it (it was a second node
            #                                        under it, `obj.key.obj.named`)
        stop, has_body = return_type_end(code, pairs, close + 1)
        name_txt = lx.text[m.start(1):m.end(1)] if name.startswith("[") else name
        body = stop if has_body else None
        if has_body and stop < pairs.get(up, n):
            end = pairs.get(body, n) + 1
        elif kind in ("interface", "type", "class"):
            body = None
            if stop > pairs.get(up, n):
                continue
            end = _signature_end(code, stop, close)
            if kind == "class" and re.compile(r"\s*:?[^;{}\n]*=>").match(code, close + 1):
                continue
        else:
            continue
        start = _start_with_modifiers(code, m.start(), up + 1)
        owner = owner_prefix(lx, blocks, up, memo) if kind == "object" else ""
        d = Def("method" if kind != "object" else "function", name_txt, start, end, body, m.start(1),
                "method" if body is not None else "signature", f"{owner}.{name_txt}" if owner else name_txt)
        header_end[up] = end
        out.append(d)
    return out
