"""Scaling benchmark: kgsearch at 10K / 100K / 300K / 1M nodes, with bm25s and igraph alongside.

    python bench/scale.py [--sizes 10K,100K,300K,1M] [--seed 0] [--work bench/work/scale]
                          [--out-dir bench/results] [--redo STEP,...] [--only-report]
                          [--cold-runs 3] [--warm-runs 5] [--rival-runs 3]

Corpora come from ``../shared/tools/make_scale_corpus.py N DIR --seed S`` (real BEIR text,
WordNet and Freebase edges, KG JSONL shards; its 100 real queries), built once into
``--work`` (git-ignored) and reused. Per size, in this order, every step in a fresh process:

* ``index``: ``kgsearch index CORPUS --db DB --json`` into a fresh database: wall time, the
  report's phase/step seconds and peak memory, measured two ways: ``peak_rss_mb`` = the
  largest single process's peak RSS (``ru_maxrss`` from ``wait4``: the index process's VmHWM,
  or a loader worker's if larger), and ``tree_rss_mb`` / ``tree_pss_mb`` = the peak of the
  summed RSS / PSS of the process and its loader workers, sampled every 50 ms from /proc
  (forked workers share pages, so the RSS sum over-counts and PSS splits shared pages fairly;
  a sample can miss a peak shorter than 50 ms);
* ``db``: file size (+ WAL) and the five biggest tables/indexes (``dbstat``);
* ``query_default`` / ``query_bm25``: the corpus's 100 queries through ``Engine.search``
  (``k=10``, no result cache; ``channels="bm25"`` for BM25-only) in a fresh process: one
  untimed pass (warm), then one timed pass; p50/p95/mean, per-stage p50, first (cold-process)
  query, and the process's peak RSS (VmHWM) plus its RSS after opening the index;
* ``cli``: ``kgsearch search Q --db DB -k 10 --no-cache -q`` wall time in a fresh process.
  warm = median of ``--warm-runs`` after one warm-up; cold-index = the database file evicted
  from the page cache first (``posix_fadvise(DONTNEED)`` on the .db/-wal files: Python and
  numpy stay cached); cold-all = ``sync; echo 3 > /proc/sys/vm/drop_caches`` first (needs
  root; skipped and said so otherwise). Medians of ``--cold-runs``, each on another query;
* ``reindex``: ``kgsearch index`` with nothing changed, then with one shard file changed
  slightly (the first document's description gets a word appended), then with it restored
  (a second one-file sample); wall time, peak RSS as for ``index``;
* ``reindex_edge`` (run last): one shard file gains an edge between its first two nodes, then
  loses it again: a one-file change that changes a row's edge count, so the graph step splices
  every edge array (a text-only change keeps the rows' shapes: the changed rows are written in
  place, kgsearch/graph/stored/patch.py);
* ``reindex_nodes`` (after ``reindex_edge``): one-file changes of the node set: a node (a note
  linked to the shard's first node) appended to ``shard-00000.jsonl``, then removed by
  restoring the file; a new file ``shard-new.jsonl`` with one node, then that file removed;
* ``dense``: recall@10 of the stored int8 dense path (``kgsearch.embed.dense.search_vector``)
  against exact float32 cosine search over the same nodes' vectors, re-encoded with the
  index's model (cached as .npy in ``--work`` for the design study); plus the int8 channel's
  own latency (p50);
* ``bm25s``: bm25s 0.2+ on the same tokens (kgsearch's analyzer over ``name x 3 + text``, the
  BM25F name weight as repetitions; k1 1.5, b 0.75, Lucene idf), built and saved in one
  process, then loaded in a fresh query process: 100 queries one at a time (single thread,
  numpy backend), p50 and queries/s, peak RSS, and top-10 overlap with kgsearch's BM25
  channel on the same queries;
* ``pagerank``: on the index's own graph (the CSR the graph step stored), kgsearch's
  ``pagerank`` at the indexer's tolerance (networkx's stopping rule, ``tol = min(1e-6,
  1e-4 / n)``, i.e. total L1 change < 1e-4; numpy ``bincount``, one thread; the transition
  operator is rebuilt each run as in the indexer) and at networkx's default ``tol=1e-6``
  (L1 change < n * 1e-6: looser as n grows), against igraph's PRPACK solver (a direct solve,
  no tolerance setting, one thread), alternating ``--rival-runs`` times; medians, ratios, and
  the top-100 overlap and L1 distance of each against igraph.

Each step's result is saved in ``--work/result-N.json`` as soon as it is done, so an
interrupted run resumes where it stopped (``--redo index`` etc. forces steps again; a redone
``index`` invalidates the steps after it). Finally ``scale.json`` and ``scale.md`` go to
``--out-dir``. No ``nice``: every process runs at normal priority; other jobs sharing the
2 cores make timings noisy (peak RSS is not); load averages are recorded per step.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import (RESULTS, SHARED_ROOT, WORK, git_commit, loadavg, log, machine as _machine,  # noqa: E402
                     pct, write_results)

MAKE_CORPUS = SHARED_ROOT / "tools" / "make_scale_corpus.py"
STEPS = ("index", "db", "query_default", "query_bm25", "cli", "reindex", "dense", "bm25s", "pagerank",
         "reindex_edge", "reindex_nodes")
NEW_SHARD = "shard-new.jsonl"     # the file ``reindex_nodes`` adds, then removes
PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------------- helpers
def parse_size(s: str) -> int:
    s = s.strip().upper()
    mult = 1
    if s.endswith("K"):
        mult, s = 1000, s[:-1]
    elif s.endswith("M"):
        mult, s = 1_000_000, s[:-1]
    return int(float(s) * mult)


def label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}K"
    return str(n)


def code_version() -> str:
    """The commit of the checkout this script runs from (``+dirty`` when it has local changes):
    every step records it, so a resumed run shows which code measured which cell."""
    return git_commit(("kgsearch", "data", "bench/scale.py"))


def machine() -> dict:
    m = _machine()
    return {**m, "kernel": platform.release()}


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                out += [int(x) for x in open(f"/proc/{pid}/task/{tid}/children").read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def _tree(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(_children(p))
    return seen


def _rss_bytes(pid: int) -> int:
    try:
        return int(open(f"/proc/{pid}/statm").read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss_bytes(pid: int) -> int:
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeMonitor(threading.Thread):
    """Samples the summed RSS (every ``interval``) and PSS (every 4th sample) of a process tree."""

    def __init__(self, pid: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0
        self.max_procs = 0
        self.samples = 0
        self._halt = threading.Event()

    def run(self) -> None:
        i = 0
        while not self._halt.is_set():
            pids = _tree(self.pid)
            self.max_procs = max(self.max_procs, len(pids))
            self.peak_rss = max(self.peak_rss, sum(_rss_bytes(p) for p in pids))
            if i % 4 == 0:
                self.peak_pss = max(self.peak_pss, sum(_pss_bytes(p) for p in pids))
            i += 1
            self.samples += 1
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def add_shard_edge(path: Path) -> str:
    """Append one edge between the first two nodes of a corpus shard; returns what it added."""
    text = path.read_text(encoding="utf-8")
    ids = []
    for line in text.split("\n"):
        if line:
            d = json.loads(line)
            if "node_id" in d:
                ids.append(d["node_id"])
                if len(ids) == 2:
                    break
    edge = {"source": ids[0], "target": ids[1], "edge_type": "see_also"}
    path.write_text(text.rstrip("\n") + "\n" + json.dumps(edge) + "\n", encoding="utf-8")
    return f"{ids[0]} -see_also-> {ids[1]}"


NEW_NODE = {"node_id": "bench:new-note", "name": "Reindexing a note added on a phone", "type": "doc",
            "description": ("A new note written on the phone: the index must pick up the added node, its "
                            "terms and its similar documents without rebuilding the graph. Retrieval of "
                            "relevant documents from a large collection depends on the index being current.")}


def append_shard_node(path: Path) -> str:
    """Append one new node (a note) to a corpus shard, linked to the shard's first node; returns
    its id. The node set changes, so no in-place row write applies."""
    text = path.read_text(encoding="utf-8")
    first = next(json.loads(x)["node_id"] for x in text.split("\n") if x and '"node_id"' in x)
    node = dict(NEW_NODE)
    edge = {"source": node["node_id"], "target": first, "edge_type": "related"}
    path.write_text(text.rstrip("\n") + "\n" + json.dumps(node) + "\n" + json.dumps(edge) + "\n", encoding="utf-8")
    return node["node_id"]


def write_new_shard(corpus: Path) -> Path:
    """A new shard file holding one node (a note in a new file); returns its path."""
    node = dict(NEW_NODE, node_id="bench:new-file-note", name="A note in a new file")
    path = corpus / NEW_SHARD
    path.write_text(json.dumps(node) + "\n", encoding="utf-8")
    return path


def revise_shard(path: Path) -> None:
    """Append " Revised." to the first node description of a corpus shard."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if line:
            d = json.loads(line)
            if "node_id" in d and d.get("description"):
                d["description"] += " Revised."
                lines[i] = json.dumps(d, ensure_ascii=False)
                break
    path.write_text("\n".join(lines), encoding="utf-8")


def run_measured(cmd: list[str], env: dict | None = None, timeout: float | None = None) -> dict:
    """Run ``cmd``; wall time, exit code, stdout/stderr, peak RSS (wait4) and tree RSS/PSS."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    mon = TreeMonitor(proc.pid)
    mon.start()
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []

    def pump(stream, sink):
        for chunk in iter(lambda: stream.read(65536), b""):
            sink.append(chunk)

    th = [threading.Thread(target=pump, args=(proc.stdout, out_chunks), daemon=True),
          threading.Thread(target=pump, args=(proc.stderr, err_chunks), daemon=True)]
    for t in th:
        t.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    mon.stop()
    for t in th:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": round(wall, 3), "rc": proc.returncode, "stdout": b"".join(out_chunks).decode(errors="replace"),
            "stderr": b"".join(err_chunks).decode(errors="replace"),
            "peak_rss_mb": round(ru.ru_maxrss / 1024, 1),
            "tree_rss_mb": round(mon.peak_rss / 2**20, 1), "tree_pss_mb": round(mon.peak_pss / 2**20, 1),
            "max_procs": mon.max_procs, "cpu_s": round(ru.ru_utime + ru.ru_stime, 2)}


def kg_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgsearch", *args]


def child_cmd(name: str, **kw) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "_child", name, json.dumps(kw)]


def child_json(res: dict) -> dict:
    if res["rc"] != 0:
        raise RuntimeError(f"child failed (rc {res['rc']}): {res['stderr'][-2000:]}")
    text = res["stdout"].strip()
    try:
        return json.loads(text)                     # kgsearch --json (pretty-printed)
    except json.JSONDecodeError:
        return json.loads(text.splitlines()[-1])    # a child: one JSON line last


def evict(paths: list[Path]) -> None:
    """Drop these files' pages from the page cache (posix_fadvise DONTNEED; clean pages only)."""
    for p in paths:
        if p.exists():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            except OSError:
                pass
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def drop_all_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------- size driver
class Size:
    def __init__(self, n: int, args):
        self.n = n
        self.args = args
        self.work = Path(args.work).resolve()
        self.corpus = self.work / f"corpus-{n}"
        self.queries_file = self.work / f"corpus-{n}.queries100.json"
        self.stats_file = self.work / f"corpus-{n}.stats.json"
        self.db = self.work / f"index-{n}.db"
        self.result_file = self.work / f"result-{n}.json"
        self.res = json.loads(self.result_file.read_text()) if self.result_file.exists() else {}

    def save(self) -> None:
        tmp = self.result_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.res, indent=1))
        os.replace(tmp, self.result_file)

    def queries(self) -> list[str]:
        return [q["text"] for q in json.loads(self.queries_file.read_text())]

    def ensure_corpus(self) -> None:
        self.restore_shard()
        if self.stats_file.exists() and self.corpus.is_dir():
            return
        log(f"{label(self.n)}: building corpus")
        subprocess.run([sys.executable, str(MAKE_CORPUS), str(self.n), str(self.corpus), "--seed",
                        str(self.args.seed)], check=True, stdout=subprocess.DEVNULL)

    def corpus_info(self) -> dict:
        st = json.loads(self.stats_file.read_text())
        return {**st, "seed": self.args.seed, "bytes": sum(p.stat().st_size for p in self.corpus.iterdir())}

    # ------------------------------------------------------------------ one-file change
    def shard(self) -> Path:
        return self.corpus / "shard-00000.jsonl"

    def backup(self) -> Path:
        return self.work / f"corpus-{self.n}.shard-00000.orig"

    def restore_shard(self) -> None:
        b = self.backup()
        if b.exists():
            shutil.copyfile(b, self.shard())
            b.unlink()
        new = self.corpus / NEW_SHARD
        if new.exists():
            new.unlink()

    def modify_shard_edge(self) -> str:
        """Append one edge between the shard's first two nodes (a note gains a link)."""
        shutil.copyfile(self.shard(), self.backup())
        return add_shard_edge(self.shard())

    def modify_shard(self) -> None:
        shutil.copyfile(self.shard(), self.backup())
        revise_shard(self.shard())

    # ------------------------------------------------------------------ steps
    def step(self, name: str) -> bool:
        """True when ``name`` must run (not cached, or asked again)."""
        return name not in self.res or name in self.args.redo

    def run(self, skip: set[str] = frozenset()) -> None:
        self.ensure_corpus()
        self.res.setdefault("corpus", self.corpus_info())
        if self.step("index") or not self.db.exists():
            for s in STEPS:             # everything after depends on this index
                self.res.pop(s, None)
            self.do_index()
            self.save()
        for name in STEPS[1:]:
            if name not in skip and self.step(name):
                la = loadavg()
                t = time.perf_counter()
                code = code_version()                # (at the start: a pull during a step must not relabel it)
                log(f"{label(self.n)}: {name}")
                self.res[name] = getattr(self, "do_" + name)()
                self.res[name]["load_before"] = la
                self.res[name]["load_after"] = loadavg()
                self.res[name]["step_seconds"] = round(time.perf_counter() - t, 1)
                self.res[name]["code"] = code
                self.save()

    def do_index(self) -> None:
        for suffix in ("", "-wal", "-shm", ".lock"):
            p = Path(str(self.db) + suffix)
            if p.exists():
                p.unlink()
        log(f"{label(self.n)}: full index")
        la = loadavg()
        code = code_version()
        r = run_measured(kg_cmd("index", str(self.corpus), "--db", str(self.db), "--json"))
        rep = child_json(r)
        self.res["index"] = {
            "wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_rss_mb": r["peak_rss_mb"],
            "tree_rss_mb": r["tree_rss_mb"], "tree_pss_mb": r["tree_pss_mb"], "max_procs": r["max_procs"],
            "phases": rep.get("phases"), "steps": rep.get("steps"), "n_warnings": len(rep.get("warnings") or []),
            "nodes_added": rep.get("nodes_added"), "load_before": la, "load_after": loadavg(),
            "code": code}

    def do_db(self) -> dict:
        size = self.db.stat().st_size
        wal = Path(str(self.db) + "-wal")
        out = {"db_mb": round(size / 1e6, 1), "wal_mb": round(wal.stat().st_size / 1e6, 1) if wal.exists() else 0}
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            out["nodes"] = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
            out["edges"] = con.execute("SELECT count(*) FROM edges WHERE dst IS NOT NULL").fetchone()[0]
            out["similar_text_edges"] = con.execute(
                "SELECT count(*) FROM edges WHERE type='similar_text'").fetchone()[0]
            out["vectors"] = con.execute("SELECT coalesce(sum(n), 0) FROM vec_blocks").fetchone()[0]
            try:
                rows = con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 6")
                out["biggest_mb"] = {n: round(b / 1e6, 1) for n, b in rows}
            except sqlite3.OperationalError:
                pass
        finally:
            con.close()
        return out

    def _query(self, channels: str | None) -> dict:
        qf = self.queries_file
        r = run_measured(child_cmd("query", db=str(self.db), queries=str(qf), channels=channels))
        c = child_json(r)
        lat = c["lat"]
        slow = max(range(len(lat)), key=lat.__getitem__)
        return {"p50_ms": round(pct(lat, 50), 2), "p95_ms": round(pct(lat, 95), 2),
                "max_ms": round(max(lat), 2), "slowest_query": self.queries()[slow][:120],
                "slowest_stages_ms": (c.get("per_query") or [{}] * len(lat))[slow],
                "mean_ms": round(statistics.fmean(lat), 2), "first_ms": round(c["first_ms"], 1),
                "stages_p50_ms": {k: round(pct(v, 50), 2) for k, v in c["stages"].items()},
                "peak_rss_mb": round(c["hwm_kb"] / 1024, 1), "rss_after_open_mb": round(c["rss_open_kb"] / 1024, 1),
                "rss_after_warm_mb": round(c["rss_warm_kb"] / 1024, 1), "queries": len(lat),
                "channels_run": c["channels"], "top10": c["top10"]}

    def do_query_default(self) -> dict:
        return self._query(None)

    def do_query_bm25(self) -> dict:
        return self._query("bm25")

    def do_cli(self) -> dict:
        qs = self.queries()
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)

        def once(q: str) -> float:
            t = time.perf_counter()
            p = subprocess.run(kg_cmd("search", q, "--db", str(self.db), "-k", "10", "--no-cache", "-q"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            if p.returncode != 0:
                raise RuntimeError(f"kgsearch search failed: {p.stderr.decode()[-500:]}")
            return (time.perf_counter() - t) * 1000

        once(qs[0])                                 # warm-up (bytecode, page cache)
        warm = [once(qs[i % len(qs)]) for i in range(self.args.warm_runs)]
        files = [self.db, Path(str(self.db) + "-wal")]
        cold_index = []
        for i in range(self.args.cold_runs):
            evict(files)
            cold_index.append(once(qs[(10 + i) % len(qs)]))
        cold_all = []
        dropped = True
        for i in range(self.args.cold_runs):
            if not drop_all_caches():
                dropped = False
                break
            cold_all.append(once(qs[(20 + i) % len(qs)]))
        out = {"warm_ms": round(statistics.median(warm), 1), "warm_runs": warm,
               "cold_index_ms": round(statistics.median(cold_index), 1), "cold_index_runs": cold_index}
        if dropped and cold_all:
            out["cold_all_ms"] = round(statistics.median(cold_all), 1)
            out["cold_all_runs"] = cold_all
        else:
            out["cold_all_ms"] = None
            out["cold_all_note"] = "cannot write /proc/sys/vm/drop_caches (not root): no fully cold run"
        return out

    def do_reindex(self) -> dict:
        def one(tag: str) -> dict:
            r = run_measured(kg_cmd("index", str(self.corpus), "--db", str(self.db), "--json"))
            rep = child_json(r)
            return {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_rss_mb": r["peak_rss_mb"], "tree_rss_mb": r["tree_rss_mb"],
                    "tree_pss_mb": r["tree_pss_mb"], "files_loaded": rep.get("files_loaded"),
                    "nodes_modified": rep.get("nodes_modified"), "phases": rep.get("phases"),
                    "steps": {k: {kk: vv for kk, vv in v.items() if not isinstance(vv, (list, dict))}
                              for k, v in (rep.get("steps") or {}).items()}, "what": tag}

        nochange = one("nothing changed")
        self.modify_shard()
        try:
            changed = one("shard-00000.jsonl: one description + ' Revised.'")
        finally:
            self.restore_shard()
        restored = one("shard-00000.jsonl restored")
        return {"nochange": nochange, "onefile": changed, "onefile_restore": restored}

    def do_reindex_edge(self) -> dict:
        """One-file reindex where the change adds an edge, so the graph step splices every edge
        array at every size (a text-only change is written in place)."""
        def one(tag: str) -> dict:
            r = run_measured(kg_cmd("index", str(self.corpus), "--db", str(self.db), "--json"))
            rep = child_json(r)
            return {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_rss_mb": r["peak_rss_mb"], "tree_rss_mb": r["tree_rss_mb"],
                    "tree_pss_mb": r["tree_pss_mb"], "files_loaded": rep.get("files_loaded"),
                    "edges_changed": rep.get("edges_changed"), "phases": rep.get("phases"),
                    "steps": {k: {kk: vv for kk, vv in v.items() if not isinstance(vv, (list, dict))}
                              for k, v in (rep.get("steps") or {}).items()}, "what": tag}

        try:
            what = self.modify_shard_edge()
            added = one(f"shard-00000.jsonl: edge {what} appended")
        finally:
            self.restore_shard()
        removed = one("shard-00000.jsonl restored (the edge removed)")
        return {"edge_added": added, "edge_removed": removed}

    def do_reindex_nodes(self) -> dict:
        """One-file reindexes that change the node set (the in-place row write cannot apply): a
        node appended to a shard file (then removed again by restoring the file), a new file with
        one node, and that file removed. The corpus ends as it began."""
        def one(tag: str) -> dict:
            la = loadavg()
            r = run_measured(kg_cmd("index", str(self.corpus), "--db", str(self.db), "--json"))
            rep = child_json(r)
            return {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_rss_mb": r["peak_rss_mb"], "tree_rss_mb": r["tree_rss_mb"],
                    "tree_pss_mb": r["tree_pss_mb"], "files_loaded": rep.get("files_loaded"),
                    "nodes_added": rep.get("nodes_added"), "nodes_removed": rep.get("nodes_removed"),
                    "phases": rep.get("phases"),
                    "steps": {k: {kk: vv for kk, vv in v.items() if not isinstance(vv, (list, dict))}
                              for k, v in (rep.get("steps") or {}).items()}, "what": tag, "load_before": la}

        out = {}
        try:
            shutil.copyfile(self.shard(), self.backup())
            nid = append_shard_node(self.shard())
            out["node_appended"] = one(f"shard-00000.jsonl: node {nid} (and its edge) appended")
        finally:
            self.restore_shard()
        out["node_removed"] = one("shard-00000.jsonl restored (the node removed)")
        try:
            write_new_shard(self.corpus)
            out["file_added"] = one(f"{NEW_SHARD}: a new file with one node")
        finally:
            self.restore_shard()
        out["file_removed"] = one(f"{NEW_SHARD} removed")
        return out

    def do_dense(self) -> dict:
        r = run_measured(child_cmd("dense", db=str(self.db), queries=str(self.queries_file),
                                   cache=str(self.work / f"vecs-{self.n}")))
        c = child_json(r)
        c["process_peak_rss_mb"] = r["peak_rss_mb"]
        return c

    def do_bm25s(self) -> dict:
        try:
            import bm25s  # noqa: F401
        except ImportError:
            return {"skipped": "bm25s not installed (pip install -e '.[bench]')"}
        d = self.work / f"bm25s-{self.n}"
        b = run_measured(child_cmd("bm25s_build", db=str(self.db), out=str(d)))
        bc = child_json(b)
        q = run_measured(child_cmd("bm25s_query", db=str(self.db), dir=str(d), queries=str(self.queries_file)))
        qc = child_json(q)
        ours = self.res.get("query_bm25", {}).get("top10")
        overlap = None
        if ours:
            ov = [len(set(a) & set(bb)) / max(1, min(10, len(a))) for a, bb in zip(ours, qc["top10"]) if a]
            overlap = round(statistics.fmean(ov), 3) if ov else None
        return {"build_s": bc["build_s"], "tokenize_s": bc["tokenize_s"], "build_peak_rss_mb": b["peak_rss_mb"],
                "p50_ms": round(pct(qc["lat"], 50), 2), "p95_ms": round(pct(qc["lat"], 95), 2),
                "qps": round(len(qc["lat"]) / (sum(qc["lat"]) / 1000), 1),
                "qps_batch": round(len(qc["lat"]) / qc["batch_s"], 1) if qc.get("batch_s") else None,
                "peak_rss_mb": round(qc["hwm_kb"] / 1024, 1), "rss_after_load_mb": round(qc["rss_load_kb"] / 1024, 1),
                "load_s": qc["load_s"], "top10_overlap_with_kgsearch_bm25": overlap, "docs": bc["docs"]}

    def do_pagerank(self) -> dict:
        try:
            import igraph  # noqa: F401
        except ImportError:
            return {"skipped": "igraph not installed (pip install -e '.[bench]')"}
        r = run_measured(child_cmd("pagerank", db=str(self.db), runs=self.args.rival_runs))
        c = child_json(r)
        c["process_peak_rss_mb"] = r["peak_rss_mb"]
        return c


# ---------------------------------------------------------------------------- children
def _status_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def child_query(db: str, queries: str, channels: str | None) -> dict:
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    qs = [q["text"] for q in json.loads(Path(queries).read_text())]
    ix = Index.open(db, readonly=True)
    eng = Engine(ix)
    rss_open = _status_kb("VmRSS")
    opts = SearchOptions(k=10, use_cache=False, channels=channels)
    t = time.perf_counter()
    eng.search(qs[0], opts)
    first = (time.perf_counter() - t) * 1000
    for q in qs:                                   # warm pass
        eng.search(q, opts)
    rss_warm = _status_kb("VmRSS")
    lat, stages, top10, per_query = [], {}, [], []
    r = None
    for q in qs:
        t = time.perf_counter()
        r = eng.search(q, opts)
        lat.append((time.perf_counter() - t) * 1000)
        for k, v in r.timings_ms.items():
            stages.setdefault(k, []).append(v)
        per_query.append(dict(r.timings_ms))
        top10.append([h.id for h in r.hits[:10]])
    return {"lat": lat, "stages": stages, "first_ms": first, "hwm_kb": _status_kb("VmHWM"),
            "rss_open_kb": rss_open, "rss_warm_kb": rss_warm, "channels": r.channels_run if r else [],
            "top10": top10, "per_query": per_query}


def _node_vectors(ix, model, ids, max_chars: int):
    """float32 unit vectors of the nodes ``ids`` (ascending), encoded as the embed step does."""
    import numpy as np

    from kgsearch.embed.embed_step import node_text

    out = np.empty((len(ids), model.dims), dtype=np.float32)
    pos = 0
    batch: list[str] = []
    want = iter(ids.tolist())
    nxt = next(want, None)
    cur = ix.conn.execute("SELECT id, name, kgtext(text) FROM nodes ORDER BY id")

    def flush():
        nonlocal pos, batch
        if batch:
            v = np.asarray(model.encode(batch), dtype=np.float32)
            out[pos:pos + len(v)] = v
            pos += len(v)
            batch = []

    for nid, name, text in cur:
        if nid != nxt:
            continue
        batch.append(node_text(name, text, max_chars))
        nxt = next(want, None)
        if len(batch) >= 4096:
            flush()
    flush()
    if pos != len(ids):
        raise RuntimeError(f"encoded {pos} of {len(ids)} vectors")
    nrm = np.linalg.norm(out, axis=1)
    out /= np.where(nrm > 0, nrm, 1)[:, None]
    return out


def exact_topk(F, Q, k: int = 10, chunk: int = 65536):
    """Exact top-k rows of ``F @ q`` for each query row (ties: smaller row first)."""
    import numpy as np

    nq = len(Q)
    best_s = np.full((nq, 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((nq, 0), dtype=np.int64)
    for s in range(0, len(F), chunk):
        sc = Q @ F[s:s + chunk].T                                   # (nq, c)
        kk = min(k, sc.shape[1])
        part = np.argpartition(-sc, kk - 1, axis=1)[:, :kk]
        cs = np.take_along_axis(sc, part, 1)
        best_s = np.concatenate([best_s, cs], 1)
        best_i = np.concatenate([best_i, part + s], 1)
        o = np.lexsort((best_i, -best_s), axis=1)[:, :k] if best_s.shape[1] > k else np.lexsort((best_i, -best_s), axis=1)
        best_s = np.take_along_axis(best_s, o, 1)
        best_i = np.take_along_axis(best_i, o, 1)
    return best_i, best_s


def child_dense(db: str, queries: str, cache: str) -> dict:
    import numpy as np

    from kgsearch.embed import dense, store
    from kgsearch.embed.embed_step import DEFAULT_MAX_CHARS
    from kgsearch.embed.index_model import query_model
    from kgsearch.store.db import Index

    qs = [q["text"] for q in json.loads(Path(queries).read_text())]
    ix = Index.open(db, readonly=True)
    model = query_model(ix)
    if isinstance(model, str):
        return {"skipped": model}
    ids, _ = store.stored_hashes(ix)
    info = (ix.derived("embed") or {}).get("info") or {}
    max_chars = int(info.get("max_chars", DEFAULT_MAX_CHARS))
    cache_f, cache_i = Path(cache + ".f32.npy"), Path(cache + ".ids.npy")
    t = time.perf_counter()
    if cache_f.exists() and cache_i.exists() and np.array_equal(np.load(cache_i), ids):
        F = np.load(cache_f, mmap_mode="r")
        encoded = False
    else:
        F = _node_vectors(ix, model, ids, max_chars)
        np.save(cache_f, F)
        np.save(cache_i, ids)
        encoded = True
    enc_s = time.perf_counter() - t
    Q = np.asarray(model.encode(qs), dtype=np.float32)
    Q /= np.maximum(np.linalg.norm(Q, axis=1), 1e-30)[:, None]
    ex_i, _ = exact_topk(F, Q, 10)
    exact = [set(ids[r].tolist()) for r in ex_i]
    model_id = ix.meta("model_id")
    rec, lat = [], []
    for q, ex in zip(Q, exact):
        t = time.perf_counter()
        got, _ = dense.search_vector(ix, q, 10, model_id)
        lat.append((time.perf_counter() - t) * 1000)
        rec.append(len(set(got.tolist()) & ex) / 10)
    np.save(cache + ".queries.npy", Q)
    return {"recall_at_10": round(float(np.mean(rec)), 4), "recall_min": float(np.min(rec)),
            "int8_p50_ms": round(pct(lat, 50), 2), "int8_p95_ms": round(pct(lat, 95), 2),
            "vectors": int(len(ids)), "streamed": dense.load_matrix(ix, model_id) is None,
            "encode_s": round(enc_s, 1), "encoded_now": encoded, "hwm_mb": round(_status_kb("VmHWM") / 1024, 1)}


def _bm25_docs(ix):
    from kgsearch.text.postings import stored_params as _stored_params

    st, params = _stored_params(ix)
    an = params.analyzer()
    nw = max(1, int(round(params.name_weight)))
    for nid, name, text in ix.conn.execute("SELECT id, name, kgtext(text) FROM nodes ORDER BY id"):
        yield nid, an(name or "") * nw + an(text or "")


def child_bm25s_build(db: str, out: str) -> dict:
    import numpy as np
    import bm25s

    from kgsearch.store.db import Index

    ix = Index.open(db, readonly=True)
    t = time.perf_counter()
    vocab: dict[str, int] = {}
    docs, nids = [], []
    for nid, toks in _bm25_docs(ix):
        nids.append(nid)
        docs.append([vocab.setdefault(x, len(vocab)) for x in toks])
    tok_s = time.perf_counter() - t
    t = time.perf_counter()
    r = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    r.index((docs, vocab), show_progress=False)
    build_s = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    r.save(out)
    np.save(Path(out) / "node_ids.npy", np.asarray(nids, dtype=np.int64))
    return {"tokenize_s": round(tok_s, 1), "build_s": round(build_s, 1), "docs": len(docs)}


def child_bm25s_query(db: str, dir: str, queries: str) -> dict:
    import numpy as np
    import bm25s

    from kgsearch.store.db import Index
    from kgsearch.text.postings import stored_params as _stored_params

    qs = [q["text"] for q in json.loads(Path(queries).read_text())]
    with Index.open(db, readonly=True) as ix:
        _, params = _stored_params(ix)
        an = params.analyzer()
    t = time.perf_counter()
    r = bm25s.BM25.load(dir, show_progress=False)
    nids = np.load(Path(dir) / "node_ids.npy")
    load_s = time.perf_counter() - t
    rss_load = _status_kb("VmRSS")
    vocab = r.vocab_dict
    toks = [[x for x in an(q) if x in vocab] or [""] for q in qs]
    r.retrieve([toks[0]], k=10, show_progress=False, n_threads=0)          # warm
    lat, top10 = [], []
    for tk in toks:
        t = time.perf_counter()
        docs, _ = r.retrieve([tk], k=10, show_progress=False, n_threads=0)
        lat.append((time.perf_counter() - t) * 1000)
        top10.append(nids[docs[0]].tolist())
    t = time.perf_counter()                        # all 100 in one call (bm25s's batch mode)
    r.retrieve(toks, k=10, show_progress=False, n_threads=0)
    batch_s = time.perf_counter() - t
    return {"lat": lat, "top10": top10, "hwm_kb": _status_kb("VmHWM"), "rss_load_kb": rss_load,
            "load_s": round(load_s, 2), "batch_s": batch_s}


def child_pagerank(db: str, runs: int) -> dict:
    import numpy as np
    import igraph as ig

    from kgsearch.graph.context import load_graph
    from kgsearch.graph.kernels.pagerank import pagerank
    from kgsearch.store.db import Index

    ix = Index.open(db, readonly=True)
    g = load_graph(ix)
    n = g.n
    src, dst = g.src, g.dst
    w = g.weights.astype(np.float64)
    G = ig.Graph(n=n, edges=np.stack([src, dst], 1).tolist(), directed=True)
    wl = w.tolist()
    tol_ix = min(1e-6, 1e-4 / n)
    conf = {"kgsearch_indexer_tol": lambda: pagerank(g, tol=tol_ix, max_iter=1000),
            "kgsearch_tol_1e-6": lambda: pagerank(g, tol=1e-6, max_iter=1000),
            "igraph_prpack": lambda: np.asarray(G.pagerank(weights=wl, damping=0.85, implementation="prpack"))}
    times: dict[str, list[float]] = {k: [] for k in conf}
    vals = {}
    for _ in range(runs):
        for k, f in conf.items():
            g.drop_caches()
            t = time.perf_counter()
            vals[k] = f()
            times[k].append(time.perf_counter() - t)
    ref = vals["igraph_prpack"]
    top = lambda v: set(np.argsort(-v, kind="stable")[:100].tolist())  # noqa: E731
    out = {"nodes": n, "edges": int(g.m), "runs": runs, "tol_indexer": tol_ix}
    for k in conf:
        out[k] = {"median_s": round(statistics.median(times[k]), 4), "runs_s": [round(x, 4) for x in times[k]]}
        if k != "igraph_prpack":
            out[k]["top100_overlap_vs_igraph"] = len(top(vals[k]) & top(ref)) / 100
            out[k]["l1_vs_igraph"] = float(np.abs(vals[k] / vals[k].sum() - ref / ref.sum()).sum())
    ig_t = out["igraph_prpack"]["median_s"]
    out["speedup_indexer_tol_vs_igraph"] = round(ig_t / out["kgsearch_indexer_tol"]["median_s"], 2)
    out["speedup_tol_1e-6_vs_igraph"] = round(ig_t / out["kgsearch_tol_1e-6"]["median_s"], 2)
    return out


CHILDREN = {"query": child_query, "dense": child_dense, "bm25s_build": child_bm25s_build,
            "bm25s_query": child_bm25s_query, "pagerank": child_pagerank}


# ---------------------------------------------------------------------------- report
def fmt(v, unit: str = "", nd: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}{unit}"
    return f"{v}{unit}"


def report(results: dict, mach: dict) -> str:
    sizes = sorted(results, key=int)
    head = "| measure | " + " | ".join(label(int(n)) for n in sizes) + " |"
    sep = "|---|" + "---|" * len(sizes)
    rows: list[tuple[str, list[str]]] = []

    def row(name, fn):
        cells = []
        for n in sizes:
            try:
                cells.append(fn(results[n]))
            except (KeyError, TypeError):
                cells.append("-")
        rows.append((name, cells))

    row("nodes / edges (resolved)", lambda r: f"{r['db']['nodes']:,} / {r['db']['edges']:,}")
    row("commit: index / queries / CLI / reindex",
        lambda r: " / ".join(str(r.get(s, {}).get("code", "-")) for s in ("index", "query_default", "cli", "reindex")))
    row("load average (1 min) before: index / queries / reindex",
        lambda r: " / ".join(fmt((r.get(s, {}).get("load_before") or [None])[0]) for s in ("index", "query_default", "reindex")))
    row("similar_text edges", lambda r: f"{r['db']['similar_text_edges']:,}")
    row("full index wall", lambda r: fmt(r["index"]["wall_s"], " s"))
    row("full index peak RSS (largest process)", lambda r: fmt(r["index"]["peak_rss_mb"], " MiB", 0))
    row("full index peak RSS / PSS (tree sum, sampled)",
        lambda r: f"{r['index']['tree_rss_mb']:.0f} / {r['index']['tree_pss_mb']:.0f} MiB")
    row("index steps s (text / neighbors / embed / graph)",
        lambda r: " / ".join(_step_s(r["index"]["steps"], s) for s in ("text", "neighbors", "embed", "graph")))
    row("neighbors step note", lambda r: str(r["index"]["steps"].get("neighbors", {}).get("skipped", "ran")))
    row("DB size", lambda r: fmt(r["db"]["db_mb"], " MB"))
    for cfg, nm in (("query_default", "default"), ("query_bm25", "BM25-only")):
        row(f"query p50 / p95 / max, {nm}", lambda r, c=cfg: f"{r[c]['p50_ms']:.1f} / {r[c]['p95_ms']:.1f} / "
                                                           f"{fmt(r[c].get('max_ms'))} ms")
        row(f"query process peak RSS, {nm}", lambda r, c=cfg: fmt(r[c]["peak_rss_mb"], " MiB"))
    row("dense stage p50 (default)", lambda r: fmt(r["query_default"]["stages_p50_ms"].get("dense"), " ms"))
    row("stages p50 (default): bm25 / dense / candidates / graph / rank / output",
        lambda r: " / ".join(fmt(r["query_default"]["stages_p50_ms"].get(s)) for s in
                             ("bm25", "dense", "candidates", "graph", "rank", "output")) + " ms")
    row("slowest query's fts stage (default)",
        lambda r: fmt((r["query_default"].get("slowest_stages_ms") or {}).get("fts"), " ms"))
    row("CLI warm (median)", lambda r: fmt(r["cli"]["warm_ms"], " ms", 0))
    row("CLI cold index (DB evicted)", lambda r: fmt(r["cli"]["cold_index_ms"], " ms", 0))
    row("CLI cold all (drop_caches)", lambda r: fmt(r["cli"]["cold_all_ms"], " ms", 0))
    row("reindex, no change", lambda r: f"{r['reindex']['nochange']['wall_s']:.1f} s, "
                                        f"{r['reindex']['nochange']['peak_rss_mb']:.0f} MiB")
    row("reindex, one file changed", lambda r: f"{r['reindex']['onefile']['wall_s']:.1f} s, "
                                              f"{r['reindex']['onefile']['peak_rss_mb']:.0f} MiB")
    row("reindex, the file restored", lambda r: f"{r['reindex']['onefile_restore']['wall_s']:.1f} s, "
                                               f"{r['reindex']['onefile_restore']['peak_rss_mb']:.0f} MiB")
    row("reindex, one file gains an edge", lambda r: f"{r['reindex_edge']['edge_added']['wall_s']:.1f} s, "
                                                  f"{r['reindex_edge']['edge_added']['peak_rss_mb']:.0f} MiB")
    row("reindex, that edge removed again", lambda r: f"{r['reindex_edge']['edge_removed']['wall_s']:.1f} s, "
                                                   f"{r['reindex_edge']['edge_removed']['peak_rss_mb']:.0f} MiB")
    for k, nm in (("node_appended", "a node appended to a file"), ("node_removed", "that node removed again"),
                  ("file_added", "a new file with one node"), ("file_removed", "that file removed")):
        row(f"reindex, {nm}", lambda r, k=k: f"{r['reindex_nodes'][k]['wall_s']:.1f} s, "
                                           f"{r['reindex_nodes'][k]['peak_rss_mb']:.0f} MiB")
    row("dense recall@10, int8 vs exact float", lambda r: fmt(r["dense"]["recall_at_10"], "", 4))
    row("dense int8 search p50 (channel alone)", lambda r: fmt(r["dense"]["int8_p50_ms"], " ms"))
    row("bm25s p50 / qps one query a call / qps 100 a call",
        lambda r: f"{r['bm25s']['p50_ms']:.1f} ms / {r['bm25s']['qps']:.0f} / {fmt(r['bm25s'].get('qps_batch'), '', 0)}")
    row("bm25s query process peak RSS", lambda r: fmt(r["bm25s"]["peak_rss_mb"], " MiB"))
    row("bm25s top-10 overlap with kgsearch BM25", lambda r: fmt(r["bm25s"]["top10_overlap_with_kgsearch_bm25"], "", 3))
    row("kgsearch BM25 channel p50 (bm25 stage)", lambda r: fmt(r["query_bm25"]["stages_p50_ms"].get("bm25"), " ms"))
    row("PageRank kgsearch (indexer tol) / igraph", lambda r: f"{r['pagerank']['kgsearch_indexer_tol']['median_s']:.3f} / "
                                                             f"{r['pagerank']['igraph_prpack']['median_s']:.3f} s "
                                                             f"({r['pagerank']['speedup_indexer_tol_vs_igraph']:.2f}x)")
    row("PageRank kgsearch (tol 1e-6, nx rule) / igraph", lambda r: f"{r['pagerank']['kgsearch_tol_1e-6']['median_s']:.3f} s "
                                                                   f"({r['pagerank']['speedup_tol_1e-6_vs_igraph']:.2f}x)")
    row("PageRank top-100 overlap vs igraph (indexer tol / 1e-6)",
        lambda r: f"{r['pagerank']['kgsearch_indexer_tol']['top100_overlap_vs_igraph']:.2f} / "
                  f"{r['pagerank']['kgsearch_tol_1e-6']['top100_overlap_vs_igraph']:.2f}")
    lines = ["## Scaling benchmark (`python bench/scale.py`)", "",
             f"Machine: {mach['cpu']}, {mach['cores']} cores, {mach['ram_gb']} GB RAM, Python {mach['python']}, "
             f"numpy {mach['numpy']}, SQLite {mach['sqlite']}; shared with other jobs (timings noisy, peak RSS "
             f"reliable). Corpora: make_scale_corpus.py --seed {results[sizes[0]]['corpus']['seed']}; one run per "
             f"size; queries: the corpus's 100 real queries (one warm pass, one timed pass, fresh process per "
             f"config). Peak RSS: largest single process (wait4 ru_maxrss = VmHWM); tree = summed RSS/PSS of "
             f"the index process and its loader workers sampled every 50 ms. See the script's docstring.", "",
             head, sep]
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows]
    return "\n".join(lines) + "\n"


def _step_s(steps: dict, name: str) -> str:
    s = steps.get(name, {})
    if "skipped" in s:
        return "skip"
    return f"{s.get('seconds', 0):.0f}"


# ---------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_child":
        from kgsearch import environment

        environment.configure(environment.from_environ())      # KGSEARCH_MEMORY_MB etc., as the CLI reads them
        out = CHILDREN[argv[1]](**json.loads(argv[2]))
        print(json.dumps(out))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10K,100K,300K,1M")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=str(WORK / "scale"))
    ap.add_argument("--out-dir", default=str(RESULTS))
    ap.add_argument("--redo", default="", help="comma-separated steps to run again: " + ",".join(STEPS))
    ap.add_argument("--skip", default="", help="comma-separated steps not to run now (left for a later run)")
    ap.add_argument("--only-report", action="store_true", help="write the tables from the cached results")
    ap.add_argument("--cold-runs", type=int, default=3)
    ap.add_argument("--warm-runs", type=int, default=5)
    ap.add_argument("--rival-runs", type=int, default=3)
    args = ap.parse_args(argv)
    args.redo = {s for s in args.redo.split(",") if s}
    skip = {s for s in args.skip.split(",") if s}
    bad = (args.redo | skip) - set(STEPS)
    if bad:
        ap.error(f"unknown step(s) {', '.join(sorted(bad))}; steps are {', '.join(STEPS)}")
    Path(args.work).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    for n in sizes:
        sz = Size(n, args)
        if not args.only_report:
            sz.run(skip)
    results = {}
    for f in sorted(Path(args.work).glob("result-*.json")):
        n = f.stem.split("-", 1)[1]
        results[n] = json.loads(f.read_text())
    results = {n: r for n, r in results.items() if "db" in r}
    if not results:
        return 0
    mach = machine()
    slim = {n: {k: ({kk: vv for kk, vv in v.items() if kk != "top10"} if isinstance(v, dict) else v)
                for k, v in r.items()} for n, r in results.items()}
    md = report(results, mach)
    write_results("scale", {"machine": mach, "date": time.strftime("%Y-%m-%d"), "sizes": slim}, md, args.out_dir)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
