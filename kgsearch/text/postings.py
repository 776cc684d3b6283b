"""BM25 postings kept in the index: building, incremental updates, document lengths and norms.

Storage (table ``text_postings(term, df, ids, tf)``, ``WITHOUT ROWID`` since migration
``0007_text_compact``; state ``format`` :data:`FORMAT`): one row per term with ``df``, ``ids``
(sorted node ids, gap-coded, see :mod:`kgsearch.text.idcodec`: about 1-2 bytes per id) and
``tf`` (the weighted term frequencies, uint8 / uint16, float32 when a name weight makes them
fractional). A query reads only its own terms' rows and turns ``tf`` into impacts with the
per-node norms ``k1 * (1 - b + b * dl / avgdl)``, computed once per index generation from
``text_doclen`` and the recorded ``avgdl`` (:func:`norms`); :func:`kgsearch.text.okapi.impacts`
is the same two steps, so stored and in-memory impacts are bit-identical float32. Stdlib
index: 19.3 MB -> 8.4 MB for the table and its former autoindex.

Impacts depend on ``avgdl``, but nothing stored does: ``tf`` is raw and the norms are computed
per index generation. So every run records the live ``avgdl`` (the mean of ``text_doclen``,
computed from the doclen blob after it is patched: the same array, hence the same value, a
fresh build computes) and scores are exactly those of a fresh build of the same nodes, after
any sequence of incremental runs, at no cost to queries (issue 13: an index updated in place
used to keep the ``avgdl`` of its last full build until it drifted 10 %; the ``avgdl_drift``
setting is still accepted so that stored settings stay valid, and unused). ``idf`` is computed
at query time from ``df`` and the live ``N``. The per-generation norms cache lives in the
memo of :func:`stored`, which :func:`forget` drops (and a new generation invalidates).
Postings in an older layout (no ``format`` in the state) read as no postings; the text step
rebuilds them.
"""
from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from itertools import repeat
from typing import Callable, Iterable, Sequence

import numpy as np

from ..store.blobio import array_info, array_item, iter_array
from ..store.sql import CHUNK, in_chunks, iter_in_chunks
from .idcodec import decode_ids, decode_tf, encode_ids, encode_ids_many, encode_tf, encode_tf_many, tf_view
from .okapi import BM25Params, build_runs, doc_norms, tf_impacts

__all__ = ["FORMAT", "STATE_KEY", "state", "rebuild", "write_postings", "apply_changes", "stored", "stored_params",
           "norms", "norms_of", "list_impacts", "read_rows"]

log = logging.getLogger(__name__)

FORMAT = 2          # postings layout (state["format"]): 2 = gap-coded ids + term frequencies
STATE_KEY = "text.bm25"
DOCLEN_IDS, DOCLEN_LEN = "text.doclen_ids", "text.doclen_len"


def state(ix) -> dict | None:
    """The recorded BM25 state: params, avgdl used for impacts, N, total length."""
    return ix.meta_json(STATE_KEY)


def read_rows(conn, terms: Sequence[str]) -> list[tuple]:
    """``(term, df, ids blob, tf blob)`` rows of the given terms (those that have postings)."""
    return in_chunks(conn, "SELECT term, df, ids, tf FROM text_postings WHERE term IN ({})", list(terms))


def doc_freqs(conn, terms) -> dict[str, int]:
    """``{term: document frequency}`` of those of ``terms`` the index holds (one look-up)."""
    terms = list(terms)
    return dict(in_chunks(conn, "SELECT term, df FROM text_postings WHERE term IN ({})", terms)) if terms else {}


def iter_nodes(conn: sqlite3.Connection, ids: Sequence[int] | None = None):
    if ids is None:
        cur = conn.execute("SELECT id, name, kgtext(text) FROM nodes ORDER BY id")
        while True:
            rows = cur.fetchmany(2048)
            if not rows:
                return
            yield from rows
    else:
        ids = sorted(set(int(i) for i in ids))
        yield from iter_in_chunks(conn, "SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({}) ORDER BY id", ids)


def rebuild(ix, params: BM25Params, progress: Callable | None = None,
            avgdl: float | None = None) -> dict:
    """Recompute every posting from ``nodes`` (``avgdl`` overrides the live mean, for tests)."""
    conn = ix.conn
    an = params.analyzer()
    node_ids: list[int] = []

    def docs():
        for i, (nid, name, text) in enumerate(iter_nodes(conn)):
            node_ids.append(nid)
            if progress is not None and i % 10000 == 0:
                progress("bm25", i)
            yield an(name or ""), an(text or "")

    return write_postings(ix, docs(), node_ids, params, avgdl)


def write_postings(ix, docs: Iterable[tuple[Sequence[str], Sequence[str]]], node_ids: Sequence[int],
                   params: BM25Params, avgdl: float | None = None) -> dict:
    """Replace all postings with those of ``docs`` (``(name_terms, text_terms)`` per node, in
    ascending node-id order; ``node_ids`` may be filled while ``docs`` is consumed)."""
    conn = ix.conn
    runs = build_runs(docs, params.name_weight)
    ids = np.asarray(node_ids, dtype=np.int64)
    n = len(ids)
    total = float(runs.dl.sum())
    avg = float(avgdl if avgdl is not None else (total / n if n else 0.0))
    conn.execute("DELETE FROM text_postings")
    conn.execute("DELETE FROM text_doclen")
    # a block of terms at a time (term_blocks): at 1M nodes and 24M postings, sorting and
    # encoding every posting at once took about 1.1 GB beside the pairs themselves
    for a, b, off, docs_idx, tf in runs.term_blocks(WRITE_BLOCK):
        post_ids = ids[docs_idx] if n else docs_idx
        del docs_idx
        conn.executemany(
            "INSERT INTO text_postings(term, df, ids, tf) VALUES (?,?,?,?)",
            zip(runs.terms[a:b], np.diff(off).tolist(), encode_ids_many(post_ids, off), encode_tf_many(tf, off)))
        del post_ids, tf
    postings, terms, dl = len(runs.t), runs.terms, runs.dl
    del runs                                      # (the pairs: 12 bytes a posting)
    conn.executemany("INSERT INTO text_doclen(id, len) VALUES (?,?)",
                     zip(ids.tolist(), dl.tolist()))
    save_doclen(ix, ids, np.asarray(dl, dtype=np.float64))
    st = {"params": params.index_key(), "avgdl": avg, "n": n, "total": total, "format": FORMAT,
          "analyzer": params.analyzer().settings()}
    ix.set_meta_json(STATE_KEY, st)
    forget(ix)
    return {"mode": "full", "terms": len(terms), "postings": postings, "docs": n,
            "avgdl": avg}


WRITE_BLOCK = 1 << 22        # postings sorted and encoded at once by write_postings (~200 MB of work arrays)


def apply_changes(ix, params: BM25Params, changes) -> dict:
    """Retract old and add new postings of changed nodes and record the live ``avgdl``.

    Old terms come from ``changes.old`` (name, text before this run). If an old entry is
    missing, or its length disagrees with ``text_doclen``, postings are rebuilt (the stored
    data would otherwise be wrong).
    """
    st = state(ix)
    if not st or st.get("params") != params.index_key() or st.get("format") != FORMAT:
        return rebuild(ix, params)
    conn = ix.conn
    an = params.analyzer()
    wn = params.name_weight
    gone = sorted(set(changes.removed) | set(changes.modified))
    new = sorted(set(changes.added) | set(changes.modified))
    removals: dict[str, list[int]] = {}
    old_len: dict[int, float] = {}
    old_len.update(in_chunks(conn, "SELECT id, len FROM text_doclen WHERE id IN ({})", gone))
    for nid in gone:
        if nid not in old_len:
            continue                       # never indexed (e.g. added and removed in one run)
        old = changes.old.get(nid)
        if old is None:
            log.info("bm25: no old text for node %s; rebuilding postings", nid)
            return rebuild(ix, params)
        nt, tt = an(old[0] or ""), an(old[1] or "")
        if abs(wn * len(nt) + len(tt) - old_len[nid]) > 1e-6:
            log.info("bm25: old text of node %s does not match the index; rebuilding", nid)
            return rebuild(ix, params)
        for t in set(nt) | set(tt):
            removals.setdefault(t, []).append(nid)
    # new documents
    add_ids: list[int] = []
    additions: dict[str, tuple[list[int], list[float]]] = {}
    new_len: dict[int, float] = {}
    for nid, name, text in iter_nodes(conn, new):
        nt, tt = an(name or ""), an(text or "")
        c = Counter(nt)
        tf: dict[str, float] = {t: wn * v for t, v in c.items()}
        for t in tt:
            tf[t] = tf.get(t, 0.0) + 1.0
        new_len[nid] = wn * len(nt) + len(tt)
        add_ids.append(nid)
        for t, v in tf.items():
            e = additions.setdefault(t, ([], []))
            e[0].append(nid)
            e[1].append(v)
    n = st["n"] - len(old_len) + len(new_len)
    used = st["avgdl"]
    # rewrite the touched terms
    touched = sorted(set(removals) | set(additions))
    n_rows = 0
    for s in range(0, len(touched), CHUNK):
        part = touched[s:s + CHUNK]
        rows = {r[0]: r for r in read_rows(conn, part)}
        writes, deletes = [], []
        for t in part:
            r = rows.get(t)
            if r is not None:
                ids = decode_ids(r[2])
                tf = decode_tf(r[3], r[1])
            else:
                ids = np.zeros(0, np.int64)
                tf = np.zeros(0, np.float32)
            rem = removals.get(t)
            if rem is not None and ids.size:
                keep = ~np.isin(ids, np.asarray(rem, dtype=np.int64))
                ids, tf = ids[keep], tf[keep]
            add = additions.get(t)
            if add is not None:
                ids = np.concatenate([ids, np.asarray(add[0], dtype=np.int64)])
                tf = np.concatenate([tf, np.asarray(add[1], dtype=np.float32)])
                order = np.argsort(ids, kind="stable")
                ids, tf = ids[order], tf[order]
            if ids.size:
                writes.append((t, int(ids.size), encode_ids(ids), encode_tf(tf)))
            else:
                deletes.append((t,))
        conn.executemany("INSERT INTO text_postings(term, df, ids, tf) VALUES (?,?,?,?) "
                         "ON CONFLICT(term) DO UPDATE SET df=excluded.df, ids=excluded.ids, "
                         "tf=excluded.tf", writes)
        conn.executemany("DELETE FROM text_postings WHERE term=?", deletes)
        n_rows += len(writes) + len(deletes)
    conn.executemany("DELETE FROM text_doclen WHERE id=?", [(i,) for i in old_len])
    conn.executemany("INSERT OR REPLACE INTO text_doclen(id, len) VALUES (?,?)", new_len.items())
    dl = patch_doclen(ix, old_len, new_len)
    if len(dl) != n:                    # (cannot happen: text_doclen and the state agree)
        log.info("bm25: %d lengths for %d nodes; rebuilding", len(dl), n)
        return rebuild(ix, params)
    # the same sum over the same array (ascending ids) as write_postings: a fresh build's value
    total = float(dl.sum())
    live = total / n if n else 0.0
    st.update({"n": n, "total": total, "avgdl": live})
    ix.set_meta_json(STATE_KEY, st)
    forget(ix)
    return {"mode": "incremental", "terms_rewritten": n_rows, "removed": len(old_len),
            "added": len(new_len), "avgdl": live, "avgdl_before": used}


def forget(ix) -> None:
    """Drop this process's cached state (a same-generation rebuild must not serve stale N)."""
    cache = getattr(ix, "_cache", None)
    if isinstance(cache, dict):
        cache.pop("text.bm25.state", None)



def stored_params(ix) -> tuple[dict | None, BM25Params | None]:
    """(state, params) of the stored postings; (None, None) when there are none in this
    format (an index written by an older kgsearch reads as empty until its next ``index``)."""
    return stored(ix)[:2]


def stored(ix) -> tuple[dict | None, BM25Params | None, dict]:
    """(state, params, memo): memo holds what is derived from them (the doc norms), so one
    generation check per query covers all of it."""
    def load():
        st = state(ix)
        if not st or st.get("format") != FORMAT:
            return (None, None, {})
        p = st.get("params", {})
        return (st, BM25Params(k1=p.get("k1", 1.5), b=p.get("b", 0.75),
                               name_weight=p.get("name_weight", 1.0),
                               stemmer=p.get("stemmer", "porter2"),
                               split_code=p.get("split_code", True),
                               fold=p.get("fold", False), analysis=p.get("analysis", 2)), {})
                                                 # (postings made before folding and marks: read as made)
    return ix.cached("text.bm25.state", load)


def norms(ix, st: dict, params: BM25Params, memo: dict | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`doc_norms` of every indexed node with the recorded ``avgdl``, loaded once per
    index generation (:func:`load_norms`; read them with :func:`norms_of`).
    ``memo``: the third item of :func:`stored` (saves a generation check)."""
    if memo is None:
        memo = stored(ix)[2]
    hit = memo.get("norms")
    if hit is None:
        hit = memo["norms"] = load_norms(ix, st, params)
    return hit


def read_doclen(ix) -> tuple[np.ndarray, np.ndarray]:
    rows = ix.conn.execute("SELECT id, len FROM text_doclen ORDER BY id").fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    dl = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
    return ids, dl


def save_doclen(ix, ids: np.ndarray, dl: np.ndarray) -> None:
    """``text_doclen`` again as two blobs, so that a query process loads the document norms
    with ``np.frombuffer`` (about 2 ms) instead of one Python row per node (80 ms for the
    stdlib's 75K nodes, paid by every cold CLI search)."""
    ids, dl = np.asarray(ids, dtype=np.int64), np.asarray(dl, dtype=np.float64)
    if ids.size > 1 and not bool((np.diff(ids) > 0).all()):     # load_norms relies on strictly ascending ids
        order = np.argsort(ids, kind="stable")
        ids, dl = ids[order], dl[order]
        if not bool((np.diff(ids) > 0).all()):
            raise ValueError("text_doclen ids are not unique")
    ix.put_array(DOCLEN_IDS, ids)
    ix.put_array(DOCLEN_LEN, dl)


def patch_doclen(ix, old_len: dict, new_len: dict) -> np.ndarray:
    """Patch the doclen blobs (``text_doclen`` is already up to date); the new lengths by id."""
    ids, dl = ix.get_array(DOCLEN_IDS), ix.get_array(DOCLEN_LEN)
    if ids is None or dl is None or len(ids) != len(dl):
        ids, dl = read_doclen(ix)                     # (the table is already up to date)
        save_doclen(ix, ids, dl)
        return dl
    gone = np.fromiter(list(old_len) + list(new_len), dtype=np.int64)
    keep = ~np.isin(ids, gone)
    add_ids = np.fromiter(new_len.keys(), dtype=np.int64, count=len(new_len))
    add_dl = np.fromiter(new_len.values(), dtype=np.float64, count=len(new_len))
    ids = np.concatenate([ids[keep], add_ids])
    dl = np.concatenate([dl[keep], add_dl])
    order = np.argsort(ids, kind="stable")
    dl = dl[order]
    save_doclen(ix, ids[order], dl)
    return dl


def load_norms(ix, st: dict, params: BM25Params) -> tuple[np.ndarray, np.ndarray | None]:
    """The norms of :func:`norms`: (float64 norms by node id, None) when ids are dense enough,
    else (norms, ascending ids). Read from the doclen blobs in pieces
    (:mod:`kgsearch.store.blobio`): whole reads held both blobs, the norms and the dense table
    at once, 30.5 MiB traced for 8 MB at 1M nodes. ``doc_norms`` is elementwise, so the values
    are those of one pass. (Lengths kept as float32 and turned into norms per posting would
    save 4 bytes a node but cost a long query 5 ms at 1M: measured, not done.)"""
    n = int(st.get("n", -1))
    ii, li = array_info(ix, DOCLEN_IDS), array_info(ix, DOCLEN_LEN)
    avgdl, k1, b = float(st["avgdl"]), params.k1, params.b
    if (ii is None or li is None or n <= 0 or int(np.prod(ii[2])) != n or int(np.prod(li[2])) != n
            or ii[1] != np.dtype("<i8") or li[1] != np.dtype("<f8")):
        ids, dl = (ix.get_array(DOCLEN_IDS), ix.get_array(DOCLEN_LEN)) if n == 0 else (None, None)
        if ids is None or dl is None or len(ids) != len(dl) or len(ids) != n:
            ids, dl = read_doclen(ix)                 # an index written before the blobs
        return _norms_table(ids, doc_norms(dl, avgdl, k1, b))
    first, last = int(array_item(ix, DOCLEN_IDS, 0)), int(array_item(ix, DOCLEN_IDS, -1))
    dense = last < 4 * n + 65536
    # ids are strictly ascending (save_doclen), so n of them from first to last are that range:
    # the ids blob (8 MB at 1M, read from disk by a cold search) need not be read
    span = last - first + 1 == n
    out = np.zeros(last + 1, dtype=np.float64) if dense else np.empty(n, dtype=np.float64)
    keys = None if dense else np.empty(n, dtype=np.int64)
    pos = 0
    id_pieces = iter_array(ix, DOCLEN_IDS) if not (dense and span) else repeat(None)
    for ip, lp in zip(id_pieces, iter_array(ix, DOCLEN_LEN)):      # same item size: aligned
        val = doc_norms(lp, avgdl, k1, b)
        if ip is None:
            out[first + pos:first + pos + len(lp)] = val
        elif dense:
            out[ip] = val
        else:
            keys[pos:pos + len(ip)] = ip
            out[pos:pos + len(ip)] = val
        pos += len(lp)
    return out, keys


def _norms_table(ids: np.ndarray, norm: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(norms by node id, None) when ids are dense enough, else (norms, ascending ids)."""
    if ids.size and int(ids[-1]) < 4 * ids.size + 65536:
        dense = np.zeros(int(ids[-1]) + 1, dtype=np.float64)
        dense[ids] = norm
        return dense, None
    return norm, ids


def norms_of(norms: tuple[np.ndarray, np.ndarray | None], ids: np.ndarray) -> np.ndarray:
    arr, keys = norms
    if arr.size == 0:
        return np.zeros(len(ids), dtype=np.float64)
    if keys is None:
        return arr.take(ids, mode="clip")     # a node missing from text_doclen never raises
    return arr[np.minimum(np.searchsorted(keys, ids), keys.size - 1)]


def list_impacts(ix, ids: np.ndarray, tf_blob: bytes, df: int) -> np.ndarray:
    """float32 impacts of one stored posting list (bit-identical to :func:`impacts` at build time)."""
    st, params = stored_params(ix)
    return _impacts(norms(ix, st, params), params.k1, ids, tf_blob, df)


def _impacts(norms, k1: float, ids: np.ndarray, tf_blob: bytes, df: int) -> np.ndarray:
    # uint8/uint16/float32 -> float64 directly: the same values tf_impacts gets from float32 tf
    return tf_impacts(tf_view(tf_blob, df), norms_of(norms, ids), k1)
