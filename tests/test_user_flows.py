"""User-flow defects found by an audit (fix10): each test failed before its fix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MCP_MODERN, cli, write

from kgsearch.cli import main


# ---------------------------------------------------------------- 1. related --types unknown
UNKNOWN_TYPE = "error: --types: no edge type 'nope' in this index; it has: links_to\n"


@pytest.mark.parametrize("command", [["related", "md:a"], ["path", "md:a", "md:b"], ["impact", "md:a"],
                                     ["export", "jsonl", "-"]])
def test_an_unknown_edge_type_is_a_usage_error_everywhere(command, indexed, capsys):
    """Before: `related --types nope` exited 5 (not found) with its own wording, while path,
    impact and export exit 2 with this one line."""
    capsys.readouterr()
    assert cli(*command, "--types", "nope", "--db", indexed[1]) == 2
    captured = capsys.readouterr()
    assert captured.err == UNKNOWN_TYPE and captured.out == ""



@pytest.mark.parametrize("command", [["related", "kg:e0"], ["path", "kg:e0", "kg:e1"], ["impact", "kg:e0"],
                                     ["export", "jsonl", "-"]])
def test_an_unknown_edge_type_names_the_near_ones_not_all_of_them(command, tmp_path, capsys):
    """On FB15k-237 (237 relation types such as `/film/film/genre`) `related X --types genre`
    printed one 14,000-character line listing every type; the message names the types that
    contain or resemble the word, then a few others and how many more `kgsearch stats` lists."""
    rels = [f"/domain{i}/thing{i}/relation_number_{i}" for i in range(200)] + ["/film/film/genre", "/tv/tv_program/genre"]
    lines = [f"e{i}\t{r}\te{i + 1}" for i, r in enumerate(rels)]
    write(tmp_path / "kg" / "train.tsv", "\n".join(lines) + "\n")
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "kg", "--db", db, "-q", "--no-embed") == 0
    capsys.readouterr()
    assert cli(*command, "--types", "genre", "--db", db) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 1000, err
    assert err.startswith("error: --types: no edge type 'genre' in this index; it has: /film/film/genre, "
                          "/tv/tv_program/genre, ")
    assert err.endswith(" more (`kgsearch stats` lists every type)\n")




def test_an_unknown_edge_type_is_a_bad_request_over_http_and_a_tool_error_over_mcp(indexed):
    """Before: /api/related answered 404 "no edge type 'nope' in PATH; the index has: ..."; a bad
    parameter is a 400 naming the parameter (it named the CLI's --types flag until session 22). The
    MCP related tool says what path says (naming the argument, not the CLI flag)."""
    from kgsearch.mcp.server import Server
    from kgsearch.serve import App, Holder

    app = App({"i": Holder(indexed[1])})
    st, _, body = app.handle("GET", "/api/related?node=md:a&types=nope", {})
    assert (st, json.loads(body)) == (400, {"error": "parameter 'types'" + UNKNOWN_TYPE[len("error: --types"):-1],
                                            "status": 400})
    srv = Server(indexed[1])
    for name, args in (("related", {"node": "md:a", "types": ["nope"]}),
                       ("path", {"source": "md:a", "target": "md:b", "types": ["nope"]})):
        r = srv.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"_meta": MCP_MODERN, "name": name, "arguments": args}})
        assert r["result"]["isError"] is True
        assert r["result"]["content"] == [{"type": "text", "text": "error: types: no edge type 'nope' in this index; "
                                                                   "it has: links_to"}]


# ---------------------------------------------------------------- 2-4. eval
KNOWN_SETTINGS = ("avgdl_drift, b, edge_weights, embed, embed_max_chars, fold_accents, graph_adjacency_rows, graph_communities_drift, "
                  "graph_communities_max_pairs, graph_communities_seconds, idf, k1, model, name_weight, neighbors, "
                  "split_code, stemmer")


def _probes(tmp_path, n=3) -> Path:
    lines = [{"query": "alpha", "expected": ["md:a"]}, {"query": "bravo", "expected": ["md:b"]},
             {"query": "charlie", "expected": ["md:nowhere"]}]
    return write(tmp_path / "p.jsonl", "".join(json.dumps(x) + "\n" for x in lines[:n]))


def _beir(tmp_path) -> Path:
    folder = tmp_path / "beir"
    write(folder / "corpus.jsonl", '{"_id": "d1", "title": "t", "text": "alpha"}\n')
    write(folder / "queries.jsonl", '{"_id": "q1", "text": "alpha"}\n')
    write(folder / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


@pytest.mark.parametrize("target", ["probes", "beir"])
def test_eval_set_with_an_unknown_key_names_it_and_the_valid_keys(target, indexed, tmp_path, capsys):
    """Before: with a probe file `--set nope=1` was silently ignored (exit 0)."""
    path = _probes(tmp_path) if target == "probes" else _beir(tmp_path)
    capsys.readouterr()
    assert cli("eval", path, "--db", indexed[1], "--set", "nope=1", "--index-dir", tmp_path / "ev") == 2
    assert capsys.readouterr().err == f"error: --set: unknown setting 'nope'; known settings: {KNOWN_SETTINGS}\n"
    assert not (tmp_path / "ev").exists()


def test_eval_set_with_a_probe_file_is_not_silently_ignored(indexed, tmp_path, capsys):
    """A probe file runs against --db's index as it is: a (valid) --set changed nothing, silently."""
    capsys.readouterr()
    assert cli("eval", _probes(tmp_path), "--db", indexed[1], "--set", "stemmer=light") == 2
    assert capsys.readouterr().err.startswith("error: --set stemmer=...: a probe file runs against the index of --db")


def test_eval_max_queries_applies_to_probe_files(indexed, tmp_path, capsys):
    """Before: --max-queries 2 ran all three probes."""
    capsys.readouterr()
    assert cli("eval", _probes(tmp_path), "--db", indexed[1], "--max-queries", "2", "--json") == 0
    res = json.loads(capsys.readouterr().out)
    assert res["queries"] == 2
    assert res["misses"] == []                     # the third probe (a miss: no such node) was not run
    for bad in ("0", "-1"):
        assert cli("eval", _probes(tmp_path), "--db", indexed[1], "--max-queries", bad) == 2
        assert capsys.readouterr().err == f"error: --max-queries must be a whole number >= 1, got {bad}\n"


def test_eval_ablate_runs_on_a_probe_file(indexed, tmp_path, capsys):
    """Before: `eval PROBES --ablate` printed the one run, the flag silently ignored."""
    capsys.readouterr()
    assert cli("eval", _probes(tmp_path), "--db", indexed[1], "--channels", "bm25,dense", "--ablate",
               "--json") == 0
    res = json.loads(capsys.readouterr().out)
    assert res["channels"] == ["bm25", "dense"]
    assert [r["run"] for r in res["ablation"]] == ["all", "-bm25", "-dense", "bm25 only", "dense only"]
    assert res["ablation"][0] == {"run": "all", "channels": ["bm25", "dense"], **res["metrics"]}
    assert res["ablation"][3]["channels"] == ["bm25"] and set(res["ablation"][3]) == {
        "run", "channels", "recall@5", "recall@10", "mrr@10"}
    assert [(m["query"], m["found"]) for m in res["misses"]] == [("charlie", {})]
    assert cli("eval", _probes(tmp_path), "--db", indexed[1], "--channels", "bm25", "--ablate") == 0
    assert "| bm25 only | 0.6667 | 0.6667 | 0.6667 |" in capsys.readouterr().out


@pytest.mark.parametrize("flags, message", [
    (["--split", "test"], "--split: a probe file runs against the index of --db as it is; --split is about a BEIR "
                          "folder's qrels and evaluation index (leave it out)"),
    (["--index-dir", "ev"], "--index-dir: a probe file runs against the index of --db as it is; --index-dir is about "
                            "a BEIR folder's qrels and evaluation index (leave it out)"),
    (["--rebuild"], "--rebuild: a probe file runs against the index of --db as it is; --rebuild is about a BEIR "
                    "folder's qrels and evaluation index (leave it out)"),
    (["-k", "5"], "-k 5: a probe file is scored on 10 hits per probe (recall@10, MRR@10); leave -k out or give 10 "
                  "or more"),
])
def test_eval_flags_a_probe_file_cannot_use_are_usage_errors(flags, message, indexed, tmp_path, capsys):
    """Before: a probe file ran with --split/--index-dir/--rebuild/-k silently ignored (exit 0)."""
    capsys.readouterr()
    assert cli("eval", _probes(tmp_path), "--db", indexed[1], *flags) == 2
    assert capsys.readouterr() == ("", f"error: {message}\n")


def test_eval_k_and_db_with_a_beir_folder(indexed, tmp_path, capsys):
    """Before: a BEIR folder ignored --db (it has its own evaluation index) and raised -k 5 to 100,
    silently; -k beyond 10 for a probe file now says where a missed node ranked."""
    capsys.readouterr()
    assert cli("eval", _beir(tmp_path), "--db", indexed[1], "--index-dir", tmp_path / "ev") == 2
    assert capsys.readouterr().err == (f"error: --db {indexed[1]}: a BEIR folder is indexed into its own evaluation "
                                       f"index (--index-dir, --rebuild); --db names the index a probe file runs "
                                       f"against\n")
    assert cli("eval", _beir(tmp_path), "-k", "5", "--index-dir", tmp_path / "ev") == 2
    assert capsys.readouterr().err == ("error: -k 5: a BEIR folder is scored on 100 results per query (recall@100); "
                                       "leave -k out or give 100 or more\n")
    assert not (tmp_path / "ev").exists()
    assert cli("eval", _beir(tmp_path), "-k", "100", "--index-dir", tmp_path / "ev", "--json") == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["ndcg@10"] == 1.0


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_eval_on_an_empty_probe_file_is_bad_input(text, indexed, tmp_path, capsys):
    """Before: an empty probe file printed zeros and exited 0."""
    path = write(tmp_path / "empty.jsonl", text)
    capsys.readouterr()
    assert cli("eval", path, "--db", indexed[1]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f'error: {path}: no probe in the file; each line needs {{"query": "...", "expected": '
                            f'["node key or name", ...]}}\n')



@pytest.mark.parametrize("bad", ['{"query": null, "expected": ["md:a"]}', '{"query": 5, "expected": ["md:a"]}',
                                 '{"query": "  ", "expected": ["md:a"]}', '{"query": "alpha", "expected": []}',
                                 '{"query": "alpha", "expected": [{"key": "md:a"}]}', '{"query": "alpha"}'])
def test_eval_names_the_file_line_of_a_probe_it_cannot_run(bad, indexed, tmp_path, capsys):
    """`{"query": null}` was searched as the text "None" and `{"query": 5}` as "5", a blank query
    and `"expected": []` were probes that always miss (recall 0 in the means, exit 0), and the
    line an error named counted probes, not lines (blank lines before it shifted it)."""
    path = write(tmp_path / "p.jsonl", '\n{"query": "alpha", "expected": ["md:a"]}\n\n' + bad + "\n")
    capsys.readouterr()
    assert cli("eval", path, "--db", indexed[1]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f'error: {path}:4: each probe line needs {{"query": "...", "expected": '
                            f'["node key or name", ...]}} (a non-empty query and at least one expected key or name)\n')


# ---------------------------------------------------------------- 5. watch warns once per file
def test_watch_warns_once_per_skipped_file_until_it_changes(tmp_path):
    """Before: every run walks every file, so the same skip warnings (a binary note, a malformed
    KG file) came again with each reindex, however unrelated the change."""
    import time as _time

    from tests.test_watch import NO_EMBED, Run, wait_for
    from kgsearch.indexer import index_paths

    root = tmp_path / "notes"
    write(root / "a.md", "# A\nalpha\n")
    (root / "bin.md").write_bytes(b"# B\x00\x00binary\n")
    write(root / "bad.json", "{oops")
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], NO_EMBED)

    def warned(run):
        return [w for e in run.runs() for w in e["result"].report["warnings"]]

    with Run(db, [root], backend="poll") as run:
        wait_for(lambda: len(run.runs()) >= 1, "the catch-up run")
        first = warned(run)
        assert sorted(w.split(":")[0] for w in first) == [str(root / "bad.json"), str(root / "bin.md")]
        for i in range(2):                                     # unrelated edits: no warning again
            n = len(run.runs())
            write(root / "a.md", f"# A\nalpha edit{i}\n")
            wait_for(lambda: len(run.runs()) > n, "the run after an edit")
        assert warned(run) == first
        assert run.runs()[-1]["result"].report["warnings_repeated"] == 2
        n = len(run.runs())
        _time.sleep(0.01)
        (root / "bin.md").write_bytes(b"# B\x00\x00still binary, longer\n")   # changed, still skipped
        wait_for(lambda: len(run.runs()) > n, "the run after the binary file changed")
        assert warned(run)[len(first):] == [w for w in first if w.startswith(str(root / "bin.md"))]
        n = len(run.runs())
        write(root / "bad.json", '{"nodes": []}')              # fixed: its warning is forgotten ...
        wait_for(lambda: len(run.runs()) > n, "the run after the fix")
        n, before = len(run.runs()), len(warned(run))
        write(root / "bad.json", "{oops")                      # ... so breaking it again warns again
        wait_for(lambda: len(run.runs()) > n, "the run after breaking it again")
        assert [w.split(":")[0] for w in warned(run)[before:]] == [str(root / "bad.json")]


# ---------------------------------------------------------------- 6. stats table alignment
def _aligned(lines: list[str]) -> None:
    """Every row's last column starts where the header's does, in terminal columns."""
    from kgsearch.cli.output import display_width

    col = display_width(lines[0]) - len(lines[0].split()[-1])
    for ln in lines[2:]:
        assert display_width(ln) - len(ln.split()[-1]) == col, (ln, lines)


def test_stats_columns_stay_aligned_with_escaped_and_wide_types(tmp_path, capsys):
    """Before: an ESC in an edge type (shown as \\x1b on a terminal, raw on a pipe: a colour
    code inside the table), a combining accent (no column) and CJK types (two columns a
    character) pushed the count column out of line. The KG loader turns whitespace in a type
    into '_', so newlines and tabs are checked on the table itself below."""
    kg = tmp_path / "kg" / "g.jsonl"
    rows = [{"id": "a", "name": "A", "type": "概念"}, {"id": "b", "name": "B", "type": "thing\x1b"},
            {"source": "a", "target": "b", "type": "new\nline"}, {"source": "a", "target": "b", "type": "esc\x1b[31m"},
            {"source": "b", "target": "a", "type": "依存"}, {"source": "b", "target": "a", "type": "cafe\u0301"}]
    write(kg, "".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "i.db"
    assert cli("index", kg, "--db", db, "-q", "--no-embed") == 0
    capsys.readouterr()
    assert cli("stats", "--db", db) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text
    tables = {t.split("  ")[0]: t.splitlines() for t in text.split("\n\n") if t.startswith(("node kind", "edge type"))}
    assert sorted(r.split("  ")[0] for r in tables["edge type"][2:]) == ["cafe\u0301", "esc\\x1b[31m", "new_line", "依存"]
    assert sorted(r.split("  ")[0] for r in tables["node kind"][2:]) == ["thing\\x1b", "概念"]
    for lines in tables.values():
        _aligned(lines)


def test_a_table_escapes_and_aligns_breaks_tabs_and_wide_cells():
    from kgsearch.cli.output import table

    got = table([["new\nline", 1], ["tab\there", 22], ["依存", 3], ["\u202eevil", 4]], ["edge type", "count"])
    assert got.splitlines() == ["edge type   count", "----------  -----", "new\\nline   1", "tab\\there   22",
                                "依存        3", "\\u202eevil  4"]
    _aligned(got.splitlines())


# ---------------------------------------------------------------- 7. MCP params
TOOLS_LISTED = "search, context, why, show, related, stats, feedback, path, impact, communities"


def _rpc(srv, method, **fields):
    return srv.handle({"jsonrpc": "2.0", "id": 7, "method": method, **fields})


@pytest.mark.parametrize("method", ["initialize", "ping", "tools/list", "server/discover", "tools/call", "nope/x"])
@pytest.mark.parametrize("params, what", [(None, "null"), ([], "an array"), ([{"name": "search"}], "an array"),
                                          ("search", "a string"), (3, "a number"), (False, "a boolean")])
def test_mcp_params_that_are_not_an_object_are_invalid_params(method, params, what, indexed):
    """Before: `"params": null` (or [], false) counted as no params: tools/call answered
    "Unknown tool: None"; a list of one object "params must be an object"."""
    from kgsearch.mcp.server import Server

    r = _rpc(Server(indexed[1]), method, params=params)
    assert r == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message":
                 f"Invalid params: params of {method} must be an object (or left out), got {what}"}}


@pytest.mark.parametrize("params, message", [
    ({}, f"Invalid params: tools/call needs params.name, a tool name (one of {TOOLS_LISTED}); got nothing"),
    ({"name": None}, f"Invalid params: tools/call needs params.name, a tool name (one of {TOOLS_LISTED}); got null"),
    ({"name": ["search"]}, f"Invalid params: tools/call needs params.name, a tool name (one of {TOOLS_LISTED}); "
                           f"got an array"),
    ({"name": 5, "arguments": {}}, f"Invalid params: tools/call needs params.name, a tool name (one of "
                                   f"{TOOLS_LISTED}); got a number"),
    ({"name": "nope"}, f"Unknown tool: nope; the tools are {TOOLS_LISTED}"),
    ({"name": "stats", "arguments": None}, "Invalid params: params.arguments of tools/call must be an object (the "
                                           "tool's arguments, or left out), got null"),
    ({"name": "stats", "arguments": ["x"]}, "Invalid params: params.arguments of tools/call must be an object (the "
                                            "tool's arguments, or left out), got an array"),
    ({"name": "search", "arguments": "q"}, "Invalid params: params.arguments of tools/call must be an object (the "
                                           "tool's arguments, or left out), got a string"),
])
def test_mcp_tools_call_with_a_bad_name_or_arguments_is_invalid_params(params, message, indexed):
    from kgsearch.mcp.server import Server

    r = _rpc(Server(indexed[1]), "tools/call", params={"_meta": MCP_MODERN, **params})
    assert r == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": message}}


def test_mcp_params_left_out_still_work_where_a_method_needs_none(indexed):
    from kgsearch.mcp.server import Server

    srv = Server(indexed[1])
    assert _rpc(srv, "ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert _rpc(srv, "server/discover")["result"]["supportedVersions"] == ["2026-07-28"]
    r = _rpc(srv, "tools/call", params={"_meta": MCP_MODERN, "name": "stats"})       # arguments left out
    assert r["result"]["isError"] is False


# ---------------------------------------------------------------- 8. a file that cannot be opened
@pytest.fixture
def locked(monkeypatch):
    """Opening a file named ``secret.*`` to read raises PermissionError, as chmod 000 would for a user
    other than root (the tests run as root, where chmod does not stop a read)."""
    import builtins
    import io

    real = io.open

    def guarded(file, *a, **k):
        mode = a[0] if a else k.get("mode", "r")
        if Path(str(file)).name.startswith("secret.") and not set(mode) & set("wax+"):       # reading it
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, *a, **k)

    monkeypatch.setattr(io, "open", guarded)
    monkeypatch.setattr(builtins, "open", guarded)


def _tree(tmp_path) -> Path:
    root = tmp_path / "v"
    write(root / "a.md", "# A\nalpha\n")
    write(root / "c.py", "def charlie():\n    pass\n")
    write(root / "secret.json", '{"nodes": [{"id": "x", "name": "Xray"}]}')
    return root


def _files(db) -> list[str]:
    from kgsearch.store.db import Index

    with Index.open(db, readonly=True) as ix:
        return sorted(Path(r[0]).name for r in ix.conn.execute("SELECT path FROM files"))


def test_an_unreadable_file_in_a_folder_is_one_warning_and_the_others_index(tmp_path, locked, capsys):
    root = _tree(tmp_path)
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert cli("index", root, "--db", db, "--no-embed") == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (f"warning: {root / 'secret.json'}: cannot read (Permission denied); check its permissions "
                        f"(skipped; what was indexed from it before is kept)")
    assert sum(str(root / "secret.json") in ln for ln in lines) == 1
    assert "skipped: 1 unreadable folder(s)/file(s)" in lines
    assert _files(db) == ["a.md", "c.py"]


def test_an_unreadable_file_named_as_a_root_exits_3_and_says_read_not_listed(tmp_path, locked, capsys):
    """Before: "root .../secret.json cannot be listed (permissions?)": folder words for a file."""
    root = _tree(tmp_path)
    db = tmp_path / "i.db"
    capsys.readouterr()
    assert cli("index", root / "a.md", root / "secret.json", "--db", db, "--no-embed", "-q") == 3
    assert capsys.readouterr().err == (
        f"error: root {root / 'secret.json'} cannot be read (permissions?); its files are kept and the other roots "
        f"were indexed. Fix its permissions, or `kgsearch roots remove {root / 'secret.json'}`\n")
    assert _files(db) == ["a.md"]


# ---------------------------------------------------------------- fuzzer findings
def test_deleting_the_last_file_of_an_index_empties_it(tmp_path, capsys):
    """Found by a CLI fuzzer: an index of one note whose note was deleted (or whose only root was
    removed) ended every later run in "internal error IndexError: index 0 is out of bounds"
    (the graph splice looked up a position in an empty node list); nothing could be indexed."""
    root = tmp_path / "v"
    write(root / "only.md", "# Only\nalone\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    (root / "only.md").unlink()
    assert cli("index", "--db", db, "-q") == 0
    assert cli("doctor", "--db", db, "-q") == 0
    write(root / "again.md", "# Again\nback\n")
    assert cli("index", "--db", db, "-q") == 0
    assert cli("doctor", "--db", db, "-q") == 0
    assert cli("roots", "remove", root, "--db", db, "-q") == 0       # the only root: empty again
    assert cli("doctor", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("stats", "--db", db, "--json") == 0
    st = json.loads(capsys.readouterr().out)
    assert (st["files"], st["nodes"], st["edges"]) == (0, 0, 0)


def test_splice_to_no_node_at_all_equals_a_rebuild():
    import numpy as np

    from kgsearch.graph.kernels import splice
    from kgsearch.graph.kernels.csr import Graph

    g = Graph.from_edges([0, 1], [1, 0], num_nodes=3)
    got = splice.splice(g, np.array([10, 20, 30]), np.array([], dtype=np.int64), np.array([10, 20, 30]),
                        np.array([], dtype=np.int64), np.array([], dtype=np.int64), np.ones(0), np.zeros(0))
    want = Graph.from_edges([], [], num_nodes=0)
    assert (got.n, got.m) == (want.n, want.m) == (0, 0)
    for part in ("indptr", "indices", "rindptr", "rperm"):
        assert np.array_equal(getattr(got, part), getattr(want, part)), part


@pytest.mark.parametrize("command", [["stats"], ["search", "x"], ["show", "x"], ["export", "jsonl", "-"]])
def test_an_index_path_that_cannot_exist_is_exit_4(command, tmp_path, capsys):
    """Found by the fuzzer: `--db` with a name longer than the file system allows (or a path
    through a file) was "internal error OSError: [Errno 36] File name too long" (exit 1)."""
    long = "x" * 5000
    capsys.readouterr()
    assert cli(*command, "--db", long) == 4
    assert capsys.readouterr().err == (f"error: no index can be at {long[:200]!r} (File name too long); pass --db "
                                       f"with another path\n")
    through = write(tmp_path / "afile", "x") / "i.db"
    assert cli(*command, "--db", through) == 4
    assert capsys.readouterr().err.startswith("error: no index")


@pytest.mark.parametrize("command, example", [
    (["index", ""], "kgsearch index ~/notes"), (["index", "{root}", ""], "kgsearch index ~/notes"),
    (["roots", "remove", ""], "kgsearch roots remove ~/notes"), (["watch", ""], "kgsearch watch ~/notes"),
    (["doctor", "--rebuild", ""], "kgsearch doctor --rebuild ~/notes")])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(command, example, indexed, tmp_path, monkeypatch,
                                                               capsys):
    """Found by the fuzzer: `kgsearch index ""` (an unset `$NOTES`) indexed the folder it ran in,
    `roots remove ""` removed the root that folder is, `watch ""` watched it."""
    from kgsearch.store.db import Index

    root, db = indexed
    here = tmp_path / "here"
    write(here / "stray.md", "# Stray\nnot meant to be indexed\n")
    monkeypatch.chdir(here)
    with Index.open(db, readonly=True) as ix:
        before = (ix.generation, ix.meta_json("roots"))
    capsys.readouterr()
    assert cli(*[a.format(root=root) for a in command], "--db", db) == 2
    assert capsys.readouterr().err == (f"error: an empty PATH ('') names no folder or file (an unset shell variable?); "
                                       f"give one, e.g. `{example}`, or . for the current folder\n")
    with Index.open(db, readonly=True) as ix:
        assert (ix.generation, ix.meta_json("roots")) == before


def test_bench_out_that_cannot_be_written(indexed, tmp_path, capsys):
    """Found by the fuzzer: `bench --out FOLDER` ran the whole bench, then ended in "internal
    error IsADirectoryError" (exit 1), its result lost."""
    folder = tmp_path / "results"
    folder.mkdir()
    capsys.readouterr()
    assert cli("bench", "--db", indexed[1], "--out", folder, "--queries", "1", "--cold-runs", "1") == 2
    assert capsys.readouterr().err == (f"error: --out {folder} is a folder; give a file to write, e.g. "
                                       f"{folder / 'bench.json'}\n")
    through = write(tmp_path / "afile", "x") / "bench.json"
    assert cli("bench", "--db", indexed[1], "--out", through, "--queries", "1", "--cold-runs", "1", "-q") == 3
    assert capsys.readouterr().err == (f"error: {through}: cannot write the result (File exists); choose a "
                                       f"file you can write to\n")          # (mkdir of its folder, a file)


@pytest.mark.parametrize("ref", ["99999999999999999999", "\u00b2", "\u0663"])
def test_a_number_no_row_id_can_be_is_no_node(ref, indexed, capsys):
    """Found by the fuzzer: a node reference of digits past SQLite's 64-bit row ids was "internal
    error OverflowError" (CLI exit 1, HTTP 500, MCP -32603), and a superscript or Arabic-Indic
    digit (str.isdigit, but not int()) "internal error ValueError"."""
    from kgsearch.mcp.server import Server
    from kgsearch.serve import App, Holder

    capsys.readouterr()
    for command in (["show", ref], ["related", ref], ["path", ref, "md:a"], ["impact", ref]):
        assert cli(*command, "--db", indexed[1]) == 5
        assert capsys.readouterr().err.startswith(f"error: no node {'or indexed file ' if command[0] == 'impact' else ''}"
                                                  f"{ref!r} in {indexed[1]}")
    from urllib.parse import quote

    st, _, body = App({"i": Holder(indexed[1])}).handle("GET", f"/api/show?node={quote(ref)}", {})
    assert st == 404 and json.loads(body)["error"].startswith(f"no node {ref!r}")
    r = _rpc(Server(indexed[1]), "tools/call", params={"_meta": MCP_MODERN, "name": "show", "arguments": {"node": ref}})
    assert r["result"]["isError"] is True and r["result"]["content"][0]["text"].startswith(f"error: no node {ref!r}")


def test_a_files_path_with_a_nul_byte_is_not_in_the_index(indexed):
    """Found by fuzzing the HTTP API: /api/context?files=%00 was "internal error ValueError:
    embedded null byte" (HTTP 500), and the MCP context tool an internal error (-32603)."""
    from kgsearch.mcp.server import Server
    from kgsearch.serve import App, Holder

    st, _, body = App({"i": Holder(indexed[1])}).handle("GET", "/api/context?files=a%00b", {})
    assert st == 404 and json.loads(body)["error"].startswith("a\0b: this file is not in the index")
    r = _rpc(Server(indexed[1]), "tools/call", params={"_meta": MCP_MODERN, "name": "context",
                                                       "arguments": {"files": ["a\0b"]}})
    assert r["result"]["isError"] is True and r["result"]["content"][0]["text"].startswith("error: a\0b is not in")
    r = _rpc(Server(indexed[1]), "tools/call", params={"_meta": MCP_MODERN, "name": "impact",       # (impact: the same)
                                                       "arguments": {"node": "a\0b"}})
    assert r["result"]["isError"] is True
    assert r["result"]["content"][0]["text"].startswith("error: no node or indexed file 'a\\x00b'")


def test_doctor_rebuild_with_a_path_given_twice(indexed, capsys):
    """Found by the fuzzer: `doctor --rebuild P P` was "internal error IntegrityError: UNIQUE
    constraint failed: roots.path" (`index P P` takes P once)."""
    root, db = indexed
    capsys.readouterr()
    assert cli("doctor", "--rebuild", root, root, "--db", db, "-q") == 0
    assert cli("roots", "--db", db, "--json") == 0
    assert [r["path"] for r in json.loads(capsys.readouterr().out)] == [str(root)]


def test_a_name_means_the_code_not_the_tag_or_entity_of_that_word(tmp_path, capsys):
    """`kgsearch show send` (impact, path, feedback...) answered the tag #send, or the entity
    `send`, whose qualified name is the bare word, over the function `send`: the qualified-name
    lookup came before the name one. Structural nodes answer only when nothing else has the name."""
    root = tmp_path / "proj"
    write(root / "m.py", "def send(x):\n    return x\n\n\ndef recv(y):\n    return send(y)\n")
    write(root / "notes.md", "# Notes\nabout #send and #only\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    capsys.readouterr()
    for ref, key in (("send", "py:m.send"), ("tag:send", "tag:send"), ("only", "tag:only"), ("m.send", "py:m.send")):
        assert cli("show", ref, "--db", db, "--json") == 0
        assert json.loads(capsys.readouterr().out)["node"]["key"] == key, ref
    assert cli("impact", "send", "--db", db, "--json") == 0
    assert [d["key"] for d in json.loads(capsys.readouterr().out)["dependents"]][:1] == ["py:m.recv"]


def test_demo_never_mixes_into_an_index_of_other_folders(indexed, tmp_path, capsys):
    """`kgsearch demo --db ~/notes.db` indexed the demo's 42 files into the user's index (a root
    every later bare `kgsearch index` reindexes), though the demo "keeps its own index"."""
    root, db = indexed
    capsys.readouterr()
    assert cli("demo", "--db", db, "-k", "1") == 2
    assert capsys.readouterr() == ("", f"error: {db} is an index of other folders ({root}); the demo keeps its own "
                                       f"index: leave --db out, or give a new file\n")
    assert cli("roots", "--db", db, "--json") == 0
    assert [r["path"] for r in json.loads(capsys.readouterr().out)] == [str(root)]
    for _ in range(2):                                   # a new file, then the demo's own again
        assert cli("demo", "--db", tmp_path / "d.db", "-k", "1", "-q", "--json") == 0
        assert len(json.loads(capsys.readouterr().out)["hits"]) == 1


@pytest.mark.parametrize("start", ["empty folder", "root removed"])
def test_the_first_notes_after_an_empty_graph_are_indexed(start, tmp_path, capsys):
    """An empty vault indexed, then its first note written with five links (or every root removed,
    then one file indexed): the stored graph had no node, and its incremental splice indexed the
    old rows: exit 1, "internal error IndexError", on every later run too."""
    root = tmp_path / "vault"
    root.mkdir()
    db = tmp_path / "i.db"
    if start == "root removed":
        write(root / "old.md", "# Old\nold text\n")
        assert cli("index", root, "--db", db, "-q") == 0
        assert cli("roots", "remove", root, "--db", db, "-q") == 0
        write(root / "plan.md", "# Plan\n\n[[a]] [[b]] [[c]] [[d]] [[e]] #x #y\n")
        assert cli("index", root / "plan.md", "--db", db, "-q") == 0
    else:
        assert cli("index", root, "--db", db, "-q") == 0
        write(root / "plan.md", "# Plan\n\n[[a]] [[b]] [[c]] [[d]] [[e]] #x #y\n")
        assert cli("index", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("related", "md:plan", "--db", db, "--json") == 0
    edges = json.loads(capsys.readouterr().out)["edges"]
    assert sorted(e["key"] for e in edges["links_to"]) == ["md:a", "md:b", "md:c", "md:d", "md:e"]
    assert cli("doctor", "--db", db) == 0                  # the stored graph equals one built in full
    assert cli("path", "md:a", "md:e", "--db", db, "--json") == 0


def test_impact_on_a_kg_of_its_own_edge_types_says_to_pass_types(tmp_path, capsys):
    """WN18RR-style triples (`_hypernym`, `_has_part`): no edge type is a default dependency type,
    so `impact X` answered "0 dependent(s)" and "types " (empty), read as a fact about X."""
    kg = write(tmp_path / "kg" / "wn.tsv", "dog\t_hypernym\tcanine\ncat\t_hypernym\tfeline\ntail\t_has_part\tdog\n")
    db = tmp_path / "kg.db"
    assert cli("index", kg.parent, "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("impact", "canine", "--db", db, "--json") == 0
    out, err = capsys.readouterr()
    note = ("no edge type of this index is a default dependency type (calls, imports, links_to, depends_on, ...); "
            "it has _has_part, _hypernym: pass --types TYPE[:in|out] (e.g. --types _has_part:in)")
    assert json.loads(out)["notice"] == note and err == f"note: {note}\n"
    assert cli("impact", "canine", "--db", db, "--types", "_hypernym:in", "--json") == 0
    res = json.loads(capsys.readouterr().out)
    assert [d["key"] for d in res["dependents"]] == ["kg:dog"] and "notice" not in res
    assert cli("impact", "canine", "--db", db, "-q") == 0
    assert capsys.readouterr().err == ""



def test_impact_on_a_kg_node_beside_a_vault_says_to_pass_types(tmp_path, capsys):
    """The same triples indexed beside a Markdown vault: the index has `links_to`, a default
    dependency type, so the notice above was not given, and `impact canine` answered "0
    dependent(s)" although `dog -[_hypernym]-> canine` is there; a start node whose edges are
    none of the followed types gets the notice, naming its own types."""
    write(tmp_path / "kg" / "wn.tsv", "dog\t_hypernym\tcanine\ncat\t_hypernym\tfeline\ntail\t_has_part\tdog\n")
    write(tmp_path / "vault" / "a.md", "# A\nalpha [[b]]\n")
    write(tmp_path / "vault" / "b.md", "# B\nbravo\n")
    db = tmp_path / "kg.db"
    assert cli("index", tmp_path / "kg", tmp_path / "vault", "--db", db, "-q", "--no-embed") == 0
    capsys.readouterr()
    assert cli("impact", "canine", "--db", db, "--json") == 0
    out, err = capsys.readouterr()
    note = ("canine has no edge of the types followed (calls, imports, links_to, depends_on, ...); its edges are "
            "_hypernym: pass --types TYPE[:in|out] (e.g. --types _hypernym:in)")
    assert json.loads(out)["notice"] == note and err == f"note: {note}\n"
    assert cli("impact", "md://vault/b", "--db", db, "--json") == 0      # a note: its links are followed
    res = json.loads(capsys.readouterr().out)
    assert [d["key"] for d in res["dependents"]] == ["md://vault/a"] and "notice" not in res
    assert cli("impact", "canine", "--db", db, "--types", "_hypernym:in", "--json") == 0
    res = json.loads(capsys.readouterr().out)
    assert [d["key"] for d in res["dependents"]] == ["kg:dog"] and "notice" not in res

def test_eval_of_a_probe_file_names_the_index_it_read(indexed, tmp_path, capsys):
    """Without --db (the index of $KGSEARCH_DB, or the default one) the result said "index": ""."""
    capsys.readouterr()
    assert main(["eval", str(_probes(tmp_path)), "--json"], environ={"KGSEARCH_DB": str(indexed[1])}) == 0
    assert json.loads(capsys.readouterr().out)["index"] == str(indexed[1])


def test_a_root_that_is_a_file_is_counted_kept_filtered_and_removed(tmp_path, capsys):
    """`kgsearch index notes/todo.md`: the file's row names its folder as root, and four places
    looked for the root's own path: every run reloaded it ("1 changed file(s)"), `roots` said 0
    files (and "its 0 file(s) are kept" when missing), `--root todo.md` matched nothing and
    `roots remove todo.md` removed nothing (its nodes stayed)."""
    todo = write(tmp_path / "notes" / "todo.md", "# Todo\nbuy zebra food\n")
    write(tmp_path / "vault" / "a.md", "# A\nalpha zebra\n")
    db = tmp_path / "i.db"
    assert cli("index", todo, tmp_path / "vault", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("index", "--db", db) == 0
    assert capsys.readouterr().err.startswith("indexed 0 changed file(s), 2 unchanged, 0 deleted")
    assert cli("roots", "--db", db, "--json") == 0
    assert {r["path"]: r["files"] for r in json.loads(capsys.readouterr().out)} == {str(todo): 1,
                                                                                   str(tmp_path / "vault"): 1}
    assert cli("search", "zebra", "--db", db, "--root", "todo.md", "--json") == 0
    assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["md:todo"]
    assert cli("roots", "remove", todo, "--db", db) == 0
    assert capsys.readouterr().err.startswith(f"removed root {todo}: 1 file(s), 1 node(s)")
    assert cli("show", "md:todo", "--db", db) == 5


def test_root_label_names_one_root_even_when_two_folders_share_its_name(tmp_path, capsys):
    """Two folders called notes are the roots labelled notes and notes-2 (`roots` shows them);
    `--root notes` kept both (a folder-name match), so the label shown could not pick the first."""
    for sub, name in (("r0", "zero"), ("r1/notes", "one"), ("r2/notes", "two")):
        write(tmp_path / sub / f"{name}.md", f"# {name}\nzebra {name}\n")
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "r0", tmp_path / "r1" / "notes", tmp_path / "r2" / "notes", "--db", db, "-q") == 0
    capsys.readouterr()
    for value, keys in (("notes", ["md://notes/one"]), ("notes-2", ["md://notes-2/two"]), ("r0", ["md:zero"]),
                        (str(tmp_path / "r2" / "notes"), ["md://notes-2/two"])):
        assert cli("search", "zebra", "--db", db, "--root", value, "--json", "--no-cache") == 0
        assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == keys, value


def test_a_db_path_through_a_file_says_the_file_is_no_folder(indexed, tmp_path, capsys):
    """`--db notes/plan.md/x.db` (a file on the way) said "(File exists): .../x.db.lock is
    read-only", sending the user to fix permissions that were fine."""
    root, _ = indexed
    capsys.readouterr()
    for db in (root / "a.md" / "x.db", root / "a.md" / "deeper" / "x.db"):
        assert cli("index", root, "--db", db) == 4
        assert capsys.readouterr().err == (f"error: cannot create the lock file {db}.lock: {root / 'a.md'} is a file, "
                                           f"not a folder; pass --db with a path in a folder; nothing was changed\n")


def test_graph_questions_on_an_index_of_no_node_say_so(tmp_path, capsys):
    """An empty folder indexed: `communities` said "has no graph yet (nothing indexed, or the graph
    step never finished); run `kgsearch index PATH`", though the index run had finished."""
    (tmp_path / "empty").mkdir()
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "empty", "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("communities", "--db", db) == 4
    assert capsys.readouterr().err == (f"error: {db} holds no nodes: its roots ({tmp_path / 'empty'}) have no file "
                                       f"kgsearch can index; index a folder of notes or code with `kgsearch index "
                                       f"PATH`\n")


def test_a_note_answers_to_its_front_matter_aliases(tmp_path, capsys):
    """`kgsearch show "backup plan"` (show, why, related, impact, path, feedback) on a note whose
    front matter says `aliases: [Backup Plan]` answered the entity made of that alias, or
    nothing for an alias no entity was made of: the names the note answers to in links
    (`[[Backup Plan]]`) were never looked up. A stored alias answers in any case and spacing,
    after keys, qualified names and names, and before structural nodes."""
    root = tmp_path / "vault"
    write(root / "plan.md", "---\ntitle: Disaster recovery\naliases: [Backup Plan, \"offsite copy\"]\n---\n"
                            "# Disaster recovery\n\nWe copy the notes to a second disk every night. See [[Missing Note]].\n")
    write(root / "other.md", "# Other\nThe [[offsite copy]] is in the garage.\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    capsys.readouterr()
    for ref, key in (("backup plan", "md:plan"), ("Backup  Plan", "md:plan"), ("OFFSITE COPY", "md:plan"),
                     ("Disaster recovery", "md:plan"), ("plan", "md:plan"), ("Other", "md:other")):
        assert cli("show", ref, "--db", db, "--json") == 0
        assert json.loads(capsys.readouterr().out)["node"]["key"] == key, ref
    assert cli("related", "offsite copy", "--db", db, "--json") == 0
    assert "md:other" in capsys.readouterr().out                 # the link to the alias, seen from the note
    assert cli("show", "nothing like it", "--db", db) == 5


def test_words_typed_without_accents_find_notes_written_with_them(tmp_path):
    # a French, German or Hindi note: "creme brulee" found nothing in "Crème brûlée" (the terms
    # kept their accents), and a Hindi word matched any note sharing one of its letters (each
    # vowel sign split the word). An index made before keeps its own analysis until reindexed.
    import sqlite3

    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    vault = tmp_path / "v"
    write(vault / "dessert.md", "# Crème brûlée\nLa crème se prépare la veille.\n")
    write(vault / "strasse.md", "# Hauptstraße\nDie Straße am Rathaus.\n")
    write(vault / "hindi.md", "# हिन्दी\nहिन्दी भाषा के नोट्स\n")
    write(vault / "hindi2.md", "# नदी\nनदी के किनारे\n")          # shares the letters न and द
    write(vault / "other.md", "# Other\nnothing here about desserts\n")
    db = tmp_path / "i.db"
    index_paths(db, [str(vault)], IndexOptions(steps=("text",)))

    def top(q):
        with Index.open(db, readonly=True) as ix:
            hits = Engine(ix).search(q, SearchOptions(use_cache=False, channels="bm25")).hits
        return [h.key for h in hits]

    assert top("creme brulee")[:1] == top("crème brûlée")[:1] == ["md:dessert"]
    assert top("strasse") == ["md:strasse"]
    assert top("हिन्दी") == ["md:hindi"]
    # an index made before: its stored analysis is read (no fold, no marks) until it is rebuilt
    con = sqlite3.connect(db)
    key, state = con.execute("SELECT key, value FROM meta WHERE value LIKE '%\"analysis\": 3%' "
                             "AND key LIKE 'text.%'").fetchone()
    st = json.loads(state)
    del st["params"]["fold"], st["params"]["analysis"]
    con.execute("UPDATE meta SET value=? WHERE key=?", (json.dumps(st), key))
    ts = json.loads(con.execute("SELECT value FROM meta WHERE key='text.settings'").fetchone()[0])
    del ts["bm25"]["fold"], ts["bm25"]["analysis"], ts["analyzer"]["fold"]
    ts["analyzer"]["version"] = 2
    con.execute("UPDATE meta SET value=? WHERE key='text.settings'", (json.dumps(ts),))
    con.commit()
    con.close()
    with Index.open(db, readonly=True) as ix:
        from kgsearch.text.postings import stored_params
        params = stored_params(ix)[1]
    assert (params.fold, params.analysis) == (False, 2)
    # the next run that changes something rebuilds the text tables with today's analysis
    write(vault / "other.md", "# Other\nstill nothing about desserts\n")
    rep = index_paths(db, [str(vault)], IndexOptions(steps=("text",)))
    assert rep.steps["text"]["full"]
    assert top("creme brulee")[:1] == ["md:dessert"] and top("हिन्दी") == ["md:hindi"]


def test_show_says_how_many_edges_it_left_out(tmp_path, capsys):
    """`show X --edges 2` printed "incoming edges (3):" and two edges, nothing saying one was
    left out or how to see it (`related` says "--limit for more")."""
    root = tmp_path / "vault"
    write(root / "hub.md", "# Hub\n")
    for n in "abc":
        write(root / f"{n}.md", f"# {n}\nsee [[hub]]\n")
    db = tmp_path / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    capsys.readouterr()
    assert cli("show", "md:hub", "--edges", "2", "--db", db) == 0
    out = capsys.readouterr().out
    import re
    total = int(re.search(r"incoming edges \((\d+)\):", out).group(1))       # 3 links, similar_text
    assert total > 2 and f"  ... {total - 2} more: --edges {total}, or `kgsearch related`" in out, out
    assert cli("show", "md:hub", "--db", db) == 0
    assert "more:" not in capsys.readouterr().out


def test_model_use_of_an_unknown_name_lists_the_models(indexed, capsys):
    """`kgsearch model use e5-small-multi` (a name off by a suffix) said "no model2vec model found
    at e5-small-multi (need config.json, model.safetensors and tokenizer.json); pass a model
    folder or run `kgsearch model pull NAME`": the names it does know went unsaid."""
    capsys.readouterr()
    assert cli("model", "use", "e5-small-multi", "--db", indexed[1]) == 2      # a usage error, as `index --model`
    err = capsys.readouterr().err
    assert err.startswith("error: no model named 'e5-small-multi' here; the models here: ") and err.count("\n") == 1
    assert "e5-small-en-256" in err and "e5-small-multi-192" in err and "`kgsearch model list`" in err


def test_a_kind_filter_reads_a_kg_type_as_it_was_written(tmp_path, capsys):
    """A KG's `"type": "Person"` or `"Machine Design"` is stored as the kind `person`,
    `machine_design` (lower case, spaces as `_`), and `kind:Person` / `--kind "Machine Design"`
    kept no node ("no node matches the filters kind:Person"); the value is read the same way."""
    write(tmp_path / "kg" / "n.jsonl",
          '{"id": "p1", "name": "Ada Lovelace", "type": "Person", "description": "analytical engine notes"}\n'
          '{"id": "p2", "name": "Analytical Engine", "type": "Machine Design", "description": "by Babbage"}\n')
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "kg", "--db", db, "-q", "--no-embed") == 0
    for args, want in ((["analytical kind:Person"], ["kg:p1"]), (["analytical", "--kind", "Machine Design"], ["kg:p2"]),
                       (["analytical -kind:PERSON"], ["kg:p2"])):
        capsys.readouterr()
        assert cli("search", *args, "--db", db, "--json") == 0
        assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == want, args


def test_a_quoted_filter_value_is_a_filter(tmp_path, capsys):
    """`kind:"Machine Design"` or `path:"My Notes/"` (a value with a space, quoted as a shell
    user quotes it) was no filter at all: the words went into the query text and every kind and
    path came back, with no word said."""
    write(tmp_path / "kg" / "n.jsonl",
          '{"id": "p1", "name": "Ada Lovelace", "type": "Person", "description": "analytical engine notes"}\n'
          '{"id": "p2", "name": "Analytical Engine", "type": "Machine Design", "description": "by Babbage"}\n')
    write(tmp_path / "kg" / "My Notes" / "a.md", "# Engine\nthe analytical engine, a note\n")
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "kg", "--db", db, "-q", "--no-embed") == 0
    for query, want in (('analytical kind:"Machine Design"', ["kg:p2"]), ('analytical path:"My Notes/"', ["md:My Notes/a"]),
                        ('analytical -path:"My Notes/" -kind:"Machine Design"', ["kg:p1"])):
        capsys.readouterr()
        assert cli("search", query, "--db", db, "--json") == 0
        assert [h["key"] for h in json.loads(capsys.readouterr().out)["hits"]] == want, query


# ---------------------------------------------------------------- --types as the KG file writes them
def test_types_written_as_the_kg_file_writes_them_name_the_index_type(tmp_path, capsys):
    """A KG's "Depends On" is kept as `depends_on` (as `kind:Person` is `person`), but
    `--types "Depends On"` on related, impact, path and export was an unknown type (exit 2)."""
    write(tmp_path / "kg" / "g.jsonl", "\n".join(json.dumps(r) for r in [
        {"node_id": "a", "name": "Alpha"}, {"node_id": "b", "name": "Bravo"}, {"node_id": "c", "name": "Charlie"},
        {"source": "a", "target": "b", "type": "Depends On"}, {"source": "b", "target": "c", "type": "Feeds Into"}]))
    db = tmp_path / "i.db"
    assert cli("index", tmp_path / "kg", "--db", db, "-q", "--no-embed") == 0
    capsys.readouterr()
    assert cli("related", "kg:a", "--types", "Depends On", "--db", db, "--json") == 0
    assert list(json.loads(capsys.readouterr().out)["edges"]) == ["depends_on"]
    assert cli("impact", "kg:b", "--types", "Depends On:in", "--db", db, "--json") == 0
    assert [d["key"] for d in json.loads(capsys.readouterr().out)["dependents"]] == ["kg:a"]
    assert cli("path", "kg:a", "kg:c", "--types", "Depends-On,feeds into", "--db", db, "--json") == 0
    got = json.loads(capsys.readouterr().out)
    assert got["types"] == ["depends_on", "feeds_into"] and got["paths"][0]["hops"] == 2
    assert cli("export", "jsonl", "-", "--types", "DEPENDS ON", "--db", db) == 0
    out = capsys.readouterr().out
    assert '"depends_on"' in out and "feeds_into" not in out
    assert cli("related", "kg:a", "--types", "Depends", "--db", db) == 2           # a word of it is still no type


def test_explain_says_a_channel_matched_nothing_of_the_node_not_score_zero_rank_zero():
    """`why` printed `bm25     score 0.0000 rank 0 norm -0.512` for a node BM25 did not match."""
    from kgsearch.cli.output import format_why

    info = {"node": {"name": "Alpha", "kind": "entity", "key": "kg:a"}, "query": "q", "intent": {"name": "default"},
            "fusion": "linear", "channels_run": ["bm25", "dense"], "reason": "in the top 10 at rank 2",
            "hit": {"score": 1.5, "rank": 2, "signals": {}, "adjustments": {},
                    "channels": {"bm25": {"score": 0.0, "rank": 0, "norm": -0.512},
                                 "dense": {"score": 0.3, "rank": 4, "norm": 1.2}}}, "top": []}
    lines = format_why(info).splitlines()
    assert "  bm25     no match norm -0.512" in lines
    assert "  dense    score 0.3000 rank 4 norm 1.200" in lines


@pytest.mark.parametrize("item, says", [
    ("a\\b", "--set expects KEY=VALUE, got 'a\\b'"),
    ("a\\b=1", "--set: unknown setting 'a\\b'; known settings: "),
    ("stemmer=a\\b", "--set: unknown stemmer 'a\\b'; choose from "),
    ("idf=a\\b", "--set: unknown idf 'a\\b'; choose from "),
    ("k1=a\\b", "--set: setting k1='a\\b' is not a valid float (ASCII digits, e.g. k1=1.5)"),
])
def test_eval_set_quotes_a_bad_setting_as_typed(item, says, indexed, tmp_path, capsys):
    """`--set`'s errors showed the typed key or value with repr: a backslash came back doubled."""
    path = _probes(tmp_path)
    capsys.readouterr()
    assert cli("eval", path, "--db", indexed[1], "--set", item, "--index-dir", tmp_path / "ev") == 2
    assert capsys.readouterr().err.startswith(f"error: {says}")


@pytest.mark.parametrize("case", ["model", "db", "weight name", "weight value"])
def test_a_typed_path_model_or_config_weight_is_quoted_as_typed(case, tmp_path, monkeypatch, capsys):
    """`--model`, `no index can be at` (a --db no file system can hold) and a config file's bad
    edge weight showed the typed value with repr: a backslash came back doubled."""
    write(tmp_path / "v" / "a.md", "# A\nalpha [[b]]\n")
    db, extra = tmp_path / "i.db", []
    if case == "model":
        extra, says = ["--model", "C:\\m"], "error: --model 'C:\\m': no model2vec model at C:\\m"
    elif case == "db":
        db = "C:\\" + "x" * 300
        says = "error: no index can be at 'C:\\" + "x" * 197 + "' (File name too long)"
    else:
        weights = '{"a\\\\b": -1}' if case == "weight name" else '{"links_to": "a\\\\b"}'
        monkeypatch.setenv("KGSEARCH_CONFIG", str(write(tmp_path / "config.json", '{"edge_weights": %s}' % weights)))
        says = ("the weight of 'a\\b' must be a number >= 0 in ASCII digits, got -1 " if case == "weight name" else
                "the weight of 'links_to' must be a number >= 0 in ASCII digits, got 'a\\b' ")
    capsys.readouterr()
    assert cli("index", tmp_path / "v", "--db", db, *extra) != 0
    err = capsys.readouterr().err
    assert says in err, err
