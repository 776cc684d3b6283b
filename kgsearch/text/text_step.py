"""Derived-data step ``text``: BM25 postings, the FTS5 table and the pattern (trigram) index.

``update(ix, changes, settings, progress=None) -> dict`` is called by the indexer inside the
index transaction. A full rebuild happens when ``changes.full`` is set, on the first run, or
when the stored tokenizer/stemmer/BM25 settings or the postings/pattern formats
(``postings.FORMAT``, ``trigrams.VERSION``) differ from this code's (meta key ``text.settings``);
otherwise only added/modified/removed nodes are touched. A migration that changes the layout
of these tables marks the step stale (``store.schema.mark_stale``) and the next index run
rebuilds them.
"""
from __future__ import annotations

import logging
import time

from ..settings import IndexSettings
from ..store.sql import in_chunks
from . import fts, postings, trigrams
from .okapi import BM25Params

__all__ = ["NAME", "update", "SETTINGS_KEY"]

log = logging.getLogger(__name__)

NAME = "text"
SETTINGS_KEY = "text.settings"


def _progress(progress, step: str, done: int = 0):
    if progress is not None:
        try:
            progress({"phase": "text", "step": step, "done": done})
        except Exception:            # a progress callback must never break indexing
            log.debug("progress callback failed", exc_info=True)


def _wanted(params: BM25Params) -> dict:
    """What the stored tables must have been built with (a difference means a full rebuild)."""
    return {"bm25": params.index_key(), "postings": postings.FORMAT, "analyzer": params.analyzer().settings(),
            "fts": fts.VERSION, "pattern": trigrams.VERSION}


def update(ix, changes, settings: dict | None = None, progress=None) -> dict:
    """Bring the text tables in line with ``nodes`` for ``changes`` (a :class:`ChangeSet`)."""
    t0 = time.perf_counter()
    params = BM25Params.from_settings(IndexSettings.coerce(settings))
    wanted = _wanted(params)
    stored = ix.meta_json(SETTINGS_KEY)
    full = bool(changes.full) or stored != wanted
    info: dict = {"full": full}
    with ix.transaction():
        # removed/modified nodes that the text index holds (before bm25 rewrites text_doclen)
        gone = sorted(set(changes.removed) | set(changes.modified))
        indexed_gone = {r[0] for r in in_chunks(ix.conn, "SELECT id FROM text_doclen WHERE id IN ({})", gone)}
        _progress(progress, "bm25")
        if full:
            info["bm25"] = postings.rebuild(ix, params, progress=lambda s, i: _progress(progress, s, i))
        elif changes.nodes_changed:
            info["bm25"] = postings.apply_changes(ix, params, changes)
            # bm25 falls back to a rebuild when the old texts do not match what it indexed;
            # then FTS5 must not trust them either
            full = info["bm25"].get("mode") == "full"
        _progress(progress, "fts")
        info["fts"] = fts.update(ix, changes, full, indexed_gone)
        _progress(progress, "pattern")
        info["pattern"] = trigrams.update(ix, changes, full)
        ix.set_meta_json(SETTINGS_KEY, wanted)
        seconds = time.perf_counter() - t0
        info["seconds"] = round(seconds, 3)
        ix.mark_derived("text", seconds, info)
    return info
