"""Issue text as people paste it: console output, banners, logs and data dumps kept from
drowning the words (issue 27 item 4).

An issue pastes what the terminal showed: an interpreter start-up banner (which made the
interactive-shell module rank first), pages of linter or log lines, arrays of numbers. Those
lines carry few words about the cause but many terms, so BM25 and the embedding follow them.
:func:`quiet_paste` keeps, for the words of a code task (BM25, embedding, FTS),

* every line that carries evidence: traceback frames (``File "x.py", line 3, in f``, ``at
  pkg.Cls.m(Cls.java:42)``, ``x.rs:12:5``), error lines (``ValueError: ...``, ``panicked at``,
  ``error[E0308]:``),
* prose and code,

and sets aside

* interpreter and REPL banners (``Python 3.8.5 (default, ...)``, ``[GCC 9.3.0] on linux``,
  ``Type "help", "copyright", ...``, IPython's and Node's),
* log lines past the first :data:`REPEAT` of each shape (a shape: the line with its numbers,
  paths and quoted strings blanked; linter output is one shape repeated hundreds of times),
* data dumps: lines of at least 12 characters of which fewer than a quarter are letters.

The anchors (names, frames, paths) are still read from the whole text: a name pasted in a log
counts when the index has it (:mod:`.anchors`).

Issue templates leave their instructions in HTML comments (``<!-- Please run cargo tree ...
-->``): the issue page never shows them, the reporter did not write them, and in a tree's every
issue they are the same words. :func:`drop_comments` takes them out of a code task's text (words
and anchors alike), except inside fenced code blocks, where ``<!--`` is code.

Links are addresses: :func:`drop_links` keeps a Markdown link's label and a URL's path words and
drops schemes, hosts, hashes and numbers from a code task's words, and from any query whose
links sit amid words of its own (:func:`links_in_prose`; its anchors read the links).

>>> quiet_paste('Python 3.8.5 (default, Jul 28 2020)\\n[GCC 9.3.0] on linux\\nfoo() fails\\n1.0 2.0 3.0 4.0 5.0')
('foo() fails', 3)
"""
from __future__ import annotations

import re

__all__ = ["quiet_paste", "drop_comments", "drop_links", "links_in_prose", "PROSE_WORDS", "REPEAT"]

REPEAT = 2          # lines of one shape kept (the first ones)
PROSE_WORDS = 3     # words outside its links that make a query prose with links (links_in_prose)

_EVIDENCE = re.compile(
    r'File "[^"]+", line \d+'                        # Python frame
    r"|^\s*at [\w$.<>/-]+\(.*:\d+"                   # Java / JS frame
    r"|\b[\w/.-]+\.(?:rs|go|c|cc|cpp|h|hpp|js|ts|java|cs|py):\d+"   # path:line
    r"|\.cs:line \d+"                               # .NET frame
    r"|\b[A-Z]\w*(?:Error|Exception|Warning)\b"     # error classes
    r"|panicked at|^\s*error(?:\[\w+\])?:|^\s*(?:fatal )?error:")
_BANNER = re.compile(
    r"^\s*(?:Python \d+\.\d+(?:\.\d+)?\S* \(.*\)\s*$"
    r"|\[(?:GCC|Clang|MSC) [^\]]*\]"
    r"|Type \"help\", \"copyright\", \"credits\" or \"license\""
    r"|IPython \d[\w.]* -- An enhanced Interactive Python"
    r"|Type '\?' for help|Welcome to Node\.js v|Type \"\.help\" for more information)")
_SHAPE_SUBS = ((re.compile(r"\"[^\"]*\"|'[^']*'"), "S"), (re.compile(r"[\w.~-]*[/\\][\w./\\~-]*"), "P"),
               (re.compile(r"\d+"), "0"), (re.compile(r"\s+"), " "))
_LETTER = re.compile(r"[A-Za-z]")
_WORDS = re.compile(r"\w+")


_FENCE_OR_COMMENT = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)|<!--.*?-->", re.S | re.M)


def drop_comments(text: str) -> tuple[str, int]:
    """``(text without its closed HTML comments outside fenced code, comments dropped)``; the
    text unchanged (0) when it has none. An unclosed ``<!--`` is left as written.

    >>> drop_comments("bug <!-- fill in\\nthe version --> in `f`\\n```html\\n<!-- kept -->\\n```")
    ('bug  in `f`\\n```html\\n<!-- kept -->\\n```', 1)
    """
    if "<!--" not in text:
        return text, 0
    n = 0

    def sub(m: re.Match) -> str:
        nonlocal n
        if m.group(1):                   # a fenced block: kept whole
            return m.group(0)
        n += 1
        return ""

    out = _FENCE_OR_COMMENT.sub(sub, text)
    return (re.sub(r"\n{3,}", "\n\n", out).strip(), n) if n else (text, 0)


_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>()\[\]{}\"'`|]+")
_MD_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(?:https?|ftp)://[^\s()]*(?:\([^\s()]*\)[^\s()]*)*\s*\)")
# a forge's file link: .../blob/<ref>/a/b.go (GitHub, GitLab's /-/blob/, Bitbucket's /src/)
_BLOB = re.compile(r"(?:^|/)(?:-/)?(?:blob|tree|src|raw)/[^/]+/(?=[^/])")
_NO_WORD = re.compile(r"^(?:[0-9a-f]{7,}|\d+|L\d+(?:-L?\d+)?|diff-[0-9a-f]+[LR]?\d*)$", re.I)   # hashes, ids, #L12


def _path_words(url: str) -> str:
    """The words of a URL's path and fragment: what may name code (``blob/<sha>/stats/stats.go``,
    ``tokio/sync/mpsc/struct.Receiver.html#method.recv_many``), without hashes and numbers."""
    rest = url.split("://", 1)[1]
    path = rest.split("/", 1)[1] if "/" in rest else ""
    path, _, frag = path.partition("#")
    m = _BLOB.search(path)
    head = re.split(r"[/?&=]+", path[:m.start()] if m else path) + re.split(r"[/?&=]+", frag)
    words = [x for x in head if x and not _NO_WORD.match(x)]
    if m:                                    # a file of a repository: its path, an anchor
        words.append(path[m.end():].split("?")[0])
    return " ".join(words)


def drop_links(text: str) -> tuple[str, int]:
    """``(text with its links reduced, links)``: a Markdown link keeps its label, an image
    link nothing, a bare URL the words of its path (:func:`_path_words`). A link's scheme and
    host (``https``, ``github.com``, ``user-images.githubusercontent.com``) are an address, not
    words about the code; half of the issues of a GitHub tracker carry them. The text unchanged
    (0) when it has none.

    >>> drop_links("see [docs](https://docs.rs/x/latest/x/struct.A.html) ![img](https://i.io/1.png) "
    ...            "at https://github.com/o/r/blob/9c3a9595696a/stats/stats.go#L68.")
    ('see docs   at o r stats/stats.go.', 3)
    """
    if "://" not in text:
        return text, 0
    n = 0

    def md(m: re.Match) -> str:
        nonlocal n
        n += 1
        return " " if m.group(1) else m.group(2)

    def bare(m: re.Match) -> str:
        nonlocal n
        n += 1
        url = m.group(0)
        cut = len(url.rstrip(".,;:!?"))              # the sentence's punctuation stays
        return _path_words(url[:cut]) + url[cut:]

    out = _URL.sub(bare, _MD_LINK.sub(md, text))
    return (out, n) if n else (text, 0)


def links_in_prose(text: str) -> bool:
    """Whether ``text`` holds a link amid at least :data:`PROSE_WORDS` words of its own: then
    the link's scheme and host are an address in a sentence (:func:`drop_links` applies to any
    query, not only a code task's). A query that is a link, or a link and a word or two, is a
    search for that link and keeps it whole.

    >>> links_in_prose("Support explicit fallback, see https://github.com/grpc/grpc-proto/pull/69")
    True
    >>> links_in_prose("https://github.com/grpc/grpc-go notes"), links_in_prose("no link here at all")
    (False, False)
    """
    if "://" not in text:
        return False
    rest = _URL.sub(" ", _MD_LINK.sub(lambda m: " " if m.group(1) else m.group(2), text))
    return rest != text and len(_WORDS.findall(rest)) >= PROSE_WORDS


def _shape(line: str) -> str:
    s = line.strip()
    for rx, rep in _SHAPE_SUBS:
        s = rx.sub(rep, s)
    return s


def quiet_paste(text: str) -> tuple[str, int]:
    """``(text without banners, repeated log shapes and data dumps, lines set aside)``; the
    text unchanged (0) when nothing is set aside. Evidence lines are always kept."""
    lines = text.split("\n")
    if len(lines) < 3:
        return text, 0
    kept: list[str] = []
    seen: dict[str, int] = {}
    dropped = 0
    for line in lines:
        s = line.strip()
        if not s:
            kept.append(line)
            continue
        if _EVIDENCE.search(line) and not _BANNER.search(line):
            kept.append(line)
            continue
        if _BANNER.search(line):
            dropped += 1
            continue
        if len(s) >= 12 and len(_LETTER.findall(s)) < len(s) / 4:
            dropped += 1
            continue
        shape = _shape(s)
        n = seen.get(shape, 0)
        seen[shape] = n + 1
        if n >= REPEAT and len(shape) > 3:
            dropped += 1
            continue
        kept.append(line)
    if not dropped:
        return text, 0
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip(), dropped
