"""What the structural scanners share: reading a source file, keyword boundaries, call sites,
generic argument lists, statement ends, the nearest project file (``go.mod``, ``Cargo.toml``).

Every full-text pattern starts with a literal (a keyword, ``(``): the regular-expression
engine then skips ahead at C speed, where a pattern that starts with a look-behind or a class
of letters is tried at every position (about 30 MB/s against 2 GB/s measured); the few
checks a look-behind would make are done in Python on each match (:func:`free`).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from pathlib import Path

from .common import decode

__all__ = ["free", "outside_bodies", "split_chain", "read_source", "find_up", "call_sites", "skip_angles", "skip_angles_paired", "Angles",
           "PairedAngles", "KeptSearch", "find_end", "find_end_reference",
           "find_end_before"]

_CHAIN_SEP = re.compile(r"\s*(?:\.|::|->|\?\.)\s*")


def free(code: str, at: int, extra: str = "$.") -> bool:
    """The word at ``at`` is not the tail of a longer name (nor, by default, a member ``x.word``).
    The scanners' patterns start with their keyword (a literal prefix lets the regular
    expression engine skip ahead at C speed; a look-behind first would try every position),
    and check what precedes it here."""
    if at == 0:
        return True
    c = code[at - 1]
    return not (c.isalnum() or c == "_" or c in extra)


def outside_bodies(defs: list, funcs: list) -> list:
    """The ``defs`` that no function of ``funcs`` holds in its body (from its ``{`` to its end):
    type aliases declared at file, namespace, module or class level, not a function's local ones
    (``using It = T*;`` in a body names nothing another file reaches)."""
    spans = sorted((f.body, f.end) for f in funcs if f.body is not None)
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    starts = [a for a, _ in merged]
    out = []
    for d in defs:
        i = bisect_right(starts, d.start) - 1
        if i < 0 or merged[i][1] <= d.start:
            out.append(d)
    return out


def split_chain(s: str) -> list[str]:
    """``a . b::c->d`` -> ``['a', 'b', 'c', 'd']``."""
    return _CHAIN_SEP.split(s.strip())


def read_source(path) -> tuple[str, str | None]:
    """A source file's text (UTF-8, else decoded with replacement characters and one warning),
    line breaks made ``\\n``."""
    text, warning = decode(Path(path).read_bytes(), str(path))
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, warning


def find_up(path, root: str, names: tuple[str, ...]):
    """The nearest file called one of ``names`` in the folder of ``path`` or above it, not
    above ``root`` (``None``: none)."""
    d = Path(path).parent
    top = Path(root) if root else None
    for _ in range(64):
        for n in names:
            f = d / n
            if f.is_file():
                return f
        if top is None or d == top or d.parent == d or top not in d.parents:
            return None
        d = d.parent
    return None


_PAREN = re.compile(r"\(")
# a call's name chain, matched backwards from its "(" in the reversed text (so that the regular
# expression engine starts only at the 2-3% of characters that are "(", not at every name)
_REV_CALL = re.compile(r"[ \t]*(?:\.\?)?(?:>(?:[^<>(){};=]|>[^<>(){};=]*<)*<(?:::)?[ \t]*)?"
                       r"([\w$]*[A-Za-z_$](?:[ \t]*(?:\.|::|>-|\.\?)[ \t]*[\w$]*[A-Za-z_$])*)")


def call_sites(code: str, skip: set[int]) -> list[tuple[int, str]]:
    """(offset, name chain as written) of every call in ``code`` (``f(``, ``a.b(``, ``A::b(``,
    ``p->f(``, ``f<T>(``, ``Vec::<T>::new(``), but those at the offsets in ``skip``
    (definitions' own names). A chain that follows ``.``, ``->``, ``::`` or a name character
    (``x().f(``) is not one: its receiver is an expression."""
    rev = code[::-1]
    n = len(code)
    out = []
    match = _REV_CALL.match
    for p in _PAREN.finditer(code):
        m = match(rev, n - p.start())
        if m is None:
            continue
        e = m.end(1)
        if e < n and (rev[e] in "$.>:#_" or rev[e].isalnum()):
            continue
        at = n - e
        if at in skip:
            continue
        raw = m.group(1)[::-1]
        if raw[0].isdigit():
            continue
        out.append((at, raw))
    return out


_ANGLES = re.compile(r"->|=>|>>=|<<=|[<>;{}]")
_ANGLES_PAIRED = re.compile(r"->|=>|>>=|<<=|[<>;{}()\[\]]")


def skip_angles(code: str, at: int, pairs: dict | None = None) -> int:
    """Offset after the ``<...>`` that opens at ``at`` (generic arguments: nested ``<>`` counted,
    ``->`` and ``=>`` not, bracket groups inside skipped when ``pairs`` is given); at a ``;`` or a
    ``{``/``}`` before it closes (without ``pairs``), that offset."""
    depth = 0
    pat = _ANGLES_PAIRED if pairs is not None else _ANGLES
    p = at
    n = len(code)
    while True:
        m = pat.search(code, p)
        if m is None:
            return n
        t = m.group()
        p = m.end()
        if t == "<":
            depth += 1
        elif t == ">":
            depth -= 1
            if depth == 0:
                return m.end()
        elif t in "{([" and pairs is not None:
            p = pairs.get(m.start(), n) + 1
        elif t in (";", "{", "}", ")", "]"):
            return m.start()


class Angles:
    """:func:`skip_angles` without ``pairs`` for any number of ``at`` in one text: one pass over
    its ``<``, ``>``, ``;``, ``{``, ``}`` (and the arrows, which are not angles), then each
    answer by look-up. skip_angles scans from ``at`` to where the list closes, so a file of
    unclosed ``fn a<`` cost n^2 (a 60 KB line: 13.5 s). Exactly skip_angles' answers (tested);
    an ``at`` that is no ``<`` starting a token of that pass is answered by skip_angles itself."""

    def __init__(self, code: str):
        from array import array

        self.code = code
        self.n = len(code)
        self.index: dict[int, int] = {}
        starts, ends, kinds = array("q"), array("q"), []
        for i, m in enumerate(_ANGLES.finditer(code)):
            starts.append(m.start())
            ends.append(m.end())
            kinds.append(m.group())
            self.index[m.start()] = i
        t = len(kinds)
        depth, d = array("q", bytes(8 * t)), 0
        for i, k in enumerate(kinds):
            d += 1 if k == "<" else -1 if k == ">" else 0
            depth[i] = d
        close = array("q", [-1]) * t               # the first token after i whose depth is below i's
        stack: list[int] = []
        for j in range(t):
            while stack and depth[j] < depth[stack[-1]]:
                close[stack.pop()] = j
            stack.append(j)
        term = array("q", [-1]) * t                # the first ; { } at or after i
        nxt = -1
        for i in range(t - 1, -1, -1):
            if kinds[i] in (";", "{", "}"):
                nxt = i
            term[i] = nxt
        self.starts, self.ends, self.kinds, self.close, self.term = starts, ends, kinds, close, term

    def skip(self, at: int) -> int:
        i = self.index.get(at)
        if i is None or self.kinds[i] != "<":
            return skip_angles(self.code, at)
        c, e = self.close[i], self.term[i]
        if c >= 0 and (e < 0 or c < e):
            return self.ends[c]
        return self.starts[e] if e >= 0 else self.n


class PairedAngles:
    """:func:`skip_angles` with ``pairs`` for any number of ``at`` in one text, each answer kept:
    a ``<`` met inside the list is answered from what was kept (asked first when it was not),
    and the scan goes on after its ``>`` when it closed, or stops where it stopped when it did
    not (the outer list cannot close before that either). skip_angles scans from ``at`` to
    where the list closes, so a file of unclosed ``class a<`` cost the TypeScript loader n^2
    (60 KB: 21 s). Exactly skip_angles' answers (tested); an ``at`` that is no ``<`` token is
    answered by skip_angles itself."""

    def __init__(self, code: str, pairs: dict):
        self.code, self.pairs = code, pairs
        self.kept: dict[int, tuple[int, bool]] = {}       # < -> (answer, closed by its >)

    def skip(self, at: int) -> int:
        got = self.kept.get(at)
        if got is not None:
            return got[0]
        code, pairs, kept = self.code, self.pairs, self.kept
        first = _ANGLES_PAIRED.match(code, at)
        if first is None or first.group() != "<":
            return skip_angles(code, at, pairs)
        n = len(code)
        search = _ANGLES_PAIRED.search
        stack = [[at, at + 1]]                  # per open list: its <, where its scan goes on
        while stack:
            frame = stack[-1]
            start = frame[0]
            m = search(code, frame[1])
            if m is None:
                kept[start] = (n, False)
                stack.pop()
                continue
            t, s = m.group(), m.start()
            if t == "<":
                got = kept.get(s)
                if got is None:
                    stack.append([s, s + 1])
                    continue
                if got[1]:
                    frame[1] = got[0]
                    continue
                kept[start] = got
                stack.pop()
            elif t == ">":
                kept[start] = (m.end(), True)
                stack.pop()
            elif t in "{([":
                frame[1] = pairs.get(s, n) + 1
            elif t in (";", ")", "]", "}"):
                kept[start] = (s, False)
                stack.pop()
            else:                               # -> => >>= <<=: no angle
                frame[1] = m.end()
        return kept[at][0]


_last_paired: PairedAngles | None = None


def skip_angles_paired(code: str, at: int, pairs: dict) -> int:
    """``skip_angles(code, at, pairs)`` answered by a :class:`PairedAngles` of that text (the
    last one made is kept)."""
    global _last_paired
    pa = _last_paired
    if pa is None or pa.code is not code or pa.pairs is not pairs:
        pa = _last_paired = PairedAngles(code, pairs)
    return pa.skip(at)


_END = re.compile(r"[;{}(\[]")


class KeptSearch:
    """``pattern.search(code, at).start()``, ``len(code)`` when there is no match, with the last
    answer kept: an offset between where it was asked and what it found has the same answer, so
    a file of keywords with nothing after them (``mod mod mod ...``, ``class class ...``) is
    searched once, not once per keyword (n^2: 60 KB of ``mod `` took 2.2 s)."""

    def __init__(self, pattern: re.Pattern):
        self.pattern = pattern
        self.last: tuple = ("", 0, -1)      # (code, lo, p): the first match at or after any of lo..p is at p

    def __call__(self, code: str, at: int) -> int:
        c, lo, p = self.last
        if c is code and lo <= at <= p:
            return p
        m = self.pattern.search(code, at)
        p = m.start() if m is not None else len(code)
        self.last = (code, at, p)
        return p


_next_end = KeptSearch(_END)          # the first ``;{}([`` at or after an offset


def find_end(code: str, pairs: dict, at: int, stop: str = ";{") -> int:
    """Offset of the first character of ``stop`` at or after ``at`` that is not inside a
    bracket group opened after ``at`` (``len(code)`` when none; a ``}`` closing the enclosing
    block ends the search there too)."""
    n = len(code)
    while True:
        p = _next_end(code, at)
        if p >= n:
            return n
        c = code[p]
        if c in stop or c == "}":
            return p
        at = pairs.get(p, n) + 1


def find_end_before(code: str, pairs: dict, at: int, limit: int, stop: str = ";{") -> int:
    """:func:`find_end` that looks no further than ``limit`` (``limit`` when it gets there): a
    declaration's end before the next one starts, so that n declarations missing their ``;``
    cost n short searches, not n searches to the end of the file."""
    while True:
        m = _END.search(code, at, limit)
        if m is None:
            return limit
        c = m.group()
        if c in stop or c == "}":
            return m.start()
        at = pairs.get(m.start(), limit) + 1
        if at > limit:
            return limit


def find_end_reference(code: str, pairs: dict, at: int, stop: str = ";{") -> int:
    """:func:`find_end` searching from every offset (the plain scan its answers are tested against)."""
    n = len(code)
    while True:
        m = _END.search(code, at)
        if m is None:
            return n
        c = m.group()
        if c in stop or c == "}":
            return m.start()
        at = pairs.get(m.start(), n) + 1
