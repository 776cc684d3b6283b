"""The pure helpers of bench/code_tasks.py: symbol ids, scoring, sign test, fusion, task loading."""
from __future__ import annotations

import ast
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from conftest import SHARED as SHARED_ROOT

from kgsearch.ingest import pycode
from kgsearch.types import LoadOptions

ROOT = Path(__file__).resolve().parents[2]
SHARED = SHARED_ROOT / "bench" / "code-tasks"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


ct = _load("bench_code_tasks", ROOT / "bench" / "code_tasks.py")

SOURCE = '''
import functools

def top(x):
    def inner(y):
        def innermost():
            return y
        return innermost
    return inner

class A:
    class B:
        def m(self):
            pass

    @property
    def p(self):
        return 1

    @p.setter
    def p(self, v):
        pass

    async def am(self):
        lambda: 0

if True:
    def twice():
        return 1
else:
    def twice():
        return 2
'''


def _oracle(src: str) -> set[str]:
    """The README's spelling: names of enclosing classes and defs joined with dots."""
    out: set[str] = set()

    def walk(node, prefix):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = f"{prefix}.{ch.name}" if prefix else ch.name
                out.add(q)
                walk(ch, q)
            else:
                walk(ch, prefix)

    walk(ast.parse(src), "")
    return out


@pytest.mark.parametrize("rel", ["src/pkg/mod.py", "pkg/sub/__init__.py", "mod.py", "a/b-c/d.py"])
def test_symbol_ids_of_the_python_loader_match_the_task_spelling(tmp_path, rel):
    f = tmp_path / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(SOURCE)
    res = pycode.load(f, rel, LoadOptions(root=str(tmp_path)))
    mod = next(n for n in res.nodes if n.kind == "module")
    ids = {ct.symbol_id(rel, mod.qualname, n.qualname) for n in res.nodes if n.kind in ct.SYMBOL_KINDS}
    assert ids == {f"{rel}::{q}" for q in _oracle(SOURCE)}
    assert "A.p" in {i.split("::")[1] for i in ids}            # getter and setter: one id (#2 key)
    assert any(n.key.endswith("#2") for n in res.nodes)
    assert ct.module_name(rel) == mod.qualname                 # the fallback names modules like the loader


def test_in_file_qualname_needs_the_module_and_a_dot():
    assert ct.in_file_qualname("flask.app", "flask.app.Flask.run") == "Flask.run"
    assert ct.in_file_qualname("flask.app", "flask.apple.Flask") is None
    assert ct.in_file_qualname("flask.app", "flask.app") is None
    assert ct.in_file_qualname("", "x.y") is None
    assert (ct.symbol_id("src/flask/app.py", "flask.app", "flask.app.Flask.run.inner")
            == "src/flask/app.py::Flask.run.inner")


def test_sign_test_exact_values():
    assert ct.sign_test_p(0, 0) == 1.0
    assert ct.sign_test_p(1, 1) == 1.0
    assert ct.sign_test_p(0, 5) == pytest.approx(2 / 32)
    assert ct.sign_test_p(5, 0) == ct.sign_test_p(0, 5)
    assert ct.sign_test_p(2, 10) == pytest.approx(2 * (1 + 12 + 66) / 4096)
    assert ct.sign_test_p(28, 11) == pytest.approx(
        2 * sum(math.comb(39, i) for i in range(12)) / 2 ** 39)


def test_paired_counts_absent_as_worst():
    c = ct.paired([1, None, 3, None, 2], [2, 5, 3, None, 1], lower_is_better=True)
    assert (c["wins"], c["losses"], c["ties"]) == (1, 2, 2)
    c = ct.paired([0.5, 0.0, 1.0], [0.25, 0.0, 1.0], lower_is_better=False)
    assert (c["wins"], c["losses"], c["ties"]) == (1, 0, 2)
    assert c["p"] == 1.0


def test_task_metrics_and_aggregate_follow_score_py():
    m = ct.task_metrics(["a.py", "a.py", "b.py"], ["b.py::f", "a.py::g", "a.py::g"], ["b.py"], ["a.py::g", "c.py::h"])
    assert m["file_R@1"] == 0 and m["file_R@5"] == 1
    assert m["sym_R@10"] == 0.5 and m["sym_P@10"] == 0.1 and m["sym_MRR@10"] == 0.5
    assert m["sym_P@10_max"] == 0.2
    assert "sym_R@10" not in ct.task_metrics(["a.py"], [], ["a.py"], [])
    agg = ct.aggregate([m, ct.task_metrics([], [], ["x.py"], [])])
    assert agg["n"] == 2 and agg["n_sym"] == 1 and agg["file_R@5"] == 0.5 and agg["sym_MRR@10"] == 0.5
    assert ct.first_rank(["a", "a", "b"], {"b"}) == 2 and ct.first_rank(["a"], {"b"}) is None


def test_source_paths_by_word_boundaries():
    src = ["src/flask/app.py", "src/latest.py", "contest/x.py", "pkg/testsuite.py", "requests/packages/urllib3/x.py"]
    other = ["tests/test_x.py", "testing/python/x.py", "pkg/test_utils.py", "pkg/utils_test.py", "conftest.py",
             "doc/conf.py", "docs/x.py", "examples/app.py", "LICENSE", "README.rst", "pkg/tests/data.py"]
    assert all(ct.is_source_path(p) for p in src)
    assert not any(ct.is_source_path(p) for p in other)
    assert ct.demote(["tests/a.py", "x.py", "LICENSE", "y.py"]) == ["x.py", "y.py", "tests/a.py", "LICENSE"]
    assert ct.file_category("src/a.py", {"src/a.py"}) == "source"
    assert ct.file_category("setup.py", {"src/a.py"}) == "other-code"
    assert ct.file_category("LICENSE") == "non-code" and ct.file_category("doc/conf.py") == "doc"


def test_rrf_merge_and_percentiles():
    assert ct.rrf_merge([["a", "b", "c"], ["b", "a", "d"]]) == ["a", "b", "c", "d"]   # a, b tie: a first
    assert ct.rrf_merge([["a"], ["b", "b"]]) == ["a", "b"]
    p = ct.percentiles([float(x) for x in range(1, 101)])
    assert (p["p50"], p["p95"], p["max"]) == (50.0, 95.0, 100.0)
    assert ct.percentiles([])["p50"] is None


def test_config_table_names_known_channels():
    from kgsearch.query import ALL_CHANNELS, DEFAULT_CHANNELS

    for name, cfg in ct.CONFIGS.items():
        chans = ct.config_channels(cfg, DEFAULT_CHANNELS) or []
        assert set(chans) <= set(ALL_CHANNELS), name
        assert set(cfg.minus) <= set(DEFAULT_CHANNELS), name
        assert all(d in ct.CONFIGS for d in ct.config_deps(cfg)), name
    assert ct.config_channels(ct.CONFIGS["-graph"], DEFAULT_CHANNELS) == [
        c for c in DEFAULT_CHANNELS if c not in ("graph", "intent", "local", "global")]


def test_bad_task_folder_names_the_file(tmp_path):
    with pytest.raises(ct.BadInput, match="no tasks/ folder"):
        ct.load_tasks(tmp_path)
    d = tmp_path / "tasks" / "x__y"
    d.mkdir(parents=True)
    (d / "queries.jsonl").write_text('{"_id": "q", "text": "t"}\n')
    with pytest.raises(ct.BadInput, match=r"meta\.json"):
        ct.load_tasks(tmp_path)
    (d / "meta.json").write_text(json.dumps({"source_tree": "y@1"}))
    with pytest.raises(ct.BadInput, match="snapshot folder"):
        ct.load_tasks(tmp_path)


needs_shared = pytest.mark.skipif(not (SHARED / "score.py").is_file(), reason="../shared/bench/code-tasks absent")


@needs_shared
def test_shared_task_set_loads_with_its_counts():
    repos = ct.load_tasks(SHARED)
    tasks = [t for r in repos for t in r.tasks]
    assert (len(repos), len(tasks)) == (9, 64)
    assert sum(len(t.gold_symbols) for t in tasks) == 73
    assert sum(1 for t in tasks if t.gold_symbols) == 61
    assert collections_count(t.fix_status for t in tasks) == {"unfixed": 9, "fixed": 12, "drifted": 43}


def collections_count(xs):
    out: dict = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


@needs_shared
def test_metrics_equal_score_py_on_the_baseline_run():
    score = _load("code_tasks_score", SHARED / "score.py")
    run = score.read_run(SHARED / "baselines" / "bm25.run.jsonl")
    dirs = score.task_dirs([str(SHARED / "tasks")])
    ref = score.score(run, dirs)["ALL (micro over tasks)"]
    tasks = [t for r in ct.load_tasks(SHARED) for t in r.tasks]
    mine = ct.aggregate([ct.task_metrics(run[t.qid]["files"], run[t.qid]["symbols"], t.gold_files, t.gold_symbols)
                         for t in tasks])
    for k in ct.METRICS + ["n", "n_sym"]:
        assert mine[k] == pytest.approx(ref[k], abs=1e-12), k
    assert mine["file_R@5"] == pytest.approx(0.671875)     # the README's .672
