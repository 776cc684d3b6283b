"""Property: no query string whatsoever makes a text channel raise, and results keep their shape."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import hypothesis_api
from kgsearch.store.db import Index
from kgsearch.text import bm25, fts, text_step as tindex, keywords, pattern
from kgsearch.text.tokenize import Analyzer
from kgsearch.types import ChangeSet

given, settings, st, HealthCheck = hypothesis_api()     # stand-ins that skip when hypothesis is missing

CHANNELS = [bm25.search, fts.search, fts.text_search, pattern.search, keywords.search_equivalences]


@pytest.fixture(scope="module")
def pix(tmp_path_factory):
    ix = Index.open(tmp_path_factory.mktemp("prop") / "p.db")
    rows = [("StreamingTextResponse", "web.StreamingTextResponse", "streams text to a client"),
            ("blast_radius", "graph.blast_radius", "nodes affected by a change"),
            ("a", "", "x"), ("日本語", "", "テキスト"), ("NEAR", "", "AND OR NOT * \" ( )")]
    with ix.transaction():
        for i, (n, q, t) in enumerate(rows):
            ix.conn.execute("INSERT INTO nodes(key, kind, name, qualname, text) VALUES (?, 'x', ?, ?, ?)",
                            (f"k{i}", n, q, t))
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    yield ix
    ix.close()


# text() covers all of Unicode incl. lone surrogates and NUL; the sampled strings add syntax
SYNTAX = st.sampled_from(['"', "*", "NEAR(", "AND", "OR", "NOT", "name:", "text:", "(", ")", "-",
                          "/", "/(a+)+$/", "/[/", "\\", "^", ":", "{", "}", "'", "\x00", "\ud800"])
QUERIES = st.one_of(st.text(max_size=200),
                    st.lists(st.one_of(SYNTAX, st.text(max_size=8)), max_size=12).map(" ".join),
                    st.lists(st.one_of(SYNTAX, st.text(max_size=8)), max_size=12).map("".join))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=QUERIES, k=st.integers(min_value=-1, max_value=50))
def test_no_query_string_makes_a_channel_raise(pix, q, k):
    for fn in CHANNELS:
        out = fn(pix, q, k)
        if isinstance(out, str):          # a channel that is off says why in one line
            assert out and "\n" not in out
            continue
        ids, sc = out
        assert isinstance(ids, np.ndarray) and isinstance(sc, np.ndarray)
        assert ids.dtype == np.int64 and sc.dtype == np.float32 and ids.shape == sc.shape
        assert ids.size <= max(k, 0)
        if sc.size > 1:
            assert (np.diff(sc) <= 1e-6).all()
    keywords.extract(q, equivalences={"a": ["StreamingTextResponse"]})
    fts.build_query(q)


@settings(max_examples=200, deadline=None)
@given(s=st.text(max_size=300))
def test_analyzers_never_raise(s):
    for stem in ("porter2", "light", "none"):
        out = Analyzer(stem)(s)
        assert all(isinstance(t, str) and t for t in out)
