"""What a query engine holds under the memory budget (``KGSEARCH_MEMORY_MB``, :mod:`kgsearch.budget`):
whether the graph arrays fit (else why the graph channels are off) and the size of the
connection's SQLite page cache. :class:`kgsearch.query.engine.Engine` calls both."""
from __future__ import annotations

from ..budget import ENV as BUDGET_ENV, budget_bytes, headroom, share
from ..graph.stored import rows as adjacency
from ..store.db import Index

__all__ = ["graph_over_budget", "fit_page_cache", "PAGE_CACHE_KIB", "QUERY_PAGE_CACHE_KIB", "PAGE_CACHE_SHARE"]

# with adjacency rows only the per-node arrays are loaded (kgsearch/graph/stored/rows.py)
_PER_NODE = " AND name IN ('graph.node_ids', 'graph.pagerank', 'graph.community', 'graph.kind')"


def graph_over_budget(ix: Index) -> str | None:
    """Why the graph arrays cannot be loaded under ``KGSEARCH_MEMORY_MB`` (None: they fit, or
    no budget). Their size is the stored blobs' (``length()`` reads no blob content)."""
    room = headroom()
    if room is None:
        return None
    need = ix.conn.execute("SELECT coalesce(sum(length(data)), 0) FROM blobs WHERE name >= 'graph.' "
                           "AND name < 'graph/'" + (_PER_NODE if adjacency.stored_meta(ix) else "")).fetchone()[0]
    if need <= room:
        return None
    return (f"over the memory budget (the graph needs {need / 2**20:.0f} MiB, {BUDGET_ENV}="
            f"{budget_bytes() / 2**20:.0f} leaves {max(room, 0) / 2**20:.0f}; raise {BUDGET_ENV})")


PAGE_CACHE_KIB = 16000        # SQLite's page cache per connection (kgsearch.store.db)
QUERY_PAGE_CACHE_KIB = 2048   # a query engine's: its reads are whole blobs and scattered rows
PAGE_CACHE_SHARE = 0.05       # its share of KGSEARCH_MEMORY_MB when that is smaller


def fit_page_cache(ix: Index) -> None:
    """Size the connection's page cache for queries.

    A query reads blobs once (norms, sketches: each fills the cache with pages it never reads
    again) and a few hundred scattered rows; the operating system caches the file anyway. At
    1M nodes a 16 MB cache was 14 MiB of the process and bought no measurable latency over
    2 MiB (bench/results/query_1m.md). Under ``KGSEARCH_MEMORY_MB`` it is the budget's share
    when that is smaller (the vector cache takes a quarter, kgsearch.embed.dense)."""
    kib = share(PAGE_CACHE_SHARE, QUERY_PAGE_CACHE_KIB * 1024) // 1024
    if kib < PAGE_CACHE_KIB:
        ix.conn.execute(f"PRAGMA cache_size=-{max(kib, 512)}")
