"""What the CLI reads besides its flags: a query or task from an argument, stdin (``-``) or
``--query-file``, and a diff from a file, stdin or ``git diff``."""
from __future__ import annotations

import sys

__all__ = ["query_text", "read_diff", "MAX_QUERY_BYTES"]

MAX_QUERY_BYTES = 64 << 20          # read from stdin or a file; a search reads 32,768 characters of it


def query_text(given: str | None, path: str | None, what: str = "query") -> str:
    """The query (or task) given as an argument, ``-`` (stdin) or ``--query-file FILE|-``:
    decoded as UTF-8 (bad bytes replaced); an empty one, or both forms, is a usage error."""
    from ..errors import DataError, UsageError

    if path is not None and given is not None:
        raise UsageError(f"give the {what} as an argument or with --query-file, not both")
    if path is None and given != "-":
        if given is None:
            raise UsageError(f"no {what}: give it as an argument, - for stdin, or --query-file FILE")
        if _blank(given):
            raise UsageError(f"the {what} is empty; give some words, e.g. kgsearch search \"sync fails at night\"")
        return given
    where = path if path not in (None, "-") else "stdin"
    try:
        if where == "stdin":
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read(MAX_QUERY_BYTES) if stream is not None else sys.stdin.read(MAX_QUERY_BYTES).encode()
        else:
            with open(path, "rb") as fh:
                data = fh.read(MAX_QUERY_BYTES)
    except OSError as exc:
        raise DataError(f"cannot read the {what} ({exc.strerror}); pass a readable file, or - for stdin",
                        path) from None
    text = data.decode("utf-8", errors="replace")
    if _blank(text):
        raise UsageError(f"the {what} read from {where} is empty (nothing but blanks or control characters)")
    return text


def _blank(text: str) -> bool:
    """Nothing but white space, NULs and other control characters (``printf '\\0\\0' | kgsearch
    search -`` searched for "   " and answered "no results")."""
    return not any(c.isprintable() and not c.isspace() for c in text)


def read_diff(spec: str, ix, roots: list[str] | None = None):
    """The changes a diff names: ``git`` (``git diff HEAD`` in ``roots``, default the index's),
    ``-`` (stdin) or a unified diff file."""
    from ..context.diff import git_diff, parse_given
    from ..errors import DataError

    if spec == "git":
        return git_diff(roots if roots is not None else ix.meta_json("roots", []))
    if spec == "-":
        return parse_given(sys.stdin.read(), "<stdin>")
    try:
        with open(spec, encoding="utf-8", errors="replace") as f:
            return parse_given(f.read(), spec)
    except OSError as exc:
        raise DataError(f"cannot read the diff ({exc.strerror}); pass a unified diff file, - for stdin, "
                        "or --diff alone for git diff", spec) from None
