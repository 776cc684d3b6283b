"""A small YAML subset for Markdown front matter: ``key: value``, quoted strings, ``[a, b]``,
``- a`` block lists, ``|``/``>`` blocks and one level of nested keys; anything else is skipped
with one warning, never an exception.

>>> fm = parse_front_matter(["title: Backup", "tags: [a, b]"])[0]
>>> fm["title"], fm["tags"]
('Backup', ['a', 'b'])
"""
from __future__ import annotations

import re
from typing import Any

from .mdlinks import WIKI as _WIKI

__all__ = ["parse_front_matter"]

_LINKS_ONLY = re.compile(r"^\s*\[\[[^\[\]]+\]\](?:\s*,\s*\[\[[^\[\]]+\]\])*\s*$")
_KEY = re.compile(r"""^("[^"]*"|'[^']*'|[^\s:#\-"'][^:]*?|-[^\s:][^:]*?)\s*:(?:[ \t]+(.*))?\s*$""")
_INT = re.compile(r"^[-+]?\d+$")
_FLOAT = re.compile(r"^[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def _split_flow(s: str) -> list[str]:
    """Split the inside of ``[a, "b, c", [d]]`` at top-level commas."""
    out, buf, depth, quote = [], [], 0, ""
    for ch in s:
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            buf.append(ch)
        elif ch in "[{":
            depth += 1
            buf.append(ch)
        elif ch in "]}":
            depth -= 1
            buf.append(ch)
        elif ch == "," and depth == 0:
            out.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
    if "".join(buf).strip():
        out.append("".join(buf).strip())
    return out


def _scalar(s: str) -> Any:
    s = s.strip()
    if not s:
        return None
    if s[0] == '"':
        end = s.rfind('"')
        body = s[1:end] if end > 0 else s[1:]
        return (body.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t")
                .replace("\\\\", "\\"))
    if s[0] == "'":
        end = s.rfind("'")
        return (s[1:end] if end > 0 else s[1:]).replace("''", "'")
    if s[0] == "[":
        if _LINKS_ONLY.match(s):
            links = [m.group(0) for m in _WIKI.finditer(s)]
            return links if len(links) > 1 else links[0]
        inner = s[1:s.rfind("]")] if s.rfind("]") > 0 else s[1:]
        return [_scalar(x) for x in _split_flow(inner)]
    if s[0] == "{":
        return s
    s = re.split(r"\s+#", s, 1)[0].strip()     # trailing comment
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~"):
        return None
    if _INT.match(s):
        return int(s)
    if _FLOAT.match(s):
        return float(s)
    return s


def parse_front_matter(lines: list[str], first_line: int = 2
                       ) -> tuple[dict[str, Any], dict[str, list[tuple[int, str]]], list[tuple[int, str]]]:
    """Parse the lines between the ``---`` markers.

    Returns ``(data, raw, problems)``: values by key, the ``(line, text)`` pairs each key was
    written on (links are read from these) and the ``(line, text)`` of lines not understood.

    >>> parse_front_matter(["title: Hi", "tags: [a, 'b c']", "up:", "  - '[[X]]'"])[0]
    {'title': 'Hi', 'tags': ['a', 'b c'], 'up': ['[[X]]']}
    """
    data: dict[str, Any] = {}
    raw: dict[str, list[tuple[int, str]]] = {}
    problems: list[tuple[int, str]] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        ln = first_line + i
        s = line.strip()
        i += 1
        if not s or s.startswith("#"):
            continue
        m = _KEY.match(line) if line[0] not in " \t" else None
        if not m:
            problems.append((ln, s))
            continue
        key = m.group(1).strip()
        if key[:1] in "\"'":
            key = key[1:-1]
        rest = (m.group(2) or "").strip()
        block: list[tuple[int, str]] = []
        while i < n and (lines[i][:1] in (" ", "\t") or lines[i].startswith("-") and rest == ""
                         or not lines[i].strip()):
            block.append((first_line + i, lines[i]))
            i += 1
        while block and not block[-1][1].strip():
            block.pop()
        if rest[:1] in "[{" and not block and _unclosed(rest):
            problems.append((ln, s))            # `tags: [a, b` or `tags: {a`: YAML refuses it; so do we
            continue
        raw[key] = [(ln, rest)] + [(b, t.strip()) for b, t in block]
        data[key] = _block_value(rest, block, problems)
    return data, raw, problems


def _unclosed(s: str) -> bool:
    """A flow list or mapping whose brackets do not close on its line (quotes respected).

    >>> _unclosed("[a, b"), _unclosed("{a"), _unclosed("[a, ']']"), _unclosed("[[X]], [[Y]]")
    (True, True, False, False)
    """
    depth, quote = 0, ""
    for ch in s:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return depth > 0 or bool(quote)


def _block_value(rest: str, block: list[tuple[int, str]], problems: list) -> Any:
    texts = [t for _, t in block if t.strip()]
    if rest[:1] in ("|", ">"):
        lines = [t.strip() for _, t in block]
        return ("\n" if rest[0] == "|" else " ").join(lines).strip()
    if not texts:
        return _scalar(rest)
    if rest:                                   # plain scalar continued on the next lines
        return _scalar(" ".join([rest] + [t.strip() for t in texts]))
    first = texts[0].strip()
    if first.startswith("-"):
        items = []
        indent = len(texts[0]) - len(texts[0].lstrip())
        for ln, t in block:
            st = t.strip()
            if not st:
                continue
            if st.startswith("-") and len(t) - len(t.lstrip()) == indent:
                items.append(_scalar(st[1:]))
            elif len(t) - len(t.lstrip()) <= indent:
                problems.append((ln, st))
        return items
    nested: dict[str, Any] = {}                # one level of nested keys; deeper ones ignored
    indent = len(texts[0]) - len(texts[0].lstrip())
    for ln, t in block:
        if not t.strip() or len(t) - len(t.lstrip()) != indent:
            continue
        m = _KEY.match(t.strip())
        if m and m.group(2):
            nested[m.group(1).strip().strip("\"'")] = _scalar(m.group(2))
        elif m:
            continue                            # a deeper mapping or list: ignored
        else:
            problems.append((ln, t.strip()))
    return nested


# ---- links ---------------------------------------------------------------------------------
