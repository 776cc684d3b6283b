"""The lexer of the C-like languages (C, C++, Java, Kotlin, C#, Go, Rust; JavaScript and TypeScript in
:mod:`kgsearch.ingest.jslex`): the source with every comment, string, character literal and
preprocessor line blanked out, so that a structural scanner can match braces and find
definitions with plain regular expressions.

:func:`lex` returns a :class:`Lexed`:

* ``code``: the text with the same length and the same line breaks, in which comments and
  preprocessor lines are spaces and every string or character literal is ``"`` + spaces +
  ``"`` (raw strings ``R"x(...)x"``, ``r#"..."#``, Go back-quoted strings, Java text blocks,
  C# verbatim ``@"..."``, interpolated ``$"..{x}.."`` and raw (three quotes or more) strings, Kotlin's
  templates ``"..${x}.."`` and raw (three quotes) strings, and Rust's and Kotlin's nested block comments
  included). Braces, parentheses and brackets left in ``code``
  are the program's own.
* ``comments``: (start, end) offsets of the comments, in order (for doc comments);
  ``directives``: (start, end) of the preprocessor lines (C, C++);
* ``pairs``: the matching bracket of every ``{ } ( ) [ ]`` (:func:`pair_up`), ``line(pos)``.

C and C++ ``#if``/``#elif``/``#else`` groups whose branches do not all leave the braces as they
found them (``#if A`` ``int f(int x) {`` ``#else`` ``int f(void) {`` ``#endif``) keep their first
branch only: the others are blanked, so one body is matched as the compiler would see one
(``Lexed.branches`` keeps their lexed code: a loader reads the other headers of that body there).

Each dialect is one compiled master pattern; the regular expression engine does the
scanning, Python only visits the literals and comments it found. C# and Kotlin strings are found by
their opening quote and read to their end in Python (:func:`cs_string_end`, :func:`kt_string_end`):
an interpolated string's holes hold expressions, with strings and braces of their own, which no
single pattern matches.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

__all__ = ["Lexed", "lex", "lex_reference", "pair_up", "blank", "quoted", "finish", "clean_comment", "cs_string_end",
           "kt_string_end", "hole_end", "DIALECTS"]

_LC = r"//[^\n]*"
_BC = r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/\*[\s\S]*"          # (an unterminated one runs to the end)
_STR = r'"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"'
_CHR = r"'(?:[^'\\\n]|\\[^\n][^'\n]{0,8})'"
_RAW_CPP = r'(?:u8|[uUL])?R"(?P<d>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=d)"'
_PP = r"#(?:[^\n\\/]|\\[\s\S]|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|//[^\n]*|/)*"
_GO_RAW = r"`[^`]*`"
_JAVA_BLOCK = r'"""[\s\S]*?"""'
_RS_STR = r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"'
_RS_RAW = r'b?r(?P<h>#*)"[\s\S]*?"(?P=h)'
_RS_CHR = r"'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|[^\n]))'"
_CS_PP = r"#[^\n]*"                              # C#: a directive is its line (no continuation)
_CS_QUOTE = r'[$@]*"'                            # C#: a string's opening, read on by cs_string_end


def _nested_comment(depth: int) -> str:
    inner = r"(?:[^*/]|\*(?!/)|/(?!\*))"
    pat = r"/\*" + inner + r"*\*/"
    for _ in range(depth):
        pat = r"/\*(?:" + inner + "|" + pat + r")*\*/"
    return pat + r"|/\*[\s\S]*"


def _master(*alts: tuple[str, str]) -> re.Pattern:
    return re.compile("|".join(f"(?P<{name}>{pat})" for name, pat in alts), re.M)


# The raw strings' openers alone (``R"x(``, ``r#"``): the closer they name (``)x"``, ``"#``) is
# found by :class:`_Closers`, which keeps its last search per closer. The whole literal as one
# pattern scanned from every opener to the end of the text when it never closed: a file of
# ``r#"`` (Rust rejects it, the lexer must not hang on it) cost n^2, 60 KB 11 s.
_RAW_CPP_OPEN = r'(?:u8|[uUL])?R"(?P<d>[^()\\\s"]{0,16})\('
_RS_RAW_OPEN = r'b?r(?P<h>#*)"'

DIALECTS_REFERENCE: dict[str, re.Pattern] = {
    "c": _master(("pp", _PP), ("lc", _LC), ("bc", _BC), ("s", _RAW_CPP), ("s2", _STR), ("s3", _CHR)),
    "java": _master(("lc", _LC), ("bc", _BC), ("s", _JAVA_BLOCK), ("s2", _STR), ("s3", _CHR)),
    "go": _master(("lc", _LC), ("bc", _BC), ("s", _GO_RAW), ("s2", _STR), ("s3", _CHR)),
    "rust": _master(("lc", _LC), ("bc", _nested_comment(3)), ("s", _RS_RAW), ("s2", _RS_STR), ("s3", _RS_CHR)),
    "cs": _master(("pp", _CS_PP), ("lc", _LC), ("bc", _BC), ("q", _CS_QUOTE), ("s3", _CHR)),
    # Kotlin: block comments nest; a string's opening quote (one or three) is read on by kt_string_end
    "kotlin": _master(("lc", _LC), ("bc", _nested_comment(3)), ("q", '"'), ("s3", _CHR)),
}
# ... and the strings' opening quote alone: the body is matched from there (STRING_BODY), and one
# that never closed (`"\"\"\"...`: every quote in it escaped) tells that each quote inside fails
# too, where the whole pattern tried every one to the end of the line (Rust: of the text):
# 60 KB of `"\` took 35-56 s in each language
DIALECTS: dict[str, re.Pattern] = {
    "c": _master(("pp", _PP), ("lc", _LC), ("bc", _BC), ("raw", _RAW_CPP_OPEN), ("q", '"'), ("s3", _CHR)),
    "java": _master(("lc", _LC), ("bc", _BC), ("s", _JAVA_BLOCK), ("q", '"'), ("s3", _CHR)),
    "go": _master(("lc", _LC), ("bc", _BC), ("s", _GO_RAW), ("q", '"'), ("s3", _CHR)),
    "rust": _master(("lc", _LC), ("bc", _nested_comment(3)), ("raw", _RS_RAW_OPEN), ("q", '"'), ("s3", _RS_CHR)),
    # C#: the opening quote already (its strings are read to their end by cs_string_end, one
    # forward pass; lex hands C# to that path)
    "cs": DIALECTS_REFERENCE["cs"],
    "kotlin": DIALECTS_REFERENCE["kotlin"],
}
_READ_ON = ("cs", "kotlin")                    # dialects whose strings are read to their end in Python
STRING_BODY = {d: re.compile(_STR[1:-1] if d != "rust" else _RS_STR[1:-1]) for d in DIALECTS if d not in _READ_ON}


class _Closers:
    """``text.find(closer, at)`` for the raw strings of one text, each closer's last search kept:
    an ``at`` between where it was asked and what it found (or, when it found none, past where
    it was asked) has the same answer, so a text of openers that never close is searched once
    per closer, not once per opener."""

    def __init__(self, text: str):
        self.text = text
        self.last: dict[str, tuple[int, int]] = {}      # closer -> (asked at, found at or -1)

    def find(self, closer: str, at: int) -> int:
        got = self.last.get(closer)
        if got is not None and got[0] <= at and (got[1] < 0 or at <= got[1]):
            return got[1]
        p = self.text.find(closer, at)
        self.last[closer] = (at, p)
        return p

_NOT_NL = re.compile(r"[^\n]+")


def blank(s: str) -> str:
    """``s`` with everything but its line breaks turned into spaces."""
    return " " * len(s) if "\n" not in s else _NOT_NL.sub(lambda m: " " * len(m.group()), s)


def quoted(s: str) -> str:
    """A string or character literal blanked: its quotes kept (as ``"``), its inside spaces (line
    breaks kept)."""
    return '"' + blank(s[1:-1]) + '"' if len(s) >= 2 else " " * len(s)


class Lexed:
    """A lexed file (see the module docstring)."""

    __slots__ = ("text", "code", "comments", "directives", "nl", "pairs", "opens", "up", "_cends", "branches")

    def __init__(self, text: str, code: str, comments: list, directives: list,
                 branches: list | None = None):
        self.text, self.code, self.comments, self.directives = text, code, comments, directives
        self.branches = branches or []         # (start, end, lexed code) of each #if branch blanked
        self.nl = [m.start() for m in re.finditer("\n", text)]
        self.pairs, self.up = pair_up(code)
        self.opens = sorted(self.up)
        self._cends = [e for _, e in comments]

    def enclosing(self, pos: int) -> int:
        """Offset of the innermost bracket open around ``pos`` (-1: none)."""
        i = bisect_left(self.opens, pos) - 1
        if i < 0:
            return -1
        o = self.opens[i]
        pairs, up = self.pairs, self.up
        while o >= 0 and pairs.get(o, len(self.code)) < pos:
            o = up[o]
        return o

    def line(self, pos: int) -> int:
        """1-based line of the character at ``pos``."""
        return bisect_left(self.nl, pos) + 1

    def line_start(self, pos: int) -> int:
        """Offset of the first character of the line holding ``pos``."""
        i = bisect_left(self.nl, pos)
        return self.nl[i - 1] + 1 if i else 0

    @property
    def lines(self) -> int:
        n = len(self.nl) + 1
        return n - 1 if self.text.endswith("\n") else n

    def doc_before(self, pos: int, limit: int = 2000) -> str:
        """The comment block right above ``pos`` (only blanks between; each comment on its own
        lines, at most one line break between two of them), markers stripped."""
        i = bisect_right(self._cends, pos) - 1
        text, got, at, size = self.text, [], pos, 0
        while i >= 0:
            s, e = self.comments[i]
            gap = text[e:at]
            if gap.strip() or gap.count("\n") > (1 if got else 2) or text[self.line_start(s):s].strip():
                break
            got.append(clean_comment(text[s:e]))
            size += len(got[-1])       # (summed again per comment, a run of 20,000 empty `//` cost n^2: 22 s)
            at = s
            i -= 1
            if size > limit:
                break
        return "\n".join(reversed(got)).strip()[:limit]


_MARKERS = re.compile(r"^[ \t]*(?:/\*+!?|\*+/|\*(?!/)|//[/!]?)[ \t]?|[ \t]*\*+/[ \t]*$", re.M)


def clean_comment(c: str) -> str:
    """A comment's text without ``//``, ``///``, ``/**``, ``*/`` and leading ``*`` markers.

    >>> clean_comment("/**\\n * Adds two.\\n * @param a\\n */")
    'Adds two.\\n@param a'
    """
    return _MARKERS.sub("", c).strip()


_BRACKETS = re.compile(r"[{}()\[\]]")
_OPEN = {"}": "{", ")": "(", "]": "["}


def pair_up(code: str) -> tuple[dict[int, int], dict[int, int]]:
    """Offset of every bracket -> offset of its partner (both directions), and of every opening
    bracket -> the opening bracket around it (-1 at the top). A closing bracket that closes
    nothing pairs with nothing; one that closes a bracket of another kind closes the nearest
    open bracket of its own kind, and the open ones above it stay open (an unpaired opening
    bracket runs to the end of the text)."""
    pairs: dict[int, int] = {}
    up: dict[int, int] = {}
    stack: list[int] = []                      # open brackets, innermost last
    kinds: list[str] = []                      # their characters
    top = -1
    for m in _BRACKETS.finditer(code):
        at = m.start()
        c = code[at]
        if c == "{" or c == "(" or c == "[":
            up[at] = top
            stack.append(at)
            kinds.append(c)
            top = at
            continue
        o = _OPEN[c]
        if kinds and kinds[-1] == o:
            kinds.pop()
            p = stack.pop()
        else:                                   # misnested: close the nearest of its kind
            i = len(kinds) - 1
            while i >= 0 and kinds[i] != o:
                i -= 1
            if i < 0:
                continue
            p = stack.pop(i)
            del kinds[i]
        top = stack[-1] if stack else -1
        pairs[p] = at
        pairs[at] = p
    end = len(code)
    for o in stack:
        pairs[o] = end
    return pairs, up


_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*(\w+)")


def _if_groups_reference(text: str, code: str, directives: list) -> list[tuple[int, int]]:
    """:func:`_if_groups` looking at every span blanked so far per branch (what it is tested against)."""
    out: list[tuple[int, int]] = []
    stack: list[list[int]] = []

    def net(a: int, b: int) -> int:
        n = code.count("{", a, b) - code.count("}", a, b)
        for s, e in out:
            if a <= s and e <= b:
                n -= code.count("{", s, e) - code.count("}", s, e)
        return n

    for s, e in directives:
        m = _DIRECTIVE.match(text, s)
        word = m.group(1) if m else ""
        if word in ("if", "ifdef", "ifndef"):
            stack.append([e, s])
        elif word in ("elif", "else", "elifdef", "elifndef") and stack:
            stack[-1] += [e, s]
        elif word == "endif" and stack:
            g = stack.pop() + [None, s]
            branches = [(g[i], g[i + 3]) for i in range(0, len(g) - 2, 2)]
            if len(branches) > 1:
                nets = {net(a, b) for a, b in branches}
                if nets != {0}:
                    out.extend(branches[1:])
    return out


def _if_groups(text: str, code: str, directives: list) -> list[tuple[int, int]]:
    """Spans to blank: the later branches of each #if group whose branches change the brace
    depth unevenly (see the module docstring)."""
    out: list[tuple[int, int]] = []
    stack: list[list[int]] = []                # per open group: start offsets of its branches' code
    starts: list[int] = []                     # the spans of out by start, with their brace balance
    spans: list[tuple[int, int]] = []          # (every span looked at per branch: 2,000 groups, n^2)

    def net(a: int, b: int) -> int:
        n = code.count("{", a, b) - code.count("}", a, b)
        i = bisect_left(starts, a)
        while i < len(starts) and starts[i] <= b:
            e, k = spans[i]
            if e <= b:
                n -= k
            i += 1
        return n

    for s, e in directives:
        m = _DIRECTIVE.match(text, s)
        word = m.group(1) if m else ""
        if word in ("if", "ifdef", "ifndef"):
            stack.append([e, s])               # [branch code start, its directive start, ...]
        elif word in ("elif", "else", "elifdef", "elifndef") and stack:
            stack[-1] += [e, s]
        elif word == "endif" and stack:
            g = stack.pop() + [None, s]
            branches = [(g[i], g[i + 3]) for i in range(0, len(g) - 2, 2)]
            if len(branches) > 1:
                nets = {net(a, b) for a, b in branches}
                if nets != {0}:
                    out.extend(branches[1:])
                    for a, b in branches[1:]:
                        i = bisect_right(starts, a)
                        starts.insert(i, a)
                        spans.insert(i, (b, code.count("{", a, b) - code.count("}", a, b)))
    return out


_CS_OPEN = re.compile(_CS_QUOTE)
_CS_CHR = re.compile(_CHR)
_CS_HOLE = re.compile(r"[^{}\"'$@]*")
_CS_TEXT = {False: re.compile(r'[^"{}\\\n]*'), True: re.compile(r'[^"{}]*')}      # verbatim: no escapes
_CS_RAW_TEXT = re.compile(r'[^"{]*')
_CS_DEPTH = 8                                  # strings inside holes inside strings ... read this deep


def _run(text: str, pos: int, c: str) -> int:
    """Length of the run of ``c`` at ``pos``."""
    e = pos
    while e < len(text) and text[e] == c:
        e += 1
    return e - pos


def cs_string_end(text: str, at: int, depth: int = 0) -> int:
    """Offset just past the C# string whose opening (a quote after any of ``@``, ``$``, ``$@``,
    ``@$``; three quotes or more for a raw string, after dollar signs or not) starts at ``at``.
    Regular strings end at an unescaped quote (unterminated: at the end of their line),
    verbatim ones at a quote not doubled, raw ones at as many quotes as opened them; an
    interpolated string's holes (``{x}``; ``{{`` is a brace; with ``$$`` a hole opens with
    ``{{``) are expressions, read with their own braces, character literals and strings (nested
    ones too, :data:`_CS_DEPTH` deep). Every step moves forward and the answer is where the
    reading stopped, so a file of unterminated openings is read in one pass (an unterminated
    raw or verbatim string, or hole, runs to the end of the text)."""
    n = len(text)
    j = text.index('"', at)
    prefix = text[at:j]
    dollars, verbatim = prefix.count("$"), "@" in prefix
    q = _run(text, j, '"')
    if q >= 3 and not verbatim:                        # raw string literal
        if not dollars:
            e = text.find('"' * q, j + q)
            return n if e < 0 else e + q
        pos = j + q
        while True:
            pos = _CS_RAW_TEXT.match(text, pos).end()
            if pos >= n:
                return n
            if text[pos] == '"':
                r = _run(text, pos, '"')
                if r >= q:
                    return pos + q
                pos += r
                continue
            r = _run(text, pos, "{")
            if r < dollars:
                pos += r
                continue
            pos = _hole_end(text, pos + r, depth)
            pos += min(_run(text, pos, "}"), dollars - 1)
    chunk = _CS_TEXT[verbatim]
    pos = j + 1
    while True:
        pos = chunk.match(text, pos).end()
        if pos >= n:
            return n
        c = text[pos]
        if c == '"':
            if verbatim and text.startswith('""', pos):
                pos += 2
                continue
            return pos + 1
        if c == "\\":
            pos += 2
        elif c == "\n":
            return pos                                 # an unterminated regular string: its line
        elif c == "{" and dollars:
            if text.startswith("{{", pos):
                pos += 2
            else:
                pos = _hole_end(text, pos + 1, depth)
        else:
            pos += 1                                   # a brace in a plain string, or "}}"


def hole_end(text: str, pos: int, hole: re.Pattern, literal_end) -> int:
    """Offset just past the ``}`` that closes the interpolation hole whose expression starts at
    ``pos`` (the end of the text when none does): braces counted, and each literal of the
    expression read over by ``literal_end(pos)`` (its end; it starts at ``pos``, where ``hole``,
    the run of characters that are neither a brace nor a literal's first character, stopped).
    C#'s, Kotlin's and PHP's holes differ only in their literals."""
    n = len(text)
    braces = 0
    while True:
        pos = hole.match(text, pos).end()
        if pos >= n:
            return n
        c = text[pos]
        if c == "{":
            braces += 1
            pos += 1
        elif c == "}":
            if not braces:
                return pos + 1
            braces -= 1
            pos += 1
        else:
            pos = max(pos + 1, literal_end(pos))


def _hole_end(text: str, pos: int, depth: int, kotlin: bool = False) -> int:
    """:func:`hole_end` of a C# interpolated string's hole, or (``kotlin``) a Kotlin template's."""
    opener, string_end = (_KT_OPEN, kt_string_end) if kotlin else (_CS_OPEN, cs_string_end)

    def literal_end(at: int) -> int:
        if text[at] == "'":
            m = _CS_CHR.match(text, at)
            return m.end() if m else at + 1
        if depth >= _CS_DEPTH or opener.match(text, at) is None:
            return at + 1
        return string_end(text, at, depth + 1)

    return hole_end(text, pos, _KT_HOLE if kotlin else _CS_HOLE, literal_end)


_KT_HOLE = re.compile(r"[^{}\"']*")
_KT_OPEN = re.compile('"')
_KT_TEXT = re.compile(r'[^"\\\n$]*')
_KT_RAW_TEXT = re.compile(r'[^"$]*')


def kt_string_end(text: str, at: int, depth: int = 0) -> int:
    """Offset just past the Kotlin string whose opening quote is at ``at``: a raw string
    (three quotes) ends at the last quote of the first run of three or more (no escapes); a regular
    one at an unescaped quote (unterminated: at the end of its line). A template's hole
    (``${x}``; ``$name`` holds no code) is an expression, read with its own braces, character
    literals and strings (nested ones too, :data:`_CS_DEPTH` deep). Every step moves forward, so
    a file of unterminated openings is read in one pass (an unterminated raw string, or hole,
    runs to the end of the text)."""
    n = len(text)
    raw = text.startswith('"""', at)
    chunk = _KT_RAW_TEXT if raw else _KT_TEXT
    pos = at + (3 if raw else 1)
    while True:
        pos = chunk.match(text, pos).end()
        if pos >= n:
            return n
        c = text[pos]
        if c == '"':
            if not raw:
                return pos + 1
            r = _run(text, pos, '"')
            if r >= 3:
                return pos + r
            pos += r
        elif c == "\\":
            pos += 2
        elif c == "\n":
            return pos                                 # an unterminated regular string: its line
        elif text.startswith("${", pos):
            pos = _hole_end(text, pos + 2, depth, kotlin=True)
        else:
            pos += 1                                   # a "$" that opens no hole


_STRING_END = {"cs": cs_string_end, "kotlin": kt_string_end}


def _sub_cs(text: str, fill, dialect: str = "cs") -> str:
    """``DIALECTS_REFERENCE[dialect].sub(fill, text)``, each string read to its end by
    :func:`cs_string_end` (C#) or :func:`kt_string_end` (Kotlin)."""
    pat = DIALECTS_REFERENCE[dialect]
    string_end = _STRING_END[dialect]
    parts, pos = [], 0
    while True:
        m = pat.search(text, pos)
        if m is None:
            break
        parts.append(text[pos:m.start()])
        if m.lastgroup == "q":
            e = string_end(text, m.start())
            s = text[m.start():e]
            parts.append(quoted(s) if s.endswith('"') else '"' + blank(s[1:]))   # unterminated: no closing quote
            pos = e
        else:
            parts.append(fill(m))
            pos = m.end()
    parts.append(text[pos:])
    return "".join(parts)


def lex(text: str, dialect: str) -> Lexed:
    """Lex ``text`` (line breaks already ``\\n``) in one of :data:`DIALECTS`."""
    if dialect in _READ_ON:                    # strings read in one forward pass already (_sub_cs)
        return lex_reference(text, dialect)
    comments: list[tuple[int, int]] = []
    directives: list[tuple[int, int]] = []
    pat = DIALECTS[dialect]
    closers = _Closers(text)
    raw_cpp = "d" in pat.groupindex
    body = STRING_BODY[dialect]
    failed = -1                                # a string from a quote before this never closed
    parts: list[str] = []
    at = pos = 0
    n = len(text)
    while pos <= n:
        m = pat.search(text, pos)
        if m is None:
            break
        kind, s, e = m.lastgroup, m.start(), m.end()
        if kind == "raw":                      # R"x( or r#": the literal runs to its closer
            close = ")" + m.group("d") + '"' if raw_cpp else '"' + m.group("h")
            c = closers.find(close, e)
            if c < 0:                          # never closed: no literal here (as the whole
                pos = s + 1                    # pattern failed at s), the search goes on after s
                continue
            e = c + len(close)
            parts += [text[at:s], quoted(text[s:e])]
        elif kind == "q":
            if s < failed:
                pos = s + 1
                continue
            e = body.match(text, e).end()
            if e >= n or text[e] != '"':       # no string here (as the whole pattern failed)
                failed = e
                pos = s + 1
                continue
            e += 1
            parts += [text[at:s], quoted(text[s:e])]
        elif kind == "lc" or kind == "bc":
            comments.append((s, e))
            parts += [text[at:s], blank(m.group())]
        elif kind == "pp":
            ls = text.rfind("\n", 0, s) + 1
            if text[ls:s].strip():             # a "#" that does not start its line: not a directive
                parts.append(text[at:e])
            else:
                directives.append((ls, e))
                parts += [text[at:s], blank(m.group())]
        else:
            parts += [text[at:s], quoted(m.group())]
        at = e
        pos = e if e > s else e + 1            # (an empty match, as re.sub steps past it)
    parts.append(text[at:])
    return finish(text, "".join(parts), comments, directives)


def lex_reference(text: str, dialect: str) -> Lexed:
    """:func:`lex` with each raw string one whole pattern (:data:`DIALECTS_REFERENCE`), through
    ``re.sub``: the plain scan its answers are tested against."""
    comments: list[tuple[int, int]] = []
    directives: list[tuple[int, int]] = []

    def fill(m: re.Match) -> str:
        kind = m.lastgroup
        s = m.group()
        if kind == "lc" or kind == "bc":
            comments.append((m.start(), m.end()))
            return blank(s)
        if kind == "pp":
            ls = text.rfind("\n", 0, m.start()) + 1
            if text[ls:m.start()].strip():
                return s                       # a "#" that does not start its line: not a directive
            directives.append((ls, m.end()))
            return blank(s)
        return quoted(s)

    code = _sub_cs(text, fill, dialect) if dialect in _READ_ON else DIALECTS_REFERENCE[dialect].sub(fill, text)
    return finish(text, code, comments, directives)


def finish(text: str, code: str, comments: list, directives: list) -> Lexed:
    """The :class:`Lexed` of ``text`` whose blanked ``code`` a lexer made (C and C++ ``#if``
    groups whose branches open braces unevenly keep their first branch)."""
    branches = []
    if directives:
        spans = _if_groups(text, code, directives)
        if spans:
            parts, at = [], 0
            for s, e in sorted(spans):
                if s < at:
                    continue
                branches.append((s, e, code[s:e]))
                parts += [code[at:s], blank(code[s:e])]
                at = e
            code = "".join(parts) + code[at:]
    return Lexed(text, code, comments, directives, branches)
