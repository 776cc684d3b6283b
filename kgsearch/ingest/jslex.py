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

__all__ = ["lex"]

_COMMENT_STR = (r"(?P<lc>//[^\n]*)|(?P<bc>/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/\*[\s\S]*)"
                r"""|(?P<s>"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"|'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*')"""
                r"|(?P<t>`)|(?P<slash>/)")
_TOP = re.compile(_COMMENT_STR)
_HOLE = re.compile(_COMMENT_STR + r"|(?P<open>\{)|(?P<close>\})")
_TEMPLATE = re.compile(r"[^`\\$]*(?:(?:\\[\s\S]|\$(?!\{))[^`\\$]*)*(?:`|\$\{|\Z)")
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


def lex(text: str) -> Lexed:
    """Lex JavaScript or TypeScript (JSX and TSX included; line breaks already ``\\n``)."""
    parts: list[str] = []
    comments: list[tuple[int, int]] = []
    holes: list[int] = []          # per open template hole: its brace depth
    at = pos = 0
    n = len(text)
    while pos < n:
        m = (_HOLE if holes else _TOP).search(text, pos)
        if m is None:
            break
        kind, s, e = m.lastgroup, m.start(), m.end()
        if kind == "lc" or kind == "bc":
            parts += [text[at:s], blank(m.group())]
            comments.append((s, e))
            at = pos = e
        elif kind == "s":
            parts += [text[at:s], '"', blank(text[s + 1:e - 1]), '"']
            at = pos = e
        elif kind == "slash":
            r = _REGEX.match(text, s) if _regex_here(text, s, comments) else None
            if r is None:
                pos = e
            else:
                parts += [text[at:s], '"', blank(text[s + 1:r.end() - 1]), '"']
                at = pos = r.end()
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
