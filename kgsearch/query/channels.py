"""The retrieval channels the engine can run, as a typed registry of plain imports.

A channel has the same shape everywhere (docs/DESIGN.md, "Query-time channels")::

    search(ix, query, k, **kw) -> (node ids int64, scores) best first, or a one-line str saying why it is off
    score_all(ix, query, **kw) -> (ids ascending, scores, population)   # for z-scores over the index
    score_ids(ix, query, ids, **kw) -> scores aligned with ids             # fill-in for other candidates

and feeds one fused signal (``text``, ``embedding``, ``graph``, ``intent``). The four graph
channels have no search function of their own: the graph stage computes them from the first
stage's candidates (:mod:`kgsearch.query.graph_stage`). A gate says when a channel is worth
running for a query; a channel asked for alone always runs.

Each entry calls its module's function when it runs (``bm25.search``, looked up then), so a
test can replace a module's function and the engine uses the replacement.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ..codelike import has_code_token
from ..embed import dense
from ..text import bm25, fts, keywords, pattern, prf
from . import anchors

__all__ = ["Channel", "CHANNELS", "ALL_CHANNELS", "GRAPH_CHANNELS", "DEFAULT_CHANNELS", "SIGNAL_OF",
           "wants_fts", "wants_pattern"]


@dataclass(frozen=True)
class Channel:
    name: str
    signal: str                                    # the fused signal it feeds (linear) / whose weight it takes (rrf)
    search: Callable | None = None
    score_all: Callable | None = None
    score_ids: Callable | None = None
    gate: Callable[[str, object], str | None] | None = None   # (query, intent) -> why it is skipped, or None
    absolute: bool = False          # scores in [0, 1] on an absolute scale (not divided by the query's best)
    added: bool = False             # added to its signal (x Tuning.anchor_weight) instead of the max of the channels


_FTS_SYNTAX = re.compile(r'"[^"]+"|\b(AND|OR|NOT|NEAR)\b')


def wants_fts(query: str) -> bool:
    """FTS5 adds what BM25 cannot: quoted phrases and AND/OR/NOT/NEAR. Otherwise it is the same
    bag-of-words ranking without stemming and is not run by default."""
    return bool(_FTS_SYNTAX.search(query))


def wants_pattern(query: str, it) -> bool:
    """The pattern channel (identifiers, typos, regex) runs for exact-match intents, ``/regex/``
    queries and queries holding an identifier (snake_case, camelCase, dotted, ``call()``,
    backticks). Scientific tokens such as ``mRNA`` or ``e.g.`` do not count: measured, letting
    them through cost 0.003 nDCG@10 on the shared sets."""
    q = query.strip()
    if len(q) > 2 and q.startswith("/") and q.rfind("/") > 0:
        return True
    if it.name == "exact_match" and it.reason != "quoted phrase":
        return True
    return has_code_token(q)


CODE_TASKS = ("code_task", "relation")


def _fts_gate(query: str, it) -> str | None:
    if it.name in CODE_TASKS:
        return "a code task: its quoted words are not phrase searches"
    return None if wants_fts(query) else "no quoted phrase or boolean operator"


def _pattern_gate(query: str, it) -> str | None:
    if it.name in CODE_TASKS:
        return "a code task: its names are matched exactly by the anchors channel"
    return None if wants_pattern(query, it) else "not an identifier, file name or /regex/ query"


def _anchors_gate(query: str, it) -> str | None:
    return None if it.name in CODE_TASKS else "not a code task"


def _relation_gate(query: str, it) -> str | None:
    return None if it.name == "relation" else "not a relation question (who calls X, where is X used)"


# Order matters: channels run, and are listed in responses, in this order.
CHANNELS: dict[str, Channel] = {c.name: c for c in (
    Channel("bm25", "text",
            search=lambda ix, q, k, **kw: bm25.search(ix, q, k, **kw),
            score_all=lambda ix, q, **kw: bm25.score_all(ix, q, **kw),
            score_ids=lambda ix, q, ids, **kw: bm25.score_ids(ix, q, ids, **kw)),
    Channel("prf", "text",
            search=lambda ix, q, k, **kw: prf.search(ix, q, k, **kw),
            score_all=lambda ix, q, **kw: prf.score_all(ix, q, **kw),
            score_ids=lambda ix, q, ids, **kw: prf.score_ids(ix, q, ids, **kw)),
    Channel("fts", "text",
            search=lambda ix, q, k, **kw: fts.search(ix, q, k, **kw),
            score_all=lambda ix, q, **kw: fts.score_all(ix, q, **kw),
            gate=_fts_gate),
    Channel("pattern", "text",
            search=lambda ix, q, k, **kw: pattern.search(ix, q, k, **kw),
            gate=_pattern_gate),
    Channel("equiv", "text",
            search=lambda ix, q, k, **kw: keywords.search_equivalences(ix, q, k, **kw)),
    Channel("anchors", "text",
            search=lambda ix, q, k, **kw: anchors.search(ix, q, k, **kw),
            gate=_anchors_gate, absolute=True, added=True),
    Channel("relation", "intent",
            search=lambda ix, q, k, **kw: anchors.relation_search(ix, q, k, **kw),
            gate=_relation_gate),
    Channel("dense", "embedding",
            search=lambda ix, q, k, **kw: dense.search(ix, q, k, **kw),
            score_all=lambda ix, q, **kw: dense.score_all(ix, q, **kw),
            score_ids=lambda ix, q, ids, **kw: dense.score_ids(ix, q, ids, **kw)),
    Channel("graph", "graph"),
    Channel("intent", "intent"),
    Channel("local", "graph"),
    Channel("global", "graph"),
)}

ALL_CHANNELS = tuple(CHANNELS)
GRAPH_CHANNELS = ("graph", "intent", "local", "global")
SIGNAL_OF = {name: c.signal for name, c in CHANNELS.items()}
# Channels of the default pipeline (chosen by `kgsearch eval --ablate` on ../shared/bench; README).
DEFAULT_CHANNELS = ("bm25", "fts", "dense", "graph", "intent", "pattern", "equiv", "local", "global", "anchors",
                    "relation")
