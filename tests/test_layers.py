"""The package's structure, checked: imports flow one way (cli -> server -> apps -> query/indexer ->
fuse/pack -> text/embed/graph/ingest -> store -> base), signal packages never import
each other, no package's modules import each other in a circle, no module imports another
module's private (``_name``) names, nothing is imported through a string, and ``kgsearch --help``
imports neither the engines nor numpy. Packages are cut by concept, not by size: a module is as
long as its concept (docs/DESIGN.md lists every module and says why it is where it is)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "kgsearch"

# (layer, top-level parts of kgsearch): a module may import its own package and lower layers
LAYERS = [
    ("base", {"version", "errors", "types", "environment", "config", "settings", "codelike", "budget", "cjk", "jsonable",
              "arrays", "lines", "numerals"}),
    ("store", {"store"}),
    ("signals", {"ingest", "text", "embed", "graph"}),
    ("shaping", {"fuse", "pack", "stats", "explore"}),
    ("engines", {"query", "indexer"}),
    ("apps", {"evaluate", "bench", "demo", "context", "export", "watch"}),
    ("server", {"mcp", "serve"}),      # the MCP and HTTP servers: above context, below the command line
    ("cli", {"cli", "__main__", "__init__"}),
]
LAYER_OF = {part: i for i, (_, parts) in enumerate(LAYERS) for part in parts}
APART = {"signals", "engines"}     # parts of these layers never import each other

# Violations of the cycle and private-name checks left in the query side (query/, cli/, mcp/,
# context/, intent.py, codetask.py, codelike.py, ingest/pycode.py), which branch `query` owns;
# the lead empties this after merging it. Each entry: "importer -> imported name". Empty: every
# module passes today.
ALLOWED: set[str] = set()


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        parts = list(rel.with_suffix("").parts)
        yield path, rel, parts


def _dotted(parts: list[str]) -> str:
    """``kgsearch.a.b`` for a module's parts (a package's ``__init__`` is the package)."""
    return ".".join(["kgsearch"] + (parts[:-1] if parts[-1] == "__init__" else parts))


MODULES = {_dotted(parts): path for path, _, parts in _modules()}


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


# ---------------------------------------------------------------------------- cycles inside a package
def _module_edges(files) -> dict[str, dict[str, int]]:
    """importer -> {imported kgsearch module: first line}, for ``files`` = [(path, parts)]; an
    import of a name from a module counts as an import of that module (function-level imports
    too: a cycle hidden inside a function is still a cycle)."""
    known = {_dotted(parts) for _, parts in files} | set(MODULES)
    out: dict[str, dict[str, int]] = {}
    for path, parts in files:
        me = _dotted(parts)
        edges = out.setdefault(me, {})
        for line, target in _imports(path, parts):
            while target not in known and "." in target:      # a name imported from a module
                target = target.rsplit(".", 1)[0]
            if target != me:
                edges.setdefault(target, line)
    return out


def _package(dotted: str) -> str:
    """The package a module belongs to for the cycle check: its top-level part of kgsearch
    (``text``, ``graph``, ...: subpackages included), or ``kgsearch`` for a top-level module."""
    top = _top(dotted)
    return top if (PKG / top).is_dir() else "kgsearch"


def _package_cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules of the same package (:func:`_package`),
    by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if _package(w) != _package(v):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _cycle_lines(group: list[str], edges: dict[str, dict[str, int]]) -> str:
    inside = set(group)
    return "; ".join(f"{a} -> {b} (line {ln})" for a in group for b, ln in sorted(edges.get(a, {}).items())
                     if b in inside)


def test_no_import_cycle_inside_a_package():
    edges = _module_edges([(path, parts) for path, _, parts in _modules()])
    bad = [_cycle_lines(g, edges) for g in _package_cycles(edges)]
    bad = [b for b in bad if b not in ALLOWED]
    assert not bad, "modules that import each other in a circle (cut along the concept):\n" + "\n".join(bad)


def test_the_cycle_check_catches_a_cycle_behind_a_function_level_import(tmp_path):
    (tmp_path / "a.py").write_text("from .b import f\n")
    (tmp_path / "b.py").write_text("def f():\n    from . import a\n")
    (tmp_path / "c.py").write_text("from . import a\n")
    files = [(tmp_path / f"{m}.py", ["text", m]) for m in ("a", "b", "c")]
    cycles = _package_cycles(_module_edges(files))
    assert cycles == [["kgsearch.text.a", "kgsearch.text.b"]]


# ---------------------------------------------------------------------------- private names
def _private_uses(path: Path, parts: list[str], modules=None):
    """(line, "module._name") for every private name of another kgsearch module this file
    imports (``from m import _x``) or reaches (``m._x`` with ``m`` an imported module). A
    private *module* (``pkg/_m.py``) may be used inside its own package."""
    modules = MODULES if modules is None else modules
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _dotted(parts)
    alias: dict[str, str] = {}

    def private(mod: str, name: str) -> bool:
        if not name.startswith("_") or name.startswith("__"):
            return False
        if f"{mod}.{name}" in modules:              # a private module: fine inside its package
            return not me.startswith(mod + ".") and me != mod
        return mod != me

    pkg = ["kgsearch"] + (parts[:-1] if parts[-1] != "__init__" else parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "kgsearch":
                continue
            for a in node.names:
                if f"{mod}.{a.name}" in modules:
                    alias[a.asname or a.name] = f"{mod}.{a.name}"
                if private(mod, a.name):
                    yield node.lineno, f"{mod}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules and a.asname:
                    alias[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in alias:
            if private(alias[node.value.id], node.attr):
                yield node.lineno, f"{alias[node.value.id]}.{node.attr}"


def test_no_module_imports_another_modules_private_names():
    bad = []
    for path, rel, parts in _modules():
        for line, name in _private_uses(path, parts):
            entry = f"{_dotted(parts)} -> {name}"
            if entry not in ALLOWED:
                bad.append(f"{rel}:{line} uses {name} (make it public, or move the code to where it lives)")
    assert not bad, "\n".join(bad)


def test_the_private_check_catches_both_forms(tmp_path):
    f = tmp_path / "b.py"
    f.write_text("from .a import _helper, public\nfrom . import a\n\ndef g():\n    return a._SQL, a.fine, a.__doc__\n")
    found = [n for _, n in _private_uses(f, ["text", "b"], {"kgsearch.text.a", "kgsearch.text.b"})]
    assert found == ["kgsearch.text.a._helper", "kgsearch.text.a._SQL"]


def test_a_private_module_is_usable_inside_its_package(tmp_path):
    inside = list(_private_uses(PKG / "embed" / "tokenizers" / "normalizer.py", ["embed", "tokenizers", "normalizer"]))
    assert inside == []
    f = tmp_path / "x.py"
    f.write_text("from ..embed import _unicode_table\n")
    assert [n for _, n in _private_uses(f, ["text", "x"])] == ["kgsearch.embed._unicode_table"]


# ---------------------------------------------------------------------------- strings, startup
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


@pytest.mark.parametrize("name", ["kgsearch.query.engine", "kgsearch.indexer", "kgsearch.context", "kgsearch.mcp"])
def test_cli_help_does_not_import_the_engines(name):
    """``kgsearch --help`` on a phone: the CLI imports a command's code when it runs (it reads
    the intent and channel registries of kgsearch.query, which import no engine)."""
    import subprocess
    import sys

    code = ("import sys, kgsearch.cli; "
            f"print({name!r} in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_a_search_imports_no_loader(tmp_path):
    """A cold ``kgsearch search`` imported every loader (C, Go, Java, JS, Python, Markdown, KG...)
    because the query path reads ``ingest.langspec`` and the ingest package's ``__init__`` held
    the loader registry: ~20 ms of each one-shot search here, several times that on a phone. The
    registry is :mod:`kgsearch.ingest.loaders` now; a search imports the frame patterns only."""
    import subprocess
    import sys

    note = tmp_path / "v" / "a.md"
    note.parent.mkdir()
    note.write_text("# Backup\n\nCopy `sync_disk()` every night; it failed at src/x.py:12.\n", encoding="utf-8")
    db = tmp_path / "i.db"
    from kgsearch.indexer import index_paths
    index_paths(db, [str(note.parent)])
    code = ("import sys; from kgsearch.query import search; "
            f"r = search('sync_disk fails at src/x.py:12 Traceback', db={str(db)!r}); assert r.hits; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('kgsearch.ingest'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["kgsearch.ingest", "kgsearch.ingest.langspec"]


def test_a_search_leaves_numpy_ma_unimported(tmp_path):
    """``np.unique(a)`` imports ``numpy.ma`` on its first call under numpy 2 (for
    ``np.ma.is_masked``): 6-20 ms of every cold ``kgsearch search``. The search path takes sorted
    unique ids by one sort (:func:`kgsearch.query.signals.unique_ids`). Under numpy 1.x ``import
    numpy`` imports numpy.ma itself, so the check is: the search imports it no more than numpy does."""
    import subprocess
    import sys

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# Backup\n\nCopy the notes to another disk every night.\n", encoding="utf-8")
    (vault / "b.md").write_text("# Garden\n\nTomatoes and mint on the balcony; see [[a]].\n", encoding="utf-8")
    db = tmp_path / "i.db"
    from kgsearch.indexer import index_paths
    index_paths(db, [str(vault)])
    code = ("import sys, numpy; before = 'numpy.ma' in sys.modules; from kgsearch.query import search; "
            f"r = search('backup the notes to a disk', db={str(db)!r}); assert r.hits; "
            "assert {'bm25', 'dense'} <= set(r.channels_run), r.channels_run; "
            "print(before, 'numpy.ma' in sys.modules)")
    before, after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   check=True).stdout.split()
    assert after == before


def test_the_read_commands_leave_numpy_ma_unimported(tmp_path):
    """The same for the commands an agent or a phone user runs as cold processes over a graph
    with entities and communities (the demo): search (its entity channels took unique (node,
    entity) pairs by ``np.unique(axis=1)``), why, path, communities, related, impact, context."""
    import subprocess
    import sys
    from pathlib import Path

    from kgsearch.indexer import index_paths

    db = tmp_path / "demo.db"
    index_paths(db, [str(Path(__file__).resolve().parent.parent / "data" / "demo")])
    runs = [["search", "how do I back up my notes"], ["search", "who uses git"],
            ["why", "sync fails at night", "md:vault/problems/battery-optimisation"],
            ["path", "kg:syncthing", "kg:bm25"], ["communities"], ["related", "kg:git"],
            ["impact", "kg:git"], ["context", "the sync fails at night", "--budget", "2000"]]
    code = ("import sys, io, contextlib, numpy; before = 'numpy.ma' in sys.modules\n"
            "from kgsearch.cli import main\n"
            f"for args in {runs!r}:\n"
            "    out = io.StringIO()\n"
            "    with contextlib.redirect_stdout(out):\n"
            f"        rc = main(args + ['--db', {str(db)!r}, '-q'])\n"
            "    assert rc == 0 and out.getvalue().strip(), (args, rc)\n"
            "    print(args[0], before, 'numpy.ma' in sys.modules)\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr[-2000:]
    lines = [ln.split() for ln in got.stdout.splitlines()]
    assert len(lines) == len(runs) and all(after == before for _, before, after in lines), lines
