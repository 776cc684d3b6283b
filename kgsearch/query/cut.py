"""The one bound on what a query's text may cost: :func:`cut_query`, called where a query enters
(``Engine.search``; ``kgsearch/query/parse.py`` calls it first once it exists).

Every stage reads the query text: intent rules, tokenising, the code-task anchors, the graph
seeds, snippets; together about 2 ms per KB here, so a 1 MB issue pasted whole took 1.8-2.0 s.
Past :data:`MAX_QUERY_CHARS` the text is cut at the last whitespace before the limit (a word is
never split unless it alone is that long) and the answer says so in one notice. An issue's
title, error and first paragraphs come first; what a search can use of a longer text is
there already.
"""
from __future__ import annotations

__all__ = ["MAX_QUERY_CHARS", "cut_query"]

MAX_QUERY_CHARS = 32_768


def cut_query(text: str, limit: int = MAX_QUERY_CHARS) -> tuple[str, str | None]:
    """``(text, None)`` when ``text`` is at most ``limit`` characters, else ``(its first part,
    a one-line notice)``; the part ends at the last whitespace of the first ``limit`` characters
    when that keeps at least three quarters of them.

    >>> cut_query("short query")
    ('short query', None)
    >>> cut_query("alpha beta gamma", limit=12)
    ('alpha beta', 'the query was cut to its first 10 of 16 characters (a search reads at most 12; put what matters first)')
    """
    if len(text) <= limit:
        return text, None
    part = text[:limit]
    space = max(part.rfind(" "), part.rfind("\n"), part.rfind("\t"))
    if space >= limit * 3 // 4:
        part = part[:space]
    part = part.rstrip()
    return part, (f"the query was cut to its first {len(part):,} of {len(text):,} characters "
                  f"(a search reads at most {limit:,}; put what matters first)")
