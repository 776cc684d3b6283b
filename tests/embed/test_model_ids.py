"""The content ids of model files kept in the user's cache (kgsearch.embed.model_ids): an index
whose model is found at another path (copied to a phone, a reinstall, a moved folder) costs one
hash of the model, not one per cold search; a broken cache file is no entry."""
from __future__ import annotations

import json
import os
import shutil
import types

import pytest

from kgsearch.embed import index_model, model as model_mod, model_ids
from kgsearch.store.db import Index

from .test_vectors import indexed_two_notes


@pytest.fixture
def copied(tmp_path, monkeypatch):
    """An index built with the shipped model, pointed at a copy of that model in another folder
    (same bytes and mtimes, other path): (db, copy, hash_calls list). The user's cache is this
    test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _vault, db = indexed_two_notes(tmp_path)
    copy = tmp_path / "model-copy"
    shutil.copytree(model_mod.resolve_model("default"), copy)
    with Index.open(db) as ix:
        ix.set_meta("model", str(copy))
    calls = []
    real = model_mod.hashlib.sha256

    def counting(*a):
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(model_mod, "hashlib", types.SimpleNamespace(sha256=counting))
    return db, copy, calls


def cold_lookup(db, monkeypatch):
    """``query_model`` as a fresh process runs it (no model loaded yet), on a read-only open."""
    monkeypatch.setattr(index_model, "_MODELS", {})
    with Index.open(db, readonly=True) as ix:
        m = index_model.query_model(ix)
        assert not isinstance(m, str), m
        assert m.model_id == ix.meta("model_id")
        assert m.files_signature() != ix.meta("model_sig")       # the copied case: meta's signature is not the copy's
        assert str(m.path) == str(db.parent / "model-copy")
        return m


def test_a_model_at_another_path_is_hashed_once_over_cold_searches(copied, monkeypatch):
    db, copy, calls = copied
    cold_lookup(db, monkeypatch)
    assert len(calls) == 1
    cold_lookup(db, monkeypatch)
    assert len(calls) == 1                      # was hashed again by every fresh process
    # trusted under model_sig's rule: a file with another mtime is hashed again
    tok = copy / "tokenizer.json"
    st = os.stat(tok)
    os.utime(tok, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    m = cold_lookup(db, monkeypatch)
    assert len(calls) == 2
    assert model_ids.lookup(m.files_signature()) == m.model_id


@pytest.mark.parametrize("content", [b"", b"{not json", b"\xff\xfe\x00garbage", b"[1, 2]", b"null",
                                     b'{"format": 99, "ids": []}', b'{"format": 1, "ids": [["a"], 3, [1, 2]]}',
                                     b'{"format": 1, "ids": {"a": "b"}}', b"[" * 100_000])
def test_a_broken_cache_file_is_ignored_and_replaced(copied, monkeypatch, content):
    db, _copy, calls = copied
    path = model_ids.cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    m = cold_lookup(db, monkeypatch)
    assert len(calls) == 1
    assert json.loads(path.read_text(encoding="utf-8"))["ids"] == [[m.files_signature(), m.model_id]]
    cold_lookup(db, monkeypatch)
    assert len(calls) == 1


def test_an_unwritable_cache_costs_a_hash_per_process_never_an_error(copied, monkeypatch):
    db, _copy, calls = copied
    path = model_ids.cache_file()
    if path.exists():
        path.unlink()
    path.mkdir(parents=True)                    # a folder where the file goes: unreadable and unwritable
    cold_lookup(db, monkeypatch)
    cold_lookup(db, monkeypatch)
    assert len(calls) == 2
    assert list(path.parent.glob(".model-ids.*")) == []          # no temporary file left behind
    path.rmdir()


def test_the_cache_keeps_the_last_signatures(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert model_ids.lookup("s0") is None
    for i in range(model_ids.KEEP + 8):
        model_ids.remember(f"s{i}", f"m@{i}")
    assert model_ids.lookup("s0") is None and model_ids.lookup("s7") is None
    assert model_ids.lookup("s8") == "m@8" and model_ids.lookup(f"s{model_ids.KEEP + 7}") == f"m@{model_ids.KEEP + 7}"
    model_ids.remember("s8", "m@8b")                               # used again: the newest, with its new id
    model_ids.remember("new", "m@new")
    ids = json.loads(model_ids.cache_file().read_text(encoding="utf-8"))["ids"]
    assert len(ids) == model_ids.KEEP and ids[-2:] == [["s8", "m@8b"], ["new", "m@new"]]
    assert model_ids.lookup("s9") is None                          # the oldest went
    bad = "/m\udcff/config.json:1:2"                                 # a path that is not UTF-8
    model_ids.remember(bad, "m@x")
    assert model_ids.lookup(bad) == "m@x"
    assert [p.name for p in model_ids.cache_file().parent.iterdir()] == ["model-ids.json"]
