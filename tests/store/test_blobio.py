"""Stored arrays read in pieces (kgsearch.store.blobio) against whole reads, and the consumers
that load through them: the BM25 norms, scored one posting list at a time."""
from __future__ import annotations

import random

import numpy as np
import pytest

from kgsearch.store import blobio
from kgsearch.text import bm25, okapi, postings
from kgsearch.text import text_step as tindex
from kgsearch.types import ChangeSet


@pytest.fixture(params=["blobopen", "whole"])
def how(request, monkeypatch):
    if request.param == "whole":                     # Python < 3.11: no incremental blob I/O
        monkeypatch.setattr(blobio, "_blob", lambda ix, rowid: None)
    return request.param


@pytest.mark.parametrize("dtype", ["<i8", "<f8", "<u2", "<f4"])
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 4099])
def test_pieces_are_the_whole_array(ix, how, dtype, n):
    rng = np.random.default_rng(n)
    a = (rng.random((n, 3)) * 1000).astype(dtype)
    with ix.transaction():
        ix.put_array("t.a", a)
    for chunk in (1, 8, 100, 4096, 1 << 20):
        pieces = list(blobio.iter_array(ix, "t.a", chunk))
        got = np.concatenate(pieces) if pieces else np.zeros(0, dtype)
        assert got.dtype == np.dtype(dtype)
        assert got.tobytes() == a.tobytes()
        assert all(p.nbytes <= max(chunk, got.itemsize) for p in pieces)
    if n:
        assert blobio.array_item(ix, "t.a", -1) == a.reshape(-1)[-1]
        assert blobio.array_item(ix, "t.a", 0) == a.reshape(-1)[0]
        with pytest.raises(IndexError):
            blobio.array_item(ix, "t.a", 3 * n)
    assert blobio.array_info(ix, "t.a")[1:] == (np.dtype(dtype), (n, 3))
    assert list(blobio.iter_array(ix, "t.missing")) == []
    assert blobio.array_item(ix, "t.missing", 0) is None


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()


def _index(ix, n_docs, gap_at=None, name_weight=2.5, gap_id=10**6):
    rng = random.Random(n_docs)
    with ix.transaction():
        for i in range(n_docs):
            if gap_at is not None and i == gap_at:       # sparse node ids: norms keyed by id
                ix.conn.execute("INSERT INTO nodes(id, key, kind, name, text) VALUES (?,?,?,?,?)",
                                (gap_id, "gap", "doc", "gap", "alpha beta"))
                continue
            ix.conn.execute("INSERT INTO nodes(key, kind, name, text) VALUES (?,?,?,?)",
                            (f"t:{i}", "doc", " ".join(rng.choices(WORDS, k=2)),
                             " ".join(rng.choices(WORDS, k=rng.randint(1, 60)))))
        tindex.update(ix, ChangeSet(generation=1, full=True), {"name_weight": name_weight})


def _whole_norms(ix):
    """The former load_norms: both blobs read whole, one doc_norms pass, a float64 table."""
    st, params = postings.stored_params(ix)
    ids, dl = ix.get_array(postings.DOCLEN_IDS), ix.get_array(postings.DOCLEN_LEN)
    norm = okapi.doc_norms(dl, float(st["avgdl"]), params.k1, params.b)
    if ids.size and int(ids[-1]) < 4 * ids.size + 65536:
        dense = np.zeros(int(ids[-1]) + 1)
        dense[ids] = norm
        return dense, None
    return norm, ids


def _whole_norms_of(table, ids):
    arr, keys = table
    return arr.take(ids, mode="clip") if keys is None else arr[np.minimum(np.searchsorted(keys, ids), keys.size - 1)]


@pytest.mark.parametrize("gap_at, gap_id", [(None, 0), (150, 10**6), (299, 400)])   # range, sparse, holes
@pytest.mark.parametrize("name_weight", [2.5, 1 / 3])
def test_norms_read_in_pieces_are_the_whole_reads(ix, how, monkeypatch, gap_at, gap_id, name_weight):
    _index(ix, 300, gap_at, name_weight, gap_id)
    monkeypatch.setattr(blobio, "CHUNK", 64)          # many pieces
    st, params = postings.stored_params(ix)
    loaded = postings.load_norms(ix, st, params)
    want = _whole_norms(ix)
    assert (loaded[1] is None) == (want[1] is None) == (gap_id != 10**6)
    assert loaded[0].tobytes() == want[0].tobytes()
    if loaded[1] is not None:
        assert loaded[1].tolist() == want[1].tolist()
    probe = np.arange(0, 400)
    if gap_at is not None:
        probe = np.concatenate([probe, [10**6 - 1, 10**6, 10**6 + 1, 10**7]])
    assert postings.norms_of(loaded, probe).tobytes() == _whole_norms_of(want, probe).tobytes()


def _score_all_reference(ix, q):
    """score_all as it was: every list decoded and scored together (bm25._lists)."""
    st, params, memo = postings.stored(ix)
    qw = bm25.query_weights(params.analyzer(), bm25.clean_query(q))
    rows = postings.read_rows(ix.conn, [t for t, w in qw.items() if w])
    from kgsearch.text.okapi import idf
    ws, ibs, tfs = [], [], []
    for (term, df, ib, tb), f in zip(rows, idf([r[1] for r in rows], int(st["n"]), "lucene").tolist()):
        ws.append(qw[term] * f)
        ibs.append(ib)
        tfs.append(postings.tf_view(tb, df))
    if not ws:
        return np.zeros(0, np.int64), np.zeros(0)
    lists, max_id = bm25._lists(postings.norms(ix, st, params, memo), params.k1, ws, ibs, tfs)
    scores = np.zeros(max_id + 1)
    for ids, w, imp in lists:
        scores[ids] += w * imp
    nz = np.flatnonzero(scores > 0)
    return nz, scores[nz]


@pytest.mark.parametrize("gap_at", [None, 150])
def test_score_all_one_list_at_a_time_is_bit_identical(ix, gap_at):
    _index(ix, 300, gap_at)
    queries = ["alpha", "beta gamma", "pi rho rho omicron", "zeta alpha eta theta iota kappa mu",
               "nothing here", "alpha"]
    for q in queries + queries[::-1]:                 # the reused score table holds nothing over
        ids, sc, n = bm25.score_all(ix, q)
        want_ids, want = _score_all_reference(ix, q)
        assert ids.tolist() == want_ids.tolist(), q
        assert sc.tobytes() == want.tobytes(), q
        assert n == postings.state(ix)["n"]


def test_doclen_ids_are_saved_strictly_ascending(ix):
    """load_norms reads no ids blob when first, last and count make a range: save_doclen
    guarantees the order that makes this safe."""
    with ix.transaction():
        postings.save_doclen(ix, np.array([5, 3, 4]), np.array([50.0, 30.0, 40.0]))
    assert ix.get_array(postings.DOCLEN_IDS).tolist() == [3, 4, 5]
    assert ix.get_array(postings.DOCLEN_LEN).tolist() == [30.0, 40.0, 50.0]
    with pytest.raises(ValueError, match="not unique"):
        postings.save_doclen(ix, np.array([5, 3, 5]), np.array([1.0, 2.0, 3.0]))


def test_norms_of_a_range_never_read_the_ids_blob(ix, monkeypatch):
    _index(ix, 300)
    read = []
    real = blobio.iter_array

    def spy(ix_, name, chunk=None):
        read.append(name)
        return real(ix_, name, chunk)

    monkeypatch.setattr(postings, "iter_array", spy)
    st, params = postings.stored_params(ix)
    loaded = postings.load_norms(ix, st, params)
    assert read == [postings.DOCLEN_LEN]
    want = _whole_norms(ix)
    probe = np.arange(0, 310)
    assert postings.norms_of(loaded, probe).tobytes() == _whole_norms_of(want, probe).tobytes()
