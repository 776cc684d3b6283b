"""The stdio transport of ``kgsearch mcp``: newline-delimited JSON-RPC in, one answer per line
out, for one index (:class:`~.server.Server`) or several searched as one
(:class:`~.multi.MultiServer`)."""
from __future__ import annotations

import json
import sys

from .multi import MultiServer
from .server import INTERNAL, PARSE_ERROR, Server, error_response

__all__ = ["serve"]


def serve(db=None, stdin=None, stdout=None) -> int:
    """Answer newline-delimited JSON-RPC on ``stdin`` until it closes; diagnostics go to stderr.
    ``db``: one index, or a list of several searched as one (:mod:`.multi`)."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    if isinstance(db, (list, tuple)) and len(db) > 1:
        server: Server = MultiServer(list(db))
    else:
        server = Server(db[0] if isinstance(db, (list, tuple)) else db)
    for raw in stdin:
        line = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError as e:
            resp = error_response(None, PARSE_ERROR, f"parse error: {e}")
        except RecursionError:                  # '[' * 100000 killed the server: an answer instead
            resp = error_response(None, PARSE_ERROR, "parse error: JSON nested too deeply to read")
        else:
            try:
                resp = server.handle(msg)
            except RecursionError:              # a request nested just under the parser's limit
                resp = error_response(msg.get("id") if isinstance(msg, dict) else None, INTERNAL,
                                      "the request is nested too deeply to answer")
        if resp is not None:
            data = json.dumps(resp, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
            stdout.write(data.encode("utf-8") if not hasattr(stdout, "encoding") else data)
            stdout.flush()
    return 0

