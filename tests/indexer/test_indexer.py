"""Indexer: incremental add/modify/delete, edge resolution, atomicity (SIGKILL), readers during a
run, the writer lock, and the one-line errors for bad input."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgsearch.cli import main
from kgsearch.errors import BadIndex, DataError, IndexBusy
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest.kg import EXPORT_VERSION
from kgsearch.store.db import Index
from kgsearch.store.lock import IndexLock

ROOT = Path(__file__).resolve().parents[2]


def write_kg(folder: Path, nodes, edges, name="graph.json"):
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(json.dumps({"nodes": nodes, "edges": edges}, indent=1))
    return p


def snapshot(db, wait: bool = True) -> dict:
    """Everything a query can see, in a comparable form. ``wait=False``: a lock held by a writer
    raises "database is locked" at once instead of waiting (SQLite's busy timeout 0)."""
    with Index.open(db, readonly=True) as ix:
        c = ix.conn
        if not wait:
            c.execute("PRAGMA busy_timeout=0")
        return {
            "nodes": c.execute("SELECT id, key, kind, name, text, flags FROM nodes ORDER BY id").fetchall(),
            "edges": c.execute("SELECT src, dst, type, weight FROM edges ORDER BY src, dst, type").fetchall(),
            "files": c.execute("SELECT path, hash FROM files ORDER BY path").fetchall(),
            "generation": ix.generation,
        }


NODES = [{"node_id": "sqlite", "name": "SQLite", "type": "tool", "description": "embedded database"},
         {"node_id": "fts5", "name": "FTS5", "type": "tool", "description": "full text search"},
         {"node_id": "bm25", "name": "BM25", "type": "technique", "description": "ranking function"}]
EDGES = [{"source": "fts5", "target": "sqlite", "edge_type": "part_of"},
         {"source": "fts5", "target": "bm25", "edge_type": "implements", "weight": 0.5}]


def test_kg_index_and_resolve(tmp_path):
    kg = write_kg(tmp_path / "kg", NODES, EDGES)
    db = tmp_path / "i.db"
    rep = index_paths(db, [str(tmp_path / "kg")], IndexOptions(steps=()))
    assert (rep.files_loaded, rep.nodes_added, rep.generation) == (1, 3, 1)
    snap = snapshot(db)
    keys = {r[0]: r[1] for r in snap["nodes"]}
    edges = {(keys[s], keys[d], t, w) for s, d, t, w in snap["edges"]}
    assert edges == {("kg:fts5", "kg:sqlite", "part_of", 1.0), ("kg:fts5", "kg:bm25", "implements", 0.5)}
    assert snap["files"] == [(str(kg.resolve()), snap["files"][0][1])]


def test_incremental_add_modify_delete_keeps_ids(tmp_path):
    folder = tmp_path / "kg"
    write_kg(folder, NODES, EDGES)
    write_kg(folder, [{"node_id": "cron", "name": "cron", "type": "tool"}], [], name="extra.json")
    db = tmp_path / "i.db"
    index_paths(db, [str(folder)], IndexOptions(steps=()))
    before = {r[1]: r[0] for r in snapshot(db)["nodes"]}

    # no change: nothing loaded, generation unchanged
    rep = index_paths(db, [str(folder)], IndexOptions(steps=()))
    assert (rep.files_loaded, rep.files_unchanged, rep.generation) == (0, 2, 1)

    # touch without content change: hash equal, not reloaded
    p = folder / "extra.json"
    os.utime(p, (time.time() + 5, time.time() + 5))
    rep = index_paths(db, [str(folder)], IndexOptions(steps=()))
    assert (rep.files_loaded, rep.generation) == (0, 1)

    # modify one node's text, remove one, add one
    nodes = [dict(NODES[0], description="embedded SQL database engine"), NODES[1],
             {"node_id": "wal", "name": "WAL", "type": "technique"}]
    write_kg(folder, nodes, [EDGES[0]])
    rep = index_paths(db, [str(folder)], IndexOptions(steps=()))
    assert (rep.files_loaded, rep.nodes_added, rep.nodes_modified, rep.nodes_removed) == (1, 1, 1, 1)
    after = {r[1]: r[0] for r in snapshot(db)["nodes"]}
    assert after["kg:sqlite"] == before["kg:sqlite"] and after["kg:fts5"] == before["kg:fts5"]
    assert "kg:bm25" not in after and "kg:wal" in after

    # delete a file
    p.unlink()
    rep = index_paths(db, [str(folder)], IndexOptions(steps=()))
    assert (rep.files_deleted, rep.nodes_removed) == (1, 1)
    assert "kg:cron" not in {r[1] for r in snapshot(db)["nodes"]}


def test_edges_across_files_and_dangling(tmp_path):
    folder = tmp_path / "kg"
    folder.mkdir()
    (folder / "nodes.jsonl").write_text("\n".join(json.dumps(n) for n in NODES) + "\n")
    (folder / "edges.jsonl").write_text(json.dumps(EDGES[0]) + "\n" +
                                        json.dumps({"source": "fts5", "target": "nowhere", "type": "x"}) + "\n")
    db = tmp_path / "i.db"
    with pytest.raises(DataError) as err:
        index_paths(db, [str(folder)], IndexOptions(steps=()))
    assert str(err.value) == (f"{(folder / 'edges.jsonl').resolve()}:2: edge target 'nowhere' is not a known "
                              f"node; add it to a nodes file or rerun with --allow-dangling")
    # nothing was committed, and a failed first run leaves no empty index behind (issue 24)
    assert not db.exists()
    rep = index_paths(db, [str(folder)], IndexOptions(steps=(), allow_dangling=True))
    assert rep.nodes_added == 4
    with Index.open(db, readonly=True) as ix:
        row = ix.conn.execute("SELECT kind, flags FROM nodes WHERE key='kg:nowhere'").fetchone()
    assert row == ("placeholder", 5)
    # the real node appears later: the placeholder goes away and edges point at the real node
    (folder / "more.jsonl").write_text(json.dumps({"node_id": "nowhere", "name": "Nowhere"}) + "\n")
    index_paths(db, [str(folder)], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        rows = ix.conn.execute("SELECT kind, flags, file_id IS NOT NULL FROM nodes WHERE key='kg:nowhere'").fetchall()
        assert rows == [("entity", 0, 1)]
        assert ix.conn.execute("SELECT count(*) FROM edges WHERE dst IS NULL").fetchone()[0] == 0


def test_malformed_json_keeps_previous_index(tmp_path, capsys):
    folder = tmp_path / "kg"
    write_kg(folder, NODES, EDGES)
    db = tmp_path / "i.db"
    assert main(["index", str(folder), "--db", str(db), "--no-embed", "-q"]) == 0
    before = snapshot(db)
    broken = folder / "broken.json"
    broken.write_text('{"nodes": [\n  {"node_id": "a",\n  }\n]}\n')
    capsys.readouterr()
    # met while walking a folder: skipped with one warning naming file:line, counted, exit 0
    # (one bad file never stops the others; issue 13)
    assert main(["index", str(folder), "--db", str(db), "--no-embed"]) == 0
    err = capsys.readouterr().err.splitlines()
    about = [ln for ln in err if "broken.json" in ln]
    assert len(about) == 1 and about[0].startswith(f"warning: {broken.resolve()}:3: invalid JSON")
    assert "skipped: 1 file(s) not what their extension says" in err
    assert snapshot(db) == before
    # named on the command line: the run fails and changes nothing
    assert main(["index", str(broken), "--db", str(db), "--no-embed"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {broken.resolve()}:3: invalid JSON")
    assert snapshot(db) == before
    # --keep-going commits the rest and still says the run was partial
    ok = folder / "ok.json"
    ok.write_text(json.dumps({"nodes": [{"node_id": "zz", "name": "ZZ"}]}))
    assert main(["index", str(broken), str(ok), "--db", str(db), "--no-embed", "--keep-going", "-q"]) == 3
    assert "kg:zz" in {r[1] for r in snapshot(db)["nodes"]}


def test_lock_refuses_second_indexer(tmp_path, capsys):
    folder = tmp_path / "kg"
    write_kg(folder, NODES, EDGES)
    db = tmp_path / "i.db"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from kgsearch.store.lock import IndexLock
        with IndexLock({str(db)!r}):
            print("locked", flush=True)
            time.sleep(30)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(IndexBusy):
            index_paths(db, [str(folder)])
        capsys.readouterr()
        assert main(["index", str(folder), "--db", str(db)]) == 75
        err = capsys.readouterr().err
        assert "another kgsearch index run holds" in err and f"pid {holder.pid}" in err
    finally:
        holder.kill()
        holder.wait()
    # the lock dies with its holder
    with IndexLock(db):
        pass


PAUSING_INDEXER = """
import sys, time, pathlib
from kgsearch.indexer import IndexOptions, index_paths
marker = pathlib.Path(sys.argv[3])
def progress(ev):
    if ev.get("phase") == "load" and ev.get("done") == int(sys.argv[4]):
        marker.write_text("paused")
        time.sleep(60)
index_paths(sys.argv[1], [sys.argv[2]], IndexOptions(steps=(), progress=progress))
"""


def _start_paused_indexer(tmp_path, db, folder, after_files):
    marker = tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-c", PAUSING_INDEXER, str(db), str(folder), str(marker),
                             str(after_files)], stderr=subprocess.PIPE)
    for _ in range(600):
        if marker.exists():
            return proc
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("indexer did not reach the pause point")


def _many_files(folder: Path, n: int, tag: str):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        write_kg(folder, [{"node_id": f"n{i}", "name": f"node {i} {tag}", "type": "thing",
                           "description": f"about {tag} number {i}"}],
                 [{"source": f"n{i}", "target": f"n{(i + 1) % n}", "type": "relates_to"}], name=f"f{i:03d}.json")


def test_sigkill_mid_write_leaves_previous_index(tmp_path):
    folder = tmp_path / "kg"
    _many_files(folder, 40, "old")
    db = tmp_path / "i.db"
    index_paths(db, [str(folder)], IndexOptions(steps=()))
    before = snapshot(db)
    _many_files(folder, 40, "new")          # every file changes
    (folder / "f000.json").unlink()
    proc = _start_paused_indexer(tmp_path, db, folder, 30)
    # a reader is not blocked by the writer (it would raise at once) and sees the last committed index
    assert snapshot(db, wait=False) == before
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert snapshot(db) == before
    # and the next run completes normally (f039's edge to n0 dangles now that f000 is gone)
    rep = index_paths(db, [str(folder)], IndexOptions(steps=(), allow_dangling=True))
    assert rep.files_loaded == 39 and rep.files_deleted == 1
    assert all("new" in r[3] for r in snapshot(db)["nodes"] if not r[5] & 4)     # 4: placeholder (n0)


def test_newer_schema_and_foreign_files(tmp_path, capsys):
    db = tmp_path / "i.db"
    Index.open(db).close()
    con = sqlite3.connect(db)
    con.execute("INSERT INTO migrations(name, applied_at) VALUES ('9999_future', 0)")
    con.commit()
    con.close()
    with pytest.raises(BadIndex, match="was made by a newer kgsearch"):
        Index.open(db)
    assert main(["stats", "--db", str(db)]) == 4
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    with pytest.raises(BadIndex, match="not a kgsearch index"):
        Index.open(other)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    capsys.readouterr()
    assert main(["stats", "--db", str(junk)]) == 4
    assert "not a kgsearch index" in capsys.readouterr().err
    assert main(["stats", "--db", str(tmp_path / "missing.db")]) == 4


def test_walk_rules_symlinks_sizes(tmp_path, capsys):
    root = tmp_path / "vault"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "node_modules").mkdir()
    (root / "venvish").mkdir()
    (root / "venvish" / "pyvenv.cfg").write_text("home = /usr\n")
    for p in ("a.txt", "sub/b.txt", ".git/c.txt", "node_modules/d.txt", "venvish/e.txt", "sub/skip.log",
              "keep.log", "notes.bin"):
        (root / p).write_text("hello world text\n")
    (root / "notes.bin").write_bytes(b"\0\1\2binary")
    (root / "big.txt").write_text("x" * 3_000_000)
    (root / ".kgsearchignore").write_text("*.log\n!keep.log\n")
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the root")
    (root / "out.txt").symlink_to(outside)
    db = tmp_path / "i.db"
    assert main(["index", str(root), "--db", str(db), "--no-embed", "--max-file-size", "1"]) == 0
    err = capsys.readouterr().err
    with Index.open(db, readonly=True) as ix:
        paths = sorted(Path(r[0]).relative_to(root.resolve()).as_posix()
                       for r in ix.conn.execute("SELECT path FROM files"))
    assert paths == ["a.txt", "keep.log", "sub/b.txt"]
    assert "big.txt (3.0 MB): larger than --max-file-size (1 MB); skipped (--max-file-size 4 includes it)" in err
    assert "folder reached twice" in err


def test_a_bang_pattern_reincludes_a_folder_skipped_by_default(tmp_path):
    """An npm package whose code is its build/ folder (yargs: build/lib/*.js): `!build/` in
    .kgsearchignore asks for it, as the docs say `!` re-includes; .git is never entered."""
    root = tmp_path / "package"
    for p in ("index.cjs", "build/lib/yargs-factory.js", "dist/x.js", "sub/build/y.js", ".git/hooks/h.js",
              "node_modules/dep/z.js"):
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text("function f() { return 1 }\n")
    (root / ".kgsearchignore").write_text("!build/\n!.git/\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        paths = sorted(Path(r[0]).relative_to(root.resolve()).as_posix()
                       for r in ix.conn.execute("SELECT path FROM files"))
    assert paths == ["build/lib/yargs-factory.js", "index.cjs", "sub/build/y.js"]


def test_empty_folder_and_missing_path(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    db = tmp_path / "i.db"
    assert main(["index", str(empty), "--db", str(db), "--no-embed"]) == 0
    assert "no files kgsearch can index here" in capsys.readouterr().err
    assert main(["index", str(tmp_path / "nope"), "--db", str(db)]) == 3
    err = capsys.readouterr().err.strip()
    assert err == f"error: {tmp_path / 'nope'}: no such file or folder; check the path"
    assert main(["index", "--db", str(tmp_path / "fresh.db")]) == 2
    assert "nothing to index: give a PATH" in capsys.readouterr().err


def test_reindex_without_paths_uses_recorded_roots(tmp_path):
    folder = tmp_path / "kg"
    write_kg(folder, NODES, EDGES)
    db = tmp_path / "i.db"
    index_paths(db, [str(folder)], IndexOptions(steps=()))
    write_kg(folder, NODES[:2], EDGES[:1])
    rep = index_paths(db, [], IndexOptions(steps=()))
    assert rep.roots == [str(folder.resolve())] and rep.nodes_removed == 1


def test_unreadable_file_is_reported_not_fatal(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "kg"
    write_kg(folder, NODES, EDGES)
    write_kg(folder, [{"node_id": "x", "name": "X"}], [], name="locked.json")
    real = Path.read_bytes

    def fake(self):
        if self.name == "locked.json":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", fake)
    db = tmp_path / "i.db"
    # met while walking: one warning, counted, the run succeeds (issue 13: no --keep-going needed)
    assert main(["index", str(folder), "--db", str(db), "--no-embed"]) == 0
    err = capsys.readouterr().err
    assert f"{(folder / 'locked.json').resolve()}: cannot read (Permission denied); check its permissions" in err
    assert "skipped: 1 unreadable folder(s)/file(s)" in err
    assert {r[1] for r in snapshot(db)["nodes"]} == {"kg:sqlite", "kg:fts5", "kg:bm25"}
    # named on the command line, it is a failed file: exit 3 (the rest committed with --keep-going)
    assert main(["index", str(folder / "locked.json"), "--db", str(db), "--no-embed", "--keep-going"]) == 3
    assert "cannot read (Permission denied)" in capsys.readouterr().err


def _resolved_calls(db) -> dict[tuple[str, str], str | None]:
    with Index.open(db, readonly=True) as ix:
        rows = ix.conn.execute(
            "SELECT s.key, e.type, e.dst_name, d.key FROM edges e JOIN nodes s ON s.id = e.src "
            "LEFT JOIN nodes d ON d.id = e.dst WHERE e.type IN ('calls', 'inherits')").fetchall()
    return {(src, name.split("\n")[0] if name else dst): dst for src, _, name, dst in rows}


def test_python_reexports_are_followed(tmp_path):
    root = tmp_path / "src"
    for rel, text in {
        "lib/__init__.py": "from .core import Engine, make\nfrom .core import make as build\n",
        "lib/core.py": "class Engine:\n    def start(self):\n        return 1\n\n\ndef make():\n    return Engine()\n",
        "top/__init__.py": "from lib import Engine\n",                       # a second hop
        "app.py": textwrap.dedent("""\
            import lib
            import top
            from lib import make


            class Car(lib.Engine):
                pass


            def main():
                lib.Engine().start()
                lib.Engine.start(None)
                make()
                top.Engine()
                lib.build()
                lib.missing()
            """),
    }.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=()))
    got = _resolved_calls(db)
    assert got[("py:app.Car", "lib.Engine")] == "py:lib.core.Engine"                  # inherits
    assert got[("py:app.main", "lib.Engine")] == "py:lib.core.Engine"
    assert got[("py:app.main", "lib.Engine.start")] == "py:lib.core.Engine.start"
    assert got[("py:app.main", "lib.make")] == "py:lib.core.make"
    assert got[("py:app.main", "top.Engine")] == "py:lib.core.Engine"                 # two hops
    assert got[("py:app.main", "lib.build")] is None                                  # `as` not followed
    assert got[("py:app.main", "lib.missing")] is None
    # an unchanged reindex and a rewrite of the caller give the same edges
    index_paths(db, [str(root)], IndexOptions(steps=()))
    assert _resolved_calls(db) == got
    (root / "app.py").write_text((root / "app.py").read_text() + "\n\ndef extra():\n    lib.make()\n")
    index_paths(db, [str(root)], IndexOptions(steps=()))
    again = _resolved_calls(db)
    assert again[("py:app.extra", "lib.make")] == "py:lib.core.make"
    assert {k: v for k, v in again.items() if k[0] != "py:app.extra"} == got


def test_a_placeholder_is_named_as_the_link_spells_it(tmp_path):
    """`[[Nonexistent Note]]` made a placeholder named 'nonexistent note' (the lower-cased
    resolution key): `show`, `related`, `path` and an exported vault printed the name in lower
    case. The key stays lower case (links resolve case-insensitively); the name is as written."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nSee [[Nonexistent Note]] and [[Later Plan.md#Step|the plan]], "
                                "[other](Some%20File.md).\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(vault)], IndexOptions(steps=()))
    with Index.open(db, readonly=True) as ix:
        rows = dict(ix.conn.execute("SELECT key, name FROM nodes WHERE kind='placeholder'").fetchall())
    assert rows == {"md:nonexistent note": "Nonexistent Note", "md:later plan": "Later Plan",
                    "md:some file": "Some File"}


# ---------------------------------------------------------------- ids in index-time messages, as written
# an id with one backslash: repr doubled it ('a\\\\b'); kgsearch.lines.quoted shows it as written
DUPLICATE_KG = '{"id": "a\\\\b", "name": "one"}\n{"id": "a\\\\b", "name": "two"}\n'


@pytest.mark.parametrize("files, says", [
    ({"d.jsonl": DUPLICATE_KG}, "d.jsonl:2: duplicate node id 'a\\b' (first at line 1); kept the first"),
    ({"d.jsonl": f'{{"kgsearch_export": {EXPORT_VERSION}}}\n' + DUPLICATE_KG.replace('"a', '"kg:a')},
     "d.jsonl:3: duplicate node id 'kg:a\\b' (first at line 2); kept the first"),        # an export read back
    ({"entity2text.txt": "a\\b\tone\na\\b\ttwo\n"}, "entity2text.txt:2: duplicate entity id 'a\\b'; kept the first"),
    ({"x.jsonl": DUPLICATE_KG, "y.jsonl": DUPLICATE_KG},
     "y.jsonl: node 'kg:a\\b' is already defined in "),
    ({"g.json": '{"nodes": {"a\\\\b": 1}}'}, "node 'a\\b' must be an object"),
    ({"g.json": '{"nodes": [{"id": "n"}], "edges": [{"source": "a\\\\b", "target": "n"}]}'},
     "edge source 'a\\b' is not a known node"),
    ({"g.json": '{"nodes": [{"id": "n"}], "edges": [{"source": "n", "target": "a\\\\b"}]}'},
     "edge target 'a\\b' is not a known node"),
])
def test_index_messages_quote_an_id_as_written(tmp_path, files, says):
    """The index-time warnings and errors about a duplicate or unknown node id quoted it with
    repr: an id written `a\\b` was shown `'a\\\\b'`, unlike `kgsearch show`'s `no node` (quoted)."""
    for name, text in files.items():
        (tmp_path / "kg").mkdir(exist_ok=True)
        (tmp_path / "kg" / name).write_text(text, encoding="utf-8")
    rep, err = None, ""
    try:
        rep = index_paths(tmp_path / "i.db", [tmp_path / "kg"], IndexOptions(workers=1))
    except DataError as exc:
        err = str(exc)
    shown = [err] + (rep.warnings if rep else [])
    assert any(says in w for w in shown), shown


def test_a_node_twice_in_one_file_is_quoted_as_written(tmp_path, monkeypatch):
    """The writer's `node ... defined twice` (a loader that gives one key twice) quoted with repr."""
    from kgsearch.ingest import loaders

    real = loaders.LOADERS["kg"]

    def twice(path, rel, opts):
        res = real.load(path, rel, opts)
        res.nodes = res.nodes + res.nodes
        return res

    monkeypatch.setitem(loaders.LOADERS, "kg", type("Twice", (), {"load": staticmethod(twice), "NAME": "kg"}))
    (tmp_path / "kg").mkdir()
    (tmp_path / "kg" / "g.jsonl").write_text('{"id": "a\\\\b", "name": "one"}\n', encoding="utf-8")
    rep = index_paths(tmp_path / "i.db", [tmp_path / "kg"], IndexOptions(workers=1))
    assert any("g.jsonl: node 'kg:a\\b' defined twice; keeping the first" in w for w in rep.warnings), rep.warnings


def test_an_index_run_leaves_the_query_planner_statistics(tmp_path):
    """Without statistics SQLite took `kind IN (...)` (a few kinds over every node) to be as
    selective as `name IN (...)` or `file_id IN (...)`: a traceback's dozen function names, or
    the module of a few files, scanned every code node (stdlib: 158 ms of anchor look-ups for
    40 frames, 17 ms with statistics and the file names' map)."""
    from kgsearch.query.anchors import _KINDS_SQL

    root = tmp_path / "src"
    root.mkdir()
    for i in range(8):
        (root / f"m{i}.py").write_text("".join(f"def f{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(12)),
                                       encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))

    def plan(sql, args):
        return " ".join(r[-1] for r in sqlite3.connect(db).execute("EXPLAIN QUERY PLAN " + sql, args))

    names = [f"f{i}_{j}" for i in range(3) for j in range(5)]
    by_name = plan(f"SELECT id, name, key, file_id FROM nodes WHERE name IN ({','.join('?' * len(names))}) "
                   f"AND kind IN ({_KINDS_SQL})", names)
    assert "nodes_name" in by_name, by_name
    by_file = plan("SELECT id FROM nodes WHERE kind='module' AND file_id IN (?, ?)", [1, 2])
    assert "nodes_file" in by_file, by_file
    stats = dict(sqlite3.connect(db).execute("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'nodes'"))
    assert {"nodes_name", "nodes_kind", "nodes_file"} <= set(stats)
    # a run that changes nothing leaves them; one that grows the index brings them up to date
    (root / "m8.py").write_text("def late():\n    return 0\n", encoding="utf-8")
    index_paths(db, [str(root)], IndexOptions(steps=("text",)))
    after = dict(sqlite3.connect(db).execute("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'nodes'"))
    assert int(after["nodes_kind"].split()[0]) == int(stats["nodes_kind"].split()[0]) + 2
