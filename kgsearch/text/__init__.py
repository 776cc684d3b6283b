"""Text retrieval: tokenizer, stemmers, BM25 postings in the index, FTS5, pattern matching, keywords.

Channels (``search(ix, query, k=100, **opts) -> (ids int64, scores float32)``):
``bm25.search``, ``fts.search``, ``fts.text_search`` (max of normalised BM25 and FTS5),
``pattern.search`` (identifier / fuzzy / ``/regex/``), ``keywords.search_equivalences``.
Derived-data step: ``index.update(ix, changes, settings, progress=None)``.
In-memory BM25 on token lists: ``bm25.MemoryBM25``. Analyzer: ``tokenize.Analyzer``.
"""
