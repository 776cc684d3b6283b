"""BEIR ``corpus.jsonl`` (``{"_id", "title", "text"}`` per line): one ``doc`` node per line.

Title and text stay separate fields (name = title, text = body) so BM25F can weight them.
The file is read a line at a time: UTF-8, or UTF-16 when it starts with its byte-order mark;
bytes that do not decode become U+FFFD.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

from ..errors import DataError
from ..types import LoadOptions, LoadResult, NodeRec
from .common import utf16_codec

NAME = "beir"
EXTENSIONS = (".jsonl",)


def load(path: Path, rel: str, opts: LoadOptions) -> LoadResult:
    res = LoadResult()
    with open(path, "rb") as fh:
        head = fh.read(4)
        codec = utf16_codec(head)
        fh.seek(2 if codec else 3 if head.startswith(b"\xef\xbb\xbf") else 0)     # a byte-order mark is no JSON
        # UTF-16 (a byte-order mark): decoded as it is read, split at "\n" only, as the bytes are
        lines = io.TextIOWrapper(fh, encoding=codec, errors="replace", newline="\n") if codec else fh
        for lineno, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw if codec else raw.decode("utf-8", errors="replace"))
            except json.JSONDecodeError as exc:
                raise DataError(f"invalid JSON ({exc.msg}); each line must be one "
                                f'{{"_id", "title", "text"}} object', str(path), lineno) from None
            except RecursionError:
                raise DataError("invalid JSON (nested too deeply to read); each line must be one "
                                '{"_id", "title", "text"} object', str(path), lineno) from None
            if not isinstance(rec, dict) or "_id" not in rec:
                raise DataError('a BEIR corpus line needs an "_id" field', str(path), lineno)
            doc_id = str(rec["_id"])
            res.nodes.append(NodeRec(
                key=f"doc:{doc_id}", kind="doc", name=str(rec.get("title") or ""),
                text=str(rec.get("text") or ""), qualname=doc_id, line_start=lineno, line_end=lineno,
                aliases=[("doc", doc_id)]))
    return res
