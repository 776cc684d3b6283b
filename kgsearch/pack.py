"""Shaping the result list: community diversity, parent/child de-duplication, snippets."""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

__all__ = ["diversify", "snippet", "snippet_reference", "query_terms", "collapse_sections"]

CHILD_KINDS = ("section", "chunk")

_WORD = re.compile(r"\w+", re.UNICODE)


def diversify(order: np.ndarray, scores: np.ndarray, communities: np.ndarray | None,
              factor: float = 1.05, min_results: int = 3) -> np.ndarray:
    """Multiply by ``factor`` the score of the first hit from each community not seen before
    (walking ``order`` best first), when there are more than ``min_results`` results.

    ``communities[i]`` is the community label of candidate ``i`` (-1: none; never boosted).
    Returns the new scores (a copy).
    """
    out = np.array(scores, dtype=np.float64, copy=True)
    if communities is None or len(order) <= min_results:
        return out
    seen: set[int] = set()
    for i in order:
        c = int(communities[i])
        if c < 0 or c in seen:
            continue
        seen.add(c)
        out[i] *= factor
    return out


def query_terms(query: str) -> list[str]:
    """Lower-cased content words of the query (for highlighting), longest first, ties in
    alphabetical order (not the set's: a snippet must not depend on the hash seed)."""
    from .text.tokenize import STOP_WORDS

    words = {w.lower() for w in _WORD.findall(query) if len(w) > 1}
    return sorted((w for w in words if w not in STOP_WORDS), key=lambda w: (-len(w), w))


def family(key: str, kind: str, parent: str | None) -> str:
    """The note a hit stands for in :func:`collapse_sections`: a section's or chunk's parent,
    else the node itself.

    >>> family("md:a#b", "section", "md:a"), family("md:a", "note", None)
    ('md:a', 'md:a')
    """
    return parent if kind in CHILD_KINDS and parent else key


def collapse_sections(order, keys: list[str], kinds: list[str], parents: list[str | None]) -> list:
    """Keep one hit per note: a section/chunk and its parent note are one family; the family's
    best-ranked member stands for it. ``order`` indexes into the parallel lists."""
    seen: set[str] = set()
    out = []
    for i in order:
        fam = family(keys[i], kinds[i], parents[i])
        if fam in seen:
            continue
        seen.add(fam)
        out.append(i)
    return out


def snippet(text: str, terms: list[str], width: int = 180, mark: tuple[str, str] = ("[", "]")) -> str:
    """The ``width``-character window of ``text`` holding the most query-term matches, with
    matches wrapped in ``mark``. Prefix matches count (``index`` matches ``indexing``).

    :func:`snippet_reference` (the terms' expression, ``\\b(term|...)\\w*`` ignoring case, over
    the whole text) with its matches found by ``str.find`` in the lower-cased text: a match is a
    word start (the character before it is no word character) where a term begins, one per
    word, to the end of the word. That is the same set when the terms are lower-case ASCII word
    characters (what :func:`query_terms` gives) and the text holds none of the three characters
    the expression folds to an ASCII letter where ``str.lower`` does not (``İ ı ſ``: every
    character was checked, tests/test_fusion.py); otherwise the expression runs. The same
    snippets in a fraction of the time (most of a snippet's cost was the expression over the
    whole text: 60 us of 100 on a 1,200-character abstract)."""
    flat = " ".join((text or "").split())
    if not flat:
        return ""
    if not terms:
        return flat[:width] + ("..." if len(flat) > width else "")
    terms = tuple(terms[:20])
    rx, plain = _terms_pattern(terms)
    if plain and (flat.isascii() or not _FOLDS.search(flat)):
        hits = _word_starts(flat, flat.lower(), terms)
        return _window(flat, hits, lambda w: _mark_words(w, terms, mark), width, mark)
    hits = [m.start() for m in rx.finditer(flat)]
    return _window(flat, hits, lambda w: rx.sub(lambda m: f"{mark[0]}{m.group(0)}{mark[1]}", w), width, mark)


def snippet_reference(text: str, terms: list[str], width: int = 180, mark: tuple[str, str] = ("[", "]")) -> str:
    """:func:`snippet` as first written: the terms' regular expression over the whole text."""
    flat = " ".join((text or "").split())
    if not flat:
        return ""
    if not terms:
        return flat[:width] + ("..." if len(flat) > width else "")
    rx = re.compile(r"\b(" + "|".join(re.escape(t) for t in terms[:20]) + r")\w*", re.IGNORECASE)
    hits = [m.start() for m in rx.finditer(flat)]
    return _window(flat, hits, lambda w: rx.sub(lambda m: f"{mark[0]}{m.group(0)}{mark[1]}", w), width, mark)


# the characters ``re.IGNORECASE`` matches with an ASCII letter where ``str.lower`` does not give
# it (dotted and dotless i, long s; İ is also the one character whose lower case is two)
_FOLDS = re.compile("[\u0130\u0131\u017f]")
_WORD_RUN = re.compile(r"\w*")


@lru_cache(maxsize=64)
def _terms_pattern(terms: tuple[str, ...]) -> tuple[re.Pattern, bool]:
    """The terms' expression (a word start where one of them begins, to the end of the word),
    and whether every term is :func:`_plain` (then ``str.find`` finds its matches)."""
    rx = re.compile(r"\b(" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE)
    return rx, all(_plain(t) for t in terms)


def _plain(term: str) -> bool:
    """An ASCII, lower-case, non-empty run of word characters (what :func:`query_terms` gives)."""
    return bool(term) and term.isascii() and term == term.lower() and term.replace("_", "a").isalnum()


def _word_starts(text: str, low: str, terms: tuple[str, ...]) -> list[int]:
    """Sorted starts of the words of ``text`` (``low``: it lower-cased, of the same length) that
    one of ``terms`` (:func:`_plain`) begins."""
    found = set()
    for t in terms:
        p = low.find(t)
        while p >= 0:
            if p == 0:
                found.add(p)
            else:
                c = text[p - 1]       # (the expression's \w: isalnum or _, for every character: tests)
                if not (c.isalnum() or c == "_"):
                    found.add(p)
            p = low.find(t, p + 1)
    return sorted(found)


def _mark_words(window: str, terms: tuple[str, ...], mark: tuple[str, str]) -> str:
    """``window`` with each word a term begins wrapped in ``mark`` (what the expression's ``sub``
    gives, by :func:`_word_starts`)."""
    out, at = [], 0
    for s in _word_starts(window, window.lower(), terms):
        e = _WORD_RUN.match(window, s).end()
        out += [window[at:s], mark[0], window[s:e], mark[1]]
        at = e
    out.append(window[at:])
    return "".join(out)


def _window(flat: str, hits: list[int], marked, width: int, mark: tuple[str, str]) -> str:
    """The window of ``flat`` around the densest run of ``hits`` (match starts), ``marked``."""
    start = 0
    if hits:
        best, best_count = hits[0], 0
        j = 0
        for i, h in enumerate(hits):
            while hits[j] < h - width // 2:
                j += 1
            count = i - j + 1
            if count > best_count:
                best, best_count = hits[j], count
        start = max(0, best - 30)
        if start:
            sp = flat.rfind(" ", 0, start)
            start = sp + 1 if sp >= 0 else start
    window = flat[start:start + width]
    if start + width < len(flat):
        sp = window.rfind(" ")
        window = (window[:sp] if sp > width // 2 else window) + "..."
    if start:
        window = "..." + window
    return marked(window) if mark[0] or mark[1] else window
