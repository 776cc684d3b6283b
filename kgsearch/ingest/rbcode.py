"""Ruby source: files, classes, modules, methods and functions, and their edges.

Read on the lexer of :mod:`kgsearch.ingest.rblex` (comments, strings, ``%`` literals, heredocs,
regular expressions blanked). Ruby closes its blocks with ``end``, not braces: the scanner walks
the keywords that open one (``class``, ``module``, ``def``, ``do``, ``begin``, ``case``,
``for``; ``if``, ``unless``, ``while``, ``until`` where a statement starts: after a line
break, ``;``, ``(``, ``=``, an operator, ``then``/``else``/``do``/``begin``..., never after a
value, where they are modifiers: ``return x if y``, ``end while z``) and the ``end`` that closes
each; the ``do`` of ``while x do`` on the loop's line opens nothing. A keyword after ``.``,
``:``, ``@``, ``$`` or before a ``:`` label is a name (``x.class``, ``:end``, ``if:``).

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``); classes and modules
(``class``, ``decl`` says ``module`` for a module; ``class A::B`` is named ``B`` and
qualified ``A.B``; ``class << self`` is no node: its methods are its class's, with
``props.singleton``); methods (``def m``, ``def self.m``, ``def obj.m``: ``props.receiver``;
endless ``def m(x) = expr``, ending where its expression does; ``define_method(:m) do .. end`` or
``{ .. }`` with a literal name, ``decl: define_method``) and top-level functions. Spans run
from the ``def``/``class``/``module`` line (comments above it are the doc, not the span) to the
``end`` line. Tests: ``spec/``, ``test/``, ``*_spec.rb``, ``*_test.rb``, ``test_*.rb``.

Names (``ns='rb'``): a class or module answers to its qualified name (``Rack.Session.Cookie``: the
modules and classes around it, and its own ``A::B`` path), a method to ``<class>.<name>``
(instance and singleton methods alike), a top-level function to its name.

Edges:

* ``imports``: ``require_relative "x"`` -> the file ``x.rb`` beside the file; ``require "a/b"``
  and ``autoload :X, "a/b"`` -> ``a/b.rb`` in the folder above the file's own ``a/`` folder (a
  gem's require path: ``lib/``, or ``lib/concurrent-ruby/``), under the ``lib/`` (``spec/``,
  ``test/``) folder above the file, else ``lib/a/b.rb``, ``a/b.rb`` (a gem's own files; other gems and the standard library are not in
  the tree).
* ``calls``: ``m(..)``, ``m arg`` and ``self.m`` -> the enclosing classes' and modules' ``m``,
  then their bases' and mixins', then a top-level ``m``; ``Const.m`` / ``Const::m`` -> ``m`` of
  the constant as Ruby looks it up (the modules around the call, innermost first, then the top
  level); ``Const.new`` -> the class. Not resolved: calls on values (``x.m``), ``super``,
  ``send``/``define_method``/``method_missing``, anything outside the tree.
* ``inherits``: ``class A < B`` and the modules a class or module ``include``\\ s, ``prepend``\\ s or
  ``extend``\\ s (as PHP's traits: they are in its ancestor chain, ``super`` reaches them, and a
  call resolves through them), each looked up as a constant.
"""
from __future__ import annotations

import posixpath
import re
from itertools import islice

from .codemodel import Builder, Def
from .codescan import KeptSearch, read_source
from .langspec import RUBY
from .rblex import lex

NAME = "ruby"
EXTENSIONS = RUBY.extensions
FILE_NAMES = RUBY.file_names

__all__ = ["NAME", "EXTENSIONS", "FILE_NAMES", "load", "RbBuilder"]

_KEYWORD = re.compile(r"\b(class|module|def|if|unless|while|until|for|case|begin|do|end|include|extend|prepend"
                      r"|require_relative|require|autoload|define_method)\b")
_CONST = r"(?:::)?[A-Z]\w*(?:\s*::\s*[A-Z]\w*)*"
_CLASS_HEAD = re.compile(r"(class|module)[ \t]+(" + _CONST + r")")
_SUPER = re.compile(r"[ \t]*<[ \t]*(" + _CONST + r")")
_OPNAME = r"\[\]=?|[+\-]@|[!~]@?|<=>|===?|=~|!=|!~|\*\*|<<|>>|<=|>=|[+\-*/%<>&|^]"
_DEF_HEAD = re.compile(r"def[ \t]+(?:(self|[A-Z]\w*(?:::[A-Z]\w*)*|[@$]{0,2}[a-z_]\w*)[ \t]*\.[ \t]*)?"
                       r"([A-Za-z_]\w*(?:[?!]|=(?![=~>]))?|" + _OPNAME + r")")
_MIXIN = re.compile(r"[ \t]+(" + _CONST + r"(?:[ \t]*,[ \t]*" + _CONST + r")*)[ \t]*(?:$|;|#)", re.M)
# define_method(:name) / define_method "name", then its block's `do` or `{` on that line
_DEFINE = re.compile(r"[ \t]*\(?[ \t]*(?::([A-Za-z_]\w*[?!=]?|" + _OPNAME + r")|(\"))")
_BLOCK_OPEN = re.compile(r"[^\n{]*?(?:\b(do)\b|(\{))")
_REQUIRE = re.compile(r"[ \t]*\(?[ \t]*(?::\w+[ \t]*,[ \t]*)?\"")
_LOOP_LINE = re.compile(r"[\n;]")
_OPENS_AFTER = frozenset("then else do begin ensure and or not".split())
_STATEMENT_START = frozenset("\n;([{,=|&!+-*/%<>~^?:")
# a call's receiver (a constant path or self) and name; bare names need `(` or an argument after a blank
_CALL = re.compile(r"(?:(" + _CONST + r"|self)[ \t]*(?:\.|::|&\.)[ \t]*)?([a-z_]\w*[?!]?|[A-Z]\w*(?=\())"
                   r"(?:(\()|[ \t]+(?!(?:if|unless|while|until|and|or|then|do|rescue|in|end|else|elsif|when|ensure)\b)"
                   r"([\w:@\"']))?")
_DEPTH = 8                  # the classes and modules around a call that its candidates name (innermost first)
KEYWORDS = frozenset("alias and begin break case class def defined? do else elsif end ensure false for if in module "
                     "next nil not or redo rescue retry return self super then true undef unless until when while yield "
                     "puts require require_relative include extend prepend attr_reader attr_writer attr_accessor "
                     "private public protected module_function raise lambda proc loop p print".split())


class RbBuilder(Builder):
    def __init__(self, lx, rel, spec, warning):
        super().__init__(lx, rel, spec, warning)
        self._loop_end = KeptSearch(_LOOP_LINE)

    # ---- names -----------------------------------------------------------------------------
    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod:
            return []
        return [(d.qual, 0)]

    def _crefs(self, scope: Def | None) -> list[str]:
        """The qualified names of the classes and modules around ``scope``, innermost first (where
        Ruby looks a constant up, before the top level)."""
        out, d = [], scope
        while d is not None and d is not self.mod and len(out) < _DEPTH:
            if d.kind == "class":
                out.append(_qual(d))
            d = d.parent
        return out

    def const_candidates(self, name: str, scope: Def | None) -> list[str]:
        name = name.replace(" ", "").replace("\t", "")
        if name.startswith("::"):
            return [name[2:].replace("::", ".")]
        name = name.replace("::", ".")
        return [f"{c}.{name}" for c in self._crefs(scope)] + [name]

    def _ancestors(self, classes: list[Def]) -> list[str]:
        return [c for k in classes for cands, _ in k.bases for c in cands]

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        recv, name = parts
        if (recv is None or recv == "self") and name in KEYWORDS:
            return []
        classes = [d for d in islice(_chain(scope), _DEPTH * 2) if d.kind == "class"][:_DEPTH]
        if recv is None or recv == "self":
            out = [f"{_qual(c)}.{name}" for c in classes]
            out += [f"{b}.{name}" for b in self._ancestors(classes[:1])]
            return out + [name] if recv is None else out
        consts = self.const_candidates(recv, scope)
        if name == "new":
            return consts
        return [f"{c}.{name}" for c in consts]

    # ---- definitions and blocks ------------------------------------------------------------
    def scan(self) -> list[tuple[int, list]]:
        code, text = self.lx.code, self.lx.text
        n = len(code)
        defs: list[Def] = []
        stack: list[list] = []             # [keyword, Def or None, loop's `do` allowed before]
        mixins: list[tuple[Def, str, int]] = []
        name_end = -1                        # a method's name (def for(x), def self.end): no keyword
        defined: dict[int, Def] = {}         # a define_method's `do` -> its definition
        for m in _KEYWORD.finditer(code):
            kw, at = m.group(1), m.start()
            if at < name_end:
                continue
            if at and code[at - 1] in ".:@$" or code.startswith(":", m.end()) and not code.startswith("::", m.end()) \
                    or m.end() < n and code[m.end()] in "?!=" and not code.startswith("==", m.end()) and kw != "end":
                continue
            if kw == "end":
                if stack:
                    top = stack.pop()
                    if top[1] is not None:
                        top[1].end = m.end()
                continue
            if kw in ("if", "unless", "while", "until"):
                if not self._statement_start(at):
                    continue
                stack.append([kw, None, self._loop_end(code, m.end()) if kw in ("while", "until") else -1])
            elif kw == "for":
                stack.append([kw, None, self._loop_end(code, m.end())])
            elif kw == "do":
                if stack and stack[-1][2] >= at:
                    stack[-1][2] = -1                   # while x do: the loop's own
                    continue
                d = defined.pop(at, None)              # define_method(:x) do .. end
                stack.append([kw, d, -1])
            elif kw == "define_method":
                d = self._define_method(m.end(), at, text)
                if d is not None:
                    defs.append(d)
                    if d.body is not None and code[d.body] == "{":
                        d.end = self.lx.pairs.get(d.body, n - 1) + 1
                    else:
                        defined[d.body] = d
            elif kw in ("begin", "case"):
                stack.append([kw, None, -1])
            elif kw in ("class", "module"):
                h = _CLASS_HEAD.match(code, at)
                if h is None:
                    stack.append([kw, None, -1])        # class << self, class<<obj
                    if kw == "class" and code.startswith("<<", _skip_blanks(code, m.end())):
                        stack[-1][2] = -2              # (singleton: its methods say so)
                    continue
                path = re.sub(r"\s+", "", h.group(2)).lstrip(":").split("::")
                d = Def("class", path[-1], at, n, None, h.start(2) + h.group(2).rfind(path[-1]), kw,
                        local=".".join(path))
                d.body = _line_end(code, h.end())
                if kw == "class":
                    s = _SUPER.match(code, h.end())
                    if s:
                        d.data["super"] = (s.group(1), s.start(1))
                defs.append(d)
                stack.append([kw, d, -1])
            elif kw == "def":
                h = _DEF_HEAD.match(code, at)
                if h is None:
                    stack.append([kw, None, -1])
                    continue
                d = Def("function", h.group(2), at, n, None, h.start(2))
                name_end = h.end()
                if h.group(1):
                    d.props["receiver"] = h.group(1)
                elif any(e[2] == -2 for e in stack[-1:]):
                    d.props["singleton"] = True
                k = _skip_blanks(code, h.end())
                if k < n and code[k] == "(":
                    k = _skip_blanks(code, self.lx.pairs.get(k, n - 1) + 1)
                d.body = _line_end(code, k)
                defs.append(d)
                if code.startswith("=", k) and not code.startswith(("==", "=~", "=>"), k):
                    d.end = self._expression_end(k + 1)     # def m(x) = expr: no `end`
                    continue
                stack.append([kw, d, -1])
            elif kw in ("include", "extend", "prepend"):
                mm = _MIXIN.match(code, m.end())
                owner = next((e[1] for e in reversed(stack) if e[1] is not None and e[1].kind == "class"), None)
                if mm and owner is not None and self._statement_start(at):
                    for name in mm.group(1).split(","):
                        mixins.append((owner, name.strip(), mm.start(1)))
            else:                                     # require, require_relative, autoload
                self._require(kw, m.end(), text, code, at)
        self.nest(defs)
        for d in defs:
            if "super" in d.data:
                name, at = d.data["super"]
                d.bases.append((self.const_candidates(name, d.parent), at))
        for owner, name, at in mixins:
            owner.bases.append((self.const_candidates(name, owner), at))
        return self._call_sites(code, {d.name_at for d in defs})

    def _define_method(self, pos: int, at: int, text: str) -> Def | None:
        """``define_method(:name) do .. end`` (or ``{ .. }``, ``"name"``): a method named so whose
        body is the block (None: no name or no block on its line, ``define_method(:x, m)``)."""
        code = self.lx.code
        if at and code[at - 1] in ".:@$" and not code.startswith("self.", at - 5):
            return None
        m = _DEFINE.match(code, pos)
        if m is None:
            return None
        if m.group(1):
            name, name_at, k = m.group(1), m.start(1), m.end()
        else:
            e = code.find('"', m.end())
            name, name_at, k = text[m.end():e], m.end(), e + 1
            if e < 0 or not re.fullmatch(r"[A-Za-z_]\w*[?!=]?", name):
                return None
        if k < len(code) and code[k] == ")" or code[m.start():k].lstrip(" \t").startswith("("):
            close = code.find(")", k)
            if close < 0 or "\n" in code[k:close]:
                return None
            k = close + 1
        b = _BLOCK_OPEN.match(code, k)
        if b is None:
            return None
        body = b.start(1) if b.group(1) else b.start(2)
        return Def("function", name, at, len(code), body, name_at, "define_method")

    def _statement_start(self, at: int) -> bool:
        """A keyword at ``at`` begins a statement (``if`` opens a block), not a modifier."""
        code = self.lx.code
        j = at - 1
        while j >= 0 and code[j] in " \t":
            j -= 1
        if j >= 0 and code[j] == "\n":            # a line ending with a backslash goes on
            k = j - 1
            while k >= 0 and code[k] in " \t":
                k -= 1
            if k >= 0 and code[k] == "\\":
                return False
        if j < 0:
            return True
        if code[j] in "?!" and j and (code[j - 1].isalnum() or code[j - 1] == "_"):
            return False                          # empty? if x, save! unless y: a method's name
        if code[j] in _STATEMENT_START:
            return True
        if code[j].isalnum() or code[j] == "_":
            k = j
            while k > 0 and (code[k - 1].isalnum() or code[k - 1] == "_") and j - k < 12:
                k -= 1
            return code[k:j + 1] in _OPENS_AFTER and (k == 0 or code[k - 1] not in ".:@$")
        return False

    def _expression_end(self, pos: int) -> int:
        """End of an endless method's expression: its line, bracket groups and lines ending with an
        operator or a comma joined."""
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        k = pos
        while k < n:
            c = code[k]
            if c in "([{":
                k = pairs.get(k, n - 1) + 1
                continue
            if c == "\n":
                j = k - 1
                while j > pos and code[j] in " \t":
                    j -= 1
                if code[j] in "+-*/%|&,.\\=<>?:(" and j > pos:
                    k += 1
                    continue
                return k
            k += 1
        return n

    def _require(self, kw: str, at: int, text: str, code: str, kw_at: int) -> None:
        m = _REQUIRE.match(code, at)
        if m is None:
            return
        q = m.end() - 1
        e = code.find('"', q + 1)
        if e < 0:
            return
        raw = text[q + 1:e]
        if not raw or "#{" in raw or "\n" in raw:
            return
        if kw == "require_relative":
            here = posixpath.dirname(self.rel)
            path = posixpath.normpath(posixpath.join(here, raw))
            self.imports([path if path.endswith(".rb") else path + ".rb"], kw_at)
            return
        rel_path = raw if raw.endswith(".rb") else raw + ".rb"
        parts = self.rel.split("/")[:-1]
        cands = []
        head = rel_path.split("/", 1)[0]
        if "/" in rel_path and head in parts:         # a gem's file requiring another of its own:
            i = parts.index(head)                     # the folder above its top one is a require path
            if "lib" in parts[max(0, i - 2):i]:       # when it is lib/ or one below (lib/concurrent-ruby/;
                cands.append("/".join(parts[:i] + [rel_path]))    # not lib/rack/auth/ for 'digest/md5')
        for i in range(len(parts) - 1, -1, -1):        # the nearest lib/ (spec/, test/) above the file
            if parts[i] in ("lib", "spec", "test"):
                cands.append("/".join(parts[:i + 1] + [rel_path]))
                if parts[i] == "lib" and i + 1 < len(parts) and "/" in rel_path:
                    cands.append("/".join(parts[:i + 2] + [rel_path]))    # lib/concurrent-ruby/ too
        self.imports(cands + ["lib/" + rel_path, rel_path], kw_at)

    def _call_sites(self, code: str, skip: set[int]) -> list[tuple[int, list]]:
        out = []
        for m in _CALL.finditer(code):
            at = m.start()
            if at and (code[at - 1].isalnum() or code[at - 1] in "_.:@$&"):
                continue
            name_at = m.start(2)
            if name_at in skip:
                continue
            recv, name = m.group(1), m.group(2)
            if recv is None and (name in KEYWORDS or name[:1].isupper() or m.group(3) is None and m.group(4) is None):
                continue                          # Integer(..): Kernel's; a bare name alone: a variable?
            j = at - 1
            while j >= 0 and code[j] in " \t":
                j -= 1
            if j >= 3 and code[j - 2:j + 1] == "def" and (j == 3 or not code[j - 3].isalnum()):
                continue
            out.append((name_at, [recv, name]))
        return out


def _skip_blanks(code: str, k: int) -> int:
    n = len(code)
    while k < n and code[k] in " \t":
        k += 1
    return k


def _line_end(code: str, k: int) -> int:
    e = code.find("\n", k)
    return (len(code) if e < 0 else e) - 1 if e != k else k


def _chain(d: Def | None):
    while d is not None:
        yield d
        d = d.parent


def _qual(d: Def) -> str:
    """The qualified name of a class, module or method (its parents' names and its own path)."""
    if d.qual:
        return d.qual
    names = [x.local for x in _chain(d) if x.kind != "module"]
    return ".".join(reversed(names))


def load(path, rel: str, opts, spec=RUBY):
    text, warning = read_source(path)
    lx = lex(text)
    b = RbBuilder(lx, rel, spec, warning)
    calls = b.scan()
    return b.build(calls)
