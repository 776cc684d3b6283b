"""Index settings: every key a user can set (``kgsearch index --stemmer``, ``eval --set``), typed.

Settings are remembered in the index (meta ``settings``, the flat keys the user gave) and a run
whose settings differ from the stored ones rebuilds the derived data. Keys are flat
(``{"stemmer": "light", "k1": 1.2}``); the text keys may also sit in a ``"text"`` object.
An unknown key is an error that names the nearest known one, so a typo never silently forces
a rebuild that changes nothing:

>>> IndexSettings.from_dict({"stemer": "light"})
Traceback (most recent call last):
...
kgsearch.errors.UsageError: unknown setting 'stemer' (did you mean 'stemmer'?); known settings: avgdl_drift, b, edge_weights, embed, embed_max_chars, fold_accents, graph_adjacency_rows, graph_communities_drift, graph_communities_max_pairs, graph_communities_seconds, idf, k1, model, name_weight, neighbors, split_code, stemmer
>>> IndexSettings.from_dict({"stemmer": "light"}).text.stemmer
'light'

Ranking constants used at query time live with the measurements that chose them:
``kgsearch.query.tuning`` (fusion), ``kgsearch.query.intent.INTENTS`` (weights per intent) and
``kgsearch.config.EDGE_WEIGHTS`` (edge types).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from .config import weight_table
from .errors import UsageError
from .lines import quoted
from .numerals import as_float, parse_int

__all__ = ["TextSettings", "EmbedSettings", "GraphSettings", "IndexSettings", "STEMMERS"]

STEMMERS = ("porter2", "light", "none")


@dataclass(frozen=True)
class TextSettings:
    """BM25 and the analyzer (:mod:`kgsearch.text`). Chosen on the shared BEIR sets
    (bench/results/text_quality.md): Porter2 mean nDCG@10 0.4917 vs light 0.4660."""

    stemmer: str = "porter2"        # porter2 | light | none
    k1: float = 1.5
    b: float = 0.75
    name_weight: float = 3.0        # BM25F-style: a name/title term counts this many times
    idf: str = "lucene"             # lucene: log(1 + (N-df+.5)/(df+.5)); robertson: without the 1 +
    split_code: bool = True         # CamelCase / snake_case identifiers also give their parts
    fold_accents: bool = True       # Latin letters lose their accents (café = cafe, straße = strasse)
    avgdl_drift: float = 0.10       # unused: scores always use the live avgdl (kept: stored settings stay valid)


@dataclass(frozen=True)
class EmbedSettings:
    """Static embeddings (:mod:`kgsearch.embed`)."""

    embed: bool = True              # --no-embed / --embed (remembered)
    model: str | None = None        # a model2vec folder or a pulled model name; None: shipped default
    embed_max_chars: int = 2000     # characters of name + text embedded per node


@dataclass(frozen=True)
class GraphSettings:
    """The graph steps (:mod:`kgsearch.graph`, the ``similar_text`` neighbours)."""

    edge_weights: Mapping[str, float] | None = None   # edge type -> weight, over config.EDGE_WEIGHTS
    graph_communities_max_pairs: int = 1_000_000      # CNM skipped above this many linked pairs
    graph_communities_seconds: float = 120.0          # CNM time budget (cron on a phone)
    graph_communities_drift: float = 0.02             # full CNM again once this share of nodes changed
    graph_adjacency_rows: int = 2_000_000             # edges: from here queries read per-node rows, not the CSR
    neighbors: bool = True                            # similar_text edges between prose nodes


_SECTIONS = (("text", TextSettings), ("embed", EmbedSettings), ("graph", GraphSettings))
_FIELD_OF: dict[str, tuple[str, Any]] = {f.name: (sec, f) for sec, cls in _SECTIONS for f in fields(cls)}


def _said(value: Any) -> str:
    """A setting's key or value in a message: text as typed (:func:`kgsearch.lines.quoted`, one
    backslash), a number, list or object from JSON as Python shows it."""
    return quoted(value) if isinstance(value, str) else repr(value)


def _convert(key: str, value: Any, default: Any) -> Any:
    """``value`` as the type of the field's default (strings from ``--set`` are converted)."""
    try:
        if key == "stemmer":
            v = str(value).lower()
            if v not in STEMMERS:
                raise UsageError(f"unknown stemmer {_said(value)}; choose from {', '.join(STEMMERS)}")
            return v
        if key == "idf":
            if value not in ("lucene", "robertson"):
                raise UsageError(f"unknown idf {_said(value)}; choose from lucene, robertson")
            return value
        if key == "model":
            return None if value in (None, "") else str(value)
        if key == "edge_weights":
            if value is None:
                return None
            try:
                return weight_table(value)
            except ValueError as exc:
                raise UsageError(f"setting edge_weights: {exc}") from None
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(default, int):
            if isinstance(value, str):                 # (int() reads '٣' and '3_0' too)
                return parse_int(value)
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if isinstance(default, float):
            return as_float(value)
    except (TypeError, ValueError, OverflowError):
        number = isinstance(default, (int, float)) and not isinstance(default, bool)
        raise UsageError(f"setting {key}={_said(value)} is not a valid {type(default).__name__}"
                         + (f" (ASCII digits, e.g. {key}={default!r})" if number else "")) from None
    return value


@dataclass(frozen=True)
class IndexSettings:
    """All index settings, by section. Build with :meth:`from_dict` (validates)."""

    text: TextSettings = field(default_factory=TextSettings)
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "IndexSettings":
        """Validate flat keys (and an optional ``"text"`` object) into typed settings."""
        flat = dict(d or {})
        text = flat.pop("text", None)
        if isinstance(text, Mapping):
            flat = {**flat, **text}
        elif text is not None:
            raise UsageError('setting "text" must be an object like {"k1": 1.2}')
        parts: dict[str, dict[str, Any]] = {"text": {}, "embed": {}, "graph": {}}
        for key, value in flat.items():
            spec = _FIELD_OF.get(key)
            if spec is None:
                near = difflib.get_close_matches(str(key), list(_FIELD_OF), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise UsageError(f"unknown setting {_said(key)}{hint}; known settings: {', '.join(sorted(_FIELD_OF))}")
            sec, f = spec
            parts[sec][key] = _convert(key, value, f.default)
        return cls(TextSettings(**parts["text"]), EmbedSettings(**parts["embed"]), GraphSettings(**parts["graph"]))

    @classmethod
    def coerce(cls, value: "IndexSettings | Mapping[str, Any] | None") -> "IndexSettings":
        """Settings from what a caller passed: an :class:`IndexSettings`, a dict or ``None``."""
        return value if isinstance(value, IndexSettings) else cls.from_dict(value)

    @staticmethod
    def known() -> list[str]:
        return sorted(_FIELD_OF)
