"""Which tests to run after a change: the test files ranked from five kinds of evidence.

1. **reached**: the nodes flagged as test code that :func:`kgsearch.graph.kernels.impact.dependents`
   reached from the changed code (a test that calls it, a test module that imports what
   imports it, ...). A file ranks by its nearest test (fewest hops), then by the sum of
   ``1 / cost`` over its reached tests (many tests calling the changed code directly beat one
   test two imports away).
2. **named**: the test files whose text names the changed code's functions, classes, methods
   and module (the whole identifier as the BM25 index analyses it: ``as_string`` ->
   ``asstring``), each name counted once per file with its BM25 idf. This is the evidence the
   call graph misses: calls on values of unknown type (``node.as_string()``), plug-ins loaded
   by name (``extensions = ['sphinx.ext.viewcode']``), fixtures and subprocess runs.
3. **path**: the test files whose path names the changed files' subjects (:func:`path_named`:
   path words, idf-weighted): ``test_x.py``, ``x.test.ts``, ``XTest.java``, Rust's
   ``tests/macros_select.rs`` for ``src/macros/select.rs``, without knowing any convention. Not
   for a language whose tests sit beside their package (Go: ``LangSpec.tests_beside``), where a
   test's path names only the folder every test there shares.
4. **text**: BM25 of each test file against the changed code's whole text (:func:`similar_tests`):
   tests that talk about what the changed code talks about, as a lexical reference would rank
   them (a binary run by an integration test, which no call reaches).
5. **declared**: the test modules the changed files declare as their own children, and those
   declare in turn (:func:`declared_tests`: Rust's ``#[cfg(test)] mod tests;`` kept in
   ``runtime/tests/mod.rs`` and its ``mod queue;``), nearest first, equals sharing their rank:
   the changed module's unit tests in files of their own.

The five rankings are fused by reciprocal rank fusion (``1 / (60 + rank)`` summed; no constant
to tune), ties by path; the reached ranking weighs the share of the index's test files the walk
did not reach (:func:`reach_weight`: a change to a crate root or a header every test includes
reaches most tests, and then the walk's order says little); the changed files' own tests (a Rust
``#[cfg(test)]`` module) come after every other file (:func:`order_files`). Given the gold files
of the code tasks, R@10 .920 (Python), .700-.967 (the other languages) against the sets' BM25
reference .818 and .667-.951: bench/test_scope.py.
"""
from __future__ import annotations

import math
import posixpath
import re
from collections import Counter, defaultdict

import numpy as np

from ..ingest.langspec import spec_for
from ..store.rows import iter_node_texts, rel_path
from ..store.sql import iter_in_chunks
from ..text.idcodec import decode_ids, decode_tf
from ..text.postings import read_doclen, read_rows, stored
from .nodes import TEST_FLAG, display

__all__ = ["test_files", "reached_ranks", "reach_weight", "fuse", "count_test_files", "changed_files", "order_files", "similar_tests", "named_tests", "path_named", "path_words",
           "RRF_K", "NAME_KINDS", "PATH_STOP"]

RRF_K = 60
NAME_KINDS = ("module", "class", "function", "method")


def _test_file_of(ix, ids) -> dict[int, int]:
    sql = f"SELECT id, file_id FROM nodes WHERE id IN ({{}}) AND (flags & {TEST_FLAG}) != 0 AND file_id IS NOT NULL"
    return dict(iter_in_chunks(ix.conn, sql, [int(i) for i in ids]))


def named_tests(ix, start_ids) -> dict[int, tuple[float, int]]:
    """``{test file id: (sum of idf over the changed code's names it holds, how many)}``."""
    st, params, _ = stored(ix)
    if st is None:
        return {}
    an = params.analyzer()
    terms = set()
    for _, name, kind in iter_in_chunks(ix.conn, "SELECT id, name, kind FROM nodes WHERE id IN ({})",
                                        [int(i) for i in start_ids]):
        if kind in NAME_KINDS and name and not name.startswith("__"):
            t = an(name)
            if t:
                terms.add(t[0])
    n = int(st["n"])
    hits: dict[int, list[float]] = defaultdict(list)
    for _, df, ids_blob, _ in read_rows(ix.conn, sorted(terms)):
        idf = math.log1p((n - df + 0.5) / (df + 0.5))
        for fid in set(_test_file_of(ix, decode_ids(ids_blob).tolist()).values()):
            hits[fid].append(idf)
    return {f: (math.fsum(v), len(v)) for f, v in hits.items()}


def similar_tests(ix, start_ids, k1: float = 1.2, b: float = 0.75) -> dict[int, float]:
    """``{test file id: BM25 of the test file against the changed code's text}``: the lexical
    evidence ("which tests mention what the changed code mentions"), one file = its test nodes'
    postings summed (term frequency and length), the query = the changed nodes' texts (a term
    weighted by its count there), idf over the index's nodes. Okapi's textbook k1 and b, not tuned."""
    st, params, _ = stored(ix)
    if st is None:
        return {}
    an = params.analyzer()
    terms = Counter()
    for _, name, text in iter_node_texts(ix.conn, [int(i) for i in start_ids]):
        terms.update(an(f"{name or ''} {text or ''}"))
    rows = ix.conn.execute(f"SELECT id, file_id FROM nodes WHERE (flags & {TEST_FLAG}) != 0 "
                           "AND file_id IS NOT NULL ORDER BY id").fetchall()
    if not rows or not terms:
        return {}
    tid = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    fids, tfile = np.unique(np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)), return_inverse=True)
    dl_ids, dl = read_doclen(ix)
    at = np.searchsorted(dl_ids, tid).clip(0, max(len(dl_ids) - 1, 0))
    node_len = np.where((len(dl_ids) > 0) & (dl_ids[at] == tid), dl[at], 0.0) if len(dl_ids) else np.zeros(len(tid))
    flen = np.bincount(tfile, weights=node_len, minlength=len(fids))
    norm = k1 * (1 - b + b * flen / (flen.mean() or 1.0))
    n = int(st["n"])
    score = np.zeros(len(fids))
    for term, df, ids_blob, tf_blob in read_rows(ix.conn, sorted(terms)):
        ids = decode_ids(ids_blob)
        at = np.searchsorted(tid, ids).clip(0, len(tid) - 1)
        hit = tid[at] == ids
        if not hit.any():
            continue
        tf = np.bincount(tfile[at[hit]], weights=decode_tf(tf_blob, df)[hit], minlength=len(fids))
        score += terms[term] * math.log1p((n - df + 0.5) / (df + 0.5)) * tf * (k1 + 1) / (tf + norm)
    return {int(f): float(v) for f, v in zip(fids, score) if v > 0}


_PATH_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# words of a path that name no subject: test markers, source-tree folders, entry-point files
PATH_STOP = frozenset("test tests testing spec specs src lib mod main index init py rs go js jsx ts tsx mjs cjs "
                      "java kt kts cs php rb c cc cpp cxx h hh hpp hxx".split())


def path_words(rel: str) -> set[str]:
    """The subject words of a repository-relative path: its folder and file names split at
    ``/ _ - .`` and camelCase, lowercased, without :data:`PATH_STOP`
    (``tokio/tests/macros_select.rs`` -> {tokio, macros, select}; ``src/test/java/FooBarTest.java``
    -> {foo, bar})."""
    return {w.lower() for w in _PATH_WORD.findall(rel)} - PATH_STOP


def path_named(ix, start_ids) -> dict[int, float]:
    """``{test file id: sum of idf over the subject words its path shares with the changed
    files' paths}``: the naming conventions of tests (``test_x.py``, ``x_test.go``,
    ``x.test.ts``, ``XTest.java``, ``tests/x.rs``) without knowing any of them. idf over
    every indexed file's path words (``log(1 + N / df)``), each word once per test file."""
    changed = {rel_path({"path": p, "root": r}) or p for p, r in iter_in_chunks(
        ix.conn, "SELECT DISTINCT f.path, f.root FROM nodes n JOIN files f ON f.id = n.file_id WHERE n.id IN ({})",
        [int(i) for i in start_ids])}
    want = set().union(*(path_words(p) for p in changed)) if changed else set()
    if not want:
        return {}
    test_files = {f for (f,) in ix.conn.execute(
        f"SELECT DISTINCT file_id FROM nodes WHERE (flags & {TEST_FLAG}) != 0 AND file_id IS NOT NULL")}
    df: dict[str, int] = defaultdict(int)
    words_of: dict[int, set[str]] = {}
    n = 0
    for fid, p, root in ix.conn.execute("SELECT id, path, root FROM files"):
        n += 1
        rel = rel_path({"path": p, "root": root}) or p
        ws = path_words(rel)
        for w in ws & want:
            df[w] += 1
        if fid in test_files and not getattr(spec_for(rel), "tests_beside", False):
            words_of[fid] = ws
    out = {}
    for fid, ws in words_of.items():
        got = ws & want
        if got:
            out[fid] = math.fsum(math.log1p(n / df[w]) for w in got)     # exact: not the set's hash order
    return out


def declared_tests(ix, changed: set[int]) -> dict[int, int]:
    """``{test file id: depth}``: the test modules the changed files declare as their own child
    modules (Rust's ``#[cfg(test)] mod tests;`` in ``runtime/mod.rs`` -> ``runtime/tests/mod.rs``,
    depth 1), and the test modules those declare in turn (``tests/mod.rs`` -> ``tests/queue.rs``,
    depth 2...). A declared module is an ``imports`` edge from one file's module node to another
    file's module node in the declaring file's folder or below it (where a language puts a
    module's children), flagged as test code: the changed code's own unit tests kept in other
    files. A test helper imported from elsewhere (Go's ``testdata``) is not in the importer's folder."""
    if not changed:
        return {}
    mods = {nid: (fid, posixpath.dirname(p)) for nid, fid, p in iter_in_chunks(
        ix.conn, "SELECT n.id, n.file_id, f.path FROM nodes n JOIN files f ON f.id = n.file_id "
                 "WHERE n.kind = 'module' AND n.file_id IN ({})", sorted(changed))}
    out: dict[int, int] = {}
    seen = set(changed)
    depth = 0
    while mods and depth < 8:
        depth += 1
        found = {}
        for src, dst, fid, path in iter_in_chunks(
                ix.conn, "SELECT e.src, e.dst, n.file_id, f.path FROM edges e JOIN nodes n ON n.id = e.dst "
                         f"JOIN files f ON f.id = n.file_id WHERE e.type = 'imports' AND n.kind = 'module' "
                         f"AND (n.flags & {TEST_FLAG}) != 0 AND e.src IN ({{}})", sorted(mods)):
            home = mods[src][1]
            if fid not in seen and fid != mods[src][0] and path.startswith(home.rstrip("/") + "/"):
                found[dst] = (fid, posixpath.dirname(path))
        for dst, (fid, _) in found.items():
            if fid not in seen:
                seen.add(fid)
                out[fid] = depth
        mods = found
    return out


def shared_ranks(value: dict[int, float]) -> dict[int, float]:
    """``{key: rank}`` by ``value`` ascending, equal values sharing their mean rank (no order
    among equals is made up: ``{a: 1, b: 1, c: 2}`` -> ``{a: 1.5, b: 1.5, c: 3}``)."""
    out: dict[int, float] = {}
    order = sorted(value, key=lambda k: value[k])
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and value[order[j + 1]] == value[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            out[k] = (i + 1 + j + 1) / 2
        i = j + 1
    return out


def changed_files(ix, start_ids) -> set[int]:
    """The files holding the changed code (the start set)."""
    return {f for _, f in iter_in_chunks(ix.conn, "SELECT id, file_id FROM nodes WHERE id IN ({}) AND file_id IS NOT NULL",
                                         [int(i) for i in start_ids])}


def order_files(score: dict[int, float], changed: set[int], name_of: dict[int, str]) -> list[int]:
    """Files by fused score, ties by name; the changed files' own tests (a Rust ``#[cfg(test)]``
    module, a test beside the code in its file) after every other file: they are part of the
    change and run with it, and, reached at distance 0 and naming every changed name, they would
    otherwise head the list that is meant to find the tests elsewhere."""
    return sorted(score, key=lambda f: (f in changed, -score[f], name_of[f]))


def reached_ranks(reached: dict[int, tuple[int, float]]) -> dict[int, float]:
    """``{test file: its rank in the reached evidence}`` from ``{test file: (hops of its nearest
    reached test, strength)}``: fewest hops first, then the greater strength, then the file id."""
    order = sorted(reached, key=lambda f: (reached[f][0], -reached[f][1], f))
    return {f: float(r) for r, f in enumerate(order, 1)}


def reach_weight(n_reached: int, n_tests: int) -> float:
    """The reached evidence's weight for one change: the share of the index's test files the walk
    did *not* reach. A walk from a leaf function that reaches 3 of 300 test files says much about
    which to run (weight .99); one from a crate's ``lib.rs`` or a header every test includes, which
    reaches 150 of 300 (.5) or all of them (0), says little, and its order (nearest first, then by
    the number of reached tests) would outvote the names, paths and text that do tell the tests
    apart. No constant to tune: the fraction is the evidence's own selectivity for this change."""
    return 1.0 - min(n_reached, n_tests) / n_tests if n_tests > 0 else 1.0


def fuse(ranks: list[dict[int, float]], weights: list[float] | None = None) -> dict[int, float]:
    """Weighted reciprocal rank fusion: ``{file: sum over the rankings holding it of
    weight / (RRF_K + rank)}`` (every weight 1 without ``weights``)."""
    score: dict[int, float] = defaultdict(float)
    for k, ranking in enumerate(ranks):
        w = 1.0 if weights is None else weights[k]
        for f, r in ranking.items():
            score[f] += w / (RRF_K + r)
    return dict(score)


def count_test_files(ix, roots: set[str] | None = None) -> int:
    """How many files hold test code in the index (in ``roots`` when given)."""
    return len(test_files_in(ix, roots))


def test_files_in(ix, roots: set[str] | None) -> set[int]:
    """The ids of the files holding test code, in ``roots`` (every root: ``None``)."""
    rows = ix.conn.execute(f"SELECT DISTINCT n.file_id, f.root FROM nodes n JOIN files f ON f.id = n.file_id "
                           f"WHERE (n.flags & {TEST_FLAG}) != 0")
    return {fid for fid, root in rows if roots is None or root in roots}


def changed_roots(ix, changed: set[int]) -> set[str] | None:
    """The roots of the changed files; ``None`` (no scope) when no changed node has a file."""
    roots = {r for _, r in iter_in_chunks(ix.conn, "SELECT id, root FROM files WHERE id IN ({})", sorted(changed))}
    return roots or None


def _plain(r):
    """A rank as JSON shows it: a whole number as an int (``3``), a shared rank as is (``2.5``)."""
    return int(r) if r is not None and r == int(r) else r


def test_files(ix, ctx, reach, start_pos, limit: int) -> list[dict]:
    """Test files, ranked as the module docstring says: ``[{path, relpath, rank_reached,
    rank_named, rank_path, rank_text, declared (the depth of the changed file's test module that
    declares it, or None), changed, distance, strength, reached, names, nearest: [{key, name, kind, distance}]}]``."""
    pos = np.flatnonzero(reach.hops >= 0)
    ids = ctx.ids_of(pos)
    hops = dict(zip(ids.tolist(), reach.hops[pos].tolist()))
    cost = dict(zip(ids.tolist(), reach.cost[pos].tolist()))
    files: dict[int, list[int]] = defaultdict(list)
    for nid, fid in _test_file_of(ix, ids.tolist()).items():
        files[fid].append(nid)
    rank_r = reached_ranks({f: (min(hops[i] for i in m), sum(1.0 / cost[i] if cost[i] > 0 else 1.0 for i in m))
                            for f, m in files.items()})
    named = named_tests(ix, ctx.ids_of(start_pos).tolist())
    by_name = sorted(named, key=lambda f: (-named[f][0], f))
    pathed = path_named(ix, ctx.ids_of(start_pos).tolist())
    by_path = sorted(pathed, key=lambda f: (-pathed[f], f))
    similar = similar_tests(ix, ctx.ids_of(start_pos).tolist())
    by_text = sorted(similar, key=lambda f: (-similar[f], f))
    changed = changed_files(ix, ctx.ids_of(start_pos).tolist())
    declared = declared_tests(ix, changed)
    # the names, paths and text rank only the tests of the changed files' roots: another
    # repository's tests read like any change in its language and run none of it
    scope = test_files_in(ix, changed_roots(ix, changed))
    named = {f: v for f, v in named.items() if f in scope}
    by_name, by_path, by_text = ([f for f in by if f in scope] for by in (by_name, by_path, by_text))
    rank_n = {f: r for r, f in enumerate(by_name, 1)}
    rank_p = {f: r for r, f in enumerate(by_path, 1)}
    rank_t = {f: r for r, f in enumerate(by_text, 1)}
    rank_d = shared_ranks(declared)
    w_reached = reach_weight(len(rank_r), len(scope | set(rank_r))) if rank_r else 1.0
    score = fuse([rank_r, rank_n, rank_p, rank_t, rank_d], [w_reached, 1.0, 1.0, 1.0, 1.0])
    paths = {fid: (p, rel_path({"path": p, "root": root})) for fid, p, root in
             iter_in_chunks(ix.conn, "SELECT id, path, root FROM files WHERE id IN ({})", sorted(score))}
    order = order_files(score, changed, {f: paths[f][1] or paths[f][0] for f in score})[:limit]
    best = {f: sorted(files.get(f, []), key=lambda i: (hops[i], cost[i], i))[:5] for f in order}
    rows = display(ix, [i for v in best.values() for i in v])
    out = []
    for f in order:
        members = files.get(f, [])
        out.append({"path": paths[f][0], "relpath": paths[f][1], "score": round(score[f], 6), "changed": f in changed,
                    "rank_reached": _plain(rank_r.get(f)), "rank_named": rank_n.get(f), "rank_path": rank_p.get(f), "rank_text": rank_t.get(f),
                    "declared": declared.get(f),
                    "distance": min((hops[i] for i in members), default=None),
                    "strength": round(sum(1.0 / cost[i] if cost[i] > 0 else 1.0 for i in members), 6),
                    "reached": len(members), "names": named.get(f, (0.0, 0))[1],
                    "nearest": [dict(key=rows[i]["key"], name=rows[i]["name"], kind=rows[i]["kind"],
                                     distance=int(hops[i])) for i in best[f] if i in rows]})
    return out
