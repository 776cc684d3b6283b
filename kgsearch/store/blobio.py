"""Stored arrays read in pieces: what a query process loads once without holding two copies.

``Index.get_array`` returns the whole blob as one Python ``bytes`` (SQLite's copy of the
value, then Python's), and every array derived from it (norms from lengths, a dense table
from ids) is allocated next to it: loading the BM25 document norms at 1M nodes (two 8 MB
blobs -> one 8 MB array) peaked at 30.5 MiB traced and left the process 40 MiB larger.
:func:`iter_array` yields the blob as arrays of at most ``chunk`` bytes read with SQLite's
incremental blob I/O (``Connection.blobopen``, Python >= 3.11), so a caller fills its result
piece by piece; older Pythons fall back to slices of the whole read (same values).
"""
from __future__ import annotations

import json
from typing import Iterator

import numpy as np

__all__ = ["array_info", "iter_array", "array_item"]

CHUNK = 1 << 20


def array_info(ix, name: str) -> tuple[int, np.dtype, tuple] | None:
    """(rowid, dtype, shape) of the stored array ``name`` (None when absent); reads no content."""
    row = ix.conn.execute("SELECT rowid, dtype, shape FROM blobs WHERE name=?", (name,)).fetchone()
    if row is None:
        return None
    return int(row[0]), np.dtype(row[1]), tuple(json.loads(row[2]))


def _blob(ix, rowid: int):
    if not hasattr(ix.conn, "blobopen"):
        return None
    return ix.conn.blobopen("blobs", "data", rowid, readonly=True)


def iter_array(ix, name: str, chunk: int | None = None) -> Iterator[np.ndarray]:
    """The flat items of the stored array ``name`` in order, as arrays of about ``chunk``
    bytes (default :data:`CHUNK`; whole items; nothing when the array is absent)."""
    chunk = CHUNK if chunk is None else chunk
    info = array_info(ix, name)
    if info is None:
        return
    rowid, dtype, _shape = info
    step = max(1, chunk // dtype.itemsize) * dtype.itemsize
    blob = _blob(ix, rowid)
    if blob is None:
        flat = ix.get_array(name).reshape(-1)
        per = step // dtype.itemsize
        for s in range(0, len(flat), per):
            yield np.array(flat[s:s + per])
        return
    with blob:
        size = len(blob)
        if size % dtype.itemsize:
            raise ValueError(f"stored array {name!r}: {size} bytes is not a whole number of {dtype} items")
        pos = 0
        while pos < size:
            piece = blob.read(min(step, size - pos))
            if not piece:
                raise ValueError(f"stored array {name!r} ended at byte {pos} of {size}")
            pos += len(piece)
            yield np.frombuffer(piece, dtype=dtype)


def array_item(ix, name: str, index: int):
    """One item of the flat stored array (``index`` < 0 counts from the end), read alone."""
    info = array_info(ix, name)
    if info is None:
        return None
    rowid, dtype, shape = info
    n = int(np.prod(shape)) if shape else 1
    if not -n <= index < n:
        raise IndexError(f"item {index} of {name!r} ({n} items)")
    index %= n
    blob = _blob(ix, rowid)
    if blob is None:
        return ix.get_array(name).reshape(-1)[index]
    with blob:
        blob.seek(index * dtype.itemsize)
        return np.frombuffer(blob.read(dtype.itemsize), dtype=dtype)[0]
