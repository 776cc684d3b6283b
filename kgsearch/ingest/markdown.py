"""Markdown notes, Obsidian style: notes, heading sections, links, tags, front matter, fields.

Nodes:

* ``note``: key ``md:<rel without extension>``, name = front matter ``title``, else the file
  name. It answers to ``('note', x)`` for x = file name, relative path (both without
  extension), title and every front-matter alias, all lower case.
* ``section`` (only when the body is longer than ``opts.max_chunk_chars`` and has headings): one
  per ATX heading (``#`` .. ``######``) that has text under it, key
  ``md:<rel>#<slug>`` (GitHub-style slug, ``-1``, ``-2``... when repeated), name = the heading,
  qualname = ``Title > Parent heading > Heading``, text = the lines under the heading up to the
  next heading, ``parent`` = the note, with a ``contains`` edge note -> section.

  The note node then keeps: front-matter values, the preamble (text before the first heading)
  and the outline (all heading texts). It matches what the note is about without repeating
  every word of its sections, so BM25 ranks the section that holds the words, and the note
  still wins title/topic queries. A short note (or one without headings) is one node with
  the front-matter values and the whole body.

Edges (``src`` = the section the link is in, else the note; links are not repeated on the
note, which reaches them through ``contains``, so link counts stay honest for graph ranking):

* ``[[target]]``, ``[[target|alias]]``, ``[[target#heading]]``, ``[[target#^block]]``,
  ``![[embed]]``, and relative Markdown links ``[x](other.md)`` / ``[x](sub/other)`` /
  ``[x](/from/root.md)`` -> ``links_to`` with ``ns='note'`` and dst = the target lower-cased,
  without ``.md`` and without ``#...`` (``props``: ``heading``, ``block``, ``embed``).
  Markdown link paths are resolved against the note's folder. Links to attachments (images,
  PDF, audio, video, canvas) and ``http(s)`` links make no edge; they are kept in
  ``props['attachments']`` / ``props['urls']``. A link to a missing note is just an edge: the
  indexer creates the placeholder. ``[[#heading]]`` inside the same note makes no edge.
* ``#tag`` / ``#nested/tag`` in text (not in code, not a heading marker, not a URL anchor),
  and front-matter ``tags`` -> ``tagged`` with ``ns='tag'``, dst = tag lower-cased
  (``props['display']`` keeps the spelling).
* Front-matter keys whose value holds wikilinks (``implements: "[[X]]"``, lists of links) and
  Dataview inline fields ``key:: [[X]]`` (also ``[key:: [[X]]]``) -> an edge typed ``key``
  (lower case, spaces -> ``_``), ``ns='note'``. Inline fields without links go to
  ``props['fields']``; the parsed front matter is ``props['frontmatter']``.
* Entities as in :mod:`plaintext` (``mentions``, ``ns='ent'``), from the section (or note) that
  mentions them, so notes and text files meet at shared entity nodes.

Comments (Obsidian's ``%%...%%``, HTML's ``<!--...-->``) give no link, tag, heading, field or
entity; their text stays in the note's text. ``[^1]: ...`` is a footnote, not a link definition.

Not handled: setext headings (underlined), indented code blocks (only fenced code is skipped),
reference-style links ``[x][ref]``, HTML other than comments.

The front matter is read by a small YAML subset parser (:mod:`kgsearch.ingest.frontmatter`):
``key: value``, quoted strings, ``[a, b]``, ``- a`` block lists, ``|``/``>`` blocks and one
level of nested keys; anything else is skipped with one warning, never an exception.
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from ..lines import quoted
from ..types import EdgeRec, LoadOptions, LoadResult, NodeRec
from .common import is_texty, norm_type, read_text, slugify
from .frontmatter import parse_front_matter
from .mdlinks import WIKI as _WIKI, Note, display_text, link_target, scan_line
from .plaintext import extract_entities, mentions

NAME = "markdown"
EXTENSIONS = (".md", ".markdown")

__all__ = ["NAME", "EXTENSIONS", "load", "parse_front_matter", "link_target"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
_COMMENT_OPEN = re.compile(r"%%|<!--")
_COMMENT_CLOSE = {"%%": "%%", "<!--": "-->"}
_FM_SPECIAL = {"title", "aliases", "alias", "tags", "tag", "cssclass", "cssclasses"}
_TAG_WORD = re.compile(r"[\w/\-.]+(?: [\w/\-.]+)*")    # a front-matter tag: words, `/`, `-`, `.` (a list item may hold spaces)


def load(path: Path, rel: str, opts: LoadOptions) -> LoadResult:
    where = str(path)
    text, warnings = read_text(path)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    res = LoadResult(warnings=warnings)
    rel = rel.replace("\\", "/")
    stem_rel = rel
    for ext in EXTENSIONS:
        if stem_rel.lower().endswith(ext):
            stem_rel = stem_rel[: -len(ext)]
    key = f"md:{stem_rel}"
    note = Note(where, rel, key)
    lines = text.split("\n")

    fm, fm_raw, body_start = _front_matter(lines, where, res)
    title = fm.get("title")
    title = str(title).strip() if isinstance(title, (str, int, float)) and str(title).strip() \
        else posixpath.basename(stem_rel)
    aliases = _as_list(fm.get("aliases", fm.get("alias")))
    fm_text = _front_matter_text(fm, note, fm_raw)

    body = _body_lines(lines, body_start)
    body_text = "\n".join(r for _, r, _ in body).strip()
    heads = [(ln, len(h.group(1)), _heading_name(raw))
             for ln, raw, scan in body if scan is not None for h in [_HEADING.match(scan)] if h]
    head_lines = {ln for ln, _, _ in heads}
    sectioned = bool(heads) and len(body_text) > opts.max_chunk_chars

    sections = _plan_sections(heads, key, title) if sectioned else {}
    nodes: list[NodeRec] = []
    src = key
    sec_lines: dict[str, list[str]] = {key: []}       # section key -> body lines
    sec_scan: dict[str, list[str]] = {key: []}        # text for entity extraction
    spans: dict[str, list[int]] = {}
    for ln, raw, scan in body:
        if ln in sections:
            src = sections[ln][0]
            sec_lines[src], sec_scan[src], spans[src] = [], [], [ln, ln]
            scan_line(note, src, ln, scan)
            sec_scan[src].append("")        # headings are titles, not entity mentions
            continue
        if src in spans and raw.strip():
            spans[src][1] = ln
        sec_lines[src].append(raw)
        if scan is not None:
            scan_line(note, src, ln, scan)
        sec_scan[src].append("" if scan is None or ln in head_lines else display_text(scan))

    # the note
    props: dict[str, Any] = {}
    if fm:
        props["frontmatter"] = fm
    if sectioned:
        preamble = "\n".join(sec_lines[key]).strip()
        outline = "\n".join(name for _, _, name in heads)
        note_text = "\n\n".join(x for x in (fm_text, preamble, outline) if x)
    else:
        note_text = "\n\n".join(x for x in (fm_text, body_text) if x)
    nlines = len(lines) - (1 if text.endswith("\n") else 0)
    alias_names = [posixpath.basename(stem_rel), stem_rel, title] + [str(a) for a in aliases]
    note_aliases: list[tuple[str, str]] = []
    for a in alias_names:
        a = " ".join(a.split()).lower()
        if a and ("note", a) not in note_aliases:
            note_aliases.append(("note", a))
    nodes.append(NodeRec(key=key, kind="note", name=title, text=note_text, qualname=stem_rel,
                         line_start=1, line_end=max(nlines, 1), props=props, aliases=note_aliases))
    contains: list[EdgeRec] = []
    for ln, (skey, name, qual) in sections.items():
        stext = "\n".join(sec_lines[skey]).strip()
        if not stext:
            continue                            # heading directly followed by a sub-heading
        nodes.append(NodeRec(key=skey, kind="section", name=name, text=stext, qualname=qual,
                             line_start=ln, line_end=spans[skey][1], parent=key))
        contains.append(EdgeRec(key, skey, "contains", "key", line=ln))
    # links from an empty section belong to the note
    kept = {n.key for n in nodes}
    edges = []
    for e in note.edges:
        if e.src not in kept:
            if (key, e.dst, e.type) in note.seen:
                continue
            note.seen.add((key, e.dst, e.type))
            e.src = key
        edges.append(e)

    # entities: front-matter values count for the note (no line); body text for its part
    # one value, one phrase: a blank line (which no phrase spans) after each, the last included
    fm_ents = fm_text.replace("\n", "\n\n") + "\n\n" if fm_text else ""
    parts = [(key, body_start + 1, fm_ents, sec_scan[key])]
    parts += [(k, spans[k][0], "", sec_scan[k]) for k in sec_scan if k != key]
    edges += _entity_edges(note, parts, kept)

    if note.urls:
        props["urls"] = note.urls
    if note.attachments:
        props["attachments"] = note.attachments
    if note.fields:
        props["fields"] = note.fields
    res.nodes = nodes
    res.edges = contains + edges
    return res


def _front_matter(lines: list[str], where: str, res: LoadResult
                  ) -> tuple[dict[str, Any], dict[str, list[tuple[int, str]]], int]:
    """(values, raw lines per key, index of the first body line); one warning for odd YAML."""
    if not lines or lines[0].strip() != "---":
        return {}, {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, {}, 0                        # a thematic break, not front matter
    fm, fm_raw, problems = parse_front_matter(lines[1:end], 2)
    if problems:
        ln, s = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        res.warnings.append(
            f"{where}:{ln}: front matter line not understood, skipped: {quoted(s[:60])}{more}; "
            "kgsearch reads 'key: value', [a, b] lists and '- a' lists")
    return fm, fm_raw, end + 1


def _heading_name(raw: str) -> str:
    """A heading's text as a reader sees it: inline code keeps its words without the backticks
    (``## `send()` `` is "send()"; blanking code spans, as the scan for links does, left 28 of
    517 sections of a real docs tree named ""), link syntax reduced to its text.

    >>> _heading_name("## The `retry` option ##"), _heading_name("### `Client.connect(host)`")
    ('The retry option', 'Client.connect(host)')
    """
    m = _HEADING.match(raw)
    text = m.group(2) if m else raw
    text = _INLINE_CODE.sub(lambda c: c.group()[len(c.group(1)):-len(c.group(1))].strip(), text)
    return " ".join(display_text(text).split())


def _body_lines(lines: list[str], start: int) -> list[tuple[int, str, str | None]]:
    """(line number, raw, text with inline code and comments blanked; None inside a fenced code
    block). Comments, Obsidian's ``%%...%%`` and HTML's ``<!--...-->``, on one line or over several,
    are hidden in a rendered note: their text stays in the note's text (searchable, as Obsidian's
    search finds it) but gives no link, tag, heading, field or entity."""
    body: list[tuple[int, str, str | None]] = []
    fence = ""
    closer = ""                                 # inside a comment: the marker that ends it
    for i in range(start, len(lines)):
        raw = lines[i]
        m = _FENCE.match(raw) if not closer else None
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not raw.strip().strip(fence[0]):
                fence = ""
            body.append((i + 1, raw, None))
        elif m:
            fence = m.group(1)
            body.append((i + 1, raw, None))
        else:
            scan, closer = _blank_comments(_INLINE_CODE.sub(lambda c: " " * len(c.group()), raw), closer)
            body.append((i + 1, raw, scan))
    return body


def _blank_comments(scan: str, closer: str) -> tuple[str, str]:
    """``scan`` with its comments' characters made spaces (the same length), and the marker that
    closes a comment still open at its end ('' when none); ``closer``: the one open before it."""
    out, at = [], 0
    while True:
        if closer:
            end = scan.find(closer, at)
            if end < 0:
                out.append(" " * (len(scan) - at))
                return "".join(out), closer
            out.append(" " * (end + len(closer) - at))
            at, closer = end + len(closer), ""
        m = _COMMENT_OPEN.search(scan, at)
        if m is None:
            out.append(scan[at:])
            return "".join(out), ""
        out.append(scan[at:m.start()])
        out.append(" " * len(m.group()))
        at, closer = m.end(), _COMMENT_CLOSE[m.group()]


def _plan_sections(heads: list[tuple[int, int, str]], key: str, title: str
                   ) -> dict[int, tuple[str, str, str]]:
    """heading line -> (section key, name, breadcrumb qualname); slugs made unique."""
    sections: dict[int, tuple[str, str, str]] = {}
    used: set[str] = set()
    trail: list[tuple[int, str]] = []
    for ln, level, name in heads:
        base = slug = slugify(name)
        n = 0
        while slug in used:
            n += 1
            slug = f"{base}-{n}"
        used.add(slug)
        trail = [t for t in trail if t[0] < level] + [(level, name)]
        sections[ln] = (f"{key}#{slug}", name, " > ".join([title] + [t[1] for t in trail]))
    return sections


def _entity_edges(note: Note, parts: list[tuple[str, int, str, list[str]]],
                  kept: set[str]) -> list[EdgeRec]:
    """``mentions`` edges; ``parts`` = (key, first line, unlined head text, lines)."""
    ents = extract_entities("\n".join(head + "\n".join(scan) for _, _, head, scan in parts))
    out = []
    for skey, base, head, scan in parts:
        owner = skey if skey in kept else note.key
        part = head + "\n".join(scan)
        for norm, disp, off in mentions(part, ents):
            if (owner, norm, "mentions") in note.seen:
                continue
            note.seen.add((owner, norm, "mentions"))
            line = base + part.count("\n", len(head), off) if off >= len(head) else None
            out.append(EdgeRec(owner, norm, "mentions", "ent", line=line, props={"display": disp}))
    return out


def _as_list(v: Any) -> list:
    if v is None:
        return []
    if isinstance(v, list):
        return [x for x in v if x is not None and str(x).strip()]
    return [x.strip() for x in str(v).split(",") if x.strip()]


def _front_matter_text(fm: dict, note: Note, raw: dict) -> str:
    """Searchable front-matter values; also emits the tag and typed-relation edges."""
    key = note.key
    parts: list[str] = []
    for k, v in fm.items():
        lk = k.lower()
        lines = raw.get(k, [])
        if lk in ("tags", "tag"):
            tags = v if isinstance(v, list) else re.split(r"[,\s]+", str(v or ""))
            for t in tags:
                t = str(t).strip().lstrip("#")
                if _TAG_WORD.fullmatch(t):          # (not the pieces of a mapping, `{a: 1}`: no tag `{a:`)
                    line = next((ln for ln, s in lines if t in s), lines[0][0] if lines else 1)
                    note.edge(key, t.lower(), "tagged", "tag", line, {"display": t})
                    parts.append(t)
            continue
        if lk not in _FM_SPECIAL:
            for ln, s in lines:
                for m in _WIKI.finditer(s):
                    note.wikilink(key, m.group(2), bool(m.group(1)), ln, norm_type(k, "links_to"))
        if lk == "title":
            continue
        vals = v if isinstance(v, list) else [v]
        words = [display_text(str(x)) for x in vals if is_texty(x) and not str(x).startswith("{")]
        if words:
            parts.append(", ".join(words))
    return "\n".join(parts)
