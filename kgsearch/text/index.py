"""Derived-data step ``text``: BM25 postings, the FTS5 table and the pattern (trigram) index.

``update(ix, changes, settings, progress=None) -> dict`` is called by the indexer inside the
index transaction. A full rebuild happens when ``changes.full`` is set, on the first run, or
when the stored tokenizer/stemmer/BM25 settings or the postings/pattern formats
(``bm25.FORMAT``, ``pattern.VERSION``) differ from this code's (meta key ``text.settings``);
otherwise only added/modified/removed nodes are touched. Migration ``0007_text_compact`` calls
:func:`update` with a full ChangeSet to rewrite an older index's postings in the new format.
"""
from __future__ import annotations

import logging
import time

from . import bm25, fts, pattern

__all__ = ["update", "SETTINGS_KEY"]

log = logging.getLogger(__name__)

SETTINGS_KEY = "text.settings"


def _progress(progress, step: str, done: int = 0):
    if progress is not None:
        try:
            progress({"phase": "text", "step": step, "done": done})
        except Exception:            # a progress callback must never break indexing
            log.debug("progress callback failed", exc_info=True)


def update(ix, changes, settings: dict | None = None, progress=None) -> dict:
    """Bring the text tables in line with ``nodes`` for ``changes`` (a :class:`ChangeSet`)."""
    t0 = time.perf_counter()
    params = bm25.BM25Params.from_settings(settings)
    wanted = {"bm25": params.index_key(), "postings": bm25.FORMAT, "analyzer": params.analyzer().settings(),
              "fts": fts.VERSION, "pattern": pattern.VERSION}
    stored = ix.meta_json(SETTINGS_KEY)
    full = bool(changes.full) or stored != wanted
    info: dict = {"full": full}
    with ix.transaction():
        # removed/modified nodes that the text index holds (before bm25 rewrites text_doclen)
        gone = sorted(set(changes.removed) | set(changes.modified))
        indexed_gone: set[int] = set()
        for s in range(0, len(gone), 500):
            part = gone[s:s + 500]
            indexed_gone.update(r[0] for r in ix.conn.execute(
                f"SELECT id FROM text_doclen WHERE id IN ({','.join('?' * len(part))})", part))
        _progress(progress, "bm25")
        if full:
            info["bm25"] = bm25.rebuild(ix, params, progress=lambda s, i: _progress(progress, s, i))
        elif changes.nodes_changed:
            info["bm25"] = bm25.apply_changes(ix, params, changes)
            # bm25 falls back to a rebuild when the old texts do not match what it indexed;
            # then FTS5 must not trust them either
            full = info["bm25"].get("mode") == "full"
        _progress(progress, "fts")
        info["fts"] = fts.update(ix, changes, full, indexed_gone)
        _progress(progress, "pattern")
        info["pattern"] = pattern.update(ix, changes, full)
        ix.set_meta_json(SETTINGS_KEY, wanted)
        seconds = time.perf_counter() - t0
        info["seconds"] = round(seconds, 3)
        ix.mark_derived("text", seconds, info)
    return info
