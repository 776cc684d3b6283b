"""Plain records passed between loaders, the indexer and the derived-data steps."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

# nodes.flags bits
FLAG_AUTO = 1          # shared node made by edge resolution (tag, entity, placeholder); no owning file
FLAG_TEST = 2          # test code
FLAG_PLACEHOLDER = 4   # link target that does not exist (yet)
FLAG_VENDORED = 8     # code copied from another project or generated (vendor/, *.min.js, "DO NOT EDIT")
FLAG_DECLARED_TEST = 16   # FLAG_TEST set by the indexer: a file another declares test-only (Rust
                          # `#[cfg(test)] mod x;`, kgsearch.indexer.testdecl), not by its loader
FLAG_PART = 32         # a part of a code definition's text past the loader's cap (kind "chunk", key
                      # PART_KEY: its definition's key + "#part<n>"): every line of a long function
                      # searchable; it counts as its definition (file grouping, symbols, context)
PART_KEY = "#part"


def part_owner(key: str) -> str:
    """The key of the definition a part's key (``FLAG_PART``) belongs to: the key before its last
    ``#part<n>`` (a definition key never ends so: the ``#2`` of a second definition is digits).

    >>> part_owner("rs:src/app.rs:build_app#part3"), part_owner("py:pkg.mod.f#2#part2")
    ('rs:src/app.rs:build_app', 'py:pkg.mod.f#2')
    """
    return key.rpartition(PART_KEY)[0] or key


_TYPE_SEP = re.compile(r"[\s\-]+")


def type_name(value: object, default: str = "") -> str:
    """A node kind or edge type as the index keeps it: lower case, runs of spaces and dashes
    made ``_`` (a KG's ``"Depends On"`` is ``depends_on``, ``"Machine Design"``
    ``machine_design``); ``default`` when nothing is left.

    >>> type_name("Depends On"), type_name("/film/film/genre"), type_name(" ", "relates_to")
    ('depends_on', '/film/film/genre', 'relates_to')
    """
    s = _TYPE_SEP.sub("_", str(value).strip().lower()) if value is not None else ""
    return s or default


def resolve_types(given: Iterable[str], known: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(names, unknown)``: each given type as the index has it (itself, else its
    :func:`type_name`: ``--types "Depends On"`` is ``depends_on``), and the given ones it has in
    neither form."""
    have = set(known)
    names, unknown = [], []
    for t in given:
        if t in have:
            names.append(t)
        elif type_name(t) in have:
            names.append(type_name(t))
        else:
            unknown.append(t)
    return list(dict.fromkeys(names)), unknown


@dataclass(slots=True)
class NodeRec:
    """A node as a loader emits it. ``key`` is unique in the index and stable across reindexing."""

    key: str
    kind: str
    name: str
    text: str = ""
    qualname: str = ""
    line_start: int | None = None
    line_end: int | None = None
    parent: str | None = None          # key of the containing node (loader also emits the `contains` edge)
    flags: int = 0
    props: dict[str, Any] = field(default_factory=dict)
    aliases: list[tuple[str, str]] = field(default_factory=list)   # (ns, name) this node answers to


# The edge type from a method defined outside its type's declaration (a Go method in another file
# of the type's package, a C++ out-of-line ``Cls::f`` in another file than ``class Cls``) to the
# type: the loader names the type, the indexer picks its node (kgsearch.indexer.edges,
# EdgeResolver.resolve_members); the method's container stays its file (one ``contains`` parent)
MEMBER_OF = "member_of"


@dataclass(slots=True)
class EdgeRec:
    """A typed directed edge. ``dst`` is resolved in namespace ``ns`` (see docs/DESIGN.md)."""

    src: str                 # key of a node emitted by the same file (or any existing key)
    dst: str                 # name to resolve in ``ns``
    type: str
    ns: str = "key"
    weight: float = 1.0
    line: int | None = None
    props: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoadResult:
    nodes: list[NodeRec] = field(default_factory=list)
    edges: list[EdgeRec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class LoadOptions:
    fmt: str | None = None           # forced loader name (--format)
    allow_dangling: bool = False
    max_chunk_chars: int = 1500
    root: str = ""                   # indexed root (absolute) the file was found under
    explicit: bool = False           # the user named this file, not found by walking


@dataclass
class ChangeSet:
    """What an index run changed, for derived-data steps.

    ``old`` maps node id -> (name, text) as it was before this run, for every modified or
    removed node, so that postings can be retracted without a forward index.
    """

    generation: int
    added: list[int] = field(default_factory=list)
    modified: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    old: dict[int, tuple[str, str]] = field(default_factory=dict)
    edges_changed: bool = False
    full: bool = False               # rebuild derived data from scratch

    @property
    def nodes_changed(self) -> bool:
        return bool(self.added or self.modified or self.removed)

    @property
    def any(self) -> bool:
        return self.nodes_changed or self.edges_changed or self.full
