"""Command line: argument parsing and output only; every command calls one library function.

Results go to stdout (a table, or JSON with ``--json``); diagnostics, warnings and progress go
to stderr. Each command imports what it needs when it runs, so ``kgsearch --help`` stays fast.
Exit codes are listed in ``kgsearch --help`` and in the README. The intents and channels the
query options offer come from their registries (:data:`kgsearch.query.intent.INTENTS`,
:data:`kgsearch.query.channels.CHANNELS`), as do the MCP tool schemas. The environment is read
here, once per command (:mod:`kgsearch.environment`), and so are the process limits (the
memory budget's ``RLIMIT_DATA``, glibc's mmap threshold for the commands that index).
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import environment
from ..config import distinct_dbs, env_db_paths
from ..errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_MEMORY, EXIT_OK, KgsearchError, UsageError
from ..numerals import parse_float
from ..query.channels import CHANNELS, DEFAULT_CHANNELS
from ..query.intent import INTENTS
from ..version import __version__
from . import commands, graph_commands, live
from .numbers import FLOAT, INT
from .output import err, one_line

NO_NUMPY = ("error: kgsearch needs numpy, which {python} cannot import: on Termux `pkg install python-numpy`, "
            "elsewhere `{python} -m pip install numpy`")
EXIT_CODES = """exit codes:
  0   success
  1   internal error (a bug: please report it with the command you ran), or numpy missing
      (the message says how to install it)
  2   usage error (bad flags or arguments; a node name several nodes answer to: the message
      lists their keys; an empty query; a --types edge type the index does not have: the
      message lists its types)
  3   bad input data (the message names file:line); an index run that hit it changed nothing,
      or, with --keep-going, skipped the named files; or a root is missing or cannot be listed
      (a file root: read): its files are kept, the other roots were indexed (also `roots` when
      a root is unhealthy);
      also a bad .kgsearchignore pattern, a --diff that is no diff, an unreadable --query-file,
      an eval probe file with no probe
  4   index missing, empty (0 bytes, or no run finished), read-only (index), unreadable,
      damaged (the message names `kgsearch doctor --rebuild`), found stale by `kgsearch
      doctor`, or made by a newer kgsearch
  5   nothing found (show, why, feedback, roots remove), or a context --files path not in the index
  6   over the memory budget (KGSEARCH_MEMORY_MB, or the memory the system gave): nothing was
      changed; raise KGSEARCH_MEMORY_MB or index fewer files at a time
  75  another `kgsearch index` holds the lock: nothing was changed, try again later
  130 interrupted (Ctrl-C): nothing was changed
"""


# ---------------------------------------------------------------------------- parser
MULTI_COMMANDS = ("search", "why", "context", "serve", "mcp", "link")     # take several indexes, searched as one


def _common(multi: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    if multi:
        p.add_argument("--db", metavar="PATH", action="append", default=argparse.SUPPRESS,
                       help="index file; repeat it to search several indexes as one (default: $KGSEARCH_DB, "
                            f"several separated by '{os.pathsep}', else $XDG_DATA_HOME/kgsearch/index.db)")
    else:
        # (append too: `stats --db A --db B` is the usage error _resolve_dbs names, not B silently)
        p.add_argument("--db", metavar="PATH", action="append", default=argparse.SUPPRESS,
                       help="index file (default: $KGSEARCH_DB, else $XDG_DATA_HOME/kgsearch/index.db)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output on stdout")
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no notes or progress on stderr")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging on stderr")
    return p


def _megabytes(value: str) -> float:
    """``--max-file-size``: a finite number of MB above 0 in ASCII digits (0 or less would skip
    every file and so empty the index from a cron line; ``float`` also reads ``٣`` and ``3_0``)."""
    try:
        mb = parse_float(value)
    except ValueError:
        mb = 0.0
    if mb <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of MB above 0 (e.g. 32), got {value!r}")
    return mb


def _query_file(p: argparse.ArgumentParser) -> None:
    p.add_argument("--query-file", metavar="FILE|-", default=None,
                   help="read the query (the task) from FILE, or - for stdin, instead of the argument")


INTENT_HELP = "force an intent (default: chosen from the query; the intents are listed below)"
CHANNELS_HELP = (f"comma-separated channels to run (default: {','.join(DEFAULT_CHANNELS)}; also "
                 f"{', '.join(n for n, c in CHANNELS.items() if not c.default)}); a gated channel runs only for "
                 f"the queries it suits unless asked for alone (listed below)")


def _listing(title: str, items) -> str:
    """``title:`` and one ``name  help`` line per item, for an epilog."""
    items = list(items)
    width = max(len(n) for n, _ in items)
    return "\n".join([f"{title}:"] + [f"  {n:<{width}}  {h}" for n, h in items])


def registry_epilog() -> str:
    """The intents and channels, from their registries (the --help of search, why and eval)."""
    return (_listing("intents (--intent; chosen in this order when not forced)", [(n, s.help) for n, s in INTENTS.items()])
            + "\n\n" + _listing("channels (--channels; default marked *)",
                                 [(n + ("*" if c.default else ""), c.help) for n, c in CHANNELS.items()]))


def _query_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-k", type=INT, default=10, help="number of results (default 10)")
    p.add_argument("--intent", default=None, choices=list(INTENTS), metavar="INTENT", help=INTENT_HELP)
    p.add_argument("--weights", default=None, metavar="A,B,G,D",
                   help="override the fusion weights: embedding,text,graph,intent-edges (e.g. .4,.45,.15,0)")
    p.add_argument("--fusion", choices=["linear", "rrf"], default=None, help="fusion mode (default linear)")
    p.add_argument("--channels", default=None, metavar="LIST", help=CHANNELS_HELP)
    p.add_argument("--diversity", type=FLOAT, default=None, metavar="F",
                   help="multiply the first hit of each new graph community by F (e.g. 1.05; default off)")
    p.add_argument("--norm", choices=["z", "max", "minmax", "auto"], default="z",
                   help="score normalisation before fusion (default z: standardised over the whole index)")
    p.add_argument("--group", choices=["file"], default=None,
                   help="rank files by the evidence of their symbols/sections instead of single nodes")
    p.add_argument("--no-correct", dest="correct", action="store_false",
                   help="search the words as typed: by default a word the index does not know is replaced by a "
                        "known word one edit away (bakc -> back), and a notice says so")


def _filter_options(p: argparse.ArgumentParser, what: str = "narrow the search before ranking (each channel "
                                                                "answers inside the set)") -> None:
    """The field filters (kgsearch/query/filters.py FIELDS): one flag each, repeatable."""
    from ..query.filters import FIELDS

    g = p.add_argument_group("filters", f"{what}; "
                                        "also as words of a query of up to 20 words: kind:function path:src/ "
                                        "-path:tests/ tag:x lang:rust modified:>=2026-10-01 root:work (in a longer, "
                                        "pasted text they stay words). Values of one filter are "
                                        "alternatives; different filters all hold. A query of filters alone "
                                        "lists what they keep, most linked first (PageRank)")
    for f in FIELDS.values():
        if f.op == ":":
            g.add_argument(f.flag, action="append", default=None, metavar=f.metavar, help=f.help)
        else:
            g.add_argument(f.flag, default=None, metavar=f.metavar, help=f.help)
        if f.exclude_flag:
            g.add_argument(f.exclude_flag, action="append", default=None, metavar=f.metavar,
                           help=f"leave out what {f.flag} {f.metavar} would keep")


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    multi = _common(multi=True)
    parser = argparse.ArgumentParser(
        prog="kgsearch",
        description="Offline knowledge-graph hybrid search: index notes, code, knowledge graphs and text "
                    "into one SQLite file; search with BM25 + embeddings + graph signals.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kgsearch {__version__}")
    parser.add_argument("--db", metavar="PATH", action="append", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", default=False, help=argparse.SUPPRESS)
    parser.add_argument("-q", "--quiet", action="store_true", default=False, help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true", default=False, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="index or incrementally reindex files and folders",
                       description="Index folders/files (Markdown vaults; code in Python, JavaScript/TypeScript, "
                                   "Go, Rust, Java, Kotlin, C#, PHP, Ruby, C and C++; KG JSON/JSONL/CSV, KG triples TSV, text). "
                                   "Only changed files are re-read. With no PATH, reindex the roots already "
                                   "in the index (for cron).")
    p.add_argument("paths", nargs="*", metavar="PATH")
    from ..query.filters import LANGS                # (the loaders' names; a test keeps them equal)

    p.add_argument("--format", default=None, choices=list(LANGS),
                   help="force a loader instead of choosing by file type (triples: also reads lines of three "
                        "space-separated fields)")
    p.add_argument("--allow-dangling", action="store_true",
                   help="KG edges to unknown nodes create placeholder nodes instead of failing")
    p.add_argument("--keep-going", action="store_true",
                   help="skip files that fail to load (exit code 3) instead of failing the whole run")
    p.add_argument("--full", action="store_true", help="re-read every file and rebuild all derived data")
    p.add_argument("--max-file-size", type=_megabytes, default=None, metavar="MB",
                   help="skip larger files (default 16; 64 for .tsv KG triples)")
    p.add_argument("--model", default=None, metavar="PATH|NAME",
                   help="embedding model (a model2vec folder or a pulled model name); changing it re-embeds")
    p.add_argument("--stemmer", default=None, choices=["porter2", "light", "none"], help="stemmer (changing it rebuilds postings)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--no-embed", dest="embed", action="store_false", default=None,
                   help="no embeddings: drop stored vectors, dense channel off (remembered for later runs)")
    g.add_argument("--embed", dest="embed", action="store_true", default=None,
                   help="embed again after --no-embed (remembered)")
    p.set_defaults(func=commands.cmd_index)

    p = sub.add_parser("search", parents=[multi], help="hybrid search",
                       description="Search the index: BM25 + FTS5 + embeddings + graph signals fused by intent. "
                                   "QUERY - (or --query-file) reads the query from stdin (or a file): an issue of "
                                   "any length; a search reads its first 32,768 characters and says when it cut.",
                       epilog=registry_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", nargs="?", help="the query; - reads it from stdin")
    _query_file(p)
    _query_options(p)
    _filter_options(p)
    p.add_argument("--explain", action="store_true", help="show each signal's part of every score")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.set_defaults(func=commands.cmd_search)

    p = sub.add_parser("link", parents=[multi], help="link several indexes' similar texts, for searching them as one",
                       description="Compute the similar_text neighbours of several indexes taken as one (each prose "
                                   "node's most similar nodes over all of them, which the graph signal of a search "
                                   "over them reads) and keep them in the user's cache ($XDG_CACHE_HOME/kgsearch). "
                                   "A search computes them itself up to 10,000 prose nodes together; this links "
                                   "any number. The indexes are only read. Run it again after reindexing one of them.")
    p.set_defaults(func=commands.cmd_link)

    p = sub.add_parser("why", parents=[multi], help="why a node ranked where it did for a query",
                       epilog=registry_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", nargs="?", help="the query; - reads it from stdin (with --query-file: leave it out)")
    p.add_argument("node", nargs="?", help="node key, qualified name or name")
    p.add_argument("--index", metavar="NAME", default=None,
                   help="with several --db: the index the node is in, as a hit names it (default: the first that "
                        "has it); the rank is in the one ranking over every index")
    _query_file(p)
    _query_options(p)
    _filter_options(p)
    p.set_defaults(func=commands.cmd_why)

    p = sub.add_parser("show", parents=[common], help="a node with its edges")
    p.add_argument("node", help="node key (e.g. md:notes/foo), qualified name or name")
    p.add_argument("--edges", type=INT, default=25, help="edges to list per direction (default 25)")
    p.add_argument("--lines", type=INT, default=12, help="text lines to show (default 12)")
    p.set_defaults(func=commands.cmd_show)

    p = sub.add_parser("related", parents=[common], help="a node's neighbours grouped by edge type")
    p.add_argument("node", help="node key, qualified name or name")
    p.add_argument("--types", default=None, metavar="T1,T2",
                   help="only these edge types (default: all; one the index does not have is a usage error "
                        "listing those it has, as `kgsearch stats` does)")
    p.add_argument("--direction", choices=["out", "in", "both"], default="both",
                   help="out: node -> neighbour, in: neighbour -> node (default both)")
    p.add_argument("--limit", type=INT, default=50, help="neighbours to list (default 50)")
    p.set_defaults(func=commands.cmd_related)

    p = sub.add_parser("context", parents=[multi], help="pack what matters for a task, files or a diff into a token budget",
                       description="Rank the nodes that matter for a task text (a search), for --files (their "
                                   "symbols/sections plus what they call, what calls them and linked notes), or for "
                                   "--diff (the changed symbols, their callers/callees and linked notes, ranked by a "
                                   "walk from them), and pack them into --budget tokens: greedy by score per token, "
                                   "the top node always in, long bodies trimmed to signature + docstring + matched "
                                   "lines (long lines cut around the match) before they are dropped, and a list of "
                                   "what was cut and why. Tokens are estimated as ceil(characters / 4) of the "
                                   "printed output.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", nargs="?", default=None, help="the task, in words (e.g. an issue text); - reads it from stdin")
    _query_file(p)
    p.add_argument("--files", nargs="+", default=None, metavar="PATH", help="indexed files (or folders: every indexed file under them) to start from")
    p.add_argument("--diff", nargs="?", const="git", default=None, metavar="FILE|-",
                   help="start from a diff: `git diff HEAD` of the indexed roots (no value), a unified diff "
                        "file, or - for stdin")
    p.add_argument("--budget", type=INT, default=8000, metavar="TOKENS", help="token budget (default 8000)")
    p.add_argument("--format", dest="fmt", choices=["markdown", "json", "xml"], default=None,
                   help="output format (default markdown; --json = --format json)")
    p.add_argument("-k", type=INT, default=None, help="task: search hits to consider (default budget/100, 20-100)")
    p.add_argument("--impact", type=INT, nargs="?", const=3, default=None, metavar="HOPS",
                   help="--files/--diff: also what depends on the change transitively (callers of callers, "
                        "importers, subclasses, linked notes) within HOPS (default 3), after the direct neighbours")
    _filter_options(p, "which nodes may be packed: a task's search is narrowed before ranking; --files/--diff "
                       "rank from every given or changed node and pack only the nodes the filters keep (seeds too)")
    p.set_defaults(func=commands.cmd_context)

    p = sub.add_parser("feedback", parents=[common], help="say a node was (not) useful for a query; nudges later rankings",
                       description="Store explicit feedback in the index: later searches with similar words (Jaccard "
                                   ">= 0.5 on the analysed query terms) rank the node up to x1.5 (--useful) or down to "
                                   "x0.5 (--not-useful). The feedback expires when the node's text changes. Giving it "
                                   "again for the same query and node replaces it.")
    p.add_argument("query")
    p.add_argument("node", help="node key, qualified name or name")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--useful", dest="useful", action="store_true", default=None)
    g.add_argument("--not-useful", dest="useful", action="store_false")
    p.set_defaults(func=commands.cmd_feedback)

    p = sub.add_parser("mcp", parents=[multi], help="Model Context Protocol server on stdio (for coding agents)",
                       description="Serve the index to MCP clients over stdio (JSON-RPC 2.0, one message per line; "
                                   "protocol 2026-07-28, and 2025-11-25 down to 2024-11-05 through initialize). "
                                   "Tools: search, context, why, show, related, stats, feedback, path, impact, communities. The index is opened "
                                   "read-only and a reindex is picked up without a restart; only feedback writes.")
    p.set_defaults(func=commands.cmd_mcp)

    p = sub.add_parser("watch", parents=[common], help="keep the index current while files change (inotify or polling)",
                       description="Watch folders and files (default: the roots already in the index) and reindex "
                                   "what changed, incrementally: a burst of saves is one run, inotify where the kernel "
                                   "has it (polling on network and shared-storage file systems, or with --backend poll). "
                                   "A scheduled `kgsearch index` and the watcher never index at once: while another "
                                   "run holds the lock, the watcher waits and retries; a second watcher of the same index "
                                   "exits 75 at once. Ctrl-C or SIGTERM stops it; "
                                   "a run cut short changes nothing and the next start catches up. A skipped file's "
                                   "warning is shown once, and again only when the file changes. --json: one JSON "
                                   "line per event on stdout.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="folders or files to watch and index (default: the index's roots)")
    p.add_argument("--backend", choices=["auto", "inotify", "poll"], default="auto",
                   help="how changes are noticed (default auto: inotify on local file systems, polling elsewhere)")
    p.add_argument("--debounce", type=FLOAT, default=0.3, metavar="S",
                   help="seconds without a change before reindexing (default 0.3)")
    p.add_argument("--interval", type=FLOAT, default=1.0, metavar="S", help="polling: seconds between looks (default 1)")
    p.add_argument("--budget", type=INT, default=2000, metavar="N",
                   help="polling: files and folders looked at per look (default 2000); a tree of F entries is "
                        "seen in full every F/N looks")
    p.set_defaults(func=live.cmd_watch)

    p = sub.add_parser("serve", parents=[multi], help="local web page and JSON HTTP API (127.0.0.1 by default)",
                       description="Serve the index as web pages (search with each score's breakdown, nodes with "
                                   "their edges and a drawing of their neighbourhood, context packing) and a JSON API "
                                   "(/api/search, /api/show, /api/related, /api/context, /api/stats, /api/why: what "
                                   "the same command prints with --json). Read-only; a reindex is picked up without a "
                                   "restart. Standard library only. Ctrl-C stops it.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; another address makes the "
                        "index readable by anyone who can reach it, and says so)")
    p.add_argument("--port", type=INT, default=8765, help="port (default 8765; 0: any free port)")
    p.add_argument("--limit", type=FLOAT, default=30.0, metavar="S", help="seconds a request may take (default 30)")
    p.set_defaults(func=live.cmd_serve)

    p = sub.add_parser("stats", parents=[common], help="counts by kind and edge type, size, last index time")
    p.set_defaults(func=commands.cmd_stats)

    graph_commands.add_parsers(sub, common)

    p = sub.add_parser("roots", parents=[common], help="the indexed roots and their health; remove one",
                       description="List the roots (folders and files given to `kgsearch index`, reindexed by a "
                                   "bare `kgsearch index`) with their health: status (ok, missing, unreadable), "
                                   "files in the index, last indexed. Exit 3 when a root is missing or unreadable. "
                                   "`roots remove PATH` removes a root and its files' nodes (one transaction).")
    rsub = p.add_subparsers(dest="roots_cmd", metavar="ACTION")
    rp = rsub.add_parser("remove", parents=[common], help="remove roots and their nodes from the index")
    rp.add_argument("paths", nargs="+", metavar="PATH", help="root path (as listed, or its label)")
    rsub.add_parser("list", parents=[common], help="list the roots (the default)")
    p.set_defaults(func=commands.cmd_roots)

    p = sub.add_parser("doctor", parents=[common], help="check the index; rebuild it from its sources",
                       description="Check the index file (SQLite quick_check, FTS5 integrity-check) and its "
                                   "derived data (postings, trigrams, similar_text edges, graph arrays, vectors) "
                                   "against a rebuild of them in a temporary copy. Exit 0 when healthy, 4 when "
                                   "damaged or stale (the message says the fix). --rebuild builds a new index "
                                   "from the roots next to the old one and swaps it in atomically.")
    p.add_argument("--rebuild", action="store_true",
                   help="rebuild from the sources into a new file and swap it in (the old one is kept as .bak "
                        "until the new one is in place)")
    p.add_argument("--thorough", action="store_true", help="PRAGMA integrity_check instead of quick_check")
    p.add_argument("--no-derived", dest="derived", action="store_false",
                   help="skip the derived-data check (the file checks alone take a second)")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="--rebuild: the roots to index when the old index cannot say (default: its roots)")
    p.set_defaults(func=commands.cmd_doctor)

    p = sub.add_parser("eval", parents=[common], help="evaluate on a BEIR folder or a probes JSONL file",
                       description="BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv): nDCG@10, recall@10/100, "
                                   "MRR@10, P@10. Probe file (JSONL of {query, expected}): recall@5/@10, MRR "
                                   "against the index given by --db. The ranking alone: stored feedback is "
                                   "ignored unless --with-feedback.",
                       epilog=registry_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="DIR|PROBES.jsonl")
    p.add_argument("--channels", default=None, metavar="LIST", help=CHANNELS_HELP)
    p.add_argument("--ablate", action="store_true", help="also run with each channel removed and each alone")
    p.add_argument("-k", type=INT, default=None, help="results per query (default and least: 100 for a BEIR folder, "
                                                      "10 for a probe file)")
    p.add_argument("--max-queries", type=INT, default=None, metavar="N",
                   help="use only the first N queries (of a BEIR folder, or probes of a probe file)")
    p.add_argument("--split", default=None, help="a BEIR folder: qrels split (default: qrels.tsv, else "
                                                    "qrels.test.tsv)")
    p.add_argument("--index-dir", default=None, help="a BEIR folder: where evaluation indexes are kept (default: data "
                                                        "dir/eval; one per corpus file, settings and kgsearch version)")
    p.add_argument("--rebuild", action="store_true", help="a BEIR folder: rebuild the evaluation index (with a probe "
                                                            "file these three are a usage error, as --db is with a BEIR "
                                                            "folder)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a BEIR folder: setting of its evaluation index, e.g. stemmer=light (an unknown key is a "
                        "usage error listing the keys; a probe file runs against --db's index as it is, so "
                        "--set with one is a usage error too)")
    p.add_argument("--fusion", choices=["linear", "rrf"], default=None)
    p.add_argument("--intent", default=None, choices=list(INTENTS), metavar="INTENT", help=INTENT_HELP)
    p.add_argument("--weights", default=None)
    p.add_argument("--with-feedback", dest="feedback", action="store_true",
                   help="let the index's stored feedback nudge the ranking (default: the ranking alone)")
    p.set_defaults(func=commands.cmd_eval)

    p = sub.add_parser("bench", parents=[common], help="on-device benchmark (index time, latency, RSS, start-up)")
    p.add_argument("--corpus", default=None, metavar="demo|stdlib|PATH",
                   help="built-in corpus to index and query when --db is not given (default demo)")
    p.add_argument("--queries", type=INT, default=200, help="queries to time (default 200)")
    p.add_argument("--cold-runs", type=INT, default=5, metavar="N",
                   help="CLI start-up measurements (median reported; default 5)")
    p.add_argument("--out", default=None, metavar="FILE", help="also write the JSON result here")
    p.set_defaults(func=commands.cmd_bench)

    p = sub.add_parser("demo", parents=[common], help="index the built-in demo knowledge base and search it")
    p.add_argument("query", nargs="?", default=None)
    p.add_argument("-k", type=INT, default=5)
    p.add_argument("--explain", action="store_true")
    p.set_defaults(func=commands.cmd_demo)

    p = sub.add_parser("model", parents=[common],
                       help="embedding models: list, use NAME (re-embed the index with it), import WHEEL (offline), "
                            "pull (needs model2vec + network)")
    msub = p.add_subparsers(dest="model_cmd", metavar="ACTION")
    pp = msub.add_parser("pull", parents=[common], help="download a model2vec model from the Hugging Face Hub")
    pp.add_argument("name", help="e.g. minishlab/potion-base-8M")
    pp.add_argument("--dest", default=None, help="folder to save into (default: data dir/models)")
    ip = msub.add_parser("import", parents=[common],
                         help="make a model folder from a package file: a wordllama wheel (pip download --no-deps "
                              "wordllama) gives wordllama-l2-256 (offline; see docs/models.md for its licences)")
    ip.add_argument("wheel", help="the .whl file, e.g. wordllama-0.4.0.post1-cp311-...whl")
    ip.add_argument("--dest", default=None, help="folder to write (default: data dir/models/wordllama-l2-256)")
    msub.add_parser("list", parents=[common], help="models kgsearch can use here")
    up = msub.add_parser("use", parents=[common],
                         help="embed the index with this model from now on (e.g. e5-small-multi-192 for notes in "
                              "many languages; 'default' for the shipped default) and reindex its roots")
    up.add_argument("name", help="a name from `kgsearch model list`, a model folder, or 'default'")
    p.set_defaults(func=commands.cmd_model)
    return parser


# commands whose work is indexing: glibc's mmap threshold is fixed for them (kgsearch.budget)
INDEXING = frozenset({"index", "roots", "doctor", "eval", "bench", "demo"})


def main(argv: list[str] | None = None, environ=None) -> int:
    """Run one command. ``environ`` (default ``os.environ``) is read here, once, and is what the
    library sees for the command's duration (kgsearch.environment)."""
    with environment.configured(environment.from_environ(environ)):
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        _resolve_dbs(args)
    except UsageError as exc:
        err(one_line(f"error: {exc}"))
        return exc.code
    if args.verbose:
        import logging
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    elif not args.quiet:
        import logging
        logging.basicConfig(level=logging.WARNING, format="note: %(message)s")
    if args.command == "model" and not getattr(args, "model_cmd", None):
        args.model_cmd = "list"
    try:
        _apply_budget()
        if args.command in INDEXING:
            from ..budget import fixed_mmap_threshold

            fixed_mmap_threshold()          # freed work arrays leave the RSS (text step at 1M: 982 -> 718 MiB)
        return args.func(args)
    except KgsearchError as exc:
        err(one_line(f"error: {exc}"))
        return exc.code
    except MemoryError as exc:     # never an "internal error": the budget or the system said no
        from .. import budget

        err(one_line(f"error: {exc if isinstance(exc, KgsearchError) else budget.message()}"))
        return EXIT_MEMORY
    except KeyboardInterrupt:
        err("interrupted; nothing was changed")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except Exception as exc:  # a bug: one line by default, the traceback with -v
        from ..store.db import ensure_error

        # (several indexes: the damaged one is found among them, not the first blamed)
        mapped = ensure_error(exc, getattr(args, "dbs", None) or getattr(args, "db", None))
        if mapped is not None:
            err(one_line(f"error: {mapped}"))
            return mapped.code
        if isinstance(exc, ImportError) and exc.name == "numpy":    # an install without it: no bug to report
            err(one_line(NO_NUMPY.format(python=sys.executable)))
            return EXIT_INTERNAL
        if args.verbose:
            raise
        err(one_line(f"error: internal error {type(exc).__name__}: {exc} (rerun with -v for details and please report it)"))
        return EXIT_INTERNAL
    finally:
        from .. import budget

        budget.restore()


def _resolve_dbs(args) -> None:
    """``args.dbs``: the indexes (``--db``, repeatable for MULTI_COMMANDS, else ``$KGSEARCH_DB``,
    several separated by ``os.pathsep``); ``args.db`` the first (None: the default index);
    ``args.db_explicit`` the one given with ``--db`` (None otherwise). A command of one index
    given several is a usage error."""
    given = args.db if isinstance(args.db, list) else ([args.db] if args.db is not None else [])
    if any(not str(p).strip() for p in given):   # --db "$UNSET": not the default index, nor "."
        raise UsageError("--db needs the path of an index file, got an empty one (an unset shell variable?); "
                         "pass --db PATH, or leave --db out for $KGSEARCH_DB or the default index")
    args.db_explicit = given[0] if given else None
    source = "--db"
    dbs = list(given)
    if not dbs:
        dbs = env_db_paths()
        source = "$KGSEARCH_DB"
    dbs = distinct_dbs(dbs)
    if len(dbs) > 1 and args.command not in MULTI_COMMANDS:
        raise UsageError(f"`kgsearch {args.command}` works on one index, and {source} names {len(dbs)} "
                         f"({', '.join(dbs)}); pass the one with --db PATH (several indexes are for "
                         f"{', '.join(MULTI_COMMANDS)})")
    args.dbs = dbs
    args.db = dbs[0] if dbs else None


def _apply_budget() -> None:
    """``KGSEARCH_MEMORY_MB`` becomes this command's memory limit (kgsearch.budget; undone when
    the command returns), and ``KGSEARCH_VEC_CACHE_MB`` is checked: a bad value of either is a
    usage error naming it. numpy is imported and BLAS called first: its thread pools and
    buffers reserve virtual memory they never touch, which must not count against the budget."""
    from .. import budget

    try:
        budget.vec_cache_bytes()
        b = budget.budget_bytes()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if b is not None:
        import numpy as np

        for t in (np.float32, np.float64):    # BLAS maps its per-thread buffers on first use
            a = np.ones((256, 256), dtype=t)
            a @ a
            a @ a[0]
        budget.apply(b)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
