"""The query pipeline end to end on small indexes the tests build: channels, fusion modes,
graph and intent signals, code queries, cache, explain/why, and the degradation paths."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SHOP, SHOP_CART_CHECKOUT, write_files

from kgsearch import query as pipeline
from kgsearch.cli import main
from kgsearch.errors import BadIndex, NotFound, UsageError
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine, SearchOptions
from kgsearch.store.db import Index

KG = {
    "nodes": [
        {"node_id": "sqlite", "name": "SQLite", "type": "tool", "description": "embedded SQL database engine in one file"},
        {"node_id": "wal", "name": "Write-ahead log", "type": "technique",
         "description": "journal mode that lets readers continue while a writer commits"},
        {"node_id": "locked", "name": "database is locked", "type": "problem",
         "description": "error raised when a second writer waits too long for the lock"},
        {"node_id": "busy_timeout", "name": "busy timeout", "type": "workaround",
         "description": "wait for the lock instead of failing at once"},
        {"node_id": "postgres", "name": "PostgreSQL", "type": "tool", "description": "client server SQL database"},
        {"node_id": "cron", "name": "cron", "type": "tool", "description": "runs commands on a schedule"},
    ],
    "edges": [
        {"source": "wal", "target": "sqlite", "edge_type": "part_of"},
        {"source": "locked", "target": "sqlite", "edge_type": "relates_to"},
        {"source": "locked", "target": "busy_timeout", "edge_type": "has_workaround"},
        {"source": "sqlite", "target": "postgres", "edge_type": "alternative_to"},
    ],
}

PKG = {
    **SHOP,
    "shop/cart.py": SHOP_CART_CHECKOUT,
    "tests/test_cart.py": '''\
        from shop.cart import Cart


        def test_add_item():
            """add_item puts the item into the cart."""
            Cart().add_item(1)
        ''',
}


@pytest.fixture
def kg_db(tmp_path):
    folder = tmp_path / "kg"
    folder.mkdir()
    (folder / "graph.json").write_text(json.dumps(KG))
    db = tmp_path / "kg.db"
    index_paths(db, [str(folder)], IndexOptions(steps=("text", "neighbors", "graph")))
    return db


@pytest.fixture
def code_db(tmp_path):
    root = tmp_path / "proj"
    write_files(root, PKG)
    db = tmp_path / "code.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "neighbors", "graph")))
    return db


def engine(db):
    return Engine(Index.open(db, readonly=True))


def test_search_without_model_degrades_to_text_and_graph(kg_db):
    r = engine(kg_db).search("database locked error", SearchOptions(use_cache=False))
    assert r.hits and r.hits[0].key == "kg:locked"
    assert "dense" not in r.channels_run and "dense" in r.channels_skipped
    assert "no vectors" in r.channels_skipped["dense"]
    assert r.intent["name"] == "debugging"
    assert set(r.timings_ms) >= {"intent", "bm25", "candidates", "fuse", "rank", "total"}


def test_weights_text_only_equals_bm25_order(kg_db):
    eng = engine(kg_db)
    bm = eng.search("sql database", SearchOptions(channels="bm25", use_cache=False, k=5))
    lin = eng.search("sql database", SearchOptions(channels="bm25,graph", weights="0,1,0,0", use_cache=False, k=5))
    # graph-reached nodes may follow, but the text order is BM25's
    assert [h.key for h in lin.hits][:len(bm.hits)] == [h.key for h in bm.hits]


def test_intent_edges_bring_in_the_workaround(kg_db):
    eng = engine(kg_db)
    r = eng.search("database is locked error", SearchOptions(use_cache=False, k=5))
    keys = [h.key for h in r.hits]
    # has_workaround is a debugging edge type: the workaround is credited through it
    assert "kg:busy_timeout" in keys
    hit = next(h for h in r.hits if h.key == "kg:busy_timeout")
    # the top seed (weight 1.0) points at it: forward credit 1.0 x 1.0
    assert hit.channels["intent"]["score"] == pytest.approx(1.0)
    assert "intent" in hit.methods


def test_rrf_mode_and_cap(kg_db):
    r = engine(kg_db).search("sqlite database", SearchOptions(fusion="rrf", use_cache=False, explain=True))
    assert r.fusion == "rrf" and r.hits
    top = r.hits[0]
    # every part is w / (60 + rank)
    for name, part in top.signals.items():
        assert 0 < part["part"] <= part["weight"] / 61 + 1e-12
    with pytest.raises(UsageError, match="unknown fusion 'x'"):
        engine(kg_db).search("q", SearchOptions(fusion="x", use_cache=False))


def test_unknown_channel_is_a_usage_error(kg_db):
    with pytest.raises(UsageError, match="unknown channel\\(s\\) nope"):
        engine(kg_db).search("q", SearchOptions(channels="bm25,nope"))


def test_failing_channel_is_skipped(kg_db, monkeypatch):
    import kgsearch.text.bm25 as bm25

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(bm25, "search", boom)
    monkeypatch.setattr(bm25, "score_all", boom)
    eng = Engine(Index.open(kg_db, readonly=True), strict=False)
    # another channel answers (fts, for a phrase): the answer goes on without bm25 and says so
    r = eng.search('"sqlite"', SearchOptions(use_cache=False))
    assert r.channels_skipped["bm25"] == "failed (RuntimeError: disk on fire)"
    assert "fts" in r.channels_run and any("channel bm25 failed" in n for n in r.notices)
    # no channel answers because they failed: never a quiet empty answer (issue 24), exit 4
    with pytest.raises(BadIndex, match="no search channel could read the index .*doctor --rebuild"):
        eng.search("sqlite", SearchOptions(use_cache=False))


def test_fts_missing_is_skipped(kg_db, monkeypatch):
    import kgsearch.text.fts as fts

    monkeypatch.setattr(fts, "available", lambda: False)
    r = engine(kg_db).search('"database is locked"', SearchOptions(use_cache=False))
    assert "fts" not in r.channels_run and r.hits


def test_result_cache_survives_processes_and_dies_with_reindex(kg_db, tmp_path):
    opts = SearchOptions(use_cache=True)
    r1 = engine(kg_db).search("sqlite wal", opts)
    r2 = engine(kg_db).search("sqlite wal", opts)        # a new engine: the cache is in the index
    assert not r1.cached and r2.cached
    assert [h.key for h in r2.hits] == [h.key for h in r1.hits]
    (tmp_path / "kg" / "more.json").write_text(json.dumps({"nodes": [{"node_id": "x", "name": "X"}]}))
    index_paths(kg_db, [str(tmp_path / "kg")], IndexOptions(steps=("text", "neighbors", "graph")))
    assert not engine(kg_db).search("sqlite wal", opts).cached


def test_result_cache_key_follows_the_equivalences_file_the_environment_and_the_code(kg_db, tmp_path, monkeypatch):
    """An edit to the equivalences file (read at query time), another model or memory budget, or
    an edited checkout (same version) answered from the cache with what they no longer rank."""
    from kgsearch import environment
    from kgsearch import version

    eq = tmp_path / "eq.json"
    eq.write_text(json.dumps({"write ahead log": ["WAL"]}))
    opts = SearchOptions(use_cache=True)
    with environment.configured(environment.Environment(equivalences=str(eq))):
        assert not engine(kg_db).search("sqlite wal", opts).cached
        assert engine(kg_db).search("sqlite wal", opts).cached
        eq.write_text(json.dumps({"write ahead log": ["WAL", "journal mode"]}))
        assert not engine(kg_db).search("sqlite wal", opts).cached
        assert engine(kg_db).search("sqlite wal", opts).cached
    with environment.configured(environment.Environment(equivalences=str(eq), memory_mb="512")):
        assert not engine(kg_db).search("sqlite wal", opts).cached
    with environment.configured(environment.Environment(equivalences=str(eq))):
        assert engine(kg_db).search("sqlite wal", opts).cached
        monkeypatch.setattr(version, "_stamp", "another checkout")
        assert not engine(kg_db).search("sqlite wal", opts).cached


def test_code_query_walk_hits_and_test_penalty(code_db):
    eng = engine(code_db)
    r = eng.search("apply_discount", SearchOptions(use_cache=False, k=10, explain=True))
    assert r.code_query
    assert r.hits[0].key == "py:shop.pricing.apply_discount"
    keys = [h.key for h in r.hits]
    # callers come in through the walk
    assert "py:shop.cart.Cart.add_item" in keys
    r2 = eng.search("add item to the cart", SearchOptions(use_cache=False, k=10))
    test_hit = [h for h in r2.hits if h.key.startswith("py:tests.")]
    real = [h for h in r2.hits if h.key == "py:shop.cart.Cart.add_item"]
    assert real and (not test_hit or test_hit[0].adjustments.get("test_or_vendored") == 0.3)
    r3 = eng.search("test add item", SearchOptions(use_cache=False, k=10))
    assert all("test_or_vendored" not in h.adjustments for h in r3.hits if h.key.startswith("py:tests."))


def test_pattern_channel_for_identifiers(code_db):
    r = engine(code_db).search("checkout_totl", SearchOptions(use_cache=False))
    assert "pattern" in r.channels_run
    assert r.hits[0].key == "py:shop.cart.Cart.checkout_total"
    plain = engine(code_db).search("total price", SearchOptions(use_cache=False))
    assert "pattern" not in plain.channels_run


def test_why_explains_rank_and_misses(kg_db):
    info = pipeline.why("database locked", "kg:locked", db=kg_db)
    assert info["rank"] == 1 and info["hit"]["channels"]["bm25"]["rank"] == 1
    miss = pipeline.why("database locked", "cron", db=kg_db)
    assert miss["rank"] is None and "no channel returned this node" in miss["reason"]
    with pytest.raises(NotFound, match="no node 'nothing-here'"):
        pipeline.why("x", "nothing-here", db=kg_db)


def test_cli_search_json_and_errors(kg_db, capsys):
    assert main(["search", "sqlite", "--db", str(kg_db), "--json", "-k", "3", "--explain"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hits"][0]["key"] == "kg:sqlite" and len(out["hits"]) <= 3
    assert {"channels", "signals", "score", "rank", "methods", "snippet"} <= set(out["hits"][0])
    assert main(["search", "x", "--db", str(kg_db), "--weights", "1,2"]) == 2
    assert "--weights needs 4 non-negative numbers" in capsys.readouterr().err
    assert main(["why", "sqlite", "no-such-node", "--db", str(kg_db)]) == 5
    assert main(["search", "sqlite", "--db", str(kg_db)]) == 0
    text = capsys.readouterr().out
    assert "1. SQLite  [tool]" in text and "fusion linear" in text
    # no hit: the query named when it has text ("no results for ''" for filters alone)
    assert main(["search", "zzzq", "--db", str(kg_db), "--channels", "bm25", "--no-cache"]) == 0
    assert capsys.readouterr().out.startswith("no results for 'zzzq'\n(intent ")
    assert main(["search", "kind:bogus", "--db", str(kg_db), "--no-cache"]) == 0
    got = capsys.readouterr()
    assert got.out.startswith("no results\n(intent ") and "no node matches the filters kind:bogus" in got.err


def test_dense_channel_with_shipped_model(tmp_path):
    from kgsearch.embed import load_model

    try:
        load_model()
    except Exception as exc:  # the shipped model must be present in a checkout
        pytest.fail(f"default model missing: {exc}")
    folder = tmp_path / "kg"
    folder.mkdir()
    (folder / "graph.json").write_text(json.dumps(KG))
    db = tmp_path / "d.db"
    index_paths(db, [str(folder)], IndexOptions())
    r = engine(db).search("relational database server", SearchOptions(use_cache=False, explain=True))
    assert "dense" in r.channels_run
    # every candidate has a dense score (fill-in), not only the dense channel's own top k
    assert all("dense" in h.channels for h in r.hits)

    # a query with no letter or digit in any script gave noise ranked as matches: '***' put a
    # node first by the punctuation's vector alone; accents, CJK and digits are words
    for q in ("***", "(((", "-> ::", "?!"):
        r = engine(db).search(q, SearchOptions(use_cache=False))
        assert (r.hits, r.channels_skipped["dense"]) == ([], "no letter or digit in the query"), q
    for q in ("café", "备份", "42"):
        assert "dense" in engine(db).search(q, SearchOptions(use_cache=False)).channels_run, q
    # asked for alone, the channel runs as it is told
    assert engine(db).search("***", SearchOptions(use_cache=False, channels="dense")).hits


from conftest import hypothesis_api  # noqa: E402

given, settings, st, HealthCheck = hypothesis_api()     # stand-ins that skip when hypothesis is missing


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.text(max_size=200) | st.sampled_from(['"', "/(/", "/a+/", "AND OR", "`x`", "a_b.c()", "NEAR(", "\x00"]))
def test_no_query_makes_the_pipeline_raise(kg_db, q):
    r = engine(kg_db).search(q, SearchOptions(use_cache=False, k=5))
    assert len(r.hits) <= 5
    assert all(np.isfinite(h.score) for h in r.hits)


def test_community_diversity_option(kg_db):
    eng = engine(kg_db)
    off = eng.search("sql database lock", SearchOptions(use_cache=False, k=6))
    assert all("diversity" not in h.adjustments for h in off.hits)
    on = eng.search("sql database lock", SearchOptions(use_cache=False, k=6, diversity=1.05))
    boosted = [h for h in on.hits if h.adjustments.get("diversity") == 1.05]
    assert boosted and len(on.hits) > 3


@pytest.mark.parametrize("which,query", [("kg", "database locked error"), ("kg", "sql database"),
                                         ("code", "apply_discount"), ("code", "add item to the cart")])
def test_explain_adds_up_to_every_score(kg_db, code_db, which, query):
    """score = (sum of the signal parts + additive adjustments) x multiplicative ones."""
    from kgsearch.cli.output import ADDITIVE_ADJUSTMENTS, format_response
    eng = engine(kg_db if which == "kg" else code_db)
    r = eng.search(query, SearchOptions(use_cache=False, k=10, explain=True))
    assert r.hits
    for h in r.hits:
        total = sum(s["part"] for s in h.signals.values())
        total += sum(v for n, v in h.adjustments.items() if n in ADDITIVE_ADJUSTMENTS)
        for n, v in h.adjustments.items():
            if n not in ADDITIVE_ADJUSTMENTS:
                total *= v
        assert h.score == pytest.approx(total, abs=1e-4), (h.key, h.signals, h.adjustments)
    if any("shift" in h.adjustments for h in r.hits):
        assert "+ shift" in format_response(r, explain=True)


def test_strict_mode_raises_what_the_default_skips(kg_db, monkeypatch):
    """A broken channel or fill-in function must not pass unnoticed: strict mode (the tests'
    default, KGSEARCH_STRICT=1) re-raises; the default engine skips it with the reason."""
    import kgsearch.embed.dense as scoring
    import kgsearch.text.bm25 as bm25

    def boom(*a, **k):
        raise RuntimeError("broken fill-in")

    monkeypatch.setattr(bm25, "score_all", boom)
    with pytest.raises(RuntimeError, match="broken fill-in"):
        Engine(Index.open(kg_db, readonly=True), strict=True).search("sqlite", SearchOptions(use_cache=False))
    from kgsearch import environment

    monkeypatch.setattr(environment, "_current", environment.Environment(strict=True))   # as the CLI reads it
    with pytest.raises(RuntimeError, match="broken fill-in"):
        engine(kg_db).search("sqlite", SearchOptions(use_cache=False))
    monkeypatch.setattr(environment, "_current", environment.Environment(strict=False))
    assert engine(kg_db).search("sqlite", SearchOptions(use_cache=False)).hits     # skipped: answered by search()
    monkeypatch.undo()
    monkeypatch.setattr(bm25, "score_ids", boom)
    lenient = Engine(Index.open(kg_db, readonly=True), strict=False)
    r = lenient.search("sqlite", SearchOptions(use_cache=False, norm="max"))
    assert r.hits                                 # bm25's top list came through; its fill-in was skipped
    with pytest.raises(RuntimeError, match="broken fill-in"):
        Engine(Index.open(kg_db, readonly=True), strict=True).search("sqlite", SearchOptions(use_cache=False,
                                                                                             norm="max"))
    assert scoring.score_ids is not None


def test_options_are_validated(kg_db):
    eng = engine(kg_db)
    for opts, msg in ((SearchOptions(norm="zz"), "unknown norm 'zz'"), (SearchOptions(k=0), "-k must be"),
                      (SearchOptions(depth=-1), "depth must be"), (SearchOptions(diversity=0), "--diversity must be")):
        with pytest.raises(UsageError, match=msg):
            eng.search("sqlite", opts)


@pytest.mark.parametrize("query,callers", [
    ("who calls apply_discount", {"py:shop.cart.Cart.add_item", "py:shop.cart.Cart.checkout_total"}),
    ("what calls `apply_discount`?", {"py:shop.cart.Cart.add_item", "py:shop.cart.Cart.checkout_total"}),
    ("where is Cart used", {"py:tests.test_cart.test_add_item"}),
])
def test_relation_questions_answer_from_the_edges(code_db, query, callers):
    r = engine(code_db).search(query, SearchOptions(use_cache=False, k=5))
    assert r.intent["name"] == "relation" and "relation" in r.channels_run
    assert callers <= {h.key for h in r.hits[:3]}, [h.key for h in r.hits]


def test_code_task_path_uses_exact_anchors_not_pattern_or_fts(code_db):
    issue = ('Cart.checkout_total returns the wrong "total" when a discount applies\n\n'
             "Calling `checkout_total` after `add_item` gives a price without the discount rules:\n"
             "```\nTraceback (most recent call last):\n  File \"/usr/lib/python3/site-packages/shop/pricing.py\", "
             "line 5, in apply_discount\n    return cart\nValueError: bad total\n```\n")
    r = engine(code_db).search(issue, SearchOptions(use_cache=False, k=5, explain=True))
    assert r.intent["name"] == "code_task"
    assert "anchors" in r.channels_run and "pattern" not in r.channels_run and "fts" not in r.channels_run
    assert r.channels_skipped["fts"].startswith("a code task")
    keys = [h.key for h in r.hits]
    assert keys[0] in ("py:shop.cart.Cart.checkout_total", "py:shop.pricing.apply_discount")
    assert not any(k.startswith("py:tests.") for k in keys[:3])
    files = engine(code_db).search(issue, SearchOptions(use_cache=False, k=3, group="file"))
    assert [h.kind for h in files.hits] == ["file"] * len(files.hits)
    assert files.hits[0].name in ("shop/cart.py", "shop/pricing.py") and files.hits[0].members


PROSE_ISSUE = ("the total of a shopping cart ignores the discount rules when the shop applies them after an "
               "item is added, so customers see the old price at the end and the receipt shows a wrong amount")


def test_an_issue_in_prose_is_a_code_task_in_a_code_index_only(code_db, tmp_path):
    """A paragraph with no code-shaped word (36 words) searched in an index mostly of code is a
    code task (anchors channel run, the code path's weights); in a notes index, and over a code
    index searched together with a larger notes index, it is the prose intent it reads as.
    query.code.code_share counts the nodes of files read by a code loader."""
    from kgsearch.query.code import code_share
    from kgsearch.query.multi import MultiEngine

    eng = engine(code_db)
    code, total = code_share(eng.ix.conn)
    assert (code, total) == eng.ix.conn.execute(
        "SELECT sum(CASE WHEN loader = 'python' THEN nodes ELSE 0 END), sum(nodes) FROM files").fetchone()
    assert 2 * code > total > 0
    r = eng.search(PROSE_ISSUE, SearchOptions(use_cache=False, k=5))
    assert r.intent["name"] == "code_task" and r.intent["reason"] == "36 words in an index mostly of code"
    assert "anchors" in r.channels_run
    assert eng.search(PROSE_ISSUE, SearchOptions(use_cache=False, k=5, intent="semantic")).intent["name"] == "semantic"
    notes = tmp_path / "notes"
    for i in range(40):
        write_files(notes, {f"n{i}.md": f"# Note {i}\n\nreceipts and prices of week {i}\n\n## Shop {i}\n\ncart {i}\n"})
    ndb = tmp_path / "notes.db"
    index_paths(ndb, [str(notes)], IndexOptions(steps=("text", "neighbors", "graph")))
    neng = engine(ndb)
    assert code_share(neng.ix.conn) == (0, 40)            # (a short note is one node)
    assert neng.search(PROSE_ISSUE, SearchOptions(use_cache=False, k=5)).intent["name"] == "semantic"
    both = MultiEngine({"code": engine(code_db), "notes": neng}).search(PROSE_ISSUE, SearchOptions(use_cache=False, k=5))
    assert both.intent["name"] == "semantic"          # the union is mostly notes


def test_walk_seeds_come_only_from_signals_that_ran(code_db, monkeypatch):
    """Without vectors the dense column is all zeros: seeding the walk from its 'top 10' took
    arbitrary candidates (issue 14). Seeds now come from the text signal alone."""
    from kgsearch.query import graph_stage as gs

    calls = []
    real = gs.top_idx

    def spy(s, k, positive=True, keys=None):
        calls.append(np.asarray(s).copy())
        return real(s, k, positive, keys)

    monkeypatch.setattr(gs, "top_idx", spy)
    r = engine(code_db).search("apply_discount", SearchOptions(use_cache=False))
    assert "dense" not in r.channels_run and r.code_query
    assert len(calls) == 1 and calls[0].any()


def test_a_query_of_filters_alone_lists_what_they_keep(kg_db, code_db):
    # 'kind:tool' or 'tag:journal' alone matched no word and answered "no results"
    from kgsearch.graph.context import pagerank_scores

    eng = engine(kg_db)
    pr = pagerank_scores(eng.ix)
    rows = eng.ix.conn.execute("SELECT id, key FROM nodes WHERE kind='tool'").fetchall()
    want = [key for nid, key in sorted(rows, key=lambda r: (-float(pr[r[0]]), r[0]))]
    alone = eng.search("kind:tool", SearchOptions(use_cache=False, channels="browse"))
    assert [h.key for h in alone.hits] == want          # the channel alone: PageRank order, ties by id
    r = eng.search("kind:tool", SearchOptions(use_cache=False))
    assert "browse" in r.channels_run and sorted(h.key for h in r.hits) == sorted(want)
    r = eng.search("", SearchOptions(use_cache=False, filters=("kind:tool",), k=2))
    assert len(r.hits) == 2 and {h.kind for h in r.hits} == {"tool"}
    # words: the other channels answer; no filter: nothing to list
    assert eng.search("kind:tool database", SearchOptions(use_cache=False)).channels_skipped["browse"] \
        == "the query has words"
    assert engine(code_db).search("path:shop/ kind:function", SearchOptions(use_cache=False)).hits[0].key \
        == "py:shop.pricing.apply_discount"


# ---------------------------------------------------------------- the query in the CLI's lines, as typed
@pytest.mark.parametrize("argv, says", [
    (["search", "zzzq C:\\dir", "--channels", "bm25", "--no-cache"], "no results for 'zzzq C:\\dir'\n(intent "),
    (["why", "sqlite C:\\dir", "kg:sqlite"], "\nquery 'sqlite C:\\dir': intent "),
    (["feedback", "sqlite C:\\dir", "kg:sqlite", "--useful"], "recorded: kg:sqlite useful for 'sqlite C:\\dir' ("),
])
def test_cli_lines_quote_the_query_as_typed(kg_db, capsys, argv, says):
    """`no results for`, `why`'s `query ...:` line and `recorded: ... for` showed the typed
    query with repr: a backslash came back doubled ('C:\\\\dir')."""
    assert main([*argv, "--db", str(kg_db)]) == 0
    assert says in capsys.readouterr().out


def test_cli_json_keeps_the_query_raw(kg_db, capsys):
    assert main(["search", "zzzq C:\\dir", "--channels", "bm25", "--no-cache", "--json", "--db", str(kg_db)]) == 0
    assert json.loads(capsys.readouterr().out)["query"] == "zzzq C:\\dir"
