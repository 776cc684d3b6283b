"""Every ``from kgsearch... import name`` in the benchmark commands (bench/*.py) names something
that exists: a restructure once left ``bench/index_bench.py --worker`` importing a constant from
a package that no longer had it, and nothing ran that path."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _imports():
    for path in sorted(BENCH.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kgsearch" \
                    and node.level == 0:
                for alias in node.names:
                    yield pytest.param(node.module, alias.name, id=f"{path.name}:{node.lineno}:{alias.name}")


@pytest.mark.parametrize("module,name", list(_imports()))
def test_bench_imports_exist(module, name):
    mod = importlib.import_module(module)
    if not hasattr(mod, name):
        importlib.import_module(f"{module}.{name}")          # a submodule
