"""Several indexes searched as one (kgsearch/query/multi.py): BM25 with pooled statistics scores
exactly as one index of the union; with the channels whose scores can be pooled (bm25, dense)
the two-index ranking IS the one-index ranking; hits name their index; the CLI (--db twice and
$KGSEARCH_DB), context, the HTTP API and the MCP server over several indexes."""
from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from conftest import no_timings, write

from kgsearch.cli import main
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine, SearchOptions
from kgsearch.query.merge import merge
from kgsearch.query.multi import MultiEngine, MultiHit, Pool, _share_out, index_names
from kgsearch.store.db import Index

WORDS = ("graph search index query vector note battery sync phone backup storage kernel cache rank "
         "token model neighbour walk page score cluster entity sqlite python android offline laptop "
         "memory budget stemmer posting channel fusion intent seed edge weight").split()
QUERIES = ["graph search rank", "battery sync phone", "sqlite index cache", "vector model token",
           "offline laptop backup storage", "entity edge weight walk"]


def corpus(rng: random.Random, n: int) -> list[dict]:
    docs = []
    for i in range(n):
        k = rng.randint(6, 40)
        words = [rng.choice(WORDS[:12] if i % 3 == 0 else WORDS) for _ in range(k)]
        docs.append({"_id": f"d{i}", "title": " ".join(words[:3]), "text": " ".join(words[3:])})
    return docs


def write_corpus(path, docs):
    """``docs`` as a BEIR corpus.jsonl at ``path`` (conftest's write, one JSON record a line)."""
    write(path, "".join(json.dumps(d) + "\n" for d in docs))


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("multi")
    rng = random.Random(7)
    docs = corpus(rng, 120)
    side = [rng.random() < 0.5 for _ in docs]
    write_corpus(tmp / "one" / "corpus.jsonl", docs)
    write_corpus(tmp / "a" / "corpus.jsonl", [d for d, s in zip(docs, side) if s])
    write_corpus(tmp / "b" / "corpus.jsonl", [d for d, s in zip(docs, side) if not s])
    dbs = {}
    for tag in ("one", "a", "b"):
        dbs[tag] = tmp / f"{tag}.db"
        index_paths(dbs[tag], [str(tmp / tag / "corpus.jsonl")], IndexOptions(fmt="beir"))
    return tmp, dbs


@pytest.fixture(scope="module")
def engines(split):
    _, dbs = split
    ixs = {t: Index.open(p, readonly=True) for t, p in dbs.items()}
    yield {t: Engine(ix) for t, ix in ixs.items()}
    for ix in ixs.values():
        ix.close()


def test_pooled_bm25_scores_are_the_one_index_scores(engines):
    from kgsearch.text import bm25

    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    for q in QUERIES:
        pooled = multi._bm25_pool(q, [])
        assert pooled is not None and pooled["n"] == 120
        want = {}
        ids, sc, _ = bm25.score_all(engines["one"].ix, q)
        keys = dict(engines["one"].ix.conn.execute("SELECT id, key FROM nodes"))
        want = {keys[i]: s for i, s in zip(ids.tolist(), sc.tolist())}
        got = {}
        for t in ("a", "b"):
            ids, sc, n = bm25.score_all(engines[t].ix, q, pooled=pooled)
            k = dict(engines[t].ix.conn.execute("SELECT id, key FROM nodes"))
            got.update({k[i]: s for i, s in zip(ids.tolist(), sc.tolist())})
            ids2 = ids[:5]
            assert bm25.score_ids(engines[t].ix, q, ids2, pooled=pooled).tolist() == pytest.approx(sc[:5].tolist(),
                                                                                                  rel=1e-12)
        assert set(got) == set(want)
        for key, s in want.items():
            assert got[key] == pytest.approx(s, rel=1e-9), (q, key)
        unpooled = {}
        for t in ("a", "b"):
            ids, sc, _ = bm25.score_all(engines[t].ix, q)
            k = dict(engines[t].ix.conn.execute("SELECT id, key FROM nodes"))
            unpooled.update({k[i]: s for i, s in zip(ids.tolist(), sc.tolist())})
        assert any(abs(unpooled[key] - s) > 1e-6 for key, s in want.items())      # pooling did something


@pytest.mark.parametrize("channels", ["bm25", "bm25,dense", "dense"])
def test_two_indexes_rank_as_one_with_pooled_channels(engines, channels):
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    opts = SearchOptions(k=10, channels=channels, use_cache=False)
    for q in QUERIES:
        one = engines["one"].search(q, opts)
        two = multi.search(q, opts)
        assert [h.key for h in two.hits] == [h.key for h in one.hits], q
        # the same fused scores; the shift that lifts the weakest candidate to 0 depends on which
        # candidates each side looked at (an offset common to all hits, shown as "shift")
        unshifted = lambda r: [h.score - h.adjustments.get("shift", 0.0) for h in r.hits]  # noqa: E731
        assert unshifted(two) == pytest.approx(unshifted(one), abs=1e-5)
        assert all(isinstance(h, MultiHit) and h.index in ("a", "b") for h in two.hits)
        for h in two.hits:                                   # each hit is a node of the index it names
            assert engines[h.index].ix.conn.execute("SELECT id FROM nodes WHERE key=?", (h.key,)).fetchone()[0] == h.id


def test_default_pipeline_hits_are_ranked_and_named(engines):
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    flipped = MultiEngine({"b": engines["b"], "a": engines["a"]})
    for q in QUERIES:
        r = multi.search(q, SearchOptions(k=8, use_cache=False, explain=True))
        assert [h.rank for h in r.hits] == list(range(1, len(r.hits) + 1))
        assert [h.score for h in r.hits] == sorted((h.score for h in r.hits), reverse=True)
        assert {i["name"] for i in r.indexes} == {"a", "b"}
        d = r.as_dict()
        assert all(h["index"] in ("a", "b") for h in d["hits"])
        f = flipped.search(q, SearchOptions(k=8, use_cache=False))
        assert [(h.index, h.key, h.score) for h in f.hits] == [(h.index, h.key, h.score) for h in r.hits] or \
            sorted(h.score for h in f.hits) == pytest.approx(sorted(h.score for h in r.hits))


def test_indexes_in_threads_rank_exactly_as_in_turn(engines):
    # MultiEngine(threads=True) runs each index's search in its own thread (an engine is used by one
    # thread at a time): the answers are the ones the indexes give in turn, to the last digit,
    # explain parts included, query after query on the same pool of threads
    turn = MultiEngine({"a": engines["a"], "b": engines["b"]})
    threaded = MultiEngine({"a": engines["a"], "b": engines["b"]}, threads=True)
    try:
        for _ in range(2):
            for q in QUERIES + ["kernel", "note phone sync battery backup offline"]:
                opts = SearchOptions(k=8, use_cache=False, explain=True)
                want, got = turn.search(q, opts), threaded.search(q, opts)
                assert [h.as_dict() for h in got.hits] == [h.as_dict() for h in want.hits], q
                assert got.candidates == want.candidates and got.channels_run == want.channels_run
        assert threaded._executor is not None           # (the threads did run)
    finally:
        threaded._executor.shutdown()


def test_merge_puts_every_index_on_the_union_floor():
    # hand-computed: index a lifted its scores by 0.5, b by 1.5 (the union's floor); a's first
    # hit has a 0.8 factor on top: (2.0 + 1.5) * 0.8 = 2.8 on the floor, its second 1.0 + 1.0 = 2.0
    built = []

    def builder(name):
        def build(positions, hit_class):
            built.append((name, list(positions)))
            return [hit_class(id=p, key=f"{name}{p}", kind="doc", name="n", score=0.0, adjustments={})
                    for p in positions]
        return build

    pools = {"a": Pool(ranked=[(7, (2.0 + 0.5) * 0.8, 0.5, 0.8), (3, 1.0 + 0.5, 0.5, 1.0)], build=builder("a")),
             "b": Pool(ranked=[(4, 2.9, 1.5, 1.0), (9, 2.0, 1.5, 1.0), (1, 0.1, 1.5, 1.0)], build=builder("b"))}
    hits = merge({"a": None, "b": None}, pools, 4, MultiHit)
    assert [(h.index, h.key) for h in hits] == [("b", "b4"), ("a", "a7"), ("a", "a3"), ("b", "b9")]
    assert [h.score for h in hits] == pytest.approx([2.9, 2.8, 2.5, 2.0])
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert all(h.adjustments["shift"] == 1.5 for h in hits)
    assert sorted(built) == [("a", [7, 3]), ("b", [4, 9])]        # only the kept hits are built
    assert index_names(["x/a.db", "y/a.db", "b"]) == ["a", "a-2", "b"]


def test_group_by_file_over_two_indexes(engines):
    # grouped answers are built by each index (not deferred) and merged on the same floor
    r = MultiEngine({"a": engines["a"], "b": engines["b"]}).search("battery sync phone",
                                                                   SearchOptions(k=5, group="file", use_cache=False))
    assert r.hits and {h.index for h in r.hits} <= {"a", "b"}
    assert [h.rank for h in r.hits] == list(range(1, len(r.hits) + 1))


def test_query_encoded_once_for_indexes_of_one_model(engines, monkeypatch):
    from kgsearch.embed import dense
    from kgsearch.embed.index_model import query_model

    ixs = [engines["a"].ix, engines["b"].ix]
    q = "battery sync phone"
    for ix in ixs:
        ix._cache.pop(dense._QKEY, None)
    alone = [dense.query_vector(ix, q) for ix in ixs]           # each encodes it
    model = query_model(ixs[0])
    calls = []
    orig = type(model).encode
    monkeypatch.setattr(type(model), "encode", lambda self, texts, *a, **k: calls.append(1) or orig(self, texts, *a, **k))
    for ix in ixs:
        ix._cache.pop(dense._QKEY, None)
    assert dense.share_query_vector(ixs, q) == 1
    assert len(calls) == 1
    for ix, want in zip(ixs, alone):
        assert dense.query_vector(ix, q).tolist() == want.tolist()    # the vector each would encode
    assert len(calls) == 1


def test_different_analysers_or_models_are_said(split, engines, tmp_path, monkeypatch):
    tmp, dbs = split
    light = tmp_path / "light.db"
    index_paths(light, [str(tmp / "b" / "corpus.jsonl")], IndexOptions(fmt="beir", settings={"stemmer": "light",
                                                                                             "embed": False}))
    with Index.open(light, readonly=True) as ix:
        multi = MultiEngine({"a": engines["a"], "light": Engine(ix)})
        r = multi.search("graph search", SearchOptions(channels="bm25", use_cache=False))
        assert any("analyse text differently" in n for n in r.notices)
        parsed = multi._parsed("running searches")                  # each analyser parses it once
        assert parsed["a"].terms != parsed["light"].terms
        same = MultiEngine({"a": engines["a"], "b": engines["b"]})._parsed("running searches")
        assert same["a"] is same["b"]
    ix_b = engines["b"].ix
    real = Index.meta
    # (patched on the class, for b alone: a pytest without the fix of pytest-dev/pytest#10644
    # (setup.cfg allows pytest 7) undoes a method patched on the instance by leaving the bound
    # method in the instance's dict, which hides every later patch of Index.meta from b)
    monkeypatch.setattr(Index, "meta", lambda self, k, d=None: "other-model@1" if self is ix_b and k == "model_id"
                        else real(self, k, d))
    monkeypatch.setitem(ix_b._cache, "embed.model_id", (ix_b.generation, "other-model@1"))   # (read once a generation)
    r = MultiEngine({"a": engines["a"], "b": engines["b"]}).search("graph search",
                                                                   SearchOptions(channels="bm25", use_cache=False))
    assert any("different embedding models" in n for n in r.notices)


# --------------------------------------------------------------------------- the command line, context, servers
def cli_json(capsys, monkeypatch, *args, env=None):
    if env is not None:
        monkeypatch.setenv("KGSEARCH_DB", env)
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 and out.out.strip() else None), out.err


@pytest.mark.parametrize("command", [["stats"], ["communities"], ["export", "jsonl", "-"], ["show", "md:x"],
                                     ["impact", "md:x"], ["roots"], ["index"]])
def test_a_one_index_command_given_two_dbs_says_so(command, split, capsys):
    """`kgsearch stats --db A --db B` used B alone, silently (its --db was a plain option: the
    last one won); docs/multi-index.md says such a command exits 2 naming them."""
    from conftest import run

    _, dbs = split
    rc, out, err = run(*command, "--db", dbs["a"], "--db", dbs["b"])
    assert (rc, out) == (2, "")
    assert err == (f"error: `kgsearch {command[0]}` works on one index, and --db names 2 ({dbs['a']}, {dbs['b']}); "
                   f"pass the one with --db PATH (several indexes are for search, why, context, serve, mcp, link)\n")
    rc, out, _ = run("stats", "--db", dbs["a"], "--db", dbs["a"], "--json")     # the same one twice is one
    assert rc == 0 and json.loads(out)["nodes"] > 0


def test_cli_search_over_two_indexes(split, capsys, monkeypatch):
    import os

    _, dbs = split
    code, a, _ = cli_json(capsys, monkeypatch, "search", "battery sync phone", "--db", str(dbs["a"]),
                          "--db", str(dbs["b"]), "--json", "--no-cache")
    assert code == 0 and {h["index"] for h in a["hits"]} == {"a", "b"}
    assert [i["name"] for i in a["indexes"]] == ["a", "b"]
    code, b, _ = cli_json(capsys, monkeypatch, "search", "battery sync phone", "--json", "--no-cache",
                          env=os.pathsep.join([str(dbs["a"]), str(dbs["b"])]))
    assert code == 0 and no_timings(b) == no_timings(a)
    code, _, err = cli_json(capsys, monkeypatch, "stats")
    assert code == 2 and "works on one index" in err and "$KGSEARCH_DB names 2" in err
    code, _, _ = cli_json(capsys, monkeypatch, "--db", str(dbs["a"]), "stats", "--json")
    assert code == 0                                        # --db picks one, whatever the environment says
    capsys.readouterr()
    assert main(["search", "battery sync phone", "-k", "3"]) == 0
    text = capsys.readouterr().out
    assert any(line.strip().startswith(("a: doc:", "b: doc:")) for line in text.splitlines())


def test_context_over_two_indexes(split, capsys, monkeypatch):
    _, dbs = split
    code, d, _ = cli_json(capsys, monkeypatch, "context", "offline laptop backup storage", "--db", str(dbs["a"]),
                          "--db", str(dbs["b"]), "--json", "--budget", "4000")
    assert code == 0 and d["items"]
    assert {it["index"] for it in d["items"]} == {"a", "b"}
    assert d["used"] <= 4000


def test_context_over_two_indexes_holding_the_same_key(tmp_path, capsys, monkeypatch):
    """Two vaults each with a README.md (key md:README in both): the context packs both notes,
    each naming its index (it raised TypeError comparing two items of one key)."""
    dbs = []
    for tag in ("notes", "work"):
        root = tmp_path / tag
        root.mkdir()
        (root / "README.md").write_text(f"# Backup\n\nthe {tag} backup runs at night and syncs the phone\n",
                                        encoding="utf-8")
        dbs.append(tmp_path / f"{tag}.db")
        index_paths(dbs[-1], [str(root)], IndexOptions())
    code, d, _ = cli_json(capsys, monkeypatch, "context", "backup phone", "--db", str(dbs[0]), "--db", str(dbs[1]),
                          "--json")
    assert code == 0
    assert sorted((it["index"], it["key"]) for it in d["items"]) == [("notes", "md:README"), ("work", "md:README")]


def test_context_files_from_two_indexes(tmp_path, capsys, monkeypatch):
    """``context --files`` naming a file of each index packs both (it raised "no index holds all
    of ..."); a file in neither index is an error that names it."""
    dbs = []
    for tag, rel, src in (("app", "app/core.py", "def serve(port):\n    return port + 1\n"),
                          ("lib", "lib/util.go", "package lib\n\nfunc Retry(n int) int {\n\treturn n\n}\n")):
        (tmp_path / tag).mkdir()
        (tmp_path / rel).write_text(src, encoding="utf-8")
        dbs.append(tmp_path / f"{tag}.db")
        index_paths(dbs[-1], [str(tmp_path / tag)], IndexOptions(steps=("text", "graph")))
    files = [str(tmp_path / "app/core.py"), str(tmp_path / "lib/util.go")]
    code, d, err = cli_json(capsys, monkeypatch, "context", "--files", *files, "--db", str(dbs[0]),
                            "--db", str(dbs[1]), "--json", "--budget", "4000")
    assert code == 0, err
    got = {(it["index"], it["key"]) for it in d["items"]}
    assert {("app", "py:core.serve"), ("lib", "go:util.go:Retry")} <= got
    assert d["mode"] == "files" and "note: from the indexes app (" in err and "; lib (" in err
    (tmp_path / "stray.py").write_text("x = 1\n", encoding="utf-8")
    code, _, err = cli_json(capsys, monkeypatch, "context", "--files", files[0], str(tmp_path / "stray.py"),
                            "--db", str(dbs[0]), "--db", str(dbs[1]), "--json")
    assert code != 0 and "stray.py" in err and "none of the indexes" in err
    code, d, err = cli_json(capsys, monkeypatch, "context", "--files", files[1], "--db", str(dbs[0]),
                            "--db", str(dbs[1]), "--json")
    assert code == 0 and "go:util.go:Retry" in {it["key"] for it in d["items"]}
    assert "note: from the index lib (not in app" in err                    # one index holds them: as before


def test_http_api_over_two_indexes(split, capsys, monkeypatch):
    from kgsearch.serve import App, Holder

    _, dbs = split
    app = App({"a": Holder(str(dbs["a"])), "b": Holder(str(dbs["b"]))})
    # the first search over a pair of indexes may link their lists and say so (a notice the next
    # search, the CLI's, does not repeat): run alone, this test compared that first answer
    app.handle("GET", "/api/search?q=warm&k=1", {})
    st, _, body = app.handle("GET", "/api/search?q=graph+search+rank&k=5", {})
    assert st == 200
    code, want, _ = cli_json(capsys, monkeypatch, "search", "graph search rank", "-k", "5", "--db", str(dbs["a"]),
                             "--db", str(dbs["b"]), "--json", "--no-cache")
    assert no_timings(json.loads(body)) == no_timings(want)
    hit = next(h for h in want["hits"] if h["index"] == "b")
    from urllib.parse import quote

    st, _, page = app.handle("GET", f"/node?node={quote(hit['key'], safe='')}&db=b", {})
    assert st == 200 and hit["name"].split()[0].encode() in page
    st, _, page = app.handle("GET", "/?q=graph+search+rank", {})
    assert st == 200 and b"&amp;db=" in page                      # result links name their index
    st, _, body = app.handle("GET", "/api/context?task=graph+search&budget=3000", {})
    assert st == 200 and {it["index"] for it in json.loads(body)["items"]} <= {"a", "b"}


def test_mcp_over_two_indexes(split):
    from kgsearch.mcp.multi import MultiServer

    _, dbs = split
    srv = MultiServer([str(dbs["a"]), str(dbs["b"])])
    res = srv.call("search", {"query": "sqlite index cache", "k": 6})
    assert not res["isError"] and {h["index"] for h in res["structuredContent"]["hits"]} <= {"a", "b"}
    only_b = next(h for h in res["structuredContent"]["hits"] if h["index"] == "b")
    with Index.open(dbs["a"], readonly=True) as ix:
        in_a = ix.conn.execute("SELECT 1 FROM nodes WHERE key=?", (only_b["key"],)).fetchone()
    res = srv.call("show", {"node": only_b["key"]})
    assert not res["isError"] and res["structuredContent"]["index"] == ("a" if in_a else "b")
    res = srv.call("stats", {})
    assert [i["index"] for i in res["structuredContent"]["indexes"]] == ["a", "b"]
    res = srv.call("show", {"node": "no-such-node-anywhere"})
    assert res["isError"] and "any of the indexes" in res["content"][0]["text"]


@pytest.fixture(scope="module")
def twin_vaults(tmp_path_factory):
    """Two vaults that each hold README.md (the key md:README in both); only work's is linked to."""
    tmp = tmp_path_factory.mktemp("twins")
    dbs = []
    for tag in ("notes", "work"):
        root = tmp / tag
        root.mkdir()
        (root / "README.md").write_text(f"# Backup\n\nthe {tag} backup runs at night\n", encoding="utf-8")
        (root / f"{tag}-plan.md").write_text(f"# Plan\n\nthe {tag} plan, see [[README]]\n" if tag == "work"
                                             else "# Plan\n\nthe notes plan stands alone\n", encoding="utf-8")
        dbs.append(tmp / f"{tag}.db")
        index_paths(dbs[-1], [str(root)], IndexOptions())
    return dbs


def test_mcp_node_tools_over_two_indexes_take_the_index_a_hit_names(twin_vaults):
    """show/related/why/feedback/path/impact over several indexes answer from the index their
    ``index`` argument names; path and impact looked only at the first index before (silently:
    a node of the second was "not found"), and a hit of the second index whose key the first
    also holds could not be opened."""
    from kgsearch.mcp import Server
    from kgsearch.mcp.multi import MultiServer

    srv = MultiServer([str(p) for p in twin_vaults])
    listed = {t["name"]: t for t in srv.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                                "params": {"_meta": {"io.modelcontextprotocol/protocolVersion":
                                                                     "2026-07-28"}}})["result"]["tools"]}
    for name in ("why", "show", "related", "feedback", "path", "impact", "communities"):
        assert listed[name]["inputSchema"]["properties"]["index"]["enum"] == ["notes", "work"], name
    assert "index" not in listed["search"]["inputSchema"]["properties"]
    assert all("index" not in t["inputSchema"].get("properties", {}) for t in Server(str(twin_vaults[0])).tools)

    def call(name, args):
        res = srv.call(name, args)
        return res["isError"], res.get("structuredContent"), res["content"][0]["text"]

    err, d, _ = call("show", {"node": "md:README", "index": "work", "detail": "full"})
    assert not err and d["index"] == "work" and "work backup" in d["node"]["text"]
    err, d, _ = call("show", {"node": "md:README", "detail": "full"})
    assert not err and d["index"] == "notes" and "notes backup" in d["node"]["text"]     # the first that has it
    err, d, _ = call("impact", {"node": "md:README", "index": "work"})
    assert not err and d["index"] == "work" and [x["key"] for x in d["dependents"]] == ["md:work-plan"]
    err, d, _ = call("impact", {"node": "md:work-plan"})                                   # only work has it
    assert not err and d["index"] == "work"
    err, d, _ = call("path", {"source": "md:work-plan", "target": "md:README"})
    assert not err and d["index"] == "work" and d["paths"][0]["hops"] == 1
    err, d, text = call("impact", {"node": "md:work-plan", "index": "notes"})
    assert err and "no node 'md:work-plan' in index notes" in text
    err, d, text = call("show", {"node": "md:README", "index": "elsewhere"})
    assert err and "one of notes, work" in text
    err, d, _ = call("communities", {})
    one = {n: Server(str(p)).call("communities", {})["structuredContent"] for n, p in zip(("notes", "work"),
                                                                                          twin_vaults)}
    assert d["total"] == one["notes"]["total"] + one["work"]["total"]
    assert sorted((c["index"], c["id"]) for c in d["communities"]) == sorted(
        (n, c["id"]) for n, o in one.items() for c in o["communities"])
    assert [c["size"] for c in d["communities"]] == sorted((c["size"] for c in d["communities"]), reverse=True)


def test_why_over_two_indexes_is_the_rank_in_the_one_ranking(twin_vaults, capsys, monkeypatch):
    """`why` over several indexes: the node's rank in the ranking `search` gave over all of them
    (it gave its rank in its own index alone, and a `top` the agent never saw)."""
    from kgsearch.mcp.multi import MultiServer
    from kgsearch.query.api import why_over
    from kgsearch.query.multi import multi_engine_for

    multi = multi_engine_for([str(p) for p in twin_vaults])
    hits = multi.search("backup plan night", SearchOptions(k=10, use_cache=False)).hits
    assert {h.index for h in hits} == {"notes", "work"}
    for h in hits:
        d = why_over(multi, "backup plan night", h.key, h.index, SearchOptions(k=10))
        assert (d["index"], d["rank"], d["node"]["key"]) == (h.index, h.rank, h.key)
        assert [(t["index"], t["key"], t["rank"]) for t in d["top"]] == [(x.index, x.key, x.rank) for x in hits]
    last = hits[-1]
    code, d, _ = cli_json(capsys, monkeypatch, "why", "backup plan night", last.key, "--index", last.index,
                          "--db", str(twin_vaults[0]), "--db", str(twin_vaults[1]), "--json")
    assert code == 0 and (d["index"], d["rank"]) == (last.index, last.rank)
    capsys.readouterr()
    assert main(["why", "backup plan night", "md:README", "--db", str(twin_vaults[0]), "--db", str(twin_vaults[1])]) == 0
    text = capsys.readouterr().out
    assert text.startswith("notes: README [note] md:README") and "work: " in text
    assert main(["why", "backup", "md:README", "--index", "elsewhere", "--db", str(twin_vaults[0]), "--db",
                 str(twin_vaults[1])]) == 2
    assert "no index named 'elsewhere'; the indexes are notes, work" in capsys.readouterr().err
    assert main(["why", "backup", "md:README", "--index", "notes", "--db", str(twin_vaults[0])]) == 2
    from kgsearch.serve import App, Holder

    app = App({"notes": Holder(str(twin_vaults[0])), "work": Holder(str(twin_vaults[1]))})
    st, _, body = app.handle("GET", f"/api/why?q=backup+plan+night&node={last.key}&db={last.index}", {})
    assert st == 200 and no_timings(json.loads(body)) == no_timings(d)          # = the CLI's --json
    st, _, body = app.handle("GET", "/api/why?q=backup&node=md:README&db=elsewhere", {})
    assert st == 400 and "no index named 'elsewhere'" in json.loads(body)["error"]
    srv = MultiServer([str(p) for p in twin_vaults])
    res = srv.call("why", {"query": "backup plan night", "node": last.key, "index": last.index})
    assert not res["isError"] and res["structuredContent"]["rank"] == last.rank
    assert res["structuredContent"]["index"] == last.index


@pytest.mark.parametrize("name, args", [
    ("search", {"query": "backup plan"}), ("context", {"task": "backup plan", "budget": 800}),
    ("why", {"query": "backup", "node": "md:README", "index": "work"}), ("show", {"node": "md:README"}),
    ("related", {"node": "md:work-plan"}), ("stats", {}), ("impact", {"node": "md:README", "index": "work"}),
    ("path", {"source": "md:work-plan", "target": "md:README"}), ("communities", {}),
])
def test_mcp_results_over_two_indexes_validate_against_the_advertised_schemas(twin_vaults, name, args):
    """What ``tools/list`` advertises over several indexes is what the tools answer (an SDK
    client validates structuredContent against outputSchema): ``stats`` answered
    ``{"indexes": [...]}`` under the one-index schema, which requires ``nodes``."""
    from conftest import need
    from kgsearch.mcp.multi import MultiServer

    jsonschema = need("jsonschema")
    srv = MultiServer([str(p) for p in twin_vaults])
    res = srv.call(name, args)
    assert not res["isError"], res
    jsonschema.validate(res["structuredContent"], next(t["outputSchema"] for t in srv.tools if t["name"] == name))


def test_mcp_search_over_two_indexes_is_brief_unless_full(twin_vaults):
    """`search` over several indexes answers brief by default, as over one index (docs/mcp.md): it
    answered the full JSON whatever `detail` said (every score part: about 3 x the tokens). Brief
    keeps each hit's index, which the node tools take back."""
    from kgsearch.mcp.multi import MultiServer
    from kgsearch.mcp.shapes import SEARCH_HIT

    srv = MultiServer([str(p) for p in twin_vaults])
    full = srv.call("search", {"query": "backup plan night", "k": 5, "detail": "full"})["structuredContent"]
    for args in ({"query": "backup plan night", "k": 5}, {"query": "backup plan night", "k": 5, "detail": "brief"}):
        res = srv.call("search", args)
        d = res["structuredContent"]
        assert not res["isError"] and json.loads(res["content"][0]["text"]) == d
        assert set(d) <= {"query", "intent", "hits", "notices", "answer"} and d["intent"] == {"name": full["intent"]["name"]}
        assert [(h["index"], h["key"]) for h in d["hits"]] == [(h["index"], h["key"]) for h in full["hits"]]
        assert {"notes", "work"} == {h["index"] for h in d["hits"]}
        assert all(set(h) <= set(SEARCH_HIT) and "signals" not in h for h in d["hits"])
        assert len(res["content"][0]["text"]) * 2 < len(json.dumps(full, separators=(",", ":")))
    assert "signals" in full["hits"][0] and "indexes" in full


def test_mcp_context_and_path_over_two_indexes_say_what_is_wrong_as_over_one(twin_vaults):
    """Bad arguments over several indexes get the error one index gives, phrased for an agent:
    a `diff` that is no diff packed nothing and said "the diff changes no indexed node" (one
    index: an error), a task with files or with impact named CLI flags (--files, --impact), and
    a path between nodes no index holds both of said `no node "md:a' and 'md:b"`."""
    from kgsearch.mcp import Server
    from kgsearch.mcp.multi import MultiServer

    multi, one = MultiServer([str(p) for p in twin_vaults]), Server(str(twin_vaults[0]))

    def error(srv, name, args):
        res = srv.call(name, args)
        assert res["isError"], res
        return res["content"][0]["text"]

    for args in ({"diff": "not a diff at all"}, {"task": "backup", "files": ["README.md"]},
                 {"task": "backup", "impact": 1}):
        got = error(multi, "context", args)
        assert got == error(one, "context", args), args
        assert not re.search(r"--[a-z]", got), got
    assert "the `diff` argument is not a unified diff" in error(multi, "context", {"diff": "not a diff at all"})
    got = error(multi, "path", {"source": "md:README", "target": "md:nowhere"})
    assert got == ("error: nodes 'md:README' and 'md:nowhere' are not both in any of the indexes (notes, work) (a "
                   "path stays inside one index); search for them to find their keys")
    got = error(multi, "path", {"source": "md:README", "target": "md:{where}", "index": "work"})
    assert "'md:{where}' are not both in index work" in got


def _copy_index(src, dst):
    import sqlite3

    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close(), b.close()
    return dst


def _damage_postings(db) -> None:
    """Overwrite the first page of the postings table: the file still opens (Index.open reads
    none of it), a search then meets "database disk image is malformed"."""
    import sqlite3

    c = sqlite3.connect(db)
    try:
        page = c.execute("SELECT min(pageno) FROM dbstat WHERE name='text_postings'").fetchone()[0]
    except sqlite3.OperationalError:
        pytest.skip("this sqlite has no dbstat table")
    size = c.execute("PRAGMA page_size").fetchone()[0]
    c.close()
    with open(db, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\xff" * size)


def test_a_damaged_index_among_several_is_the_one_named(twin_vaults, tmp_path, capsys):
    """A search over several indexes that meets a damaged file names that file and the command
    that rebuilds it (with its --db): the CLI and the MCP server blamed the first index, so the
    user rebuilt a sound one (and `kgsearch doctor --rebuild` without --db the default index);
    `serve` answered 500 "internal error DatabaseError" with a traceback in its log."""
    from kgsearch.mcp.multi import MultiServer
    from kgsearch.serve import App, Holder

    a = str(_copy_index(twin_vaults[0], tmp_path / "notes.db"))
    b = str(_copy_index(twin_vaults[1], tmp_path / "work.db"))
    _damage_postings(b)
    want = f"{b}: the index file is damaged (database disk image is malformed); run `kgsearch doctor --rebuild --db {b}`"
    capsys.readouterr()
    assert main(["search", "backup plan", "--db", a, "--db", b]) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"error: {want}") and a not in err and len(err.splitlines()) == 1
    res = MultiServer([a, b]).call("search", {"query": "backup plan"})
    text = res["content"][0]["text"]
    assert res["isError"] and want in text and a not in text
    app = App({"notes": Holder(a), "work": Holder(b)})
    for url in ("/api/search?q=backup+plan", "/?q=backup+plan", "/api/why?q=backup&node=md:README"):
        st, _, body = app.handle("GET", url, {})
        assert st == 503 and f"{b}: the index file is damaged" in body.decode() and a not in body.decode(), url
    st, _, body = app.handle("GET", "/api/search?q=backup+plan", {})
    assert json.loads(body) == {"error": want + f" to rebuild it from its sources (`kgsearch doctor --db {b}` says "
                                                "what is wrong)", "status": 503}


def test_an_index_of_an_older_schema_among_several_names_the_command_that_upgrades_it(twin_vaults, tmp_path, capsys):
    """"run `kgsearch index` once" upgraded the default index, not the one named: the fix names it
    with --db (and then the search works)."""
    import sqlite3

    a = str(_copy_index(twin_vaults[0], tmp_path / "notes.db"))
    b = str(_copy_index(twin_vaults[1], tmp_path / "work.db"))
    with sqlite3.connect(b) as c:
        c.execute("DELETE FROM migrations WHERE name=(SELECT max(name) FROM migrations)")
    c.close()
    capsys.readouterr()
    assert main(["search", "backup plan", "--db", a, "--db", b]) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"error: {b} needs an upgrade") and err.endswith(f"run `kgsearch index --db {b}` once to "
                                                                          "apply it\n")
    assert main(["index", "--db", b, "-q"]) == 0
    assert main(["search", "backup plan", "--db", a, "--db", b]) == 0
    missing = str(tmp_path / "gone.db")
    assert main(["search", "backup plan", "--db", a, "--db", missing]) == 4
    assert f"no index at {missing}; build one with `kgsearch index PATH --db {missing}`" in capsys.readouterr().err


# --------------------------------------------------------------------------- similar_text lists across the indexes
TWO_HOP = "tell me about graph walk"            # the exploratory intent: the graph signal pulls two hops


def test_union_lists_are_the_one_index_lists(engines):
    # the lists over two halves, computed from their postings with the union's statistics, are
    # exactly the lists the one index of every document holds (same pairs, same stored weights)
    import numpy as np

    from kgsearch.text.neighbors.across import union_lists, why_not

    a, b, one = engines["a"].ix, engines["b"].ix, engines["one"].ix
    assert why_not([a, b]) is None
    ul = union_lists([a, b])
    keys = {}
    for off, ix in zip(ul.offsets.tolist(), (a, b)):
        keys.update({off + nid: k for nid, k in ix.conn.execute("SELECT id, key FROM nodes")})
    got = {(keys[s], keys[d]): w for s, d, w in zip(ul.src.tolist(), ul.dst.tolist(), ul.sim.tolist())}
    k1 = dict(one.conn.execute("SELECT id, key FROM nodes"))
    want = {(k1[s], k1[d]): w for s, d, w in one.conn.execute(
        "SELECT src, dst, weight FROM edges WHERE type='similar_text'")}
    assert len(want) > 500 and got == want
    assert (ul.index_of(ul.src) != ul.index_of(ul.dst)).sum() > 100      # many cross the indexes
    assert ul.index_of(np.array([0, int(ul.offsets[1]) - 1, int(ul.offsets[1])])).tolist() == [0, 0, 1]


def test_union_lists_leave_out_terms_common_in_one_index_only(tmp_path):
    # a term in 55 of index a's documents (past the lists' df window, max(50, 5% of N)) and in 5 of
    # b's is past it in the union too: it links nothing there, as in one index of both
    from kgsearch.text.neighbors.across import union_lists

    rng = random.Random(5)
    docs = corpus(rng, 80)
    for d in docs[:55] + docs[60:65]:
        d["text"] += " ubiquitous"
    parts = {"one": docs, "a": docs[:60], "b": docs[60:]}
    ixs = {}
    for tag, part in parts.items():
        write_corpus(tmp_path / tag / "corpus.jsonl", part)
        index_paths(tmp_path / f"{tag}.db", [str(tmp_path / tag / "corpus.jsonl")],
                    IndexOptions(fmt="beir", settings={"embed": False}))
        ixs[tag] = Index.open(tmp_path / f"{tag}.db", readonly=True)
    try:
        ul = union_lists([ixs["a"], ixs["b"]])
        keys = {}
        for off, t in zip(ul.offsets.tolist(), ("a", "b")):
            keys.update({off + nid: k for nid, k in ixs[t].conn.execute("SELECT id, key FROM nodes")})
        got = {(keys[s], keys[d]): w for s, d, w in zip(ul.src.tolist(), ul.dst.tolist(), ul.sim.tolist())}
        k1 = dict(ixs["one"].conn.execute("SELECT id, key FROM nodes"))
        want = {(k1[s], k1[d]): w for s, d, w in ixs["one"].conn.execute(
            "SELECT src, dst, weight FROM edges WHERE type='similar_text'")}
        assert got == want
    finally:
        for ix in ixs.values():
            ix.close()


def test_seeds_are_shared_out_by_the_union_s_best():
    # hand-computed: union mean 1, spread 2 for bm25; a's best three 9, 7, 1 -> z 4, 3, 0; b's
    # 8, 5, 5 -> z 3.5, 2, 2. The union's best 3 by z: 4 (a), 3.5 (b), 3 (a): a seeds 2, b 1.
    # dense: only a has a whole list -> no share (each keeps the default).
    pools = {"a": Pool(fulls={"bm25": ([1, 2, 3, 4], [9.0, 7.0, 1.0, 0.0], 4), "dense": ([1], [0.5], 1)},
                       stats={"bm25": (1.0, 2.0), "dense": (0.0, 1.0)}),
             "b": Pool(fulls={"bm25": ([1, 2, 3], [8.0, 5.0, 5.0], 3)}, stats={"bm25": (1.0, 2.0)})}
    _share_out(pools, 4, 3)
    assert pools["a"].seeds == {"text": 2} and pools["b"].seeds == {"text": 1}
    _share_out(pools, 4, 4)                      # the 4th is b's tie 2, 2: both count
    assert pools["a"].seeds == {"text": 2} and pools["b"].seeds == {"text": 3}


def test_graph_seeds_over_two_indexes_are_the_one_index_seeds(engines, monkeypatch, tmp_path):
    # the graph stage of each index starts from its share of the union's best seeds, so that
    # over both the seeds are the one index's (not 10 + 10 by each signal from each index)
    import kgsearch.query.engine as E

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    seen: list[set] = []
    real = E.graph_steps

    def recording(gctx, *a, **k):
        stage = yield from real(gctx, *a, **k)
        ids = list(stage.seeds)
        marks = ",".join("?" * len(ids))
        seen[-1].update(key for (key,) in gctx.ix.conn.execute(f"SELECT key FROM nodes WHERE id IN ({marks})", ids))
        return stage

    monkeypatch.setattr(E, "graph_steps", recording)
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    opts = SearchOptions(k=10, use_cache=False, channels="bm25,dense,graph")
    for q in QUERIES:
        seen.append(set())
        engines["one"].search(q, opts)
        seen.append(set())
        multi.search(q, opts)
        assert seen[-1] == seen[-2] and 10 <= len(seen[-1]) <= 20, q


def test_two_indexes_rank_as_one_with_the_default_pipeline(engines, tmp_path, monkeypatch):
    # the default pipeline (graph signal included): with the union's lists every hit's graph
    # value is the one index's (two hops too), and on this corpus the ranking is the one index's;
    # with each index's own lists (across=False, the search before them) the values differ
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    own = MultiEngine({"a": engines["a"], "b": engines["b"]}, across=False)
    opts = SearchOptions(k=10, use_cache=False, explain=True)
    same_own = 0
    for i, q in enumerate(QUERIES + [TWO_HOP]):
        one, two = engines["one"].search(q, opts), multi.search(q, opts)
        if i == 0:
            assert any("linked the similar_text neighbours of 120 prose nodes" in n for n in two.notices)
        else:
            assert not any("similar_text" in n for n in two.notices)      # (once: kept for the next)
        assert [h.key for h in two.hits] == [h.key for h in one.hits], q
        g1 = {h.key: h.signals["graph"]["value"] for h in one.hits}
        # each value is shown rounded to 6 decimals: two sums in another order that round to either
        # side of a last digit print 1e-6 apart (numpy 1.23 on an Intel CPU: 0.809388 vs 0.809387)
        assert [h.signals["graph"]["value"] for h in two.hits] == pytest.approx([g1[h.key] for h in two.hits],
                                                                                abs=2.5e-6)
        o = own.search(q, opts)
        same_own += [h.key for h in o.hits] == [h.key for h in one.hits]
    assert same_own < len(QUERIES) + 1


def test_union_lists_are_kept_and_computed_again(tmp_path, monkeypatch):
    # kept in the user's cache; read back by another engine (a later process); computed again
    # when the file is damaged or an index changes; a cache that cannot be written, or indexes
    # too large to link at a search, still answer, with a notice
    from kgsearch.query import across

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    rng = random.Random(3)
    docs = corpus(rng, 40)
    write_corpus(tmp_path / "a" / "corpus.jsonl", docs[:20])
    write_corpus(tmp_path / "b" / "corpus.jsonl", docs[20:])
    dbs = [tmp_path / "a.db", tmp_path / "b.db"]
    for db, part in zip(dbs, ("a", "b")):
        index_paths(db, [str(tmp_path / part / "corpus.jsonl")], IndexOptions(fmt="beir", settings={"embed": False}))

    def search(**kw):
        ixs = [Index.open(p, readonly=True) for p in dbs]
        try:
            r = MultiEngine({"a": Engine(ixs[0]), "b": Engine(ixs[1])}, **kw).search(QUERIES[0], SearchOptions(k=10))
            return [n for n in r.notices if "similar_text" in n], [h.key for h in r.hits]
        finally:
            for ix in ixs:
                ix.close()

    notes, want = search()
    assert len(notes) == 1 and notes[0].startswith("linked the similar_text neighbours of 40 prose nodes")
    files = list((tmp_path / "cache" / "kgsearch" / "across").iterdir())
    assert len(files) == 1 and files[0].suffix == ".npz" and str(files[0]) in notes[0]
    real = across.union_lists
    monkeypatch.setattr(across, "union_lists", lambda ixs: pytest.fail("computed again"))
    assert search() == ([], want)                                  # read back from the file
    files[0].write_bytes(b"not a numpy file")
    monkeypatch.setattr(across, "union_lists", real)
    notes, keys = search()
    assert len(notes) == 1 and notes[0].startswith("linked") and keys == want
    assert search() == ([], want)
    own = search(across=False)[1]
    write_corpus(tmp_path / "a" / "corpus.jsonl", docs[:21])      # a reindex: another generation
    index_paths(dbs[0], [str(tmp_path / "a" / "corpus.jsonl")], IndexOptions(fmt="beir", settings={"embed": False}))
    assert search()[0][0].startswith("linked")
    assert len(list((tmp_path / "cache" / "kgsearch" / "across").iterdir())) == 1    # (replaced, no leftovers)
    write_corpus(tmp_path / "a" / "corpus.jsonl", docs[:20])
    index_paths(dbs[0], [str(tmp_path / "a" / "corpus.jsonl")], IndexOptions(fmt="beir", settings={"embed": False}))
    import os

    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    notes, keys = search()                                         # a write that fails half way
    assert len(notes) == 1 and "not kept: cannot write" in notes[0] and "No space left" in notes[0]
    assert keys == want and [p.suffix for p in (tmp_path / "cache" / "kgsearch" / "across").iterdir()] == [".npz"]
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))   # cannot be written: computed, not kept
    notes, keys = search()
    assert len(notes) == 1 and "not kept: cannot write" in notes[0] and keys == want
    monkeypatch.setattr(across, "union_lists", lambda ixs: (_ for _ in ()).throw(MemoryError()))
    notes, keys = search()                                         # over KGSEARCH_MEMORY_MB: own lists
    assert len(notes) == 1 and "went over the memory budget" in notes[0] and keys == own
    monkeypatch.setattr(across, "union_lists", real)
    monkeypatch.setattr(across, "LAZY_MAX", 39)                    # too large to link at a search
    notes, keys = search()
    assert len(notes) == 1 and "over the 39 whose similar_text neighbours a search links" in notes[0]
    assert keys == own


def test_cli_link_keeps_the_lists_a_search_then_reads(split, capsys, monkeypatch, tmp_path):
    # `kgsearch link` computes the lists whatever their size (a search stops at LAZY_MAX) and
    # keeps them; the search over the same indexes reads them (no "linked" notice); run again,
    # it says they are current; one index, or indexes that analyse text apart, are usage errors
    from kgsearch.query import across

    _, dbs = split
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(across, "LAZY_MAX", 10)
    args = ["--db", str(dbs["a"]), "--db", str(dbs["b"])]
    assert main(["link", *args]) == 0
    said = capsys.readouterr().out
    assert said.startswith("linked the similar_text neighbours of 120 prose nodes") and "kept in" in said
    assert main(["search", "graph search rank", *args, "--json"]) == 0
    cap = capsys.readouterr()
    assert "similar_text" not in cap.err and json.loads(cap.out)["hits"]
    assert main(["link", *args, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["computed"] is False and info["edges"] == 800 and info["path"].endswith(".npz")
    assert main(["link", "--db", str(dbs["a"])]) == 2
    assert "links several indexes" in capsys.readouterr().err


def _count_generation_reads(monkeypatch) -> list:
    """The paths of the indexes whose generation is read, one entry a read, from now on."""
    reads = []
    real = Index.meta

    def meta(self, key, default=None):
        if key == "generation":
            reads.append(self.path)
        return real(self, key, default)

    monkeypatch.setattr(Index, "meta", meta)
    return reads


def test_each_generation_read_once_per_search(engines, monkeypatch):
    """A search over several indexes reads each index's generation once (Index.pinned), where
    the pooling, the lists' key and each index's search read it about a dozen times each; the
    answer is the same."""
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    opts = SearchOptions(k=10, snippets=False)
    before = [h.key for h in multi.search("graph search rank", opts).hits]
    reads = _count_generation_reads(monkeypatch)
    after = [h.key for h in multi.search("graph search rank", opts).hits]
    assert after == before
    assert sorted(reads) == sorted([engines["a"].ix.path, engines["b"].ix.path])
    multi.search("battery sync phone", opts)
    assert len(reads) == 4                                    # (once each again: not kept past a search)


def test_threaded_search_reads_each_generation_once(engines, monkeypatch):
    # a pin belongs to its thread (Index.pinned): the worker threads pin the generation the
    # search pinned, they do not read it again
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]}, threads=True)
    try:
        opts = SearchOptions(k=10, snippets=False, use_cache=False)
        before = [h.key for h in multi.search("graph search rank", opts).hits]
        reads = _count_generation_reads(monkeypatch)
        assert [h.key for h in multi.search("graph search rank", opts).hits] == before
        assert sorted(reads) == sorted([engines["a"].ix.path, engines["b"].ix.path])
        assert multi._executor is not None                 # (the workers did run)
    finally:
        if multi._executor is not None:
            multi._executor.shutdown()


def test_a_search_abandoned_at_its_pull_leaves_nothing_pinned(engines, tmp_path, monkeypatch):
    # Engine.steps left suspended at its pull by its caller (an error between two indexes'
    # steps, a caller that stops iterating) pins nothing: the next search reads the generation
    # again (a stale pin in a long-running serve or mcp would hide every later reindex); the
    # abandoned search, resumed, still answers as a whole search does
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    seen = {}
    real = MultiEngine._together
    monkeypatch.setattr(MultiEngine, "_together", lambda self, args, pools: seen.update(args=args, pools=pools)
                        or real(self, args, pools))
    opts = SearchOptions(k=10, snippets=False, use_cache=False)
    want = multi.search("graph search rank", opts)
    b = engines["b"]
    pool = seen["pools"]["b"]
    pool.defer = pool.unread = False                      # (the hits built by the index itself)
    step = b.steps(*seen["args"]["b"], pool=pool)
    pull = next(step)                                     # suspended at its pull, outside any block
    assert type(pull).__name__ == "Pull"
    assert b.ix._pinned is None
    reads = _count_generation_reads(monkeypatch)
    assert [h.key for h in multi.search("graph search rank", opts).hits] == [h.key for h in want.hits]
    assert sorted(reads) == sorted([engines["a"].ix.path, b.ix.path])
    assert b.ix._pinned is None
    try:
        step.send(pull.answer())
    except StopIteration as stop:
        alone = stop.value
    assert {h.key for h in alone.hits} >= {h.key for h in want.hits if h.index == "b"}
    assert len(reads) == 2                                 # (resumed on the generation it read)
    step = b.steps(*seen["args"]["b"], pool=pool)
    next(step)
    step.close()                                          # (closed at its pull: nothing pinned either)
    assert b.ix._pinned is None and step.gi_frame is None


def test_one_index_search_reads_its_generation_once(engines, monkeypatch):
    """A search of one index pins its generation too (it read it 8 times, once per cache it
    consults): the same answer, one read."""
    opts = SearchOptions(k=10, snippets=False, use_cache=False)
    before = [h.key for h in engines["one"].search("graph search rank", opts).hits]
    reads = _count_generation_reads(monkeypatch)
    assert [h.key for h in engines["one"].search("graph search rank", opts).hits] == before
    assert reads == [engines["one"].ix.path]


def test_pinned_generation_sees_a_reindex_after_the_block(split, tmp_path):
    import shutil

    db = tmp_path / "g.db"
    shutil.copy(split[1]["a"], db)
    with Index.open(db) as w:
        w.set_meta("generation", 3)
        w.conn.commit()
        with Index.open(db, readonly=True) as r:
            with r.pinned():
                assert r.generation == 3
                w.set_meta("generation", 4)
                w.conn.commit()
                assert r.generation == 3                       # read once for the block
                with r.pinned():
                    assert r.generation == 3                   # nested: the outer block's
                assert r.generation == 3
            assert r.generation == 4


def test_a_pin_belongs_to_its_thread_and_its_block(split, tmp_path):
    # a block pinned in one thread (a request of `serve`) neither hides a reindex from another
    # thread nor, when it ends, takes that thread's own pin away
    import shutil
    import threading

    db = tmp_path / "t.db"
    shutil.copy(split[1]["a"], db)
    with Index.open(db) as w, Index.open(db, readonly=True, create=False) as r:
        w.set_meta("generation", 3)
        w.conn.commit()
        pinned, release, done = threading.Event(), threading.Event(), threading.Event()
        seen = []

        def request():
            with r.pinned():
                seen.append(r.generation)
                pinned.set()
                release.wait(30)
                seen.append(r.generation)
            seen.append(r._pinned)
            done.set()

        t = threading.Thread(target=request)
        t.start()
        assert pinned.wait(30)
        w.set_meta("generation", 4)
        w.conn.commit()
        assert r.generation == 4 and r._pinned is None      # (the other thread's pin is its own)
        with r.pinned():
            assert r.generation == 4
            release.set()
            assert done.wait(30)
            w.set_meta("generation", 5)
            w.conn.commit()
            assert r.generation == 4                         # (the other block's end left this one's)
        t.join(30)
        assert seen == [3, 3, None] and r.generation == 5


# --------------------------------------------------------------------------- lockstep: the same answers
@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Two indexes of notes with heading sections (one hit per note), Python code with tests
    (test code x the test penalty: factors that differ inside one index) and vendored code."""
    tmp = tmp_path_factory.mktemp("mixed")
    rng = random.Random(11)
    for side in ("a", "b"):
        root = tmp / side
        for i in range(12):
            heads = "\n\n".join(f"## {rng.choice(WORDS)} {rng.choice(WORDS)}\n\n" +
                                " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 160))) for _ in range(4))
            (root / "notes").mkdir(parents=True, exist_ok=True)
            (root / "notes" / f"n{i}.md").write_text(f"# note {i}\n\n{heads}\n", encoding="utf-8")
        for d in ("pkg", "tests", "pkg/vendor"):
            (root / d).mkdir(parents=True, exist_ok=True)
        for i in range(6):
            words = [rng.choice(WORDS) for _ in range(6)]
            body = "\n\n".join(f"def {w}_{i}_{j}(x):\n    \"\"\"{' '.join(rng.choice(WORDS) for _ in range(8))}.\"\"\"\n"
                               f"    return {words[(j + 1) % 6]}_{i}_{(j + 1) % 6}(x)\n" for j, w in enumerate(words))
            (root / "pkg" / f"m{i}.py").write_text(body, encoding="utf-8")
            (root / "tests" / f"test_m{i}.py").write_text(
                f"from pkg.m{i} import *\n\n\ndef test_{words[0]}():\n    \"\"\"{' '.join(words)} graph search.\"\"\"\n"
                f"    assert {words[0]}_{i}_0(1)\n", encoding="utf-8")
            (root / "pkg" / "vendor" / f"v{i}.py").write_text(
                f"def {words[1]}_vendored_{i}():\n    \"\"\"{' '.join(words)} index cache.\"\"\"\n", encoding="utf-8")
        index_paths(tmp / f"{side}.db", [str(root)], IndexOptions(max_chunk_chars=400))
    ixs = [Index.open(tmp / f"{side}.db", readonly=True) for side in ("a", "b")]
    yield {"a": Engine(ixs[0]), "b": Engine(ixs[1])}
    for ix in ixs:
        ix.close()


MIXED_QUERIES = QUERIES + ["test graph search", "def index cache", "sync kernel", "vendored rank token",
                           "how does the phone backup work", "tests for walk seed", "note"]


def test_lockstep_answers_as_the_indexes_in_turn(mixed, engines, tmp_path, monkeypatch):
    # MultiEngine() runs the indexes in lockstep: every index's graph pull over the union's lists
    # at once (across.pull_together) and only the rows of the merged top k read (adjust.Unread);
    # MultiEngine(together=False) is the search before them (each index on its own, its k + 5
    # hits built): the same hits, explain parts and scores, to the last digit, on notes with
    # sections, code with tests (factors that reorder an index on the union's floor) and prose
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from kgsearch.query import across

    calls = []
    real = across.pull_together
    monkeypatch.setattr(across, "pull_together", lambda pulls: calls.append(len(pulls)) or real(pulls))
    sections = 0
    for pair, queries in ((mixed, MIXED_QUERIES), ({"a": engines["a"], "b": engines["b"]}, QUERIES + [TWO_HOP])):
        fast, slow = MultiEngine(dict(pair)), MultiEngine(dict(pair), together=False)
        for q in queries:
            for opts in (SearchOptions(k=10, use_cache=False, explain=True), SearchOptions(k=3, use_cache=False),
                         SearchOptions(k=25, use_cache=False, snippets=True), SearchOptions(k=5, collapse=False),
                         SearchOptions(k=8, use_cache=False, intent="exploratory")):
                want, got = slow.search(q, opts), fast.search(q, opts)
                assert [h.as_dict() for h in got.hits] == [h.as_dict() for h in want.hits], (q, opts)
                assert got.candidates == want.candidates
                sections += sum(h.kind == "section" for h in got.hits)
    assert sections and calls and max(calls) == 2           # (sections were collapsed; the pulls ran together)


def test_unread_hits_are_the_collapsed_top_read_in_any_windows(mixed):
    # adjust.Unread finds an index's hits as its rows are read: whatever the windows, they are
    # _collapsed_top's (one hit per note among the first 4 k nodes that exist), here over every
    # node of an index with sections, in shuffled orders, with ids of nodes that do not exist
    from kgsearch.query.adjust import Unread, _collapsed_top

    conn = mixed["a"].ix.conn
    ids = [i for (i,) in conn.execute("SELECT id FROM nodes")]
    rng = random.Random(3)
    cand = np.asarray(ids + [max(ids) + 1 + j for j in range(40)], dtype=np.int64)
    for trial in range(30):
        order = list(range(len(cand)))
        rng.shuffle(order)
        order = order[:rng.randint(0, len(order))]
        k = rng.randint(1, 14)
        want = _collapsed_top(conn, cand, order, k)[1]
        u = Unread(conn, cand, order, k, {})
        while not u.over:
            u.read_to(u.done + rng.randint(1, 9))
        assert u.hits == want and Unread(conn, cand, order, k, {}).read_all() == want, trial


def test_merge_unread_is_its_reference(mixed):
    """merge.merge_unread (the indexes' positions merged lazily) gives merge_unread_reference's
    top k and floor and reads the same rows: random scores with ties, lifts above and under the
    floor, factors that reorder an index (handed to the reference), empty indexes, ids of nodes
    that do not exist, k from 1 to 14."""
    from kgsearch.query.adjust import Unread
    from kgsearch.query.merge import merge_unread, merge_unread_reference

    conns = {name: mixed[name].ix.conn for name in ("a", "b")}
    ids = {name: [i for (i,) in c.execute("SELECT id FROM nodes")] for name, c in conns.items()}
    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    reordered = 0
    for trial in range(200):
        k = rng.randint(1, 14)
        spec = {}
        for name in ("a", "b"):
            cand = np.asarray(ids[name] + [max(ids[name]) + 1 + j for j in range(5)], dtype=np.int64)
            n = len(cand)
            fused = np.round(nrng.random(n) * 4, 1 if trial % 3 else 3)
            shift = np.full(n, float(rng.choice([0.0, 0.5, 1.5])))
            factor = np.ones(n)
            if trial % 4 == 0:
                factor[nrng.random(n) < 0.3] = 0.5
            order = np.argsort(-(fused * factor), kind="stable")[:rng.randint(0, n)].tolist()
            spec[name] = (cand, order, fused * factor, shift, factor)

        def fresh():
            return {name: Unread(conns[name], cand, list(order), k, {}, fused, shift, factor)
                    for name, (cand, order, fused, shift, factor) in spec.items()}

        reads = {}
        for fn in (merge_unread, merge_unread_reference):
            un = fresh()
            got = fn(un, k)
            reads[fn] = (got, {name: (u.done, list(u.hits)) for name, u in un.items()})
        assert reads[merge_unread] == reads[merge_unread_reference], trial
        reordered += trial % 4 == 0
    assert reordered


def test_the_intent_is_resolved_once_for_the_indexes_of_a_search(engines, tmp_path, monkeypatch):
    """Engine._intent: the indexes of one search sharing the parsed query resolve its intent
    once (a pure function of the query and options); the answers are those of each index
    resolving its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    import kgsearch.query.engine as E

    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    calls = []
    real = E.resolve
    monkeypatch.setattr(E, "resolve", lambda *a, **k: calls.append(a) or real(*a, **k))
    got = {}
    for q in QUERIES + [TWO_HOP]:
        for opts in (SearchOptions(k=10, use_cache=False, explain=True), SearchOptions(k=5, intent="exploratory")):
            calls.clear()
            got[q, opts.intent] = [h.as_dict() for h in multi.search(q, opts).hits]
            assert len(calls) == 1, q
    monkeypatch.setattr(E.Engine, "_intent", lambda self, q, opts, pool: real(q, opts.intent, opts.weights))
    for q in QUERIES + [TWO_HOP]:
        for opts in (SearchOptions(k=10, use_cache=False, explain=True), SearchOptions(k=5, intent="exploratory")):
            assert [h.as_dict() for h in multi.search(q, opts).hits] == got[q, opts.intent]


def test_a_search_reads_the_model_id_and_the_kinds_once_per_generation(engines, tmp_path, monkeypatch):
    """After a first search, a search of the same generation reads neither the model id (the
    dense channel's whole-index scores) nor whether the index holds code: each is kept per
    generation; the statements left are the generation, the feedback check, the postings, the
    candidates' flags and the display fields."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for eng in (engines["a"], MultiEngine({"a": engines["a"], "b": engines["b"]})):
        eng.search("graph search rank", SearchOptions(k=5, use_cache=False))
        sql: list[str] = []
        ixs = [e.ix for e in eng.engines.values()] if isinstance(eng, MultiEngine) else [eng.ix]
        for ix in ixs:
            ix.conn.set_trace_callback(sql.append)
        try:
            r = eng.search("battery sync phone", SearchOptions(k=5, use_cache=False))
        finally:
            for ix in ixs:
                ix.conn.set_trace_callback(None)
        assert r.hits and "dense" in r.channels_run
        assert not [s for s in sql if "model_id" in s or "LIMIT 1" in s and "kind IN" in s], sql


def test_an_error_in_the_lockstep_ends_every_index_s_search(engines, tmp_path, monkeypatch):
    # a failure while the indexes wait at their pull ends each index's search (its generator is
    # closed, its generation unpinned): the error reaches the caller, and the next search answers
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from kgsearch.query import across

    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    want = [h.as_dict() for h in multi.search("graph search rank", SearchOptions(k=5, use_cache=False)).hits]

    def broken(pulls):
        raise RuntimeError("pull failed")

    gens = []
    with monkeypatch.context() as m:
        m.setattr(across, "pull_together", broken)
        real = Engine.steps
        m.setattr(Engine, "steps", lambda self, *a, **k: gens.append(real(self, *a, **k)) or gens[-1])
        with pytest.raises(RuntimeError, match="pull failed"):
            multi.search("graph search rank", SearchOptions(k=5, use_cache=False))
    assert len(gens) == 2 and all(g.gi_frame is None for g in gens)         # (closed, not left suspended)
    assert engines["a"].ix._pinned is None and engines["b"].ix._pinned is None
    assert [h.as_dict() for h in multi.search("graph search rank", SearchOptions(k=5, use_cache=False)).hits] == want


def test_pulls_together_are_each_index_s_pull_to_the_last_bit(mixed, engines, tmp_path, monkeypatch):
    # across.pull_together (one pass over every index's candidates) against each index's own
    # AcrossView.pull_mean (the reference): equal arrays, bit for bit, query after query
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from kgsearch.query import across

    seen = []
    real = across.pull_together
    monkeypatch.setattr(across, "pull_together", lambda pulls: seen.append(list(pulls)) or real(pulls))
    for pair, queries in ((mixed, MIXED_QUERIES), ({"a": engines["a"], "b": engines["b"]}, QUERIES)):
        multi = MultiEngine(dict(pair))
        for q in queries:
            multi.search(q, SearchOptions(k=10, use_cache=False))
    together = [pulls for pulls in seen if len(pulls) == 2]
    assert len(together) >= len(QUERIES)
    for pulls in together:
        got = real(pulls)
        for p, g in zip(pulls, got):
            want = p.answer()
            assert g.dtype == want.dtype and np.array_equal(g, want) and len(g) == len(p.ids)


def test_one_index_under_two_spellings_is_searched_once(tmp_path, capsys, monkeypatch):
    """`--db a.db --db ./a.db` (or a symlink, a hard link, $KGSEARCH_DB listing it twice)
    searched the file twice: every hit listed twice, once as a-2."""
    import os

    from kgsearch.cli import main
    from kgsearch.indexer import index_paths
    from kgsearch.query.multi import multi_engine_for

    root = tmp_path / "notes"
    root.mkdir()
    (root / "cart.md").write_text("# Cart\n\nzebra cart notes\n", encoding="utf-8")
    (root / "shop.md").write_text("# Shop\n\nzebra shop notes\n", encoding="utf-8")
    db = tmp_path / "a.db"
    index_paths(db, [str(root)])
    (tmp_path / "link.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["search", "zebra", "--db", "a.db", "--json"]) == 0
    want = [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]]
    assert len(want) == 2
    for other in ("./a.db", str(db), "link.db", "hard.db"):
        assert main(["search", "zebra", "--db", "a.db", "--db", other, "--json"]) == 0
        assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == want, other
    monkeypatch.setenv("KGSEARCH_DB", os.pathsep.join(["a.db", "./a.db"]))
    assert main(["search", "zebra", "--json"]) == 0
    assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == want
    assert list(multi_engine_for(["a.db", "link.db"]).engines) == ["a"]


def test_mcp_over_several_indexes_names_the_missing_one_and_what_still_works(twin_vaults, tmp_path):
    """A missing index among several made every tool's error say "every kgsearch tool fails the
    same way", though a tool given another index still answered: the error names the missing
    index and which index still answers."""
    from kgsearch.mcp.multi import MultiServer

    a = str(_copy_index(twin_vaults[0], tmp_path / "notes.db"))
    gone = str(tmp_path / "gone.db")
    server = MultiServer([a, gone])
    res = server.call("search", {"query": "backup plan"})
    text = res["content"][0]["text"]
    assert res["isError"] and f"no index at {gone}" in text
    assert "every kgsearch tool fails" not in text
    assert "the kgsearch index 'gone' cannot be used" in text and "a tool given `index` 'notes' still answers" in text
    res = server.call("show", {"node": "md:README", "index": "notes"})
    assert not res["isError"] and res["structuredContent"]["index"] == "notes"     # as the error says


def test_root_words_are_read_from_the_text_one_index_reads(engines):
    """Filter words are read only from a query of at most QUERY_FILTER_WORDS words; the parser
    counted the text it reads (NULs made spaces, a huge query cut) but narrow() over several
    indexes counted the raw text, so `root:a` was an index filter over two indexes and plain text
    on one (NUL-joined words), or the reverse (a query of 21 words, 20 once cut)."""
    from kgsearch.query.filters import QUERY_FILTER_WORDS

    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    n = QUERY_FILTER_WORDS
    nuls = "root:a " + "\x00".join(["graph"] * n)                                # 2 words typed, n + 1 read
    cut = "root:a " + " ".join(["graph"] * (n - 2)) + " " + "x" * 25_000 + " " + "y" * 10_000   # n + 1, then n
    for q, read in ((nuls, False), (cut, True)):
        assert bool([f for f in engines["a"].parse(q).filters if f.field == "root"]) is read
        keep, _, _ = multi.narrow(q, SearchOptions(k=3))
        assert sorted(keep) == (["a"] if read else ["a", "b"]), (q[:20], read)


def test_a_search_parses_the_query_once_per_analyser(engines, tmp_path, monkeypatch):
    """The typo check's parse is the search's parse when it corrected nothing (one index does
    the same): a two-index search of one analyser parses the query once, not twice; a corrected
    query is parsed again, as corrected. The hits are those of the search parsing it anew."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    calls = []
    real = Engine.parse
    monkeypatch.setattr(Engine, "parse", lambda self, text: calls.append(text) or real(self, text))
    got = {}
    for q in QUERIES + [TWO_HOP]:
        calls.clear()
        got[q] = [h.as_dict() for h in multi.search(q, SearchOptions(k=10, use_cache=False, explain=True)).hits]
        assert len(calls) == 1, (q, calls)
    typo = multi.search("graph serch", SearchOptions(k=5, use_cache=False))
    assert typo.corrections == [["serch", "search"]]
    assert calls[-2:] == ["graph serch", "graph search"]       # (the typed text, then the corrected)
    real_corrected = MultiEngine._corrected
    monkeypatch.setattr(MultiEngine, "_corrected", lambda self, query: real_corrected(self, query)[:2] + (None,))
    for q in QUERIES + [TWO_HOP]:
        assert [h.as_dict() for h in multi.search(q, SearchOptions(k=10, use_cache=False, explain=True)).hits] == got[q]


def test_the_embedding_weight_s_factor_is_computed_once_for_the_indexes_of_a_search(engines, tmp_path, monkeypatch):
    """adjust.query_weights: the indexes of one search sharing the parsed query, the model and
    the tuning compute a prose query's embedding factor once (the query's text and the model
    only); the answers are those of each index computing its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    import kgsearch.query.adjust as A
    import kgsearch.query.engine as E
    from kgsearch.embed.index_model import query_model

    if isinstance(query_model(engines["a"].ix), str):
        pytest.skip("no embedding model here")
    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    calls = []
    real = A.embedding_factor
    monkeypatch.setattr(A, "embedding_factor", lambda *a, **k: calls.append(a) or real(*a, **k))
    got = {}
    for q in QUERIES + [TWO_HOP, "sqlite"]:
        calls.clear()
        got[q] = [h.as_dict() for h in multi.search(q, SearchOptions(k=10, use_cache=False, explain=True)).hits]
        assert len(calls) == 1, q
    real_weights = A.query_weights
    monkeypatch.setattr(E, "query_weights", lambda *a: real_weights(*a[:7]))       # (each index its own)
    for q in QUERIES + [TWO_HOP, "sqlite"]:
        calls.clear()
        assert [h.as_dict() for h in multi.search(q, SearchOptions(k=10, use_cache=False, explain=True)).hits] == got[q]
        assert len(calls) == 2, q


def test_the_typo_check_asks_the_next_index_only_for_words_the_first_lacks(engines, tmp_path, monkeypatch):
    """Whether a query word is known (MultiEngine._corrected): the first index is asked, the next
    only for the terms the first lacks (a word any index knows is no typo); the document
    frequencies of the corrections' variants are still summed over every index."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    import kgsearch.query.multi as M

    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    asked = []
    real = M.doc_freqs
    monkeypatch.setattr(M, "doc_freqs", lambda conn, terms: asked.append(
        ("a" if conn is engines["a"].ix.conn else "b", sorted(terms))) or real(conn, terms))
    multi._corrected("graph search rank")
    assert asked == [("a", ["graph", "rank", "search"])]
    asked.clear()
    fixed, fixes, _ = multi._corrected("graph serch")
    assert fixes == [("serch", "search")] and fixed == "graph search"
    assert asked[:2] == [("a", ["graph", "serch"]), ("b", ["serch"])]        # known: 'graph' in a
    assert {i for i, _ in asked[2:]} == {"a", "b"}                           # the variants: summed


def test_narrow_reads_no_filter_of_a_query_without_any(engines, monkeypatch):
    """MultiEngine.narrow: a query with no ':' and no filter options is every index as it is,
    without parsing any filter (the search's own bookkeeping); a root filter still narrows."""
    import kgsearch.query.filters as F

    multi = MultiEngine({"a": engines["a"], "b": engines["b"]})
    opts = SearchOptions(k=3)
    real = F.parse_filters
    monkeypatch.setattr(F, "parse_filters", lambda *a: pytest.fail("filters parsed"))
    assert multi.narrow("graph search", opts) == (multi.engines, "graph search", opts)
    monkeypatch.setattr(F, "parse_filters", real)
    keep, query, _ = multi.narrow("graph search root:b", opts)
    assert list(keep) == ["b"] and query == "graph search"
