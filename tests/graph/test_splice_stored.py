"""The index's graph update splices the stored arrays one at a time
(kgsearch.graph.stored.splice.splice_stored): the same arrays as the in-memory splice and as
``Graph.from_edges`` on the spliced edge list, with one new edge array in memory at a time."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from kgsearch.graph.kernels import splice as ksplice
from kgsearch.graph.stored import csr, splice as stored_splice
from kgsearch.store import blobio
from kgsearch.graph.kernels.communities import pairs_lower_bound
from kgsearch.graph.kernels.csr import BLOB_VERSION, Graph
from kgsearch.graph.stored.csr import EDGE_PARTS, edge_capacity, edge_capacity_max
from kgsearch.store.db import Index

PARTS = ("indptr", "indices", "weights", "etype", "rindptr", "rperm")
PREFIX = "graph."


def _case(seed, n_old=150, m=900, n_new_edges=60):
    """A stored graph and a change: some nodes removed, some added (ids above and between),
    some rows rewritten, and the rows that pointed to a removed node."""
    rng = np.random.default_rng(seed)
    old_ids = np.sort(rng.choice(np.arange(1, 4 * n_old), n_old, replace=False))
    s, d = rng.choice(old_ids, m), rng.choice(old_ids, m)
    if seed % 3 == 2:
        d[: m // 3] = old_ids[3]                       # a hub target
    w = rng.integers(1, 4, m).astype(np.float32)
    t = rng.integers(0, 5, m).astype(np.uint8)
    pos = lambda ids, x: np.searchsorted(ids, x)  # noqa: E731
    g_old = Graph.from_edges(pos(old_ids, s), pos(old_ids, d), w, n_old, t, weight_dtype=np.float32)
    removed = rng.choice(old_ids, 5 if seed % 2 else 0, replace=False)
    added = np.setdiff1d(rng.choice(np.arange(1, 5 * n_old), 8, replace=False), old_ids)
    new_ids = np.sort(np.concatenate([np.setdiff1d(old_ids, removed), added]))
    touched = rng.choice(np.setdiff1d(old_ids, removed), 10, replace=False)
    changed = np.unique(np.concatenate([touched, removed, added, np.unique(s[np.isin(d, removed)])]))
    live_changed = np.intersect1d(changed, new_ids)
    ns = rng.choice(live_changed, n_new_edges)
    nd = rng.choice(new_ids, n_new_edges)
    if seed % 3 == 2:
        nd[: n_new_edges // 2] = new_ids[3]
    nw = rng.integers(1, 4, n_new_edges).astype(np.float32)
    nt = rng.integers(0, 7, n_new_edges).astype(np.uint8)
    keep = ~np.isin(s, changed)
    want = Graph.from_edges(pos(new_ids, np.r_[s[keep], ns]), pos(new_ids, np.r_[d[keep], nd]),
                            np.r_[w[keep], nw], len(new_ids), np.r_[t[keep], nt], weight_dtype=np.float32)
    return g_old, old_ids, new_ids, changed, (ns, nd, nw, nt), want


def _stored(tmp_path, g: Graph, room: bool = True) -> Index:
    """``g`` stored as the graph step stores it (edge arrays with room to spare), or as an
    index made before that stored it (``room=False``: exactly ``m`` long)."""
    ix = Index.open(tmp_path / "g.db")
    with ix.transaction():
        for name, arr in g.to_blobs().items():
            ix.put_array(PREFIX + name, arr, capacity=edge_capacity(g.m) if room and name in EDGE_PARTS else None)
    return ix


def _edges_read(ix, m: int) -> dict:
    """The stored arrays' first ``m`` values, after checking they are stored with room and
    zeros in it."""
    out = {}
    for p in PARTS:
        a = ix.get_array(PREFIX + p)
        if p in EDGE_PARTS:
            assert m < len(a) <= edge_capacity_max(m) and not a[m:].any(), p
            a = a[:m]
        out[p] = a
    return out


@pytest.mark.parametrize("blob_io", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_one_array_at_a_time_equals_the_splice_and_a_rebuild(tmp_path, monkeypatch, seed, blob_io):
    """(Odd seeds start from arrays stored without room, as before edge_capacity.)"""
    monkeypatch.setattr(blobio, "BLOB_IO", blob_io and blobio.BLOB_IO)   # (False: Python < 3.11's path)
    monkeypatch.setattr(blobio, "STREAM_BYTES", 64)          # (written in pieces, read in slices)
    monkeypatch.setattr(csr, "CHUNK_EDGES", 1 + 37 * (seed % 4))
    g_old, old_ids, new_ids, changed, new, want = _case(seed)
    in_memory = ksplice.splice(g_old, old_ids, new_ids, changed, *new)
    ix = _stored(tmp_path, g_old, room=seed % 2 == 0)
    try:
        with ix.transaction():
            for part in ("rindptr", "rperm")[:seed % 3]:    # (fallbacks: counted from the new indices; sorted)
                ix.conn.execute("DELETE FROM blobs WHERE name = ?", (PREFIX + part,))
            plan = ksplice.splice_plan(g_old.indptr, old_ids, new_ids, changed, *new)
            rindptr, outw, pairs, _ = stored_splice.splice_stored(ix, plan, ["t"] * 7, g_old.m)
        got = _edges_read(ix, want.m)
        assert list(ix.get_array(PREFIX + "shape")) == [BLOB_VERSION, want.n, want.m]
    finally:
        ix.close()
    for p in PARTS:
        for ref in (want, in_memory):
            assert np.array_equal(got[p], getattr(ref, p)), p
            assert got[p].dtype == getattr(ref, p).dtype, p
    assert np.array_equal(rindptr, want.rindptr)
    assert pairs == pairs_lower_bound(want)
    assert np.allclose(outw, np.bincount(np.repeat(np.arange(want.n), np.diff(want.indptr)),
                                         weights=want.weights, minlength=want.n))


def test_a_kept_edge_to_a_removed_node_is_refused_before_anything_is_written(tmp_path):
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], num_nodes=3, weight_dtype=np.float32)
    g.etype = np.zeros(3, np.uint8)
    ids = np.array([10, 20, 30])
    ix = _stored(tmp_path, g)
    try:
        with ix.transaction():
            # node 30 removed, but the row of 20 (an edge to 30) is not listed as changed
            plan = ksplice.splice_plan(g.indptr, ids, ids[:2], np.array([30]), *(np.zeros(0),) * 4)
            with pytest.raises(ValueError, match="removed node"):
                stored_splice.splice_stored(ix, plan, ["t"], g.m)
            assert np.array_equal(ix.get_array(PREFIX + "indices")[:g.m], g.indices)
    finally:
        ix.close()


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_at_most_one_new_edge_array_in_memory(tmp_path, monkeypatch):
    """Traced memory (numpy's buffers and the bytes read from the blobs) while the stored
    arrays are spliced: one new int32 array plus a bool an edge and chunk-sized pieces, where
    the in-memory splice holds the old and the new forward arrays at once (measured: 1.29 and
    9.1 arrays). Few new edges: the in-edges of their targets are gathered (int64 each)."""
    monkeypatch.setattr(blobio, "STREAM_BYTES", 1 << 12)
    monkeypatch.setattr(csr, "CHUNK_EDGES", 1 << 10)
    g_old, old_ids, new_ids, changed, new, want = _case(4, n_old=500, m=300_000, n_new_edges=10)
    assert want.m > 0.9 * g_old.m                       # (a few rows changed)
    ix = _stored(tmp_path, g_old)
    one = 4 * g_old.m                                   # bytes of one int32/float32 edge array
    try:
        with ix.transaction():
            plan = ksplice.splice_plan(g_old.indptr, old_ids, new_ids, changed, *new)
            stored = _peak(lambda: stored_splice.splice_stored(ix, plan, ["t"] * 7, g_old.m))
        assert np.array_equal(_edges_read(ix, want.m)["rperm"], want.rperm)
    finally:
        ix.close()
    assert stored < 1.4 * one, stored / one
    in_memory = _peak(lambda: ksplice.splice(g_old, old_ids, new_ids, changed, *new))
    assert in_memory > 2 * one, in_memory / one         # (the old way: forward arrays twice)


@pytest.mark.parametrize("blob_io", [True, False])
def test_put_writes_in_place_or_anew(tmp_path, monkeypatch, blob_io):
    monkeypatch.setattr(blobio, "BLOB_IO", blob_io and blobio.BLOB_IO)
    ix = Index.open(tmp_path / "p.db")
    a = np.arange(1000, dtype=np.int32)
    try:
        with ix.transaction():
            blobio.put_stored(ix, "x", a, chunk=64)
            assert np.array_equal(ix.get_array("x"), a)
            b = a.copy()
            b[[3, 500, 999]] = -1                     # same length: changed pieces only, in place
            blobio.put_stored(ix, "x", b, chunk=64)
            assert np.array_equal(ix.get_array("x"), b)
            for c in (b[:-1], b.astype(np.int64), b.reshape(10, 100)):   # length, type, shape
                blobio.put_stored(ix, "x", c, chunk=64)
                got = ix.get_array("x")
                assert np.array_equal(got, c) and got.dtype == c.dtype and got.shape == c.shape
    finally:
        ix.close()


@pytest.mark.parametrize("extra", [0, 1, -1, 5])
def test_a_one_row_change_splices_in_place(tmp_path, monkeypatch, extra):
    """One row rewritten with as many edges as it had (a neighbour list replaced), or a few
    more or fewer: every stored array keeps its length (the room to spare) and is updated
    in place, no new blob."""
    monkeypatch.setattr(blobio, "STREAM_BYTES", 64)
    monkeypatch.setattr(csr, "CHUNK_EDGES", 50)
    rng = np.random.default_rng(7)
    n, m = 120, 2000
    ids = np.arange(10, 10 + n)
    s, d = np.sort(rng.integers(0, n, m)), rng.integers(0, n, m)
    w = rng.integers(1, 4, m).astype(np.float32)
    t = rng.integers(0, 3, m).astype(np.uint8)
    g = Graph.from_edges(s, d, w, n, t, weight_dtype=np.float32)
    row = int(s[m // 2])
    k0 = int((s == row).sum())
    k = k0 + extra
    nd = rng.integers(0, n, k)
    new = (np.full(k, ids[row]), ids[nd], np.full(k, 2.0, np.float32), np.ones(k, np.uint8))
    keep = s != row
    want = Graph.from_edges(np.r_[s[keep], np.full(k, row)], np.r_[d[keep], nd], np.r_[w[keep], new[2]], n,
                            np.r_[t[keep], new[3]], weight_dtype=np.float32)
    ix = _stored(tmp_path, g)
    anew = []
    real_put = ix.put_array
    ix.put_array = lambda name, *a, **kw: (anew.append(name), real_put(name, *a, **kw))
    written = []
    real = blobio.put_stored
    monkeypatch.setattr(csr, "put_stored", lambda ix, name, a, chunk=None, **room: (
        written.append((name, len(ix.get_array(name)) == room["capacity"])), real(ix, name, a, chunk, **room)))
    try:
        with ix.transaction():
            plan = ksplice.splice_plan(g.indptr, ids, ids, np.array([ids[row]]), *new)
            stored_splice.splice_stored(ix, plan, ["t"] * 3, g.m)
        for p, a in _edges_read(ix, want.m).items():
            assert np.array_equal(a, getattr(want, p)), p
    finally:
        ix.close()
    assert sorted(written) == [(PREFIX + p, True) for p in ("etype", "indices", "rperm", "weights")]
    assert not [x for x in anew if x.split(".", 1)[1] in EDGE_PARTS]


def test_room_to_spare_keeps_a_changed_length_in_place(tmp_path):
    """Stored with ``capacity`` items, an array that grows or shrinks within it is written in
    place (no new blob), zeros after it; past it, or without it, a new blob."""
    ix = Index.open(tmp_path / "p.db")
    calls = []
    real = ix.put_array
    ix.put_array = lambda name, *a, **k: (calls.append(name), real(name, *a, **k))
    a = np.arange(1000, dtype=np.int32)
    try:
        with ix.transaction():
            blobio.put_stored(ix, "x", a, chunk=64, capacity=1100)
            for b in (a, a[:-7], np.r_[a, 5, 6].astype(np.int32), np.r_[a[:500], a[501:]]):
                blobio.put_stored(ix, "x", b, chunk=64, capacity=1100)
                raw = ix.get_array("x")
                assert len(raw) == 1100 and np.array_equal(raw[:len(b)], b) and not raw[len(b):].any()
                assert len(blobio.open_stored(ix, "x", len(b), 1100)) == len(b)
            assert calls == ["x"] and blobio.open_stored(ix, "x", 999, 1099) is None
            blobio.put_stored(ix, "x", a, chunk=64, capacity=1024)          # more room than wanted: anew
            assert calls == ["x", "x"] and len(ix.get_array("x")) == 1024
            blobio.put_stored(ix, "x", a, chunk=64, capacity=1000, keep_up_to=1024)   # kept
            big = np.arange(1500, dtype=np.int32)
            blobio.put_stored(ix, "x", big, chunk=64, capacity=2048)         # no room left: anew
            assert calls == ["x", "x", "x"] and np.array_equal(ix.get_array("x")[:1500], big)
            with pytest.raises(ValueError, match="capacity"):
                blobio.put_stored(ix, "x", a, chunk=64, capacity=10)
    finally:
        ix.close()


def test_edge_capacity_leaves_room_both_ways():
    """A new write leaves at least half a quantum; arrays written for m edges are kept in
    place while the graph stays within half a quantum of m."""
    for m in (0, 1, 1023, 1024, 5000, 262_143, 262_144, 16_437_406):
        cap, q = edge_capacity(m), max(1024, 1 << (m >> 8).bit_length())
        assert m + q // 2 <= cap < m + 3 * q // 2 and cap % q == 0 and q <= max(1024, m / 128)
        for m2 in (max(0, m - q // 2), m + q // 2):
            assert m2 <= cap <= edge_capacity_max(m2)
    assert edge_capacity(16_437_406) - 16_437_406 >= 32_768          # room for a one-file change at 1M
