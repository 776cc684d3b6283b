"""The Ruby lexer: a file with every comment, string, symbol string, regular expression,
character literal and heredoc blanked, offsets and line breaks kept, so that the structural
scanner (:mod:`kgsearch.ingest.rbcode`) finds definitions and their ``end`` with plain regular
expressions, as :mod:`kgsearch.ingest.clex` does for the C family (the same :class:`Lexed`).

What it knows: ``#`` comments and ``=begin`` .. ``=end`` blocks, the data after ``__END__``;
single-quoted strings, double-quoted and backquoted strings with ``#{..}`` holes (code with
strings and braces of its own), ``%q() %Q[] %w{} %W %i<> %I %r %s %x %()`` literals with any
delimiter (bracket delimiters nest), symbol strings (``:"x"``), heredocs (``<<~EOS``,
``<<-EOS``, ``<<EOS``, quoted identifiers, several on one line: their bodies follow the line in
order), regular-expression literals ``/../`` told from division by the token before them (a
value before ``/`` divides: a name, a number, ``)``, ``]``, ``}``, a string's end; else a
regular expression starts, and after a name and a space one starts only when no space follows
and it closes on its line: ``split /,/``), ``%`` told the same way, character literals ``?a``
(``?"``, ``?#``, ``?(``), and the special globals ``$'`` ``$"`` ``$/``. A literal that never
closes runs to the end of the text; a regular expression that does not close on its line is a
division. Every step moves forward and each heredoc identifier's search is kept (a file of
unterminated openings is read in one pass).
"""
from __future__ import annotations

import re

from .clex import Lexed, blank, finish, hole_end, quoted

__all__ = ["lex"]

# what code can hold that is not code; `$` + a punctuation character is a global ($', $", $/)
_TOKENS = r"#|'|\"|`|%|/|\?|<<[~-]?(?=[\"'`A-Za-z_])|\$[^\w\s{]|^=begin\b|^__END__$"
_TOKEN = re.compile(_TOKENS, re.M)
_TOKEN_NL = re.compile(_TOKENS + r"|\n", re.M)            # (with heredocs pending on the line)
_SINGLE = re.compile(r"'(?:[^'\\]|\\[\s\S])*(?:'|\\?\Z)")
_TEXT = {'"': re.compile(r'[^"\\#]*'), "`": re.compile(r"[^`\\#]*")}
_HOLE = re.compile(r"[^{}'\"`/]*")
_HEREDOC = re.compile(r"<<([~-]?)(?:([\"'`])([^\"'`\n]+)\2|([A-Za-z_]\w*))")
_PERCENT = re.compile(r"%([qQwWiIrsx]?)([^\w\s])")
_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}
_BLOCK_END = re.compile(r"^=end\b[^\n]*", re.M)
_LINE = re.compile(r"[^\n]*")
_DEPTH = 8
# a word before `/`, `%`, `?` or `<<` that is no value (a regular expression or literal follows it)
_NOT_VALUE = frozenset("if unless while until and or not return when in case then else elsif do begin yield "
                       "puts print p raise".split())
_CHAR = re.compile(r"\?(?:\\u\{?[0-9a-fA-F]{1,6}\}?|\\(?:[MC]-|c)?\\?[\s\S]|[^\s\\])(?!\w)")
_WORD_BEFORE = re.compile(r"(\w+[?!]?)$")


def _string_end(text: str, at: int, depth: int = 0) -> int:
    """Offset just past the double-quoted or backquoted string whose quote is at ``at``, its
    ``#{..}`` holes read as code (the end of the text when it never closes)."""
    q = text[at]
    chunk = _TEXT[q]
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
        elif text.startswith("#{", pos):
            pos = _hole_end(text, pos + 2, depth)
        else:
            pos += 1


def _hole_end(text: str, pos: int, depth: int) -> int:
    """:func:`~kgsearch.ingest.clex.hole_end` of a ``#{..}`` hole: its literals are Ruby's
    strings (single-quoted, double-quoted and backquoted with holes of their own)."""

    start = pos

    def literal_end(at: int) -> int:
        if text[at] == "'":
            return _SINGLE.match(text, at).end()
        if text[at] == "/":                    # a regular expression where an operand starts: [/x/]
            j = at - 1
            while j >= start and text[j] in " \t":
                j -= 1
            if j < start or text[j] in "([,=~|&!{":
                e = _regex_end(text, at)
                return e if e > 0 else at + 1
            return at + 1
        if depth < _DEPTH:
            return _string_end(text, at, depth + 1)
        return at + 1

    return hole_end(text, pos, _HOLE, literal_end)


def _delimited_end(text: str, at: int, opener: str, holes: bool) -> int:
    """Offset past a ``%`` literal's (or a regular expression's) closing delimiter; ``at`` is
    just past the opening one. Bracket delimiters nest; ``holes``: ``#{..}`` is code."""
    closer = _CLOSE.get(opener, opener)
    nests = closer != opener
    stop = re.compile("[\\\\#" + re.escape(opener + closer) + "]" if holes
                      else "[\\\\" + re.escape(opener + closer) + "]")
    n = len(text)
    depth = 0
    pos = at
    while True:
        m = stop.search(text, pos)
        if m is None:
            return n
        c, pos = m.group(), m.start()
        if c == "\\":
            pos += 2
        elif c == "#":
            pos = _hole_end(text, pos + 2, 0) if text.startswith("#{", pos) else pos + 1
        elif c == closer and depth == 0:
            return pos + 1
        elif c == closer:
            depth -= 1
            pos += 1
        else:                                   # the opener again: nests
            depth += nests
            pos += 1


_REGEX_STOP = re.compile(r"[\\/\[\n#]")
_CLASS_STOP = re.compile(r"[\\\]\n]")


def _regex_end(text: str, at: int) -> int:
    """Offset past the ``/`` closing the regular expression whose ``/`` is at ``at`` and its
    flags; -1 when it does not close on its line (outside its ``#{..}`` holes)."""
    pos = at + 1
    n = len(text)
    while True:
        m = _REGEX_STOP.search(text, pos)
        if m is None:
            return -1
        c, pos = m.group(), m.start()
        if c == "\n":
            return -1
        if c == "\\":
            pos += 2
        elif c == "#":
            pos = _hole_end(text, pos + 2, 0) if text.startswith("#{", pos) else pos + 1
            if pos >= n:
                return -1
        elif c == "[":
            depth = 1
            pos += 1
            while depth:
                k = _CLASS_STOP.search(text, pos)
                if k is None or k.group() == "\n":
                    return -1
                pos = k.end() + (k.group() == "\\")
                depth -= k.group() == "]"
        else:
            pos += 1
            while pos < n and text[pos] in "imxounse":
                pos += 1
            return pos


class _Closers:
    """The closing line of each heredoc identifier, its last search kept: a heredoc that
    asks at or after where the last search started and before what it found (or anywhere after
    it, when it found nothing) has the same answer."""

    def __init__(self, text: str):
        self.text = text
        self.last: dict[tuple, tuple[int, int, int]] = {}

    def find(self, ident: str, indented: bool, at: int) -> tuple[int, int]:
        """(start, end) of the closing line at or after ``at``, (-1, -1) when none."""
        k = (ident, indented)
        got = self.last.get(k)
        if got is not None and got[0] <= at and (got[1] < 0 or at <= got[1]):
            return got[1], got[2]
        pat = re.compile((r"^[ \t]*" if indented else "^") + re.escape(ident) + r"[ \t]*$", re.M)
        m = pat.search(self.text, at)
        s, e = (m.start(), m.end()) if m else (-1, -1)
        self.last[k] = (at, s, e)
        return s, e


def _is_value(code: str, s: int, prev: int) -> tuple[bool, bool]:
    """Whether the token before offset ``s`` (the last one ends at or after ``prev``) is a value,
    and whether blanks separate it from ``s``."""
    j = s - 1
    while j >= prev and code[j] in " \t":
        j -= 1
    spaced = j < s - 1
    if j < prev or j < 0:
        return False, spaced
    c = code[j]
    if c.isalnum() or c == "_" or c in "?!":
        w = _WORD_BEFORE.search(code, max(0, j - 40), j + 1)
        if w is not None and w.group(1) in _NOT_VALUE:
            at = w.start(1)
            if at == 0 or code[at - 1] not in ".:@$":
                return False, spaced
        return not (c in "?!" and w is None), spaced
    return c in ")]}\"'`", spaced


def lex(text: str) -> Lexed:
    """Lex Ruby ``text`` (line breaks already ``\\n``)."""
    n = len(text)
    out: list[str] = []
    comments: list[tuple[int, int]] = []
    closers = _Closers(text)
    pending: list[tuple[str, bool]] = []       # heredocs opened on this line: (identifier, indented)
    no_regex_until = -1                        # a regular expression failed to close on this line
    pos = 0
    last, last_value = 0, False                # where the last literal or comment ended; a value?

    def back(s: int) -> tuple[bool, bool]:
        """Is the token before ``s`` a value, and do blanks separate it from ``s``?"""
        lo = max(last, s - 64)
        seg = text[lo:s]
        if lo == last and not seg.strip(" \t"):
            return last_value, bool(seg)
        return _is_value(seg, len(seg), 0)

    while pos < n:
        m = (_TOKEN_NL if pending else _TOKEN).search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        s, t = m.start(), m.group()
        out.append(text[pos:s])
        if t == "\n":                             # (only with heredocs pending): their bodies follow
            out.append("\n")
            pos = s + 1
            for ident, indented in pending:
                cs, ce = closers.find(ident, indented, pos)
                e = ce if cs >= 0 else n
                out.append(blank(text[pos:e]))
                pos = e
            pending = []
            last, last_value = pos, False
            continue
        e = -1
        comment = False
        value = False
        if t == "#":
            e = text.find("\n", s)
            e = n if e < 0 else e
            comment = True
        elif t == "=begin":
            b = _BLOCK_END.search(text, s)
            e = b.end() if b else n
            comment = True
        elif t == "__END__":
            e = n
            comment = True
        elif t == "'":
            e = _SINGLE.match(text, s).end()
            value = True
        elif t in "\"`":
            e = _string_end(text, s)
            value = True
        elif t[0] == "$":                          # $' $" $/ ...: a global, code
            out.append(t)
            pos = s + len(t)
            continue
        elif t[0] == "<":
            h = _HEREDOC.match(text, s)
            before, spaced = back(s)
            tight = not text[s + len(t):s + len(t) + 1].isspace()
            if h is None:
                ok = False
            elif h.group(1):                       # <<~ <<-
                ok = not before or spaced
            else:                                  # <<EOS <<"x y": after a value, `x <<EOS` only
                ok = not before or spaced and tight and (h.group(2) is not None or h.group(4).isupper())
            if not ok:
                out.append(t)
                pos = s + len(t)
                continue
            pending.append((h.group(3) or h.group(4), bool(h.group(1))))
            e = h.end()
            value = True
        elif t == "%":
            p = _PERCENT.match(text, s)
            before, spaced = back(s)
            nxt = text[s + 1:s + 2]
            if p is None or before and (not spaced or nxt.isspace() or nxt == "=") or p.group(0) == "%=":
                out.append("%")
                pos = s + 1
                continue
            e = _delimited_end(text, p.end(), p.group(2), p.group(1) in ("", "Q", "W", "I", "r", "x"))
            value = True
        elif t == "/":
            before, spaced = back(s)
            nxt = text[s + 1:s + 2]
            if s < no_regex_until or before and (not spaced or nxt.isspace() or nxt == "="):
                out.append("/")
                pos = s + 1
                continue
            e = _regex_end(text, s)
            if e < 0:
                nl = text.find("\n", s)
                no_regex_until = n if nl < 0 else nl
                out.append("/")
                pos = s + 1
                continue
            value = True
        else:                                      # ?: a character literal ?a ?\n, or code
            before, _ = back(s)
            mm = _CHAR.match(text, s)
            if before or mm is None:
                out.append("?")
                pos = s + 1
                continue
            e = mm.end()
            value = True
        lit = text[s:e]
        if comment:
            comments.append((s, e))
            out.append(blank(lit))
        else:
            out.append(quoted(lit) if len(lit) > 1 else " ")
        pos = e
        last, last_value = e, value
    return finish(text, "".join(out), comments, [])
