"""Issue 24 follow-up: UTF-16 text files (what Windows Notepad's "Unicode" and PowerShell's ``>``
write: a byte-order mark, then UTF-16 LE; BE too) are indexed like UTF-8 ones. They were skipped
with a "save it as UTF-8" warning, so a user's notes, logs and code from Windows went missing.

The oracle is the same tree saved as UTF-8: every node, edge, name and line span of the index
must be the same, and an index updated from the UTF-8 tree to the UTF-16 one must search like a
fresh build. Invalid UTF-16 decodes with replacement characters and one warning naming the line;
UTF-16 without a byte-order mark and UTF-32 stay "not text" (their NUL bytes).
"""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run as cli
from indexer.test_incremental import logical
from test_reliability_index import cut_lines

from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.ingest.common import decode
from kgsearch.query import search

BOMS = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}

FILLER = "".join(f"Line {i} of filler about burrows, tunnels and the dry season.\n" for i in range(40))
TREE = {
    "field/note.md": ("# Field notes\n\nThe preamble mentions a wombat.\n\n## Quokka habits\n\n" + FILLER
                      + "The quokka smiles at dawn.\n\n## Numbat diet\n\nTermites, only termites, ñ and 漢字.\n"),
    "field/zoo.py": ('"""Windows module."""\r\n\r\n\r\ndef kangaroo_jump(height):\r\n    """Jump high."""\r\n'
                     "    return height * 2\r\n\r\n\r\nclass Pouch:\r\n    def hold(self):\r\n"
                     "        return kangaroo_jump(3)\r\n"),
    "field/log.txt": ("Morning log\r\n\r\nNothing to report about birds.\r\n\r\n"
                      "A platypus was seen near the creek, laying eggs.\r\nIt swam away.\r\n"),
    "field/app.js": "// helpers\r\nexport function wallabyHop(n) {\r\n  return n + 1;\r\n}\r\n",
    "field/graph.jsonl": ('{"id": "echidna", "name": "Echidna", "type": "animal", "description": "spiny anteater"}\n'
                          '{"id": "dingo", "name": "Dingo", "type": "animal", "description": "wild dog \U0001F415"}\n'
                          '{"source": "dingo", "target": "echidna", "edge_type": "hunts"}\n'),
    "kg/train.tsv": "t1\t_hypernym\tt2\nt3\t_hypernym\tt2\n",
    "kg/entity2text.txt": "t1\tbilby, a desert marsupial\nt2\tmarsupial, a pouched mammal\nt3\tbandicoot, a marsupial\n",
}


def save(root: Path, encoding: str) -> None:
    for rel, text in TREE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("utf-8") if encoding == "utf-8" else BOMS[encoding] + text.encode(encoding))


def line_of(rel: str, needle: str) -> int:
    """1-based line of the decoded text that holds ``needle`` (the hand-made expectation)."""
    return next(i for i, ln in enumerate(TREE[rel].split("\n"), 1) if needle in ln)


def top(db, query: str) -> tuple[str, int, int]:
    h = search(query, db=str(db), k=5, use_cache=False).hits[0]
    return h.key, h.line, h.line_end


def span(db, key: str) -> tuple[int, int]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT line_start, line_end FROM nodes WHERE key = ?", (key,)).fetchone()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_files_index_like_utf8_with_exact_line_spans(tmp_path, encoding):
    root = tmp_path / "v"
    save(root, "utf-8")
    inc = tmp_path / "inc.db"
    index_paths(inc, [str(root)], IndexOptions())
    save(root, encoding)                                  # the same text, re-saved by a Windows editor
    raw = (root / "field/zoo.py").read_bytes()
    assert raw.startswith(BOMS[encoding]) and b"\0" in raw
    rc, out, err = cli("index", root, "--db", inc, "--json")
    assert rc == 0 and "UTF-16" not in err and "warning" not in err, err
    rep = json.loads(out)
    assert rep["skipped"]["binary"] == 0 and rep["files_loaded"] == len(TREE) and rep["nodes_added"] == rep["nodes_removed"] == 0, rep    # new bytes: reloaded
    fresh = tmp_path / "fresh.db"
    rc, _, err = cli("index", root, "--db", fresh)
    assert rc == 0 and "warning" not in err, err
    utf8 = tmp_path / "utf8"
    save(utf8, "utf-8")
    ref = tmp_path / "ref.db"
    index_paths(ref, [str(utf8)], IndexOptions())
    a, b, c = logical(inc), logical(fresh), logical(ref)
    assert a == b                                          # updated == fresh
    for part in ("nodes", "edges"):                        # == the UTF-8 tree's (its paths under another root)
        assert repr(c[part]).replace(str(utf8), str(root)) == repr(b[part]), part

    # found by words inside them, with the lines of the decoded text
    assert top(fresh, "kangaroo jump") == ("py:field.zoo.kangaroo_jump", line_of("field/zoo.py", "def kangaroo_jump"),
                                           line_of("field/zoo.py", "return height"))
    assert span(fresh, "py:field.zoo.Pouch.hold") == (line_of("field/zoo.py", "def hold"),
                                                      line_of("field/zoo.py", "kangaroo_jump(3)"))
    assert top(fresh, "numbat termites") == ("md:field/note#numbat-diet", line_of("field/note.md", "## Numbat"),
                                             TREE["field/note.md"].count("\n"))
    assert top(fresh, "quokka smiles dawn")[0] == "md:field/note"       # results keep one hit per note
    assert span(fresh, "md:field/note#quokka-habits") == (line_of("field/note.md", "## Quokka"),
                                                          line_of("field/note.md", "smiles at dawn"))
    assert top(fresh, "platypus creek eggs") == ("txt:field/log.txt", 1, TREE["field/log.txt"].count("\n"))
    assert top(fresh, "dingo wild dog") == ("kg:dingo", line_of("field/graph.jsonl", '"id": "dingo"'),
                                            line_of("field/graph.jsonl", '"id": "dingo"'))
    assert top(fresh, "wallaby hop")[1:] == (2, 4)
    assert any("wild dog \U0001F415" in str(n) for n in b["nodes"])
    assert top(fresh, "bilby desert marsupial")[:2] == ("kg:t1", line_of("kg/entity2text.txt", "bilby"))

    # the updated index ranks like the fresh build: same keys, same scores, same order up to ties
    for q in ["kangaroo jump", "numbat termites", "platypus", "marsupial", "dingo", "wombat burrows"]:
        x, y = ([(r.key, r.score) for r in search(q, db=str(d), k=50, use_cache=False).hits] for d in (inc, fresh))
        assert x and [k for k, _ in sorted(x)] == [k for k, _ in sorted(y)], q
        assert all(abs(s - t) <= 1e-9 for (_, s), (_, t) in zip(x, y)) and dict(x) == pytest.approx(dict(y), abs=1e-9), q


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-8"])
def test_context_shows_a_utf16_functions_source_lines(tmp_path, encoding):
    """The lines of the decoded text, and a CRLF file's last line without a line of its own
    after it (a UTF-8 CRLF file showed one too)."""
    from kgsearch.context.items import _read_file
    from kgsearch.ingest.readback import content_hash

    f = tmp_path / "zoo.py"
    f.write_bytes(BOMS.get(encoding, b"") + TREE["field/zoo.py"].encode(encoding))
    st = f.stat()
    lines = _read_file(str(f), str(tmp_path), st.st_size, st.st_mtime_ns, content_hash(f.read_bytes()))
    a = line_of("field/zoo.py", "def kangaroo_jump")
    assert lines.span(a, a + 2) == ["def kangaroo_jump(height):", '    """Jump high."""', "    return height * 2"]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-8-sig"])
def test_a_utf16_beir_corpus_reads_line_by_line(tmp_path, encoding):
    """UTF-16 split at its newlines, not at every 0A byte; and a UTF-8 BOM (Notepad's "UTF-8
    with BOM") is no "invalid JSON" on line 1."""
    docs = [{"_id": "d1", "title": "Wombats", "text": "cube shaped droppings"},
            {"_id": "d2", "title": "Emus", "text": "flightless birds \u2028 of the \u0a0a outback"}]   # \u0a0a: a 0A byte
    f = tmp_path / "corpus.jsonl"
    f.write_bytes(BOMS.get(encoding, b"") + "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode(encoding))
    from kgsearch.ingest import beir
    from kgsearch.types import LoadOptions

    res = beir.load(f, "corpus.jsonl", LoadOptions())
    assert [(n.key, n.name, n.text, n.line_start) for n in res.nodes] == [
        (f"doc:{d['_id']}", d["title"], d["text"], i) for i, d in enumerate(docs, 1)]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_invalid_utf16_is_replacement_characters_and_one_warning_naming_the_line(tmp_path, encoding):
    root = tmp_path / "v"
    root.mkdir()
    lone = "\ud83d".encode(encoding, "surrogatepass")                 # a high surrogate with no low one
    (root / "bad.md").write_bytes(BOMS[encoding] + "# Bad\nfine line\n".encode(encoding) + lone
                                  + " wallaby here\n".encode(encoding) + "\ud800".encode(encoding, "surrogatepass"))
    (root / "odd.txt").write_bytes(BOMS[encoding] + "one\ntwo\nthree koala\n".encode(encoding) + b"\x41")
    rc, out, err = cli("index", root, "--db", tmp_path / "i.db", "--json")
    assert rc == 0, err
    warned = json.loads(out)["warnings"]
    assert [w for w in warned if "bad.md" in w] == [f"{root / 'bad.md'}:3: not valid UTF-16 (a lone surrogate or an odd "
                                                   "byte at the end); decoded with replacement characters (save the "
                                                   "file again, as UTF-8 or UTF-16, to fix)"]
    assert [w.split(" ")[0] for w in warned if "odd.txt" in w] == [f"{root / 'odd.txt'}:4:"]
    assert decode(BOMS[encoding] + "x\n".encode(encoding) + lone, "f")[0] == "x\n\ufffd"
    assert top(tmp_path / "i.db", "wallaby")[0] == "md:bad"
    assert top(tmp_path / "i.db", "koala")[0] == "txt:odd.txt"


def test_utf32_and_utf16_without_a_mark_stay_not_text(tmp_path):
    from kgsearch.ingest.common import utf16_codec

    assert utf16_codec(b"\xff\xfe\x00\x00") is None and utf16_codec("x".encode("utf-32")) is None
    root = tmp_path / "v"
    root.mkdir()
    (root / "u32.md").write_bytes("# Hi\ntext\n".encode("utf-32"))                 # FF FE 00 00 ...
    (root / "nobom.txt").write_bytes("plain words\n".encode("utf-16-le"))
    (root / "ok.md").write_bytes(BOMS["utf-16-le"] + "# Ok\nfine\n".encode("utf-16-le"))
    rc, out, err = cli("index", root, "--db", tmp_path / "i.db", "--json")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["skipped"]["binary"] == 2 and rep["files_loaded"] == 1, rep
    assert sorted(w.split(":")[0] for w in rep["warnings"] if "not text" in w) == [str(root / "nobom.txt"), str(root / "u32.md")]


def test_read_text_of_utf16_equals_decoding_and_cutting_the_whole_file(tmp_path, monkeypatch):
    """The block-wise UTF-16 reader against the obvious reference (decode the whole file, then
    cut each line's UTF-8 bytes as for a UTF-8 file): random code units, newlines, surrogate
    pairs, lone surrogates and an odd last byte, random block sizes (so characters, pairs and
    lines straddle blocks)."""
    import random

    from kgsearch.ingest import common

    rng = random.Random(16)
    units = ["a", "b", "\n", "\r", " ", "\u00e9", "\u20ac", "\U0001F600", "\ud800", "\udc00", "\u0a0a"]
    for trial in range(300):
        encoding = rng.choice(list(BOMS))
        text = "".join(rng.choice(units) for _ in range(rng.randint(0, 600)))
        data = BOMS[encoding] + text.encode(encoding, "surrogatepass") + (b"\x0a" if rng.random() < 0.2 else b"")
        cap = rng.randint(1, 40)
        monkeypatch.setattr(common, "_BLOCK", rng.randint(1, 150))
        p = tmp_path / f"t{trial}.txt"
        p.write_bytes(data)
        got, warnings = common.read_text(p, cap)
        whole, warning = decode(data, str(p))
        kept, cut = cut_lines(whole.encode("utf-8"), cap)
        assert got == kept.decode("utf-8"), trial
        assert [w for w in warnings if "UTF-16" in w] == ([warning] if warning else []), trial
        assert [w for w in warnings if "a line of" in w] == ([w for w in warnings if f"{p}:{cut[0]}: a line of" in w]
                                                             if cut else [])


def test_reading_a_one_line_utf16_file_stays_within_a_memory_bound(tmp_path):
    """A 32 MB UTF-16 file on one line: decoded a block at a time and cut at the line cap, the
    reader's peak stays a few MB over the interpreter's (decoding it whole: ~100 MB more)."""
    p = tmp_path / "line.txt"
    with open(p, "wb") as fh:
        fh.write(BOMS["utf-16-le"])
        chunk = ("lorem ipsum dolor sit amet " * 4000).encode("utf-16-le")
        while fh.tell() < 32_000_000:
            fh.write(chunk)
    code = ("import sys\nfrom kgsearch.ingest.common import read_text\n"
            "def hwm(): return [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
            "base = hwm()\ntext, warnings = read_text(sys.argv[1])\n"
            "print(len(text), len(warnings), (hwm() - base) // 1024)\n")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    n, warned, grown = map(int, r.stdout.split())
    assert n == 100_000 and warned == 1
    assert grown < 24, r.stdout                                            # MB over the start


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf16_kgsearchignore_hides_what_it_names(tmp_path, encoding):
    """Read as UTF-8, its patterns were NUL-riddled text that matched nothing: the files it
    was written to hide were indexed."""
    root = tmp_path / "v"
    root.mkdir()
    (root / ".kgsearchignore").write_bytes(BOMS[encoding] + "secret.md\r\nprivate/\r\n".encode(encoding))
    (root / "secret.md").write_text("# Secret\npasswords here\n")
    (root / "private").mkdir()
    (root / "private" / "diary.md").write_text("# Diary\npasswords too\n")
    (root / "open.md").write_text("# Open\nnothing hidden\n")
    rc, out, err = cli("index", root, "--db", tmp_path / "i.db", "--json")
    assert rc == 0, err
    with sqlite3.connect(tmp_path / "i.db") as c:
        assert [k for (k,) in c.execute("SELECT key FROM nodes WHERE kind = 'note' ORDER BY key")] == ["md:open"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le-bom", "utf-8-sig", "utf-8"])
def test_the_config_and_equivalences_files_read_as_windows_editors_save_them(tmp_path, encoding):
    """config.json and equivalences.json saved by Notepad as "Unicode" (UTF-16 LE with a mark)
    or as UTF-8 with a mark failed with "invalid JSON" (the mark is not JSON); they are read
    like UTF-8. Bytes that are no text give one line naming the file."""
    from kgsearch.config import load_config
    from kgsearch.errors import DataError
    from kgsearch.text.keywords import load_equivalences

    def save(path, value):
        text = json.dumps(value, ensure_ascii=False)
        data = (b"\xff\xfe" + text.encode("utf-16-le") if encoding == "utf-16-le-bom"
                else text.encode(encoding))
        path.write_bytes(data)
        return path

    cfg = save(tmp_path / "config.json", {"edge_weights": {"cites": 0.5}, "note": "ñ 漢字"})
    assert load_config(cfg) == {"edge_weights": {"cites": 0.5}, "note": "ñ 漢字"}
    eq = save(tmp_path / "equivalences.json", {"Säule": ["Column"]})
    assert load_equivalences(eq) == {"säule": ["Column"]}

    bad = tmp_path / "broken.json"
    bad.write_bytes(b'{"a": "\xff\xfe\xfa"}')
    for load in (load_config, load_equivalences):
        with pytest.raises(DataError) as err:
            load(bad)
        assert str(bad) in str(err.value) and "save the file as UTF-8" in str(err.value)
        assert "\n" not in str(err.value)
