"""Result hits with the parts of every score (``--explain``) and a snippet."""
from __future__ import annotations

import numpy as np

from .. import fuse, pack
from ..store.rows import node_meta
from .channels import SIGNAL_OF
from .options import Hit

__all__ = ["make_hits", "make_hits_reference"]


def make_hits(conn, q, cand, order, fused, chan_sig, norm_sig, signals, weights, parts, adjustments,
              meta, fusion, opts, full_names=frozenset(), hit_class=Hit) -> list[Hit]:
    """One :class:`Hit` (or ``hit_class``, a subclass) per position in ``order``: channel scores
    and ranks, signal parts and adjustments of its score (what ``--explain`` prints), and a
    snippet around the parsed query ``q``'s terms (:attr:`~kgsearch.query.parse.Query.highlight`)."""
    if not len(order):
        return []
    if opts.snippets and opts.collapse:           # texts of the final hits only
        for nid, m in node_meta(conn, cand[order].tolist()).items():
            meta[nid]["text"] = m["text"]
    terms = list(q.highlight) if opts.snippets else []
    ranks = fuse.ranks_at_each(chan_sig, order)     # {channel: ranks aligned with order}
    # every value the hits show, gathered at the hits' positions as Python numbers at once (the
    # same floats: a float64 read by tolist is the float ``float(s[i])`` reads; ~12 us a hit
    # of numpy scalar reads before, make_hits_reference)
    pos = np.asarray(order, dtype=np.int64)
    at = lambda s: np.asarray(s)[pos].tolist()      # noqa: E731
    chan_v = {n: at(s) for n, s in chan_sig.items()}
    norm_v = {n: at(norm_sig[n]) if n in norm_sig else chan_v[n] for n in chan_sig}
    rank_v = {n: np.asarray(r).tolist() for n, r in ranks.items()}
    if fusion == "linear":
        sig_v = {n: at(s) for n, s in signals.items()}
        part_v = {n: at(p) for n, p in parts.items()}
    else:
        part_v = {n: at(p) for n, p in parts.items()}
    adj_v = {k: at(v) for k, v in adjustments.items()}
    nids, scores = at(cand), at(fused)
    signal_of = {n: SIGNAL_OF.get(n, "graph") for n in part_v}
    hits = []
    for j in range(len(pos)):
        nid = int(nids[j])
        m = meta[nid]
        chans = {}
        for n, s in chan_v.items():
            if s[j] > 0 or n in full_names:
                chans[n] = {"score": round(float(s[j]), 6), "rank": int(rank_v[n][j]),
                            "norm": round(float(norm_v[n][j]), 6)}
        sigs = {}
        if fusion == "linear":
            for n, s in sig_v.items():
                if s[j] > 0 or n in parts:
                    sigs[n] = {"value": round(float(s[j]), 6), "weight": weights.get(n, 0.0),
                               "part": round(float(part_v[n][j]), 6) if n in parts else 0.0}
        else:
            for n, p in part_v.items():
                if p[j] > 0:
                    sigs[n] = {"value": int(rank_v[n][j]) if n in rank_v else 0,
                               "weight": weights.get(signal_of[n], 0.0),
                               "part": round(float(p[j]), 6)}
        adj = {k: round(float(v[j]), 6) for k, v in adj_v.items() if v[j] not in (0.0, 1.0)}
        hits.append(_hit(hit_class, nid, m, terms, opts, scores[j], j + 1, chans, sigs, adj))
    return hits


def _hit(hit_class, nid: int, m: dict, terms: list, opts, score, rank: int, chans: dict, sigs: dict, adj: dict):
    """One hit from its display fields ``m`` and score parts (its methods from its channels)."""
    methods = "+".join(sorted({SIGNAL_OF[n] if SIGNAL_OF[n] != "embedding" else "embedding"
                               for n in chans}, key=["text", "embedding", "graph", "intent"].index))
    snip = pack.snippet(m.get("text", "") or m["name"], terms) if opts.snippets else ""
    return hit_class(id=nid, key=m["key"], kind=m["kind"], name=m["name"], qualname=m["qualname"] or "",
                     parent=m["parent"], path=m["path"], line=m["line_start"], line_end=m["line_end"], snippet=snip,
                     score=round(float(score), 6), rank=rank, methods=methods, channels=chans, signals=sigs,
                     adjustments=adj)


def make_hits_reference(conn, q, cand, order, fused, chan_sig, norm_sig, signals, weights, parts, adjustments,
                        meta, fusion, opts, full_names=frozenset(), hit_class=Hit) -> list[Hit]:
    """:func:`make_hits` as first written (a numpy scalar read per value shown); the same hits."""
    if not len(order):
        return []
    if opts.snippets and opts.collapse:
        for nid, m in node_meta(conn, cand[order].tolist()).items():
            meta[nid]["text"] = m["text"]
    terms = list(q.highlight) if opts.snippets else []
    ranks = fuse.ranks_at_each(chan_sig, order)     # {channel: ranks aligned with order}
    hits = []
    for r, i in enumerate(order, 1):
        nid = int(cand[i])
        m = meta[nid]
        chans = {}
        for n, s in chan_sig.items():
            if s[i] > 0 or n in full_names:
                chans[n] = {"score": round(float(s[i]), 6), "rank": int(ranks[n][r - 1]),
                            "norm": round(float(norm_sig.get(n, s)[i]), 6)}
        sigs = {}
        if fusion == "linear":
            for n, s in signals.items():
                if s[i] > 0 or n in parts:
                    sigs[n] = {"value": round(float(s[i]), 6), "weight": weights.get(n, 0.0),
                               "part": round(float(parts[n][i]), 6) if n in parts else 0.0}
        else:
            for n, p in parts.items():
                if p[i] > 0:
                    sigs[n] = {"value": int(ranks[n][r - 1]) if n in ranks else 0,
                               "weight": weights.get(SIGNAL_OF.get(n, "graph"), 0.0),
                               "part": round(float(p[i]), 6)}
        adj = {k: round(float(v[i]), 6) for k, v in adjustments.items() if v[i] not in (0.0, 1.0)}
        hits.append(_hit(hit_class, nid, m, terms, opts, fused[i], r, chans, sigs, adj))
    return hits
