"""Pattern-channel index: posting blobs (the codec itself is tested in text/test_postings_codec.py), and the numpy rebuild against :func:`trigrams`."""
from __future__ import annotations

import random

import numpy as np
import pytest

from kgsearch.text import pattern
from kgsearch.text import trigrams
from kgsearch.types import ChangeSet


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 17, 1000])
@pytest.mark.parametrize("spread", [1, 250, 300, 10**6, 2**31])
def test_blob_round_trip(n, spread):
    rng = np.random.default_rng(n * 7 + spread % 97)
    ids = np.unique(rng.integers(1, spread + n + 2, size=n)).astype(np.int64)
    blob = trigrams._blob(ids)
    assert trigrams.ids_from(blob).tolist() == ids.tolist()
    if n and spread <= 250:
        assert len(blob) == 1 + ids.size                # one byte per id when gaps are small


ALPHABET = "abcXYZ_.09\t éÉßİK\u212a-あ"    # tabs split parts; Kelvin sign lower-cases to 'k'


def _random_symbols(rng: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        name = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 9)))
        qual = rng.choice(["", name, "pkg.mod." + name,
                           "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 14)))])
        out.append((name, qual))
    return out


def _postings(ix) -> dict[str, list[int]]:
    return {t: trigrams.ids_from(b).tolist() for t, b in ix.conn.execute("SELECT tri, ids FROM text_trigrams")}


def _expected(ix) -> dict[str, list[int]]:
    exp: dict[str, list[int]] = {}
    for nid, name, qual in ix.conn.execute("SELECT id, name, qualname FROM nodes ORDER BY id"):
        for t in trigrams.trigrams(trigrams.symbol(name, qual)):
            exp.setdefault(t, []).append(nid)
    return exp


def test_rebuild_and_updates_match_the_reference(ix):
    rng = random.Random(5)
    with ix.transaction():
        nid = 0
        for i, (name, qual) in enumerate(_random_symbols(rng, 400)):
            nid += rng.choice([1, 1, 2, 300])          # gaps below and above one byte
            ix.conn.execute("INSERT INTO nodes(id, key, kind, name, qualname) VALUES (?, ?, 'sym', ?, ?)",
                            (nid, f"k{i}", name, qual))
        trigrams.update(ix, ChangeSet(generation=1, full=True), full=True)
        assert _postings(ix) == _expected(ix)
        # incremental: rename some, remove some, add some
        ids = [r[0] for r in ix.conn.execute("SELECT id FROM nodes ORDER BY id")]
        ch = ChangeSet(generation=2)
        for nid in rng.sample(ids, 60):
            ch.modified.append(nid)
            ix.conn.execute("UPDATE nodes SET name=?, qualname=? WHERE id=?", (*_random_symbols(rng, 1)[0], nid))
        for nid in rng.sample([i for i in ids if i not in ch.modified], 40):
            ch.removed.append(nid)
            ix.conn.execute("DELETE FROM nodes WHERE id=?", (nid,))
        for j, (name, qual) in enumerate(_random_symbols(rng, 30)):
            ch.added.append(ix.conn.execute("INSERT INTO nodes(key, kind, name, qualname) VALUES (?, 'sym', ?, ?)",
                                            (f"new{j}", name, qual)).lastrowid)
        trigrams.update(ix, ch, full=False)
        assert _postings(ix) == _expected(ix)
        incremental = _postings(ix)
        trigrams.update(ix, ChangeSet(generation=3, full=True), full=True)
        assert _postings(ix) == incremental


@pytest.mark.parametrize("spill_from", [0, 50, 700])
def test_rebuild_spilled_by_first_byte_writes_the_same_rows(ix, spill_from):
    """Keys past ``spill_from`` go to a temp table by first byte: the same rows, in the same
    row order, as holding every key (and the reference's postings)."""
    rng = random.Random(11)
    with ix.transaction():
        for i, (name, qual) in enumerate(_random_symbols(rng, 500)):
            ix.conn.execute("INSERT INTO nodes(key, kind, name, qualname) VALUES (?, 'sym', ?, ?)",
                            (f"k{i}", name + ("é" if i % 37 == 0 else ""), qual))
        got = {}
        for size in (10**9, spill_from):
            trigrams._rebuild(ix.conn, spill_from=size)
            got[size] = ix.conn.execute("SELECT rowid, tri, ids FROM text_trigrams ORDER BY rowid").fetchall()
        assert got[10**9] == got[spill_from]
        assert _postings(ix) == _expected(ix)
        assert ix.conn.execute("SELECT count(*) FROM sqlite_temp_master WHERE name='trigram_spill'").fetchone()[0] == 0
