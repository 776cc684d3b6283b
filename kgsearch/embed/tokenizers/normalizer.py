"""Normalizers of the ``tokenizer.json`` pipeline (BertNormalizer, Lowercase, NFD, StripAccents),
with the character tables generated from ``tokenizers`` itself (``_unicode_table.py``)."""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any, Callable, Iterable

from ...errors import DataError

__all__ = ["Normalizer", "Tables", "MEMO_CAP"]

# Hangul syllables decompose algorithmically (Unicode 3.12)
_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_N_COUNT, _T_COUNT, _S_COUNT = 588, 28, 11172

MEMO_CAP = 300_000   # words remembered per tokenizer before the memo is reset


class _RangeSet:
    """Membership in sorted inclusive code point ranges given as a flat tuple."""

    __slots__ = ("starts", "ends")

    def __init__(self, flat: tuple[int, ...]):
        self.starts = flat[0::2]
        self.ends = flat[1::2]

    def __contains__(self, cp: int) -> bool:
        i = bisect_right(self.starts, cp) - 1
        return i >= 0 and cp <= self.ends[i]

    def regex_class(self, bmp_only: bool = False) -> str:
        """The ranges as the inside of a regex character class (``\\U`` escapes); ``bmp_only``:
        cut at U+FFFF, for patterns used on strings without astral characters (``re`` tests
        a class with astral members range by range, a BMP-only class with a table lookup)."""
        return _regex_class(zip(self.starts, self.ends), 0xFFFF if bmp_only else 0x10FFFF)


def _regex_class(ranges: Iterable[tuple[int, int]], top: int = 0x10FFFF) -> str:
    """Inclusive code point ranges as the inside of a regex character class."""
    out = []
    for a, b in ranges:
        b = min(b, top)
        if a <= b:
            out.append(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}")
    return "".join(out)


def _ranges(cps: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted code points as inclusive ranges of consecutive ones."""
    out: list[tuple[int, int]] = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


class Tables:
    """Character classes as ``tokenizers`` sees them (loaded once per process)."""

    _inst: "Tables | None" = None

    def __init__(self) -> None:
        from .. import _unicode_table as T

        self.control = _RangeSet(T.CONTROL)
        self.clean_space = _RangeSet(T.CLEAN_SPACE)
        self.chinese = _RangeSet(T.CHINESE)
        self.mn = _RangeSet(T.MN)
        self.mark = _RangeSet(T.MARK)
        self.whitespace = _RangeSet(T.WHITESPACE)
        self.punct = _RangeSet(T.PUNCT)
        self.nfd_map = T.NFD
        self.lower_map = T.LOWER
        self.reorder_visible = frozenset(T.REORDER_VISIBLE)
        ccc = T.CCC
        self._ccc_starts = ccc[0::3]
        self._ccc_ends = ccc[1::3]
        self._ccc_vals = ccc[2::3]

    @classmethod
    def get(cls) -> "Tables":
        if cls._inst is None:
            cls._inst = cls()
        return cls._inst

    def ccc(self, cp: int) -> int:
        i = bisect_right(self._ccc_starts, cp) - 1
        if i >= 0 and cp <= self._ccc_ends[i]:
            return self._ccc_vals[i]
        return 0

    def nfd(self, ch: str) -> str:
        cp = ord(ch)
        s = cp - _S_BASE
        if 0 <= s < _S_COUNT:
            t = s % _T_COUNT
            out = chr(_L_BASE + s // _N_COUNT) + chr(_V_BASE + (s % _N_COUNT) // _T_COUNT)
            return out + chr(_T_BASE + t) if t else out
        return self.nfd_map.get(cp, ch)

    def reorder(self, chars: list[str]) -> list[str]:
        """Canonical ordering: stable sort of each run of nonzero-class characters."""
        out: list[str] = []
        run: list[tuple[int, int, str]] = []
        for ch in chars:
            k = self.ccc(ord(ch))
            if k:
                run.append((k, len(run), ch))
                continue
            if run:
                out.extend(c for _, _, c in sorted(run))
                run = []
            out.append(ch)
        if run:
            out.extend(c for _, _, c in sorted(run))
        return out


# ---------------------------------------------------------------------------- normalizer
class _CharMemo(dict):
    """ord -> normalised string, computed on first sight; used with ``str.translate``."""

    def __init__(self, fn: Callable[[str], str]):
        super().__init__()
        self.fn = fn

    def __missing__(self, cp: int) -> str:
        v = self.fn(chr(cp))
        self[cp] = v
        return v


class Normalizer:
    """A chain of per-character steps (``clean``, ``chinese``, ``nfd``, ``strip_mn``, ``strip_marks``, ``lower``).

    Every step but NFD's canonical reordering is a per-character map, so a text is normalised by
    ``str.translate`` over a per-character memo. Reordering can only change the output when two
    characters each bring a combining class that survives the later steps (rare: a few
    musical symbols and Adlam/Glagolitic marks); such texts take the exact slow path.
    """

    def __init__(self, steps: list[str], edits: Iterable[tuple[str, str, str]] = ()):
        self.steps = list(steps)
        # whole-string edits after the per-character steps: ("prepend", s, "") puts s before a
        # non-empty text (``Prepend``), ("replace", a, b) replaces every a by b (``Replace`` with
        # a String pattern): the Llama / SentencePiece-BPE normalizer
        self.edits = tuple(edits)
        self.t = Tables.get() if self.steps else None
        self._memo = _CharMemo(self._char)
        self._ascii = {cp: self._char(chr(cp)) for cp in range(128)}
        self._ascii = {k: v for k, v in self._ascii.items() if v != chr(k)}
        # ASCII fast path: lower() + (non-printable -> space) + isprintable() check, valid when
        # the ASCII table only lower-cases letters, and deletes or spaces non-printables
        upper = {cp: chr(cp).lower() for cp in range(65, 91)}
        self._ascii_lower = all(self._ascii.get(k) == v for k, v in upper.items())
        self._ascii_spaces = [chr(k) for k, v in self._ascii.items() if v == " " and not chr(k).isprintable()]
        self._ascii_fast = all(
            (k in upper and self._ascii_lower) or (not chr(k).isprintable() and v in ("", " "))
            for k, v in self._ascii.items()) and (self._ascii_lower or not any(k in upper for k in self._ascii))
        self._flag_re: Any = None if "nfd" in self.steps else False   # built on first non-ASCII text
        self._flag_coarse: Any = None      # flagged BMP characters or any astral one (see __call__)

    @property
    def identity(self) -> bool:
        return not self.steps and not self.edits

    def _apply(self, chars: list[str], steps: Iterable[str]) -> list[str]:
        t = self.t
        for step in steps:
            if step == "clean":
                chars = ["" if ord(c) in t.control else (" " if ord(c) in t.clean_space else c) for c in chars]
                chars = [c for c in chars if c]
            elif step == "chinese":
                chars = [x for c in chars for x in ((" ", c, " ") if ord(c) in t.chinese else (c,))]
            elif step == "nfd":
                chars = t.reorder([x for c in chars for x in t.nfd(c)])
            elif step == "strip_mn":
                chars = [c for c in chars if ord(c) not in t.mn]
            elif step == "strip_marks":
                chars = [c for c in chars if ord(c) not in t.mark]
            elif step == "lower":
                lm = t.lower_map
                chars = [x for c in chars for x in lm.get(ord(c), c)]
            else:   # pragma: no cover - steps are validated when parsed
                raise AssertionError(step)
        return chars

    def _char(self, ch: str) -> str:
        return "".join(self._apply([ch], self.steps))

    def _flag_steps(self) -> tuple[list[str], bool, bool]:
        i = self.steps.index("nfd")
        after = self.steps[i + 1:]
        return self.steps[:i], "strip_mn" in after, "strip_marks" in after

    def _flagged_reference(self) -> list[int]:
        """Characters whose NFD brings a combining class that survives the later steps
        (character by character, with the table lookups; :meth:`_flagged` is the fast one)."""
        t = self.t
        before, strip_mn, strip_marks = self._flag_steps()
        cands: set[int] = set()
        for a, b in zip(t._ccc_starts, t._ccc_ends):
            cands.update(range(a, b + 1))
        cands.update(k for k, v in t.nfd_map.items() if any(t.ccc(ord(x)) for x in v))
        if "lower" in before:
            cands.update(t.lower_map)
        flagged = []
        for cp in sorted(cands):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            pre = self._apply([chr(cp)], before)
            dec = [x for c in pre for x in t.nfd(c)]
            if any(t.ccc(ord(x)) and not (strip_mn and ord(x) in t.mn) and not (strip_marks and ord(x) in t.mark)
                   for x in dec):
                flagged.append(cp)
        return flagged

    def _flagged(self) -> list[int]:
        """:meth:`_flagged_reference` with sets: the code points with a nonzero class, and those
        of them the later steps keep, are built once from the ranges (~1K); a candidate is
        flagged when its decomposition meets the kept set. It runs on the first non-ASCII text
        of a process (~10 ms -> ~3 ms)."""
        t = self.t
        before, strip_mn, strip_marks = self._flag_steps()
        classed: set[int] = set()
        for a, b, v in zip(t._ccc_starts, t._ccc_ends, t._ccc_vals):
            if v:
                classed.update(range(a, b + 1))
        kept = {x for x in classed if not (strip_mn and x in t.mn) and not (strip_marks and x in t.mark)}
        if not kept:
            return []
        cands = set(classed)
        cands.update(k for k, v in t.nfd_map.items() if not classed.isdisjoint(map(ord, v)))
        if "lower" in before:
            cands.update(t.lower_map)
        # clean and chinese keep a character, drop it or make it a space: no need to apply them
        # except to drop what clean drops
        simple = set(before) <= {"clean", "chinese"}
        flagged = []
        for cp in sorted(cands):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            if simple:
                if "clean" in before and (cp in t.control or cp in t.clean_space):
                    continue
                dec = t.nfd(chr(cp))
            else:
                dec = "".join(t.nfd(c) for c in self._apply([chr(cp)], before))
            if not kept.isdisjoint(map(ord, dec)):
                flagged.append(cp)
        return flagged

    def _build_flag_re(self):
        """A regex of the :meth:`_flagged` characters (None if there are none); also sets
        ``_flag_coarse``: the flagged BMP characters plus the whole astral range, one class
        ``re`` tests ~5x faster than the exact one (whose astral ranges it tests one by one)."""
        flagged = self._flagged()
        if not flagged:
            return None
        ranges = _ranges(flagged)
        self._flag_coarse = re.compile(f"[{_regex_class(ranges, 0xFFFF)}\\U00010000-\\U0010ffff]")
        return re.compile(f"[{_regex_class(ranges)}]")

    def __call__(self, text: str) -> str:
        out = self._chars(text)
        for kind, a, b in self.edits:
            if kind == "prepend":
                out = a + out if out else out
            else:
                out = out.replace(a, b)
        return out

    def _chars(self, text: str) -> str:
        if not self.steps:
            return text
        if text.isascii():
            if self._ascii_fast:
                out = text.lower() if self._ascii_lower else text
                if out.isprintable():
                    return out
                for ch in self._ascii_spaces:
                    if ch in out:
                        out = out.replace(ch, " ")
                if out.isprintable():
                    return out
            return text.translate(self._ascii)
        if self._flag_re is None:
            self._flag_re = self._build_flag_re() or False
        if self._flag_re:
            # two flagged characters may need reordering: count them with the coarse class;
            # only if an astral character is among the hits, count exactly
            hits = self._flag_coarse.findall(text)
            if len(hits) >= 2 and (max(hits) <= "\uffff" or len(self._flag_re.findall(text)) >= 2):
                return "".join(self._apply(list(text), self.steps))
        if len(self._memo) > MEMO_CAP:
            self._memo.clear()
        return text.translate(self._memo)

    @classmethod
    def from_spec(cls, spec: dict | None, where: str = "tokenizer.json") -> "Normalizer":
        steps, edits = [], []
        for step in _normalizer_steps(spec, where):
            if isinstance(step, tuple):
                edits.append(step)
            elif edits:
                raise DataError("unsupported normalizer order: a per-character step after Prepend/Replace",
                                where)
            else:
                steps.append(step)
        return cls(steps, edits)


def _normalizer_steps(spec: dict | None, where: str) -> list:
    if spec is None:
        return []
    kind = spec.get("type")
    if kind == "Prepend":
        return [("prepend", str(spec.get("prepend", "")), "")]
    if kind == "Replace":
        pattern = spec.get("pattern") or {}
        if "String" not in pattern:
            raise DataError(f"unsupported Replace pattern {pattern!r} (kgsearch reads a String pattern)", where)
        return [("replace", str(pattern["String"]), str(spec.get("content", "")))]
    if kind == "BertNormalizer":
        steps = []
        if spec.get("clean_text", True):
            steps.append("clean")
        if spec.get("handle_chinese_chars", True):
            steps.append("chinese")
        lower = spec.get("lowercase", True)
        strip = spec.get("strip_accents")
        if strip is None:
            strip = lower
        if strip:
            steps += ["nfd", "strip_mn"]
        if lower:
            steps.append("lower")
        return steps
    if kind == "Lowercase":
        return ["lower"]
    if kind == "NFD":
        return ["nfd"]
    if kind == "StripAccents":
        return ["strip_marks"]
    if kind == "Sequence":
        out: list[str] = []
        for sub in spec.get("normalizers") or []:
            out += _normalizer_steps(sub, where)
        return out
    raise DataError(f"unsupported normalizer {kind!r} (kgsearch reads BertNormalizer, Lowercase, NFD, "
                    f"StripAccents, Prepend, Replace and Sequence); use a BERT-style model2vec model", where)


# ---------------------------------------------------------------------------- pre-tokenizer
