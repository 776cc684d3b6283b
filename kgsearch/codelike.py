"""What "looks like code" means, in one place: the identifier shapes every part of kgsearch uses.

Four shapes make a code identifier in free text:

* ``snake_case`` (and ``_private``, ``item_3``);
* ``camelCase`` / ``CamelCase`` (an inner capital after lower-case letters or digits:
  ``getElementById``, ``HashMap``, ``XMLHttpRequest``; not ``SQLite`` or ``APIs``);
* ``dotted.names`` (``os.path.join``), and ``scoped::names`` (Rust paths, C++ scopes:
  ``Bytes::split_off``), which name the same thing as the dotted form (:func:`dotted`);
* ``calls()`` (``parse_args()``), and anything in ``backticks``.

Used by the query side (whether the pattern channel runs: :func:`has_code_token`; which
tokens it matches: :func:`is_code_token`; the anchors of a code task), keyword extraction and
the plain-text loader's entities (:data:`SNAKE`, :data:`CAMEL`, :data:`DOTTED`, :data:`CALL`),
and the Python loader and the ranking (:func:`is_test_path`, :func:`path_role`). It sits below
every package (text/ and ingest/ use it); what only the query needs (one-word queries that name
something exactly) lives in :mod:`kgsearch.query.parse`.

>>> has_code_token("why does parse_args fail"), has_code_token("how do I back up my notes")
(True, False)
>>> [t for t in "the parse_args of os.path in the README".split() if is_code_token(t)]
['parse_args', 'os.path', 'README']
"""
from __future__ import annotations

import re

__all__ = ["SNAKE", "CAMEL", "DOTTED", "SCOPED", "MEMBER", "CALL", "BACKTICK", "dotted", "has_code_token", "is_code_token", "is_test_path",
           "path_role"]

# Shapes for finding identifiers in text (word-bounded; consumers add their own context).
SNAKE = re.compile(r"\b_?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
CAMEL = re.compile(r"\b(?:[A-Z]+[a-z0-9]+[A-Z]\w*|[a-z]+[0-9]*[A-Z]\w*)\b")
DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# (a Ruby method after its class: Shop::Cart#total, as Ruby 3.4's backtraces and its docs write it)
SCOPED = re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+(?:#[A-Za-z_]\w*)?")
# a member after its class as Javadoc, JSDoc and Ruby's docs write it: ArrayUtils#toPrimitive,
# Array#map, org.x.Cls#m (the class capitalised: not a wikilink's Note#heading in lower case)
MEMBER = re.compile(r"\b(?:[a-z_]\w*\.)*[A-Z]\w*#[A-Za-z_]\w*\b")
CALL = re.compile(r"\b([A-Za-z_]\w*)\(\)")
BACKTICK = re.compile(r"`([^`\n]{1,200})`")

# "Holds a code token": one lower/digit-underscore-lower/digit pair, a lower-Upper-lower
# transition, a dotted name with a 2+ letter head, a call, or a backtick. Scientific tokens
# such as ``mRNA`` or ``e.g.`` do not count: measured, letting them through the pattern gate
# cost 0.003 nDCG@10 on the shared sets.
_CODE_TOKEN = re.compile(r"[a-z0-9]_[a-z0-9]|[a-z][A-Z][a-z]|\b[A-Za-z_]\w+(?:\.|::)[A-Za-z_]\w+|\w\(\)|`",
                         re.ASCII)


def dotted(name: str) -> str:
    """A qualified name in the index's notation: every loader joins scopes with dots, so a
    Rust path or a C++ scope in a query (``Bytes::split_off``) means ``Bytes.split_off``.

    >>> dotted("Bytes::split_off"), dotted("std::vector"), dotted("os.path")
    ('Bytes.split_off', 'std.vector', 'os.path')
    """
    return name.replace("::", ".")


def has_code_token(text: str) -> bool:
    """Whether ``text`` holds at least one code identifier (see :data:`_CODE_TOKEN`)."""
    return bool(_CODE_TOKEN.search(text))


def is_code_token(token: str) -> bool:
    """Whether one whitespace-free token of a query may name a symbol: it has an underscore, an
    inner dot, a digit or an inner capital (``parse_args``, ``os.path``, ``utf8``, ``getX``)."""
    return ("_" in token or "." in token.strip(".") or "::" in token.strip(":") or any(c.isdigit() for c in token)
            or any(c.isupper() for c in token[1:]))


# ---------------------------------------------------------------------------- paths
TEST_DIRS = frozenset({"test", "tests", "testing"})
DOC_DIRS = frozenset({"doc", "docs", "example", "examples", "demo", "demos", "sample", "samples"})


def is_test_path(rel: str) -> bool:
    """A test file: ``test_*``, ``*_test``, ``conftest``, or anything under a ``test``,
    ``tests`` or ``testing`` folder (``rel`` is relative to the indexed root).

    >>> is_test_path("testing/python/collect.py"), is_test_path("src/_pytest/python.py")
    (True, False)
    """
    parts = rel.replace("\\", "/").split("/")
    base = parts[-1].rsplit(".", 1)[0]
    return (base.startswith("test_") or base.endswith("_test") or base == "conftest"
            or any(p in TEST_DIRS for p in parts[:-1]))


def path_role(rel: str) -> str:
    """``"test"``, ``"docs"`` (documentation, examples, demos) or ``"source"``, by the path under
    the indexed root.

    >>> path_role("docs/conf.py"), path_role("tests/a.py"), path_role("src/pkg/docstring.py")
    ('docs', 'test', 'source')
    """
    if is_test_path(rel):
        return "test"
    parts = rel.replace("\\", "/").split("/")[:-1]
    return "docs" if any(p.lower() in DOC_DIRS for p in parts) else "source"
