"""The README stays a user's page and the docs stay connected (issue 25): the README is at most
350 lines; every relative link in the README, termux/README.md and docs/*.md names a file of the repository (and a
heading of it, for ``file.md#anchor``); the README's command table lists exactly the CLI's
commands, with options the parser has; every ``kgsearch ...`` line of the README's shell blocks
is accepted by the parser (it is not run here: tests/test_readme*.py run the ones with output)."""
from __future__ import annotations

import argparse
import re
import shlex
import unicodedata
from pathlib import Path

import pytest

from kgsearch.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 350

FENCE = re.compile(r"^(```+|~~~+).*?^\1[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<img\s[^>]*\bsrc=\"([^\"]+)\"")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """The text without fenced blocks and code spans (``[x](other.md)`` there is an example)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading).strip().lower()
    text = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LNM")
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        s = _slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Relative links of a Markdown file that name no file (or no heading) of the repository."""
    bad = []
    for m in LINK.finditer(_prose(path.read_text(encoding="utf-8"))):
        target = m.group(1) or m.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):        # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        try:
            dest.relative_to(root.resolve())
        except ValueError:
            bad.append(f"{target} (outside the repository)")
            continue
        if not dest.exists():
            bad.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target} (no such heading)")
    return bad


def test_the_readme_is_at_most_350_lines():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, (f"README.md has {n} lines (at most {MAX_README_LINES}): move detail to a "
                                   "docs/*.md page and link it")


@pytest.mark.parametrize("path", [README, ROOT / "termux" / "README.md", *DOCS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def test_the_link_check_catches_a_missing_file_a_missing_heading_and_skips_code(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## The `x` part: one, two\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text("[ok](docs/a.md) [ok](docs/a.md#the-x-part-one-two) [web](https://example.org/x.md)\n"
                    "[gone](docs/b.md) [bad](docs/a.md#nope) `[code](c.md)` [self](#top)\n"
                    "<img src=\"docs/pic.png\">\n```\n[fenced](d.md)\n```\n# Top\n", encoding="utf-8")
    assert broken_links(page, tmp_path) == ["docs/b.md", "docs/a.md#nope (no such heading)", "docs/pic.png"]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _options(p: argparse.ArgumentParser) -> set[str]:
    """A command's option strings, its subcommands' included (``model pull --dest``)."""
    out = set()
    for a in p._actions:
        out.update(a.option_strings)
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                out |= _options(sp)
    return out


def _command_table() -> dict[str, str]:
    """``{command: its main options cell}`` of the README's "## Commands" table."""
    text = README.read_text(encoding="utf-8")
    table = text.split("\n## Commands\n", 1)[1].strip().split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows[cells[0].strip("`").split()[0]] = cells[2]
    return rows


def test_the_command_table_lists_every_command_with_real_options():
    rows, subs = _command_table(), _subparsers()
    assert sorted(rows) == sorted(subs)
    for name, cell in rows.items():
        have = _options(subs[name])
        named = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", cell.replace("same as search", "")))
        assert named <= have, (name, named - have)


def _readme_commands() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"^```(?:sh|bash)\n(.*?)^```", text, re.S | re.M):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            seg: list[str] = []
            for w in words + ["&&"]:
                if w in ("&&", "|", ";"):
                    if seg and seg[0] == "kgsearch":
                        cut = next((i for i, x in enumerate(seg) if x in ("<", ">")), len(seg))
                        out.append(seg[1:cut])
                    seg = []
                else:
                    seg.append(w)
    return out


def test_every_readme_command_line_parses():
    commands = _readme_commands()
    assert len(commands) >= 25 and ["demo", "how do I back up my notes"] in commands
    parser = build_parser()
    for args in commands:
        try:
            parser.parse_args(args)
        except SystemExit:
            pytest.fail(f"README: `kgsearch {shlex.join(args)}` is not a valid command line")


def _choices_in(cell: str) -> dict[str, set[str]]:
    r"""``--opt a\|b\|c`` of a command table cell: ``{"--opt": {"a", "b", "c"}}``."""
    return {opt: set(vals.split("\\|")) for opt, vals in re.findall(r"(--[a-z][\w-]*) ([\w.-]+(?:\\\|[\w.-]+)+)", cell)}


def test_the_command_table_lists_each_option_s_real_choices():
    """The README listed ``index --format kg|triples|markdown|python|text|beir`` long after
    seven code loaders joined (and argparse refused them): every list of values in the table is
    the option's choices."""
    rows, subs = _command_table(), _subparsers()
    checked = 0
    for name, cell in rows.items():
        actions = {o: a for a in subs[name]._actions for o in a.option_strings}
        for opt, vals in _choices_in(cell).items():
            choices = actions[opt].choices if opt in actions else None
            if choices is None:
                continue                                  # (a value's shape, as --model PATH|NAME)
            assert vals == {str(c) for c in choices}, (name, opt, sorted(vals ^ {str(c) for c in choices}))
            checked += 1
    assert checked >= 5


def test_the_choices_check_reads_a_cell():
    assert _choices_in(r"`--format kg\|python`, `--full`, `--stemmer porter2\|none`") == {
        "--format": {"kg", "python"}, "--stemmer": {"porter2", "none"}}
