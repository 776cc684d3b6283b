"""Plain text (``.txt``, ``.rst``, ``.org``, ...): a document node, paragraph chunks, entities.

Nodes:

* ``document``: key ``txt:<rel>``, name = the title (an underlined reST title, a ``#``/``=``/
  ``*`` heading, org ``#+TITLE:``, LaTeX ``\\title{}``, else the first line when it is short,
  else the file name). A file that fits in ``opts.max_chunk_chars`` is this one node with the
  whole text. A longer one keeps only its beginning (up to :data:`DOC_TEXT` characters, cut at
  a paragraph or sentence end) so that it matches title-level queries without competing with
  its chunks on every word, and the body goes to chunks. It answers to ``('note', rel)``
  (lower case) so a Markdown link ``[x](notes.txt)`` reaches it.
* ``chunk``: key ``txt:<rel>#<n>`` (n from 1), paragraphs packed up to ``max_chunk_chars``;
  a longer paragraph is split at sentence ends (a longer sentence at a space). Name = the
  nearest heading above, else the document name. ``parent`` = the document, with a
  ``contains`` edge.

Entities (no model): :func:`extract_entities` finds capitalised multi-word phrases (a leading
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

import functools
import re
from collections import Counter
from pathlib import Path

from ..types import EdgeRec, LoadOptions, LoadResult, NodeRec
from .common import read_text

NAME = "text"
EXTENSIONS = (".txt", ".text", ".rst", ".org", ".log", ".adoc", ".tex")
MAX_ENTITIES = 50
MAX_SCAN = 1_000_000     # characters read for entity extraction (mentions are found everywhere)
DOC_TEXT = 600

__all__ = ["NAME", "EXTENSIONS", "load", "extract_entities", "mentions", "paragraphs", "chunks",
           "STOP_WORDS"]

STOP_WORDS = frozenset("""
a about above after again against all also although always am among an and another any are
as at be because been before being below between both but by can cannot could did do does
doing done down during each either else even ever every few for from further get gets got had
has have having he her here hers herself him himself his how however i if in into is it its
itself just last least less let like made make many may me might more most much must my myself
neither never next no nor not now of off often on once one only or other others otherwise
our ours ourselves out over own per perhaps please rather same see seen several shall she
should since so some still such than that the their theirs them themselves then there therefore
these they this those though through thus to too under until up upon us use used using very
via was we well were what whatever when whenever where whether which while who whom whose why
will with within without would yes yet you your yours yourself yourselves
first second third today yesterday tomorrow finally meanwhile instead note notes example
section chapter figure table see also etc
able add added adds ago ahead allow allows almost already anything anyway around ask away
back bad based become becomes best better big bit bring came come comes could different does
doesn don done easy enough entire exactly fact far fast find fine follow following found full
give given gives goes going gone good great happen hard help high hold important include
includes including keep keeps kind know known large later leave left likely little long look
looks lot lots low main makes making mean means mind move need needs nice nothing old open
others part past possible put quite read ready real really right same say says seem seems
short show shows simple small something sometimes soon sort still sure take takes tell thing
things think tried tries try trying want wants way ways went whole wide work works worked
working write wrote""".split())

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


def _title(text: str, lines: list[str], heads: dict[int, str], ext: str, fallback: str) -> str:
    m = _ORG_TITLE.search(text[:4000]) or (_TEX_TITLE.search(text[:8000]) if ext == ".tex" else None)
    if m:
        return m.group(1).strip()
    first = next((i for i, ln in enumerate(lines, 1) if ln.strip()), None)
    if first is None:
        return fallback
    for ln in (first, first + 1):           # a title right at the top (reST may overline it)
        if ln in heads:
            return heads[ln]
    line = lines[first - 1].strip()
    if ext != ".log" and len(line) <= 80:
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


# ---- entities ------------------------------------------------------------------------------

# Every pattern here is anchored at a word start (\b or a look-behind) so that a long run of
# non-space characters cannot make a search quadratic.
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|www\.|mailto:)\S+|(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.-]+",
                  re.I)
_CAP = r"[A-Z][\w'’\-]*[\w]|[A-Z]"
_JOIN = r"(?:[ \t]+|[ \t]*\n[ \t]*)"
_PHRASE = re.compile(
    rf"\b(?:{_CAP})(?:{_JOIN}(?:(?:of|the|for|de|del|van|von|der|la|le|du|da){_JOIN}){{0,2}}(?:{_CAP}))+\b")
_SINGLE = re.compile(r"\b[A-Z][\w'’\-]*\w\b")
_CAMEL = re.compile(r"\b(?:[A-Z]+[a-z0-9]+[A-Z]\w*|[a-z]+[0-9]*[A-Z]\w*)\b")
_SNAKE = re.compile(r"\b_?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_DOTTED = re.compile(r"(?<![\w./])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w(]*\.\w)")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\(\)")
_WORD = re.compile(r"\b[^\W\d_][\w'’\-]*\w\b")
_POSSESSIVE = ("'s", "’s")
_CONNECT = {"of", "the", "for", "de", "del", "van", "von", "der", "la", "le", "du", "da"}
_LOWER_WORD = re.compile(r"(?<=\s)[a-z][a-z'’\-]+(?=[\s,.;:!?)])")


def _singular(w: str) -> str:
    """Crude plural folding for salient terms.

    >>> [_singular(w) for w in ("queries", "vectors", "processes", "status", "class")]
    ['query', 'vector', 'process', 'status', 'class']
    """
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith(("sses", "shes", "ches", "xes", "zes")):
        return w[:-2]
    if len(w) > 4 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _norm(s: str) -> str:
    return _unpossess(" ".join(s.split()).lower()).strip(".,;:-'’")


def _unpossess(s: str) -> str:
    return s[:-2] if s.endswith(_POSSESSIVE) else s


def _sentence_initial(text: str, pos: int) -> bool:
    i = pos - 1
    while i >= 0 and text[i] in " \t\"'“‘([*->•|#":
        i -= 1
    return i < 0 or text[i] in ".!?:\n"


def extract_entities(text: str, limit: int = MAX_ENTITIES) -> list[tuple[str, str]]:
    """(normalised name, display form) of the salient entities of ``text``, most salient first.

    >>> extract_entities("We index the Termux App with PageRank. PageRank ranks notes.")
    [('pagerank', 'PageRank'), ('termux app', 'Termux App')]
    """
    text = text[:MAX_SCAN]
    if "://" in text or "@" in text or "www." in text or "mailto:" in text:
        text = _URL.sub(" ", text)
    score: Counter[str] = Counter()
    display: dict[str, str] = {}
    first: dict[str, int] = {}

    def add(norm: str, disp: str, pos: int, weight: float) -> None:
        if len(norm) < 2 or norm in STOP_WORDS:
            return
        score[norm] += weight
        display.setdefault(norm, disp)
        first.setdefault(norm, pos)

    lower = set(_LOWER_WORD.findall(text))   # words also written in lower case: common words
    in_phrase: set[int] = set()           # start offsets of words already inside a phrase
    shouted: Counter[str] = Counter()     # ALL-CAPS phrases: kept only when repeated
    for m in _PHRASE.finditer(text):
        runs, cur = [], []
        for w in re.finditer(r"\S+", m.group()):
            lw = w.group().lower()
            if lw in STOP_WORDS and not (cur and lw in _CONNECT):
                if cur:
                    runs.append(cur)
                cur = []
                continue
            cur.append((w.start() + m.start(), w.group()))
        runs.append(cur)
        for words in runs:
            # a sentence-initial first word that is also used in lower case ("Install Termux",
            # "Tried RRF") or reads as a verb form is not part of the name
            while words and _sentence_initial(text, words[0][0]) and (
                    words[0][1].lower() in lower or words[0][1].endswith(("ing", "ed"))):
                words.pop(0)
                while words and words[0][1].lower() in _CONNECT:
                    words.pop(0)
            while words and words[-1][1].lower() in _CONNECT:
                words.pop()
            if not 2 <= len(words) <= 6:
                continue
            disp = _unpossess(" ".join(w for _, w in words))
            norm = _norm(disp)
            add(norm, disp, words[0][0], 3.0)
            if disp.isupper():
                shouted[norm] += 1
            in_phrase.update(p for p, _ in words)
    for norm, n in shouted.items():
        if n < 2:
            del score[norm]
    singles: Counter[str] = Counter()
    for m in _SINGLE.finditer(text):
        if m.start() in in_phrase or _sentence_initial(text, m.start()):
            continue
        w = _unpossess(m.group())
        if w.isupper() and len(w) > 5:
            continue                       # shouting (licence text), not an acronym
        singles[_norm(w)] += 1
        display.setdefault(_norm(w), w)
        first.setdefault(_norm(w), m.start())
    for norm, n in singles.items():
        if n >= 2 and norm not in STOP_WORDS:
            score[norm] += 1.5 * n
    covered = bytearray(len(text))         # inside a dotted name: not counted again as a part
    for rx in (_DOTTED, _CAMEL, _SNAKE):
        for m in rx.finditer(text):
            w = m.group()
            if rx is _DOTTED:
                if max(map(len, w.split("."))) <= 2:
                    continue               # e.g., i.e
            elif covered[m.start()] or m.start() in in_phrase:
                continue
            covered[m.start():m.end()] = b"\x01" * (m.end() - m.start())
            add(_norm(w), w, m.start(), 2.0)
    for m in _CALLED.finditer(text):
        if not covered[m.start()]:
            add(_norm(m.group(1)), m.group(1), m.start(), 2.0)
    low = text.lower()
    terms: Counter[str] = Counter()
    for w, n in Counter(_WORD.findall(low)).items():      # counted in C, folded per word
        if len(w) >= 4 and w not in STOP_WORDS:
            w = _singular(w)
            if w not in STOP_WORDS:
                terms[w] += n
    repeated = [t for t, n in terms.items() if n >= 3 and t not in score]
    # salient terms keep up to a fifth of the places; the rest go to names and identifiers
    salient = sorted(repeated, key=lambda t: (-terms[t], t))[:limit // 5]
    ranked = sorted(score, key=lambda k: (-score[k], first[k]))[:limit - len(salient)]
    for t in salient:
        display.setdefault(t, t)
    return [(k, display[k]) for k in ranked + salient]


@functools.lru_cache(maxsize=8192)
def _pattern(norm: str) -> tuple[str, re.Pattern]:
    """(a lower-case substring every match contains, the pattern): whole words, any case, any
    whitespace between words, an optional plural or possessive end."""
    parts = [re.escape(p) for p in norm.split(" ")]
    last = parts[-1]
    end = (last[:-1] + "(?:y|ies)") if last.endswith("y") else last + "(?:e?s)?"
    probe = norm.split(" ", 1)[0]
    if " " not in norm and probe.endswith("y"):
        probe = probe[:-1]
    return probe, re.compile(r"(?<![\w.])" + r"\s+".join(parts[:-1] + [end])
                             + r"(?:['’]s)?(?![\w])", re.I)


def mentions(text: str, entities: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
    """(norm, display, offset of the first mention) for each entity found in ``text``."""
    out = []
    low = text.lower()
    same = len(low) == len(text)               # lower() kept the offsets (nearly always)
    for norm, disp in entities:
        probe, pat = _pattern(norm)
        pos = low.find(probe)                  # a plain find first, the pattern only there
        if pos < 0:
            continue
        if not same:
            m = pat.search(text)
            if m:
                out.append((norm, disp, m.start()))
            continue
        while pos >= 0:
            if pat.match(text, pos):
                out.append((norm, disp, pos))
                break
            pos = low.find(probe, pos + 1)
    return out


# ---- loader --------------------------------------------------------------------------------

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
