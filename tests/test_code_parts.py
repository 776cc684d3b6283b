"""Issue 26: a code definition's text is cut at 4,000 characters; the rest of a long function
(bat's 700-line ``build_app``) was in no channel. Every code loader now gives such a definition
child nodes of kind ``chunk`` (``FLAG_PART``, key ``<definition key>#part<n>``) holding the rest
of its own lines, with exact line spans; search finds them under the definition's name, the
file grouping and the benchmarks' symbol lists count them as their definition, context packs a
definition and its part once, a diff maps to the definition, and an incremental run equals a
fresh build as the function grows and shrinks."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from indexer.test_incremental import assert_same, w

from kgsearch.context import ContextOptions, build_context
from kgsearch.context.diff import FileChange, changed_nodes
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest.loaders import get_loader
from kgsearch.query import Engine, SearchOptions
from kgsearch.store.db import Index
from kgsearch.text.neighbors.common import prose_ids
from kgsearch.types import FLAG_PART, FLAG_TEST, LoadOptions, part_owner

ROOT = Path(__file__).resolve().parents[1]
N = 120           # options of the long functions: ~9,000 characters, the unique one past 4,000


def js(n: int = N) -> str:
    body = "\n".join(f'  opts.add("option-{i}", "sets the number {i} of the widget frames");' for i in range(n))
    return ("// Builds the command line.\nfunction buildApp(opts) {\n" + body
            + '\n  opts.add("zebra-quantum-flux", "the rare one");\n  return opts;\n}\n\n'
            "function small() { return 1; }\n")


def rust(n: int = N) -> str:
    body = "\n".join(f'        .arg(Arg::new("option-{i}").help("sets the number {i} of the widget frames"))'
                     for i in range(n))
    return ("pub fn build_app() -> Command {\n    Command::new(\"bat\")\n" + body
            + '\n        .arg(Arg::new("squeeze-limit").long("squeeze-limit"))\n}\n')


def python(n: int = N) -> str:
    body = "\n".join(f"    table.append(('option-{i}', 'sets the number {i} of the widget frames'))" for i in range(n))
    return ('def build_table(table):\n    """Fill the table."""\n' + body
            + "\n    def inner_helper():\n        return 'nested body stays in the inner function'\n"
            + "    table.append(frobnicate_widget_zeta())\n    return table\n")


CASES = [("javascript", "src/app.js", js, "buildApp", "zebra-quantum-flux", "js:src/app.js:buildApp"),
         ("rust", "src/clap.rs", rust, "build_app", "squeeze-limit", "rs:src/clap.rs:build_app"),
         ("python", "pkg/long.py", python, "build_table", "frobnicate_widget_zeta", "py:pkg.long.build_table")]


def _load(tmp_path, loader, rel, text):
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return get_loader(loader).load(p, rel, LoadOptions(root=str(tmp_path)))


@pytest.mark.parametrize("loader,rel,make,name,word,key", CASES)
def test_the_lines_past_the_cut_are_parts_of_their_definition(tmp_path, loader, rel, make, name, word, key):
    src = make()
    lines = src.split("\n")
    res = _load(tmp_path, loader, rel, src)
    nodes = {n.key: n for n in res.nodes}
    d = nodes[key]
    assert word not in d.text and len(d.text) <= 4000                    # cut before it
    parts = [n for n in res.nodes if n.kind == "chunk"]
    assert parts and all(n.parent == key and n.flags & FLAG_PART and n.name == name for n in parts)
    assert [n.key for n in parts] == [f"{key}#part{i}" for i in range(2, len(parts) + 2)]
    assert all(part_owner(n.key) == key for n in parts)
    contains = {(e.src, e.dst, e.line) for e in res.edges if e.type == "contains"}
    for n in parts:                                                     # exact spans, a contains edge each
        assert (key, n.key, n.line_start) in contains
        first, last = n.text.split("\n")[0], n.text.split("\n")[-1]
        assert lines[n.line_start - 1].strip() == first.strip() and lines[n.line_end - 1].strip() == last.strip()
        assert n.text.count("\n") <= n.line_end - n.line_start and len(n.text) <= 4000
    spans = sorted((n.line_start, n.line_end) for n in parts)
    assert all(b < c for (_, b), (c, _) in zip(spans, spans[1:]))           # no line twice
    at = next(i for i, x in enumerate(lines, 1) if word in x)
    holder = [n for n in parts if n.line_start <= at <= n.line_end]
    assert len(holder) == 1 and word in holder[0].text
    if loader == "python":                                              # a nested function keeps its own body
        assert "nested body stays" not in "".join(n.text for n in parts)
        assert "nested body stays" in nodes["py:pkg.long.build_table.inner_helper"].text
    # every line of the function is in its text or a part (words of the cut line too)
    held = set(re.findall(r"\w+", d.text + "\n" + "\n".join(n.text for n in res.nodes if n.kind != "module")))
    assert set(re.findall(r"\w+", src)) - {"def", "pub"} <= held | {"def", "pub"}


def test_a_short_definition_has_no_part_and_test_flags_carry_over(tmp_path):
    res = _load(tmp_path, "javascript", "src/short.js", "function f() { return 1; }\n")
    assert not [n for n in res.nodes if n.kind == "chunk"]
    res = _load(tmp_path, "javascript", "test/app.test.js", js())
    parts = [n for n in res.nodes if n.kind == "chunk"]
    assert parts and all(n.flags == FLAG_TEST | FLAG_PART for n in parts)


def test_a_long_class_outline_and_a_files_top_level_code_get_parts(tmp_path):
    fields = "\n".join(f"    private int counterNumber{i} = {i};" for i in range(200))
    res = _load(tmp_path, "java", "src/Big.java", f"class Big {{\n{fields}\n    private int lastRareField = 1;\n"
                                                  "    void run() { }\n}\n")
    part = [n for n in res.nodes if n.kind == "chunk" and "lastRareField" in n.text]
    assert len(part) == 1 and part[0].parent == "java:src/Big.java:Big"
    top = "\n".join(f'describe("case {i}", () => {{ expect(widget({i})).toBe({i}); }});' for i in range(150))
    res = _load(tmp_path, "javascript", "test/cases.js", top + '\ndescribe("the last rare case", () => {});\n')
    part = [n for n in res.nodes if n.kind == "chunk" and "last rare case" in n.text]
    assert len(part) == 1 and part[0].parent == "js:test/cases.js" and part[0].key == "js:test/cases.js#part" + \
        part[0].key.rsplit("#part", 1)[1]


def test_a_minified_line_is_held_by_one_part_set_only(tmp_path):
    """Every function of a one-line file starts on that line: the innermost one's parts hold it,
    the enclosing ones take it no more (the parts of a file hold each line once at most)."""
    inner = ";".join(f"var a{i}=b{i}+c{i}" for i in range(1500))
    src = f"(function outer(){{function mid(){{function inner(){{{inner}}}}}}})();"
    res = _load(tmp_path, "javascript", "dist/bundle.js", src)
    parts = [n for n in res.nodes if n.kind == "chunk"]
    assert sum(len(n.text) for n in parts) <= len(src)
    assert len({n.parent for n in parts}) == 1 and parts[0].parent.endswith("mid.inner")


def _tree(tmp_path, n: int = N) -> Path:
    tree = tmp_path / "tree"
    for _, rel, make, *_ in CASES:
        w(tree / rel, make(n))
    w(tree / "src/other.js", "function other() { return 'no widgets here'; }\n")
    return tree


@pytest.fixture
def engine(tmp_path):
    db = tmp_path / "ix.db"
    index_paths(db, [str(_tree(tmp_path))], IndexOptions(steps=("text",)))
    with Index.open(db, readonly=True) as ix:
        yield Engine(ix)


@pytest.mark.parametrize("loader,rel,make,name,word,key", CASES)
def test_search_finds_the_part_under_its_definitions_name(engine, loader, rel, make, name, word, key):
    at = next(i for i, x in enumerate(make().split("\n"), 1) if word in x)
    for channels in (["bm25"], ["fts"], None):
        q = f'"{word}"' if channels == ["fts"] else word
        hit = engine.search(q, SearchOptions(k=5, channels=channels)).hits[0]
        assert hit.kind == "chunk" and hit.parent == key and hit.key.startswith(key + "#part"), (channels, hit)
        assert hit.name == name and hit.line <= at <= hit.line_end, (channels, hit)


def test_the_name_index_holds_the_definition_not_its_parts(engine):
    hits = engine.search("buildApp", SearchOptions(k=20, channels=["pattern"], collapse=False)).hits
    assert [h.key for h in hits if h.name == "buildApp"] == ["js:src/app.js:buildApp"]


def test_a_definition_and_its_parts_count_once_in_a_files_score(engine):
    """The words of every option line are in the function's text and in each part: the file's
    members list the function's family once."""
    g = engine.search("widget frames option number", SearchOptions(k=5, group="file", collapse=False)).hits
    for h in g:
        fams = [part_owner(m["key"]) for m in h.members]
        assert len(fams) == len(set(fams)), h.members


def test_a_parts_hit_is_its_definition_in_the_benchmarks_symbol_lists(engine):
    spec = importlib.util.spec_from_file_location("bench_code_tasks_p", ROOT / "bench" / "code_tasks.py")
    ct = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, ct)
    spec.loader.exec_module(sys.modules[spec.name])
    hit = engine.search("frobnicate_widget_zeta", SearchOptions(k=3, channels=["bm25"])).hits[0]
    assert ct.definition_of(hit) == ("function", "py:pkg.long.build_table", "pkg.long.build_table")
    root = str(engine.ix.conn.execute("SELECT root FROM files LIMIT 1").fetchone()[0])
    files, syms, _ = ct.rank_lists([hit], root, {})
    assert syms == ["pkg/long.py::build_table"]


def test_parts_are_no_prose_nodes(engine):
    kinds = dict(engine.ix.conn.execute("SELECT id, flags FROM nodes"))
    assert not [i for i in prose_ids(engine.ix.conn) if kinds[i] & FLAG_PART]


def test_context_packs_a_definition_or_its_part_once_and_a_diff_maps_to_the_definition(engine):
    res = build_context(engine, task="squeeze-limit", opts=ContextOptions(budget=20000))
    assert res.text.count('Arg::new("squeeze-limit")') == 1, res.text
    keys = [it["key"] for it in res.items]
    assert any(k.startswith("rs:src/clap.rs:build_app") for k in keys)
    conn = engine.ix.conn
    fid, path = conn.execute("SELECT id, path FROM files WHERE path LIKE '%clap.rs'").fetchone()
    at = next(i for i, x in enumerate(Path(path).read_text().split("\n"), 1) if "squeeze-limit" in x)
    got, _ = changed_nodes(engine.ix, [FileChange(path=path, old_path=path, new_lines={at}, old_lines={at})])
    assert [conn.execute("SELECT key FROM nodes WHERE id=?", (i,)).fetchone()[0] for i in got] == \
        ["rs:src/clap.rs:build_app"]
    res = build_context(engine, files=[path], opts=ContextOptions(budget=20000))
    assert not [it for it in res.items if "#part" in it["key"]]


def test_incremental_runs_equal_a_fresh_build_as_a_function_grows_and_shrinks(tmp_path):
    tree = _tree(tmp_path, 10)                   # short: no parts
    db = tmp_path / "inc.db"
    index_paths(db, [str(tree)], IndexOptions(steps=()))
    assert_same(db, tree, tmp_path, "short")

    def edit(tag, n):
        for _, rel, make, *_ in CASES:
            (tree / rel).write_text(make(n), encoding="utf-8")
        index_paths(db, [str(tree)], IndexOptions(steps=()))
        assert_same(db, tree, tmp_path, tag)
        with Index.open(db, readonly=True) as ix:
            return ix.conn.execute(f"SELECT count(*) FROM nodes WHERE flags & {FLAG_PART}").fetchone()[0]

    grown = edit("grown past the cut", N)
    assert grown >= 3 and edit("grown more", 2 * N) > grown
    assert edit("shrunk below the cut", 10) == 0
    assert edit("grown again", N) == grown


def _crowded(tmp_path) -> Engine:
    """A long function whose three parts all say "widget frames" (as its own text does), and a
    short function that says it once: by BM25 the family's four nodes rank 1st-4th and the short
    function 5th (hand-checked: part2, build_table, part3, part4, few_widgets)."""
    tree = tmp_path / "crowd"
    w(tree / "pkg/long.py", python(200))
    w(tree / "pkg/other.py", 'def few_widgets(frames):\n    """Count the widget frames."""\n'
                             "    return len(frames)\n\n\ndef unrelated():\n    return 2\n")
    db = tmp_path / "crowd.db"
    index_paths(db, [str(tree)], IndexOptions(steps=("text",)))
    return Engine(Index.open(db, readonly=True))


@pytest.mark.parametrize("query,norm", [("widget frames", "z"),           # the whole-index scores' cut
                                        ("widget frames", "max"),         # the channel's own search
                                        ("widget frames path:pkg/", "z")])   # a filtered search
def test_a_definition_and_its_parts_take_one_of_a_channels_depth_slots(tmp_path, query, norm):
    """Depth 2 is two definitions: build_table (with every part ranked above the next
    definition) and few_widgets. Before, the function and its first part took both slots and
    few_widgets was no candidate."""
    engine = _crowded(tmp_path)
    full = engine.search(query, SearchOptions(k=20, channels=["bm25"], depth=100, norm=norm, collapse=False))
    assert [h.key.rpartition(".")[2] for h in full.hits[:5]] == \
        ["build_table#part2", "build_table", "build_table#part3", "build_table#part4", "few_widgets"]
    got = engine.search(query, SearchOptions(k=20, channels=["bm25"], depth=2, norm=norm, collapse=False))
    assert [h.key for h in got.hits] == [h.key for h in full.hits[:5]]
    assert got.candidates == 5
    one = engine.search(query, SearchOptions(k=20, channels=["bm25"], depth=1, norm=norm, collapse=False))
    assert [h.key for h in one.hits] == ["py:pkg.long.build_table#part2"]      # (the family's best alone)


def test_the_file_grouping_counts_a_part_as_its_definition():
    """Hand-made candidates: a definition, two of its parts and another function of the file,
    then a second file. The parts add nothing to the file's score; the other function does."""
    import numpy as np

    from kgsearch.query.group import group_by_file

    d = "rs:src/a.rs:build_app"
    meta = {1: {"key": d + "#part3", "parent": d, "flags": FLAG_PART, "path": "/r/src/a.rs", "root": "/r"},
            2: {"key": d, "parent": "rs:src/a.rs", "flags": 0, "path": "/r/src/a.rs", "root": "/r"},
            3: {"key": d + "#part2", "parent": d, "flags": FLAG_PART, "path": "/r/src/a.rs", "root": "/r"},
            4: {"key": "rs:src/a.rs:verify", "parent": "rs:src/a.rs", "flags": 0, "path": "/r/src/a.rs", "root": "/r"},
            5: {"key": "rs:src/b.rs:f", "parent": "rs:src/b.rs", "flags": 0, "path": "/r/src/b.rs", "root": "/r"}}
    cand = np.array([1, 2, 3, 4, 5])
    fused = np.array([4.0, 3.0, 2.0, 1.0, 4.5])
    assert group_by_file(cand, fused, [4, 0, 1, 2, 3], meta, 5, 0.5, 3) == [(4.5, [4]), (4.0 + 0.5 * 1.0, [0, 3])]


def test_the_graph_stage_seeds_a_definition_once_and_reaches_no_part(tmp_path):
    """A part that matches seeds its definition (one seed slot for the family, as the walk's mass
    in a part is its definition's), and the walk adds no part to the candidates."""
    db = tmp_path / "g.db"
    index_paths(db, [str(_tree(tmp_path))], IndexOptions(steps=("text", "graph")))
    engine = Engine(Index.open(db, readonly=True))
    r = engine.search("squeeze-limit option widget frames build_app", SearchOptions(k=50, collapse=False))
    assert r.code_query and r.seeds
    flags = dict(engine.ix.conn.execute("SELECT id, flags FROM nodes"))
    assert not [s for s in r.seeds if flags[s] & FLAG_PART]
    assert engine.ix.conn.execute("SELECT id FROM nodes WHERE key = 'rs:src/clap.rs:build_app'").fetchone()[0] in r.seeds
    assert [h.key for h in r.hits if h.kind == "chunk"]                 # parts rank, by their text
    assert not [h.key for h in r.hits if h.kind == "chunk" and "graph" in h.channels]
