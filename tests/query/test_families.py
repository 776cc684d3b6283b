"""A long definition and the parts of its text take one slot of a cut (query/families.py):
hand-made rankings, and an index without parts that reads nothing and cuts as before."""
from __future__ import annotations

import numpy as np

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine, SearchOptions
from kgsearch.query.families import NO_FAMILIES, Families, families, read_families, top_families
from kgsearch.store.db import Index

# ids 10..17 by score; 11, 12 and 15 are parts of 10; 16 a part of 13
IDS = np.array([10, 11, 12, 13, 14, 15, 16, 17], dtype=np.int64)
SCORES = np.array([8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
FAM = Families(np.array([11, 12, 15, 16]), np.array([10, 10, 10, 13]))


def _fetcher(asked: list[int]):
    def fetch(m):
        asked.append(m)
        return IDS[:m], SCORES[:m]
    return fetch


def test_k_distinct_definitions_and_every_node_above_the_last():
    asked: list[int] = []
    ids, scores = top_families(_fetcher(asked), 3, FAM)
    assert ids.tolist() == [10, 11, 12, 13, 14] and scores.tolist() == [8.0, 7.0, 6.0, 5.0, 4.0]
    assert asked == [3, 5]                   # 3 nodes held one definition: 2 more asked for


def test_parts_below_the_last_definition_stay_out():
    asked: list[int] = []
    ids, _ = top_families(_fetcher(asked), 4, FAM)        # 10, 13, 14, 17: 15 and 16 are parts above 17
    assert ids.tolist() == [10, 11, 12, 13, 14, 15, 16, 17]
    ids, _ = top_families(_fetcher([]), 2, FAM)
    assert ids.tolist() == [10, 11, 12, 13]


def test_a_ranking_that_runs_out_answers_what_it_has():
    ids, _ = top_families(_fetcher([]), 6, FAM)           # 4 definitions in all
    assert ids.tolist() == IDS.tolist()
    assert top_families(lambda m: "off", 3, FAM) == "off"


def test_without_parts_the_cut_is_the_channels_own_answer():
    asked: list[int] = []
    got = _fetcher(asked)(3)
    asked.clear()
    same = top_families(lambda m: (asked.append(m), got)[1], 3, NO_FAMILIES)
    assert same is got and asked == [3]
    # parts in the index but none in the answer: the answer as it is, asked once
    asked.clear()
    ids, _ = top_families(_fetcher(asked), 1, FAM)
    assert ids.tolist() == [10] and asked == [1]


def test_a_part_without_a_parent_row_is_its_own_definition():
    f = Families(np.array([4, 9]), np.array([2, 9]))
    assert f.of(np.array([4, 9, 5])).tolist() == [2, 9, 5]
    assert not NO_FAMILIES and NO_FAMILIES.of(np.array([3])).tolist() == [3]


def test_a_notes_index_reads_no_part_and_ranks_as_before(tmp_path):
    """No file from a code loader: no statement reads the nodes table for parts, and every
    depth gives the channel's own top ``depth`` (the cut before families existed)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(6):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nwidget frames {'widget ' * i}and more text {i}\n",
                                        encoding="utf-8")
    db = tmp_path / "n.db"
    index_paths(db, [str(notes)], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        seen: list[str] = []
        ix.conn.set_trace_callback(seen.append)
        assert read_families(ix.conn) is NO_FAMILIES
        assert not [s for s in seen if "FROM nodes" in s]
        ix.conn.set_trace_callback(None)
        assert families(ix) is NO_FAMILIES
        from kgsearch.arrays import top_ids
        from kgsearch.query.channels import CHANNELS

        e = Engine(ix)
        q = e.parse("widget frames")
        f = CHANNELS["bm25"].score_all(ix, q)
        for depth in (1, 2, 3):
            r = e.search("widget frames", SearchOptions(k=20, channels=["bm25"], depth=depth, collapse=False))
            want = top_ids(f[0], f[1], depth)[0]
            assert sorted(h.id for h in r.hits) == sorted(want.tolist()), depth
