"""Read ``.safetensors`` files with numpy only, memory-mapped (no Rust ``safetensors`` package).

Format: 8-byte little-endian header length ``N``, ``N`` bytes of JSON
``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``, then the
raw little-endian tensor bytes (offsets relative to the end of the header).

``load(path)`` returns a dict of read-only numpy arrays that view one shared ``mmap``: nothing is
copied until a tensor is used, so a 100 MB model costs only what the process touches. BF16 (no
numpy dtype) is widened to float32, which copies.

Example::

    >>> from kgsearch.config import shipped_data_dir
    >>> tensors = load(shipped_data_dir() / "models/e5-small-en-256/model.safetensors")
    >>> tensors["embeddings"].dtype, tensors["embeddings"].shape
    (dtype('int8'), (39831, 256))
"""
from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path
from typing import Any

from ..errors import DataError

__all__ = ["load", "read_header", "DTYPES"]

# safetensors dtype -> numpy dtype string (explicit little-endian)
DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1",
    "BOOL": "?",
}
_MAX_HEADER = 100 * 1024 * 1024


def read_header(path: str | os.PathLike) -> tuple[dict[str, Any], int]:
    """The parsed JSON header and the byte offset where tensor data starts."""
    p = str(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise DataError("not a safetensors file (shorter than 8 bytes); re-download the model", p)
            (n,) = struct.unpack("<Q", raw)
            size = os.fstat(fh.fileno()).st_size
            if n > _MAX_HEADER or 8 + n > size:
                raise DataError(f"not a safetensors file (header length {n} does not fit the "
                                f"{size}-byte file); re-download the model", p)
            header = json.loads(fh.read(n).decode("utf-8"))
    except OSError as exc:
        raise DataError(f"cannot read model weights ({exc.strerror})", p) from None
    except (UnicodeDecodeError, ValueError):
        raise DataError("not a safetensors file (header is not JSON); re-download the model", p) from None
    if not isinstance(header, dict):
        raise DataError("not a safetensors file (header is not a JSON object)", p)
    return header, 8 + n


def load(path: str | os.PathLike, names: list[str] | None = None) -> dict[str, Any]:
    """Map the file and return ``{name: read-only ndarray}`` (``names``: only those tensors)."""
    import numpy as np

    p = str(Path(path))
    header, start = read_header(p)
    with open(p, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    out: dict[str, Any] = {}
    for name, info in header.items():
        if name == "__metadata__" or (names is not None and name not in names):
            continue
        try:
            dtype = info["dtype"]
            shape = [int(x) for x in info["shape"]]
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise DataError(f"tensor {name!r} has a malformed header entry; re-download the model", p) from None
        count = 1
        for d in shape:
            count *= d
        if dtype == "BF16":
            width = 2
        elif dtype in DTYPES:
            width = np.dtype(DTYPES[dtype]).itemsize
        else:
            raise DataError(f"tensor {name!r} has dtype {dtype}, which kgsearch cannot read "
                            f"(supported: {', '.join(sorted(DTYPES))}, BF16)", p)
        if not (0 <= begin <= end and start + end <= size and end - begin == count * width):
            raise DataError(f"tensor {name!r} ({dtype} {shape}) does not fit the file "
                            f"(offsets {begin}..{end}); the file is truncated or corrupt", p)
        if dtype == "BF16":
            raw = np.frombuffer(buf, dtype="<u2", count=count, offset=start + begin)
            arr = (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)
        else:
            arr = np.frombuffer(buf, dtype=np.dtype(DTYPES[dtype]), count=count,
                                offset=start + begin).reshape(shape)
        out[name] = arr
    if names is not None:
        missing = [n for n in names if n not in out]
        if missing:
            raise DataError(f"no tensor named {missing[0]!r} (has: {', '.join(sorted(out) or ['none'])})", p)
    return out


def metadata(path: str | os.PathLike) -> dict[str, str]:
    """The ``__metadata__`` string map of the file (empty when absent)."""
    header, _ = read_header(path)
    meta = header.get("__metadata__") or {}
    return {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}
