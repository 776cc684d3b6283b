"""The environment is read once, by the CLI (kgsearch.environment): the library sees only what it
was given, so the same call answers the same whatever the shell exported."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kgsearch import environment
from kgsearch.environment import VARIABLES, Environment, from_environ

PKG = Path(__file__).resolve().parents[1] / "kgsearch"
# modules allowed to look at os.environ, and why
READERS = {
    "environment.py": "the one reader of the KGSEARCH_* variables",
    "config.py": "XDG_DATA_HOME / XDG_CONFIG_HOME: the platform's folders, like ~",
    "bench.py": "device detection for the benchmark report (PREFIX, QEMU_*) and the child's environment",
}


def test_the_eight_variables():
    assert sorted(VARIABLES.values()) == sorted(
        ["KGSEARCH_DB", "KGSEARCH_CONFIG", "KGSEARCH_DATA", "KGSEARCH_MODEL", "KGSEARCH_MEMORY_MB",
         "KGSEARCH_VEC_CACHE_MB", "KGSEARCH_EQUIVALENCES", "KGSEARCH_STRICT"])
    env = from_environ({"KGSEARCH_DB": "/d/i.db", "KGSEARCH_CONFIG": "/c.json", "KGSEARCH_DATA": "/data",
                        "KGSEARCH_MODEL": "m", "KGSEARCH_MEMORY_MB": "300", "KGSEARCH_VEC_CACHE_MB": "8",
                        "KGSEARCH_EQUIVALENCES": "/eq.json", "KGSEARCH_STRICT": "1", "HOME": "/h"})
    assert env == Environment("/d/i.db", "/c.json", "/data", "m", "300", "8", "/eq.json", True)
    assert from_environ({}) == Environment()
    assert from_environ({"KGSEARCH_STRICT": "0", "KGSEARCH_MODEL": ""}) == Environment()


def test_no_library_module_reads_the_environment():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                found.append(rel)
    assert found and set(found) <= set(READERS), sorted(set(found) - set(READERS))


def test_the_library_ignores_what_the_shell_exported(monkeypatch, tmp_path):
    from kgsearch.config import default_db_path, data_home

    monkeypatch.setenv("KGSEARCH_DB", str(tmp_path / "from-env.db"))
    monkeypatch.setattr(environment, "_current", Environment())
    assert default_db_path() == data_home() / "index.db"
    monkeypatch.setattr(environment, "_current", from_environ())
    assert default_db_path() == tmp_path / "from-env.db"


def test_the_cli_reads_it_for_one_command_and_restores(tmp_path, capsys):
    from kgsearch.cli import main

    before = environment.current()
    db = tmp_path / "env.db"
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "a.md").write_text("# A\n\nalpha\n")
    assert main(["index", str(tmp_path / "n"), "-q", "--no-embed"], environ={"KGSEARCH_DB": str(db)}) == 0
    assert db.exists() and environment.current() is before
    capsys.readouterr()
    assert main(["stats", "--json"], environ={"KGSEARCH_DB": str(db)}) == 0
    assert str(db) in capsys.readouterr().out


def test_a_bad_budget_value_is_a_usage_error(capsys):
    from kgsearch.cli import main

    assert main(["stats", "--db", "/nonexistent/x.db"], environ={"KGSEARCH_MEMORY_MB": "lots"}) == 2
    assert "KGSEARCH_MEMORY_MB='lots' is not a number of MiB" in capsys.readouterr().err


@pytest.mark.parametrize("strict", [True, False])
def test_the_engine_takes_strict_from_the_configured_environment(tmp_path, monkeypatch, strict):
    from kgsearch.query import Engine
    from kgsearch.store.db import Index

    monkeypatch.setattr(environment, "_current", Environment(strict=strict))
    with Index.open(tmp_path / "i.db") as ix:
        assert Engine(ix).strict is strict and Engine(ix, strict=not strict).strict is (not strict)
