"""The graph signal of several indexes searched as one, over ``similar_text`` lists that cross them.

A prose node's graph signal is the weighted mean of its neighbours' first-stage scores
(:func:`kgsearch.graph.kernels.proximity.pull_mean`). Each index's ``similar_text`` lists name
only its own nodes; one index of the union would list the most similar nodes of every part. That
difference was the whole measured gap between two indexes and one (bench/results/multi_ablate.md).
So the search over several indexes uses the union's lists
(:func:`kgsearch.text.neighbors.across.union_lists`, exactly one index's lists for indexes built
alike) in place of each index's own ``similar_text`` edges; its other edges are its own, as
before. A neighbour in another index is valued with that index's whole-index first-stage scores
(pooled BM25, the union's z statistics: :meth:`Signals.first_stage_of` with ``fulls``), which are
known before any index ranks.

**Where the lists are kept.** Computing them is about the ``neighbors`` step over the union
(12 s for 11K prose nodes of four BEIR sets, 8-10 s for 40K nodes of make_scale_corpus's
KG; docs/multi-index.md), too slow for a query, so they are computed once, outside any index (an
index never changes because another exists), and kept in the user's cache
(:func:`kgsearch.config.cache_home`, ``across/<hash of the index paths>.npz``) with the indexes'
paths, creation stamps and generations: a reindex of either, or another file at a path, and they
are computed again at the next search. The first search over a set of indexes computes them
(at most :data:`LAZY_MAX` prose nodes together) and says so in a notice; a larger set answers
with each index's own lists and a notice naming ``kgsearch link``, which computes them for any
size (:func:`ensure` with ``limit=None``). The file is written whole and renamed into place (a
crash leaves the old file or none); an unreadable one is computed again; a cache that cannot be
written keeps the lists for the process and says so. Nothing is downloaded.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ..arrays import unique
from ..budget import ENV as BUDGET_ENV
from ..config import EDGE_WEIGHTS, cache_home, edge_weight
from ..graph.kernels.proximity import IN_FACTOR, OUT_FACTOR, TWO_HOP_FACTOR, TWO_HOP_MAX, unique_inverse
from ..text.neighbors import K, M
from ..text.neighbors.across import UnionLists, union_lists, why_not
from ..text.neighbors.common import CODE_KINDS, GRID, MIN_SIM, NOT_PROSE, TIES
from .channels import SIGNAL_OF

__all__ = ["Across", "across_for", "cache_path", "describe", "ensure", "pull_together", "LAZY_MAX", "FORMAT"]

log = logging.getLogger(__name__)

LAZY_MAX = 10_000          # prose nodes together whose lists a search computes (`kgsearch link`: any)
FORMAT = 1                 # the cache file's layout and the lists' rules (in the key)
EDGE_TYPE = "similar_text"


def _real(ix) -> str:
    return _realpath(str(ix.path))


@functools.lru_cache(maxsize=64)
def _realpath(path: str) -> str:
    """(resolved once per process: another index at the path has another creation stamp)"""
    return os.path.realpath(path)


def _type_weights(engines: dict) -> list[float]:
    """Each index's weight of ``similar_text`` edges (its graph step's table, else the built-in)."""
    return [edge_weight(EDGE_TYPE, e.ix.meta_json("graph.edge_weights", None) or EDGE_WEIGHTS)
            for e in engines.values()]


def _key(engines: dict) -> dict:
    """What the kept lists depend on: each index's path, creation stamp, generation and weight
    of similar_text edges, and the rules the lists are computed with."""
    return {"format": FORMAT, "rules": {"K": K, "M": M, "min_sim": MIN_SIM, "grid": GRID, "ties": TIES},
            "indexes": [_index_key(e) for e in engines.values()]}


def _index_key(engine) -> dict:
    """One index's part of :func:`_key`, read once per index generation (every search checks
    the key: four reads of the meta table per index, and a JSON parse, were 30 us a search)."""
    ix = engine.ix

    def read():
        return {"path": _real(ix), "created_at": ix.meta("created_at"), "generation": ix.generation,
                "weight": _type_weights({0: engine})[0]}
    return dict(ix.cached("query.across.key", read))


def cache_path(engines: dict) -> Path:
    """The cache file of this list of indexes (by their paths, in order)."""
    paths = "\n".join(_real(e.ix) for e in engines.values())
    return cache_home() / "across" / f"{hashlib.sha1(paths.encode('utf-8')).hexdigest()[:20]}.npz"


ARRAYS = ("offsets", "indptr", "nb", "w", "out")


def _load(path: Path, key: dict) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            if json.loads(str(z["key"])) != json.loads(json.dumps(key)):
                return None
            return {a: z[a] for a in ARRAYS}
    except FileNotFoundError:
        return None
    except Exception:                      # damaged or foreign: computed again
        log.debug("cannot read %s", path, exc_info=True)
        return None


def _save(path: Path, key: dict, arrays: dict) -> None:
    """Write whole to a temporary file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, key=np.array(json.dumps(key, sort_keys=True)), **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _prose_count(engines: dict) -> int:
    marks = ",".join("?" * len(CODE_KINDS))
    return sum(e.ix.conn.execute(f"SELECT count(*) FROM nodes WHERE flags & {NOT_PROSE} = 0 AND kind NOT IN ({marks})",
                                 CODE_KINDS).fetchone()[0] for e in engines.values())


def ensure(engines: dict, limit: int | None = LAZY_MAX) -> tuple["Across | None", dict]:
    """The union's lists of ``engines`` from the cache file, or computed and kept there (up to
    ``limit`` prose nodes together; None: any number). Returns ``(Across or None, info)``; info
    holds ``why`` when there are none, else ``path``, ``computed``, ``edges`` and, when
    computed, ``prose_nodes``, ``seconds`` and ``not_kept`` (why the file could not be written)."""
    why = why_not([e.ix for e in engines.values()])
    if why is not None:
        return None, {"why": why}
    key = _key(engines)
    path = cache_path(engines)
    arrays = _load(path, key)
    if arrays is not None:
        return Across(engines, **arrays), {"path": str(path), "computed": False, "edges": len(arrays["nb"]) // 2}
    n = _prose_count(engines)
    if limit is not None and n > limit:
        return None, {"why": f"the indexes hold {n:,} prose nodes together, over the {limit:,} whose similar_text "
                             f"neighbours a search links across them (`kgsearch link` links any number)",
                      "prose_nodes": n}
    t0 = time.perf_counter()
    ul = union_lists([e.ix for e in engines.values()])
    across = Across.of(engines, ul)
    info = {"path": str(path), "computed": True, "prose_nodes": n, "edges": len(ul.src),
            "seconds": round(time.perf_counter() - t0, 2)}
    try:
        _save(path, key, {a: getattr(across, a) for a in ARRAYS})
    except OSError as exc:
        info["not_kept"] = f"cannot write {path} ({exc.strerror or exc})"
    return across, info


def describe(info: dict) -> str:
    """One line for a search's notices or the ``link`` command."""
    if info.get("why"):
        return info["why"]
    if not info.get("computed"):
        return f"the similar_text neighbours across the indexes are current ({info['edges']:,} edges in {info['path']})"
    where = (f"not kept: {info['not_kept']}; the next process computes them again" if info.get("not_kept")
             else f"kept in {info['path']}")
    return (f"linked the similar_text neighbours of {info['prose_nodes']:,} prose nodes across the indexes "
            f"({info['seconds']:.1f} s, once until an index changes; {where})")


def across_for(engines: dict, notices: list[str], memo: dict | None = None) -> "Across | None":
    """The union's lists of ``engines`` (``{name: Engine}``, two or more), from ``memo``, the
    cache file, or computed (:func:`ensure`, up to :data:`LAZY_MAX` prose nodes); None, with a
    notice, when they cannot be had. ``memo``: a dict the caller keeps between searches."""
    memo = {} if memo is None else memo
    key = _key(engines)
    if memo.get("key") == key:
        if memo.get("why"):
            notices.append(memo["why"])
        return memo.get("across")
    memo.clear()
    memo["key"] = key
    try:
        across, info = ensure(engines, LAZY_MAX)
    except MemoryError:                 # (KGSEARCH_MEMORY_MB: the search answers without them)
        across, info = None, {"why": f"computing the similar_text neighbours across the indexes went over the "
                                     f"memory budget (raise {BUDGET_ENV}, or run `kgsearch link` with more)"}
    if across is None:
        memo["why"] = f"{info['why']}: each index's similar_text neighbours are its own, so graph scores are only " \
                      f"roughly comparable"
        notices.append(memo["why"])
        return None
    if info["computed"]:
        notices.append(describe(info))
    memo["across"] = across
    return across


class Across:
    """The union's ``similar_text`` edges arranged by the node they are pulled into: for union
    id ``t`` (index ``i``'s node ``x`` is ``offsets[i] + x``), ``nb[indptr[t]:indptr[t+1]]``
    (union ids) with weights ``w`` (similarity x the type's weight, float32 as the graph step
    stores them) and ``out`` (True: an edge out of ``t``, counted x0.7 as pull_mean counts;
    False: into it, x1.0). 9 bytes an entry, two entries an edge; kept in the cache as they
    are, so a process reads them without arranging them again."""

    def __init__(self, engines: dict, offsets, indptr, nb, w, out):
        self.names = list(engines)
        self.engines = engines
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.indptr, self.nb, self.w, self.out = indptr, nb, w, out

    @classmethod
    def of(cls, engines: dict, ul: UnionLists) -> "Across":
        tw = np.array(_type_weights(engines))
        tgt = np.concatenate([ul.dst, ul.src])
        total = int(ul.spans.sum())
        order = np.argsort(tgt, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(tgt, minlength=total))]).astype(np.int64)
        nb = np.concatenate([ul.src, ul.dst])[order].astype(np.int32 if total < 2 ** 31 else np.int64)
        w = (np.concatenate([ul.sim, ul.sim]) * tw[ul.index_of(tgt)]).astype(np.float32)[order]
        out = np.concatenate([np.zeros(len(ul.dst), bool), np.ones(len(ul.src), bool)])[order]
        return cls(engines, ul.offsets, indptr, nb, w, out)

    def index_of(self, uid: np.ndarray) -> np.ndarray:
        """Which index (0, 1, ...) each union id belongs to."""
        return np.searchsorted(self.offsets, uid, side="right") - 1

    def view(self, name: str, pools: dict, contexts: dict) -> "AcrossView":
        """For index ``name``: ``pools`` and ``contexts`` (``{name: GraphContext or None}``) of
        every index, loaded before any index ranks (in threads none touches another's)."""
        return AcrossView(self, self.names.index(name), pools, contexts)


class AcrossView:
    """What one index's graph stage uses: :meth:`pull_mean` over its own typed edges and the
    union's ``similar_text`` lists."""

    def __init__(self, across: Across, i: int, pools: dict, contexts: dict):
        self.a, self.i, self.pools, self.contexts = across, i, pools, contexts

    def pull_mean(self, gctx, sig, ids: np.ndarray, a: float, b: float, two_hop: bool = False) -> np.ndarray:
        """:func:`~kgsearch.graph.kernels.proximity.pull_mean` for this index's node ``ids``,
        its ``similar_text`` edges replaced by the union's lists (neighbours in any index)."""
        ul = self.a
        names = self.a.names

        def ctx(j):
            return gctx if j == self.i else self.contexts.get(names[j])

        def value_of(u):
            out = np.zeros(len(u))
            which = ul.index_of(u)
            for j in unique(which).tolist():
                m = which == j
                local = u[m] - ul.offsets[j]
                if j == self.i:
                    out[m] = sig.first_stage_of(local, a, b)
                else:
                    out[m] = sig.first_stage_of(local, a, b, fulls=self.pools[names[j]].fulls)
            return out

        targets = np.asarray(ids, dtype=np.int64) + ul.offsets[self.i]
        res, nbrs, link = self._one(targets, value_of, ctx, link=two_hop)
        if two_hop and len(nbrs):
            if len(nbrs) > TWO_HOP_MAX:
                nbrs = np.sort(nbrs[np.argsort(-link, kind="stable")[:TWO_HOP_MAX]])
            first = self._one(nbrs, value_of, ctx, link=False)[0]

            def first_of(u):                # a neighbour's own 1-hop value (0 past the bound)
                at = np.searchsorted(nbrs, u).clip(0, len(nbrs) - 1)
                return np.where(nbrs[at] == u, first[at], 0.0)

            res = res + TWO_HOP_FACTOR * self._one(targets, first_of, ctx, link=False)[0]
        return res

    def signature(self, sig, a: float, b: float, two_hop: bool) -> tuple | None:
        """What this index's values of the union's nodes depend on (:meth:`pull_mean`'s
        ``value_of``), when its own nodes' values are read from the very whole-index arrays its
        pool holds (so they equal the values another index gives them through
        :meth:`Signals.first_stage_of` with ``fulls``); None when they are not (then its pull
        is computed on its own)."""
        if sig.norm != "z" or two_hop:
            return None
        fulls = self.pools[self.a.names[self.i]].fulls
        names = tuple(n for n in sig.raw_scores if SIGNAL_OF.get(n) == "text" and n in sig.full)
        used = names + (("dense",) if "dense" in sig.full else ())
        for n in used:
            f = fulls.get(n)
            if f is None or sig.full[n][0] is not f[0] or sig.full[n][1] is not f[1] or \
                    sig._more.get(n) is not getattr(f, "lookup", None):
                return None
        return (a, b, names, "dense" in sig.full, "dense" in sig.raw_scores,
                tuple(tuple(sig.full[n][2:5]) for n in used))

    def _one(self, targets: np.ndarray, value_of, ctx, link: bool = True):
        """(mean per target, the neighbours' union ids, each neighbour's link weight) over each
        target's own typed edges but ``similar_text`` and the union's lists (``link=False``: no
        link weights, None)."""
        ul = A = self.a
        ts, nbs, ws = [], [], []
        which = ul.index_of(targets)
        for j in unique(which).tolist():
            gc = ctx(j)
            if gc is None or not gc.graph.m:
                continue
            sim = gc.etype_names.index(EDGE_TYPE) if EDGE_TYPE in gc.etype_names else -1
            if not any(t != sim for t in range(len(gc.etype_names))):
                continue
            tj = np.flatnonzero(which == j)
            pos = gc.positions(targets[tj] - ul.offsets[j])
            ok = pos >= 0
            tj, pos = tj[ok], pos[ok]
            if not len(pos):
                continue
            (node_o, nb_o, w_o, t_o), (node_i, nb_i, w_i, t_i) = gc.graph.neighbors_out_in(pos)
            ko, ki = t_o != sim, t_i != sim       # (its own similar_text edges: the union's instead)
            node_o, nb_o, w_o, node_i, nb_i, w_i = node_o[ko], nb_o[ko], w_o[ko], node_i[ki], nb_i[ki], w_i[ki]
            order = np.argsort(pos, kind="stable")
            t_of = lambda p: tj[order][np.searchsorted(pos[order], p)]      # noqa: E731
            ts += [t_of(node_i), t_of(node_o)]
            nbs += [gc.ids_of(nb_i) + ul.offsets[j], gc.ids_of(nb_o) + ul.offsets[j]]
            ws += [w_i.astype(np.float64) * OUT_FACTOR, w_o.astype(np.float64) * IN_FACTOR]
        lo, hi = A.indptr[targets], A.indptr[targets + 1]
        counts = hi - lo
        if counts.sum():
            e = np.repeat(lo - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(counts.sum())
            ts.append(np.repeat(np.arange(len(targets)), counts))
            nbs.append(A.nb[e])
            ws.append(A.w[e].astype(np.float64) * np.where(A.out[e], IN_FACTOR, OUT_FACTOR))
        res = np.zeros(len(targets))
        if not ts:
            return res, np.zeros(0, dtype=np.int64), np.zeros(0)
        if len(ts) == 1:                  # (the union's lists alone: nothing to join)
            t, nb, w = ts[0], nbs[0].astype(np.int64), ws[0]
        else:
            t, nb, w = np.concatenate(ts), np.concatenate(nbs).astype(np.int64), np.concatenate(ws)
        if not len(nb):
            return res, np.zeros(0, dtype=np.int64), np.zeros(0)
        u, inv = unique_inverse(nb, len(A.indptr) - 1)
        vals = np.asarray(value_of(u), dtype=np.float64)[inv]
        num = np.bincount(t, weights=w * vals, minlength=len(targets))
        den = np.bincount(t, weights=w, minlength=len(targets))
        res = np.divide(num, den, out=res, where=den > 0)
        return res, u, np.bincount(inv.reshape(-1), weights=w, minlength=len(u)) if link else None


def pull_together(pulls: list) -> list[np.ndarray]:
    """Every index's :class:`~kgsearch.query.graph_stage.Pull` computed at once: one pass of
    :meth:`AcrossView._one` over all the indexes' candidates (each index's typed edges read from
    its own graph, the union's lists gathered once, each neighbour valued once), in place of one
    pass per index. The values are each index's own :meth:`AcrossView.pull_mean`, to the last
    bit: a candidate's contributions are summed in the same order, and a node's value is the
    same whichever index asks (:meth:`AcrossView.signature`: the same weights, channels and
    union statistics, read from the same whole-index arrays). Pulls that differ in any of these,
    and two-hop pulls (their bound on the second hop is per index), are computed each on its own.
    """
    sigs = [p.view.signature(p.sig, p.a, p.b, p.two_hop) for p in pulls]
    views = {id(p.view.a) for p in pulls}
    if len(pulls) < 2 or any(s is None for s in sigs) or len(set(sigs)) > 1 or len(views) > 1:
        return [p.answer() for p in pulls]
    first = pulls[0]
    A, names = first.view.a, first.view.a.names
    mine = {p.view.i: p for p in pulls}

    def ctx(j):
        return mine[j].gctx if j in mine else first.view.contexts.get(names[j])

    def value_of(u):
        out = np.zeros(len(u))
        which = A.index_of(u)
        for j in unique(which).tolist():
            m = which == j
            local = u[m] - A.offsets[j]
            if j in mine:
                p = mine[j]
                out[m] = p.sig.first_stage_of(local, p.a, p.b)
            else:
                out[m] = first.sig.first_stage_of(local, first.a, first.b, fulls=first.view.pools[names[j]].fulls)
        return out

    ids = [np.asarray(p.ids, dtype=np.int64) for p in pulls]
    targets = np.concatenate([x + A.offsets[p.view.i] for x, p in zip(ids, pulls)])
    res = first.view._one(targets, value_of, ctx, link=False)[0]
    return np.split(res, np.cumsum([len(x) for x in ids])[:-1])
