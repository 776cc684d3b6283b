"""Numbers a person types, as ASCII text: the one check every entry point uses.

Python's ``int()`` and ``float()`` read more than kgsearch takes: other scripts' digits
(``int('٣')`` and ``int('３')`` are 3), underscores between digits (``int('3_0')`` is 30) and any
Unicode white space around the number (``int('\\u20033')``). kgsearch reads a number the same
way wherever it comes from (a command-line option, ``--weights``, an HTTP parameter or
Content-Length, ``KGSEARCH_MEMORY_MB``, ``--set``, the config file): an optional sign and ASCII
digits (a float also ``1.5``, ``.5``, ``1e3``), with ASCII spaces or tabs around it allowed (a
quoted ``" 3"``, ``memory_mb = 300 ``); ``inf`` and ``nan`` only where the caller asks for them.
Everything else is a :class:`ValueError`, which each caller turns into its own one-line message
naming the option, parameter, variable or file.

This module imports nothing from kgsearch (the CLI, the server and the library all use it).
"""
from __future__ import annotations

import math
import re

__all__ = ["parse_int", "parse_float", "as_float"]

_BLANK = " \t\r\n\f\v"                   # ASCII white space only ('\u00a0', '\u2003' are not)
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity|nan)", re.I)


def parse_int(text: str) -> int:
    """``text`` as an int: an optional sign and ASCII digits, ASCII blanks around allowed.

    >>> parse_int(" 42"), parse_int("-3")
    (42, -3)
    >>> parse_int("٣")
    Traceback (most recent call last):
    ...
    ValueError: not a whole number in ASCII digits: '٣'
    """
    if not isinstance(text, str) or not _INT.fullmatch(text.strip(_BLANK)):
        raise ValueError(f"not a whole number in ASCII digits: {text!r}")
    return int(text)


def parse_float(text: str, special: bool = False) -> float:
    """``text`` as a float (``1``, ``1.5``, ``.5``, ``1e3``, signed), ASCII blanks around allowed;
    ``inf``/``nan`` only with ``special`` (for an option that says itself why it refuses them).

    >>> parse_float("0.25"), parse_float("1e3")
    (0.25, 1000.0)
    >>> parse_float("inf")
    Traceback (most recent call last):
    ...
    ValueError: not a finite number in ASCII digits: 'inf'
    """
    core = text.strip(_BLANK) if isinstance(text, str) else ""
    if not (_FLOAT.fullmatch(core) or (special and _SPECIAL.fullmatch(core))):
        raise ValueError(f"not a finite number in ASCII digits: {text!r}")
    value = float(core)
    if not special and not math.isfinite(value):          # 1e999 overflows to inf
        raise ValueError(f"not a finite number in ASCII digits: {text!r}")
    return value


def as_float(value) -> float:
    """A number from a settings file, ``--set`` or stored settings: an int or a float (not a
    bool), or text :func:`parse_float` reads; finite either way (Python's ``json`` reads ``NaN``
    and ``Infinity``). A ``ValueError`` otherwise.

    >>> as_float(1), as_float(" 0.5")
    (1.0, 0.5)
    >>> as_float(True)
    Traceback (most recent call last):
    ...
    ValueError: not a finite number in ASCII digits: True
    """
    if isinstance(value, str):
        return parse_float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ValueError(f"not a finite number in ASCII digits: {value!r}")

