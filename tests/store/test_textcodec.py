"""Long node texts are stored compressed; every reader still sees the text.

The codec (kgsearch/store/textcodec.py) round-trips any string, keeps short or incompressible
texts as TEXT, and an index made before migration 0008 is upgraded to exactly what a fresh
build holds, FTS5 included.
"""
from __future__ import annotations

import random
import sqlite3
import string
import zlib

import pytest

from conftest import hypothesis_api
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.store import textcodec
from kgsearch.store.db import Index
from kgsearch.store.textcodec import MIN_BYTES, pack, unpack

from indexer.test_incremental import logical, make_tree

given, settings, st, _ = hypothesis_api()               # stand-ins that skip when hypothesis is missing

BODY = "def handler(request):\n    return render(request, 'template.html', context)\n" * 12


# ---------------------------------------------------------------------------- the codec
def test_long_compressible_text_becomes_a_codec_blob():
    v = pack(BODY)
    assert isinstance(v, bytes) and v[:1] == b"\x01"
    assert len(v) < 0.9 * len(BODY.encode())
    # codec 1 is raw deflate of the UTF-8 bytes (no header): readable without kgsearch
    assert zlib.decompress(v[1:], -15).decode("utf-8") == BODY
    assert unpack(v) == BODY


def test_short_and_incompressible_texts_stay_text():
    assert pack("") == ""
    assert pack("x" * (MIN_BYTES - 1)) == "x" * (MIN_BYTES - 1)      # one byte short of the threshold
    assert isinstance(pack("x" * MIN_BYTES), bytes)                    # at the threshold, compressible
    rnd = random.Random(7)
    noise = "".join(rnd.choice(string.ascii_letters + string.digits + string.punctuation) for _ in range(200))
    assert pack(noise) == noise                                        # deflate saves < 10 %: kept as text
    assert unpack("plain") == "plain" and unpack(None) is None


def test_unknown_codec_says_what_to_do():
    with pytest.raises(ValueError, match=r"unknown codec byte 0x07.*upgrade kgsearch or rebuild"):
        unpack(b"\x07abc")


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=2000))
def test_round_trip_any_text(s):
    for t in (s, s * 5):
        v = pack(t)
        assert unpack(v) == t
        if isinstance(v, bytes):              # stored compressed only when it saves 10 %
            assert 10 * len(v) <= 9 * len(t.encode("utf-8"))
        else:
            assert v == t


def test_lone_surrogates_are_kept_as_text():
    s = "a\ud800b" * 100
    assert pack(s) is s


def test_sql_function_decodes_in_any_index_connection(tmp_path):
    with Index.open(tmp_path / "x.db") as ix:
        got = ix.conn.execute("SELECT kgtext(?), kgtext(?), kgtext(NULL)", (pack(BODY), "short")).fetchone()
    assert got == (BODY, "short", None)


# ---------------------------------------------------------------------------- in an index
def _tree(tmp_path):
    tree = tmp_path / "tree"
    make_tree(tree)
    (tree / "pkg" / "big.py").write_text(
        '"""A module with one long function."""\n\n\ndef long_function(request):\n'
        '    """Render the zeppelin dashboard."""\n' + "".join(
            f"    value_{i} = compute_something(request, {i})\n" for i in range(40)) + "    return value_0\n")
    (tree / "notes" / "long.md").write_text(
        "# Long\n\n" + "\n\n".join(f"## Part {i}\n\n" + "words about graphs and quokkas " * 60 for i in range(3)))
    return tree


def test_index_stores_long_bodies_compressed_and_reads_them_back(tmp_path):
    tree = _tree(tmp_path)
    db = tmp_path / "i.db"
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True))
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        raw, typ = c.execute("SELECT text, typeof(text) FROM nodes WHERE key='py:pkg.big.long_function'").fetchone()
        assert typ == "blob" and unpack(raw).startswith("def long_function(request)\nRender the zeppelin")
        assert c.execute("SELECT count(*) FROM nodes WHERE typeof(text)='blob'").fetchone()[0] >= 4
        # short bodies stay TEXT
        assert c.execute("SELECT typeof(text) FROM nodes WHERE key='py:pkg.base.helper'").fetchone()[0] == "text"
        # the views decode
        assert all("quokkas" in t for (t,) in c.execute("SELECT text FROM chunks"))
        assert c.execute("SELECT count(*) FROM nodes_fts WHERE text LIKE '%zeppelin%'").fetchone()[0] >= 1
        # FTS5 (rebuilt from the view) and BM25 find words that only a compressed body holds
        fts_hits = {r[0] for r in c.execute("SELECT rowid FROM text_fts WHERE text_fts MATCH 'zeppelin'")}
        nid = ix.node_by_key("py:pkg.big.long_function")
        assert nid in fts_hits
        snippet = c.execute("SELECT snippet(text_fts, 1, '[', ']', '...', 4) FROM text_fts "
                            "WHERE text_fts MATCH 'zeppelin' AND rowid=?", (nid,)).fetchone()[0]
        assert "[zeppelin]" in snippet
        from kgsearch.text import bm25
        ids, _ = bm25.search(ix, "zeppelin dashboard", k=5)
        assert nid in set(int(i) for i in ids)
        from kgsearch.stats import show_node
        assert "compute_something(request, 39)" in show_node(ix, "pkg.big.long_function")["node"]["text"]


def test_modifying_a_compressed_body_retracts_its_old_words(tmp_path):
    tree = _tree(tmp_path)
    db = tmp_path / "i.db"
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True))
    big = tree / "pkg" / "big.py"
    big.write_text(big.read_text().replace("zeppelin", "airship"))
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True))
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        assert c.execute("SELECT count(*) FROM text_fts WHERE text_fts MATCH 'zeppelin'").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM text_fts WHERE text_fts MATCH 'airship'").fetchone()[0] == 1
        c.execute("INSERT INTO text_fts(text_fts, rank) VALUES('integrity-check', 1)")   # index == content
        assert c.execute("SELECT count(*) FROM text_postings WHERE term='zeppelin'").fetchone()[0] == 0


def _to_unpacked_layout(db) -> None:
    """Rewrite an index the way kgsearch wrote it before migration 0008: plain TEXT bodies and
    an FTS5 table whose content is ``nodes`` itself."""
    c = sqlite3.connect(str(db))
    textcodec.register(c)
    c.executescript("""
        UPDATE nodes SET text = kgtext(text) WHERE typeof(text) = 'blob';
        DROP TABLE text_fts;
        CREATE VIRTUAL TABLE text_fts USING fts5(name, text, content='nodes', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2');
        INSERT INTO text_fts(text_fts) VALUES('rebuild');
        DROP VIEW nodes_fts;
        DROP VIEW chunks;
        CREATE VIEW chunks AS
            SELECT n.id, n.parent_id AS node_id, n.kind, n.name AS heading, n.text, coalesce(n.path, f.path) AS path,
                n.line_start, n.line_end
            FROM nodes n LEFT JOIN files f ON f.id = n.file_id
            WHERE n.parent_id IS NOT NULL AND n.kind IN ('section', 'chunk');
        DELETE FROM migrations WHERE name = '0008_packed_text';
    """)
    c.commit()
    c.close()


def _fts_state(db):
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        key = dict(c.execute("SELECT id, key FROM nodes"))
        return {q: sorted(key[r[0]] for r in c.execute("SELECT rowid FROM text_fts WHERE text_fts MATCH ?", (q,)))
                for q in ("zeppelin", "quokkas", "graphs", "helper", "run")}


def test_an_unpacked_index_is_upgraded_to_what_a_fresh_build_holds(tmp_path):
    tree = _tree(tmp_path)
    db = tmp_path / "i.db"
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True))
    fresh, fresh_fts = logical(db), _fts_state(db)
    _to_unpacked_layout(db)
    with sqlite3.connect(str(db)) as c:
        assert c.execute("SELECT count(*) FROM nodes WHERE typeof(text)='blob'").fetchone()[0] == 0
    with pytest.raises(Exception, match="needs an upgrade"):
        Index.open(db, readonly=True)                   # a query process does not migrate
    # an index run applies 0008 (schema only: it marks the text step stale) and rebuilds the
    # text tables in the same run, though no file changed
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True, compact=False))
    assert logical(db) == fresh
    assert _fts_state(db) == fresh_fts
    with Index.open(db, readonly=True) as ix:
        assert ix.conn.execute("SELECT count(*) FROM nodes WHERE typeof(text)='blob'").fetchone()[0] >= 4
        sql = ix.conn.execute("SELECT sql FROM sqlite_master WHERE name='text_fts'").fetchone()[0]
        assert "content='nodes_fts'" in sql
        assert ix.meta("compact_pending") == "1"      # rows shrank in place: the next run VACUUMs
    # and it goes on incrementally like a fresh one
    (tree / "pkg" / "big.py").unlink()
    index_paths(db, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True))
    with Index.open(db, readonly=True) as ix:
        assert ix.meta("compact_pending") is None
    fresh2 = tmp_path / "fresh2.db"
    index_paths(fresh2, [str(tree)], IndexOptions(steps=("text",), allow_dangling=True))
    assert logical(db) == logical(fresh2)
    assert _fts_state(db) == _fts_state(fresh2)
