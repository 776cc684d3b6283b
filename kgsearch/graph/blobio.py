"""Stored arrays (``blobs`` rows, as ``Index.put_array`` writes them) read in slices and
written in pieces, with SQLite's incremental blob I/O (Python >= 3.11; older: the whole array
through ``Index.get_array``/``put_array``). ``get_array`` on a 66 MB blob holds SQLite's copy
and Python's at once, and ``put_array`` ``tobytes()`` plus SQLite's copy, which the cached
statement keeps bound until its next use; the graph update (:mod:`kgsearch.graph.maintain`)
reads and writes its edge arrays through these instead."""
from __future__ import annotations

import json
import sqlite3

import numpy as np

__all__ = ["BLOB_IO", "STREAM_BYTES", "Stored", "open_stored", "put_stored"]

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
    right size, written in pieces (binding the bytes costs ``tobytes()`` plus SQLite's own
    copy, which the cached statement keeps until its next use)."""
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
        conn.execute("INSERT INTO blobs(name, generation, dtype, shape, data) VALUES (?,?,?,?,zeroblob(?)) "
                     "ON CONFLICT(name) DO UPDATE SET generation=excluded.generation, dtype=excluded.dtype, "
                     "shape=excluded.shape, data=excluded.data",
                     (name, ix.generation, a.dtype.str, json.dumps(list(a.shape)), a.nbytes))
        rowid = conn.execute("SELECT rowid FROM blobs WHERE name = ?", (name,)).fetchone()[0]
        with conn.blobopen("blobs", "data", rowid) as blob:
            for o in range(0, a.nbytes, chunk):
                blob.write(view[o:o + chunk])
    getattr(ix, "_cache", {}).pop(name, None)
