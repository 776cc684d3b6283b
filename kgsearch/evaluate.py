"""``kgsearch eval``: retrieval quality on a BEIR folder or on a probe file for your own index.

BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels.tsv``): the corpus is indexed once
into ``<index dir>/<dataset>-<hash>.db`` (title and text as separate fields; the index dir is
``--index-dir``, default ``<data dir>/eval``) and reused while the hash is the same: the corpus
file's path, size and modification time, the index settings and the kgsearch version (each
result names the index it used); every judged query runs through the same pipeline as
``kgsearch search``. Evaluation is of the ranking alone: stored feedback (``kgsearch feedback``)
is ignored unless ``EvalOptions.feedback`` (``--with-feedback``) asks for it, and no session
applies. Metrics: nDCG@10
(gains 2^rel - 1; ``ndcg@10_lin`` uses linear gains as trec_eval), recall@10, recall@100,
MRR@10, P@10, their means over queries with at least one relevant document, and the same per
intent. ``--ablate`` reruns with each channel removed and each channel alone. ``-k`` (default
100) is the results per query; fewer than 100 is a usage error (recall@100 reads 100).

Probe file (JSONL lines ``{"query": ..., "expected": [node keys or names]}``): runs against the
index given by ``--db`` as it is and reports recall@5, recall@10 and MRR@10, with the misses
listed; ``--max-queries`` keeps the first probes, ``--ablate`` reruns them with each channel
removed and each alone, ``-k`` (default 10, at least 10) ranks more hits for the ranks reported in
each miss's ``found`` (expected node: rank); ``--set``, ``--split``, ``--index-dir`` and ``--rebuild`` are about a BEIR folder's
evaluation index (with a probe file a usage error, as ``--db`` is with a BEIR folder), and a file
with no probe is bad input (exit 3).
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import DataError, UsageError
from .lines import quoted

METRICS = ("ndcg@10", "ndcg@10_lin", "recall@10", "recall@100", "mrr@10", "p@10")
PROBE_METRICS = ("recall@5", "recall@10", "mrr@10")
BEIR_K = 100                       # results per query a BEIR folder is scored on (recall@100)
PROBE_K = 10                       # a probe file's (recall@10, MRR@10)


@dataclass
class EvalOptions:
    channels: str | list[str] | None = None
    ablate: bool = False
    k: int | None = None               # results per query (None: 100 for a BEIR folder, 10 for probes)
    max_queries: int | None = None
    split: str | None = None
    index_dir: str | None = None
    rebuild: bool = False
    settings: dict = field(default_factory=dict)
    fusion: str | None = None
    intent: str | None = None
    weights: str | None = None
    db: str | None = None
    progress: object = None
    feedback: bool = False             # let stored feedback nudge the ranking (off: the ranking alone)


# ---------------------------------------------------------------------------- metrics
def dcg(gains: list[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def query_metrics(ranked: list[str], rels: dict[str, int]) -> dict[str, float]:
    """Metrics for one query. ``ranked``: doc ids best first; ``rels``: doc id -> graded relevance."""
    relevant = {d for d, r in rels.items() if r > 0}
    top10 = ranked[:10]
    exp_gain = [(2 ** rels.get(d, 0) - 1) if rels.get(d, 0) > 0 else 0 for d in top10]
    lin_gain = [max(rels.get(d, 0), 0) for d in top10]
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:10]
    idcg_exp = dcg([2 ** r - 1 for r in ideal])
    idcg_lin = dcg([float(r) for r in ideal])
    rr = 0.0
    for i, d in enumerate(top10):
        if d in relevant:
            rr = 1.0 / (i + 1)
            break
    n_rel = len(relevant)
    return {
        "ndcg@10": dcg(exp_gain) / idcg_exp if idcg_exp else 0.0,
        "ndcg@10_lin": dcg(lin_gain) / idcg_lin if idcg_lin else 0.0,
        "recall@10": len(relevant.intersection(top10)) / n_rel if n_rel else 0.0,
        "recall@100": len(relevant.intersection(ranked[:100])) / n_rel if n_rel else 0.0,
        "mrr@10": rr,
        "p@10": len(relevant.intersection(top10)) / 10.0,
    }


def mean_metrics(per_query: list[dict[str, float]]) -> dict[str, float]:
    if not per_query:
        return {m: 0.0 for m in METRICS}
    return {m: round(sum(q[m] for q in per_query) / len(per_query), 4) for m in METRICS}


# ---------------------------------------------------------------------------- BEIR files
def _read_jsonl(path: Path, lines: list[int] | None = None) -> list[dict]:
    """The records of a JSON Lines file (blank lines skipped); ``lines`` gets each one's line."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
                if lines is not None:
                    lines.append(lineno)
            except json.JSONDecodeError as exc:
                raise DataError(f"invalid JSON ({exc.msg})", str(path), lineno) from None
            except RecursionError:
                raise DataError("invalid JSON (nested too deeply to read)", str(path), lineno) from None
    return out


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                parts = line.split()
            if len(parts) < 3:
                continue
            if lineno == 1 and not parts[2].lstrip("-").isdigit():
                continue   # header
            try:
                score = int(float(parts[2]))
            except ValueError:
                raise DataError("qrels lines must be query-id<TAB>corpus-id<TAB>score", str(path), lineno) from None
            qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


def find_qrels(folder: Path, split: str | None) -> Path:
    names = [f"qrels.{split}.tsv", split] if split else ["qrels.tsv", "qrels.test.tsv"]
    for n in names:
        if n and (folder / n).is_file():
            return folder / n
    raise DataError(f"no qrels file ({' or '.join(n for n in names if n)}); a BEIR folder needs corpus.jsonl, "
                    f"queries.jsonl and qrels.tsv", str(folder))


# ---------------------------------------------------------------------------- running
def _channels_list(ch) -> list[str] | None:
    if ch is None:
        return None
    if isinstance(ch, str):
        return [c.strip() for c in ch.split(",") if c.strip()]
    return list(ch)


def eval_index_path(folder: Path, opts: EvalOptions) -> Path:
    """Where the evaluation index of ``folder`` lives: named by a hash of the corpus file (path,
    size, modification time), the settings and the kgsearch version, so an index made from
    another corpus file, other settings or by another kgsearch is never reused."""
    from .config import data_home
    from .version import __version__

    base = Path(opts.index_dir).expanduser() if opts.index_dir else data_home() / "eval"
    corpus = (folder / "corpus.jsonl").resolve()
    st = corpus.stat()
    sig = json.dumps({"corpus": str(corpus), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                      "settings": opts.settings, "kgsearch": __version__}, sort_keys=True)
    digest = hashlib.sha1(sig.encode()).hexdigest()[:10]
    return base / f"{folder.resolve().name}-{digest}.db"


def build_eval_index(folder: Path, opts: EvalOptions):
    from .indexer import IndexOptions, index_paths

    db = eval_index_path(folder, opts)
    if opts.rebuild:
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(db) + suffix)
            if p.exists():
                p.unlink()
    report = index_paths(db, [str(folder / "corpus.jsonl")],
                         IndexOptions(fmt="beir", settings=dict(opts.settings), progress=opts.progress))
    return db, report


def run_queries(engine, queries: list[tuple[str, str]], sopts, qrels: dict) -> dict:
    """Run queries; returns per-query metrics, mean metrics, per-intent means, timings."""
    per_query = []
    per_intent: dict[str, list[dict]] = {}
    times = []
    channels_run: set[str] = set()
    for qid, text in queries:
        t0 = time.perf_counter()
        resp = engine.search(text, sopts)
        times.append(time.perf_counter() - t0)
        ranked = [h.key[4:] if h.key.startswith("doc:") else h.key for h in resp.hits]
        m = query_metrics(ranked, qrels[qid])
        m["qid"] = qid
        m["intent"] = resp.intent["name"]
        per_query.append(m)
        per_intent.setdefault(resp.intent["name"], []).append(m)
        channels_run.update(resp.channels_run)
    times.sort()
    return {
        "metrics": mean_metrics(per_query),
        "per_intent": {k: {"queries": len(v), **mean_metrics(v)} for k, v in sorted(per_intent.items())},
        "per_query": per_query,
        "channels_run": sorted(channels_run),
        "query_ms": {"p50": round(1000 * times[len(times) // 2], 2) if times else 0.0,
                     "mean": round(1000 * sum(times) / len(times), 2) if times else 0.0},
    }


def _depth(k: int | None, least: int, scored: str) -> int:
    """``-k``: ``least`` when not given; below it a usage error saying what the run is scored on
    (``scored``, with ``{}`` for ``least``)."""
    if k is None:
        return least
    if k < least:
        raise UsageError(f"-k {k}: {scored.format(least)}; leave -k out or give {least} or more")
    return k


def evaluate_beir(folder: Path, opts: EvalOptions) -> dict:
    from .query import DEFAULT_CHANNELS, Engine, SearchOptions
    from .store.db import Index

    t_start = time.perf_counter()
    if opts.db:
        raise UsageError(f"--db {opts.db}: a BEIR folder is indexed into its own evaluation index (--index-dir, "
                         f"--rebuild); --db names the index a probe file runs against")
    k = _depth(opts.k, BEIR_K, "a BEIR folder is scored on {} results per query (recall@100)")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise DataError(f"missing {name}; a BEIR folder needs corpus.jsonl, queries.jsonl and qrels.tsv",
                            str(folder))
    qrels_path = find_qrels(folder, opts.split)
    qrels = {q: r for q, r in read_qrels(qrels_path).items() if any(v > 0 for v in r.values())}
    queries = [(str(q["_id"]), str(q.get("text", ""))) for q in _read_jsonl(folder / "queries.jsonl")
               if str(q.get("_id")) in qrels]
    if opts.max_queries:
        queries = queries[:opts.max_queries]
    if not queries:
        raise DataError("no query in queries.jsonl has a relevant document in the qrels file", str(qrels_path))
    db, report = build_eval_index(folder, opts)
    index_seconds = report.seconds
    channels = _channels_list(opts.channels)
    result: dict = {"dataset": folder.resolve().name, "queries": len(queries), "qrels": qrels_path.name,
                    "index": str(db), "index_seconds": index_seconds, "settings": opts.settings}
    with Index.open(db, readonly=True) as ix:
        engine = Engine(ix)
        sopts = SearchOptions(k=k, channels=channels, fusion=opts.fusion, intent=opts.intent,
                              weights=opts.weights, snippets=False, feedback=opts.feedback)
        main = run_queries(engine, queries, sopts, qrels)
        result["channels"] = main["channels_run"]
        result["requested_channels"] = channels or list(DEFAULT_CHANNELS)
        result["metrics"] = main["metrics"]
        result["per_intent"] = main["per_intent"]
        result["query_ms"] = main["query_ms"]
        result["notices"] = engine.notices()
        if opts.ablate:
            result["ablation"] = _ablation(main["channels_run"], main["metrics"],
                                           lambda chans: run_queries(engine, queries, _with_channels(sopts, chans),
                                                                     qrels)["metrics"])
        result["per_query"] = [{"qid": q["qid"], "intent": q["intent"], "ndcg@10": round(q["ndcg@10"], 4)}
                               for q in main["per_query"]]
    result["seconds"] = round(time.perf_counter() - t_start, 2)
    return result


def _ablation(base: list[str], metrics: dict, run) -> list[dict]:
    """``--ablate``: the rows ``all``, ``-CHANNEL`` (each removed) and ``CHANNEL only``;
    ``run(channels)`` gives the metrics of one run. A set of graph channels alone is no row: they
    spread from a first stage, and without one answer nothing (a usage error)."""
    from .query.channels import GRAPH_CHANNELS

    def answers(chans: list[str]) -> bool:      # graph channels alone have no first stage to spread from
        return any(x not in GRAPH_CHANNELS for x in chans)

    rows = [{"run": "all", "channels": base, **metrics}]
    for c in base:
        rest = [x for x in base if x != c]
        if rest and answers(rest):
            rows.append({"run": f"-{c}", "channels": rest, **run(rest)})
    for c in base:
        if answers([c]):
            rows.append({"run": f"{c} only", "channels": [c], **run([c])})
    return rows


def _with_channels(sopts, channels):
    from dataclasses import replace

    return replace(sopts, channels=list(channels))


# ---------------------------------------------------------------------------- probes
def evaluate_probes(path: Path, opts: EvalOptions) -> dict:
    from .query import Engine, SearchOptions
    from .store.db import Index

    t_start = time.perf_counter()
    if opts.settings:
        raise UsageError(f"--set {next(iter(opts.settings))}=...: a probe file runs against the index of --db as "
                         f"it is; --set builds a BEIR folder's evaluation index (to try a setting on your index, "
                         f"reindex a copy of it, e.g. `kgsearch index --stemmer light --db COPY`)")
    for flag, given in (("--split", opts.split), ("--index-dir", opts.index_dir), ("--rebuild", opts.rebuild)):
        if given:
            raise UsageError(f"{flag}: a probe file runs against the index of --db as it is; {flag} is about a "
                             f"BEIR folder's qrels and evaluation index (leave it out)")
    k = _depth(opts.k, PROBE_K, "a probe file is scored on {} hits per probe (recall@10, MRR@10)")
    lines: list[int] = []
    probes = _read_jsonl(path, lines)
    for lineno, p in zip(lines, probes):
        if not _runnable(p):
            raise DataError('each probe line needs {"query": "...", "expected": ["node key or name", ...]} '
                            '(a non-empty query and at least one expected key or name)', str(path), lineno)
    if not probes:
        raise DataError('no probe in the file; each line needs {"query": "...", "expected": ["node key or name", '
                        '...]}', str(path))
    if opts.max_queries:
        probes = probes[:opts.max_queries]
    with Index.open(opts.db, readonly=True) as ix:
        used = str(ix.path)                  # (--db, else $KGSEARCH_DB or the default index: the one read)
        engine = Engine(ix)
        sopts = SearchOptions(k=k, channels=_channels_list(opts.channels), fusion=opts.fusion,
                              intent=opts.intent, weights=opts.weights, snippets=False, feedback=opts.feedback)
        rows, channels_run = _run_probes(engine, probes, sopts)
        unknown = _unknown_expected(ix, probes)
        ablation = None
        if opts.ablate:
            base = sorted(channels_run)
            ablation = _ablation(base, _probe_means(rows), lambda chans: _probe_means(
                _run_probes(engine, probes, _with_channels(sopts, chans))[0]))
    by_intent: dict[str, list] = {}
    for r in rows:
        by_intent.setdefault(r["intent"], []).append(r)
    out = {
        "dataset": path.name, "queries": len(rows), "index": used,
        "metrics": _probe_means(rows),
        "per_intent": {k: {"queries": len(v), **_probe_means(v)} for k, v in sorted(by_intent.items())},
        "misses": [{"query": r["query"], "expected": r["expected"], "top": r["top"], "found": r["found"]}
                   for r in rows if r["recall@10"] < 1.0],
        "unknown_expected": unknown,
    }
    if ablation is not None:
        out["channels"] = sorted(channels_run)
        out["ablation"] = ablation
    out["seconds"] = round(time.perf_counter() - t_start, 2)
    return out


def _runnable(p) -> bool:
    """A probe with a query to search (a non-blank string: ``null`` was searched as "None") and
    something to find (``[]`` always missed); expected items are keys or names (an id may be a
    JSON number)."""
    if not isinstance(p, dict) or not isinstance(p.get("query"), str) or not p["query"].strip():
        return False
    expected = p.get("expected")
    return (isinstance(expected, list) and bool(expected)
            and all(isinstance(e, (str, int)) and not isinstance(e, bool) and str(e).strip() for e in expected))


def _unknown_expected(ix, probes: list[dict]) -> list[dict]:
    """``[{probe, query, expected}]``: each expected node no node of the index answers to (by key,
    qualified name, name or alias, as ``show`` finds one): a typo, or a note renamed since the probe
    was written; it can never be found, so the recall it costs measures the file, not the search."""
    from .store.rows import find_node_rows

    return [{"probe": i, "query": p["query"], "expected": str(e)} for i, p in enumerate(probes, 1)
            for e in p["expected"] if not find_node_rows(ix.conn, str(e), limit=1)]


def _probe_means(rows: list[dict]) -> dict:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in PROBE_METRICS}


def _run_probes(engine, probes: list[dict], sopts) -> tuple[list[dict], set[str]]:
    """Each probe's row (where its expected nodes ranked, recall@5/@10, MRR@10) and the channels run."""
    rows, channels_run = [], set()
    for p in probes:
        resp = engine.search(p["query"], sopts)
        channels_run.update(resp.channels_run)
        expected = [str(e) for e in p["expected"]]
        found_at = {}
        for rank, h in enumerate(resp.hits, 1):
            # a section of a long note counts as its note
            names = {h.key, h.name.lower(), (h.qualname or "").lower()} | ({h.parent} if h.parent else set())
            for e in expected:
                if e not in found_at and (e in names or e.lower() in names):
                    found_at[e] = rank
        first = min(found_at.values()) if found_at else None
        n = len(expected) or 1
        rows.append({
            "query": p["query"], "intent": resp.intent["name"], "expected": expected,
            "found": found_at,
            "recall@5": sum(1 for r in found_at.values() if r <= 5) / n,
            "recall@10": sum(1 for r in found_at.values() if r <= 10) / n,
            "mrr@10": 1.0 / first if first and first <= 10 else 0.0,
            "top": [h.key for h in resp.hits[:5]],
        })
    return rows, channels_run


def evaluate(target: str, opts: EvalOptions | None = None) -> dict:
    opts = opts or EvalOptions()
    if opts.max_queries is not None and opts.max_queries < 1:
        raise UsageError(f"--max-queries must be a whole number >= 1, got {opts.max_queries}")
    from .settings import IndexSettings

    try:
        IndexSettings.from_dict(opts.settings)           # an unknown key or a bad value, before any work
    except UsageError as exc:
        raise UsageError(f"--set: {exc}") from None
    p = Path(target).expanduser()
    if p.is_dir():
        return evaluate_beir(p, opts)
    if p.is_file():
        return evaluate_probes(p, opts)
    if not p.exists():
        raise UsageError(f"{target}: no such file or folder; check the path")
    raise UsageError(f"{target}: not a BEIR folder or a probes .jsonl file")


def _listed(keys) -> str:
    """A probe's expected or found keys, each quoted as typed (a list's repr doubled a backslash)."""
    return "[" + ", ".join(quoted(k) for k in keys) + "]"


def format_eval(result: dict) -> str:
    """A Markdown table for the terminal."""
    lines = []
    if "ndcg@10" in result.get("metrics", {}):
        lines.append(f"## {result['dataset']}: {result['queries']} queries, channels {', '.join(result['channels'])}")
        lines.append("")
        lines.append("| metric | value |")
        lines.append("|---|---|")
        for m in METRICS:
            lines.append(f"| {m} | {result['metrics'][m]:.4f} |")
        if result.get("per_intent"):
            lines.append("")
            lines.append("| intent | queries | nDCG@10 | recall@100 | MRR@10 |")
            lines.append("|---|---|---|---|---|")
            for k, v in result["per_intent"].items():
                lines.append(f"| {k} | {v['queries']} | {v['ndcg@10']:.4f} | {v['recall@100']:.4f} | {v['mrr@10']:.4f} |")
        if result.get("ablation"):
            lines.append("")
            lines.append("| run | nDCG@10 | recall@100 | MRR@10 |")
            lines.append("|---|---|---|---|")
            for r in result["ablation"]:
                lines.append(f"| {r['run']} | {r['ndcg@10']:.4f} | {r['recall@100']:.4f} | {r['mrr@10']:.4f} |")
        lines.append("")
        lines.append(f"query p50 {result['query_ms']['p50']} ms; index {result['index_seconds']} s; "
                     f"total {result['seconds']} s")
    else:
        lines.append(f"## {result['dataset']}: {result['queries']} probes")
        lines.append("")
        lines.append("| metric | value |")
        lines.append("|---|---|")
        for m, v in result["metrics"].items():
            lines.append(f"| {m} | {v:.4f} |")
        if result.get("ablation"):
            lines.append("")
            lines.append("| run | recall@5 | recall@10 | MRR@10 |")
            lines.append("|---|---|---|---|")
            for r in result["ablation"]:
                lines.append(f"| {r['run']} | {r['recall@5']:.4f} | {r['recall@10']:.4f} | {r['mrr@10']:.4f} |")
        for miss in result.get("misses", []):
            lines.append(f"- missed: {quoted(miss['query'])} expected {_listed(miss['expected'])} "
                         f"got {_listed(miss['top'])}")
        for u in result.get("unknown_expected", []):
            lines.append(f"- probe {u['probe']} expects {quoted(u['expected'])}: no node has this key or name "
                         f"(a typo? it cannot be found)")
    return "\n".join(lines)
