"""Helpers shared by the loaders: reading text files, slugs, picking searchable values."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

from ..types import PART_KEY, type_name

__all__ = ["read_text", "decode", "utf16_codec", "slugify", "is_texty", "norm_type", "MAX_LINE_CHARS", "lines_of",
           "MAX_TEXT", "dedent", "split_parts", "part_key"]

MAX_TEXT = 4000           # characters of a code definition's own text (the rest goes to its parts)
_INDENT = re.compile(r"^[ \t]*")
_WORD = re.compile(r"\w")


def utf16_codec(head: bytes) -> str | None:
    """``"utf-16-le"`` or ``"utf-16-be"`` for bytes that start with a UTF-16 byte-order mark
    (what Notepad's "Unicode" and PowerShell's ``>`` write), else ``None``. A UTF-32 LE mark
    (``FF FE 00 00``) is not UTF-16; UTF-16 without a mark is not recognised (its NUL bytes make
    it "not text" to the walker).

    >>> utf16_codec(b"\\xff\\xfea\\x00"), utf16_codec(b"\\xfe\\xff\\x00a"), utf16_codec(b"\\xff\\xfe\\x00\\x00")
    ('utf-16-le', 'utf-16-be', None)
    """
    if head.startswith(b"\xff\xfe") and not head.startswith(b"\xff\xfe\x00\x00"):
        return "utf-16-le"
    if head.startswith(b"\xfe\xff"):
        return "utf-16-be"
    return None


_LINE_END = re.compile(r"\r\n?|\n")


def lines_of(text: str) -> list[str]:
    r"""The lines of a data file (JSONL, TSV): split at LF, CRLF or a lone CR only.
    ``str.splitlines`` also splits at U+2028, U+2029, NEL, form feed and \x1c-\x1e, which JSON
    allows raw inside a string: a valid JSONL record holding one became two invalid halves.

    >>> lines_of("a\u2028b\r\nc\rd\n")
    ['a\u2028b', 'c', 'd', '']
    """
    return _LINE_END.split(text)


def decode(data: bytes, where: str) -> tuple[str, str | None]:
    """Decode UTF-8 (a leading BOM is dropped), or UTF-16 when the bytes start with its
    byte-order mark (:func:`utf16_codec`). Invalid bytes become U+FFFD and the second value is
    one warning naming the first bad byte's line; otherwise it is ``None``.

    >>> decode(b"a\\nb\\xff", "f.txt")
    ('a\\nb\\ufffd', 'f.txt:2: not valid UTF-8; decoded with replacement characters (save the file as UTF-8 to fix)')
    >>> decode("a\\nb".encode("utf-16"), "f.txt")
    ('a\\nb', None)
    """
    codec = utf16_codec(data[:4])
    if codec:
        return _decode_utf16(data[2:], codec, where)
    try:
        text = data.decode("utf-8")
        warning = None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        text = data.decode("utf-8", errors="replace")
        warning = (f"{where}:{line}: not valid UTF-8; decoded with replacement characters "
                   "(save the file as UTF-8 to fix)")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, warning


def _utf16_warning(where: str, line: int) -> str:
    return (f"{where}:{line}: not valid UTF-16 (a lone surrogate or an odd byte at the end); decoded with "
            "replacement characters (save the file again, as UTF-8 or UTF-16, to fix)")


def _decode_utf16(data: bytes, codec: str, where: str) -> tuple[str, str | None]:
    """``data`` (after its byte-order mark) as UTF-16; the warning names the line of the first
    bad code unit (lines of the decoded text)."""
    try:
        return data.decode(codec), None
    except UnicodeDecodeError as exc:
        line = data[:exc.start].decode(codec, errors="replace").count("\n") + 1
        return data.decode(codec, errors="replace"), _utf16_warning(where, line)


class _Utf16Blocks:
    """A UTF-16 file (after its byte-order mark) as blocks of UTF-8 bytes, decoded incrementally
    (one block of the file at a time), so :func:`read_text` cuts its lines as for a UTF-8 file.
    Invalid code units become U+FFFD; ``warning`` names the line of the first."""

    def __init__(self, fh, codec: str, where: str, first: bytes = b""):
        import codecs

        self.fh, self.where, self.warning, self.first = fh, where, None, first
        self.dec = codecs.getincrementaldecoder(codec)("strict")
        self.codec, self.lines = codec, 0            # newlines decoded so far

    def __iter__(self):
        while True:
            raw, self.first = self.first or self.fh.read(_BLOCK), b""
            final = not raw
            text = self._decode(raw, final)
            if text:
                self.lines += text.count("\n")
                yield text.encode("utf-8")
            if final:
                return

    def _decode(self, raw: bytes, final: bool) -> str:
        state = self.dec.getstate()
        try:
            return self.dec.decode(raw, final)
        except UnicodeDecodeError as exc:
            if self.warning is None:       # the bytes before the bad unit: the decoder's pending ones, then raw's
                pending = state[0] + raw
                good = pending[:exc.start - exc.start % 2].decode(self.codec, errors="replace")
                self.warning = _utf16_warning(self.where, self.lines + good.count("\n") + 1)
            self.dec.setstate(state)
            self.dec.errors = "replace"
            try:
                return self.dec.decode(raw, final)
            finally:
                self.dec.errors = "strict"


MAX_LINE_CHARS = 100_000          # prose loaders read at most this much of one line
_BLOCK = 1 << 20


def read_text(path: Path, max_line: int = MAX_LINE_CHARS) -> tuple[str, list[str]]:
    """The file's text and its warnings (see :func:`decode`). A line longer than ``max_line``
    bytes (minified data, a dump on one line) is cut to its first ``max_line`` (at a character
    boundary) while the file is read, in blocks, so such a file never costs more than its
    lines as cut: a 20 MB one-line note cost a run ~600 MB. One warning names the first cut
    line and how many were cut. A UTF-16 file (byte-order mark) is decoded a block at a time
    into UTF-8 first, so its lines are measured and cut in UTF-8 bytes too."""
    out, cut = bytearray(), []
    line_no, line_len, line_at = 1, 0, 0     # the line being read, its length so far, where it starts in out
    with open(path, "rb") as fh:
        first = fh.read(max(_BLOCK, 4))
        codec = utf16_codec(first)
        blocks = (_Utf16Blocks(fh, codec, str(path), first[2:]) if codec
                  else itertools.chain((first,) if first else (), iter(lambda: fh.read(_BLOCK), b"")))
        for block in blocks:
            parts = block.split(b"\n")
            if line_len + len(parts[0]) <= max_line and max(map(len, parts), default=0) <= max_line:
                if len(parts) > 1:               # no long line here: the block as it is
                    line_at = len(out) + len(block) - len(parts[-1])
                out += block
                line_no += len(parts) - 1
                line_len = len(parts[-1]) + (line_len if len(parts) == 1 else 0)
                continue
            for i, part in enumerate(parts):
                if i:
                    out += b"\n"
                    line_no, line_len, line_at = line_no + 1, 0, len(out)
                room = max_line - line_len
                if len(part) > room:
                    out += part[:max(room, 0)]
                    if not cut or cut[-1] != line_no:       # the cut: no character split at its end
                        del out[len(out) - _partial_tail(out, line_at):]
                        cut.append(line_no)
                else:
                    out += part
                line_len += len(part)
    if codec:                                # already checked and made valid UTF-8
        text = out.decode("utf-8")
        warning = blocks.warning
    else:
        text, warning = decode(bytes(out), str(path))
    warnings = [warning] if warning else []
    if cut:
        more = f" ({len(cut)} lines)" if len(cut) > 1 else ""
        warnings.append(f"{path}:{cut[0]}: a line of more than {max_line:,} bytes{more}; indexed the first "
                        f"{max_line:,} of each (kgsearch reads at most that much of a line)")
    return text, warnings


def _partial_tail(buf: bytearray, start: int) -> int:
    """How many bytes at the end of ``buf[start:]`` are a UTF-8 sequence cut short."""
    i = len(buf)
    while i > start and buf[i - 1] & 0xC0 == 0x80 and len(buf) - i < 3:
        i -= 1
    if i > start and buf[i - 1] >= 0xC0:              # a lead byte whose sequence was cut
        need = 2 if buf[i - 1] < 0xE0 else 3 if buf[i - 1] < 0xF0 else 4
        if len(buf) - (i - 1) < need:
            return len(buf) - (i - 1)
    return 0


_SLUG_DROP = re.compile(r"[^\w\- ]+")
_SLUG_SPACE = re.compile(r"[\s\-]+")


def slugify(text: str) -> str:
    """GitHub-style heading anchor: lower case, punctuation dropped, spaces -> ``-``.

    >>> slugify("Graph: PageRank & HITS (v2)")
    'graph-pagerank-hits-v2'
    """
    s = _SLUG_DROP.sub("", text.strip().lower())
    s = _SLUG_SPACE.sub("-", s).strip("-")
    return s or "section"


# Values that are identifiers rather than words: URLs, paths, dates/times, numbers, hex hashes.
_NOT_TEXT = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://\S*|[\w.-]*[/\\][\w./\\-]*|[\d\s:.+TZ/-]+|-?[\d.,eE+-]+|[0-9a-fA-F]{16,})$")
_LETTER = re.compile(r"[^\W\d_]")


def is_texty(value: object) -> bool:
    """True for a string worth adding to a node's searchable text (has a letter and is not a
    URL, path, date, number or hash)."""
    return (isinstance(value, str) and bool(_LETTER.search(value))
            and not _NOT_TEXT.match(value.strip()))


def norm_type(value: object, default: str) -> str:
    """Node kind / edge type as the index keeps them (:func:`kgsearch.types.type_name`).

    >>> norm_type("Depends On", "relates_to")
    'depends_on'
    """
    return type_name(value, default)


MAX_ID_CHARS = 1_000             # a KG id (a node's key is kg:<id>; every line that names the node prints it)


def check_id(value: str, what: str, where: str, line: int | None) -> str:
    """``value``, a KG id read from ``where:line``; one longer than :data:`MAX_ID_CHARS` is a
    DataError (a 2 MB "id", a lost tab or quote, became a 2 MB key printed by every command)."""
    if len(value) > MAX_ID_CHARS:
        from ..errors import DataError

        raise DataError(f"{what} has {len(value):,} characters (an id is at most {MAX_ID_CHARS:,}); is a tab, "
                        f"quote or line break missing?", where, line)
    return value


# ---- the parts of a long code definition (every code loader) ---------------------------------
def split_parts(lines: list[tuple[int, str]], cap: int = MAX_TEXT) -> list[tuple[int, int, str]]:
    """``(first line, last line, text)`` parts of numbered ``lines`` (the lines of a definition
    its text could not hold), cut at line ends, each at most ``cap`` characters and the lines
    shared out about evenly (no short last part whose length normalisation would make one
    match in it outweigh a full part's); a line longer than ``cap`` goes alone, in ``cap``-long
    pieces of the same line number. Blank lines at a part's edges are left out of its span, a
    part without a letter or digit (the closing ``}`` of a class) is left out; each part's own
    indentation is taken off (:func:`dedent`).

    >>> split_parts([(7, "  a = 1"), (8, ""), (9, "  b = 2")], cap=9)
    [(7, 7, 'a = 1'), (9, 9, 'b = 2')]
    >>> [p[:2] for p in split_parts([(1, "x" * 25)], cap=10)]
    [(1, 1), (1, 1), (1, 1)]
    """
    items: list[tuple[int, str]] = []
    for n, line in lines:
        if len(line) > cap:
            items += [(n, line[i:i + cap]) for i in range(0, len(line), cap)]
        else:
            items.append((n, line))
    total = sum(len(t) + 1 for _, t in items)
    if not total:
        return []
    want = -(-total // -(-total // (cap + 1)))          # ceil(total / number of parts)
    groups: list[list[tuple[int, str]]] = []
    cur: list[tuple[int, str]] = []
    size = 0
    for n, t in items:
        if cur and (size + len(t) > cap or size >= want):
            groups.append(cur)
            cur, size = [], 0
        cur.append((n, t))
        size += len(t) + 1
    if cur:
        groups.append(cur)
    out = []
    for g in groups:
        while g and not g[0][1].strip():
            g = g[1:]
        while g and not g[-1][1].strip():
            g = g[:-1]
        if g and any(_WORD.search(t) for _, t in g):
            out.append((g[0][0], g[-1][0], "\n".join(dedent([t for _, t in g]))))
    return out


def part_key(key: str, n: int, taken) -> str:
    """The key of part ``n`` of the definition ``key``: ``<key>#part<n>``; a definition of that
    very key in the file (only a Kotlin backticked name may hold ``#``) pushes it to
    ``<key>#part<n>#``, ``#part<n>##``, ... (``taken``: the file's keys)."""
    k = f"{key}{PART_KEY}{n}"
    while k in taken:
        k += "#"
    return k


def dedent(lines: list[str]) -> list[str]:
    """Take the first line's indentation off every line (less indented lines lose what they have)."""
    if not lines:
        return lines
    ind = len(_INDENT.match(lines[0]).group())
    if not ind:
        return lines
    pat = re.compile(r"^[ \t]{1,%d}" % ind)
    return [pat.sub("", x) for x in lines]
