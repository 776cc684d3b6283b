"""KGSEARCH_MEMORY_MB as a kernel limit (kgsearch.budget), in child processes."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kgsearch import budget

CHILD = r"""
import sys
import numpy as np
from kgsearch import budget, environment
environment.configure(environment.from_environ())       # as the CLI does: the library reads no variable
budget.apply()
small = np.ones(8 * 2**20 // 8)                      # well inside the budget
try:
    with budget.guard("graph"):
        big = np.ones(int(sys.argv[1]) * 2**20 // 8)
    print("allocated")
except budget.BudgetExceeded as exc:
    print(exc.code, exc)
"""


def run(mb: str, alloc_mb: int) -> str:
    env = {"KGSEARCH_MEMORY_MB": mb, "PATH": "/usr/bin:/bin"}
    import os
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    p = subprocess.run([sys.executable, "-c", CHILD, str(alloc_mb)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA accounting is Linux's")
def test_over_budget_is_a_one_line_error_naming_the_step():
    out = run("64", 200)
    assert out.startswith("6 step 'graph' needed more memory than KGSEARCH_MEMORY_MB=64 allows; nothing was "
                          "changed. Raise KGSEARCH_MEMORY_MB")
    assert "\n" not in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA accounting is Linux's")
def test_within_budget_allocates():
    assert run("256", 100) == "allocated"


def test_bad_values_say_what_to_set():
    assert budget.budget_bytes({}) is None
    assert budget.budget_bytes({"KGSEARCH_MEMORY_MB": "300"}) == 300 * 2**20
    with pytest.raises(ValueError, match=r"KGSEARCH_MEMORY_MB='lots' is not a number of MiB in ASCII digits; set e.g."):
        budget.budget_bytes({"KGSEARCH_MEMORY_MB": "lots"})
    with pytest.raises(ValueError, match="must be positive"):
        budget.budget_bytes({"KGSEARCH_MEMORY_MB": "0"})


def test_need_refuses_before_allocating_and_share_only_shrinks():
    env = {"KGSEARCH_MEMORY_MB": "100000"}
    budget.need("graph", 10 * 2**20, env)                      # fits: no error
    budget.need("graph", 10**15, {})                            # no budget: nothing checked
    with pytest.raises(budget.BudgetExceeded) as info:
        budget.need("graph", 10**15, env)
    assert info.value.code == 6 and isinstance(info.value, MemoryError)
    assert str(info.value).startswith("step 'graph' needs about ")
    assert "KGSEARCH_MEMORY_MB=100000 leaves" in str(info.value) and "nothing was changed" in str(info.value)
    assert budget.share(0.25, 64 << 20, {}) == 64 << 20
    assert budget.share(0.25, 64 << 20, {"KGSEARCH_MEMORY_MB": "100"}) == 25 << 20
    assert budget.share(0.25, 64 << 20, {"KGSEARCH_MEMORY_MB": "4000"}) == 64 << 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA accounting is Linux's")
def test_the_cli_limit_is_undone_when_the_command_returns(monkeypatch):
    import resource

    before = resource.getrlimit(resource.RLIMIT_DATA)
    monkeypatch.setenv("KGSEARCH_MEMORY_MB", "4000")
    from kgsearch.cli import main
    assert main(["stats", "--db", "/nonexistent/dir/i.db"]) == 4
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


def test_the_vector_cache_fits_the_budget(kg_env):
    from kgsearch.embed import dense

    kg_env(vec_cache_mb=None, memory_mb=None)
    assert dense.cache_budget() == 64 << 20
    kg_env(memory_mb="100")
    assert dense.cache_budget() == 25 << 20
    kg_env(vec_cache_mb="8")              # an explicit cache size wins
    assert dense.cache_budget() == 8 << 20


def test_the_query_page_cache_fits_the_budget(ix, kg_env):
    from kgsearch.query import Engine

    from kgsearch.query.memory import QUERY_PAGE_CACHE_KIB

    assert ix.conn.execute("PRAGMA cache_size").fetchone()[0] == -16000         # an index run's
    Engine(ix)
    assert ix.conn.execute("PRAGMA cache_size").fetchone()[0] == -QUERY_PAGE_CACHE_KIB == -2048
    kg_env(memory_mb="30")
    Engine(ix)
    assert ix.conn.execute("PRAGMA cache_size").fetchone()[0] == -1536          # 5 % of 30 MiB


def test_the_graph_is_left_out_when_it_cannot_fit_and_the_answer_says_so(tmp_path, kg_env):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\nalpha links [[b]]\n", encoding="utf-8")
    (root / "b.md").write_text("# Bravo\nbravo text\n", encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions())
    with Index.open(db, readonly=True) as ix:
        r = Engine(ix).search("alpha", SearchOptions(use_cache=False))
        assert "graph" in r.channels_run
        kg_env(memory_mb="1")             # less than the process holds already
        r = Engine(ix).search("alpha", SearchOptions(use_cache=False))
    assert "graph" not in r.channels_run and r.hits[0].name == "a"
    assert r.channels_skipped["graph"].startswith("over the memory budget (the graph needs 0 MiB, "
                                                  "KGSEARCH_MEMORY_MB=1 leaves 0; raise KGSEARCH_MEMORY_MB)")


def test_fixed_mmap_threshold_is_set_on_glibc_only():
    import platform

    from kgsearch import budget

    assert budget.fixed_mmap_threshold() is (platform.libc_ver()[0] == "glibc")
