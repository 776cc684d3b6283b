"""Compact codecs for posting lists: ascending node ids as gaps, term frequencies by width.

Node-id lists (BM25 postings and trigram postings) are stored as the gaps between sorted ids
(the first gap is the first id). One header byte says how:

* ``1, 2, 4, 8``: every gap in that many bytes (uint8/16/32/64, little-endian);
* ``0x12, 0x14, 0x18``: "byte gaps with exceptions": ``[m: uint W][m exceptions: uint W][n bytes]``,
  W = low nibble; a byte 0 stands for the next exception (a gap that is 0 or > 255, in order).
  Dense lists (common terms, trigrams) with a few big gaps, the first id included, cost
  ~1 byte per id.

The encoder picks the smaller of the two per list; the decoder is one ``frombuffer`` and one
``cumsum``. Term frequencies are stored without a header: uint8, uint16 or float32 (weighted
counts that are not whole numbers), the width being ``len(blob) // df``. Each fast kernel has
a slow, obvious twin (``*_ref``) that the tests compare it with.

>>> decode_ids(encode_ids([3, 4, 900])).tolist()
[3, 4, 900]
>>> encode_ids([3, 4, 900]) == encode_ids_ref([3, 4, 900])
True
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["encode_ids", "encode_ids_many", "decode_ids", "decode_ids_many", "encode_ids_ref", "decode_ids_ref",
           "encode_tf", "encode_tf_many", "decode_tf", "tf_view"]

_LE = {1: np.dtype(np.uint8), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
_ESC = 0x10


def _width(v: int) -> int:
    return 1 if v < 1 << 8 else 2 if v < 1 << 16 else 4 if v < 1 << 32 else 8


def encode_ids_many(ids: np.ndarray, offsets) -> list[bytes]:
    """:func:`encode_ids` of ``ids[offsets[i]:offsets[i+1]]`` for every i (gaps computed in one pass)."""
    ids = np.asarray(ids, dtype=np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    n_lists = len(off) - 1
    if n_lists <= 0:
        return []
    gaps = ids.copy()
    gaps[1:] -= ids[:-1]
    starts, ends = off[:-1], off[1:]
    nonempty = ends > starts
    gaps[starts[nonempty]] = ids[starts[nonempty]]       # each list starts from 0
    if gaps.size and int(gaps.min()) < 0:
        raise ValueError("node ids must be ascending and >= 0")
    # per list: the largest gap, and the gaps a byte cannot hold (0 or > 255)
    exc = (gaps == 0) | (gaps > 255)
    cnt = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(exc, out=cnt[1:])
    n_exc = (cnt[ends] - cnt[starts]).tolist()
    mx = np.zeros(n_lists, dtype=np.int64)
    if gaps.size:
        mx[nonempty] = np.maximum.reduceat(gaps, starts[nonempty])
    out = []
    for s, e, g, m in zip(starts.tolist(), ends.tolist(), mx.tolist(), n_exc):
        n = e - s
        w = _width(g)
        if w == 1 or n == 0:
            out.append(bytes((w,)) + gaps[s:e].astype(_LE[w]).tobytes())
            continue
        ew = max(2, _width(max(g, m)))
        if 1 + ew + m * ew + n < 1 + n * w:
            part = gaps[s:e]
            big = (part == 0) | (part > 255)
            out.append(bytes((_ESC | ew,)) + np.asarray([m], dtype=_LE[ew]).tobytes()
                       + part[big].astype(_LE[ew]).tobytes()
                       + np.where(big, 0, part).astype(np.uint8).tobytes())
        else:
            out.append(bytes((w,)) + gaps[s:e].astype(_LE[w]).tobytes())
    return out


def encode_ids(ids) -> bytes:
    """Ascending node ids (>= 0) -> blob (see the codec notes above)."""
    a = np.asarray(ids, dtype=np.int64)
    return encode_ids_many(a, [0, a.size])[0]


def decode_ids(blob: bytes) -> np.ndarray:
    """Blob -> ascending node ids (int64), vectorised: one ``frombuffer`` and one ``cumsum``."""
    h = blob[0]
    if h < _ESC:
        return np.frombuffer(blob, dtype=_LE[h], offset=1).astype(np.int64).cumsum()
    ew = h & 0x0F
    dt = _LE[ew]
    m = int(np.frombuffer(blob, dtype=dt, count=1, offset=1)[0])
    g = np.frombuffer(blob, dtype=np.uint8, offset=1 + ew + m * ew).astype(np.int64)
    if m:
        g[g == 0] = np.frombuffer(blob, dtype=dt, count=m, offset=1 + ew)
    return np.cumsum(g)


def decode_ids_many(blobs: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Several blobs at once: (all ids concatenated, int64 offsets [len(blobs) + 1]). Lists of
    one fixed width are joined and decoded with one ``cumsum`` (each list's running total
    before it subtracted), so the per-list cost is a few Python operations."""
    n = len(blobs)
    sizes = np.zeros(n, dtype=np.int64)
    groups: dict[int, list[int]] = {}
    single: dict[int, np.ndarray] = {}
    for i, b in enumerate(blobs):
        h = b[0]
        if h < 8:
            sizes[i] = (len(b) - 1) // h
            groups.setdefault(h, []).append(i)
        else:                                  # uint64 gaps or byte gaps with exceptions
            single[i] = a = decode_ids(b)
            sizes[i] = a.size
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    out = np.empty(int(off[-1]), dtype=np.int64)
    for h, idx in groups.items():
        cs = np.frombuffer(b"".join([blobs[i][1:] for i in idx]), dtype=_LE[h]).astype(np.int64).cumsum()
        sz = sizes[idx]
        ends = np.cumsum(sz)
        before = np.zeros(len(idx), dtype=np.int64)
        inner = ends - sz > 0
        before[inner] = cs[(ends - sz)[inner] - 1]
        if len(idx) == n:
            out[:] = cs - np.repeat(before, sz)
        else:
            out[np.repeat(off[idx] - (ends - sz), sz) + np.arange(cs.size)] = cs - np.repeat(before, sz)
    for i, a in single.items():
        out[off[i]:off[i + 1]] = a
    return out, off


def encode_ids_ref(ids) -> bytes:
    """Slow, obvious twin of :func:`encode_ids` (tests check that both write the same bytes)."""
    ids = [int(i) for i in ids]
    gaps = [b - a for a, b in zip([0] + ids[:-1], ids)]
    w = 1
    for g in gaps:
        while g >= 1 << (8 * w):
            w *= 2
    fixed = bytes([w]) + b"".join(g.to_bytes(w, "little") for g in gaps)
    if w == 1 or not gaps:
        return fixed
    big = [g for g in gaps if g == 0 or g > 255]
    ew = 2
    while max(gaps + [len(big)]) >= 1 << (8 * ew):
        ew *= 2
    esc = (bytes([0x10 | ew]) + len(big).to_bytes(ew, "little") + b"".join(g.to_bytes(ew, "little") for g in big)
           + bytes(0 if (g == 0 or g > 255) else g for g in gaps))
    return esc if len(esc) < len(fixed) else fixed


def decode_ids_ref(blob: bytes) -> list[int]:
    """Slow, obvious twin of :func:`decode_ids`."""
    h = blob[0]
    if h < 0x10:
        gaps = [int.from_bytes(blob[i:i + h], "little") for i in range(1, len(blob), h)]
    else:
        ew = h & 0x0F
        m = int.from_bytes(blob[1:1 + ew], "little")
        big = [int.from_bytes(blob[1 + ew + j * ew:1 + ew + (j + 1) * ew], "little") for j in range(m)]
        gaps = []
        for byte in blob[1 + ew + m * ew:]:
            gaps.append(big.pop(0) if byte == 0 else byte)
    out, acc = [], 0
    for g in gaps:
        acc += g
        out.append(acc)
    return out


def encode_tf_many(tf: np.ndarray, offsets) -> list[bytes]:
    """Term frequencies per list: uint8 when all are whole and <= 255, uint16 up to 65535,
    else float32 (no header: the width is ``len(blob) // df``)."""
    tf = np.asarray(tf, dtype=np.float32)
    off = np.asarray(offsets, dtype=np.int64)
    starts, ends = off[:-1], off[1:]
    if len(starts) == 0:
        return []
    whole = (tf == np.floor(tf)) & (tf >= 0)
    bad = np.zeros(tf.size + 1, dtype=np.int64)
    np.cumsum(~whole, out=bad[1:])
    nonempty = ends > starts
    mx = np.zeros(len(starts), dtype=np.float64)
    if tf.size:
        mx[nonempty] = np.maximum.reduceat(tf, starts[nonempty])
    u8 = tf.astype(np.uint8) if tf.size else tf
    out = []
    for s, e, m, b in zip(starts.tolist(), ends.tolist(), mx.tolist(), (bad[ends] - bad[starts]).tolist()):
        if b or m > 65535:
            out.append(tf[s:e].astype("<f4").tobytes())
        elif m > 255:
            out.append(tf[s:e].astype("<u2").tobytes())
        else:
            out.append(u8[s:e].tobytes())
    return out


def encode_tf(tf) -> bytes:
    a = np.asarray(tf, dtype=np.float32)
    return encode_tf_many(a, [0, a.size])[0]


def tf_view(blob: bytes, df: int) -> np.ndarray:
    w = len(blob) // df if df else 1
    return np.frombuffer(blob, dtype=np.uint8 if w == 1 else "<u2" if w == 2 else "<f4")


def decode_tf(blob: bytes, df: int) -> np.ndarray:
    """Stored term frequencies of a ``df``-long list as float32."""
    return tf_view(blob, df).astype(np.float32)

