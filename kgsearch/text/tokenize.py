"""Unicode-aware, code-aware tokenizer.

``Analyzer(stemmer="porter2")(text) -> list[str]``:

1. Raw tokens are runs of Unicode word characters, joined by ``_`` or ``.`` between word
   characters (``os.path.join``, ``blast_radius``, ``StreamingTextResponse``). Hyphens,
   apostrophes and other punctuation separate tokens.
2. A raw token that is plain lower-case (the common case) becomes one term. A compound
   (CamelCase, snake_case, dotted, letter/digit boundary) yields the whole identifier with its
   separators (and stop-word parts such as ``self``) removed plus each part: ``StreamingTextResponse`` -> ``streamingtextresponse``,
   ``streaming``, ``text``, ``response``; ``blast_radius`` -> ``blastradius``, ``blast``,
   ``radius``. Joining without separators lets ``BlastRadius`` and ``blast_radius`` meet.
3. Lower-casing (``str.lower``; NFKC first for non-ASCII), Latin letters folded to ASCII
   (:func:`fold_latin`: ``café`` -> ``cafe``, ``Straße`` -> ``strasse``, as Lucene's ASCII folding;
   ``fold=False`` for an index made before it), stop words (English plus code noise words), then
   the stemmer, which is English: it is applied to words written in ASCII letters only; a word
   with any other letter (Cyrillic, Greek, Arabic...) is kept as written (lower-cased, NFKC).
   Terms longer than 64 characters are dropped (minified data, hashes). Combining marks are
   word characters (:mod:`kgsearch.text.marks`: Hindi's vowel signs, a decomposed ``é``); an
   index made before (``analysis=2``) is read with the analysis it was made with.
4. Chinese, Japanese and Korean: a run of Han, Kana or Hangul characters inside a raw token
   becomes overlapping character bigrams (a one-character run stays a unigram), so a word
   taken from inside a sentence finds it (:mod:`kgsearch.cjk`); the rest of the token (Latin
   letters, digits) is analysed by the rules above. No stop words or stemming apply to them.

Each distinct raw token is analysed once and memoised, so the per-token cost on real text is
one regex match plus one dict lookup.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Callable, Iterable

from ..cjk import bigrams as cjk_bigrams
from ..cjk import has_cjk, split_runs
from .marks import MARKS
from .stem import Memo, get_stemmer

__all__ = ["Analyzer", "get_analyzer", "clean_query", "split_identifier", "raw_tokens", "ENGLISH_STOP",
           "CODE_STOP", "STOP_WORDS", "MAX_TERM_LEN", "fold_latin", "ANALYSIS"]

MAX_TERM_LEN = 64

# Snowball's English stop list, the fragments our tokenizer leaves from contractions, and
# single letters.
ENGLISH_STOP = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing would should
could ought a an the and but if or because as until while of at by for with about against
between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very can will just also shall may might must
cannot yet via etc ie eg us s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn
won wouldn shouldn couldn mustn shan b c e f g h j k l n o p q r u v w x y z
""".split())

# Words that appear in nearly every piece of code and carry no topic.
CODE_STOP = frozenset("""
self cls def elif kwargs args lambda none true false return returns import param rtype
""".split())

STOP_WORDS = ENGLISH_STOP | CODE_STOP

# A word: runs of \w and combining marks joined by '_' or '.' when a word character follows
# (analysis 3; _RAW_2, without the marks, split हिन्दी at each vowel sign: an index made before).
_RAW = re.compile(rf"[\w{MARKS}]+(?:[.](?=[^\W\d])[\w{MARKS}]+)*")
_RAW_2 = re.compile(r"\w+(?:[.](?=[^\W\d])\w+)*")
ANALYSIS = 3            # the analysis new indexes are made with (BM25Params.analysis; 2: before 2026-11-28)
# Parts of a compound: upper-case runs before a capitalised word, capitalised/lower words,
# upper-case runs, digit runs, other letters (scripts without case).
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


# Latin letters with no decomposition into a letter and marks (Lucene's ASCIIFoldingFilter)
_LATIN_FOLD = str.maketrans({"ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O",
                             "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "TH",
                             "ı": "i", "ŀ": "l", "Ŀ": "L", "ŧ": "t", "Ŧ": "T", "ħ": "h", "Ħ": "H"})


_CAP_LIGATURES = {"Æ": ("Ae", "AE"), "Œ": ("Oe", "OE"), "Þ": ("Th", "TH"), "ẞ": ("Ss", "SS")}


def fold_latin(word: str) -> str:
    """``word`` with the accents of its Latin letters removed and Latin ligatures spelled out
    (``Crème`` -> ``Creme``, ``Straße`` -> ``Strasse``, ``Łódź`` -> ``Lodz``, ``Việt`` -> ``Viet``), as
    Lucene's ASCII folding, and without the optional vowel marks of Hebrew (niqqud) and Arabic
    (harakat), as their normalisers; other scripts' marks stay (``й``, ``ά``, Devanagari vowel
    signs), and so do other characters.

    >>> fold_latin("Crème brûlée"), fold_latin("Straße"), fold_latin("йод"), fold_latin("naïve")
    ('Creme brulee', 'Strasse', 'йод', 'naive')
    """
    if word.isascii():
        return word
    if any(c in _CAP_LIGATURES for c in word):     # Ærø -> Aero, ÆRØ -> AERO (AEro would split as CamelCase)
        word = "".join(_CAP_LIGATURES[c][0 if word[i + 1:i + 2].islower() else 1] if c in _CAP_LIGATURES else c
                       for i, c in enumerate(word))
    out, drop = [], False
    for c in unicodedata.normalize("NFD", word.translate(_LATIN_FOLD)):
        if unicodedata.combining(c):
            if not drop:                     # a mark on a letter of another script
                out.append(c)
        else:
            out.append(c)
            drop = c.isascii() or "\u0590" <= c <= "\u06ff"   # Latin; Hebrew and Arabic: optional vowel marks
    return unicodedata.normalize("NFC", "".join(out))


def raw_tokens(text: str) -> list[str]:
    """The raw (case-preserving) tokens of ``text``."""
    return _RAW.findall(text)


def _split_unicode(token: str) -> list[str]:
    """Slow path of :func:`split_identifier` for non-ASCII tokens (str.isupper per character)."""
    out: list[str] = []
    for piece in re.split(r"[._]+", token):
        cur = ""
        for i, ch in enumerate(piece):
            if cur:
                prev = cur[-1]
                nxt = piece[i + 1] if i + 1 < len(piece) else ""
                boundary = ((ch.isupper() and (prev.islower() or (prev.isupper() and nxt.islower())))
                            or (ch.isdigit() != prev.isdigit()))
                if boundary:
                    out.append(cur)
                    cur = ""
            cur += ch
        if cur:
            out.append(cur)
    return out


def split_identifier(token: str) -> list[str]:
    """The parts of a compound identifier, case kept: ``"HTTPServer_v2"`` -> ``HTTP Server v 2``."""
    if token.isascii():
        return _PART.findall(token)
    return _split_unicode(token)


class Analyzer:
    """Text -> terms. Instances are cheap to keep; the memo makes repeated words one lookup.

    ``stemmer``: ``"porter2"``, ``"light"``, ``"none"`` or a callable. ``stopwords``: a set of
    lower-case words (``None`` = :data:`STOP_WORDS`). ``split_code``: emit identifier parts.
    """

    def __init__(self, stemmer: str | Callable[[str], str] | None = "porter2",
                 stopwords: Iterable[str] | None = None, split_code: bool = True,
                 memo_limit: int = 500_000, fold: bool = True, analysis: int = ANALYSIS):
        self.stem = get_stemmer(stemmer) if not callable(stemmer) else stemmer
        self.stemmer_name = stemmer if isinstance(stemmer, str) else getattr(stemmer, "__name__", "custom")
        self.stopwords = frozenset(STOP_WORDS if stopwords is None else stopwords)
        self.split_code = split_code
        self.fold = fold and analysis >= 3
        self.analysis = analysis
        self._raw = _RAW if analysis >= 3 else _RAW_2
        self._memo = Memo(self._analyze_raw, memo_limit)

    # one raw token -> tuple of terms (memoised)
    def _analyze_raw(self, raw: str) -> tuple[str, ...]:
        if not raw.isascii():
            raw = unicodedata.normalize("NFKC", raw)
            if has_cjk(raw):
                return self._analyze_cjk(raw)
            if self.fold:
                raw = fold_latin(raw)
        low = raw.lower()
        if low == raw and low.isalpha() or not self.split_code:
            # plain word (fast path), or splitting disabled: dots/underscores still separate
            if low.isalpha():
                return self._terms((low,))
            return self._terms([p for p in re.split(r"[._]+", low) if p])
        parts = [p.lower() for p in split_identifier(raw)]
        if len(parts) > 1:      # drop stop-word parts (self, the) but keep letters of v1, getX
            parts = [p for p in parts if len(p) == 1 or p not in self.stopwords]
        if len(parts) <= 1:
            return self._terms(parts)
        # whole form from the parts that carry meaning: self.blast_radius -> blastradius
        return self._terms(["".join(parts)] + parts)

    def _analyze_cjk(self, raw: str) -> tuple[str, ...]:
        """A raw token holding CJK runs: bigrams of each run (repeats kept: they are term
        frequency), the other pieces as usual."""
        out: list[str] = []
        for is_cjk, piece in split_runs(raw):
            out.extend(cjk_bigrams(piece) if is_cjk else self._analyze_raw(piece.strip("._")))
        return tuple(t for t in out if t)

    def _terms(self, words) -> tuple[str, ...]:
        stop = self.stopwords
        stem = self.stem
        out = []
        for w in words:
            if w in stop or len(w) > MAX_TERM_LEN:
                continue
            t = stem(w) if w.isascii() else w      # the stemmer is English: ASCII words only
            if t and t not in out:
                out.append(t)
        return tuple(out)

    def __call__(self, text: str) -> list[str]:
        """Terms of ``text`` in order (a compound's whole form comes before its parts)."""
        memo = self._memo
        return [t for raw in self._raw.findall(text) for t in memo[raw]]

    def words(self, text: str) -> list[tuple[str, tuple[str, ...]]]:
        """``(word, its terms)`` for each word of ``text`` in order, as :meth:`__call__` reads
        them (a stop word's terms are empty)."""
        memo = self._memo
        return [(raw, memo[raw]) for raw in self._raw.findall(text)]

    def analyze_word(self, raw: str) -> tuple[str, ...]:
        return self._memo[raw]

    def settings(self) -> dict:
        return {"stemmer": self.stemmer_name, "split_code": self.split_code, "fold": self.fold,
                "stopwords": len(self.stopwords), "max_term_len": MAX_TERM_LEN, "version": self.analysis}


_ANALYZERS: dict[tuple, Analyzer] = {}


def get_analyzer(stemmer: str = "porter2", split_code: bool = True, fold: bool = True,
                 analysis: int = ANALYSIS) -> Analyzer:
    """A shared analyzer per (stemmer, split_code, fold, analysis) so memos are reused across calls."""
    key = (stemmer, split_code, fold, analysis)
    a = _ANALYZERS.get(key)
    if a is None:
        a = _ANALYZERS[key] = Analyzer(stemmer, split_code=split_code, fold=fold, analysis=analysis)
    return a


def clean_query(query) -> str:
    """Any object -> a str that SQLite can bind (lone surrogates replaced, NULs dropped)."""
    if not isinstance(query, str):
        query = "" if query is None else str(query)
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        query = query.encode("utf-8", "replace").decode("utf-8")
    return query.replace("\x00", " ")
