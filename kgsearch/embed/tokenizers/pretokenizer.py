"""Pre-tokenizers of the ``tokenizer.json`` pipeline: BertPreTokenizer, WhitespaceSplit,
Punctuation (isolated), their Sequence, and Metaspace."""
from __future__ import annotations

import re

from ...errors import DataError
from .normalizer import Tables

__all__ = ["PreTokenizer", "Metaspace"]


class PreTokenizer:
    """Splits normalised text into words: on whitespace (removed) and/or around punctuation
    (each punctuation character its own word). The two commute, so text is first cut into
    whitespace-free chunks (``chunks``) and each chunk is split around punctuation
    (``pieces``); callers memoise per chunk."""

    def __init__(self, split_ws: bool, isolate_punct: bool):
        self.split_ws = split_ws
        self.isolate_punct = isolate_punct
        t = Tables.get()
        ws = t.whitespace.regex_class()
        self._ws_re = re.compile(f"[^{ws}]+")
        # ASCII text can use str.split() unless it holds characters Python calls whitespace
        # and tokenizers does not (U+001C..U+001F)
        self._py_only_ws = [chr(c) for c in range(128) if chr(c).isspace() and c not in t.whitespace]
        self._punct_full = t.punct.regex_class()
        self._punct_re_astral = None   # compiled when a chunk first needs it (10-20 ms: every CLI search paid it)
        # the same split for chunks without astral characters, and for ASCII chunks with a
        # 128-character class (re tests a class with astral ranges range by range)
        bmp = t.punct.regex_class(bmp_only=True)
        self._punct_re_bmp = re.compile(f"[^{bmp}]+|[{bmp}]")
        ascii_punct = "".join(re.escape(chr(c)) for c in range(128) if c in t.punct)
        self._punct_re_ascii = re.compile(f"[^{ascii_punct}]+|[{ascii_punct}]") if ascii_punct else None
        self.ascii_split_ok = False   # set when the normaliser removes U+001C..U+001F
        # str.isalnum() may short-cut punctuation splitting only if no character this table
        # calls punctuation is a letter or digit to the running Python (true for 3.10-3.13)
        self.alnum_ok = not any(chr(c).isalnum() for a, b in zip(t.punct.starts, t.punct.ends)
                                for c in range(a, b + 1))

    def chunks(self, text: str) -> list[str]:
        if not self.split_ws:
            return [text] if text else []
        if text.isascii() and (self.ascii_split_ok or not any(c in text for c in self._py_only_ws)):
            return text.split()
        return self._ws_re.findall(text)

    def pieces(self, chunk: str) -> list[str]:
        if not self.isolate_punct or (self.alnum_ok and chunk.isalnum()):
            return [chunk]
        if chunk.isascii() and self._punct_re_ascii is not None:
            return self._punct_re_ascii.findall(chunk)
        if max(chunk) <= "\uffff":
            return self._punct_re_bmp.findall(chunk)
        return self._punct_re.findall(chunk)

    @property
    def _punct_re(self):
        """The split around punctuation for any chunk (astral characters included)."""
        if self._punct_re_astral is None:
            self._punct_re_astral = re.compile(f"[^{self._punct_full}]+|[{self._punct_full}]")
        return self._punct_re_astral

    def __call__(self, text: str) -> list[str]:
        out: list[str] = []
        for c in self.chunks(text):
            out += self.pieces(c)
        return out

    @classmethod
    def from_spec(cls, spec: dict | None, where: str = "tokenizer.json") -> "PreTokenizer":
        if spec is None:
            return cls(False, False)
        if spec.get("type") == "Metaspace":
            scheme = spec.get("prepend_scheme")
            if scheme is None:
                scheme = "always" if spec.get("add_prefix_space", True) else "never"
            return Metaspace(spec.get("replacement", "\u2581"), str(scheme).lower(),
                              bool(spec.get("split", True)))   # type: ignore[return-value]
        subs = spec.get("pretokenizers") or [] if spec.get("type") == "Sequence" else [spec]
        kinds = [s.get("type") for s in subs]
        unknown = [k for k in kinds if k not in ("BertPreTokenizer", "WhitespaceSplit", "Punctuation")]
        if unknown:
            raise DataError(f"unsupported pre-tokenizer {unknown[0]!r} (kgsearch reads BertPreTokenizer, "
                            f"WhitespaceSplit, Punctuation, Sequence of those, and Metaspace); use a BERT-style "
                            f"model2vec model", where)
        for s in subs:
            if s.get("type") == "Punctuation" and s.get("behavior", "Isolated") not in ("Isolated", "isolated"):
                raise DataError(f"unsupported Punctuation behavior {s.get('behavior')!r} in the pre-tokenizer "
                                f"(kgsearch reads Isolated)", where)
        return cls(any(k in ("BertPreTokenizer", "WhitespaceSplit") for k in kinds),
                   any(k in ("BertPreTokenizer", "Punctuation") for k in kinds))


# ---------------------------------------------------------------------------- WordPiece


class Metaspace:
    """``Metaspace`` pre-tokenizer: spaces become the replacement (``\u2581``), which is
    prepended (scheme ``always``, or ``first`` for the text's first piece) and starts each word."""

    isolate_punct = False
    ascii_split_ok = False
    alnum_ok = False

    def __init__(self, replacement: str = "\u2581", prepend_scheme: str = "always", split: bool = True):
        self.rep = replacement
        self.scheme = prepend_scheme
        self.split = split
        r = re.escape(replacement)
        self._re = re.compile(f"{r}[^{r}]*|[^{r}]+")

    def chunks(self, text: str, first: bool = True) -> list[str]:
        if not text:
            return []           # tokenizers does not pre-tokenise empty pieces
        text = text.replace(" ", self.rep)
        if (self.scheme == "always" or (self.scheme == "first" and first)) and not text.startswith(self.rep):
            text = self.rep + text
        if not self.split:
            return [text] if text else []
        return self._re.findall(text)

    def pieces(self, chunk: str) -> list[str]:
        return [chunk]

    def __call__(self, text: str) -> list[str]:
        return self.chunks(text)


# ---------------------------------------------------------------------------- added tokens
