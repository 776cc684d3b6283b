"""Plain text (``.txt``, ``.rst``, ``.org``, ...): a document node, paragraph chunks, entities.

Nodes:

* ``document``: key ``txt:<rel>``, name = the title (an underlined reST title, after any
  field list or explicit markup at the top of a ``.rst`` file, a ``#``/``=``/
  ``*`` heading, org ``#+TITLE:``, LaTeX ``\\title{}``, else the first line when it is short,
  80 columns with a Chinese/Japanese/Korean character two wide (a 70-character Japanese sentence
  is no title), else the file name). A file that fits in ``opts.max_chunk_chars`` is this one node with the
  whole text. A longer one keeps only its beginning (up to :data:`DOC_TEXT` characters, cut at
  a paragraph or sentence end) so that it matches title-level queries without competing with
  its chunks on every word, and the body goes to chunks. It answers to ``('note', rel)``
  (lower case) so a Markdown link ``[x](notes.txt)`` reaches it.
* ``chunk``: key ``txt:<rel>#<n>`` (n from 1), paragraphs packed up to ``max_chunk_chars``;
  a longer paragraph is split at sentence ends (a longer sentence at a space). Name = the
  nearest heading above, else the document name. ``parent`` = the document, with a
  ``contains`` edge.

Entities (no model, :mod:`kgsearch.ingest.entities`): :func:`extract_entities` finds capitalised multi-word phrases (a leading
The/A/An dropped, sentence-initial common words dropped), code identifiers (CamelCase,
snake_case, dotted names, ``name()``), capitalised single words and acronyms seen at least twice
away from a sentence start, and salient terms (a non-stop word of 4+ letters repeated 3+ times,
at most a fifth of the set); at most :data:`MAX_ENTITIES` per file, most salient first, taken
from the first :data:`MAX_SCAN` characters.
Each chunk (or the document when it has no chunks) gets one edge per entity it mentions::

    chunk -[mentions]-> entity     ns='ent', dst = normalised name, props['display']

The direction follows the loader contract (an edge starts at a node of this file; the indexer
creates the shared ``ent:`` node from the edge target); "entity mentioned_in chunk" is the same
edge read backwards. ``markdown.py`` reuses :func:`extract_entities` and :func:`mentions`.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..cjk import cjk_runs
from ..types import EdgeRec, LoadOptions, LoadResult, NodeRec
from .common import read_text
from .entities import MAX_ENTITIES, MAX_SCAN, STOP_WORDS, extract_entities, mentions

NAME = "text"
EXTENSIONS = (".txt", ".text", ".rst", ".org", ".log", ".adoc", ".tex")
DOC_TEXT = 600

__all__ = ["NAME", "EXTENSIONS", "load", "extract_entities", "mentions", "paragraphs", "chunks",
           "STOP_WORDS", "MAX_ENTITIES", "MAX_SCAN"]

# ---- paragraphs and chunks -----------------------------------------------------------------


def paragraphs(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of each blank-line separated paragraph."""
    out = []
    start, buf = 0, []
    for i, line in enumerate(text.split("\n"), 1):
        if line.strip():
            if not buf:
                start = i
            buf.append(line.rstrip())
        elif buf:
            out.append((start, i - 1, "\n".join(buf)))
            buf = []
    if buf:
        out.append((start, start + len(buf) - 1, "\n".join(buf)))
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def _split_long(text: str, cap: int) -> list[tuple[int, str]]:
    """(offset, piece) pieces of at most ``cap`` characters, cut at sentence ends, else spaces."""
    bounds = [0] + [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    pieces: list[tuple[int, str]] = []
    start = 0
    for i in range(1, len(bounds)):
        end = bounds[i]
        if end - start <= cap:
            continue
        cut = bounds[i - 1]
        if cut > start:                      # close the piece at the previous sentence end
            pieces.append((start, text[start:cut].strip()))
            start = cut
        while end - start > cap:             # one sentence longer than the cap
            sp = text.rfind("\n", start + 1, start + cap)     # a line end, else a space
            if sp < start + cap // 2:
                sp = text.rfind(" ", start + 1, start + cap)
            cut = sp if sp > start else start + cap
            pieces.append((start, text[start:cut].strip()))
            start = cut
            while start < len(text) and text[start] in " \t\n":
                start += 1
    if start < len(text) and text[start:].strip():
        pieces.append((start, text[start:].strip()))
    return pieces


def chunks(paras: list[tuple[int, int, str]], cap: int,
           heads: dict[int, str] | None = None) -> list[tuple[int, int, str]]:
    """Pack paragraphs into chunks of at most ``cap`` characters (see :func:`_split_long`).

    A heading paragraph (a line of ``heads`` within its first two lines, at most three lines
    long) starts a new chunk and stays with the paragraph after it."""
    heads = heads or {}
    out: list[tuple[int, int, str]] = []
    acc: list[tuple[int, int, str]] = []
    size = 0
    only_heads = False

    def flush():
        nonlocal acc, size
        if acc:
            out.append((acc[0][0], acc[-1][1], "\n\n".join(p[2] for p in acc)))
        acc, size = [], 0

    for p in paras:
        is_head = p[1] - p[0] < 3 and (p[0] in heads or p[0] + 1 in heads)
        if is_head and acc and not only_heads:
            flush()
        fits = size + 2 + len(p[2]) <= cap if acc else len(p[2]) <= cap
        if not fits and only_heads:            # the heading goes with the start of the text
            p = (acc[0][0], p[1], "\n\n".join([q[2] for q in acc] + [p[2]]))
            acc, size = [], 0
        elif not fits:
            flush()
        if len(p[2]) > cap:
            line, last_off = p[0], 0
            for off, piece in _split_long(p[2], cap):
                line += p[2].count("\n", last_off, off)      # counted piecewise: linear
                last_off = off
                out.append((line, line + piece.count("\n"), piece))
            only_heads = False
            continue
        acc.append(p)
        size += len(p[2]) + (2 if size else 0)
        only_heads = is_head and (only_heads or len(acc) == 1)
    flush()
    return out


# ---- titles and headings -------------------------------------------------------------------

_UNDERLINE = re.compile(r"^([=\-~^\"'`*+#:.])\1{2,}\s*$")
_ATX = re.compile(r"^(?:#{1,6}|={1,6})\s+(\S.*?)\s*#*\s*$")
_ORG = re.compile(r"^\*{1,6}\s+(\S.*?)\s*$")
_ORG_TITLE = re.compile(r"^#\+title:\s*(\S.*?)\s*$", re.I | re.M)
_TEX_TITLE = re.compile(r"\\title\{([^}\n]+)\}")


def headings(lines: list[str], ext: str) -> dict[int, str]:
    """line number -> heading text (reST underlines, ``#``/``=`` headings, org ``*``)."""
    out: dict[int, str] = {}
    for i, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        if (i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1].strip())
                and not _UNDERLINE.match(s) and len(lines[i + 1].strip()) >= len(s) - 1):
            out[i + 1] = s
            continue
        m = _ATX.match(line) if ext != ".org" else _ORG.match(line)
        if m and not line.startswith("#!"):
            out[i + 1] = m.group(1)
    return out


_REST = (".rst", ".rest")
_REST_MARKUP = re.compile(r"^(?:\.\.(?:\s|$)|:[^:\s][^:]*:(?:\s|$))")


def _after_rest_markup(lines: list[str], first: int) -> int | None:
    """The first line number from ``first`` on that is not reST markup before the title: a
    field list (``:orphan:``, ``:Author: me``), a directive, comment or target (``.. meta::``,
    ``.. _label:``) and their indented bodies; ``None`` when nothing else follows."""
    i = first - 1
    while i < len(lines):
        s = lines[i]
        if not s.strip() or s[:1] in " \t":
            i += 1
        elif _REST_MARKUP.match(s):
            i += 1
        else:
            return i + 1
    return None


def _title(text: str, lines: list[str], heads: dict[int, str], ext: str, fallback: str) -> str:
    m = _ORG_TITLE.search(text[:4000]) or (_TEX_TITLE.search(text[:8000]) if ext == ".tex" else None)
    if m:
        return m.group(1).strip()
    first = next((i for i, ln in enumerate(lines, 1) if ln.strip()), None)
    if first is not None and ext in _REST:
        first = _after_rest_markup(lines, first)
    if first is None:
        return fallback
    for ln in (first, first + 1):           # a title right at the top (reST may overline it)
        if ln in heads:
            return heads[ln]
    line = lines[first - 1].strip()
    if ext != ".log" and len(line) + len("".join(cjk_runs(line))) <= 80:     # a CJK character is two columns wide
        return line
    return fallback


def _beginning(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n\n", 0, limit)
    if cut < limit // 3:
        ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, limit)]
        cut = ends[-1] if ends and ends[-1] > limit // 3 else text.rfind(" ", 0, limit)
    return text[: cut if cut > 0 else limit].rstrip()


def load(path: Path, rel: str, opts: LoadOptions) -> LoadResult:
    text, warnings = read_text(path)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    res = LoadResult(warnings=warnings)
    ext = Path(rel).suffix.lower()
    lines = text.split("\n")
    heads = headings(lines, ext)
    name = _title(text, lines, heads, ext, Path(rel).name)
    key = f"txt:{rel}"
    body = text.strip()
    nlines = len(lines) - (1 if text.endswith("\n") else 0)
    cap = max(int(opts.max_chunk_chars), 200)
    parts = chunks(paragraphs(text), cap, heads) if len(body) > cap else []
    doc = NodeRec(key=key, kind="document", name=name,
                  text=_beginning(body, min(DOC_TEXT, cap)) if parts else body,
                  qualname=rel, line_start=1, line_end=max(nlines, 1),
                  aliases=[("note", rel.lower())])
    res.nodes.append(doc)
    ents = extract_entities(text)
    if not parts:
        _mention_edges(res, key, body, len(text) - len(text.lstrip()), text, ents)
        return res
    head_lines = sorted(heads)
    for n, (first, last, chunk) in enumerate(parts, 1):
        ckey = f"{key}#{n}"
        above = [ln for ln in head_lines if ln <= first]
        res.nodes.append(NodeRec(key=ckey, kind="chunk", name=heads[above[-1]] if above else name,
                                 text=chunk, qualname=f"{rel}#{n}", line_start=first,
                                 line_end=last, parent=key))
        res.edges.append(EdgeRec(key, ckey, "contains", "key", line=first))
        for norm, disp, off in mentions(chunk, ents):
            res.edges.append(EdgeRec(ckey, norm, "mentions", "ent", line=first + chunk.count("\n", 0, off),
                                     props={"display": disp}))
    return res


def _mention_edges(res, key, body, body_off, text, ents) -> None:
    base = text.count("\n", 0, body_off) + 1
    for norm, disp, off in mentions(body, ents):
        res.edges.append(EdgeRec(key, norm, "mentions", "ent", line=base + body.count("\n", 0, off),
                                 props={"display": disp}))
