"""The code-task benchmarks' symbol list: a definition enclosing two listed ones joins it
(bench/code_tasks.py :func:`with_enclosing`), hand-computed cases."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ct():
    spec = importlib.util.spec_from_file_location("bench_code_tasks_t", ROOT / "bench" / "code_tasks.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)           # its dataclasses look their module up
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


DEFS = {"rs:src/a.rs:Foo", "rs:src/a.rs:Foo.bar", "rs:src/a.rs:Foo.baz", "rs:src/a.rs:top",
        "c:inc/f.h:detail.impl", "c:inc/f.h:detail.impl.run", "c:inc/f.h:detail.impl.stop",
        "py:pkg.mod.Cls", "py:pkg.mod.Cls.m1", "py:pkg.mod.Cls.m2"}


def test_enclosing_definition_of_two_members_goes_after_the_second():
    ct = _ct()
    got = ct.with_enclosing([("src/a.rs::top", "rs:src/a.rs:top"),
                             ("src/a.rs::Foo.bar", "rs:src/a.rs:Foo.bar"),
                             ("src/b.rs::g", "rs:src/b.rs:g"),
                             ("src/a.rs::Foo.baz", "rs:src/a.rs:Foo.baz#2")], DEFS.__contains__)
    assert got == ["src/a.rs::top", "src/a.rs::Foo.bar", "src/b.rs::g", "src/a.rs::Foo.baz", "src/a.rs::Foo"]


def test_one_member_alone_adds_nothing_and_a_listed_container_is_not_repeated():
    ct = _ct()
    one = [("src/a.rs::Foo.bar", "rs:src/a.rs:Foo.bar"), ("src/a.rs::top", "rs:src/a.rs:top")]
    assert ct.with_enclosing(one, DEFS.__contains__) == ["src/a.rs::Foo.bar", "src/a.rs::top"]
    listed = [("src/a.rs::Foo.bar", "rs:src/a.rs:Foo.bar"), ("src/a.rs::Foo", "rs:src/a.rs:Foo"),
              ("src/a.rs::Foo.baz", "rs:src/a.rs:Foo.baz")]
    assert ct.with_enclosing(listed, DEFS.__contains__) == ["src/a.rs::Foo.bar", "src/a.rs::Foo", "src/a.rs::Foo.baz"]
    later = [("src/a.rs::Foo.bar", "rs:src/a.rs:Foo.bar"), ("src/a.rs::Foo.baz", "rs:src/a.rs:Foo.baz"),
             ("src/a.rs::top", "rs:src/a.rs:top"), ("src/a.rs::Foo", "rs:src/a.rs:Foo")]
    assert ct.with_enclosing(later, DEFS.__contains__) == ["src/a.rs::Foo.bar", "src/a.rs::Foo.baz", "src/a.rs::Foo",
                                                            "src/a.rs::top"]


def test_a_prefix_that_is_no_definition_is_not_listed():
    """C++ namespaces are not nodes: ``detail`` of ``detail.f``/``detail.g`` stays out; the
    class ``detail.impl`` of two methods comes in; Python keys (module prefix) work alike."""
    ct = _ct()
    got = ct.with_enclosing([("inc/f.h::detail.f", "c:inc/f.h:detail.f"), ("inc/f.h::detail.g", "c:inc/f.h:detail.g"),
                             ("inc/f.h::detail.impl.run", "c:inc/f.h:detail.impl.run"),
                             ("inc/f.h::detail.impl.stop", "c:inc/f.h:detail.impl.stop")], DEFS.__contains__)
    assert got == ["inc/f.h::detail.f", "inc/f.h::detail.g", "inc/f.h::detail.impl.run", "inc/f.h::detail.impl.stop",
                   "inc/f.h::detail.impl"]
    py = ct.with_enclosing([("pkg/mod.py::Cls.m2", "py:pkg.mod.Cls.m2"), ("pkg/mod.py::Cls.m1", "py:pkg.mod.Cls.m1")],
                           DEFS.__contains__)
    assert py == ["pkg/mod.py::Cls.m2", "pkg/mod.py::Cls.m1", "pkg/mod.py::Cls"]
