"""Pattern channel: identifier, substring, typo-tolerant and ``/regex/`` search over node names.

Index (tables from migration ``0002_text``): ``text_symbols(id, sym)`` holds each node's
``name`` and, when different, its ``qualname`` (tab-separated); ``text_trigrams(tri, ids)``
maps every lower-case trigram of those strings to the
sorted node ids containing it, gap-coded like the BM25 postings (about one byte per id; see
:func:`_blob`). Both are updated incrementally
from the ChangeSet (old trigrams come from the stored ``sym``, so nothing else is needed).

We keep our own trigram postings instead of an FTS5 ``trigram`` table: typo tolerance needs
the *number* of query trigrams each symbol shares (one ``np.bincount`` over the query's
postings), which FTS5 does not expose, and one structure serves substring, fuzzy and regex
prefiltering alike on every SQLite build (bench/results/text.md compares the latency).

Query kinds (:func:`search`):

* ``/re/`` or ``/re/i``: trigram prefilter from the regex's required literal, then Python
  ``re`` on the candidates with a time budget and a size cap; patterns with nested
  repetition (catastrophic backtracking) are refused (empty result).
* otherwise each identifier-like token of the query (the whole query if it is one word;
  tokens with ``_``, ``.``, digits or inner capitals in longer queries) is matched:
  exact name 1.0, name prefix 0.8-0.9, substring 0.6-0.7, approximate substring
  (Myers bit-parallel edit distance, up to 1-3 edits by length) up to 0.5.
"""
from __future__ import annotations

import logging
import re
import sqlite3
import time

import numpy as np

from ..store.db import qualname_sql
from .bm25 import clean_query, decode_ids, encode_ids, encode_ids_many

__all__ = ["update", "search", "trigrams", "edit_distance", "substring_distance", "VERSION"]

log = logging.getLogger(__name__)

VERSION = 3                # 3: bm25's gap codec (VERSION 2 blobs are rewritten by migration 0007)
_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
_SQL_CHUNK = 500
MAX_SYM = 256              # characters of a symbol string that are indexed / matched
REGEX_BUDGET_S = 0.25      # time budget of one regex query
REGEX_MAX_SCAN = 200_000   # symbols a regex without a usable literal may scan
FUZZY_POOL = 200           # candidates (by shared trigrams) verified by edit distance


# ---------------------------------------------------------------------------- trigrams
def trigrams(s: str) -> set[str]:
    """Lower-case trigrams of ``s`` (tab-separated parts are separate strings); short parts whole."""
    out: set[str] = set()
    for part in s.lower().split("\t"):
        if len(part) < 3:
            if part:
                out.add(part)
            continue
        out.update(part[i:i + 3] for i in range(len(part) - 2))
    return out


def _sym(name: str | None, qualname: str | None) -> str:
    name = (name or "")[:MAX_SYM]
    qual = (qualname or "")[:MAX_SYM]
    s = name if not qual or qual == name else name + "\t" + qual
    return s.replace("\x00", "")


def _ids_from(blob: bytes) -> np.ndarray:
    """Sorted node ids of a trigram posting blob (:func:`kgsearch.text.bm25.decode_ids`)."""
    return decode_ids(blob)


def _blob(a: np.ndarray) -> bytes:
    """Ascending ids as a blob: the gaps between them, the same codec as the BM25 postings
    (:func:`kgsearch.text.bm25.encode_ids`). Trigram postings are dense runs (a module's
    symbols share its prefix), so most cost one byte per id plus their few big gaps."""
    return encode_ids(a)


def _unique(a: np.ndarray) -> np.ndarray:
    """Sorted unique values (numpy 2's hash-based ``np.unique`` is many times slower here)."""
    a = np.sort(a)
    if a.size:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return a


def update(ix, changes, full: bool) -> dict:
    """Maintain ``text_symbols`` and ``text_trigrams`` for the changed nodes."""
    conn = ix.conn
    if full:
        return _rebuild(conn)
    gone = sorted(set(changes.removed) | set(changes.modified))
    new = sorted(set(changes.added) | set(changes.modified))
    removals: dict[str, list[int]] = {}
    old_ids = []
    for s in range(0, len(gone), _SQL_CHUNK):
        part = gone[s:s + _SQL_CHUNK]
        for nid, sym in conn.execute(
                f"SELECT id, sym FROM text_symbols WHERE id IN ({','.join('?' * len(part))})", part):
            old_ids.append(nid)
            for t in trigrams(sym):
                removals.setdefault(t, []).append(nid)
    additions: dict[str, list[int]] = {}
    new_rows = []
    for s in range(0, len(new), _SQL_CHUNK):
        part = new[s:s + _SQL_CHUNK]
        for nid, name, qual in conn.execute(
                f"SELECT id, name, {qualname_sql()} FROM nodes WHERE id IN ({','.join('?' * len(part))})", part):
            sym = _sym(name, qual)
            new_rows.append((nid, sym))
            for t in trigrams(sym):
                additions.setdefault(t, []).append(nid)
    touched = sorted(set(removals) | set(additions))
    for s in range(0, len(touched), _SQL_CHUNK):
        part = touched[s:s + _SQL_CHUNK]
        rows = dict(conn.execute(
            f"SELECT tri, ids FROM text_trigrams WHERE tri IN ({','.join('?' * len(part))})", part))
        writes, deletes = [], []
        for t in part:
            ids = _ids_from(rows[t]).astype(np.int64) if t in rows else np.zeros(0, np.int64)
            if t in removals and ids.size:
                ids = ids[~np.isin(ids, np.asarray(removals[t], dtype=np.int64))]
            if t in additions:
                ids = _unique(np.concatenate([ids, np.asarray(additions[t], dtype=np.int64)]))
            if ids.size:
                writes.append((t, _blob(ids)))
            else:
                deletes.append((t,))
        conn.executemany("INSERT INTO text_trigrams(tri, ids) VALUES (?,?) "
                         "ON CONFLICT(tri) DO UPDATE SET ids=excluded.ids", writes)
        conn.executemany("DELETE FROM text_trigrams WHERE tri=?", deletes)
    conn.executemany("DELETE FROM text_symbols WHERE id=?", [(i,) for i in old_ids])
    conn.executemany("INSERT OR REPLACE INTO text_symbols(id, sym) VALUES (?,?)", new_rows)
    return {"mode": "incremental", "trigrams_rewritten": len(touched), "symbols": len(new_rows)}


def _rebuild(conn) -> dict:
    """Every symbol and trigram posting from scratch. Lower-case ASCII symbols (nearly all) get
    their trigrams as 24-bit codes in numpy; the rest go through :func:`trigrams`."""
    conn.execute("DELETE FROM text_symbols")
    conn.execute("DELETE FROM text_trigrams")
    packed: list[np.ndarray] = []               # code << 32 | node id, for ASCII trigrams
    other: dict[str, list[int]] = {}            # short parts and trigrams of non-ASCII symbols
    cur = conn.execute(f"SELECT id, name, {qualname_sql()} FROM nodes ORDER BY id")
    n = 0
    while True:
        rows = cur.fetchmany(8192)
        if not rows:
            break
        syms = [(nid, _sym(name, qual)) for nid, name, qual in rows]
        conn.executemany("INSERT INTO text_symbols(id, sym) VALUES (?,?)", syms)
        fast_ids: list[int] = []
        fast: list[str] = []
        for nid, sym in syms:
            low = sym.lower()
            if low.isascii() and nid < 1 << 31:
                fast_ids.append(nid)
                fast.append(low)
                if len(low) < 3 or "\t" in low:
                    for part in low.split("\t"):
                        if 0 < len(part) < 3:
                            other.setdefault(part, []).append(nid)
            else:
                for t in trigrams(sym):
                    other.setdefault(t, []).append(nid)
        if fast:
            packed.append(_ascii_trigrams(fast_ids, fast))
        n += len(rows)
    # sorted unique keys: by trigram, ids ascending; in place, each big array freed when done
    # (stdlib: 3.4M keys; this keeps the step's peak near 2x the key array)
    keys = np.concatenate(packed) if packed else np.zeros(0, dtype=np.int64)
    del packed
    keys.sort()
    if keys.size:
        keep = np.empty(keys.size, dtype=bool)
        keep[0] = True
        np.not_equal(keys[1:], keys[:-1], out=keep[1:])
        keys = keys[keep]
        del keep
    codes = (keys >> 32).astype(np.int32)
    ids = (keys & 0xFFFFFFFF).astype(np.int32)             # the fast path takes ids < 2**31 only
    del keys
    bounds = np.flatnonzero(np.diff(codes)) + 1
    starts = [0, *bounds.tolist()] if ids.size else []
    ends = [*bounds.tolist(), int(ids.size)] if ids.size else []
    tris = []
    for c in codes[starts].tolist():
        tris.append(chr(c >> 16) + chr((c >> 8) & 0xFF) + chr(c & 0xFF))
    rows = list(zip(tris, encode_ids_many(ids, [0, *ends]) if ids.size else []))
    for i, tri in enumerate(tris):                         # trigrams also found the slow way
        more = other.pop(tri, None)
        if more is not None:
            rows[i] = (tri, _blob(_unique(np.concatenate([ids[starts[i]:ends[i]].astype(np.int64),
                                                          np.asarray(more, np.int64)]))))
    rows += [(tri, _blob(_unique(np.asarray(more, dtype=np.int64)))) for tri, more in other.items()]
    conn.executemany("INSERT INTO text_trigrams(tri, ids) VALUES (?,?)", rows)
    return {"mode": "full", "symbols": n, "trigrams": len(rows)}


def _ascii_trigrams(ids: list[int], syms: list[str]) -> np.ndarray:
    """``code << 32 | id`` for every trigram of the lower-case ASCII ``syms`` (code = the three
    bytes; parts are split at tabs), unique per symbol."""
    arr = np.frombuffer(("\0".join(syms) + "\0").encode("ascii"), dtype=np.uint8)
    if arr.size < 3:
        return np.zeros(0, dtype=np.int64)
    stop = (arr == 0) | (arr == 9)
    ok = ~(stop[:-2] | stop[1:-1] | stop[2:])
    a = arr.astype(np.int64)
    code = (a[:-2] << 16) | (a[1:-1] << 8) | a[2:]
    owner = np.cumsum(arr == 0)[:-2]           # at a kept start: the number of symbols before it
    nid = np.asarray(ids, dtype=np.int64)[owner[ok]]
    return _unique((code[ok] << 32) | nid)


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
    out: dict[int, str] = {}
    ids = list(ids)
    for s in range(0, len(ids), _SQL_CHUNK):
        part = ids[s:s + _SQL_CHUNK]
        out.update(conn.execute(
            f"SELECT id, sym FROM text_symbols WHERE id IN ({','.join('?' * len(part))})", part))
    return out


def _postings(conn, tris: list[str]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for s in range(0, len(tris), _SQL_CHUNK):
        part = tris[s:s + _SQL_CHUNK]
        for tri, blob in conn.execute(
                f"SELECT tri, ids FROM text_trigrams WHERE tri IN ({','.join('?' * len(part))})", part):
            out[tri] = _ids_from(blob)
    return out


def _score_literal(q: str, sym: str) -> float:
    """Exact / prefix / substring score of lower-case ``q`` against a symbol (0 when absent)."""
    best = 0.0
    for part in sym.lower().split("\t"):
        tail = part.rsplit(".", 1)[-1]
        if part == q or tail == q:
            return 1.0
        for s in (tail, part):
            if s.startswith(q):
                best = max(best, 0.8 + 0.1 * len(q) / len(s))
            elif q in s:
                best = max(best, 0.6 + 0.1 * len(q) / len(s))
    return best


def _match_token(conn, token: str, k: int, fuzzy: bool) -> dict[int, float]:
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


def _has_nested_repeat(parsed) -> bool:
    try:
        import re._parser as sre_parse     # Python >= 3.11
    except ImportError:                    # pragma: no cover
        import sre_parse                   # type: ignore
    REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)}

    def walk(items, inside: bool) -> bool:
        for op, av in items:
            if op in REPEATS:
                lo, hi, sub = av
                rep = hi is sre_parse.MAXREPEAT or hi > 1
                if rep and inside:
                    return True
                if walk(sub, inside or rep):
                    return True
            elif op is sre_parse.SUBPATTERN:
                if walk(av[-1], inside):
                    return True
            elif op is sre_parse.BRANCH:
                if any(walk(b, inside) for b in av[1]):
                    return True
        return False

    return walk(parsed, False)


def _required_literal(parsed) -> str:
    """Longest run of literal characters in the top-level sequence (a substring every match has)."""
    try:
        import re._parser as sre_parse
    except ImportError:                    # pragma: no cover
        import sre_parse                   # type: ignore
    best, cur = "", ""
    for op, av in parsed:
        if op is sre_parse.LITERAL:
            cur += chr(av)
            continue
        if len(cur) > len(best):
            best = cur
        cur = ""
        if op is sre_parse.SUBPATTERN and not best:
            inner = _required_literal(av[-1])
            if len(inner) > len(best):
                best = inner
    return cur if len(cur) > len(best) else best


def _regex_search(conn, body: str, flags: str, k: int) -> dict[int, float]:
    try:
        import re._parser as sre_parse
    except ImportError:                    # pragma: no cover
        import sre_parse                   # type: ignore
    if len(body) > 500:
        return {}
    fl = re.IGNORECASE if "i" in flags else 0
    try:
        rx = re.compile(body, fl)
        parsed = sre_parse.parse(body, fl)
    except (re.error, RecursionError, OverflowError, ValueError):
        return _match_token(conn, body, k, fuzzy=False) if body.strip() else {}
    if _has_nested_repeat(parsed):
        log.info("regex %r refused: nested repetition can take exponential time", body)
        return {}
    lit = _required_literal(parsed).lower()
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
    deadline = time.perf_counter() + REGEX_BUDGET_S
    scores: dict[int, float] = {}
    for i, (nid, sym) in enumerate(source):
        if i % 512 == 0 and time.perf_counter() > deadline:
            log.info("regex %r stopped at its time budget after %d symbols", body, i)
            break
        for part in sym.split("\t"):
            m = rx.search(part)
            if m:
                # whole-name matches first, then by how much of the name matched
                cover = (m.end() - m.start()) / max(1, len(part))
                scores[nid] = max(scores.get(nid, 0.0), 0.5 + 0.5 * cover)
                break
    return scores


_REGEX = re.compile(r"^\s*/(.+)/([a-z]*)\s*$", re.S)


def search(ix, query: str, k: int = 100, *, fuzzy: bool = True, **opts) -> tuple[np.ndarray, np.ndarray]:
    """Pattern channel: (node ids, scores in (0, 1]), best first. Never raises on the query."""
    query = clean_query(query)
    try:
        k = max(0, int(k))
    except (TypeError, ValueError):
        k = 100
    if k == 0 or not query.strip():
        return _EMPTY
    conn = ix.conn
    try:
        m = _REGEX.match(query)
        if m:
            scores = _regex_search(conn, m.group(1), m.group(2), k)
        else:
            tokens = _IDENT.findall(query)
            if len(tokens) > 1:
                tokens = [t for t in tokens if _looks_like_code(t)]
            scores = {}
            for tok in tokens[:8]:
                tok = tok.strip(".:/-$")
                if not tok:
                    continue
                for nid, s in _match_token(conn, tok, k, fuzzy).items():
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


def _looks_like_code(tok: str) -> bool:
    return ("_" in tok or "." in tok.strip(".") or any(c.isdigit() for c in tok)
            or any(c.isupper() for c in tok[1:]))
