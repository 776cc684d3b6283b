"""BM25: rank_bm25 oracle, hand-computed scores, stored postings, incremental == rebuild."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from conftest import need

from kgsearch.text import bm25, fts, text_step as tindex, pattern
from kgsearch.text import idcodec, postings, trigrams
from kgsearch.text.bm25 import BM25Params, MemoryBM25
from kgsearch.types import ChangeSet

WORDS = ("alpha beta gamma delta epsilon zeta theta iota kappa rho omicron sigma tau upsilon "
         "omega graph node edge vector matrix search index query rank score field title body").split()


def _corpus(n=40, seed=3):
    rng = random.Random(seed)
    # Zipf-ish draws so document frequencies differ; lengths vary so b matters
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(WORDS))]
    return [rng.choices(WORDS, weights, k=rng.randint(3, 30)) for _ in range(n)]


def _queries(seed=5):
    rng = random.Random(seed)
    return [rng.sample(WORDS, rng.randint(1, 4)) for _ in range(25)] + [["alpha", "alpha", "beta"]]


def test_hand_computed_three_documents():
    docs = [["cat", "sat"], ["cat", "cat", "dog", "ran"], ["bird"]]
    m = MemoryBM25(docs, BM25Params(k1=1.5, b=0.75))
    N, avgdl = 3, 7 / 3
    idf_cat = math.log((N - 2 + 0.5) / (2 + 0.5) + 1)
    tf1 = 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / avgdl))
    tf2 = 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 4 / avgdl))
    s = m.get_scores(["cat"])
    assert s[0] == pytest.approx(idf_cat * tf1, rel=1e-6)
    assert s[1] == pytest.approx(idf_cat * tf2, rel=1e-6)
    assert s[2] == 0


def test_oracle_rank_bm25_lucene_idf():
    """Our default idf is log(1 + (N-df+.5)/(df+.5)); rank_bm25's BM25Okapi uses the same
    saturation but idf = log((N-df+.5)/(df+.5)) floored at epsilon * mean idf. We give the
    oracle our idf (rank_bm25 reads it from its ``idf`` dict) and compare everything else."""
    rank_bm25 = need("rank_bm25")
    corpus = _corpus()
    ref = rank_bm25.BM25Okapi(corpus, k1=1.5, b=0.75)
    N = len(corpus)
    df = {t: sum(1 for d in corpus if t in d) for t in set(w for d in corpus for w in d)}
    ref.idf = {t: math.log((N - n + 0.5) / (n + 0.5) + 1) for t, n in df.items()}
    ours = MemoryBM25(corpus, BM25Params(k1=1.5, b=0.75))
    for q in _queries():
        want = ref.get_scores(q)
        got = ours.get_scores(q)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        top, _ = ours.search(q, 10)
        ref_top = [i for i in np.argsort(-want, kind="stable")[:10] if want[i] > 0]
        assert top.tolist() == ref_top


def test_oracle_rank_bm25_robertson_idf_unmodified():
    """With idf='robertson' and no term in more than half the documents (so rank_bm25's
    epsilon floor never applies), unmodified rank_bm25 and we agree."""
    rank_bm25 = need("rank_bm25")
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(200)]
    corpus = [rng.sample(vocab, rng.randint(5, 25)) + rng.sample(vocab, 3) for _ in range(60)]
    N = len(corpus)
    assert all(sum(1 for d in corpus if t in d) < N / 2 for t in vocab)
    ref = rank_bm25.BM25Okapi(corpus, k1=1.2, b=0.6)
    ours = MemoryBM25(corpus, BM25Params(k1=1.2, b=0.6, idf="robertson"))
    for _ in range(30):
        q = rng.sample(vocab, rng.randint(1, 5))
        want, got = ref.get_scores(q), ours.get_scores(q)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        ref_top = [i for i in np.argsort(-want, kind="stable")[:10] if want[i] > 0]
        assert ours.search(q, 10)[0].tolist() == ref_top


def _insert(ix, rows):
    """rows: (key, name, text, qualname) -> node ids."""
    ids = []
    for key, name, text, qual in rows:
        cur = ix.conn.execute("INSERT INTO nodes(key, kind, name, qualname, text) VALUES (?, 'sym', ?, ?, ?)",
                              (key, name, qual, text))
        ids.append(cur.lastrowid)
    return ids


def test_stored_channel_equals_rank_bm25(ix):
    rank_bm25 = need("rank_bm25")
    corpus = _corpus(50, seed=9)
    with ix.transaction():
        ids = _insert(ix, [(f"d{i}", "", " ".join(d), "") for i, d in enumerate(corpus)])
        tindex.update(ix, ChangeSet(generation=1, full=True), {"stemmer": "none"})
    ref = rank_bm25.BM25Okapi(corpus, k1=1.5, b=0.75)
    N = len(corpus)
    df = {t: sum(1 for d in corpus if t in d) for t in set(w for d in corpus for w in d)}
    ref.idf = {t: math.log((N - n + 0.5) / (n + 0.5) + 1) for t, n in df.items()}
    for q in _queries():
        want = ref.get_scores(q)
        got_ids, got = bm25.search(ix, " ".join(q), k=10)
        order = [i for i in np.argsort(-want, kind="stable")[:10] if want[i] > 0]
        assert got_ids.tolist() == [ids[i] for i in order]
        np.testing.assert_allclose(got, want[order], rtol=1e-5, atol=1e-5)


def test_name_field_weight_and_keyword_boost(ix):
    with ix.transaction():
        a, b_, c = _insert(ix, [("a", "vector search", "notes about graphs", ""),
                                ("b", "graphs", "vector search vector search", ""),
                                ("c", "misc", "nothing relevant here at all", "")])
        tindex.update(ix, ChangeSet(generation=1, full=True), {"name_weight": 3.0})
    ids, sc = bm25.search(ix, "vector search")
    assert ids.tolist()[:2] == [a, b_]          # the title match wins at name weight 3
    ids2, sc2 = bm25.search(ix, "vector graphs", keywords=["graphs"], keyword_boost=5.0)
    ids3, sc3 = bm25.search(ix, "vector graphs graphs graphs graphs graphs graphs")
    assert ids2.tolist() == ids3.tolist()
    np.testing.assert_allclose(sc2, sc3, rtol=1e-6)
    # the pipeline's spelling of the same options
    ids4, sc4 = bm25.search(ix, "vector graphs", boost_terms=["graphs"], boost=5.0)
    np.testing.assert_allclose(sc4, sc3, rtol=1e-6)


def _snapshot(ix):
    post = {}
    for t, df, i, p in ix.conn.execute("SELECT term, df, ids, tf FROM text_postings").fetchall():
        ids = idcodec.decode_ids(i)
        post[t] = (ids, postings.list_impacts(ix, ids, p, df))
    doclen = dict(ix.conn.execute("SELECT id, len FROM text_doclen"))
    syms = dict(ix.conn.execute("SELECT id, sym FROM text_symbols"))
    tris = {t: trigrams.ids_from(b).tolist() for t, b in ix.conn.execute("SELECT tri, ids FROM text_trigrams")}
    return post, doclen, syms, tris


def _assert_same(a, b):
    pa, da, sa, ta = a
    pb, db, sb, tb = b
    assert set(pa) == set(pb)
    for t in pa:
        assert pa[t][0].tolist() == pb[t][0].tolist(), t
        np.testing.assert_allclose(pa[t][1], pb[t][1], rtol=1e-6)
    assert da == pytest.approx(db)
    assert sa == sb
    assert ta == tb


def test_incremental_equals_full_rebuild(ix):
    rng = random.Random(1)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(5, 20))) for _ in range(120)]
    names = [rng.choice(["ParseArgs", "blast_radius", "os.path.join", "Graph", "vector"]) + str(i)
             for i in range(120)]
    with ix.transaction():
        ids = _insert(ix, [(f"k{i}", names[i], texts[i], f"mod.{names[i]}") for i in range(100)])
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    # add 20, modify 10, remove 10
    with ix.transaction():
        old = {}
        modified = ids[10:20]
        removed = ids[30:40]
        for nid in modified + removed:
            old[nid] = ix.conn.execute("SELECT name, text FROM nodes WHERE id=?", (nid,)).fetchone()
        for j, nid in enumerate(modified):
            ix.conn.execute("UPDATE nodes SET name=?, text=? WHERE id=?",
                            (f"RenamedThing{j}", texts[100 + j // 2] + " extra words", nid))
        ix.conn.executemany("DELETE FROM nodes WHERE id=?", [(i,) for i in removed])
        added = _insert(ix, [(f"k{i}", names[i], texts[i], f"mod.{names[i]}") for i in range(100, 120)])
        info = tindex.update(ix, ChangeSet(generation=2, added=added, modified=modified, removed=removed,
                                           old=old), {})
    assert info["bm25"]["mode"] == "incremental"
    assert info["fts"]["mode"] == "incremental"
    assert info["pattern"]["mode"] == "incremental"
    inc = _snapshot(ix)
    st = postings.state(ix)
    assert st["n"] == 110
    # FTS5's own consistency check against the nodes table
    ix.conn.execute(f"INSERT INTO {fts.TABLE}({fts.TABLE}) VALUES('integrity-check')")
    with ix.transaction():
        postings.rebuild(ix, BM25Params())          # the live mean, as a fresh build
        trigrams.update(ix, ChangeSet(generation=3), full=True)
    _assert_same(inc, _snapshot(ix))
    assert postings.state(ix)["total"] == st["total"] and postings.state(ix)["avgdl"] == st["avgdl"]


def test_live_avgdl_after_a_big_change_and_settings_change_rebuild(ix):
    with ix.transaction():
        ids = _insert(ix, [(f"k{i}", "n", "short text", "") for i in range(10)])
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    bm25.score_all(ix, "short")                 # fills this process's norms cache
    with ix.transaction():
        new = _insert(ix, [(f"x{i}", "n", " ".join(WORDS), "") for i in range(5)])
        info = tindex.update(ix, ChangeSet(generation=2, added=new), {})
    # the mean length moved far (it used to trigger a rebuild at 10 %): nothing stored depends
    # on it, so the run stays incremental and records the live mean, which a rebuild computes
    assert info["bm25"]["mode"] == "incremental"
    st = postings.state(ix)
    dl = ix.get_array(postings.DOCLEN_LEN)
    assert st["avgdl"] == info["bm25"]["avgdl"] == float(dl.sum()) / len(dl) > 3 * info["bm25"]["avgdl_before"]
    # the norms cached in this process follow the new mean without clearing the cache by hand:
    # the same scores as a rebuild read with an empty cache
    scores = {q: bm25.score_all(ix, q) for q in ("short", WORDS[0], "text " + WORDS[1])}
    with ix.transaction():
        postings.rebuild(ix, BM25Params())
    assert postings.state(ix)["avgdl"] == st["avgdl"]
    ix._cache.clear()
    for q, (i, s, n) in scores.items():
        i2, s2, n2 = bm25.score_all(ix, q)
        assert np.array_equal(i, i2) and np.array_equal(s, s2) and n == n2, q
    with ix.transaction():
        info = tindex.update(ix, ChangeSet(generation=3), {"stemmer": "light"})
    assert info["full"] is True and postings.state(ix)["params"]["stemmer"] == "light"
    assert ix.derived("text")["info"]["full"] is True


@pytest.mark.parametrize("removed,mode", [(70, "incremental"), (100, "full")])
def test_fts_rebuilds_after_removing_a_large_share(ix, removed, mode):
    """Removing more than fts.REBUILD_SHARE of the rows rebuilds the FTS5 table from its
    content (deleted rows would stay as tombstones); fewer are deleted in place. Either way
    the table passes FTS5's integrity check and matches what a rebuild matches."""
    rng = random.Random(3)
    texts = [" ".join(rng.choices(WORDS, k=12)) for _ in range(300)]
    with ix.transaction():
        ids = _insert(ix, [(f"k{i}", f"n{i}", texts[i], "") for i in range(300)])
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    gone = ids[:removed]
    with ix.transaction():
        old = {i: ix.conn.execute("SELECT name, text FROM nodes WHERE id=?", (i,)).fetchone() for i in gone}
        ix.conn.executemany("DELETE FROM nodes WHERE id=?", [(i,) for i in gone])
        info = tindex.update(ix, ChangeSet(generation=2, removed=gone, old=old), {})
    assert info["fts"]["mode"] == mode and info["bm25"]["mode"] == "incremental"
    assert removed / 300 > fts.REBUILD_SHARE if mode == "full" else removed / 300 < fts.REBUILD_SHARE
    ix.conn.execute(f"INSERT INTO {fts.TABLE}({fts.TABLE}) VALUES('integrity-check')")
    q = f"SELECT rowid FROM {fts.TABLE} WHERE {fts.TABLE} MATCH ? ORDER BY rowid"
    got = {w: ix.conn.execute(q, (w,)).fetchall() for w in WORDS[:8]}
    with ix.transaction():
        ix.conn.execute(f"INSERT INTO {fts.TABLE}({fts.TABLE}) VALUES('rebuild')")
    assert got == {w: ix.conn.execute(q, (w,)).fetchall() for w in WORDS[:8]}
    assert all(r[0] not in gone for rows in got.values() for r in rows) and any(got.values())


def test_missing_old_text_falls_back_to_rebuild(ix):
    with ix.transaction():
        ids = _insert(ix, [(f"k{i}", "name", f"text number {i} graph", "") for i in range(20)])
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    with ix.transaction():
        ix.conn.execute("UPDATE nodes SET text='changed words' WHERE id=?", (ids[0],))
        info = tindex.update(ix, ChangeSet(generation=2, modified=[ids[0]]), {})   # no old text
    assert info["bm25"]["mode"] == "full" and info["fts"]["mode"] == "full"
    assert bm25.search(ix, "changed")[0].tolist() == [ids[0]]
    ix.conn.execute(f"INSERT INTO {fts.TABLE}({fts.TABLE}) VALUES('integrity-check')")


def test_empty_index_and_unknown_terms(ix):
    assert bm25.search(ix, "anything")[0].size == 0          # no postings yet
    with ix.transaction():
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    assert bm25.search(ix, "anything")[0].size == 0
    ids, sc = bm25.search(ix, "")
    assert ids.dtype == np.int64 and sc.dtype == np.float32


@pytest.mark.parametrize("block", [1, 7, 50])
def test_postings_written_in_term_blocks_equal_one_block(tmp_path, monkeypatch, block):
    """write_postings sorts and encodes a block of terms at a time (bounded memory at 1M
    nodes); any block size stores exactly the rows of one whole-corpus block."""
    from kgsearch.store.db import Index
    from kgsearch.text.okapi import build_pairs

    rng = random.Random(block)
    words = [f"w{i}" for i in range(40)]
    docs = [([rng.choice(words)] if rng.random() < 0.5 else [],
             [rng.choice(words[: 5 + i % 35]) for _ in range(rng.randint(0, 30))]) for i in range(120)]
    node_ids = sorted(rng.sample(range(1, 10_000), len(docs)))
    params = BM25Params(name_weight=2.0)
    rows = {}
    for size in (10**9, block):
        monkeypatch.setattr(postings, "WRITE_BLOCK", size)
        with Index.open(tmp_path / f"p{size}.db") as ix:
            with ix.transaction():
                info = postings.write_postings(ix, iter(docs), node_ids, params)
            rows[size] = (sorted(ix.conn.execute("SELECT term, df, ids, tf FROM text_postings")),
                          sorted(ix.conn.execute("SELECT id, len FROM text_doclen")), info)
    assert rows[10**9] == rows[block]
    # and they are build_pairs' lists (the in-memory BM25's), decoded
    pairs = build_pairs(iter(docs), 2.0)
    got = {t: (idcodec.decode_ids(i).tolist(), idcodec.decode_tf(f, df).tolist()) for t, df, i, f in rows[block][0]}
    for k, t in enumerate(pairs.terms):
        s, e = pairs.offsets[k], pairs.offsets[k + 1]
        assert got[t] == ([node_ids[j] for j in pairs.docs[s:e]], pairs.tf[s:e].tolist()), t


def test_fts_population_is_the_bm25_state_n(ix):
    """score_all's N (the z-score population) comes from the BM25 state, not a count over
    text_doclen (~10 ms a query at 1M nodes), and equals that count after changes too."""
    with ix.transaction():
        ids = _insert(ix, [("a", "", "alpha beta gamma", ""), ("b", "", "beta alpha", ""),
                           ("c", "", "gamma delta", ""), ("d", "", "epsilon", "")])
        tindex.update(ix, ChangeSet(generation=1, full=True), {"stemmer": "none"})
        assert fts.score_all(ix, "alpha")[2] == 4
        ix.conn.execute("DELETE FROM nodes WHERE id = ?", (ids[3],))
        tindex.update(ix, ChangeSet(generation=2, removed=[ids[3]]), {"stemmer": "none"})
    count = ix.conn.execute("SELECT count(*) FROM text_doclen").fetchone()[0]
    assert fts._indexed(ix) == count == 3 and fts.score_all(ix, "alpha")[2] == 3


def test_rows_read_ahead_score_exactly_as_rows_read_by_the_scoring(ix):
    """``bm25.read_ahead`` (several indexes as one read each index's rows with its df) keeps the
    rows for the scoring: served in the statement's order (the primary key's, which is Python's
    string order, unicode terms included), so the scores are the same to the last bit."""
    corpus = _corpus(60, seed=11)
    corpus[3] += ["été", "zürich", "ßtraße", "日本"]
    corpus[7] += ["été", "Zürich", "日本語"]
    with ix.transaction():
        _insert(ix, [(f"d{i}", "", " ".join(d), "") for i, d in enumerate(corpus)])
        tindex.update(ix, ChangeSet(generation=1, full=True), {"stemmer": "none"})
    terms = sorted({t for d in corpus for t in d})
    random.Random(2).shuffle(terms)
    rows = postings.read_rows(ix.conn, terms)
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)      # what the kept rows rely on
    for q in _queries() + [["été", "日本", "zürich"]]:
        text = " ".join(q)
        memo = postings.stored(ix)[2]
        memo.pop("rows", None)
        want_all = bm25.score_all(ix, text)
        want_ids = bm25.score_ids(ix, text, want_all[0][:7])
        qw = bm25.query_weights(postings.stored(ix)[1].analyzer(), bm25.clean_query(text))
        ahead = bm25.read_ahead(ix, sorted(qw) + ["zzz-not-a-term"])
        assert memo["rows"][1] == {r[0]: r for r in ahead}
        calls = []
        real = bm25.read_rows
        bm25.read_rows = lambda *a: calls.append(a) or real(*a)
        try:
            got_all = bm25.score_all(ix, text)
            got_ids = bm25.score_ids(ix, text, want_all[0][:7])
        finally:
            bm25.read_rows = real
        assert calls == []                                   # served from the rows read ahead
        assert got_all[0].tolist() == want_all[0].tolist() and got_all[2] == want_all[2]
        assert got_all[1].tobytes() == want_all[1].tobytes() and got_ids.tobytes() == want_ids.tobytes()
    memo.pop("rows", None)
    bm25.read_ahead(ix, ["alpha"])                           # rows that do not cover the query: read
    calls = []
    real = bm25.read_rows
    bm25.read_rows = lambda *a: calls.append(a) or real(*a)
    try:
        bm25.score_all(ix, " ".join(_queries()[0]))
    finally:
        bm25.read_rows = real
    assert len(calls) == 1
