"""Entities in text without a model: names, code identifiers and salient terms.

:func:`extract_entities` finds capitalised multi-word phrases (a leading The/A/An dropped,
sentence-initial common words dropped), code identifiers (:mod:`kgsearch.codelike`: CamelCase,
snake_case, dotted names, ``name()``), capitalised single words and acronyms seen at least
twice away from a sentence start, and salient terms (a non-stop word of 4+ letters repeated 3+
times, at most a fifth of the set); at most :data:`MAX_ENTITIES` per file, most salient first,
taken from the first :data:`MAX_SCAN` characters. :func:`mentions` finds where a text mentions
them. The plain-text and Markdown loaders link their nodes to shared ``ent:`` nodes with these.
"""
from __future__ import annotations

import functools
import re
from collections import Counter

from ..codelike import CALL, CAMEL, DOTTED, SNAKE

__all__ = ["extract_entities", "mentions", "STOP_WORDS", "MAX_ENTITIES", "MAX_SCAN"]

MAX_ENTITIES = 50
MAX_SCAN = 1_000_000     # characters read for entity extraction (mentions are found everywhere)

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
_DOTTED = re.compile(r"(?<![\w./])" + DOTTED.pattern[2:] + r"(?![\w(]*\.\w)")  # not inside a path or URL
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
    for rx in (_DOTTED, CAMEL, SNAKE):
        for m in rx.finditer(text):
            w = m.group()
            if rx is _DOTTED:
                if max(map(len, w.split("."))) <= 2:
                    continue               # e.g., i.e
            elif covered[m.start()] or m.start() in in_phrase:
                continue
            covered[m.start():m.end()] = b"\x01" * (m.end() - m.start())
            add(_norm(w), w, m.start(), 2.0)
    for m in CALL.finditer(text):
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
