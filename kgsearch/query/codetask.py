"""Code tasks in a query: is it an issue / bug report / traceback, or a "who calls X" question,
and which of its words name code (the anchors).

An issue text is long and mostly prose; what ties it to the code are a few anchors:

* traceback frames ``File "…/pkg/mod.py", line 12, in func`` (a path and a function), and the
  other languages' stack frames read the same way (:func:`stack_frames`: Go panics, Java/Kotlin
  ``at pkg.Cls.m(Cls.java:42)``, V8 ``at fn (x.js:10:5)``, Rust backtraces, gdb and sanitizer
  ``#0 ... in f ... x.c:12``),
* names in backticks and code blocks, dotted paths (``pvlib.iam.physical``,
  ``Dataset.to_json_dict``), ``snake_case`` / ``CamelCase`` identifiers, ``call()`` forms,
* file names and paths (``conf.py``, ``src/flask/cli.py``), error class names
  (``AttributeError``, ``ValueError``).

They are extracted here from the text alone, once per search by :func:`kgsearch.query.parse.parse`
(the :class:`~kgsearch.query.parse.Query` holds them); :mod:`kgsearch.query.anchors` keeps those
that name something in the index and weighs them by how specific they are there. Used as weighted
evidence, not as one giant OR query: the prose goes to BM25 and the embedding as it is.

A name listed with others (``'sphinx.ext.autodoc', 'sphinx.ext.todo', ...`` in an issue's
environment section, "with either `singlehtml` or `latex`") is one mention shared by the names of
the list: each weighs ``1 / (1 + log2(n))`` of a name mentioned alone (:attr:`Anchor.share`), as a
name that ``n`` nodes define weighs less in :mod:`kgsearch.query.anchors`. A name also mentioned
outside a list keeps its full weight.

>>> [a.text for a in extract("Fix `GraphStore.blast_radius` when ctx.run() fails in util/io.py")]
['util/io.py', 'GraphStore.blast_radius', 'ctx.run', 'run', 'GraphStore', 'blast_radius', 'ctx']
>>> relation("who calls `rwr`?"), relation("where is Engine used"), relation("how do I back up")
(('calls', 'rwr'), ('uses', 'Engine'), None)
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from ..codelike import BACKTICK, CALL, CAMEL, DOTTED, MEMBER, SCOPED, SNAKE, dotted, has_code_token
from ..ingest.langspec import SPECS, find_frames
from .diagnostics import diagnostics

__all__ = ["Anchor", "extract", "fair_frames", "stack_frames", "diagnostics", "list_shares", "code_task_reason", "relation", "asks_for_tests",
           "asks_for_prose",
           "RELATION_EDGES", "WORD", "KIND_WEIGHT", "CODE_EXTENSIONS"]

# how much one mention of each kind says (a frame names the place where it failed)
KIND_WEIGHT = {"frame": 1.0, "path": 0.9, "backtick": 0.8, "dotted": 0.8, "call": 0.7, "identifier": 0.6,
               "error": 0.3}
CODE_TASK_MIN_WORDS = 8
MAX_ANCHORS = 60

_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([A-Za-z_<>][\w<>.]*))?')
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
# source files of every language the loaders read (issue 26): Rust panics `src/x.rs:12:5`, Go
# `x.go:123`, Java `(Cls.java:42)`, JS/TS `(x.js:10:5)`, C/C++ diagnostics `x.c:3:1:`
CODE_EXTENSIONS = ("py", "pyi", "pyx", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "go", "rs", "java", "kt", "kts",
                   "cs", "csx", "php", "rb", "rake", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx")
_PATH = re.compile(r"(?<![\w.~/-])(/?(?:[\w.-]+/)*[\w-][\w.-]*\.(?:"
                   + "|".join(sorted(CODE_EXTENSIONS, key=len, reverse=True))
                   + r"|cfg|toml|ini|json|ya?ml|md|rst|txt))\b")
_ALNUM = re.compile(r"\b[A-Za-z]+[0-9]+[A-Za-z0-9]*\b")         # L031, utf8, md5: a module or rule name?
# a web address; a code host's link to a file at a line (GitHub, GitLab, Bitbucket, Codeberg, Gitee:
# https://github.com/o/r/blob/<ref>/src/x.py#L10-L20) names that file and line as a frame does
_URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`|]+")
_CODE_HOST = re.compile(r"https?://(?:www\.)?(?:github\.com|gitlab\.com|bitbucket\.org|codeberg\.org|gitee\.com)"
                        r"/[^/]+/[^/]+/")
_BLOB = re.compile(r"(?:-/)?(?:blob|blame|src|tree|raw)/(?:(?:branch|commit|tag)/)?[^/]+/([^?#]+\.\w+)(?:\?[^#]*)?(?:#(?:(?:L|lines-)(\d+))?\S*)?")
_ERROR = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)\b")
# a word of the query as written: the intent rules and the code-task rule count these
WORD = re.compile(r"[\w'-]+")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+", re.M)

_GO_CLOSURE = re.compile(r"^(?:func\d+|\d+)$")        # pkg.(*T).m.func1.2: the closures of m
# a frame has a source file with its line (`x.go:12`, `(Cls.java:42)`, `x.cpp(12)`): a text without
# one has no frame, and the frame patterns are not run over it (a long pasted log costs them ~12 ms)
_FRAME_FILE = re.compile(r"\.(?:" + "|".join(re.escape(e) for e in sorted(
    {e.lstrip(".") for s in SPECS for e in s.extensions}, key=len, reverse=True)) + r")(?::\d|\(\d|:line \d)")


def _frame_func(func: str) -> str | None:
    """The name a frame's function has in the index: the last part of its qualified name (Go
    ``pkg.(*T).m.func1`` -> ``m``, Rust ``<A as B>::poll`` -> ``poll``, Java ``pkg.Cls.m`` ->
    ``m``, a Java constructor ``Cls$Inner.<init>`` -> ``Inner``, a lambda ``lambda$run$0`` ->
    ``run``); None when it names nothing (``<anonymous>``, ``<clinit>``)."""
    parts = [p for p in re.split(r"::|\.", func.split(" as ")[-1]) if p]
    while len(parts) > 1 and _GO_CLOSURE.match(parts[-1]):
        parts.pop()
    if not parts:
        return None
    name = parts[-1]
    if name == "<init>" and len(parts) > 1:
        name = parts[-2].split("$")[-1]
    lam = re.fullmatch(r"lambda\$(\w+?)\$\d+", name)
    name = lam.group(1) if lam else name
    return name if re.fullmatch(r"[A-Za-z_$][\w$]*", name) else None


def stack_frames(query: str) -> list[tuple[str, int, str]]:
    """The stack frames that name a function in every language the loaders read, in text order,
    as ``(path, line, function)``: :func:`kgsearch.ingest.langspec.find_frames`, a function line
    joined with the path line right under it (Go panics, Rust backtraces), a function as the
    index names it (:func:`_frame_func`), and a Java frame's file placed in its package's folders
    (``at com.x.Cls.m(Cls.java:42)`` -> ``com/x/Cls.java``; the module or class loader that Java 9
    and later print before it, ``java.base/`` or ``app//``, is no folder). Frames without a function (a panic's
    location, a compiler diagnostic) are left to the path anchors.

    >>> go = "goroutine 7 [running]:\\nexample.com/m/pkg.(*Conn).Close(0x0)\\n\\t/go/pkg/conn.go:41 +0x1d"
    >>> stack_frames(go)
    [('/go/pkg/conn.go', 41, 'Close')]
    >>> stack_frames("  at com.x.core.Parser$Inner.<init>(Parser.java:12)")
    [('com/x/core/Parser.java', 12, 'Inner')]
    """
    if not _FRAME_FILE.search(query):
        return []
    found = find_frames(query)
    out = []
    for i, f in enumerate(found):
        func, path = f.get("func"), f.get("path")
        if func and not path:                    # a function line: its path is on the next line
            nxt = found[i + 1] if i + 1 < len(found) else None
            if nxt is None or nxt.get("func") or not nxt.get("path") or query.count("\n", f["at"], nxt["at"]) != 1:
                continue
            path, line = nxt["path"], nxt.get("line")
        elif func and path:
            line = f.get("line")
            if "/" not in path and "\\" not in path and path.endswith((".java", ".kt")):
                func = func.rsplit("/", 1)[-1]   # java.base/java.util.X.m, app//com.x.Y.m: module, loader
                pkg = [p for p in func.split(".")[:-2] if p]
                path = "/".join(pkg + [path])
        else:
            continue
        name = _frame_func(func)
        if name and line is not None:
            out.append((path, int(line), name))
    return out

# "who calls X", "what calls `X`", "callers of X", "where is X used", "who imports X", ...
_NAME = r"`?([A-Za-z_][\w.]*)`?(?:\(\))?"
_RELATIONS = [
    ("calls", re.compile(rf"\b(?:who|what|which \w+)\s+(?:calls|invokes)\s+{_NAME}", re.I)),
    ("calls", re.compile(rf"\bcallers\s+of\s+{_NAME}", re.I)),
    ("calls", re.compile(rf"\bwhere\s+is\s+{_NAME}\s+called\b", re.I)),
    ("imports", re.compile(rf"\b(?:who|what|which \w+)\s+imports\s+{_NAME}", re.I)),
    ("imports", re.compile(rf"\bwhere\s+is\s+{_NAME}\s+imported\b", re.I)),
    ("inherits", re.compile(rf"\b(?:subclasses\s+of|what\s+inherits\s+from|who\s+inherits\s+from)\s+{_NAME}", re.I)),
    ("uses", re.compile(rf"\b(?:who|what|which \w+)\s+uses\s+{_NAME}", re.I)),
    ("uses", re.compile(rf"\bwhere\s+(?:is|are)\s+{_NAME}\s+used\b", re.I)),
    ("uses", re.compile(rf"\busages?\s+of\s+{_NAME}", re.I)),
]
# edge types that answer each relation (src -> dst = the named node)
RELATION_EDGES = {"calls": ("calls",), "imports": ("imports",), "inherits": ("inherits",),
                  "uses": ("calls", "imports", "inherits", "references")}

_TESTS = re.compile(r"\b(tests?|testing|test suite|unit ?tests?)\b", re.I)
# a name that holds "test" (TestSetContext, test_hidden_option, args_test.go) and its parts
_TEST_NAME = re.compile(r"\w*test\w*", re.I)
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PROSE = re.compile(r"\b(changelog|change log|release notes?|changes file|news|readme|documentation|docs?)\b",
                    re.I)


@dataclass(frozen=True)
class Anchor:
    text: str                  # the name or path as written (dotted names and paths kept whole)
    kind: str                  # frame | path | backtick | dotted | call | identifier | error
    count: int = 1             # mentions in the query
    line: int | None = None    # traceback frames: the line number
    func: str | None = None    # traceback frames: the function
    share: float = 1.0         # 1 / (1 + log2(n)) when each mention is one of n names listed together
    link: bool = False         # a code host's link (its path is the repository's: no file name alone matches)

    @property
    def weight(self) -> float:
        """The evidence of this anchor before the index is asked: its kind, a little more for
        each repeated mention (log-damped), times its :attr:`share` of a list."""
        return KIND_WEIGHT[self.kind] * (1.0 + 0.25 * min(self.count - 1, 4)) * self.share


_SELF = ("self.", "cls.", "crate.", "super.")      # Rust's crate::/super:: name no code either


def extract(query: str) -> list[Anchor]:
    """Anchors of a query, strongest kinds first, then by first position; at most
    :data:`MAX_ANCHORS` (frames first, each file's first frame before any file's second:
    :func:`fair_frames`). Traceback frames are one anchor per (file, function); other names are
    merged by text, keeping their strongest kind and counting their mentions."""
    frames: dict[tuple[str, str | None], Anchor] = {}
    found: dict[str, tuple[str, int]] = {}          # text -> (kind, first position)
    counts: Counter[str] = Counter()
    spans: list[tuple[int, int, str]] = []          # (start, end, name) of each mention

    def add(text: str, kind: str, pos: int, end: int | None = None) -> None:
        text = text.strip().strip(".,:;")
        for prefix in _SELF:                         # self.attr.f -> attr.f: self names no code
            while text.startswith(prefix):
                text = text[len(prefix):]
        if len(text) < 2 or text.isdigit() or text in ("self", "cls"):
            return
        counts[text] += 1
        if end is not None:
            spans.append((pos, end, text))
        old = found.get(text)
        if old is None:
            found[text] = (kind, pos)
        elif old[0] != "error" and KIND_WEIGHT[kind] > KIND_WEIGHT[old[0]]:
            found[text] = (kind, old[1])

    for m in _FRAME.finditer(query):
        func = m.group(3) if m.group(3) and not m.group(3).startswith("<") else None
        key = (m.group(1), func)
        old = frames.get(key)
        frames[key] = Anchor(m.group(1), "frame", (old.count + 1) if old else 1, int(m.group(2)), func)
    framed: set[str] = set()                        # the files the other languages' frames name
    for path, line, func in stack_frames(query):
        key = (path, func)
        old = frames.get(key)
        frames[key] = Anchor(path, "frame", (old.count + 1) if old else 1, line, func)
        framed.add(path.replace("\\", "/"))
    stacked = set(framed)                           # (a diagnostic in such a file: the frame is its anchor)
    for path, line in diagnostics(query):            # a compiler diagnostic, a panic's location
        if path.replace("\\", "/") in stacked:
            continue
        key = (path, f":{line}")                    # one anchor per (file, line)
        old = frames.get(key)
        frames[key] = Anchor(path, "frame", (old.count + 1) if old else 1, line, None)
        framed.add(path.replace("\\", "/"))
    for path, line in code_links(query):             # a code host's link to a file (at a line)
        key = (path, f":{line}")
        old = frames.get(key)
        frames[key] = Anchor(path, "frame", (old.count + 1) if old else 1, line, None, link=True)
        framed.add(path)
    query = without_hosts(query)                     # (github.com, its owners and #L38 name no code)
    for m in _ERROR.finditer(query):
        add(m.group(0), "error", m.start())
    for m in BACKTICK.finditer(query):
        toks = re.findall(r"[A-Za-z_][\w.]*", dotted(m.group(1)))
        # one name in backticks names code; a message or a command line in backticks
        # (`WARNING: no number is assigned`) only for its code-shaped words
        for tok in toks if len(toks) == 1 else [t for t in toks if has_code_token(t)]:
            add(tok, "backtick", m.start(1), m.end(1))
    for m in _PATH.finditer(query):
        if query[max(0, m.start(1) - 6):m.start(1)].endswith('File "'):        # a frame's file
            continue
        if any(f == m.group(1) or f.endswith("/" + m.group(1).lstrip("/")) for f in framed):
            continue                                 # a frame's file: the frame is its anchor
        add(m.group(1), "path", m.start(1), m.end(1))
    for m in DOTTED.finditer(query):
        tok = m.group(0)
        if max(map(len, tok.split("."))) > 2 and not _PATH.fullmatch(tok):
            add(tok, "dotted", m.start(), m.end())
    for m in SCOPED.finditer(query):                 # Bytes::split_off: the index says Bytes.split_off
        add(dotted(m.group(0)).replace("#", "."), "dotted", m.start(), m.end())     # Shop::Cart#total too
    for m in MEMBER.finditer(query):                 # ArrayUtils#toPrimitive: ArrayUtils.toPrimitive
        add(m.group(0).replace("#", "."), "dotted", m.start(), m.end())
    for m in CALL.finditer(query):
        add(m.group(1), "call", m.start(1), m.end(0))
    for rx in (SNAKE, CAMEL, _ALNUM):
        for m in rx.finditer(query):
            add(m.group(0), "identifier", m.start(), m.end())
    share = list_shares(query, spans)
    # the parts of a dotted name name things too (a module, a class, a method), with its share
    for text, (kind, pos) in list(found.items()):
        if kind in ("dotted", "backtick") and "." in text:
            for part in text.split("."):
                if len(part) > 2 and part not in found:
                    add(part, "identifier", pos)
                    if text in share:
                        share[part] = share[text]
    named = sorted(found.items(), key=lambda kv: (-KIND_WEIGHT[kv[1][0]], kv[1][1], kv[0]))
    out = fair_frames(list(frames.values()), MAX_ANCHORS) + [Anchor(t, k, counts[t], share=share.get(t, 1.0))
                                                              for t, (k, _) in named]
    return out[:MAX_ANCHORS]


def fair_frames(frames: list[Anchor], cap: int) -> list[Anchor]:
    """At most ``cap`` of ``frames``, each file's first before any file's second (and so on), in
    their order: a long lint report or log that names one file 60 times first would otherwise
    fill the cap with it and drop the files it names later.

    >>> f = [Anchor("a.go", "frame", line=i) for i in range(1, 4)] + [Anchor("b.go", "frame", line=9)]
    >>> [(a.text, a.line) for a in fair_frames(f, 2)]
    [('a.go', 1), ('b.go', 9)]
    """
    if len(frames) <= cap:
        return frames
    seen: Counter[str] = Counter()
    turn = []                                   # (the how-manieth of its file, position)
    for i, a in enumerate(frames):
        path = a.text.replace("\\", "/")
        turn.append((seen[path], i))
        seen[path] += 1
    keep = sorted(i for _, i in sorted(turn)[:cap])
    return [frames[i] for i in keep]


def code_links(text: str) -> list[tuple[str, int | None]]:
    """``(path in the repository, line or None)`` of each code host's link to a file in ``text``
    (``https://github.com/o/r/blob/<ref>/lib/x.js#L38`` -> ``("lib/x.js", 38)``), in order."""
    out = []
    for m in _URL.finditer(text):
        host = _CODE_HOST.match(m.group(0))
        b = _BLOB.fullmatch(m.group(0)[host.end():].rstrip(".,;:")) if host else None
        if b:
            out.append((b.group(1), int(b.group(2)) if b.group(2) else None))
    return out


def without_hosts(text: str) -> str:
    """``text`` with each web address's scheme and host (and port) blanked, and a code host's
    links blanked whole (the file they name is read by :func:`code_links`): positions kept, so
    that spans still index the query. ``http://localhost:8080/app.py`` leaves ``/app.py``."""
    def blank(m: re.Match) -> str:
        url = m.group(0)
        host = _CODE_HOST.match(url)
        cut = len(url) if host else (url.find("/", url.index("//") + 2) % (len(url) + 1) or len(url))
        return " " * cut + url[cut:]
    return _URL.sub(blank, text) if "://" in text else text


# what separates the names of a list: commas, slashes, bars, "or", "and" (quotes and spaces around)
_LIST_GAP = re.compile(r"[\s'\"`]*(?:,|/|\||\bor\b|\band\b|\bnor\b)(?:[\s'\"`,/|]|\bor\b|\band\b)*")
_LIST_GAP_MAX = 40


def list_shares(query: str, spans: list[tuple[int, int, str]]) -> dict[str, float]:
    """Name -> ``1 / (1 + log2(n))`` for the names each of whose mentions is one of ``n`` names
    listed together; names mentioned alone somewhere are left out (their share is 1).

    ``spans`` are the mentions ``(start, end, name)``; overlapping mentions (``a.b`` and ``b``
    inside it) are one item, and consecutive items separated only by commas, slashes, bars,
    "or", "and", quotes and spaces are one list.

    >>> q = "use 'pkg.a', 'pkg.b' or 'pkg.c'; `solo` fails"
    >>> sorted(list_shares(q, [(5, 10, "pkg.a"), (14, 19, "pkg.b"), (25, 30, "pkg.c"), (34, 38, "solo")]).items())
    [('pkg.a', 0.38685280723454163), ('pkg.b', 0.38685280723454163), ('pkg.c', 0.38685280723454163)]
    """
    items: list[list] = []                  # [start, end, names]
    for st, en, name in sorted(spans):
        if items and st < items[-1][1]:
            items[-1][1] = max(items[-1][1], en)
            items[-1][2].add(name)
        else:
            items.append([st, en, {name}])
    best: dict[str, float] = {}
    group: list[list] = []

    def close() -> None:
        f = 1.0 / (1.0 + math.log2(len(group)))
        for item in group:
            for name in item[2]:
                best[name] = max(best.get(name, 0.0), f)

    for item in items:
        gap = query[group[-1][1]:item[0]] if group else None
        if gap is not None and len(gap) <= _LIST_GAP_MAX and _LIST_GAP.fullmatch(gap):
            group.append(item)
            continue
        if group:
            close()
        group = [item]
    if group:
        close()
    return {name: f for name, f in best.items() if f < 1.0}


def code_task_reason(query: str, anchors: list[Anchor] | tuple[Anchor, ...] | None = None,
                     n_words: int | None = None) -> str | None:
    """Why ``query`` reads as a code task (an issue, a bug report, a traceback), or None.

    A code task is at least :data:`CODE_TASK_MIN_WORDS` words with code evidence: a traceback,
    a fenced code block, a name in backticks, or two distinct identifiers. ``anchors`` and
    ``n_words`` (the count of :data:`WORD` matches) save work when the caller has them."""
    if (len(WORD.findall(query)) if n_words is None else n_words) < CODE_TASK_MIN_WORDS:
        # a compiler diagnostic or a stack frame alone (`--> src/lib.rs:12:5`) names the place
        anchors = extract(query) if anchors is None else anchors
        if any(a.kind == "frame" and a.line is not None for a in anchors):
            return "diagnostic" if all(a.func is None for a in anchors if a.kind == "frame") else "traceback"
        return None
    if _TRACEBACK.search(query):
        return "traceback"
    if _FENCE.search(query):
        return "code block"
    anchors = extract(query) if anchors is None else anchors
    if any(a.kind == "frame" for a in anchors):     # another language's stack frames, or diagnostics
        return "traceback" if any(a.func for a in anchors if a.kind == "frame") else "diagnostic"
    if any(a.kind == "backtick" for a in anchors):
        return "names in backticks"
    # names that are code by their shape alone (not mRNA, IL6 or e.g.: codelike.has_code_token)
    idents = {a.text for a in anchors if a.kind in ("dotted", "call", "identifier", "path") and has_code_token(a.text)}
    if len(idents) >= 2:
        return f"names code: {', '.join(sorted(idents)[:3])}"
    return None


def relation(query: str) -> tuple[str, str] | None:
    """``(relation, name)`` for "who calls X" / "where is X used" questions, else None."""
    for rel, rx in _RELATIONS:
        m = rx.search(query)
        if m:
            return rel, m.group(1).rstrip(".")
    return None


def asks_for_tests(query: str) -> bool:
    """The query is about tests (word boundaries: ``test``, ``tests``, ``testing``, ``unit tests``;
    not ``pytest`` or ``latest``), or names one: a name one of whose parts is such a word
    (``TestSetContext``, ``test_hidden_option``, ``testIsAfter``, ``RangeTest``, ``args_test.go``;
    not ``Attestation`` or ``latestVersion``).

    >>> asks_for_tests("TestSetContext"), asks_for_tests("test_hidden_option"), asks_for_tests("latestVersion")
    (True, True, False)
    """
    if _TESTS.search(query):
        return True
    return any(p.lower() in ("test", "tests", "testing")
               for name in _TEST_NAME.findall(query) for part in name.split("_") for p in _NAME_PART.findall(part))


def asks_for_prose(query: str) -> bool:
    """The query asks for docs, a changelog or release notes."""
    return bool(_PROSE.search(query))
