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
(:mod:`kgsearch.graph.stored`) patches and splices its edge arrays through them.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Iterator

import numpy as np

from .damage import DamagedData, blob_layout

__all__ = ["array_info", "iter_array", "array_item", "BLOB_IO", "STREAM_BYTES", "Stored", "open_stored", "put_stored"]

CHUNK = 1 << 20


def array_info(ix, name: str) -> tuple[int, np.dtype, tuple] | None:
    """(rowid, dtype, shape) of the stored array ``name`` (None when absent); reads no content.
    :class:`~kgsearch.store.damage.DamagedData` when the blob's length does not fit them."""
    row = ix.conn.execute("SELECT rowid, dtype, shape, length(data) FROM blobs WHERE name=?", (name,)).fetchone()
    if row is None:
        return None
    dtype, shape = blob_layout(name, row[1], row[2], row[3] or 0)
    return int(row[0]), dtype, tuple(shape)


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
        pos = 0
        while pos < size:
            piece = blob.read(min(step, size - pos))
            if not piece:
                raise DamagedData(f"database disk image is malformed: stored array {name!r} ended at byte {pos} "
                                  f"of {size}")
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
    an older sqlite3 module, the whole array (``Index.get_array``). ``writable``: also
    :meth:`write` over it in place (incremental blob I/O only)."""

    def __init__(self, ix, name: str, dtype, length: int, rowid: int, writable: bool = False):
        self.dtype, self._len = np.dtype(dtype), int(length)
        if writable and not BLOB_IO:
            raise ValueError("writing a stored array in place needs incremental blob I/O (Python >= 3.11)")
        self._blob = ix.conn.blobopen("blobs", "data", rowid, readonly=not writable) if BLOB_IO else None
        self._arr = None if self._blob is not None else ix.get_array(name)
        self._cache, self._name = getattr(ix, "_cache", {}), name

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

    def write(self, a: int, values: np.ndarray) -> None:
        """Write ``values`` over items ``a`` .. ``a + len(values)`` (within the first ``len``)."""
        v = np.ascontiguousarray(values, dtype=self.dtype).reshape(-1)
        if not 0 <= a <= a + len(v) <= self._len:
            raise IndexError(f"write of {len(v)} items at {a} past {self._len}")
        if not len(v):
            return
        self._blob.seek(a * self.dtype.itemsize)
        self._blob.write(memoryview(v).cast("B"))
        self._cache.pop(self._name, None)

    def close(self) -> None:
        if self._blob is not None:
            self._blob.close()
        self._blob = self._arr = None


def open_stored(ix, name: str, length: int | None = None, capacity: int | None = None,
                writable: bool = False) -> Stored | None:
    """The stored array ``name`` for slicing, or None when missing, not 1-d, or shorter than
    ``length`` or longer than ``capacity`` (default ``length``; stored with room to spare, see
    :func:`put_stored`, its first ``length`` items are the array)."""
    row = ix.conn.execute("SELECT rowid, dtype, shape, length(data) FROM blobs WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    rowid, dtype, shape, nbytes = row
    shape = json.loads(shape)
    if len(shape) != 1 or nbytes != shape[0] * np.dtype(dtype).itemsize:
        return None
    if length is not None and not length <= shape[0] <= max(length, capacity or 0):
        return None
    return Stored(ix, name, dtype, shape[0] if length is None else length, rowid, writable)


def put_stored(ix, name: str, arr: np.ndarray, chunk: int | None = None, capacity: int | None = None,
               keep_up_to: int | None = None, start: int | None = None) -> None:
    """``Index.put_array`` without a copy of the array, and in place when it can: a 1-d array
    stored in the same type, at least ``len(arr)`` and at most ``keep_up_to`` (default
    ``capacity``) items long, is written over, only the ``chunk``-byte pieces that differ, with
    zeros after the array (which a reader of its first ``len(arr)`` items never sees). The
    row's ``generation`` is left as it was: updating any column rewrites the whole row, 1 s
    and two copies for 66 MB. Otherwise a zero blob of ``capacity`` items (default the
    array's length), the array written into it in pieces.

    The graph's edge arrays are stored with room to spare (:func:`kgsearch.graph.stored.csr.
    edge_capacity`): a one-file change that adds or drops edges keeps their length, and an
    in-place write of a 66 MB array (half its pieces changed) took 0.22 s here, against 0.67 s
    for a new zero blob written over.

    ``start``: the caller knows the stored items before it equal ``arr``'s and those after it
    differ (a splice shifts them): the pieces before are neither read nor written, the rest
    written without reading them first (the compare reads cost a splice ~0.4 s at 1M nodes)."""
    a = np.ascontiguousarray(arr)
    conn = ix.conn
    chunk = chunk or STREAM_BYTES
    cap = int(capacity) if capacity is not None and a.ndim == 1 else None
    if cap is not None and cap < len(a):
        raise ValueError(f"capacity {cap} < {len(a)} items of {name!r}")
    if not BLOB_IO or a.nbytes < chunk:
        ix.put_array(name, a, capacity=cap)
        return
    row = conn.execute("SELECT rowid, dtype, shape, length(data) FROM blobs WHERE name = ?", (name,)).fetchone()
    size = None
    if row is not None and row[1] == a.dtype.str:
        shape = json.loads(row[2])
        if shape == list(a.shape) and row[3] == a.nbytes:
            size = a.nbytes
        elif cap is not None and len(shape) == 1 and len(a) <= shape[0] <= max(cap, keep_up_to or 0) \
                and row[3] == shape[0] * a.dtype.itemsize:
            size = row[3]
    if size is None:
        ix.put_array(name, a, capacity=cap)             # (written in pieces into a zero blob)
        return
    view = memoryview(a.reshape(-1)).cast("B")
    zeros = bytes(chunk)
    skip = None if start is None else int(start) * a.dtype.itemsize
    with conn.blobopen("blobs", "data", row[0]) as blob:
        for o in range(0, size, chunk):
            want = min(chunk, size - o)
            if skip is not None and o + want <= skip:
                continue                                            # (known to be stored as it is)
            piece = view[o:o + want] if o < a.nbytes else b""
            if len(piece) < want:                                   # (the room after the array)
                piece = bytes(piece) + zeros[:want - len(piece)]
            blob.seek(o)
            if skip is not None or blob.read(want) != piece:
                blob.seek(o)
                blob.write(piece)
    getattr(ix, "_cache", {}).pop(name, None)
