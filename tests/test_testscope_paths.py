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
