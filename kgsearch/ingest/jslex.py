"""The JavaScript / TypeScript lexer: :func:`lex` gives the same :class:`~kgsearch.ingest.clex.Lexed`
as the C-family lexer, with what only JavaScript has:

* template literals, whose ``${...}`` holes are code again and may hold braces, strings and
  further templates (the text parts are blanked, the holes kept);
* regular-expression literals (``/[{"]/g``), told from a division by what precedes the
  slash: after an operator, an opening bracket, ``,``, ``;``, ``}``, a keyword such as
  ``return`` or ``typeof``, or at the start, a slash starts a literal, and after the ``)`` of an
  ``if``/``while``/``for`` head; after a name, a number, another ``)`` or ``]`` it divides
  (comments between are skipped: ``x =\n// note\n/re/``). A literal cannot span lines, so a
  wrong guess costs one line.

One compiled pattern finds the next comment, string, template or slash (and, inside a
template hole, brace); Python only visits those.
"""
from __future__ import annotations

import re

from .clex import Lexed, blank

__all__ = ["lex", "lex_reference"]

_COMMENT_STR = (r"(?P<lc>//[^\n]*)|(?P<bc>/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/\*[\s\S]*)"
                r"""|(?P<s>"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"|'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*')"""
                r"|(?P<t>`)|(?P<slash>/)")
_TOP_REFERENCE = re.compile(_COMMENT_STR)
_HOLE_REFERENCE = re.compile(_COMMENT_STR + r"|(?P<open>\{)|(?P<close>\})")
# the strings' opening quote alone, their bodies matched from there (as clex does: a string that
# never closed, `'\'\'\'...`, tells that every quote inside it fails too; the whole pattern tried
# each to the end of its line, n^2: 60 KB of `'\` on one line took 51 s)
_COMMENT_Q = _COMMENT_STR.replace(_COMMENT_STR[_COMMENT_STR.index("|(?P<s>"):_COMMENT_STR.index("|(?P<t>")], "|(?P<q>[\"'])")
_TOP = re.compile(_COMMENT_Q)
_HOLE = re.compile(_COMMENT_Q + r"|(?P<open>\{)|(?P<close>\})")
_BODY = {'"': re.compile(r'[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*'), "'": re.compile(r"[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*")}
_FLAGS = re.compile(r"[A-Za-z]*")
_TEMPLATE = re.compile(r"[^`\\$]*(?:(?:\\[\s\S]|\$(?!\{))[^`\\$]*)*(?:`|\$\{|\\?\Z)")     # (a \ last in the file too)
_REGEX = re.compile(r"/(?![*/])(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[A-Za-z]*")
_WORD_END = re.compile(r"[\w$]+$")
_WORD_BEFORE = re.compile(r"([\w$]+)\s*$")
_BEFORE_REGEX_WORDS = frozenset({"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
                                 "case", "do", "else", "yield", "await"})
_WS = " \t\n\r"


def _regex_here(text: str, pos: int, comments: list[tuple[int, int]]) -> bool:
    i = pos - 1
    k = len(comments) - 1
    while True:                                       # blanks and comments before the slash
        while i >= 0 and text[i] in _WS:
            i -= 1
        if k < 0 or i < 0 or comments[k][1] <= i:
            break
        i = comments[k][0] - 1                        # a comment ends here: look before it
        k -= 1
    if i < 0:
        return True
    c = text[i]
    if c == ")":                                      # if (x) /re/ : a keyword before the (
        depth, j = 0, i
        while j >= 0 and i - j < 400:
            ch = text[j]
            if ch == ")":
                depth += 1
            elif ch == "(":
                depth -= 1
                if depth == 0:
                    m = _WORD_BEFORE.search(text, max(0, j - 12), j)
                    return bool(m) and m.group(1) in ("if", "while", "for", "with")
            j -= 1
        return False
    if c == "]":
        return False
    if c.isalnum() or c in "_$":
        m = _WORD_END.search(text, max(0, i - 12), i + 1)
        return bool(m) and m.group() in _BEFORE_REGEX_WORDS
    if c in "+-" and i > 0 and text[i - 1] == c:      # x++ / 2
        return False
    return True


def _regex_end(text: str, s: int, memo: dict) -> int:
    """End of the regular-expression literal whose ``/`` is at ``s`` (flags included; -1: none),
    as ``_REGEX.match`` finds it, walking its characters with each (offset, inside a class)
    state's outcome kept in ``memo``: a walk that reaches a state walked before ends as that one
    did, so each is walked once per text (``_REGEX`` tried from every slash of a line to its end:
    60 KB of ``(/[`` on one line took 50 s)."""
    n = len(text)
    if s + 1 >= n or text[s + 1] in "*/":
        return -1
    path = []
    i, cls = s + 1, 0
    while True:
        key = 2 * i + cls
        got = memo.get(key)
        if got is not None:
            res = got
            break
        path.append(key)
        if i >= n:
            res = -1
            break
        c = text[i]
        if c == "\n":
            res = -1
            break
        if c == "\\":
            if i + 1 >= n or text[i + 1] == "\n":
                res = -1
                break
            i += 2
            continue
        if cls:
            if c == "]":
                cls = 0
        elif c == "/":
            res = i
            break
        elif c == "[":
            cls = 1
        i += 1
    for k in path:
        memo[k] = res
    if res < 0 or res == s + 1:
        return -1
    return _FLAGS.match(text, res + 1).end()


def lex(text: str) -> Lexed:
    """Lex JavaScript or TypeScript (JSX and TSX included; line breaks already ``\\n``)."""
    return _lex(text, True)


def lex_reference(text: str) -> Lexed:
    """:func:`lex` with each string and regular-expression literal one whole pattern: the plain
    scan its answers are tested against."""
    return _lex(text, False)


def _lex(text: str, fast: bool) -> Lexed:
    parts: list[str] = []
    comments: list[tuple[int, int]] = []
    holes: list[int] = []          # per open template hole: its brace depth
    at = pos = 0
    n = len(text)
    top, hole = (_TOP, _HOLE) if fast else (_TOP_REFERENCE, _HOLE_REFERENCE)
    failed = {'"': -1, "'": -1}    # a string from a quote before this never closed
    memo: dict[int, int] = {}
    while pos < n:
        m = (hole if holes else top).search(text, pos)
        if m is None:
            break
        kind, s, e = m.lastgroup, m.start(), m.end()
        if kind == "lc" or kind == "bc":
            parts += [text[at:s], blank(m.group())]
            comments.append((s, e))
            at = pos = e
        elif kind == "q":
            quote = text[s]
            if s < failed[quote]:
                pos = e
                continue
            e = _BODY[quote].match(text, e).end()
            if e >= n or text[e] != quote:
                failed[quote] = e
                pos = s + 1
                continue
            parts += [text[at:s], '"', blank(text[s + 1:e]), '"']
            at = pos = e + 1
        elif kind == "s":
            parts += [text[at:s], '"', blank(text[s + 1:e - 1]), '"']
            at = pos = e
        elif kind == "slash":
            if not _regex_here(text, s, comments):
                pos = e
                continue
            if fast:
                r = _regex_end(text, s, memo)
            else:
                r = _REGEX.match(text, s)
                r = r.end() if r else -1
            if r < 0:
                pos = e
            else:
                parts += [text[at:s], '"', blank(text[s + 1:r - 1]), '"']
                at = pos = r
        elif kind == "t" or kind == "close" and holes and holes[-1] == 0:
            if kind == "close":
                holes.pop()
            t = _TEMPLATE.match(text, e)           # the text part, up to ` or ${ (or the end)
            te = t.end()
            if text.startswith("${", te - 2) and te - 2 >= e:
                parts += [text[at:e], blank(text[e:te - 2]), "${"]
                holes.append(0)
            else:
                parts += [text[at:e], blank(text[e:te])]
            at = pos = te
        elif kind == "open":
            holes[-1] += 1
            pos = e
        else:                                         # a brace closing a block inside a hole
            holes[-1] -= 1
            pos = e
    parts.append(text[at:])
    return Lexed(text, "".join(parts), comments, [])
