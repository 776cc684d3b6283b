"""A definition looked up by its name: in each code-tasks-multi repository's index, 40 random
definition names (functions, methods, classes; source code, not tests or vendored; a CamelCase or
snake_case name that one definition alone has) are each searched as a query of that one word, as
a user or an agent types ``kgsearch search HasPersistentFlags``. Reported per repository: how
many rank a node of that name first, and in the top 3.

    python bench/name_lookup.py [--dbs DIR] [--per-repo 40] [--tag T] [--out-dir bench/results]

``--dbs``: the folder of the indexes (``<repo>@<commit>.db``, as bench/code_tasks_multi.py builds
them; default its work folder). The sample is fixed (seed 0, names sorted first), so two
checkouts searching the same indexes answer the same names; run each checkout with its package
first on ``PYTHONPATH`` to compare them.
"""
from __future__ import annotations

import argparse
import glob
import random
import re
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import WORK, md_table, write_results  # noqa: E402

SKIP_FLAGS = 2 | 8 | 16 | 32        # FLAG_TEST, FLAG_VENDORED, FLAG_DECLARED_TEST, FLAG_PART
NAME = re.compile(r"[A-Za-z]\w*")


def sample(db: str, n: int) -> list[str]:
    """``n`` names, each of exactly one source definition of ``db``, CamelCase or snake_case."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = c.execute("SELECT name FROM nodes WHERE kind IN ('function', 'method', 'class') AND flags & ? = 0 "
                         "GROUP BY name HAVING COUNT(*) = 1", (SKIP_FLAGS,)).fetchall()
    finally:
        c.close()
    names = sorted(r[0] for r in rows if NAME.fullmatch(r[0])
                   and (re.search(r"[a-z][A-Z]", r[0]) or "_" in r[0].strip("_")))
    random.Random(0).shuffle(names)
    return names[:n]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dbs", default=str(WORK / "code_tasks_multi"))
    ap.add_argument("--per-repo", type=int, default=40)
    ap.add_argument("--tag", default="")
    ap.add_argument("--out-dir", default=None)
    args = ap.parse_args(argv)
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    opts = SearchOptions(k=10, snippets=False, use_cache=False)
    repos = {}
    for db in sorted(glob.glob(str(Path(args.dbs) / "*@*.db"))):
        names = sample(db, args.per_repo)
        with Index.open(db, readonly=True) as ix:
            eng = Engine(ix)
            ranks = []
            for name in names:
                hits = eng.search(name, opts).hits
                ranks.append(next((i + 1 for i, h in enumerate(hits) if h.name == name), None))
        repos[Path(db).name.split("@")[0]] = {"names": names, "ranks": ranks}
    rows, first, top3, total = [], 0, 0, 0
    for repo, r in repos.items():
        f = sum(x == 1 for x in r["ranks"])
        t = sum(x is not None and x <= 3 for x in r["ranks"])
        first, top3, total = first + f, top3 + t, total + len(r["ranks"])
        rows.append([repo, len(r["ranks"]), f, t, ", ".join(n for n, x in zip(r["names"], r["ranks"]) if x != 1)[:120]])
    rows.append(["**all**", total, first, top3, ""])
    md = ["# A definition looked up by its name (`python bench/name_lookup.py`)", "",
          __doc__.split("\n\n")[0].replace("\n", " "), "",
          *md_table(["repository", "names", "first", "top 3", "names not first"], rows)]
    name = "name_lookup" + (f"_{args.tag}" if args.tag else "")
    write_results(name, {"repos": repos, "first": first, "top3": top3, "total": total}, md, args.out_dir)
    print(f"{first}/{total} first, {top3}/{total} in the top 3")
    return 0


if __name__ == "__main__":
    sys.exit(main())
