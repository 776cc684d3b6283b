"""Which ``similar_text`` lists an incremental run of the exact step must recompute.

A list is a function of the node's own terms, the other prose nodes' postings, and the global
statistics (N, avgdl, each term's df). When the step used the live statistics, a run that
added, removed or re-lengthed any node changed every impact and idf, so every prose node's
list was recomputed: 113 s for one appended word at 100K prose nodes (the step costs about
1 ms a node), 5 s at 10K. Two rules make the work follow the change while the stored lists stay
exactly a fresh build's:

**Grid statistics** (:class:`~.common.Stats`): the step scores with N, avgdl and each term's df
rounded to a geometric grid, so a fresh build of the same files has the same statistics and
the same lists, and a run moves them only once per ~4 % change of the collection or of a df.

**Entry bars** (:data:`BAR_KEY`). For every prose node X the step stores the score a new
candidate must reach to enter X's list: the K-th score of a full list, ``MIN_SIM`` times X's
own score otherwise, +inf when X has no term in the df window. When X's terms, their grid
idfs and the df window are unchanged, the only candidate scores a run can change are those of
the changed nodes. So X's list is recomputed only when

1. X is an added or modified node;
2. X holds a term whose grid df, or whose place in the df window, changed;
3. X's list holds a changed node (its score moved, or it is gone: its edges lost their ``dst``);
4. a changed node C can now reach X's bar. C's score for X sums ``idf(t) * impact(C, t)`` over
   X's query terms that C holds, so it is at most U = that sum over every window term of C
   that X holds (all terms are positive); X is recomputed when U reaches the bar.

A node that did not enter a list before and cannot reach its bar now leaves it as it was; any
other list reads no changed impact, idf or prose flag. Tests compare every case with a fresh
build (tests/text/test_neighbors.py).
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from ...store.sql import in_chunks
from ..idcodec import decode_ids
from .common import Stats, node_terms, query_terms

__all__ = ["BAR_KEY", "affected", "holders", "load_bars"]

BAR_KEY = "text.neighbors.bars"   # float64 entry bar by node id
_MARGIN = 1e-6                    # U within this share of the bar counts as reaching it


def load_bars(ix, size: int) -> np.ndarray | None:
    """The stored bars, padded to ``size`` ids with -inf (a node without a bar is recomputed
    when a changed node shares a term with it); None when there are none."""
    bars = ix.get_array(BAR_KEY)
    if bars is None:
        return None
    if len(bars) < size:
        bars = np.concatenate([bars, np.full(size - len(bars), -np.inf)])
    return np.array(bars, dtype=np.float64)


def holders(conn, ids, edge_type: str) -> set[int]:
    """Nodes whose stored list holds one of ``ids``, or a node removed since (its edges lost
    their ``dst``: ON DELETE SET NULL)."""
    out = {r[0] for r in in_chunks(conn, "SELECT src FROM edges WHERE type=? AND +file_id IS NULL AND dst IN ({})",
                                   sorted(ids), before=[edge_type])}
    out.update(r[0] for r in conn.execute("SELECT src FROM edges WHERE type=? AND +file_id IS NULL AND dst IS NULL",
                                          (edge_type,)))
    return out


def _reaching(conn, reach: dict[int, list[int]], weights: dict[int, dict[str, float]], an, nw: int,
              n_terms: int, stats: Stats, bars: np.ndarray) -> set[int]:
    """Rule 4, exactly: the nodes X of ``reach`` for which a changed node's score over X's own
    query (its ``n_terms`` most distinctive window terms, chosen as the kernel chooses
    them) reaches X's bar. Reads X's text and its terms' df, not their postings: the bound U
    counts every shared term and reaches the bar of ~750 lists for one appended word at 100K
    prose nodes, this ~20 (the rest of a list's recomputation is its postings and candidates)."""
    out: set[int] = set()
    idf_of: dict[str, float | None] = {}
    todo = sorted(reach)
    for s in range(0, len(todo), 500):
        texts = {nid: node_terms(an, nw, name, text) for nid, name, text in in_chunks(
            conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({})", todo[s:s + 500])}
        vocab = sorted({t for ts in texts.values() for t in ts} - set(idf_of))
        idf_of.update((t, None) for t in vocab)
        for term, df in in_chunks(conn, "SELECT term, df FROM text_postings WHERE term IN ({})", vocab):
            idf_of[term] = stats.idf(df) if stats.window(df) is not None else None
        for x, ts in texts.items():
            counts = Counter(t for t in ts if idf_of[t] is not None)
            ranked = query_terms(counts, idf_of.__getitem__, n_terms)
            bar = bars[x] if x < len(bars) else -np.inf
            if any(sum(float(weights[c].get(t, 0.0)) for t, _ in ranked) >= bar * (1 - _MARGIN) for c in reach[x]):
                out.add(x)
    return out


def affected(ix, changes, an, post, stats: Stats, allowed: np.ndarray, bars: np.ndarray,
             edge_type: str, why: dict | None = None, nw: int = 1, n_terms: int = 24) -> set[int] | None:
    """The prose nodes whose lists can change (rules 1-4 of the module docstring); None when
    an old version is unknown (then everything is recomputed). ``post``: the run's lazy
    postings (scored with ``stats``); ``allowed[id] > 0`` for prose nodes; ``bars`` by id.
    ``why`` gets how many nodes each rule added (``changed``, ``df``, ``held``, ``bar``).
    ``nw``, ``n_terms``: the kernel's name weight (repetitions) and terms per query."""
    why = {} if why is None else why
    conn = ix.conn

    def prose(ids) -> list[int]:
        return [i for i in ids if i < len(allowed) and allowed[i] > 0]

    old_count: Counter = Counter()
    for nid in set(changes.removed) | set(changes.modified):
        old = changes.old.get(nid)
        if old is None:
            return None
        old_count.update(set(an(old[0] or "")) | set(an(old[1] or "")))
    changed = sorted(set(changes.added) | set(changes.modified))
    new_terms: dict[int, set[str]] = {}
    for nid, name, text in in_chunks(conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({})", changed):
        new_terms[nid] = set(an(name or "")) | set(an(text or ""))
    new_count = Counter(t for ts in new_terms.values() for t in ts)
    out = set(prose(changed))                                                         # rule 1
    why["changed"] = len(out)
    terms = sorted(set(old_count) | set(new_count))
    moved = [term for term, df in in_chunks(conn, "SELECT term, df FROM text_postings WHERE term IN ({})", terms)
             if stats.window(df) != stats.window(df - new_count.get(term, 0) + old_count.get(term, 0))]
    for (ib,) in in_chunks(conn, "SELECT ids FROM text_postings WHERE term IN ({})", moved):   # rule 2
        out.update(prose(decode_ids(ib).tolist()))
    why["df"] = len(out) - why["changed"]
    out.update(prose(holders(conn, set(changes.removed) | set(changes.modified), edge_type)))  # rule 3
    why["held"] = len(out) - why["changed"] - why["df"]
    post.load(new_count)                                                              # rule 4
    reach: dict[int, list[int]] = {}          # node -> changed nodes whose bound U reaches its bar
    weights: dict[int, dict[str, float]] = {}
    for c in prose(changed):
        ids, vals, wc = [], [], {}
        for t in new_terms.get(c, ()):
            hit = post.lists.get(t)
            if hit is None:
                continue
            pid, imp, idf = hit
            p = int(np.searchsorted(pid, c))
            if p < len(pid) and pid[p] == c:
                wc[t] = imp[p] * np.float32(idf)
                ids.append(pid)
                vals.append(np.full(len(pid), wc[t], dtype=np.float32))
        if not ids:
            continue
        weights[c] = wc
        u, inv = np.unique(np.concatenate(ids), return_inverse=True)
        bound = np.bincount(inv, weights=np.concatenate(vals))
        bar = bars[np.minimum(u, len(bars) - 1)]
        bar[u >= len(bars)] = -np.inf                        # (no bar yet: recompute)
        for x in prose(u[(bound >= bar * (1 - _MARGIN)) & (u != c)].tolist()):
            if x not in out:
                reach.setdefault(x, []).append(c)
    out.update(_reaching(conn, reach, weights, an, nw, n_terms, stats, bars))
    why["bar"] = len(out) - why["changed"] - why["df"] - why["held"]
    return out
