"""``kgsearch demo [QUERY]``: index the built-in demo knowledge base and answer a query, offline.

The demo (``data/demo``: an Obsidian-style vault and a typed knowledge graph about offline
search on a phone) is indexed into its own file, ``<data dir>/demo.db`` unless ``--db`` is
given, so it never mixes with the user's index (``--db`` naming an index of other folders is a
usage error). Reindexing is incremental, so a second run
costs a few milliseconds before the query; a default demo index made from another copy of the
demo folder (another checkout or install) is rebuilt.
"""
from __future__ import annotations

from .config import data_home, shipped_data_dir
from .errors import BadIndex

DEFAULT_QUERY = "how do I keep my notes searchable offline on my phone"


def demo_dir():
    base = shipped_data_dir()
    if base is None or not (base / "demo").is_dir():
        raise BadIndex("the demo data is not installed; reinstall kgsearch from its source folder "
                       "(pip install -e .) or set KGSEARCH_DATA to the project's data/ folder")
    return base / "demo"


def run_demo(query: str | None = None, db=None, k: int = 5, quiet: bool = False):
    from .indexer import IndexOptions, index_paths
    from .query import SearchOptions, search

    src = demo_dir()
    path = db or (data_home() / "demo.db")
    if db is None:
        _forget_other_demo(path, src)
    else:
        _refuse_another_index(path, src)
    report = index_paths(path, [str(src)], IndexOptions())
    resp = search(query or DEFAULT_QUERY, db=path, options=SearchOptions(k=k))
    return resp, report


def _roots(path) -> list | None:
    """The roots of the index at ``path`` ([] when there is no file; None when it cannot be read)."""
    import json
    import os
    import sqlite3

    from .store.db import Index

    if not os.path.exists(path):
        return []
    try:
        with Index.open(path, readonly=True) as ix:
            return json.loads(ix.meta("roots", "[]") or "[]")
    except (BadIndex, sqlite3.Error, ValueError):
        return None


def _refuse_another_index(path, src) -> None:
    """``demo --db FILE``: FILE is the demo's index, new or made by the demo; an index of other
    roots (the user's notes) is not mixed with the demo's 42 files (every later bare
    ``kgsearch index`` would reindex them there too)."""
    from .errors import UsageError

    roots = _roots(path)
    others = [r for r in roots or [] if r != str(src.resolve())]
    if others:
        raise UsageError(f"{path} is an index of other folders ({', '.join(others[:3])}"
                         f"{', ...' if len(others) > 3 else ''}); the demo keeps its own index: leave --db out, "
                         f"or give a new file")


def _forget_other_demo(path, src) -> None:
    """The default demo index holds one demo folder: when kgsearch now runs from another checkout
    or install, the file indexed from the old one is removed (it is ours, and rebuilt in ~1 s);
    otherwise both folders' notes, with the same keys, would sit in one index."""
    import os

    if not os.path.exists(path):
        return
    roots = _roots(path)                   # None: unreadable or old: rebuild it
    if roots == [str(src.resolve())]:
        return
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(f"{path}{suffix}")
        except FileNotFoundError:
            pass
