"""Roots as first-class state (issue 13): keys unique per root, the roots registry and its
health, `kgsearch roots [remove]`, missing roots, and the walk's skip counters."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import cli, rows, write

from kgsearch.indexer import IndexOptions, index_paths


def edges(db: Path, etype: str) -> set[tuple[str, str]]:
    return set(rows(db, "SELECT s.key, d.key FROM edges e JOIN nodes s ON s.id = e.src JOIN nodes d ON d.id = e.dst "
                        "WHERE e.type = ?", etype))


def two_vaults(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "work", tmp_path / "home"
    write(a / "Home.md", "# Home\nalpha, see [[Todo]] and [[Shared]]\n")
    write(a / "Todo.md", "# Todo\nwork todo\n")
    write(a / "Shared.md", "# Shared\nonly in the first vault\n")
    write(b / "Home.md", "# Home\nbravo, see [[Todo]] and [[Shared]]\n")
    write(b / "Todo.md", "# Todo\nhome todo\n")
    return a, b


NO_STEPS = IndexOptions(steps=())


# ---------------------------------------------------------------------------- keys per root
def test_second_root_keys_are_qualified_and_links_stay_in_their_root(tmp_path):
    a, b = two_vaults(tmp_path)
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(a), str(b)], IndexOptions(steps=()))
    assert rep.warnings == []
    notes = sorted(r[0] for r in rows(db, "SELECT key FROM nodes WHERE kind = 'note'"))
    assert notes == ["md://home/Home", "md://home/Todo", "md:Home", "md:Shared", "md:Todo"]
    links = edges(db, "links_to")
    # each vault's [[Todo]] is its own Todo; the second vault has no Shared: the first one's
    assert links == {("md:Home", "md:Todo"), ("md:Home", "md:Shared"),
                     ("md://home/Home", "md://home/Todo"), ("md://home/Home", "md:Shared")}
    assert rows(db, "SELECT path, label, position FROM roots ORDER BY position") == [
        (str(a.resolve()), "", 0), (str(b.resolve()), "home", 1)]
    with sqlite3.connect(db) as c:
        assert json.loads(c.execute("SELECT value FROM meta WHERE key='roots'").fetchone()[0]) == \
            [str(a.resolve()), str(b.resolve())]


def test_incremental_add_of_a_root_equals_a_fresh_build(tmp_path):
    a, b = two_vaults(tmp_path)
    inc, fresh = tmp_path / "inc.db", tmp_path / "fresh.db"
    index_paths(inc, [str(a)], NO_STEPS)
    index_paths(inc, [str(b)], NO_STEPS)
    write(b / "Shared.md", "# Shared\nnow the second vault has one too\n")    # its [[Shared]] moves home
    index_paths(inc, [], NO_STEPS)
    index_paths(fresh, [str(a), str(b)], NO_STEPS)
    for db in (inc, fresh):
        assert ("md://home/Home", "md://home/Shared") in edges(db, "links_to")
    assert edges(inc, "links_to") == edges(fresh, "links_to")
    assert sorted(rows(inc, "SELECT key FROM nodes")) == sorted(rows(fresh, "SELECT key FROM nodes"))


def test_python_calls_resolve_inside_their_root_first(tmp_path):
    a, b = tmp_path / "app", tmp_path / "lib"
    write(a / "pkg" / "__init__.py", "")
    write(a / "pkg" / "util.py", "def helper():\n    return 1\n")
    write(a / "main.py", "from pkg.util import helper\nfrom other.api import serve\n\n\ndef run():\n"
                         "    return helper() + serve()\n")
    write(b / "pkg" / "__init__.py", "")
    write(b / "pkg" / "util.py", "def helper():\n    return 2\n")
    write(b / "other" / "__init__.py", "")
    write(b / "other" / "api.py", "from pkg.util import helper\n\n\ndef serve():\n    return helper()\n")
    db = tmp_path / "i.db"
    assert index_paths(db, [str(a), str(b)], NO_STEPS).warnings == []
    calls = edges(db, "calls")
    assert ("py:main.run", "py:pkg.util.helper") in calls                   # its own root's helper
    assert ("py:main.run", "py://lib/other.api.serve") in calls             # only the second root has it
    assert ("py://lib/other.api.serve", "py://lib/pkg.util.helper") in calls
    # the qualified name is kept apart from the key: `show` and search print the Python name
    assert rows(db, "SELECT qualname FROM nodes WHERE key = 'py://lib/pkg.util.helper'") == [("pkg.util.helper",)]


def test_first_root_keeps_its_keys_and_labels_never_change(tmp_path, capsys):
    a, b = two_vaults(tmp_path)
    c = tmp_path / "more" / "home"                  # same folder name as b: label home-2
    write(c / "Home.md", "# Home\ncharlie\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(a)], NO_STEPS)
    before = rows(db, "SELECT id, key FROM nodes ORDER BY id")
    index_paths(db, [str(b), str(c)], NO_STEPS)
    assert rows(db, "SELECT id, key FROM nodes WHERE id <= ? ORDER BY id", before[-1][0]) == before
    assert "md://home-2/Home" in {r[0] for r in rows(db, "SELECT key FROM nodes")}
    # removing the first root renames nobody
    assert cli("roots", "remove", a, "--db", db) == 0
    assert sorted(r[0] for r in rows(db, "SELECT key FROM nodes WHERE kind = 'note'")) == [
        "md://home-2/Home", "md://home/Home", "md://home/Todo"]
    assert cli("index", "--db", db) == 0
    assert sorted(r[0] for r in rows(db, "SELECT key FROM nodes WHERE kind = 'note'")) == [
        "md://home-2/Home", "md://home/Home", "md://home/Todo"]


def test_migration_gives_an_old_multi_root_index_the_keys_of_a_fresh_build(tmp_path):
    """An index made before the roots registry (schema 0009: meta roots sorted, every key plain)
    is upgraded: the first root (sorted) keeps its keys, the others get labels and are
    reloaded under them by the next run, as a fresh build of the same roots would give."""
    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "x.md", "# X\nsee [[y]]\n")
    write(b / "y.md", "# Y\nsee [[x]]\n")
    old = tmp_path / "old.db"
    index_paths(old, [str(a), str(b)], NO_STEPS)
    with sqlite3.connect(old) as con:              # what kgsearch wrote before migration 0011
        con.execute("UPDATE nodes SET key = 'md:' || substr(key, length('md://b/') + 1) WHERE key LIKE 'md://b/%'")
        con.execute("DELETE FROM aliases WHERE name LIKE '//%'")
        con.execute("UPDATE aliases SET rank = rank - 100 WHERE rank >= 100 AND rank < 1000")
        con.execute("UPDATE edges SET dst_name = substr(dst_name, instr(dst_name, char(10)) + 1) "
                    "WHERE dst_name LIKE '//%'")
        con.execute("DROP TABLE roots")
        con.execute("DELETE FROM migrations WHERE name = '0011_roots'")
        con.execute("UPDATE meta SET value = ? WHERE key = 'roots'", (json.dumps(sorted([str(b.resolve()),
                                                                                          str(a.resolve())])),))
    assert "md:y" in {r[0] for r in rows(old, "SELECT key FROM nodes")}
    rep = index_paths(old, [], NO_STEPS)
    assert rep.files_loaded == 1 and rep.files_unchanged == 1
    fresh = tmp_path / "fresh.db"
    index_paths(fresh, [str(a), str(b)], NO_STEPS)
    assert sorted(rows(old, "SELECT key FROM nodes")) == sorted(rows(fresh, "SELECT key FROM nodes"))
    assert edges(old, "links_to") == edges(fresh, "links_to") == {("md:x", "md://b/y"), ("md://b/y", "md:x")}


# ---------------------------------------------------------------------------- roots command
def test_roots_lists_health_and_remove_is_one_transaction(tmp_path, capsys):
    a, b = two_vaults(tmp_path)
    db = tmp_path / "i.db"
    assert cli("index", a, b, "--db", db, "--no-embed") == 0
    capsys.readouterr()
    assert cli("roots", "--db", db, "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["path"], r["label"], r["status"], r["files"]) for r in listed] == [
        (str(a.resolve()), "", "ok", 3), (str(b.resolve()), "home", "ok", 2)]
    assert all(r["last_indexed"] for r in listed)
    b.rename(tmp_path / "elsewhere")
    assert cli("roots", "--db", db) == 3                 # a root is unhealthy: say so to a cron check
    out, err = capsys.readouterr()
    assert f"{b.resolve()}  home   missing  2" in out and "kgsearch roots remove" in err
    gen = rows(db, "SELECT value FROM meta WHERE key = 'generation'")[0][0]
    assert cli("roots", "remove", "home", "--db", db) == 0           # by label (the path works too)
    assert [r[0] for r in rows(db, "SELECT path FROM roots")] == [str(a.resolve())]
    assert rows(db, "SELECT count(*) FROM nodes WHERE key LIKE 'md://home/%'") == [(0,)]
    assert rows(db, "SELECT count(*) FROM files WHERE root = ?", str(b.resolve())) == [(0,)]
    assert int(rows(db, "SELECT value FROM meta WHERE key = 'generation'")[0][0]) == int(gen) + 1
    # the postings lost the removed notes: nothing finds "bravo" any more
    capsys.readouterr()
    assert cli("search", "bravo", "--db", db, "--json", "--no-cache", "--channels", "bm25") == 0
    assert json.loads(capsys.readouterr().out)["hits"] == []
    assert cli("roots", "remove", b, "--db", db) == 5                # not a root any more
    assert "kgsearch roots" in capsys.readouterr().err


def test_named_root_that_is_missing_is_an_error_but_a_registered_one_is_kept(tmp_path, capsys):
    a, b = two_vaults(tmp_path)
    db = tmp_path / "i.db"
    assert cli("index", a, b, "--db", db, "--no-embed") == 0
    b.rename(tmp_path / "gone")
    capsys.readouterr()
    assert cli("index", a, b, "--db", db, "--no-embed") == 3          # named, registered, missing: kept
    err = capsys.readouterr().err
    assert f"error: root {b.resolve()} is missing" in err
    assert rows(db, "SELECT count(*) FROM files WHERE root = ?", str(b.resolve())) == [(2,)]
    assert cli("index", tmp_path / "typo", "--db", db) == 3           # never registered: nothing changes
    assert "no such file or folder" in capsys.readouterr().err
    assert len(rows(db, "SELECT path FROM roots")) == 2


# ---------------------------------------------------------------------------- the walk's counters
def test_bad_links_are_one_warning_each_and_counted(tmp_path, capsys):
    root = tmp_path / "vault"
    write(root / "a.md", "# A\nalpha\n")
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    (root / "self.md").symlink_to(root / "self.md")                  # a link to itself: a loop
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to(root, target_is_directory=True)
    (root / "again").symlink_to(root / "sub", target_is_directory=True)   # a folder walked anyway: silent
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(root)], NO_STEPS)
    assert rep.skipped["bad_links"] == 3
    names = sorted(Path(w.split(":")[0]).name for w in rep.warnings)
    assert names == ["dangling.md", "self.md", "up"], rep.warnings
    assert rows(db, "SELECT key FROM nodes WHERE kind = 'note'") == [("md:a",)]
    assert cli("index", root, "--db", db) == 0
    assert "skipped: 3 broken or looping link(s)" in capsys.readouterr().err


def test_link_to_a_hidden_folder_inside_the_root_is_followed_once(tmp_path):
    root = tmp_path / "vault"
    write(root / ".attic" / "old.md", "# Old\nkept in a hidden folder\n")
    (root / "attic").symlink_to(root / ".attic", target_is_directory=True)
    (root / "old-too").symlink_to(root / ".attic", target_is_directory=True)
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(root)], NO_STEPS)
    assert rep.warnings == []
    # indexed once, by its real path
    assert rows(db, "SELECT key FROM nodes WHERE kind = 'note'") == [("md:.attic/old",)]
    assert [Path(r[0]).name for r in rows(db, "SELECT path FROM files")] == ["old.md"]


def test_a_nested_root_does_not_move_files_of_the_root_around_it(tmp_path):
    outer = tmp_path / "notes"
    write(outer / "a.md", "# A\nalpha\n")
    write(outer / "sub" / "b.md", "# B\nbravo [[a]]\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(outer)], NO_STEPS)
    before = rows(db, "SELECT id, key FROM nodes ORDER BY id")
    rep = index_paths(db, [str(outer / "sub")], NO_STEPS)      # a later root inside the first
    assert rep.files_loaded == 0
    assert rows(db, "SELECT id, key FROM nodes ORDER BY id") == before
    assert rows(db, "SELECT DISTINCT root FROM files") == [(str(outer.resolve()),)]
    assert index_paths(db, [], NO_STEPS).files_loaded == 0


def test_a_root_registered_inside_a_later_one_keeps_its_files_whatever_the_command_line(tmp_path):
    outer = tmp_path / "notes"
    write(outer / "a.md", "# A\nalpha\n")
    write(outer / "work" / "job.md", "# Job\nzeta [[a]]\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(outer / "work")], NO_STEPS)            # the inner root first
    keys = rows(db, "SELECT key FROM nodes WHERE kind = 'note' ORDER BY key")
    assert keys == [("md:job",)]
    index_paths(db, [str(outer)], NO_STEPS)                     # then the folder around it
    owned = {(Path(p).name, Path(r).name) for p, r in rows(db, "SELECT path, root FROM files")}
    assert owned == {("job.md", "work"), ("a.md", "notes")}
    assert rows(db, "SELECT count(*) FROM nodes WHERE key LIKE '%job'") == [(1,)]
    # nothing moves back and forth between the runs of either root, or of all of them
    for run in ([str(outer / "work")], [str(outer)], []):
        assert index_paths(db, run, NO_STEPS).files_loaded == 0
    # an edit and a delete under the inner root are seen from the outer one
    write(outer / "work" / "job.md", "# Job\nzeta eta\n")
    assert index_paths(db, [str(outer)], NO_STEPS).files_loaded == 1
    assert rows(db, "SELECT key FROM nodes WHERE key LIKE '%job'") == [("md:job",)]
    (outer / "work" / "job.md").unlink()
    assert index_paths(db, [str(outer)], NO_STEPS).files_deleted == 1
    assert rows(db, "SELECT count(*) FROM files") == [(1,)]


def test_removing_a_root_leaves_a_root_inside_it_its_files(tmp_path):
    """`kgsearch index ~/notes ~/notes/work`, then `roots remove ~/notes`: work's files went with
    notes (notes owned them) and were missing from the index until the next run."""
    from kgsearch.indexer.run import remove_roots

    outer = tmp_path / "notes"
    write(outer / "a.md", "# A\nalpha\n")
    write(outer / "work" / "job.md", "# Job\nzeta\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(outer), str(outer / "work")], NO_STEPS)
    rep = remove_roots(db, [str(outer)], NO_STEPS)
    assert rep.roots_removed == [str(outer.resolve())]
    assert rows(db, "SELECT path, root FROM files") == [(str((outer / "work" / "job.md").resolve()),
                                                         str((outer / "work").resolve()))]
    assert rows(db, "SELECT key FROM nodes WHERE kind = 'note'") == [("md://work/job",)]
    assert index_paths(db, [], NO_STEPS).files_loaded == 0          # what a run finds: nothing to do


def test_removing_a_file_root_keeps_a_file_another_root_owns(tmp_path):
    """`kgsearch index ~/notes`, then `kgsearch index ~/notes/plan.md` (a file root inside it,
    owned by ~/notes), then `roots remove plan.md`: the note was deleted from the index although
    ~/notes still holds it ("removed root ...: 1 file(s), 6 node(s)"), until the next run."""
    from kgsearch.indexer.run import remove_roots

    outer = tmp_path / "notes"
    write(outer / "a.md", "# A\nalpha\n")
    write(outer / "plan.md", "# Plan\nzeta\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(outer)], NO_STEPS)
    index_paths(db, [str(outer / "plan.md")], NO_STEPS)
    before = rows(db, "SELECT key FROM nodes ORDER BY key")
    rep = remove_roots(db, ["plan.md"], NO_STEPS)
    assert rep.roots_removed == [str((outer / "plan.md").resolve())]
    assert rep.nodes_removed == 0 and rows(db, "SELECT key FROM nodes ORDER BY key") == before
    assert index_paths(db, [], NO_STEPS).files_loaded == 0          # what a run finds: nothing to do


def test_removing_a_file_root_hands_its_file_to_its_folders_root(tmp_path):
    """`kgsearch index ~/notes/plan.md`, then `kgsearch index ~/notes`: the file root owns
    plan.md; removing it must load plan.md under ~/notes in the same run, not lose it until the next."""
    from kgsearch.indexer.run import remove_roots

    outer = tmp_path / "notes"
    write(outer / "a.md", "# A\nalpha\n")
    write(outer / "plan.md", "# Plan\nzeta\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(outer / "plan.md")], NO_STEPS)
    index_paths(db, [str(outer)], NO_STEPS)
    remove_roots(db, [str(outer / "plan.md")], NO_STEPS)
    assert sorted(Path(p).name for (p,) in rows(db, "SELECT path FROM files")) == ["a.md", "plan.md"]
    assert index_paths(db, [], NO_STEPS).files_loaded == 0


def test_a_file_root_inside_a_folder_root_is_counted_once(tmp_path, capsys):
    """`roots` counted a file root's file under both roots (4 files for an index of 3), in either
    order of registration. Now each file counts once, under the root that owns it, as `roots
    remove` takes it: the folder root registered first keeps it (the file root shows 0, "held
    by" it), a file root registered first keeps its file (the folder root counts the rest)."""
    v = tmp_path / "v"
    for rel in ("sub/a.md", "b.md", "c.md"):
        write(v / rel, f"# {rel}\n{rel} text\n")

    def roots(db):
        capsys.readouterr()
        assert cli("roots", "--db", db, "--json") == 0
        return {r["path"]: (r["files"], r["held_by"]) for r in json.loads(capsys.readouterr().out)}

    first = tmp_path / "1.db"
    assert cli("index", v, "--db", first, "-q") == 0 and cli("index", v / "sub" / "a.md", "--db", first, "-q") == 0
    assert roots(first) == {str(v): (3, None), str(v / "sub" / "a.md"): (0, str(v))}
    assert cli("roots", "--db", first) == 0
    assert f"0 (held by {v})" in capsys.readouterr().out
    later = tmp_path / "2.db"
    assert cli("index", v / "c.md", "--db", later, "-q") == 0 and cli("index", v, "--db", later, "-q") == 0
    assert roots(later) == {str(v / "c.md"): (1, None), str(v): (2, None)}
    assert cli("roots", "remove", v / "c.md", "--db", later) == 0
    assert capsys.readouterr().err.startswith(f"removed root {v / 'c.md'}: 1 file(s)")
