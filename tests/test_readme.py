"""The README's demo output and docs/ranking.md's worked ``--explain`` are what the code prints
(ranks, names, scores, explain lines).

Both blocks are the demo index's real output; ranking changes that move them must update the
README or docs/ranking.md too.
"""
from __future__ import annotations

import re
from pathlib import Path

from kgsearch.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
RANKING = (ROOT / "docs" / "ranking.md").read_text(encoding="utf-8")
HIT = re.compile(r"^ ?\d+\. .+  \[\w+\]  [\d.]+  [\w+]+$")
EXPLAIN = re.compile(r"^\s+(?:\w+\s+score .*|= .*|\+ shift .*)$")


def _block_after(marker: str, text: str = README) -> list[str]:
    start = text.index(marker)
    a = text.index("```\n", start) + 4
    return text[a:text.index("```\n", a)].splitlines()


NUM = re.compile(r"[-+]?\d+\.\d+")


def _same(got: list[str], want: list[str], tol: float = 2e-3) -> None:
    """Lines equal word for word, decimals within ``tol`` (BLAS/libm may round the last digit
    differently on another CPU, e.g. a phone)."""
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert NUM.sub("#", g).split() == NUM.sub("#", w).split(), (g, w)
        gn, wn = [float(x) for x in NUM.findall(g)], [float(x) for x in NUM.findall(w)]
        assert all(abs(a - b) <= tol for a, b in zip(gn, wn)), (g, w)


def _significant(lines, pattern) -> list[str]:
    # README lines may carry '# comments' to the right; the code's output has none
    return [re.sub(r"\s+#.*$", "", ln).rstrip() for ln in lines if pattern.match(re.sub(r"\s+#.*$", "", ln))]


def _intent_line(lines) -> str:
    """The intent line without its time: the weights the search fused with, fusion, channels."""
    line = next(ln for ln in lines if ln.startswith("(intent "))
    return line.rsplit(", ", 1)[0]


def test_readme_demo_block_is_real_output(tmp_path, capsys):
    db = str(tmp_path / "demo.db")
    assert main(["demo", "how do I back up my notes", "--db", db]) == 0
    out = capsys.readouterr().out.splitlines()
    readme = _significant(_block_after("The first prints"), HIT)
    assert len(readme) == 3
    _same(_significant(out, HIT)[:3], readme)
    assert _intent_line(out) == _intent_line(_block_after("The first prints"))


def test_readme_explain_block_is_real_output(tmp_path, capsys):
    db = str(tmp_path / "demo.db")
    assert main(["demo", "why does sync fail at night", "--explain", "-k", "2", "--db", db]) == 0
    out = capsys.readouterr().out.splitlines()
    block = _block_after("A worked `--explain`", RANKING)
    readme_hits, readme_parts = _significant(block, HIT), _significant(block, EXPLAIN)
    assert len(readme_hits) == 2 and len(readme_parts) == 11
    _same(_significant(out, HIT), readme_hits)
    _same(_significant(out, EXPLAIN)[:11], readme_parts)          # the first hit's explanation
    assert _intent_line(out) == _intent_line(block)
