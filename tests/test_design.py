"""docs/DESIGN.md is the map of the code: every module under kgsearch/ is named there by its path
(a package's ``__init__.py`` by the package's folder), so a new module cannot land without saying
where it belongs and why. And the library holds no prototype: studies and prototypes live in
bench/studies/ (tests/bench/test_imports.py keeps them on the public API)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "kgsearch"
DESIGN = ROOT / "docs" / "DESIGN.md"


def _names(text: str) -> set[str]:
    """Every path-like token of the document (``graph/stored/policy.py``, ``text/neighbors/``)."""
    return set(re.findall(r"[\w./]+", text))


def _missing(text: str) -> list[str]:
    names = _names(text)
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if path.name == "__init__.py" and path.parent != PKG:
            want = rel[: -len("__init__.py")]                     # the package: "text/neighbors/"
        else:
            want = rel
        if want not in names:
            out.append(want)
    return out


def test_every_module_is_named_in_design_md():
    missing = _missing(DESIGN.read_text(encoding="utf-8"))
    assert not missing, f"name these in docs/DESIGN.md (Layout) with what they are for: {missing}"


def test_the_check_catches_a_module_left_out():
    text = DESIGN.read_text(encoding="utf-8").replace("graph/stored/policy.py", "graph/stored/the-policy")
    assert _missing(text) == ["graph/stored/policy.py"]


# a module calling itself a prototype; not JavaScript's ``X.prototype.m`` or "prototype" as a string, nor C's function "prototypes"
PROTOTYPE = re.compile(r"(?<![.\w'\"])prototype\b(?![.'\"])", re.I)


def _prototypes(text: str) -> list[str]:
    return PROTOTYPE.findall(text)


def test_no_module_is_a_prototype():
    said = [p.relative_to(PKG).as_posix() for p in sorted(PKG.rglob("*.py"))
            if _prototypes(p.read_text(encoding="utf-8"))]
    assert not said, f"move these to bench/studies/ (public API only) or finish them: {said}"


def test_the_prototype_check_tells_a_label_from_code_words():
    assert _prototypes('"""A prototype of the two-stage kernel."""') == ["prototype"]
    assert _prototypes("Prototype: not wired in yet") == ["Prototype"]
    assert not _prototypes("``X.prototype.m = ..`` reads ``X.m``; Prototypes and member declarations")
