"""The places that compiler, checker and linter diagnostics in a query name, as ``(path, line)``.

A pasted build or lint report names no function, only a place: a file and a line. Read here,
they become the code task's frame anchors without a function (:func:`kgsearch.query.codetask.extract`),
and :mod:`kgsearch.query.anchors` credits the file and the definition whose lines hold the line.

* compilers and type checkers: gcc/clang/javac/mypy ``x.c:12:5: error:``, rustc and clippy
  ``--> src/lib.rs:12:5`` (ruff's full format too), MSVC/csc/tsc ``x.cs(12,5): error``, tsc's
  pretty ``x.ts:12:5 - error``, go build, vet and staticcheck ``x.go:12:5: ...``;
* Go tests: ``go test``'s failure lines (``    x_test.go:12: got 1, want 2``, at the start of a
  line, under ``--- FAIL: TestX (0.00s)``), testify's ``Error Trace:\tx_test.go:45``, and a
  goroutine dump's location (``\t/src/x.go:12 +0x1d``) whose function line is not read, such as
  a generic function's ``m.Map[...](..)`` (a frame with its function line is
  :func:`kgsearch.query.codetask.stack_frames`'; the location under ``created by X`` is where
  the goroutine started, not a frame of the failure);
* PHP's errors: ``PHP Fatal error:  Uncaught Exception: boom in /app/x.php:22``, ``Warning: ...
  in /app/x.php on line 5``, ``thrown in /app/x.php on line 22``;
* linters: flake8/pycodestyle/ruff/pylint ``pkg/x.py:3:5: E501 line too long``, pylint's
  parseable ``x.py:3: [C0114(missing-module-docstring), ] ...``, pyflakes and ESLint's unix
  format ``src/a.ts:10:2: 'x' is defined but never used``, ESLint's stylish format (the file on
  its own line, then ``  10:2  error  message  rule`` lines under it), ESLint's compact format
  ``src/a.ts: line 10, col 2, Error - ...``, cppcheck's ``[src/a.c:12]: (error) ...``.

A compiler's notes (``x.h:7:3: note: candidate: ...``) and gcc's context lines (``x.cpp:9:5:
required from here``) name candidates and callers, not the failure: they are no place. A linter
line is read at the start of a line only (after spaces, a quote mark ``>`` or a backtick) and
needs a source file's extension and a line number, so prose with a colon and numbers (``10:30``,
``3:1``, ``John 3:16``, ``localhost:8080``) names nothing.

>>> diagnostics("pkg/x.py:3:5: E501 line too long (88 > 79 characters)")
[('pkg/x.py', 3)]
>>> diagnostics("/app/src/a.ts\\n  10:2  error  'x' is defined but never used  no-unused-vars")
[('/app/src/a.ts', 10)]
>>> diagnostics("meet at 10:30, ratio 3:1, John 3:16, http://localhost:8080/x.py")
[]
"""
from __future__ import annotations

import functools
import re

from ..ingest.langspec import SPECS, path_group

__all__ = ["diagnostics"]

_EXTENSIONS = sorted({e.lstrip(".") for s in SPECS for e in s.extensions} | {"py", "pyi", "pyx", "kt"},
                     key=len, reverse=True)
_DPATH = (r"(?<![\w.~+-])(?P<path>(?:[A-Za-z]:)?[\w.@~+/\\-]*?\.(?:"
          + "|".join(re.escape(e) for e in _EXTENSIONS) + "))")
_SEVERITY = r"(?:fatal error|error|warning)\b"    # (a note names a candidate or a declaration, not the failure)
_LINE_START = r"^[ \t>`]*(?:\[[A-Za-z]+\][ \t]*)?"     # indentation, a quote, a `[WARN]` tag
# what follows `file:line:col:` in a note or a context line, not in a diagnostic
_NOT_A_PLACE = r"(?!note\b|help\b|remark\b|required\b|in (?:instantiation|expansion|definition)\b|\[ skipping)"
_RULE = r"\[?[A-Z]{1,4}\d{2,5}\b"                  # E501, F401, C0114, SA4006, D100
_GOPATH = r"(?<![\w.~+-])(?P<path>(?:[A-Za-z]:)?[\w.@~+/\\-]*?\.go)"

_DIAGNOSTICS = tuple(re.compile(p, re.M) for p in (
    # compilers and checkers
    r"-->\s*" + _DPATH + r":(?P<line>\d+):\d+",
    _DPATH + r":(?P<line>\d+):(?:\d+:)?\s+" + _SEVERITY,
    _DPATH + r"\((?P<line>\d+)(?:,\d+)?\)\s*:\s*" + _SEVERITY,
    _DPATH + r":(?P<line>\d+):\d+ - (?:error|warning)\b",
    r"(?<![\w.~+-])(?P<path>[\w.@~+/\\-]*?\.go):(?P<line>\d+):\d+: ",
    # go test's failures (no column): `    x_test.go:12: got 1, want 2` under `--- FAIL: TestX (0.00s)`
    _LINE_START + _GOPATH + r":(?P<line>\d+): +\S",
    # a goroutine dump's location whose function line is not read (generics: `m.Map[...](..)`):
    # `\t/src/x.go:12 +0x1d`; the line after `created by X` is where the goroutine was started,
    # not a frame of the failure: it stays a path
    r"(?:^(?![ \t]*created by )[^\n]*\n|\A)[ \t]+" + _GOPATH + r":(?P<line>\d+) \+0x[0-9a-f]+[ \t]*\r?$",
    # PHP's errors: `PHP Fatal error:  Uncaught Exception: boom in /app/x.php:22`, `Warning: Undefined
    # variable $y in /app/x.php on line 5`, a stack trace's `thrown in /app/x.php on line 22`
    r"\b(?:[Ff]atal error|[Pp]arse error|Warning|Notice|Deprecated|thrown)\b[^\n]*? in " + _DPATH
    + r"(?::| on line )(?P<line>\d+)\b",
    # testify's `Error Trace:\tx_test.go:45`
    r"\bError Trace:[ \t]+" + _GOPATH + r":(?P<line>\d+)\b",
    # linters: a rule code after the place (the column optional), or a message after line and column
    _LINE_START + _DPATH + r":(?P<line>\d+)(?::\d+)?:?[ \t]+" + _RULE,
    _LINE_START + _DPATH + r":(?P<line>\d+):\d+:?[ \t]" + _NOT_A_PLACE + r"[^\s:]",
    _LINE_START + _DPATH + r": line (?P<line>\d+), col \d+, (?:Error|Warning) - ",
    _LINE_START + r"\[" + _DPATH + r":(?P<line>\d+)\]: \((?:error|warning|style|performance|portability)\)"))


def _after_path(rx: re.Pattern) -> re.Pattern | None:
    """What a pattern reads after its path, alone: where it finds nothing the whole pattern finds
    nothing, and it starts with a ``:`` or a ``(``, which the engine skips to, where the path
    before it is tried from every word of the text."""
    where = path_group(rx.pattern)
    return None if where is None else re.compile(rx.pattern[where[1] + 1:], rx.flags)


@functools.cache
def _after() -> tuple[re.Pattern | None, ...]:
    """:func:`_after_path` of every diagnostic pattern, compiled at the first text that passes
    the gate (not when a search imports this module)."""
    return tuple(_after_path(rx) for rx in _DIAGNOSTICS)

# ESLint's stylish format: a file alone on its line, its problems indented under it
_STYLISH_FILE = re.compile(r"^[ \t]*" + _DPATH + r"[ \t]*$")
_STYLISH_ROW = re.compile(r"^[ \t]+(?P<line>\d+):\d+[ \t]+(?:error|warning)[ \t]+\S")
_GATE = re.compile(r"\.(?:" + "|".join(re.escape(e) for e in _EXTENSIONS)
                   + r")(?::\d|\(\d|: line \d| on line \d|[ \t]*\r?\n[ \t]+\d+:\d)")


def _stylish(query: str) -> list[tuple[int, str, int]]:
    """``(position, path, line)`` of each problem an ESLint stylish report lists."""
    out = []
    path = None
    pos = 0
    for row in query.splitlines(keepends=True):
        m = _STYLISH_ROW.match(row)
        if m and path is not None:
            out.append((pos, path, int(m.group("line"))))
        else:
            f = _STYLISH_FILE.match(row)
            path = f.group("path") if f else None
        pos += len(row)
    return out


def diagnostics(query: str) -> list[tuple[str, int]]:
    """The places that compiler, checker and linter diagnostics name, in text order and once
    each, as ``(path, line)`` (see the module docstring for the formats). Not a panic's location
    or a stack frame: those are read by :func:`kgsearch.query.codetask.stack_frames` and the path
    anchors.

    >>> diagnostics("src/net/sock.c:120:5: error: 'x' undeclared")
    [('src/net/sock.c', 120)]
    >>> diagnostics("error[E0425]: cannot find value\\n  --> src/lib.rs:12:5"), diagnostics("Foo.java:42: error: x")
    ([('src/lib.rs', 12)], [('Foo.java', 42)])
    """
    return _diagnostics(query, gated=True)


def _diagnostics(query: str, gated: bool) -> list[tuple[str, int]]:
    """:func:`diagnostics`; ``gated`` False runs every pattern (the reference), True only those
    whose part after the path occurs in the text (a 22,000-character pytest log: 10 -> 1 ms)."""
    if not _GATE.search(query):
        return []
    found = sorted((m.start(), m.group("path"), int(m.group("line")))
                   for rx, after in zip(_DIAGNOSTICS, _after()) if not gated or after is None or after.search(query)
                   for m in rx.finditer(query))
    if "\n" in query:
        found = sorted(found + _stylish(query))
    return list(dict.fromkeys((path, line) for _, path, line in found))
