"""KG triples as TSV (WN18RR / FB15k-237 layout) and their entity names files."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import rows, write

from kgsearch.cli import main
from kgsearch.errors import DataError
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest import triples
from kgsearch.ingest.loaders import loader_for
from kgsearch.ingest.walk import DEFAULT_MAX_BYTES, TRIPLES_MAX_BYTES, size_cap
from kgsearch.types import LoadOptions

NO_STEPS = IndexOptions(steps=())


def wn(folder: Path) -> Path:
    write(folder / "train.tsv", "01\t_hypernym\t02\n03\t_hypernym\t02\n01\t_also_see\t03\n")
    write(folder / "test.tsv", "02\t_hypernym\t04\n")
    write(folder / "entity2text.txt", "01\tstool, solid excretory product\n02\tbody waste, waste matter\n"
                                      "03\tdung, animal excrement\n")
    write(folder / "entities.txt", "01\n02\n03\n04\n")
    write(folder / "relation2text.txt", "_hypernym\thypernym\n")
    write(folder / "entity2id.txt", "4\n01\t0\n02\t1\n")
    return folder


def test_loader_choice():
    assert loader_for(Path("kg/train.tsv")) == "triples"
    assert loader_for(Path("kg/entity2text.txt")) == "triples"
    assert loader_for(Path("kg/entity_names.tsv")) == "triples"
    assert loader_for(Path("notes/relations with clients.txt")) == "text"
    assert size_cap(Path("train.tsv"), None) == TRIPLES_MAX_BYTES > 21_005_177      # FB15k-237's train.tsv
    assert size_cap(Path("big.json"), None) == DEFAULT_MAX_BYTES
    assert size_cap(Path("train.tsv"), 1_000) == 1_000


def test_folder_of_triples_with_names(tmp_path):
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(wn(tmp_path / "wn"))], NO_STEPS)
    assert rep.warnings == [] and rep.files_loaded == 6
    nodes = rows(db, "SELECT key, kind, name, flags, file_id IS NOT NULL FROM nodes ORDER BY key")
    assert nodes == [("kg:01", "entity", "stool", 0, 1), ("kg:02", "entity", "body waste", 0, 1),
                     ("kg:03", "entity", "dung", 0, 1), ("kg:04", "entity", "04", 1, 0)]   # 04: no name, shared
    edges = rows(db, "SELECT s.key, e.type, d.key FROM edges e JOIN nodes s ON s.id = e.src "
                     "JOIN nodes d ON d.id = e.dst ORDER BY 1, 2, 3")
    assert edges == [("kg:01", "_also_see", "kg:03"), ("kg:01", "_hypernym", "kg:02"),
                     ("kg:02", "_hypernym", "kg:04"), ("kg:03", "_hypernym", "kg:02")]
    # the names file goes away: its entities become shared nodes, no edge is lost
    (tmp_path / "wn" / "entity2text.txt").unlink()
    (tmp_path / "wn" / "train.tsv").touch()
    index_paths(db, [], NO_STEPS)
    assert rows(db, "SELECT count(*) FROM edges WHERE dst IS NOT NULL") == [(4,)]
    assert rows(db, "SELECT key, flags FROM nodes ORDER BY key") == [("kg:01", 1), ("kg:02", 1), ("kg:03", 1),
                                                                     ("kg:04", 1)]


def test_a_named_file_and_its_search(tmp_path, capsys):
    folder = wn(tmp_path / "wn")
    db = tmp_path / "i.db"
    assert main(["index", str(folder / "train.tsv"), str(folder / "entity2text.txt"), "--db", str(db), "-q"]) == 0
    capsys.readouterr()
    assert main(["search", "excrement", "--db", str(db), "-k", "1"]) == 0
    assert "kg:03" in capsys.readouterr().out


def test_not_a_triples_file(tmp_path, capsys):
    bad = write(tmp_path / "kg" / "table.tsv", "source\ttarget\ttype\textra\na\tb\tc\td\n")
    write(tmp_path / "kg" / "ok.tsv", "a\tr\tb\n")
    with pytest.raises(DataError, match=r"table.tsv:1: expected head<TAB>relation<TAB>tail, got 4 field"):
        triples.load(bad, "table.tsv", LoadOptions())
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(tmp_path / "kg")], NO_STEPS)        # walking: one warning, the rest goes on
    assert rep.skipped["malformed"] == 1 and len(rep.warnings) == 1 and "table.tsv:1" in rep.warnings[0]
    assert rows(db, "SELECT type FROM edges") == [("r",)]


def test_space_separated_triples_with_format_triples(tmp_path, capsys):
    """`a _hypernym b` (spaces, no tab) was not read even with --format triples. The rule: with
    --format triples (the user says the file is triples) a line without a tab that splits into
    exactly three fields on blanks is a triple; a line with a tab is split on tabs as always.
    Without --format the tab rule stays (a .tsv or a sniffed .txt is not read on a guess), and
    the error names the file:line and --format triples; a line that is neither says how to fix it."""
    spaced = write(tmp_path / "sp.tsv", "a _hypernym b\nb\t_has_part\tc d\n  c   _also_see   a  \n")
    res = triples.load(spaced, "sp.tsv", LoadOptions(fmt="triples"))
    assert [(e.src, e.dst, e.type) for e in res.edges] == [("kg:a", "b", "_hypernym"), ("kg:b", "c d", "_has_part"),
                                                           ("kg:c", "a", "_also_see")]
    with pytest.raises(DataError, match=r"sp.tsv:1: expected head<TAB>relation<TAB>tail, got 1 field.*; its fields "
                                        r"are separated by spaces: index it with --format triples to read them$"):
        triples.load(spaced, "sp.tsv", LoadOptions())
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert main(["index", str(spaced), "--db", str(db), "-q"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"error: {spaced.resolve()}:1: ") and "--format triples" in err and len(err.splitlines()) == 1
    assert main(["index", str(spaced), "--db", str(db), "-q", "--format", "triples", "--no-embed"]) == 0
    assert rows(db, "SELECT count(*) FROM edges") == [(3,)]
    four = write(tmp_path / "four.txt", "a _hypernym b\nNew York _located_in USA\n")
    with pytest.raises(DataError, match=r"four.txt:2: expected head relation tail, got 4 field\(s\) separated by "
                                        r"spaces; separate the three fields with tabs when a name holds a space"):
        triples.load(four, "four.txt", LoadOptions(fmt="triples"))


def test_unknown_extension_named_says_so(tmp_path, capsys):
    f = write(tmp_path / "notes.xyz", "plain words\n")
    db = tmp_path / "i.db"
    assert main(["index", str(f), "--db", str(db), "--no-embed"]) == 0
    err = capsys.readouterr().err
    assert f"{f.resolve()}: kgsearch has no loader for '.xyz' files; read as plain text" in err


def test_entity_names_may_hold_unicode_line_separators(tmp_path):
    """An entity names file split with ``str.splitlines`` broke a name holding U+2028 or NEL
    into two lines, the second without its tab: "expected id<TAB>name" for the whole folder."""
    db = tmp_path / "i.db"
    folder = tmp_path / "kg"
    write(folder / "train.tsv", "01\t_r\t02\n")
    write(folder / "entity2text.txt", "01\tfirst\u2028name\n02\tsecond \x85 name\r\n")
    rep = index_paths(db, [str(folder)], NO_STEPS)
    assert rep.warnings == []
    assert rows(db, "SELECT key, name FROM nodes ORDER BY key") == [("kg:01", "first name"),   # (blanks folded)
                                                                   ("kg:02", "second name")]


def test_a_triples_file_named_alone_says_its_names_file_is_not_indexed(tmp_path, capsys):
    """`kgsearch index ~/kg/wn18rr/train.tsv` indexed 40,000 entities named by their ids
    ("00260881"), without a word about the entity2text.txt beside it that names them; one
    warning names it and the fix. Named with it, or already indexed, nothing is said."""
    folder = wn(tmp_path / "wn18rr")
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert main(["index", str(folder / "train.tsv"), "--db", str(db), "--no-embed"]) == 0
    err = capsys.readouterr().err
    assert (f"warning: {folder / 'train.tsv'}: its entities are named by {folder / 'entity2text.txt'}, which is "
            f"not indexed: index the folder ({folder}) or name that file too") in err
    assert main(["index", "--db", str(db), "--no-embed"]) == 0          # cron, nothing changed: said once, not again
    assert "its entities are named by" not in capsys.readouterr().err
    assert main(["index", str(folder / "train.tsv"), str(folder / "entity2text.txt"), "--db", str(tmp_path / "j.db"),
                 "--no-embed"]) == 0
    assert "its entities are named by" not in capsys.readouterr().err
    assert main(["index", str(folder), "--db", str(tmp_path / "k.db"), "--no-embed"]) == 0
    assert "its entities are named by" not in capsys.readouterr().err
