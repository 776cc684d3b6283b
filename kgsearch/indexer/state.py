"""What an index run is asked to do (:class:`IndexOptions`), what it reports
(:class:`IndexReport`) and the state its parts share while it runs (:class:`RunState`)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..types import ChangeSet

__all__ = ["IndexOptions", "IndexReport", "RunState", "SKIP_REASONS"]

SKIP_REASONS = ("unreadable", "bad_links", "malformed", "large", "binary", "no_loader", "generated")


@dataclass
class IndexOptions:
    fmt: str | None = None
    allow_dangling: bool = False
    keep_going: bool = False
    full: bool = False                      # reload every file and rebuild derived data
    max_file_bytes: int | None = None        # skip larger files (None: 16 MB, 64 MB for .tsv triples)
    max_chunk_chars: int = 1500
    settings: dict = field(default_factory=dict)   # index settings (kgsearch.settings): stemmer, model, ...
    steps: tuple[str, ...] | None = None     # derived steps to run by name (default: all)
    workers: int | None = None               # loader processes (None: one per core when many files)
    progress: Callable[[dict], None] | None = None
    compact: bool = True                     # VACUUM after the run when due (Index.compact_if_sparse)


@dataclass
class IndexReport:
    db: str = ""
    roots: list[str] = field(default_factory=list)
    files_seen: int = 0
    files_loaded: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    files_failed: int = 0
    nodes_added: int = 0
    nodes_modified: int = 0
    nodes_removed: int = 0
    edges_changed: bool = False
    generation: int = 0
    seconds: float = 0.0
    phases: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    compacted_bytes: int = 0           # the database got this much smaller (VACUUM after the run)
    reread: dict = field(default_factory=dict)     # loader -> unchanged files re-read: that loader changed
    # what the walk and the loaders skipped, by reason (one warning each, but files with no
    # loader): unreadable folders/files, broken or looping symlinks, files that are not what
    # their extension says (malformed JSON/JSONL/CSV met while walking), large files, files
    # that are not text (NUL bytes: binary data, UTF-16 without its byte-order mark) though
    # their extension has a loader, files with no loader
    skipped: dict = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))
    skipped_generated: list[str] = field(default_factory=list)  # the first minified/bundled scripts skipped
    roots_missing: list[str] = field(default_factory=list)      # registered roots not on disk: files kept
    roots_unreadable: list[str] = field(default_factory=list)   # roots that cannot be listed: files kept
    roots_removed: list[str] = field(default_factory=list)      # `kgsearch roots remove`
    created_dirs: list[str] = field(default_factory=list)       # folders made for a new --db, outermost first

    @property
    def partial(self) -> bool:
        """Something named could not be indexed (a file with --keep-going, a root): exit 3."""
        return self.files_failed > 0 or bool(self.roots_missing or self.roots_unreadable)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["partial"] = self.partial
        return d


@dataclass
class RunState:
    """Shared by the planner, the writer, the edge resolver and the steps of one run."""

    ix: object
    opts: IndexOptions
    report: IndexReport
    changes: ChangeSet
    names_changed: dict[str, set[str]] = field(default_factory=dict)   # ns -> names that gained or lost a node
    explicit_files: set[str] = field(default_factory=set)              # files named on the command line
    had_edges: bool = True             # False: an empty index, nothing to re-resolve
    walked_roots: list[str] = field(default_factory=list)             # roots listed this run

    @property
    def conn(self):
        return self.ix.conn

    def emit(self, **event) -> None:
        if self.opts.progress is not None:
            self.opts.progress(event)

    def warn(self, message: str) -> None:
        self.report.warnings.append(message)


def edge_multiset(conn, file_id: int) -> Counter:
    """A file's edges as a multiset (line numbers aside), to tell whether a reload changed them."""
    return Counter(conn.execute("SELECT src, dst, ns, dst_name, type, weight, props FROM edges WHERE file_id=?",
                                (file_id,)))
