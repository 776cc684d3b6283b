"""The graph commands: ``path``, ``impact``, ``communities`` and ``export`` (parsers, calls
into :mod:`kgsearch.explore` / :mod:`kgsearch.export`, and their text layout)."""
from __future__ import annotations

import argparse

from ..errors import EXIT_NOT_FOUND, EXIT_OK
from .numbers import INT
from .output import emit_json, err, one_line, out

__all__ = ["add_parsers"]


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def add_parsers(sub, common) -> None:
    p = sub.add_parser("path", parents=[common], help="the best typed paths between two nodes",
                       description="The k best paths between two nodes over typed edges, shortest first. A hop "
                                   "costs 1 / weight (the edge's weight times its type's weight), so few strong edges "
                                   "beat many weak ones; each hop names its edge and direction. Exit 5 when no path "
                                   "is at most --max-len hops.")
    p.add_argument("source", help="node key, qualified name or name")
    p.add_argument("target", help="node key, qualified name or name")
    p.add_argument("--k", "-k", type=INT, default=3, help="paths to list (default 3)")
    p.add_argument("--max-len", type=INT, default=6, metavar="HOPS", help="longest path in hops (default 6)")
    p.add_argument("--types", type=_csv, default=None, metavar="T1,T2", help="follow only these edge types")
    p.add_argument("--direction", choices=["both", "out", "in"], default="both",
                   help="both: edges either way (default); out: only along edges; in: only against them")
    p.set_defaults(func=cmd_path)

    p = sub.add_parser("impact", parents=[common], help="what depends on a node or file, transitively; its tests",
                       description="Everything that depends on X within --depth hops: callers, importers, "
                                   "subclasses, notes that link to it, KG nodes that depend on or require it (reverse "
                                   "edges of the dependency types), starting from X and what it contains. Ranked by "
                                   "distance, then edge strength. --tests ranks the test files to run: those whose tests reach X, "
                                   "that name its symbols, whose path names its files' subjects, whose text reads like it, or that "
                                   "it declares as its own test modules (Rust's #[cfg(test)] mod tests;).")
    p.add_argument("node", help="node key, qualified name, name, or an indexed file's path")
    p.add_argument("--depth", type=INT, default=3, help="hops to follow (default 3)")
    p.add_argument("--types", default=None, metavar="T[:in|out],...",
                   help="dependency edge types (default: calls, imports, inherits, links_to, depends_on, ...); "
                        ":in follows the edge backwards (its source depends on X), :out forwards")
    p.add_argument("--tests", action="store_true", help="also rank the test files to run (reached, naming X's symbols, named after its files, reading like it, its declared test modules)")
    p.add_argument("--limit", type=INT, default=50, help="dependents (and test files) to list (default 50)")
    p.set_defaults(func=cmd_impact)

    p = sub.add_parser("communities", parents=[common], help="the graph's communities with extractive summaries",
                       description="The communities of the graph (greedy modularity, computed at index time), "
                                   "largest first, each with its central nodes (PageRank inside the community), "
                                   "distinctive terms (class-based TF-IDF) and a representative sentence or "
                                   "signature. No model: every word comes from the index.")
    p.add_argument("--limit", type=INT, default=20, help="communities to list (default 20; 0 for all)")
    p.add_argument("--terms", type=INT, default=8, help="terms per community (default 8)")
    p.set_defaults(func=cmd_communities)

    p = sub.add_parser("export", parents=[common], help="write the graph as GraphML, JSON Lines, a Markdown vault "
                                                        "or a plain SQLite file",
                       description="graphml: Gephi, Cytoscape, networkx. jsonl: one JSON object per node then per "
                                   "edge, with plain text; `kgsearch index` reads it back to the same keys, nodes and edges. "
                                   "vault: a folder of Markdown notes with [[wikilinks]] (Obsidian; indexes back as "
                                   "notes with the same links). sqlite: a plain SQLite file whose node text any sqlite3 client "
                                   "reads.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=["graphml", "jsonl", "vault", "sqlite"])
    p.add_argument("out", metavar="OUT", help="file to write (- for stdout: graphml, jsonl), or a folder for vault")
    p.add_argument("--types", type=_csv, default=None, metavar="T1,T2", help="only these edge types")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--text", dest="text", action="store_true", default=None,
                   help="include node text (default: yes, but not in graphml)")
    g.add_argument("--no-text", dest="text", action="store_false")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--derived", dest="derived", action="store_true", default=None,
                   help="include the derived similar_text edges (default: yes, but not in a vault)")
    g.add_argument("--no-derived", dest="derived", action="store_false")
    p.set_defaults(func=cmd_export)


def _node(d: dict) -> str:
    return f"{one_line(d['name'])}  [{one_line(d['kind'])}]  {one_line(d['key'])}"


def _chain(p: dict) -> str:
    names = {n["key"]: one_line(n["name"]) for n in p["nodes"]}
    parts = [names[p["steps"][0]["from"]]] if p["steps"] else [one_line(p["nodes"][0]["name"])]
    for s in p["steps"]:
        t = one_line(s["type"])
        arrow = f"-[{t}]->" if s["direction"] == "out" else f"<-[{t}]-"
        parts += [arrow, names[s["to"]]]
    return " ".join(parts)


def cmd_path(args) -> int:
    from ..explore import find_paths
    from ..store.db import Index

    with Index.open(args.db, readonly=True) as ix:
        res = find_paths(ix, args.source, args.target, k=args.k, max_len=args.max_len, types=args.types,
                         direction=args.direction)
    if args.json:
        emit_json(res)
    else:
        out(f"from {_node(res['from'])}")
        out(f"to   {_node(res['to'])}")
        for i, p in enumerate(res["paths"], 1):
            out(f"{i:>2}. {p['hops']} hop{'s' if p['hops'] != 1 else ''}, length {p['length']:.2f}: {_chain(p)}")
            out(f"    {' > '.join(one_line(n['key']) for n in p['nodes'])}")
    if not res["paths"]:
        if not args.quiet:
            err(f"note: no path of at most {args.max_len} hops" + (f" over {','.join(args.types)}" if args.types else "")
                + (f" ({args.direction} only)" if args.direction != "both" else "")
                + "; try a larger --max-len, more --types or --direction both")
        return EXIT_NOT_FOUND
    return EXIT_OK


def cmd_impact(args) -> int:
    from ..explore import impact
    from ..store.db import Index

    with Index.open(args.db, readonly=True) as ix:
        res = impact(ix, args.node, depth=args.depth, types=args.types, tests=args.tests, limit=args.limit)
    if res.get("notice") and not args.quiet:
        err(f"note: {res['notice']}")
    if args.json:
        emit_json(res)
        return EXIT_OK
    of = res["of"]
    what = _node(of) if "key" in of else f"{one_line(of['file'])} ({of['nodes']} nodes)"
    out(f"what depends on {what}")
    free = set(res.get("free") or ())
    types = one_line(", ".join(f"{t}:{s}" + (" (no hop)" if t in free else "") for t, s in res["types"].items()))
    types = types or "none of this index's"
    out(f"({res['start']} start node(s), depth {res['depth']}, types {types})")
    for i, d in enumerate(res["dependents"], 1):
        loc = one_line(f"  {d['relpath'] or d['path']}:{d['line']}" if d["path"] and d["line"] else "")
        via_type, via_key = one_line(d["via"]["type"]), one_line(d["via"]["key"])
        verb = f"{via_type} {via_key}" if d["via"]["direction"] == "out" else f"{via_type} from {via_key}"
        out(f"{i:>3}. d{d['distance']}  {_node(d)}{loc}")
        out(f"          {verb}")
    shown = len(res["dependents"])
    out(f"({res['total']} dependent(s) within {res['depth']} hops" + (f"; {shown} shown, --limit for more)"
                                                                       if shown < res["total"] else ")"))
    if args.tests:
        out("")
        out("tests that reach it:" if res["tests"] else "tests that reach it: none")
        for i, t in enumerate(res["tests"], 1):
            why = []
            if t["reached"]:
                near = ", ".join(one_line(n["name"]) for n in t["nearest"][:3])
                why.append(f"reached at d{t['distance']} by {t['reached']} test node(s): {near}")
            if t["names"]:
                why.append(f"names {t['names']} of its symbols")
            if t.get("rank_path"):
                why.append(f"its path names the changed files' subjects (rank {t['rank_path']})")
            if t.get("declared"):
                why.append(f"a test module the changed file declares (depth {t['declared']})")
            if t.get("rank_text"):
                why.append(f"reads like the changed code (text rank {t['rank_text']})")
            out(f"{i:>3}. {one_line(t['relpath'] or t['path'])}")
            out(f"          {'; '.join(why)}")
    return EXIT_OK


def cmd_communities(args) -> int:
    from ..explore import communities
    from ..store.db import Index

    with Index.open(args.db, readonly=True) as ix:
        res = communities(ix, limit=None if args.limit == 0 else args.limit, terms=args.terms)
    if args.json:
        emit_json(res)
        return EXIT_OK
    if res["notice"]:
        err(f"note: {res['notice']}")
        return EXIT_OK
    for i, c in enumerate(res["communities"], 1):
        out(f"{i:>3}. {one_line(c['label'])}  ({c['size']:,} nodes)")
        if c["terms"]:
            out(f"     terms: {', '.join(c['terms'])}")
        if c["sentence"]:
            out(f"     \"{one_line(c['sentence']['text'])}\"  ({one_line(c['sentence']['key'])})")
    more = res["total"] - res["shown"]
    out(f"({res['total']:,} communities over {res['nodes']:,} nodes" + (f"; {more:,} more: --limit 0 for all)"
                                                                       if more > 0 else ")"))
    return EXIT_OK


def cmd_export(args) -> int:
    from ..export import export
    from ..store.db import Index

    with Index.open(args.db, readonly=True) as ix:
        res = export(ix, args.format, args.out, text=args.text, types=args.types, derived=args.derived)
    if args.json:
        if args.out != "-":
            emit_json(res)
    elif not args.quiet:
        err(f"wrote {res['nodes']:,} nodes and {res['edges']:,} edges to {res['out']} ({res['format']})")
    return EXIT_OK
