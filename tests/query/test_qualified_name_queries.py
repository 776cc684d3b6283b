"""A query that is one identifier or qualified name (``HasPersistentFlags``, ``Cls.method``, ``Cls#method``, ``crate::Type::method``)
finds the definition it names first, in every language: the anchors channel resolves its qualifier
(a class, a Java package's folders, a Rust crate folder as Cargo's registry names it)."""
from __future__ import annotations

import pytest

import kgsearch
from conftest import write_files
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query.anchors import resolve
from kgsearch.query.codetask import Anchor
from kgsearch.query.intent import classify
from kgsearch.query.parse import parse
from kgsearch.store.db import Index

FILES = {
    # a Java package is its folders
    "native/src/main/java/org/jpype/JPypeContext.java": """\
        package org.jpype;

        /** The context: holds the type manager and the type factory. */
        public class JPypeContext {
          private TypeManager typeManager;
          private TypeFactory typeFactory;

          public TypeFactory getTypeFactory() {
            return this.typeFactory;
          }

          public TypeManager getTypeManager() {
            return this.typeManager;
          }
        }
        """,
    "native/src/main/java/org/jpype/manager/TypeManager.java": """\
        package org.jpype.manager;

        /** The type manager: finds the type manager's classes for the context. */
        public class TypeManager {
          public Class<?> findClass(Class<?> cls) { return cls; }
        }
        """,
    # C++ with a method of the same name: the type manager of another context
    "native/common/jp_context.h": """\
        class JPContext {
        public:
            /** The type manager of this context; the type manager finds classes. */
            JPTypeManager* getTypeManager() { return m_TypeManager; }
            JPTypeManager* m_TypeManager;
        };
        """,
    # a crate folder as Cargo's registry and Debian's librust-*-dev unpack it
    "registry/semver-1.0.14/src/lib.rs": """\
        /// A version requirement: matches versions.
        pub struct VersionReq { pub comparators: Vec<u32> }

        /// A version.
        pub struct Version { pub major: u64 }

        impl VersionReq {
            /// Whether the version matches this requirement's comparators.
            pub fn matches(&self, version: &Version) -> bool { !self.comparators.is_empty() && version.major > 0 }
        }
        """,
    # Python
    "pkg/tfidf.py": '''\
        class TFIDF:
            """Keyword extraction by TF-IDF: tags, weights, the IDF table."""

            def extract_tags(self, sentence, topK=20):
                """Extract the tags of a sentence by their TF-IDF weights."""
                return sentence[:topK]

            def set_idf_path(self, path):
                """The IDF table's path for the tags' weights."""
                self.path = path
        ''',
}


def indexed(root, files: dict[str, str]):
    """``files`` written under ``root / "tree"`` (dedented) and indexed into ``root / "i.db"``."""
    write_files(root / "tree", files)
    index_paths(root / "i.db", [str(root / "tree")], IndexOptions())
    return root / "i.db"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return indexed(tmp_path_factory.mktemp("qual"), FILES)


@pytest.mark.parametrize("query, want", [
    ("JPypeContext.getTypeManager", "java:native/src/main/java/org/jpype/JPypeContext.java:JPypeContext.getTypeManager"),
    ("org.jpype.JPypeContext.getTypeManager",
     "java:native/src/main/java/org/jpype/JPypeContext.java:JPypeContext.getTypeManager"),
    ("VersionReq::matches", "rs:registry/semver-1.0.14/src/lib.rs:VersionReq.matches"),
    ("semver::VersionReq::matches", "rs:registry/semver-1.0.14/src/lib.rs:VersionReq.matches"),
    ("TFIDF.extract_tags", "py:pkg.tfidf.TFIDF.extract_tags"),
    ("pkg.tfidf.TFIDF.extract_tags", "py:pkg.tfidf.TFIDF.extract_tags"),
])
def test_a_qualified_name_finds_its_definition_first(db, query, want):
    hits = kgsearch.search(query, db=str(db), k=3).hits
    assert hits[0].key == want, [h.key for h in hits]


def test_a_rust_path_is_a_qualified_name_and_a_file_name_is_not_one():
    assert parse("semver::VersionReq::matches").identifier == "dotted name"
    assert classify(parse("semver::VersionReq::matches")).name == "exact_match"
    assert [a.kind for a in parse("server.go").anchors] == ["path"]     # a file name: no dotted anchor


def test_a_crate_folder_with_its_version_and_a_java_package_resolve(db):
    with Index.open(db, readonly=True) as ix:
        key = dict(ix.conn.execute("SELECT id, key FROM nodes"))
        got = {key[n] for n in resolve(ix.conn, [Anchor("semver.VersionReq.matches", "dotted"),
                                                 Anchor("org.jpype.JPypeContext.getTypeManager", "dotted")])}
        wrong = {key[n] for n in resolve(ix.conn, [Anchor("other.VersionReq.matches", "dotted"),
                                                   Anchor("com.jpype.JPypeContext.getTypeManager", "dotted")])}
    assert got == {"rs:registry/semver-1.0.14/src/lib.rs:VersionReq.matches",
                   "java:native/src/main/java/org/jpype/JPypeContext.java:JPypeContext.getTypeManager"}
    assert wrong == set()


COBRA = {
    "command.go": """\
        package cobra

        // Command is a command for your application.
        type Command struct {
        \tpflags *FlagSet
        \tlflags *FlagSet
        }

        // PersistentFlags returns the persistent FlagSet specifically set in the current command.
        func (c *Command) PersistentFlags() *FlagSet {
        \treturn c.pflags
        }

        // LocalFlags returns the local FlagSet specifically set in the current command.
        func (c *Command) LocalFlags() *FlagSet {
        \tc.PersistentFlags()
        \treturn c.lflags
        }

        // InheritedFlags returns all flags which were inherited from parent commands.
        func (c *Command) InheritedFlags() *FlagSet {
        \tc.PersistentFlags()
        \treturn c.lflags
        }

        // HasPersistentFlags checks if the command contains persistent flags.
        func (c *Command) HasPersistentFlags() bool {
        \treturn c.PersistentFlags().HasFlags()
        }

        // HasAvailablePersistentFlags checks if the command contains persistent flags which are not hidden.
        func (c *Command) HasAvailablePersistentFlags() bool {
        \treturn c.PersistentFlags().HasAvailableFlags()
        }

        // ResetFlags deletes all flags from command.
        func (c *Command) ResetFlags() {
        \tc.PersistentFlags()
        \tc.LocalFlags()
        }
        """,
    "cmd/root.go": """\
        package cmd

        // Execute adds all child commands to the root command and sets flags appropriately.
        func Execute() {
        \trootCmd.PersistentFlags().StringVar(&cfgFile, "config", "", "config file")
        \trootCmd.PersistentFlags().Bool("viper", true, "use Viper for configuration")
        }
        """,
}


def test_one_identifier_finds_its_definition_above_a_hub_of_a_like_name(tmp_path):
    """(cobra: `HasPersistentFlags` ranked 2nd behind `PersistentFlags`, which everything calls: the
    exact name only tied the best BM25 hit and the graph signal decided; spf13/cobra 1.6.1, 40
    random unique names of each code-tasks-multi repository: 458 -> 515 of 519 first)"""
    db = indexed(tmp_path, COBRA)
    got = kgsearch.search("HasPersistentFlags", db=str(db), k=3, explain=True)
    assert [h.key for h in got.hits[:2]] == ["go:command.go:Command.HasPersistentFlags", "go:command.go:Command.PersistentFlags"]
    assert "anchors" in got.channels_run
    assert "anchors" not in kgsearch.search("persistent flags", db=str(db), k=3).channels_run   # prose: no names


def test_a_member_written_as_javadoc_writes_it_is_a_qualified_name(tmp_path):
    """`ArrayUtils#toPrimitive` (Javadoc, JSDoc, Ruby's docs) ranked the class first and the method
    second (commons-lang3, helper dog22); `ArrayUtils.toPrimitive` ranked the method first."""
    db = indexed(tmp_path, {"src/main/java/org/x/ArrayUtils.java": """\
        package org.x;

        /** Operations on arrays, primitive arrays (like int[]) and primitive wrapper arrays. */
        public class ArrayUtils {
            /** Converts an array of object Integers to primitives. */
            public static int[] toPrimitive(final Integer[] array) {
                return new int[0];
            }

            /** Converts an array of primitive ints to objects. */
            public static Integer[] toObject(final int[] array) {
                return new Integer[0];
            }
        }
        """})
    for query in ("ArrayUtils#toPrimitive", "org.x.ArrayUtils#toPrimitive"):
        assert kgsearch.search(query, db=str(db), k=3).hits[0].key == \
            "java:src/main/java/org/x/ArrayUtils.java:ArrayUtils.toPrimitive", query
    assert parse("ArrayUtils#toPrimitive").identifier == "dotted name"
    assert [a.text for a in parse("fixed in ArrayUtils#toPrimitive, see note#heading").anchors if a.kind == "dotted"] \
        == ["ArrayUtils.toPrimitive"]
    assert parse("note#heading").identifier is None
    assert not [a for a in parse("C# code in Program.Main#2").anchors if "#" in a.text or a.text.startswith("C.")]


def test_a_name_only_a_declaration_file_defines_is_not_lowered_as_a_stub(tmp_path):
    """axios's `ResponseType` is a type alias that only index.d.ts holds (index.js has no types):
    lowered x0.3 as a stub of index.js, it ranked 6th for its own name. A declaration that stands
    in for code indexed beside it (`declare function request`) stays below the code."""
    files = {"index.js": """\
                 function request(config) { return dispatch(config.responseType) }
                 function dispatch(responseType) { return responseType === 'json' ? 1 : 2 }
                 function onloadend(responseType) { return dispatch(responseType) }
                 module.exports = { request, dispatch, onloadend }
                 """,
             "index.d.ts": """\
                 export type ResponseType = 'arraybuffer' | 'blob' | 'document' | 'json' | 'text' | 'stream';
                 export declare function request(config: { responseType?: ResponseType }): Promise<unknown>;
                 """}
    db = indexed(tmp_path, files)
    assert kgsearch.search("ResponseType", db=str(db), k=3).hits[0].key == "js:index.d.ts:ResponseType"
    keys = [h.key for h in kgsearch.search("request", db=str(db), k=5).hits]
    assert keys.index("js:index.js:request") < keys.index("js:index.d.ts:request"), keys
