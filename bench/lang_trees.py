"""Real source trees in the new languages, indexed with default settings and no flags.

Every tree is indexed from scratch by one fresh ``kgsearch index TREE --db DB`` process (the
console script of the running environment, no other flag), and the counts are read back from
the database. Per tree: exit code, files indexed and failed, warnings, nodes (code nodes: module,
class, function, method), edges by type and the share of ``calls``/``imports`` resolved inside the
tree, source MB, wall time, source MB/s, and peak RSS (``ru_maxrss`` of the index process from
``os.wait4``: the largest single process, the index process or one of its loader workers).

Trees (:data:`TREES`): the 13 repositories of ``../shared/bench/code-tasks-multi/repos`` read in
place, and other real trees fetched with the ordinary clients into ``--scratch`` (outside the
repository; default ``../lang-scratch``): npm tarballs (``npm pack NAME@VERSION``) for
JavaScript and TypeScript, and for Kotlin (the ``android/`` folders of React Native and Expo
packages); Debian's ``php-*`` packages for PHP and ``ruby-*`` ones for Ruby; Debian packages (``apt-get download``, unpacked with ``dpkg-deb -x``):
``golang-*-dev`` (Go source under /usr/share/gocode), ``librust-*-dev`` (crates under
/usr/share/cargo/registry), C/C++ ``-dev`` packages and googletest's sources, and the JDK's own
Java sources (``openjdk-17-source``: two packages of its ``src.zip``). Fetching happens only when
a tree is missing; ``--offline`` never fetches.

    python bench/lang_trees.py [--only NAME,...] [--offline] [--fetch-only] [--scratch DIR] [--name lang_trees]

Writes ``<name>.json`` and ``<name>.md`` into ``--out-dir`` (default bench/results).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared"))
MULTI = SHARED / "bench" / "code-tasks-multi" / "repos"
SOURCE_EXT = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".go", ".rs", ".java", ".kt", ".kts", ".php", ".rb", ".c",
              ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".inl", ".ipp")

# name -> (how, package, path of the tree inside what was fetched)
TREES = {
    "npm-lodash": ("npm", "lodash@4.17.21", "package"),
    "npm-moment": ("npm", "moment@2.30.1", "package/src"),
    "npm-rxjs": ("npm", "rxjs@7.8.1", "package/src"),
    "npm-zod": ("npm", "zod@3.23.8", "package/lib"),
    "npm-commander": ("npm", "commander@12.1.0", "package"),
    "npm-preact": ("npm", "preact@10.23.2", "package/src"),
    "npm-immer": ("npm", "immer@10.1.1", "package/src"),
    "npm-ajv": ("npm", "ajv@8.17.1", "package/lib"),
    "go-cobra": ("deb", "golang-github-spf13-cobra-dev", "usr/share/gocode/src/github.com/spf13/cobra"),
    "go-mux": ("deb", "golang-github-gorilla-mux-dev", "usr/share/gocode/src/github.com/gorilla/mux"),
    "go-testify": ("deb", "golang-github-stretchr-testify-dev", "usr/share/gocode/src/github.com/stretchr/testify"),
    "go-errors": ("deb", "golang-github-pkg-errors-dev", "usr/share/gocode/src/github.com/pkg/errors"),
    "go-cmp": ("deb", "golang-github-google-go-cmp-dev", "usr/share/gocode/src/github.com/google/go-cmp"),
    "rs-serde": ("deb", "librust-serde-dev", "usr/share/cargo/registry/serde-*"),
    "rs-regex": ("deb", "librust-regex-dev", "usr/share/cargo/registry/regex-*"),
    "rs-anyhow": ("deb", "librust-anyhow-dev", "usr/share/cargo/registry/anyhow-*"),
    "rs-itertools": ("deb", "librust-itertools-dev", "usr/share/cargo/registry/itertools-*"),
    "rs-rand": ("deb", "librust-rand-dev", "usr/share/cargo/registry/rand-*"),
    "cpp-fmt-headers": ("deb", "libfmt-dev", "usr/include/fmt"),
    "cpp-spdlog": ("deb", "libspdlog-dev", "usr/include/spdlog"),
    "cpp-googletest": ("deb", "googletest", "usr/src/googletest"),
    "c-zstd-headers": ("deb", "libzstd-dev", "usr/include"),
    "c-jansson-headers": ("deb", "libjansson-dev", "usr/include"),
    "java-jdk-util": ("jdk", "openjdk-17-source", "java.base/java/util"),
    "java-jdk-net": ("jdk", "openjdk-17-source", "java.base/java/net"),
    # Kotlin: the Android sides of React Native and Expo packages (Kotlin with some Java and C++)
    "kt-expo-modules-core": ("npm", "expo-modules-core@58.1.0", "package/android"),
    "kt-rn-screens": ("npm", "react-native-screens@4.30.1", "package/android"),
    "kt-rn-gesture-handler": ("npm", "react-native-gesture-handler@3.5.0", "package/android"),
    "kt-rn-reanimated": ("npm", "react-native-reanimated@4.8.0", "package/android"),
    "kt-expo-camera": ("npm", "expo-camera@57.0.6", "package/android"),
    "kt-rn-async-storage": ("npm", "@react-native-async-storage/async-storage@3.1.1", "package/android"),
    # PHP: Debian's php-* packages carry the libraries' sources under /usr/share/php
    "php-symfony-console": ("deb", "php-symfony-console", "usr/share/php/Symfony/Component/Console"),
    "php-monolog": ("deb", "php-monolog", "usr/share/php/Monolog"),
    "php-league-commonmark": ("deb", "php-league-commonmark", "usr/share/php/League/CommonMark"),
    "php-doctrine-dbal": ("deb", "php-doctrine-dbal", "usr/share/php/Doctrine/DBAL"),
    "php-twig": ("deb", "php-twig", "usr/share/php/Twig"),
    "php-phpunit": ("deb", "phpunit", "usr/share/php/PHPUnit"),
    "php-roundcube": ("deb", "roundcube-core", "usr/share/roundcube"),
    # Ruby: Debian's ruby-* packages carry each gem's lib/ under rubygems-integration
    **{f"rb-{name}": ("deb", pkg, f"usr/share/rubygems-integration/all/gems/{gem}") for name, pkg, gem in (
        ("rack", "ruby-rack", "rack-2.2.22"), ("thor", "ruby-thor", "thor-1.2.1"),
        ("rspec-core", "ruby-rspec-core", "rspec-core-3.12.0"), ("rake", "rake", "rake-13.0.6"),
        ("i18n", "ruby-i18n", "i18n-1.10.0"), ("mustermann", "ruby-mustermann", "mustermann-3.0.0"),
        ("concurrent", "ruby-concurrent", "concurrent-ruby-1.1.6"), ("faraday", "ruby-faraday", "faraday-1.1.0"),
        ("rspec-expectations", "ruby-rspec-expectations", "rspec-expectations-3.12.1"),
        ("rspec-mocks", "ruby-rspec-mocks", "rspec-mocks-3.12.1"), ("sinatra", "ruby-sinatra", "sinatra-3.0.5"),
        ("rack-test", "ruby-rack-test", "rack-test-2.0.2"))},
}


def _run(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
    return r.stdout


def fetch(name: str, scratch: Path) -> Path:
    how, pkg, inner = TREES[name]
    dest = scratch / "trees" / name
    if not dest.is_dir():
        arch = scratch / "archives"
        arch.mkdir(parents=True, exist_ok=True)
        tmp = scratch / "trees" / (name + ".part")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if how == "npm":
            tgz = arch / _run(["npm", "pack", pkg, "--silent"], cwd=arch).strip().splitlines()[-1]
            with tarfile.open(tgz) as t:
                t.extractall(tmp, filter="data")
        else:
            debs = sorted(arch.glob(f"{pkg}_*.deb"))
            if not debs:
                _run(["apt-get", "download", pkg], cwd=arch)
                debs = sorted(arch.glob(f"{pkg}_*.deb"))
            _run(["dpkg-deb", "-x", str(debs[-1]), str(tmp)])
            if how == "jdk":
                src = next(tmp.glob("usr/lib/jvm/*/lib/src.zip"))
                with zipfile.ZipFile(src) as z:
                    z.extractall(tmp / "src", [m for m in z.namelist() if m.startswith(inner + "/")])
                inner = "src/" + inner
        found = sorted(tmp.glob(inner))
        if not found:
            raise RuntimeError(f"{name}: nothing at {inner} in {pkg}")
        found[-1].rename(dest)
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def source_bytes(tree: Path) -> tuple[int, int]:
    """(source files, bytes) of the walk's files in the new languages."""
    from kgsearch.ingest.walk import walk

    n = b = 0
    for f in walk(tree.resolve()):
        if f.rel.endswith(SOURCE_EXT):
            n += 1
            b += f.size
    return n, b


def run_index(tree: Path, db: Path) -> dict:
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    exe = shutil.which("kgsearch", path=os.path.dirname(sys.executable)) or shutil.which("kgsearch")
    t0 = time.time()
    pid = os.fork()
    if pid == 0:                              # child: the CLI, output to files
        with open(str(db) + ".out", "wb") as o, open(str(db) + ".err", "wb") as e:
            os.dup2(o.fileno(), 1)
            os.dup2(e.fileno(), 2)
            os.execv(exe, [exe, "index", str(tree), "--db", str(db)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.time() - t0
    out = Path(str(db) + ".out").read_text(errors="replace")
    err = Path(str(db) + ".err").read_text(errors="replace")
    return {"exit": os.waitstatus_to_exitcode(status), "wall_s": round(wall, 2), "rss_mb": round(ru.ru_maxrss / 1024, 1),
            "summary": (out.strip().splitlines() or [""])[-1], "stderr": err.strip().splitlines()[-6:]}


def counts(db: Path) -> dict:
    c = sqlite3.connect(db)
    try:
        files = c.execute("SELECT count(*) FROM files").fetchone()[0]
        kinds = dict(c.execute("SELECT kind, count(*) FROM nodes WHERE file_id IS NOT NULL GROUP BY kind"))
        edges = {t: (n, r) for t, n, r in c.execute(
            "SELECT type, count(*), sum(dst IS NOT NULL) FROM edges GROUP BY type")}
    finally:
        c.close()
    code = sum(kinds.get(k, 0) for k in ("module", "class", "function", "method"))
    return {"files": files, "nodes": sum(kinds.values()), "code_nodes": code, "kinds": kinds,
            "edges": sum(n for n, _ in edges.values()), "edge_types": {t: n for t, (n, _) in edges.items()},
            "resolved": {t: round(r / n, 3) for t, (n, r) in edges.items() if t in ("calls", "imports", "inherits",
                                                                                   "implements") and n}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated tree names")
    ap.add_argument("--offline", action="store_true", help="never fetch; skip missing trees")
    ap.add_argument("--fetch-only", action="store_true")
    ap.add_argument("--scratch", type=Path, default=ROOT.parent / "lang-scratch")
    ap.add_argument("--name", default="lang_trees", help="output file name without extension")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    a = ap.parse_args(argv)
    trees: dict[str, Path] = {}
    if MULTI.is_dir():
        for p in sorted(MULTI.iterdir()):
            trees[f"multi-{p.name.split('@')[0]}"] = p
    for name in TREES:
        trees[name] = a.scratch / "trees" / name
    if a.only:
        keep = a.only.split(",")
        trees = {k: v for k, v in trees.items() if any(x in k for x in keep)}
    rows = []
    for name, path in trees.items():
        if name in TREES and not path.is_dir():
            if a.offline:
                print(f"{name}: missing, skipped (--offline)", file=sys.stderr)
                continue
            try:
                path = fetch(name, a.scratch)
            except (RuntimeError, OSError, StopIteration, subprocess.SubprocessError) as exc:
                print(f"{name}: fetch failed: {exc}", file=sys.stderr)
                rows.append({"tree": name, "fetch_error": str(exc)[:300]})
                continue
        if a.fetch_only:
            continue
        db = a.scratch / "db" / f"{name}.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        nsrc, nbytes = source_bytes(path)
        load = os.getloadavg()[0]
        r = run_index(path, db)
        row = {"tree": name, "path": str(path), "source_files": nsrc, "source_mb": round(nbytes / 1e6, 2),
               "load_before": round(load, 2), **r, **(counts(db) if r["exit"] == 0 else {})}
        row["mb_per_s"] = round(nbytes / 1e6 / r["wall_s"], 2) if r["wall_s"] else None
        rows.append(row)
        print(f"{name}: exit {r['exit']} {row.get('files')} files {row.get('nodes')} nodes {row.get('edges')} edges "
              f"{r['wall_s']} s {r['rss_mb']} MB", flush=True)
    if a.fetch_only:
        return 0
    md = ["| tree | exit | source files | source MB | files indexed | nodes (code) | edges | calls resolved | "
          "imports resolved | wall s | MB/s | peak RSS MB | load |", "|---" * 13 + "|"]
    for r in rows:
        if "fetch_error" in r:
            md.append(f"| {r['tree']} | fetch failed | | | | | | | | | | | |")
            continue
        res = r.get("resolved", {})
        md.append(f"| {r['tree']} | {r['exit']} | {r['source_files']} | {r['source_mb']} | {r.get('files', '-')} | "
                  f"{r.get('nodes', '-')} ({r.get('code_nodes', '-')}) | {r.get('edges', '-')} | "
                  f"{res.get('calls', '-')} | {res.get('imports', '-')} | {r['wall_s']} | {r['mb_per_s']} | "
                  f"{r['rss_mb']} | {r['load_before']} |")
    failed = [r["tree"] for r in rows if r.get("exit") not in (0, None) or "fetch_error" in r]
    head = (f"# Real source trees, default settings\n\n`python bench/lang_trees.py` ({time.strftime('%Y-%m-%d')}, "
            f"{platform.machine()}, {os.cpu_count()} cores, shared machine: load shown per tree). One fresh "
            f"`kgsearch index TREE --db DB` per tree, no flag. Failures: {', '.join(failed) or 'none'}.\n\n")
    a.out_dir.mkdir(parents=True, exist_ok=True)
    (a.out_dir / f"{a.name}.md").write_text(head + "\n".join(md) + "\n", encoding="utf-8")
    (a.out_dir / f"{a.name}.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print("\n".join(md))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
