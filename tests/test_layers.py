"""The package's structure, checked: imports flow one way (cli -> server -> apps -> query/indexer ->
intent/fuse/pack -> text/embed/graph/ingest -> store -> base), signal packages never import
each other, nothing is imported through a string, and modules stay readable in size."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "kgsearch"

# (layer, top-level parts of kgsearch): a module may import its own package and lower layers
LAYERS = [
    ("base", {"version", "errors", "types", "config", "settings", "codelike", "budget", "cjk"}),
    ("store", {"store"}),
    ("signals", {"ingest", "text", "embed", "graph"}),
    ("shaping", {"intent", "codetask", "fuse", "pack", "stats"}),
    ("engines", {"query", "indexer"}),
    ("apps", {"evaluate", "bench", "demo", "context"}),
    ("server", {"mcp"}),               # the MCP server: above context, below the command line
    ("cli", {"cli", "__main__", "__init__"}),
]
LAYER_OF = {part: i for i, (_, parts) in enumerate(LAYERS) for part in parts}
MAX_LINES = 420                    # "about 400"
APART = {"signals", "engines"}     # parts of these layers never import each other
GENERATED = {"embed/_unicode_table.py"}


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        parts = list(rel.with_suffix("").parts)
        yield path, rel, parts


def _imports(path: Path, parts: list[str]):
    """(line, dotted kgsearch module) for every import in the file, function-level ones too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = ["kgsearch"] + (parts if parts[-1] == "__init__" else parts[:-1])
    if parts[-1] == "__init__":
        pkg = ["kgsearch"] + parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "kgsearch":
                    yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "kgsearch":
                continue
            if node.module is None or mod == "kgsearch":      # from . import a, b: each is a module
                for a in node.names:
                    yield node.lineno, f"{mod}.{a.name}"
            else:
                yield node.lineno, mod


def _top(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_has_a_layer():
    missing = sorted({parts[0] for _, _, parts in _modules() if parts[0] not in LAYER_OF})
    assert not missing, f"give these a layer in tests/test_layers.py: {missing}"


def test_imports_flow_down_and_signal_packages_stay_apart():
    bad = []
    for path, rel, parts in _modules():
        own = parts[0]
        for line, target in _imports(path, parts):
            top = _top(target)
            if top == own:
                continue
            if top not in LAYER_OF:
                bad.append(f"{rel}:{line} imports {target}: unknown part of kgsearch")
            elif LAYER_OF[top] > LAYER_OF[own]:
                bad.append(f"{rel}:{line} imports {target}: a layer above ({LAYERS[LAYER_OF[top]][0]})")
            elif LAYER_OF[top] == LAYER_OF[own] and LAYERS[LAYER_OF[own]][0] in APART:
                bad.append(f"{rel}:{line} imports {target}: same layer ({LAYERS[LAYER_OF[own]][0]}), another part")
    assert not bad, "\n".join(bad)


def test_the_checker_catches_an_upward_import(tmp_path):
    """The check above can fail: a store module importing the query engine is flagged."""
    f = tmp_path / "db.py"
    f.write_text("from ..query import Engine\n\ndef g():\n    from kgsearch.text import bm25\n")
    found = [t for _, t in _imports(f, ["store", "db"])]
    assert found == ["kgsearch.query", "kgsearch.text"]
    assert all(LAYER_OF[_top(t)] > LAYER_OF["store"] for t in found)


def test_nothing_is_imported_through_a_string():
    bad = []
    for path, rel, parts in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if name in ("import_module", "__import__", "find_spec"):
                    bad.append(f"{rel}:{node.lineno} {name}()")
    assert not bad, bad


def test_modules_stay_readable():
    long = [f"{rel} ({n} lines)" for path, rel, _ in _modules()
            if str(rel) not in GENERATED and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, f"split these along their seams: {long}"


@pytest.mark.parametrize("name", ["kgsearch.query", "kgsearch.indexer", "kgsearch.context", "kgsearch.mcp"])
def test_cli_help_does_not_import_the_engines(name):
    """``kgsearch --help`` on a phone: the CLI imports a command's code when it runs."""
    import subprocess
    import sys

    code = ("import sys, kgsearch.cli; "
            f"print({name!r} in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
