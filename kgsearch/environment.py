"""The environment variables kgsearch honours, read once, by the command line.

The library never reads ``os.environ``. The CLI reads it once when a command starts
(:func:`from_environ`) and hands the values to the library for the command's duration
(:func:`configured`); a program that embeds kgsearch gets none of them unless it asks, e.g.
``environment.configure(environment.from_environ())`` to behave like the CLI, or
``configure(Environment(model="/models/m"))``. So two library calls with the same arguments
answer the same whatever the shell exported.

=========================  ================  ===================================================
variable                   field             used by
=========================  ================  ===================================================
``KGSEARCH_DB``            ``db``            :func:`kgsearch.config.default_db_path`
``KGSEARCH_CONFIG``        ``config``        :func:`kgsearch.config.config_path`
``KGSEARCH_DATA``          ``data``          :func:`kgsearch.config.shipped_data_dir`
``KGSEARCH_MODEL``         ``model``         the embedding model (``kgsearch.embed``: model,
                                             hub, index_model)
``KGSEARCH_MEMORY_MB``     ``memory_mb``     :mod:`kgsearch.budget` (the CLI turns it into the
                                             process limit; the engine sizes caches by it)
``KGSEARCH_VEC_CACHE_MB``  ``vec_cache_mb``  the dense channel's vector cache (``embed.dense``)
``KGSEARCH_EQUIVALENCES``  ``equivalences``  the equiv channel's file (``text.keywords``)
``KGSEARCH_STRICT``        ``strict``        :class:`kgsearch.query.Engine`: a failing channel
                                             raises instead of being skipped
=========================  ================  ===================================================

(``XDG_DATA_HOME`` / ``XDG_CONFIG_HOME`` are the platform's folders, read where the default
paths are made, like ``~``.)
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Iterator, Mapping

__all__ = ["Environment", "VARIABLES", "from_environ", "current", "configure", "configured"]


@dataclass(frozen=True)
class Environment:
    db: str | None = None
    config: str | None = None
    data: str | None = None
    model: str | None = None
    memory_mb: str | None = None           # checked by kgsearch.budget.budget_bytes (a bad value: exit 2)
    vec_cache_mb: str | None = None
    equivalences: str | None = None
    strict: bool = False


VARIABLES: dict[str, str] = {f.name: "KGSEARCH_" + f.name.upper() for f in fields(Environment)}


def from_environ(environ: Mapping[str, str] | None = None) -> Environment:
    """The :class:`Environment` that ``environ`` (default ``os.environ``) sets: empty values
    count as unset; ``KGSEARCH_STRICT`` is on unless empty or ``0``."""
    environ = os.environ if environ is None else environ
    values: dict = {}
    for name, var in VARIABLES.items():
        raw = environ.get(var)
        if name == "strict":
            values[name] = (raw or "") not in ("", "0")
        elif raw is not None and raw.strip() != "":
            values[name] = raw
    return Environment(**values)


_current = Environment()


def current() -> Environment:
    """What the library uses now (an empty :class:`Environment` unless configured)."""
    return _current


def configure(env: Environment) -> Environment:
    """Use ``env`` from now on; returns the one it replaces (to restore it)."""
    global _current
    previous, _current = _current, env
    return previous


@contextmanager
def configured(env: Environment) -> Iterator[Environment]:
    """``env`` for the duration of a ``with`` block (the CLI: one command)."""
    previous = configure(env)
    try:
        yield env
    finally:
        configure(previous)
