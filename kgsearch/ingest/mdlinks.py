"""Links inside Markdown notes: wikilinks, Markdown links, URLs, tags and Dataview fields,
collected per note as typed edges (see :mod:`kgsearch.ingest.markdown` for the rules)."""
from __future__ import annotations

import posixpath
import re
from typing import Any
from urllib.parse import unquote

from ..types import EdgeRec
from .common import norm_type

__all__ = ["link_target", "display_text", "md_links", "Note", "scan_line", "ATTACHMENTS", "MAX_URLS", "WIKI"]


ATTACHMENTS = frozenset(
    "png jpg jpeg gif svg webp bmp tif tiff avif heic pdf mp3 wav ogg m4a flac webm mp4 mov mkv "
    "avi ogv 3gp canvas zip".split())
MAX_URLS = 50

WIKI = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
# the reference md_links matches (its finditer is quadratic on a long line of '[' or '[x](yyyy')
_MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(<[^>\n]+>|[^)\s]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?\s*\)")
_URL = re.compile(r"https?://[^\s<>)\]\"'`]+")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# a #tag starts a line or follows a space or CJK punctuation (text in Chinese or Japanese has no
# spaces: 今日は晴れ。#日記); not after a letter or digit (C#, a#b, page#anchor)
_TAG = re.compile(r"(?<![^\s\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff5b-\uff65])#([\w/\-]+)")
_FIELD_LINE = re.compile(r"^\s*(?:[-*+>][ \t]+)?([\w][\w \-/.]*?)[ \t]*::[ \t]*(.*)$")
_FIELD_INLINE = re.compile(r"[\[(]([\w][\w \-/.]*?)[ \t]*::[ \t]*((?:\[\[[^\]\n]*\]\]|[^\])\n])*)[\])]")
_REFDEF = re.compile(r"^ {0,3}\[(?!\^)[^\]\n]+\]:[ \t]*(<[^>\n]+>|\S+)")   # ([^1]: a footnote, not a link)

_LINK_STOP = re.compile(r"[\]\n]")             # where a link text ends
_HREF_STOP = re.compile(r"[)\s]")              # where a bare destination ends
_ANGLE_STOP = re.compile(r"[>\n]")             # where a <destination> ends
_TITLE_STOP = {'"': re.compile(r'["\n]'), "'": re.compile(r"['\n]"), "(": re.compile(r"[)\n]")}
_TITLE_END = {'"': '"', "'": "'", "(": ")"}
_SPACES = re.compile(r"\s*")


class _Stops:
    """``stop(pattern, at)``: the first match of ``pattern`` at or after ``at`` (or the end),
    remembering the last stretch searched per pattern: every position inside it has the same
    answer, so overlapping look-ups (many link starts inside one long destination) cost one scan."""

    def __init__(self, text: str):
        self.text = text
        self.last: dict[re.Pattern, tuple[int, int]] = {}

    def stop(self, pattern: re.Pattern, at: int) -> int:
        lo, hi = self.last.get(pattern, (1, 0))
        if lo <= at <= hi:
            return hi
        m = pattern.search(self.text, at)
        hi = m.start() if m else len(self.text)
        self.last[pattern] = (at, hi)
        return hi


def _tail_end(text: str, stops: _Stops, p: int, rest_memo: dict) -> int:
    """Where ``(?:\\s+(?:"..."|'...'|(...)))?\\s*\\)`` matched at ``p`` ends (-1: no match)."""
    if p in rest_memo:
        return rest_memo[p]
    n = len(text)
    w = _SPACES.match(text, p).end()
    end = -1
    if w > p and w < n and text[w] in _TITLE_STOP:
        e = stops.stop(_TITLE_STOP[text[w]], w + 1)
        if e < n and text[e] == _TITLE_END[text[w]]:
            v = _SPACES.match(text, e + 1).end()
            if v < n and text[v] == ")":
                end = v + 1
    if end < 0 and w < n and text[w] == ")":
        end = w + 1
    rest_memo[p] = end
    return end


def md_links(text: str) -> list[tuple[int, int, str, str, str]]:
    """Markdown links ``[text](dest "title")`` as ``(start, end, bang, text, dest)``: exactly
    what ``_MDLINK.finditer`` finds (tested against it), in time linear in the text. The regex
    retried every ``[`` of a run up to the same ``]``, and every ``](`` inside one long
    destination up to its end: a 100 KB line of ``[`` (or of ``[x](yyyy``) took 20-70 s."""
    out = []
    n = len(text)
    stops = _Stops(text)
    memo: dict[int, int] = {}
    pos = 0
    i = text.find("[", pos)
    while i != -1:
        j = stops.stop(_LINK_STOP, i + 1)
        if j >= n or text[j] != "]":
            i = text.find("[", j + 1) if j < n else -1
            continue
        end = -1
        dest = ""
        if j + 1 < n and text[j + 1] == "(":
            k = _SPACES.match(text, j + 2).end()
            if k < n and text[k] == "<":
                m = stops.stop(_ANGLE_STOP, k + 1)
                if m < n and text[m] == ">" and m > k + 1:
                    end = _tail_end(text, stops, m + 1, memo)
                    dest = text[k:m + 1]
            if end < 0:
                r = stops.stop(_HREF_STOP, k)
                if r > k:
                    end = _tail_end(text, stops, r, memo)
                    dest = text[k:r]
        if end < 0:
            i = text.find("[", j + 1)
            continue
        bang = "!" if i - 1 >= pos and text[i - 1] == "!" else ""
        out.append((i - len(bang), end, bang, text[i + 1:j], dest))
        pos = end
        i = text.find("[", pos)
    return out


def link_target(target: str) -> tuple[str, str, str]:
    """``'Note Name#Heading'`` -> (``'note name'``, ``'Heading'``, block) normalised for
    ``ns='note'`` resolution: lower case, no ``.md``/``.markdown``, no anchor."""
    target = target.strip()
    anchor = ""
    if "#" in target:
        target, anchor = target.split("#", 1)
    block = ""
    if anchor.startswith("^"):
        block, anchor = anchor[1:], ""
    t = " ".join(target.strip().split()).lower()
    for ext in (".md", ".markdown"):
        if t.endswith(ext):
            t = t[: -len(ext)]
    return t.lstrip("/"), anchor.strip(), block.strip()


def _spelled(target: str, t: str) -> dict[str, str]:
    """``{"display": target as written}`` when it differs from its key ``t`` only in case (a
    placeholder made for it is named so: ``[[Nonexistent Note]]``, not ``nonexistent note``)."""
    shown = " ".join(target.split("#", 1)[0].split()).lstrip("/")
    for ext in (".md", ".markdown"):
        if shown.lower().endswith(ext):
            shown = shown[: -len(ext)]
    return {"display": shown} if shown != t and shown.lower() == t else {}


def _is_attachment(t: str) -> bool:
    ext = t.rsplit(".", 1)[-1] if "." in t.rsplit("/", 1)[-1] else ""
    return ext in ATTACHMENTS


def display_text(text: str) -> str:
    """Link syntax reduced to what a reader sees: ``[[a|b]]`` -> b, ``[x](y)`` -> x,
    embeds dropped."""
    text = WIKI.sub(lambda m: "" if m.group(1) else m.group(2).split("|", 1)[-1]
                     if "|" in m.group(2) else m.group(2).split("#", 1)[0], text)
    if "](" not in text:
        return text
    parts, at = [], 0
    for start, end, _, label, _ in md_links(text):       # _MDLINK.sub(lambda m: m.group(2), text)
        parts += [text[at:start], label]
        at = end
    parts.append(text[at:])
    return "".join(parts)


class Note:
    """Collects the nodes and edges of one note."""

    def __init__(self, where: str, rel: str, key: str):
        self.where, self.rel, self.key = where, rel, key
        self.edges: list[EdgeRec] = []
        self.seen: set[tuple[str, str, str]] = set()
        self.urls: list[str] = []
        self.attachments: list[str] = []
        self.fields: dict[str, Any] = {}

    def edge(self, src: str, dst: str, etype: str, ns: str, line: int, props: dict | None = None):
        if not dst or (src, dst, etype) in self.seen:
            return
        self.seen.add((src, dst, etype))
        self.edges.append(EdgeRec(src, dst, etype, ns, line=line, props=props or {}))

    def url(self, u: str) -> None:
        if u not in self.urls and len(self.urls) < MAX_URLS:
            self.urls.append(u)

    def wikilink(self, src: str, inner: str, embed: bool, line: int, etype: str = "links_to"):
        inner = inner.replace("\\|", "|")
        target = inner.split("|", 1)[0]
        t, heading, block = link_target(target)
        if not t:
            return                              # [[#heading]]: a place in this note
        if _is_attachment(t):
            if target.strip() not in self.attachments:
                self.attachments.append(target.strip())
            return
        props: dict[str, Any] = _spelled(target, t)
        if heading:
            props["heading"] = heading
        if block:
            props["block"] = block
        if embed:
            props["embed"] = True
        self.edge(src, t, etype, "note", line, props)

    def mdlink(self, src: str, href: str, embed: bool, line: int) -> None:
        href = href.strip("<>").strip()
        if _SCHEME.match(href):
            if href.lower().startswith(("http://", "https://")):
                self.url(href)
            return
        path, _, anchor = unquote(href).partition("#")
        if not path:
            return
        if path.startswith("/"):
            full = posixpath.normpath(path.lstrip("/"))
        else:
            full = posixpath.normpath(posixpath.join(posixpath.dirname(self.rel), path))
        if full.startswith(".."):
            return                              # outside the indexed root
        t, _, _ = link_target(full)
        if _is_attachment(t):
            if full not in self.attachments:
                self.attachments.append(full)
            return
        props: dict[str, Any] = _spelled(full, t)
        if anchor:
            props["heading"] = anchor
        if embed:
            props["embed"] = True
        self.edge(src, t, "links_to", "note", line, props)


# ---- loader --------------------------------------------------------------------------------


def scan_line(note: Note, src: str, ln: int, scan: str) -> None:
    """Links, tags and inline fields on one body line (inline code already blanked)."""
    ref = _REFDEF.match(scan)
    if ref:                                     # [label]: target -- a link, not '#anchor' tags
        note.mdlink(src, ref.group(1), False, ln)
        return
    typed: list[tuple[int, int, str]] = []      # spans of inline-field values and their key
    m = _FIELD_LINE.match(scan)
    if m and "[[" not in m.group(1):
        typed.append((m.start(2), m.end(2), m.group(1)))
    for f in _FIELD_INLINE.finditer(scan):
        typed.append((f.start(2), f.end(2), f.group(1)))
    for start, end, k in typed:
        value = scan[start:end].strip()
        if not WIKI.search(value):
            note.fields.setdefault(k.strip(), display_text(value))
    for w in WIKI.finditer(scan):
        etype = next((norm_type(k, "links_to") for s, e, k in typed if s <= w.start() < e),
                     "links_to")
        note.wikilink(src, w.group(2), bool(w.group(1)), ln, etype)
    for _, _, bang, _, dest in md_links(scan):
        note.mdlink(src, dest, bool(bang), ln)
    for u in _URL.finditer(scan):
        note.url(u.group().rstrip(".,;:"))
    for t in _TAG.finditer(scan):
        tag = t.group(1).strip("/-")
        if tag and not re.fullmatch(r"[\d/\-]+", tag):
            note.edge(src, tag.lower(), "tagged", "tag", ln, {"display": tag})
