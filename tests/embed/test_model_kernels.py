"""Fast embedding kernels against their slow, obvious references (and ``tokenizers`` where it
can be the oracle):

- ``WordPiece._split`` (forward scan over continuation prefixes) == ``_split_reference``
  (greedy longest match, every end tried), on random words incl. Unicode, ``[UNK]`` cases and
  ``max_input_chars_per_word`` edges, for the shipped vocabulary and small hand-made ones;
- the chunk memo's shortcuts (ASCII punctuation stripped around an alphanumeric core, pieces
  looked up one level deep) == regex pieces + reference WordPiece;
- the ASCII / BMP-only punctuation and reordering-flag regexes == the full-range ones, and the
  set-based flagged-character computation == the per-character one;
- ``Tokenizer.encode_batch`` == ``encode`` text by text;
- ``StaticModel._tokenize_flat`` == ``tokenize``, and ``_pool_int8`` (per-position int16/int32
  accumulation) == ``_pool`` (per-length buckets), incl. the int16 limits and > 256 tokens.
"""
from __future__ import annotations

import json
import random
from itertools import chain

import numpy as np
import pytest

from conftest import need

from kgsearch.embed import _unicode_table as T
from kgsearch.embed.model import StaticModel, load_model
from kgsearch.embed.tokenizers import Normalizer, PreTokenizer, Tokenizer, WordPiece, Tables


@pytest.fixture(scope="module")
def spec(shipped):
    return json.loads((shipped / "tokenizer.json").read_text(encoding="utf-8"))


def _words(rng: random.Random, vocab: list[str], n: int) -> list[str]:
    """Vocabulary pieces glued together, with random letters, digits and Unicode mixed in."""
    pool = "abcdefghijklmnopqrstuvwxyz0123456789éüßøçñ中文日本ひらがなкиїαβγ\u0301\u2603\U0001f600#"
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            parts = [rng.choice(vocab).lstrip("#") for _ in range(rng.randrange(1, 5))]
            w = "".join(parts)
            if rng.random() < 0.3:
                i = rng.randrange(len(w) + 1)
                w = w[:i] + rng.choice(pool) + w[i:]
        elif r < 0.8:
            w = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 25)))
        elif r < 0.9:
            w = "".join(chr(c) for c in (rng.randrange(0x20, 0x30000) for _ in range(rng.randrange(1, 8)))
                        if not 0xD800 <= c <= 0xDFFF) or "q"
        else:
            w = rng.choice(vocab) * rng.randrange(1, 30)
        out.append(w)
    return out


# ---------------------------------------------------------------------------- WordPiece
def test_split_equals_reference_shipped_vocab(spec):
    m = spec["model"]
    wp = WordPiece(m["vocab"], m["unk_token"], m["continuing_subword_prefix"], m["max_input_chars_per_word"])
    vocab = list(m["vocab"])
    rng = random.Random(3)
    words = _words(rng, vocab, 30000)
    mx = wp.max_chars
    words += ["a" * mx, "a" * (mx + 1), "ab" * (mx // 2), "x" * 99 + "\u2603", "\u2603", "##", "##ing", "#",
              "unaffable", "microstructural", "qqqqqqqqqqqqqqqqqqqq", "a\u2603b", "aaaa\U0001f600"]
    words += [w + "\u2603" for w in rng.sample(vocab, 500)]           # continuation fails at the end
    bad = [w for w in words if wp._split(w) != wp._split_reference(w)]
    assert bad == []
    assert wp._split("a" * (mx + 1)) == (wp.unk_id,)
    assert wp._split("\u2603") == (wp.unk_id,)


SMALL_VOCABS = [
    # "##abcd" without "##abc": the forward scan walks through prefixes that are not entries
    (["[UNK]", "a", "ab", "abc", "x", "##b", "##abcd", "##a", "##bc", "##c", "##d", "##ab", "#", "##", "##x"], "##", 8),
    # no continuation entries at all: every multi-piece word is unknown
    (["[UNK]", "foo", "bar", "f", "o"], "##", 100),
    # an empty continuation prefix: continuation pieces are plain entries
    (["[UNK]", "a", "b", "ab", "ba", "abc", "c"], "", 100),
    # a longer prefix and an entry that is only the prefix
    (["[UNK]", "pre", "fix", "@@fix", "@@f", "@@", "@@ix", "p"], "@@", 10),
]


@pytest.mark.parametrize("tokens,prefix,max_chars", SMALL_VOCABS)
def test_split_small_vocabs_match_reference_and_tokenizers(tokens, prefix, max_chars):
    vocab = {t: i for i, t in enumerate(tokens)}
    wp = WordPiece(vocab, "[UNK]", prefix, max_chars)
    rng = random.Random(len(tokens))
    letters = sorted({c for t in tokens for c in t.replace(prefix, "") if c not in "[]"}) + ["z"]
    words = {"".join(rng.choice(letters) for _ in range(rng.randrange(1, max_chars + 3))) for _ in range(4000)}
    words |= {t for t in tokens if t != "[UNK]"} | {prefix + "a", prefix * 2}
    words = sorted(w for w in words if w)
    assert [w for w in words if wp._split(w) != wp._split_reference(w)] == []
    tokenizers = need("tokenizers")
    ht = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": prefix,
                  "max_input_chars_per_word": max_chars, "vocab": vocab}}))
    assert [w for w in words if list(wp._split(w)) != ht.encode(w, add_special_tokens=False).ids] == []


# ---------------------------------------------------------------------------- chunk memo
def _chunk_reference(tok: Tokenizer, chunk: str) -> list[int]:
    pt = tok.pre_tokenizer
    pieces = pt._punct_re.findall(chunk) if pt.isolate_punct else [chunk]
    return list(chain.from_iterable(map(tok.model._split_reference, pieces)))


def _chunks(rng: random.Random, vocab: list[str], n: int) -> list[str]:
    words = [w for w in _words(rng, vocab, n) if w.strip() == w and " " not in w]
    punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~–—¿¡。、「」・\u2019\u201c\U00010100\U0001e95e"
    out = []
    for w in words:
        r = rng.random()
        lead = "".join(rng.choice(punct) for _ in range(rng.choice([0, 0, 1, 2, 3])))
        trail = "".join(rng.choice(punct) for _ in range(rng.choice([0, 1, 1, 2, 4])))
        if r < 0.3:
            i = rng.randrange(len(w) + 1)
            w = w[:i] + rng.choice(punct) + w[i:]
        out.append(lead + w + trail)
    out += ["-" * 5000, "." * 3, "(" * 40 + "word" + ")" * 40, "a" * 100 + ",", "a" * 101 + ",", ",", "–",
            "\U00010100", "€5", "©2024.", "x²", "..\u2603..", "(mri)", "24.7-fold", "co-op's", "#1", "##ing"]
    return [c for c in out if c]


def test_chunk_memo_equals_reference(spec):
    from array import array

    vocab = list(spec["model"]["vocab"])
    rng = random.Random(9)
    tok = Tokenizer(spec)
    chunks = [ch for c in _chunks(rng, vocab, 20000) for ch in tok.pre_tokenizer.chunks(c)]
    memo = tok._chunk_memo
    got = {c: array(tok.id_code, memo[c]).tolist() for c in chunks}    # fills the memo in this order
    assert all(array(tok.id_code, memo[c]).tolist() == got[c] for c in chunks[::-1])
    bad = [c for c in chunks if got[c] != _chunk_reference(tok, c)]
    assert bad == []


def test_chunk_memo_matches_tokenizers(spec):
    tokenizers = need("tokenizers")
    ht = tokenizers.Tokenizer.from_str(json.dumps(spec))
    ht.no_truncation()
    ht.no_padding()
    rng = random.Random(21)
    chunks = _chunks(rng, list(spec["model"]["vocab"]), 3000)
    texts = [" ".join(chunks[i:i + 7]) for i in range(0, len(chunks), 7)] + chunks[-20:]
    tok = Tokenizer(spec)
    assert [t for t in texts if tok.encode(t) != ht.encode(t, add_special_tokens=False).ids] == []


def test_encode_batch_equals_encode(spec):
    rng = random.Random(5)
    chunks = _chunks(rng, list(spec["model"]["vocab"]), 3000)
    texts = [" ".join(chunks[i:i + rng.randrange(1, 30)]) for i in range(0, len(chunks), 11)]
    texts += ["", " ", "[PAD]", "x[UNK]y [unk]", "\x1cA\x1fB", "İstanbul ΣΑΣ", "\U0001D15F\U0001D165 \u08d4\u08d5"]
    tok = Tokenizer(spec)
    ids, counts = tok.encode_batch(texts)
    assert ids.typecode == tok.id_code and sum(counts) == len(ids)
    fresh = Tokenizer(spec)
    want = [fresh.encode(t) for t in texts]
    assert counts == [len(w) for w in want]
    assert ids.tolist() == [i for w in want for i in w]


def test_large_vocabulary_packs_32_bit_ids(spec):
    """Vocabularies past 65,536 ids pack ids as 32-bit integers."""
    tokenizers = need("tokenizers")
    big = json.loads(json.dumps(spec))
    vocab = big["model"]["vocab"]
    n = len(vocab)
    vocab.update({f"zq{i}": n + i for i in range(70000 - n)})
    vocab.update({"##zq": 70000, "##9": 70001})
    ht = tokenizers.Tokenizer.from_str(json.dumps(big))
    ht.no_truncation()
    tok = Tokenizer(big)
    assert tok.id_code != "H"
    texts = ["zq40000 zq5, (zq123) zq39999.", "hello zq38000x world", "zq1zq2 [UNK] zq35535 zq99"]
    for t in texts:
        assert tok.encode(t) == ht.encode(t, add_special_tokens=False).ids, t
    flat, counts = tok.encode_batch(texts)
    assert flat.tolist() == [i for t in texts for i in tok.encode(t)]
    assert max(flat) >= 1 << 16 and sum(counts) == len(flat)


# ---------------------------------------------------------------------------- regex variants
def test_punct_regex_variants_agree():
    pt = PreTokenizer(True, True)
    rng = random.Random(4)
    punct = [c for a, b in zip(T.PUNCT[0::2], T.PUNCT[1::2]) for c in range(a, min(b, a + 40) + 1)]
    chunks = []
    for _ in range(5000):
        r = rng.random()
        top = 0x80 if r < 0.4 else 0x10000 if r < 0.8 else 0x110000
        cs = [rng.choice(punct) if rng.random() < 0.3 else rng.randrange(0x21, top)
              for _ in range(rng.randrange(1, 12))]
        chunks.append("".join(chr(0x41 if 0xD800 <= c <= 0xDFFF else c) for c in cs))
    assert [c for c in chunks if pt.pieces(c) != ([c] if c.isalnum() else pt._punct_re.findall(c))] == []


@pytest.mark.parametrize("nspec", [
    {"type": "BertNormalizer", "clean_text": c, "handle_chinese_chars": h, "strip_accents": sa, "lowercase": lo}
    for c in (True, False) for h in (True, False) for sa in (None, True) for lo in (True, False)
] + [{"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}]},
     {"type": "Sequence", "normalizers": [{"type": "Lowercase"}, {"type": "NFD"}]},
     {"type": "Sequence", "normalizers": [{"type": "BertNormalizer", "lowercase": False, "strip_accents": False},
                                          {"type": "NFD"}, {"type": "StripAccents"}]},
     {"type": "NFD"}], ids=lambda s: json.dumps(s, sort_keys=True)[:70])
def test_flagged_equals_reference(nspec):
    n = Normalizer.from_spec(nspec)
    if "nfd" not in n.steps:
        assert n._flag_re is False                  # never reorders: no flag check at all
        return
    assert n._flagged() == n._flagged_reference()


def test_flag_regex_bmp_and_astral(spec):
    """Texts with two reorder-flagged characters take the exact slow path whether the flagged
    characters are in the BMP, astral, or one of each."""
    tokenizers = need("tokenizers")
    ht = tokenizers.Tokenizer.from_str(json.dumps(spec))
    ht.no_truncation()
    tok = Tokenizer(spec)
    n = tok.normalizer
    assert n("é") == "e"                                      # builds the flag regexes
    assert n._flag_re and n._flag_coarse
    texts = ["a\u08d4\u08d5b", "a\u08d4x\U0001D165\U0001D16Dy", "\U0001D15F\U0001D165", "\u08d4 only one",
             "\U0001e944\u0301\U0001e945", "caf\u00e9 \u1b44\u1baa", "x" * 50 + "\u302e\u302f" + "é",
             "\U0001f600\U0001f601 two astral, not flagged", "\U0001f600 \u08d4 one of each",
             "\u08d4\U0001D165\u0301 flagged bmp + flagged astral", "\U0001D165\U0001f600\U0001D16D"]
    for t in texts:
        assert tok.encode(t) == ht.encode(t, add_special_tokens=False).ids, t


# ---------------------------------------------------------------------------- model
def _texts(rng: random.Random) -> list[str]:
    words = "graph search index node the of a query vector café naïve 東京 données [UNK] [PAD] x".split()
    out = ["", " ", "[UNK]", "[UNK] [UNK]", "\U0001f600"]
    for _ in range(400):
        out.append(" ".join(rng.choice(words) for _ in range(rng.randrange(0, 60))))
    out += [" ".join(rng.choice(words) for _ in range(rng.randrange(250, 700))) for _ in range(25)]
    out += ["word " * 256, "word " * 257, "x" * 4000]
    return out


@pytest.mark.parametrize("max_length", ["model", None, 5, 300])
def test_tokenize_flat_equals_tokenize(shipped, max_length):
    m = load_model(shipped)
    texts = _texts(random.Random(1))
    ml = m.max_length if max_length == "model" else max_length
    ref = m.tokenize(texts, max_length=max_length)
    ids, counts = m._tokenize_flat(texts, ml)
    assert counts.tolist() == [len(r) for r in ref]
    assert ids.tolist() == [i for r in ref for i in r]


def _extreme_model(shipped) -> StaticModel:
    """The shipped tokenizer with a synthetic int8 table whose rows hit the int16 limits."""
    base = load_model(shipped)
    rng = np.random.default_rng(0)
    table = rng.integers(-128, 128, size=base.embedding.shape, dtype=np.int16).astype(np.int8)
    vocab = base.tokenizer.vocab
    table[vocab["a"]] = 127
    table[vocab["b"]] = -128
    return StaticModel(base.path, table, base.tokenizer, base.config)


def test_pool_int8_equals_reference(shipped):
    m = _extreme_model(shipped)
    rng = random.Random(2)
    texts = _texts(rng)
    texts += ["a " * k for k in (1, 255, 256, 257, 400, 512, 600)] + ["b " * k for k in (1, 255, 256, 257, 400, 512)]
    texts += [" ".join(rng.choice("ab") for _ in range(k)) for k in (256, 300, 511)]
    rng.shuffle(texts)
    for max_length in (512, None, 7):
        for norm in (False, True):
            for i in range(0, len(texts), 128):
                batch = texts[i:i + 128]
                ref = m._pool(m.tokenize(batch, max_length), norm)
                ids, counts = m._tokenize_flat(batch, max_length)
                got = m._pool_int8(ids, counts, norm)
                assert got.dtype == ref.dtype == np.float32
                assert np.array_equal(got, ref)
    # through encode: any batch size gives the same rows
    full = m.encode(texts)
    assert np.array_equal(m.encode(texts, batch_size=37), full)
    assert np.array_equal(m.encode(texts[5]), full[5])
    assert m.encode([]).shape == (0, m.dims)


def test_pool_int8_rejects_ids_outside_the_table(shipped):
    from kgsearch.errors import DataError

    m = load_model(shipped)
    with pytest.raises(DataError, match="outside the embedding table"):
        m._pool_int8(np.array([0, len(m.embedding)], dtype=np.intp), np.array([2], dtype=np.int64), False)


def test_tables_loaded_once():
    assert Tables.get() is Tables.get()


@pytest.mark.parametrize("table", ["int8", "float32"])
def test_encode_with_lead_is_encode_and_the_first_tokens(shipped, table):
    """encode_with_lead: the whole vectors are encode's bit for bit; the opening is the mean of
    each text's first `lead` tokens of the same tokenization, on the int8 kernel and on a float
    table (the list pooling)."""
    base = load_model(shipped)
    m = base if table == "int8" else StaticModel(base.path, base.embedding.astype(np.float32), base.tokenizer,
                                                 base.config)
    texts = _texts(random.Random(3)) + ["", "a", "word " * 700]
    whole, opening = m.encode_with_lead(texts, 9, batch_size=64)
    assert np.array_equal(whole, m.encode(texts))
    for t, got in zip(texts, opening):
        ids = m.tokenize([t])[0][:9]
        want = m.embedding[np.asarray(ids, dtype=np.intp)].astype(np.float64).mean(axis=0) if ids else np.zeros(m.dims)
        n = np.linalg.norm(want)
        assert np.allclose(got, want / n if n else want, atol=1e-6), t[:40]
