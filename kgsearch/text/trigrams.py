"""The pattern channel's index: node symbol strings and their trigram postings.

Tables (migration ``0002_text``): ``text_symbols(id, sym)`` holds each node's ``name`` and,
when different, its ``qualname`` (tab-separated); ``text_trigrams(tri, ids)`` maps every
lower-case trigram of those strings to the sorted node ids containing it, gap-coded like the
BM25 postings (:mod:`kgsearch.text.idcodec`: about one byte per id). Both are updated
incrementally from the ChangeSet (old trigrams come from the stored ``sym``, so nothing else
is needed). :mod:`kgsearch.text.pattern` answers queries from them. The parts of a long
definition's text (``FLAG_PART``) are left out: their name is their definition's, which answers
for them (a name query would otherwise find a 700-line function once per part).

>>> sorted(trigrams("Graph" + chr(9) + "ab"))      # name and qualname are tab-separated parts
['ab', 'aph', 'gra', 'rap']
"""
from __future__ import annotations

import numpy as np

from ..store.rows import qualname_sql
from ..store.sql import CHUNK as _SQL_CHUNK, in_chunks, iter_in_chunks
from ..types import FLAG_PART
from .idcodec import decode_ids, encode_ids, encode_ids_many

__all__ = ["update", "trigrams", "symbol", "ids_from", "VERSION", "MAX_SYM"]

NAMED = f"flags & {FLAG_PART} = 0"        # the nodes whose names are indexed
VERSION = 3                # 3: the gap codec of kgsearch.text.idcodec (VERSION 2 blobs: migration 0007)
MAX_SYM = 256              # characters of a symbol string that are indexed / matched


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


def symbol(name: str | None, qualname: str | None) -> str:
    name = (name or "")[:MAX_SYM]
    qual = (qualname or "")[:MAX_SYM]
    s = name if not qual or qual == name else name + "\t" + qual
    return s.replace("\x00", "")


def ids_from(blob: bytes) -> np.ndarray:
    """Sorted node ids of a trigram posting blob (:func:`kgsearch.text.idcodec.decode_ids`)."""
    return decode_ids(blob)


def _blob(a: np.ndarray) -> bytes:
    """Ascending ids as a blob: the gaps between them, the same codec as the BM25 postings
    (:func:`kgsearch.text.idcodec.encode_ids`). Trigram postings are dense runs (a module's
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
    for nid, sym in iter_in_chunks(conn, "SELECT id, sym FROM text_symbols WHERE id IN ({})", gone):
        old_ids.append(nid)
        for t in trigrams(sym):
            removals.setdefault(t, []).append(nid)
    additions: dict[str, list[int]] = {}
    new_rows = []
    for nid, name, qual in iter_in_chunks(conn, f"SELECT id, name, {qualname_sql()} FROM nodes WHERE id IN ({{}}) "
                                                f"AND {NAMED}", new):
        sym = symbol(name, qual)
        new_rows.append((nid, sym))
        for t in trigrams(sym):
            additions.setdefault(t, []).append(nid)
    touched = sorted(set(removals) | set(additions))
    for s in range(0, len(touched), _SQL_CHUNK):
        part = touched[s:s + _SQL_CHUNK]
        rows = dict(in_chunks(conn, "SELECT tri, ids FROM text_trigrams WHERE tri IN ({})", part))
        writes, deletes = [], []
        for t in part:
            ids = ids_from(rows[t]).astype(np.int64) if t in rows else np.zeros(0, np.int64)
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


SPILL_FROM = 1 << 22           # ASCII trigram keys kept in memory before they go to a temp table by first byte


def _rebuild(conn, spill_from: int | None = None) -> dict:
    """Every symbol and trigram posting from scratch. Lower-case ASCII symbols (nearly all) get
    their trigrams as 24-bit codes in numpy; the rest go through :func:`trigrams`.

    The ASCII keys (``code << 32 | node id``) are kept by the trigram's first byte; past
    ``spill_from`` keys (:data:`SPILL_FROM`) the buckets go to a TEMP table and are sorted and
    written one first byte at a time, in code order as before (same rows, same row order). At
    1M nodes with long titles (80M keys) holding and sorting every key at once peaked at 1.76 GB.
    """
    spill_from = SPILL_FROM if spill_from is None else spill_from
    conn.execute("DELETE FROM text_symbols")
    conn.execute("DELETE FROM text_trigrams")
    held: dict[int, list[np.ndarray]] = {}      # first byte -> key arrays (in memory)
    n_held = 0
    spilled = False
    other: dict[str, list[int]] = {}            # short parts and trigrams of non-ASCII symbols
    cur = conn.execute(f"SELECT id, name, {qualname_sql()} FROM nodes WHERE {NAMED} ORDER BY id")
    n = 0
    while True:
        rows = cur.fetchmany(8192)
        if not rows:
            break
        syms = [(nid, symbol(name, qual)) for nid, name, qual in rows]
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
            keys = _ascii_trigrams(fast_ids, fast)          # (sorted)
            cuts = np.searchsorted(keys >> 48, np.arange(257))
            for first in np.flatnonzero(np.diff(cuts)).tolist():
                held.setdefault(first, []).append(keys[cuts[first]:cuts[first + 1]])
            n_held += len(keys)
            if n_held > spill_from:
                spilled = _spill(conn, held, spilled)
                n_held = 0
        n += len(rows)
    if spilled:
        _spill(conn, held, spilled)
    firsts = sorted(held) if not spilled else [r[0] for r in conn.execute(
        "SELECT DISTINCT first FROM temp.trigram_spill ORDER BY first")]
    count = 0
    for first in firsts:
        parts = held.pop(first) if not spilled else [np.frombuffer(d, dtype=np.int64) for (d,) in conn.execute(
            "SELECT keys FROM temp.trigram_spill WHERE first = ? ORDER BY rowid", (first,))]
        rows_out = _bucket_rows(parts, other)
        del parts
        conn.executemany("INSERT INTO text_trigrams(tri, ids) VALUES (?,?)", rows_out)
        count += len(rows_out)
    if spilled:
        conn.execute("DROP TABLE temp.trigram_spill")
    rest = [(tri, _blob(_unique(np.asarray(more, dtype=np.int64)))) for tri, more in other.items()]
    conn.executemany("INSERT INTO text_trigrams(tri, ids) VALUES (?,?)", rest)
    return {"mode": "full", "symbols": n, "trigrams": count + len(rest)}


def _spill(conn, held: dict, started: bool) -> bool:
    """Move the held key arrays to ``temp.trigram_spill`` (one row per first byte)."""
    if not started:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS trigram_spill(first INTEGER, keys BLOB)")
    conn.executemany("INSERT INTO temp.trigram_spill(first, keys) VALUES (?, ?)",
                     [(first, np.concatenate(parts).tobytes()) for first, parts in sorted(held.items())])
    held.clear()
    return True


def _bucket_rows(parts: list[np.ndarray], other: dict) -> list[tuple[str, bytes]]:
    """``(trigram, blob)`` rows of one first byte's keys, in code order; trigrams also found
    the slow way (``other``) are merged in and taken out of ``other``."""
    # sorted unique keys: by trigram, ids ascending; each big array freed when done
    keys = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    parts.clear()
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
    return rows


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
