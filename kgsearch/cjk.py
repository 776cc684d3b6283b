"""Text without spaces between words: Chinese, Japanese (Han, Hiragana, Katakana) and Korean (Hangul).

A sentence in these scripts is one run of word characters, so splitting on spaces makes the whole
sentence one term and a word inside it is never found. kgsearch indexes such runs as
overlapping character bigrams (the CJK rule of Lucene's ``CJKBigramFilter``): ``备份服务器`` ->
``备份 份服 服务 务器``; a run of one character is kept as a unigram. A query is analysed the same
way, so a word of two or more characters found anywhere inside a sentence matches all of its
bigrams (``服务器`` -> ``服务 务器``). Hangul words are separated by spaces, but particles and
endings attach to them (``서울에서`` = ``서울`` + ``에서``), so Hangul runs get bigrams too.

- :func:`cjk_runs` / :func:`has_cjk`: where such runs are;
- :func:`bigrams`: the terms of one run;
- :func:`spaced`: the text with a space around every CJK character, which is what the FTS5
  table indexes (its ``unicode61`` tokenizer then sees one token per character, and a quoted
  word is a phrase of adjacent characters).

This module is in the base layer (stdlib only) so that both the text analyser and the store's
FTS5 content view use the same character classes.
"""
from __future__ import annotations

import re

__all__ = ["CJK_CLASS", "has_cjk", "cjk_runs", "split_runs", "bigrams", "spaced"]

# Han (CJK Unified Ideographs, Extension A, compatibility ideographs, Extensions B-H), the
# ideographic iteration/closing marks, Hiragana, Katakana (with the prolonged sound mark and the
# phonetic extensions; half-width Katakana becomes full-width under NFKC before we look), Hangul
# syllables and jamo.
CJK_CLASS = ("\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c\u3041-\u3096"
             "\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
             "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f"
             "\U00020000-\U0003134f")
_RUN = re.compile(f"[{CJK_CLASS}]+")


def has_cjk(text: str) -> bool:
    """True when ``text`` holds a Han, Kana or Hangul character (ASCII text returns at once)."""
    return not text.isascii() and _RUN.search(text) is not None


def cjk_runs(text: str) -> list[str]:
    """The maximal runs of CJK characters in ``text``, in order."""
    return _RUN.findall(text)


def split_runs(token: str) -> list[tuple[bool, str]]:
    """``token`` cut into ``(is_cjk, piece)`` pieces in order: ``"v2版本"`` -> ``[(False, "v2"), (True, "版本")]``."""
    out: list[tuple[bool, str]] = []
    pos = 0
    for m in _RUN.finditer(token):
        if m.start() > pos:
            out.append((False, token[pos:m.start()]))
        out.append((True, m.group()))
        pos = m.end()
    if pos < len(token):
        out.append((False, token[pos:]))
    return out


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of one CJK run; a one-character run is its own term."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i:i + 2] for i in range(len(run) - 1)]


def spaced(text):
    """``text`` with a space on each side of every CJK character (other text unchanged; ``None``
    and non-strings pass through). Used as the FTS5 content, so that each character is a token."""
    if not isinstance(text, str) or text.isascii() or _RUN.search(text) is None:
        return text
    return _RUN.sub(lambda m: " " + " ".join(m.group()) + " ", text)
