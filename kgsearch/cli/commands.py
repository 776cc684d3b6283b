"""The CLI commands: each parses nothing, calls one library function and formats its answer.
Every command imports what it needs when it runs, so ``kgsearch --help`` stays fast."""
from __future__ import annotations

import json
import os
import sys

from ..errors import EXIT_DATA, EXIT_OK, UsageError
from ..lines import quoted
from .inputs import query_text, read_diff
from .output import (Progress, cell, display_width, emit_json, err, one_line, out, progress_mode, table, warn_list,
                     write)

COMPACT_NOTE_BYTES = 1_000_000      # a VACUUM that gave back less is not worth a line


# ---------------------------------------------------------------------------- commands
def cmd_index(args) -> int:
    from ..indexer import IndexOptions, index_paths

    settings = {}
    if args.model is not None:
        settings["model"] = args.model
    if args.stemmer is not None:
        settings["stemmer"] = args.stemmer
    if args.embed is not None:
        settings["embed"] = args.embed          # persisted like the other settings
    steps = None
    progress = Progress(progress_mode(sys.stderr.isatty(), args.quiet))
    max_bytes = None if args.max_file_size is None else int(args.max_file_size * 1e6)
    opts = IndexOptions(fmt=args.format, allow_dangling=args.allow_dangling, keep_going=args.keep_going,
                        full=args.full, max_file_bytes=max_bytes, settings=settings,
                        steps=steps, progress=progress)
    try:
        report = index_paths(args.db, args.paths, opts)
    finally:
        progress.done()
    return _report_run(args, report)


def _report_run(args, report) -> int:
    """The summary of an index run on stderr (or its JSON on stdout) and its exit code: 3 when
    something named could not be indexed (a file with --keep-going, a missing or unreadable
    root), the rest having been committed."""
    if args.json:
        emit_json(report.as_dict())
    else:
        warn_list(report.warnings, args.quiet)
        if not args.quiet:
            made = report.created_dirs
            if made:                                # --db in a new folder: said, not done silently
                above = {1: "", 2: f" and its parent {made[0]}"}.get(len(made), f" and the folders above it up to {made[0]}")
                err(one_line(f"note: created the folder {made[-1]}{above} for the index"))
            changed = report.nodes_added + report.nodes_modified + report.nodes_removed
            err(f"indexed {report.files_loaded} changed file(s), {report.files_unchanged} unchanged, "
                 f"{report.files_deleted} deleted: +{report.nodes_added} ~{report.nodes_modified} "
                 f"-{report.nodes_removed} nodes in {report.seconds:.2f}s "
                 f"(generation {report.generation}{'' if changed or report.edges_changed else ', no change'})")
            skipped = skipped_summary(report.skipped, report.skipped_generated)
            if skipped:
                err(one_line(f"skipped: {skipped}"))
            for loader, n in sorted(report.reread.items()):
                err(f"note: re-read {n} unchanged {loader} file(s): this version's {loader} loader reads them "
                    "differently")
            for name, info in report.steps.items():
                note = info.get("notice") or info.get("skipped")
                if note:
                    err(f"note: {name}: {note}")
            if report.compacted_bytes >= COMPACT_NOTE_BYTES:     # a fresh build's routine VACUUM says nothing
                err(f"note: compacted the index file: {report.compacted_bytes / 1e6:.1f} MB smaller "
                     f"({report.phases.get('compact', 0):.1f}s)")
    for path in map(one_line, report.roots_missing):
        err(f"error: root {path} is missing (moved, deleted, or a card not mounted?); its files are kept "
            f"and the other roots were indexed. If it is gone for good: `kgsearch roots remove {path}`")
    for path in report.roots_unreadable:
        what = "listed" if os.path.isdir(path) else "read"             # a folder, or a file named as a root
        err(one_line(f"error: root {path} cannot be {what} (permissions?); its files are kept and the other roots "
                     f"were indexed. Fix its permissions, or `kgsearch roots remove {path}`"))
    if report.files_failed:
        err(f"error: {report.files_failed} file(s) could not be indexed (see warnings); the rest was committed")
    return EXIT_DATA if report.partial else EXIT_OK


SKIP_WORDS = {"unreadable": "unreadable folder(s)/file(s)", "bad_links": "broken or looping link(s)",
              "malformed": "file(s) not what their extension says", "large": "large file(s)",
              "binary": "file(s) that are not text", "no_loader": "file(s) with no loader",
              "generated": "minified or bundled script(s)"}


def skipped_summary(skipped: dict, generated: list[str] = ()) -> str:
    """What the walk and the loaders skipped, for the run summary (files with no loader are
    the normal case in a code tree: not listed); the first minified or bundled scripts by name
    (the others each have a warning of their own; these are told by their content too, no line
    break in the first 8 KB, so a user may not guess which).

    >>> skipped_summary({"unreadable": 1, "large": 0, "malformed": 2, "binary": 1, "no_loader": 9})
    '1 unreadable folder(s)/file(s), 2 file(s) not what their extension says, 1 file(s) that are not text'
    >>> skipped_summary({"generated": 5}, ["/t/a.min.js", "/t/b.js", "/t/c.js", "/t/d.js"])
    '5 minified or bundled script(s) (/t/a.min.js, /t/b.js, /t/c.js and 2 more)'
    """
    def words(k: str, n: int) -> str:
        names = generated[:GENERATED_SHOWN] if k == "generated" else ()
        more = f" and {n - len(names)} more" if names and n > len(names) else ""
        return f"{n} {SKIP_WORDS.get(k, k)}" + (f" ({', '.join(names)}{more})" if names else "")
    return ", ".join(words(k, n) for k, n in skipped.items() if n and k != "no_loader")


GENERATED_SHOWN = 3     # minified or bundled scripts named in the run summary


def cmd_roots(args) -> int:
    """``kgsearch roots``: every root with its health; ``roots remove PATH...``."""
    if getattr(args, "roots_cmd", None) == "remove":
        from ..indexer import IndexOptions
        from ..indexer.run import remove_roots

        report = remove_roots(args.db, args.paths, IndexOptions(progress=Progress(progress_mode(sys.stderr.isatty(), args.quiet))))
        if not args.quiet and not args.json:
            for path in report.roots_removed:
                err(f"removed root {path}: {report.files_deleted} file(s), {report.nodes_removed} node(s)")
        return _report_run(args, report)
    from ..store.db import Index
    from ..store.roots import root_health

    with Index.open(args.db, readonly=True) as ix:
        roots = root_health(ix.conn)
    if args.json:
        emit_json(roots)
        return EXIT_OK
    if not roots:
        out("no roots: index a folder with `kgsearch index PATH`")
        return EXIT_OK
    out(table([[one_line(r["path"]), one_line(r["label"] or "-"), r["status"],
                f"0 (held by {one_line(r['held_by'])})" if r["held_by"] else r["files"], r["last_indexed_iso"] or "never"]
               for r in roots], ["root", "label", "status", "files", "last indexed"]))
    bad = [r for r in roots if r["status"] != "ok"]
    for r in bad:
        err(f"warning: root {r['path']} is {r['status']}; its {r['files']} file(s) are kept until "
            f"`kgsearch roots remove {r['path']}`")
    return EXIT_DATA if bad else EXIT_OK


def cmd_stats(args) -> int:
    from ..store.db import Index
    from ..stats import index_stats

    with Index.open(args.db, readonly=True) as ix:
        st = index_stats(ix)
    if args.json:
        emit_json(st)
        return EXIT_OK
    out(f"index       {one_line(st['db'])}")
    out(f"size        {st['db_bytes'] / 1e6:.1f} MB   generation {st['generation']}   "
         f"schema {st['schema_version']}   made by kgsearch {st['created_with']}")
    out(f"last index  {st['last_index_time_iso'] or 'never'}")
    out(f"roots       {', '.join(one_line(r) for r in st['roots']) or '-'}")
    out(f"files       {st['files']}   nodes {st['nodes']}   edges {st['edges']} "
         f"({st['edges_unresolved']} unresolved)")
    out("")
    out(table([[k, v] for k, v in st["nodes_by_kind"].items()], ["node kind", "count"]))
    out("")
    out(table([[k, v] for k, v in st["edges_by_type"].items()], ["edge type", "count"]))
    if st["derived"]:
        out("")
        out(table([[k, v["generation"], f"{v['seconds']:.2f}s"] for k, v in st["derived"].items()],
                    ["derived data", "generation", "last cost"]))
    return EXIT_OK


def _node_line(n: dict) -> str:
    """``name  [kind]  key`` of a node, on one line."""
    return f"{one_line(n['name'])}  [{one_line(n['kind'])}]  {one_line(n['key'])}"


def _where(d: dict) -> str:
    """``path:line`` of a listed node (its path alone without a line)."""
    return f"{d['path']}:{d['line_start']}" if d.get("path") and d.get("line_start") else (d.get("path") or "")


TYPE_COLUMN = 32      # `show`: the widest edge-type column; a longer type takes a line of its own


def cmd_show(args) -> int:
    from ..stats import show_node
    from ..store.db import Index

    if args.lines < 0:
        raise UsageError(f"--lines must be a whole number >= 0, got {args.lines}")
    with Index.open(args.db, readonly=True) as ix:
        info = show_node(ix, args.node, limit=args.edges)
    if args.json:
        emit_json(info)
        return EXIT_OK
    n = info["node"]
    loc = one_line(f"{n['path']}:{n['line_start']}" if n.get("path") and n.get("line_start") else (n.get("path") or ""))
    out(_node_line(n))
    if loc:
        out(f"  {loc}")
    if n.get("qualname") and n["qualname"] != n["name"]:
        out(f"  {one_line(n['qualname'])}")
    text = (n.get("text") or "").strip()
    if text:
        out("")
        for line in text.splitlines()[:args.lines]:
            out("  " + line)
        if len(text.splitlines()) > args.lines:
            out("  ...")
    if info.get("impls"):                       # a Rust type's impl blocks, each with its methods
        out("")
        out(f"impl blocks ({len(info['impls'])}):")
        for b in info["impls"]:
            head = f"impl {b['trait']} for {n['name']}" if b.get("trait") else f"impl {n['name']}"
            out(f"  {one_line(head)}  {one_line(_where(b))}  {one_line(b['key'])}")
            if b["methods"]:
                out(f"    {one_line(', '.join(m['name'] for m in b['methods']))}")
    if info.get("overloads"):                   # TypeScript overload signatures, Python @overload s
        out("")
        out(f"overloads ({len(info['overloads'])}):")
        for m in info["overloads"]:
            out(f"  {one_line(_where({'path': n.get('path'), **m}))}  {one_line(m['key'])}"
                + ("  (signature)" if m["signature"] else ""))
    if info.get("methods"):                     # a Go type's methods with receivers
        out("")
        out(f"methods ({len(info['methods'])}):")
        for m in info["methods"]:
            out(f"  {one_line(m['name'])}  {one_line(_where(m))}  {one_line(m['key'])}")
    # the type column is as wide as the longest type shown (both directions; WN18RR's
    # _derivationally_related_form is 28) up to TYPE_COLUMN; a longer type has a line of its own
    types = {e["type"]: cell(e["type"]) for key in ("out", "in") for e in info[key]}
    fits = [w for w in map(display_width, types.values()) if w <= TYPE_COLUMN]
    width = max(fits) if fits else TYPE_COLUMN
    for title, key in (("outgoing", "out"), ("incoming", "in")):
        edges = info[key]
        if edges:
            out("")
            out(f"{title} edges ({info[key + '_total']}):")
            for e in edges:
                arrow = "->" if key == "out" else "<-"
                shown = types[e["type"]]
                pad = width - display_width(shown)
                if pad < 0:
                    out(f"  {arrow} {shown}")
                    out(f"     {' ' * width} {_node_line(e)}")
                else:
                    out(f"  {arrow} {shown}{' ' * pad} {_node_line(e)}")
            more = info[key + "_total"] - len(edges)
            if more > 0:
                out(f"  ... {more:,} more: --edges {info[key + '_total']}, or `kgsearch related`")
    return EXIT_OK


def _filters(args) -> tuple:
    """The filter flags as :class:`~kgsearch.query.filters.FieldFilter` objects (checked: a bad
    value is a usage error); never as words, so a value such as ``<x>`` means exactly that."""
    from ..query.filters import from_flags

    return from_flags(vars(args))


def cmd_search(args) -> int:
    from ..query import SearchOptions, search

    opts = SearchOptions(k=args.k, intent=args.intent, weights=args.weights, fusion=args.fusion,
                         channels=args.channels, explain=args.explain, use_cache=not args.no_cache, norm=args.norm,
                         diversity=args.diversity, group=args.group, filters=_filters(args), correct=args.correct)
    query = query_text(args.query, args.query_file)
    if len(args.dbs) > 1:
        from ..query.multi import multi_engine_for

        resp = multi_engine_for(args.dbs).search(query, opts)
    else:
        resp = search(query, db=args.db, options=opts)
    for notice in resp.notices:
        if not args.quiet:
            err(f"note: {one_line(notice)}")
    if args.json:
        emit_json(resp.as_dict())
        return EXIT_OK
    from .output import format_response

    out(format_response(resp, explain=args.explain))
    return EXIT_OK


def cmd_link(args) -> int:
    from ..errors import UsageError
    from ..query.across import describe, ensure
    from ..query.multi import multi_engine_for

    if len(args.dbs) < 2:
        raise UsageError("`kgsearch link` links several indexes: name them with --db A --db B (or $KGSEARCH_DB)")
    multi = multi_engine_for(args.dbs)
    _, info = ensure(multi.engines, limit=None)
    if info.get("why"):
        raise UsageError(f"cannot link {', '.join(args.dbs)}: {info['why']}; index them with the same settings")
    if args.json:
        emit_json(info)
    else:
        out(describe(info))
    return EXIT_OK


def cmd_context(args) -> int:
    from ..context import ContextOptions, build_context
    from ..query import engine_for

    fmt = args.fmt or ("json" if args.json else "markdown")
    flt = _filters(args)
    if flt:
        from ..query import SearchOptions
    copts = ContextOptions(budget=args.budget, fmt=fmt, k=args.k, impact=args.impact,
                           search=SearchOptions(filters=flt) if flt else None)
    task = None if args.task is None and args.query_file is None else query_text(args.task, args.query_file, "task")
    if len(args.dbs) > 1:
        from ..context.multi import build_context_multi
        from ..query.multi import multi_engine_for

        multi = multi_engine_for(args.dbs)
        changes = read_diff(args.diff, multi.ix, [r for e in multi.engines.values()
                                                   for r in e.ix.meta_json("roots", [])]) if args.diff else None
        res = build_context_multi(multi, task=task, files=args.files, diff=changes, opts=copts)
    else:
        eng = engine_for(args.db)
        changes = read_diff(args.diff, eng.ix) if args.diff is not None else None
        res = build_context(eng, task=task, files=args.files, diff=changes, opts=copts)
    if fmt == "json":
        sys.stdout.write(res.text)          # (JSON escapes control characters itself)
    else:
        write(res.text)                     # indexed text: escaped on a terminal, as search and show do
    if not args.quiet:
        for n in res.notices:
            err(f"note: {one_line(n)}")
        trimmed = sum(1 for it in res.items if it["form"] != "full")
        err(f"note: packed {len(res.items)} of {res.candidates} nodes ({trimmed} trimmed) in {res.used:,} of "
            f"{res.budget:,} tokens (estimate: ceil(characters / 4)); cut {len(res.cut)}")
    return EXIT_OK


def cmd_feedback(args) -> int:
    from ..query.feedback import record
    from ..stats import find_node
    from ..store.db import Index

    with Index.open(args.db, create=False) as ix:
        node = find_node(ix, args.node)
        row = record(ix, args.query, node, args.useful)
    if args.json:
        emit_json(row)
    elif not args.quiet:
        out(f"recorded: {one_line(node['key'])} {'useful' if args.useful else 'not useful'} for {quoted(args.query)} "
            f"(similar queries rank it {'up' if args.useful else 'down'}; expires when its text changes)")
    return EXIT_OK


def cmd_mcp(args) -> int:
    from ..mcp import serve

    return serve(args.dbs if len(args.dbs) > 1 else args.db)


def cmd_why(args) -> int:
    from ..query import SearchOptions, why
    from .output import format_why

    opts = SearchOptions(k=args.k, intent=args.intent, weights=args.weights, fusion=args.fusion,
                         channels=args.channels, explain=True, norm=args.norm,
                         diversity=args.diversity, group=args.group, filters=_filters(args), correct=args.correct)
    query, node = args.query, args.node
    if args.query_file is not None and node is None:          # why --query-file FILE NODE
        query, node = None, query
    from ..errors import UsageError

    if node is None:
        raise UsageError("why needs a query and a node: kgsearch why QUERY NODE (or --query-file FILE NODE)")
    if len(args.dbs) > 1:
        from ..query.api import why_over
        from ..query.multi import multi_engine_for

        info = why_over(multi_engine_for(args.dbs), query_text(query, args.query_file), node, args.index, opts)
    elif args.index is not None:
        raise UsageError("--index picks one of several indexes: give them with --db A --db B")
    else:
        info = why(query_text(query, args.query_file), node, db=args.db, options=opts)
    for notice in info.get("notices", []) if not args.quiet else []:
        err(f"note: {one_line(notice)}")
    if args.json:
        emit_json(info)
    else:
        out(format_why(info))
    return EXIT_OK


def cmd_eval(args) -> int:
    from ..evaluate import EvalOptions, evaluate, format_eval

    opts = EvalOptions(channels=args.channels, ablate=args.ablate, k=args.k, max_queries=args.max_queries,
                       split=args.split, index_dir=args.index_dir, rebuild=args.rebuild,
                       settings=_parse_settings(args.set), fusion=args.fusion, intent=args.intent,
                       weights=args.weights, db=args.db_explicit, feedback=args.feedback)
    result = evaluate(args.target, opts)
    if args.json:
        emit_json(result)
    else:
        out(format_eval(result))
    return EXIT_OK


def cmd_bench(args) -> int:
    from ..bench import BenchOptions, format_bench, run_bench

    opts = BenchOptions(db=args.db_explicit, corpus=args.corpus, queries=args.queries, out=args.out,
                        cold_runs=args.cold_runs)
    result = run_bench(opts)
    if args.json:
        emit_json(result)
    else:
        out(format_bench(result))
    if args.out and not args.quiet:
        err(f"saved {args.out}")
    return EXIT_OK


def cmd_demo(args) -> int:
    from ..demo import run_demo

    resp, report = run_demo(args.query, db=args.db_explicit, k=args.k, quiet=args.quiet)
    if args.json:
        emit_json(resp.as_dict())
        return EXIT_OK
    from .output import format_response

    out(format_response(resp, explain=args.explain))
    return EXIT_OK


def cmd_model(args) -> int:
    from .. import embed

    if args.model_cmd == "pull":
        path = embed.pull_model(args.name, dest=args.dest)
        out(str(path))
        return EXIT_OK
    if args.model_cmd == "import":
        from ..embed.wordllama import import_wheel

        path = import_wheel(args.wheel, dest=args.dest)
        out(str(path))
        return EXIT_OK
    if args.model_cmd == "use":
        from ..indexer import IndexOptions, index_paths

        from ..store.db import Index

        from ..embed.model import no_model_message, resolve_model
        from ..errors import UsageError

        if args.name != "default" and resolve_model(args.name) is None:
            raise UsageError(no_model_message(args.name))     # exit 2, as `index --model` says it
        embed.load_model(None if args.name == "default" else args.name)   # DataError (exit 3): a damaged model
        Index.open(args.db, readonly=True).close()       # no index: exit 4 naming the fix, not "nothing to index"
        progress = Progress(sys.stderr.isatty() and not args.quiet)
        try:
            report = index_paths(args.db, [], IndexOptions(settings={"model": args.name, "embed": True},
                                                           progress=progress))
        finally:
            progress.done()
        code = _report_run(args, report)
        emb = report.steps.get("embed") or {}
        if not args.json and not args.quiet and emb.get("model"):
            err(f"re-embedded {emb.get('embedded', 0):,} nodes with {emb['model'].partition('@')[0]} "
                f"({emb.get('dims')} dimensions); later runs keep this model")
        return code
    models = embed.list_models()
    if args.json:
        emit_json(models)
    else:
        rows = [[m.get("name", ""), m.get("dims", ""), m.get("path", ""),
                 f"imported from {m['imported_from']}" if m.get("imported_from") else m.get("source", "")]
                for m in models]
        out(table(rows, ["model", "dims", "path", "source"]) if rows else "no models found")
    return EXIT_OK


def _parse_settings(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            from ..errors import UsageError
            raise UsageError(f"--set expects KEY=VALUE, got {quoted(item)}")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def cmd_doctor(args) -> int:
    """``kgsearch doctor``: check the index (exit 0 healthy, 4 damaged or stale, the fix named);
    ``--rebuild``: rebuild it from its roots into a new file and swap it in."""
    from ..config import default_db_path
    from ..errors import EXIT_INDEX

    db = args.db or str(default_db_path())
    progress = Progress(progress_mode(sys.stderr.isatty(), args.quiet))
    if args.rebuild:
        from ..indexer import IndexOptions
        from ..indexer.rebuild import rebuild_index

        try:
            report = rebuild_index(db, args.paths or None, IndexOptions(progress=progress))
        finally:
            progress.done()
        if not args.quiet and not args.json:
            err(f"rebuilt {db} from {len(report.roots)} root(s) and swapped it in")
        return _report_run(args, report)
    from ..indexer.doctor import check_index

    try:
        rep = check_index(db, thorough=args.thorough, derived=args.derived, progress=progress)
    finally:
        progress.done()
    if args.json:
        emit_json(rep.as_dict())
    else:
        out(f"index      {db}")
        for c in rep.checks:
            out(f"{c.name:<10} {'ok' if c.ok else 'PROBLEM'}: {c.detail}")
        for note in rep.notes:
            out(f"({note})")
        fixes = list(dict.fromkeys(c.fix for c in rep.checks if not c.ok and c.fix))
        verdict = "healthy" if rep.ok else ("damaged" if rep.damaged else "derived data differs from a rebuild")
        out(f"doctor: {verdict} ({rep.seconds:.2f}s)")
        for fix in fixes:
            err(f"error: {db}: {verdict}; {fix}")
    return EXIT_OK if rep.ok else EXIT_INDEX


def cmd_related(args) -> int:
    from ..stats import related_nodes
    from ..store.db import Index

    types = [t for t in args.types.split(",") if t] if args.types else None
    if args.limit < 1:
        from ..errors import UsageError
        raise UsageError(f"--limit must be a whole number >= 1, got {args.limit}")
    with Index.open(args.db, readonly=True) as ix:
        info = related_nodes(ix, args.node, types=types, direction=args.direction, limit=args.limit)
    if args.json:
        emit_json(info)
        return EXIT_OK
    out(_node_line(info["node"]))
    if not info["total"]:
        what = f" of type {one_line(', '.join(types))}" if types else ""
        way = {"out": " outgoing", "in": " incoming"}.get(args.direction, "")
        out(f"(no{way} edges{what})")
    for etype, edges in info["edges"].items():
        out("")
        out(f"{one_line(etype)} ({len(edges)}):")
        for e in edges:
            out(f"  {'->' if e['direction'] == 'out' else '<-'} {_node_line(e)}")
    if info["total"] > info["shown"]:
        out("")
        out(f"... {info['total'] - info['shown']} more (--limit)")
    return EXIT_OK

