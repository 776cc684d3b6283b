"""Field filters before ranking (issue 28): the SQL set against its slow twin on every node, each
channel's filtered answer against a brute-force filter of its unfiltered answer over the whole
index, k hits back when the set holds k matches, parse round trips, and the usage errors."""
from __future__ import annotations

import os
import re
import textwrap

import numpy as np
import pytest

from kgsearch.errors import UsageError
from kgsearch.query import filters as F
from kgsearch.query.filters import FieldFilter, allowed_ids, matches, node_rows, parse_filter, parse_filters
from kgsearch.query.options import SearchOptions
from kgsearch.query.parse import split_filters

OLD = 1_700_000_000            # 2023-11-14
NEW = 1_790_000_000            # 2026-09-22


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    """The demo (notes + KG, its first root) and a small code tree (second root ``code``) with
    files of two ages, Python and Rust, sources and tests."""
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import index_paths
    from kgsearch.query.engine import Engine
    from kgsearch.store.db import Index

    base = tmp_path_factory.mktemp("filters")
    code = base / "code"
    files = {
        "src/util.py": "def helper(x):\n    \"\"\"Retry the backup helper.\"\"\"\n    return x + 1\n",
        "src/app.py": "from util import helper\n\n\ndef run_backup():\n    \"\"\"Run the backup with retries.\"\"\"\n"
                      "    return helper(1)\n\n\nclass BackupJob:\n    def start(self):\n        return run_backup()\n",
        "tests/test_app.py": "from app import run_backup\nfrom util import helper\n\n\ndef test_backup():\n"
                             "    assert run_backup() == helper(1)\n",
        "src/lib.rs": "/// Backup retry helper in Rust.\npub fn backup_retry(n: u32) -> u32 {\n    n + 1\n}\n",
        "notes/plan.md": "# Backup plan\n\n#project\n\nThe backup helper runs nightly; see `helper`.\n",
    }
    for rel, text in files.items():
        p = code / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
        t = OLD if rel.startswith("tests/") or rel.endswith(".rs") else NEW
        os.utime(p, (t, t))
    db = base / "f.db"
    index_paths(db, [str(demo_dir()), str(code)])
    ix = Index.open(db, readonly=True)
    yield ix, Engine(ix, strict=True)
    ix.close()


CASES = [
    ["kind:note"], ["kind:function"], ["kind:function", "kind:method"], ["-kind:section"],
    ["path:vault/howto/"], ["path:src/"], ["-path:tests/"], ["path:src/*.py"], ["path:vault/tools/T*"],
    ["tag:howto"], ["tag:android"], ["-tag:howto"], ["tag:project"],
    ["lang:python"], ["lang:rs"], ["lang:kg", "lang:markdown"], ["-lang:markdown"],
    ["modified:>=2026-01-01"], ["modified:<2026-01-01"], ["modified:2023-11-14"], ["modified:>2023-11-14"],
    ["modified:<=2023-11-14"],
    ["root:code"], ["root:demo"], ["-root:code"],
    ["kind:function", "path:src/", "-path:tests/", "lang:python", "modified:>=2026-01-01", "root:code"],
    ["kind:note", "tag:howto", "root:demo"],
]


@pytest.mark.parametrize("words", CASES, ids=" ".join)
def test_the_set_equals_a_brute_force_filter_of_every_node(fx, words):
    ix, eng = fx
    flt = parse_filters(words)
    want = [r["id"] for r in node_rows(ix) if matches(ix, flt, r)]
    got = allowed_ids(ix, flt).tolist()
    assert got == want
    assert F.allowed_ids_sql(ix, flt).tolist() == want
    assert allowed_ids(ix, flt, eng.graph()).tolist() == want          # kinds read from the graph arrays
    assert 0 < len(got) < ix.conn.execute("SELECT count(*) FROM nodes").fetchone()[0], words   # a real cut


def test_the_fields_mean_what_they_say(fx):
    ix, _ = fx
    keys = lambda words: {k for (k,) in ix.conn.execute(                      # noqa: E731
        f"SELECT key FROM nodes WHERE id IN ({','.join(map(str, allowed_ids(ix, parse_filters(words)).tolist()))})")}
    tail = lambda ks: {re.split(r"[.:]", k)[-1] for k in ks}                 # noqa: E731
    assert tail(keys(["kind:function", "root:code"])) == {"helper", "run_backup", "test_backup", "backup_retry"}
    assert all("tests/" not in k for k in keys(["-path:tests/", "kind:function"]))
    assert tail(keys(["kind:function", "modified:<2026-01-01"])) == {"test_backup", "backup_retry"}
    assert "md:vault/howto/backup-vault" in keys(["tag:howto"]) and "md:vault/tools/SQLite" not in keys(["tag:howto"])
    assert keys(["tag:android"]) >= keys(["tag:android/termux"]) and keys(["tag:android/termux"])   # nested tags


# one query per channel that makes it answer; the channel runs alone (its gate does not apply)
CHANNEL_QUERIES = {"bm25": "backup retry helper", "prf": "backup retry", "fts": '"backup" OR termux',
                   "pattern": "/[Bb]ackup/", "anchors": "`helper` fails in src/util.py when the backup retries",
                   "relation": "who calls helper", "dense": "backing up my notes safely"}
CHANNEL_FILTERS = {"bm25": ["-path:vault/"], "prf": ["kind:note"], "fts": ["tag:howto"],
                   "pattern": ["-path:tests/"], "anchors": ["root:code", "kind:function"],
                   "relation": ["-path:tests/"], "dense": ["lang:markdown", "kind:note"]}


@pytest.mark.parametrize("channel", list(CHANNEL_QUERIES))
def test_each_channel_answers_inside_the_set(fx, channel):
    """Over the whole index (depth and k past the node count): the filtered hits are exactly the
    unfiltered hits the brute-force filter keeps, for every channel alone."""
    ix, eng = fx
    n = ix.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    wide = SearchOptions(k=n, depth=n, channels=[channel], collapse=False, snippets=False, feedback=False)
    q = CHANNEL_QUERIES[channel]
    flt = parse_filters(CHANNEL_FILTERS[channel])
    keep = {r["id"] for r in node_rows(ix) if matches(ix, flt, r)}
    plain = {h.id for h in eng.search(q, wide).hits}
    got = {h.id for h in eng.search(q, wide.but(filters=CHANNEL_FILTERS[channel])).hits}
    assert plain - keep and plain & keep, channel          # the filter cuts this channel's answer
    assert got == plain & keep
    in_text = {h.id for h in eng.search(q + " " + " ".join(CHANNEL_FILTERS[channel]), wide).hits}
    assert in_text == got                                  # the same filters written in the query


@pytest.mark.parametrize("channel, query, flt, k", [
    ("bm25", "backup retry helper", ["root:demo"], 3),
    ("dense", "backing up my notes safely", ["root:code"], 3),
    ("pattern", "/[Bb]ackup/", ["root:demo"], 3),
    ("relation", "who calls helper", ["-path:tests/"], 2),
])
def test_k_hits_come_back_not_k_minus_the_filtered(fx, channel, query, flt, k):
    """depth = k with a filter the channel's best fail: still k hits, the channel's k best inside
    the set (a post-filter of its top k would leave fewer)."""
    ix, eng = fx
    n = ix.conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    keep = {r["id"] for r in node_rows(ix) if matches(ix, parse_filters(flt), r)}
    small = SearchOptions(k=k, depth=k, channels=[channel], collapse=False, snippets=False, feedback=False)
    wide = small.but(k=n, depth=n)
    by_score = {h.id: h.channels[channel]["score"] for h in eng.search(query, wide).hits}
    best_inside = sorted((i for i in by_score if i in keep), key=lambda i: -by_score[i])
    top = [h.id for h in eng.search(query, small).hits]
    got = eng.search(query, small.but(filters=flt)).hits
    assert len(best_inside) >= k and len(set(top) & keep) < k      # post-filtering would come up short
    assert len(got) == k and {h.id for h in got} <= keep
    kth = by_score[best_inside[k - 1]]
    assert all(by_score[h.id] >= kth - 1e-9 for h in got)


def test_default_pipeline_and_graph_stage_stay_inside_the_set(fx):
    ix, eng = fx
    for words in (["kind:note"], ["-path:vault/", "-lang:kg"], ["tag:howto"], ["root:code"]):
        keep = {r["id"] for r in node_rows(ix) if matches(ix, parse_filters(words), r)}
        resp = eng.search("termux backup sqlite", SearchOptions(k=10, filters=words, feedback=False, collapse=False))
        assert resp.hits and {h.id for h in resp.hits} <= keep, words
        assert len(resp.hits) == min(10, resp.candidates)


@pytest.mark.parametrize("query", ["kind:tag", "backup kind:tag", "kind:entity", "sqlite kind:entity"])
def test_asking_for_a_structural_kind_finds_it(fx, query):
    """Tags, entities and placeholders rank 0 as structure, but `kind:tag` asks for them: it
    listed nothing ("no results") while stats counted the tags and the kinds note named them."""
    ix, eng = fx
    kind = query.split("kind:")[1]
    resp = eng.search(query, SearchOptions(k=5, feedback=False))
    assert resp.hits and {h.kind for h in resp.hits} == {kind}, (query, resp.notices)
    plain = eng.search(query.replace(f"kind:{kind}", "").strip() or "backup", SearchOptions(k=20, feedback=False))
    assert not [h for h in plain.hits if h.kind in ("tag", "entity", "placeholder")]


def test_why_a_tag_is_not_listed_says_it_is_structure(fx):
    """`why "backup" tag:howto` said "no channel returned this node among its candidates ...
    no seed links to it" and, on the next line, that it was a seed of the graph stage: the tag
    was a candidate, left out because tags are structure. It says so, and how to list tags."""
    from kgsearch.query.api import why

    _, eng = fx
    tag = next(h.key for h in eng.search("backup kind:tag", SearchOptions(k=1, feedback=False)).hits)
    info = why("backup", tag, engine=eng)
    assert info["rank"] is None and "no channel returned" not in info["reason"], info["reason"]
    assert "structure" in info["reason"] and "kind:tag" in info["reason"]
    asked = why("backup kind:tag", tag, engine=eng)
    assert asked["rank"] == 1


def test_a_filter_that_matches_nothing_says_so(fx):
    _, eng = fx
    resp = eng.search("backup kind:nosuch")
    assert resp.hits == [] and resp.notices[-1].startswith("no node matches the filters kind:nosuch (the kinds")
    assert "note" in resp.notices[-1]


def test_the_cache_key_holds_the_filters(fx):
    _, eng = fx
    q = eng.parse("backup")
    a = eng._cache_key(eng.allowed(q, SearchOptions(filters=["kind:note"]))[0], SearchOptions(), ["bm25"])
    b = eng._cache_key(eng.allowed(q, SearchOptions())[0], SearchOptions(), ["bm25"])
    assert a != b


@pytest.mark.parametrize("word", ["kind:function", "-path:tests/", "tag:project", "lang:rust", "root:work",
                                  "modified:>2026-10-01", "modified:>=2026-10-01", "modified:<=2026-10-01T12:00",
                                  "path:src/*.py"])
def test_a_filter_word_round_trips(word):
    f = parse_filter(word)
    assert str(f) == word and parse_filter(str(f)) == f
    assert split_filters(f"retry loop {word} now") == ("retry loop now", (f,))


def test_values_are_normalised():
    assert str(parse_filter("lang:py")) == "lang:python" and str(parse_filter("lang:RS")) == "lang:rust"
    assert str(parse_filter("tag:#Project")) == "tag:project"
    assert parse_filters("kind:a -kind:b") == (FieldFilter("kind", "a"), FieldFilter("kind", "b", negated=True))


@pytest.mark.parametrize("word, message", [
    ("kinds:function", "unknown filter field 'kinds'; the fields are kind, path, tag, lang, modified, root"),
    ("lang:cobol", "unknown language 'cobol' in 'lang:cobol'; choose from beir, c, cpp"),
    ("modified:>yesterday", "bad date 'yesterday' in modified:; write YYYY-MM-DD"),
    ("modified:2026-02-30", "bad date '2026-02-30' in modified:; write a real day"),
    ("kind:>x", "kind: takes no comparison (>); only modified: does"),
    ("nonsense", "bad filter 'nonsense': write FIELD:VALUE"),
])
def test_bad_values_are_one_line_usage_errors(word, message):
    with pytest.raises(UsageError) as e:
        parse_filter(word)
    assert str(e.value).startswith(message) and "\n" not in str(e.value) and e.value.code == 2


def test_query_words_misspelt_as_filters_are_errors_other_colons_are_text(fx):
    _, eng = fx
    with pytest.raises(UsageError, match=r"unknown filter field 'paths' in 'paths:src/' \(did you mean path:\?\)"):
        eng.parse("retry paths:src/")
    for text in ("note: backup", "std::vector", "see http://example.com", "error: retry"):
        assert eng.parse(text).filters == ()
    issue = "the config " + "word " * 20 + "has paths:src/ in it"          # a pasted issue: text, not an error
    assert eng.parse(issue).filters == () and "paths:src/" in eng.parse(issue).text


def test_a_pasted_issue_keeps_its_name_value_words_as_text(fx):
    """Filters are read from a query a person types (at most 20 words, the bound the misspelling
    check uses): a pasted issue that says `sudo chown root:root ~/backup` was an error (unknown
    root 'root', exit 2), and one with `path:/etc/backup.conf` answered nothing (a filter that
    keeps no node)."""
    _, eng = fx
    issue = ("the backup fails after I ran sudo chown root:root on the folder; the log says it cannot "
             "write path:/etc/backup.conf and then stops with kind:fatal")
    assert len(issue.split()) > 20
    q = eng.parse(issue)
    assert q.filters == () and "root:root" in q.text and "kind:fatal" in q.text
    resp = eng.search(issue)
    assert resp.hits and not any("no node matches the filters" in n for n in resp.notices)
    assert eng.parse("backup kind:note").filters == (FieldFilter("kind", "note"),)   # typed: a filter


def test_an_unknown_root_names_the_roots(fx):
    _, eng = fx
    with pytest.raises(UsageError, match=r"unknown root 'work' in 'root:work'; the roots are demo, code"):
        eng.search("backup root:work")


def test_flags_make_the_same_filters_as_words():
    got = F.from_flags({"kind": ["function"], "path": ["src/"], "exclude_path": ["tests/"], "tag": ["x"],
                        "lang": ["rs"], "modified_since": "2026-10-01", "root": ["work"]})
    assert [str(f) for f in got] == ["kind:function", "path:src/", "-path:tests/", "tag:x", "lang:rust",
                                     "modified:>=2026-10-01", "root:work"]


def test_langs_are_the_loaders():
    from kgsearch.ingest.loaders import LOADERS

    assert set(F.LANGS) == set(LOADERS)


def test_cli_filters_exit_2_and_search(fx, capsys):
    from tests.conftest import cli

    ix, _ = fx
    assert cli("search", "--db", str(ix.path), "backup", "--lang", "cobol") == 2
    assert "unknown language 'cobol'" in capsys.readouterr().err
    assert cli("search", "--db", str(ix.path), "--json", "backup", "--kind", "function", "--exclude-path",
               "tests/", "--root", "code") == 0
    import json
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits and all(h["kind"] == "function" and "/tests/" not in h["path"] for h in hits)


def test_in_set_both_ways_equal_isin():
    from kgsearch.query.signals import in_set

    rng = np.random.default_rng(3)
    for top, n_allowed, n_ids in ((1000, 300, 50), (10**9, 50, 20), (50, 0, 10), (50, 10, 0)):
        allowed = np.unique(rng.integers(0, top, n_allowed)).astype(np.int64)
        ids = np.concatenate([rng.integers(-2, top + 5, n_ids), allowed[:3]]).astype(np.int64)
        assert in_set(ids, allowed).tolist() == np.isin(ids, allowed).tolist()


@pytest.mark.parametrize("words, n", [(["modified:>=0001-01-01"], None), (["modified:<0001-01-01"], 0),
                                      (["modified:0001-01-01T00:00"], 0)])
def test_the_first_day_is_a_day_not_an_internal_error(fx, words, n):
    """`--modified-since 0001-01-01`: the day's local-time timestamp raised ValueError("year 0 is
    out of range"): exit 1, "internal error". Every node is modified after it, none before."""
    ix, _ = fx
    flt = parse_filters(words)
    want = [r["id"] for r in node_rows(ix) if matches(ix, flt, r)]
    total = ix.conn.execute("SELECT count(*) FROM files f JOIN nodes n ON n.file_id = f.id").fetchone()[0]
    assert allowed_ids(ix, flt).tolist() == want and len(want) == (total if n is None else n)


def test_path_sets_agree_on_glob_sets_and_dot_slash_prefixes(tmp_path):
    """The SQL set reads a path value as :func:`matches` does: fnmatch's ``[!a]`` (negation) and
    ``[^a]`` (a literal ^), and ``./`` taken off once (``lstrip`` made ``././src/`` mean ``src/``)."""
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.store.db import Index

    for rel in ("src/^a.md", "src/!a.md", "src/b_c.md", "src/a.md", "50%/p.md", "a b/sp.md", "Src/up.md"):
        p = tmp_path / "t" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {p.stem}\nword\n")
    index_paths(tmp_path / "i.db", [str(tmp_path / "t")], IndexOptions(steps=()))
    ix = Index.open(tmp_path / "i.db", readonly=True)
    try:
        rows = node_rows(ix)
        for v in ("src/[!a]*", "src/[^a]*", "src/[!^]*", "src/[", "././src/", "./src/", "src/b_c", "50%/",
                  "a b/", "SRC/", "src", "*/*.md"):
            for neg in ("", "-"):
                flt = parse_filters([f"{neg}path:{v}"])
                want = [r["id"] for r in rows if matches(ix, flt, r)]
                assert F.allowed_ids_sql(ix, flt).tolist() == want == allowed_ids(ix, flt).tolist(), neg + v
        names = lambda v: sorted(r["path"].rsplit("/", 1)[1] for r in rows                  # noqa: E731
                                 if matches(ix, parse_filters([f"path:{v}"]), r))
        assert names("src/[!a]*") == ["!a.md", "^a.md", "b_c.md"]
        assert names("src/[^a]*") == ["^a.md", "a.md"]
    finally:
        ix.close()


@pytest.mark.parametrize("word, message", [
    (r"a\b", r"bad filter 'a\b': write FIELD:VALUE"),
    (FieldFilter(r"a\b", "x"), r"unknown filter field 'a\b'; the fields are kind, path"),
    (r"lang:a\b", r"unknown language 'a\b' in 'lang:a\b'; choose from"),
    (r"-lang:a\b", r"unknown language 'a\b' in '-lang:a\b'; choose from"),
    (r"modified:>=a\b", r"bad date 'a\b' in modified:; write YYYY-MM-DD"),
])
def test_bad_filters_are_quoted_as_typed(word, message):
    """The filter errors showed the typed word with repr: a backslash came back doubled ('a\\\\b')."""
    with pytest.raises(UsageError) as e:
        parse_filter(word)
    assert str(e.value).startswith(message), str(e.value)


def test_a_misspelt_field_is_quoted_as_typed():
    with pytest.raises(UsageError) as e:
        F.check_query_words(r"retry paths:a\b")
    assert str(e.value).startswith(r"unknown filter field 'paths' in 'paths:a\b' (did you mean path:?)"), str(e.value)
