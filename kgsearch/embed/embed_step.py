"""The ``embed`` derived-data step: keep one vector per node in step with the nodes.

``update(ix, changes, settings, progress=None) -> dict`` is called by the indexer inside the
index transaction. It embeds ``name + "\\n" + text`` (cut to ``embed_max_chars``, default
2,000 characters) of added and modified nodes in batches (:func:`node_vectors`: the whole text
with its first 32 tokens weighed in), deletes the vectors of removed
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
import time

from ..settings import IndexSettings
from ..store.rows import iter_node_texts
from . import store
from .index_model import load_cached, model_ref, model_spec
from .kernel import make_rotation

log = logging.getLogger(__name__)

__all__ = ["NAME", "update", "node_text", "node_vectors", "made_another_way", "text_hash", "DEFAULT_MAX_CHARS", "LEAD_TOKENS",
           "LEAD_WEIGHT"]

NAME = "embed"

DEFAULT_MAX_CHARS = 2000
BATCH = 4096                       # nodes per encode call and vector write
# A node's vector is its whole text's vector plus LEAD_WEIGHT times the vector of its first
# LEAD_TOKENS tokens (both unit length), made unit again. A static model's vector of a long text
# is the mean of all its tokens, where the title and opening sentence that say what the text is
# about weigh as little as any other 32 tokens; the lead keeps them in view. (Scoring a node by
# the better of its whole-text and 64-word-window vectors gains as much on the shared sets, but
# stores several vectors per long node; this stores one.) Measured on the seven shared sets,
# dense alone outside the pipeline 0.3703 -> 0.3932, chosen leave-one-set-out over 16/24/32
# tokens x 0.5/1: docs/models.md. A text of at most LEAD_TOKENS tokens keeps its own vector.
LEAD_TOKENS = 32
LEAD_WEIGHT = 0.5


def node_text(name: str | None, text: str | None, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """What is embedded for a node: its name, a newline, its text; cut to ``max_chars``."""
    name = (name or "").strip()
    text = (text or "").strip()
    s = f"{name}\n{text}" if name and text else (name or text)
    return s[:max_chars]


def node_vectors(model, texts):
    """The vectors stored for nodes whose embedded texts are ``texts`` (:func:`node_text`):
    ``unit(whole) + LEAD_WEIGHT x unit(first LEAD_TOKENS tokens)``, made unit, float32
    ``(len(texts), dims)``. A text no longer than the lead gives its own unit vector; an empty
    one stays zero."""
    import numpy as np

    whole, lead = model.encode_with_lead(texts, LEAD_TOKENS)
    return _unit(_unit(whole) + np.float32(LEAD_WEIGHT) * _unit(lead))


def made_another_way(ix) -> bool:
    """Whether the index's vectors were made otherwise than this version makes them (by an older
    kgsearch, without the lead): the next run re-embeds, even when no file changed."""
    d = ix.derived(NAME)
    info = (d or {}).get("info") or {}
    return "model" in info and info.get("lead") != [LEAD_TOKENS, LEAD_WEIGHT]


def _unit(v):
    import numpy as np

    v = np.asarray(v, dtype=np.float32)
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norm, out=np.zeros_like(v), where=norm > 0)


def text_hash(s: str) -> int:
    """Signed 64-bit hash of an embedded text (blake2b), stored next to its vector."""
    return int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little", signed=True)


def _progress(progress, done: int, total: int) -> None:
    if progress is None:
        return
    try:
        progress({"phase": "embed", "done": done, "total": total})
    except Exception:           # a progress callback must never break indexing
        log.debug("progress callback failed", exc_info=True)


def ensure_rotation(ix, dims: int, reset: bool = False):
    """The index's rotation matrix, made (and stored) when missing, of other dims or ``reset``."""
    rot = None if reset else store.rotation(ix)
    if rot is None or rot.shape != (dims, dims):
        rot = make_rotation(dims)
        store.set_rotation(ix, rot)
    return rot


def update(ix, changes, settings=None, progress=None) -> dict:
    """Embed added/modified nodes, drop removed ones; re-embed all on a model change."""
    from .model import resolve_model

    t0 = time.perf_counter()
    es = IndexSettings.coerce(settings).embed
    if not es.embed:
        dropped = store.vector_count(ix)
        if dropped:
            store.clear(ix)
        return {"skipped": "embed=false in settings (kgsearch index --embed turns it on)", "dropped": dropped}
    spec = model_spec(settings)
    path = resolve_model(spec)
    if path is None:
        log.warning("no embedding model found (%s); the dense channel is off. Pass --model FOLDER, "
                    "set KGSEARCH_MODEL or run `kgsearch model pull NAME`", spec or "the shipped default")
        return {"skipped": "no model"}
    model = load_cached(path)
    model_id, dims = model.model_id, model.dims
    max_chars = es.embed_max_chars

    prev = ix.derived("embed")
    prev_info = (prev or {}).get("info") or {}
    old_model = ix.meta("model_id")
    lead = [LEAD_TOKENS, LEAD_WEIGHT]
    # (vectors made another way, by an older kgsearch without the lead too, are made again: never mixed)
    same_vectors = (old_model == model_id and ix.meta("model_dims") == str(dims)
                    and store.rotation(ix) is not None and prev_info.get("max_chars", max_chars) == max_chars)
    same_model = same_vectors and prev_info.get("lead") == lead
    new_recipe = same_vectors and prev is not None and not same_model and not changes.full
    # a migration marked the step stale (0012: sketch tables to write): same model, so vectors of
    # unchanged texts stay (every node's text hash is checked) and store.sync rewrites the rest
    migrated = "embed" in ix.stale_steps() and same_model
    full = (bool(changes.full) and not migrated) or not same_model
    # runs since our last one that did not call us (--no-embed, no model): compare hashes
    caught_up = prev is not None and prev["generation"] >= changes.generation - 1
    gen = changes.generation

    import numpy as np

    deleted = 0
    if full:
        store.clear(ix)
        ensure_rotation(ix, dims, reset=True)
        target = None                       # every node
    else:
        if caught_up and not migrated:
            target = sorted(set(changes.added) | set(changes.modified))
            gone = np.asarray(changes.removed, dtype=np.int64)
        else:
            target = None
            sid, _ = store.stored_hashes(ix)
            live = np.fromiter((r[0] for r in ix.conn.execute("SELECT id FROM nodes")), dtype=np.int64)
            gone = sid[~np.isin(sid, live)]
        deleted = store.delete_vectors(ix, gone, model_id, gen)
    # stored (id, hash) pairs, ascending by id (blocks partition the id range)
    sid, sh = store.stored_hashes(ix)

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
            vecs = node_vectors(model, [texts[i] for i in todo.tolist()])
            store.put_vectors(ix, ids[todo], hashes[todo], vecs, model_id, gen)
            embedded += len(todo)

    _progress(progress, 0, total)
    for nid, name, text in iter_node_texts(ix.conn, target, batch=4096):
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
        deleted += store.delete_vectors(ix, e[np.isin(e, sid)], model_id, gen)
    _progress(progress, total, total)

    sketch_info = store.sync(ix, full=full or migrated)
    ix.set_meta("model_id", model_id)
    ix.set_meta("model_sig", model.files_signature())
    ix.set_meta("model_dims", dims)
    ix.set_meta("model", model_ref(path))
    seconds = time.perf_counter() - t0
    info = {"model": model_id, "dims": dims, "embedded": embedded, "deleted": deleted,
            "vectors": store.vector_count(ix), "full": full, "max_chars": max_chars, "lead": lead, **sketch_info}
    old_name, new_name = (old_model or "").partition("@")[0], model_id.partition("@")[0]
    if spec is None and old_name and old_name != new_name:
        # nobody asked for this model: the default changed under the index (a new kgsearch)
        info["notice"] = (f"the index was embedded with {old_name}; re-embedded {embedded:,} nodes with the "
                          f"default model {new_name} (`kgsearch model use {old_name}` goes back to the old one)")
    elif new_recipe:
        # an older kgsearch made the vectors without the lead: once, every vector is made again
        info["notice"] = (f"re-embedded {embedded:,} nodes once: a node's vector now weighs in its opening "
                          f"(the first {LEAD_TOKENS} tokens), which an older kgsearch did not")
    ix.mark_derived("embed", seconds, info, generation=gen)
    return {**info, "seconds": round(seconds, 3)}
