"""Communities with extractive summaries (kgsearch.explore.topics): the c-TF-IDF kernel against
its slow twin, the postings read against a row-by-row decode, every demo community summarised,
the global answer naming the three largest topics, and the ``communities`` command."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kgsearch.explore.topics import _top_terms, community_terms, ctfidf, ctfidf_ref


def test_ctfidf_equals_the_reference():
    rng = np.random.default_rng(4)
    for _ in range(30):
        m = int(rng.integers(1, 300))
        term, lab = rng.integers(0, 25, m), rng.integers(0, 6, m)
        tf = rng.choice([1.0, 2.0, 3.0, 0.5], m)
        pt, pl, w = ctfidf(term, lab, tf, 6)
        ref = ctfidf_ref(list(zip(term.tolist(), lab.tolist(), tf.tolist())))
        got: dict[int, list] = {}
        for t, c, x in zip(pt.tolist(), pl.tolist(), w.tolist()):
            got.setdefault(c, []).append((t, x))
        assert got.keys() == ref.keys()
        for c in ref:
            assert [t for t, _ in got[c]] == [t for t, _ in ref[c]]
            assert np.allclose([x for _, x in got[c]], [x for _, x in ref[c]])


def test_ctfidf_by_hand():
    # term 0 only in community 0, term 1 everywhere: A = mean size = 3, f_0 = 2, f_1 = 4
    pt, pl, w = ctfidf([0, 1, 1], [0, 0, 1], [2.0, 1.0, 3.0], 2)
    got = {(t, c): x for t, c, x in zip(pt.tolist(), pl.tolist(), w.tolist())}
    assert got[(0, 0)] == pytest.approx(2 / 3 * math.log(1 + 3 / 2))
    assert got[(1, 0)] == pytest.approx(1 / 3 * math.log(1 + 3 / 4))
    assert got[(1, 1)] == pytest.approx(1.0 * math.log(1 + 3 / 4))
    assert pt.tolist()[:2] == [0, 1]                  # community 0: the distinctive term first


def test_top_terms_drop_digits_short_words_and_pieces():
    assert _top_terms(["search", "25", "bm", "bm25", "sq", "lite", "sqlite", "index"], 5) == \
        ["search", "bm25", "sqlite", "index"]


@pytest.fixture(scope="module")
def demo_ix(tmp_path_factory):
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    db = tmp_path_factory.mktemp("topics") / "demo.db"
    index_paths(db, [str(demo_dir())], IndexOptions(steps=("text", "neighbors", "graph")))
    ix = Index.open(db, readonly=True)
    yield ix
    ix.close()


def test_community_terms_read_every_posting(demo_ix):
    from kgsearch.graph.context import community_labels
    from kgsearch.text.idcodec import decode_ids, decode_tf

    lab = community_labels(demo_ix).astype(np.int64)
    k = int(lab.max()) + 1
    names, best = community_terms(demo_ix, lab, k, per=10_000)
    post = []
    for term, df, ids, tf in demo_ix.conn.execute("SELECT term, df, ids, tf FROM text_postings WHERE df >= 2"):
        for i, f in zip(decode_ids(ids).tolist(), decode_tf(tf, df).tolist()):
            if lab[i] >= 0:
                post.append((term, int(lab[i]), f))
    index = {t: i for i, t in enumerate(sorted({p[0] for p in post}))}
    ref = ctfidf_ref([(index[t], c, f) for t, c, f in post])
    for c, rows in ref.items():
        got = {names[t]: w for t, w in best[c]}
        want = {t: w for t, w in ((sorted(index)[i], w) for i, w in rows)}
        assert got.keys() == want.keys()
        assert all(got[t] == pytest.approx(want[t]) for t in want)


def test_every_demo_community_is_summarised(demo_ix):
    from kgsearch.explore import communities
    from kgsearch.graph.context import community_labels

    res = communities(demo_ix)
    lab = community_labels(demo_ix)
    sizes = np.bincount(lab[lab >= 0])
    assert res["total"] == int((sizes > 0).sum()) == len(res["communities"]) >= 4
    assert [c["size"] for c in res["communities"]] == sorted(sizes[sizes > 0].tolist(), reverse=True)
    for c in res["communities"]:
        assert c["label"] and c["central"] and len(c["terms"]) >= 3
        assert c["sentence"] is not None and len(c["sentence"]["text"].split()) >= 6
        members = {int(i) for i in np.flatnonzero(lab == c["id"])}
        ids = {demo_ix.node_by_key(n["key"]) for n in c["central"]}
        assert ids <= members                                  # central nodes are members
        assert demo_ix.node_by_key(c["sentence"]["key"]) in members
    assert communities(demo_ix, limit=2)["shown"] == 2


def test_global_answer_names_the_three_largest_topics(demo_ix):
    from kgsearch.explore import global_answer
    from kgsearch.graph.context import community_labels, pagerank_scores

    ans = global_answer(demo_ix, "what are the main topics in my notes")
    lab = community_labels(demo_ix)
    sizes = np.bincount(lab[lab >= 0])
    largest = np.argsort(-sizes, kind="stable")[:3]
    assert [t["id"] for t in ans["topics"][:3]] == largest.tolist()
    text = ans["answer"]
    for rank, c in enumerate(ans["topics"][:3], 1):
        assert f"{rank}. {c['label']} (" in text and f"{c['size']:,} nodes" in text
        assert all(t in text for t in c["terms"][:3])
    # the label's first name is a high-PageRank member of its community, not a tag or entity
    rows = dict(demo_ix.conn.execute("SELECT key, kind FROM nodes"))
    assert all(rows[t["central"][0]["key"]] not in ("tag", "entity", "placeholder", "section")
               for t in ans["topics"])
    assert pagerank_scores(demo_ix) is not None


def test_communities_command(demo_ix, capsys):
    from kgsearch.cli import main

    assert main(["communities", "--db", str(demo_ix.path), "--limit", "2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("  1. ") and "terms: " in text and "more: --limit 0 for all" in text
    assert main(["communities", "--db", str(demo_ix.path), "--json", "--limit", "0"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["shown"] == d["total"]


def test_no_communities_says_why(tmp_path):
    from kgsearch.explore import communities
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    (tmp_path / "a.md").write_text("# A\n\nLinks to [[b]].\n")
    db = tmp_path / "x.db"
    index_paths(db, [str(tmp_path / "a.md")], IndexOptions(steps=("text", "graph"),
                                                            settings={"graph_communities_max_pairs": 0}))
    with Index.open(db, readonly=True) as ix:
        res = communities(ix)
    assert res["communities"] == [] and "no communities in this index: skipped" in res["notice"]
