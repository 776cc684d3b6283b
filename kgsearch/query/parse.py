"""The query, analysed once: ``parse(text, analyzer) -> Query``.

Every later stage of a search reads the frozen :class:`Query` (bm25s: ``tokenize ->
Tokenized -> retrieve``); nothing downstream re-reads the raw string with its own regex. What
the parser computes, and who reads it:

============================  ==================================================================
``text``                      the cleaned string (:func:`~kgsearch.text.tokenize.clean_query`):
                              what the dense channel embeds and the response echoes; a code
                              task's without its HTML comments (an issue template's hidden
                              instructions, :func:`~kgsearch.query.paste.drop_comments`); a
                              code task's, or any query with links amid its words
                              (:func:`~kgsearch.query.paste.links_in_prose`), with its links'
                              schemes and hosts left out (:func:`~kgsearch.query.paste.drop_links`)
``terms``                     the index's analyser over ``text`` (its stemmer, stop words,
                              identifier splitting): BM25 and PRF weights, the feedback signature
``words``                     the words as written (``[\\w'-]+``): the intent rules count them and
                              match the intents' keywords in them
``quoted``, ``identifier``    a short query decided by a quoted phrase; a one-word query that
                              names something exactly (its kind): the ``exact_match`` intent
``fts_syntax``, ``fts``       quoted phrases or AND/OR/NOT/NEAR; the FTS5 MATCH expressions
``fts_terms``                 each FTS5 operand's analysed terms (the channel's bound on a long OR)
``slash_regex``, ``pattern``  a ``/regex/`` query; what the pattern channel matches
``code_token``                holds a code identifier (:func:`kgsearch.codelike.has_code_token`)
``anchors``, ``code_task``    the code names and paths it mentions; why it reads as an issue
``set_aside``                 a code task's pasted lines (banners, repeated log lines, data
                              dumps) left out of ``text`` (:mod:`.paste`); anchors read them
``relation``                  ``("calls", "rwr")`` for "who calls rwr", with the target's anchors
``about_tests``, ``about_prose``  asks for tests / for docs, changelogs, release notes
``highlight``                 content words for snippets (longest first)
``entity_words``              words whose runs may name an entity or tag (graph local/global)
``filters``                   field filters (``kind:function path:src/ -path:tests/ tag:x lang:rust
                              modified:>2026-10-01 root:work``): parsed on request (``filters=True``,
                              as the engine asks); applied before ranking (:mod:`.filters`)
``cut``                       the notice when the text was longer than
                              :data:`~kgsearch.query.cut.MAX_QUERY_CHARS` and was cut first
============================  ==================================================================

The analysis functions of each channel live with the channel (``fts.query_expressions``,
``pattern.query_parts``, ``codetask.extract``...); this module calls each of them once.
``fts``, ``fts_terms``, ``pattern``, ``highlight`` and ``relation_anchors`` are computed when first
read (most searches read none of them: a prose query runs neither the FTS5 nor the pattern
channel, and without snippets nothing reads ``highlight``), the same values as if computed here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from ..codelike import has_code_token
from ..graph.context import entity_words
from ..pack import query_terms
from ..text import fts, pattern
from ..text.postings import stored_params
from ..text.tokenize import Analyzer, clean_query, get_analyzer
from .codetask import WORD, Anchor, asks_for_prose, asks_for_tests, code_task_reason, extract, relation
from .cut import cut_query
from .filters import FIELD_ALIASES, FILTER_FIELDS, FieldFilter, reads_filters
from .paste import drop_comments, drop_links, links_in_prose, quiet_paste

__all__ = ["Query", "FieldFilter", "parse", "index_analyzer", "identifier_kind", "split_filters", "FILTER_FIELDS"]


# (a value never starts with ':': `type::custom_type` or `path::PathBuf` in pasted C++ or Rust is
# a scope, not a filter that keeps nothing)
_FILTER = re.compile(r"(?<!\S)(-?)(" + "|".join(FILTER_FIELDS + tuple(FIELD_ALIASES)) +
                     r"):(?!:)(>=|<=|>|<)?(?:\"([^\"]+)\"|([^\s\":][^\s\"]*))(?!\S)")


def split_filters(text: str) -> tuple[str, tuple[FieldFilter, ...]]:
    """``(the text without its field filters, the filters)``; a filter is a whole
    whitespace-separated ``[-]field:[op]value`` word with a field of :data:`FILTER_FIELDS` (or
    of ``FIELD_ALIASES``: ``type:`` is ``kind:``); a value with spaces is quoted (``kind:"Machine Design"``, ``path:"My Notes/"``).

    >>> split_filters("retry loop kind:function -path:tests/ modified:>2026-10-01")
    ('retry loop', (FieldFilter(field='kind', value='function', op=':', negated=False), \
FieldFilter(field='path', value='tests/', op=':', negated=True), \
FieldFilter(field='modified', value='2026-10-01', op='>', negated=False)))
    >>> split_filters('engine -path:"My Notes/" x')
    ('engine x', (FieldFilter(field='path', value='My Notes/', op=':', negated=True),))
    """
    found = tuple(FieldFilter(FIELD_ALIASES.get(m.group(2), m.group(2)), m.group(4) or m.group(5), m.group(3) or ":",
                              m.group(1) == "-") for m in _FILTER.finditer(text))
    if not found:
        return text, ()
    return " ".join(_FILTER.sub(" ", text).split()), found


# One-word queries that name something exactly (the exact_match intent).
_ONE_CAMEL = re.compile(r"^[A-Za-z_][a-z0-9_]*[A-Z][A-Za-z0-9_]*$")
_ONE_JOINED = re.compile(r"^[A-Za-z0-9]+([_-][A-Za-z0-9]+)+$")
_ONE_FILE = re.compile(r"^[\w-]+\.[A-Za-z0-9]{1,5}$")
_ONE_DOTTED = re.compile(r"^[A-Za-z_]\w*((?:\.|::)[A-Za-z_]\w*)+(\(\))?$"
                         r"|^(?:[a-z_]\w*\.)*[A-Z]\w*(?:::[A-Za-z_]\w*)*#[A-Za-z_]\w*(?:\(\))?$")   # Cls#member too
DOTTED = "dotted name"     # identifier_kind of a qualified name (the anchors channel resolves it)


def identifier_kind(word: str) -> str | None:
    """For a one-word query: why it names something exactly, or ``None``.

    >>> identifier_kind("HashMap"), identifier_kind("os.path.join"), identifier_kind("notes")
    ('CamelCase identifier', 'dotted name', None)
    >>> identifier_kind("semver::VersionReq::matches")   # a Rust path, a C++ scope
    'dotted name'
    >>> identifier_kind("ArrayUtils#toPrimitive"), identifier_kind("note#heading")   # Javadoc's member form
    ('dotted name', None)
    """
    if _ONE_CAMEL.match(word):
        return "CamelCase identifier"
    if _ONE_JOINED.match(word):
        return "a-b / a_b name"
    if _ONE_FILE.match(word):
        return "file name"
    if _ONE_DOTTED.match(word):
        return DOTTED
    return None


_QUOTED = re.compile(r'"[^"]+"|`[^`]+`')
_FTS_SYNTAX = re.compile(r'"[^"]+"|\b(AND|OR|NOT|NEAR)\b')


def _quoted(text: str) -> bool:
    """A quoted phrase decides the intent of a short query (the whole query in quotes, or
    quoted parts with at most 3 other words); in a long question it is a detail."""
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'`":
        return True
    if _QUOTED.search(s):
        return len(WORD.findall(_QUOTED.sub(" ", s))) <= 3
    return False


def _slash_regex(text: str) -> bool:
    s = text.strip()
    return len(s) > 2 and s.startswith("/") and s.rfind("/") > 0


_UNSET = object()


class _Lazy:
    """A field of :class:`Query` computed from the query's other fields when it is first read
    (a dataclass field whose default is this descriptor: ``Query(..., fts=x)`` still sets it,
    and ``==``, ``repr``, ``replace`` and ``asdict`` read it as any field). Most searches never
    read the FTS5 expressions, the pattern channel's parts, the snippets' words or the relation's
    anchors (the channels and the output that need them are off for a prose query, or for
    snippets off): their ~30 us of a ~100 us parse is spent only when one is read. The value is
    the one :func:`parse` computed before from the same fields (tests/test_parse.py)."""

    def __init__(self, compute):
        self.compute = compute

    def __set_name__(self, owner, name):
        self.key = "_lazy_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return _UNSET                   # (the dataclass's default: computed on first read)
        d = obj.__dict__
        v = d.get(self.key, _UNSET)
        if v is _UNSET:
            v = d[self.key] = self.compute(obj)
        return v

    def __set__(self, obj, value):          # (only the dataclass's __init__: the Query is frozen)
        if value is not _UNSET:
            obj.__dict__[self.key] = value


def _fts_of(q: "Query") -> tuple[str | None, str | None]:
    return fts.query_expressions(q.text)


def _fts_terms_of(q: "Query") -> tuple:
    if not q.fts_syntax:
        return ()
    an = q.analyzer or get_analyzer()
    return tuple(fts.operand_terms(e, an) for e in q.fts)


def _relation_anchors_of(q: "Query") -> tuple[Anchor, ...]:
    return tuple(extract(f"`{q.relation[1]}`")) if q.relation else ()


@dataclass(frozen=True)
class Query:
    """One query, analysed (see the module docstring for what each field is and who reads it).
    ``fts``, ``fts_terms``, ``pattern``, ``highlight`` and ``relation_anchors`` are computed when
    first read (:class:`_Lazy`), from ``text``, ``fts_syntax``, ``relation`` and ``analyzer``."""

    text: str
    terms: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    quoted: bool = False
    identifier: str | None = None
    fts_syntax: bool = False
    fts: tuple[str | None, str | None] = _Lazy(_fts_of)
    fts_terms: tuple = _Lazy(_fts_terms_of)
    slash_regex: bool = False
    pattern: tuple[tuple[str, str] | None, tuple[str, ...]] = _Lazy(lambda q: pattern.query_parts(q.text))
    code_token: bool = False
    anchors: tuple[Anchor, ...] = ()
    code_task: str | None = None
    set_aside: int = 0
    relation: tuple[str, str] | None = None
    relation_anchors: tuple[Anchor, ...] = _Lazy(_relation_anchors_of)
    about_tests: bool = False
    about_prose: bool = False
    highlight: tuple[str, ...] = _Lazy(lambda q: tuple(query_terms(q.text)))
    entity_words: tuple[str, ...] = ()
    filters: tuple[FieldFilter, ...] = ()
    cut: str | None = None
    analyzer: Analyzer | None = field(default=None, repr=False, compare=False)

    @property
    def signature(self) -> str:
        """The analysed terms, sorted, once each: what stored feedback is matched by."""
        return " ".join(sorted(set(self.terms)))

    def term_weights(self, keywords: Iterable[str] | None = None, boost: float = 5.0) -> dict[str, float]:
        """Term -> query weight for BM25 and PRF: occurrences in the query, plus ``boost`` x
        occurrences in ``keywords`` (the intent's keywords, analysed like the index's text)."""
        qw: dict[str, float] = {}
        for t in self.terms:
            qw[t] = qw.get(t, 0.0) + 1.0
        if keywords:
            an = self.analyzer or get_analyzer()
            for kw in keywords:
                for t in an(clean_query(kw)):
                    qw[t] = qw.get(t, 0.0) + boost
        return qw


def parse(text, analyzer: Analyzer | None = None, *, filters: bool = False, paste: bool = False) -> Query:
    """Analyse ``text`` once. ``analyzer``: the index's (:func:`index_analyzer`; default the
    standard Porter2 analyser). ``filters=True`` takes field filters out of the text into
    :attr:`Query.filters` (:meth:`kgsearch.query.engine.Engine.parse` asks; the engine applies them).
    ``paste``: a code task's text without pasted banners, repeated log lines and data dumps
    (:func:`kgsearch.query.paste.quiet_paste`; its anchors come from the whole text); the engine
    passes :attr:`Tuning.quiet_paste <kgsearch.query.tuning.Tuning.quiet_paste>` (off)."""
    analyzer = analyzer or get_analyzer()
    text, cut = cut_query(clean_query(text))     # the one bound on what a query may cost, before any reading
    found: tuple[FieldFilter, ...] = ()
    if filters and reads_filters(text):         # (a pasted issue's name:value words stay text)
        text, found = split_filters(text)
    bare, comments = drop_comments(text)
    if comments and code_task_reason(bare):     # an issue template's hidden instructions: not the issue
        text = bare
    words = tuple(WORD.findall(text))
    anchors = tuple(extract(text))
    reason = code_task_reason(text, anchors, len(words))
    set_aside = 0
    if reason or links_in_prose(text):   # links are addresses, not the writer's words (anchors read them)
        text, links = drop_links(text)
        words = tuple(WORD.findall(text)) if links else words
    if paste and reason:          # the words of a code task without pasted banners, logs, dumps
        text, set_aside = quiet_paste(text)
        words = tuple(WORD.findall(text)) if set_aside else words
    one = text.strip().split()
    return Query(       # (fts, fts_terms, pattern, highlight, relation_anchors: when first read)
        text=text, terms=tuple(analyzer(text)), words=words, quoted=_quoted(text),
        identifier=identifier_kind(one[0]) if len(one) == 1 else None,
        fts_syntax=bool(_FTS_SYNTAX.search(text)), slash_regex=_slash_regex(text),
        code_token=has_code_token(text.strip()), anchors=anchors, code_task=reason, set_aside=set_aside,
        relation=relation(text), about_tests=asks_for_tests(text), about_prose=asks_for_prose(text),
        entity_words=tuple(entity_words(text)), filters=found, cut=cut, analyzer=analyzer)


def index_analyzer(ix) -> Analyzer:
    """The analyser the index's text was indexed with (its stored BM25 settings: stemmer,
    identifier splitting); the standard one when the index holds no text yet."""
    _, params = stored_params(ix)
    return params.analyzer() if params is not None else get_analyzer()
