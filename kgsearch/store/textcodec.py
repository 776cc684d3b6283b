"""How ``nodes.text`` is stored: short texts as TEXT, long ones as compressed BLOBs.

A node's body (a method's source, a note section, a chunk of prose) is the largest thing in an
index: on the Python standard library 23.6 MB of the 32 MB of source. Bodies of 128 bytes and
more are stored as ``b"\\x01" + raw deflate`` (zlib level 6, 4 KB window) when that saves at
least 10 %; everything else stays TEXT. SQLite keeps a value's type per row, so the BLOB type
*is* the marker: a TEXT value is the text itself. The first byte names the codec, so a later
codec can be added without rewriting old rows.

Readers never see the BLOBs: every connection opened by :class:`kgsearch.store.db.Index` has
the SQL function ``kgtext(value)`` (:func:`register`) and reads ``kgtext(text)``; Python code
that holds a raw value calls :func:`unpack`. The view ``nodes_fts`` (the FTS5 table's content)
and the ``chunks`` view decode through it, so a plain ``sqlite3`` shell without kgsearch's
function reads the ``nodes`` table (BLOBs for long bodies) but not those two views.

Example::

    >>> v = pack("def f():\\n    return 1\\n" * 20)
    >>> type(v).__name__, unpack(v) == "def f():\\n    return 1\\n" * 20
    ('bytes', True)
    >>> pack("short")
    'short'
"""
from __future__ import annotations

import sqlite3
import zlib

__all__ = ["pack", "unpack", "register", "SQL_FUNCTION", "MIN_BYTES"]

SQL_FUNCTION = "kgtext"
MIN_BYTES = 128          # shorter texts stay TEXT (deflate rarely saves 10 % below that)
_DEFLATE = b"\x01"       # codec 1: raw deflate (no zlib header/checksum: the node hash checks it)
_LEVEL, _WBITS, _MEMLEVEL = 6, -12, 5
# A 4 KB window and memLevel 5 compress node bodies within 0.1 % of zlib's defaults and start
# ~5x faster (zlib's default state is 256 KB to set up for every short text).


def pack(text: str) -> str | bytes:
    """What to store for ``text``: the text, or ``b"\\x01" + deflate(UTF-8)`` when that is
    at least 10 % smaller."""
    if len(text) < MIN_BYTES // 4:          # cannot reach MIN_BYTES in UTF-8
        return text
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:              # lone surrogates: keep as is (SQLite decides)
        return text
    if len(raw) < MIN_BYTES:
        return text
    co = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEMLEVEL)
    z = co.compress(raw) + co.flush()
    if 10 * (len(z) + 1) > 9 * len(raw):
        return text
    return _DEFLATE + z


def unpack(value: str | bytes | None) -> str | None:
    """The text of a stored ``nodes.text`` value (TEXT as is, codec BLOBs decoded)."""
    if value is None or isinstance(value, str):
        return value
    b = bytes(value)
    if b[:1] == _DEFLATE:
        return zlib.decompress(b[1:], -15).decode("utf-8")
    if not b:
        return ""
    raise ValueError(f"nodes.text holds a BLOB with unknown codec byte {b[0]:#04x}; "
                     f"this index was written by a newer kgsearch: upgrade kgsearch or rebuild the index")


def register(conn: sqlite3.Connection) -> None:
    """Define ``kgtext(value)`` on ``conn`` (deterministic: usable in views and indexes)."""
    conn.create_function(SQL_FUNCTION, 1, unpack, deterministic=True)
