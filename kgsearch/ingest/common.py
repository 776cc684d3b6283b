"""Helpers shared by the loaders: reading text files, slugs, picking searchable values."""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["read_text", "decode", "slugify", "is_texty", "norm_type", "MAX_LINE_CHARS"]


def decode(data: bytes, where: str) -> tuple[str, str | None]:
    """Decode UTF-8 (a leading BOM is dropped). Invalid bytes become U+FFFD and the second
    value is one warning naming the first bad byte's line; otherwise it is ``None``.

    >>> decode(b"a\\nb\\xff", "f.txt")
    ('a\\nb\\ufffd', 'f.txt:2: not valid UTF-8; decoded with replacement characters (save the file as UTF-8 to fix)')
    """
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


MAX_LINE_CHARS = 100_000          # prose loaders read at most this much of one line
_BLOCK = 1 << 20


def read_text(path: Path, max_line: int = MAX_LINE_CHARS) -> tuple[str, list[str]]:
    """The file's text and its warnings (see :func:`decode`). A line longer than ``max_line``
    bytes (minified data, a dump on one line) is cut to its first ``max_line`` (at a character
    boundary) while the file is read, in blocks, so such a file never costs more than its
    lines as cut: a 20 MB one-line note cost a run ~600 MB. One warning names the first cut
    line and how many were cut."""
    out, cut = bytearray(), []
    line_no, line_len, line_at = 1, 0, 0     # the line being read, its length so far, where it starts in out
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
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
    """Node kind / edge type: lower case, runs of spaces and dashes -> ``_``.

    >>> norm_type("Depends On", "relates_to")
    'depends_on'
    """
    s = re.sub(r"[\s\-]+", "_", str(value).strip().lower()) if value is not None else ""
    return s or default
