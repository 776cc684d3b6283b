"""The one mechanism for optional test libraries (tests/conftest.py: need, hypothesis_api):
missing means skipped with a reason, or failed under KGSEARCH_REQUIRE_ORACLES=1; and a run
without hypothesis (or any other oracle) still loads every test module."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from conftest import need

ROOT = Path(__file__).resolve().parents[1]
ORACLES = ["hypothesis", "networkx", "rank_bm25", "snowballstemmer", "model2vec", "tokenizers", "safetensors",
           "psutil", "scipy", "tree_sitter"]
# a pytest run in which the oracles cannot be imported (as on a phone with numpy + pytest only)
BLOCKED = ("import sys\nfor m in {mods!r}:\n    sys.modules[m] = None\nimport pytest\n"
           "sys.exit(pytest.main(sys.argv[1:]))\n")


def run_without_oracles(*args, require=False):
    env = {k: v for k, v in os.environ.items() if k != conftest.REQUIRE_ORACLES}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"        # hypothesis' own pytest plugin imports it
    if require:
        env[conftest.REQUIRE_ORACLES] = "1"
    return subprocess.run([sys.executable, "-c", BLOCKED.format(mods=ORACLES), "-p", "no:cacheprovider",
                           "-o", "addopts=", "-q", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_need_returns_the_module():
    import json
    assert need("json") is json


def test_missing_module_skips_with_what_to_install(monkeypatch):
    monkeypatch.delenv(conftest.REQUIRE_ORACLES, raising=False)
    with pytest.raises(pytest.skip.Exception) as e:
        need("kgsearch_no_such_oracle")
    assert str(e.value) == ("kgsearch_no_such_oracle is not installed (import failed: No module named "
                            "'kgsearch_no_such_oracle'); pip install -e '.[test]'")


def test_missing_module_fails_when_oracles_are_required(monkeypatch):
    monkeypatch.setenv(conftest.REQUIRE_ORACLES, "1")
    with pytest.raises(pytest.fail.Exception) as e:
        need("kgsearch_no_such_oracle")
    assert str(e.value).startswith("KGSEARCH_REQUIRE_ORACLES=1 but kgsearch_no_such_oracle is not installed")


def test_missing_program(monkeypatch):
    monkeypatch.delenv(conftest.REQUIRE_ORACLES, raising=False)
    monkeypatch.setattr(conftest, "PROGRAMS", ("kgsearch-no-such-program",))
    with pytest.raises(pytest.skip.Exception, match="kgsearch-no-such-program is not installed .program not found"):
        need("kgsearch-no-such-program")
    monkeypatch.setenv(conftest.REQUIRE_ORACLES, "1")
    with pytest.raises(pytest.fail.Exception):
        need("kgsearch-no-such-program")


def test_every_module_loads_without_the_oracles():
    r = run_without_oracles("--collect-only", "tests")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.fullmatch(r"\d+ tests collected in [\d.]+s", r.stdout.splitlines()[-1]), r.stdout[-3000:]
    # the @given tests are collected (as stand-ins), next to the module's other tests
    assert "tests/text/test_postings_codec.py::test_ids_round_trip_random" in r.stdout
    assert "tests/test_pipeline.py::test_no_query_makes_the_pipeline_raise" in r.stdout


def test_given_tests_skip_and_the_rest_run_without_hypothesis():
    r = run_without_oracles("-rs", "tests/text/test_postings_codec.py")
    assert r.returncode == 0, r.stdout[-3000:]
    tail = r.stdout.strip().splitlines()[-1]
    assert tail.startswith("21 passed, 4 skipped"), r.stdout[-3000:]
    assert r.stdout.count("hypothesis is not installed") == 1           # one summary line for the 4
    assert "SKIPPED [4]" in r.stdout


def test_given_tests_fail_without_hypothesis_when_oracles_are_required():
    r = run_without_oracles("tests/text/test_postings_codec.py", require=True)
    assert r.returncode == 1
    assert r.stdout.strip().splitlines()[-1].startswith("4 failed, 21 passed"), r.stdout[-3000:]
    assert "KGSEARCH_REQUIRE_ORACLES=1 but hypothesis is not installed" in r.stdout


def test_without_numpy_every_command_says_how_to_install_it(tmp_path):
    """numpy is the one library kgsearch needs: a Python without it (a Termux install that missed
    `pkg install python-numpy`) got "internal error ... please report it" from every command."""
    (tmp_path / "n.md").write_text("# Note\n\nbody\n")
    code = ("import sys\nsys.modules['numpy'] = None\nfrom kgsearch.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    for args in (["index", str(tmp_path), "--db", str(tmp_path / "i.db")], ["search", "x", "--db", str(tmp_path / "i.db")]):
        p = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert (p.returncode, p.stderr) == (1, f"error: kgsearch needs numpy, which {sys.executable} cannot import: on "
                                               f"Termux `pkg install python-numpy`, elsewhere `{sys.executable} -m pip "
                                               "install numpy`\n"), args
    assert not (tmp_path / "i.db").exists()                     # nothing was written
    p = subprocess.run([sys.executable, "-c", code, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and "usage: kgsearch" in p.stdout          # help needs no numpy
