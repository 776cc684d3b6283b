"""Loader speed in source MB per second: every source-language loader against the Python loader,
on the same machine in the same run.

Files: what kgsearch's walk yields for ``../shared/bench/code-tasks-multi/repos`` (JavaScript,
TypeScript, Go, Rust, Java, C, C++) and ``../shared/bench/code-tasks/repos`` (Python), read into
memory first. Each round loads every file once with its loader (in this process, as a loader
worker does: decode, lex, scan, build nodes and edges), the languages in turn, rounds
interleaved; MB/s per language is source bytes over the median round time. The ratio to the
Python loader is the figure that matters (the machine is shared: absolute times are noisy,
the load is recorded).

    python bench/lang_speed.py [--rounds 3] [--trees DIR ...] [--name lang_speed] [--out-dir bench/results]

``--trees`` adds other trees (Kotlin, C#, PHP and Ruby have no repository in the shared sets: the trees
of bench/results/lang_kotlin.md, lang_csharp.md, lang_php.md and lang_ruby.md). Writes ``<name>.json`` and ``<name>.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared"))
TREES = [SHARED / "bench" / "code-tasks-multi" / "repos", SHARED / "bench" / "code-tasks" / "repos"]
LANGS = ("python", "javascript", "typescript", "go", "rust", "java", "kotlin", "csharp", "php", "ruby", "c", "cpp")


def collect(extra: list[Path] = ()) -> dict[str, list]:
    from kgsearch.ingest.walk import walk
    from kgsearch.types import LoadOptions

    files: dict[str, list] = {}
    for top in [*TREES, None]:
        for tree in (sorted(p for p in top.iterdir() if p.is_dir()) if top is not None else extra):
            tree = tree.resolve()
            for f in walk(tree):
                if f.loader in LANGS:
                    files.setdefault(f.loader, []).append((f.path, f.rel, LoadOptions(root=str(tree)), f.size))
    return files


def one_round(loader, items) -> float:
    t0 = time.perf_counter()
    for path, rel, opts, _ in items:
        loader.load(path, rel, opts)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trees", nargs="*", type=Path, default=[], help="more trees (Kotlin, C#, PHP)")
    ap.add_argument("--name", default="lang_speed", help="output file name without extension")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    a = ap.parse_args(argv)
    if not all(t.is_dir() for t in TREES):
        print(f"lang_speed: {TREES[0]} or {TREES[1]} is missing; set KGSEARCH_SHARED to the shared folder",
              file=sys.stderr)
        return 2
    from kgsearch.ingest.loaders import get_loader

    files = collect(a.trees)
    for items in files.values():                  # the page cache warm for everyone
        for path, *_ in items:
            path.read_bytes()
    times: dict[str, list[float]] = {lang: [] for lang in files}
    load = [os.getloadavg()[0]]
    for _ in range(a.rounds):
        for lang in LANGS:
            if lang in files:
                times[lang].append(one_round(get_loader(lang), files[lang]))
        load.append(os.getloadavg()[0])
    rows = {}
    for lang in LANGS:
        if lang not in files:
            continue
        mb = sum(x[3] for x in files[lang]) / 1e6
        med = statistics.median(times[lang])
        rows[lang] = {"files": len(files[lang]), "mb": round(mb, 2), "median_s": round(med, 3),
                      "mb_per_s": round(mb / med, 2), "rounds_s": [round(t, 3) for t in times[lang]]}
    py = rows["python"]["mb_per_s"]
    for r in rows.values():
        r["vs_python"] = round(r["mb_per_s"] / py, 2)
    lines = ["| loader | files | source MB | median s | MB/s | vs Python |", "|---|---|---|---|---|---|"]
    for lang, r in rows.items():
        lines.append(f"| {lang} | {r['files']} | {r['mb']} | {r['median_s']} | {r['mb_per_s']} | {r['vs_python']} |")
    more = f" --trees {' '.join(t.name for t in a.trees)}" if a.trees else ""
    head = (f"# Loader speed: source MB/s against the Python loader\n\n`python bench/lang_speed.py --rounds "
            f"{a.rounds}{more}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, shared machine, load "
            f"{min(load):.1f}-{max(load):.1f}; median of {a.rounds} interleaved rounds, one process). Python: the "
            "code-tasks snapshots; the others: the code-tasks-multi snapshots" + (" and the trees named" if more else "")
            + ". The requirement is at least 0.5.\n\n")
    a.out_dir.mkdir(parents=True, exist_ok=True)
    (a.out_dir / f"{a.name}.md").write_text(head + "\n".join(lines) + "\n", encoding="utf-8")
    (a.out_dir / f"{a.name}.json").write_text(json.dumps({"rows": rows, "load": load}, indent=1), encoding="utf-8")
    print(head + "\n".join(lines))
    return 0 if all(r["vs_python"] >= 0.5 for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
