"""A mixed-language vault of real public text: Sphinx's message catalogues, one note per language.

    pip download --no-deps --no-binary :all: sphinx -d /tmp/sphinx-sdist
    tar -xzf /tmp/sphinx-sdist/sphinx-*.tar.gz -C /tmp/sphinx-sdist
    python bench/mixed_vault.py /tmp/sphinx-sdist/sphinx-*/sphinx/locale [--out DIR] [--md FILE]

Each ``<lang>/LC_MESSAGES/sphinx.po`` (Sphinx, BSD-2-Clause; translators named in each file)
becomes ``<out>/<lang>.md``: a note titled ``Sphinx messages (<lang>)`` whose body is every
translated message (``msgstr``), one paragraph each; ``sphinx.pot`` gives the English note
(the ``msgid`` strings). The vault is indexed with the default settings into a fresh index,
then the example queries below (several languages and scripts) are run; the script prints the
top 3 of each and exits 1 if indexing or any search raises. ``--md`` writes the table
(the README quotes it). ``po_messages`` is used by the test that builds the small fixture
(``tests/data/mixed_po``).
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (query, language of the note it should find first)
QUERIES = [
    ("ソースディレクトリ", "ja"), ("テーマ", "ja"), ("出力先", "ja"),
    ("源目录", "zh_CN"), ("主题", "zh_CN"), ("扩展", "zh_CN"),
    ("디렉터리", "ko"), ("확장", "ko"),
    ("Quellverzeichnis", "de"), ("répertoire source", "fr"), ("каталог", "ru"),
    ("source directory", "en"), ("theme option", "en"),          # en_GB, en_HK... count as English
]


def _unquote(s: str) -> str:
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return s.strip('"')


def po_messages(path: Path) -> list[tuple[str, str]]:
    """``(msgid, msgstr)`` pairs of a .po/.pot file (multi-line strings joined; the header and
    plural forms beyond the first left out)."""
    out: list[tuple[str, str]] = []
    cur: dict[str, str] = {}
    key = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() + [""]:
        line = line.strip()
        m = re.match(r'^(msgid|msgstr|msgstr\[0\]|msgid_plural|msgstr\[\d+\])\s+(".*")$', line)
        if m:
            if m.group(1) == "msgid" and "msgid" in cur:
                out.append((cur.get("msgid", ""), cur.get("msgstr", cur.get("msgstr[0]", ""))))
                cur = {}
            key = m.group(1)
            cur[key] = _unquote(m.group(2))
        elif line.startswith('"') and key:
            cur[key] += _unquote(line)
        elif not line:
            key = None
    if "msgid" in cur:
        out.append((cur.get("msgid", ""), cur.get("msgstr", cur.get("msgstr[0]", ""))))
    return [(i, s) for i, s in out if i]


def write_vault(locale: Path, out: Path, langs: list[str] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = []
    pot = locale / "sphinx.pot"
    if pot.is_file():
        msgs = [i for i, _ in po_messages(pot)]
        files.append(_note(out / "en.md", "en", msgs))
    for po in sorted(locale.glob("*/LC_MESSAGES/sphinx.po")):
        lang = po.parts[-3]
        if langs and lang not in langs:
            continue
        msgs = [s for _, s in po_messages(po) if s]
        if msgs:
            files.append(_note(out / f"{lang}.md", lang, msgs))
    return files


def _note(path: Path, lang: str, msgs: list[str]) -> Path:
    body = "\n\n".join(m.replace("\n", " ").strip() for m in msgs)
    path.write_text(f"# Sphinx messages ({lang})\n\n{body}\n", encoding="utf-8")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("locale", type=Path, help="sphinx/locale of an unpacked Sphinx sdist")
    ap.add_argument("--out", type=Path, default=None, help="vault folder (default: a temporary one)")
    ap.add_argument("--md", type=Path, default=None)
    args = ap.parse_args()
    from kgsearch import search
    from kgsearch.indexer import index_paths

    with tempfile.TemporaryDirectory() as tmp:
        vault = args.out or Path(tmp) / "vault"
        files = write_vault(args.locale, vault)
        db = Path(tmp) / "mixed.db"
        t0 = time.perf_counter()
        rep = index_paths(db, [str(vault)])
        secs = time.perf_counter() - t0
        print(f"{len(files)} notes ({sum(f.stat().st_size for f in files) / 1e6:.1f} MB), "
              f"{rep.nodes_added} nodes indexed in {secs:.1f} s")
        rows, bad = [], 0
        for q, lang in QUERIES:
            res = search(q, db=db, k=3)
            keys = [h.key.split(":", 1)[-1].split("#")[0] for h in res.hits]
            first = keys[0] if keys else "-"
            ok = first == lang or (lang == "en" and first.startswith("en_"))
            bad += not ok
            rows.append((q, lang, ", ".join(keys), "yes" if ok else "no"))
            print(f"{q!r:28} want {lang:6} got {keys}")
    if args.md:
        md = ["| query | note wanted | top 3 | first? |", "|---|---|---|---|"]
        md += [f"| {q} | {lang} | {top} | {ok} |" for q, lang, top, ok in rows]
        args.md.write_text("\n".join(md) + "\n", encoding="utf-8")
    print(json.dumps({"notes": len(files), "queries": len(rows), "first": len(rows) - bad}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
