"""Keyword extraction for code tasks, and the equivalence-class channel.

:func:`extract` reads a task or question and returns :class:`Keywords`:

* ``exact``: backtick-quoted identifiers, verbatim (```parse_args``` -> ``parse_args``).
* ``compounds``: identifiers written in the text: CamelCase, snake_case, dotted names and
  ``obj.method()`` calls (the ``()`` dropped).
* ``components``: lower-case parts of those compounds, plus abbreviation expansions
  (``ctx`` -> ``context``, ``cfg`` -> ``config``; :data:`ABBREVIATIONS`) of any word.
* ``bigrams``: adjacent plain words joined the two ways code spells them
  (``blast radius`` -> ``BlastRadius``, ``blast_radius``).
* ``equivalents``: target symbol names of user-editable equivalence classes whose phrase
  occurs in the query (``"retry logic" -> ["RetryPolicy", "with_backoff"]``).

Equivalence classes live in a JSON file (:func:`equivalences_path`: ``$KGSEARCH_EQUIVALENCES``,
else ``equivalences.json`` beside the config file), either ``{"phrase": ["Target", ...]}`` or
``{"classes": [{"phrases": [...], "targets": [...]}]}``. Phrases match case-insensitively on
word boundaries.

:func:`search_equivalences` is the ``equiv`` channel: nodes whose name (or qualname tail)
equals a target of a matched class, scored 1.0, 0.99, ... in the file's order.
"""
from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..codelike import BACKTICK, CALL, CAMEL, DOTTED, SNAKE
from .tokenize import STOP_WORDS, clean_query, split_identifier

__all__ = ["Keywords", "extract", "ABBREVIATIONS", "load_equivalences", "equivalences_path",
           "search_equivalences", "equivalents_in", "bigram_compounds"]

log = logging.getLogger(__name__)

ABBREVIATIONS: dict[str, str] = {
    "ctx": "context", "cfg": "config", "conf": "config", "config": "configuration",
    "db": "database", "idx": "index", "msg": "message", "req": "request", "res": "response",
    "resp": "response", "err": "error", "env": "environment", "fn": "function",
    "func": "function", "arg": "argument", "args": "arguments", "param": "parameter",
    "params": "parameters", "auth": "authentication", "authn": "authentication",
    "authz": "authorization", "repo": "repository", "dir": "directory", "doc": "document",
    "docs": "documentation", "impl": "implementation", "init": "initialize", "str": "string",
    "num": "number", "obj": "object", "val": "value", "var": "variable", "tmp": "temporary",
    "temp": "temporary", "src": "source", "dst": "destination", "util": "utility",
    "utils": "utilities", "lib": "library", "pkg": "package", "mgr": "manager", "btn": "button",
    "img": "image", "len": "length", "max": "maximum", "min": "minimum", "calc": "calculate",
    "cnt": "count", "prev": "previous", "cur": "current", "curr": "current", "buf": "buffer",
    "async": "asynchronous", "info": "information", "spec": "specification",
    "addr": "address", "alloc": "allocate", "attr": "attribute", "attrs": "attributes",
    "cb": "callback", "cmd": "command", "col": "column", "conn": "connection",
    "db_conn": "database connection", "def": "definition", "del": "delete", "desc": "description",
    "dict": "dictionary", "elem": "element", "eq": "equal", "exc": "exception", "expr": "expression",
    "ext": "extension", "fmt": "format", "gen": "generate", "hdr": "header", "id": "identifier",
    "iter": "iterator", "kw": "keyword", "kwargs": "keyword arguments", "lang": "language",
    "ln": "line", "loc": "location", "mod": "module", "msgs": "messages", "nav": "navigation",
    "opt": "option", "opts": "options", "perm": "permission", "pos": "position",
    "proc": "process", "prop": "property", "props": "properties", "ptr": "pointer",
    "q": "query", "qs": "query string", "ref": "reference", "regex": "regular expression",
    "repr": "representation", "ret": "return", "sess": "session", "sig": "signature",
    "srv": "server", "stmt": "statement", "sym": "symbol", "sys": "system", "tbl": "table",
    "tok": "token", "txn": "transaction", "usr": "user", "vec": "vector", "ws": "websocket",
}

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


@dataclass
class Keywords:
    exact: list[str] = field(default_factory=list)
    compounds: list[str] = field(default_factory=list)
    components: list[str] = field(default_factory=list)
    bigrams: list[str] = field(default_factory=list)
    equivalents: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        """Every keyword once, most specific first (exact, compounds, equivalents, bigrams, components)."""
        seen: set[str] = set()
        out = []
        for group in (self.exact, self.compounds, self.equivalents, self.bigrams, self.components):
            for w in group:
                if w not in seen:
                    seen.add(w)
                    out.append(w)
        return out

    def as_dict(self) -> dict:
        return {"exact": self.exact, "compounds": self.compounds, "components": self.components,
                "bigrams": self.bigrams, "equivalents": self.equivalents}


def _add(lst: list[str], w: str) -> None:
    if w and w not in lst:
        lst.append(w)


def bigram_compounds(w1: str, w2: str) -> list[str]:
    """``("blast", "radius")`` -> ``["BlastRadius", "blast_radius", "blastRadius"]``."""
    a, b = w1.lower(), w2.lower()
    return [a.capitalize() + b.capitalize(), f"{a}_{b}", a + b.capitalize()]


def extract(query: str, equivalences: dict[str, list[str]] | None = None) -> Keywords:
    """Keywords of a code task or question (see the module docstring)."""
    q = clean_query(query)
    kw = Keywords()
    for m in BACKTICK.finditer(q):
        ident = m.group(1).strip()
        if ident:
            _add(kw.exact, ident[:-2] if ident.endswith("()") else ident)
    rest = BACKTICK.sub(" ", q)
    spans: list[tuple[int, int]] = []
    for rx in (DOTTED, CALL, CAMEL, SNAKE):
        for m in rx.finditer(rest):
            if any(s <= m.start() < e for s, e in spans):
                continue
            tok = m.group(1) if rx is CALL else m.group(0)
            tok = tok[:-2] if tok.endswith("()") else tok
            spans.append((m.start(), m.end()))
            _add(kw.compounds, tok)
    for ident in kw.exact + kw.compounds:
        for part in re.split(r"[.\s]+", ident):
            for p in split_identifier(part):
                pl = p.lower()
                if pl not in STOP_WORDS and len(pl) > 1:
                    _add(kw.components, pl)
    words = _WORD.findall(rest)
    for w in words:
        exp = ABBREVIATIONS.get(w.lower())
        if exp:
            _add(kw.components, exp)
    for p in list(kw.components):
        exp = ABBREVIATIONS.get(p)
        if exp:
            _add(kw.components, exp)
    # bigram compounds of adjacent plain (lower-case, non-stop) words
    plain = [(m.group(0), m.start()) for m in re.finditer(r"[A-Za-z]+", rest)]
    for (w1, s1), (w2, s2) in zip(plain, plain[1:]):
        between = rest[s1 + len(w1):s2]
        if between.strip() or not (w1.islower() and w2.islower()):
            continue
        if w1 in STOP_WORDS or w2 in STOP_WORDS or len(w1) < 3 or len(w2) < 3:
            continue
        for c in bigram_compounds(w1, w2):
            _add(kw.bigrams, c)
    if equivalences is None:
        equivalences = load_equivalences()
    kw.equivalents = equivalents_in(q, equivalences)
    return kw


def equivalents_in(text: str, equivalences: dict[str, list[str]]) -> list[str]:
    """The targets of the equivalence classes whose phrase occurs in ``text`` (case-insensitive,
    on word boundaries), in the file's order, each once."""
    out: list[str] = []
    low = " " + re.sub(r"\s+", " ", clean_query(text).lower()) + " "
    for phrase, targets in equivalences.items():
        p = phrase.lower().strip()
        if p and re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", low):
            for t in targets:
                _add(out, t)
    return out


# ---------------------------------------------------------------------------- equivalences
_EQ_CACHE: dict[str, tuple[float, dict[str, list[str]]]] = {}


def equivalences_path() -> Path:
    from ..environment import current

    env = current().equivalences
    if env:
        return Path(env).expanduser()
    from ..config import config_path
    return config_path().parent / "equivalences.json"


def load_equivalences(path: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """Phrase (lower-case) -> target symbol names. A missing file is empty; a broken one a DataError."""
    p = Path(path) if path else equivalences_path()
    try:
        mtime = p.stat().st_mtime
    except OSError:
        return {}
    hit = _EQ_CACHE.get(str(p))
    if hit and hit[0] == mtime:
        return hit[1]
    from ..config import read_user_json
    from ..errors import DataError
    try:
        raw = read_user_json(p)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON ({exc.msg}); fix the equivalences file or remove it",
                        str(p), exc.lineno) from None
    except OSError as exc:
        raise DataError(f"cannot read equivalences ({exc.strerror})", str(p)) from None
    out: dict[str, list[str]] = {}

    def put(phrase, targets):
        if not isinstance(phrase, str) or not isinstance(targets, (list, tuple, str)):
            raise DataError('equivalences must look like {"phrase": ["Target", ...]} or '
                            '{"classes": [{"phrases": [...], "targets": [...]}]}', str(p))
        targets = [targets] if isinstance(targets, str) else [str(t) for t in targets]
        lst = out.setdefault(phrase.lower().strip(), [])
        for t in targets:
            if t not in lst:
                lst.append(t)

    if isinstance(raw, dict) and isinstance(raw.get("classes"), list):
        for c in raw["classes"]:
            if not isinstance(c, dict):
                raise DataError('each class must be {"phrases": [...], "targets": [...]}', str(p))
            for ph in c.get("phrases") or []:
                put(ph, c.get("targets") or [])
    elif isinstance(raw, dict):
        for ph, targets in raw.items():
            put(ph, targets)
    else:
        raise DataError('equivalences must be a JSON object like {"phrase": ["Target"]}', str(p))
    _EQ_CACHE[str(p)] = (mtime, out)
    return out


_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
UNREAD = "not read: "       # the equiv channel's answer when the user's file is broken (a notice)


def search_equivalences(ix, query: str, k: int = 100, *, equivalences=None, **opts):
    """``equiv`` channel: nodes named by the targets of equivalence classes found in the query."""
    from . import pattern
    try:
        k = max(0, int(k))
    except (TypeError, ValueError):
        k = 100
    if k == 0:
        return _EMPTY
    try:
        eq = equivalences if isinstance(equivalences, dict) else load_equivalences(equivalences)
    except Exception as exc:          # a broken file must not break searching: said, not raised
        log.debug("equivalences not read", exc_info=True)
        return f"{UNREAD}{exc}"
    if not eq:
        return "no equivalence classes configured (equivalences.json next to the config file)"
    targets = equivalents_in(query, eq)
    scores: dict[int, float] = {}
    for rank, t in enumerate(targets[:50]):
        try:
            found = pattern.match_token(ix.conn, t, k, fuzzy=False)
        except Exception:
            log.debug("equiv lookup failed for %r", t, exc_info=True)
            continue
        for nid, s in found.items():
            if s >= 1.0:
                sc = max(0.01, 1.0 - 0.01 * rank)
                if sc > scores.get(nid, 0.0):
                    scores[nid] = sc
    if not scores:
        return _EMPTY
    items = sorted(scores.items(), key=lambda p: (-p[1], p[0]))[:k]
    return (np.array([p[0] for p in items], dtype=np.int64),
            np.array([p[1] for p in items], dtype=np.float32))
