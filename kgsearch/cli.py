"""Command line: argument parsing and output only; every command calls one library function.

Results go to stdout (a table, or JSON with ``--json``); diagnostics, warnings and progress go
to stderr. Each command imports what it needs when it runs, so ``kgsearch --help`` stays fast.
Exit codes are listed in ``kgsearch --help`` and in the README.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from . import __version__
from .errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, KgsearchError

EXIT_CODES = """exit codes:
  0   success
  1   internal error (a bug: please report it with the command you ran)
  2   usage error (bad flags or arguments)
  3   bad input data (the message names file:line); an index run that hit it changed nothing,
      or, with --keep-going, skipped the named files
  4   index missing, unreadable, or made by a newer kgsearch
  5   nothing found (show, why)
  75  another `kgsearch index` holds the lock: nothing was changed, try again later
  130 interrupted (Ctrl-C): nothing was changed
"""


# ---------------------------------------------------------------------------- output helpers
def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=_json_default) + "\n")


def _json_default(o):
    try:
        import numpy as np
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if hasattr(o, "as_dict"):
        return o.as_dict()
    if hasattr(o, "__dict__"):
        return o.__dict__
    return str(o)


def _table(rows: list[list], header: list[str]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _warn_list(warnings: list[str], quiet: bool, limit: int = 20) -> None:
    if quiet:
        return
    for w in warnings[:limit]:
        _err(f"warning: {w}")
    if len(warnings) > limit:
        _err(f"warning: ... and {len(warnings) - limit} more (use --json to see all)")


class Progress:
    """Files/s and ETA on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.phase = ""

    def __call__(self, ev: dict) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        phase = ev.get("phase", "")
        done, total = ev.get("done"), ev.get("total")
        if phase == self.phase and now - self.last < 0.2 and done != total:
            return
        self.last, self.phase = now, phase
        if done is not None and total:
            rate = done / max(now - self.t0, 1e-9)
            eta = (total - done) / rate if rate > 0 else 0
            unit = "files" if phase == "load" else "items"
            msg = f"{phase}: {done}/{total} {unit} ({rate:.1f}/s, ETA {int(eta) // 60}:{int(eta) % 60:02d})"
        else:
            msg = f"{phase}..."
        sys.stderr.write("\r\033[K" + msg[:120])
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.phase:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


# ---------------------------------------------------------------------------- commands
def cmd_index(args) -> int:
    from .indexer import IndexOptions, index_paths

    settings = {}
    if args.model is not None:
        settings["model"] = args.model
    if args.stemmer is not None:
        settings["stemmer"] = args.stemmer
    if args.embed is not None:
        settings["embed"] = args.embed          # persisted like the other settings
    steps = None
    progress = Progress(sys.stderr.isatty() and not args.quiet)
    opts = IndexOptions(fmt=args.format, allow_dangling=args.allow_dangling, keep_going=args.keep_going,
                        full=args.full, max_file_bytes=int(args.max_file_size * 1e6), settings=settings,
                        steps=steps, progress=progress)
    try:
        report = index_paths(args.db, args.paths, opts)
    finally:
        progress.done()
    if args.json:
        _emit_json(report.as_dict())
    else:
        _warn_list(report.warnings, args.quiet)
        if not args.quiet:
            changed = report.nodes_added + report.nodes_modified + report.nodes_removed
            _err(f"indexed {report.files_loaded} changed file(s), {report.files_unchanged} unchanged, "
                 f"{report.files_deleted} deleted: +{report.nodes_added} ~{report.nodes_modified} "
                 f"-{report.nodes_removed} nodes in {report.seconds:.2f}s "
                 f"(generation {report.generation}{'' if changed or report.edges_changed else ', no change'})")
            for name, info in report.steps.items():
                note = info.get("notice") or info.get("skipped")
                if note:
                    _err(f"note: {name}: {note}")
            if report.compacted_bytes:
                _err(f"note: compacted the index file: {report.compacted_bytes / 1e6:.1f} MB smaller "
                     f"({report.phases.get('compact', 0):.1f}s)")
    if report.partial:
        _err(f"error: {report.files_failed} file(s) could not be indexed (see warnings); the rest was committed")
        return 3
    return EXIT_OK


def cmd_stats(args) -> int:
    from .store.db import Index
    from .stats import index_stats

    with Index.open(args.db, readonly=True) as ix:
        st = index_stats(ix)
    if args.json:
        _emit_json(st)
        return EXIT_OK
    _out(f"index       {st['db']}")
    _out(f"size        {st['db_bytes'] / 1e6:.1f} MB   generation {st['generation']}   "
         f"schema {st['schema_version']}   made by kgsearch {st['created_with']}")
    _out(f"last index  {st['last_index_time_iso'] or 'never'}")
    _out(f"roots       {', '.join(st['roots']) or '-'}")
    _out(f"files       {st['files']}   nodes {st['nodes']}   edges {st['edges']} "
         f"({st['edges_unresolved']} unresolved)")
    _out("")
    _out(_table([[k, v] for k, v in st["nodes_by_kind"].items()], ["node kind", "count"]))
    _out("")
    _out(_table([[k, v] for k, v in st["edges_by_type"].items()], ["edge type", "count"]))
    if st["derived"]:
        _out("")
        _out(_table([[k, v["generation"], f"{v['seconds']:.2f}s"] for k, v in st["derived"].items()],
                    ["derived data", "generation", "last cost"]))
    return EXIT_OK


def cmd_show(args) -> int:
    from .stats import show_node
    from .store.db import Index

    with Index.open(args.db, readonly=True) as ix:
        info = show_node(ix, args.node, limit=args.edges)
    if args.json:
        _emit_json(info)
        return EXIT_OK
    n = info["node"]
    loc = f"{n['path']}:{n['line_start']}" if n.get("path") and n.get("line_start") else (n.get("path") or "")
    _out(f"{n['name']}  [{n['kind']}]  {n['key']}")
    if loc:
        _out(f"  {loc}")
    if n.get("qualname") and n["qualname"] != n["name"]:
        _out(f"  {n['qualname']}")
    text = (n.get("text") or "").strip()
    if text:
        _out("")
        for line in text.splitlines()[:args.lines]:
            _out("  " + line)
        if len(text.splitlines()) > args.lines:
            _out("  ...")
    for title, key in (("outgoing", "out"), ("incoming", "in")):
        edges = info[key]
        if edges:
            _out("")
            _out(f"{title} edges ({info[key + '_total']}):")
            for e in edges:
                arrow = "->" if key == "out" else "<-"
                _out(f"  {arrow} {e['type']:<14} {e['name']}  [{e['kind']}]  {e['key']}")
    return EXIT_OK


def cmd_search(args) -> int:
    from .pipeline import SearchOptions, search

    opts = SearchOptions(k=args.k, intent=args.intent, weights=args.weights, fusion=args.fusion,
                         channels=args.channels, explain=args.explain, use_cache=not args.no_cache, norm=args.norm,
                         diversity=args.diversity)
    resp = search(args.query, db=args.db, options=opts)
    for notice in resp.notices:
        if not args.quiet:
            _err(f"note: {notice}")
    if args.json:
        _emit_json(resp.as_dict())
        return EXIT_OK
    from .pipeline import format_response

    _out(format_response(resp, explain=args.explain))
    return EXIT_OK


def cmd_why(args) -> int:
    from .pipeline import SearchOptions, format_why, why

    opts = SearchOptions(k=args.k, intent=args.intent, weights=args.weights, fusion=args.fusion,
                         channels=args.channels, explain=True, use_cache=False, norm=args.norm,
                         diversity=args.diversity)
    info = why(args.query, args.node, db=args.db, options=opts)
    if args.json:
        _emit_json(info)
    else:
        _out(format_why(info))
    return EXIT_OK


def cmd_eval(args) -> int:
    from .evaluate import EvalOptions, evaluate, format_eval

    opts = EvalOptions(channels=args.channels, ablate=args.ablate, k=args.k, max_queries=args.max_queries,
                       split=args.split, index_dir=args.index_dir, rebuild=args.rebuild,
                       settings=_parse_settings(args.set), fusion=args.fusion, intent=args.intent,
                       weights=args.weights, db=args.db_explicit)
    result = evaluate(args.target, opts)
    if args.json:
        _emit_json(result)
    else:
        _out(format_eval(result))
    return EXIT_OK


def cmd_bench(args) -> int:
    from .bench import BenchOptions, format_bench, run_bench

    opts = BenchOptions(db=args.db_explicit, corpus=args.corpus, queries=args.queries, out=args.out,
                        cold_runs=args.cold_runs)
    result = run_bench(opts)
    if args.json:
        _emit_json(result)
    else:
        _out(format_bench(result))
    if args.out and not args.quiet:
        _err(f"saved {args.out}")
    return EXIT_OK


def cmd_demo(args) -> int:
    from .demo import run_demo

    resp, report = run_demo(args.query, db=args.db_explicit, k=args.k, quiet=args.quiet)
    if args.json:
        _emit_json(resp.as_dict())
        return EXIT_OK
    from .pipeline import format_response

    _out(format_response(resp, explain=args.explain))
    return EXIT_OK


def cmd_model(args) -> int:
    from . import embed

    if args.model_cmd == "pull":
        path = embed.pull_model(args.name, dest=args.dest)
        _out(str(path))
        return EXIT_OK
    models = embed.list_models()
    if args.json:
        _emit_json(models)
    else:
        rows = [[m.get("name", ""), m.get("dims", ""), m.get("path", ""), m.get("source", "")] for m in models]
        _out(_table(rows, ["model", "dims", "path", "source"]) if rows else "no models found")
    return EXIT_OK


def _parse_settings(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            from .errors import UsageError
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


# ---------------------------------------------------------------------------- parser
def _common(db_required: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                   help="index file (default: $KGSEARCH_DB, else $XDG_DATA_HOME/kgsearch/index.db)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output on stdout")
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no notes or progress on stderr")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging on stderr")
    return p


def _query_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-k", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--intent", default=None,
                   help="force an intent profile (exact_match, debugging, capability_check, workflow, comparison, "
                        "goal_based, exploratory, semantic, default)")
    p.add_argument("--weights", default=None, metavar="A,B,G,D",
                   help="override the fusion weights: embedding,text,graph,intent-edges (e.g. .4,.45,.15,0)")
    p.add_argument("--fusion", choices=["linear", "rrf"], default=None, help="fusion mode (default linear)")
    p.add_argument("--channels", default=None, metavar="LIST",
                   help="comma-separated channels to run (default: bm25,fts,dense,graph,intent,pattern,equiv,"
                        "local,global; also prf = RM3 feedback). fts and pattern run only for phrase/boolean "
                        "and identifier queries unless asked for alone")
    p.add_argument("--diversity", type=float, default=None, metavar="F",
                   help="multiply the first hit of each new graph community by F (e.g. 1.05; default off)")
    p.add_argument("--norm", choices=["z", "max", "minmax", "auto"], default="z",
                   help="score normalisation before fusion (default z: standardised over the whole index)")


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="kgsearch",
        description="Offline knowledge-graph hybrid search: index notes, code, knowledge graphs and text "
                    "into one SQLite file; search with BM25 + embeddings + graph signals.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kgsearch {__version__}")
    parser.add_argument("--db", metavar="PATH", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", default=False, help=argparse.SUPPRESS)
    parser.add_argument("-q", "--quiet", action="store_true", default=False, help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true", default=False, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="index or incrementally reindex files and folders",
                       description="Index folders/files (Markdown vaults, Python code, KG JSON/JSONL/CSV, text). "
                                   "Only changed files are re-read. With no PATH, reindex the roots already "
                                   "in the index (for cron).")
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--format", default=None, choices=["kg", "markdown", "python", "text", "beir"],
                   help="force a loader instead of choosing by file type")
    p.add_argument("--allow-dangling", action="store_true",
                   help="KG edges to unknown nodes create placeholder nodes instead of failing")
    p.add_argument("--keep-going", action="store_true",
                   help="skip files that fail to load (exit code 3) instead of failing the whole run")
    p.add_argument("--full", action="store_true", help="re-read every file and rebuild all derived data")
    p.add_argument("--max-file-size", type=float, default=16.0, metavar="MB", help="skip larger files (default 16)")
    p.add_argument("--model", default=None, metavar="PATH|NAME",
                   help="embedding model (a model2vec folder or a pulled model name); changing it re-embeds")
    p.add_argument("--stemmer", default=None, choices=["porter2", "light", "none"], help="stemmer (changing it rebuilds postings)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--no-embed", dest="embed", action="store_false", default=None,
                   help="no embeddings: drop stored vectors, dense channel off (remembered for later runs)")
    g.add_argument("--embed", dest="embed", action="store_true", default=None,
                   help="embed again after --no-embed (remembered)")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("search", parents=[common], help="hybrid search",
                       description="Search the index: BM25 + FTS5 + embeddings + graph signals fused by intent.")
    p.add_argument("query")
    _query_options(p)
    p.add_argument("--explain", action="store_true", help="show each signal's part of every score")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("why", parents=[common], help="why a node ranked where it did for a query")
    p.add_argument("query")
    p.add_argument("node", help="node key, qualified name or name")
    _query_options(p)
    p.set_defaults(func=cmd_why)

    p = sub.add_parser("show", parents=[common], help="a node with its edges")
    p.add_argument("node", help="node key (e.g. md:notes/foo), qualified name or name")
    p.add_argument("--edges", type=int, default=25, help="edges to list per direction (default 25)")
    p.add_argument("--lines", type=int, default=12, help="text lines to show (default 12)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("stats", parents=[common], help="counts by kind and edge type, size, last index time")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("eval", parents=[common], help="evaluate on a BEIR folder or a probes JSONL file",
                       description="BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv): nDCG@10, recall@10/100, "
                                   "MRR@10, P@10. Probe file (JSONL of {query, expected}): recall@5/@10, MRR "
                                   "against the index given by --db.")
    p.add_argument("target", metavar="DIR|PROBES.jsonl")
    p.add_argument("--channels", default=None, metavar="LIST", help="channels to run (default: the full pipeline)")
    p.add_argument("--ablate", action="store_true", help="also run with each channel removed and each alone")
    p.add_argument("-k", type=int, default=100, help="results per query (default 100)")
    p.add_argument("--max-queries", type=int, default=None, help="use only the first N queries")
    p.add_argument("--split", default=None, help="qrels split (default: qrels.tsv, else qrels.test.tsv)")
    p.add_argument("--index-dir", default=None, help="where evaluation indexes are kept (default: data dir/eval)")
    p.add_argument("--rebuild", action="store_true", help="rebuild the evaluation index")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="index setting, e.g. stemmer=light")
    p.add_argument("--fusion", choices=["linear", "rrf"], default=None)
    p.add_argument("--intent", default=None)
    p.add_argument("--weights", default=None)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("bench", parents=[common], help="on-device benchmark (index time, latency, RSS, start-up)")
    p.add_argument("--corpus", default=None, metavar="demo|stdlib|PATH",
                   help="built-in corpus to index and query when --db is not given (default demo)")
    p.add_argument("--queries", type=int, default=200, help="queries to time (default 200)")
    p.add_argument("--cold-runs", type=int, default=5, metavar="N",
                   help="CLI start-up measurements (median reported; default 5)")
    p.add_argument("--out", default=None, metavar="FILE", help="also write the JSON result here")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("demo", parents=[common], help="index the built-in demo knowledge base and search it")
    p.add_argument("query", nargs="?", default=None)
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--explain", action="store_true")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("model", parents=[common], help="embedding models: list, pull (needs model2vec + network)")
    msub = p.add_subparsers(dest="model_cmd", metavar="ACTION")
    pp = msub.add_parser("pull", parents=[common], help="download a model2vec model from the Hugging Face Hub")
    pp.add_argument("name", help="e.g. minishlab/potion-base-8M")
    pp.add_argument("--dest", default=None, help="folder to save into (default: data dir/models)")
    msub.add_parser("list", parents=[common], help="models kgsearch can use here")
    p.set_defaults(func=cmd_model)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    args.db_explicit = args.db
    if args.verbose:
        import logging
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    elif not args.quiet:
        import logging
        logging.basicConfig(level=logging.WARNING, format="note: %(message)s")
    if args.command == "model" and not getattr(args, "model_cmd", None):
        args.model_cmd = "list"
    try:
        return args.func(args)
    except KgsearchError as exc:
        _err(f"error: {exc}")
        return exc.code
    except KeyboardInterrupt:
        _err("interrupted; nothing was changed")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except Exception as exc:  # a bug: one line by default, the traceback with -v
        from .store.db import ensure_error

        mapped = ensure_error(exc)
        if mapped is not None:
            _err(f"error: {mapped}")
            return mapped.code
        if args.verbose:
            raise
        _err(f"error: internal error {type(exc).__name__}: {exc} (rerun with -v for details and please report it)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
