"""Numbers on the command line as ASCII digits: argparse's ``type=int`` and ``type=float`` are
Python's ``int`` and ``float``, which also read Arabic-Indic and fullwidth digits (``-k ٣``,
``-k ３``) and underscores (``-k 3_0``); these read what :mod:`kgsearch.numerals` reads (and
``inf``/``nan`` for a float, which each option refuses in its own words) and say the rest as
argparse does (``invalid int value``, exit 2)."""
from __future__ import annotations

from ..numerals import parse_float, parse_int

__all__ = ["INT", "FLOAT"]


def INT(text: str) -> int:
    return parse_int(text)


def FLOAT(text: str) -> float:
    # (inf and nan pass: each option says itself what it takes, `--diversity must be a factor > 0`)
    return parse_float(text, special=True)


INT.__name__, FLOAT.__name__ = "int", "float"      # (argparse names the type in its message)
