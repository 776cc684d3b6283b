"""Posting codecs (kgsearch.text.bm25): gap-coded node ids and term frequencies, checked
against the slow reference twins; impacts from stored tf equal the in-memory BM25 exactly;
an index written in the old layout is rebuilt by the next ``index_paths``."""
from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from conftest import hypothesis_api
from kgsearch.text import bm25, pattern
from kgsearch.text import idcodec, postings, okapi
from kgsearch.text import text_step as tindex
from kgsearch.types import ChangeSet

given, settings, st, _ = hypothesis_api()               # stand-ins that skip when hypothesis is missing


def _check(ids):
    ids = np.asarray(sorted(set(int(i) for i in ids)), dtype=np.int64)
    blob = idcodec.encode_ids(ids)
    assert blob == idcodec.encode_ids_ref(ids.tolist())
    out = idcodec.decode_ids(blob)
    assert out.dtype == np.int64
    assert out.tolist() == ids.tolist() == idcodec.decode_ids_ref(blob)
    return blob


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**40), max_size=60))
def test_ids_round_trip_random(ids):
    _check(ids)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=0, max_value=2**34), min_size=1, max_size=30), max_size=8))
def test_decode_many_equals_one_at_a_time(lists):
    blobs = [idcodec.encode_ids(sorted(set(a))) for a in lists]
    ids, off = idcodec.decode_ids_many(blobs)
    assert off.tolist() == np.cumsum([0] + [len(set(a)) for a in lists]).tolist()
    assert ids.tolist() == [i for a in lists for i in sorted(set(a))]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**33), st.lists(st.sampled_from([1, 2, 254, 255, 256, 257, 65535, 65536,
                                                                                65537, 2**31, 2**32, 2**32 + 1]),
                                                               max_size=40))
def test_ids_round_trip_edge_gaps(first, gaps):
    _check(np.cumsum([first] + gaps))


@pytest.mark.parametrize("gap,width", [(1, 1), (255, 1), (256, 2), (65535, 2), (65536, 4), (2**32 - 1, 4),
                                       (2**32, 8)])
def test_ids_width_boundaries(gap, width):
    blob = _check([0, gap])
    assert blob[0] == width and len(blob) == 1 + 2 * width
    _check([gap])
    _check([5, 5 + gap, 6 + gap])


def test_ids_empty_single_and_big():
    assert _check([]) == b"\x01"
    assert _check([7]) == b"\x01\x07"
    assert _check([0]) == b"\x01\x00"
    _check([2**31 - 1, 2**31, 2**31 + 1, 2**33])
    _check([2**62])


def test_dense_lists_with_a_few_big_gaps_cost_about_a_byte_per_id():
    rng = np.random.default_rng(3)
    ids = np.cumsum(rng.integers(1, 20, size=5000)) + 100_000
    ids[2500:] += 70_000
    blob = _check(ids)
    assert blob[0] & 0x10 and len(blob) < ids.size + 32


def test_many_equals_one_at_a_time():
    rng = np.random.default_rng(4)
    lists = [np.unique(rng.integers(0, hi, size=n)) for n, hi in
             [(0, 10), (1, 10), (50, 300), (500, 10**6), (3, 2**35), (0, 5), (200, 1000)]]
    off = np.cumsum([0] + [a.size for a in lists])
    got = idcodec.encode_ids_many(np.concatenate(lists), off)
    assert got == [idcodec.encode_ids(a) for a in lists]
    ids, off2 = idcodec.decode_ids_many(got)
    assert off2.tolist() == off.tolist() and ids.tolist() == np.concatenate(lists).tolist()
    fixed = [b for b in got if b[0] == 1]                  # one width only: the all-in-one path
    ids, off3 = idcodec.decode_ids_many(fixed)
    assert ids.tolist() == np.concatenate([idcodec.decode_ids(b) for b in fixed]).tolist()
    tfs = [rng.integers(1, hi, size=a.size).astype(np.float32) for a, hi in
           zip(lists, [2, 256, 300, 70000, 3, 2, 9])]
    tfs[3][:1] = 0.5
    assert idcodec.encode_tf_many(np.concatenate(tfs), off) == [idcodec.encode_tf(t) for t in tfs]


@pytest.mark.parametrize("tf,width", [([1, 3, 255], 1), ([1, 256], 2), ([65535], 2), ([65536, 1], 4),
                                      ([1.5, 3], 4), ([3.0, 6.0, 9.0], 1)])
def test_tf_widths(tf, width):
    a = np.asarray(tf, dtype=np.float32)
    blob = idcodec.encode_tf(a)
    assert len(blob) == width * a.size
    back = idcodec.decode_tf(blob, a.size)
    assert back.dtype == np.float32 and back.tolist() == a.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.floats(0.5, 500)), min_size=1, max_size=30),
       st.floats(0.1, 300), st.floats(0.0, 3.0), st.floats(0.0, 1.0))
def test_split_impacts_are_bit_identical(pairs, avgdl, k1, b):
    tf = np.asarray([p[0] for p in pairs], dtype=np.float32)
    dl = np.asarray([p[1] for p in pairs], dtype=np.float64)
    want = okapi.impacts(tf, dl, avgdl, k1, b)
    # what the pre-split formula computed, written out
    t = tf.astype(np.float64)
    old = (t * (k1 + 1.0) / (t + k1 * (1.0 - b + b * dl / avgdl))).astype(np.float32)
    assert want.tobytes() == old.tobytes()
    assert okapi.tf_impacts(idcodec.decode_tf(idcodec.encode_tf(tf), tf.size), okapi.doc_norms(dl, avgdl, k1, b),
                           k1).tobytes() == want.tobytes()


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()


def _insert(ix, docs):
    ids = []
    for i, (name, text) in enumerate(docs):
        cur = ix.conn.execute("INSERT INTO nodes(key, kind, name, text) VALUES (?,?,?,?)",
                              (f"t:{i}", "doc", name, text))
        ids.append(cur.lastrowid)
    return ids


@pytest.mark.parametrize("name_weight", [3.0, 2.5])
def test_stored_scores_equal_memory_bm25_exactly(ix, name_weight):
    rng = random.Random(name_weight)
    docs = [(" ".join(rng.choices(WORDS, k=rng.randint(0, 3))), " ".join(rng.choices(WORDS, k=rng.randint(1, 40))))
            for _ in range(300)]
    docs.append(("", " ".join(["alpha"] * 300)))          # tf > 255: uint16
    with ix.transaction():
        ids = _insert(ix, docs)
        tindex.update(ix, ChangeSet(generation=1, full=True), {"name_weight": name_weight})
    params = bm25.BM25Params(name_weight=name_weight)
    an = params.analyzer()
    mem = bm25.MemoryBM25([(an(n), an(t)) for n, t in docs], params, fields=True)
    nid = np.asarray(ids)
    # every stored list gives back the in-memory impacts bit for bit
    for term, df, ib, tb in ix.conn.execute("SELECT term, df, ids, tf FROM text_postings").fetchall():
        i = mem.vocab[term]
        s, e = mem.offsets[i], mem.offsets[i + 1]
        pid = idcodec.decode_ids(ib)
        assert pid.tolist() == nid[mem.docs[s:e]].tolist()
        assert postings.list_impacts(ix, pid, tb, df).tobytes() == mem.imp[s:e].tobytes(), term
    for q in ["alpha", "beta", "beta gamma", "pi rho rho omicron", "zeta alpha eta theta iota"]:
        qw = bm25.query_weights(an, q)
        want = mem.get_scores(qw)
        got_ids, got = bm25.score_terms(ix, qw, k=len(docs))
        dense = np.zeros(int(nid.max()) + 1, dtype=np.float32)
        dense[got_ids] = got
        if len(qw) == 1:                 # one list: no summation order to differ
            assert dense[nid].tobytes() == want.tobytes(), q
        np.testing.assert_allclose(dense[nid], want, rtol=1e-6)
        all_ids, all_sc, _ = bm25.score_all(ix, q)
        dense64 = np.zeros(int(nid.max()) + 1)
        dense64[all_ids] = all_sc
        np.testing.assert_allclose(dense64[nid], want, rtol=1e-6)
        np.testing.assert_allclose(bm25.score_ids(ix, q, nid), dense64[nid], rtol=1e-12)


def _make_old_format(db):
    """Rewrite the text tables the way kgsearch wrote them before migration 0007 (one stale row each)."""
    conn = sqlite3.connect(db)
    conn.executescript("""
        DROP TABLE text_postings;
        DROP TABLE text_trigrams;
        CREATE TABLE text_postings(term TEXT PRIMARY KEY, df INTEGER NOT NULL, ids BLOB NOT NULL, imp BLOB NOT NULL);
        CREATE TABLE text_trigrams(tri TEXT PRIMARY KEY, ids BLOB NOT NULL);
        INSERT INTO text_postings VALUES ('alpha', 1, x'01000000', x'0000803f');
        INSERT INTO text_trigrams VALUES ('alp', x'01000000');
        DELETE FROM migrations WHERE name = '0007_text_compact';
    """)
    st = conn.execute("SELECT value FROM meta WHERE key='text.bm25'").fetchone()[0]
    conn.execute("UPDATE meta SET value=? WHERE key='text.bm25'", (st.replace('"format": 2, ', ''),))
    conn.commit()
    conn.close()


def test_old_format_index_is_rebuilt_on_next_run(tmp_path):
    from kgsearch.indexer import index_paths
    from kgsearch.store.db import Index

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.md").write_text("# Alpha notes\n\nalpha beta gamma about vectors\n")
    (src / "b.md").write_text("# Beta\n\nbeta delta epsilon graphs\n")
    db = tmp_path / "ix.db"
    index_paths(db, [str(src)])
    with Index.open(db, readonly=True) as ix:
        before = bm25.search(ix, "alpha beta")
        sym_before = pattern.search(ix, "alpha")[0].tolist()
    assert before[0].size
    _make_old_format(db)
    with pytest.raises(Exception):                    # readers refuse until `index` migrates
        Index.open(db, readonly=True)
    with Index.open(db) as ix:                        # the upgrade (any writer) marks the text step stale
        assert ix.stale_steps() == ["text"]
    index_paths(db, [str(src)])                        # nothing changed on disk: the stale step is rebuilt
    with Index.open(db, readonly=True) as ix:
        kinds = dict(ix.conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table'"))
        assert "WITHOUT ROWID" in kinds["text_postings"]
        assert postings.state(ix)["format"] == postings.FORMAT
        after = bm25.search(ix, "alpha beta")
        assert after[0].tolist() == before[0].tolist() and after[1].tobytes() == before[1].tobytes()
        assert pattern.search(ix, "alpha")[0].tolist() == sym_before
        n_terms = ix.conn.execute("SELECT count(*) FROM text_postings").fetchone()[0]
    assert n_terms > 5


def test_postings_without_the_current_format_read_as_empty(ix):
    with ix.transaction():
        _insert(ix, [("alpha", "beta gamma")])
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
        st = postings.state(ix)
        st.pop("format")
        ix.set_meta_json(postings.STATE_KEY, st)
    ix._cache.clear()
    assert bm25.search(ix, "alpha")[0].size == 0
    assert bm25.score_all(ix, "alpha")[0].size == 0
    assert bm25.score_ids(ix, "alpha", [1]).tolist() == [0.0]


def test_doclen_blobs_follow_the_table_through_reindexing(tmp_path):
    import json as _json
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index
    from kgsearch.text import bm25 as _bm25

    docs = {f"d{i}": f"words about topic {i} " * (i + 1) for i in range(8)}
    src = tmp_path / "corpus.jsonl"

    def write():
        src.write_text("".join(_json.dumps({"_id": k, "title": k, "text": v}) + "\n" for k, v in docs.items()))

    def check():
        with Index.open(db, readonly=True) as ix:
            ids, dl = postings.read_doclen(ix)
            assert np.array_equal(ix.get_array(postings.DOCLEN_IDS), ids)
            assert np.array_equal(ix.get_array(postings.DOCLEN_LEN), dl)
            st, params = postings.stored_params(ix)
            assert len(ids) == st["n"]
            loaded = postings.load_norms(ix, st, params)
            want = okapi.doc_norms(dl, float(st["avgdl"]), params.k1, params.b)
            assert postings.norms_of(loaded, ids).tobytes() == want.tobytes()

    db = tmp_path / "i.db"
    write()
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text",)))
    check()
    docs["d3"] = "a much longer text " * 30                  # modified
    del docs["d5"]                                           # removed
    docs["d9"] = "a new document"                            # added
    write()
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text",)))
    check()
    with Index.open(db) as ix:                               # an index from before the blobs
        with ix.transaction():
            ix.drop_arrays("text.doclen")
    docs["d1"] = "changed again"
    write()
    index_paths(db, [str(src)], IndexOptions(fmt="beir", steps=("text",)))
    check()
