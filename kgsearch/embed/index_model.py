"""The model that goes with an index: which one the settings ask for, loaded once per process.

The ``embed`` step records the model it embedded with (meta ``model_id``, ``model``,
``model_sig``); a query process must embed queries with the same model, so
:func:`query_model` looks for it (``meta model``, then ``$KGSEARCH_MODEL``, then the shipped
default) and checks its id, or says in one line why dense search is off.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["model_spec", "model_ref", "load_cached", "query_model", "model_files_changed"]

_MODELS: dict[str, Any] = {}       # resolved folder -> loaded model (per process)


def model_spec(settings) -> str | None:
    """The model the settings ask for: ``model`` (an :class:`~kgsearch.settings.IndexSettings` or a
    dict of flat keys), else ``$KGSEARCH_MODEL``, else None (the shipped default)."""
    from ..settings import IndexSettings

    from ..environment import current

    spec = IndexSettings.coerce(settings).embed.model
    if spec:
        return str(spec)
    return current().model or None


def model_ref(path: Path) -> str:
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


def load_cached(path: Path):
    from .model import load_model

    key = str(path.resolve())
    m = _MODELS.get(key)
    if m is None:
        m = _MODELS[key] = load_model(path)
    return m


def query_model(ix):
    """The model that built the index's vectors (loaded once per process), or a one-line
    string saying why there is none here.

    Found once per index generation: a model whose id is the index's ``model_id`` gives the
    vectors the index was built with wherever it was found, and the id changes only with a
    reindex, which moves the generation. Looking again on every query (the meta reads and a
    dozen ``stat`` calls of the search path) cost about 0.1 ms, 5 % of a small index's search.
    A miss is not kept: a model pulled while ``serve`` runs is found by the next query."""
    hit = ix._cache.get(_FOUND)
    gen = ix.generation
    if hit is not None and hit[0] == gen:
        return hit[1]
    m = _find(ix)
    if not isinstance(m, str):
        ix._cache[_FOUND] = (gen, m)
    return m


_FOUND = "embed.query_model"


def _find(ix):
    from ..environment import current
    from .model import resolve_model

    want = ix.meta("model_id")
    tried = []
    for spec in (ix.meta("model"), current().model, "default"):
        if not spec:
            continue
        path = resolve_model(spec)
        if path is None:
            tried.append(spec)
            continue
        try:
            m = load_cached(path)
        except Exception as exc:   # a broken folder is just not the right model
            log.debug("cannot load model %s: %s", path, exc)
            tried.append(spec)
            continue
        # same files as when the index was embedded: skip hashing 8+ MB on every cold start (files
        # at another path: model_id finds the id kept in the user's cache, embed/model_ids.py)
        if m._model_id is None and want and ix.meta("model_sig") == m.files_signature():
            m._model_id = want
        if m.model_id == want:
            return m
        tried.append(f"{spec} ({m.model_id})")
    return (f"the index was embedded with {want}, which is not available here (tried {', '.join(tried)}); "
            f"pass the same model with --model or rebuild with `kgsearch index --full`")


def model_files_changed(ix, settings) -> bool:
    """True when the model the settings ask for is not the files the index was embedded with
    (meta ``model_sig``: path, size and mtime of its three files; no model is loaded). An index
    run with no changed file then still runs the embed step, which re-embeds when the model's
    content differs: a new default model after an upgrade, or a model folder replaced."""
    from ..settings import IndexSettings
    from .model import find_layout, resolve_model

    if not IndexSettings.coerce(settings).embed.embed:
        return False
    path = resolve_model(model_spec(settings))
    layout = find_layout(path) if path is not None else None
    if layout is None:
        return False
    parts = []
    for p in layout[:3]:
        try:
            st = os.stat(p)
        except OSError:
            return False
        parts.append(f"{Path(p).resolve()}:{st.st_size}:{st.st_mtime_ns}")
    return ix.meta("model_sig") != "|".join(parts)
