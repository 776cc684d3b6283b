"""The ``neighbors`` step above :data:`EXACT_MAX_NODES` prose nodes: near-linear, never skipped.

The exact lists (:mod:`.exact`) score every posting of a node's ``M`` most distinctive terms;
those lists grow with N, so the exact step's cost grows as ~N^1.8-1.9 (369 of 480 s of a
300K-node build; about 8600 s CPU estimated at 1M), and it used to be skipped above 300K
prose nodes, silently dropping the ``similar_text`` graph signal for large indexes.

Above :data:`EXACT_MAX_NODES` prose nodes the lists come from the two-stage kernel
(:func:`neighbours_two_stage`, cap :data:`CAP`): each term's :data:`CAP` strongest postings
choose the candidates (at most ``M * CAP``), which are then scored exactly over the chosen
terms' whole lists (binary search), so a list is the exact ranking restricted to the
candidates. The work per node is flat (1.45 / 1.61 / 1.63 ms CPU at 100K / 300K / 1M here),
so the step is linear. It is an approximation: about 0.94-0.97 of the exact lists' entries
(measured at 100K / 300K / 1M, ``bench/results/scale_study/neighbors-*.md``); nDCG@10 on the
100K scaling corpus +0.0024. The run report says so: ``notice`` (printed by ``kgsearch
index`` as a note) and ``method`` in the step's info. At or below the limit (every set in
``../shared/bench``, a few thousand nodes) the exact step runs. (The study of cheaper
variants, lists cut to their strongest postings alone: ``bench/studies/neighbors_capped.py``
and docs/scale-study.md, section D.)

The node's own score, the denominator of the edge weight, is computed exactly from its term
counts. With ``cap >= max_df`` the kernel gives the exact step's lists (tested), except that
ties at the K-th place go to the smaller node id (:func:`best_k`; the exact step breaks them by
node key). :func:`neighbours_two_stage_ref` is the slow reference.

It scores with the exact step's grid statistics (:class:`~.common.Stats`; lists an older
kgsearch stored used the live ones and are replaced as their nodes change). Incremental runs
recompute the lists of added and modified prose nodes, keep a modified node in the lists that
hold it (with its weight before the edit; dropping it left each such list a neighbour short for
good), drop the edges of removed ones, and recompute everything when more than
``FULL_FRACTION`` of the prose nodes changed. They read only the postings of the recomputed
nodes' terms (the result is the same as with every list in memory: a node's kernel only looks
at its own terms' lists).
"""
from __future__ import annotations

import time
from collections import Counter

import numpy as np

from ...store.sql import exec_in_chunks
from ..idcodec import decode_ids_many, decode_tf
from ..okapi import tf_impacts
from ..postings import load_norms, norms, norms_of, stored_params
from .common import BATCH, EDGE_TYPE, FULL_FRACTION, K, M, MIN_SIM, Stats, delete_edges

__all__ = ["EXACT_MAX_NODES", "CAP", "CandidatePostings", "neighbours_two_stage", "neighbours_two_stage_ref",
           "cut_lists", "best_k", "choose_terms", "chosen_terms", "update_approx", "method_note"]

EXACT_MAX_NODES = 200_000    # prose nodes up to which the exact step runs (it is faster below ~150K)
CAP = 256                    # candidates per term


def method_note(n_prose: int) -> str:
    return (f"approximate similar_text lists: {n_prose} prose nodes > {EXACT_MAX_NODES}, so each term's "
            f"{CAP} strongest postings choose the candidates (about 0.94-0.97 of the exact lists)")


# ---------------------------------------------------------------------------- kernel
class CandidatePostings:
    """The df-window terms' whole postings (flat arrays, for exact scores) plus, per term, its
    ``cap`` strongest postings (highest BM25 impact, ties to the smaller id): the candidates.

    Built by streaming the ``text_postings`` rows in batches (at most one batch of lists in
    memory beside the result), the candidates cut batch by batch; ids are int32 when node ids
    fit (8 bytes a posting, not 12). ``terms``: only these terms' lists (an incremental run's
    nodes); ``stats``: the step's grid statistics (without, the live N and avgdl).

    Arrays: ``ids``/``imp`` with ``offsets`` (list ``j`` is ``offsets[j]:offsets[j + 1]``),
    ``cand_ids``/``cand_imp`` with ``cand_off``, ``idf`` by list, ``term_index`` term -> list.
    """

    def __init__(self, ix, n_docs: int, cap: int = CAP, max_df: int | None = None, batch: int = 20000,
                 terms=None, stats: Stats | None = None):
        st, params = stored_params(ix)
        self.stats = stats if stats is not None else Stats(float(n_docs), float(st["avgdl"]), False)
        self.n = n_docs
        self.cap = cap
        self.max_df = max_df if max_df is not None else self.stats.max_df
        self.k1 = params.k1
        self.norms = (norms(ix, st, params) if stats is None
                      else load_norms(ix, dict(st, avgdl=stats.avgdl), params))
        last = ix.conn.execute("SELECT max(id) FROM nodes").fetchone()[0] or 0
        id_dtype = np.int32 if last < 2**31 else np.int64
        self.last = int(last)
        self.term_index: dict[str, int] = {}
        idf_l: list[float] = []
        ids_parts: list[np.ndarray] = []
        imp_parts: list[np.ndarray] = []
        lens: list[np.ndarray] = []
        top_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if terms is None:
            rows_of = ix.conn.execute("SELECT term, df, ids, tf FROM text_postings WHERE df >= 2 AND df <= ?",
                                      (self.max_df,)).fetchmany
        else:                                   # only these terms (an incremental run's nodes)
            rows_of = _Rows(_rows_of_terms(ix.conn, sorted(set(terms)), self.max_df)).fetchmany
        while True:
            rows = rows_of(batch)
            if not rows:
                break
            ids, off = decode_ids_many([r[2] for r in rows])
            tf = np.concatenate([decode_tf(r[3], r[1]) for r in rows])
            imp = tf_impacts(tf, norms_of(self.norms, ids), self.k1)
            df = np.diff(off)
            top_parts.append(cut_lists(ids, imp, off, cap))       # each list's strongest postings
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
        cd = np.concatenate([t[2] for t in top_parts]) if top_parts else np.zeros(0, np.int64)
        self.cand_ids = np.concatenate([t[0] for t in top_parts]).astype(id_dtype) if top_parts else self.ids[:0]
        self.cand_imp = np.concatenate([t[1] for t in top_parts]) if top_parts else self.imp[:0]
        self.cand_off = np.zeros(len(cd) + 1, dtype=np.int64)
        np.cumsum(cd, out=self.cand_off[1:])

    def slots(self) -> np.ndarray:
        """A zeroed int32 array over every node id (the kernel's scratch: it numbers a node's
        candidates and clears them again)."""
        if getattr(self, "_slots", None) is None:
            top = max(int(self.ids.max()) if len(self.ids) else 0, self.last) + 1
            self._slots = np.zeros(top, dtype=np.int32)
            self._marks = np.zeros(top, dtype=bool)
        return self._slots

    def marks(self) -> np.ndarray:
        """A False bool array beside :meth:`slots` (a bool gather and its ``flatnonzero`` are ~3x
        faster than the int32 ones)."""
        self.slots()
        return self._marks

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.imp.nbytes + self.offsets.nbytes + self.idf.nbytes
                   + self.cand_ids.nbytes + self.cand_imp.nbytes + self.cand_off.nbytes)

    def self_score(self, node_id: int, terms: list[tuple[str, int]]) -> float:
        """The node's score against its own chosen terms: sum of idf * impact(tf) (exact)."""
        norm = norms_of(self.norms, np.array([node_id], dtype=np.int64))[0]
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


def _rows_of_terms(conn, terms: list[str], max_df: int) -> list:
    rows = []
    for s in range(0, len(terms), 500):
        part = terms[s:s + 500]
        rows += conn.execute(f"SELECT term, df, ids, tf FROM text_postings WHERE term IN ({','.join('?' * len(part))}) "
                             f"AND df >= 2 AND df <= ?", [*part, max_df]).fetchall()
    return rows


def chosen_terms(conn, nodes_terms: list[list[str]], stats: Stats) -> set[str]:
    """The terms :func:`choose_terms` picks for each of these nodes, from the window terms' dfs
    alone (no posting read): an incremental run then loads only those terms' lists, and each
    node's choice among them is the same as among all its terms (its own top ``M`` are there,
    the other nodes' terms rank below them)."""
    idf: dict[str, float] = {}
    every = sorted({t for terms in nodes_terms for t in terms})
    for s in range(0, len(every), 500):
        part = every[s:s + 500]
        for term, df in conn.execute(f"SELECT term, df FROM text_postings WHERE term IN ({','.join('?' * len(part))}) "
                                     f"AND df >= 2 AND df <= ?", [*part, stats.max_df]):
            idf[term] = float(np.float64(stats.idf(df)))
    out: set[str] = set()
    for terms in nodes_terms:
        counts = Counter(t for t in terms if t in idf)
        out.update(t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1] * idf[kv[0]], kv[0]))[:M])
    return out


def cut_lists(ids: np.ndarray, imp: np.ndarray, off: np.ndarray, cap: int):
    """Each list's ``cap`` highest impacts (ties: smaller id), ids ascending within a list:
    ``(ids, impacts, lengths)``."""
    df = np.diff(off)
    lst = np.repeat(np.arange(len(df)), df)
    order = np.lexsort((ids, -imp, lst))            # by list, then impact down, then id
    rank = np.arange(len(ids)) - np.repeat(off[:-1], df)   # position inside its list, sorted
    keep = np.sort(order[rank < cap])               # back to (list, id) order
    return ids[keep], imp[keep], np.minimum(df, cap)


def best_k(score: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of the ``K`` best scores, ties broken by the smaller node id, deterministically
    (the exact step's rule without a key rank; with one it goes by node key)."""
    if len(score) > K:
        kth = np.partition(score, len(score) - K)[len(score) - K]
        sel = np.flatnonzero(score >= kth)
    else:
        sel = np.arange(len(score))
    return sel[np.lexsort((ids[sel], -score[sel]))][:K]


def choose_terms(terms: list[str], post: CandidatePostings) -> list[tuple[str, int]]:
    """The node's ``M`` most distinctive terms (tf * idf, ties by term), with their counts."""
    ti = post.term_index
    have = [(t, c, j) for t, c in Counter(terms).items() if (j := ti.get(t)) is not None]
    if not have:
        return []
    idf = post.idf[[j for _, _, j in have]].tolist()      # (the same float64 values, as floats)
    ranked = sorted(zip(have, idf), key=lambda h: (-h[0][1] * h[1], h[0][0]))[:M]
    return [(t, c) for (t, c, _), _ in ranked]


GATHER_PER_CAND = 16  # a chosen list up to this many postings per candidate is scanned whole


def neighbours_two_stage(terms: list[str], self_id: int, post: CandidatePostings,
                         allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
    """Up to ``K`` (node id, similarity in (0, 1]) for one node, best first (ties: smaller id).
    Candidates = the union of the chosen terms' capped lists; their scores are exact (every
    chosen term's whole list), so the result is the exact step's ranking restricted to the
    candidates. A chosen list of up to :data:`GATHER_PER_CAND` postings per candidate is
    scanned whole through the candidate slots (:meth:`CandidatePostings.slots`: one gather), a
    longer one searched per candidate (binary search); each term's parts go in one row of a
    (terms x candidates) array summed row by row, so every candidate's score is the same sum
    in term order as :func:`neighbours_two_stage_ref`'s (2.5x less CPU at 1M nodes than a
    binary search per term and candidate)."""
    ranked = choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    ti = post.term_index
    js = [ti[t] for t, _ in ranked]
    co = post.cand_off
    cand = np.concatenate([post.cand_ids[co[j]:co[j + 1]] for j in js])
    cand.sort()
    keep = np.empty(len(cand), dtype=bool)
    keep[:1] = True
    np.not_equal(cand[1:], cand[:-1], out=keep[1:])
    keep &= cand != self_id
    if allowed is not None:
        ok = cand < len(allowed)
        ok[ok] = allowed[cand[ok]] > 0
        keep &= ok
    cand = cand[keep]
    nc = len(cand)
    if not nc:
        return []
    off = post.offsets
    short = [(r, j) for r, j in enumerate(js) if off[j + 1] - off[j] <= GATHER_PER_CAND * nc]
    contrib = np.zeros((len(js), nc))            # row r: term r's part of each candidate's score
    idf32 = post.idf[js].astype(np.float32)
    if short:                                  # short lists: every posting looked up in the slots
        slot, mark = post.slots(), post.marks()
        slot[cand] = np.arange(1, nc + 1, dtype=slot.dtype)
        mark[cand] = True
        try:
            ids = np.concatenate([post.ids[off[j]:off[j + 1]] for _, j in short])
            hit = np.flatnonzero(mark[ids])
            p = slot[ids[hit]]
        finally:
            slot[cand] = 0
            mark[cand] = False
        rows = np.repeat(np.array([r for r, _ in short]), [off[j + 1] - off[j] for _, j in short])[hit]
        imp = np.concatenate([post.imp[off[j]:off[j + 1]] for _, j in short])[hit]
        contrib[rows, p - 1] = (imp * idf32[rows]).astype(np.float64)
    if len(short) < len(js):                   # long lists: each candidate found by binary search
        done = {r for r, _ in short}
        for r, j in enumerate(js):
            if r in done:
                continue
            s, e = off[j], off[j + 1]
            ids = post.ids[s:e]
            pos = np.searchsorted(ids, cand)
            pos[pos >= len(ids)] = 0
            hit = ids[pos] == cand
            contrib[r, hit] = (post.imp[s:e][pos[hit]] * idf32[r]).astype(np.float64)
    score = np.add.reduce(contrib, axis=0)     # row by row, in term order: the exact step's sums
    top = best_k(score, cand)
    out = []
    for i in top:
        sim = float(score[i] / self_score)
        if sim >= MIN_SIM:
            out.append((int(cand[i]), min(sim, 1.0)))
    return out


def neighbours_two_stage_ref(terms: list[str], self_id: int, post: CandidatePostings,
                             allowed: set[int] | None = None) -> list[tuple[int, float]]:
    """Slow reference: every chosen term's whole list summed in a dict, then kept to the
    candidates (the capped lists' union)."""
    ranked = choose_terms(terms, post)
    if not ranked:
        return []
    self_score = post.self_score(self_id, ranked)
    if self_score <= 0:
        return []
    acc: dict[int, float] = {}
    cand: set[int] = set()
    for t, _ in ranked:
        j = post.term_index[t]
        s, e = int(post.offsets[j]), int(post.offsets[j + 1])
        w = np.float32(post.idf[j])
        for nid, imp in zip(post.ids[s:e].tolist(), post.imp[s:e].tolist()):
            acc[nid] = acc.get(nid, 0.0) + float(np.float32(imp) * w)
        a, b = int(post.cand_off[j]), int(post.cand_off[j + 1])
        cand.update(post.cand_ids[a:b].tolist())
    cand = {n for n in cand if n != self_id and (allowed is None or n in allowed)}
    acc = {n: v for n, v in acc.items() if n in cand}
    best = sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:K]
    return [(n, min(v / self_score, 1.0)) for n, v in best if v / self_score >= MIN_SIM]


# ---------------------------------------------------------------------------- the step
def update_approx(ix, changes, prose: list[int], st: dict, params, progress=None) -> dict:
    """The ``neighbors`` step for many prose nodes (see the module docstring)."""
    t0 = time.perf_counter()
    conn = ix.conn
    prose_arr = np.asarray(prose, dtype=np.int64)

    def is_prose(ids) -> list[int]:
        ids = np.asarray(sorted(set(ids)), dtype=np.int64)
        if not len(ids) or not len(prose_arr):
            return []
        at = np.minimum(np.searchsorted(prose_arr, ids), len(prose_arr) - 1)
        return ids[prose_arr[at] == ids].tolist()

    touched = is_prose(list(changes.added) + list(changes.modified))
    have = conn.execute("SELECT 1 FROM edges WHERE type=? AND file_id IS NULL LIMIT 1", (EDGE_TYPE,)).fetchone()
    full = bool(changes.full) or not have or len(touched) > FULL_FRACTION * max(1, len(prose))
    if not full and not touched and not changes.removed:
        return {"rebuilt": False, "method": f"two-stage cap {CAP}"}
    if full:
        delete_edges(conn, None)
        todo = prose
    else:
        before = conn.total_changes
        # the lists that hold an edited node keep it (with its weight before the edit): deleting
        # those entries left each such list a neighbour short for good, and at 1M the rows'
        # changed lengths made the graph step splice every edge array. Recomputing those lists
        # instead loads their terms' whole postings (47 MB, +210 MiB peak, +1.9 s at 1M).
        todo = touched
        gone = sorted(set(changes.removed))
        exec_in_chunks(conn, "DELETE FROM edges WHERE type=? AND +file_id IS NULL AND src IN ({})",
                       sorted(set(todo) | set(gone) | set(changes.modified)), before=[EDGE_TYPE])
        delete_edges(conn, gone)            # (and edges into removed nodes, their dst now NULL)
        if not todo:
            dropped = conn.total_changes - before
            if dropped:
                changes.edges_changed = True
            return {"full": False, "nodes": 0, "edges_dropped": dropped, "method": f"two-stage cap {CAP}",
                    "seconds": round(time.perf_counter() - t0, 3)}
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    texts: dict[int, tuple[str, list[str]]] = {}

    def analyse(part):
        out = []
        rows = conn.execute(f"SELECT id, key, name, kgtext(text) FROM nodes WHERE id IN ({','.join('?' * len(part))})",
                            part).fetchall()
        for nid, key, name, text in rows:
            out.append((nid, key, an(name or "") * nw + an(text or "")))
        return out

    stats = Stats.of(st)                       # (the exact step's grid statistics)
    if full:
        post = CandidatePostings(ix, int(st["n"]), cap=CAP, stats=stats)
    else:                                     # only the changed nodes' terms' lists
        for s in range(0, len(todo), BATCH):
            for nid, key, terms in analyse(todo[s:s + BATCH]):
                texts[nid] = (key, terms)
        post = CandidatePostings(ix, int(st["n"]), cap=CAP, stats=stats,
                                terms=chosen_terms(conn, [terms for _, terms in texts.values()], stats))
    allowed = np.zeros(max(prose) + 1 if prose else 0, dtype=np.float64)
    allowed[prose] = 1.0
    n_edges = 0
    for s in range(0, len(todo), BATCH):      # written batch by batch: memory stays flat
        part = todo[s:s + BATCH]
        batch = [(nid, *texts[nid]) for nid in part if nid in texts] if texts else analyse(part)
        rows_out = []
        for nid, key, terms in batch:
            for dst, sim in neighbours_two_stage(terms, nid, post, allowed):
                rows_out.append((nid, dst, sim))
        dsts = sorted({d for _, d, _ in rows_out})
        keys: dict[int, str] = {}
        for a in range(0, len(dsts), BATCH):
            ids = dsts[a:a + BATCH]
            keys.update(conn.execute(f"SELECT id, key FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids))
        conn.executemany("INSERT INTO edges(src, dst, ns, dst_name, type, weight) VALUES (?,?,?,?,?,?)",
                         [(a, b, "key", keys[b], EDGE_TYPE, round(w, 4)) for a, b, w in rows_out])
        n_edges += len(rows_out)
        if progress is not None:
            progress({"phase": "neighbors", "done": min(s + BATCH, len(todo)), "total": len(todo)})
    lists_mb = round(post.nbytes / 1e6, 1)
    changes.edges_changed = True
    seconds = time.perf_counter() - t0
    info = {"full": full, "nodes": len(todo), "edges": n_edges, "seconds": round(seconds, 3),
            "method": f"two-stage cap {CAP}", "lists_mb": lists_mb, "notice": method_note(len(prose))}
    ix.mark_derived("neighbors", seconds, info)
    return info
