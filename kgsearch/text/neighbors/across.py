"""The ``similar_text`` lists of several indexes taken as one: each prose node's ``K`` nodes most
similar over all of them, scored as one index holding every node would score them.

Searched as one (:mod:`kgsearch.query.multi`), each index's own lists name only its own nodes,
where one index of the union would hold neighbours from every part: the graph signal (the mean
of a node's neighbours' first-stage scores) differs, which was the whole measured quality gap of
two indexes against one (bench/results/multi_ablate.md). :func:`union_lists` computes the lists
over the union with the exact kernel (:func:`.exact.neighbours_bar`): postings of every index
read together, under one id space (index ``i``'s node ``x`` is ``offsets[i] + x``), with the
union's grid statistics (N and the total length summed, each term's df summed, on the grid of
:class:`~.common.Stats`), each index's document lengths and ties by node key over the union. For
indexes built alike (same stemmer, splitting and BM25 parameters) these are the lists one index
of all their files holds (tests/test_across.py).

Nothing is written into the indexes (an index never changes because another exists); the
caller keeps the lists (:mod:`kgsearch.query.across`).
"""
from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from ...store.sql import in_chunks
from ..idcodec import decode_ids_many, decode_tf
from ..okapi import tf_impacts
from ..postings import load_norms, norms_of, stored_params
from .common import BATCH, CODE_KINDS, NOT_PROSE, STATE_KEY, Stats, node_terms, prose_ids
from .exact import neighbours

__all__ = ["UnionLists", "union_lists", "why_not"]


class UnionLists:
    """Edges ``src -> dst`` (union ids) with similarity ``sim`` (rounded as the step stores it)."""

    def __init__(self, offsets: np.ndarray, spans: np.ndarray, src: np.ndarray, dst: np.ndarray,
                 sim: np.ndarray, seconds: float = 0.0):
        self.offsets, self.spans = offsets.astype(np.int64), spans.astype(np.int64)
        self.src, self.dst, self.sim = src.astype(np.int64), dst.astype(np.int64), sim.astype(np.float64)
        self.seconds = seconds

    def index_of(self, uid: np.ndarray) -> np.ndarray:
        """Which index (0, 1, ...) each union id belongs to."""
        return np.searchsorted(self.offsets, uid, side="right") - 1


def why_not(ixs) -> str | None:
    """Why the indexes' lists cannot be taken as one (None: they can): an index without text
    postings or ``similar_text`` lists, approximate lists, or indexes that analyse text apart."""
    keys = set()
    for ix in ixs:
        st, params = stored_params(ix)
        if st is None:
            return f"{ix.path} has no text index"
        state = ix.meta_json(STATE_KEY, None)
        if not state:
            return f"{ix.path} has no similar_text lists"
        if state.get("method") == "scaled":
            return f"{ix.path} has approximate similar_text lists (over the exact limit)"
        keys.add(tuple(sorted(params.index_key().items())))
    if len(keys) > 1:
        return "the indexes analyse text differently (stemmer or BM25 parameters)"
    return None


class _UnionPostings:
    """The window terms' postings of every index under union ids, as :class:`.exact.Postings`
    holds one index's (``lists[term] = (ids, impacts, idf)``), scored with ``stats``."""

    def __init__(self, ixs, offsets, stats: Stats):
        self.stats = stats
        self.max_df = stats.max_df
        rows = defaultdict(list)                        # term -> [(index, df, ids blob, tf blob)]
        over = set()                                    # terms past the window in some index: in the union too
        for i, ix in enumerate(ixs):
            for term, df, ib, tb in ix.conn.execute(
                    "SELECT term, df, ids, tf FROM text_postings WHERE df <= ?", (self.max_df,)):
                rows[term].append((i, int(df), ib, tb))
            over.update(t for (t,) in ix.conn.execute("SELECT term FROM text_postings WHERE df > ?", (self.max_df,)))
        keep = {t: r for t, r in rows.items() if t not in over and 2 <= sum(x[1] for x in r) <= self.max_df}
        parts: dict[str, list] = defaultdict(list)
        for i, ix in enumerate(ixs):
            st, params = stored_params(ix)
            mine = [(t, x) for t, r in keep.items() for x in r if x[0] == i]
            if not mine:
                continue
            ids, off = decode_ids_many([x[2] for _, x in mine])
            tfs = np.concatenate([decode_tf(x[3], x[1]) for _, x in mine])
            norms = load_norms(ix, dict(st, avgdl=stats.avgdl), params)
            imp = tf_impacts(tfs, norms_of(norms, ids), params.k1)
            bounds = off.tolist()
            for (t, _), s, e in zip(mine, bounds[:-1], bounds[1:]):
                parts[t].append((ids[s:e] + offsets[i], imp[s:e]))
        self.lists = {}
        for t, r in keep.items():
            idf = stats.idf(sum(x[1] for x in r))
            p = parts[t]
            self.lists[t] = (np.concatenate([x[0] for x in p]), np.concatenate([x[1] for x in p]), idf)


def union_lists(ixs, progress=None) -> UnionLists:
    """Every prose node's ``similar_text`` list over the union of ``ixs`` (see the module
    docstring; :func:`why_not` must have said None)."""
    t0 = time.perf_counter()
    sts = [stored_params(ix) for ix in ixs]
    n = sum(int(st["n"]) for st, _ in sts)
    total = sum(float(st["avgdl"]) * int(st["n"]) for st, _ in sts)
    stats = Stats.of({"n": n, "avgdl": total / n if n else 0.0})
    params = sts[0][1]
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    spans = np.array([(ix.conn.execute("SELECT max(id) FROM nodes").fetchone()[0] or 0) + 1 for ix in ixs],
                     dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(spans)[:-1]]).astype(np.int64)
    prose = [np.asarray(prose_ids(ix.conn), dtype=np.int64) for ix in ixs]
    allowed = np.zeros(int(spans.sum()), dtype=np.float64)
    for off, p in zip(offsets, prose):
        allowed[off + p] = 1.0
    # ties at the K-th place by node key over the union (then by index order), as one index's
    marks = ",".join("?" * len(CODE_KINDS))
    keyed = []
    for i, (ix, off) in enumerate(zip(ixs, offsets)):
        keyed += [(k, i, off + nid) for nid, k in ix.conn.execute(
            f"SELECT id, key FROM nodes WHERE flags & {NOT_PROSE} = 0 AND kind NOT IN ({marks})", CODE_KINDS)]
    keyed.sort()
    n_prose = len(keyed)
    rank = np.full(len(allowed), n_prose, dtype=np.int64)
    rank[np.array([u for _, _, u in keyed], dtype=np.int64)] = np.arange(n_prose)
    post = _UnionPostings(ixs, offsets, stats)
    src, dst, sim = [], [], []
    done = 0
    for ix, off, p in zip(ixs, offsets, prose):
        ids = p.tolist()
        for s in range(0, len(ids), BATCH):
            for nid, name, text in in_chunks(ix.conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({})",
                                             ids[s:s + BATCH]):
                uid = int(off + nid)
                for d, w in neighbours(node_terms(an, nw, name, text), uid, post, allowed, rank):
                    src.append(uid)
                    dst.append(d)
                    sim.append(round(w, 4))
            done += len(ids[s:s + BATCH])
            if progress is not None:
                progress({"phase": "neighbors across indexes", "done": done, "total": n_prose})
    return UnionLists(offsets, spans, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                      np.array(sim, dtype=np.float64), time.perf_counter() - t0)
