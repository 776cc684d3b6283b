"""The token estimate every budget in ``kgsearch context`` is counted in.

**Rule: tokens = ceil(characters / 4)**, characters being Unicode code points of the text as
it is printed (headers, fences and newlines included). Four characters per token is the usual
rule of thumb for English prose and code with the tokenizers of current LLMs (code with much
punctuation runs nearer 3, CJK text nearer 1 character per token: give those a smaller budget).
It needs no tokenizer file, so it runs anywhere and every reader can recompute it.

The estimate is subadditive: ``estimate(a + b) <= estimate(a) + estimate(b)``, so a text made of
pieces that were each counted never costs more than the sum of its pieces. The packer relies
on that to keep the whole output within the budget.

>>> estimate("")
0
>>> estimate("abcd"), estimate("abcde")
(1, 2)
"""
from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "estimate", "chars_for"]

CHARS_PER_TOKEN = 4


def estimate(text: str) -> int:
    """Estimated tokens of ``text``: ceil(len / 4)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def chars_for(tokens: int) -> int:
    """The most characters that ``tokens`` tokens hold by the estimate.

    >>> estimate("x" * chars_for(7)) <= 7 < estimate("x" * (chars_for(7) + 1))
    True
    """
    return max(0, int(tokens)) * CHARS_PER_TOKEN
