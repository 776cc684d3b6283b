"""A parsed query with its typos corrected (:mod:`kgsearch.text.spelling` on the query's
words), for one index or several (``df_of`` sums their document frequencies), and the one
line a corrected search says about itself."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from ..lines import quoted
from ..text import spelling
from .intent import classify
from .parse import Query, parse

__all__ = ["corrected", "spelling_applies", "correction_notice"]


def spelling_applies(q: Query) -> bool:
    """Whether a query's unknown words may be typos: prose, not a quoted phrase, FTS5 syntax, a
    /regex/, one identifier, a code task or a query with file or line anchors."""
    return not (q.quoted or q.fts_syntax or q.slash_regex or q.identifier or q.code_task or q.anchors)


def corrected(q: Query, df_of: Callable[[Iterable[str]], dict], paste: bool = False,
              is_word: Callable[[str], bool] | None = None,
              known_of: Callable[[set], Iterable[str]] | None = None) -> tuple[Query, list[tuple[str, str]]]:
    """``q`` with the words the index does not know corrected to a known word one edit away,
    re-parsed with ``q``'s analyser (``paste`` as :func:`~kgsearch.query.parse.parse` takes it),
    and the ``[(typed, fix)]`` pairs; ``q`` and ``[]`` when no word needs it, the query is not
    prose (:func:`spelling_applies`) or the correction would change the question's intent.
    ``is_word``: a vocabulary whose words are preferred among the corrections (see
    :func:`kgsearch.text.spelling.corrections`); ``known_of``: which terms are known, as
    :func:`~kgsearch.text.spelling.corrections` takes it."""
    if not spelling_applies(q):
        return q, []
    an = q.analyzer
    fixes = spelling.corrections(q.text, an.analyze_word, df_of, is_word, known_of)
    if not fixes:
        return q, []
    fixed = parse(spelling.apply(q.text, fixes), an, paste=paste)
    typed = classify(q).name
    if typed not in ("default", "semantic") and classify(fixed).name != typed:
        return q, []        # a word of the question ('main topics' asks for a summary) is no typo
    return replace(fixed, filters=q.filters, cut=q.cut), fixes


def correction_notice(text: str, fixes: list[tuple[str, str]]) -> str:
    """The one line a corrected search says about itself."""
    return (f"no match for {', '.join(quoted(a) for a, _ in fixes)}: searched for {quoted(text)} "
            f"({spelling.describe(fixes)}; --no-correct searches the words as typed)")
