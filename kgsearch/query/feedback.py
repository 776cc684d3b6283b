"""Session boosts and feedback nudges: two optional factors on the ranking.

Both are multiplicative adjustments on candidates the channels already found (they never bring
a node in), applied by :func:`kgsearch.query.adjust.rank` after the test/vendored factors and
recorded per hit like them (``--explain`` shows ``x session`` / ``x feedback``). With no session
and no stored feedback, :func:`nudges_for` returns ``None`` and the ranking is exactly what it
was without this module.

* **Session** (:class:`Session`, kept by the MCP server for one agent): every node the agent
  opened gets ``x (1 + SESSION_BOOST * w)``, ``w = min(SESSION_CAP, sum over its opens of
  0.5 ** (age / SESSION_HALF_LIFE))``: opened just now x1.2, three minutes ago x1.1, and never
  more than x1.2 however often it was opened.
* **Feedback** (table ``feedback``, migration 0010; :func:`record`, ``kgsearch feedback``): a
  row says a node was useful (+1) or not (-1) for a query. A later query whose analysed terms
  (the index's analyser: :attr:`Query.signature <kgsearch.query.parse.Query.signature>`)
  overlap a row's terms with Jaccard similarity ``s >= FEEDBACK_MIN_SIM`` nudges that node by
  ``x (1 + FEEDBACK_GAIN * clip(sum of sign * s, -1, 1))``: x1.5 at most, x0.5 at least. A row
  counts only while the node's hash (kind, name, text) is the one it was given for.
"""
from __future__ import annotations

import math
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import UsageError
from .parse import Query, index_analyzer, parse

__all__ = ["Session", "Nudges", "nudges_for", "record", "query_signature", "similarity",
           "SESSION_HALF_LIFE", "SESSION_CAP", "SESSION_BOOST", "FEEDBACK_GAIN", "FEEDBACK_MIN_SIM"]

SESSION_HALF_LIFE = 180.0     # seconds
SESSION_CAP = 1.0             # the decayed count of opens is capped here
SESSION_BOOST = 0.2           # x (1 + 0.2 * w)
FEEDBACK_GAIN = 0.5           # x (1 + 0.5 * nudge), nudge in [-1, 1]
FEEDBACK_MIN_SIM = 0.5        # Jaccard similarity of query terms for a row to count


class Session:
    """Nodes one agent opened, with when; ``clock`` is ``time.monotonic`` unless a test gives one."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.opens: dict[int, list[float]] = {}
        self.last_used = clock()

    def open(self, node_id: int, at: float | None = None) -> None:
        t = self.clock() if at is None else at
        self.opens.setdefault(int(node_id), []).append(t)
        self.last_used = t

    def weights(self, now: float | None = None) -> dict[int, float]:
        """``{node id: w}`` with ``w = min(cap, sum of 0.5 ** (age / half-life))``, w >= 1e-3."""
        now = self.clock() if now is None else now
        out = {}
        for nid, ts in self.opens.items():
            w = min(SESSION_CAP, sum(0.5 ** (max(0.0, now - t) / SESSION_HALF_LIFE) for t in ts))
            if w >= 1e-3:
                out[nid] = w
        return out


def query_signature(query: str, ix=None) -> str:
    """The analysed terms of ``query`` (the analyser of the index ``ix``; the standard Porter2
    analyser without one), sorted, once each: :attr:`Query.signature`."""
    return parse(query, index_analyzer(ix) if ix is not None else None).signature


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of two signatures (1.0 for equal ones, also when both are empty)."""
    sa, sb = set(a.split()), set(b.split())
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


@dataclass
class Nudges:
    """Factors by node id, per kind of nudge (``session``, ``feedback``)."""

    factors: dict[str, dict[int, float]] = field(default_factory=dict)

    def apply(self, cand: np.ndarray, fused: np.ndarray, adjustments: dict) -> np.ndarray:
        ids = cand.tolist()
        for name, by_id in self.factors.items():
            f = np.array([by_id.get(n, 1.0) for n in ids], dtype=np.float64)
            if (f != 1.0).any():
                adjustments[name] = f
                fused = fused * f
        return fused


def _feedback_rows(ix, sig: str) -> list[tuple[int, float]]:
    """(node id, sign * similarity) of the live rows similar enough to ``sig``."""
    try:
        if ix.conn.execute("SELECT 1 FROM feedback LIMIT 1").fetchone() is None:
            return []
        rows = ix.conn.execute("SELECT n.id, f.terms, f.useful FROM feedback f JOIN nodes n ON n.key = f.node_key "
                               "WHERE f.node_hash IS n.hash ORDER BY f.id").fetchall()
    except sqlite3.OperationalError:          # an index from before migration 0010
        return []
    out = []
    for nid, terms, useful in rows:
        s = similarity(sig, terms)
        if s >= FEEDBACK_MIN_SIM:
            out.append((nid, (1.0 if useful > 0 else -1.0) * s))
    return out


def nudges_for(ix, q: Query, session: Session | None = None, feedback: bool = True) -> Nudges | None:
    """The factors for the parsed query ``q``, or ``None`` when there are none (no session
    opens, no similar live feedback; ``feedback=False``: stored feedback is not read): then the
    ranking is untouched."""
    factors: dict[str, dict[int, float]] = {}
    if session is not None:
        w = session.weights()
        if w:
            factors["session"] = {n: 1.0 + SESSION_BOOST * x for n, x in w.items()}
    rows = _feedback_rows(ix, q.signature) if feedback else []
    if rows:
        total: dict[int, float] = {}
        for nid, v in rows:
            total[nid] = total.get(nid, 0.0) + v
        fb = {n: 1.0 + FEEDBACK_GAIN * max(-1.0, min(1.0, v)) for n, v in total.items()}
        fb = {n: f for n, f in fb.items() if f != 1.0 and math.isfinite(f)}
        if fb:
            factors["feedback"] = fb
    return Nudges(factors) if factors else None


def record(ix, query: str, node: dict, useful: bool) -> dict:
    """Store (or replace) the feedback on ``node`` (a row with ``key``) for ``query``; returns the row.

    Opens its own short write transaction on ``ix`` (an index opened for writing). An empty
    query is a usage error: it names no query to nudge (stored, it matched every query whose
    words are all stop words or filters)."""
    if not query.strip():
        raise UsageError("the query is empty; give the query the node was (not) useful for")
    sig = query_signature(query, ix)
    row = ix.conn.execute("SELECT hash FROM nodes WHERE key=?", (node["key"],)).fetchone()
    h = row[0] if row else None
    now = time.time()
    with ix.transaction():
        ix.conn.execute("INSERT INTO feedback(query, terms, node_key, node_hash, useful, created) VALUES (?,?,?,?,?,?) "
                        "ON CONFLICT(terms, node_key) DO UPDATE SET query=excluded.query, node_hash=excluded.node_hash, "
                        "useful=excluded.useful, created=excluded.created",
                        (query, sig, node["key"], h, 1 if useful else -1, now))
    return {"query": query, "terms": sig, "node": node["key"], "useful": bool(useful), "created": now,
            "expires": "when the node's text changes"}
