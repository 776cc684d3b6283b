"""Text retrieval: tokenizer, stemmers, BM25 postings in the index, FTS5, pattern (trigram/fuzzy/regex), code keywords."""
