"""Every exit code the README documents, driven through the CLI (issue 13: "exit codes follow
the README's table everywhere"), and the README, `kgsearch --help` and kgsearch.errors agree."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from conftest import cli, write

from kgsearch import errors
from kgsearch.cli import EXIT_CODES, commands

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_codes() -> dict[int, str]:
    text = README.read_text(encoding="utf-8")
    table = text.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (.+) \|$", table, re.M)}


def _internal(tmp_path, monkeypatch, indexed):
    def boom(args):
        raise RuntimeError("a bug")
    monkeypatch.setattr(commands, "cmd_stats", boom)
    return ["stats", "--db", indexed[1]], "internal error RuntimeError: a bug"


def _interrupted(tmp_path, monkeypatch, indexed):
    import kgsearch.indexer as indexer

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(indexer, "index_paths", ctrl_c)
    return ["index", "--db", indexed[1]], "interrupted; nothing was changed"


def _busy(tmp_path, monkeypatch, indexed):
    from kgsearch.store.lock import IndexLock

    _busy.lock = IndexLock(indexed[1]).acquire()        # released by the test
    return ["index", "--db", indexed[1]], "another kgsearch index run holds"


def _damaged(tmp_path, monkeypatch, indexed):
    db = indexed[1]
    with sqlite3.connect(db) as c:
        pages = [r[0] for r in c.execute("SELECT pageno FROM dbstat WHERE name = 'text_postings'")]
        size = c.execute("PRAGMA page_size").fetchone()[0]
    with open(db, "r+b") as fh:
        for pg in pages:
            fh.seek((pg - 1) * size)
            fh.write(b"\xff" * size)
    return ["search", "alpha", "--db", db], "doctor --rebuild"


def _missing_root(tmp_path, monkeypatch, indexed):
    indexed[0].rename(tmp_path / "moved")              # a card unmounted: cron must not say ok
    return ["index", "--db", indexed[1]], "is missing"


def _over_budget(tmp_path, monkeypatch, indexed):
    # 1 MiB leaves no headroom: the graph step refuses before it reads an edge (budget.need)
    monkeypatch.setenv("KGSEARCH_MEMORY_MB", "1")
    return ["index", indexed[0], "--db", indexed[1], "--full"], "KGSEARCH_MEMORY_MB=1"


def _out_of_memory(tmp_path, monkeypatch, indexed):
    def no_memory(args):
        raise MemoryError()
    monkeypatch.setattr(commands, "cmd_stats", no_memory)
    return ["stats", "--db", indexed[1]], "ran out of memory; nothing was changed. Free memory, set KGSEARCH_MEMORY_MB"


def _ambiguous(tmp_path, monkeypatch, indexed):
    root, db = indexed
    write(root / "c.md", "# A\nanother note titled A\n")
    assert cli("index", root, "--db", db, "-q") == 0
    with sqlite3.connect(db) as c:
        c.execute("UPDATE nodes SET name = 'A' WHERE key IN ('md:a', 'md:c')")
    return ["show", "A", "--db", db], "names 2 nodes"


def _damaged_blob(tmp_path, monkeypatch, indexed):
    with sqlite3.connect(indexed[1]) as c:
        c.execute("UPDATE blobs SET data = x'00112233'")
    return ["search", "alpha", "--db", indexed[1]], "doctor --rebuild"


def _bad_ignore(tmp_path, monkeypatch, indexed):
    write(indexed[0] / ".kgsearchignore", "[z-a]\n")
    return ["index", "--db", indexed[1]], ".kgsearchignore:1: bad ignore pattern"


def _zero_bytes(tmp_path, monkeypatch, indexed):
    (tmp_path / "zero.db").write_bytes(b"")
    return ["search", "alpha", "--db", tmp_path / "zero.db"], "is an empty file (0 bytes)"


SCENARIOS = {
    "0 index": (0, lambda t, m, ix: (["index", ix[0], "--db", ix[1]], "indexed 0 changed file(s)")),
    "0 search": (0, lambda t, m, ix: (["search", "alpha", "--db", ix[1]], None)),
    "1 a bug": (1, _internal),
    "2 bad flag": (2, lambda t, m, ix: (["index", ix[0], "--db", ix[1], "--max-file-size", "0"], "--max-file-size")),
    "2 no path": (2, lambda t, m, ix: (["index", "--db", t / "new.db"], "nothing to index")),
    "2 ambiguous name": (2, _ambiguous),
    "2 empty query": (2, lambda t, m, ix: (["search", "", "--db", ix[1]], "the query is empty")),
    "2 blank query of why": (2, lambda t, m, ix: (["why", " \t", "md:a", "--db", ix[1]], "the query is empty")),
    "3 bad ignore pattern": (3, _bad_ignore),
    "4 zero-byte index": (4, _zero_bytes),
    "4 damaged blob": (4, _damaged_blob),
    "3 bad named file": (3, lambda t, m, ix: (["index", write(t / "bad.json", "{oops"), "--db", ix[1]],
                                             "invalid JSON")),
    "3 missing root": (3, _missing_root),
    "4 no index": (4, lambda t, m, ix: (["search", "alpha", "--db", t / "none.db"], "no index at")),
    "4 damaged": (4, _damaged),
    "5 no node": (5, lambda t, m, ix: (["show", "md:nowhere", "--db", ix[1]], "no node")),
    "5 no root": (5, lambda t, m, ix: (["roots", "remove", t / "nowhere", "--db", ix[1]], "no root")),
    "6 over budget": (6, _over_budget),
    "6 MemoryError": (6, _out_of_memory),
    "75 busy": (75, _busy),
    "130 ctrl-c": (130, _interrupted),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_documented_exit_code(name, tmp_path, monkeypatch, indexed, capsys):
    code, make = SCENARIOS[name]
    args, says = make(tmp_path, monkeypatch, indexed)
    capsys.readouterr()
    try:
        assert cli(*args) == code
    finally:
        lock = getattr(_busy, "lock", None)
        if lock is not None:
            lock.release()
            _busy.lock = None
    if says is not None:
        assert says in capsys.readouterr().err


def test_the_readme_help_and_errors_document_the_same_codes():
    documented = readme_codes()
    assert set(documented) == {int(c) for c, _ in (ln.split(None, 1) for ln in EXIT_CODES.splitlines()[1:]
                                                   if ln[:5].strip().isdigit())}
    defined = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert set(documented) == defined
    assert set(documented) == {code for code, _ in SCENARIOS.values()}


def test_text_to_a_pipe_is_escaped_json_is_raw(tmp_path, capsys):
    """A pipe got the text as indexed "for tools that read it", and `show X | head` put the
    escapes on the terminal at its end; text output is escaped on every stream now, and tools
    read the text as indexed from --json (tests/test_real_folders.py checks both too)."""
    root = tmp_path / "v"
    write(root / "evil.md", "# Evil\nwombat \x1b[2J \u202e txt.exe\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("show", "md:evil", "--db", db) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\u202e" not in shown and "wombat \\x1b[2J \\u202e txt.exe" in shown
    assert cli("show", "md:evil", "--db", db, "--json") == 0
    assert "wombat \x1b[2J \u202e txt.exe" in json.loads(capsys.readouterr().out)["node"]["text"]


@pytest.mark.parametrize("args, says", [
    (["show", "md:a", "--edges", "-1"], "error: --edges must be a whole number >= 0, got -1\n"),
    (["show", "md:a", "--lines", "-3"], "error: --lines must be a whole number >= 0, got -3\n"),
    (["communities", "--limit", "-1"], "error: --limit must be a whole number >= 0 (0: all), got -1\n"),
    (["communities", "--terms", "-1"], "error: --terms must be a whole number >= 0, got -1\n"),
    (["bench", "--queries", "0"], "error: --queries must be a whole number >= 1, got 0\n"),
    (["bench", "--queries", "-1"], "error: --queries must be a whole number >= 1, got -1\n"),
    (["bench", "--cold-runs", "0"], "error: --cold-runs must be a whole number >= 1, got 0\n"),
])
def test_a_count_out_of_range_is_a_usage_error(args, says, indexed, capsys):
    """Before: `show --edges -1` listed every edge (SQLite's LIMIT -1), `--lines -3` all lines but
    the last three, `communities --limit -1` printed no community and "53 more", and `bench
    --queries 0` (or `--cold-runs 0`) ended in an internal error (exit 1) after indexing."""
    capsys.readouterr()
    assert cli(*args, "--db", indexed[1]) == 2
    assert capsys.readouterr().err == says


@pytest.mark.parametrize("args, says", [
    (["search", "alpha", "-k", "\u0663"], "argument -k: invalid int value: '\u0663'"),      # Arabic-Indic 3
    (["search", "alpha", "-k", "\uff13"], "argument -k: invalid int value: '\uff13'"),      # fullwidth 3
    (["search", "alpha", "--diversity", "\uff11.5"], "argument --diversity: invalid float value: '\uff11.5'"),
    (["path", "a", "b", "--max-len", "\u0966"], "argument --max-len: invalid int value: '\u0966'"),
])
def test_numbers_are_ascii_digits(args, says, indexed, capsys):
    """int() and float() read other scripts' digits and nan: `-k ٣` searched for 3 hits."""
    capsys.readouterr()
    assert cli(*args, "--db", indexed[1]) == 2
    assert says in capsys.readouterr().err
    assert cli("search", "alpha", "-k", " 3", "--db", indexed[1]) == 0     # (ASCII, spaces as int() takes)


@pytest.mark.parametrize("args", [["roots", "remove", "x"], ["model", "use", "default"]])
def test_a_command_that_changes_an_index_needs_one(args, tmp_path, capsys):
    """Before: `roots remove x` on a missing index said "no root 'x' (its roots: none)" (exit 5)
    and `model use NAME` "nothing to index: give a PATH" (exit 2); both left a lock file."""
    db = tmp_path / "none.db"
    assert cli(*args, "--db", db) == 4
    # (the command names the index: with several --db, `kgsearch index PATH` built the default one)
    assert capsys.readouterr().err == (f"error: no index at {db}; build one with `kgsearch index PATH --db {db}` "
                                       f"(or pass another --db / set KGSEARCH_DB)\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, says", [
    (["search", "alpha", "--db", ""], "error: --db needs the path of an index file, got an empty one"),
    (["index", ".", "--db", ""], "error: --db needs the path of an index file, got an empty one"),
    (["search", "alpha", "--weights", "0,0,0,0"], "error: --weights '0,0,0,0' gives every signal 0"),
    (["search", "alpha", "--channels", "graph"], "error: --channels graph: the graph channels (graph, intent, local, "
                                                 "global) start from the candidates of a first-stage channel; add "
                                                 "one, e.g. --channels bm25,graph"),
    (["search", "alpha", "--channels", "local,global"], "e.g. --channels bm25,local"),
])
def test_flags_that_could_only_answer_nothing_are_usage_errors(args, says, indexed, capsys, monkeypatch):
    """`--db ''` (an unset variable) searched the default index (exit 4, "no index at ~/.local/...")
    or indexed into '.' ("a folder"); `--weights 0,0,0,0` and `--channels graph` (no first stage)
    answered "no results" with exit 0."""
    monkeypatch.chdir(indexed[1].parent)
    capsys.readouterr()
    full = args if "--db" in args else [*args, "--db", str(indexed[1])]
    assert cli(*full) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and err.count("\n") == 1


def test_a_cli_query_of_nul_bytes_is_a_usage_error(tmp_path, capsys, monkeypatch):
    """`printf '\\0\\0' | kgsearch search -` (or --query-file) searched for "  " and answered
    "no results for '  '" with exit 0."""
    import io
    import sys

    from kgsearch.cli import main

    nul = tmp_path / "q.txt"
    nul.write_bytes(b"\x00\x00\x00")
    capsys.readouterr()
    assert main(["search", "--query-file", str(nul), "--db", str(tmp_path / "none.db")]) == 2
    assert capsys.readouterr().err == (f"error: the query read from {nul} is empty (nothing but blanks or control "
                                       f"characters)\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\x00\x00")))
    assert main(["search", "-", "--db", str(tmp_path / "none.db")]) == 2
    assert "the query read from stdin is empty" in capsys.readouterr().err
