"""Ranking adjustments after fusion, and the final order.

In this order, each recorded per candidate so ``--explain`` adds up:

1. ``shift``: standardised scores can be negative; every candidate moves up so the weakest
   scores 0 (multiplicative factors need a positive scale);
2. ``test_or_vendored``: test code x :attr:`Tuning.test_penalty` unless the query is about
   tests (word boundaries, :attr:`Query.about_tests <kgsearch.query.parse.Query.about_tests>`;
   a code task's mention of tests never is, a relation question always is: the intent's
   ``code_task`` and ``relation`` flags); shared structural nodes (tags, entities,
   placeholders) x 0 except for exact-match intents and a query that asks for a kind
   (``kind:tag``: the filters already keep only the kinds named); deleted nodes x 0; for code queries
   (:func:`kgsearch.query.code.is_code_query`) and code tasks: vendored/generated/minified/mock
   code (``FLAG_VENDORED`` or by path) x :attr:`Tuning.vendored_penalty`, a type stub (``.pyi``,
   ``.d.ts``) or a script compiled from TypeScript whose implementation or source is indexed x
   :attr:`Tuning.stub_penalty` (:func:`~kgsearch.query.code.stub_implementations`; the implementation
   ranks; ``--group file`` counts the stub's nodes under it; for a query of one name only the stub's
   definitions its implementation defines too: :func:`~kgsearch.query.code.stub_twins`), and docs/examples code and prose (notes, changelogs, release notes) x
   :attr:`Tuning.nonsource_penalty` unless the query asks for docs; a type alias or a C/C++
   macro the query does not name x :attr:`Tuning.declaration_penalty` (:func:`declarations`);
   then ``session`` / ``feedback`` factors when a session or stored feedback applies
   (:mod:`.feedback`; absent otherwise);
3. ``diversity``: x factor for the first hit of each new graph community (off by default);
4. one hit per note (a section stands for its note), then the top ``k``.

Before fusion, :func:`query_weights` moves a prose query's embedding weight by the query's own
evidence of how far its embedding can be trusted (its length, the words the model knows whole).
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from .. import pack
from ..cjk import split_runs
from ..store.rows import node_flags, node_meta
from ..text import term_proximity
from ..types import FLAG_AUTO, FLAG_TEST
from .code import implemented_stubs, is_source, is_vendored, stub_twins
from .tuning import TUNING, Tuning

__all__ = ["rank", "proximity", "query_weights", "embedding_factor", "query_words", "whole_word_share", "ADDITIVE", "Unread"]

# the adjustments added to a score (the others multiply it)
ADDITIVE = ("hits", "proximity", "shift", "file_members", "declaring_module")


_WORD = re.compile(r"\w+")
_LETTERS = re.compile(r"[A-Za-z]{3,}")


def whole_word_share(tokenize, text: str) -> float:
    """The share of ``text``'s words of three or more Latin letters that the static model holds as
    one token (``tokenize``: the model's, a list of texts -> token ids each, unknown ones dropped;
    a word with no known piece is left out). 1.0 for a text with no such word: nothing says the
    model does not know it."""
    words = [w.lower() for w in _LETTERS.findall(text)]
    if not words:
        return 1.0
    toks = [t for t in tokenize(words) if t]
    return sum(len(t) == 1 for t in toks) / len(toks) if toks else 1.0


def query_words(text: str) -> int:
    """How many words ``text`` holds: runs of word characters, where a run of Han, Kana or Hangul
    (:mod:`kgsearch.cjk`: no spaces between its words) counts one word per two characters,
    rounded up (a Chinese or Japanese word is one to three characters; Hangul's spaces
    separate words with their particles, two to four syllables).

    >>> query_words("why does sync fail"), query_words("备份服务器在哪里"), query_words("東京 sync 確認")
    (4, 4, 3)
    """
    n = 0
    for word in _WORD.findall(text):
        for is_cjk, piece in split_runs(word):
            n += -(-len(piece) // 2) if is_cjk else 1
    return n


def embedding_factor(text: str, tokenize, tuning: Tuning = TUNING) -> float:
    """What a prose query's embedding weight is multiplied by: ``clip((words / embed_length_ref)
    ** embed_length_power, 0.5, 2) x whole_word_share ** embed_known_power`` (1.0 with both
    powers 0). A static model's query vector is the mean of its words' vectors: a query of many
    words says more in it than the two words a lexical match finds exactly (long queries lean on
    the embedding, short ones on text), and a word the model knows only as pieces
    (``tokenize`` None: no model, the share is 1) says little in it."""
    t = tuning
    f = 1.0
    if t.embed_length_power:
        n = max(1, query_words(text))
        f = min(2.0, max(0.5, (n / t.embed_length_ref) ** t.embed_length_power))
    if t.embed_known_power and tokenize is not None:
        f *= whole_word_share(tokenize, text) ** t.embed_known_power
    return f


def query_weights(ix, tuning: Tuning, q, it, opts, weights: dict, fusion: str, shared: dict | None = None) -> dict:
    """The fusion weights for this query: the intent's, with a prose query's embedding weight times
    :func:`embedding_factor`. Unchanged: powers 0, weights given (``--weights``), channels asked
    for (``--channels``), not linear fusion, a code task or relation question (their profiles were
    chosen on the code tasks), no embedding weight. Several indexes searched as one compute the
    same factor (the query's text and the model only), so they still rank as one index; the
    indexes of one search that share the parsed query, the model and the tuning compute it once
    (``shared``: :attr:`kgsearch.query.multi.Pool.shared`)."""
    t = tuning
    if ((not t.embed_length_power and not t.embed_known_power) or fusion != "linear" or opts.weights
            or opts.channels is not None or it.spec.code_task or it.spec.relation
            or weights.get("embedding", 0.0) <= 0):
        return weights
    tokenize, model = None, None
    if t.embed_known_power:
        from ..embed.index_model import query_model

        model = query_model(ix)
        model = None if isinstance(model, str) else model     # (a model is loaded once per process)
        tokenize = None if model is None else model.tokenize
    got = shared.get("embedding_factor") if shared is not None else None
    if got is not None and got[0] is q and got[1] is model and got[2] is t:
        f = got[3]
    else:
        f = embedding_factor(q.text, tokenize, t)
        if shared is not None:
            shared["embedding_factor"] = (q, model, t, f)
    return weights if f == 1.0 else dict(weights, embedding=weights["embedding"] * f)


def proximity(ix, tuning: Tuning, q, it, opts, has_bm25: bool, cand: np.ndarray, fused: np.ndarray,
              fusion: str) -> np.ndarray | None:
    """Term proximity (:mod:`kgsearch.text.term_proximity`) of the fused top
    ``Tuning.proximity_top``: ``proximity_weight`` x each one's score / the scores' spread over
    them, added (0 elsewhere). None where it does not apply: weight 0 (the default), a query of
    fewer than two distinct terms, a search with channels asked for (``--channels``: BM25 alone
    stays BM25), without BM25's answer, not linear z fusion, a code task or relation question
    (their words are names and prose, not phrases), no candidate with a pair, or several
    indexes searched as one (the engine does not ask: the top N and the spread are the union's,
    which no index has alone)."""
    t = tuning
    if (t.proximity_weight <= 0 or fusion != "linear" or opts.norm != "z" or opts.channels is not None
            or it.spec.code_task or it.spec.relation or not has_bm25 or len(set(q.terms)) < 2
            or not len(fused)):
        return None
    top = np.argsort(-fused, kind="stable")[:t.proximity_top]
    s = term_proximity.scores(ix, q.terms, cand[top], t.proximity_window)
    sd = float(s.std())
    if sd <= 0:
        return None
    out = np.zeros(len(fused))
    out[top] = t.proximity_weight * s / sd
    return out


_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
# type aliases in every language; C/C++ preprocessor macros (Rust's macro_rules! were nodes before
# and rank as they were measured)
_DECLARATION_SQL = ("SELECT id, name FROM nodes WHERE id IN ({}) AND kind IN ('class', 'function', 'method') AND "
                    "(json_extract(props, '$.decl') = 'alias' OR "
                    "json_extract(props, '$.decl') = 'macro' AND key LIKE 'c:%')")


def declarations(conn, ids: list[int], text: str) -> set[int]:
    """The ``ids`` that are type aliases or C/C++ macros (a name for a type or for a piece of
    code, seldom the code a task changes) that ``text`` does not name (``jv_object_foreach``
    asked for is the macro; an issue about arrays is not about the ``JV_ARRAY_3`` .. ``_9`` macros)."""
    from ..store.sql import fetch_in

    rows = fetch_in(conn, _DECLARATION_SQL, [int(x) for x in ids])
    if not rows:
        return set()
    named = set(_IDENT.findall(text))
    return {nid for nid, name in rows if name not in named}


def rank(conn, cand: np.ndarray, fused: np.ndarray, adjustments: dict, *, q, it, code_query: bool,
         communities_of: Callable | None, opts, tuning: Tuning = TUNING, nudges=None, read: bool = True,
         compiled: bool = True) -> tuple[np.ndarray, list[int], dict[int, dict]]:
    """Apply the adjustments (recorded in ``adjustments``) for the parsed query ``q`` of intent
    ``it`` and pick the top ``opts.k``.

    Returns (adjusted scores, positions of the hits in ``cand`` best first, display fields by
    node id; texts only when not collapsing, see :func:`kgsearch.query.results.make_hits`).
    ``communities_of(ids)`` gives community labels (``None``: no graph). ``read=False`` (with
    ``opts.collapse``; several indexes searched as one): no display field is read, and the
    positions returned are every candidate kept, best first, before one hit per note: the
    caller reads what it needs through :class:`Unread`. ``compiled``: whether the index holds
    TypeScript, whose compiled scripts count as stubs (:func:`~kgsearch.query.code.implemented_stubs`).
    """
    if not len(cand):
        return fused, [], {}
    flags_of = node_flags(conn, cand.tolist())
    # a code task (an issue, a traceback) mentions tests and docs on its way to the code; a
    # relation question ("where is X used") wants every user, tests included
    code_task, exact = it.spec.code_task, it.spec.exact
    about_tests = (q.about_tests and not code_task) or it.spec.relation
    about_prose = q.about_prose and not code_task
    low = float(fused.min())
    if low < 0:
        fused = fused - low
        adjustments["shift"] = np.full(len(cand), -low)
    flags = np.array([flags_of.get(n, -1) for n in cand.tolist()], dtype=np.int64)
    factor = np.ones(len(cand))
    if not about_tests:
        factor[(flags >= 0) & (flags & FLAG_TEST > 0)] = tuning.test_penalty
    asks_kind = any(f.field == "kind" and not f.negated for f in getattr(q, "filters", ()))
    if not exact and not asks_kind:
        factor[(flags >= 0) & (flags & FLAG_AUTO > 0)] = 0.0     # tags, entities, placeholders: structure
    factor[flags < 0] = 0.0                                       # deleted since the channel ran
    if code_query or code_task:
        top = np.argsort(-fused, kind="stable")[:max(opts.k, 10) * 4]
        meta = node_meta(conn, cand[top].tolist(), text=False)
        stubs = implemented_stubs(conn, [m["path"] for m in meta.values() if m.get("path")], compiled)
        # a query of one name lowers only the stubs that stand in for code indexed beside them:
        # the name a .d.ts alone defines is found where it is written (in a code task the stub's
        # declarations stay lowered: on axios they took the slots of the files a fix changes)
        twins = stub_twins(conn, meta, stubs) if stubs and exact else None
        names = declarations(conn, cand[top].tolist(), q.text) if tuning.declaration_penalty != 1.0 else set()
        for i in top.tolist():
            m = meta.get(int(cand[i]), {})
            if factor[i] and is_vendored(m):
                factor[i] = tuning.vendored_penalty
            elif factor[i] and m.get("path") in stubs and (twins is None or int(cand[i]) in twins):
                factor[i] = min(factor[i], tuning.stub_penalty)
            elif factor[i] == 1.0 and not about_prose and not is_source(m, about_tests):
                factor[i] = tuning.nonsource_penalty
            if factor[i] and int(cand[i]) in names:
                factor[i] *= tuning.declaration_penalty
    if (factor != 1.0).any():
        adjustments["test_or_vendored"] = factor
        fused = fused * factor
    if nudges is not None:      # session boosts / feedback nudges (query/feedback.py): more factors
        fused = nudges.apply(cand, fused, adjustments)
    order_arr = np.argsort(-fused, kind="stable")
    div = tuning.diversity if opts.diversity is None else opts.diversity
    comm = communities_of(cand) if communities_of is not None and div != 1.0 else None
    if comm is not None and len(order_arr) > 3:
        before = fused
        fused = pack.diversify(order_arr[:max(opts.k, 10) * 3], fused, comm, div)
        ratio = np.divide(fused, before, out=np.ones(len(fused)), where=before != 0)
        if (ratio != 1.0).any():
            adjustments["diversity"] = ratio
        order_arr = np.argsort(-fused, kind="stable")
    # every candidate matched some channel; only removed ones (factor 0) drop out
    top = order_arr[:max(opts.k, 10) * 4 + 50]
    order = top[factor[top] > 0].tolist()
    if not read and opts.collapse:
        return fused, order, {}
    if opts.collapse:       # one hit per note among the first k*4 that exist: fields of as many as that takes
        meta, order = _collapsed_top(conn, cand, order, opts.k)
    else:
        meta = node_meta(conn, cand[order].tolist(), text=opts.snippets)
        order = [i for i in order if int(cand[i]) in meta]
    return fused, order[:opts.k], meta


def _collapsed_top(conn, cand: np.ndarray, order: list, k: int) -> tuple[dict[int, dict], list]:
    """The first ``k`` hits of :func:`kgsearch.pack.collapse_sections` over the first ``k * 4``
    positions of ``order`` whose nodes exist, and the display fields (no texts) of the rows read.

    Rows are read a window at a time, and reading stops as soon as the positions read collapse
    to ``k`` hits: collapsing keeps each family's first member in order, so more rows could
    only add hits after those ``k``. Most searches read ``k`` rows, not ``k * 4`` (about 1.8 us
    a row; several indexes searched as one read a window each); a section-heavy vault reads on.
    The window beyond ``k * 4`` is read only for nodes gone since the flags were read (a
    reindex in between)."""
    want = k * 4
    meta: dict[int, dict] = {}
    kept: list = []             # the positions read whose nodes exist, in order
    done = 0
    while done < len(order) and len(kept) < want:
        top = _collapse(kept, cand, meta)
        if len(top) >= k:
            return meta, top[:k]
        part = order[done:done + min(want - len(kept), max(k - len(top), 2) * 2 if kept else k)]
        meta.update(node_meta(conn, cand[part].tolist(), text=False))
        kept += [i for i in part if int(cand[i]) in meta]
        done += len(part)
    return meta, _collapse(kept[:want], cand, meta)[:k]


def _collapse(order: list, cand: np.ndarray, meta: dict) -> list:
    return pack.collapse_sections(order, {i: meta[int(cand[i])]["key"] for i in order},
                                  {i: meta[int(cand[i])]["kind"] for i in order},
                                  {i: meta[int(cand[i])]["parent"] for i in order})


class Unread:
    """One index's hits whose display fields are read only as far as a caller asks (several
    indexes searched as one: the merge reads the rows of its top k, not ``k`` of each index).

    ``order``: the positions :func:`rank` keeps with ``read=False``, best first. The hits are
    those of :func:`_collapsed_top` over them (the first ``k`` of one hit per note among the first
    ``4 k`` positions whose nodes exist), found in order as the rows are read: collapsing keeps
    each note's first member, so the hits of the rows read so far are the first hits of all.
    ``meta``: the display fields read (the dict the index's hits are built from); ``fused``,
    ``shift`` and ``factor``: each candidate's score, additive shift and product of the factors
    (for the merge)."""

    def __init__(self, conn, cand: np.ndarray, order: list, k: int, meta: dict, fused=None, shift=None, factor=None):
        self.conn, self.cand, self.order, self.k, self.meta = conn, cand, order, k, meta
        self.fused, self.shift, self.factor = fused, shift, factor
        self.done = 0               # positions of order read
        self.kept = 0               # of them, the ones whose node exists (at most 4 k count)
        self.seen: set = set()      # the notes of the hits so far
        self.hits: list = []        # positions of the hits so far, best first
        self.is_hit: set = set()

    @property
    def over(self) -> bool:
        """No hit can come after the rows read (the order, 4 k nodes or k hits are used up)."""
        return self.done >= len(self.order) or self.kept >= 4 * self.k or len(self.hits) >= self.k

    def read_to(self, j: int) -> None:
        """Read the display fields of ``order[:j]`` (of as many as can still give a hit)."""
        if j <= self.done or self.over:
            return
        part = self.order[self.done:j]
        self.meta.update(node_meta(self.conn, self.cand[part].tolist(), text=False))
        for i in part:
            self.done += 1
            m = self.meta.get(int(self.cand[i]))
            if m is None:
                continue
            self.kept += 1
            fam = pack.family(m["key"], m["kind"], m["parent"])
            if fam not in self.seen:
                self.seen.add(fam)
                self.hits.append(i)
                self.is_hit.add(i)
            if self.over:
                return

    def read_all(self) -> list:
        """Every hit (what :func:`_collapsed_top` gives), read a window at a time."""
        while not self.over:
            self.read_to(self.done + max(self.k - len(self.hits), 2) * 2)
        return self.hits
