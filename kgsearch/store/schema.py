"""Ordered, named migrations. Each runs once (recorded in ``migrations``) inside a transaction.

Never edit a migration that has shipped: append a new one. ``SCHEMA_VERSION`` is the number
of migrations; an index with more applied than this code knows is from a newer kgsearch.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Callable

COMPACT_PENDING = "compact_pending"     # meta: the next index run ends with a VACUUM
STALE_STEPS = "stale_steps"             # meta: JSON list of derived steps to rebuild in full


def set_meta(conn: sqlite3.Connection, key: str, value) -> None:
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                 "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, str(value)))


def stale_steps(conn: sqlite3.Connection) -> list[str]:
    """Derived-data steps that a migration marked stale (their tables no longer hold what
    the data says, or their layout changed); the next index run rebuilds them in full."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (STALE_STEPS,)).fetchone()
    try:
        names = json.loads(row[0]) if row else []
    except ValueError:
        names = []
    return [str(n) for n in names] if isinstance(names, list) else []


def mark_stale(conn: sqlite3.Connection, *steps: str) -> None:
    """Migrations change schema only: derived data they invalidate is marked stale here (by
    step name) and rebuilt by the indexer, which calls :func:`clear_stale` after it did."""
    set_meta(conn, STALE_STEPS, json.dumps(sorted(set(stale_steps(conn)) | set(steps))))


def clear_stale(conn: sqlite3.Connection, steps) -> None:
    left = sorted(set(stale_steps(conn)) - set(steps))
    if left:
        set_meta(conn, STALE_STEPS, json.dumps(left))
    else:
        conn.execute("DELETE FROM meta WHERE key=?", (STALE_STEPS,))

CORE = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL DEFAULT '',
    loader TEXT NOT NULL DEFAULT '',
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    hash TEXT NOT NULL DEFAULT '',
    generation INTEGER NOT NULL DEFAULT 0,
    nodes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS files_root ON files(root);
CREATE TABLE IF NOT EXISTS nodes(
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    qualname TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    path TEXT,
    line_start INTEGER,
    line_end INTEGER,
    hash TEXT NOT NULL DEFAULT '',
    file_id INTEGER REFERENCES files(id) ON DELETE CASCADE,
    parent_id INTEGER,
    flags INTEGER NOT NULL DEFAULT 0,
    props TEXT,
    generation INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS nodes_file ON nodes(file_id);
CREATE INDEX IF NOT EXISTS nodes_kind ON nodes(kind);
CREATE INDEX IF NOT EXISTS nodes_parent ON nodes(parent_id);
CREATE TABLE IF NOT EXISTS aliases(
    ns TEXT NOT NULL,
    name TEXT NOT NULL,
    node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    rank INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS aliases_name ON aliases(ns, name);
CREATE INDEX IF NOT EXISTS aliases_node ON aliases(node_id);
CREATE TABLE IF NOT EXISTS edges(
    id INTEGER PRIMARY KEY,
    src INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    dst INTEGER REFERENCES nodes(id) ON DELETE SET NULL,
    ns TEXT NOT NULL DEFAULT 'key',
    dst_name TEXT NOT NULL,
    type TEXT NOT NULL,
    weight REAL NOT NULL DEFAULT 1.0,
    file_id INTEGER REFERENCES files(id) ON DELETE CASCADE,
    line INTEGER,
    props TEXT
);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE INDEX IF NOT EXISTS edges_file ON edges(file_id);
CREATE INDEX IF NOT EXISTS edges_unresolved ON edges(ns, dst_name) WHERE dst IS NULL;
CREATE TABLE IF NOT EXISTS blobs(
    name TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS derived(
    name TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    seconds REAL NOT NULL DEFAULT 0,
    info TEXT
);
CREATE VIEW IF NOT EXISTS chunks AS
    SELECT id, parent_id AS node_id, kind, name AS heading, text, path, line_start, line_end
    FROM nodes WHERE parent_id IS NOT NULL AND kind IN ('section', 'chunk');
"""


def ddl(script: str) -> Callable[[sqlite3.Connection], None]:
    """A migration that runs a DDL script statement by statement (inside the caller's transaction).

    Statements are split on ``;``, so DDL bodies must not contain semicolons (triggers: use
    a function migration instead).
    """
    stmts = [s.strip() for s in script.split(";") if s.strip()]

    def run(conn: sqlite3.Connection) -> None:
        for stmt in stmts:
            conn.execute(stmt)

    return run


# Text retrieval (kgsearch/text): BM25 postings (one row per term: sorted node ids and float32
# impacts), weighted document lengths, and the pattern channel's symbol strings and trigram
# postings. No foreign keys: the text step retracts rows itself from the ChangeSet. FTS5
# tables are created by kgsearch.text.fts only when the SQLite build has FTS5.
TEXT = """
CREATE TABLE IF NOT EXISTS text_postings(term TEXT PRIMARY KEY, df INTEGER NOT NULL,
    ids BLOB NOT NULL, imp BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS text_doclen(id INTEGER PRIMARY KEY, len REAL NOT NULL);
CREATE TABLE IF NOT EXISTS text_symbols(id INTEGER PRIMARY KEY, sym TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS text_trigrams(tri TEXT PRIMARY KEY, ids BLOB NOT NULL)
"""

# Query result cache (kgsearch/store/qcache.py): keyed by query + options, valid for one index
# generation and a TTL; written best-effort by query processes, never blocking.
QCACHE = """
CREATE TABLE IF NOT EXISTS qcache(key TEXT PRIMARY KEY, generation INTEGER NOT NULL,
    created REAL NOT NULL, response TEXT NOT NULL)
"""

# Dense vectors (kgsearch/embed/store.py): node ids in blocks of 4096 consecutive ids
# (block = id >> 12), each row holding ascending node ids (int64), embedded-text hashes (int64),
# per-vector scales (float32) and int8 codes of the rotated, normalised vectors. The model id,
# dims and rotation live in meta/blobs; every row records the generation and model it was
# written with, so vectors of two models are never mixed.
EMBED = """
CREATE TABLE IF NOT EXISTS vec_blocks(block INTEGER PRIMARY KEY, generation INTEGER NOT NULL,
    model_id TEXT NOT NULL, dims INTEGER NOT NULL, n INTEGER NOT NULL,
    ids BLOB NOT NULL, hashes BLOB NOT NULL, scales BLOB NOT NULL, data BLOB NOT NULL)
"""



def _compact_names(conn: sqlite3.Connection) -> None:
    """Names the indexer no longer stores (it derives them from node keys), and a smaller index.

    * An alias ``(ns, name)`` at rank 0 of a node whose key is ``ns:name`` (every ``py``
      qualified name, ``kg`` ids, tags, entities) is answered by the key index; placeholders
      keep theirs (their rank is what makes them lose to a real node).
    * A resolved edge keeps ``dst_name = ''`` when the target's key gives the name back:
      ``ns='key'`` edges and single-candidate ``py``/``kg`` edges resolved through the key
      (tags, entities, notes and multi-candidate edges keep their names).
    * ``edges_unresolved(ns, dst_name) WHERE dst IS NULL`` (the indexer never looks an edge up
      by name) becomes ``edges_named(ns) WHERE dst_name != ''``: the edges a run may have to
      resolve again when names come and go.
    """
    conn.execute("DROP INDEX IF EXISTS edges_unresolved")
    conn.execute(
        "DELETE FROM aliases WHERE rank = 0 AND ns != 'key' AND EXISTS (SELECT 1 FROM nodes n "
        "WHERE n.id = aliases.node_id AND n.key = aliases.ns || ':' || aliases.name AND NOT n.flags & 4)")
    conn.execute(
        "UPDATE edges SET dst_name = '' WHERE dst IS NOT NULL AND file_id IS NOT NULL AND ns = 'key' "
        "AND dst_name = (SELECT n.key FROM nodes n WHERE n.id = edges.dst)")
    conn.execute(
        "UPDATE edges SET dst_name = '' WHERE dst IS NOT NULL AND file_id IS NOT NULL AND ns IN ('py', 'kg') "
        "AND instr(dst_name, char(10)) = 0 AND EXISTS (SELECT 1 FROM nodes n WHERE n.id = edges.dst "
        "AND n.key = edges.ns || ':' || edges.dst_name AND NOT n.flags & 4)")
    conn.execute("CREATE INDEX IF NOT EXISTS edges_named ON edges(ns) WHERE dst_name != ''")


# A file-owned node's path is its file's path: kept once, in files (readers join on file_id,
# ``coalesce(n.path, f.path)``); nodes.path stays for nodes without a file. The chunks view
# joins it back.
NODE_PATHS = """
UPDATE nodes SET path = NULL WHERE file_id IS NOT NULL;
DROP VIEW IF EXISTS chunks;
CREATE VIEW chunks AS
    SELECT n.id, n.parent_id AS node_id, n.kind, n.name AS heading, n.text, coalesce(n.path, f.path) AS path,
        n.line_start, n.line_end
    FROM nodes n LEFT JOIN files f ON f.id = n.file_id
    WHERE n.parent_id IS NOT NULL AND n.kind IN ('section', 'chunk')
"""

# Smaller text postings: text_postings keeps gap-coded node ids and raw term frequencies
# (impacts are computed at query time from text_doclen, see kgsearch/text/bm25.py) and becomes
# WITHOUT ROWID (no rowid b-tree plus a separate autoindex on the term: stdlib 10.1 -> 8.2 MB).
# text_trigrams keeps its rowid layout on purpose: its rows are few and large, and a WITHOUT
# ROWID table spills any row over ~1 KB to overflow pages whose last page is mostly empty
# (stdlib: 4.1 MB as it is, 5.5 MB WITHOUT ROWID); its blobs change codec with the rebuild.
# The data is derived: when the index had text data, the text step is marked stale and the next
# index run rebuilds it (even one with no file changes).
TEXT_COMPACT = """
DROP TABLE IF EXISTS text_postings;
CREATE TABLE text_postings(term TEXT PRIMARY KEY, df INTEGER NOT NULL,
    ids BLOB NOT NULL, tf BLOB NOT NULL) WITHOUT ROWID
"""


def _text_compact(conn: sqlite3.Connection) -> None:
    had_text = conn.execute("SELECT 1 FROM meta WHERE key='text.settings'").fetchone() is not None
    ddl(TEXT_COMPACT)(conn)
    conn.execute("DELETE FROM meta WHERE key IN ('text.settings', 'text.bm25')")
    if had_text:
        mark_stale(conn, "text")


# Long node texts compressed (kgsearch/store/textcodec.py): nodes.text holds a BLOB for bodies
# of 128+ bytes that deflate shrinks by 10 %+, read through kgtext() (registered on every
# connection Index opens). The FTS5 table is external-content: its content becomes the view
# nodes_fts, which decodes, so FTS5's 'rebuild' and column reads see the text. The chunks view
# decodes too. Stdlib index: nodes 36.7 -> ~25 MB.
PACKED_TEXT_VIEWS = """
CREATE VIEW IF NOT EXISTS nodes_fts AS SELECT id, name, kgtext(text) AS text FROM nodes;
DROP VIEW IF EXISTS chunks;
CREATE VIEW chunks AS
    SELECT n.id, n.parent_id AS node_id, n.kind, n.name AS heading, kgtext(n.text) AS text,
        coalesce(n.path, f.path) AS path, n.line_start, n.line_end
    FROM nodes n LEFT JOIN files f ON f.id = n.file_id
    WHERE n.parent_id IS NOT NULL AND n.kind IN ('section', 'chunk')
"""


def _packed_text(conn: sqlite3.Connection) -> None:
    from .textcodec import pack

    ddl(PACKED_TEXT_VIEWS)(conn)
    rows = conn.execute("SELECT id, text FROM nodes WHERE typeof(text) = 'text' AND length(text) >= 32")
    conn.executemany("UPDATE nodes SET text = ? WHERE id = ?",
                     ((v, i) for i, v in ((i, pack(t)) for i, t in rows.fetchall()) if not isinstance(v, str)))
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name='text_fts'").fetchone() is not None:
        # the FTS5 table as kgsearch.text.fts made it at this version, now over the decoding view;
        # its contents are derived: the text step fills it on the next index run
        conn.execute("DROP TABLE text_fts")
        conn.execute("CREATE VIRTUAL TABLE text_fts USING fts5(name, text, content='nodes_fts', "
                     "content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')")
        mark_stale(conn, "text")
    # the rows shrank in place: their pages are half empty, not free; the index run that
    # applied this ends with a VACUUM (stdlib index: 106.6 -> 87.2 MB)
    set_meta(conn, COMPACT_PENDING, "1")


# Exact name lookups (the anchors of a code task, `show NAME`): an index on nodes.name.
# Stdlib index (75,144 nodes): +1.7 MB (dbstat: 1,740,800 bytes of index pages in a 110 MB file with vectors).
NODES_NAME = """
CREATE INDEX IF NOT EXISTS nodes_name ON nodes(name)
"""


# Explicit feedback (kgsearch/query/feedback.py, `kgsearch feedback`): one row per (query terms,
# node); the node's hash at the time is kept so the row expires when the node's text changes.
# Written by the feedback command only; the index step never touches it.
FEEDBACK = """
CREATE TABLE IF NOT EXISTS feedback(id INTEGER PRIMARY KEY, query TEXT NOT NULL, terms TEXT NOT NULL,
    node_key TEXT NOT NULL, node_hash BLOB, useful INTEGER NOT NULL, created REAL NOT NULL,
    UNIQUE(terms, node_key))
"""


# The roots registry (kgsearch/store/roots.py): roots in the order they were first given, each
# with the label that qualifies its keys (the first root: '' = plain keys). The paths of an
# existing index (meta roots, kept sorted until now) are registered in that order; the files of
# every root after the first are marked changed (size -1, no hash), so the next index run
# reloads them under their root's qualified keys, as a fresh build of the same roots would.
# A root that is a file owns its files row (files.root was its folder).
ROOTS = """
CREATE TABLE IF NOT EXISTS roots(path TEXT PRIMARY KEY, label TEXT NOT NULL UNIQUE,
    position INTEGER NOT NULL, added_at REAL, last_indexed REAL, last_files INTEGER)
"""


def _roots(conn: sqlite3.Connection) -> None:
    from .roots import new_label

    ddl(ROOTS)(conn)
    row = conn.execute("SELECT value FROM meta WHERE key='roots'").fetchone()
    try:
        paths = json.loads(row[0]) if row else []
    except ValueError:
        paths = []
    taken: set[str] = set()
    for pos, path in enumerate(p for p in paths if isinstance(p, str)):
        label = "" if pos == 0 else new_label(path, taken)
        taken.add(label)
        conn.execute("INSERT OR IGNORE INTO roots(path, label, position) VALUES (?,?,?)", (path, label, pos))
        conn.execute("UPDATE files SET root = ? WHERE path = ?", (path, path))
        if label:
            conn.execute("UPDATE files SET size = -1, hash = '' WHERE root = ?", (path,))


# Dense retrieval past the vector cache (kgsearch/embed/store.py, embed/dense.py): per block of 4096 ids the
# sign bits of the int8 codes (column-major uint64 words), and the codes again one row per node
# so a short list is read by primary key. Written by the embed step for indexes of at least
# vecindex.SKETCH_MIN vectors; an index that has vectors is marked stale for "embed", whose
# next run keeps every vector whose text is unchanged and writes these tables from vec_blocks.
VEC_SKETCH = """
CREATE TABLE IF NOT EXISTS vec_sketch(block INTEGER PRIMARY KEY, n INTEGER NOT NULL, ids BLOB NOT NULL,
    bits BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS vec_rows(id INTEGER PRIMARY KEY, scale REAL NOT NULL, code BLOB NOT NULL)
"""


def _vec_sketch(conn: sqlite3.Connection) -> None:
    ddl(VEC_SKETCH)(conn)
    if conn.execute("SELECT 1 FROM vec_blocks LIMIT 1").fetchone():
        mark_stale(conn, "embed")


def _neighbor_ties(conn: sqlite3.Connection) -> None:
    """No schema change: ``similar_text`` lists now break ties at the K-th place by node key (an
    updated index keeps a fresh build's lists, issue 13). Lists stored by an older kgsearch are
    rebuilt by the next index run, even one that finds no file changed (before this, such an
    index kept the old lists until a change touched them: nfcorpus nDCG@10 0.3558 vs a fresh
    build's 0.3551, and `doctor` reported 38 differing edges)."""
    n = conn.execute("SELECT count(DISTINCT src) FROM edges WHERE type='similar_text'").fetchone()[0]
    if 0 < n <= NEIGHBORS_EXACT_MAX:     # (above it the scaled kernel's lists: no tie rule changed)
        mark_stale(conn, "neighbors")


NEIGHBORS_EXACT_MAX = 200_000           # = text.neighbors.approx.EXACT_MAX_NODES (store imports nothing above it)


def _neighbor_grid(conn: sqlite3.Connection) -> None:
    """No schema change: the exact ``similar_text`` lists are now scored with grid statistics
    and keep entry bars (text/neighbors/delta.py), so that a one-word edit recomputes the
    lists it can reach instead of all of them. Lists stored by an older kgsearch are rebuilt
    by the next index run, as for 0013."""
    _neighbor_ties(conn)

# Per-node adjacency rows (kgsearch/graph/stored/rows.py): for graphs of graph_adjacency_rows
# edges and more, a query reads the rows of the nodes it looks at instead of loading the CSR
# (222 MB at 1M nodes and 16.4M edges). Derived: the graph step writes them (on the next index
# run, even one that finds no change, for a graph that is big enough).
GRAPH_ADJ = """
CREATE TABLE IF NOT EXISTS graph_adj(node INTEGER PRIMARY KEY, nout INTEGER NOT NULL, data BLOB NOT NULL)
"""


# Chinese, Japanese and Korean in the FTS5 table (kgsearch/cjk.py): the content view spaces out
# every Han, Kana and Hangul character (kgcjk(), registered on every connection), so FTS5's
# unicode61 tokenizer sees one token per character and a quoted word is a phrase of adjacent
# characters; before, a whole sentence was one token and no word inside it matched. Derived:
# the text step rebuilds the table (its analyser version changed too).
FTS_CJK_VIEW = """
DROP VIEW IF EXISTS nodes_fts;
CREATE VIEW nodes_fts AS SELECT id, kgcjk(name) AS name, kgcjk(kgtext(text)) AS text FROM nodes;
"""


def _fts_cjk(conn: sqlite3.Connection) -> None:
    ddl(FTS_CJK_VIEW)(conn)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name='text_fts'").fetchone() is not None:
        mark_stale(conn, "text")


# The edges a run may resolve again by name are the files' edges: derived edges (``similar_text``,
# ``file_id IS NULL``) keep their target's key as a name, but their own step owns them (it drops
# the edges of removed nodes; an edge whose target was replaced is re-resolved through the
# indexer's nulled edges). With them in the index, one added note's key was looked for in 10M
# similar_text names at 1M nodes: 1 s of a one-file reindex (issue 30).
EDGES_NAMED_FILES = """
DROP INDEX IF EXISTS edges_named;
CREATE INDEX IF NOT EXISTS edges_named ON edges(ns) WHERE dst_name != '' AND file_id IS NOT NULL;
"""


# (name, function). Append only.
MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("0001_core", ddl(CORE)),
    ("0002_text", ddl(TEXT)),
    ("0003_qcache", ddl(QCACHE)),
    ("0004_embed", ddl(EMBED)),
    ("0005_compact_names", _compact_names),
    ("0006_node_paths", ddl(NODE_PATHS)),
    ("0007_text_compact", _text_compact),
    ("0008_packed_text", _packed_text),
    ("0009_nodes_name", ddl(NODES_NAME)),
    ("0010_feedback", ddl(FEEDBACK)),
    ("0011_roots", _roots),
    ("0012_vec_sketch", _vec_sketch),
    ("0013_neighbor_ties", _neighbor_ties),
    ("0014_graph_adj", ddl(GRAPH_ADJ)),
    ("0015_neighbor_grid", _neighbor_grid),
    ("0016_fts_cjk", _fts_cjk),
    ("0017_edges_named_files", ddl(EDGES_NAMED_FILES)),
]


def schema_version() -> int:
    return len(MIGRATIONS)
