"""Bit-identical vectors: kgsearch.embed.load_model(...).encode == model2vec.StaticModel.encode.

For the shipped model (int8) and variants made from it in tmp dirs with model2vec's own
quantisation and save functions: float16, float32 without normalisation or truncation, and
vocabulary-quantised (``weights``/``mapping`` tensors) with float16 and int8 tables. Also the
"model2vec not installed" path, which runs whether model2vec is installed or not. model2vec is a
test-extra oracle: the tests that compare with it ask for it through conftest.need.
"""
from __future__ import annotations

import random
import sys

import numpy as np
import pytest

from conftest import need
from kgsearch.embed.model import load_model

WORDS = ("graph neural network embedding search index query node edge rank page vector model phone "
         "termux sqlite python numpy token unicode café naïve Straße résumé ångström 東京 北京 данные "
         "données λόγος Ελλάδα مرحبا שלום हिन्दी 한국어 カタカナ the of and a to in is it for on with").split()


def corpus() -> list[str]:
    """1,200+ varied strings: words, punctuation, random Unicode (no surrogates: model2vec
    cannot encode them), long texts past both truncation limits, empty and blank ones."""
    rng = random.Random(1234)
    out = ["", " ", "   ", "\t", "\n\n", " \t\r\n ", "\u3000", "\u00a0", "[PAD]", "[UNK]", "[UNK] [UNK]",
           "x[PAD]y", "a", "A.", "...", "😀", "\x00\x01", "İ", "ΣΑΣ", "ﬁ ﬂ", "e\u0301", "\U0001D15F\U0001D165"]
    for _ in range(500):
        n = rng.randrange(1, 40)
        words = [rng.choice(WORDS) for _ in range(n)]
        if rng.random() < 0.5:
            words = [w.upper() if rng.random() < 0.2 else w.capitalize() if rng.random() < 0.3 else w for w in words]
        sep = rng.choice([" ", " ", ", ", "\n", "-", "  "])
        out.append(sep.join(words) + rng.choice(["", ".", "?", "!", " :)"]))
    for _ in range(450):
        chars = []
        for _ in range(rng.randrange(0, 80)):
            r = rng.random()
            if r < 0.35:
                c = rng.randrange(0x20, 0x7F)
            elif r < 0.6:
                c = rng.randrange(0x80, 0x3000)
            elif r < 0.8:
                c = rng.randrange(0x3000, 0x10000)
            else:
                c = rng.randrange(0x10000, 0x110000)
            if 0xD800 <= c <= 0xDFFF:
                c = 0x20
            chars.append(chr(c))
        out.append("".join(chars))
    for i in range(30):   # past 512 tokens and past 512 * median token length characters
        n = rng.randrange(600, 2500)
        out.append(" ".join(rng.choice(WORDS) for _ in range(n)))
        out.append("x" * (3000 + 500 * i))
        out.append(("[UNK] " if i % 2 else "日本") * (400 + 10 * i))
    out += [" " * 5000, "a " * 3000, ("word, " * 900).strip()]
    return out


@pytest.fixture(scope="module")
def texts():
    t = corpus()
    assert len(t) >= 1000
    return t


def _kmeans_stub():
    """A small deterministic KMeans standing in for scikit-learn's (not in the test extra)."""

    class KMeans:
        def __init__(self, n_clusters, random_state=0, init="random", **kw):
            self.k, self.seed = n_clusters, random_state

        def fit(self, x):
            rng = np.random.default_rng(self.seed)
            c = x[rng.choice(len(x), self.k, replace=False)].copy()
            for _ in range(5):
                lab = self.predict_with(x, c)
                for j in range(self.k):
                    m = lab == j
                    if m.any():
                        c[j] = x[m].mean(axis=0)
            self.cluster_centers_ = c
            return self

        @staticmethod
        def predict_with(x, c):
            d = (x * x).sum(1)[:, None] - 2 * x @ c.T + (c * c).sum(1)[None, :]
            return d.argmin(axis=1).astype(np.int32)

        def predict(self, x):
            return self.predict_with(x, self.cluster_centers_)

    mod = type(sys)("sklearn.cluster")
    mod.KMeans = KMeans
    return mod


@pytest.fixture(scope="module")
def variants(shipped, tmp_path_factory):
    """name -> folder, made from the shipped model with model2vec's own functions."""
    need("model2vec")
    from model2vec import StaticModel
    from model2vec.model import quantize_model

    saved = {k: sys.modules.get(k) for k in ("sklearn", "sklearn.cluster", "model2vec.vocabulary_quantization")}
    try:
        import sklearn.cluster  # noqa: F401
    except ImportError:
        sys.modules["sklearn"] = type(sys)("sklearn")
        sys.modules["sklearn.cluster"] = _kmeans_stub()
        sys.modules.pop("model2vec.vocabulary_quantization", None)
    try:
        base = StaticModel.from_pretrained(str(shipped))
        root = tmp_path_factory.mktemp("variants")
        out = {"shipped-int8": shipped}
        from kgsearch.embed.model import resolve_model

        multi = resolve_model("e5-small-multi-192")      # the optional multilingual model (Unigram tokenizer)
        assert multi is not None
        out["multilingual-int8"] = multi
        previous = resolve_model("e5-small-en-256")      # the previous default, kept for the indexes made with it
        assert previous is not None and previous != shipped
        out["previous-default-int8"] = previous
        m = quantize_model(base, quantize_to="float16")
        m.save_pretrained(root / "f16")
        out["float16"] = root / "f16"
        m = quantize_model(base, quantize_to="float32")
        m.normalize = False
        m.max_length = None
        m.save_pretrained(root / "f32")
        out["float32-nonorm-nomax"] = root / "f32"
        m = quantize_model(base, vocabulary_quantization=64, quantize_to="float16")
        assert m.token_mapping is not None and m.weights is not None
        m.save_pretrained(root / "vq16")
        out["vocab-quantised-float16"] = root / "vq16"
        m = quantize_model(base, vocabulary_quantization=48, quantize_to="int8")
        m.save_pretrained(root / "vq8")
        out["vocab-quantised-int8"] = root / "vq8"
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return out


VARIANTS = ["shipped-int8", "multilingual-int8", "previous-default-int8", "float16", "float32-nonorm-nomax", "vocab-quantised-float16", "vocab-quantised-int8"]


@pytest.mark.parametrize("name", VARIANTS)
def test_encode_is_bit_identical(name, variants, texts):
    from model2vec import StaticModel

    path = variants[name]
    ref = StaticModel.from_pretrained(str(path)).encode(texts, use_multiprocessing=False)
    ours = load_model(path)
    got = ours.encode(texts)
    assert got.dtype == np.float32 and got.shape == (len(texts), ours.dims)
    assert np.array_equal(got, ref)
    # batch boundaries and single texts give the same rows (int8 tables are exact per row)
    if ours.embedding.dtype == np.int8 and ours.mapping is None:
        assert np.array_equal(ours.encode(texts[::-1]), got[::-1])
        assert np.array_equal(ours.encode(texts[7]), got[7])


def test_config_and_tokens_match(variants):
    from model2vec import StaticModel

    for name in ("shipped-int8", "multilingual-int8", "vocab-quantised-float16"):
        ref = StaticModel.from_pretrained(str(variants[name]))
        ours = load_model(variants[name])
        assert ours.dims == ref.dim
        assert ours.normalize == ref.normalize and ours.max_length == ref.max_length
        assert ours.median_token_length == ref.median_token_length
        sample = ["Hello, World!", "[UNK] x " * 300, "", "日本語"]
        assert ours.tokenize(sample) == ref.tokenize(sample) or ref.max_length is None


def test_without_model2vec(shipped, texts, monkeypatch):
    """The loader needs none of model2vec / tokenizers / safetensors; pull_model says what to
    install. Runs with or without them installed: they are made unimportable here, and the
    vectors must be the ones the loader gives with everything importable (which the oracle
    tests above pin to model2vec's own)."""
    ref = load_model(shipped).encode(texts[:300])
    for mod in [m for m in list(sys.modules) if m.split(".")[0] in ("model2vec", "tokenizers", "safetensors")]:
        monkeypatch.delitem(sys.modules, mod)
    for mod in ("model2vec", "tokenizers", "safetensors", "safetensors.numpy"):
        monkeypatch.setitem(sys.modules, mod, None)
    import kgsearch.embed as emb
    from kgsearch.errors import UsageError

    model = emb.load_model(shipped)
    assert np.array_equal(model.encode(texts[:300]), ref)
    with pytest.raises(UsageError, match=r"pip install 'kgsearch\[embed\]'"):
        emb.pull_model("minishlab/potion-base-8M")
    assert any(m["path"] == str(shipped) for m in emb.list_models())


def test_model_id_and_errors(shipped, tmp_path):
    from kgsearch.errors import DataError

    m = load_model(shipped)
    assert m.model_id.startswith(m.name + "@") and len(m.model_id.split("@")[1]) == 16
    with pytest.raises(DataError, match="no model2vec model"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "tokenizer.json").write_text("{not json")
    (tmp_path / "model.safetensors").write_bytes(b"12345678")
    with pytest.raises(DataError):
        load_model(tmp_path)


def test_pull_offline_is_one_clear_line(tmp_path):
    """With model2vec present but no network (HF_HUB_OFFLINE=1): a DataError naming the model."""
    need("model2vec")
    import os
    import subprocess

    code = ("from kgsearch.embed import pull_model\n"
            "try:\n    pull_model('minishlab/potion-base-8M')\n"
            "except Exception as e:\n    print(type(e).__name__ + ': ' + str(e))\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_DATA_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    line = out.stdout.strip()
    assert line.startswith("DataError: could not fetch minishlab/potion-base-8M") and "\n" not in line
    assert not (tmp_path / "kgsearch" / "models" / "minishlab--potion-base-8M").exists()
