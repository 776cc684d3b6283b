"""Study (issue 16 item 3): cheaper ``similar_text`` kernels than the exact one, for large indexes.

The library keeps the exact lists (:mod:`kgsearch.text.neighbors.exact`) and, above 200K prose
nodes, the two-stage kernel (:mod:`kgsearch.text.neighbors.approx`: each term's ``cap``
strongest postings choose the candidates, scored exactly). This module holds the variants that
were measured and not shipped, on the library's public pieces (``CandidatePostings`` and its
helpers), for ``bench/studies/scale_study.py neighbors``:

* **capped** (:func:`neighbours`): the scores are summed over each term's ``cap`` strongest
  postings only. Cheapest, but a neighbour that is not among a term's strongest holders loses
  that term's credit: only ~0.55 of the exact lists survive at cap 64;
* **two-stage with a short rescoring list** (:func:`neighbours_two_stage_top`): only the
  ``rescore_top`` best candidates by their capped score are scored exactly;
* :func:`make_update`: a drop-in ``update`` for the ``neighbors`` step with either kernel.

Measurements: docs/scale-study.md, section D, and bench/results/scale_study/neighbors-*.md.
:func:`neighbours_ref` is the slow reference of the capped kernel.
"""
from __future__ import annotations

import time

import numpy as np

from kgsearch.settings import IndexSettings
from kgsearch.text.neighbors.approx import (CandidatePostings, best_k, choose_terms, neighbours_two_stage)
from kgsearch.text.neighbors.common import (BATCH, EDGE_TYPE, FULL_FRACTION, K, MIN_SIM, Stats, delete_edges,
                                            node_terms, prose_ids)
from kgsearch.text.postings import stored_params

DEFAULT_CAP = 64


def _lists(post: CandidatePostings, j: int, whole: bool):
    if whole:
        s, e = post.offsets[j], post.offsets[j + 1]
        return post.ids[s:e], post.imp[s:e]
    s, e = post.cand_off[j], post.cand_off[j + 1]
    return post.cand_ids[s:e], post.cand_imp[s:e]


def neighbours(terms: list[str], self_id: int, post: CandidatePostings, allowed: np.ndarray | None = None,
               whole: bool = False) -> list[tuple[int, float]]:
    """Up to ``K`` (node id, similarity) summed over each chosen term's capped list (its whole
    list with ``whole``), best first (ties: smaller id)."""
    ranked = choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    ids, vals = [], []
    for t, _ in ranked:
        j = post.term_index[t]
        a, b = _lists(post, j, whole)
        ids.append(a)
        vals.append(b * np.float32(post.idf[j]))
    u, inv = np.unique(np.concatenate(ids), return_inverse=True)
    score = np.bincount(inv, weights=np.concatenate(vals))
    at = np.searchsorted(u, self_id)
    if at < len(u) and u[at] == self_id:
        score[at] = 0.0
    if allowed is not None:
        inside = u < len(allowed)
        score[~inside] = 0.0
        score[inside] *= allowed[u[inside]]
    out = []
    for i in best_k(score, u):
        sim = float(score[i] / self_score)
        if sim >= MIN_SIM:
            out.append((int(u[i]), min(sim, 1.0)))
    return out


def neighbours_ref(terms: list[str], self_id: int, post: CandidatePostings, allowed: set[int] | None = None,
                   whole: bool = False) -> list[tuple[int, float]]:
    """Slow reference of :func:`neighbours`: the same lists summed in a Python dict."""
    ranked = choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    acc: dict[int, float] = {}
    for t, _ in ranked:
        j = post.term_index[t]
        a, b = _lists(post, j, whole)
        w = np.float32(post.idf[j])
        for nid, imp in zip(a.tolist(), (b * w).tolist()):
            acc[nid] = acc.get(nid, 0.0) + imp
    acc.pop(self_id, None)
    if allowed is not None:
        acc = {n: v for n, v in acc.items() if n in allowed}
    best = sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:K]
    return [(n, min(v / self_score, 1.0)) for n, v in best if v / self_score >= MIN_SIM and v > 0]


def neighbours_two_stage_top(terms: list[str], self_id: int, post: CandidatePostings,
                             allowed: np.ndarray | None = None, rescore_top: int | None = None
                             ) -> list[tuple[int, float]]:
    """The two-stage kernel where only the ``rescore_top`` best candidates by their score within
    the capped lists (ties: smaller id) are scored exactly (fewer binary searches)."""
    if rescore_top is None:
        return neighbours_two_stage(terms, self_id, post, allowed)
    ranked = choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    js = [post.term_index[t] for t, _ in ranked]
    ids, vals = [], []
    for j in js:
        a, b = _lists(post, j, False)
        ids.append(a)
        vals.append(b * np.float32(post.idf[j]))
    cand, inv = np.unique(np.concatenate(ids), return_inverse=True)
    partial = np.bincount(inv, weights=np.concatenate(vals))
    keep = (cand != self_id)
    if allowed is not None:
        ok = cand < len(allowed)
        ok[ok] = allowed[cand[ok]] > 0
        keep &= ok
    cand, partial = cand[keep], partial[keep]
    if len(cand) > rescore_top:
        cand = cand[np.sort(np.lexsort((cand, -partial))[:rescore_top])]
    if not len(cand):
        return []
    score = np.zeros(len(cand))
    for j in js:
        a, b = _lists(post, j, True)
        pos = np.searchsorted(a, cand)
        pos[pos >= len(a)] = 0
        hit = a[pos] == cand
        score[hit] += (b[pos[hit]] * np.float32(post.idf[j])).astype(np.float64)
    out = []
    for i in best_k(score, cand):
        sim = float(score[i] / self_score)
        if sim >= MIN_SIM:
            out.append((int(cand[i]), min(sim, 1.0)))
    return out


def make_update(cap: int | None = DEFAULT_CAP, two_stage: bool = False, rescore_top: int | None = None):
    """A drop-in for the ``neighbors`` step's ``update`` that uses capped lists (or, with
    ``two_stage``, capped candidates scored exactly) and never switches kernels by size; its
    incremental runs recompute the lists of added and modified nodes only. ``cap=None``: whole
    lists."""

    def update(ix, changes, settings=None, progress=None) -> dict:
        t0 = time.perf_counter()
        conn = ix.conn
        if not IndexSettings.coerce(settings).graph.neighbors:
            delete_edges(conn, None)
            changes.edges_changed = True
            return {"skipped": "neighbors=false in settings"}
        st, params = stored_params(ix)
        if st is None:
            return {"skipped": "no text index"}
        prose = prose_ids(conn)
        prose_set = set(prose)
        touched = sorted(i for i in set(changes.added) | set(changes.modified) if i in prose_set)
        have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
        full = bool(changes.full) or not have or len(touched) > FULL_FRACTION * max(1, len(prose))
        if not full and not touched and not changes.removed:
            return {"rebuilt": False}
        delete_edges(conn, None if full else sorted(set(touched) | set(changes.removed)))
        todo = prose if full else touched
        post = CandidatePostings(ix, int(st["n"]), cap=cap if cap is not None else 2**62, stats=Stats.of(st))
        whole = cap is None
        allowed = np.zeros(max(prose) + 1 if prose else 0, dtype=np.float64)
        allowed[prose] = 1.0
        an = params.analyzer()
        nw = max(1, int(round(params.name_weight)))
        keys, rows_out = {}, []
        for s in range(0, len(todo), BATCH):
            part = todo[s:s + BATCH]
            for nid, key, name, text in conn.execute(f"SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN "
                                                     f"({','.join('?' * len(part))})", part).fetchall():
                keys[nid] = key
                terms = node_terms(an, nw, name, text)
                found = (neighbours_two_stage_top(terms, nid, post, allowed, rescore_top) if two_stage
                         else neighbours(terms, nid, post, allowed, whole))
                rows_out += [(nid, dst, sim) for dst, sim in found]
        missing = sorted({d for _, d, _ in rows_out} - set(keys))
        for s in range(0, len(missing), BATCH):
            part = missing[s:s + BATCH]
            keys.update(conn.execute(f"SELECT id, key FROM nodes WHERE id IN ({','.join('?' * len(part))})", part))
        conn.executemany("INSERT INTO edges(src, dst, ns, dst_name, type, weight) VALUES (?,?,?,?,?,?)",
                         [(a, b, "key", keys[b], EDGE_TYPE, round(w, 4)) for a, b, w in rows_out])
        changes.edges_changed = True
        seconds = time.perf_counter() - t0
        info = {"full": full, "nodes": len(todo), "edges": len(rows_out), "seconds": round(seconds, 3),
                "cap": cap, "lists_mb": round(post.nbytes / 1e6, 1)}
        ix.mark_derived("neighbors", seconds, info)
        return info

    return update
