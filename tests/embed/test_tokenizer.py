"""Pure-Python tokenizer.json pipeline and safetensors reader against the Rust libraries.

The oracles (``tokenizers``, ``safetensors``) come with model2vec (test extra); tests skip
cleanly without them (through conftest.need); the tests that use no oracle always run.
"""
from __future__ import annotations

import json
import random
import struct
import unicodedata

import numpy as np
import pytest

from conftest import need
from kgsearch.embed import _unicode_table as T
from kgsearch.embed.tokenizers import Normalizer, PreTokenizer, Tokenizer
from kgsearch.errors import DataError


@pytest.fixture(scope="module")
def tok_path(shipped):
    return shipped / "tokenizer.json"


@pytest.fixture(scope="module")
def pair(tok_path):
    ht = need("tokenizers").Tokenizer.from_file(str(tok_path))
    ht.no_truncation()
    ht.no_padding()
    return ht, Tokenizer.from_file(tok_path)


def _rand_text(rng: random.Random, n: int) -> str:
    pool = ("abcXYZ 019.,;!?-_()[]{}'\"\t\n\r\x00\x0b\x7f\u00a0\u00e9\u00c9\u0301\u0130\u03a3\u03c2"
            "\u4e2d\u6587\u3042\u30a2\uac00\u0627\u05d0\u0915\u093f\U0001f600\u200b\ufeff\u2028\ufffd")
    out = []
    mode = rng.random()
    for _ in range(n):
        r = rng.random()
        if mode < 0.3 or r < 0.2:
            c = rng.randrange(0x110000)
            out.append("A" if 0xD800 <= c <= 0xDFFF else chr(c))
        elif r < 0.7:
            out.append(rng.choice(pool))
        else:
            c = rng.randrange(0x20, 0x3000)
            out.append("A" if 0xD800 <= c <= 0xDFFF else chr(c))
    return "".join(out)


def test_random_unicode_ids_match_tokenizers(pair):
    ht, kt = pair
    rng = random.Random(5)
    texts = [_rand_text(rng, rng.randrange(0, 60)) for _ in range(4000)]
    texts += ["", " ", "\t\n ", "[PAD]", "a[UNK]b[PAD]c", "[pad]", "x" * 101, "x" * 100, "İstanbul ΣΑΣ café",
              "naïve façade Ångström", "日本語のテキスト", "emoji 😀 test", "a\u0301\u0327b", "don't stop-believing"]
    bad = [t for t in texts if ht.encode(t, add_special_tokens=False).ids != kt.encode(t)]
    assert bad == []


def test_canonical_reordering_cases(pair):
    """Combining marks in every order, incl. the rare classes that survive strip_accents."""
    ht, kt = pair
    rng = random.Random(7)
    combining = [c for c in range(0x300, 0x1E950) if unicodedata.combining(chr(c))]
    pool = combining + list(T.REORDER_VISIBLE) * 4 + list(T.NFD)[:800] + [0x41, 0x61, 0x20, 0x4E2D, 0x130, 0x1D15F]
    texts = ["".join(chr(rng.choice(pool)) for _ in range(rng.randrange(1, 10))) for _ in range(3000)]
    texts.append("\U0001D165\U0001D16D\U0001D165x\U0001D16E\u0301\U0001D165")
    assert [t for t in texts if ht.encode(t, add_special_tokens=False).ids != kt.encode(t)] == []


NORMALIZERS = (
    [{"type": "BertNormalizer", "clean_text": c, "handle_chinese_chars": h, "strip_accents": s, "lowercase": lo}
     for c in (True, False) for h in (True, False) for s in (None, True, False) for lo in (True, False)]
    + [{"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}]},
       {"type": "Sequence", "normalizers": [{"type": "Lowercase"}, {"type": "NFD"}]},
       {"type": "StripAccents"}, {"type": "Lowercase"}, {"type": "NFD"}]
)


@pytest.mark.parametrize("spec", NORMALIZERS, ids=lambda s: json.dumps(s, sort_keys=True)[:80])
def test_normalizers_match(spec):
    n = need("tokenizers").Tokenizer.from_str(json.dumps({
        "version": "1.0", "normalizer": spec, "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "added_tokens": [], "truncation": None, "padding": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}})).normalizer
    kn = Normalizer.from_spec(spec)
    rng = random.Random(11)
    combining = [c for c in range(0x300, 0x1E950) if unicodedata.combining(chr(c))]
    texts = [_rand_text(rng, rng.randrange(0, 30)) for _ in range(400)]
    texts += ["".join(chr(rng.choice(combining + [0x41, 0x1E0A, 0x1D15F])) for _ in range(6)) for _ in range(200)]
    texts += ["ABC def", "ÀÉÎ\tx\ny", "HELLO\x00WORLD"]
    assert [t for t in texts if n.normalize_str(t) != kn(t)] == []


@pytest.mark.parametrize("spec", [
    {"type": "BertPreTokenizer"},
    {"type": "WhitespaceSplit"},
    {"type": "Punctuation", "behavior": "Isolated"},
    {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Isolated"}]},
])
def test_pre_tokenizers_match(spec):
    pt = need("tokenizers").Tokenizer.from_str(json.dumps({
        "version": "1.0", "normalizer": None, "pre_tokenizer": spec, "post_processor": None, "decoder": None,
        "added_tokens": [], "truncation": None, "padding": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}})).pre_tokenizer
    kp = PreTokenizer.from_spec(spec)
    rng = random.Random(13)
    texts = [_rand_text(rng, rng.randrange(0, 40)) for _ in range(1500)] + ["a\x1cb", "x\x85y", "p.q,r"]
    assert [t for t in texts if [w for w, _ in pt.pre_tokenize_str(t)] != kp(t)] == []


def test_added_token_options_match(tok_path):
    spec = json.loads(tok_path.read_text(encoding="utf-8"))
    base = len(spec["model"]["vocab"])
    spec["added_tokens"] = spec["added_tokens"] + [
        {"id": base, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": True,
         "normalized": False, "special": True},
        {"id": base + 1, "content": "New York", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False},
        {"id": base + 2, "content": "ony", "single_word": True, "lstrip": False, "rstrip": False,
         "normalized": False, "special": False},
    ]
    ht = need("tokenizers").Tokenizer.from_str(json.dumps(spec))
    ht.no_truncation()
    kt = Tokenizer(spec)
    texts = ["I saw a <mask> in new york", "x  <mask>  y<mask>z", "Anthony ony pony ony.", "NEW YORK new york",
             "[PAD]<mask>[UNK]", "ony", "<mask>", ""]
    for t in texts:
        assert kt.encode(t) == ht.encode(t, add_special_tokens=False).ids, t


def test_wordpiece_edges(pair):
    ht, kt = pair
    for t in ["a" * 100, "a" * 101, "##", "##ing", "unaffable", "xqzxqzxqz", "ab" * 60 + " end"]:
        assert kt.encode(t) == ht.encode(t, add_special_tokens=False).ids, t


def test_unsupported_components_name_themselves(tok_path):
    spec = json.loads(tok_path.read_text(encoding="utf-8"))
    for key, value, word in [("normalizer", {"type": "NFKC"}, "NFKC"),
                             ("normalizer", {"type": "Precompiled", "precompiled_charsmap": ""}, "Precompiled"),
                             ("pre_tokenizer", {"type": "ByteLevel"}, "ByteLevel"),
                             ("pre_tokenizer", {"type": "Whitespace"}, "Whitespace")]:
        bad = dict(spec, **{key: value})
        with pytest.raises(DataError, match=word):
            Tokenizer(bad, "x/tokenizer.json")
    bad = dict(spec, model={"type": "BPE", "vocab": {}, "merges": []})
    with pytest.raises(DataError, match="BPE"):
        Tokenizer(bad)


# ---------------------------------------------------------------------------- safetensors
def test_safetensors_all_dtypes(tmp_path):
    st = need("safetensors.numpy")
    from kgsearch.embed.safetensors import load

    rng = np.random.default_rng(0)
    tensors = {
        "f64": rng.standard_normal((3, 4)), "f32": rng.standard_normal((5, 2)).astype(np.float32),
        "f16": rng.standard_normal((7,)).astype(np.float16), "i8": rng.integers(-128, 127, (4, 4), dtype=np.int8),
        "i16": rng.integers(-9, 9, (2,), dtype=np.int16), "i32": rng.integers(-9, 9, (2, 3), dtype=np.int32),
        "i64": rng.integers(-9, 9, (6,), dtype=np.int64), "u8": rng.integers(0, 255, (3,), dtype=np.uint8),
        "b": np.array([True, False, True]), "empty": np.zeros((0, 3), np.float32),
    }
    path = tmp_path / "t.safetensors"
    st.save_file(tensors, str(path), metadata={"a": "b"})
    got = load(path)
    assert set(got) == set(tensors)
    for k, v in tensors.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v), k
        assert not got[k].flags.writeable


def test_safetensors_bf16_and_errors(tmp_path):
    from kgsearch.embed.safetensors import load

    vals = np.array([1.0, -2.5, 3.140625], dtype=np.float32)
    raw = (vals.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    p = tmp_path / "bf.safetensors"
    p.write_bytes(struct.pack("<Q", len(header)) + header + raw)
    assert np.array_equal(load(p)["x"], vals)

    header = json.dumps({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    p.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)   # truncated data
    with pytest.raises(DataError, match="truncated"):
        load(p)
    p.write_bytes(b"\x01\x02")
    with pytest.raises(DataError, match="not a safetensors"):
        load(p)
    header = json.dumps({"x": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}).encode()
    p.write_bytes(struct.pack("<Q", len(header)) + header + b"\0")
    with pytest.raises(DataError, match="F8_E4M3"):
        load(p)


# ---------------------------------------------------------------------------- Unigram
def _unigram_spec(rng: random.Random, byte_fallback: bool, scheme: str, split: bool, lower: bool) -> dict:
    words = ("the search graph index node edge query vector phone rank page model token embed ing ed s "
             "er un re tion al ly de in on at is it of and to a e t o n r l").split()
    pieces = ["<unk>", "\u2581"] + [chr(c) for c in range(97, 123)] + [chr(c) for c in range(65, 91)]
    pieces += ["\u2581" + w for w in words] + words + ["\u2581" + w[:3] for w in words] + ["é", "日", "本", "日本"]
    if byte_fallback:
        pieces += [f"<0x{b:02X}>" for b in range(256)]
    seen, vocab = set(), []
    for p in pieces:
        if p not in seen:
            seen.add(p)
            vocab.append([p, round(-rng.uniform(1, 12), 3) if p != "<unk>" else 0.0])
    vocab[5][1] = vocab[6][1]                     # a tie
    return {
        "version": "1.0", "truncation": None, "padding": None, "post_processor": None, "decoder": None,
        "added_tokens": [{"id": 0, "content": "<unk>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": {"type": "Lowercase"} if lower else None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": byte_fallback},
    }


@pytest.mark.parametrize("byte_fallback,scheme,split,lower", [
    (False, "always", True, False), (True, "always", True, True), (False, "first", True, True),
    (False, "never", False, False), (True, "first", False, False),
])
def test_unigram_metaspace_match(byte_fallback, scheme, split, lower):
    rng = random.Random(17)
    spec = _unigram_spec(rng, byte_fallback, scheme, split, lower)
    ht = need("tokenizers").Tokenizer.from_str(json.dumps(spec))
    kt = Tokenizer(spec)
    words = "the search graph indexing nodes edged queries vectors phone ranking pages unembedded xyz".split()
    texts = ["", " ", "  two  spaces ", "<unk>", "a<unk>b", "The Search", "日本語 é è", "qqq zzz"]
    for _ in range(800):
        parts = [rng.choice(words) if rng.random() < 0.8 else chr(rng.randrange(0x20, 0x3000))
                 for _ in range(rng.randrange(0, 8))]
        texts.append(rng.choice([" ", "  ", ""]).join(parts) + rng.choice(["", " ", "<unk>"]))
    bad = [t for t in texts if ht.encode(t, add_special_tokens=False).ids != kt.encode(t)]
    assert bad == []
    assert kt.unk_id == 0


# ---------------------------------------------------------------------------- BPE (Llama 2's)
def _bpe_spec(byte_fallback: bool, fuse_unk: bool, spaced: bool) -> dict:
    """A Llama-2-like tokenizer.json: Prepend + Replace normalizer, no pre-tokenizer, BPE whose
    merges build some words, their ``\u2581`` forms and runs of ``\u2581``; with ``spaced=False``
    one token (``e\u2581t``) crosses a word start, so the text cannot be cut into words."""
    words = "the then search index indexing graph node nodes query edge rank ranking ab abc aaa".split()
    vocab: dict[str, int] = {"<unk>": 0, "<s>": 1, "</s>": 2}
    if byte_fallback:
        for b in range(256):
            vocab[f"<0x{b:02X}>"] = len(vocab)
    for c in "\u2581abcdefghijklmnopqrstuvwxyzé":
        vocab.setdefault(c, len(vocab))
    merges: list[str] = []

    def build(w: str) -> None:
        for i in range(2, len(w) + 1):
            if w[:i] not in vocab:
                merges.append(f"{w[:i - 1]} {w[i - 1]}")
                vocab[w[:i]] = len(vocab)

    for w in words:
        build("\u2581" + w)
        build(w)
    build("\u2581\u2581\u2581")
    merges.append("a a")                      # a tie between overlapping pairs: leftmost first
    vocab.setdefault("aa", len(vocab))
    if not spaced:
        build("e\u2581t")
    return {
        "version": "1.0", "truncation": None, "padding": None, "post_processor": None, "decoder": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(("<unk>", "<s>", "</s>"))],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": fuse_unk, "byte_fallback": byte_fallback,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


def test_bpe_by_hand():
    """Merges by rank, the leftmost of equal ranks, byte fallback and fused unknowns, worked out
    by hand on the vocabulary of ``_bpe_spec`` (no oracle needed)."""
    kt = Tokenizer(_bpe_spec(byte_fallback=True, fuse_unk=True, spaced=True))
    v = kt.vocab
    assert kt.model.spaced
    assert kt.tokens("the index") == ["\u2581the", "\u2581index"]
    assert kt.tokens("aaa") == ["\u2581aaa"] and kt.tokens("xaaa") == ["\u2581", "x", "aaa"]
    assert kt.tokens("xaaaa") == ["\u2581", "x", "aaa", "a"]   # aaa is built first (its merges rank below a a)
    assert kt.encode("é") == [v["\u2581"], v["é"]]
    assert kt.encode("ü") == [v["\u2581"], v["<0xC3>"], v["<0xBC>"]]          # byte fallback
    assert kt.encode("") == [] and kt.encode(" ") == [v["\u2581\u2581"]]
    assert kt.encode("   the") == [v["\u2581\u2581\u2581"], v["\u2581the"]]
    assert kt.encode("<s>the") == [1, v["\u2581the"]]        # an added token cut out of the raw text
    plain = Tokenizer(_bpe_spec(byte_fallback=False, fuse_unk=True, spaced=True))
    assert plain.encode("üü the") == [plain.vocab["\u2581"], 0, plain.vocab["\u2581the"]]   # one fused unknown
    unfused = Tokenizer(_bpe_spec(byte_fallback=False, fuse_unk=False, spaced=True))
    assert unfused.encode("üü") == [unfused.vocab["\u2581"], 0, 0]
    assert not Tokenizer(_bpe_spec(True, True, spaced=False)).model.spaced


@pytest.mark.parametrize("byte_fallback,fuse_unk,spaced", [
    (True, True, True), (False, True, True), (False, False, True), (True, True, False), (False, False, False)])
def test_bpe_matches_tokenizers(byte_fallback, fuse_unk, spaced):
    spec = _bpe_spec(byte_fallback, fuse_unk, spaced)
    ht = need("tokenizers").Tokenizer.from_str(json.dumps(spec))
    kt = Tokenizer(spec)
    rng = random.Random(23)
    words = "the then search indexing graph nodes query edge ranking aaaa abc ab xyz é ü 日本 😀".split()
    texts = ["", " ", "  ", "\n", "<s>", "a<s>b</s>", "<unk>", "\u2581", "x\u2581y", "the\u2581\u2581then"]
    for _ in range(1500):
        texts.append(rng.choice([" ", "  ", "   ", "", "\n"]).join(
            rng.choice(words) for _ in range(rng.randrange(0, 7))))
        texts.append(_rand_text(rng, rng.randrange(0, 30)))
    bad = [t for t in texts if ht.encode(t, add_special_tokens=False).ids != kt.encode(t)]
    assert bad == []
    ids, counts = kt.encode_batch(texts)
    assert ids.tolist() == [i for t in texts for i in kt.encode(t)] and sum(counts) == len(ids)


def test_bpe_heap_equals_its_reference():
    kt = Tokenizer(_bpe_spec(byte_fallback=True, fuse_unk=True, spaced=False))
    rng = random.Random(3)
    alphabet = "\u2581\u2581aabcdeghinrstxé日"
    for _ in range(3000):
        w = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert kt.model._split(w) == kt.model._split_reference(w), w
    long = "".join(rng.choice(alphabet) for _ in range(600))    # one long word (a URL, a dump)
    assert kt.model._split(long) == kt.model._split_reference(long)


def test_prepend_and_replace_normalizers():
    n = Normalizer.from_spec({"type": "Sequence", "normalizers": [
        {"type": "Lowercase"}, {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})
    assert n("A b") == "\u2581a\u2581b" and n("") == "" and not n.identity
    with pytest.raises(DataError, match="order"):
        Normalizer.from_spec({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "x"}, {"type": "Lowercase"}]})
    with pytest.raises(DataError, match="Replace pattern"):
        Normalizer.from_spec({"type": "Replace", "pattern": {"Regex": " +"}, "content": " "})
    spec = _bpe_spec(True, True, True)
    for key, value, word in [("dropout", 0.1, "dropout"), ("continuing_subword_prefix", "##", "subword"),
                             ("ignore_merges", True, "ignore_merges")]:
        with pytest.raises(DataError, match=word):
            Tokenizer(dict(spec, model=dict(spec["model"], **{key: value})))
    with pytest.raises(DataError, match="pre-tokenizer"):
        Tokenizer(dict(spec, pre_tokenizer={"type": "Metaspace"}))
    broken = Tokenizer(dict(spec, model=dict(spec["model"], merges=["t h", "th e", "z q"])))
    with pytest.raises(DataError, match="merge makes 'zq'"):
        broken.encode("zq")                       # a merge whose result the vocabulary lacks
    assert broken.tokens("the") == ["\u2581", "the"]
    listed = dict(spec, model=dict(spec["model"], merges=[m.split(" ") for m in spec["model"]["merges"]]))
    assert Tokenizer(listed).encode("the then aaaa") == Tokenizer(spec).encode("the then aaaa")
