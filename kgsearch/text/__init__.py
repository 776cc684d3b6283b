"""Text retrieval: tokenizer, stemmers, BM25 postings in the index, FTS5, pattern matching, keywords.

Channels (``search(ix, query, k=100, **opts) -> (ids int64, scores float32)``):
``bm25.search``, ``fts.search``, ``fts.text_search`` (max of normalised BM25 and FTS5),
``pattern.search`` (identifier / fuzzy / ``/regex/``), ``keywords.search_equivalences``.
Derived-data steps: ``text_step.update(ix, changes, settings, progress=None)`` (postings,
FTS5, trigrams) and ``neighbors.update`` (``similar_text`` edges). Storage: ``postings``
(BM25), ``idcodec`` (posting-list codecs), ``trigrams`` (the pattern channel's index).
In-memory BM25 on token lists: ``okapi.MemoryBM25``. Analyzer: ``tokenize.Analyzer``.
"""
