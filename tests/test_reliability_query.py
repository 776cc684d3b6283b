"""Issue 24, the query side: a hostile query size (cut once, with a notice), queries from stdin
and files, ``why`` for a node a section stands for, an ambiguous node name, headings made of
inline code, a "diff" that is not one, progress a cron log can see, and no noise."""
from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import run as cli
from conftest import write

from kgsearch.query.cut import MAX_QUERY_CHARS, cut_query


FILLER = " ".join(["lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"] * 24)


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    """One indexed project for the module: tests read it and do not change it."""
    tmp_path = tmp_path_factory.mktemp("proj")
    root = tmp_path / "proj"
    write(root / "api.md", "# API notes\n\nIntro.\n\n## `send()`\n\n" + FILLER + "\nSends a message through the "
          "transport layer.\n\n## `Client.connect(host, port)`\n\n" + FILLER + "\nOpens a socket connection.\n\n"
          "### The `retry` option\n\n" + FILLER + "\nHow retries work with exponential backoff.\n")
    write(root / "code.py", "class Mailer:\n    def send(self):\n        return 1\n\n\nclass Pager:\n"
                            "    def send(self):\n        return 2\n")
    write(root / "other.md", "# Other\n\ngardening and tomatoes\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q")[0] == 0
    return root, db


def huge_query(n: int = 1_000_000) -> str:
    words = "how retries work with exponential backoff".split()
    return " ".join(words[i % len(words)] for i in range(n // 6))[:n]


# ---------------------------------------------------------------------------- a hostile query size
def test_cut_query_keeps_words_whole():
    text, note = cut_query("x" * 10 + " " + "y" * 50, limit=40)
    assert text == "x" * 10 + " " + "y" * 29 and "cut" in note     # no whitespace late enough: cut mid-word
    text, note = cut_query("a " * 30, limit=40)
    assert len(text) <= 40 and not text.endswith(" ") and note.startswith("the query was cut to its first")
    assert cut_query("q" * MAX_QUERY_CHARS) == ("q" * MAX_QUERY_CHARS, None)


def test_a_huge_query_is_analysed_once_cut(proj, monkeypatch):
    from kgsearch.query import SearchOptions, engine, engine_for

    seen = []
    real = engine.resolve
    monkeypatch.setattr(engine, "resolve", lambda q, *a, **k: seen.append(len(q.text)) or real(q, *a, **k))
    resp = engine_for(str(proj[1])).search(huge_query(), SearchOptions(use_cache=False))
    assert seen and max(seen) <= MAX_QUERY_CHARS                 # what every stage reads is the cut text
    assert len(resp.query) <= MAX_QUERY_CHARS and resp.hits
    assert any("the query was cut to its first" in n and "1,000,000" in n for n in resp.notices)


# ---------------------------------------------------------------------------- stdin and files
@pytest.mark.parametrize("how", ["search -", "search --query-file", "search --query-file -", "context -",
                                 "context --query-file", "why -"])
def test_query_from_stdin_or_a_file(proj, tmp_path, how):
    _, db = proj
    query = "exponential backoff retries " + huge_query()                # 1 MB: no argv would take it
    qfile = write(tmp_path / "issue.txt", query)
    cmd, how_arg = how.split(" ", 1)
    args = {"-": ["-"], "--query-file": ["--query-file", qfile], "--query-file -": ["--query-file", "-"]}[how_arg]
    extra = ["md:api#the-retry-option"] if cmd == "why" else []
    rc, out, err = cli(cmd, *args, *extra, "--db", db, "--json", stdin=query if "-" in how_arg.split()[-1:] or
                       how_arg == "-" else None)
    assert rc == 0, err
    assert "the query was cut to its first" in err
    got = json.loads(out)
    if cmd == "search":
        assert got["hits"][0]["key"] in ("md:api#the-retry-option", "md:api")     # the note or its section
        assert got["query"].startswith("exponential backoff retries")
    elif cmd == "context":
        assert got["items"] and got["query"].startswith("exponential backoff retries")


def test_a_query_and_a_query_file_together_are_a_usage_error(proj, tmp_path):
    _, db = proj
    rc, _, err = cli("search", "words", "--query-file", write(tmp_path / "q.txt", "x"), "--db", db)
    assert rc == 2 and "--query-file" in err


def test_an_unreadable_query_file_is_one_line(proj, tmp_path):
    _, db = proj
    rc, _, err = cli("search", "--query-file", tmp_path / "missing.txt", "--db", db)
    assert rc == 3
    assert err.count("\n") == 1 and "missing.txt" in err


def test_an_empty_query_from_stdin_is_a_usage_error(proj):
    rc, _, err = cli("search", "-", "--db", proj[1], stdin="  \n")
    assert rc == 2 and "empty" in err


# ---------------------------------------------------------------------------- headings, why, show
def test_headings_of_inline_code_keep_their_words(proj):
    _, db = proj
    with sqlite3.connect(db) as c:
        names = dict(c.execute("SELECT key, name FROM nodes WHERE kind = 'section'"))
    assert names == {"md:api#api-notes": "API notes", "md:api#send": "send()",
                     "md:api#clientconnecthost-port": "Client.connect(host, port)",
                     "md:api#the-retry-option": "The retry option"}


def test_why_names_the_section_that_stands_for_a_note(proj):
    _, db = proj
    # BM25 alone: which of a note and its section the embedding model prefers is not the point
    rc, out, err = cli("why", "exponential backoff retries", "md:api", "--db", db, "--json", "--channels", "bm25")
    assert rc == 0, err
    info = json.loads(out)
    assert info["rank"] is None and info["represented_by"]["key"] == "md:api#the-retry-option"
    assert info["represented_by"]["rank"] == 1
    assert "md:api#the-retry-option" in info["reason"] and "no channel returned" not in info["reason"]


@pytest.mark.parametrize("ref", ["send", "Send"])
def test_an_ambiguous_name_lists_the_candidates(proj, ref):
    _, db = proj
    rc, out, err = cli("show", ref, "--db", db)
    assert rc == 2, (out, err)
    line = err.strip()
    assert "\n" not in line
    for key in ("py:code.Mailer.send", "py:code.Pager.send"):
        assert key in line


def test_a_unique_name_a_key_or_a_note_and_its_section_are_not_ambiguous(proj, tmp_path):
    _, db = proj
    assert cli("show", "py:code.Mailer.send", "--db", db)[0] == 0
    assert cli("show", "code.Pager.send", "--db", db)[0] == 0
    assert cli("show", "Mailer", "--db", db)[0] == 0
    root = tmp_path / "n"
    write(root / "Backup.md", "# Backup\n\n" + FILLER + "\n\n## Restore\n\n" + FILLER + "\n")
    db2 = tmp_path / "n.db"
    assert cli("index", root, "--db", db2, "-q")[0] == 0
    rc, out, err = cli("show", "Backup", "--db", db2, "--json")         # the note and its first section
    assert rc == 0, err and json.loads(out)["node"]["key"] == "md:Backup"


# ---------------------------------------------------------------------------- diffs
def test_a_diff_file_that_is_no_diff_is_one_line(proj, tmp_path):
    _, db = proj
    rc, out, err = cli("context", "--diff", write(tmp_path / "x.diff", "just some words\nno hunks\n"), "--db", db)
    assert rc == 3, (out, err)
    assert err.count("\n") == 1 and "x.diff" in err and "unified diff" in err


def test_an_empty_diff_is_not_an_error(proj, tmp_path):
    _, db = proj
    rc, _, err = cli("context", "--diff", write(tmp_path / "e.diff", ""), "--db", db)
    assert rc == 0, err


# ---------------------------------------------------------------------------- progress and noise
class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_on_a_log_is_a_plain_line_at_a_low_rate():
    from kgsearch.cli.output import Progress

    clock, buf = FakeClock(), io.StringIO()
    p = Progress("log", stream=buf, clock=clock, every=30.0)
    for i in range(1000):
        clock.t = i * 0.1                                             # 100 s of events, 10 per second
        p({"phase": "load", "done": i, "total": 1000})
    p.done()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 3                                            # at 30, 60 and 90 s
    assert all("\r" not in ln and "\x1b" not in ln for ln in lines)
    assert lines[0].startswith("progress: load 300/1,000 files")
    quiet = io.StringIO()
    q = Progress(None, stream=quiet, clock=clock)
    q({"phase": "load", "done": 1, "total": 2})
    q.done()
    assert quiet.getvalue() == ""


def test_index_progress_mode_follows_the_terminal_and_quiet():
    from kgsearch.cli.output import progress_mode

    assert progress_mode(tty=True, quiet=False) == "tty"
    assert progress_mode(tty=False, quiet=False) == "log"
    assert progress_mode(tty=False, quiet=True) is None and progress_mode(tty=True, quiet=True) is None


@pytest.mark.parametrize("saved, said", [(8192, False), (40_000, False), (2_500_000, True)])
def test_compaction_is_a_note_only_when_it_gave_back_a_megabyte(saved, said, capsys):
    from argparse import Namespace

    from kgsearch.cli.commands import _report_run
    from kgsearch.indexer import IndexReport

    rep = IndexReport(db="i.db", compacted_bytes=saved, phases={"compact": 0.01})
    assert _report_run(Namespace(json=False, quiet=False), rep) == 0
    err = capsys.readouterr().err
    assert ("compacted the index file: 2.5 MB smaller" in err) == said and ("0.0 MB" not in err)


def test_the_readme_limits_are_the_codes():
    from kgsearch.cli.output import LOG_EVERY
    from kgsearch.graph.stored.scores import CNM_WORK_FLOOR, CNM_WORK_PER_PAIR
    from kgsearch.indexer.load import MAX_NAME_CHARS, MAX_NODE_CHARS
    from kgsearch.ingest.common import MAX_LINE_CHARS
    from kgsearch.ingest.walk import DEFAULT_MAX_BYTES, TRIPLES_MAX_BYTES

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    limits = readme.split("### Limits", 1)[1].split("\n## ", 1)[0]
    rows = {r.split("|")[1].strip(): r.split("|")[2].strip() for r in limits.splitlines() if r.startswith("| ")}
    assert rows["query text (`search`, `why`, `context`, MCP)"] == f"{MAX_QUERY_CHARS:,} characters"
    assert rows["one line of a note or text file"] == f"{MAX_LINE_CHARS:,} bytes"
    assert rows["one node's text (its name)"] == f"{MAX_NODE_CHARS:,} characters ({MAX_NAME_CHARS:,})"
    assert rows["file size"].startswith(f"{DEFAULT_MAX_BYTES // 10**6} MB ({TRIPLES_MAX_BYTES // 10**6} MB `.tsv`")
    assert rows["greedy modularity (communities)"].startswith(
        f"{CNM_WORK_PER_PAIR} heap entries per linked pair, at least {CNM_WORK_FLOOR // 10**6}M")
    assert rows["MCP `search`, k=10, brief"] == "under 2,000 tokens (chars / 4)"   # test_reliability_mcp
    assert f"line every {LOG_EVERY:g} s" in readme      # "one plain line every 30 s"


def test_why_quotes_the_name_of_the_section_that_stands_for_a_note(tmp_path):
    """`why`'s "its section ... stands for it" showed the indexed heading with repr: a backslash
    in it came back doubled."""
    root = tmp_path / "v"
    write(root / "api.md", "# API notes\n\nIntro.\n\n## `send()`\n\n" + FILLER + "\nSends a message.\n\n"
          "### The C:\\retry option\n\n" + FILLER + "\nHow retries work with exponential backoff.\n")
    assert cli("index", root, "--db", tmp_path / "i.db", "-q")[0] == 0
    rc, out, err = cli("why", "exponential backoff retries", "md:api", "--db", tmp_path / "i.db", "--channels", "bm25")
    assert rc == 0, err
    assert "its section 'The C:\\retry option' (md:api#" in out, out


def test_why_keeps_its_reason_on_one_line_whatever_the_indexed_names_hold(tmp_path):
    """`why`'s reason line was printed as built: a note whose file name held a line break and an
    escape sequence (``"odd\\nname \\x1b[31m.md"``, the key of the section that stands for it)
    broke the reason into two lines, the second one free to pass for a line of kgsearch's own.
    It goes through the one-line helper as the node and result lines do."""
    root = tmp_path / "v"
    write(root / "odd\nname \x1b[31m.md", "# API notes\n\nIntro.\n\n## `send()`\n\n" + FILLER + "\nSends a message.\n\n"
          "### The retry option\n\n" + FILLER + "\nHow retries work with exponential backoff.\n")
    assert cli("index", root, "--db", tmp_path / "i.db", "-q")[0] == 0
    rc, out, err = cli("why", "exponential backoff retries", "md:odd\\nname \\x1b[31m", "--db", tmp_path / "i.db",
                       "--channels", "bm25")
    assert rc == 0, err
    assert "\x1b" not in out
    reason = [line for line in out.splitlines() if "stands for it" in line]
    assert len(reason) == 1 and reason[0].startswith("not listed on its own (one hit per note)"), out
    assert "(md:odd\\nname \\x1b[31m#the-retry-option)" in reason[0], out
