"""A Rust file another file declares under ``#[cfg(test)]`` (``#[cfg(test)] mod mocks;``) is test
code, as an inline ``#[cfg(test)] mod tests { }`` is (kgsearch/indexer/testdecl.py): tokio's
``fs/mocks.rs``, ``fs/mock_open_options.rs`` and ``fs/file/tests.rs`` said nothing of it
themselves and ranked as the library. Exact flags on small crates, and an incremental run that
adds or removes the attribute (or the declaring file) equals a fresh build."""
from __future__ import annotations

from indexer.test_incremental import assert_same, w

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.indexer.testdecl import declared_test_files
from kgsearch.store.db import Index
from kgsearch.types import FLAG_DECLARED_TEST, FLAG_TEST

LIB = """
    pub mod fs;
    #[cfg(test)]
    pub(crate) mod test_util;
    #[cfg(all(test, loom))]
    mod mocked;
    #[cfg(not(all(test, loom)))]
    mod real;
    #[cfg(any(test, feature = "x"))]
    mod either;
    #[cfg(test)]
    #[path = "util/fake.rs"]
    mod fake;
    #[cfg(test)]
    mod tests {
        mod inner;
    }
    """

CRATE = {
    "Cargo.toml": '[package]\nname = "demo"\n',
    "src/lib.rs": LIB,
    "src/fs/mod.rs": "mod file;\n#[cfg(test)]\nmod mocks;\npub fn open() {}\n",
    "src/fs/file.rs": "pub fn read() {}\n\n#[cfg(test)]\nmod tests;\n",
    "src/fs/file/tests.rs": "fn reads() { super::read(); }\n",
    "src/fs/mocks.rs": "pub struct Mock;\nimpl Mock { pub fn new() -> Self { Mock } }\n",
    "src/test_util.rs": "mod helper;\n",
    "src/test_util/helper.rs": "pub fn h() {}\n",
    "src/mocked.rs": "pub fn m() {}\n",
    "src/real.rs": "pub fn r() {}\n",
    "src/either.rs": "pub fn e() {}\n",
    "src/util/fake.rs": "pub fn f() {}\n",
    "src/tests/inner.rs": "fn i() {}\n",
}


def make(root, files=CRATE):
    for rel, text in files.items():
        w(root / rel, text)


def flags(db, root) -> dict[str, int]:
    with Index.open(db, readonly=True) as ix:
        return {k.split(":", 1)[1]: f for k, f in ix.conn.execute(
            "SELECT key, flags FROM nodes WHERE file_id IS NOT NULL")}


def test_files_declared_under_cfg_test_are_test_code(tmp_path):
    root = tmp_path / "crate"
    make(root)
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=()))
    got = flags(db, root)
    both = FLAG_TEST | FLAG_DECLARED_TEST
    for key in ("src/fs/mocks.rs", "src/fs/mocks.rs:Mock", "src/fs/mocks.rs:Mock.new",   # #[cfg(test)] mod x;
                "src/fs/file/tests.rs", "src/fs/file/tests.rs:reads",      # beside a file: file/tests.rs
                "src/test_util.rs", "src/test_util/helper.rs:h",            # pub(crate), and its children
                "src/mocked.rs:m",                                          # #[cfg(all(test, loom))]
                "src/util/fake.rs:f"):                                      # #[path = ".."]
        assert got[key] == both, key
    assert got["src/tests/inner.rs:i"] == FLAG_TEST       # a tests/ folder: the loader's flag alone
    for key in ("src/lib.rs", "src/fs/mod.rs:open", "src/fs/file.rs:read", "src/real.rs:r",
                "src/either.rs:e"):                       # not(all(test, ..)), any(test, ..): built without tests
        assert got[key] == 0, key


def test_a_plain_declaration_anywhere_keeps_the_file_production_code(tmp_path):
    root = tmp_path / "crate"
    make(root, {
        "Cargo.toml": '[package]\nname = "demo"\n',
        "src/lib.rs": "mod a;\nmod b;\n#[cfg(test)]\nmod c;\n",
        "src/a.rs": '#[cfg(test)]\n#[path = "shared.rs"]\nmod shared;\n',
        "src/b.rs": '#[path = "a/shared.rs"]\nmod shared;\n',         # the same file, built always
        "src/a/shared.rs": "pub fn s() {}\n",
        # a test module's items flagged by the loader keep their flag, the rest gets the indexer's
        "src/c.rs": "pub fn c() {}\n#[cfg(test)]\nmod t { fn x() {} }\n",
    })
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=()))
    got = flags(db, root)
    assert got["src/a/shared.rs:s"] == 0
    assert got["src/c.rs:c"] == FLAG_TEST | FLAG_DECLARED_TEST
    assert got["src/c.rs:t.x"] == FLAG_TEST and got["src/c.rs:t"] == FLAG_TEST
    with Index.open(db, readonly=True) as ix:
        declared, marked = declared_test_files(ix.conn)
        assert declared == marked and len(declared) == 1


def test_adding_and_removing_the_attribute_equals_a_fresh_build(tmp_path):
    tree = tmp_path / "tree"
    make(tree)
    db = tmp_path / "inc.db"
    index_paths(db, [str(tree)], IndexOptions(steps=()))
    assert_same(db, tree, tmp_path, "initial")
    both = FLAG_TEST | FLAG_DECLARED_TEST

    def edit(tag, fn):
        fn()
        rep = index_paths(db, [str(tree)], IndexOptions(steps=()))
        assert_same(db, tree, tmp_path, tag)
        return rep

    # the attribute removed: mocks.rs is the library again (it was not reloaded)
    rep = edit("unmark", lambda: w(tree / "src/fs/mod.rs", "mod file;\nmod mocks;\npub fn open() {}\n"))
    assert rep.files_loaded == 1 and flags(db, tree)["src/fs/mocks.rs:Mock.new"] == 0
    # ... and added back
    edit("mark", lambda: w(tree / "src/fs/mod.rs", "mod file;\n#[cfg(test)]\nmod mocks;\npub fn open() {}\n"))
    assert flags(db, tree)["src/fs/mocks.rs:Mock.new"] == both
    # the declared file edited (written with its loader's flags, then flagged again)
    edit("child", lambda: w(tree / "src/fs/mocks.rs", "pub struct Mock;\nimpl Mock { pub fn new() -> Self { Mock } "
                                                      "pub fn more(&self) {} }\n"))
    assert flags(db, tree)["src/fs/mocks.rs:Mock.more"] == both
    # the subtree: test_util.rs made plain, then its child's declaration under an inline test module
    edit("subtree", lambda: w(tree / "src/lib.rs", LIB.replace("#[cfg(test)]\n    pub(crate) mod test_util;",
                                                               "pub(crate) mod test_util;")))
    assert flags(db, tree)["src/test_util/helper.rs:h"] == 0
    edit("inline", lambda: w(tree / "src/test_util.rs", "#[cfg(test)]\nmod t {\n    #[path = \"../helper.rs\"]\n"
                                                        "    mod helper;\n}\n"))
    assert flags(db, tree)["src/test_util/helper.rs:h"] == both
    edit("inline-target", lambda: w(tree / "src/test_util/helper.rs", "pub fn h() {}\npub fn h2() {}\n"))
    # the declaring file deleted: nothing declares mocks.rs any more
    edit("parent gone", lambda: (tree / "src/fs/mod.rs").unlink())
    assert flags(db, tree)["src/fs/mocks.rs:Mock.new"] == 0
    edit("parent back", lambda: w(tree / "src/fs/mod.rs", "mod file;\n#[cfg(test)]\nmod mocks;\n"))
    assert flags(db, tree)["src/fs/mocks.rs:Mock.new"] == both
