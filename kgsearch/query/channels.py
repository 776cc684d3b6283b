"""The retrieval channels, described once: one :class:`Channel` each in :data:`CHANNELS`.

A channel has the same shape everywhere (docs/DESIGN.md, "Query-time channels")::

    search(ix, q, k, **kw) -> (node ids int64, scores) best first, or a one-line str saying why it is off
    score_all(ix, q, **kw) -> (ids ascending, scores, population)   # for z-scores over the index
    score_ids(ix, q, ids, **kw) -> scores aligned with ids          # fill-in for other candidates

where ``q`` is the parsed :class:`~kgsearch.query.parse.Query`: each entry hands its module
what the parser already analysed (term weights, FTS5 expressions, pattern tokens, anchors), so
no channel reads the raw text again. A channel feeds one fused signal (``text``, ``embedding``,
``graph``, ``intent``). The four graph channels have no search function of their own: the
graph stage computes them from the first stage's candidates (:mod:`kgsearch.query.graph_stage`).
A gate says when a channel is worth running for a query and intent (from the Query's fields
and the intent's flags); a channel asked for alone always runs. ``help`` is what ``kgsearch
search --help`` and the MCP schema say about it; ``default`` puts it in the default pipeline.

Each entry imports its module when it runs and looks the function up then (``bm25.search``),
so ``kgsearch --help`` imports no engine and a test can replace a module's function.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .intent import Intent
    from .parse import Query

__all__ = ["Channel", "CHANNELS", "LEXICAL", "dense_kwargs", "dense_query", "ALL_CHANNELS", "GRAPH_CHANNELS", "DEFAULT_CHANNELS", "SIGNAL_OF", "SIGNALS"]

SIGNALS = ("embedding", "text", "graph", "intent")


@dataclass(frozen=True)
class Channel:
    name: str
    signal: str                     # the fused signal it feeds (linear) / whose weight it takes (rrf)
    help: str
    search: Callable | None = None
    score_all: Callable | None = None
    score_ids: Callable | None = None
    gate: Callable[["Query", "Intent"], str | None] | None = None   # why it is skipped, or None
    default: bool = True            # runs in the default pipeline (when its gate lets it)
    absolute: bool = False          # scores in [0, 1] on an absolute scale (not divided by the query's best)
    added: bool = False             # added to its signal (x Tuning.anchor_weight) instead of the max of the channels


# ---------------------------------------------------------------------------- gates
def _fts_gate(q: "Query", it: "Intent") -> str | None:
    """FTS5 adds what BM25 cannot: quoted phrases and AND/OR/NOT/NEAR. Otherwise it is the same
    bag-of-words ranking without stemming and is not run by default."""
    if it.spec.names_code:
        return "a code task: its quoted words are not phrase searches"
    return None if q.fts_syntax else "no quoted phrase or boolean operator"


def _pattern_gate(q: "Query", it: "Intent") -> str | None:
    """The pattern channel (identifiers, typos, regex) runs for exact-match intents (unless a
    quoted phrase made it one), ``/regex/`` queries and queries holding an identifier
    (snake_case, camelCase, dotted, ``call()``, backticks). Scientific tokens such as ``mRNA``
    or ``e.g.`` do not count: measured, letting them through cost 0.003 nDCG@10 on the shared sets."""
    if it.spec.names_code:
        return "a code task: its names are matched exactly by the anchors channel"
    if q.slash_regex or q.code_token or (it.spec.exact and (it.forced or not q.quoted)):
        return None
    return "not an identifier, file name or /regex/ query"


_NAMES = ("dotted", "identifier", "call", "backtick")   # anchor kinds that name a definition


def _anchors_gate(q: "Query", it: "Intent") -> str | None:
    """Code tasks and relation questions name code; so does a query that is one identifier or
    qualified name (``HasPersistentFlags``, ``test_hidden_option``, ``JPypeContext.getTypeManager``,
    ``semver::VersionReq::matches``; not a file name): the pattern channel puts its exact match no
    higher than the best BM25 hit, where a neighbour of a like name (``PersistentFlags``, called
    by everything) wins on the graph signal, while the anchors resolve the name (and a qualifier:
    a class, a file's module, a Go package, a Rust crate path) and add their evidence."""
    if it.spec.names_code or (it.spec.exact and q.identifier and any(a.kind in _NAMES for a in q.anchors)):
        return None
    return "not a code task"


def _relation_gate(q: "Query", it: "Intent") -> str | None:
    return None if it.spec.relation else "not a relation question (who calls X, where is X used)"


def _dense_gate(q: "Query", it: "Intent") -> str | None:
    """A text with no letter or digit in any script (``***``, ``(((``, ``->``) holds no word the
    model knows: its vector is the punctuation's, and its nearest nodes are noise ranked as if
    they matched (``***`` put a note at cosine 0.74). CJK, accents and digits count as words."""
    return None if any(c.isalnum() for c in q.text) else "no letter or digit in the query"


def _browse_gate(q: "Query", it: "Intent") -> str | None:
    """A query of filters alone (``tag:journal``, ``kind:function path:src/net/``) has no word
    for the other channels to match: this one lists what the filters keep."""
    if any(c.isalnum() for c in q.text):
        return "the query has words"
    return None if q.filters else "no filter"


# ---------------------------------------------------------------------------- what each runs
def _weights(q: "Query", kw: dict) -> dict[str, float]:
    """BM25/PRF term weights: the query's terms, plus the intent keywords x boost when asked."""
    return q.term_weights(kw.get("boost_terms"), float(kw.get("boost", 5.0))) if kw.get("boost_terms") \
        else q.term_weights()


def _bm25_search(ix, q, k, **kw):
    from ..text import bm25
    return bm25.search(ix, _weights(q, kw), k, pooled=kw.get("pooled"))


def _bm25_all(ix, q, **kw):
    from ..text import bm25
    return bm25.score_all(ix, _weights(q, kw), pooled=kw.get("pooled"))


def _bm25_ids(ix, q, ids, **kw):
    from ..text import bm25
    return bm25.score_ids(ix, _weights(q, kw), ids, pooled=kw.get("pooled"))


def _prf_search(ix, q, k, **kw):
    from ..text import prf
    return prf.search(ix, _weights(q, kw), k)


def _prf_all(ix, q, **kw):
    from ..text import prf
    return prf.score_all(ix, _weights(q, kw))


def _prf_ids(ix, q, ids, **kw):
    from ..text import prf
    return prf.score_ids(ix, _weights(q, kw), ids)


def _fts_search(ix, q, k, **kw):
    from ..text import fts
    return fts.search(ix, q.text, k, expressions=q.fts, operand_terms=q.fts_terms, **kw)


def _fts_all(ix, q, **kw):
    from ..text import fts
    return fts.score_all(ix, q.text, expressions=q.fts, operand_terms=q.fts_terms, **kw)


def _pattern_search(ix, q, k, **kw):
    from ..text import pattern
    return pattern.search(ix, q.text, k, parts=q.pattern, **kw)


def _equiv_search(ix, q, k, **kw):
    from ..text import keywords
    return keywords.search_equivalences(ix, q.text, k, **kw)


def _anchors_search(ix, q, k, **kw):
    from . import anchors
    return anchors.search(ix, q, k, **kw)


def _relation_search(ix, q, k, **kw):
    from . import anchors
    return anchors.relation_search(ix, q, k, **kw)


LEXICAL = ("bm25", "prf", "fts")     # the channels that rank by the rarity of the query's words


def dense_kwargs(idf_power: float, requested) -> dict:
    """The dense channel's arguments for a search of the ``requested`` channels: words weighted
    by ``idf ** idf_power`` (:func:`dense_query`) when it ranks without a lexical channel, the
    text as the model encodes it otherwise. Measured on the seven shared BEIR sets
    (docs/ranking.md, "Dense"): alone, nDCG@10 0.3515 -> 0.3646 at 0.5; fused with BM25, 0.5150
    -> 0.5125 (BM25 already carries the words' rarity; the plain encoding is what it misses)."""
    if idf_power <= 0 or any(c in LEXICAL for c in requested):
        return {}
    return {"idf_power": idf_power}


def dense_query(ix, q, idf_power: float = 0.0, pooled: dict | None = None, **_kw) -> str | tuple:
    """What the dense channel encodes for ``q`` in ``ix``: the text as it is, or (``idf_power``
    > 0) its words weighted by ``idf ** idf_power``, each word's BM25 idf in this index (or in
    the ``pooled`` indexes searched as one): a static model averages its tokens' vectors, so a
    word every document holds weighs as much as the one that tells them apart. Stop words (no
    term) and the text between words are left out. The text as it is when the index has no
    postings or no word has weight."""
    if idf_power <= 0:
        return q.text
    from ..text import bm25
    words = bm25.word_idfs(ix, q.text, pooled)
    kept = tuple((w, f ** idf_power) for w, f in words or () if f > 0)
    return kept or q.text


def _dense_search(ix, q, k, **kw):
    from ..embed import dense
    return dense.search(ix, dense_query(ix, q, **kw), k)


def _dense_all(ix, q, **kw):
    from ..embed import dense
    return dense.score_all(ix, dense_query(ix, q, **kw))


def _dense_ids(ix, q, ids, **kw):
    from ..embed import dense
    return dense.score_ids(ix, dense_query(ix, q, **kw), ids)


def _browse_all(ix, q, **kw):
    """Every node of the graph by PageRank x the graph's node count (mean 1 in any index, so
    that several indexes' lists compare); None without graph scores."""
    from ..graph import context
    return context.browse_scores(ix)


def _browse_search(ix, q, k, **kw):
    from ..arrays import top_ids
    f = _browse_all(ix, q)
    return "no graph scores in this index (`kgsearch index` computes them)" if f is None else top_ids(f[0], f[1], k)


# Order matters: channels run, and are listed in responses and --help, in this order.
CHANNELS: dict[str, Channel] = {c.name: c for c in (
    Channel("bm25", "text", "BM25 over the stored postings (the index's stemmer)",
            _bm25_search, _bm25_all, _bm25_ids),
    Channel("prf", "text", "BM25 with RM3 pseudo-relevance feedback (opt-in: add it to --channels)",
            _prf_search, _prf_all, _prf_ids, default=False),
    Channel("fts", "text", "SQLite FTS5: quoted phrases and AND/OR/NOT/NEAR (runs when the query has them)",
            _fts_search, _fts_all, gate=_fts_gate),
    Channel("pattern", "text", "identifiers, file names, typos and /regex/ over node names (identifier queries)",
            _pattern_search, gate=_pattern_gate),
    Channel("equiv", "text", "targets of your equivalence classes (equivalences.json) whose phrase the query holds",
            _equiv_search),
    Channel("anchors", "text", "code tasks and one-name queries: the names and paths the text mentions that exist "
            "in the index",
            _anchors_search, gate=_anchors_gate, absolute=True, added=True),
    Channel("relation", "intent", "relation questions (who calls X, where is X used): the edges into X",
            _relation_search, gate=_relation_gate),
    Channel("dense", "embedding", "embedding similarity (static model; alone, the words weighted by their rarity; "
            "off without vectors, or when the query has no letter or digit)",
            _dense_search, _dense_all, _dense_ids, gate=_dense_gate),
    Channel("browse", "text", "a query of filters alone (tag:journal, kind:function path:src/): what they keep, "
            "most linked first (PageRank)", _browse_search, _browse_all, gate=_browse_gate),
    Channel("graph", "graph", "neighbours of the best candidates (a random walk for code queries)"),
    Channel("intent", "intent", "nodes along the intent's edge types from the best candidates"),
    Channel("local", "graph", "nodes linked to the entities and tags the query names"),
    Channel("global", "graph", "the communities of the entities and tags the query names"),
)}

ALL_CHANNELS = tuple(CHANNELS)
GRAPH_CHANNELS = tuple(n for n, c in CHANNELS.items() if c.search is None)
SIGNAL_OF = {name: c.signal for name, c in CHANNELS.items()}
# The default pipeline (chosen by `kgsearch eval --ablate` on ../shared/bench; docs/ranking.md).
DEFAULT_CHANNELS = tuple(n for n, c in CHANNELS.items() if c.default)
