"""Issue 13: real folders, real phones. One small reproduction per defect in the issue's "Why".

Every test asserts what a demanding phone user running ``kgsearch index`` from cron expects,
and is marked ``xfail(strict=True)`` while the defect is there: the suite stays green, and the
test turns into an error ("XPASS(strict)") the moment the defect is fixed, so the fixer removes
the mark. Where the right behaviour is a design choice, a comment says which one the test
takes.

Most tests drive the CLI in this process (``kgsearch.cli.main``: exit codes and stderr); those
that need another user's view of file permissions, a terminal, or a fresh process run
``python -m kgsearch`` in a subprocess. The slow-when-failing ones (a regex that never ends, a
star graph's memory, a writer waiting for readers) are in ``test_real_folders_limits.py``.
"""
from __future__ import annotations

import json
import os
import pty
import random
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli, write


def xfail13(defect: str):
    return pytest.mark.xfail(strict=True, reason=f"issue 13: {defect}")


# ---------------------------------------------------------------------------- helpers


def keys(db: Path, where: str = "1") -> list[str]:
    with sqlite3.connect(db) as c:
        return sorted(r[0] for r in c.execute(f"SELECT key FROM nodes WHERE {where}"))


def count(db: Path, sql: str, *params) -> int:
    with sqlite3.connect(db) as c:
        return c.execute(sql, params).fetchone()[0]


def warnings_in(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("warning:")]


def run_cli(*args, unprivileged: bool = False, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m kgsearch ARGS`` in a fresh process. ``unprivileged``: without the power to
    read folders whatever their permissions (root's CAP_DAC_*), so a chmod-000 folder is as
    unreadable as ``~/storage/shared/Android/data`` is on a phone."""
    cmd = [sys.executable, "-m", "kgsearch", *map(str, args)]
    if unprivileged and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a folder unreadable")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def lock_down(request):
    """``lock_down(path, mode)``: chmod a folder; restored afterwards so tmp_path can be removed."""
    done = []

    def chmod(path: Path, mode: int) -> None:
        done.append((path, path.stat().st_mode & 0o7777))
        path.chmod(mode)

    yield chmod
    for path, mode in reversed(done):
        path.chmod(mode)


def run_in_terminal(*args, timeout: float = 120) -> tuple[int, bytes]:
    """Run ``python -m kgsearch ARGS`` with stdout on a pseudo-terminal; (exit code, stdout bytes)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "kgsearch", *map(str, args)], stdout=slave,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:            # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(timeout), b"".join(chunks)


# ---------------------------------------------------------------------------- the walk
@pytest.mark.parametrize("keep_going", [False, True])
def test_symlinked_py_inside_root_is_indexed_once(tmp_path, capsys, keep_going):
    # pylint and sympy checkouts hold such links (a module kept under an old name)
    root = tmp_path / "repo"
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "mod.py", "def f():\n    return g()\n\n\ndef g():\n    return 1\n")
    (root / "pkg" / "alias.py").symlink_to("mod.py")
    db = tmp_path / "i.db"
    flags = ["--keep-going"] if keep_going else []
    assert cli("index", root, "--db", db, *flags) == 0, capsys.readouterr().err
    # design choice: a link inside the root is indexed once, by its real file (as the README's
    # "follows symlinks only inside the root" implies no duplicate)
    assert keys(db, "kind = 'function'") == ["py:pkg.mod.f", "py:pkg.mod.g"]
    assert count(db, "SELECT count(*) FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
                     "WHERE e.type = 'calls' AND s.key = 'py:pkg.mod.f' AND d.key = 'py:pkg.mod.g'") == 1
    assert cli("index", "--db", db) == 0                  # and the cron rerun is clean too


@pytest.mark.parametrize("linked", [False, True])
def test_symlinked_note_keeps_the_real_note(tmp_path, capsys, linked):
    vault = tmp_path / "vault"
    write(vault / "Real.md", "# Real\nkiwi fruit" + (" see [[Other]]\n" if linked else "\n"))
    write(vault / "Other.md", "# Other\nback to [[Real]]\n" if linked else "# Other\nplain\n")
    (vault / "Shortcut.md").symlink_to("Real.md")   # sorts after the real note
    db = tmp_path / "i.db"
    assert cli("index", vault, "--db", db) == 0, capsys.readouterr().err
    notes = keys(db, "kind = 'note'")
    assert "md:Real" in notes and "md:Other" in notes
    assert "md:Shortcut" not in notes                 # indexed once, by its real file
    if linked:
        assert count(db, "SELECT count(*) FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
                         "WHERE s.key = 'md:Real' AND d.key = 'md:Other' AND e.type = 'links_to'") == 1


def test_json_config_with_comments_is_skipped_with_one_warning(tmp_path, capsys):
    root = tmp_path / "repo"
    write(root / "asv_bench" / "asv.conf.json", '{\n    // The version of the config file format.\n    "version": 1\n}\n')
    write(root / "package.json", '{"name": "x", "version": "1.0.0"}\n')
    write(root / "README.md", "# Project\nhello\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db) == 0
    err = capsys.readouterr().err
    # found while walking a folder, a JSON file that is not a knowledge graph (valid or not) is
    # skipped with one warning naming it; a build tool's file (package.json) without one
    about = [w for w in warnings_in(err) if "asv.conf.json" in w]
    assert len(about) == 1, err
    assert not [w for w in warnings_in(err) if "package.json" in w], err
    assert keys(db, "kind = 'note'") == ["md:README"]


@pytest.mark.parametrize("name,body", [
    ("results.csv", "id,value\n1,2\n3,4,5\n"),                            # test data, ragged row
    ("events.jsonl", '{"id": 1, "name": "start"}\nnot json\n'),           # a log
    ("cluster.json", '{"nodes": [{"name": "worker"}], "version": 2}\n'),   # a tool's config
], ids=["csv", "jsonl", "json-nodes"])
def test_malformed_file_in_a_folder_does_not_stop_the_others(tmp_path, capsys, name, body):
    # (beyond the list, same cause as asv.conf.json: kg.py raises DataError while walking)
    root = tmp_path / "repo"
    write(root / "data" / name, body)
    write(root / "README.md", "# Project\nhello\n")
    db = tmp_path / "i.db"
    rc = cli("index", root, "--db", db)
    err = capsys.readouterr().err
    # design choice: the file is skipped with a line naming it, the rest is committed; the exit
    # code may say "partial" (3, as --keep-going does) or not (0) -- either way cron's other
    # files are indexed
    assert rc in (0, 3)
    assert f"{name}:" in err
    assert keys(db, "kind = 'note'") == ["md:README"]


@pytest.mark.parametrize("ignored", [False, True])
def test_unreadable_subfolder_does_not_fail_the_run(tmp_path, lock_down, ignored):
    vault = tmp_path / "storage"
    write(vault / "notes" / "a.md", "# A\nalpha\n")
    write(vault / "Android" / "data" / "com.app" / "b.md", "# B\nprivate\n")
    if ignored:
        write(vault / ".kgsearchignore", "Android/data/\n")
    lock_down(vault / "Android" / "data", 0o000)
    db = tmp_path / "i.db"
    r = run_cli("index", vault, "--db", db, unprivileged=True)
    # design choice: an unreadable folder is skipped with one warning (the run report counts
    # it) and the run succeeds -- Android/data is unreadable on every run, so a non-zero exit
    # would make every cron run fail; once it is in .kgsearchignore it is not even mentioned
    assert r.returncode == 0, r.stderr
    assert keys(db, "kind = 'note'") == ["md:notes/a"]
    about = [w for w in warnings_in(r.stderr) if "Android" in w]
    assert len(about) == (0 if ignored else 1), r.stderr


def test_same_relative_path_in_two_roots_keeps_both(tmp_path, capsys):
    a, b = tmp_path / "work", tmp_path / "home"
    write(a / "Home.md", "# Home\nalpha apples\n")
    write(b / "Home.md", "# Home\nbravo bananas\n")
    write(a / "src" / "README.md", "# Readme\ncharlie\n")
    write(b / "src" / "README.md", "# Readme\ndelta\n")
    db = tmp_path / "i.db"
    assert cli("index", a, b, "--db", db) == 0
    err = capsys.readouterr().err
    assert warnings_in(err) == []
    assert count(db, "SELECT count(*) FROM nodes WHERE kind = 'note'") == 4
    assert count(db, "SELECT count(DISTINCT file_id) FROM nodes WHERE kind = 'note'") == 4
    assert cli("search", "bananas", "--db", db, "--json", "-k", "3", "--channels", "bm25") == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits and Path(hits[0]["path"]) == (b / "Home.md").resolve()


# ---------------------------------------------------------------------------- roots
def _two_notes(root: Path) -> None:
    write(root / "m.md", "# M\nmango\n")
    write(root / "sub" / "n.md", "# N\nnectarine\n")


@pytest.mark.parametrize("mode", [0o311, 0o000], ids=["no-read", "no-access"])
def test_unlistable_root_is_kept_and_reported(tmp_path, lock_down, capsys, mode):
    root = tmp_path / "vault"
    _two_notes(root)
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db) == 0
    lock_down(root, mode)
    r = run_cli("index", "--db", db, unprivileged=True)
    # the cron log must not say ok, and must not say "internal error" (exit 1, a bug): it
    # names the root; nothing is removed until the user removes the root
    assert r.returncode not in (0, 1), r.stderr
    assert str(root.resolve()) in r.stderr
    assert keys(db, "kind = 'note'") == ["md:m", "md:sub/n"]


@pytest.mark.parametrize("mode", [0o311, 0o000], ids=["no-read", "no-access"])
def test_unlistable_subfolder_keeps_its_notes(tmp_path, lock_down, capsys, mode):
    # (found beyond the list: the same wipe as an unlistable root, one level down)
    root = tmp_path / "vault"
    _two_notes(root)
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db) == 0
    lock_down(root / "sub", mode)
    r = run_cli("index", "--db", db, unprivileged=True)
    # design choice: like any unreadable folder it is skipped with one warning and the run
    # goes on (exit 0, see test_unreadable_subfolder_does_not_fail_the_run); what it held
    # before stays in the index, since nobody can tell whether it is gone
    assert r.returncode == 0, r.stderr
    assert len([w for w in warnings_in(r.stderr) if str((root / "sub").resolve()) in w]) == 1, r.stderr
    assert keys(db, "kind = 'note'") == ["md:m", "md:sub/n"]


@pytest.mark.parametrize("value", ["-1", "nan", "0"])
def test_bad_max_file_size_is_a_usage_error(tmp_path, capsys, value):
    root = tmp_path / "vault"
    _two_notes(root)
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db) == 0
    capsys.readouterr()
    # design choice: a size cap <= 0 is refused (0 would skip every file and so delete the
    # whole index from a cron line); an unlimited size is not offered
    assert cli("index", root, "--db", db, "--max-file-size", value) == 2
    assert "--max-file-size" in capsys.readouterr().err
    assert keys(db, "kind = 'note'") == ["md:m", "md:sub/n"]


# fixed by the query options' validation (kgsearch/query/options.py, SearchOptions.validated)
@pytest.mark.parametrize("args", [["-k", "-1"], ["-k", "0"], ["--diversity", "nan"], ["--diversity", "-1"]],
                         ids=["k-1", "k0", "diversity-nan", "diversity-neg"])
def test_bad_search_options_are_usage_errors(tmp_path, capsys, args):
    root = tmp_path / "vault"
    _two_notes(root)
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db) == 0
    capsys.readouterr()
    assert cli("search", "mango", "--db", db, *args) == 2
    assert args[0] in capsys.readouterr().err


def test_missing_root_does_not_stop_the_other_roots(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "a.md", "# A\napricot\n")
    write(b / "b.md", "# B\nblueberry\n")
    db = tmp_path / "i.db"
    assert cli("index", a, b, "--db", db) == 0
    b.rename(tmp_path / "b-moved")                    # an SD card unmounted, a folder renamed
    write(a / "a2.md", "# A2\navocado\n")
    capsys.readouterr()
    rc = cli("index", "--db", db)
    err = capsys.readouterr().err
    # the run updates what it can, then says (non-zero exit, the root named) what it could not;
    # the missing root's notes stay until the user removes the root
    assert rc != 0 and str(b.resolve()) in err
    # (the second root's keys carry its label: see kgsearch/store/roots.py)
    assert keys(db, "kind = 'note'") == ["md://b/b", "md:a", "md:a2"]


def test_roots_remove(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "a.md", "# A\napricot\n")
    write(b / "b.md", "# B\nblueberry\n")
    db = tmp_path / "i.db"
    assert cli("index", a, b, "--db", db) == 0
    assert cli("roots", "remove", b, "--db", db) == 0
    assert cli("index", "--db", db) == 0
    assert keys(db, "kind = 'note'") == ["md:a"]


# ---------------------------------------------------------------------------- output
EVIL = "# Evil\nwombat \x1b]0;pwned\x07 \x1b[2J cleared \u202e reversed txt.exe\n"


COMMANDS = {"search": ["search", "wombat"], "show": ["show", "md:evil"],
            # context wrote its pack past the sanitiser: escapes reached the terminal (set its title, cleared it)
            "context": ["context", "wombat"], "context-xml": ["context", "wombat", "--format", "xml"],
            "related": ["related", "md:evil"], "why": ["why", "wombat", "md:evil"]}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_terminal_output_is_sanitised(tmp_path, capsys, command):
    vault = tmp_path / "vault"
    write(vault / "evil.md", EVIL)
    write(vault / "w\x1b]0;pwned\x07\u202ewombat.md", "# Other\nsee [[evil]] about the wombat\n")   # (names too)
    db = tmp_path / "i.db"
    assert cli("index", vault, "--db", db) == 0
    rc, out = run_in_terminal(*COMMANDS[command], "--db", db)
    assert rc == 0
    # to a terminal: control characters and bidi overrides are shown escaped, not obeyed
    assert b"wombat" in out and b"pwned" in out
    assert b"\x1b]0;" not in out and b"\x1b[2J" not in out and b"\x07" not in out
    assert "\u202e".encode() not in out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_piped_output_is_sanitised_too(tmp_path, capsys, command):
    """`kgsearch show X | head` showed the note's escapes on the terminal at the pipe's end (a
    pipe got the text as indexed); --json is the way to the raw text (below)."""
    vault = tmp_path / "vault"
    write(vault / "evil.md", EVIL)
    write(vault / "w\x1b]0;pwned\x07\u202ewombat.md", "# Other\nsee [[evil]] about the wombat\n")
    db = tmp_path / "i.db"
    assert cli("index", vault, "--db", db) == 0
    capsys.readouterr()
    assert cli(*COMMANDS[command], "--db", db) == 0
    got = capsys.readouterr()
    for text in (got.out, got.err):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "wombat" in got.out and "pwned" in got.out


def test_json_output_keeps_the_raw_text(tmp_path, capsys):
    """The other half of the sanitising contract (passes today; must keep passing)."""
    vault = tmp_path / "vault"
    write(vault / "evil.md", EVIL)
    db = tmp_path / "i.db"
    assert cli("index", vault, "--db", db) == 0
    capsys.readouterr()
    assert cli("show", "md:evil", "--db", db, "--json") == 0
    node = json.loads(capsys.readouterr().out)["node"]
    assert "\x1b]0;pwned\x07" in node["text"] and "\u202e" in node["text"]


# ---------------------------------------------------------------------------- a corrupt index
def _corrupt_table(db: Path, table: str) -> None:
    with sqlite3.connect(db) as c:
        try:
            pages = [r[0] for r in c.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table")
        size = c.execute("PRAGMA page_size").fetchone()[0]
    assert pages
    with open(db, "r+b") as fh:
        for pg in pages:
            fh.seek((pg - 1) * size)
            fh.write(b"\xff" * size)


@pytest.fixture
def corrupt_db(tmp_path):
    vault = tmp_path / "vault"
    for i in range(30):
        write(vault / f"n{i}.md", f"# Note {i}\napple banana w{i} [[Note {i + 1}]]\n")
    db = tmp_path / "i.db"
    assert cli("index", vault, "--db", db) == 0
    _corrupt_table(db, "text_postings")          # derived data: read by every search
    return vault, db


def test_corrupt_index_search_exits_4_with_a_fix(corrupt_db, capsys):
    _, db = corrupt_db
    capsys.readouterr()
    assert cli("search", "apple", "--db", db) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(db) in err[0]
    assert "doctor" in err[0] or "rebuild" in err[0] or "--full" in err[0]


def test_corrupt_index_cron_run_exits_4(corrupt_db, capsys):
    _, db = corrupt_db
    capsys.readouterr()
    # design choice: the cron run notices (a cheap check, e.g. on the derived tables it would
    # touch, or PRAGMA quick_check now and then) and exits 4 with the fix instead of "no change"
    assert cli("index", "--db", db) == 4
    assert "doctor" in capsys.readouterr().err


def test_corrupt_index_full_rebuild_or_clear_fix(corrupt_db, capsys):
    vault, db = corrupt_db
    capsys.readouterr()
    rc = cli("index", vault, "--full", "--db", db)
    err = capsys.readouterr().err
    # either --full rebuilds it, or it says exactly how to (exit 4 naming `doctor --rebuild`)
    if rc == 4:
        assert "doctor --rebuild" in err
        assert cli("doctor", "--rebuild", "--db", db) == 0
    else:
        assert rc == 0, err
    assert cli("search", "apple", "--db", db, "--json", "--no-cache") == 0
    resp = json.loads(capsys.readouterr().out)
    assert "bm25" in resp["channels_run"] and resp["hits"]


# ---------------------------------------------------------------------------- settings
def test_mistyped_model_is_rejected_and_not_remembered(tmp_path, capsys):
    vault = tmp_path / "vault"
    _two_notes(vault)
    db = tmp_path / "i.db"
    assert cli("index", vault, "--db", db, "--model", "no-such-modle") in (2, 3)
    assert "no-such-modle" in capsys.readouterr().err
    assert cli("index", vault, "--db", db) == 0
    with sqlite3.connect(db) as c:
        row = c.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
    assert "no-such-modle" not in (row[0] if row else "")
    capsys.readouterr()
    assert cli("search", "mango", "--db", db, "--json", "--no-cache") == 0
    assert "dense" in json.loads(capsys.readouterr().out)["channels_run"]


# ---------------------------------------------------------------------------- incremental == fresh
SYLLABLES = ["ba", "ko", "ri", "mu", "te", "fa", "lo", "ne", "su", "pi"]
WORDS = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in ("x", "z")][:120]


def _corpus(folder: Path, n: int, seed: int, start: int = 0) -> None:
    """Notes sharing rare made-up words (so BM25 lengths and similar_text neighbours both
    matter); the first 30 are a little longer than the others."""
    rng = random.Random(seed)
    for i in range(start, start + n):
        extra = (4 if i < 30 else 2) + (i * 7) % 11
        words = rng.sample(WORDS, 6) + ["common"] * (1 + i % 3) + rng.sample(WORDS, extra)
        write(folder / f"d{i:03d}.md", f"# Doc {i}\n" + " ".join(words) + "\n")


def _bm25_scores(db: Path, query: str, capsys) -> dict[str, float]:
    capsys.readouterr()
    assert cli("search", query, "--db", db, "--json", "--no-cache", "--channels", "bm25", "-k", "100") == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    return {h["key"]: h["channels"]["bm25"]["score"] for h in hits}


def _similar(db: Path) -> set[tuple[str, str]]:
    with sqlite3.connect(db) as c:
        return set(c.execute("SELECT s.key, d.key FROM edges e JOIN nodes s ON s.id = e.src "
                             "JOIN nodes d ON d.id = e.dst WHERE e.type = 'similar_text'"))


def _delete_half(folder: Path) -> None:
    # the 30 longer notes: the mean length drops by about 5 %, less than the 10 % at which the
    # index used to rebuild its postings (it kept the old mean below that)
    for p in sorted(folder.glob("d*.md"))[:30]:
        p.unlink()


def test_incremental_bm25_equals_fresh(tmp_path, capsys):
    live, db = tmp_path / "live", tmp_path / "inc.db"
    _corpus(live, 60, seed=1)
    assert cli("index", live, "--db", db) == 0
    _delete_half(live)
    assert cli("index", live, "--db", db) == 0
    fresh = tmp_path / "fresh.db"
    assert cli("index", live, "--db", fresh) == 0
    for q in ("common", WORDS[3], f"{WORDS[10]} {WORDS[50]} common"):
        inc, new = _bm25_scores(db, q, capsys), _bm25_scores(fresh, q, capsys)
        assert inc.keys() == new.keys()
        assert {k: round(v, 4) for k, v in inc.items()} == {k: round(v, 4) for k, v in new.items()}, q


@pytest.mark.parametrize("change", ["delete", "add"])
def test_incremental_neighbours_equal_fresh(tmp_path, capsys, change):
    live, db = tmp_path / "live", tmp_path / "inc.db"
    _corpus(live, 60, seed=2)
    assert cli("index", live, "--db", db) == 0
    if change == "delete":
        _delete_half(live)
    else:
        _corpus(live, 6, seed=3, start=60)          # 10 % new notes: below the 20 % full refresh
    assert cli("index", live, "--db", db) == 0
    fresh = tmp_path / "fresh.db"
    assert cli("index", live, "--db", fresh) == 0
    inc, new = _similar(db), _similar(fresh)
    assert new
    assert inc == new, f"only incremental: {sorted(inc - new)[:5]}; only fresh: {sorted(new - inc)[:5]}"


def test_engine_cache_follows_a_replaced_index_file(tmp_path):
    import kgsearch

    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "x.md", "# X\nalpha apricot\n")
    write(b / "y.md", "# Y\nbravo blueberry\n")
    db, other = tmp_path / "i.db", tmp_path / "new.db"
    assert cli("index", a, "--db", db) == 0
    assert [h.key for h in kgsearch.search("apricot", db=str(db), k=3).hits] == ["md:x"]
    assert cli("index", b, "--db", other) == 0
    os.replace(other, db)            # what a rebuild-and-swap (or copying an index over) does
    assert [h.key for h in kgsearch.search("blueberry", db=str(db), k=3).hits] == ["md:y"]


# ---------------------------------------------------------------------------- KG triples
TRIPLES = "02174461\t_hypernym\t02176268\n05074057\t_derivationally_related_form\t02310895\n" \
          "02176268\t_hypernym\t00015388\n"


@pytest.mark.parametrize("how", ["folder", "named"])
def test_tsv_triples_load_as_typed_edges(tmp_path, capsys, how):
    kg = tmp_path / "wn"
    write(kg / "train.tsv", TRIPLES)
    db = tmp_path / "i.db"
    assert cli("index", kg if how == "folder" else kg / "train.tsv", "--db", db) == 0
    with sqlite3.connect(db) as c:
        edges = c.execute("SELECT s.key, s.name, e.type, d.key, d.name FROM edges e JOIN nodes s ON s.id = e.src "
                          "JOIN nodes d ON d.id = e.dst").fetchall()
    # keys are the loader's business; the ids must be there and the relation must be the type
    typed = [(e[2]) for e in edges if "02174461" in e[0] + e[1] and "02176268" in e[3] + e[4]]
    assert typed and all("hypernym" in t for t in typed)
    assert any("derivationally_related_form" in e[2] for e in edges)
    assert count(db, "SELECT count(*) FROM nodes WHERE kind IN ('document', 'chunk')") == 0


# ---------------------------------------------------------------------------- one-line fields
FORGED = "wombat\n 2. forged  [note]  9.9999  text"
ONE_LINE = {"search": ["search", "wombat"], "show": ["show", "kg:w"], "related": ["related", "kg:w"],
            "why": ["why", "wombat", "kg:w"], "path": ["path", "kg:w", "kg:v"], "impact": ["impact", "kg:v"],
            "communities": ["communities"], "roots": ["roots"]}


@pytest.mark.parametrize("command", list(ONE_LINE))
def test_a_line_break_in_a_name_key_or_path_cannot_forge_a_line(tmp_path, command):
    """A KG name (or a file name) with a newline in it started a line of its own in the text
    output, on a terminal too (the sanitiser keeps newlines: multi-line text needs them), so an
    indexed file could print a fake result. Names, keys, kinds, edge types and paths are shown
    with their line breaks escaped; --json keeps them as indexed."""
    from conftest import run

    kg = tmp_path / "kg\n 2. forged root"
    write(kg / "g.json", json.dumps({"nodes": [{"id": "w", "name": FORGED, "description": "a wombat"},
                                               {"id": "v", "name": "vombatus\u2028 3. forged", "description": "x"}],
                                     "edges": [{"source": "w", "target": "v", "type": "eats\r 4. forged"}]}))
    db = tmp_path / "i.db"
    assert cli("index", kg, "--db", db, "-q") == 0
    rc, out, err = run(*ONE_LINE[command], "--db", db)
    assert rc == 0, err
    assert "forged" in out
    assert not any(re.match(r"\s*[234]\. forged", line) for line in re.split("\r\n|[\n\r\u2028]", out)), out
    if command in ("search", "show"):
        rc, out, err = run(*ONE_LINE[command], "--db", db, "--json")
        got = json.loads(out)
        assert (got["hits"][0] if command == "search" else got["node"])["name"] == FORGED
