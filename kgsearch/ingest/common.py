"""Helpers shared by the loaders: reading text files, slugs, picking searchable values."""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["read_text", "decode", "slugify", "is_texty", "norm_type"]


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


def read_text(path: Path) -> tuple[str, list[str]]:
    """The file's text and a list with at most one warning (see :func:`decode`)."""
    text, warning = decode(Path(path).read_bytes(), str(path))
    return text, ([warning] if warning else [])


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
