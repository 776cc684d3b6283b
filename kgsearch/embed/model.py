"""Static embedding models in model2vec format, with numpy only.

``load_model(path)`` reads a model2vec folder (``config.json``, ``model.safetensors``,
``tokenizer.json``; the sentence-transformers layouts model2vec accepts work too) and returns a
:class:`StaticModel` whose ``encode`` gives the same float32 values as
``model2vec.StaticModel.encode`` (``np.array_equal``), for float32/float16/int8 tables and for
vocabulary-quantised models (``weights``/``mapping`` tensors). What it reproduces:

- truncation: each text is first cut to ``max_length * median_token_length`` characters, then
  to ``max_length`` tokens (``max_length`` from ``config.json``, default 512; ``None`` disables
  both); the unknown token is dropped after truncation;
- pooling: mean of the token vectors (``weights`` scale each token and ``mapping`` redirects
  ids to shared vectors in vocabulary-quantised models); an empty text is a zero vector;
- ``normalize`` from ``config.json`` (default False): division by the L2 norm + 1e-32.

int8 tables take a fast exact path (integer sums, then the same float64 division numpy's
``mean`` does); float tables are pooled with the same numpy calls on the same 1,024-text batches
as model2vec, so the float rounding is the same too.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import DataError
from .tokenizers import Tokenizer

__all__ = ["StaticModel", "load_model", "resolve_model", "DEFAULT_MODEL", "find_layout"]

DEFAULT_MODEL = "bge-small-en-256"
DEFAULT_MAX_LENGTH = 512
_BATCH = 1024          # model2vec's default encode batch size (float paths mirror its batches)

# (config, weights, tokenizer, tensor name), in model2vec's order of preference
_LAYOUTS = (
    ("config.json", "model.safetensors", "tokenizer.json", "embeddings"),
    ("config_sentence_transformers.json", "model.safetensors", "tokenizer.json", "embedding.weight"),
    ("config_sentence_transformers.json", "0_StaticEmbedding/model.safetensors",
     "0_StaticEmbedding/tokenizer.json", "embedding.weight"),
)


def find_layout(folder: Path) -> tuple[Path, Path, Path, str] | None:
    for cfg, weights, tok, tensor in _LAYOUTS:
        paths = (folder / cfg, folder / weights, folder / tok)
        if all(p.is_file() for p in paths):
            return paths[0], paths[1], paths[2], tensor
    return None


class StaticModel:
    """A loaded static embedding model. Build it with :func:`load_model`.

    Attributes: ``dims``, ``name``, ``path``, ``normalize``, ``max_length``, ``tokenizer``,
    ``embedding`` (memory-mapped), ``weights``/``mapping`` (``None`` unless vocabulary-quantised).
    ``model_id`` is ``"<name>@<sha256 prefix of the three files>"``: it names the exact vectors an
    index was built with.
    """

    def __init__(self, path: Path, embedding, tokenizer: Tokenizer, config: dict[str, Any],
                 weights=None, mapping=None, files: tuple[Path, ...] = ()):
        import numpy as np

        self.path = path
        self.embedding = embedding
        self.tokenizer = tokenizer
        self.config = config
        self.weights = weights
        self.mapping = mapping
        self._files = files
        self._model_id: str | None = None
        self.name = str(config.get("model_name") or path.name)
        self.normalize = bool(config.get("normalize", False))
        ml = config.get("max_length", DEFAULT_MAX_LENGTH)
        self.max_length = None if ml is None else int(ml)
        n_tokens = len(tokenizer.vocab)
        if mapping is None and embedding.shape[0] != n_tokens:
            raise DataError(f"the embedding table has {embedding.shape[0]} rows but the tokenizer has "
                            f"{n_tokens} tokens; the model folder is inconsistent", str(path))
        if embedding.ndim != 2:
            raise DataError(f"the embedding table has shape {list(embedding.shape)}, expected 2-D", str(path))
        # model2vec: int(np.median(len(token) for tokens sorted by id)), added tokens included
        lengths = np.fromiter(map(len, tokenizer.vocab), dtype=np.int64, count=len(tokenizer.vocab))
        self.median_token_length = int(np.median(lengths)) if len(lengths) else 1
        self._unk = tokenizer.unk_id

    # ------------------------------------------------------------------ properties
    @property
    def dims(self) -> int:
        return int(self.embedding.shape[1])

    def files_signature(self) -> str:
        """Path, size and mtime of the model files: a cheap stand-in for the content hash on a
        query (the index stores it next to ``model_id`` when it embeds)."""
        parts = []
        for p in self._files:
            st = os.stat(p)
            parts.append(f"{Path(p).resolve()}:{st.st_size}:{st.st_mtime_ns}")
        return "|".join(parts)

    @property
    def model_id(self) -> str:
        """Hashed once per set of files on this machine: the id of a signature (paths, sizes,
        mtimes) already hashed is kept in the user's cache (:mod:`kgsearch.embed.model_ids`)."""
        if self._model_id is None:
            from . import model_ids

            try:
                sig = self.files_signature() if self._files else None
            except OSError:
                sig = None                      # a file gone: the hash below says which
            known = model_ids.lookup(sig) if sig else None
            if known is not None:
                self._model_id = known
                return known
            h = hashlib.sha256()
            for p in self._files:
                with open(p, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
            self._model_id = f"{self.name}@{h.hexdigest()[:16]}"
            if sig:
                model_ids.remember(sig, self._model_id)
        return self._model_id

    def __repr__(self) -> str:
        return (f"StaticModel({self.name!r}, dims={self.dims}, vocab={len(self.tokenizer.vocab)}, "
                f"dtype={self.embedding.dtype})")

    # ------------------------------------------------------------------ tokenising
    def _prepare(self, texts: Sequence[str], max_length) -> list[str]:
        if max_length is None:
            return list(texts)
        m = max_length * self.median_token_length
        return [t[:m] for t in texts]

    def tokenize(self, texts: Sequence[str], max_length: Any = "model") -> list[list[int]]:
        """Token ids per text as model2vec uses them (truncated, unknown token removed)."""
        if max_length == "model":
            max_length = self.max_length
        enc = self.tokenizer.encode
        unk = self._unk
        out = []
        for t in self._prepare(texts, max_length):
            ids = enc(t)
            if max_length is not None and len(ids) > max_length:
                ids = ids[:max_length]
            if unk is not None and unk in ids:
                ids = [i for i in ids if i != unk]
            out.append(ids)
        return out

    def _tokenize_flat(self, texts: Sequence[str], max_length: Any):
        """What :meth:`tokenize` gives, concatenated: ``(ids, counts)`` numpy arrays (``intp`` token
        ids of all texts in order, ``int64`` ids per text). Truncation and the unknown-token drop
        are done on the arrays, only when some text needs them."""
        import numpy as np

        flat, lens = self.tokenizer.encode_batch(self._prepare(texts, max_length))
        ids = np.array(flat, dtype=np.intp)
        counts = np.array(lens, dtype=np.int64)
        over = max_length is not None and len(counts) and int(counts.max()) > max_length
        unk = self._unk
        has_unk = unk is not None and bool((ids == unk).any())
        if over or has_unk:
            row = np.repeat(np.arange(len(counts)), counts)
            if over:        # the first max_length ids of each text, then the unk drop
                starts = np.cumsum(counts) - counts
                keep = (np.arange(len(ids)) - starts[row]) < max_length
                if has_unk:
                    keep &= ids != unk
            else:
                keep = ids != unk
            ids = ids[keep]
            counts = np.bincount(row[keep], minlength=len(counts)).astype(np.int64)
        return ids, counts

    # ------------------------------------------------------------------ encoding
    def encode(self, texts: Sequence[str] | str, batch_size: int = _BATCH,
               progress: Callable[[int, int], None] | None = None, *, max_length: Any = "model",
               normalize: bool | None = None):
        """Embed ``texts`` -> float32 array ``(len(texts), dims)`` (one text: ``(dims,)``).

        ``progress(done, total)`` is called after each batch. ``batch_size`` only matters for
        float tables, where it must stay at model2vec's 1,024 for bit-identical output.
        """
        import numpy as np

        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        if max_length == "model":
            max_length = self.max_length
        if normalize is None:
            normalize = self.normalize
        total = len(items)
        out = np.zeros((total, self.dims), dtype=np.float32)
        plain_int8 = self.embedding.dtype == np.int8 and self.mapping is None and self.weights is None
        for i in range(0, total, batch_size):
            ids, counts = self._tokenize_flat(items[i:i + batch_size], max_length)
            if plain_int8:
                part = self._pool_int8(ids, counts, normalize)
            else:
                flat = ids.tolist()
                ends = np.cumsum(counts).tolist()
                part = self._pool([flat[e - c:e] for e, c in zip(ends, counts.tolist())], normalize)
            out[i:i + len(counts)] = part
            if progress is not None:
                progress(min(i + batch_size, total), total)
        return out[0] if single else out

    def encode_with_lead(self, texts: Sequence[str], lead: int, batch_size: int = _BATCH):
        """``(whole, opening)``: float32 ``(len(texts), dims)`` each, from one tokenization: the
        vectors :meth:`encode` gives, and the vectors of each text's first ``lead`` tokens of that
        same tokenization (:meth:`encode` with ``max_length=lead`` would cut the text's characters
        first, by the median token length, which can leave fewer tokens)."""
        import numpy as np

        items = list(texts)
        total = len(items)
        whole = np.zeros((total, self.dims), dtype=np.float32)
        opening = np.zeros((total, self.dims), dtype=np.float32)
        plain_int8 = self.embedding.dtype == np.int8 and self.mapping is None and self.weights is None
        for i in range(0, total, batch_size):
            ids, counts = self._tokenize_flat(items[i:i + batch_size], self.max_length)
            starts = np.cumsum(counts) - counts
            first = (np.arange(len(ids)) - np.repeat(starts, counts)) < lead
            lids, lcounts = ids[first], np.minimum(counts, lead)
            for out, (a, c) in ((whole, (ids, counts)), (opening, (lids, lcounts))):
                if plain_int8:
                    part = self._pool_int8(a, c, self.normalize)
                else:
                    flat, ends = a.tolist(), np.cumsum(c).tolist()
                    part = self._pool([flat[e - n:e] for e, n in zip(ends, c.tolist())], self.normalize)
                out[i:i + len(c)] = part
        return whole, opening

    def is_whole_word(self, word: str) -> bool:
        """Whether ``word`` is one token of the vocabulary as a whole word: ``word`` itself (a
        WordPiece word; its continuations are ``##`` pieces) or ``▁word`` (SentencePiece and
        LLaMA-style BPE mark a word's start)."""
        vocab = self.tokenizer.vocab
        return word in vocab or "\u2581" + word in vocab

    def encode_weighted(self, pieces: Sequence[str], weights: Sequence[float]):
        """One text given as words with weights -> float32 ``(dims,)``: the weighted mean of the
        words' token vectors (each word tokenized alone; the first ``max_length`` tokens), then
        normalised as :meth:`encode` does. With every weight 1 it is :meth:`encode` of the words
        joined by spaces, for a tokenizer that splits words at spaces."""
        import numpy as np

        ids, counts = self._tokenize_flat(list(pieces), None)
        w = np.repeat(np.asarray(weights, dtype=np.float64), counts)
        if self.max_length is not None and len(ids) > self.max_length:
            ids, w = ids[:self.max_length], w[:self.max_length]
        out = np.zeros(self.dims, dtype=np.float32)
        total = float(w.sum())
        if not len(ids) or not total > 0:
            return out
        emb = self.embedding
        rows = emb[ids] if self.mapping is None else emb[self.mapping[ids]]
        rows = rows.astype(np.float64)
        if self.weights is not None:
            rows *= np.asarray(self.weights, dtype=np.float64)[ids][:, None]
        out[:] = (w @ rows) / total
        if self.normalize:
            norm = float(np.linalg.norm(out))
            if norm > 0:
                out /= norm
        return out

    def _pool_int8(self, ids, counts, normalize: bool):
        """Mean pooling for a plain int8 table from concatenated ids: the values of
        :meth:`_pool` (exact integer sums, float64 division, float32 result).

        Texts are sorted by length; token position ``j`` of all texts longer than ``j`` is added
        with one gather + add over a contiguous block of rows, so there is one numpy call per
        position (not per text) and no ``(texts, tokens, dims)`` intermediate. Sums of up to 256
        int8 values fit int16 exactly (-32768..32512), so the first 256 positions accumulate in
        int16 (half the memory traffic), the rest in int32."""
        import numpy as np

        emb = self.embedding
        n = len(counts)
        out = np.zeros((n, self.dims), dtype=np.float32)
        longest = int(counts.max()) if n else 0
        if longest == 0:
            return out
        if int(ids.max()) >= len(emb) or int(ids.min()) < 0:
            raise DataError(f"token id {int(ids.max())} is outside the embedding table "
                            f"({len(emb)} rows)", str(self.path))
        order = np.argsort(-counts, kind="stable")
        lengths = counts[order]
        pad = np.zeros((n, longest), dtype=np.intp)
        pad[np.arange(longest)[None, :] < counts[:, None]] = ids
        by_pos = np.ascontiguousarray(pad[order].T)                  # (position, text by length)
        rows = np.searchsorted(-lengths, -np.arange(longest), side="left").tolist()   # texts longer than j
        acc = np.zeros((rows[0], self.dims), dtype=np.int16)
        buf = np.empty((rows[0], self.dims), dtype=np.int8)
        take, add = np.take, np.add
        for j in range(longest):
            if j == 256:
                acc = acc.astype(np.int32)
            k = rows[j]
            b, a = buf[:k], acc[:k]
            take(emb, by_pos[j, :k], axis=0, out=b, mode="clip")    # ids checked above; "raise" buffers
            add(a, b, out=a)
        k = len(acc)
        out[order[:k]] = acc.astype(np.float64) / lengths[:k, None]
        if normalize:
            norm = np.linalg.norm(out, axis=1, keepdims=True) + 1e-32
            return out / norm
        return out

    def _pool(self, ids: list[list[int]], normalize: bool):
        """Mean pooling of per-text id lists (float tables, vocabulary-quantised models, and the
        plain reference :meth:`_pool_int8` is tested against)."""
        import numpy as np

        emb = self.embedding
        dtype = np.dtype(np.float32) if emb.dtype == np.int8 else emb.dtype
        out = np.zeros((len(ids), self.dims), dtype=dtype)
        if self.mapping is None and self.weights is None:
            buckets: dict[int, list[int]] = {}
            for r, row in enumerate(ids):
                if row:
                    buckets.setdefault(len(row), []).append(r)
            if emb.dtype == np.int8:
                # integer sums are exact in any order; numpy's mean of ints is
                # float64(sum) / float64(count), then the float32 output cast
                sums = np.zeros((len(ids), self.dims), dtype=np.int32)
                counts = np.ones(len(ids), dtype=np.int64)
                for length, rows in buckets.items():
                    sums[rows] = emb[np.array([ids[r] for r in rows], dtype=np.intp)].sum(axis=1, dtype=np.int32)
                    counts[rows] = length
                out[:] = sums.astype(np.float64) / counts[:, None]
            else:
                # the same numpy calls on the same 1,024-text batches as model2vec
                for rows in buckets.values():
                    id_matrix = np.array([ids[r] for r in rows], dtype=np.int64)
                    out[rows] = emb[id_matrix].mean(axis=1)
        else:
            for r, row in enumerate(ids):
                if row:
                    remapped = row if self.mapping is None else self.mapping[row]
                    e = emb[remapped]
                    if self.weights is not None:
                        e = e * self.weights[row][:, None]
                    out[r] = e.mean(axis=0)
        if normalize:
            out32 = out.astype(np.float32)
            norm = np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32
            return (out32 / norm).astype(out.dtype)
        return out


# ---------------------------------------------------------------------------- loading
def resolve_model(spec: str | os.PathLike | None = None) -> Path | None:
    """Find a model folder: a path, a name under ``data_home()/models`` or the shipped
    ``data/models``, ``$KGSEARCH_MODEL`` (as the CLI read it: :mod:`kgsearch.environment`) when ``spec`` is None, else the shipped default.
    Returns None when nothing usable is found."""
    from ..config import data_home, shipped_data_dir
    from ..environment import current

    if spec is None or str(spec) in ("", "default"):
        env = current().model
        spec = env if env and spec is None else DEFAULT_MODEL
    p = Path(spec).expanduser()
    if p.is_dir():
        return p if find_layout(p) else None
    name = str(spec)
    cands = [data_home() / "models" / name.replace("/", "--"), data_home() / "models" / name]
    shipped = shipped_data_dir()
    if shipped is not None:
        cands.append(shipped / "models" / name)
    for c in cands:
        if c.is_dir() and find_layout(c):
            return c
    return None


def _model_names() -> list[str]:
    """The names :func:`resolve_model` finds (shipped, then pulled or imported ones)."""
    from ..config import data_home, shipped_data_dir

    shipped = shipped_data_dir()
    names: list[str] = []
    for folder in ([shipped / "models"] if shipped is not None else []) + [data_home() / "models"]:
        if folder.is_dir():
            names += [p.name for p in sorted(folder.iterdir()) if p.is_dir() and find_layout(p) and p.name not in names]
    return names


def no_model_message(spec: str | os.PathLike) -> str:
    """What to say of a model name or folder :func:`resolve_model` finds nothing at: for a name,
    the names there are; for a path, the files a model folder needs. ``kgsearch index --model``
    and ``kgsearch model use`` say it alike, as a usage error (exit 2): a wrong argument, not a
    damaged file (a model folder whose files do not read is a DataError naming the file)."""
    where = str(spec)
    if not Path(where).expanduser().exists() and not any(c in where for c in "/\\"):
        names = _model_names()
        return (f"no model named {where!r} here; the models here: {', '.join(names) or 'none'} "
                f"(`kgsearch model list`); `kgsearch model pull NAME` fetches one, or pass a model folder's path")
    return (f"no model2vec model at {where} (need config.json, model.safetensors and tokenizer.json); pass a "
            f"model folder, or a name `kgsearch model list` shows")


def load_model(path: str | os.PathLike | None = None) -> StaticModel:
    """Load a model2vec-format model folder (or a name, see :func:`resolve_model`)."""
    from .safetensors import load as load_tensors

    folder = resolve_model(path)
    if folder is None:
        if path is not None:
            raise DataError(no_model_message(path))
        raise DataError(f"no model2vec model found at the default model {DEFAULT_MODEL} (need config.json, "
                        f"model.safetensors and tokenizer.json); pass a model folder or run `kgsearch model pull NAME`")
    cfg_path, weights_path, tok_path, tensor = find_layout(folder)  # type: ignore[misc]
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read the model config ({exc})", str(cfg_path)) from None
    if not isinstance(config, dict):
        raise DataError("the model config is not a JSON object", str(cfg_path))
    tensors = load_tensors(weights_path)
    if tensor not in tensors:
        raise DataError(f"no {tensor!r} tensor (has: {', '.join(sorted(tensors)) or 'none'})", str(weights_path))
    tokenizer = Tokenizer.from_file(tok_path)
    return StaticModel(folder, tensors[tensor], tokenizer, config,
                       weights=tensors.get("weights"), mapping=tensors.get("mapping"),
                       files=(cfg_path, weights_path, tok_path))
