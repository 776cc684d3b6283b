"""Vector storage, the embed derived step and the dense channel (numpy only, no oracles)."""
from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest

from kgsearch.embed import embed_step as embed_index, index_model
from kgsearch.embed import dense, kernel, store
from kgsearch.embed.model import load_model
from kgsearch.types import ChangeSet


def _unit(rng, n, d=32):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---------------------------------------------------------------------------- quantisation
def test_quantize_keeps_cosines():
    rng = np.random.default_rng(0)
    x = _unit(rng, 500, 64) * rng.uniform(0.1, 5, (500, 1)).astype(np.float32)
    x[3] = 0
    rot = kernel.make_rotation(64)
    assert np.allclose(rot @ rot.T, np.eye(64), atol=1e-5)
    codes, scales = kernel.quantize(x, rot)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    assert not codes[3].any() and scales[3] == 0
    back = (codes.astype(np.float32) * scales[:, None]) @ rot          # undo the rotation
    xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-30)
    cos = (back * xn).sum(1) / np.maximum(np.linalg.norm(back, axis=1), 1e-30)
    assert np.delete(cos, 3).min() > 0.999


def test_topk_ties_by_id():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 20, 3000).astype(np.float32)
    ids = rng.permutation(10_000)[:3000].astype(np.int64)
    for k in (1, 10, 100, 2999, 3000, 5000):
        got_ids, got_scores = kernel.topk(scores, ids, k)
        ref = sorted(zip(-scores, ids))[:k]
        assert got_ids.tolist() == [int(i) for _, i in ref]
        assert got_scores.tolist() == [float(-s) for s, _ in ref]
    assert len(kernel.topk(scores[:0], ids[:0], 10)[0]) == 0


# ---------------------------------------------------------------------------- storage
def test_put_delete_round_trip(ix):
    rng = np.random.default_rng(2)
    ix.put_array(store.ROTATION_BLOB, kernel.make_rotation(32))
    ids = np.array([1, 2, 4095, 4096, 4097, 9000, 20000, 20001], np.int64)
    x = _unit(rng, len(ids))
    with ix.transaction():
        assert store.put_vectors(ix, ids[::-1], np.arange(8)[::-1], x[::-1], "m@1", 1) == 8
    blocks = ix.conn.execute("SELECT block, n, model_id, generation FROM vec_blocks ORDER BY block").fetchall()
    assert blocks == [(0, 3, "m@1", 1), (1, 2, "m@1", 1), (2, 1, "m@1", 1), (4, 2, "m@1", 1)]
    sid, sh = store.stored_hashes(ix)
    assert sid.tolist() == ids.tolist() and sh.tolist() == list(range(8))
    # replace two, delete two (one missing), blocks stay sorted
    with ix.transaction():
        store.put_vectors(ix, [4096, 3], [70, 71], _unit(rng, 2), "m@1", 2)
        assert store.delete_vectors(ix, [9000, 20000, 5], "m@1", 2) == 2
    sid, sh = store.stored_hashes(ix)
    assert sid.tolist() == [1, 2, 3, 4095, 4096, 4097, 20001]
    assert dict(zip(sid.tolist(), sh.tolist()))[4096] == 70
    assert store.vector_count(ix) == 7
    with ix.transaction():
        store.delete_vectors(ix, sid, "m@1", 3)
    assert store.vector_count(ix) == 0
    assert ix.conn.execute("SELECT count(*) FROM vec_blocks").fetchone()[0] == 0


def test_search_matches_brute_force_cached_and_streamed(ix, kg_env):
    rng = np.random.default_rng(3)
    d, n = 48, 6000
    centers = _unit(rng, 30, d)
    x = centers[rng.integers(0, 30, n)] + 0.35 * _unit(rng, n, d)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = np.sort(rng.choice(50_000, n, replace=False)).astype(np.int64)
    rot = kernel.make_rotation(d)
    ix.put_array(store.ROTATION_BLOB, rot)
    with ix.transaction():
        store.put_vectors(ix, ids, np.zeros(n), x, "m@1", 1)
    codes, scales = kernel.quantize(x, rot)
    q = _unit(rng, 40, d)
    recall = []
    for qv in q:
        cached = dense.search_vector(ix, qv, 10)
        kg_env(vec_cache_mb="0")
        ix._cache.clear()
        streamed = dense.search_vector(ix, qv, 10)
        kg_env(vec_cache_mb=None)
        ix._cache.clear()
        assert cached[0].tolist() == streamed[0].tolist()
        assert np.allclose(cached[1], streamed[1], rtol=1e-6, atol=1e-7)   # BLAS slices may differ by an ulp
        # exactly the brute force over the stored int8 codes
        s = (codes.astype(np.float32) @ (rot @ qv)) * scales
        ref_ids, _ = kernel.topk(s.astype(np.float32), ids, 10)
        assert cached[0].tolist() == ref_ids.tolist()
        # and close to float32 cosine
        recall.append(len(set(cached[0].tolist()) & set(ids[np.argsort(-(x @ qv))[:10]].tolist())) / 10)
    assert np.mean(recall) >= 0.95
    assert dense.search_vector(ix, np.zeros(d, np.float32), 10)[0].size == 0


# ---------------------------------------------------------------------------- derived step
def _add_nodes(ix, texts: dict[str, tuple[str, str]], gen: int) -> dict[str, int]:
    out = {}
    with ix.transaction():
        for key, (name, text) in texts.items():
            ix.conn.execute("INSERT INTO nodes(key, kind, name, text, generation) VALUES (?,?,?,?,?)",
                            (key, "note", name, text, gen))
            out[key] = ix.node_by_key(key)
    return out


def _run(ix, changes, settings=None):
    with ix.transaction():
        ix.set_meta("generation", changes.generation)
        return embed_index.update(ix, changes, settings or {})


def _block_bytes(ix):
    return ix.conn.execute("SELECT ids, hashes, scales, data FROM vec_blocks ORDER BY block").fetchall()


NOTES = {
    "a": ("PageRank", "PageRank ranks nodes of a graph by the stationary distribution of a random walk."),
    "b": ("SQLite", "SQLite keeps the whole index in one file with a write-ahead log."),
    "c": ("Termux", "Termux runs a Linux userland on Android phones."),
    "d": ("Embeddings", "Static embeddings average token vectors into a sentence vector."),
    "e": ("Empty", ""),
}


def test_update_reembeds_only_changes(ix, shipped, caplog):
    ids = _add_nodes(ix, NOTES, 1)
    info = _run(ix, ChangeSet(generation=1, added=list(ids.values()), full=True))
    model = load_model(shipped)
    assert info["embedded"] == 5 and info["full"] and info["vectors"] == 5
    assert ix.meta("model_id") == model.model_id and ix.meta("model_dims") == "256"
    assert ix.meta("model") == shipped.name
    assert ix.derived("embed")["generation"] == 1

    # the stored vector is the model's vector, quantised
    got = dense.search(ix, "random walk stationary distribution graph ranking", k=3)
    assert got[0][0] == ids["a"]
    qv = model.encode(embed_index.node_text(*NOTES["b"]))
    top_ids, top_scores = dense.search_vector(ix, qv, 5)
    assert top_ids[0] == ids["b"] and top_scores[0] > 0.99

    before = _block_bytes(ix)
    with ix.transaction():
        ix.conn.execute("UPDATE nodes SET text=? WHERE id=?", ("Termux installs numpy with pkg.", ids["c"]))
        ix.conn.execute("DELETE FROM nodes WHERE id=?", (ids["d"],))
    info = _run(ix, ChangeSet(generation=2, modified=[ids["c"], ids["a"]], removed=[ids["d"]]))
    assert info["embedded"] == 1 and info["deleted"] == 1 and not info["full"]   # "a" did not change
    sid, _ = store.stored_hashes(ix)
    assert sid.tolist() == sorted([ids["a"], ids["b"], ids["c"], ids["e"]])
    after = dict(zip(store.stored_hashes(ix)[0].tolist(), range(4)))
    assert ids["a"] in after and before != _block_bytes(ix)

    # a run the embed step missed (generation 3 with --no-embed) is caught up by hashes
    with ix.transaction():
        ix.conn.execute("UPDATE nodes SET text=? WHERE id=?", ("SQLite has FTS5.", ids["b"]))
    info = _run(ix, ChangeSet(generation=4))
    assert info["embedded"] == 1 and not info["full"]

    # nothing to do: nothing embedded
    info = _run(ix, ChangeSet(generation=5, modified=[ids["a"]]))
    assert info["embedded"] == 0


def test_model_change_reembeds_all_and_no_model_changes_nothing(ix, shipped, tmp_path, caplog):
    ids = _add_nodes(ix, NOTES, 1)
    _run(ix, ChangeSet(generation=1, added=list(ids.values()), full=True))
    old_id = ix.meta("model_id")

    other = tmp_path / "other-model"
    shutil.copytree(shipped, other)
    cfg = json.loads((other / "config.json").read_text())
    cfg["model_name"] = "other-model"
    (other / "config.json").write_text(json.dumps(cfg))
    info = _run(ix, ChangeSet(generation=2), {"model": str(other)})
    assert info["full"] and info["embedded"] == 5
    assert ix.meta("model_id") != old_id and ix.meta("model_id").startswith("other-model@")
    assert ix.meta("model") == str(other.resolve())
    models = {r[0] for r in ix.conn.execute("SELECT DISTINCT model_id FROM vec_blocks")}
    assert models == {ix.meta("model_id")}
    # the query side finds the recorded model by path
    assert dense.search(ix, "phones", k=2)[0].size == 2

    before = (_block_bytes(ix), ix.meta("model_id"), ix.derived("embed"))
    with caplog.at_level(logging.WARNING, logger="kgsearch.embed.embed_step"):
        info = _run(ix, ChangeSet(generation=3, full=True), {"model": str(tmp_path / "missing")})
    assert info == {"skipped": "no model"}
    assert len([r for r in caplog.records if "no embedding model" in r.getMessage()]) == 1
    assert "\n" not in caplog.records[-1].getMessage()
    assert (_block_bytes(ix), ix.meta("model_id"), ix.derived("embed")) == before

    # the model that built the vectors is gone: the channel says so in one line
    shutil.rmtree(other)
    index_model._MODELS.clear()
    msg = dense.search(ix, "phones")
    assert isinstance(msg, str) and "not available here" in msg


def test_the_step_reads_the_index_model_once(ix, shipped, monkeypatch):
    """A run reads the index's ``model_id`` meta once (it was read twice: for the "re-embedded with
    the default model" note and again for "same model"); what it does is the same."""
    ids = _add_nodes(ix, NOTES, 1)
    _run(ix, ChangeSet(generation=1, added=list(ids.values()), full=True))
    reads = []
    real = ix.meta
    monkeypatch.setattr(ix, "meta", lambda key, *a, **k: reads.append(key) or real(key, *a, **k))
    info = _run(ix, ChangeSet(generation=2, modified=[ids["a"]]))
    assert info["embedded"] == 0 and not info["full"]
    assert reads.count("model_id") == 1


def test_search_without_vectors(ix):
    msg = dense.search(ix, "anything")
    assert isinstance(msg, str) and "no vectors" in msg
    for q in ("", "   ", None):
        out = dense.search(ix, q)
        assert not isinstance(out, str) and out[0].size == 0


def test_node_text_and_hash():
    assert embed_index.node_text("T", "body") == "T\nbody"
    assert embed_index.node_text("", "body") == "body"
    assert embed_index.node_text("T", "x" * 5000, 100) == ("T\n" + "x" * 5000)[:100]
    assert embed_index.text_hash("a") != embed_index.text_hash("b")
    assert isinstance(embed_index.text_hash("\ud800 lone surrogate"), int)


def test_indexer_runs_the_step(tmp_path, shipped, kg_env):
    """Through the real indexer: vectors for every note, then only the edited one re-embedded."""
    indexer = pytest.importorskip("kgsearch.indexer")
    from kgsearch.store.db import Index

    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(6):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nThis note is about topic {i} and graphs.\n")
    db = tmp_path / "ix.db"
    kg_env(model=None)
    r1 = indexer.index_paths(db, [str(notes)], indexer.IndexOptions())
    assert r1.steps["embed"]["embedded"] >= 6
    (notes / "n3.md").write_text("# Note 3\n\nNow about SQLite instead.\n")
    r2 = indexer.index_paths(db, [str(notes)], indexer.IndexOptions())
    assert 1 <= r2.steps["embed"]["embedded"] <= 2
    with Index.open(db, readonly=True) as ix:
        ids, scores = dense.search(ix, "SQLite", k=3)
        assert ix.conn.execute("SELECT name FROM nodes WHERE id=?", (int(ids[0]),)).fetchone()[0] in ("n3", "Note 3")


def test_no_embed_is_remembered_drops_vectors_and_embed_restores(tmp_path, capsys):
    from kgsearch.cli import main
    from kgsearch.embed.store import vector_count
    from kgsearch.store.db import Index

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Alpha\nstatic embeddings on a phone\n")
    (notes / "b.md").write_text("# Beta\nranking with bm25 and [[a]]\n")
    db = tmp_path / "i.db"
    assert main(["index", str(notes), "--db", str(db), "-q"]) == 0
    with Index.open(db, readonly=True) as ix:
        assert vector_count(ix) >= 2
    assert main(["index", "--db", str(db), "--no-embed", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"]["embed"]["dropped"] >= 2
    (notes / "c.md").write_text("# Gamma\na new note\n")
    assert main(["index", "--db", str(db), "--json"]) == 0          # cron run: still off
    out = json.loads(capsys.readouterr().out)
    assert out["steps"]["embed"]["skipped"].startswith("embed=false")
    with Index.open(db, readonly=True) as ix:
        assert vector_count(ix) == 0
        n = ix.node_count()
    assert main(["index", "--db", str(db), "--embed", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    with Index.open(db, readonly=True) as ix:
        assert vector_count(ix) == n == out["steps"]["embed"]["vectors"]


def indexed_two_notes(tmp_path):
    """A two-note vault and its index (default settings): (vault, db)."""
    from kgsearch.indexer import index_paths

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# Backup\n\nCopy the notes to another disk every night.\n")
    (vault / "b.md").write_text("# Garden\n\nTomatoes and mint on the balcony.\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(vault)])
    return vault, db


def test_a_new_default_model_is_picked_up_by_a_run_with_no_changed_file(tmp_path):
    """After an upgrade that ships another default model, the next `kgsearch index` (cron, no file
    changed) re-embeds with it instead of leaving vectors no model here can read; a run whose
    model files are the recorded ones does not run the embed step."""
    from kgsearch.indexer import index_paths
    from kgsearch.store.db import Index

    vault, db = indexed_two_notes(tmp_path)
    ix = Index.open(db)
    want = ix.meta("model_id")
    # as an index embedded by the previous release's default model looks
    ix.set_meta("model_id", "minilm-l6-m2v-256@783b176e4be1566e")
    ix.set_meta("model_sig", "/somewhere/minilm-l6-m2v-256/config.json:452:1")
    ix.close()
    rep = index_paths(db, [str(vault)])
    assert "embed" in rep.steps and rep.steps["embed"].get("embedded") == 2, rep.steps
    ix = Index.open(db, readonly=True)
    try:
        assert ix.meta("model_id") == want
    finally:
        ix.close()
    rep = index_paths(db, [str(vault)])
    assert "embed" not in rep.steps


def test_the_same_model_at_another_path_reembeds_nothing(tmp_path):
    """The model files moved (a reinstall, another checkout: other path and mtime, same bytes):
    the next run with no changed file checks the model and re-embeds nothing (at 1M nodes a
    reinstall cost a 48 s full re-embed), and records the new files."""
    import shutil

    from kgsearch.embed.model import resolve_model
    from kgsearch.indexer import index_paths
    from kgsearch.store.db import Index

    vault, db = indexed_two_notes(tmp_path)
    moved = tmp_path / "model-copy"
    shutil.copytree(resolve_model("default"), moved)
    from dataclasses import replace

    from kgsearch import environment
    with environment.configured(replace(environment.current(), model=str(moved))):
        rep = index_paths(db, [str(vault)])
        assert rep.steps["embed"]["embedded"] == 0 and not rep.steps["embed"]["full"], rep.steps
        with Index.open(db, readonly=True) as ix:
            assert str(moved.resolve()) in ix.meta("model_sig")
        rep = index_paths(db, [str(vault)])
        assert "embed" not in rep.steps


def test_the_query_model_is_found_once_per_generation(tmp_path, monkeypatch):
    """A search looked for the index's model on every query (meta reads and a dozen stat calls,
    ~0.1 ms); it is found once per generation, again after a reindex, and a miss is never kept
    (a model that turns up later is found by the next query)."""
    from kgsearch.embed import index_model, model as model_mod
    from kgsearch.store.db import Index

    vault, db = indexed_two_notes(tmp_path)
    real = model_mod.resolve_model
    calls = []

    def counting(spec=None):
        calls.append(spec)
        return real(spec)

    monkeypatch.setattr(model_mod, "resolve_model", counting)
    with Index.open(db) as ix:
        first = index_model.query_model(ix)
        assert not isinstance(first, str)
        n = len(calls)
        assert n >= 1
        for _ in range(3):
            assert index_model.query_model(ix) is first
        assert len(calls) == n                           # the same generation: not looked for again
        assert dense.search(ix, "backup disk")[0].size
        assert len(calls) == n
        ix.set_meta("generation", str(ix.generation + 1))  # (what a reindex's commit does)
        assert index_model.query_model(ix) is first      # the same model, looked for again
        assert len(calls) == 2 * n

        monkeypatch.setattr(model_mod, "resolve_model", lambda spec=None: calls.append(spec))   # none found
        ix.set_meta("generation", str(ix.generation + 1))
        assert isinstance(index_model.query_model(ix), str)
        assert isinstance(index_model.query_model(ix), str)
        monkeypatch.setattr(model_mod, "resolve_model", counting)   # the model is back: the next query finds it
        assert index_model.query_model(ix) is first


def test_a_new_default_model_re_embeds_an_index_and_says_so(tmp_path, capsys):
    """An index embedded with another model than the default, the settings naming none (the
    default changed under it: a new kgsearch), is re-embedded on its next run, and the run says
    which model it had and how to keep it; a model the user named says nothing of the kind."""
    from conftest import write

    from kgsearch.cli import main
    from kgsearch.embed.model import DEFAULT_MODEL, resolve_model

    vault, db = tmp_path / "v", str(tmp_path / "x.db")
    write(vault / "a.md", "# A\nbackup notes\n")
    write(vault / "b.md", "# B\nsync phone\n")
    old = resolve_model("e5-small-en-256")
    assert old is not None and DEFAULT_MODEL != "e5-small-en-256"
    assert main(["index", str(vault), "--db", db], environ={"KGSEARCH_MODEL": str(old)}) == 0
    assert "note: embed" not in capsys.readouterr().err
    assert main(["index", str(vault), "--db", db], environ={}) == 0
    err = capsys.readouterr().err
    assert (f"note: embed: the index was embedded with e5-small-en-256; re-embedded 2 nodes with the default "
            f"model {DEFAULT_MODEL} (`kgsearch model use e5-small-en-256` goes back to the old one)") in err
    assert main(["index", str(vault), "--db", db], environ={}) == 0
    assert "note: embed" not in capsys.readouterr().err
    assert main(["model", "use", "e5-small-en-256", "--db", db], environ={}) == 0
    err = capsys.readouterr().err
    assert "re-embedded 2 nodes with e5-small-en-256" in err and "note: embed" not in err


LONG = ("Sourdough starter care", "Feed the starter flour and water every day and keep it warm. "
        + "The kernel scheduler assigns runnable threads to cores by their weighted virtual runtime, "
          "preempting a thread whose slice is spent; interrupts, softirqs and the idle loop run in "
          "between, and load balancing moves threads between the cores' run queues. " * 3)


def test_a_node_vector_weighs_in_its_opening(ix, shipped):
    """node_vectors: unit(whole) + LEAD_WEIGHT x unit(first LEAD_TOKENS tokens), made unit;
    the stored vector of a long node is that (not its whole text's), a short node's is its own."""
    model = load_model(shipped)
    t_long, t_short = embed_index.node_text(*LONG), embed_index.node_text(*NOTES["b"])
    assert len(model.tokenize([t_long])[0]) > 3 * embed_index.LEAD_TOKENS
    assert len(model.tokenize([t_short])[0]) <= embed_index.LEAD_TOKENS

    def unit(v):
        return v / np.linalg.norm(v)
    whole = model.encode(t_long)
    first = model.tokenize([t_long])[0][:embed_index.LEAD_TOKENS]        # the opening: the first 32 tokens
    lead = model.embedding[np.asarray(first)].astype(np.float64).mean(axis=0)
    w2, l2 = model.encode_with_lead([t_long, t_short], embed_index.LEAD_TOKENS)
    assert np.array_equal(w2, model.encode([t_long, t_short]))               # the whole: encode's, bit for bit
    assert np.allclose(l2[0], unit(lead), atol=1e-6) and np.allclose(l2[1], w2[1], atol=1e-6)
    want = unit(unit(whole.astype(np.float64)) + 0.5 * unit(lead))
    got = embed_index.node_vectors(model, [t_long, t_short, ""])
    apart = float(unit(whole) @ want)
    assert np.allclose(got[0], want, atol=1e-6) and apart < 0.99
    assert np.allclose(got[1], model.encode(t_short), atol=1e-6)
    assert not got[2].any()

    ids = _add_nodes(ix, {"long": LONG, "b": NOTES["b"]}, 1)
    _run(ix, ChangeSet(generation=1, added=list(ids.values()), full=True))
    top, scores = dense.search_vector(ix, want.astype(np.float32), 2)
    assert top[0] == ids["long"] and scores[0] > 0.99
    top, scores = dense.search_vector(ix, whole, 2)
    assert top[0] == ids["long"] and abs(scores[0] - apart) < 0.01     # not the whole text's vector
    top, scores = dense.search_vector(ix, model.encode(t_short), 2)
    assert top[0] == ids["b"] and scores[0] > 0.99
    # "what it is about" finds the long note by its opening
    assert dense.search(ix, "feeding a sourdough starter", k=1)[0][0] == ids["long"]


def test_vectors_made_without_the_lead_are_made_again(ix, shipped):
    """An index embedded by a kgsearch that stored whole-text vectors (its step info names no
    lead) is re-embedded whole by the next run, even with nothing changed: never two recipes."""
    ids = _add_nodes(ix, NOTES, 1)
    _run(ix, ChangeSet(generation=1, added=list(ids.values()), full=True))
    assert _run(ix, ChangeSet(generation=2))["embedded"] == 0
    d = ix.derived("embed")
    with ix.transaction():
        ix.mark_derived("embed", d["seconds"], {k: v for k, v in d["info"].items() if k != "lead"}, generation=2)
    info = _run(ix, ChangeSet(generation=3))
    assert info["full"] and info["embedded"] == 5 and info["lead"] == [embed_index.LEAD_TOKENS, 0.5]


def test_an_index_embedded_without_the_lead_says_it_re_embeds_once(tmp_path, capsys):
    """Through `kgsearch index`: an index whose vectors an older kgsearch made (its step info
    names no lead) is re-embedded by the next run, which says why, once."""
    from conftest import write

    from kgsearch.cli import main
    from kgsearch.store.db import Index

    vault, db = tmp_path / "v", str(tmp_path / "x.db")
    write(vault / "a.md", "# A\nbackup notes\n")
    write(vault / "b.md", "# B\nsync phone\n")
    assert main(["index", str(vault), "--db", db]) == 0
    with Index.open(db) as ix, ix.transaction():
        d = ix.derived("embed")
        ix.mark_derived("embed", d["seconds"], {k: v for k, v in d["info"].items() if k != "lead"},
                        generation=d["generation"])
    capsys.readouterr()
    assert main(["index", str(vault), "--db", db]) == 0
    assert ("note: embed: re-embedded 2 nodes once: a node's vector now weighs in its opening (the first 32 "
            "tokens), which an older kgsearch did not") in capsys.readouterr().err
    assert main(["index", str(vault), "--db", db]) == 0
    assert "note: embed" not in capsys.readouterr().err
