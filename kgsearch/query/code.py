"""Code at query time: which nodes are code, whether a search is a code query, and which code
is not the project's own source.

"Is this a code query" is decided once per search, by :func:`is_code_query` on the first
stage's best candidates (before the graph stage, which walks the call graph for code queries
and pulls from neighbours for prose), from the nodes' kinds in the index: so it holds whatever
channels ran (``--channels bm25,dense`` too), and the ranking's filters (vendored code out,
docs/examples and prose down: :mod:`.adjust`) apply whenever it is true.
"""
from __future__ import annotations

import re

import numpy as np

from ..codelike import path_role
from ..store.rows import rel_path
from ..store.sql import in_chunks

__all__ = ["CODE_KINDS", "TOP", "is_code_query", "is_vendored", "is_source"]

CODE_KINDS = ("module", "class", "function", "method")
TOP = 10            # first-stage candidates whose kinds decide

_VENDORED = re.compile(r"/(vendor|vendored|_vendor|third_party|node_modules|mocks)/|\.min\.")


def is_code_query(conn, cand: np.ndarray, first: np.ndarray) -> bool:
    """True when most of the :data:`TOP` best candidates by first-stage score ``first``
    (aligned with ``cand``, node ids) are code: module, class, function or method."""
    if not len(cand):
        return False
    top = cand[np.argsort(-first, kind="stable")[:TOP]].tolist()
    kinds = dict(in_chunks(conn, "SELECT id, kind FROM nodes WHERE id IN ({})", top))
    known = [kinds[i] for i in top if i in kinds]
    return bool(known) and sum(k in CODE_KINDS for k in known) / len(known) > 0.5


def is_vendored(m: dict) -> bool:
    """Vendored, minified or mock code, by path and name."""
    p = (m.get("path") or "").replace("\\", "/").lower()
    return bool(_VENDORED.search(p)) or (m.get("name") or "").startswith(("Mock", "mock_"))


def is_source(m: dict, about_tests: bool = False) -> bool:
    """Source code: a code node outside test and docs/examples folders (tests count when the
    query is about tests)."""
    if m.get("kind") not in CODE_KINDS:
        return False
    role = path_role(rel_path(m))
    return role == "source" or (role == "test" and about_tests)
