"""Loading files: one pure job per file (read, hash, run its loader, hash and pack its nodes),
run in worker processes when there are many (:mod:`kgsearch.ingest.pool`)."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import fields
from operator import attrgetter

from ..errors import DataError
from ..ingest.loaders import get_loader
from ..ingest.readback import content_hash
from ..ingest.walk import Found
from ..store.textcodec import pack as pack_text
from ..types import EdgeRec, LoadOptions, LoadResult, NodeRec
from .keys import qualify_result

__all__ = ["hash_bytes", "node_hash", "dumps_props", "stored_fields", "load_job", "pack_outcome", "unpack_outcome"]


def hash_bytes(data: bytes) -> str:
    """A file's content hash (``files.hash``; query-time reads compare against it: readback)."""
    return content_hash(data)


def node_hash(kind: str, name: str, text: str) -> bytes:
    """What a node's derived data depends on: 8 bytes (a BLOB; indexes made before hold 24 hex
    characters, which never match, so such a node counts as modified once when its file is
    reloaded)."""
    h = hashlib.blake2b(digest_size=8)
    for part in (kind, name, text):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.digest()


def dumps_props(props: dict | None) -> str | None:
    if not props:
        return None
    return json.dumps(props, ensure_ascii=False, sort_keys=True, default=str)


def stored_fields(nodes) -> list[tuple[bytes, str | None, str | bytes]]:
    """Per node: content hash, props JSON and the text as stored (long texts compressed, see
    :mod:`kgsearch.store.textcodec`). Loader workers compute these, so the compression runs in
    parallel and off the writing process."""
    return [(node_hash(n.kind, n.name, n.text), dumps_props(n.props), pack_text(n.text)) for n in nodes]


def load_job(job: tuple[Found, LoadOptions]) -> tuple:
    """Read, hash and load one file (pure: runs in a worker process too).
    ``("ok", digest, LoadResult)`` or ``("fail", DataError, "unreadable" | "malformed")``."""
    f, lopts = job
    try:
        data = f.path.read_bytes()
    except OSError as exc:
        return "fail", DataError(f"cannot read ({exc.strerror}); check its permissions", str(f.path)), "unreadable"
    loader = get_loader(f.loader)
    try:
        result = loader.load(f.path, f.rel, lopts)
    except OSError as exc:
        return "fail", DataError(f"cannot read ({exc.strerror}); check its permissions", str(f.path)), "unreadable"
    except DataError as exc:
        return "fail", exc, "malformed"
    except (UnicodeError, ValueError, RecursionError, MemoryError) as exc:
        return "fail", DataError(f"could not be loaded ({type(exc).__name__}: {exc}); "
                                 f"fix it or add it to .kgsearchignore", str(f.path)), "malformed"
    cap_nodes(result, str(f.path))
    if any(esc in data for esc in _ESCAPES):
        scrub_surrogates(result, str(f.path))
    if f.label:
        result = qualify_result(result, f.label)
    return "ok", hash_bytes(data), result


MAX_NODE_CHARS = 1_000_000       # a node's text is indexed up to here (bounds every derived step per node)


MAX_NAME_CHARS = 1_000           # a node's name (a label: every result line prints it whole)


def cap_nodes(result: LoadResult, where: str, cap: int = MAX_NODE_CHARS, name_cap: int = MAX_NAME_CHARS) -> None:
    """Cut node texts longer than ``cap`` characters (at the last whitespace before it when
    that keeps three quarters), one warning each: BM25, the neighbour lists and the embedding
    tokenise a node's whole text at once, and a 20 MB note made one node cost ~600 MB.
    Loaders split long sources into sections and chunks; this bounds what they leave whole.
    A name longer than ``name_cap`` (a KG record's description put in its ``name``: 3 MB printed
    on every result line that named it) is cut the same way, and the whole name follows its text
    (which the results' snippets show), so its words stay searchable."""
    for n in result.nodes:
        if len(n.name) > name_cap:
            size = len(n.name)
            if n.name not in n.text:
                n.text = (n.text + "\n" if n.text else "") + n.name
            name = n.name[:name_cap]
            space = name.rfind(" ")
            n.name = (name[:space] if space >= name_cap * 3 // 4 else name) + "\u2026"
            line = f"{n.line_start}:" if n.line_start else ""
            result.warnings.append(f"{where}:{line} {n.key}'s name has {size:,} characters; named by its first "
                                   f"{name_cap:,}, the whole name is in its text")
        size = len(n.text)
        if size > cap:
            text = n.text[:cap]
            space = max(text.rfind(" "), text.rfind("\n"))
            n.text = text[:space] if space >= cap * 3 // 4 else text
            line = f"{n.line_start}:" if n.line_start else ""
            result.warnings.append(f"{where}:{line} {n.key} has {size:,} characters; indexed its first {cap:,} "
                                   f"(split the file to make the rest searchable)")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value):
    """``value`` with every lone surrogate in its strings (dict keys too) as U+FFFD, and
    whether one was found."""
    if isinstance(value, str):
        if value.isascii():
            return value, False
        try:
            value.encode("utf-8")
            return value, False
        except UnicodeEncodeError:
            return _SURROGATE.sub("\ufffd", value), True
    if isinstance(value, dict):
        out, hit = {}, False
        for k, v in value.items():
            (k2, a), (v2, b) = _clean(k), _clean(v)
            out[k2] = v2
            hit = hit or a or b
        return (out, True) if hit else (value, False)
    if isinstance(value, (list, tuple)):
        items = [_clean(v) for v in value]
        if any(b for _, b in items):
            return type(value)(v for v, _ in items), True
        return value, False
    return value, False


# A loader's text holds a lone surrogate only from an escape it decoded (JSON "\\ud800", Python
# "\\udc00" or "\\U0000d800"); decoding bytes never makes one. The file's bytes (UTF-8, or
# UTF-16 either way round) hold the escape's first two characters, so files without them
# (nearly all) are not scanned node by node.
_ESCAPES = (b"\\u", b"\\U", b"\\\x00u", b"\\\x00U")
_NODE_STR = ("key", "kind", "name", "text", "qualname", "parent", "props", "aliases")
_EDGE_STR = ("src", "dst", "type", "ns", "props")


def scrub_surrogates(result: LoadResult, where: str) -> None:
    """Lone surrogates (a JSON ``"\\ud800"`` escape, a Python string ``"\\udc00"``: valid in both,
    but not Unicode text) as U+FFFD, with one warning for the file: SQLite cannot bind them,
    and one such string stopped the whole run."""
    found = False
    for recs, names in ((result.nodes, _NODE_STR), (result.edges, _EDGE_STR)):
        for r in recs:
            for name in names:
                value, hit = _clean(getattr(r, name))
                if hit:
                    setattr(r, name, value)
                    found = True
    if found:
        result.warnings.append(f"{where}: lone surrogate escapes (such as \\ud800: half of a UTF-16 pair, "
                               f"not a character); indexed as U+FFFD")


_NODE_FIELDS = attrgetter(*(fl.name for fl in fields(NodeRec)))
_EDGE_FIELDS = attrgetter(*(fl.name for fl in fields(EdgeRec)))


def pack_outcome(outcome: tuple) -> tuple:
    """Plain tuples pickle ~4x faster than dataclass instances."""
    if outcome[0] != "ok":
        return outcome
    res = outcome[2]
    return ("ok", outcome[1], [_NODE_FIELDS(n) for n in res.nodes], [_EDGE_FIELDS(e) for e in res.edges],
            res.warnings, stored_fields(res.nodes))


def unpack_outcome(packed: tuple) -> tuple:
    """("ok", digest, LoadResult, [(hash, props JSON, stored text)] per node) -- the last computed
    in the worker."""
    if packed[0] != "ok":
        return packed
    _, digest, nodes, edges, warnings, hashed = packed
    return ("ok", digest, LoadResult([NodeRec(*n) for n in nodes], [EdgeRec(*e) for e in edges], warnings),
            hashed)
