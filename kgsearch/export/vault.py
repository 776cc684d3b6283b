"""A Markdown vault (Obsidian opens the folder as it is): one note per node, its edges as
``[[wikilinks]]``.

``OUT/<kind>/<name>.md``::

    ---
    kgsearch_key: "md:vault/tools/Git"
    kind: "tool"
    source: "/home/me/kg/tools.json:65"
    ---
    used_for:: [[Back up the vault]]
    links_to:: [[Syncthing]]

    <the node's text>

* Every edge out of the node is one Dataview inline field ``type:: [[target]]`` before the
  text, so kgsearch reads it back as an edge of the same type from this note (Obsidian shows
  the links; Dataview reads the fields). A type that a Dataview key cannot spell (FB15k's
  ``/film/film/genre``) is written without the leading ``/`` and its other characters as ``_``.
  Edge weights are not kept. Derived ``similar_text`` edges are left out unless asked for
  (indexing the vault computes its own).
* Note names are the node names with the characters files and links cannot hold (``* " \\ /
  < > : | ? # ^ [ ]``) as spaces, a last ``.md`` or attachment extension (``.png``) as `` md``
  (a link would name another note or an attachment), unique without regard to case (a second
  ``BM25`` becomes ``BM25 (concept)``, then ``BM25 (concept 2)``); ``[[name]]`` finds the note
  in any folder.
* The text is written so that it makes no link, tag or heading of its own: ``[[`` as
  ``[\\[``, ``](`` as ``]\\(``, a ``#`` that would start a tag or heading as ``\\#`` (Obsidian
  shows them as they were); code nodes' text goes in a fenced block, which neither reads.
  A NUL (a JSON ``"\\u0000"`` in a KG description) is written as U+FFFD: a file holding one is
  not text to kgsearch (nor to most editors), so the note would not index back.

``tests/test_export.py`` indexes an exported vault and checks it has exactly the exported
links.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..ingest.mdlinks import ATTACHMENTS
from ..ingest.walk import SKIP_DIRS
from .rows import iter_edges, iter_nodes

__all__ = ["write_vault", "note_names", "field_key"]

CODE_KINDS = ("module", "class", "function", "method")
_UNSAFE = re.compile(r'[*"\\/<>:|?#^\[\]\x00-\x1f\x7f\ud800-\udfff]+')     # (lone surrogates: no file name)
_KEY_BAD = re.compile(r"[^\w/.\- ]+")
MAX_NAME = 80                       # characters of a note name
MAX_BYTES = 160                     # its UTF-8 bytes: a file name may have 255, and " (kind n).md" follows
# names Windows reserves for devices, with any extension (a vault synced to a Windows machine)
_RESERVED = re.compile(r"(?i)(con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])(\..*)?")


def _safe(name: str, limit: int = MAX_BYTES) -> str:
    s = " ".join(_UNSAFE.sub(" ", name or "").split()).strip(" .")[:MAX_NAME].rstrip(" .")
    if len(s.encode("utf-8")) > limit:      # (80 emoji or CJK characters are 240-320 bytes)
        s = s.encode("utf-8")[:limit].decode("utf-8", "ignore").rstrip(" .")
    stem, dot, ext = s.rpartition(".")
    if dot and stem and ext.lower() in ATTACHMENTS | {"md", "markdown"}:
        s = f"{stem} {ext}"                 # [[x.md]] would name note x, [[x.png]] an attachment
    m = _RESERVED.fullmatch(s)
    if m:                                   # CON.md cannot be created on Windows: CON_.md can
        s = f"{m.group(1)}_{m.group(2) or ''}"
    return s


def note_names(nodes) -> dict[str, str]:
    """``{key: note name}`` for ``(key, name, kind)`` triples, unique without regard to case."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for key, name, kind in nodes:
        what = _safe(kind, 40) or "node"
        base = _safe(name) or f"{what} {len(out) + 1}"
        cand, n = base, 1
        while cand.lower() in taken:
            n += 1
            cand = f"{base} ({what})" if n == 2 else f"{base} ({what} {n - 1})"
        taken.add(cand.lower())
        out[key] = cand
    return out


def field_key(etype: str) -> str:
    """The Dataview key for an edge type (the type itself when a key can spell it)."""
    k = _KEY_BAD.sub("_", etype.strip().lower()).replace(" ", "_").replace("-", "_").lstrip("/.")
    if not k or not (k[0].isalnum() or k[0] == "_"):
        k = "rel_" + k
    return k or "links_to"


def _folder(kind: str) -> str:
    f = _safe(kind) or "node"
    return f + "_" if f in SKIP_DIRS or f.startswith(".") else f


def _escape(text: str) -> str:
    text = text.replace("[[", "[\\[").replace("](", "]\\(")
    text = re.sub(r"(?m)^( {0,3})(#{1,6})(?=[ \t]|$)", r"\1\\\2", text)
    return re.sub(r"(?<!\S)#(?=[\w/\-])", r"\\#", text)


def _fence(text: str, lang: str) -> str:
    ticks = max([len(m) for m in re.findall(r"`{3,}", text)] + [2]) + 1
    return f"{'`' * ticks}{lang}\n{text}\n{'`' * ticks}"


def write_vault(ix, folder, text: bool = True, types=None, derived: bool = False) -> tuple[int, int]:
    """Write one note per node under ``folder`` (created; existing notes of the same names are
    overwritten, other files left alone). Returns (notes, links) written."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    names = note_names((d["key"], d["name"], d["kind"]) for d in iter_nodes(ix, text=False))
    out_edges: dict[str, list[tuple[str, str]]] = {}
    m = 0
    for e in iter_edges(ix, types, derived):
        out_edges.setdefault(e["source"], []).append((field_key(e["type"]), names[e["target"]]))
    n = 0
    for d in iter_nodes(ix, text=text):
        name = names[d["key"]]
        sub = root / _folder(d["kind"])
        sub.mkdir(exist_ok=True)
        where = f"{d['path']}:{d['line_start']}" if d["path"] and d["line_start"] else (d["path"] or "")
        lines = ["---", f"kgsearch_key: {json.dumps(d['key'], ensure_ascii=False)}",
                 f"kind: {json.dumps(d['kind'], ensure_ascii=False)}"]
        if where:
            lines.append(f"source: {json.dumps(where, ensure_ascii=False)}")
        lines.append("---")
        links = sorted(set(out_edges.pop(d["key"], [])))
        lines += [f"{k}:: [[{target}]]" for k, target in links]
        m += len(links)
        body = (d["text"] or "").replace("\x00", "\ufffd").strip()   # a NUL makes the note "not text"
        if body:
            lines += ["", _fence(body, "python" if d["kind"] in CODE_KINDS else "") if d["kind"] in CODE_KINDS
                      else _escape(body)]
        (sub / f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        n += 1
    return n, m
