#!/usr/bin/env python3
"""Derive the Unicode tables that ``kgsearch.embed.tokenizers`` needs for exact parity with the
Hugging Face ``tokenizers`` library, by probing ``tokenizers`` over every code point.

Why: ``tokenizers`` (Rust) classifies characters with its own, older Unicode tables
(``unicode_categories``, ``unicode-normalization-alignments``) and lower-cases with Rust's
``char::to_lowercase``; Python's ``unicodedata`` is a different Unicode version and ``str.lower``
is context-sensitive (final sigma). The tables written here are absolute (not differences
against the running Python's ``unicodedata``), so the runtime gives the same tokens on every
Python version. Development tool: run once with ``tokenizers`` installed and commit the output::

    python scripts/make_unicode_table.py            # writes kgsearch/embed/_unicode_table.py

What is probed, per code point ``c`` (surrogates excluded):

- ``CONTROL``: removed by ``BertNormalizer(clean_text=True)`` (NUL, U+FFFD, Cc/Cf/Co except
  tab/newline/CR, by the old tables).
- ``CLEAN_SPACE``: mapped to a space by ``clean_text``.
- ``CHINESE``: padded with spaces by ``handle_chinese_chars``.
- ``NFD``: canonical decomposition (Hangul syllables are algorithmic and left out).
- ``CCC``: canonical combining class of characters ``tokenizers`` knows (checked by reordering).
- ``MN``: non-spacing marks dropped by ``strip_accents`` (for characters that NFD leaves alone).
- ``MARK``: combining marks dropped by the ``StripAccents`` normalizer (another table).
- ``LOWER``: ``tokenizers``' lower-casing, where it changes the character.
- ``WHITESPACE`` and ``PUNCT``: what ``BertPreTokenizer`` splits on and isolates.
"""
from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "kgsearch" / "embed" / "_unicode_table.py"

S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28
N_COUNT = V_COUNT * T_COUNT
S_COUNT = L_COUNT * N_COUNT


def hangul_nfd(cp: int) -> str | None:
    s = cp - S_BASE
    if not 0 <= s < S_COUNT:
        return None
    out = chr(L_BASE + s // N_COUNT) + chr(V_BASE + (s % N_COUNT) // T_COUNT)
    t = s % T_COUNT
    return out + (chr(T_BASE + t) if t else "")


def ranges(cps: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [(a, b) for a, b in out]


def fmt_ranges(name: str, rs: list[tuple[int, int]], doc: str) -> str:
    flat = []
    for a, b in rs:
        flat.append(f"0x{a:X},0x{b:X}")
    lines = [f"# {doc}", f"{name} = ("]
    row = []
    for item in flat:
        row.append(item)
        if len(row) == 6:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines.append(")")
    return "\n".join(lines)


def fmt_map(name: str, m: dict[int, str], doc: str) -> str:
    lines = [f"# {doc}", f"{name} = {{"]
    row = []
    for k in sorted(m):
        v = "".join(f"\\U{ord(ch):08X}" if ord(ch) > 0xFFFF else f"\\u{ord(ch):04X}" for ch in m[k])
        row.append(f"0x{k:X}:\"{v}\"")
        if len(row) == 4:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines.append("}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="probe tokenizers and write the Unicode tables")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)

    import tokenizers
    from tokenizers import normalizers, pre_tokenizers

    def bert(clean=False, chinese=False, strip=False, lower=False):
        return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                          strip_accents=strip, lowercase=lower)

    clean_n = bert(clean=True)
    chinese_n = bert(chinese=True)
    strip_n = bert(strip=True)
    lower_n = bert(lower=True)
    lower2 = normalizers.Lowercase()
    nfd_n = normalizers.NFD()
    strip_marks_n = normalizers.StripAccents()
    pre = pre_tokenizers.BertPreTokenizer()

    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    control, clean_space, chinese, mn, punct, white, marks = [], [], [], [], [], [], []
    nfd: dict[int, str] = {}
    lower: dict[int, str] = {}
    for c in cps:
        ch = chr(c)
        r = clean_n.normalize_str(ch)
        if r == "":
            control.append(c)
        elif r != ch:
            assert r == " ", (hex(c), r)
            clean_space.append(c)
        if chinese_n.normalize_str(ch) != ch:
            assert chinese_n.normalize_str(ch) == f" {ch} ", hex(c)
            chinese.append(c)
        d = nfd_n.normalize_str(ch)
        if d != ch:
            h = hangul_nfd(c)
            if h is not None:
                assert h == d, hex(c)
            else:
                nfd[c] = d
        elif strip_n.normalize_str(ch) == "":
            mn.append(c)
        sm = strip_marks_n.normalize_str(ch)
        if sm == "":
            marks.append(c)
        else:
            assert sm == ch, hex(c)
        lo = lower_n.normalize_str(ch)
        assert lo == lower2.normalize_str(ch), hex(c)
        if lo != ch:
            lower[c] = lo
        p = pre.pre_tokenize_str("a" + ch + "b")
        if len(p) == 3:
            assert p[1][0] == ch
            punct.append(c)
        elif len(p) == 2:
            white.append(c)
        else:
            assert len(p) == 1 and p[0][0] == "a" + ch + "b", (hex(c), p)
    for c in range(S_BASE, S_BASE + S_COUNT):   # sanity: Hangul really is algorithmic there
        assert hangul_nfd(c) is not None

    # Canonical combining classes. Values never change once a character is assigned
    # (Unicode stability policy), so a character has either Python's ccc or 0 (unknown to
    # tokenizers' older table); reordering against a reference mark tells which.
    ref_low, ref_high = "\u0334", "\u0301"     # ccc 1 and 230 in every Unicode version
    ccc: dict[int, int] = {}
    for c in cps:
        k = unicodedata.combining(chr(c))
        if not k:
            continue
        ch = chr(c)
        if k > 1:
            known = nfd_n.normalize_str(ch + ref_low) == ref_low + nfd_n.normalize_str(ch)
        else:
            known = nfd_n.normalize_str(ref_high + ch) == nfd_n.normalize_str(ch) + ref_high
        if known and c not in nfd:
            ccc[c] = k
    # characters that keep a nonzero class through strip_accents: only these can reorder
    # visible output (everything else with a class is a non-spacing mark and dropped)
    mn_set = set(mn)
    reorder_visible = sorted(c for c in ccc if c not in mn_set)

    ccc_ranges: list[tuple[int, int, int]] = []
    for c in sorted(ccc):
        if ccc_ranges and ccc_ranges[-1][1] == c - 1 and ccc_ranges[-1][2] == ccc[c]:
            ccc_ranges[-1] = (ccc_ranges[-1][0], c, ccc[c])
        else:
            ccc_ranges.append((c, c, ccc[c]))

    parts = [
        '"""Unicode tables for ``kgsearch.embed.tokenizers``: what the ``tokenizers`` library does',
        "per code point (its own, older Unicode data). Generated by scripts/make_unicode_table.py",
        f"from tokenizers {tokenizers.__version__}; do not edit by hand.",
        "",
        "Ranges are flat tuples ``(start, end, start, end, ...)``, both ends inclusive.",
        '"""',
        "# flake8: noqa",
        f'TOKENIZERS_VERSION = "{tokenizers.__version__}"',
        "",
        fmt_ranges("CONTROL", ranges(control), "removed by BertNormalizer clean_text"),
        "",
        fmt_ranges("CLEAN_SPACE", ranges(clean_space), "turned into ' ' by clean_text"),
        "",
        fmt_ranges("CHINESE", ranges(chinese), "padded with spaces by handle_chinese_chars"),
        "",
        fmt_ranges("MN", ranges(mn), "non-spacing marks removed by strip_accents (after NFD)"),
        "",
        fmt_ranges("MARK", ranges(marks), "combining marks removed by the StripAccents normalizer"),
        "",
        fmt_ranges("WHITESPACE", ranges(white), "BertPreTokenizer splits on these (removed)"),
        "",
        fmt_ranges("PUNCT", ranges(punct), "BertPreTokenizer isolates these"),
        "",
        "# canonical combining class: flat (start, end, class, ...) for nonzero classes",
        "CCC = (",
        *[f"    0x{a:X},0x{b:X},{k}," for a, b, k in ccc_ranges],
        ")",
        "",
        "# characters with a nonzero class that strip_accents keeps",
        f"REORDER_VISIBLE = ({', '.join(f'0x{c:X}' for c in reorder_visible)}{',' if reorder_visible else ''})",
        "",
        fmt_map("NFD", nfd, "canonical decompositions (Hangul syllables are algorithmic, not listed)"),
        "",
        fmt_map("LOWER", lower, "lower-casing where it changes the character (Rust char::to_lowercase)"),
        "",
    ]
    args.out.write_text("\n".join(parts), encoding="utf-8")
    print(f"wrote {args.out}: {len(control)} control, {len(mn)} Mn, {len(punct)} punct, "
          f"{len(nfd)} NFD, {len(ccc)} ccc, {len(lower)} lower "
          f"({args.out.stat().st_size / 1024:.0f} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
