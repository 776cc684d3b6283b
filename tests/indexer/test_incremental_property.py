"""Incremental equals fresh (issue 13, item 4): after any sequence of adds, edits, deletes and
moves of Markdown and Python files, indexed incrementally after every step, search gives what
a fresh build of the final tree gives: the same keys, with the same scores (within 1e-9,
unrounded), in the same order up to exact ties.

The one approximation allowed: community labels. Between full community runs (the graph step
reruns CNM once ``graph_communities_drift``, 2 %, of the nodes changed) new nodes join their
neighbours' community and old nodes keep theirs; and even a full run breaks modularity ties
by node position, which differs between an updated index and a fresh build (ids are given in
load order). Labels feed only the ``global`` channel (members of the communities of the
entities a query names) and ``--diversity`` (off by default). So the property test runs every
default channel but ``global``; the fixed sequences run all default channels. Measured
effect with all default channels: 0 of 90 query results differed (15 random sequences of 1-4
operations, the first six queries below); on nfcorpus and scifact with 1 % of the documents
removed (labels kept and extended), 0 of 323 and 0 of 300 top-10 lists differed
(``python bench/studies/incremental_fresh.py --sets nfcorpus,scifact``).

Found and fixed on the way (each made some example here fail): BM25 kept the old ``avgdl``;
``similar_text`` lists kept old neighbours and broke ties by node id; a vector's int8 code
and scale came out one float32 step apart depending on its embedding batch (float32 BLAS),
and its score one step apart depending on its row; graph seeds tied at the cut were chosen by
candidate order (node ids).
"""
from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest

from conftest import hypothesis_api, need

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import search

given, settings, st, HealthCheck = hypothesis_api()

WORDS = ["apricot", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "iris", "juniper",
         "kelp", "lagoon", "meadow", "nectar", "orchid", "pumice", "quartz", "raven"]
QUERIES = ["apricot basalt", "cobalt ember garnet", "parse_juniper", "note about the lagoon", "Kelp",
           "fjord meadow harbor notes", "who calls helper_dune"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _markdown(seed: int, names: list[str]) -> str:
    rng = random.Random(seed)
    link = f" see [[{rng.choice(names)}]]" if names and rng.random() < 0.6 else ""
    return (f"# {rng.choice(WORDS).title()} {rng.choice(WORDS)}\n{_words(rng, rng.randint(3, 25))}{link}\n\n"
            f"## {rng.choice(WORDS).title()}\n{_words(rng, rng.randint(2, 15))}\n")


def _python(seed: int) -> str:
    rng = random.Random(seed)
    a, b, c = rng.sample(WORDS, 3)
    return (f'"""Module about {_words(rng, 4)}."""\n\n\ndef parse_{a}(x):\n    """{_words(rng, 5)}."""\n'
            f"    return helper_{b}(x)\n\n\ndef helper_{b}(x):\n    return x\n\n\n"
            f"class {c.title()}Store:\n    def load_{a}(self):\n        return parse_{a}(1)\n")


def _write(root: Path, rel: str, seed: int) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    names = sorted(q.stem for q in root.rglob("*.md"))
    p.write_text(_markdown(seed, names) if rel.endswith(".md") else _python(seed), encoding="utf-8")


def _start(root: Path) -> None:
    for i, rel in enumerate(["a.md", "b.md", "notes/c.md", "notes/d.md", "pkg/m1.py", "pkg/m2.py"]):
        _write(root, rel, 1000 + i)


def _apply(root: Path, op: tuple[str, int, int, bool]) -> None:
    kind, pick, seed, md = op
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".py"))
    if kind == "add" or not files:
        ext = ".md" if md else ".py"
        _write(root, f"{'notes' if seed % 2 else 'pkg'}/new{seed}{ext}", seed)
        return
    rel = files[pick % len(files)]
    if kind == "edit":
        _write(root, rel, seed)
    elif kind == "delete":
        (root / rel).unlink()
    else:                                        # move (a rename or another folder)
        dst = root / ("moved" if seed % 2 else "notes") / f"m{seed}{Path(rel).suffix}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        (root / rel).rename(dst)


CHANNELS = ["bm25", "fts", "dense", "graph", "intent", "pattern", "equiv", "local", "anchors", "relation"]


def _results(db: Path, channels) -> dict[str, list[tuple[str, float]]]:
    """(key, score) of every hit of each query; scores unrounded (hits show 6 decimals)."""
    from kgsearch.query import results

    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(results, "round", lambda x, n=None: x, raising=False)
        for q in QUERIES:
            r = search(q, db=str(db), k=200, use_cache=False, channels=channels)
            out[q] = [(h.key, h.score) for h in r.hits]
    return out


def _same(inc: dict, new: dict) -> None:
    """The same keys with the same scores (within 1e-9), in the same order up to ties: the
    i-th hits of both lists have the same score."""
    for q in QUERIES:
        a, b = inc[q], new[q]
        assert a and len(a) == len(b), (q, a, b)
        sb = dict(b)
        assert dict(a).keys() == sb.keys(), (q, a, b)
        assert all(abs(s - sb[k]) <= 1e-9 for k, s in a), (q, [(k, s, sb[k]) for k, s in a if abs(s - sb[k]) > 1e-9])
        assert all(abs(x[1] - y[1]) <= 1e-9 for x, y in zip(a, b)), (q, a, b)


def _run(ops, channels=CHANNELS):
    with tempfile.TemporaryDirectory() as tmp:
        root, db, fresh = Path(tmp) / "root", Path(tmp) / "inc.db", Path(tmp) / "fresh.db"
        _start(root)
        opts = IndexOptions(keep_going=True)
        index_paths(db, [str(root)], opts)
        for op in ops:
            _apply(root, op)
            index_paths(db, [str(root)], opts)
        index_paths(fresh, [str(root)], opts)
        return _results(db, channels), _results(fresh, channels)


OPS = st.lists(st.tuples(st.sampled_from(["add", "edit", "delete", "move"]), st.integers(0, 50),
                         st.integers(0, 10**6), st.booleans()), min_size=1, max_size=4)


@settings(max_examples=int(os.environ.get("KGSEARCH_PROPERTY_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_incremental_search_equals_a_fresh_build(ops):
    need("hypothesis")
    inc, new = _run(ops)
    _same(inc, new)


@pytest.mark.parametrize("ops", [
    [("delete", 0, 1, True), ("delete", 0, 2, True), ("delete", 0, 3, True)],
    [("add", 0, 11, True), ("add", 0, 12, True), ("add", 0, 13, False), ("edit", 2, 14, True)],
    [("move", 1, 21, True), ("move", 4, 22, False), ("edit", 0, 23, True)],
])
def test_incremental_search_equals_a_fresh_build_examples(ops):
    """Fixed sequences (they run without hypothesis), with every default channel: deletes that
    shrink the corpus, adds that grow it, moves."""
    from kgsearch.query.channels import DEFAULT_CHANNELS

    inc, new = _run(ops, list(DEFAULT_CHANNELS))
    _same(inc, new)
