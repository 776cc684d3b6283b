"""docs/graph-queries.md's demo block (moved there from the README by issue 25) is the demo index's
real output (``path`` and ``communities``); a change that moves it must update the doc too."""
from __future__ import annotations

from pathlib import Path

from kgsearch.cli import main

README = (Path(__file__).resolve().parent.parent / "docs" / "graph-queries.md").read_text(encoding="utf-8")


def _session(marker: str) -> dict[str, list[str]]:
    """``{command: output lines}`` of the ``$ kgsearch ...`` block after ``marker``."""
    start = README.index(marker)
    a = README.index("```\n", README.index("Real output", start)) + 4
    out: dict[str, list[str]] = {}
    cmd = None
    for line in README[a:README.index("```\n", a)].splitlines():
        if line.startswith("$ "):
            cmd = line[2:]
            out[cmd] = []
        else:
            out[cmd].append(line)
    return out


def test_readme_graph_block_is_real_output(tmp_path, capsys):
    import shlex

    db = str(tmp_path / "demo.db")
    assert main(["demo", "x", "--db", db, "-q"]) == 0
    capsys.readouterr()
    blocks = _session("## On the demo index")
    assert len(blocks) == 2
    for cmd, want in blocks.items():
        args = shlex.split(cmd)[1:] + ["--db", db]
        assert main(args) == 0
        assert capsys.readouterr().out.splitlines() == want, cmd
