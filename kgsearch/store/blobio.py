"""Stored arrays read in pieces: what a query process loads once without holding two copies.

``Index.get_array`` returns the whole blob as one Python ``bytes`` (SQLite's copy of the
value, then Python's), and every array derived from it (norms from lengths, a dense table
from ids) is allocated next to it: loading the BM25 document norms at 1M nodes (two 8 MB
blobs -> one 8 MB array) peaked at 30.5 MiB traced and left the process 40 MiB larger.
:func:`iter_array` yields the blob as arrays of at most ``chunk`` bytes read with SQLite's
incremental blob I/O (``Connection.blobopen``, Python >= 3.11), so a caller fills its result
piece by piece; older Pythons fall back to slices of the whole read (same values).

:class:`Stored` / :func:`open_stored` slice a stored array without reading it whole, and
:func:`put_stored` rewrites in place only the pieces that changed: the graph update
(:mod:`kgsearch.graph.maintain`) splices its edge arrays through them.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Iterator

import numpy as np

__all__ = ["array_info", "iter_array", "array_item", "BLOB_IO", "STREAM_BYTES", "Stored", "open_stored", "put_stored"]

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


BLOB_IO = hasattr(sqlite3.Connection, "blobopen")   # incremental blob I/O (Python >= 3.11)
STREAM_BYTES = 1 << 22       # arrays from this size are written in pieces of this many bytes


class Stored:
    """One stored array, read in slices (``col[a:b]``) straight from its blob (SQLite's
    incremental blob I/O, Python >= 3.11), so a splice never holds the old array whole; with
    an older sqlite3 module, the whole array (``Index.get_array``)."""

    def __init__(self, ix, name: str, dtype, length: int, rowid: int):
        self.dtype, self._len = np.dtype(dtype), int(length)
        self._blob = ix.conn.blobopen("blobs", "data", rowid, readonly=True) if BLOB_IO else None
        self._arr = None if self._blob is not None else ix.get_array(name)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, sl: slice) -> np.ndarray:
        if self._arr is not None:
            return self._arr[sl]
        a, b, step = sl.indices(self._len)
        if step != 1:
            raise IndexError("stored arrays are read in contiguous slices")
        k = max(0, b - a) * self.dtype.itemsize
        if not k:
            return np.zeros(0, dtype=self.dtype)
        self._blob.seek(a * self.dtype.itemsize)
        return np.frombuffer(self._blob.read(k), dtype=self.dtype)

    def close(self) -> None:
        if self._blob is not None:
            self._blob.close()
        self._blob = self._arr = None


def open_stored(ix, name: str, length: int | None = None) -> Stored | None:
    """The stored array ``name`` for slicing, or None when missing, not 1-d or not ``length`` long."""
    row = ix.conn.execute("SELECT rowid, dtype, shape, length(data) FROM blobs WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    rowid, dtype, shape, nbytes = row
    shape = json.loads(shape)
    if len(shape) != 1 or nbytes != shape[0] * np.dtype(dtype).itemsize or (length is not None and shape[0] != length):
        return None
    return Stored(ix, name, dtype, shape[0], rowid)


def put_stored(ix, name: str, arr: np.ndarray, chunk: int | None = None) -> None:
    """``Index.put_array`` without a copy of the array. The same length, type and shape as the
    stored array (a change that moved no edge count): only the ``chunk``-byte pieces that
    differ are written, in place (the row's ``generation`` is left as it was: updating it
    rewrites the whole row, 1 s and two copies for 66 MB). Otherwise an empty blob of the
    right size, written in pieces by ``Index.put_array``."""
    a = np.ascontiguousarray(arr)
    conn = ix.conn
    chunk = chunk or STREAM_BYTES
    if not BLOB_IO or a.nbytes < chunk:
        ix.put_array(name, a)
        return
    view = memoryview(a.reshape(-1)).cast("B")
    row = conn.execute("SELECT rowid, dtype, shape, length(data) FROM blobs WHERE name = ?", (name,)).fetchone()
    if row is not None and row[1:] == (a.dtype.str, json.dumps(list(a.shape)), a.nbytes):
        with conn.blobopen("blobs", "data", row[0]) as blob:
            for o in range(0, a.nbytes, chunk):
                piece = view[o:o + chunk]
                blob.seek(o)
                if blob.read(len(piece)) != piece:
                    blob.seek(o)
                    blob.write(piece)
    else:
        ix.put_array(name, a)               # (arrays over 1 MiB: written in pieces into a zero blob)
        return
    getattr(ix, "_cache", {}).pop(name, None)
