"""Every ``from kgsearch... import name`` in the benchmark commands and studies (bench/*.py,
bench/studies/*.py) names something that exists: a restructure once left ``bench/index_bench.py
--worker`` importing a constant from a package that no longer had it, and nothing ran that path.
And the studies use kgsearch's public API only: no ``_private`` name of a kgsearch module, so a
change inside a module cannot silently break a study that nobody runs every day."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
FILES = sorted(BENCH.glob("*.py")) + sorted((BENCH / "studies").glob("*.py"))


def _imports():
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kgsearch" \
                    and node.level == 0:
                for alias in node.names:
                    yield pytest.param(node.module, alias.name,
                                       id=f"{path.relative_to(BENCH)}:{node.lineno}:{alias.name}")


@pytest.mark.parametrize("module,name", list(_imports()))
def test_bench_imports_exist(module, name):
    mod = importlib.import_module(module)
    if not hasattr(mod, name):
        importlib.import_module(f"{module}.{name}")          # a submodule


def _private_uses(path: Path):
    """``from kgsearch.x import _y`` and ``m._y`` where ``m`` is a kgsearch module imported here."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kgsearch":
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    yield node.lineno, f"{node.module}.{a.name}"
                modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "kgsearch":
                    modules.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                yield node.lineno, ast.unparse(node)


def test_studies_use_the_public_api_only():
    bad = [f"{path.relative_to(BENCH)}:{line} {name}" for path in sorted((BENCH / "studies").glob("*.py"))
           for line, name in _private_uses(path)]
    assert not bad, "\n".join(bad)


def test_the_private_check_can_fail(tmp_path):
    f = tmp_path / "s.py"
    f.write_text("from kgsearch.evaluate import _read_jsonl\nfrom kgsearch.query import engine as e\n"
                 "x = e._Clock.lap\n")
    assert [n for _, n in _private_uses(f)] == ["kgsearch.evaluate._read_jsonl", "e._Clock"]
