"""Typed words the index does not know, corrected to a word it does: ``bakc up my ntoes`` is
searched as ``back up my notes``.

A query word is a typo candidate when it is a plain word of Latin letters (4 to 24 of them,
lower-case or capitalised: not an acronym, an identifier, a path or a number) and none of its
analysed terms occurs in the index. Its correction is the word one edit away (a letter
deleted, inserted, replaced, or two neighbours swapped: Damerau-Levenshtein distance 1, which
covers most typing errors) whose analysed term is the most frequent in the index (ties, such as
two spellings of one stem, ``wingzs`` -> ``wings`` or ``winges``: the shorter, then the
alphabetically first), as a spelling corrector that ranks by corpus frequency does. Given a
vocabulary of whole words (``is_word``: the search passes its embedding model's), the spellings
it holds come first, since the index keeps stems: ``practies`` is one edit from ``practices``
and from ``practics``, ``haering`` from ``hearing`` and from ``hairing``. Only spellings of 4
letters or more count as words there: a subword vocabulary's shorter tokens are as often the
start of a longer word or an abbreviation (``faa``).
Words the index knows are never touched; a word with no known neighbour stays as typed, and so
does a whole word of that vocabulary: a real word the index lacks is no typo (``delete`` in a
code base that says ``unlink`` was searched as an identifier's ``delege``, ``thanks`` as
``tanks``, ``yale`` as ``male``); a query
with more than :data:`MAX_TYPOS` unknown words is left as typed (a sentence in another language
or a list of names is not a row of typos, and each unknown word costs a few milliseconds).

The index's vocabulary is asked once per query for all candidate terms (``df_of``: terms ->
document frequency; several indexes sum theirs, so that a word one of them knows is not a
typo), so the cost is one look-up of a few hundred primary keys per unknown word.

>>> sorted(edits1("abc"))[:6]
['aabc', 'aac', 'ab', 'aba', 'abac', 'abb']
>>> known = {"back": 3, "bake": 1, "note": 5, "up": 9}
>>> an = lambda w: [w[:-1] if w.endswith("s") else w]
>>> corrections("bakc up my ntoes", an, lambda ts: {t: known[t] for t in ts if t in known})
[('bakc', 'back'), ('ntoes', 'notes')]
"""
from __future__ import annotations

import re
from typing import Callable, Iterable

__all__ = ["edits1", "typo_words", "corrections", "apply", "describe", "LETTERS", "MIN_LEN", "MAX_LEN", "MAX_TYPOS"]

LETTERS = "abcdefghijklmnopqrstuvwxyz"
MIN_LEN, MAX_LEN = 4, 24
MAX_TYPOS = 3           # more unknown words than this in one query: none is corrected

# a word of Latin letters not touching a letter, digit or '_', and not joined by '.', '/', '\\',
# ':', '-' or an apostrophe to more of a word (an identifier, a path, an address, a field filter,
# "don't"), nor after '@', '#', '$', '`' or a quote, nor before '(' or '[' (code)
_WORD = re.compile(r"(?<![\w./\\:@#$`'\"\-])([A-Za-z]{%d,%d})(?![\w@#$`(\[]|[./\\:'\-]\w)" % (MIN_LEN, MAX_LEN))


def edits1(word: str) -> set[str]:
    """Every string one edit from ``word`` (lower-case ASCII letters): deletes, adjacent swaps,
    replacements and inserts; ``word`` itself is not in it."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in LETTERS}
    out |= {a + c + b for a, b in splits for c in LETTERS}
    out.discard(word)
    return out


def typo_words(text: str) -> list[str]:
    """The words of ``text`` that may be typos (see the module docstring), in order, once each."""
    seen: dict[str, None] = {}
    for m in _WORD.finditer(text):
        w = m.group(1)
        if w.islower() or (w[0].isupper() and w[1:].islower()):
            seen.setdefault(w, None)
    return list(seen)


def corrections(text: str, analyze: Callable[[str], list], df_of: Callable[[Iterable[str]], dict],
                is_word: Callable[[str], bool] | None = None,
                known_of: Callable[[set], Iterable[str]] | None = None) -> list[tuple[str, str]]:
    """``[(typed word, correction)]`` for the words of ``text`` the index does not know and
    that have a known word one edit away. ``analyze(word)``: the index's analysis of one word
    (its terms: :meth:`Analyzer.analyze_word <kgsearch.text.tokenize.Analyzer.analyze_word>`);
    ``df_of(terms)``: ``{term: document frequency}`` of those the index has; ``is_word(spelling)``
    (optional): whether a spelling is a word of a vocabulary, which then comes first (the index
    holds stems: ``practies`` is one edit from ``practices`` and from ``practics``, one stem).
    ``known_of(terms)`` (optional): those of ``terms`` the index holds, when that is cheaper
    than their frequencies (several indexes: the next index is asked only for the terms the
    ones before it lack); default the terms ``df_of`` answers."""
    words = typo_words(text)
    if not words:
        return []
    terms_of = {w: tuple(analyze(w)) for w in words}
    known = (known_of or df_of)({t for ts in terms_of.values() for t in ts})
    unknown = [w for w in words if terms_of[w] and not any(t in known for t in terms_of[w])]
    if not unknown or len(unknown) > MAX_TYPOS:      # many unknown words: another language, names, not typos
        return []
    variants: dict[str, dict[str, str]] = {}          # word -> {variant spelling: its one term}
    for w in unknown:
        if is_word is not None and is_word(w.lower()):
            continue                                  # a real word the index lacks is no typo: no variant to try
        vs = {}
        for v in edits1(w.lower()):
            ts = analyze(v)
            if len(ts) == 1:
                vs[v] = ts[0]
        variants[w] = vs
    df = df_of({t for vs in variants.values() for t in vs.values()})
    out = []
    for w in unknown:
        best = min(((0 if is_word is None or len(v) >= MIN_LEN and is_word(v) else 1, -df[t], len(v), v)
                    for v, t in variants.get(w, {}).items() if df.get(t, 0) > 0), default=None)
        if best is not None:
            fix = best[3]
            out.append((w, fix.capitalize() if w[0].isupper() else fix))
    return out


def apply(text: str, fixes: list[tuple[str, str]]) -> str:
    """``text`` with each typed word (where :func:`typo_words` found it) replaced by its fix."""
    if not fixes:
        return text
    table = dict(fixes)
    return _WORD.sub(lambda m: table.get(m.group(1), m.group(1)), text)


def describe(fixes: list[tuple[str, str]]) -> str:
    """``bakc -> back, ntoes -> notes``."""
    return ", ".join(f"{a} -> {b}" for a, b in fixes)
