"""Subword models of the ``tokenizer.json`` pipeline: greedy longest-match ``WordPiece`` and
``Unigram`` (SentencePiece Viterbi with byte fallback). Results are memoised per word."""
from __future__ import annotations

from ...errors import DataError
from .normalizer import MEMO_CAP

__all__ = ["WordPiece", "Unigram"]


class WordPiece:
    """Greedy longest-match-first subword split, memoised per word.

    :meth:`_split_reference` is the algorithm as ``tokenizers`` states it: for each piece, try
    every end from the end of the word down to one character (quadratic in the word length).
    :meth:`_split` gives the same ids: the first piece by the same downward search, started at
    the longest vocabulary entry; continuation pieces by a forward scan over ``_cont`` (the
    ``##`` entries with ``##`` stripped, plus all their prefixes: prefix -> id, or -1 for a
    prefix that is not itself an entry), which stops at the first prefix no entry starts with;
    the last entry seen is the greedy longest match, because every prefix of a matching entry
    is in the table. A continuation piece costs (its length + 1) lookups of plain slices, no
    ``"##" + ...`` concatenation and no memo of word tails. ``_cont`` is built on the first
    split that needs it (~8K strings for BERT vocabularies, a few ms).
    """

    def __init__(self, vocab: dict[str, int], unk_token: str = "[UNK]", prefix: str = "##",
                 max_input_chars_per_word: int = 100):
        self.vocab = vocab
        self.unk_token = unk_token
        self.unk_id = vocab.get(unk_token)
        self.prefix = prefix
        self.max_chars = max_input_chars_per_word
        # the longest vocabulary entry: no longer first piece can match, so the search starts there
        self.max_first = max(map(len, vocab), default=0)
        self.memo: dict[str, tuple[int, ...]] = {}
        self._cont: dict[str, int] | None = None

    def _cont_table(self) -> dict[str, int]:
        p, vocab = len(self.prefix), self.vocab
        head = self.prefix[:1]        # a first-character filter is ~4x cheaper than startswith on 30K keys
        keys = [k for k in vocab if k[:1] == head] if head else list(vocab)
        entries = {k[p:]: vocab[k] for k in keys if k.startswith(self.prefix) and len(k) > p}
        table = dict.fromkeys({k[:i] for k in entries for i in range(1, len(k))}, -1)
        table.update(entries)
        self._cont = table
        return table

    def _split(self, word: str) -> tuple[int, ...]:
        n = len(word)
        if n > self.max_chars:
            return self._unk(word)
        vocab = self.vocab
        end = min(n, self.max_first)
        while end > 0:
            tid = vocab.get(word[:end])
            if tid is not None:
                break
            end -= 1
        else:
            return self._unk(word)
        if end == n:
            return (tid,)
        get = (self._cont if self._cont is not None else self._cont_table()).get
        out = [tid]
        start = end
        while start < n:
            tid = None
            i = start + 1
            while i <= n:
                v = get(word[start:i])
                if v is None:
                    break
                if v >= 0:
                    tid, end = v, i
                i += 1
            if tid is None:
                return self._unk(word)
            out.append(tid)
            start = end
        return tuple(out)

    def _split_reference(self, word: str) -> tuple[int, ...]:
        """Greedy longest match as ``tokenizers`` writes it (the slow, obvious version)."""
        if len(word) > self.max_chars:
            return self._unk(word)
        out: list[int] = []
        start, n = 0, len(word)
        while start < n:
            end, tid = n, None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                tid = self.vocab.get(piece)
                if tid is not None:
                    break
                end -= 1
            if tid is None:
                return self._unk(word)
            out.append(tid)
            start = end
        return tuple(out)

    def _unk(self, word: str) -> tuple[int, ...]:
        if self.unk_id is None:
            raise DataError(f"WordPiece unk token {self.unk_token!r} is not in the vocabulary "
                            f"(needed for {word[:20]!r})", "tokenizer.json")
        return (self.unk_id,)

    def word(self, w: str) -> tuple[int, ...]:
        t = self.memo.get(w)
        if t is None:
            if len(self.memo) > MEMO_CAP:
                self.memo.clear()
            t = self.memo[w] = self._split(w)
        return t

    def ids(self, words: list[str]) -> list[int]:
        memo = self.memo
        out: list[int] = []
        for w in words:
            t = memo.get(w)
            if t is None:
                if len(memo) > MEMO_CAP:
                    memo.clear()
                t = memo[w] = self._split(w)
            out += t
        return out


# ---------------------------------------------------------------------------- Unigram
class Unigram:
    """SentencePiece-style Unigram model: Viterbi best segmentation by piece scores, as
    ``tokenizers`` (``encode_optimized``: pieces tried shortest first, strict improvement only,
    one unknown character at ``min_score - 10``, consecutive unknowns fused, optional byte
    fallback ``<0xXX>``). Memoised per pre-tokenised piece."""

    UNK_PENALTY = 10.0

    def __init__(self, vocab: list, unk_id: int | None = None, byte_fallback: bool = False):
        self.pieces = [(str(p), float(sc)) for p, sc in vocab]
        self.vocab = {p: i for i, (p, _) in enumerate(self.pieces)}      # later duplicates win
        self.unk_id = None if unk_id is None else int(unk_id)
        self.unk_token = self.pieces[self.unk_id][0] if self.unk_id is not None else None
        self.byte_fallback = bool(byte_fallback)
        self.min_score = min((sc for _, sc in self.pieces), default=0.0)
        self.max_len = max((len(p) for p, _ in self.pieces), default=0)
        self.memo: dict[str, tuple[int, ...]] = {}

    def _segment(self, s: str) -> list[str]:
        n = len(s)
        if n == 0:
            return []
        vocab, pieces, max_len = self.vocab, self.pieces, self.max_len
        unk_score = self.min_score - self.UNK_PENALTY
        score = [0.0] * (n + 1)
        start = [-1] * (n + 1)
        node_id = [-1] * (n + 1)
        for i in range(n):
            if i and start[i] < 0:
                continue            # unreachable (cannot happen: every char gets a node)
            base = score[i]
            single = False
            for j in range(i + 1, min(n, i + max_len) + 1):
                tid = vocab.get(s[i:j])
                if tid is None:
                    continue
                cand = pieces[tid][1] + base
                if start[j] < 0 or cand > score[j]:
                    score[j], start[j], node_id[j] = cand, i, tid
                if j == i + 1:
                    single = True
            if not single:
                if self.unk_id is None:
                    raise DataError(f"Unigram model has no unk_id but {s[i]!r} is not in its vocabulary",
                                    "tokenizer.json")
                cand = unk_score + base
                if start[i + 1] < 0 or cand > score[i + 1]:
                    score[i + 1], start[i + 1], node_id[i + 1] = cand, i, self.unk_id
        out: list[str] = []
        fused: list[str] = []
        end = n
        while end > 0:
            b = start[end]
            if self.unk_id is not None and node_id[end] == self.unk_id:
                fused.append(s[b:end])
            else:
                if fused:
                    out.append("".join(reversed(fused)))
                    fused = []
                out.append(s[b:end])
            end = b
        if fused:
            out.append("".join(reversed(fused)))
        out.reverse()
        return out

    def _split(self, s: str) -> tuple[int, ...]:
        ids: list[int] = []
        for piece in self._segment(s):
            tid = self.vocab.get(piece)
            if tid is None:
                if self.byte_fallback:
                    bt = [self.vocab.get(f"<0x{b:02X}>") for b in piece.encode("utf-8")]
                    if all(x is not None for x in bt):
                        ids += bt   # type: ignore[arg-type]
                        continue
                tid = self.unk_id
                if tid is None:
                    raise DataError("Unigram model has no unk_id", "tokenizer.json")
            ids.append(tid)
        return tuple(ids)

    def word(self, w: str) -> tuple[int, ...]:
        t = self.memo.get(w)
        if t is None:
            if len(self.memo) > MEMO_CAP:
                self.memo.clear()
            t = self.memo[w] = self._split(w)
        return t
