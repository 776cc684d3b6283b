"""Subword models of the ``tokenizer.json`` pipeline: greedy longest-match ``WordPiece``,
``Unigram`` (SentencePiece Viterbi with byte fallback) and ``BPE`` (ranked merges with byte
fallback: the Llama 2 / SentencePiece-BPE vocabularies). Results are memoised per word."""
from __future__ import annotations

import heapq
import re

from ...errors import DataError
from .normalizer import MEMO_CAP

__all__ = ["WordPiece", "Unigram", "BPE"]


class _Memoised:
    """A subword model's :meth:`word`: ``_split`` memoised per word (reset past ``MEMO_CAP``)."""

    memo: dict[str, tuple[int, ...]]

    def _split(self, word: str) -> tuple[int, ...]:
        raise NotImplementedError

    def word(self, w: str) -> tuple[int, ...]:
        t = self.memo.get(w)
        if t is None:
            if len(self.memo) > MEMO_CAP:
                self.memo.clear()
            t = self.memo[w] = self._split(w)
        return t


class WordPiece(_Memoised):
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
class Unigram(_Memoised):
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


# ---------------------------------------------------------------------------- BPE
class BPE(_Memoised):
    """Byte-pair encoding as ``tokenizers`` runs it (no dropout, no continuing-subword prefix or
    end-of-word suffix): a word starts as its characters (a character not in the vocabulary as
    its UTF-8 bytes ``<0xXX>`` with ``byte_fallback``, else the unknown token, consecutive
    unknowns fused with ``fuse_unk``); then the adjacent pair of lowest merge rank is merged,
    the leftmost first, until no pair has a merge (a merge listed twice: its later rank, as
    ``tokenizers``). :meth:`_split` does it with a heap of candidate merges (stale entries
    skipped), as ``tokenizers`` does; :meth:`_split_reference` rescans every pair after each
    merge (quadratic: the obvious version). Symbols are the tokens' strings, merges looked up by
    ``"a b"`` (or ``(a, b)`` for list-form merges), so loading is one dict build (Llama 2's 61K
    merges: ~20 ms, not the ~0.5 s of resolving each to ids).

    ``spaced``: when no vocabulary entry has the word marker ``\u2581`` after another character
    (the Llama 2 vocabulary: pieces are ``\u2581word``, ``word`` or runs of ``\u2581``), no
    merge can cross the start of a ``\u2581`` run, so a text may be split there into words
    (:meth:`words`) and each memoised: the ids equal those of the whole text in one piece.
    """

    MARK = "\u2581"

    def __init__(self, vocab: dict[str, int], merges: list, unk_token: str | None = None,
                 byte_fallback: bool = False, fuse_unk: bool = False):
        self.vocab = vocab
        self.unk_token = unk_token
        self.unk_id = vocab.get(unk_token) if unk_token is not None else None
        self.byte_fallback = bool(byte_fallback)
        self.fuse_unk = bool(fuse_unk)
        self._listed = bool(merges) and not isinstance(merges[0], str)
        self.ranks: dict = ({tuple(m): r for r, m in enumerate(merges)} if self._listed
                            else dict(zip(merges, range(len(merges)))))
        self.bytes = [f"<0x{b:02X}>" if f"<0x{b:02X}>" in vocab else None for b in range(256)]
        mark = self.MARK
        self.spaced = not any(mark in k.lstrip(mark) for k in vocab)
        self._words = re.compile(f"{mark}+[^{mark}]*|[^{mark}]+")
        self.memo: dict[str, tuple[int, ...]] = {}

    def words(self, text: str) -> list[str]:
        """``text`` cut where a run of the word marker starts (when :attr:`spaced`), else whole."""
        if not text:
            return []
        return self._words.findall(text) if self.spaced else [text]

    def _rank(self, a: str, b: str):
        return self.ranks.get((a, b) if self._listed else f"{a} {b}")

    def _symbols(self, word: str) -> list[str]:
        vocab, out = self.vocab, []
        unk = False
        for ch in word:
            if ch in vocab:
                out.append(ch)
                unk = False
                continue
            if self.byte_fallback:
                bt = [self.bytes[b] for b in ch.encode("utf-8")]
                if None not in bt:
                    out += bt       # type: ignore[arg-type]
                    unk = False
                    continue
            if self.unk_id is None:
                raise DataError(f"BPE model has no unk_token but {ch!r} is not in its vocabulary", "tokenizer.json")
            if not (unk and self.fuse_unk):
                out.append(self.unk_token)
            unk = True
        return out

    def _ids(self, sym) -> tuple[int, ...]:
        vocab = self.vocab
        try:
            return tuple(vocab[s] for s in sym)
        except KeyError as exc:
            raise DataError(f"a BPE merge makes {exc.args[0]!r}, which the vocabulary lacks", "tokenizer.json") from None

    def _split(self, word: str) -> tuple[int, ...]:
        sym = self._symbols(word)
        n = len(sym)
        if n < 2:
            return self._ids(sym)
        rank = self._rank
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        alive = [True] * n
        heap = []
        for i in range(n - 1):
            r = rank(sym[i], sym[i + 1])
            if r is not None:
                heap.append((r, i, sym[i], sym[i + 1]))
        heapq.heapify(heap)
        while heap:
            _, i, a, b = heapq.heappop(heap)
            j = nxt[i]
            if not alive[i] or j >= n or sym[i] != a or sym[j] != b:
                continue                # stale: a neighbour was merged since
            new = sym[i] = a + b
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prv[nxt[j]] = i
            p = prv[i]
            if p >= 0:
                r = rank(sym[p], new)
                if r is not None:
                    heapq.heappush(heap, (r, p, sym[p], new))
            q = nxt[i]
            if q < n:
                r = rank(new, sym[q])
                if r is not None:
                    heapq.heappush(heap, (r, i, new, sym[q]))
        return self._ids([s for s, ok in zip(sym, alive) if ok])

    def _split_reference(self, word: str) -> tuple[int, ...]:
        """The lowest-rank adjacent pair merged, leftmost first, rescanning after each merge."""
        sym = self._symbols(word)
        while len(sym) > 1:
            best = None
            for i in range(len(sym) - 1):
                r = self._rank(sym[i], sym[i + 1])
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            sym[i:i + 2] = [sym[i] + sym[i + 1]]
        return self._ids(sym)

