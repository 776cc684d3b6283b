"""``kgsearch demo [QUERY]``: index the built-in demo knowledge base and answer a query, offline.

The demo (``data/demo``: an Obsidian-style vault and a typed knowledge graph about offline
search on a phone) is indexed into its own file, ``<data dir>/demo.db`` unless ``--db`` is
given, so it never mixes with the user's index. Reindexing is incremental, so a second run
costs a few milliseconds before the query.
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
    from .pipeline import SearchOptions, search

    path = db or (data_home() / "demo.db")
    report = index_paths(path, [str(demo_dir())], IndexOptions())
    resp = search(query or DEFAULT_QUERY, db=path, options=SearchOptions(k=k, use_cache=False))
    return resp, report
