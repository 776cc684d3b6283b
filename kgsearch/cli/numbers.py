"""Numbers on the command line as ASCII digits: argparse's ``type=int`` and ``type=float`` are
Python's ``int`` and ``float``, which also read Arabic-Indic and fullwidth digits (``-k ٣``,
``-k ３``); these read ASCII digits (and ``inf``/``nan``, which each option refuses in its own
words) and say the rest as argparse does (``invalid int value``, exit 2). The HTTP API's
parameters take ASCII digits too (:func:`kgsearch.serve.api.ascii_int`)."""
from __future__ import annotations

import re

__all__ = ["INT", "FLOAT"]

_INT = re.compile(r"\s*[+-]?[0-9]+\s*")
# (inf and nan pass: each option says itself what it takes, `--diversity must be a factor > 0`)
_FLOAT = re.compile(r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)\s*", re.I)


def _ascii(convert, pattern):
    def parse(text: str):
        if not pattern.fullmatch(text):
            raise ValueError(text)
        return convert(text)
    parse.__name__ = convert.__name__          # (argparse names the type in its message)
    return parse


INT = _ascii(int, _INT)
FLOAT = _ascii(float, _FLOAT)
