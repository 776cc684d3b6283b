"""Test scope's third evidence (test files whose path names the changed files' subjects) and
Rust crates in a tree without Cargo.toml (workspace members apart, re-exports followed)."""
from __future__ import annotations

import math

from kgsearch.explore import impact_of_nodes
from kgsearch.explore.testscope import path_named, path_words
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest.rspaths import crate_of
from kgsearch.store.db import Index


def test_path_words():
    assert path_words("tokio/tests/macros_select.rs") == {"tokio", "macros", "select"}
    assert path_words("src/test/java/com/x/FooBarTest.java") == {"com", "x", "foo", "bar"}
    assert path_words("pkg/__init__.py") == {"pkg"} and path_words("src/lib.rs") == set()
    assert path_words("tests/Unit/UserTest.php") == {"unit", "user"}             # (not "php", "kts": no subject)
    assert path_words("app/build.gradle.kts") == {"app", "build", "gradle"}


def _write(root, files: dict[str, str]):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_crates_without_manifests_and_test_scope(tmp_path):
    root = tmp_path / "ws@0123abc"
    _write(root, {
        "app/src/lib.rs": "pub use mac_kit::thing;\npub mod select;\n",
        "app/src/select.rs": "pub fn pick() -> u8 { 1 }\n",
        "mac-kit/src/lib.rs": "pub fn thing() -> u8 { 2 }\n",
        "app/tests/uses_thing.rs": "use app::thing;\n\n#[test]\nfn t() { assert_eq!(thing(), 2); }\n",
        "app/tests/select_words.rs": "#[test]\nfn s() { assert_eq!(1, 1); }\n",
        "app/tests/other.rs": "#[test]\nfn o() { assert_eq!(3, 3); }\n",
        "server/server_test.go": "package server\n\nfunc TestX(t *testing.T) {}\n",
        "server/select_test.go": "package server\n\nfunc TestY(t *testing.T) {}\n",
    })
    r = str(root)
    # each folder laid out as a crate (src/lib.rs) is a crate named after it; the root's name without
    assert crate_of(root / "mac-kit/src/lib.rs", r) == ("mac_kit", "mac-kit")
    assert crate_of(root / "app/tests/uses_thing.rs", r) == ("app", "app")
    assert crate_of(root / "build.rs", r) == ("ws", "")
    db = tmp_path / "ws.db"
    index_paths(db, [r], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        calls = c.execute("SELECT d.key FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
                          "WHERE s.key = 'rs:app/tests/uses_thing.rs:t' AND e.type = 'calls'").fetchall()
        assert calls == [("rs:mac-kit/src/lib.rs:thing",)]       # through app's `pub use mac_kit::thing`
        thing = [i for (i,) in c.execute("SELECT id FROM nodes WHERE key LIKE 'rs:mac-kit/src/lib.rs%'")]
        tests = [t["relpath"] for t in impact_of_nodes(ix, thing, depth=3, tests=True)["tests"]]
        assert tests[0] == "app/tests/uses_thing.rs"
        # the path evidence: app/src/select.rs -> app/tests/select_words.rs (idf-weighted words); Go
        # tests sit beside their package, so their paths are not read as naming a subject
        sel = [i for (i,) in c.execute("SELECT id FROM nodes WHERE key LIKE 'rs:app/src/select.rs%'")]
        got = path_named(ix, sel)
        fid = {rel.split(r + "/")[-1]: i for i, rel in c.execute("SELECT id, path FROM files")}
        n = len(fid)
        df_app = sum(1 for rel in fid if "app" in path_words(rel))
        df_sel = sum(1 for rel in fid if "select" in path_words(rel))
        assert got[fid["app/tests/select_words.rs"]] == math.log1p(n / df_app) + math.log1p(n / df_sel)
        assert got[fid["app/tests/other.rs"]] == math.log1p(n / df_app)
        assert fid["server/select_test.go"] not in got
        ranked = [t["relpath"] for t in impact_of_nodes(ix, sel, depth=3, tests=True)["tests"]]
        assert ranked.index("app/tests/select_words.rs") < ranked.index("app/tests/other.rs")


def test_order_files_puts_the_changed_files_own_tests_last():
    from kgsearch.explore.testscope import order_files
    score = {1: 0.5, 2: 0.9, 3: 0.7, 4: 0.5}
    names = {1: "b.rs", 2: "src/x.rs", 3: "tests/c.rs", 4: "a.rs"}
    assert order_files(score, {2}, names) == [3, 4, 1, 2]      # by score, ties by name, the changed file last
    assert order_files(score, set(), names) == [2, 3, 4, 1]


def test_similar_tests_is_bm25_of_each_test_file_against_the_changed_text(tmp_path):
    from collections import Counter, defaultdict

    from kgsearch.explore.testscope import similar_tests
    from kgsearch.store.rows import iter_node_texts
    from kgsearch.text.idcodec import decode_ids, decode_tf
    from kgsearch.text.postings import read_doclen, read_rows, stored
    root = tmp_path / "pkg"
    _write(root, {
        "pkg/parse.py": "def parse_header(line):\n    '''Split a header line into name and value.'''\n"
                        "    return line.split(':', 1)\n",
        "pkg/other.py": "def render(x):\n    return str(x)\n",
        "tests/test_parse.py": "from pkg.parse import parse_header\n\ndef test_header_line():\n"
                               "    assert parse_header('a: b') == ['a', ' b']\n\ndef test_value():\n"
                               "    '''name and value of a header'''\n    assert True\n",
        "tests/test_render.py": "from pkg.other import render\n\ndef test_render():\n    assert render(1) == '1'\n",
    })
    db = tmp_path / "p.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        start = [i for (i,) in c.execute("SELECT id FROM nodes WHERE key LIKE 'py:pkg.parse%'")]
        got = similar_tests(ix, start)
        # the slow reference: one test node at a time, one term at a time, Okapi BM25 per file
        st, params, _ = stored(ix)
        an = params.analyzer()
        q = Counter()
        for _, name, text in iter_node_texts(c, start):
            q.update(an(f"{name or ''} {text or ''}"))
        tests = dict(c.execute("SELECT id, file_id FROM nodes WHERE (flags & 2) != 0 AND file_id IS NOT NULL"))
        assert tests
        ids, lens = read_doclen(ix)
        dl = dict(zip(ids.tolist(), lens.tolist()))
        flen, ftf = defaultdict(float), defaultdict(Counter)
        for nid, fid in tests.items():
            flen[fid] += dl.get(nid, 0.0)
        post = {t: (df, dict(zip(decode_ids(i).tolist(), decode_tf(tf, df).tolist())))
                for t, df, i, tf in read_rows(c, sorted(q))}
        for t, (df, tfs) in post.items():
            for nid, fid in tests.items():
                ftf[fid][t] += tfs.get(nid, 0)
        avg = sum(flen.values()) / len(flen)
        n = int(st["n"])
        want = {}
        for fid in flen:
            s = sum(q[t] * math.log1p((n - df + 0.5) / (df + 0.5)) * ftf[fid][t] * 2.2
                    / (ftf[fid][t] + 1.2 * (0.25 + 0.75 * flen[fid] / avg)) for t, (df, _) in post.items())
            if s > 0:
                want[fid] = s
        assert got.keys() == want.keys() and len(got) == 2
        for fid in want:
            assert math.isclose(got[fid], want[fid], rel_tol=1e-9)
        parse_file = c.execute("SELECT id FROM files WHERE path LIKE '%test_parse.py'").fetchone()[0]
        assert max(got, key=got.get) == parse_file


def test_path_scores_do_not_depend_on_the_hash_seed(tmp_path):
    """Three test files whose paths share equally weighted words with the change tie exactly, in
    every process: the idfs were summed in the shared-word set's order, which follows the string
    hash (PYTHONHASHSEED), so with seeds 0 and 1 weekYear's sum came out one ulp off dayOfYear's
    and quarterOfYear's and the tie, meant to fall to the file id, fell to the seed (2 of the 167
    code-tasks-multi lists changed between two runs)."""
    import ast
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = tmp_path / "tree"
    _write(root, {
        "src/plugin/weekOfYear/index.js": "export default function weekOfYear(d) { return 1 }\n",
        "src/plugin/isoWeek/index.js": "export default function isoWeek(d) { return 2 }\n",
        "src/filler/f0.js": "export const v0 = 0\n",
        "src/filler/f1.js": "export const v1 = 1\n",
        "test/plugin/weekYear.test.js": "it('w', () => { expect(1).toBe(1) })\n",      # plugin week year
        "test/plugin/dayOfYear.test.js": "it('d', () => { expect(1).toBe(1) })\n",     # plugin of year
        "test/plugin/quarterOfYear.test.js": "it('q', () => { expect(1).toBe(1) })\n",  # plugin of year
    })
    db = tmp_path / "t.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    code = ("import sys\nfrom kgsearch.store.db import Index\nfrom kgsearch.explore.testscope import path_named\n"
            "with Index.open(sys.argv[1], readonly=True) as ix:\n"
            "    ids = [i for (i,) in ix.conn.execute(\"SELECT n.id FROM nodes n JOIN files f ON f.id = n.file_id "
            "WHERE f.path LIKE '%weekOfYear/index.js'\")]\n"
            "    print(sorted((f, repr(v)) for f, v in path_named(ix, ids).items()))\n")
    repo = str(Path(__file__).resolve().parents[1])
    outs = set()
    for seed in ("0", "1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = subprocess.run([sys.executable, "-c", code, str(db)], env=env, capture_output=True, text=True,
                             check=True).stdout
        got = ast.literal_eval(out)      # [(file id, repr of its score)]
        assert len(got) == 3 and len({v for _, v in got}) == 1, (seed, got)
        outs.add(out)
    assert len(outs) == 1


def test_a_walk_that_reaches_most_tests_weighs_less_than_the_text():
    """Hand-computed: the walk reached files 1, 3 and 4 (ranks 1-3) of the index's 4 test files, so
    the reached ranking weighs 1 - 3/4 = .25; the text ranks file 2 first and file 1 30th. Unweighted,
    file 1 led on the walk alone (1/61 + 1/90 > 1/61); weighted, .25/61 + 1/90 = .015209 < 1/61 =
    .016393 and the text's first file leads."""
    import pytest

    from kgsearch.explore.testscope import fuse, reach_weight, reached_ranks
    reached = reached_ranks({1: (1, 2.0), 3: (2, 5.0), 4: (2, 1.0)})
    assert reached == {1: 1.0, 3: 2.0, 4: 3.0}          # nearest first, then the stronger
    text = {2: 1.0, 1: 30.0}
    assert reach_weight(3, 4) == 0.25 and reach_weight(0, 4) == 1.0 and reach_weight(4, 4) == 0.0
    assert reach_weight(3, 0) == 1.0                     # no test file indexed: nothing to weigh
    flat = fuse([reached, {}, {}, text])
    assert sorted(flat, key=lambda f: -flat[f]) == [1, 2, 3, 4]
    got = fuse([reached, {}, {}, text], [reach_weight(3, 4), 1.0, 1.0, 1.0])
    assert got == pytest.approx({1: 0.25 / 61 + 1 / 90, 2: 1 / 61, 3: 0.25 / 62, 4: 0.25 / 63}, abs=1e-15)
    assert sorted(got, key=lambda f: -got[f]) == [2, 1, 3, 4]


def test_a_module_s_declared_test_modules_are_its_tests(tmp_path):
    """Rust's unit tests in their own files: ``runtime/mod.rs`` declares ``#[cfg(test)] mod
    tests;`` (-> ``runtime/tests/mod.rs``, depth 1), which declares ``mod queue;`` (depth 2).
    They are the changed module's own tests; a test helper the code imports from another folder
    is not, nor is a test module another file declares."""
    from kgsearch.explore.testscope import changed_files, declared_tests, shared_ranks

    root = tmp_path / "crate"
    _write(root, {
        "src/lib.rs": "pub mod runtime;\npub mod other;\n",
        "src/runtime/mod.rs": "pub fn spawn() -> u8 { 1 }\n\n#[cfg(test)]\nmod tests;\n",
        "src/runtime/tests/mod.rs": "mod queue;\nmod task;\n",
        "src/runtime/tests/queue.rs": "#[test]\nfn q() { assert_eq!(crate::runtime::spawn(), 1); }\n",
        "src/runtime/tests/task.rs": "#[test]\nfn t() { assert_eq!(1, 1); }\n",
        "src/other/mod.rs": "pub fn o() -> u8 { 2 }\n\n#[cfg(test)]\nmod tests;\n",
        "src/other/tests.rs": "#[test]\nfn o() { assert_eq!(2, 2); }\n",
        "tests/integration.rs": "#[test]\nfn i() { assert_eq!(3, 3); }\n",
    })
    db = tmp_path / "c.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        rel = {i: p.split(str(root) + "/")[-1] for i, p in c.execute("SELECT id, path FROM files")}
        start = [i for (i,) in c.execute("SELECT id FROM nodes WHERE key LIKE 'rs:src/runtime/mod.rs%'")]
        got = declared_tests(ix, changed_files(ix, start))
        assert {rel[f]: d for f, d in got.items()} == {"src/runtime/tests/mod.rs": 1, "src/runtime/tests/queue.rs": 2,
                                                         "src/runtime/tests/task.rs": 2}
        tests = [t["relpath"] for t in impact_of_nodes(ix, start, depth=3, tests=True)["tests"]]
        assert set(tests[:3]) == {"src/runtime/tests/mod.rs", "src/runtime/tests/queue.rs", "src/runtime/tests/task.rs"}
        lib = [i for (i,) in c.execute("SELECT id FROM nodes WHERE key LIKE 'rs:src/lib.rs%'")]
        assert declared_tests(ix, changed_files(ix, lib)) == {}       # (its children are not tests)
    assert shared_ranks({1: 1, 2: 2, 3: 2, 4: 2, 5: 3}) == {1: 1.0, 2: 3.0, 3: 3.0, 4: 3.0, 5: 5.0}
    assert shared_ranks({}) == {}
