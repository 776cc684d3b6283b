"""Pattern channel: identifier, substring, typo-tolerant and ``/regex/`` search over node names.

Index: ``text_symbols`` and ``text_trigrams``, kept by :mod:`kgsearch.text.trigrams`.

We keep our own trigram postings instead of an FTS5 ``trigram`` table: typo tolerance needs
the *number* of query trigrams each symbol shares (one ``np.bincount`` over the query's
postings), which FTS5 does not expose, and one structure serves substring, fuzzy and regex
prefiltering alike on every SQLite build (bench/results/text.md compares the latency).

Query kinds (:func:`search`):

* ``/re/`` or ``/re/i``: trigram prefilter from the regex's required literal, then Python
  ``re`` on the candidates with a time budget and a size cap; patterns that can backtrack
  exponentially are refused (empty result); the budget is a hard limit inside a match in
  the main thread, and bounded by one name's match elsewhere (:mod:`kgsearch.text.regex`).
* otherwise each identifier-like token of the query (the whole query if it is one word;
  tokens with ``_``, ``.``, digits or inner capitals in longer queries) is matched:
  exact name 1.0, name prefix 0.8-0.9, substring 0.6-0.7, approximate substring
  (Myers bit-parallel edit distance, up to 1-3 edits by length) up to 0.5.
"""
from __future__ import annotations

import logging
import re
import sqlite3

import numpy as np

from ..codelike import dotted, is_code_token
from ..store.sql import iter_in_chunks
from .regex import refusal, required_literal, scan, sre_parser, timer_usable
from .tokenize import clean_query
from .trigrams import MAX_SYM, ids_from as _ids_from, trigrams

__all__ = ["search", "query_parts", "match_token", "edit_distance", "substring_distance", "regex_notice"]

log = logging.getLogger(__name__)

_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
REGEX_BUDGET_S = 0.25      # time budget of one regex query
REGEX_MAX_SCAN = 200_000   # symbols a regex without a usable literal may scan
FUZZY_POOL = 200           # candidates (by shared trigrams) verified by edit distance


# ---------------------------------------------------------------------------- distances
def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (Myers/Hyyrö bit-parallel; plain DP for empty strings)."""
    return _myers(a, b, substring=False)


def substring_distance(pattern: str, text: str) -> int:
    """Smallest edit distance between ``pattern`` and any substring of ``text``."""
    return _myers(pattern, text, substring=True)


def _myers(p: str, t: str, substring: bool) -> int:
    m = len(p)
    if m == 0:
        return 0 if substring else len(t)
    if not t:
        return m
    peq: dict[str, int] = {}
    for i, c in enumerate(p):
        peq[c] = peq.get(c, 0) | (1 << i)
    full = (1 << m) - 1
    high = 1 << (m - 1)
    pv, mv, score = full, 0, m
    best = m
    carry = 0 if substring else 1
    for c in t:
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & full)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = ((ph << 1) | carry) & full
        mh = (mh << 1) & full
        pv = mh | (~(xv | ph) & full)
        mv = ph & xv
        if score < best:
            best = score
    return best if substring else score


# ---------------------------------------------------------------------------- query
_IDENT = re.compile(r"[\w.$:/-]+")


def _max_edits(n: int) -> int:
    if n < 5:
        return 0
    if n < 8:
        return 1
    if n < 14:
        return 2
    return 3


def _fetch_syms(conn, ids) -> dict[int, str]:
    return dict(iter_in_chunks(conn, "SELECT id, sym FROM text_symbols WHERE id IN ({})", list(ids)))


def _postings(conn, tris: list[str]) -> dict[str, np.ndarray]:
    return {tri: _ids_from(blob)
            for tri, blob in iter_in_chunks(conn, "SELECT tri, ids FROM text_trigrams WHERE tri IN ({})", tris)}


def _score_literal(q: str, sym: str) -> float:
    """Exact / prefix / substring score of lower-case ``q`` against a symbol (0 when absent)."""
    best = 0.0
    for part in sym.lower().split("\t"):
        tail = part.rsplit(".", 1)[-1]
        if part == q or tail == q or part.endswith(("." + q, ":" + q)):    # f, Cls.f, src/x.rs:Cls.f
            return 1.0
        for s in (tail, part):
            if s.startswith(q):
                best = max(best, 0.8 + 0.1 * len(q) / len(s))
            elif q in s:
                best = max(best, 0.6 + 0.1 * len(q) / len(s))
    return best


def match_token(conn, token: str, k: int, fuzzy: bool) -> dict[int, float]:
    """``{node id: score}`` for one token: the nodes whose symbols contain it (scored by how
    much of the symbol it covers); with ``fuzzy``, while fewer than ``k`` matched, also the
    symbols a few edits away."""
    q = token.lower()[:MAX_SYM]
    scores: dict[int, float] = {}
    if len(q) < 3:
        rows = conn.execute("SELECT id, sym FROM text_symbols WHERE sym LIKE ? ESCAPE '\\' LIMIT 5000",
                            ("%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",)).fetchall()
        for nid, sym in rows:
            s = _score_literal(q, sym)
            if s:
                scores[nid] = s
        return scores
    tris = sorted(trigrams(q))
    post = _postings(conn, tris)
    # substring: every trigram present
    if len(post) == len(tris):
        lists = sorted(post.values(), key=len)
        cand = lists[0]
        for other in lists[1:]:
            if cand.size == 0:
                break
            cand = cand[np.isin(cand, other, assume_unique=True)]
        if cand.size:
            syms = _fetch_syms(conn, cand[:20000].tolist())
            for nid, sym in syms.items():
                s = _score_literal(q, sym)
                if s:
                    scores[nid] = s
    maxd = _max_edits(len(q)) if fuzzy else 0
    if maxd == 0 or len(scores) >= k or not post:
        return scores
    allids = np.concatenate(list(post.values()))
    counts = np.bincount(allids)                 # shared trigrams per node id (one C pass)
    need = max(1, len(tris) - 3 * maxd)
    uniq = np.flatnonzero(counts >= need)
    if uniq.size > FUZZY_POOL:
        c = counts[uniq]
        kth = np.partition(c, c.size - FUZZY_POOL)[c.size - FUZZY_POOL]
        uniq = uniq[c >= kth]
        if uniq.size > FUZZY_POOL:
            top = np.lexsort((uniq, -counts[uniq]))[:FUZZY_POOL]
            uniq = uniq[top]
    # verify in descending shared-trigram order; a node sharing c of the query's n trigrams is
    # at least ceil((n - c) / 3) edits away, so stop once k matches are at least that close
    order = uniq[np.lexsort((uniq, -counts[uniq]))]
    syms = _fetch_syms(conn, [i for i in order.tolist() if i not in scores])
    found: list[int] = []
    dist_memo: dict[str, int] = {}
    n_tri = len(tris)
    for nid in order.tolist():
        sym = syms.get(nid)
        if sym is None:
            continue
        if len(found) >= k and -(-(n_tri - int(counts[nid])) // 3) >= max(found):
            break
        best = None
        for part in sym.lower().split("\t"):
            tail = part.rsplit(".", 1)[-1]
            d = dist_memo.get(tail)
            if d is None:
                d = dist_memo[tail] = substring_distance(q, tail)
            if best is None or d < best:
                best = d
        if best is not None and best <= maxd:
            # closer and better covered names first
            cover = min(1.0, len(q) / max(1, len(sym.split("\t")[0])))
            scores[nid] = 0.5 * (1.0 - best / (maxd + 1)) * (0.6 + 0.4 * cover)
            found.append(best)
            if len(found) > k:
                found.sort()
                found.pop()
    return scores


def _regex_search(conn, body: str, flags: str, k: int) -> dict[int, float]:
    if len(body) > 500:
        return {}
    fl = re.IGNORECASE if "i" in flags else 0
    try:
        rx = re.compile(body, fl)
        parsed = sre_parser().parse(body, fl)
    except (re.error, RecursionError, OverflowError, ValueError):
        return match_token(conn, body, k, fuzzy=False) if body.strip() else {}
    timer = timer_usable()
    why = refusal(parsed, timer)
    if why:
        log.info("regex %r refused: %s", body, why)
        return {}
    lit = required_literal(parsed).lower()
    if len(lit) >= 3:
        tris = sorted(trigrams(lit))
        post = _postings(conn, tris)
        if len(post) < len(tris):
            return {}
        lists = sorted(post.values(), key=len)
        cand = lists[0]
        for other in lists[1:]:
            cand = cand[np.isin(cand, other, assume_unique=True)]
        source = _fetch_syms(conn, cand[:REGEX_MAX_SCAN].tolist()).items()
    else:
        source = conn.execute("SELECT id, sym FROM text_symbols LIMIT ?", (REGEX_MAX_SCAN,))
    return scan(rx, source, body, REGEX_BUDGET_S, timer)


_REGEX = re.compile(r"^\s*/(.+)/([a-z]*)\s*$", re.S)


def regex_notice(regex: tuple[str, str] | None) -> str | None:
    """What to tell the user about the ``(body, flags)`` of a ``/regex/`` query the pattern channel
    does not run as a regex (:func:`_regex_search`): one that does not compile (matched as a name
    instead), one refused as too slow, one over 500 characters; None when it runs.

    >>> regex_notice(("Has(Persistent", ""))
    '/Has(Persistent/ is no regular expression (missing ), unterminated subpattern at position 3): its text was matched as a name instead; fix the pattern or quote it'
    >>> regex_notice(("Has(Persistent)?Flags", "")) is None
    True
    """
    if regex is None:
        return None
    body, flags = regex
    shown = f"/{body}/{flags}"
    if len(body) > 500:
        return f"{shown[:60]}... is longer than 500 characters: not run as a regular expression"
    fl = re.IGNORECASE if "i" in flags else 0
    try:
        re.compile(body, fl)
        parsed = sre_parser().parse(body, fl)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        why = f"{exc.msg} at position {exc.pos}" if isinstance(exc, re.error) and exc.pos is not None else str(exc)
        return (f"{shown} is no regular expression ({why}): its text was matched as a name instead; "
                "fix the pattern or quote it")
    why = refusal(parsed, timer_usable())
    if why:
        return f"{shown} was not run ({why}): the other channels answered; simplify the pattern"
    return None


def query_parts(query: str) -> tuple[tuple[str, str] | None, tuple[str, ...]]:
    """What :func:`search` matches in ``query``: ``((body, flags), ())`` for ``/re/flags``, else
    ``(None, tokens)``: the identifier-like tokens (the whole query if it is one word), at most 8."""
    query = clean_query(query)
    if not query.strip():
        return None, ()
    m = _REGEX.match(query)
    if m:
        return (m.group(1), m.group(2)), ()
    tokens = _IDENT.findall(query)
    if len(tokens) > 1:
        tokens = [t for t in tokens if is_code_token(t)]
    return None, tuple(t for t in (dotted(tok.strip(".:/-$")) for tok in tokens[:8]) if t)


def search(ix, query: str, k: int = 100, *, fuzzy: bool = True,
           parts: tuple[tuple[str, str] | None, tuple[str, ...]] | None = None, **opts) -> tuple[np.ndarray, np.ndarray]:
    """Pattern channel: (node ids, scores in (0, 1]), best first. Never raises on the query.
    ``parts``: :func:`query_parts` of the query when the caller has them."""
    try:
        k = max(0, int(k))
    except (TypeError, ValueError):
        k = 100
    regex, tokens = query_parts(query) if parts is None else parts
    if k == 0 or (regex is None and not tokens):
        return _EMPTY
    conn = ix.conn
    try:
        if regex is not None:
            scores = _regex_search(conn, regex[0], regex[1], k)
        else:
            scores = {}
            for tok in tokens:
                for nid, s in match_token(conn, tok, k, fuzzy).items():
                    if s > scores.get(nid, 0.0):
                        scores[nid] = s
    except sqlite3.OperationalError as exc:
        log.debug("pattern search failed: %s", exc)
        return _EMPTY
    if not scores:
        return _EMPTY
    items = sorted(scores.items(), key=lambda p: (-p[1], p[0]))[:k]
    return (np.array([p[0] for p in items], dtype=np.int64),
            np.array([p[1] for p in items], dtype=np.float32))
