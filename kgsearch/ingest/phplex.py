"""The PHP lexer: a file with everything outside ``<?php .. ?>`` (inline HTML), every comment
and every string blanked, offsets and line breaks kept, so that the structural scanner
(:mod:`kgsearch.ingest.phpcode`) matches braces and finds definitions with plain regular
expressions, as :mod:`kgsearch.ingest.clex` does for the C family.

What it knows: the open tags ``<?php`` and ``<?=`` (the text before the first and after each
``?>`` is inline output), ``//`` and ``#`` line comments (which end at a line break or at
``?>``; ``#[`` opens a PHP 8 attribute, not a comment), ``/* */`` comments, single-quoted
strings (``\\'`` and ``\\\\`` escapes), double-quoted and backquoted strings with their
interpolation holes (``{$a["k"]}``, ``${x}``: code with strings of its own), heredocs
(``<<<EOT``, ``<<<"EOT"``) and nowdocs (``<<<'EOT'``), whose closing identifier may be
indented (PHP 7.3). Every step moves forward: a file of unterminated openings is read in one
pass (an unterminated string or comment runs to the end of the text).
"""
from __future__ import annotations

import re

from .clex import Lexed, blank, finish, hole_end, quoted

__all__ = ["lex"]

_OPEN = re.compile(r"<\?(?:php\b|=)", re.I)
# what PHP code can hold that is not code: the close tag, comments, strings, heredocs
_PHP = re.compile(r"\?>|//|#(?!\[)|/\*|'|\"|`|<<<")
_SINGLE = re.compile(r"'(?:[^'\\]|\\[\s\S])*(?:'|\\?\Z)")     # (unterminated: to the end)
_DOUBLE_TEXT = {'"': re.compile(r'[^"\\{$]*'), "`": re.compile(r"[^`\\{$]*")}
_LINE_END = re.compile(r"\n|\?>")
_HEREDOC = re.compile(r"<<<[ \t]*(?:\"(\w+)\"|'(\w+)'|(\w+))[ \t]*\n")
_HOLE = re.compile(r"[^{}'\"`]*")
_DEPTH = 8                                    # strings inside holes inside strings ... read this deep


def _string_end(text: str, at: int, depth: int = 0) -> int:
    """Offset just past the double-quoted (or backquoted) string whose quote is at ``at``, its
    holes (``{$..}``, ``${..}``) read as code (the end of the text when it never closes)."""
    q = text[at]
    chunk = _DOUBLE_TEXT[q]
    n = len(text)
    pos = at + 1
    while True:
        pos = chunk.match(text, pos).end()
        if pos >= n:
            return n
        c = text[pos]
        if c == q:
            return pos + 1
        if c == "\\":
            pos += 2
        elif c == "{" and text.startswith("{$", pos) or c == "$" and text.startswith("${", pos):
            pos = _hole_end(text, pos + 2, depth)
        else:
            pos += 1


def _hole_end(text: str, pos: int, depth: int) -> int:
    """:func:`~kgsearch.ingest.clex.hole_end` of a PHP string's ``{$..}`` hole: its literals are
    PHP's strings (single-quoted, double-quoted and backquoted ones with holes of their own)."""

    def literal_end(at: int) -> int:
        if text[at] == "'":
            return _SINGLE.match(text, at).end()
        if text[at] in "\"`" and depth < _DEPTH:
            return _string_end(text, at, depth + 1)
        return at + 1

    return hole_end(text, pos, _HOLE, literal_end)


def lex(text: str) -> Lexed:
    """Lex PHP ``text`` (line breaks already ``\\n``)."""
    n = len(text)
    parts: list[str] = []
    comments: list[tuple[int, int]] = []
    pos = 0
    php = False
    while pos < n:
        if not php:                                        # inline output up to the next open tag
            m = _OPEN.search(text, pos)
            e = m.end() if m else n
            parts.append(blank(text[pos:e]))
            pos, php = e, True
            continue
        m = _PHP.search(text, pos)
        if m is None:
            parts.append(text[pos:])
            break
        s, t = m.start(), m.group()
        parts.append(text[pos:s])
        if t == "?>":
            parts.append("  ")
            pos, php = s + 2, False
            continue
        if t == "//" or t == "#":
            e = _LINE_END.search(text, s)
            e = e.start() if e else n
            comments.append((s, e))
        elif t == "/*":
            e = text.find("*/", s + 2)
            e = n if e < 0 else e + 2
            comments.append((s, e))
        elif t == "'":
            e = _SINGLE.match(text, s).end()
        elif t in "\"`":
            e = _string_end(text, s)
        else:                                              # <<<: a heredoc or nowdoc
            h = _HEREDOC.match(text, s)
            if h is None:
                parts.append(t)
                pos = s + 3
                continue
            ident = h.group(1) or h.group(2) or h.group(3)
            close = re.compile(r"^[ \t]*" + re.escape(ident) + r"\b", re.M).search(text, h.end())
            e = close.end() if close else n
        lit = text[s:e]
        if t in ("//", "#", "/*"):
            parts.append(blank(lit))
        else:
            parts.append(quoted(lit) if len(lit) > 1 else " ")
        pos = e
    return finish(text, "".join(parts), comments, [])
