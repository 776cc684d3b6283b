"""Index.put_array: arrays above PUT_STREAM_BYTES are written in pieces (incremental blob I/O)
and must store the very bytes of the one-piece write."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.store import db as dbm
from kgsearch.store.db import Index


@pytest.mark.parametrize("limit", [16, 1 << 30])
def test_put_array_in_pieces_stores_the_same_bytes(tmp_path, monkeypatch, limit):
    monkeypatch.setattr(dbm, "PUT_STREAM_BYTES", limit)
    rng = np.random.default_rng(0)
    arrays = {"f32": rng.random((37, 11)).astype(np.float32), "i64": rng.integers(-9, 9, 1001),
              "view": np.arange(500, dtype=np.int32)[::-3], "u8": np.arange(17, dtype=np.uint8),
              "empty": np.zeros(0, dtype=np.int32)}
    with Index.open(tmp_path / "x.db") as ix:
        with ix.transaction():
            for k, a in arrays.items():
                ix.put_array(k, np.zeros(3))                 # replaced below (ON CONFLICT)
                ix.put_array(k, a)
        for k, a in arrays.items():
            got = ix.get_array(k)
            assert got.dtype == a.dtype and got.shape == a.shape and np.array_equal(got, a), k
            raw = ix.conn.execute("SELECT data FROM blobs WHERE name=?", (k,)).fetchone()[0]
            assert bytes(raw) == a.tobytes(), k
        with pytest.raises(RuntimeError):
            with ix.transaction():
                ix.put_array("f32", np.ones(100))
                raise RuntimeError("rolled back")
        assert np.array_equal(ix.get_array("f32"), arrays["f32"])
