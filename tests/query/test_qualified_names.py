"""Qualified names in every language's notation: a query's ``Bytes::split_off`` (Rust, C++) names
the node the loaders store as ``Bytes.split_off``, and a dotted name resolves against the keys of
the non-Python loaders (``rs:src/bytes.rs:Bytes.split_off``), whose qualified name follows the
file's path; a qualifier may also name the module (Go ``transport.NewClient``)."""
from __future__ import annotations

import sqlite3

import pytest

from kgsearch.codelike import dotted, has_code_token, is_code_token
from kgsearch.query.anchors import resolve
from kgsearch.query.codetask import Anchor, extract
from kgsearch.text import pattern


def test_scoped_names_are_code_tokens_in_dotted_form():
    assert has_code_token("why does Foo::bar fail") and not has_code_token("note: see below")
    assert is_code_token("Foo::bar") and not is_code_token("Note:")
    assert dotted("Bytes::split_off") == "Bytes.split_off" and dotted("os.path") == "os.path"


def test_extract_reads_scoped_names_as_dotted_anchors():
    got = {a.text: a.kind for a in extract("Bytes::split_off panics; see `BytesMut::split_to` and crate::buf::Buf")}
    assert got["Bytes.split_off"] == "dotted"
    assert got["BytesMut.split_to"] == "backtick"           # one name in backticks, scoped
    assert got["buf.Buf"] == "dotted"                        # crate:: names no code
    assert "crate.buf.Buf" not in got
    assert got["split_off"] == got["Bytes"] == "identifier"  # and the parts name things too


@pytest.fixture()
def conn():
    c = sqlite3.connect(":memory:")
    c.executescript("""
        CREATE TABLE nodes(id INTEGER PRIMARY KEY, key TEXT, name TEXT, kind TEXT, file_id INTEGER);
        CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT);""")
    c.executemany("INSERT INTO nodes VALUES (?,?,?,?,?)", [
        (1, "rs:src/bytes.rs:Bytes.split_off", "split_off", "method", 1),
        (2, "rs:src/bytes_mut.rs:BytesMut.split_off", "split_off", "method", 2),
        (3, "rs:tests/test_bytes.rs:split_off", "split_off", "function", 3),
        (4, "go:internal/transport/http2_client.go:NewClient", "NewClient", "function", 4),
        (5, "go:client.go:NewClient", "NewClient", "function", 5),
        (6, "py:pkg.bytes.Bytes.split_off", "split_off", "method", 6),
        (7, "c:src/a.cpp:fmt.detail.format_to#2", "format_to", "function", 7)])
    return c


def test_a_dotted_anchor_resolves_against_every_languages_keys(conn):
    # Before: the qualified name of rs:/go:/c: keys kept the file path ("src/bytes.rs:Bytes.split_off"),
    # so a dotted anchor never matched a non-Python node.
    assert resolve(conn, [Anchor("Bytes.split_off", "dotted")]) == {1: 0.8 / 2, 6: 0.8 / 2}
    assert resolve(conn, [Anchor("BytesMut.split_off", "dotted")]) == {2: 0.8}
    assert resolve(conn, [Anchor("detail.format_to", "dotted")]) == {7: 0.8}


def test_a_qualifier_may_name_the_module_file_or_folder(conn):
    assert resolve(conn, [Anchor("transport.NewClient", "dotted")]) == {4: 0.8}       # Go package = folder
    assert resolve(conn, [Anchor("http2_client.NewClient", "dotted")]) == {4: 0.8}    # file stem
    assert resolve(conn, [Anchor("client.NewClient", "dotted")]) == {5: 0.8}
    assert resolve(conn, [Anchor("other.NewClient", "dotted")]) == {}
    # C/C++ scopes are namespaces, held in the qualified name: a folder named like one is no qualifier
    assert resolve(conn, [Anchor("src.format_to", "dotted")]) == {}


def test_pattern_matches_a_scoped_name_exactly():
    assert pattern.query_parts("Bytes::split_off panics when at == len") == (None, ("Bytes.split_off",))
    score = pattern._score_literal
    assert score("bytes.split_off", "split_off\tsrc/bytes.rs:Bytes.split_off") == 1.0
    assert score("bytes.split_off", "split_off\tsrc/bytes_mut.rs:BytesMut.split_off") == 0.0
    assert score("bytes.split_off", "split_off\tpkg.bytes.Bytes.split_off") == 1.0
    assert score("split_off", "split_off\tsrc/bytes.rs:Bytes.split_off") == 1.0


@pytest.fixture()
def crates():
    c = sqlite3.connect(":memory:")
    c.executescript("""
        CREATE TABLE nodes(id INTEGER PRIMARY KEY, key TEXT, name TEXT, kind TEXT, file_id INTEGER, props TEXT);
        CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT);""")
    c.executemany("INSERT INTO nodes VALUES (?,?,?,?,?,?)", [
        (1, "rs:tokio/src/sync/once_cell.rs:OnceCell", "OnceCell", "class", 1, None),
        (2, "rs:tokio/tests/sync_once_cell.rs:OnceCell", "OnceCell", "class", 2, None),
        (3, "rs:tokio-util/src/sync/cancellation_token.rs:CancellationToken", "CancellationToken", "class", 3, None),
        (4, "rs:tokio/src/runtime/builder.rs:Builder.new_multi_thread", "new_multi_thread", "method", 4, None),
        (5, "rs:tokio/src/task/builder.rs:Builder.new_multi_thread", "new_multi_thread", "method", 5, None),
        (6, "go:clientconn.go", "clientconn", "module", 6, '{"package": "grpc"}'),
        (7, "go:clientconn.go:Dial", "Dial", "function", 6, '{"decl": "func"}'),
        (8, "go:benchmark/worker/main.go:Dial", "Dial", "function", 8, None)])
    return c


def test_a_rust_path_names_the_item_in_its_crate_and_modules(crates):
    # Before: `tokio::sync::OnceCell` matched no node as a whole (only its parts counted, as
    # identifiers): the qualifier was compared with the file's stem and folder alone.
    assert resolve(crates, [Anchor("tokio.sync.OnceCell", "backtick")]) == {1: 0.8}       # re-exported by sync
    assert resolve(crates, [Anchor("tokio_util.sync.CancellationToken", "backtick")]) == {3: 0.8}
    assert resolve(crates, [Anchor("tokio.runtime.Builder.new_multi_thread", "dotted")]) == {4: 0.8}
    assert resolve(crates, [Anchor("std.sync.OnceCell", "dotted")]) == {}                  # another crate
    assert resolve(crates, [Anchor("once_cell.sync.OnceCell", "dotted")]) == {}


def test_a_go_qualifier_is_the_package_clause_name(crates):
    # Before: `grpc.Dial` matched nothing: the root package's folder is the checkout's, not `grpc`
    assert resolve(crates, [Anchor("grpc.Dial", "dotted")]) == {7: 0.8}
    assert resolve(crates, [Anchor("worker.Dial", "dotted")]) == {8: 0.8}
    assert resolve(crates, [Anchor("http.Dial", "dotted")]) == {}
