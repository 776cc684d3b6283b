"""Rust paths: ``use`` trees, the crate a file belongs to, the type an ``impl`` is for
(:mod:`kgsearch.ingest.rscode` builds the names from these)."""
from __future__ import annotations

import posixpath
import re

from .codescan import find_up

__all__ = ["expand_use", "crate_of", "path_of", "type_name"]

_CARGO_NAME = re.compile(r"^\s*\[package\][^\[]*?^\s*name\s*=\s*\"([^\"]+)\"", re.M | re.S)
_REFS = re.compile(r"^(?:&\s*(?:'\w+\s*)?(?:mut\s+)?|dyn\s+|impl\s+|\*\s*(?:const|mut)\s+)+")
_CARGO: dict[str, tuple[int, str]] = {}


def expand_use(tree: str) -> list[tuple[list[str], str | None]]:
    """A ``use`` tree (whitespace removed) -> (path, name bound or ``None`` for a glob).

    >>> expand_use("a::{b,c::{self,d as e},f::*}")
    [(['a', 'b'], 'b'), (['a', 'c'], 'c'), (['a', 'c', 'd'], 'e'), (['a', 'f'], None)]
    """
    out: list[tuple[list[str], str | None]] = []

    def walk(s: str, prefix: list[str]) -> None:
        brace = s.find("{")
        if brace >= 0 and (s.find(" as ") < 0 or s.find(" as ") > brace):
            head = [p for p in s[:brace].split("::") if p]
            body = s[brace + 1:s.rfind("}")] if "}" in s else s[brace + 1:]
            depth, start = 0, 0
            for i, ch in enumerate(body):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    part = body[start:i].strip()
                    if part:
                        walk(part, prefix + head)
                    start = i + 1
            part = body[start:].strip()
            if part:
                walk(part, prefix + head)
            return
        name, _, alias = s.partition(" as ")
        path = prefix + [p for p in name.split("::") if p]
        if not path:
            return
        if path[-1] == "*":
            out.append((path[:-1], None))
        elif path[-1] == "self":
            out.append((path[:-1], alias.strip() or (path[-2] if len(path) > 1 else None)))
        else:
            out.append((path, alias.strip() or path[-1]))
    walk(tree, [])
    return [(p, n) for p, n in out if p and n != "_"]


def _folder_crate(folder: str) -> str:
    """A crate named after its folder: ``bytes-1.5.0``, ``bytes@291df5acc9`` -> ``bytes``;
    ``tokio-macros`` -> ``tokio_macros``."""
    base = re.sub(r"(?:@.*|-\d+(?:\.\d+)*(?:[-+].*)?)$", "", folder)
    return re.sub(r"\W", "_", base.replace("-", "_")) or "crate"


def crate_of(path, root: str) -> tuple[str, str]:
    """(crate name, crate folder relative to the root).

    The nearest ``Cargo.toml``'s package name; without one (a tree copied without its
    manifests), the nearest folder laid out as Cargo lays out a crate (``src/lib.rs`` or
    ``src/main.rs`` in it) is a crate named after the folder, so a workspace's members
    (``tokio/``, ``tokio-macros/``) stay apart and answer to ``tokio_macros::test``; else the
    root folder's name."""
    f = find_up(path, root, ("Cargo.toml",)) if root else None
    if f is None:
        lay = find_up(path, root, ("src/lib.rs", "src/main.rs")) if root else None
        rel_dir = posixpath.relpath(lay.parent.parent.as_posix(), root) if lay is not None else "."
        if rel_dir != ".":
            return _folder_crate(posixpath.basename(rel_dir)), rel_dir
        return (_folder_crate(posixpath.basename(root.rstrip("/"))) if root else "crate"), ""
    try:
        st = f.stat()
        got = _CARGO.get(str(f))
        if got is None or got[0] != st.st_mtime_ns:
            got = _CARGO[str(f)] = (st.st_mtime_ns, f.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return "crate", ""
    m = _CARGO_NAME.search(got[1])
    rel_dir = posixpath.relpath(f.parent.as_posix(), root)
    name = m.group(1) if m else f.parent.name
    return name.replace("-", "_"), ("" if rel_dir == "." else rel_dir)


def path_of(t: str) -> list[str]:
    t = re.sub(r"<.*", "", t.strip()).strip()
    t = re.sub(r"^(?:dyn|impl|&|mut|\s|'\w+)+", "", t).strip()
    return [p for p in t.split("::") if p]


def type_name(t: str) -> str:
    """The name an ``impl`` block gets from its type: the last path component without generic
    arguments (``&'a mut foo::Bar<T>`` -> ``Bar``); a slice, array or tuple type as written."""
    t = _REFS.sub("", t.strip())
    if t[:1] in "[(":
        return re.sub(r"\s+", " ", t)
    while True:
        s = re.sub(r"<[^<>]*>", "", t)
        if s == t:
            break
        t = s
    m = re.search(r"(\w+)\s*$", t)
    return m.group(1) if m else ""
