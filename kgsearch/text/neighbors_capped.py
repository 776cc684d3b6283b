"""Near-linear ``similar_text`` neighbours: per-term candidate caps (prototype, issue 16 item 3).

The shipped step (:mod:`kgsearch.text.neighbors`) scores, for every prose node, every posting
of its ``M`` most distinctive terms with ``2 <= df <= max(50, 5 % of N)``. Those lists grow
with N, so the work per node grows with N and the step as ~N^1.9 (measured CPU per node
1.0 / 2.7 / 8.6 ms at 100K / 300K / 1M), which is why it is skipped above 300K prose nodes.

Two variants, with the shipped term choice, ``K``, ``M``, ``MIN_SIM`` and df window:

* **capped** (:class:`CappedPostings`, :func:`neighbours`): each term keeps only its ``cap``
  strongest postings (highest BM25 impact, ties to the smaller id) and the scores are summed
  over those. Cheapest, but a neighbour that is not among a term's strongest holders loses
  that term's credit: only ~0.55 of the shipped lists survive at cap 64.
* **two-stage** (:class:`TwoStagePostings`, :func:`neighbours_two_stage`, recommended): the
  capped lists only *choose candidates* (at most ``M * cap``); each candidate is then scored
  exactly over the chosen terms' whole lists (binary search), so the result is the shipped
  ranking restricted to the candidates. Per-node CPU stays flat (1.45 / 1.61 / 1.63 ms at cap
  256), 0.94-0.97 of the shipped lists, nDCG@10 on the 100K scaling corpus +0.0024.

The node's own score, the denominator of the edge weight, is computed exactly from its term
counts. With ``cap >= max_df`` both give the shipped step's edges (tested), except that ties
at the K-th place go to the smaller id (:func:`_best`; the shipped step breaks them by node
key, or by node id when called without a key rank, as here). :func:`make_update` is a drop-in ``update`` without the ``MAX_NODES`` skip.
:func:`neighbours_ref` / :func:`neighbours_two_stage_ref` are the slow references.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .idcodec import decode_ids_many, decode_tf
from .okapi import tf_impacts
from .postings import load_norms, norms as _norms, norms_of as _norms_of, stored_params as _stored_params
from .neighbors import K, M, MIN_SIM
from .neighbors_delta import Stats

__all__ = ["CappedPostings", "TwoStagePostings", "neighbours", "neighbours_ref", "neighbours_two_stage",
           "neighbours_two_stage_ref", "make_update", "DEFAULT_CAP"]

DEFAULT_CAP = 64


class CappedPostings:
    """The df-window terms' postings, each cut to its ``cap`` highest impacts (flat arrays).

    ``cap=None`` keeps whole lists (the shipped step's input). Built by streaming the
    ``text_postings`` rows in batches, so at most one batch of whole lists is in memory.
    """

    def __init__(self, ix, n_docs: int, cap: int | None = DEFAULT_CAP, max_df: int | None = None,
                 batch: int = 20000, keep_top: int | None = None, id_dtype=np.int64, terms=None,
                 stats: Stats | None = None):
        st, params = _stored_params(ix)
        # (``stats``: the shipped exact step's grid statistics; without, the live N and avgdl)
        self.stats = stats if stats is not None else Stats(float(n_docs), float(st["avgdl"]), False)
        self.n = n_docs
        self.cap = cap
        self.max_df = max_df if max_df is not None else self.stats.max_df
        self.k1 = params.k1
        self.norms = (_norms(ix, st, params) if stats is None
                      else load_norms(ix, dict(st, avgdl=stats.avgdl), params))
        self.term_index: dict[str, int] = {}
        idf_l: list[float] = []
        ids_parts: list[np.ndarray] = []
        imp_parts: list[np.ndarray] = []
        lens: list[np.ndarray] = []
        top_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if terms is None:
            cur = ix.conn.execute("SELECT term, df, ids, tf FROM text_postings WHERE df >= 2 AND df <= ?",
                                  (self.max_df,))
        else:                                   # only these terms (an incremental run's nodes)
            cur = _rows_of_terms(ix.conn, sorted(set(terms)), self.max_df)
        while True:
            rows = cur.fetchmany(batch)
            if not rows:
                break
            ids, off = decode_ids_many([r[2] for r in rows])
            tf = np.concatenate([decode_tf(r[3], r[1]) for r in rows])
            imp = tf_impacts(tf, _norms_of(self.norms, ids), self.k1)
            df = np.diff(off)
            if keep_top is not None:           # each list's strongest postings, batch by batch
                top_parts.append(_cut(ids, imp, off, keep_top))
            if cap is not None and (df > cap).any():
                ids, imp, df = _cut(ids, imp, off, cap)
            ids = ids.astype(id_dtype)
            for r in rows:
                self.term_index[r[0]] = len(idf_l)
                idf_l.append(self.stats.idf(r[1]))
            ids_parts.append(ids)
            imp_parts.append(imp)
            lens.append(df)
        self.idf = np.asarray(idf_l, dtype=np.float64)
        ln = np.concatenate(lens) if lens else np.zeros(0, np.int64)
        self.offsets = np.zeros(len(ln) + 1, dtype=np.int64)
        np.cumsum(ln, out=self.offsets[1:])
        self.ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, id_dtype)
        self.imp = np.concatenate(imp_parts) if imp_parts else np.zeros(0, np.float32)
        if keep_top is not None:
            cd = np.concatenate([t[2] for t in top_parts]) if top_parts else np.zeros(0, np.int64)
            self.cand_ids = np.concatenate([t[0] for t in top_parts]).astype(id_dtype) if top_parts else self.ids[:0]
            self.cand_imp = np.concatenate([t[1] for t in top_parts]) if top_parts else self.imp[:0]
            self.cand_off = np.zeros(len(cd) + 1, dtype=np.int64)
            np.cumsum(cd, out=self.cand_off[1:])

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.imp.nbytes + self.offsets.nbytes + self.idf.nbytes)

    def self_score(self, node_id: int, terms: list[tuple[str, int]]) -> float:
        """The node's score against its own chosen terms: sum of idf * impact(tf) (exact)."""
        norm = _norms_of(self.norms, np.array([node_id], dtype=np.int64))[0]
        tf = np.array([c for _, c in terms], dtype=np.float64)
        idf = np.array([self.idf[self.term_index[t]] for t, _ in terms], dtype=np.float32)
        imp = tf_impacts(tf, np.full(len(tf), norm), self.k1)
        return float((imp * idf).astype(np.float64).sum())


class _Rows:
    def __init__(self, rows):
        self.rows, self.at = rows, 0

    def fetchmany(self, k):
        out = self.rows[self.at:self.at + k]
        self.at += k
        return out


def _rows_of_terms(conn, terms: list[str], max_df: int) -> _Rows:
    rows = []
    for s in range(0, len(terms), 500):
        part = terms[s:s + 500]
        rows += conn.execute(f"SELECT term, df, ids, tf FROM text_postings WHERE term IN ({','.join('?' * len(part))}) "
                             f"AND df >= 2 AND df <= ?", [*part, max_df]).fetchall()
    return _Rows(rows)


def _cut(ids: np.ndarray, imp: np.ndarray, off: np.ndarray, cap: int):
    """Keep each list's ``cap`` highest impacts (ties: smaller id), ids ascending within a list."""
    df = np.diff(off)
    lst = np.repeat(np.arange(len(df)), df)
    order = np.lexsort((ids, -imp, lst))            # by list, then impact down, then id
    rank = np.arange(len(ids)) - np.repeat(off[:-1], df)   # position inside its list, sorted
    keep = np.sort(order[rank < cap])               # back to (list, id) order
    return ids[keep], imp[keep], np.minimum(df, cap)


def _best(score: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of the ``K`` best scores, ties broken by the smaller node id, deterministically
    (the shipped step's rule without a key rank; with one it goes by node key)."""
    if len(score) > K:
        kth = np.partition(score, len(score) - K)[len(score) - K]
        sel = np.flatnonzero(score >= kth)
    else:
        sel = np.arange(len(score))
    return sel[np.lexsort((ids[sel], -score[sel]))][:K]


def _choose_terms(terms: list[str], post: CappedPostings) -> list[tuple[str, int]]:
    """The node's ``M`` most distinctive terms (tf * idf, ties by term), with their counts."""
    ti = post.term_index
    counts = Counter(t for t in terms if t in ti)
    return sorted(counts.items(), key=lambda kv: (-kv[1] * post.idf[ti[kv[0]]], kv[0]))[:M]


def neighbours(terms: list[str], self_id: int, post: CappedPostings, allowed: np.ndarray | None = None
               ) -> list[tuple[int, float]]:
    """Up to ``K`` (node id, similarity in (0, 1]) for one node, best first (ties: smaller id)."""
    ranked = _choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    ti, off = post.term_index, post.offsets
    ids, vals = [], []
    for t, _ in ranked:
        j = ti[t]
        s, e = off[j], off[j + 1]
        ids.append(post.ids[s:e])
        vals.append(post.imp[s:e] * np.float32(post.idf[j]))
    all_ids = np.concatenate(ids)
    u, inv = np.unique(all_ids, return_inverse=True)
    score = np.bincount(inv, weights=np.concatenate(vals))
    at = np.searchsorted(u, self_id)
    if at < len(u) and u[at] == self_id:
        score[at] = 0.0
    if allowed is not None:
        inside = u < len(allowed)
        score[~inside] = 0.0
        score[inside] *= allowed[u[inside]]
    top = _best(score, u)
    out = []
    for i in top:
        sim = float(score[i] / self_score)
        if sim >= MIN_SIM:
            out.append((int(u[i]), min(sim, 1.0)))
    return out


def neighbours_ref(terms: list[str], self_id: int, post: CappedPostings, allowed: set[int] | None = None
                   ) -> list[tuple[int, float]]:
    """Slow reference: the same capped lists summed in a Python dict."""
    ranked = _choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    acc: dict[int, float] = {}
    for t, _ in ranked:
        j = post.term_index[t]
        s, e = int(post.offsets[j]), int(post.offsets[j + 1])
        w = np.float32(post.idf[j])
        for nid, imp in zip(post.ids[s:e].tolist(), (post.imp[s:e] * w).tolist()):
            acc[nid] = acc.get(nid, 0.0) + imp
    acc.pop(self_id, None)
    if allowed is not None:
        acc = {n: v for n, v in acc.items() if n in allowed}
    best = sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:K]
    return [(n, min(v / self_score, 1.0)) for n, v in best if v / self_score >= MIN_SIM and v > 0]


class TwoStagePostings(CappedPostings):
    """Whole df-window lists (for exact scores) plus, per term, its ``cap`` strongest postings
    (the candidates): :func:`neighbours_two_stage`'s input. The candidates are cut batch by
    batch while reading, and ids are int32 when node ids fit (8 bytes a posting, not 12)."""

    def __init__(self, ix, n_docs: int, cap: int = 256, max_df: int | None = None, batch: int = 20000,
                 terms=None, stats: Stats | None = None):
        last = ix.conn.execute("SELECT max(id) FROM nodes").fetchone()[0] or 0
        super().__init__(ix, n_docs, cap=None, max_df=max_df, batch=batch, keep_top=cap,
                         id_dtype=np.int32 if last < 2**31 else np.int64, terms=terms, stats=stats)
        self.cap = cap

    @property
    def nbytes(self) -> int:
        return super().nbytes + int(self.cand_ids.nbytes + self.cand_imp.nbytes + self.cand_off.nbytes)


def neighbours_two_stage(terms: list[str], self_id: int, post: TwoStagePostings,
                         allowed: np.ndarray | None = None, rescore_top: int | None = None
                         ) -> list[tuple[int, float]]:
    """Candidates = the union of the chosen terms' capped lists; their scores are exact (every
    chosen term's whole list, by binary search), so the result is the shipped step's ranking
    restricted to the candidates. Work per node: ``M * cap`` candidates x ``M`` searches.
    ``rescore_top``: only that many candidates, the best by their score within the capped
    lists (ties: smaller id), are scored exactly (fewer searches)."""
    ranked = _choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    ti = post.term_index
    js = [ti[t] for t, _ in ranked]
    if rescore_top is None:
        cand = np.unique(np.concatenate([post.cand_ids[post.cand_off[j]:post.cand_off[j + 1]] for j in js]))
    else:
        cand, partial = _capped_partial(post, js)
    at = np.searchsorted(cand, self_id)
    if at < len(cand) and cand[at] == self_id:
        cand = np.delete(cand, at)
        if rescore_top is not None:
            partial = np.delete(partial, at)
    if allowed is not None:
        ok = cand < len(allowed)
        ok[ok] = allowed[cand[ok]] > 0
        cand = cand[ok]
        if rescore_top is not None:
            partial = partial[ok]
    if rescore_top is not None and len(cand) > rescore_top:
        keep = np.sort(np.lexsort((cand, -partial))[:rescore_top])
        cand = cand[keep]
    if not len(cand):
        return []
    score = np.zeros(len(cand))
    for j in js:                                   # in term order: the shipped summation order
        s, e = post.offsets[j], post.offsets[j + 1]
        ids = post.ids[s:e]
        pos = np.searchsorted(ids, cand)
        pos[pos >= len(ids)] = 0
        hit = ids[pos] == cand
        score[hit] += (post.imp[s:e][pos[hit]] * np.float32(post.idf[j])).astype(np.float64)
    top = _best(score, cand)
    out = []
    for i in top:
        sim = float(score[i] / self_score)
        if sim >= MIN_SIM:
            out.append((int(cand[i]), min(sim, 1.0)))
    return out


def _capped_partial(post: TwoStagePostings, js: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Candidates (ascending) and their scores within the capped lists (idf x impact, summed in
    term order)."""
    ids, vals = [], []
    for j in js:
        a, b = post.cand_off[j], post.cand_off[j + 1]
        ids.append(post.cand_ids[a:b])
        vals.append(post.cand_imp[a:b] * np.float32(post.idf[j]))
    u, inv = np.unique(np.concatenate(ids), return_inverse=True)
    return u, np.bincount(inv, weights=np.concatenate(vals))


def neighbours_two_stage_ref(terms: list[str], self_id: int, post: TwoStagePostings,
                             allowed: set[int] | None = None, rescore_top: int | None = None
                             ) -> list[tuple[int, float]]:
    """Slow reference: every chosen term's whole list summed in a dict, then kept to the
    candidates (the capped lists' union; with ``rescore_top``, the best by capped score)."""
    ranked = _choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    acc: dict[int, float] = {}
    cand: dict[int, float] = {}
    for t, _ in ranked:
        j = post.term_index[t]
        s, e = int(post.offsets[j]), int(post.offsets[j + 1])
        w = np.float32(post.idf[j])
        for nid, imp in zip(post.ids[s:e].tolist(), post.imp[s:e].tolist()):
            acc[nid] = acc.get(nid, 0.0) + float(np.float32(imp) * w)
        a, b = int(post.cand_off[j]), int(post.cand_off[j + 1])
        for nid, imp in zip(post.cand_ids[a:b].tolist(), post.cand_imp[a:b].tolist()):
            cand[nid] = cand.get(nid, 0.0) + float(np.float32(imp) * w)
    cand = {n: v for n, v in cand.items() if n != self_id and (allowed is None or n in allowed)}
    if rescore_top is not None:
        cand = dict(sorted(cand.items(), key=lambda kv: (-kv[1], kv[0]))[:rescore_top])
    acc = {n: v for n, v in acc.items() if n in cand}
    best = sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:K]
    return [(n, min(v / self_score, 1.0)) for n, v in best if v / self_score >= MIN_SIM]


def make_update(cap: int | None = DEFAULT_CAP, two_stage: bool = False, rescore_top: int | None = None):
    """A drop-in for :func:`kgsearch.text.neighbors.update` that uses capped lists (or, with
    ``two_stage``, capped candidates scored exactly) and never skips (no ``MAX_NODES``): same
    edges, same incremental rules, same report keys plus ``cap`` and ``lists_mb``."""
    import time

    from . import neighbors as nb

    def update(ix, changes, settings: dict | None = None, progress=None) -> dict:
        t0 = time.perf_counter()
        from ..settings import IndexSettings

        conn = ix.conn
        if not IndexSettings.coerce(settings).graph.neighbors:
            had = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1",
                               (nb.EDGE_TYPE,)).fetchone()
            if had:
                nb._delete_edges(conn, None)
                changes.edges_changed = True
            return {"skipped": "neighbors=false in settings"}
        st, params = _stored_params(ix)
        if st is None:
            return {"skipped": "no text index"}
        prose = nb._prose_ids(conn)
        prose_set = set(prose)
        touched = [i for i in set(changes.added) | set(changes.modified) if i in prose_set]
        have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1",
                            (nb.EDGE_TYPE,)).fetchone()
        full = bool(changes.full) or not have or len(touched) > nb.FULL_FRACTION * max(1, len(prose))
        if not full and not touched and not changes.removed:
            return {"rebuilt": False}
        if full:
            nb._delete_edges(conn, None)
            todo = prose
        else:
            before = conn.total_changes
            nb._delete_edges(conn, sorted(set(touched) | set(changes.removed)))
            todo = sorted(touched)
            if not todo:
                dropped = conn.total_changes - before
                if dropped:
                    changes.edges_changed = True
                return {"full": False, "nodes": 0, "edges_dropped": dropped,
                        "seconds": round(time.perf_counter() - t0, 3)}
        stats = Stats.of(st)             # (as the shipped exact step)
        post = (TwoStagePostings(ix, int(st["n"]), cap=cap, stats=stats) if two_stage
                else CappedPostings(ix, int(st["n"]), cap=cap, stats=stats))
        if two_stage:
            def kernel(terms, nid, post, allowed):
                return neighbours_two_stage(terms, nid, post, allowed, rescore_top=rescore_top)
        else:
            kernel = neighbours
        allowed = np.zeros(max(prose) + 1 if prose else 0, dtype=np.float64)
        allowed[prose] = 1.0
        an = params.analyzer()
        nw = max(1, int(round(params.name_weight)))
        keys = {}
        rows_out = []
        for s in range(0, len(todo), nb._SQL):
            part = todo[s:s + nb._SQL]
            rows = conn.execute(f"SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN "
                                f"({','.join('?' * len(part))})", part).fetchall()
            for nid, key, name, text in rows:
                keys[nid] = key
                terms = an(name or "") * nw + an(text or "")
                for dst, sim in kernel(terms, nid, post, allowed):
                    rows_out.append((nid, dst, sim))
            if progress is not None:
                progress({"phase": "neighbors", "done": min(s + nb._SQL, len(todo)), "total": len(todo)})
        missing = sorted({d for _, d, _ in rows_out} - set(keys))
        for s in range(0, len(missing), nb._SQL):
            part = missing[s:s + nb._SQL]
            keys.update(conn.execute(f"SELECT id, key FROM nodes WHERE id IN ({','.join('?' * len(part))})", part))
        conn.executemany("INSERT INTO edges(src, dst, ns, dst_name, type, weight) VALUES (?,?,?,?,?,?)",
                         [(a, b, "key", keys[b], nb.EDGE_TYPE, round(w, 4)) for a, b, w in rows_out])
        changes.edges_changed = True
        seconds = time.perf_counter() - t0
        info = {"full": full, "nodes": len(todo), "edges": len(rows_out), "seconds": round(seconds, 3),
                "cap": cap, "lists_mb": round(post.nbytes / 1e6, 1)}
        ix.mark_derived("neighbors", seconds, info)
        return info

    return update
