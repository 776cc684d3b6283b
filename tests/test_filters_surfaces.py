"""The filters on every surface (MCP schemas and calls, the web page and API, several indexes,
`why`, `context`), `why`'s graph path from the seeds, and the summary intent on the demo."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import cli
from kgsearch.mcp.server import Server
from kgsearch.mcp.tools import FILTER_PROPS, TOOLS
from kgsearch.query.filters import FIELDS


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import index_paths

    base = tmp_path_factory.mktemp("fsurf")
    db = base / "demo.db"
    index_paths(db, [str(demo_dir())])
    return base, db


def test_mcp_schemas_are_generated_from_the_fields():
    names = [fl[2:].replace("-", "_") for f in FIELDS.values() for fl in (f.flag, f.exclude_flag) if fl]
    assert list(FILTER_PROPS) == names == ["kind", "path", "exclude_path", "tag", "lang", "modified_since", "root"]
    for tool in ("search", "context", "why"):
        props = next(t for t in TOOLS if t["name"] == tool)["inputSchema"]["properties"]
        assert {n: props[n] for n in names} == FILTER_PROPS
    assert FILTER_PROPS["kind"]["type"] == "array" and FILTER_PROPS["modified_since"]["type"] == "string"


def test_mcp_search_context_and_why_filter(demo):
    _, db = demo
    s = Server(db)
    res = s.call("search", {"query": "termux backup", "k": 5, "kind": ["note"], "exclude_path": ["vault/tools/"],
                            "detail": "full"})
    hits = res["structuredContent"]["hits"]
    assert not res["isError"] and len(hits) == 5
    assert all(h["kind"] == "note" and "/vault/tools/" not in h["path"] for h in hits)
    bad = s.call("search", {"query": "x", "lang": ["cobol"]})
    assert bad["isError"] and "unknown language 'cobol'" in bad["content"][0]["text"]
    ctx = s.call("context", {"task": "termux backup", "tag": ["howto"], "budget": 2000, "format": "json"})
    assert not ctx["isError"] and ctx["structuredContent"]["items"]
    assert all(it["path"].startswith("vault/howto/") for it in ctx["structuredContent"]["items"])
    why = s.call("why", {"query": "termux backup", "node": "kg:git", "kind": ["note"], "detail": "full"})
    assert "left out by the filters kind:note" in why["structuredContent"]["reason"]


def test_web_api_and_form_filter(demo):
    from kgsearch.serve.holder import Holder
    from kgsearch.serve.pages import FILTERS
    from kgsearch.serve.server import App

    _, db = demo
    h = Holder(str(db))
    try:
        app = App({"index": h}, {"127.0.0.1", "localhost", "::1", ""})
        st, _, payload = app.handle("GET", "/api/search?q=termux+backup&kind=note&exclude_path=vault/tools/&k=4",
                                    {"host": "127.0.0.1:8765"}, b"")
        hits = json.loads(payload)["hits"]
        assert st == 200 and len(hits) == 4 and all(x["kind"] == "note" for x in hits)
        st, _, payload = app.handle("GET", "/api/search?q=x&modified_since=soon", {"host": "127.0.0.1:8765"}, b"")
        assert st == 400 and "bad date 'soon'" in json.loads(payload)["error"]
        st, _, page = app.handle("GET", "/?q=termux&tag=howto&path=vault/", {"host": "127.0.0.1:8765"}, b"")
        html = page.decode()       # (a filter named path once clashed with the link helper's own argument)
        assert st == 200 and "<legend>filters</legend>" in html and "name='tag' value='howto'" in html
        assert "/api/search?q=termux&amp;tag=howto&amp;path=vault%2F" in html
        assert [f[0] for f in FILTERS] == list(FILTER_PROPS)
    finally:
        h.close()


def test_several_indexes_root_names_an_index(demo, capsys):
    base, db = demo
    other = base / "other.db"
    shutil.copy(db, other)
    capsys.readouterr()
    assert cli("search", "--db", db, "--db", other, "--json", "termux backup", "--root", "other", "-k", "4") == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert len(hits) == 4 and {h["index"] for h in hits} == {"other"}
    assert cli("search", "--db", db, "--db", other, "--json", "termux backup -root:other kind:note", "-k", "4") == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert len(hits) == 4 and {h["index"] for h in hits} == {"demo"} and {h["kind"] for h in hits} == {"note"}
    assert cli("search", "--db", db, "--db", other, "x", "--root", "nowhere") == 2
    assert "unknown root 'nowhere' in 'root:nowhere'; the indexes are demo, other" in capsys.readouterr().err


def test_why_shows_the_graph_path_from_a_seed(demo, capsys):
    from kgsearch.explore.paths import seed_path
    from kgsearch.query import why
    from kgsearch.query.api import engine_for

    _, db = demo
    info = why("termux backup", "md:vault/problems/phantom-process-killer", db=db)
    g = info["graph"]
    assert g is not None and g["seed"] is False
    seeds = engine_for(db).search("termux backup").seeds
    p = g["path"]
    assert p["nodes"][0]["id"] in seeds and p["nodes"][-1]["key"] == "md:vault/problems/phantom-process-killer"
    assert p == seed_path(engine_for(db).ix, seeds, info["node"]["id"])
    assert all(s["type"] for s in p["steps"])
    capsys.readouterr()
    assert cli("why", "--db", db, "termux backup", "md:vault/problems/phantom-process-killer") == 0
    assert "graph: reached from seed " in capsys.readouterr().out
    top = why("termux backup", engine_for(db).search("termux backup").seeds and "md:vault/howto/backup-vault", db=db)
    assert top["graph"] == {"seed": True}


def test_the_summary_intent_names_the_three_largest_topics(demo, capsys):
    from kgsearch.explore.topics import communities
    from kgsearch.query.api import engine_for

    _, db = demo
    eng = engine_for(db)
    resp = eng.search("what are the main topics in my notes")
    assert resp.intent["name"] == "summary" and resp.hits
    largest = communities(eng.ix, limit=3)["communities"]
    assert len(largest) == 3 and largest[0]["size"] >= largest[1]["size"] >= largest[2]["size"]
    lines = resp.answer["answer"].splitlines()
    for i, c in enumerate(largest, 1):
        assert any(ln.startswith(f"{i}. {c['label']}") for ln in lines), c["label"]
    assert eng.search("termux backup").answer is None           # other intents: no summary
    capsys.readouterr()
    assert cli("search", "--db", db, "what is this vault about", "-k", "2") == 0
    out = capsys.readouterr().out
    assert out.index(f"1. {largest[0]['label']}") < out.index("matching nodes:")


def test_context_files_and_diff_pack_only_what_the_filters_keep(demo, capsys):
    """--files/--diff rank from every given node; the filters choose which are packed: the
    filtered items are exactly the unfiltered ones the filters keep (brute force), same order."""
    from kgsearch.context import ContextOptions, build_context
    from kgsearch.query import SearchOptions
    from kgsearch.query.api import engine_for
    from kgsearch.query.filters import matches, node_rows, parse_filters

    base, db = demo
    eng = engine_for(db)
    ids = dict(eng.ix.conn.execute("SELECT key, id FROM nodes"))
    rows = {r["id"]: r for r in node_rows(eng.ix)}
    files = ["vault/howto/backup-vault.md"]
    full = build_context(eng, files=files, opts=ContextOptions(budget=100000, fmt="json"))
    assert len({i["kind"] for i in full.items}) > 1
    for words in (["kind:note", "-path:vault/tools/"], ["kind:section"], ["tag:howto"]):
        res = build_context(eng, files=files, opts=ContextOptions(budget=100000, fmt="json",
                                                                  search=SearchOptions(filters=words)))
        want = [i["key"] for i in full.items if matches(eng.ix, parse_filters(words), rows[ids[i["key"]]])]
        assert [i["key"] for i in res.items] == want and want, words
        assert (f"left out {len(full.items) - len(want)} of {len(full.items)} nodes" in " ".join(res.notices)) \
            == (len(want) < len(full.items))
    none = build_context(eng, files=files, opts=ContextOptions(fmt="json", search=SearchOptions(filters=["kind:function"])))
    assert none.items == [] and "nothing to pack" in none.notices[-1]
    capsys.readouterr()
    assert cli("context", "--db", db, "--files", files[0], "--kind", "note", "--json") == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert items and {i["kind"] for i in items} == {"note"}
    diff = base / "change.diff"
    diff.write_text("--- a/vault/howto/backup-vault.md\n+++ b/vault/howto/backup-vault.md\n@@ -8,2 +8,2 @@\n"
                    "-The notes are the only thing worth backing up. The search index can always be rebuilt from\n"
                    "+The notes are the one thing worth backing up. The search index can always be rebuilt from\n"
                    " them, so it does not need a backup at all - but if you want one, copy it safely.\n")
    assert cli("context", "--db", db, "--diff", diff, "--json") == 0
    everything = json.loads(capsys.readouterr().out)["items"]
    assert cli("context", "--db", db, "--diff", diff, "--exclude-path", "vault/howto/", "--json") == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert everything and [i["key"] for i in items] == [
        i["key"] for i in everything if not i["path"].startswith("vault/howto/")]
    s = Server(db)
    res = s.call("context", {"files": files, "kind": ["section"], "format": "json", "budget": 100000})
    assert [i["key"] for i in res["structuredContent"]["items"]] == [
        i["key"] for i in full.items if i["kind"] == "section"]
    other = base / "ctx_other.db"
    shutil.copy(db, other)
    assert cli("context", "--db", db, "--db", other, "--files", files[0], "--root", "ctx_other", "--kind", "note",
               "--json") == 0
    out = capsys.readouterr()
    assert {i["kind"] for i in json.loads(out.out)["items"]} == {"note"} and "from the index ctx_other" in out.err


def test_summary_intent_over_several_indexes_web_and_mcp(demo, capsys):
    """Several indexes: the answer lists the largest communities of all of them, each naming its
    index (the merge of each index's own answer); the web page and the MCP brief form show it."""
    from kgsearch.explore.topics import global_answer, merged_answer
    from kgsearch.query.api import engine_for
    from kgsearch.serve.holder import Holder
    from kgsearch.serve.server import App

    base, db = demo
    other = base / "topics_other.db"
    shutil.copy(db, other)
    own = global_answer(engine_for(db).ix, "x", topics=5)["topics"]
    capsys.readouterr()
    assert cli("search", "--db", db, "--db", other, "--json", "what are the main topics in my notes", "-k", "3") == 0
    ans = json.loads(capsys.readouterr().out)["answer"]
    # the same index twice: each community twice, demo's copy first, sizes never rising
    want = [(c["label"], c["size"], name) for c in own for name in ("demo", "topics_other")][:5]
    assert [(t["label"], t["size"], t["index"]) for t in ans["topics"]] == want
    assert ans["total"] == 2 * global_answer(engine_for(db).ix)["total"]
    lines = ans["answer"].splitlines()
    assert "over 2 indexes" in lines[0] and lines[1].startswith(f"1. {own[0]['label']}") and "[index demo]" in lines[1]
    assert merged_answer({"a": None}) is None
    one = merged_answer({"solo": global_answer(engine_for(db).ix, topics=3)}, topics=3)
    assert [t["label"] for t in one["topics"]] == [c["label"] for c in own[:3]]
    assert cli("search", "--db", db, "--db", other, "what is this vault about", "-k", "2") == 0
    out = capsys.readouterr().out
    assert out.index(f"1. {own[0]['label']}") < out.index("matching nodes:")
    # the web page shows the answer above the hits (labels escaped; central nodes linked)
    h = Holder(str(db))
    try:
        app = App({"index": h}, {"127.0.0.1", "localhost", "::1", ""})
        st, _, page = app.handle("GET", "/?q=what+are+the+main+topics+in+my+notes", {"host": "127.0.0.1:8765"}, b"")
        html = page.decode()
        assert st == 200 and "<h2>Main topics</h2>" in html and html.index("Main topics") < html.index("class=hits")
        from kgsearch.serve.html import esc
        for c in own[:3]:
            assert esc(c["label"]) in html and f"{c['size']:,} nodes" in html
        st, _, page = app.handle("GET", "/?q=termux+backup", {"host": "127.0.0.1:8765"}, b"")
        assert "Main topics" not in page.decode()
    finally:
        h.close()
    res = Server(db).call("search", {"query": "what are the main topics in my notes", "k": 2})
    assert res["structuredContent"]["answer"]["topics"][0]["label"] == own[0]["label"]
    assert "answer" not in Server(db).call("search", {"query": "termux backup", "k": 2})["structuredContent"]


def test_a_flag_value_means_exactly_that_value_on_every_surface(tmp_path):
    """A filter value given through a flag (or an MCP / HTTP argument) is that value: a folder
    named ``<odd`` is a path prefix, ``--kind '>=a'`` a kind no node has. They were once turned
    into words (``path:<odd/``) and read again, as a comparison: exit 2, "takes no comparison"."""
    from conftest import run
    from kgsearch.indexer import index_paths
    from kgsearch.serve.holder import Holder
    from kgsearch.serve.server import App

    notes = tmp_path / "notes"
    (notes / "<odd").mkdir(parents=True)
    (notes / "sub").mkdir()
    (notes / "<odd" / "a.md").write_text("# Alpha\n\nretry loop\n", encoding="utf-8")
    (notes / "sub" / "b.md").write_text("# Beta\n\nretry loop again\n", encoding="utf-8")
    db = tmp_path / "x.db"
    index_paths(db, [str(notes)])
    rc, out, err = run("search", "--db", db, "retry", "--path", "<odd/", "--json")
    assert (rc, err) == (0, "")
    assert [h["key"] for h in json.loads(out)["hits"]] == ["md:<odd/a"]
    rc, out, err = run("search", "--db", db, "retry", "--kind", ">=a", "-q", "--json")
    assert rc == 0 and json.loads(out)["hits"] == []
    rc, out, err = run("search", "--db", db, "retry", "--kind", ">=a")
    assert rc == 0 and "note: no node matches the filters kind:>=a" in err
    rc, out, err = run("context", "--db", db, "retry", "--path", "<odd/", "--format", "json")
    assert rc == 0 and [it["path"] for it in json.loads(out)["items"]] == ["<odd/a.md"]
    res = Server(db).call("search", {"query": "retry", "path": ["<odd/"], "detail": "full"})
    assert not res["isError"] and [h["key"] for h in res["structuredContent"]["hits"]] == ["md:<odd/a"]
    h = Holder(str(db))
    try:
        app = App({"index": h}, {"127.0.0.1", "localhost", "::1", ""})
        st, _, payload = app.handle("GET", "/api/search?q=retry&path=%3Codd%2F", {"host": "127.0.0.1:8765"}, b"")
        assert st == 200 and [x["key"] for x in json.loads(payload)["hits"]] == ["md:<odd/a"]
    finally:
        h.close()


def test_over_several_indexes_a_notice_names_the_index_it_is_about(demo, tmp_path):
    """`search --db demo.db --db notes.db --path vault/howto/`: hits from the demo, and the note "no
    node matches the filters path:vault/howto/" (true of notes.db only) said without naming it."""
    from conftest import run
    from kgsearch.indexer import index_paths

    _, db = demo
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Termux\n\nbackup on the phone\n", encoding="utf-8")
    notes = tmp_path / "notes.db"
    index_paths(notes, [str(tmp_path / "notes")])
    rc, out, err = run("search", "termux backup", "--db", db, "--db", notes, "--path", "vault/howto/", "--json")
    res = json.loads(out)
    assert rc == 0 and res["hits"] and {h["index"] for h in res["hits"]} == {"demo"}
    own = [n for n in res["notices"] if "similar_text" not in n]      # (the first search links the two)
    assert own == ["notes: no node matches the filters path:vault/howto/"]
    assert "note: notes: no node matches the filters path:vault/howto/\n" in err
