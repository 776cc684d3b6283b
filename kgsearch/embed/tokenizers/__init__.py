"""A pure-Python ``tokenizer.json`` pipeline, token-for-token identical to Hugging Face
``tokenizers`` for the model2vec models kgsearch supports (stdlib only: no numpy, no Rust).
See :mod:`.tokenizer` for the pipeline and the supported components."""
from __future__ import annotations

from .models import Unigram, WordPiece
from .normalizer import Normalizer, Tables
from .pretokenizer import PreTokenizer
from .tokenizer import Tokenizer

__all__ = ["Tokenizer", "Normalizer", "PreTokenizer", "WordPiece", "Unigram", "Tables"]
