"""Shared fixtures. Benchmark data lives in ../shared (read-only); tests that need it skip
cleanly when it is absent."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests run the query engine in strict mode: a channel that raises fails the test instead of
# being skipped with a note (kgsearch.query.engine). Tests of the skip path ask for strict=False.
os.environ.setdefault("KGSEARCH_STRICT", "1")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared"))


@pytest.fixture
def shared_bench():
    """Path to ../shared/bench, or skip."""
    p = SHARED / "bench"
    if not p.is_dir():
        pytest.skip("../shared/bench is not present")
    return p


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "index.db"


@pytest.fixture
def ix(db_path):
    from kgsearch.store.db import Index

    index = Index.open(db_path)
    yield index
    index.close()


@pytest.fixture(scope="module")
def shipped():
    """The default model folder shipped in data/models (embed tests)."""
    from kgsearch.embed.model import resolve_model

    p = resolve_model(None)
    if p is None:
        pytest.skip("shipped model missing")
    return p
