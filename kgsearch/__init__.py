"""kgsearch: offline knowledge-graph hybrid search in one SQLite file.

The package root stays light: importing it must not import numpy, so that
``kgsearch --help`` starts fast on a phone. Heavier parts load on first use.
"""
from __future__ import annotations

from .version import __version__

__all__ = ["__version__", "open_index", "search"]


def open_index(path=None, readonly=False):
    """Open (or create) an index; ``path`` defaults to ``$KGSEARCH_DB`` or the XDG data dir."""
    from .store.db import Index

    return Index.open(path, readonly=readonly)


def search(query, db=None, k=10, **options):
    """Run the hybrid query pipeline and return a :class:`kgsearch.query.Response`."""
    from .query import search as _search

    return _search(query, db=db, k=k, **options)
