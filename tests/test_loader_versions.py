"""An upgrade whose loader reads a file differently re-reads that loader's files on the next run
(unchanged files were skipped, so an updated index kept the old loader's nodes: not what a fresh
build gives); the others stay as they are. Each root remembers the versions its files were read
with; an index written before versions were kept read every loader at 1."""
from __future__ import annotations

import sqlite3

from kgsearch.cli import main
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest import loaders


def _tree(root):
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.go").write_text("package pkg\n\ntype T struct{}\n\nfunc (t *T) M() {}\n")
    (root / "note.md").write_text("# Note\n\nabout T\n")


def _run(db, roots):
    return index_paths(db, [str(r) for r in roots], IndexOptions(steps=()))


def _parent_of_method(db) -> str:
    c = sqlite3.connect(db)
    try:
        return c.execute("SELECT p.key FROM nodes n JOIN nodes p ON p.id = n.parent_id WHERE n.name = 'M'").fetchone()[0]
    finally:
        c.close()


def test_a_changed_loader_rereads_its_files_once(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    _tree(root)
    db = tmp_path / "i.db"
    first = _run(db, [root])
    assert first.files_loaded == 2 and first.reread == {}
    assert _run(db, [root]).files_loaded == 0
    monkeypatch.setitem(loaders.LOADER_VERSIONS, "go", loaders.LOADER_VERSIONS["go"] + 1)
    again = _run(db, [root])
    assert again.reread == {"go": 1} and again.files_loaded == 1 and again.files_unchanged == 1
    assert _run(db, [root]).files_loaded == 0                        # once


def test_an_index_from_before_versions_rereads_the_loaders_changed_since(tmp_path):
    """Go's methods moved under their type (version 2): an index built before kept them under the
    file until the file changed."""
    root = tmp_path / "proj"
    _tree(root)
    (root / "facts.tsv").write_text("alpha\tknows\tbeta\n")          # a loader still at version 1
    db = tmp_path / "i.db"
    _run(db, [root])
    c = sqlite3.connect(db)
    c.execute("DELETE FROM meta WHERE key = 'loader_versions'")      # as an older kgsearch left it
    c.execute("UPDATE nodes SET parent_id = (SELECT id FROM nodes WHERE kind = 'module' AND key LIKE 'go:%') "
              "WHERE name = 'M'")                                     # what the version-1 loader made
    c.commit()
    c.close()
    assert _parent_of_method(db) == "go:pkg/a.go"
    rep = _run(db, [root])
    changed = {k for k, v in loaders.LOADER_VERSIONS.items() if v > 1}
    assert rep.reread == {k: 1 for k in ("go", "markdown") if k in changed} and "triples" not in changed
    assert rep.files_loaded == len(rep.reread)                         # the triples file is not re-read
    assert _parent_of_method(db) == "go:pkg/a.go:T"


def test_each_root_remembers_its_own_versions(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    _tree(a)
    _tree(b)
    db = tmp_path / "i.db"
    _run(db, [a, b])
    monkeypatch.setitem(loaders.LOADER_VERSIONS, "go", 99)
    assert _run(db, [a]).reread == {"go": 1}                          # only the root this run walks
    rep = _run(db, [])                                                # cron: every root
    assert rep.reread == {"go": 1} and rep.files_loaded == 1          # b's file now, a's no more


def test_the_run_summary_says_why_unchanged_files_were_read(tmp_path, monkeypatch, capsys):
    root = tmp_path / "proj"
    _tree(root)
    db = str(tmp_path / "i.db")
    assert main(["index", str(root), "--db", db, "--no-embed"]) == 0
    monkeypatch.setitem(loaders.LOADER_VERSIONS, "go", 99)
    capsys.readouterr()
    assert main(["index", "--db", db, "--no-embed"]) == 0
    err = capsys.readouterr().err
    assert "note: re-read 1 unchanged go file(s): this version's go loader reads them differently" in err


def test_a_file_the_new_loader_cannot_read_is_tried_again(tmp_path, monkeypatch):
    """A file re-read for a new loader version that fails under it (skipped, its old nodes kept)
    was taken for read on the next run: the root's versions were recorded, its size and time
    unchanged, so the old loader's nodes stayed until the file changed. It is tried again on
    every run until it loads, as a changed file that fails is."""
    from types import SimpleNamespace

    from kgsearch.errors import DataError

    root = tmp_path / "proj"
    _tree(root)
    db = tmp_path / "i.db"
    _run(db, [root])
    real = loaders.LOADERS["go"]

    def broken(path, rel, opts):
        raise DataError("cannot parse (a new loader's bug)", str(path))

    monkeypatch.setitem(loaders.LOADER_VERSIONS, "go", loaders.LOADER_VERSIONS["go"] + 1)
    monkeypatch.setitem(loaders.LOADERS, "go", SimpleNamespace(load=broken, NAME="go"))
    rep = _run(db, [root])
    assert rep.reread == {"go": 1} and rep.files_loaded == 0 and any("a new loader's bug" in w for w in rep.warnings)
    assert _parent_of_method(db) == "go:pkg/a.go:T"                   # what was read before is kept
    rep = _run(db, [root])                                             # still failing: said again
    assert rep.files_loaded == 0 and any("a new loader's bug" in w for w in rep.warnings)
    monkeypatch.setitem(loaders.LOADERS, "go", real)                   # the loader fixed (or the file)
    rep = _run(db, [root])
    assert rep.files_loaded == 1 and rep.files_unchanged == 1
    assert _run(db, [root]).files_loaded == 0
