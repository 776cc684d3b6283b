"""Code tasks: kgsearch on issue texts over whole repository snapshots, scored like
``code-tasks/score.py`` (file R@1/5/10, symbol R@10/P@10/MRR@10), with ablations, paired sign
tests against BM25 alone, latency, and a diagnosis of what pushes the gold file down.

    python bench/code_tasks.py                           # every repo, every configuration in CONFIGS
    python bench/code_tasks.py --repos flask,requests --configs default,bm25
    python bench/code_tasks.py --check                   # also score the run files with score.py
    python bench/code_tasks.py --rebuild                 # reindex even when nothing changed
    python bench/code_tasks.py --loro --set python|multi|all   # leave one repository out (code_tasks_loro.py)

Data: a folder in the code-tasks layout (``--tasks``, default ../shared/bench/code-tasks; see its
README): ``tasks/<name>/{queries.jsonl,qrels.files.tsv,qrels.symbols.tsv,meta.json}`` and
``repos/<source_tree>/``. Each snapshot folder is indexed WHOLE (tests, docs and licence files
included, default settings), as ``kgsearch index <folder>`` would, into
``bench/work/code_tasks/index/<source_tree>.db``. That index is reused while the kgsearch code
that builds indexes (``kgsearch/**/*.py`` but the query side), ``data/models``, the settings and
``$KGSEARCH_MODEL`` are unchanged
(a stamp file next to it records their hash); otherwise, or with ``--rebuild``, it is rebuilt.
Unchanged snapshot files are not reread (incremental indexing).

Per task the query is the issue text. Each configuration (the CONFIGS table) is one search with
a deep ``k``; the ranked hits give

* files: repo-relative paths in the order of their best hit (``--file-rank hits``), or the
  library's own file grouping (``--file-rank group``, the default: ``SearchOptions(group="file")``,
  when the library has it);
* symbols: code hits of kind function/method/class, as ``<path>::<qualname inside the file>``
  (see :func:`symbol_id`).

Outputs: the tables on stdout, ``<out>/code_tasks.json`` and ``<out>/code_tasks.md`` (with
``--repos``: ``code_tasks.<repos>.json|md``), and one run file per configuration in
``bench/work/code_tasks/runs/`` (the run format of score.py).

Exit codes: 0 done; 2 usage error (unknown configuration or repo, missing library option);
3 bad input (the message names the file); 1 ``--check`` found a difference with score.py.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, SHARED, WORK as _WORK, git_commit, loadavg, machine  # noqa: E402

DEFAULT_TASKS = SHARED / "code-tasks"
WORK = _WORK / "code_tasks"
KS = (1, 5, 10)
SYMBOL_KINDS = ("function", "method", "class")
GRAPH = ("graph", "intent", "local", "global")      # kgsearch.query.channels.GRAPH_CHANNELS
EXIT_USAGE, EXIT_INPUT, EXIT_CHECK = 2, 3, 1


# ---------------------------------------------------------------------------- configurations
@dataclass(frozen=True)
class Config:
    """One row of the comparison. ``channels`` None = the library's default choice;
    ``minus`` = the default channel list without these; ``options`` = other SearchOptions
    fields; ``demote`` = move hits of non-source files (tests, docs, non-code) after the
    source files (an oracle-free post-filter, see :func:`is_source_path`); ``index`` =
    "nodes" (the whole-snapshot index) or "files" (one BM25 document per file, an idea)."""
    channels: tuple[str, ...] | None = None
    minus: tuple[str, ...] = ()
    options: tuple[tuple[str, object], ...] = ()
    demote: bool = False
    index: str = "nodes"
    idea: bool = False          # not a library configuration: an oracle-free idea tried here
    symbols_from: str | None = None   # reuse this configuration's symbol list (file-only ideas)
    rrf: tuple[str, ...] = ()         # files = reciprocal-rank fusion of these configurations' files
    tuning: tuple[tuple[str, object], ...] = ()   # kgsearch.query.Tuning fields for this row
    note: str = ""


CONFIGS: dict[str, Config] = {
    "default": Config(note="the default pipeline"),
    "bm25": Config(channels=("bm25",), note="BM25 channel alone"),
    "-dense": Config(minus=("dense",)),
    "-graph": Config(minus=GRAPH, note="no graph/intent/local/global"),
    "-dense-graph": Config(minus=("dense",) + GRAPH, note="dense off without the walk (whose seeds need dense)"),
    "-pattern": Config(minus=("pattern",)),
    "-fts": Config(minus=("fts",)),
    "-anchors": Config(minus=("anchors",)),
    "+hits": Config(tuning=(("code_hits", True),), note="HITS on the walk's top nodes adjusts scores"),
    "walk.deg": Config(tuning=(("walk_degree_norm", True),), note="walk score / walk weight (degree)"),
    "walk-sim": Config(tuning=(("walk_skip", ("similar_text",)),), note="the walk skips similar_text edges"),
    "walk-contains": Config(tuning=(("walk_skip", ("contains",)),), note="the walk skips contains edges"),
    "walk-imports": Config(tuning=(("walk_skip", ("imports",)),), note="the walk skips imports edges"),
    "walk-modules": Config(tuning=(("walk_drop_kinds", ("module",)),),
                           note="module nodes' walk scores left out of the graph signal"),
    "walk-prose": Config(tuning=(("walk_code_seeds", True),), note="the code walk starts from code seeds only"),
    "walk-modcontains": Config(tuning=(("walk_skip_module_contains", True),),
                               note="the walk skips module nodes' contains edges"),
    "walk-mentions": Config(tuning=(("walk_skip", ("mentions", "links_to", "tagged")),),
                            note="the walk skips mentions/links_to/tagged edges"),
    "anchors.25": Config(tuning=(("anchor_weight", 0.25),), note="anchor evidence x 0.25 (default 0.5)"),
    "anchors1": Config(tuning=(("anchor_weight", 1.0),), note="anchor evidence x 1.0 (default 0.5)"),
    "w.30/.55/.15": Config(options=(("weights", "0.30,0.55,0.15,0"),)),
    "w.20/.65/.15": Config(options=(("weights", "0.20,0.65,0.15,0"),)),
    "w.20/.70/.10": Config(options=(("weights", "0.20,0.70,0.10,0"),)),
    "w.15/.60/.25": Config(options=(("weights", "0.15,0.60,0.25,0"),)),
    "w.25/.65/.10": Config(options=(("weights", "0.25,0.65,0.10,0"),)),
    "-pattern-fts": Config(minus=("pattern", "fts")),
    "-graph-pattern-fts": Config(minus=GRAPH + ("pattern", "fts"), note="bm25+dense"),
    "default+src": Config(demote=True, idea=True, note="default, non-source files moved last"),
    "bm25+src": Config(channels=("bm25",), demote=True, idea=True, note="bm25, non-source files moved last"),
    "bm25-files": Config(channels=("bm25",), index="files", idea=True, symbols_from="bm25",
                         note="files: kgsearch BM25F with one document per file (title = path); symbols: bm25's"),
    "bm25-files+src": Config(channels=("bm25",), index="files", demote=True, idea=True, symbols_from="bm25+src",
                             note="bm25-files, non-source files moved last; symbols: bm25+src's"),
    "-pattern-fts+src": Config(minus=("pattern", "fts"), demote=True, idea=True,
                               note="-pattern-fts, non-source files moved last"),
    "bm25+dense+src": Config(minus=GRAPH + ("pattern", "fts"), demote=True, idea=True,
                             note="-graph-pattern-fts, non-source files moved last"),
    "rrf(bm25+src,files+src)": Config(rrf=("bm25+src", "bm25-files+src"), symbols_from="bm25+src", idea=True,
                                      note="files: RRF (k 60) of bm25+src and bm25-files+src; symbols: bm25+src's"),
}
BASELINE = "bm25"
REFERENCE = "default"


def config_deps(cfg: Config) -> list[str]:
    return ([cfg.symbols_from] if cfg.symbols_from else []) + list(cfg.rrf)


def config_channels(cfg: Config, default_channels) -> list[str] | None:
    if cfg.channels is not None:
        return list(cfg.channels)
    if cfg.minus:
        return [c for c in default_channels if c not in cfg.minus]
    return None


# ---------------------------------------------------------------------------- pure helpers
def in_file_qualname(module_qual: str, qualname: str) -> str | None:
    """The qualname inside its file: kgsearch names a def ``<module>.<Class>.<meth>`` (nested
    defs ``<module>.outer.inner``, duplicates keep the qualname and get a ``#2`` key only), so
    the module's dotted name and the dot after it come off. None when it is not inside."""
    if not module_qual or not qualname.startswith(module_qual + "."):
        return None
    inner = qualname[len(module_qual) + 1:]
    return inner or None


def symbol_id(rel_path: str, module_qual: str, qualname: str) -> str | None:
    """``<repo-relative path>::<qualname inside the file>`` (the code-tasks spelling)."""
    inner = in_file_qualname(module_qual, qualname)
    return None if inner is None else f"{rel_path.replace(os.sep, '/')}::{inner}"


_DUP = re.compile(r"#\d+$")


def with_enclosing(entries: list[tuple[str, str]], is_definition, need: int = 2) -> list[str]:
    """Symbol ids, each definition that encloses ``need`` of the listed ones put right after
    the ``need``-th of them (where the list first holds that evidence). ``entries``:
    ``(symbol id, node key)`` best first, the id ``<path>::<qualname in the file>``, the key
    ending with that qualname (a ``#n`` duplicate suffix allowed). The enclosing definition
    is the qualname less its last dotted part (``Cls`` of ``Cls.meth``, the ``impl``/struct of a
    Rust or Go method, ``outer`` of ``outer.inner``); it is listed only when
    ``is_definition(key)`` says a class or function node has that key (a C++ namespace prefix
    is not one), and once (a later entry of it is dropped). Two matching members make the
    enclosing class a result in its own right, as several matching nodes make a file one
    (``--group file``); one member alone does not take a slot."""
    def parent(sid: str, key: str) -> tuple[str, str] | None:
        path, _, qual = sid.partition("::")
        qual, key = _DUP.sub("", qual), _DUP.sub("", key)
        if not key.endswith(qual) or "." not in qual:
            return None
        up = qual.rsplit(".", 1)[0]
        return f"{path}::{up}", key[:len(key) - len(qual)] + up

    members: collections.Counter = collections.Counter()
    out: list[str] = []
    seen: set[str] = set()
    for sid, key in entries:
        if sid not in seen:
            out.append(sid)
            seen.add(sid)
        up = parent(sid, key)
        if up is None:
            continue
        members[up] += 1
        if members[up] == need and up[0] not in seen and is_definition(up[1]):
            out.append(up[0])
            seen.add(up[0])
    return out


_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$")
_TEST_DIR = re.compile(r"(^|/)(tests?|testing)/")
_DOC_DIR = re.compile(r"^(docs?|examples?)/")
_CODE_EXT = (".py", ".pyi")


def is_source_path(rel: str) -> bool:
    """Source code, not tests, docs, examples or non-code files, from the path alone (word
    boundaries: ``latest.py`` and ``contest/`` are source). The rule a code-search tool can
    apply to any repository; it does not read the task set's candidate list."""
    rel = rel.replace("\\", "/")
    if not rel.endswith(_CODE_EXT):
        return False
    return not (_TEST_FILE.search(rel) or _TEST_DIR.search(rel) or _DOC_DIR.match(rel))


def file_category(rel: str, candidates: set[str] | None = None) -> str:
    """For the diagnosis: source (a candidate file of the task set, or source by path when no
    list is given), test, doc, other-code (e.g. examples, scripts, setup.py), non-code."""
    rel = rel.replace("\\", "/")
    if not rel.endswith(_CODE_EXT):
        return "non-code"
    if _TEST_FILE.search(rel) or _TEST_DIR.search(rel):
        return "test"
    if re.match(r"^docs?/", rel):
        return "doc"
    if candidates is not None:
        return "source" if rel in candidates else "other-code"
    return "source" if is_source_path(rel) else "other-code"


def rrf_merge(lists: list[list[str]], k: int = 60) -> list[str]:
    """Reciprocal-rank fusion: score(x) = sum over lists of 1 / (k + rank), ties by first list order."""
    score: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    for li, xs in enumerate(lists):
        for r, x in enumerate(dedup(xs), 1):
            score[x] = score.get(x, 0.0) + 1.0 / (k + r)
            first.setdefault(x, (r, li))
    return sorted(score, key=lambda x: (-score[x], first[x]))


def dedup(xs) -> list:
    seen, out = set(), []
    for x in xs or []:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def demote(paths: list[str], keep=is_source_path) -> list[str]:
    """Stable partition: the paths ``keep`` accepts first, the others after, each in order."""
    return [p for p in paths if keep(p)] + [p for p in paths if not keep(p)]


def task_metrics(files: list[str], symbols: list[str], gold_files: list[str], gold_symbols: list[str]) -> dict:
    """score.py's per-task definitions (lists deduplicated, first occurrence kept)."""
    files, symbols = dedup(files), dedup(symbols)
    m: dict[str, float] = {}
    gold = set(gold_files)
    if gold:
        for k in KS:
            m[f"file_R@{k}"] = len(gold & set(files[:k])) / len(gold)
    gs = set(gold_symbols)
    if gs:
        top = symbols[:10]
        hit = len(gs & set(top))
        m["sym_R@10"] = hit / len(gs)
        m["sym_P@10"] = hit / 10
        m["sym_P@10_max"] = min(len(gs), 10) / 10
        m["sym_MRR@10"] = next((1 / (i + 1) for i, s in enumerate(top) if s in gs), 0.0)
    return m


METRICS = [f"file_R@{k}" for k in KS] + ["sym_R@10", "sym_P@10", "sym_MRR@10", "sym_P@10_max"]


def aggregate(rows: list[dict]) -> dict:
    """Micro average over tasks, as score.py: file metrics over tasks with gold files, symbol
    metrics over tasks with gold symbols."""
    out = {"n": sum(1 for m in rows if "file_R@1" in m), "n_sym": sum(1 for m in rows if "sym_R@10" in m)}
    for k in METRICS:
        vals = [m[k] for m in rows if k in m]
        out[k] = sum(vals) / len(vals) if vals else None
    return out


def first_rank(ranked: list[str], gold) -> int | None:
    """1-based rank of the first gold item in a deduplicated list, None if absent."""
    gold = set(gold)
    return next((i + 1 for i, x in enumerate(dedup(ranked)) if x in gold), None)


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact binomial sign test (ties dropped): P(X <= min | n, 1/2) doubled, capped at 1."""
    n = wins + losses
    if n == 0:
        return 1.0
    lo = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(lo + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(a: list, b: list, lower_is_better: bool) -> dict:
    """Per-task comparison of ``a`` against ``b`` (None = worst: absent). Wins for ``a``."""
    w = l = t = 0
    for x, y in zip(a, b):
        if lower_is_better:
            x = math.inf if x is None else x
            y = math.inf if y is None else y
            better, worse = x < y, x > y
        else:
            better, worse = x > y, x < y
        if better:
            w += 1
        elif worse:
            l += 1
        else:
            t += 1
    return {"wins": w, "losses": l, "ties": t, "p": sign_test_p(w, l)}


def percentiles(ms: list[float]) -> dict:
    """p50 / p95 by the nearest-rank method, and max (milliseconds)."""
    if not ms:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    v = sorted(ms)

    def pct(p):
        return round(v[max(0, math.ceil(p / 100 * len(v)) - 1)], 1)

    return {"n": len(v), "p50": pct(50), "p95": pct(95), "max": round(v[-1], 1)}


# ---------------------------------------------------------------------------- task set
class BadInput(Exception):
    """Unreadable task data (exit 3); the message names the file."""


class Usage(Exception):
    """A command-line choice that cannot work (exit 2)."""


@dataclass
class Task:
    qid: str
    text: str
    folder: str                 # task folder name (e.g. psf__requests)
    repo: str
    fix_status: str
    split: str | None
    gold_files: list[str]
    gold_symbols: list[str]


@dataclass
class Repo:
    name: str                   # task folder name
    repo: str                   # owner/name
    snapshot: Path
    tasks: list[Task] = field(default_factory=list)
    candidates: set[str] = field(default_factory=set)


def _read_qrels(path: Path) -> dict[str, list[str]]:
    rel: dict[str, list[str]] = collections.OrderedDict()
    with open(path, encoding="utf-8") as f:
        head = f.readline()
        if not head.startswith("query-id"):
            raise BadInput(f"{path}:1: expected the header 'query-id<TAB>corpus-id<TAB>score'")
        for n, line in enumerate(f, 2):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise BadInput(f"{path}:{n}: expected 3 tab-separated fields, got {len(parts)}")
            q, d, s = parts
            if int(s) > 0:
                rel.setdefault(q, []).append(d)
    return rel


def load_tasks(tasks_root: Path, repos_filter: list[str] | None = None) -> list[Repo]:
    tdir = tasks_root / "tasks"
    if not tdir.is_dir():
        raise BadInput(f"{tdir}: no tasks/ folder; --tasks must point at a code-tasks folder (see its README)")
    split_of = {}
    idx = tasks_root / "index.json"
    if idx.is_file():
        for e in json.loads(idx.read_text(encoding="utf-8")):
            split_of[Path(e.get("task_dir", "")).name] = e.get("swebench_lite_split")
    out = []
    for d in sorted(p for p in tdir.iterdir() if (p / "queries.jsonl").is_file()):
        meta_path = d / "meta.json"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            tree = meta["source_tree"]
        except (OSError, ValueError, KeyError) as exc:
            raise BadInput(f"{meta_path}: cannot read 'source_tree' ({exc}); every task folder needs a meta.json "
                           "naming its snapshot folder under repos/") from None
        snap = tasks_root / "repos" / tree
        repo = Repo(name=d.name, repo=meta.get("repo", d.name), snapshot=snap)
        if repos_filter and not any(f in d.name or f in repo.repo or f in tree for f in repos_filter):
            continue
        if not snap.is_dir():
            raise BadInput(f"{meta_path}: snapshot folder {snap} is missing")
        files = _read_qrels(d / "qrels.files.tsv")
        syms = _read_qrels(d / "qrels.symbols.tsv") if (d / "qrels.symbols.tsv").is_file() else {}
        cand = d / "corpus.files.txt"
        if cand.is_file():
            repo.candidates = {x.strip() for x in cand.read_text(encoding="utf-8").splitlines() if x.strip()}
        with open(d / "queries.jsonl", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    q = json.loads(line)
                    qid, text = str(q["_id"]), str(q["text"])
                except (ValueError, KeyError) as exc:
                    raise BadInput(f"{d / 'queries.jsonl'}:{n}: expected {{\"_id\", \"text\"}} ({exc})") from None
                repo.tasks.append(Task(qid=qid, text=text, folder=d.name, repo=repo.repo,
                                       fix_status=q.get("metadata", {}).get("fix_status_at_snapshot", "unknown"),
                                       split=split_of.get(d.name), gold_files=files.get(qid, []),
                                       gold_symbols=syms.get(qid, [])))
        out.append(repo)
    if repos_filter:
        unknown = [f for f in repos_filter if not any(f in r.name or f in r.repo for r in out)]
        if unknown:
            raise Usage(f"no task folder matches --repos {','.join(unknown)}")
    return out


# ---------------------------------------------------------------------------- indexes
def code_fingerprint(settings: dict) -> str:
    """Hash of what an index depends on: the kgsearch code that builds indexes (not the query
    side: query/, intent, fuse, pack, cli, apps), the shipped models, the settings."""
    h = hashlib.sha1()
    query_side = {"query", "cli", "fuse.py", "pack.py", "evaluate.py", "bench.py", "demo.py",
                  "stats.py", "context", "mcp", "__main__.py"}
    paths = sorted(p for p in (ROOT / "kgsearch").rglob("*.py")
                   if p.relative_to(ROOT / "kgsearch").parts[0] not in query_side)
    models = ROOT / "data" / "models"
    if models.is_dir():
        paths += sorted(p for p in models.rglob("*") if p.is_file())
    for p in paths:
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
    h.update(json.dumps(settings, sort_keys=True).encode())
    h.update(os.environ.get("KGSEARCH_MODEL", "").encode())
    return h.hexdigest()[:16]


def _drop_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".lock"):
        p = Path(str(db) + suffix)
        if p.exists():
            p.unlink()


def ensure_index(db: Path, paths: list[str], settings: dict, rebuild: bool, fmt: str | None = None) -> dict:
    """(Re)index ``paths`` into ``db``; a full rebuild when the fingerprint changed."""
    from kgsearch.indexer import IndexOptions, index_paths

    stamp = Path(str(db) + ".stamp.json")
    fp = code_fingerprint(settings)
    old = json.loads(stamp.read_text()) if stamp.is_file() else {}
    fresh = rebuild or old.get("fingerprint") != fp or old.get("paths") != paths or not db.exists()
    if fresh:
        _drop_db(db)
        stamp.unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    rep = index_paths(db, paths, IndexOptions(fmt=fmt, settings=dict(settings)))
    if rep.files_failed:
        raise BadInput(f"{db}: {rep.files_failed} files failed to index: {rep.warnings[:3]}")
    if fresh:
        stamp.write_text(json.dumps({"fingerprint": fp, "paths": paths, "built": time.strftime("%Y-%m-%d %H:%M"),
                                     "seconds": rep.seconds}))
    built = rep.seconds if fresh else old.get("seconds")
    return {"db": str(db.relative_to(ROOT)) if db.is_relative_to(ROOT) else str(db), "rebuilt": fresh,
            "seconds": rep.seconds, "build_seconds": built, "files_loaded": rep.files_loaded,
            "files_seen": rep.files_seen, "warnings": len(rep.warnings)}


def file_corpus(repo: Repo) -> Path:
    """A BEIR corpus of the snapshot's files (one document per code file, title = path) for the
    whole-file BM25 idea; rewritten only when a file changed."""
    out = WORK / "files" / f"{repo.snapshot.name}.corpus.jsonl"
    lines = []
    for p in sorted(repo.snapshot.rglob("*")):
        if p.is_file() and p.suffix in _CODE_EXT:
            rel = p.relative_to(repo.snapshot).as_posix()
            text = p.read_bytes().decode("utf-8", errors="replace")
            lines.append(json.dumps({"_id": rel, "title": rel, "text": text}))
    data = ("\n".join(lines) + "\n").encode()
    if not out.is_file() or out.read_bytes() != data:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return out


def module_name(rel: str) -> str:
    """The Python loader's dotted module name for a path under the indexed root (used when a
    file has no module node: kgsearch drops a module whose key a class in its package's
    ``__init__.py`` already took, e.g. sphinx's tests/roots/.../name_conflict)."""
    from kgsearch.ingest.pycode import module_name as mn

    return mn(rel)


def module_names(ix) -> dict[str, str]:
    """Absolute file path -> dotted name of its module node (as the Python loader named it)."""
    from kgsearch.store.rows import qualname_sql

    rows = ix.conn.execute(f"SELECT f.path, {qualname_sql('n')} FROM nodes n JOIN files f ON f.id = n.file_id "
                           "WHERE n.kind = 'module' AND n.key LIKE 'py:%'")
    return {p: q for p, q in rows}


def all_symbol_ids(ix, root: Path, mods: dict[str, str]) -> tuple[set[str], int]:
    """Every function/method/class node of the index mapped by :func:`symbol_id`, and how many
    did not map."""
    from kgsearch.store.rows import qualname_sql

    ids, unmapped = set(), 0
    kinds = ",".join(f"'{k}'" for k in SYMBOL_KINDS)
    for key, qual, path in ix.conn.execute(
            f"SELECT n.key, {qualname_sql('n')}, f.path FROM nodes n JOIN files f ON f.id = n.file_id "
            f"WHERE n.kind IN ({kinds}) AND n.key LIKE 'py:%'"):
        rel = os.path.relpath(path, root)
        sid = symbol_id(rel, mods.get(path) or module_name(rel), qual)
        if sid is None:
            unmapped += 1
        else:
            ids.add(sid)
    return ids, unmapped


# ---------------------------------------------------------------------------- one search
def hit_rel(hit, root: str) -> str | None:
    if not hit.path:
        return None
    p = hit.path
    if os.path.isabs(p):
        p = os.path.relpath(p, root)
    return p.replace(os.sep, "/")


def definition_of(h) -> tuple[str, str, str]:
    """``(kind, key, qualname)`` a hit counts as in the symbol list: its own, or for a part of a
    long definition's text (kind ``chunk``, key ``<definition key>#part<n>``,
    ``kgsearch.types.FLAG_PART``) its definition's: the part is lines of that definition, which
    the gold names (700 lines of bat's ``build_app`` are one symbol, not eight)."""
    from kgsearch.types import part_owner

    if h.kind == "chunk" and h.parent and part_owner(h.key) == h.parent:
        return "function", h.parent, part_owner(h.qualname or "")
    return h.kind, h.key, h.qualname


def definition_keys(ix):
    """``is_definition(key)`` over the index: a class/function/method node has that key."""
    kinds = ",".join(f"'{k}'" for k in SYMBOL_KINDS)

    def is_definition(key: str) -> bool:
        return ix.conn.execute(f"SELECT 1 FROM nodes WHERE key = ? AND kind IN ({kinds})", (key,)).fetchone() is not None
    return is_definition


def rank_lists(hits, root: str, mods: dict[str, str], files_index: bool = False,
               is_definition=None, enclosing: int = 0) -> tuple[list, list, list]:
    """(files in order of their best hit, symbol ids, per-hit rows for the diagnosis). With
    ``enclosing`` N > 0 (and ``is_definition``), a definition enclosing N listed ones joins the
    symbols (:func:`with_enclosing`; ``--enclosing``, off by default)."""
    files, syms, rows = [], [], []
    keyed = []
    for h in hits:
        if files_index:
            rel = h.key[4:] if h.key.startswith("doc:") else h.key
        else:
            rel = hit_rel(h, root)
        if rel is None:
            continue
        files.append(rel)
        sid = None
        kind, key, qual = definition_of(h)
        if kind in SYMBOL_KINDS and key.startswith("py:"):
            sid = symbol_id(rel, mods.get(h.path) or module_name(rel), qual)
            if sid is not None:
                syms.append(sid)
                keyed.append((sid, key))
        rows.append((rel, sid, h))
    if enclosing > 0 and is_definition is not None:
        first = {}
        for sid, key in keyed:
            first.setdefault(sid, key)
        syms = with_enclosing(list(first.items()), is_definition, enclosing)
    return dedup(files), dedup(syms), rows


def hit_summary(h, rel: str, candidates: set[str] | None = None) -> dict:
    """The explain data of one hit, compact (for the JSON and the diagnosis)."""
    ch = h.channels or {}
    sig = h.signals or {}
    bm25_norm = ch.get("bm25", {}).get("norm", 0.0)
    text_val = sig.get("text", {}).get("value", 0.0)
    return {"rank": h.rank, "path": rel, "category": file_category(rel, candidates), "kind": h.kind,
            "key": h.key, "score": h.score,
            "parts": {k: v.get("part", 0.0) for k, v in sig.items()},
            "adj": dict(h.adjustments or {}),
            "bm25_score": ch.get("bm25", {}).get("score", 0.0),
            "bm25_rank": ch.get("bm25", {}).get("rank"),
            "pattern": "pattern" in ch and ch["pattern"].get("score", 0) > 0,
            "fts": "fts" in ch and ch["fts"].get("score", 0) > 0,
            # text signal above the BM25 z-score: it came from a sparse channel (pattern/fts/equiv)
            "text_from_sparse": bool(text_val > bm25_norm + 1e-6),
            # in neither the BM25 nor the dense top 100 of the candidates, no sparse match: the walk brought it
            "graph_only": ((ch.get("bm25", {}).get("rank") or 10 ** 9) > 100
                           and (ch.get("dense", {}).get("rank") or 10 ** 9) > 100
                           and not ("pattern" in ch or "fts" in ch))}


# ---------------------------------------------------------------------------- main run
def machine_facts() -> dict:
    m = machine()
    return {**m, "machine": m["arch"], "system": m["os"], "loadavg_start": m["load"] or None}


def run_repo(repo: Repo, configs: dict[str, Config], args, log) -> dict:
    """Index the snapshot (and the whole-file corpus if a config needs it), run every task
    with every configuration. Returns per config per task: lists, metrics, ranks, timings."""
    from kgsearch.query import DEFAULT_CHANNELS, TUNING, Engine, SearchOptions
    from kgsearch.store.db import Index

    root = str(repo.snapshot.resolve())
    info = {"index": ensure_index(WORK / "index" / f"{repo.snapshot.name}.db", [root], {}, args.rebuild)}
    log(f"  index {info['index']['db']}: {'rebuilt' if info['index']['rebuilt'] else 'reused'} "
        f"({info['index']['seconds']} s, {info['index']['files_seen']} files)")
    group_ok = "group" in {f.name for f in fields(SearchOptions)}
    dbs = {"nodes": WORK / "index" / f"{repo.snapshot.name}.db"}
    if any(c.index == "files" for c in configs.values()):
        corpus = file_corpus(repo)
        dbs["files"] = WORK / "index" / f"{repo.snapshot.name}.files.db"
        info["files_index"] = ensure_index(dbs["files"], [str(corpus)], {"embed": False}, args.rebuild, fmt="beir")
    out: dict = {"info": info, "configs": {name: {} for name in configs}}
    ixs = {k: Index.open(db, readonly=True) for k, db in dbs.items()}
    try:
        engines = {k: Engine(ix) for k, ix in ixs.items()}
        mods = module_names(ixs["nodes"])
        is_def = definition_keys(ixs["nodes"])
        sym_ids, unmapped = all_symbol_ids(ixs["nodes"], Path(root), mods)
        gold = {s for t in repo.tasks for s in t.gold_symbols}
        missing = sorted(gold - sym_ids)
        cand_missing = None
        corpus_syms = repo.snapshot.parent.parent / "tasks" / repo.name / "corpus.symbols.jsonl"
        if corpus_syms.is_file():
            cids = {json.loads(x)["_id"] for x in corpus_syms.read_text(encoding="utf-8").splitlines() if x.strip()}
            cand_missing = sorted(cids - sym_ids)
            info["corpus_symbols"] = len(cids)
        info.update({"symbol_nodes": len(sym_ids), "unmapped_nodes": unmapped, "gold_symbols": len(gold),
                     "gold_symbols_missing": missing, "corpus_symbols_missing": cand_missing})
        log(f"  symbols: {len(sym_ids)} ids from the index, {unmapped} nodes unmapped; gold {len(gold)}, "
            f"missing {len(missing)}" + (f"; corpus.symbols.jsonl ids missing {len(cand_missing)}/{len(cids)}"
                                         if cand_missing is not None else ""))
        for e in engines.values():       # first query pays for loading models and graph: not timed
            e.search("warm up the caches", SearchOptions(k=10, use_cache=False, snippets=False))
        for t in repo.tasks:
            for name, cfg in configs.items():
                done = out["configs"]
                rows, resp, file_ms = [], None, None
                if cfg.rrf:                   # a fusion of other configurations' file lists: no search
                    files = rrf_merge([done[c][t.qid]["files"] for c in cfg.rrf])
                    syms = []
                    ms = sum(done[c][t.qid]["ms"] for c in cfg.rrf)
                else:
                    sopts = SearchOptions(k=args.k, channels=config_channels(cfg, DEFAULT_CHANNELS),
                                          use_cache=False, snippets=False, **dict(cfg.options))
                    eng = engines[cfg.index]
                    eng.tuning = replace(TUNING, **dict(cfg.tuning))
                    t0 = time.perf_counter()
                    resp = eng.search(t.text, sopts)
                    ms = (time.perf_counter() - t0) * 1000
                    files, syms, rows = rank_lists(resp.hits, root, mods, files_index=cfg.index == "files",
                                                   is_definition=is_def if cfg.index == "nodes" else None,
                                                   enclosing=args.enclosing)
                    if args.file_rank == "group" and cfg.index == "nodes":
                        if not group_ok:
                            raise Usage("this kgsearch has no SearchOptions.group; use --file-rank hits")
                        g0 = time.perf_counter()
                        gresp = eng.search(t.text, SearchOptions(
                            k=args.k, channels=sopts.channels, use_cache=False, snippets=False, group="file",
                            **dict(cfg.options)))
                        file_ms = (time.perf_counter() - g0) * 1000
                        files = dedup(r for r in (hit_rel(h, root) for h in gresp.hits) if r)
                if cfg.demote:
                    files = demote(files)
                    syms = demote(syms, keep=lambda sid: is_source_path(sid.split("::", 1)[0]))
                if cfg.symbols_from:
                    syms = list(done[cfg.symbols_from][t.qid]["symbols"])
                m = task_metrics(files, syms, t.gold_files, t.gold_symbols)
                rec = {"files": files, "symbols": syms, "metrics": m,
                       "file_rank": first_rank(files, t.gold_files),
                       "sym_rank": first_rank(syms, t.gold_symbols) if t.gold_symbols else None,
                       "ms": round(ms, 2), "file_ms": None if file_ms is None else round(file_ms, 2)}
                if resp is not None:
                    rec.update({"intent": resp.intent.get("name"), "channels_run": resp.channels_run,
                                "code_query": resp.code_query, "timings": resp.timings_ms,
                                "candidates": resp.candidates})
                if name in (REFERENCE, BASELINE) and cfg.index == "nodes":
                    # explain data of the hits down to the gold file's best hit (for the diagnosis)
                    gold_hit = next((r for r in rows if r[0] in set(t.gold_files)), None)
                    cut = gold_hit[2].rank if gold_hit else 0
                    cands = repo.candidates or None
                    rec["top_hits"] = [hit_summary(h, rel, cands) for rel, _, h in rows
                                       if h.rank <= max(cut, 30)][:80]
                    rec["gold_hit"] = hit_summary(gold_hit[2], gold_hit[0], cands) if gold_hit else None
                    rec["top10_categories"] = [file_category(f, cands) for f in files[:10]]
                done[name][t.qid] = rec
            log(f"  {t.qid}: " + "  ".join(f"{n} {out['configs'][n][t.qid]['file_rank']}" for n in configs))
        # a user's query (k = 10, snippets on, as `kgsearch search`) for the latency table
        user_ms = []
        for _ in range(args.latency_runs):
            for t in repo.tasks:
                t0 = time.perf_counter()
                engines["nodes"].search(t.text, SearchOptions(use_cache=False))
                user_ms.append((time.perf_counter() - t0) * 1000)
        out["user_ms"] = user_ms
    finally:
        for ix in ixs.values():
            ix.close()
    return out


# ---------------------------------------------------------------------------- reporting
def fmt(v, nd=3) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def md_table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def score_groups(tasks: list[Task], per_task: dict) -> dict[str, dict]:
    """Per repo, all tasks (micro), and the subsets (fix status, Lite split)."""
    groups: dict[str, list[Task]] = collections.OrderedDict()
    for t in sorted(tasks, key=lambda t: t.repo.lower()):
        groups.setdefault(t.repo, []).append(t)
    out = collections.OrderedDict((g, aggregate([per_task[t.qid]["metrics"] for t in ts])) for g, ts in groups.items())
    out["ALL (micro over tasks)"] = aggregate([per_task[t.qid]["metrics"] for t in tasks])
    for status in ("unfixed", "fixed", "drifted"):
        ts = [t for t in tasks if t.fix_status == status]
        if ts:
            out[f"subset: fix status {status}"] = aggregate([per_task[t.qid]["metrics"] for t in ts])
    for split in sorted({t.split for t in tasks if t.split}):
        ts = [t for t in tasks if t.split == split]
        out[f"subset: Lite {split}-split repos"] = aggregate([per_task[t.qid]["metrics"] for t in ts])
    return out


def compare(tasks: list[Task], a: dict, b: dict) -> dict:
    fa = [a[t.qid]["file_rank"] for t in tasks]
    fb = [b[t.qid]["file_rank"] for t in tasks]
    st = [t for t in tasks if t.gold_symbols]
    sa = [a[t.qid]["metrics"]["sym_MRR@10"] for t in st]
    sb = [b[t.qid]["metrics"]["sym_MRR@10"] for t in st]
    return {"file_rank": paired(fa, fb, lower_is_better=True), "sym_MRR@10": paired(sa, sb, lower_is_better=False)}


def wlt(c: dict) -> str:
    return f"{c['wins']}/{c['losses']}/{c['ties']} (p {c['p']:.3g})"


def slim(rec: dict, full: bool) -> dict:
    """A task's record for the JSON: ranks and time; for the default and BM25 also the top 3
    files, intent, channels run, stage timings and the gold file's best hit (the run
    files in bench/work hold the ranked lists of every configuration)."""
    out = {"file_rank": rec["file_rank"], "sym_rank": rec["sym_rank"], "ms": rec["ms"]}
    if full:
        out["files"] = rec["files"][:3]
        for k in ("intent", "channels_run", "code_query", "candidates", "file_ms"):
            if rec.get(k) is not None:
                out[k] = rec[k]
        if rec.get("timings"):
            out["timings"] = {k: round(v) for k, v in rec["timings"].items() if v >= 1}
        g = rec.get("gold_hit")
        if g:
            out["gold_hit"] = {k: g[k] for k in ("rank", "kind", "key", "score", "parts", "adj", "bm25_rank")}
    return out


def write_runs(tasks: list[Task], results: dict, run_dir: Path, keep: int) -> dict[str, Path]:
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, per_task in results.items():
        p = run_dir / (re.sub(r"[^\w+\-.]", "_", name) + ".run.jsonl")
        with open(p, "w", encoding="utf-8") as f:
            for t in tasks:
                r = per_task[t.qid]
                f.write(json.dumps({"qid": t.qid, "files": r["files"][:keep], "symbols": r["symbols"][:keep]}) + "\n")
        paths[name] = p
    return paths


def check_with_scorer(tasks_root: Path, repos: list[Repo], tasks: list[Task], results: dict,
                      runs: dict[str, Path], log) -> list[str]:
    """Score every run file with the task set's own score.py (all tasks and each fix status)
    and compare with this script's numbers; returns the differences."""
    scorer = tasks_root / "score.py"
    dirs = [str(tasks_root / "tasks" / r.name) for r in repos]
    diffs = []
    for name, path in runs.items():
        for status in (None, "unfixed", "fixed", "drifted"):
            ts = [t for t in tasks if status is None or t.fix_status == status]
            if not ts:
                continue
            cmd = [sys.executable, str(scorer), str(path), *dirs, "--json"]
            cmd += ["--fix-status", status] if status else []
            ref = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            ref_all = ref["ALL (micro over tasks)"]
            mine = aggregate([results[name][t.qid]["metrics"] for t in ts])
            for k in METRICS + ["n", "n_sym"]:
                x, y = mine[k], ref_all[k]
                if (x is None) != (y is None) or (x is not None and abs(x - y) > 1e-12):
                    diffs.append(f"{name} {status or 'all'} {k}: mine {x} score.py {y}")
    log(f"check: {len(runs)} run files scored by {scorer}: "
        + ("identical" if not diffs else f"{len(diffs)} differences"))
    return diffs


# ---------------------------------------------------------------------------- diagnosis
def diagnose(tasks: list[Task], results: dict, configs: dict[str, Config]) -> dict:
    """What pushes the gold file down in the default ranking, against BM25 alone: counts over
    the tasks (every number says out of how many)."""
    if REFERENCE not in results or BASELINE not in results:
        return {}
    d, b = results[REFERENCE], results[BASELINE]
    n = len(tasks)
    lost = [t for t in tasks if (d[t.qid]["file_rank"] or math.inf) > (b[t.qid]["file_rank"] or math.inf)]
    won = [t for t in tasks if (d[t.qid]["file_rank"] or math.inf) < (b[t.qid]["file_rank"] or math.inf)]
    out: dict = {"tasks": n, "lost": len(lost), "won": len(won), "lost_qids": [t.qid for t in lost]}

    def cats(res, k):
        c = collections.Counter()
        slots = collections.Counter()
        for t in tasks:
            cs = res[t.qid]["top10_categories"][:k]
            slots.update(cs)
            for x in set(cs):
                c[x] += 1
        return c, slots

    for name, res in ((REFERENCE, d), (BASELINE, b)):
        c5, s5 = cats(res, 5)
        c10, s10 = cats(res, 10)
        out[f"{name}_tasks_with_category_in_top5"] = dict(c5)
        out[f"{name}_top10_slots_by_category"] = dict(s10)
    # which channels ran, intent, code path, "test" in the query
    out["pattern_ran"] = sum("pattern" in d[t.qid]["channels_run"] for t in tasks)
    out["fts_ran"] = sum("fts" in d[t.qid]["channels_run"] for t in tasks)
    out["code_query"] = sum(bool(d[t.qid]["code_query"]) for t in tasks)
    out["intents"] = dict(collections.Counter(d[t.qid]["intent"] for t in tasks))
    out["query_says_test"] = sum("test" in t.text.lower() for t in tasks)
    # the 'test' switch: test files in the top 10 with and without the word in the issue
    for says in (True, False):
        ts = [t for t in tasks if ("test" in t.text.lower()) == says]
        slots = sum(d[t.qid]["top10_categories"].count("test") for t in ts)
        out[f"default_test_slots_top10_query_says_test_{says}"] = [slots, 10 * len(ts)]
    # text signal from a sparse channel (pattern/fts, scaled to the query's best BM25 z) instead of BM25
    top10 = [h for t in tasks for h in d[t.qid]["top_hits"] if h["rank"] <= 10]
    out["default_top10_hits"] = len(top10)
    out["default_top10_hits_text_from_sparse"] = sum(h["text_from_sparse"] for h in top10)
    out["default_top10_hits_text_from_sparse_bm25_rank_gt100"] = sum(
        h["text_from_sparse"] and (h["bm25_rank"] or 10 ** 9) > 100 for h in top10)

    def top5_file_hits(t):
        seen, best = set(), []
        for h in d[t.qid]["top_hits"]:
            if h["path"] not in seen:
                seen.add(h["path"])
                best.append(h)
        return best[:5]

    out["default_tasks_top5_file_only_by_sparse"] = sum(
        any(h["text_from_sparse"] and (h["bm25_rank"] or 10 ** 9) > 100 for h in top5_file_hits(t)) for t in tasks)
    out["default_tasks_top5_file_by_hits_boost"] = sum(
        any(h["adj"].get("hits", 0) > 0 for h in top5_file_hits(t)) for t in tasks)
    # kinds of the top-10 hits
    for name, res in ((REFERENCE, d), (BASELINE, b)):
        out[f"{name}_top10_hit_kinds"] = dict(collections.Counter(
            h["kind"] for t in tasks for h in res[t.qid]["top_hits"] if h["rank"] <= 10))
        out[f"{name}_gold_best_hit_kind"] = dict(collections.Counter(
            (res[t.qid]["gold_hit"] or {}).get("kind", "absent") for t in tasks))
    # in the lost tasks: the hits ranked above the gold file's best hit
    above = collections.Counter()
    margin = collections.Counter()
    intr_tasks = collections.defaultdict(set)
    for t in lost:
        r = d[t.qid]
        g = r["gold_hit"]
        gr = g["rank"] if g else math.inf
        gparts = g["parts"] if g else {}
        gadj = g["adj"] if g else {}
        for h in r["top_hits"]:
            if h["rank"] >= gr or h["path"] in t.gold_files:
                continue
            tags = []
            if h["text_from_sparse"]:
                tags.append("text from pattern/fts" if (h["pattern"] or h["fts"]) else "text from sparse")
            if h["pattern"]:
                tags.append("pattern match")
            if h["graph_only"]:
                tags.append("no bm25 match, dense rank > 100 (graph walk)")
            if h["adj"].get("hits", 0) > 0:
                tags.append("HITS boost")
            if h["bm25_rank"] is not None and h["bm25_rank"] > 100:
                tags.append("bm25 rank > 100")
            tags.append(f"file {h['category']}")
            tags.append(f"kind {h['kind']}")
            for tg in tags:
                above[tg] += 1
                intr_tasks[tg].add(t.qid)
            # the signal that gives this hit the largest lead over the gold file's best hit
            if g:
                lead = {k: h["parts"].get(k, 0.0) - gparts.get(k, 0.0) for k in set(h["parts"]) | set(gparts)}
                lead["hits"] = h["adj"].get("hits", 0.0) - gadj.get("hits", 0.0)
                margin[max(lead, key=lead.get)] += 1
    out["lost_hits_above_gold"] = dict(above)
    out["lost_tasks_with_hit_above_gold"] = {k: len(v) for k, v in intr_tasks.items()}
    out["lost_largest_lead_signal"] = dict(margin)
    # which single ablation brings the gold file back to at least BM25's rank
    rec = {}
    for name in configs:
        if name.startswith("-") and name in results:
            rec[name] = sum((results[name][t.qid]["file_rank"] or math.inf) <= (b[t.qid]["file_rank"] or math.inf)
                            for t in lost)
    out["lost_recovered_by_ablation"] = rec
    # latency: the slowest stage of the default's slowest queries
    slow = sorted(tasks, key=lambda t: -d[t.qid]["ms"])[:max(1, n // 20)]
    out["slowest"] = [{"qid": t.qid, "ms": d[t.qid]["ms"], "chars": len(t.text),
                       "stages": dict([kv for kv in sorted(d[t.qid]["timings"].items(), key=lambda kv: -kv[1])
                                        if kv[0] != "total"][:4])}
                      for t in slow]
    return out


def _by_count(d: dict, total: int | None = None) -> str:
    items = sorted(d.items(), key=lambda kv: -kv[1])
    if total is None:
        return ", ".join(f"{k} {v}" for k, v in items)
    return ", ".join(f"{k} {v} ({100 * v / (total or 1):.0f}%)" for k, v in items)


def diagnosis_lines(dg: dict) -> list[str]:
    if not dg:
        return []
    n, L = dg["tasks"], dg["lost"]
    lines = [f"- default ranks the first gold file lower than BM25 alone on {L} of {n} tasks, higher on {dg['won']}."]
    for name in (REFERENCE, BASELINE):
        c = dg[f"{name}_tasks_with_category_in_top5"]
        s = dg[f"{name}_top10_slots_by_category"]
        tot = sum(s.values()) or 1
        lines.append(f"- {name}: tasks with a file of that kind in the top 5 files: "
                     + ", ".join(f"{k} {v}/{n}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]))
                     + "; top-10 file slots: "
                     + _by_count(s, tot))
    lines.append(f"- default: pattern channel ran on {dg['pattern_ran']}/{n} issues, fts on {dg['fts_ran']}/{n}, "
                 f"code-query graph path (walk + HITS) on {dg['code_query']}/{n}; intents {dg['intents']}; "
                 f"the issue contains 'test' (test penalty off) in {dg['query_says_test']}/{n}.")
    a, b = dg["default_test_slots_top10_query_says_test_True"], dg["default_test_slots_top10_query_says_test_False"]
    lines.append(f"- default: test files take {a[0]}/{a[1]} top-10 file slots when the issue contains 'test', "
                 f"{b[0]}/{b[1]} when it does not.")
    lines.append(f"- default: {dg['default_top10_hits_text_from_sparse']}/{dg['default_top10_hits']} top-10 hits take "
                 "their text signal from pattern/fts (scaled to the best BM25 z) rather than BM25; "
                 f"{dg['default_top10_hits_text_from_sparse_bm25_rank_gt100']} of them rank below 100 in BM25. "
                 f"In {dg['default_tasks_top5_file_only_by_sparse']}/{n} tasks a top-5 file is there by such a match; "
                 f"in {dg['default_tasks_top5_file_by_hits_boost']}/{n} a top-5 file's best hit has a HITS boost.")
    for name in (REFERENCE, BASELINE):
        lines.append(f"- {name}: kinds of the top-10 hits {dg[f'{name}_top10_hit_kinds']}; "
                     f"kind of the gold file's best hit {dg[f'{name}_gold_best_hit_kind']}.")
    if L:
        lt = dg["lost_tasks_with_hit_above_gold"]
        lines.append(f"- in the {L} lost tasks, tasks with a hit above the gold file's best hit that is: "
                     + ", ".join(f"{k} {v}/{L}" for k, v in sorted(lt.items(), key=lambda kv: -kv[1])))
        mg = dg["lost_largest_lead_signal"]
        tot = sum(mg.values()) or 1
        lines.append("- those hits' largest lead over the gold file's best hit (fused part): "
                     + _by_count(mg, tot))
        lines.append("- lost tasks brought back to BM25's gold-file rank or better by a configuration with "
                     f"channels off (of {L}): "
                     + ", ".join(f"{k} {v}" for k, v in dg["lost_recovered_by_ablation"].items()))
    for s in dg["slowest"]:
        lines.append(f"- slow query {s['qid']}: {s['ms']:.0f} ms, {s['chars']} chars; stages ms {s['stages']}")
    return lines


# ---------------------------------------------------------------------------- main
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--loro" in argv:          # leave one repository out, both sets: bench/code_tasks_loro.py
        sys.path.insert(0, str(ROOT / "bench"))
        import code_tasks_loro
        return code_tasks_loro.main(argv)
    from kgsearch import environment

    environment.configure(environment.from_environ())      # KGSEARCH_MODEL as the CLI reads it (the fingerprint)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=str(DEFAULT_TASKS), help="code-tasks folder (default %(default)s)")
    ap.add_argument("--repos", default=None, help="comma list of task folders/repos (substrings), default all")
    ap.add_argument("--configs", default=None,
                    help=f"comma list from: {', '.join(CONFIGS)}; 'core' = the non-idea ones (default: all)")
    ap.add_argument("--k", type=int, default=100, help="hits per search; files are ranked from them (default 100)")
    ap.add_argument("--keep", type=int, default=20, help="files/symbols kept per task in the run files")
    ap.add_argument("--file-rank", choices=("hits", "group"), default="group",
                    help="the library's SearchOptions(group='file') as `search --group file` ranks files "
                         "(default), or files in the order of their best hit")
    ap.add_argument("--latency-runs", type=int, default=1,
                    help="passes of the default search at k=10 with snippets (as `kgsearch search`) to time")
    ap.add_argument("--enclosing", type=int, default=0, metavar="N",
                    help="list a class/function enclosing N listed symbols after the N-th of them (an idea "
                         "measured in docs/code-tasks.md; default 0: off)")
    ap.add_argument("--rebuild", action="store_true", help="reindex the snapshots even when nothing changed")
    ap.add_argument("--check", action="store_true", help="score the run files with the task set's score.py too")
    ap.add_argument("--out", default=str(RESULTS), help="folder for the JSON and Markdown")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.configs in (None, "all"):
        names = list(CONFIGS)
    elif args.configs == "core":
        names = [n for n, c in CONFIGS.items() if not c.idea]
    else:
        names = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in names if c not in CONFIGS]
    if bad:
        print(f"error: unknown configuration(s) {', '.join(bad)}; choose from {', '.join(CONFIGS)}", file=sys.stderr)
        return EXIT_USAGE
    ordered: list[str] = []      # configurations another one reuses run first (added when not asked for)

    def add(n):
        for dep in config_deps(CONFIGS[n]):
            add(dep)
        if n not in ordered:
            ordered.append(n)

    for n in names:
        add(n)
    names = ordered
    configs = {n: CONFIGS[n] for n in names}
    if args.file_rank == "group":
        from kgsearch.query import SearchOptions

        if "group" not in {f.name for f in fields(SearchOptions)}:
            print("error: this kgsearch has no SearchOptions.group; use --file-rank hits", file=sys.stderr)
            return EXIT_USAGE
    tasks_root = Path(args.tasks).resolve()
    repos_filter = [r.strip() for r in args.repos.split(",")] if args.repos else None
    try:
        repos = load_tasks(tasks_root, repos_filter)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except Usage as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not repos:
        print(f"error: {tasks_root}/tasks: no task folder", file=sys.stderr)
        return EXIT_INPUT

    t_start = time.time()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "kgsearch_commit": git_commit(), "machine": machine_facts(),
            "tasks_dir": str(tasks_root), "k": args.k, "file_rank": args.file_rank, "runs": 1,
            "latency_runs": args.latency_runs,
            "configs": {n: {k: v for k, v in vars(c).items() if v not in (None, (), False, "")}
                        for n, c in configs.items()},
            "code_fingerprint": code_fingerprint({})}
    tasks: list[Task] = []
    results: dict[str, dict] = {n: {} for n in configs}
    repo_info, latency, user_latency = {}, {}, {}
    try:
        for repo in repos:
            log(f"{repo.repo} ({len(repo.tasks)} tasks, {repo.snapshot.name})")
            r = run_repo(repo, configs, args, log)
            tasks += repo.tasks
            for n in configs:
                results[n].update(r["configs"][n])
            repo_info[repo.repo] = r["info"]
            latency[repo.repo] = {n: percentiles([r["configs"][n][t.qid]["ms"] for t in repo.tasks]) for n in configs}
            user_latency[repo.repo] = percentiles(r["user_ms"])
            user_latency[repo.repo]["_all"] = r["user_ms"]
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except Usage as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    latency["ALL"] = {n: percentiles([results[n][t.qid]["ms"] for t in tasks]) for n in configs}
    user_latency["ALL"] = percentiles([x for v in user_latency.values() for x in v.pop("_all")])
    meta["seconds"] = round(time.time() - t_start, 1)
    meta["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    try:
        meta["machine"]["loadavg_end"] = loadavg()
    except OSError:
        pass

    scores = {n: score_groups(tasks, results[n]) for n in configs}
    vs_bm25 = {n: compare(tasks, results[n], results[BASELINE])
               for n in configs if BASELINE in configs and n != BASELINE}
    vs_default = {n: compare(tasks, results[n], results[REFERENCE])
                  for n in configs if REFERENCE in configs and n not in (REFERENCE,)}
    dg = diagnose(tasks, results, configs)
    largest = max(repos, key=lambda r: sum(1 for p in r.snapshot.rglob("*.py")))
    runs = write_runs(tasks, results, WORK / "runs", args.keep)
    diffs = check_with_scorer(tasks_root, repos, tasks, results, runs, log) if args.check else None

    # ------------------------------------------------------------------ tables
    allkey = "ALL (micro over tasks)"
    cols = ["file_R@1", "file_R@5", "file_R@10", "sym_R@10", "sym_P@10", "sym_MRR@10"]
    head = ["config", "n", "n_sym"] + cols + ["files W/L/T vs bm25 (p)", "sym MRR W/L/T vs bm25 (p)",
                                               "ms p50", "ms p95", "ms max"]
    rows = []
    for n in configs:
        a = scores[n][allkey]
        c = vs_bm25.get(n)
        lat = latency["ALL"][n]
        rows.append([f"**{n}**" if n in (REFERENCE, BASELINE) else n, a["n"], a["n_sym"]]
                    + [fmt(a[k]) for k in cols]
                    + ([wlt(c["file_rank"]), wlt(c["sym_MRR@10"])] if c else ["-", "-"])
                    + [fmt(lat["p50"], 1), fmt(lat["p95"], 1), fmt(lat["max"], 1)])
    md = [f"# Code tasks: issue text -> files and symbols, {meta['date']}", "",
          f"Data: {len(tasks)} tasks from {len(repos)} repositories ({tasks_root.name}, SWE-bench Lite issues); "
          f"each snapshot indexed whole with default settings. kgsearch {meta['kgsearch_commit']}. "
          f"Machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores, {meta['machine']['system']}, "
          f"Python {meta['machine']['python']}, numpy {meta['machine']['numpy']}, SQLite {meta['machine']['sqlite']}; "
          f"load average {meta['machine'].get('loadavg_start')} at start (a shared machine: timings are noisy, "
          "compare them within this run). Rankings are deterministic: one run.", "",
          f"Search depth k = {args.k}; files ranked by "
          f"{'their best hit' if args.file_rank == 'hits' else 'SearchOptions(group=file)'}; "
          "symbols = function/method/class hits as `path::qualname`. Metrics as code-tasks/score.py (micro over tasks; "
          "symbol metrics over tasks with symbol qrels). W/L/T: per task, the rank of the first gold file (files) or "
          "symbol MRR@10 compared with BM25 alone; p = two-sided exact sign test. ms: in-process wall time of the "
          f"search at k = {args.k} without snippets.", "",
          f"`python bench/code_tasks.py{''.join(' ' + a for a in (argv if argv is not None else sys.argv[1:]))}` "
          "reproduces this "
          f"({meta['seconds']} s, peak RSS {meta['peak_rss_mb']} MB).", "", "## All tasks", ""]
    md += md_table(head, rows)
    md += ["", "Configurations: " + "; ".join(f"`{n}` {c.note or ('channels ' + ','.join(c.minus) + ' off')}"
                                              + (" (idea)" if c.idea else "") for n, c in configs.items()) + "."]
    show = [n for n in (REFERENCE, BASELINE) if n in configs] or list(configs)[:1]
    md += ["", "## Per repository and subsets", ""]
    gh = ["tasks", "n", "n_sym"] + [f"{c} {n}" for c in cols for n in show]
    grows = []
    for g in scores[show[0]]:
        a0 = scores[show[0]][g]
        grows.append([f"**{g}**" if g == allkey else g, a0["n"], a0["n_sym"]]
                     + [fmt(scores[n][g][c]) for c in cols for n in show])
    md += md_table(gh, grows)
    if vs_default:
        md += ["", "## Against the default (W/L/T for the row's configuration; p = sign test)", ""]
        md += md_table(["config", "files W/L/T vs default", "sym MRR W/L/T vs default"],
                       [[n, wlt(c["file_rank"]), wlt(c["sym_MRR@10"])] for n, c in vs_default.items()])
    md += ["", "## Latency (ms, in-process)", "",
           f"Per query wall time of each configuration's search (k = {args.k}, no snippets), and of the default "
           f"search as `kgsearch search` runs it (k = 10, snippets; {args.latency_runs} pass(es)). "
           f"Largest repository: {largest.repo} ({sum(1 for _ in largest.snapshot.rglob('*.py'))} .py files).", ""]
    lh = ["repo"] + [f"{n} p50/p95/max" for n in show] + ["default k=10 p50/p95/max"]
    lrows = []
    for rname in list(latency):
        lrows.append([f"**{rname}**" if rname in ("ALL", largest.repo) else rname]
                     + [f"{fmt(latency[rname][n]['p50'], 1)} / {fmt(latency[rname][n]['p95'], 1)} / "
                        f"{fmt(latency[rname][n]['max'], 1)}" for n in show]
                     + [f"{fmt(user_latency[rname]['p50'], 1)} / {fmt(user_latency[rname]['p95'], 1)} / "
                        f"{fmt(user_latency[rname]['max'], 1)}"])
    md += md_table(lh, lrows)
    md += ["", "## Index and symbol-id check", ""]
    md += ["Index s = the full build (when this run reused the index: the build it reused). Symbol ids = the "
           "function/method/class nodes as `path::qualname`; every gold id and every id of corpus.symbols.jsonl "
           "must be among them.", ""]
    md += md_table(["repo", "index s", "files", "symbol ids", "gold symbols", "gold missing", "corpus ids missing"],
                   [[k, v["index"]["build_seconds"], v["index"]["files_seen"], v["symbol_nodes"], v["gold_symbols"],
                     len(v["gold_symbols_missing"]),
                     "-" if v["corpus_symbols_missing"] is None
                     else f"{len(v['corpus_symbols_missing'])}/{v['corpus_symbols']}"]
                    for k, v in repo_info.items()])
    dl = diagnosis_lines(dg)
    if dl:
        md += ["", "## Diagnosis: default against BM25 alone", ""] + dl
    if diffs is not None:
        md += ["", f"Check: every run file scored by score.py: {'identical numbers' if not diffs else diffs}."]
    text = "\n".join(md) + "\n"
    print(text)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "code_tasks" + (("." + re.sub(r"[^\w.-]", "_", args.repos)) if args.repos else "")
    per_task = {n: {q: slim(r, full=n in (REFERENCE, BASELINE)) for q, r in res.items()} for n, res in results.items()}
    (out / f"{stem}.json").write_text(json.dumps(
        {"meta": meta, "scores": scores, "vs_bm25": vs_bm25, "vs_default": vs_default, "latency": latency,
         "latency_k10": user_latency, "repos": repo_info, "diagnosis": dg, "check_differences": diffs,
         "per_task": per_task}, indent=1, default=str))
    (out / f"{stem}.md").write_text(text)
    log(f"wrote {out / (stem + '.json')} and {out / (stem + '.md')}; run files in {WORK / 'runs'}")
    if diffs:
        for x in diffs:
            print(f"check: {x}", file=sys.stderr)
        return EXIT_CHECK
    return 0


if __name__ == "__main__":
    sys.exit(main())
