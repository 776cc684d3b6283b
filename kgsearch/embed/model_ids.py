"""The content ids of model files already hashed, kept in the user's cache.

A model's id (``StaticModel.model_id``) is the sha256 of its three files (~10 MB for the shipped
model). A search skips hashing when the index's meta ``model_sig`` (resolved path, size and
mtime_ns of each file) is the loaded model's, but an index copied from a laptop to a phone, a
reinstall, or a model folder moved gives another path: every cold search (the CLI, cron, an
agent's call: each a fresh process) then hashed the model again until the next ``kgsearch
index``. Here the id of a signature is remembered once computed, under the rule ``model_sig``
already trusts (the same resolved paths, sizes and mtimes are the same bytes), in
``cache_home()/model-ids.json``: never in the index, which a search opens read-only.

Best effort both ways: a missing, unreadable or malformed file is no entry (the files are hashed
as before), a file that cannot be written is skipped; it is written whole and renamed into place
(a crash leaves the old file or none) and keeps the :data:`KEEP` signatures used last.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["cache_file", "lookup", "remember", "KEEP", "FORMAT"]

KEEP = 32            # signatures kept (model folders seen on this machine; a few are usual)
FORMAT = 1


def cache_file() -> Path:
    from ..config import cache_home

    return cache_home() / "model-ids.json"


def _read(path: Path) -> list[list[str]]:
    """The ``[signature, model_id]`` pairs of the file, oldest first; [] when it is missing or
    not what this module writes."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:   # (UnicodeDecodeError is a ValueError)
        if not isinstance(exc, FileNotFoundError):
            log.debug("ignoring the model id cache %s: %s", path, exc)
        return []
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("ids"), list):
        log.debug("ignoring the model id cache %s: not format %d", path, FORMAT)
        return []
    return [e for e in data["ids"]
            if isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) and x for x in e)]


def lookup(signature: str) -> str | None:
    """The model id remembered for ``signature`` (``StaticModel.files_signature()``), or None."""
    for sig, mid in reversed(_read(cache_file())):
        if sig == signature:
            return mid
    return None


def remember(signature: str, model_id: str) -> None:
    """Keep ``model_id`` for ``signature`` (moved to the newest place; the oldest entries beyond
    :data:`KEEP` are dropped). Never raises for the file: a cache that cannot be written is skipped."""
    import tempfile      # (only here: it imports random, 2 ms of a cold search that finds its id)

    path = cache_file()
    entries = [e for e in _read(path) if e[0] != signature]
    entries.append([signature, model_id])
    # ASCII: a path that is not UTF-8 (surrogate escapes) is written as \udcXX and read back the same
    text = json.dumps({"format": FORMAT, "ids": entries[-KEEP:]}, indent=0)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".model-ids.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        log.debug("cannot keep the model id in %s: %s", path, exc)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
