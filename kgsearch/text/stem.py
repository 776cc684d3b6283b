"""Stemmers: a light 18-suffix stripper and a pure-Python Porter2 (Snowball English, 3.x rules).

Both are memoised (``functools.lru_cache`` would add call overhead; a dict with
``__missing__`` costs one lookup per known word). Pick one by name with :func:`get_stemmer`:
``"porter2"`` (default, chosen by nDCG@10 over the shared benchmark sets, see
bench/results/text_quality.md), ``"light"`` or ``"none"``.

Porter2 follows the Snowball 3.x ``english.sbl`` (the revision that added the
``emerg``/``inter``/``later``/``organ``/``past``/``univers`` R1 prefixes, ``ogist``, and moved
``dying``/``inning``-style words from the exception list into Step 1b). The test suite checks
it against the ``snowballstemmer`` package on >= 20,000 words.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["light_stem", "porter2_stem", "get_stemmer", "STEMMERS", "Memo"]


class Memo(dict):
    """``memo[word]`` computes ``fn(word)`` once. Cleared when it grows past ``limit`` entries."""

    __slots__ = ("fn", "limit")

    def __init__(self, fn: Callable[[str], object], limit: int = 1_000_000):
        super().__init__()
        self.fn = fn
        self.limit = limit

    def __missing__(self, key):
        if len(self) >= self.limit:
            self.clear()
        value = self[key] = self.fn(key)
        return value


# ---------------------------------------------------------------------------- light stemmer
LIGHT_SUFFIXES = tuple(sorted(
    ("ation", "tion", "sion", "ment", "ness", "able", "ible", "ful", "less", "ous", "ive",
     "ing", "ed", "er", "est", "ly", "al", "ity"), key=len, reverse=True))


def _light(word: str) -> str:
    for suf in LIGHT_SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            return word[: -len(suf)]
    return word


# ---------------------------------------------------------------------------- Porter2
_V = frozenset("aeiouy")                   # vowels (a 'Y' marked by the prelude is a consonant)
_V_WXY = frozenset("aeiouywxY")
_VALID_LI = frozenset("cdeghkmnrt")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_PREFIXES = ("arsen", "commun", "emerg", "gener", "inter", "later", "organ", "past", "univers")
_EXCEPTIONS = {
    "andes": "andes", "atlas": "atlas", "bias": "bias", "cosmos": "cosmos", "early": "earli",
    "gently": "gentl", "howe": "howe", "idly": "idl", "news": "news", "only": "onli",
    "singly": "singl", "skies": "sky", "skis": "ski", "sky": "sky", "ugly": "ugli",
}
# Step 2 / 3 / 4 suffix tables, longest first (Snowball picks the longest matching suffix and
# then applies its condition; a failed condition does not fall back to a shorter suffix).
_STEP2 = sorted([
    ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("abli", "able"), ("entli", "ent"),
    ("izer", "ize"), ("ization", "ize"), ("ational", "ate"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("aliti", "al"), ("alli", "al"), ("fulness", "ful"), ("fulli", "ful"),
    ("ousli", "ous"), ("ousness", "ous"), ("iveness", "ive"), ("iviti", "ive"),
    ("biliti", "ble"), ("bli", "ble"), ("ogi", None), ("ogist", "og"), ("lessli", "less"),
    ("li", None)], key=lambda p: -len(p[0]))
_STEP3 = sorted([
    ("tional", "tion"), ("ational", "ate"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
    ("ical", "ic"), ("ful", ""), ("ness", ""), ("ative", None)], key=lambda p: -len(p[0]))
_STEP4 = sorted(["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
                 "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ion"], key=len, reverse=True)


def _after_vc(w: str, start: int) -> int:
    """Index after the first non-vowel that follows a vowel, at or after ``start`` (else len)."""
    n = len(w)
    i = start
    while i < n and w[i] not in _V:
        i += 1
    i += 1
    while i < n and w[i] in _V:
        i += 1
    return n if i >= n else i + 1


def _short_syllable_end(w: str) -> bool:
    """Snowball ``shortv`` at the end of ``w``."""
    n = len(w)
    if n >= 3 and w[-1] not in _V_WXY and w[-2] in _V and w[-3] not in _V:
        return True
    if n == 2 and w[1] not in _V and w[0] in _V:
        return True
    return w.endswith("past")


def _porter2(word: str) -> str:
    exc = _EXCEPTIONS.get(word)
    if exc is not None:
        return exc
    if len(word) < 3:
        return word
    w = word[1:] if word[0] == "'" else word
    # prelude: initial y, and y after a vowel, become consonant Y
    if "y" in w:
        chars = list(w)
        if chars[0] == "y":
            chars[0] = "Y"
        for i in range(1, len(chars)):
            if chars[i] == "y" and chars[i - 1] in _V:
                chars[i] = "Y"
        w = "".join(chars)
    # regions
    for pre in _PREFIXES:
        if w.startswith(pre):
            p1 = len(pre)
            break
    else:
        p1 = _after_vc(w, 0)
    p2 = _after_vc(w, p1) if p1 < len(w) else len(w)

    # Step 1a
    if w.endswith("'s'"):
        w = w[:-3]
    elif w.endswith("'s"):
        w = w[:-2]
    elif w.endswith("'"):
        w = w[:-1]
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ied") or w.endswith("ies"):
        w = w[:-3] + ("i" if len(w) > 4 else "ie")
    elif w.endswith("ss") or w.endswith("us"):
        pass
    elif w.endswith("s"):
        if any(c in _V for c in w[:-2]):
            w = w[:-1]

    # Step 1b
    w = _step1b(w, p1)

    # Step 1c
    if len(w) > 2 and w[-1] in "yY" and w[-2] not in _V:
        w = w[:-1] + "i"

    # Step 2
    for suf, rep in _STEP2:
        if w.endswith(suf):
            start = len(w) - len(suf)
            if start >= p1:
                if suf == "ogi":
                    if start > 0 and w[start - 1] == "l":
                        w = w[:start] + "og"
                elif suf == "li":
                    if start > 0 and w[start - 1] in _VALID_LI:
                        w = w[:start]
                else:
                    w = w[:start] + rep
            break

    # Step 3
    for suf, rep in _STEP3:
        if w.endswith(suf):
            start = len(w) - len(suf)
            if start >= p1:
                if rep is None:
                    if start >= p2:
                        w = w[:start]
                else:
                    w = w[:start] + rep
            break

    # Step 4
    for suf in _STEP4:
        if w.endswith(suf):
            start = len(w) - len(suf)
            if start >= p2:
                if suf == "ion":
                    if start > 0 and w[start - 1] in "st":
                        w = w[:start]
                else:
                    w = w[:start]
            break

    # Step 5
    if w.endswith("e"):
        start = len(w) - 1
        if start >= p2 or (start >= p1 and not _short_syllable_end(w[:-1])):
            w = w[:-1]
    elif w.endswith("l"):
        start = len(w) - 1
        if start >= p2 and start > 0 and w[start - 1] == "l":
            w = w[:-1]

    return w.replace("Y", "y") if "Y" in w else w


_1B = ("eedly", "ingly", "edly", "eed", "ing", "ed")


def _step1b(w: str, p1: int) -> str:
    for suf in _1B:
        if w.endswith(suf):
            break
    else:
        return w
    stem = w[: -len(suf)]
    if suf in ("eed", "eedly"):
        if len(stem) >= p1 and stem not in ("succ", "proc", "exc"):
            return stem + "ee"
        return w
    if suf == "ing":
        if len(stem) == 2 and stem[1] == "y" and stem[0] not in _V:
            return stem[0] + "ie"
        if stem in ("even", "cann", "inn", "earr", "herr", "out"):
            return w
    if not any(c in _V for c in stem):
        return w
    w = stem
    if w.endswith(("at", "bl", "iz")):
        return w + "e"
    if w.endswith(_DOUBLES):
        if len(w) == 3 and w[0] in "aeo":
            return w
        return w[:-1]
    if len(w) == p1 and _short_syllable_end(w):
        return w + "e"
    return w


# ---------------------------------------------------------------------------- public API
_LIGHT_MEMO = Memo(_light)
_PORTER2_MEMO = Memo(_porter2)

light_stem = _LIGHT_MEMO.__getitem__
"""Light suffix stripper (memoised): ``light_stem("responses")`` -> ``"respons"``... see tests."""

porter2_stem = _PORTER2_MEMO.__getitem__
"""Porter2 / Snowball English (memoised)."""


def _identity(word: str) -> str:
    return word


STEMMERS: dict[str, Callable[[str], str]] = {
    "porter2": porter2_stem, "light": light_stem, "none": _identity,
}


def get_stemmer(name: str | None) -> Callable[[str], str]:
    """The memoised stemmer called ``name`` (``None`` means ``"none"``)."""
    if name is None:
        name = "none"
    try:
        return STEMMERS[name]
    except KeyError:
        from ..errors import UsageError
        raise UsageError(f"unknown stemmer {name!r}; choose from {', '.join(sorted(STEMMERS))}") from None
