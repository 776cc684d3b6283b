"""Where things live and the tunable tables (edge-type weights), with a JSON override file.

Default index: ``$KGSEARCH_DB``, else ``$XDG_DATA_HOME/kgsearch/index.db`` (``~/.local/share``
when unset; under ``$HOME`` on Termux too). Config file: ``$KGSEARCH_CONFIG``, else
``$XDG_CONFIG_HOME/kgsearch/config.json``. The ``KGSEARCH_*`` values are the ones the CLI read
(:mod:`kgsearch.environment`); a library caller that configured none gets the XDG defaults.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from .environment import current
from .errors import DataError, UsageError
from .lines import quoted
from .numerals import as_float

# Edge-type weights used by graph signals (combined with the per-edge weight).
EDGE_WEIGHTS: dict[str, float] = {
    # knowledge-graph types
    "implements": 1.0, "provides": 1.0, "enables": 0.9, "used_for": 0.9,
    "depends_on": 0.8, "requires": 0.8, "feeds_into": 0.8, "followed_by": 0.7,
    "part_of": 0.7, "similar_to": 0.6, "complements": 0.6, "relates_to": 0.5,
    "has_workaround": 0.4, "alternative_to": 0.4, "has_limitation": 0.3,
    # code types
    "calls": 1.0, "overrides": 0.8, "extends": 0.7, "inherits": 0.7,
    "contains": 0.8, "tests": 0.6, "imports": 0.5, "references": 0.4,
    "member_of": 0.8,       # a method defined outside its type's declaration -> the type (as contains)
    # notes and text (set by measurement, see docs/ranking.md)
    "links_to": 0.6, "mentioned_in": 0.5, "mentions": 0.5, "tagged": 0.4,
    "similar_text": 0.5,
}
DEFAULT_EDGE_WEIGHT = 0.3


def data_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "kgsearch"


def cache_home() -> Path:
    """Where derived data that is rebuilt when missing is kept (the lists of several indexes
    searched as one, :mod:`kgsearch.query.across`; the ids of model files already hashed,
    :mod:`kgsearch.embed.model_ids`): ``$XDG_CACHE_HOME/kgsearch``, else ``~/.cache/kgsearch``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kgsearch"


def env_db_paths() -> list[str]:
    """The indexes ``$KGSEARCH_DB`` lists (several separated by ``os.pathsep``), in order."""
    return [p for p in (current().db or "").split(os.pathsep) if p.strip()]


def distinct_dbs(paths) -> list[str]:
    """``paths`` with each index once, in order, under the first spelling given: ``a.db``,
    ``./a.db``, an absolute path, a symlink or a hard link to the same file are one index (the
    same file searched twice ranked every hit twice)."""
    out, seen = [], set()
    for p in paths:
        p = os.path.expanduser(str(p))
        try:
            st = os.stat(p)
            ident = ("inode", st.st_dev, st.st_ino)
        except OSError:
            ident = ("path", os.path.realpath(p))
        if ident not in seen:
            seen.add(ident)
            out.append(p)
    return out


def default_db_path() -> Path:
    """``$KGSEARCH_DB`` (its first index when it lists several), else the data dir's ``index.db``."""
    listed = env_db_paths()
    return Path(listed[0]).expanduser() if listed else data_home() / "index.db"


def config_path() -> Path:
    env = current().config
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "kgsearch" / "config.json"


def read_user_json(p: Path):
    """The JSON value of a file a person edits (the config, the equivalences): UTF-8 with or
    without a byte-order mark, or UTF-16/UTF-32 as Windows editors save "Unicode" (the encoding
    is detected as :func:`json.loads` does for bytes). Raises ``json.JSONDecodeError`` for bad
    JSON, ``OSError`` when unreadable, and a :class:`DataError` naming the file for bytes that
    are no such text."""
    data = p.read_bytes()
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 or UTF-16 text (byte {exc.start}); save the file as UTF-8", str(p)) from None
    except RecursionError:
        raise DataError("JSON nested too deeply to read; fix the file or remove it", str(p)) from None


def load_config(path: str | os.PathLike | None = None) -> dict:
    """Read the JSON config file; a missing file is an empty config, a broken one a DataError."""
    p = Path(path) if path else config_path()
    if not p.exists():
        return {}
    try:
        cfg = read_user_json(p)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON ({exc.msg}); fix the file or remove it", str(p), exc.lineno) from None
    except OSError as exc:
        raise DataError(f"cannot read config ({exc.strerror})", str(p)) from None
    if not isinstance(cfg, dict):
        raise DataError("config must be a JSON object like {\"edge_weights\": {...}}", str(p))
    return cfg


def weight_table(given) -> dict[str, float]:
    """``{"calls": 1.0, ...}`` checked: an object of edge types, each weight a finite number
    >= 0 (0: never followed) in ASCII digits (:func:`kgsearch.numerals.as_float`: ``"٣"``,
    ``true`` and ``NaN`` are no weight). A ``ValueError`` naming the first bad one otherwise."""
    if not isinstance(given, Mapping):
        raise ValueError('edge_weights must be an object like {"calls": 1.0}')
    table = {}
    for k, v in given.items():
        try:
            w = as_float(v)
        except ValueError:
            w = -1.0
        if w < 0:
            raise ValueError(f"the weight of {quoted(str(k))} must be a number >= 0 in ASCII digits, "
                             f"got {quoted(v) if isinstance(v, str) else repr(v)} "
                             f'(e.g. {{"edge_weights": {{{json.dumps(str(k))}: 0.5}}}})')
        table[str(k)] = w
    return table


def edge_weights(cfg: dict | None = None) -> dict[str, float]:
    """The edge-type weight table with the config file's ``edge_weights`` applied on top (a bad
    weight in the file is a :class:`DataError` naming it)."""
    table = dict(EDGE_WEIGHTS)
    source = None
    if cfg is None:
        cfg, source = load_config(), config_path()
    given = cfg.get("edge_weights")
    if given is not None:
        try:
            table.update(weight_table(given))
        except ValueError as exc:
            if source is None:
                raise UsageError(f"setting edge_weights: {exc}") from None
            raise DataError(f"{exc}; fix the config file", str(source)) from None
    return table


def edge_weight(etype: str, table: dict[str, float] | None = None) -> float:
    t = EDGE_WEIGHTS if table is None else table
    return t.get(etype, t.get("unknown", DEFAULT_EDGE_WEIGHT))


def shipped_data_dir() -> Path | None:
    """The project's ``data/`` folder (demo knowledge base, default embedding model).

    Source checkouts and editable installs use ``<repo>/data``; a regular install puts it in
    ``<prefix>/share/kgsearch/data`` (setup.cfg ``data_files``). ``$KGSEARCH_DATA`` overrides.
    """
    import sys

    env = current().data
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parent.parent / "data",
                   Path(sys.prefix) / "share" / "kgsearch" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    return None
