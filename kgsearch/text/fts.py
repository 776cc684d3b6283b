"""SQLite FTS5 channel: an external-content FTS5 table over ``nodes(name, text)``.

The table ``text_fts`` stores only the inverted index (``content='nodes_fts'``, a view of
``nodes`` that decodes compressed texts), so the text is not duplicated. It is kept in sync by :func:`update` from the :class:`ChangeSet`: FTS5's
``'delete'`` command needs the exact old values, which the ChangeSet carries for modified and
removed nodes. When FTS5 is missing from the SQLite build the channel is off: one notice in
the log, ``search`` returns empty arrays.

:func:`build_query` turns any user string into a valid FTS5 expression (quoted terms joined
by OR, phrases, ``prefix*``, ``name:``/``text:`` column filters, explicit AND/OR/NOT between
operands); anything else is dropped. :func:`text_search` fuses BM25 and FTS5 as
``max(bm25 / max_bm25, fts / max_fts)``.
"""
from __future__ import annotations

import logging
import re
import sqlite3

import numpy as np

from ..store.sql import exec_in_chunks
from ..cjk import has_cjk, spaced
from .tokenize import STOP_WORDS, clean_query

__all__ = ["available", "create_table", "update", "build_query", "query_expressions", "search", "text_search",
           "operands", "operand_terms", "bound_expression", "ROWS_CAP", "VERSION", "TABLE"]

log = logging.getLogger(__name__)

VERSION = 2          # 2: CJK characters are tokens of their own (the content view spaces them out)
TABLE = "text_fts"
NAME_WEIGHT = 3.0          # bm25() column weights: name, text
_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
_AVAILABLE: bool | None = None
_NOTICED = False


def available() -> bool:
    """Whether this Python's SQLite has FTS5 (checked once per process)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            c = sqlite3.connect(":memory:")
            c.execute("CREATE VIRTUAL TABLE t USING fts5(a)")
            c.close()
            _AVAILABLE = True
        except sqlite3.Error:
            _AVAILABLE = False
    return _AVAILABLE


def _notice_off() -> None:
    global _NOTICED
    if not _NOTICED:
        log.warning("SQLite has no FTS5 here: the fts channel is off (BM25 still works)")
        _NOTICED = True


def _exists(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (TABLE,)).fetchone() is not None


def create_table(conn) -> None:
    """The FTS5 table, external content: its content is the view ``nodes_fts`` (``nodes`` with
    long texts decoded, see :mod:`kgsearch.store.textcodec`), so nothing is stored twice."""
    conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING fts5(name, text, content='nodes_fts', "
                 f"content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')")


REBUILD_SHARE = 0.25      # removed/modified share of the rows above which the table is rebuilt


def update(ix, changes, full: bool, indexed_gone: set[int] | None = None) -> dict:
    """Sync ``text_fts`` with ``nodes``. ``indexed_gone``: removed/modified ids that were indexed."""
    if not available():
        _notice_off()
        ix.set_meta("text.fts", "off")
        return {"mode": "off", "reason": "SQLite has no FTS5"}
    conn = ix.conn
    if not _exists(conn):
        create_table(conn)
        full = True
    gone = sorted(set(changes.removed) | set(changes.modified))
    if indexed_gone is not None:
        gone = [i for i in gone if i in indexed_gone]
    if not full and any(i not in changes.old for i in gone):
        full = True            # cannot retract without the old values: rebuild instead
    if not full and len(gone) >= 64:
        # FTS5 keeps a deleted row as a tombstone in a new segment until segments merge: after
        # removing a large share of the rows, rebuilding from the content is smaller and as
        # fast (the same rebuild as a full run; it used to come with the BM25 rebuild that a
        # 10 % move of avgdl forced, which an incremental run no longer needs)
        left = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
        full = len(gone) > REBUILD_SHARE * (left + len(gone))
    if full:
        conn.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES('rebuild')")
        ix.set_meta("text.fts", "on")
        return {"mode": "full"}
    # 'delete' must be given the values that were indexed: what the content view gave then
    conn.executemany(f"INSERT INTO {TABLE}({TABLE}, rowid, name, text) VALUES('delete', ?, ?, ?)",
                     [(i, spaced(changes.old[i][0] or ""), spaced(changes.old[i][1] or "")) for i in gone])
    new = sorted(set(changes.added) | set(changes.modified))
    exec_in_chunks(conn, f"INSERT INTO {TABLE}(rowid, name, text) SELECT id, name, text FROM nodes_fts "
                         f"WHERE id IN ({{}})", new)
    ix.set_meta("text.fts", "on")
    return {"mode": "incremental", "deleted": len(gone), "inserted": len(new)}


# ---------------------------------------------------------------------------- query building
_LEX = re.compile(r'"(?P<phrase>[^"]*)"?|(?P<col>\b(?:name|text)):(?=\S)|(?P<word>\w+)(?P<star>\*)?|(?P<other>\S)')
_OPS = {"AND", "OR", "NOT"}


def build_query(query: str, stopwords=STOP_WORDS) -> str | None:
    """A safe FTS5 MATCH expression for ``query`` (``None`` when nothing searchable remains)."""
    query = clean_query(query)
    items: list[str] = []        # operands and operators, in order
    col: str | None = None
    for m in _LEX.finditer(query):
        if m.group("col"):
            col = m.group("col")
            continue
        if m.group("phrase") is not None:
            words = _fts_words(m.group("phrase"))
            operand = '"' + " ".join(words) + '"' if words else None
        elif m.group("word"):
            w = m.group("word")
            if has_cjk(w):          # a CJK word: the phrase of its characters (see kgsearch.cjk)
                items.append(('"' + " ".join(_fts_words(w)) + '"') if not col else
                             col + ' : "' + " ".join(_fts_words(w)) + '"')
                col = None
                continue
            if w in _OPS:
                items.append(w)
                col = None
                continue
            if w.lower() in stopwords and not m.group("star"):
                operand = "\0" + '"' + w + '"'          # kept only if nothing else remains
            else:
                operand = '"' + w + '"' + ("*" if m.group("star") else "")
        else:
            continue                                      # punctuation, parentheses, lone '-'
        if operand is None:
            col = None
            continue
        if col:
            operand = ("\0" if operand[0] == "\0" else "") + col + " : " + operand.lstrip("\0")
            col = None
        items.append(operand)
    if not any(x not in _OPS and not x.startswith("\0") for x in items):
        items = [x.lstrip("\0") for x in items]          # only stop words: search them
    else:
        items = [x for x in items if not x.startswith("\0")]
    out: list[str] = []
    pending: str | None = None
    for x in items:
        if x in _OPS:
            if out:
                pending = x
            continue
        if out:
            out.append(pending or "OR")
        out.append(x)
        pending = None
    return " ".join(out) if out else None


def _fts_words(text: str) -> list[str]:
    """The FTS5 tokens of ``text`` as the content view gives them: words, and each CJK
    character on its own."""
    return re.findall(r"\w+", spaced(text))


def _plain_query(query: str) -> str | None:
    words = [w for w in re.findall(r"\w+", clean_query(query)) if w.lower() not in STOP_WORDS]
    return " OR ".join('"' + " ".join(_fts_words(w)) + '"' for w in words[:64]) or None


def query_expressions(query: str) -> tuple[str | None, str | None]:
    """The MATCH expressions :func:`search` tries in turn: the query's own syntax
    (:func:`build_query`), then its plain words OR-ed (when FTS5 rejects the first)."""
    return build_query(query), _plain_query(query)


# ---------------------------------------------------------------------------- a bounded OR
ROWS_CAP = 100_000        # postings an OR-only expression may cover (sum of its operands' document counts)
_PART = re.compile(r'(?:\b(?:name|text) : )?"[^"]*"\*?|\b(?:AND|OR|NOT)\b')


def operands(expr: str) -> tuple[list[str], set[str]]:
    """The operands of a :func:`build_query` expression, in order, and the operators between them."""
    parts = _PART.findall(expr)
    return [p for p in parts if p not in _OPS], {p for p in parts if p in _OPS}


def bound_expression(expr: str, df_of, n_docs: int, cap: int | None = None) -> str:
    """``expr`` with its most common words left out when it is an OR of operands whose document
    counts add up to more than ``cap`` postings (``df_of(operand)``: an operand's estimated
    document count). FTS5 ranks an OR by scoring every row that matches any operand (no
    early termination): a long query with a quoted phrase ORs every word of it, ~0.9 s at 1M
    nodes. The rarest operands are kept (a phrase counts as its rarest word, so it stays),
    in their order, at least one; an expression with AND or NOT, or within the cap, is
    returned unchanged. FTS5 costs ~1 us a posting here, so the cap holds the channel near
    0.1 s; the quoted BEIR queries cover at most 16,450 postings (cisi), so no BEIR ranking
    changes."""
    cap = ROWS_CAP if cap is None else cap
    ops, operators = operands(expr)
    if len(ops) < 2 or operators - {"OR"}:
        return expr
    df = [min(max(int(df_of(o)), 0), n_docs) for o in ops]
    if sum(df) <= cap:
        return expr
    keep, total = set(), 0
    for i in sorted(range(len(ops)), key=lambda i: (df[i], i)):
        if keep and total + df[i] > cap:
            break
        keep.add(i)
        total += df[i]
    return " OR ".join(o for i, o in enumerate(ops) if i in keep)


def operand_terms(expr: str | None, analyzer) -> tuple:
    """``(operand, its analysed terms)`` for each operand of ``expr`` (terms ``None`` for a
    prefix: it may be any word), word by word with ``analyzer.analyze_word`` (the memo the
    whole text's analysis filled). The query parser calls it (``Query.fts_terms``), so the
    channel's bound analyses nothing during a search."""
    if not expr:
        return ()
    out = []
    for op in operands(expr)[0]:
        body = op.split(" : ", 1)[-1]
        if body.endswith("*"):
            out.append((op, None))
            continue
        terms = (t for w in re.findall(r"\w+", body) for t in analyzer.analyze_word(w))
        out.append((op, tuple(dict.fromkeys(t for t in terms if t))))
    return tuple(out)


def _df_lookup(ix, terms_of: dict | None = None):
    """``(df_of(operand), n)`` from the BM25 postings (the index's analyser; a close estimate of
    FTS5's own counts): a word its document count, a phrase its rarest word's, a prefix or a
    word the analyser drops (a stop word) every node. ``terms_of``: each operand's terms, as
    :func:`operand_terms` gave them (else analysed here)."""
    from .postings import stored_params

    st, params = stored_params(ix)
    if st is None or params is None:
        return None, 0
    n = int(st.get("n", 0) or 0)
    memo: dict[str, int] = {}
    analyze = []

    def df_of(op: str) -> int:
        if terms_of is not None and op in terms_of:
            terms = terms_of[op]
        else:
            if not analyze:
                analyze.append(params.analyzer())
            terms = operand_terms(op, analyze[0])[0][1]
        if not terms:                    # a prefix (None) or only stop words
            return n
        todo = [t for t in terms if t not in memo]
        if todo:
            memo.update({t: 0 for t in todo})
            for t, d in ix.conn.execute(f"SELECT term, df FROM text_postings WHERE term IN ({','.join('?' * len(todo))})",
                                        todo):
                memo[t] = int(d)
        return min(memo[t] for t in terms)

    return df_of, n


def _indexed(ix) -> int:
    """Nodes the text index holds (the BM25 state's N; no count over the table)."""
    from .postings import state

    st = state(ix) or {}
    return int(st.get("n", 0) or 0)


def search(ix, query: str, k: int = 100, *, expressions: tuple[str | None, ...] | None = None,
           operand_terms: tuple | None = None, **opts) -> tuple[np.ndarray, np.ndarray]:
    """FTS5 channel: (node ids, -bm25 scores), best first. Never raises on the query string.
    ``expressions``: :func:`query_expressions` of the query when the caller has them;
    ``operand_terms``: :func:`operand_terms` of each (the parsed query's ``fts_terms``)."""
    try:
        k = max(0, int(k))
    except (TypeError, ValueError):
        k = 100
    if not available():
        return "FTS5 is not available in this SQLite build"
    if k == 0:
        return _EMPTY
    conn = ix.conn
    try:
        if not _exists(conn):
            return _EMPTY
    except sqlite3.Error:
        return _EMPTY
    for i, expr in enumerate(query_expressions(query) if expressions is None else expressions):
        if not expr:
            continue
        given = operand_terms[i] if operand_terms is not None and i < len(operand_terms) else None
        df_of, n_docs = _df_lookup(ix, dict(given) if given else None)
        if df_of:
            expr = bound_expression(expr, df_of, n_docs)
        try:
            rows = conn.execute(
                f"SELECT rowid, bm25({TABLE}, ?, 1.0) AS r FROM {TABLE} WHERE {TABLE} MATCH ? "
                f"ORDER BY r, rowid LIMIT ?", (NAME_WEIGHT, expr, k)).fetchall()
        except sqlite3.OperationalError as exc:
            log.debug("fts query %r failed: %s", expr, exc)
            continue
        except sqlite3.DatabaseError as exc:          # a damaged FTS index: channel answers empty
            log.warning("fts index unreadable (%s); rebuild with `kgsearch index --full`", exc)
            return _EMPTY
        if not rows:
            return _EMPTY
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        sc = np.fromiter((-r[1] for r in rows), dtype=np.float32, count=len(rows))
        return ids, sc
    return _EMPTY


def text_search(ix, query: str, k: int = 100, **opts) -> tuple[np.ndarray, np.ndarray]:
    """Text score = max(BM25 / top BM25, FTS5 / top FTS5) over the union of both channels."""
    from . import bm25
    scores: dict[int, float] = {}
    for fn in (bm25.search, search):
        out = fn(ix, query, k, **opts)
        if isinstance(out, str):
            continue
        ids, sc = out
        if ids.size == 0 or sc[0] <= 0:
            continue
        norm = sc / sc[0]
        for i, s in zip(ids.tolist(), norm.tolist()):
            if s > scores.get(i, 0.0):
                scores[i] = s
    if not scores:
        return _EMPTY
    items = sorted(scores.items(), key=lambda p: (-p[1], p[0]))[:k]
    return (np.array([p[0] for p in items], dtype=np.int64),
            np.array([p[1] for p in items], dtype=np.float32))


FULL_K = 2000


def score_all(ix, query: str, *, expressions: tuple[str | None, ...] | None = None, operand_terms: tuple | None = None,
              **opts) -> tuple[np.ndarray, np.ndarray, int]:
    """FTS5 scores of the (up to ``FULL_K``) matching nodes: (ids ascending, scores, N indexed
    nodes), so the pipeline can standardise FTS5 like BM25 (non-matching nodes score 0)."""
    out = search(ix, query, FULL_K, expressions=expressions, operand_terms=operand_terms)
    if isinstance(out, str):                      # FTS5 off: no population, the pipeline asks search() why
        return np.zeros(0, np.int64), np.zeros(0), 0
    ids, sc = out
    n = _indexed(ix)                              # (the BM25 state's N: a count(*) is ~10 ms at 1M)
    if not len(ids) or n == 0:
        return np.zeros(0, np.int64), np.zeros(0), n
    order = np.argsort(ids, kind="stable")
    return ids[order], np.maximum(sc[order].astype(np.float64), 0.0), n
