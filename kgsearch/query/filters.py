"""Field filters, described once, and the node set they leave (issue 28).

A filter narrows a search to a set of nodes BEFORE ranking: every channel answers its best
nodes inside the set and the graph stage adds only nodes of the set, so ``k`` hits come back
when the set holds ``k`` matches (no top-k cut first and filtered after).

In the query text a filter is a whole word ``[-]field:[op]value`` (``kind:function
-path:tests/ modified:>2026-10-01``); as options they are the same words
(``SearchOptions.filters``), built from the CLI flags, the MCP arguments and the web form
(:data:`FIELDS` describes each once: its flag, its help, its MCP property).

Meaning (values of one field are alternatives, fields all hold, a ``-`` word leaves out):

==========  =====================================================================================
``kind``    the node's kind (``function``, ``class``, ``note``, ``section``...; a KG file's type:
            ``type:Person`` is ``kind:Person``)
``path``    the node's file path relative to its root starts with the value (``src/``); a value
            with ``*``/``?`` is a glob over that path; an absolute value matches absolute paths
``tag``     the node, or the note it is a section of, is tagged ``#value`` (or a nested
            ``#value/...``)
``lang``    the loader that read the node's file (``python``, ``rust``, ``markdown``...; short
            names ``py``, ``rs``, ``md``, ``js``, ``ts`` too)
``modified``  the file's modification day (local time): ``modified:>=2026-10-01`` (also ``>``,
            ``<``, ``<=``, ``:`` for that day); ``7d`` is seven days ago
``root``    the indexed root (its label, or its folder's name; with several indexes, an index name)
==========  =====================================================================================

:func:`allowed_ids` is the SQL that computes the set; :func:`matches` is its slow, obvious
twin over one node's row (the tests compare them on every node). This module imports only
the standard library at load (the CLI builds its flags from :data:`FIELDS`).
"""
from __future__ import annotations

import datetime as _dt
import difflib
import fnmatch
import os
import re
from dataclasses import dataclass

from ..errors import UsageError
from ..lines import quoted
from ..text.tokenize import clean_query
from ..types import type_name
from .cut import cut_query

__all__ = ["FieldFilter", "FILTER_FIELDS", "FIELD_ALIASES", "QUERY_FILTER_WORDS", "reads_filters", "FilterField", "FIELDS", "LANGS", "parse_filter", "parse_filters", "check_query_words",
           "allowed_ids", "allowed_ids_sql", "node_count", "matches", "node_rows", "from_flags", "describe"]


@dataclass(frozen=True)
class FieldFilter:
    """One ``field:value`` term of the query (issue 28): ``-path:tests/`` is
    ``FieldFilter("path", "tests/", negated=True)``, ``modified:>2026-10-01`` has ``op=">"``."""

    field: str
    value: str
    op: str = ":"              # ":" (is / starts with), or ">", ">=", "<", "<=" (modified)
    negated: bool = False

    def __str__(self) -> str:
        return f"{'-' if self.negated else ''}{self.field}:{'' if self.op == ':' else self.op}{self.value}"


FILTER_FIELDS = ("kind", "path", "tag", "lang", "modified", "root")


@dataclass(frozen=True)
class FilterField:
    name: str
    flag: str                       # the CLI flag (and the MCP / form property, without --)
    metavar: str
    help: str
    exclude_flag: str | None = None  # a flag that leaves the matches out (-field:value)
    op: str = ":"                    # the flag's comparison


FIELDS: dict[str, FilterField] = {f.name: f for f in (
    FilterField("kind", "--kind", "KIND", "only nodes of this kind (function, class, note, section...)"),
    FilterField("path", "--path", "PREFIX", "only nodes whose path under its root starts with PREFIX (or matches a "
                "glob with * ?)", exclude_flag="--exclude-path"),
    FilterField("tag", "--tag", "TAG", "only nodes tagged #TAG (a note's sections too; #TAG/sub counts)"),
    FilterField("lang", "--lang", "LANG", "only nodes of files in this language (python, rust, markdown, ...)"),
    FilterField("modified", "--modified-since", "DATE", "only nodes of files modified on or after DATE "
                "(YYYY-MM-DD, local time; or Nd: N days ago)", op=">="),
    FilterField("root", "--root", "LABEL", "only nodes of this indexed root (its label or folder name; with "
                "several --db, an index name)"),
)}
assert tuple(FIELDS) == FILTER_FIELDS
# other names a query word may give a field: a KG file calls a node's kind its "type"
# ("type": "Person"), so `type:Person` is `kind:Person` (it was query text: every kind came back)
FIELD_ALIASES = {"type": "kind"}

# loader names (kgsearch.ingest.loaders.LOADERS; a test keeps them equal) and their short names
LANGS = ("beir", "c", "cpp", "csharp", "go", "java", "javascript", "kg", "kotlin", "markdown", "php", "python", "ruby",
         "rust", "text", "triples", "typescript")
LANG_ALIASES = {"py": "python", "rs": "rust", "md": "markdown", "js": "javascript", "ts": "typescript",
                "c++": "cpp", "golang": "go", "txt": "text",
                "cs": "csharp", "c#": "csharp", "kt": "kotlin", "rb": "ruby"}
_OPS = (">=", "<=", ">", "<")
# (ASCII digits, as every number typed: kgsearch.numerals; \d also matches '٣', which int() reads)
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2})?)?$")
_AGO = re.compile(r"^([0-9]{1,5})d$")
_WORD = re.compile(r"^(-?)([A-Za-z_]+):(>=|<=|>|<)?(.+)$")


def parse_filter(word: str | FieldFilter) -> FieldFilter:
    """One filter word (``kind:function``, ``-path:tests/``, ``modified:>=2026-10-01``), checked:
    an unknown field or a bad value is a :class:`UsageError` naming what is valid."""
    if isinstance(word, FieldFilter):
        f = word
    else:
        m = _WORD.match(str(word).strip())
        if not m:
            raise UsageError(f"bad filter {quoted(word)}: write FIELD:VALUE with a field of {', '.join(FILTER_FIELDS)} "
                             f"(e.g. kind:function, -path:tests/)")
        f = FieldFilter(m.group(2), m.group(4), m.group(3) or ":", m.group(1) == "-")
    if f.field in FIELD_ALIASES:
        f = FieldFilter(FIELD_ALIASES[f.field], f.value, f.op, f.negated)
    if f.field not in FIELDS:
        raise UsageError(f"unknown filter field {quoted(f.field)}; the fields are {', '.join(FILTER_FIELDS)}")
    if not f.value:
        raise UsageError(f"empty filter value in {quoted(f)}; write {f.field}:VALUE")
    if f.op != ":" and f.field != "modified":
        raise UsageError(f"{f.field}: takes no comparison ({f.op}); only modified: does (modified:>=2026-10-01)")
    if f.field == "modified":
        day_start(f.value)
    if f.field == "lang":
        lang = LANG_ALIASES.get(f.value.lower(), f.value.lower())
        if lang not in LANGS:
            raise UsageError(f"unknown language {quoted(f.value)} in {quoted(f)}; choose from {', '.join(LANGS)}")
        f = FieldFilter(f.field, lang, f.op, f.negated)
    if f.field == "tag":
        f = FieldFilter(f.field, f.value.lstrip("#").lower(), f.op, f.negated)
    if f.field == "kind":       # as the loaders store a KG type: "Machine Design" -> machine_design
        f = FieldFilter(f.field, type_name(f.value, f.value), f.op, f.negated)
    return f


def parse_filters(words) -> tuple[FieldFilter, ...]:
    """Filter words or a string of them (``"kind:function -path:tests/"``), checked."""
    if words is None:
        return ()
    if isinstance(words, str):
        words = words.split()
    return tuple(parse_filter(w) for w in words if w)


QUERY_FILTER_WORDS = 20


def reads_filters(text: str) -> bool:
    """Are filter words read from this query text? Only from a query a person types (at most
    :data:`QUERY_FILTER_WORDS` words): a pasted issue or traceback holds ``name:value`` words of
    its own (``sudo chown root:root``, ``path:/etc/x.conf``), which were an unknown-root error or a
    filter keeping nothing; its filters come from the flags or the tool's arguments. The words
    counted are those :func:`kgsearch.query.parse.parse` reads (``clean_query``: a NUL is a space;
    ``cut_query``: a huge query cut), so the text as typed (the engine's word check, several
    indexes' ``root:`` step) and as parsed decide alike."""
    return len(cut_query(clean_query(text))[0].split()) <= QUERY_FILTER_WORDS


def check_query_words(text: str) -> None:
    """A word of the query that looks like a filter with a misspelt field (``kinds:function``,
    ``paths:src/``) is a usage error naming the fields; other ``word:word`` text (``note: foo``,
    ``std::vector``, URLs) is left to the search. Only queries whose filters are read
    (:func:`reads_filters`) are checked."""
    if not reads_filters(text):
        return
    words = text.split()
    for w in words:
        m = _WORD.match(w)
        if not m or m.group(2) in FIELDS or m.group(2) in FIELD_ALIASES or "/" in m.group(4)[:2] or ":" in m.group(4):
            continue
        near = difflib.get_close_matches(m.group(2).lower(), FILTER_FIELDS + tuple(FIELD_ALIASES), n=1, cutoff=0.8)
        if near:
            raise UsageError(f"unknown filter field {quoted(m.group(2))} in {quoted(w)} (did you mean {near[0]}:?); "
                             f"the fields are {', '.join(FILTER_FIELDS)}")


def from_flags(values: dict) -> tuple[FieldFilter, ...]:
    """Filters from flag values ``{"kind": [...], "path": [...], "exclude_path": [...],
    "tag": [...], "lang": [...], "modified_since": "DATE", "root": [...]}`` (missing or None:
    no filter); each a string or a list of strings."""
    out: list[FieldFilter] = []
    for f in FIELDS.values():
        for dest, neg in ((f.flag[2:].replace("-", "_"), False),
                          ((f.exclude_flag or "")[2:].replace("-", "_"), True)):
            if not dest:
                continue
            vals = values.get(dest)
            if vals is None:
                continue
            for v in ([vals] if isinstance(vals, str) else vals):
                if str(v).strip():
                    out.append(parse_filter(FieldFilter(f.name, str(v).strip(), f.op, neg)))
    return tuple(out)


def describe(filters) -> str:
    return " ".join(str(f) for f in filters)


# ------------------------------------------------------------------------------- dates
def day_start(value: str) -> float:
    """Seconds since the epoch at the start of day ``value`` (local time; ``Nd``: N days ago)."""
    m = _AGO.match(value)
    if m:
        d = _dt.date.today() - _dt.timedelta(days=int(m.group(1)))
        return _dt.datetime(d.year, d.month, d.day).timestamp()
    if not _DATE.match(value):
        raise UsageError(f"bad date {quoted(value)} in modified:; write YYYY-MM-DD (e.g. modified:>=2026-10-01) or Nd "
                         f"(N days ago)")
    try:
        t = _dt.datetime.fromisoformat(value.replace(" ", "T"))
    except ValueError:
        raise UsageError(f"bad date {quoted(value)} in modified:; write a real day as YYYY-MM-DD") from None
    try:
        return t.timestamp()
    except (ValueError, OverflowError, OSError):    # a day local time cannot place (0001-01-01: "year 0")
        return (t - _dt.datetime(1970, 1, 1)).total_seconds()


def _bounds(f: FieldFilter) -> tuple[float | None, float | None]:
    """(lowest, highest-exclusive) modification time in seconds that ``f`` keeps."""
    start = day_start(f.value)
    timed = "T" in f.value or " " in f.value
    end = start + (1 if timed else 86400)
    return {":": (start, end), ">=": (start, None), ">": (end, None), "<": (None, start),
            "<=": (None, end)}[f.op]


# ------------------------------------------------------------------------------- roots
def root_paths(ix, value: str) -> list[str] | None:
    """The root paths ``value`` names (label, folder name or path), or None."""
    memo = ix.cached("filters.roots", dict) if hasattr(ix, "cached") else {}
    if value not in memo:
        rows = ix.conn.execute("SELECT path, label FROM roots ORDER BY position").fetchall()
        v = value.rstrip("/")
        # a label names its one root (`roots` shows notes and notes-2: root:notes is the first, not
        # both folders called notes); a folder name or path when no label is the value
        memo[value] = ([p for p, label in rows if label and label == v]
                       or [p for p, label in rows if v in (os.path.basename(p.rstrip("/")), p.rstrip("/"))] or None)
    return memo[value]


def root_labels(ix) -> list[str]:
    return [label or os.path.basename(p.rstrip("/"))
            for p, label in ix.conn.execute("SELECT path, label FROM roots ORDER BY position")]


# ------------------------------------------------------------------------------- the set (SQL)
_REL = "(CASE WHEN substr(f.path, 1, length(f.root) + 1) = f.root || '/' THEN substr(f.path, length(f.root) + 2) " \
       "ELSE f.path END)"
_TAGGED = ("(SELECT e.src FROM edges e JOIN nodes t ON t.id = e.dst WHERE e.type = 'tagged' "
           "AND (t.key = ? OR substr(t.key, 1, ?) = ?))")


def _condition(ix, f: FieldFilter) -> tuple[str, list]:
    """SQL over ``nodes n LEFT JOIN files f`` true for the nodes ``f`` (not negated) keeps."""
    v = f.value
    if f.field == "kind":
        return "n.kind = ?", [v]
    if f.field == "lang":
        return "f.loader = ?", [v]
    if f.field == "path":
        if v.startswith("/"):
            col = "f.path"
        else:
            col, v = _REL, v[2:] if v.startswith("./") else v     # (not lstrip: ./.github/ is .github/)
        if any(c in v for c in "*?["):
            # fnmatch's syntax, as :func:`matches` reads it ([!a] negates, [^a] and an unclosed [
            # are literal), not GLOB's: the function is registered on the connection
            ix.conn.create_function("kgfnmatch", 2, _fnmatch_sql, deterministic=True)
            return f"kgfnmatch({col}, ?)", [v]
        return f"substr({col}, 1, ?) = ?", [len(v), v]
    if f.field == "tag":
        key = "tag:" + v
        return (f"(n.id IN {_TAGGED} OR n.parent_id IN {_TAGGED})", [key, len(key) + 1, key + "/"] * 2)
    if f.field == "modified":
        lo, hi = _bounds(f)
        parts, args = ["f.id IS NOT NULL"], []
        if lo is not None:
            parts.append("f.mtime_ns >= ?")
            args.append(int(lo * 1e9))
        if hi is not None:
            parts.append("f.mtime_ns < ?")
            args.append(int(hi * 1e9))
        return " AND ".join(parts), args
    if f.field == "root":
        paths = root_paths(ix, v)
        if paths is None:
            raise UsageError(f"unknown root {quoted(v)} in {quoted(f)}; the roots are {', '.join(root_labels(ix)) or '(none)'}"
                             f" (`kgsearch roots` lists them)")
        marks = ",".join("?" * len(paths))        # (a root that is a file: its row's root is its folder)
        return f"(f.root IN ({marks}) OR f.path IN ({marks}))", paths * 2
    raise UsageError(f"unknown filter field {quoted(f.field)}; the fields are {', '.join(FILTER_FIELDS)}")


def _fnmatch_sql(path, pattern) -> int | None:
    return None if path is None or pattern is None else int(fnmatch.fnmatchcase(path, pattern))


def _where(ix, filters) -> tuple[str, list]:
    by_field: dict[str, list[FieldFilter]] = {}
    for f in filters:
        by_field.setdefault(f.field, []).append(f)
    clauses, args = [], []
    for name in FILTER_FIELDS:
        fs = by_field.get(name, [])
        pos = [f for f in fs if not f.negated]
        if pos:
            conds = [_condition(ix, f) for f in pos]
            clauses.append("(" + " OR ".join(c for c, _ in conds) + ")")
            args += [arg for _, a in conds for arg in a]
        for f in fs:
            if f.negated:
                c, a = _condition(ix, f)
                clauses.append(f"NOT coalesce(({c}), 0)")
                args += a
    return " AND ".join(clauses) or "1", args


def allowed_ids_sql(ix, filters):
    """Sorted node ids that every filter keeps (int64), in one SQL query: the plain version of
    :func:`allowed_ids` (which the tests compare with it and with :func:`matches`)."""
    import numpy as np

    where, args = _where(ix, filters)
    join = "LEFT JOIN files f ON f.id = n.file_id" if any(f.field != "kind" for f in filters) else ""
    return np.fromiter((r[0] for r in ix.conn.execute(f"SELECT n.id FROM nodes n {join} WHERE {where} ORDER BY n.id",
                                                      args)), dtype=np.int64)


_FILE_FIELDS = ("path", "lang", "modified", "root")


class _Layout:
    """Where each file's nodes are, per index generation (``Index.cached``): the files' rows, each
    file's node id span (``min, max, count``: a span is the file's alone when ``count`` fills it,
    as the indexer writes a file's nodes together), the ids of the files whose nodes are not one
    span and of the nodes without a file, fetched when first needed."""

    def __init__(self, ix):
        self.ix = ix
        self.files = {fid: {"path": p, "root": r, "loader": lo, "mtime_ns": m, "kind": None, "tags": set()}
                      for fid, p, r, lo, m in ix.conn.execute("SELECT id, path, root, loader, mtime_ns FROM files")}
        self.spans: dict = {}
        self.nodes = 0
        self.top = 0
        for fid, lo, hi, n in ix.conn.execute("SELECT file_id, min(id), max(id), count(*) FROM nodes GROUP BY file_id"):
            self.spans[fid] = (lo, hi, n)
            self.nodes += n
            self.top = max(self.top, hi)
        self._ids: dict = {}

    def mark(self, mask, fid) -> None:
        """Set ``mask`` at the nodes of file ``fid`` (None: the nodes without a file)."""
        import numpy as np

        span = self.spans.get(fid)
        if span is None:
            return
        lo, hi, n = span
        if fid is not None and hi - lo + 1 == n:
            mask[lo:hi + 1] = True
            return
        if fid not in self._ids:
            sql = "SELECT id FROM nodes WHERE file_id IS NULL" if fid is None else "SELECT id FROM nodes WHERE file_id = ?"
            self._ids[fid] = np.fromiter((r[0] for r in self.ix.conn.execute(sql, () if fid is None else (fid,))),
                                         dtype=np.int64)
        mask[self._ids[fid]] = True


_NO_FILE = {"path": None, "root": None, "loader": None, "mtime_ns": None, "kind": None, "tags": set()}


def allowed_ids(ix, filters, graph=None):
    """Sorted node ids that every filter keeps (an int64 numpy array).

    File fields (path, lang, modified, root) are decided once per file (by :func:`matches` on the
    file's row) and set over the file's node span (:class:`_Layout`, kept per index generation);
    ``kind`` is read from ``graph`` (the engine's :class:`~kgsearch.graph.context.GraphContext`:
    every node's kind, already in memory) when it holds every node, else from SQL; ``tag`` from
    the tag edges. A boolean mask over node ids, so the cost is a few passes over an array."""
    import numpy as np

    filters = tuple(filters)
    for f in filters:
        if f.field == "root":
            _condition(ix, f)                     # an unknown root: the usage error naming the roots
    lay = ix.cached("filters.layout", lambda: _Layout(ix))
    mask = np.zeros(lay.top + 1, dtype=bool)
    ffs = tuple(f for f in filters if f.field in _FILE_FIELDS)
    for fid, row in list(lay.files.items()) + [(None, _NO_FILE)]:
        if not ffs or matches(ix, ffs, row):
            lay.mark(mask, fid)
    for name, ids_of in (("kind", lambda f: _kind_ids(ix, f.value, graph, lay)), ("tag", lambda f: _tag_ids(ix, f))):
        fs = [f for f in filters if f.field == name]
        pos = [f for f in fs if not f.negated]
        if pos:
            keep = np.zeros(len(mask), dtype=bool)
            for f in pos:
                keep[ids_of(f)] = True
            mask &= keep
        for f in fs:
            if f.negated:
                mask[ids_of(f)] = False
    return np.flatnonzero(mask).astype(np.int64)


def node_count(ix) -> int:
    """The index's node count (from the per-generation layout :func:`allowed_ids` keeps)."""
    return ix.cached("filters.layout", lambda: _Layout(ix)).nodes


def _kind_ids(ix, kind: str, graph, lay):
    import numpy as np

    if graph is not None and len(graph.node_ids) == lay.nodes:
        names = list(graph.kind_names)
        if kind not in names:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(graph.node_ids, dtype=np.int64)[np.asarray(graph.kinds) == names.index(kind)]
    return np.fromiter((r[0] for r in ix.conn.execute("SELECT id FROM nodes WHERE kind = ?", (kind,))), dtype=np.int64)


def _tag_ids(ix, f: FieldFilter):
    import numpy as np

    key = "tag:" + f.value
    sql = f"SELECT id FROM nodes WHERE id IN {_TAGGED} OR parent_id IN {_TAGGED}"
    return np.fromiter((r[0] for r in ix.conn.execute(sql, [key, len(key) + 1, key + "/"] * 2)), dtype=np.int64)


# ------------------------------------------------------------------------------- the slow twin
def node_rows(ix) -> list[dict]:
    """Every node with what the filters read (the brute-force reference's input)."""
    tags: dict[int, set[str]] = {}
    for src, key in ix.conn.execute("SELECT e.src, t.key FROM edges e JOIN nodes t ON t.id = e.dst "
                                    "WHERE e.type = 'tagged'"):
        tags.setdefault(src, set()).add(key[4:] if key.startswith("tag:") else key)
    out = []
    for nid, kind, parent, fpath, root, loader, mtime in ix.conn.execute(
            "SELECT n.id, n.kind, n.parent_id, f.path, f.root, f.loader, f.mtime_ns FROM nodes n "
            "LEFT JOIN files f ON f.id = n.file_id ORDER BY n.id"):
        out.append({"id": nid, "kind": kind, "path": fpath, "root": root, "loader": loader, "mtime_ns": mtime,
                    "tags": tags.get(nid, set()) | tags.get(parent, set())})
    return out


def _keeps(ix, f: FieldFilter, row: dict) -> bool:
    v = f.value
    if f.field == "kind":
        return row["kind"] == v
    if f.field == "lang":
        return row["loader"] == v
    if f.field == "path":
        p = row["path"]
        if p is None:
            return False
        if not v.startswith("/"):
            root = row["root"]
            p = p[len(root) + 1:] if p.startswith(root + "/") else p
            v = v[2:] if v.startswith("./") else v
        return fnmatch.fnmatchcase(p, v) if any(c in v for c in "*?[") else p.startswith(v)
    if f.field == "tag":
        return any(t == v or t.startswith(v + "/") for t in row["tags"])
    if f.field == "modified":
        if row["mtime_ns"] is None:
            return False
        lo, hi = _bounds(f)
        t = row["mtime_ns"]
        return (lo is None or t >= int(lo * 1e9)) and (hi is None or t < int(hi * 1e9))
    if f.field == "root":
        paths = root_paths(ix, v) or []
        return row["root"] is not None and (row["root"] in paths or row["path"] in paths)
    raise AssertionError(f.field)


def matches(ix, filters, row: dict) -> bool:
    """Whether the node of ``row`` (:func:`node_rows`) passes ``filters``: the slow reference."""
    by_field: dict[str, list[FieldFilter]] = {}
    for f in filters:
        by_field.setdefault(f.field, []).append(f)
    for fs in by_field.values():
        pos = [f for f in fs if not f.negated]
        if pos and not any(_keeps(ix, f, row) for f in pos):
            return False
        if any(_keeps(ix, f, row) for f in fs if f.negated):
            return False
    return True
