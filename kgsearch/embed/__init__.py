"""Dense embeddings without Rust: model2vec-format static models read with numpy only.

Public API (all imports are lazy; importing ``kgsearch.embed`` does not import numpy)::

    from kgsearch.embed import load_model
    model = load_model("data/models/bge-small-en-256")      # a folder, a pulled name, or None = default
    vecs = model.encode(["graph neural network", "pagerank on a phone"])
    vecs.shape, vecs.dtype          # (2, 256) float32, bit-identical to model2vec's encode
    model.dims, model.model_id      # 256, "bge-small-en-256@<sha256 prefix>"

- :func:`load_model(path=None) <kgsearch.embed.model.load_model>`: a model2vec folder
  (``config.json``, ``model.safetensors``, ``tokenizer.json``), a name under the data dir
  (``kgsearch model pull``), ``$KGSEARCH_MODEL``, or the shipped default model.
  ``model.encode(list_of_str) -> np.ndarray`` float32 ``(n, dims)``; ``model.dims``;
  ``model.model_id``; ``model.tokenize(list_of_str)`` (token ids as model2vec uses them).
- :func:`pull_model(name, dest=None) -> Path <kgsearch.embed.hub.pull_model>`: fetch a Hub
  model with model2vec (optional extra ``embed``; needs the network).
- :func:`list_models() -> list[dict] <kgsearch.embed.hub.list_models>`: models usable here.
- ``kgsearch.embed.dense.search(ix, query, k=100)``: the ``dense`` channel (cosine top-k over
  the index's int8 vectors); ``kgsearch.embed.embed_step.update(ix, changes, settings, progress)``:
  the derived-data step that keeps the vectors in step with the nodes.

Modules, by concept:

- the model: ``safetensors`` (numpy/mmap reader), ``tokenizers/`` (the tokenizer.json pipeline
  in pure Python, with ``_unicode_table`` generated from the ``tokenizers`` library), ``model``
  (``StaticModel``), ``index_model`` (the model that goes with an index), ``hub`` (pull/list);
- ``kernel``: int8 quantisation, exact scans and top-k, 1-bit sign sketches (numpy only, no
  index), with their slow references;
- ``store``: the vectors as stored (``vec_blocks``) and the tables kept in step with them for
  large indexes (``vec_rows``, ``vec_sketch``, the score moments);
- ``dense``: the channel at query time (whole matrix in RAM, sketch cascade, or streamed);
- ``embed_step``: the derived-data step.
"""
from __future__ import annotations

from typing import Any

__all__ = ["load_model", "pull_model", "list_models"]


def load_model(path: Any = None):
    """Load a model2vec-format static model (see :func:`kgsearch.embed.model.load_model`)."""
    from .model import load_model as _load

    return _load(path)


def pull_model(name: str, dest: Any = None):
    """Download ``name`` from the Hugging Face Hub with model2vec (see :mod:`kgsearch.embed.hub`)."""
    from .hub import pull_model as _pull

    return _pull(name, dest=dest)


def list_models() -> list[dict]:
    """Models kgsearch can load here: shipped, pulled into the data dir, ``$KGSEARCH_MODEL``."""
    from .hub import list_models as _list

    return _list()
