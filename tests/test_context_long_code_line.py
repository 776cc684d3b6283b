"""``kgsearch context``: a code line over 1,000 characters (a data blob in a function, a generated
table) is cut around its match in the trimmed form, as a note's long line is; before, the trimmed
form kept it whole, did not fit, and the function was cut as over budget."""
from __future__ import annotations

import textwrap

from kgsearch.context import ContextOptions, build_context
from kgsearch.context.pack import trim_code
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.query import Engine
from kgsearch.store.db import Index

BLOB = "".join(f"{i:05d}," for i in range(6000))         # 36,000 characters of data
BLOB = BLOB[:18000] + "zebrafish," + BLOB[18000:]


def _index(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "table.py").write_text(f'''"""Lookup tables."""


def lookup(key):
    """Find a key in the packed table."""
    blob = "{BLOB}"
    return blob.find(key)
''', encoding="utf-8")
    (src / "other.py").write_text(textwrap.dedent('''\
        """Other helpers."""


        def lookup_cache(name):
            """A cache in front of the lookup."""
            return name
        '''), encoding="utf-8")
    (src / "misc.py").write_text(textwrap.dedent('''\
        """Miscellaneous helpers: formatting and printing, kept apart from the table code."""


        def pad(text, width):
            """Pad the text to a width."""
            return text.ljust(width)
        '''), encoding="utf-8")
    db = tmp_path / "ix.db"
    index_paths(db, [str(src)], IndexOptions(steps=("text",)))
    return Engine(Index.open(db, readonly=True))


def test_a_long_code_line_is_cut_around_its_match(tmp_path):
    engine = _index(tmp_path)
    res = build_context(engine, task="lookup a zebrafish key in the packed table", opts=ContextOptions(budget=1000))
    line = f'    blob = "{BLOB}"'
    at = line.index("zebrafish") + len("zebrafish") // 2 - 500       # the 1,000 characters around the match
    cut_line = f"[... {at} characters cut] {line[at:at + 1000]} [... {len(line) - at - 1000} characters cut]"
    block = (
        "### table.py:4-7 · function table.lookup\n"
        "_trimmed: signature, docstring and 2 matched lines of 4, long lines cut to 1000 characters around the match_\n"
        "```python\n"
        "def lookup(key):\n"
        '    """Find a key in the packed table."""\n'
        f"{cut_line}\n"
        "    return blob.find(key)\n"
        "```\n\n")
    assert block in res.text, res.text[:2000]
    # (which of the two ranks first is BM25's: the blob's parts, kgsearch.types.FLAG_PART, lengthen
    # this five-file corpus' average text and put the function holding the match first)
    assert sorted(it["key"] for it in res.items[:2]) == ["py:table", "py:table.lookup"]
    assert res.used <= 1000


def test_a_one_line_definition_gets_a_trimmed_form():
    """A one-line definition (a lambda table, a generated function) had no trimmed form at all."""
    one = ["def f(): return '" + "x " * 1500 + "key" + " y" * 1500 + "'"]     # "key" at 3017
    f = trim_code(one, ["key"])
    assert f is not None and f.level == "trimmed"
    assert f.body == f"[... 2518 characters cut] {one[0][2518:3518]} [... 2503 characters cut]"
    assert f.note == "signature and docstring of 1 lines, long lines cut to 1000 characters around the match"
