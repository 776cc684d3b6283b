"""Term proximity: how close together a query's terms occur in a node's text.

In the spirit of the sequential dependence model (Metzler and Croft 2005) and BM25TP (Rasolofo
and Savoy 2003). For a query of two or more distinct analysed terms ``q_0 .. q_m`` (the BM25
analyser's terms, in query order, once each), a node's ``name`` and ``text`` are read as the
term sequences BM25 counts (the index's analyser: stop words dropped, a compound's whole form
followed by its parts; no pair spans the name and the text), and for each pair of query terms:

* ``od(q_i, q_i+1)``: how often ``q_i+1`` directly follows ``q_i`` (adjacent in the query, in
  that order);
* ``uw(q_i, q_j)``: how often ``q_i`` and ``q_j`` (i < j) occur less than ``window`` terms apart,
  in either order (every pair of occurrences counts).

A node scores ``sum over pairs of min(idf_i, idf_j) x f (k1 + 1) / (f + k1 (1 - b + b dl / avgdl))``
for ``f`` = ``od`` (adjacent pairs) plus the same for ``f`` = ``uw`` (all pairs): BM25's saturation
and length norm (the stored norms and ``k1`` of the index's BM25) over pair frequencies, weighted
by the rarer term's idf. A text is read up to its first :data:`MAX_CHARS` characters (a node of a
book's length costs what a long section does).

:func:`scores` reads the texts of a few nodes (the fused top of a search) from the index;
:func:`reference_scores` computes the same from the analyser's plain output by comparing every
pair of positions (the slow, obvious definition the tests hold :func:`scores` to). A text is
split at whitespace and each piece analysed once (:data:`PIECES`, memoised), which gives the
analyser's terms (no analyser token spans whitespace) at about a third of its cost on long texts.
"""
from __future__ import annotations

from itertools import chain
from typing import Sequence

import numpy as np

from ..store.sql import in_chunks
from .okapi import idf as bm25_idf
from .postings import doc_freqs, norms, norms_of, stored
from .stem import Memo
from .tokenize import Analyzer

__all__ = ["WINDOW", "MAX_CHARS", "PIECE_MEMO", "query_terms", "text_terms", "memo_size", "pair_counts", "reference_pair_counts", "pair_score",
           "scores", "reference_scores", "node_terms"]

WINDOW = 16                 # terms: a pair counts when its terms are less than this far apart
MAX_CHARS = 20_000          # of a node's text read (a long text costs time in proportion)
PIECE_MEMO = 100_000        # whitespace pieces kept analysed (per analyser), then the memo restarts

_PIECES: dict[int, tuple[Analyzer, Memo]] = {}


def query_terms(terms: Sequence[str]) -> list[str]:
    """The distinct terms of an analysed query, in order."""
    return list(dict.fromkeys(terms))


def _pieces(an: Analyzer) -> Memo:
    got = _PIECES.get(id(an))
    if got is None or got[0] is not an:
        got = _PIECES[id(an)] = (an, Memo(lambda piece: tuple(an(piece)), PIECE_MEMO))
    return got[1]


def memo_size(an: Analyzer) -> tuple[int, int]:
    """(entries, bytes of their keys and values and of the table) of ``an``'s memo of analysed
    whitespace pieces: what the step keeps between searches."""
    import sys

    memo = _pieces(an)
    return len(memo), sys.getsizeof(memo) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in memo.items())


def text_terms(an: Analyzer, text: str) -> list[str]:
    """``an(text)``: each whitespace-separated piece analysed once and remembered."""
    return list(chain.from_iterable(map(_pieces(an).__getitem__, text.split())))   # (C loops only)


def _hits(seqs: Sequence[Sequence[str]], qpos: dict[str, int]) -> list[tuple[int, int]]:
    """(position, query term index) of each query term occurrence, the sequences one after
    another with a gap wider than any window between them."""
    hits = []
    base = 0
    for seq in seqs:
        for t, i in qpos.items():          # list.index scans in C; Python runs once per occurrence
            p = -1
            try:
                while True:
                    p = seq.index(t, p + 1)
                    hits.append((base + p, i))
            except ValueError:
                pass
        base += len(seq) + (1 << 30)
    hits.sort()
    return hits


def pair_counts(seqs: Sequence[Sequence[str]], terms: Sequence[str],
                window: int = WINDOW) -> tuple[dict, dict]:
    """``(od, uw)`` of a node's term sequences (name, text) for the distinct query ``terms``:
    ``{(i, i + 1): count}`` and ``{(i, j): count}`` (i < j, indexes into ``terms``)."""
    qpos = {t: i for i, t in enumerate(terms)}
    hits = _hits(seqs, qpos)
    od: dict = {}
    uw: dict = {}
    n = len(hits)
    for x in range(n):
        p, a = hits[x]
        y = x + 1
        while y < n and hits[y][0] - p < window:
            b = hits[y][1]
            if a != b:
                key = (a, b) if a < b else (b, a)
                uw[key] = uw.get(key, 0) + 1
                if b == a + 1 and hits[y][0] == p + 1:
                    od[key] = od.get(key, 0) + 1
            y += 1
    return od, uw


def reference_pair_counts(seqs: Sequence[Sequence[str]], terms: Sequence[str],
                          window: int = WINDOW) -> tuple[dict, dict]:
    """:func:`pair_counts` by its definition: every pair of positions of every sequence."""
    od: dict = {}
    uw: dict = {}
    for seq in seqs:
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                pi = [p for p, t in enumerate(seq) if t == terms[i]]
                pj = [p for p, t in enumerate(seq) if t == terms[j]]
                near = sum(1 for a in pi for b in pj if abs(a - b) < window)
                if near:
                    uw[(i, j)] = uw.get((i, j), 0) + near
                if j == i + 1:
                    nxt = sum(1 for a in pi for b in pj if b == a + 1)
                    if nxt:
                        od[(i, j)] = od.get((i, j), 0) + nxt
    return od, uw


def pair_score(od: dict, uw: dict, idfs: Sequence[float], norm: float, k1: float) -> float:
    """``sum min(idf_i, idf_j) f (k1 + 1) / (f + norm)`` over ``od`` then ``uw`` (``norm``: the
    node's ``k1 (1 - b + b dl / avgdl)``)."""
    s = 0.0
    for counts in (od, uw):
        for (a, b), f in sorted(counts.items()):
            s += min(idfs[a], idfs[b]) * f * (k1 + 1) / (f + norm)
    return s


def node_terms(ix, ids: Sequence[int], an: Analyzer, fast: bool = True) -> dict[int, tuple[list, list]]:
    """``{id: (name terms, text terms)}`` of nodes, read from the index (the first
    :data:`MAX_CHARS` characters of a text)."""
    read = (lambda s: text_terms(an, s)) if fast else an
    rows = in_chunks(ix.conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({})", [int(i) for i in ids])
    return {nid: (read(name or ""), read(_cut(text or ""))) for nid, name, text in rows}


def _cut(text: str) -> str:
    """The first :data:`MAX_CHARS` characters of ``text``, back to the last whitespace (no word cut)."""
    if len(text) <= MAX_CHARS:
        return text
    cut = text[:MAX_CHARS]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return cut[:space] if space > 0 else cut


def _setup(ix, terms: Sequence[str], ids):
    st, params, memo = stored(ix)
    if st is None:
        return None
    df = doc_freqs(ix.conn, terms)
    idfs = bm25_idf([df.get(t, 0) for t in terms], int(st["n"]), params.idf).tolist()
    kd = norms_of(norms(ix, st, params, memo), np.asarray(ids, dtype=np.int64))
    return params, idfs, kd


def _begin(ix, terms: Sequence[str], ids):
    """``(ids as int64, zeros, distinct terms, _setup's answer or None)``: None for fewer than two
    terms, no ids, or an index without BM25 postings."""
    ids = np.asarray(ids, dtype=np.int64)
    terms = query_terms(terms)
    got = _setup(ix, terms, ids) if len(terms) >= 2 and len(ids) else None
    return ids, np.zeros(len(ids)), terms, got


def scores(ix, terms: Sequence[str], ids, window: int = WINDOW) -> np.ndarray:
    """The proximity score of each node of ``ids`` for the distinct analysed query ``terms``
    (:func:`query_terms`); zeros for fewer than two terms, an index without BM25 postings, or a
    node without a pair."""
    ids, out, terms, got = _begin(ix, terms, ids)
    if got is None:
        return out
    params, idfs, kd = got
    seqs = node_terms(ix, ids.tolist(), params.analyzer())
    for r, nid in enumerate(ids.tolist()):
        if nid in seqs:
            od, uw = pair_counts(seqs[nid], terms, window)
            if uw:
                out[r] = pair_score(od, uw, idfs, float(kd[r]), params.k1)
    return out


def reference_scores(ix, terms: Sequence[str], ids, window: int = WINDOW) -> np.ndarray:
    """:func:`scores` computed the slow, obvious way (the analyser over whole texts, every pair
    of positions compared)."""
    ids, out, terms, got = _begin(ix, terms, ids)
    if got is None:
        return out
    params, idfs, kd = got
    seqs = node_terms(ix, ids.tolist(), params.analyzer(), fast=False)
    for r, nid in enumerate(ids.tolist()):
        if nid in seqs:
            od, uw = reference_pair_counts(seqs[nid], terms, window)
            out[r] = pair_score(od, uw, idfs, float(kd[r]), params.k1)
    return out
