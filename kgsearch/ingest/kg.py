"""Knowledge-graph files: JSON, JSONL and CSV node and edge records.

The KG-OS schema loads as is::

    node  {"node_id" | "id", "name", "type", "description"?, ...}
    edge  {"source", "target", "edge_type" | "type", "weight"?, ...}

Accepted shapes:

* a JSON object with a node list under ``nodes`` and an edge list under ``edges``, ``links``
  or ``relationships`` (either may be missing, so ``nodes.json`` + ``edges.json`` pairs work;
  ``nodes`` may also be an object keyed by node id; ``{"graph": {...}}`` is looked into);
* a JSON array of records, JSONL (one record per line; blank lines skipped);
* CSV with a header: a nodes CSV has a ``node_id`` or ``id`` column, an edges CSV has
  ``source`` and ``target`` columns (``,``, ``;`` or tab separated).

A record is a node if it has ``node_id``/``id`` and no ``source``/``target``, an edge if it has
``source`` and ``target``.

Nodes: key ``kg:<node_id>``; kind = ``type`` (else ``kind``/``node_type``) lower-cased with
spaces -> ``_`` (default ``entity``); name = ``name`` (else ``label``/``title``, else the id);
text = the first description-like field (``description``, ``summary``, ``definition``,
``abstract``, ``content``, ``text``, ``body``, ``notes``, ``note``, ``comment``, in that order,
all of them) followed by every other string field, and list of strings, that reads as words
(not URLs, paths, dates, numbers or hashes), so ``category``, ``domain`` or ``aliases`` values are
searchable. Every field except the id, name, type and the description-like fields is kept in
``props``. The only alias is ``('kg', node_id)``, exact: edges name node ids, and resolving them
by display name as well would hide the dangling-edge errors the indexer reports.

Edges: ``kg:<source> -[type]-> target`` with ``ns='kg'`` so that an edge may point at a node
defined in another file; the source node may live in another file too. ``type`` comes from
``edge_type`` (else ``type``/``relation``/``relationship``/``predicate``/``label``), normalised
like node kinds (default ``relates_to``); ``weight`` must be a number (default 1.0); other fields
go to ``props``. Every edge records the line its record starts on (JSON: found by a light scan
of the text), because the indexer names it in the dangling-edge error.

Malformed JSON/CSV raises :class:`~kgsearch.errors.DataError` with ``file:line``. Valid JSON
that is not KG-shaped gives an empty result and one warning while walking, unless the user named
the file or forced ``--format kg``: then it is a DataError that shows the expected schema. A
build tool's file met while walking a code tree (:func:`is_tool_file`: ``package.json``,
``tsconfig.json``, ``composer.json``, ...: never a graph) is skipped without a warning, so that
a monorepo's hundred manifests do not bury the warnings that matter.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

from ..errors import DataError
from ..lines import quoted
from ..types import LoadOptions, LoadResult, EdgeRec, NodeRec
from .common import check_id, decode, lines_of, is_texty, norm_type

NAME = "kg"
EXTENSIONS = (".json", ".jsonl", ".ndjson", ".csv")

SCHEMA_HINT = ('expected {"nodes": [{"node_id", "name", "type", ...}], "edges": [{"source", '
               '"target", "edge_type", "weight"}]}, a JSON array or JSONL of such records, or CSV '
               'with a node_id/id column or source,target columns')

ID_FIELDS = ("node_id", "id")
NAME_FIELDS = ("name", "label", "title")
KIND_FIELDS = ("type", "kind", "node_type")
DESC_FIELDS = ("description", "summary", "definition", "abstract", "content", "text", "body",
               "notes", "note", "comment")
EDGE_TYPE_FIELDS = ("edge_type", "type", "relation", "relationship", "predicate", "label")
NODE_LIST_KEYS = ("nodes", "vertices")
EDGE_LIST_KEYS = ("edges", "links", "relationships")

Record = tuple[dict, int | None, int | None]     # (record, first line, last line)

EMPTY = "{where}: empty (no record); nothing to index"      # the warning for a file of no record

# ``kgsearch export jsonl`` starts with this line; a JSONL file that does is read back as the
# graph it was exported from: ids are kgsearch keys (``md:notes/Home``, ``kg:git``), kept as
# they are, not made ``kg:`` ids (which gave ``kg:kg:git``); see :func:`_build_export`.
EXPORT_FIELD = "kgsearch_export"
EXPORT_VERSION = 1
EXPORT_HEADER = {EXPORT_FIELD: EXPORT_VERSION}



def _json_error(exc: json.JSONDecodeError) -> str:
    """``Expecting value at column 3``: json's message with the column (its messages that end
    in "at", "Unterminated string starting at", read once)."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"

# build tools' JSON files, skipped without a warning while walking (not KG-shaped, never a graph)
TOOL_FILES = frozenset({
    "package.json", "package-lock.json", "npm-shrinkwrap.json", "bower.json", "lerna.json", "nx.json",
    "turbo.json", "rush.json", "deno.json", "jsconfig.json", "tsconfig.json", "tslint.json", "tsdoc.json",
    "composer.json", "composer.lock", "angular.json", "project.json", "workspace.json", "vercel.json",
    "netlify.json", "now.json", "firebase.json", "app.json", "manifest.json", "renovate.json",
    ".eslintrc.json", ".prettierrc.json", ".babelrc.json", ".stylelintrc.json", ".jshintrc", ".swcrc",
    "babel.config.json", "jest.config.json", "api-extractor.json", "typedoc.json", "devcontainer.json",
    ".devcontainer.json", "cargo.lock", "go.work.sum", "launch.json", "settings.json", "extensions.json",
    "tasks.json", "pyrightconfig.json", "biome.json", "dprint.json", "cspell.json", ".markdownlint.json",
    # every crate as Cargo's registry, `cargo vendor` and Debian's librust-*-dev unpack it
    ".cargo-checksum.json", ".cargo_vcs_info.json",
})
_TOOL_PATTERN = re.compile(r"(?:tsconfig|jsconfig|package|\.eslintrc|\.prettierrc|\.babelrc)(?:[.-][\w.-]*)?\.json$|"
                           r".*\.(?:schema|config)\.json$")


# what a walk says of a JSON/CSV file with no node or edge records (yargs' locales/*.json): the
# file and the fix, one line (not a warning the user can only read)
NOT_KG = "not a knowledge-graph file, skipped (list it in .kgsearchignore to skip it without a word)"


def is_tool_file(name: str) -> bool:
    """Whether a file name is a build tool's JSON (``package.json``, ``tsconfig.build.json``,
    ``.eslintrc.json``, ``x.schema.json``), which a walk skips without a warning."""
    low = name.lower()
    return low in TOOL_FILES or bool(_TOOL_PATTERN.fullmatch(low))


def load(path: Path, rel: str, opts: LoadOptions) -> LoadResult:
    where = str(path)
    text, warning = decode(Path(path).read_bytes(), where)
    if not text.strip():           # JSON, JSONL, CSV alike (a JSON parse of nothing failed: exit 3)
        return LoadResult(warnings=[EMPTY.format(where=where)])
    strict = bool(opts.explicit or opts.fmt == NAME)
    ext = Path(path).suffix.lower()
    if ext not in EXTENSIONS:            # forced --format kg on another extension: sniff
        head = text.lstrip()[:1]
        ext = ".json" if head in "[{" and head else ".csv"
        if ext == ".json" and _looks_like_jsonl(text):
            ext = ".jsonl"
    if ext == ".csv":
        records = _read_csv(text, where, strict)
    elif ext == ".json":
        records = _read_json(text, where, strict)
    else:
        records, exported = _read_jsonl(text, where, strict)
        if exported:
            res = _build_export(records, where)
            if warning:
                res.warnings.insert(0, warning)
            return res
    if records is None:
        if is_tool_file(Path(path).name):
            return LoadResult()
        return LoadResult(warnings=[f"{where}: {NOT_KG}"])
    res = _build(records, where)
    if not records:                 # `[]`, `{"nodes": []}`, a CSV header alone
        res.warnings.append(EMPTY.format(where=where))
    if warning:
        res.warnings.insert(0, warning)
    return res


def _looks_like_jsonl(text: str) -> bool:
    try:
        json.loads(text)
        return False
    except json.JSONDecodeError as exc:
        return exc.msg == "Extra data"
    except RecursionError:                      # (the parse that follows says so, naming the file)
        return False


# ---- classifying records -------------------------------------------------------------------

def _kind(rec: Any) -> str | None:
    """'node', 'edge' or None."""
    if not isinstance(rec, dict):
        return None
    if "source" in rec and "target" in rec:
        return "edge"
    if ("node_id" in rec or "id" in rec) and "source" not in rec and "target" not in rec:
        return "node"
    return None


def _looks_kg(rec: Any, strict: bool) -> bool:
    """Does the first record of an array/JSONL file make it a KG file? When walking, a bare
    ``id`` is not enough (lots of JSON has ids): it also needs a name, label, title or type."""
    k = _kind(rec)
    if k == "edge" or (k == "node" and (strict or "node_id" in rec)):
        return True
    return k == "node" and any(f in rec for f in NAME_FIELDS + KIND_FIELDS)


def _neither(where: str, line: int | None) -> DataError:
    return DataError('record is neither a node (needs "node_id" or "id") nor an edge (needs '
                     '"source" and "target"); fix or remove it', where, line)


def _not_kg(where: str, strict: bool, what: str, line: int | None = None) -> None:
    """None (skip the file) when walking; a DataError when the user asked for this file."""
    if strict:
        raise DataError(f"not a knowledge-graph file ({what}); {SCHEMA_HINT}", where, line)
    return None


# ---- JSON ----------------------------------------------------------------------------------

_STRING = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
_BRACE = re.compile(r"[{}]")


def _object_lines(text: str) -> list[tuple[int, int]]:
    """(first line, last line) of every JSON object in the order their ``}`` closes, which is
    the order ``json`` calls ``object_pairs_hook``. Strings are blanked first (a JSON string
    holds no raw newline, so line numbers survive), so braces inside them do not count.
    Only called on text that parsed."""
    bare = _STRING.sub('""', text)
    stack: list[int] = []
    out: list[tuple[int, int]] = []
    line, pos = 1, 0
    count = bare.count
    for m in _BRACE.finditer(bare):
        start = m.start()
        line += count("\n", pos, start)
        pos = start
        if m.group() == "{":
            stack.append(line)
        else:
            out.append((stack.pop() if stack else line, line))
    return out


def _parse_json(text: str, where: str, strict: bool) -> tuple[Any, dict[int, tuple[int, int]]]:
    made: list[dict] = []

    def hook(pairs):
        d = dict(pairs)
        made.append(d)
        return d

    try:
        data = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        fix = "fix the JSON syntax" if strict else \
            "fix the JSON syntax, or list the file in .kgsearchignore if it is not a knowledge graph"
        raise DataError(f"invalid JSON: {_json_error(exc)}; {fix}",
                        where, exc.lineno) from None
    except RecursionError:
        fix = "fix the file" if strict else "fix the file, or list it in .kgsearchignore if it is not a knowledge graph"
        raise DataError(f"invalid JSON: nested too deeply to read; {fix}", where) from None
    spans = _object_lines(text)
    lines = {}
    if len(spans) == len(made):
        lines = {id(d): span for d, span in zip(made, spans)}
    return data, lines


def _read_json(text: str, where: str, strict: bool) -> list[Record] | None:
    if not text.strip():
        return _not_kg(where, strict, "the file is empty", 1)
    data, lines = _parse_json(text, where, strict)

    def rec(d: dict) -> Record:
        a, b = lines.get(id(d), (None, None))
        return d, a, b

    if isinstance(data, dict):
        if isinstance(data.get("graph"), dict) and not any(_graph_lists(data)):
            data = data["graph"]
        node_lists, edge_lists = _graph_lists(data)
        if not node_lists and not edge_lists:
            return _not_kg(where, strict, 'a JSON object without a "nodes" or "edges" list',
                           lines.get(id(data), (None,))[0])
        out: list[Record] = []
        for items in node_lists:
            if isinstance(items, dict):          # {"nodes": {"<id>": {...}}}
                for nid, body in items.items():
                    if not isinstance(body, dict):
                        raise DataError(f"node {quoted(nid)} must be an object", where,
                                        lines.get(id(items), (None,))[0])
                    r = rec(body)
                    out.append(({"node_id": nid, **body}, r[1], r[2]))
                continue
            for item in items:
                if _kind(item) != "node":
                    line = lines.get(id(item), (None,))[0] if isinstance(item, dict) else None
                    raise DataError('a "nodes" entry needs a "node_id" or "id" field and no '
                                    '"source"/"target"; fix or remove it', where, line)
                out.append(rec(item))
        for items in edge_lists:
            for item in items:
                if _kind(item) != "edge":
                    line = lines.get(id(item), (None,))[0] if isinstance(item, dict) else None
                    raise DataError('an "edges" entry needs "source" and "target" fields; '
                                    'fix or remove it', where, line)
                out.append(rec(item))
        return out
    if isinstance(data, list):
        if not data:
            return []
        if not _looks_kg(data[0], strict):
            return _not_kg(where, strict, "the array's first item is not a node or edge record",
                           lines.get(id(data[0]), (None,))[0] if isinstance(data[0], dict) else 1)
        out = []
        for item in data:
            if _kind(item) is None:
                raise _neither(where, lines.get(id(item), (None,))[0] if isinstance(item, dict)
                               else None)
            out.append(rec(item))
        return out
    return _not_kg(where, strict, "not a JSON object or array", 1)


def _graph_lists(data: dict) -> tuple[list, list]:
    nodes = [data[k] for k in NODE_LIST_KEYS
             if isinstance(data.get(k), list) or (k == "nodes" and isinstance(data.get(k), dict))]
    edges = [data[k] for k in EDGE_LIST_KEYS if isinstance(data.get(k), list)]
    return nodes, edges


# ---- JSONL ---------------------------------------------------------------------------------

def _read_jsonl(text: str, where: str, strict: bool) -> tuple[list[Record] | None, bool]:
    """The records, and whether the file is a ``kgsearch export jsonl`` (its first record is the
    :data:`EXPORT_HEADER` line: ids are kgsearch keys, read back as they are)."""
    out: list[Record] = []
    first = True
    exported = False
    for lineno, line in enumerate(lines_of(text), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"invalid JSON: {_json_error(exc)}; each line must be "
                            "one JSON object", where, lineno) from None
        except RecursionError:
            raise DataError("invalid JSON: nested too deeply to read; each line must be one JSON object",
                            where, lineno) from None
        if first:
            first = False
            if isinstance(item, dict) and EXPORT_FIELD in item:
                _check_export_header(item, where, lineno)
                exported = True
                continue
            if not _looks_kg(item, strict):
                return _not_kg(where, strict, "the first line is not a node or edge record", lineno), False
        if exported and isinstance(item, dict) and EXPORT_FIELD in item:
            _check_export_header(item, where, lineno)       # two exports concatenated
            continue
        if _kind(item) is None:
            raise _neither(where, lineno)
        out.append((item, lineno, lineno))
    return out, exported


# ---- CSV -----------------------------------------------------------------------------------

def _read_csv(text: str, where: str, strict: bool) -> list[Record] | None:
    head = text.split("\n", 1)[0]
    delim = max((",", ";", "\t"), key=head.count)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, strict=True)
    out: list[Record] = []
    header: list[str] | None = None
    last = 0
    try:
        for row in reader:
            start, last = last + 1, reader.line_num
            if not row or not any(c.strip() for c in row):
                continue
            if header is None:
                header = [c.strip() for c in row]
                cols = {c.lower() for c in header}
                kind = ("edge" if {"source", "target"} <= cols else
                        "node" if cols & {"node_id", "id"} else None)
                if kind is None:
                    return _not_kg(where, strict, "the CSV header has no node_id/id column and no "
                                   "source,target columns", start)
                header = [c.lower() if c.lower() in _KNOWN else c for c in header]
                continue
            if len(row) > len(header):
                sep = {"\t": "a tab", ",": "a comma", ";": "a semicolon"}[delim]
                raise DataError(f"row has {len(row)} fields but the header has {len(header)}; "
                                f"quote values that contain {sep}", where, start)
            item = {k: v.strip() for k, v in zip(header, row) if v.strip()}
            if _kind(item) != kind:
                need = '"source" and "target"' if kind == "edge" else 'a "node_id" or "id"'
                raise DataError(f"row has no {need} value; fill it in or remove the row",
                                where, start)
            out.append((item, start, last))
    except csv.Error as exc:
        raise DataError(f"invalid CSV: {exc}; check the quotes on this row", where,
                        last + 1) from None
    if header is None:
        return _not_kg(where, strict, "the file is empty", 1)
    return out


_KNOWN = set(ID_FIELDS + NAME_FIELDS + KIND_FIELDS + DESC_FIELDS + EDGE_TYPE_FIELDS
             + ("source", "target", "weight"))


# ---- a kgsearch export read back -----------------------------------------------------------

def _check_export_header(item: dict, where: str, line: int) -> None:
    v = item.get(EXPORT_FIELD)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise DataError(f'"{EXPORT_FIELD}" must be an export version number (this kgsearch writes '
                        f'{EXPORT_VERSION}), got {json.dumps(v)}; re-export the index', where, line)
    if v > EXPORT_VERSION:
        raise DataError(f"written by a newer kgsearch (export version {v}, this one reads "
                        f"{EXPORT_VERSION}); upgrade kgsearch", where, line)


def _field(rec: dict, name: str, types: tuple, where: str, line: int | None, default: Any = None) -> Any:
    v = rec.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) and bool not in types or not isinstance(v, types):
        want = {str: "a string", int: "an integer", dict: "an object", list: "a list"}[types[0]]
        raise DataError(f'"{name}" must be {want}, got {json.dumps(v)[:80]}; fix the line or re-export',
                        where, line)
    return v


def _key(rec: dict, name: str, where: str, line: int | None) -> str:
    """A node key as exported: exactly as written (a key may end in a space: a file name's)."""
    key = rec.get(name)
    if not isinstance(key, str) or ":" not in key.lstrip(":") or not key.strip():
        raise DataError(f'"{name}" must be a kgsearch key (ns:name, as `kgsearch export jsonl` writes it), '
                        f'got {json.dumps(key)[:80]}; fix the line or re-export', where, line)
    return key


def _build_export(records: list[Record], where: str) -> LoadResult:
    """The nodes and edges of a ``kgsearch export jsonl`` file, as the exported index held them:
    the key (``id``), kind (``type``), name, text, qualname, flags, props, parent and the names a
    node answers to (``aliases``), and every edge by key, with its type, weight and props.
    Derived edges (``"derived": true``: ``similar_text``) are skipped: the index computes its
    own from the text. What says where a node was read (``path``, ``line``) is not kept: the
    node now lives in this file, at this line."""
    res = LoadResult()
    seen: dict[str, int | None] = {}
    for rec, line, end in records:
        if _kind(rec) == "edge":
            if rec.get("derived") is True:
                continue
            src, dst = _key(rec, "source", where, line), _key(rec, "target", where, line)
            etype = _field(rec, "edge_type", (str,), where, line) or _field(rec, "type", (str,), where, line)
            weight = _field(rec, "weight", (int, float), where, line, 1.0)
            if not math.isfinite(weight):
                raise DataError(f'"weight" must be a number, got {json.dumps(weight)}', where, line)
            res.edges.append(EdgeRec(src=src, dst=dst, type=etype or "relates_to", ns="key", weight=float(weight),
                                     line=line, props=_field(rec, "props", (dict,), where, line, {})))
            continue
        key = _key(rec, "id", where, line)
        if key in seen:
            res.warnings.append(f"{where}:{line}: duplicate node id {quoted(key)} (first at line {seen[key]}); kept the first")
            continue
        seen[key] = line
        aliases = []
        for a in _field(rec, "aliases", (list,), where, line, []):
            if not (isinstance(a, list) and len(a) == 3 and isinstance(a[0], str) and isinstance(a[1], str)
                    and isinstance(a[2], int) and not isinstance(a[2], bool)):
                raise DataError(f'"aliases" must be a list of [ns, name, rank], got {json.dumps(a)[:80]}; '
                                f'fix the line or re-export', where, line)
            aliases.append((a[0], a[1], a[2]))
        res.nodes.append(NodeRec(
            key=key, kind=_field(rec, "type", (str,), where, line, "") or "entity",
            name=_field(rec, "name", (str,), where, line, ""), text=_field(rec, "text", (str,), where, line, ""),
            qualname=_field(rec, "qualname", (str,), where, line, ""), line_start=line, line_end=end,
            parent=_field(rec, "parent", (str,), where, line), flags=_field(rec, "flags", (int,), where, line, 0),
            props=_field(rec, "props", (dict,), where, line, {}), aliases=aliases))
    return res


# ---- building nodes and edges --------------------------------------------------------------

def _scalar_id(value: Any, what: str, where: str, line: int | None) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or str(value).strip() == "":
        raise DataError(f'"{what}" must be a non-empty string or number, got {json.dumps(value)[:80]}',
                        where, line)
    return check_id(str(value).strip(), f'"{what}"', where, line)


def _first(rec: dict, fields: tuple[str, ...]) -> tuple[str | None, Any]:
    for f in fields:
        v = rec.get(f)
        if v is not None and v != "":
            return f, v
    return None, None


def _texts(rec: dict, skip: set[str]) -> Iterator[str]:
    for f in DESC_FIELDS:
        v = rec.get(f)
        if isinstance(v, str) and v.strip():
            yield v.strip()
    for k, v in rec.items():
        if k in skip or k in DESC_FIELDS:
            continue
        if is_texty(v):
            yield v.strip()
        elif isinstance(v, list):
            words = [x.strip() for x in v if is_texty(x)]
            if words:
                yield ", ".join(words)


def _build(records: list[Record], where: str) -> LoadResult:
    res = LoadResult()
    seen: dict[str, int | None] = {}
    for rec, line, end in records:
        if _kind(rec) == "edge":
            res.edges.append(_edge(rec, line, where))
            continue
        id_field = "node_id" if "node_id" in rec else "id"
        nid = _scalar_id(rec[id_field], id_field, where, line)
        if nid in seen:
            first = seen[nid]
            at = f" (first at line {first})" if first else ""
            res.warnings.append(f"{where}:{line}: duplicate node id {quoted(nid)}{at}; kept the first")
            continue
        seen[nid] = line
        name_field, name = _first(rec, NAME_FIELDS)
        kind_field, kind = _first(rec, KIND_FIELDS)
        used = {id_field, name_field, kind_field}
        props = {k: v for k, v in rec.items() if k not in used and k not in DESC_FIELDS}
        res.nodes.append(NodeRec(
            key=f"kg:{nid}", kind=norm_type(kind, "entity"),
            name=str(name).strip() if name is not None else nid,
            text="\n".join(_texts(rec, used)), qualname=nid,
            line_start=line, line_end=end, props=props, aliases=[("kg", nid)]))
    return res


def _edge(rec: dict, line: int | None, where: str) -> EdgeRec:
    src = _scalar_id(rec["source"], "source", where, line)
    dst = _scalar_id(rec["target"], "target", where, line)
    type_field, etype = _first(rec, EDGE_TYPE_FIELDS)
    weight = 1.0
    raw = rec.get("weight")
    if raw is not None and raw != "":
        try:
            if isinstance(raw, bool):
                raise ValueError
            weight = float(raw)
            if not math.isfinite(weight):
                raise ValueError
        except (TypeError, ValueError):
            raise DataError(f'"weight" must be a number, got {json.dumps(raw)}', where,
                            line) from None
    props = {k: v for k, v in rec.items() if k not in ("source", "target", "weight", type_field)}
    return EdgeRec(src=f"kg:{src}", dst=dst, type=norm_type(etype, "relates_to"), ns="kg",
                   weight=weight, line=line, props=props)
