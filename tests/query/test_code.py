"""Code queries are decided once per search, from the first stage's candidates, whatever
channels run (kgsearch.query.code), so the ranking's code filters hold with --channels too."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine, SearchOptions
from kgsearch.store.db import Index

TREE = {
    "src/app/config.py": '''\
        def load_config(path):
            """Load the config file at path and return its settings."""
            return open(path).read()
        ''',
    "vendor/yaml/loader.py": '''\
        def load_config(path):
            """Load a config file: the vendored YAML loader."""
            return path
        ''',
    "third_party/toml/config.py": '''\
        def load_config(path):
            """Load the config file with the vendored TOML reader."""
            return path
        ''',
}


@pytest.fixture(scope="module")
def vendored_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vendored")
    for rel, src in TREE.items():
        p = tmp / "proj" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    db = tmp / "i.db"
    index_paths(db, [str(tmp / "proj")], IndexOptions(settings={"embed": False}))
    return db


@pytest.mark.parametrize("channels", [None, "bm25,dense", "bm25"])
def test_vendored_code_is_filtered_whatever_channels_run(vendored_db, channels):
    """With the graph stage off (``--channels bm25,dense``) the query used to count as prose:
    the two vendored copies of load_config took ranks 1 and 2 of 3."""
    with Index.open(vendored_db, readonly=True) as ix:
        r = Engine(ix).search("where is load_config reading the config file", SearchOptions(k=3, channels=channels))
    keys = [h.key for h in r.hits]
    assert r.code_query and keys[0] == "py:app.config.load_config", keys
    # vendored copies rank below every node of the project's own code (issue 27 item 5)
    vend = [i for i, k in enumerate(keys) if "vendor" in k or "third_party" in k]
    own = [i for i, k in enumerate(keys) if i not in vend]
    assert own and (not vend or min(vend) > max(own)), keys


def test_prose_is_not_a_code_query(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Backups\n\nCopy the notes folder every night.\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "notes")], IndexOptions(settings={"embed": False}))
    with Index.open(db, readonly=True) as ix:
        r = Engine(ix).search("how do I back up my notes", SearchOptions(channels="bm25"))
    assert r.hits and not r.code_query


def test_is_code_query_is_most_of_the_first_stage_top(tmp_path):
    """More than half of the TOP best candidates by first-stage score are code nodes."""
    from kgsearch.query.code import TOP, is_code_query

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "mod.py").write_text("".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12)))
    for i in range(12):
        (tmp_path / "p" / f"n{i}.md").write_text(f"# Note {i}\n\nabout {i}\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "p")], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        kind = dict(ix.conn.execute("SELECT id, kind FROM nodes"))
    code = np.array(sorted(i for i, k in kind.items() if k == "function"), dtype=np.int64)
    notes = np.array(sorted(i for i, k in kind.items() if k == "note"), dtype=np.int64)
    assert len(code) == 12 and len(notes) == 12 and TOP == 10
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        cand = np.concatenate([code, notes])
        assert is_code_query(c, cand, np.r_[np.full(12, 2.0), np.ones(12)])          # 10 of 10 code
        assert not is_code_query(c, cand, np.r_[np.ones(12), np.full(12, 2.0)])      # 0 of 10
        six = np.r_[np.full(6, 3.0), np.zeros(6), np.full(4, 2.0), np.zeros(8)]       # 6 code, 4 notes
        assert is_code_query(c, cand, six)
        five = np.r_[np.full(5, 3.0), np.zeros(7), np.full(5, 2.0), np.zeros(7)]      # 5 of 10: not most
        assert not is_code_query(c, cand, five)
        assert not is_code_query(c, cand[:0], np.zeros(0))


def test_an_index_without_code_is_never_a_code_query_and_reads_no_kinds(tmp_path):
    """``has_code`` is one look-up in the kinds' index: a notes index answers False without
    reading its candidates' kinds (the multi-index search asks every index)."""
    from kgsearch.query import code as code_mod

    (tmp_path / "p").mkdir()
    for i in range(12):
        (tmp_path / "p" / f"n{i}.md").write_text(f"# Note {i}\n\nabout {i}\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "p")], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        assert not code_mod.has_code(ix.conn)
        sql: list[str] = []
        ix.conn.set_trace_callback(sql.append)
        cand = np.array([i for (i,) in ix.conn.execute("SELECT id FROM nodes")], np.int64)
        sql.clear()
        assert not code_mod.is_code_query(ix.conn, cand, np.ones(len(cand)))
        assert len(sql) == 1 and "LIMIT 1" in sql[0]
        ix.conn.set_trace_callback(None)


def test_whether_an_index_holds_code_is_read_once_per_generation(tmp_path):
    """is_code_query(..., ix): the kinds' look-up runs once per index generation (no statement
    in later searches of it), and a reindex that adds code is seen."""
    from kgsearch.query import code as code_mod

    (tmp_path / "p").mkdir()
    for i in range(12):
        (tmp_path / "p" / f"n{i}.md").write_text(f"# Note {i}\n\nabout {i}\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "p")], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        cand = np.array([i for (i,) in ix.conn.execute("SELECT id FROM nodes")], np.int64)
        assert not code_mod.is_code_query(ix.conn, cand, np.ones(len(cand)), ix)
        sql: list[str] = []
        with ix.pinned():
            ix.conn.set_trace_callback(sql.append)
            assert not code_mod.is_code_query(ix.conn, cand, np.ones(len(cand)), ix)
            ix.conn.set_trace_callback(None)
        assert sql == []
        (tmp_path / "p" / "mod.py").write_text("".join(f"def f{i}(x):\n    return x\n\n" for i in range(12)))
        index_paths(db, [str(tmp_path / "p")], IndexOptions(steps=("text",)))      # (the same Index: a new generation)
        cand = np.array([i for (i,) in ix.conn.execute("SELECT id FROM nodes WHERE kind='function'")], np.int64)
        assert len(cand) and code_mod.is_code_query(ix.conn, cand, np.ones(len(cand)), ix)
