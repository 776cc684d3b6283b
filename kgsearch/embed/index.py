"""The ``embed`` derived-data step: keep one vector per node in step with the nodes.

``update(ix, changes, settings, progress=None) -> dict`` is called by the indexer inside the
index transaction. It embeds ``name + "\\n" + text`` (cut to ``embed_max_chars``, default
2,000 characters) of added and modified nodes in batches, deletes the vectors of removed
nodes and records ``model_id``/``model_dims``/``model`` in meta and ``derived('embed')``.

- Model: ``settings['model']`` (a folder or a name; ``kgsearch index --model``), else
  ``$KGSEARCH_MODEL``, else the shipped default model. No model anywhere: one log line, the
  step returns ``{'skipped': 'no model'}`` and nothing changes.
- A different model (its ``model_id`` hashes the files), ``changes.full`` or a missing rotation
  re-embeds everything: vectors of two models are never mixed.
- ``settings['embed'] = False`` (``kgsearch index --no-embed``, remembered) drops the vectors
  and skips the step until ``--embed``.
- Runs that skipped this step (``steps`` without ``embed``, no model) are caught up by comparing a hash
  of each node's embedded text with the stored one, so only what changed is embedded.
"""
from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["update", "query_model", "node_text", "text_hash", "model_spec", "DEFAULT_MAX_CHARS"]

DEFAULT_MAX_CHARS = 2000
BATCH = 4096                       # nodes per encode call and vector write
_MODELS: dict[str, Any] = {}       # resolved folder -> loaded model (per process)


def node_text(name: str | None, text: str | None, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """What is embedded for a node: its name, a newline, its text; cut to ``max_chars``."""
    name = (name or "").strip()
    text = (text or "").strip()
    s = f"{name}\n{text}" if name and text else (name or text)
    return s[:max_chars]


def text_hash(s: str) -> int:
    """Signed 64-bit hash of an embedded text (blake2b), stored next to its vector."""
    return int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little", signed=True)


def model_spec(settings: dict | None) -> str | None:
    """The model the settings ask for: ``settings['model']``, else ``$KGSEARCH_MODEL``, else None
    (the shipped default)."""
    spec = (settings or {}).get("model")
    if spec:
        return str(spec)
    env = os.environ.get("KGSEARCH_MODEL")
    return env or None


def _model_ref(path: Path) -> str:
    """How meta records a model: its folder name when it lives in a models dir this install
    searches (so a phone with the same model finds it), else its absolute path."""
    from ..config import data_home, shipped_data_dir

    parent = path.resolve().parent
    roots = [data_home() / "models"]
    shipped = shipped_data_dir()
    if shipped is not None:
        roots.append(shipped / "models")
    for r in roots:
        try:
            if parent == r.resolve():
                return path.name
        except OSError:
            continue
    return str(path.resolve())


def _load(path: Path):
    from .model import load_model

    key = str(path.resolve())
    m = _MODELS.get(key)
    if m is None:
        m = _MODELS[key] = load_model(path)
    return m


def query_model(ix):
    """The model that built the index's vectors (loaded once per process), or a one-line
    string saying why there is none here."""
    from .model import resolve_model

    want = ix.meta("model_id")
    tried = []
    for spec in (ix.meta("model"), os.environ.get("KGSEARCH_MODEL"), "default"):
        if not spec:
            continue
        path = resolve_model(spec)
        if path is None:
            tried.append(spec)
            continue
        try:
            m = _load(path)
        except Exception as exc:   # a broken folder is just not the right model
            log.debug("cannot load model %s: %s", path, exc)
            tried.append(spec)
            continue
        # same files as when the index was embedded: skip hashing 8+ MB on every cold start
        if m._model_id is None and want and ix.meta("model_sig") == m.files_signature():
            m._model_id = want
        if m.model_id == want:
            return m
        tried.append(f"{spec} ({m.model_id})")
    return (f"the index was embedded with {want}, which is not available here (tried {', '.join(tried)}); "
            f"pass the same model with --model or rebuild with `kgsearch index --full`")


def _progress(progress, done: int, total: int) -> None:
    if progress is None:
        return
    try:
        progress({"phase": "embed", "done": done, "total": total})
    except Exception:           # a progress callback must never break indexing
        log.debug("progress callback failed", exc_info=True)


def _node_rows(ix, ids=None, chunk: int = 900):
    """(id, name, text) for ``ids`` (all nodes when None), in id order."""
    if ids is None:
        cur = ix.conn.execute("SELECT id, name, kgtext(text) FROM nodes ORDER BY id")
        while True:
            rows = cur.fetchmany(4096)
            if not rows:
                return
            yield from rows
        return
    ids = sorted(set(int(i) for i in ids))
    for i in range(0, len(ids), chunk):
        part = ids[i:i + chunk]
        q = ",".join("?" * len(part))
        yield from ix.conn.execute(f"SELECT id, name, kgtext(text) FROM nodes WHERE id IN ({q}) ORDER BY id", part)


def ensure_rotation(ix, dims: int, reset: bool = False):
    from .vectors import ROTATION_BLOB, make_rotation, rotation

    rot = None if reset else rotation(ix)
    if rot is None or rot.shape != (dims, dims):
        rot = make_rotation(dims)
        ix.put_array(ROTATION_BLOB, rot)
    return rot


def update(ix, changes, settings: dict | None = None, progress=None) -> dict:
    """Embed added/modified nodes, drop removed ones; re-embed all on a model change."""
    from . import vectors
    from .model import load_model, resolve_model

    t0 = time.perf_counter()
    settings = settings or {}
    if settings.get("embed") is False:
        dropped = vectors.vector_count(ix)
        if dropped:
            vectors.clear(ix)
        return {"skipped": "embed=false in settings (kgsearch index --embed turns it on)", "dropped": dropped}
    spec = model_spec(settings)
    path = resolve_model(spec)
    if path is None:
        log.warning("no embedding model found (%s); the dense channel is off. Pass --model FOLDER, "
                    "set KGSEARCH_MODEL or run `kgsearch model pull NAME`", spec or "the shipped default")
        return {"skipped": "no model"}
    model = _MODELS.get(str(path.resolve())) or load_model(path)
    _MODELS[str(path.resolve())] = model
    model_id, dims = model.model_id, model.dims
    max_chars = int(settings.get("embed_max_chars", DEFAULT_MAX_CHARS))

    prev = ix.derived("embed")
    prev_info = (prev or {}).get("info") or {}
    full = (bool(changes.full) or ix.meta("model_id") != model_id or ix.meta("model_dims") != str(dims)
            or vectors.rotation(ix) is None or prev_info.get("max_chars", max_chars) != max_chars)
    # runs since our last one that did not call us (--no-embed, no model): compare hashes
    caught_up = prev is not None and prev["generation"] >= changes.generation - 1
    gen = changes.generation

    import numpy as np

    deleted = 0
    if full:
        vectors.clear(ix)
        ensure_rotation(ix, dims, reset=True)
        target = None                       # every node
    else:
        if caught_up:
            target = sorted(set(changes.added) | set(changes.modified))
            gone = np.asarray(changes.removed, dtype=np.int64)
        else:
            target = None
            sid, _ = vectors.stored_hashes(ix)
            live = np.fromiter((r[0] for r in ix.conn.execute("SELECT id FROM nodes")), dtype=np.int64)
            gone = sid[~np.isin(sid, live)]
        deleted = vectors.delete_vectors(ix, gone, model_id, gen)
    # stored (id, hash) pairs, ascending by id (blocks partition the id range)
    sid, sh = vectors.stored_hashes(ix)

    total = ix.node_count() if target is None else len(target)
    embedded = 0
    seen = 0
    empty: list[int] = []
    batch: list[tuple[int, str]] = []

    def flush() -> None:
        nonlocal embedded
        if not batch:
            return
        ids = np.fromiter((b[0] for b in batch), dtype=np.int64, count=len(batch))
        texts = [b[1] for b in batch]
        hashes = np.fromiter((text_hash(t) for t in texts), dtype=np.int64, count=len(texts))
        batch.clear()
        if len(sid):
            pos = np.minimum(np.searchsorted(sid, ids), len(sid) - 1)
            same = (sid[pos] == ids) & (sh[pos] == hashes)
        else:
            same = np.zeros(len(ids), dtype=bool)
        todo = np.flatnonzero(~same)
        if len(todo):
            vecs = model.encode([texts[i] for i in todo.tolist()])
            vectors.put_vectors(ix, ids[todo], hashes[todo], vecs, model_id, gen)
            embedded += len(todo)

    _progress(progress, 0, total)
    for nid, name, text in _node_rows(ix, target):
        seen += 1
        s = node_text(name, text, max_chars)
        if not s.strip():
            empty.append(nid)
            continue
        batch.append((nid, s))
        if len(batch) >= BATCH:
            flush()
            _progress(progress, seen, total)
    flush()
    if empty and len(sid):
        e = np.asarray(empty, dtype=np.int64)
        deleted += vectors.delete_vectors(ix, e[np.isin(e, sid)], model_id, gen)
    _progress(progress, total, total)

    ix.set_meta("model_id", model_id)
    ix.set_meta("model_sig", model.files_signature())
    ix.set_meta("model_dims", dims)
    ix.set_meta("model", _model_ref(path))
    seconds = time.perf_counter() - t0
    info = {"model": model_id, "dims": dims, "embedded": embedded, "deleted": deleted,
            "vectors": vectors.vector_count(ix), "full": full, "max_chars": max_chars}
    ix.mark_derived("embed", seconds, info, generation=gen)
    return {**info, "seconds": round(seconds, 3)}
