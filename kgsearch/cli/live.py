"""The long-running commands: ``kgsearch watch`` (keep the index current) and ``kgsearch serve``
(web pages and JSON API). Each runs until SIGINT/SIGTERM and exits 0."""
from __future__ import annotations

import json
import sys
import time

from ..errors import EXIT_OK
from .output import err


def cmd_watch(args) -> int:
    """``kgsearch watch``: what happens goes to stderr, or one JSON line per event to stdout with --json."""
    import signal

    from ..config import default_db_path
    from ..watch import WatchOptions, Watcher

    db = args.db or str(default_db_path())
    opts = WatchOptions(backend=args.backend, debounce=args.debounce, interval=args.interval, budget=args.budget)
    log = WatchLog(json_lines=args.json, quiet=args.quiet)
    watcher = Watcher(db, args.paths, opts, on_event=log)

    def stop(signum, frame):
        log.stopping(signal.Signals(signum).name)
        watcher.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    watcher.run()
    return EXIT_OK


def cmd_serve(args) -> int:
    """``kgsearch serve``: the URL on stderr (and a warning for an address other than loopback)."""
    import signal
    import threading

    from ..config import default_db_path
    from ..errors import UsageError
    from ..serve import LOOPBACK, Holder, make_server

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be from 0 to 65535, got {args.port}")
    if not args.limit > 0:
        raise UsageError(f"--limit must be a number of seconds above 0, got {args.limit}")
    from ..query.multi import index_names
    from ..store.db import Index

    dbs = args.dbs or [str(default_db_path())]
    for db in dbs:
        Index.open(db, readonly=True).close()        # a missing or damaged index: its error now, not per request
    holders = {name: Holder(db, limit=args.limit) for name, db in zip(index_names(dbs), dbs)}
    db = ", ".join(dbs)
    quiet = args.quiet

    def logline(who, line):
        if args.verbose:
            err(f"{who} {line}")

    try:
        server = make_server(holders, args.host, args.port, on_request=logline)
    except OSError as exc:
        import errno
        import socket

        if isinstance(exc, socket.gaierror) or exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            # the address is the problem (no such name, not this machine's): another port would not help
            raise UsageError(f"cannot listen on {args.host}:{args.port} ({exc.strerror}): no address of this machine; "
                             f"pick another --host (default 127.0.0.1)") from None
        raise UsageError(f"cannot listen on {args.host}:{args.port} ({exc.strerror}); pick another --port "
                         f"(or 0 for any free one)") from None
    host, port = server.server_address[:2]
    if args.host not in LOOPBACK:
        err(f"warning: serving on {args.host}:{port}: anyone who can reach this machine can read the whole index "
            f"(no password, no encryption). Use the default --host 127.0.0.1 unless you mean it.")
    shown = f"[{host}]" if ":" in host else host
    if not quiet:
        err(f"serving {db} on http://{shown}:{port}/ (Ctrl-C stops)")
    stopping = threading.Event()

    def stop(signum, frame):
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        for h in holders.values():
            h.close()
    if not quiet:
        err("stopped")
    return EXIT_OK


# ---------------------------------------------------------------------------- watch's log
def _stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


class WatchLog:
    def __init__(self, json_lines: bool = False, quiet: bool = False):
        self.json_lines, self.quiet = json_lines, quiet

    def stopping(self, name: str) -> None:
        if not self.quiet and not self.json_lines:
            err(f"{_stamp()} watch: {name}: stopping")

    def __call__(self, ev: dict) -> None:
        if self.json_lines:
            d = dict(ev, time=round(time.time(), 3))
            if "result" in d:
                d["result"] = d["result"].as_dict()
            sys.stdout.write(json.dumps(d, ensure_ascii=False, default=str) + "\n")
            sys.stdout.flush()
            return
        line = self.line(ev)
        if line and (not self.quiet or ev.get("event") == "run" and ev["result"].status == "error"):
            err(f"{_stamp()} watch: {line}")

    @staticmethod
    def line(ev: dict) -> str:
        kind = ev.get("event")
        if kind == "start":
            parts = [f"{s['folders']} folder(s) with {s['kind']}" for s in ev["sources"]]
            return f"watching {', '.join(ev['roots'])}: {'; '.join(parts) or 'nothing'} (Ctrl-C stops)"
        if kind == "notice":
            return ev["message"]
        if kind == "busy":
            return f"{ev['message'].split(';')[0]}; waiting {ev['retry_in']:g}s and trying again"
        if kind == "stop":
            return f"stopped after {ev['runs']} run(s)"
        if kind == "run":
            res = ev["result"]
            if res.status == "busy":
                return ""
            if res.status != "ok":
                return f"{'error' if res.status == 'error' else res.status}: {res.message} (still watching)"
            r = res.report
            changed = r["nodes_added"] + r["nodes_modified"] + r["nodes_removed"]
            what = f"{ev['changes']} change(s)" if ev["changes"] or not ev.get("catch_up") else "catch-up run"
            line = (f"{what}: {r['files_loaded']} file(s) reindexed, {r['files_deleted']} deleted: "
                    f"+{r['nodes_added']} ~{r['nodes_modified']} -{r['nodes_removed']} nodes in {ev['seconds']:.2f}s "
                    f"(generation {r['generation']}{'' if changed or r['edges_changed'] else ', no change'})")
            for w in r.get("warnings", [])[:5]:
                line += f"\n  warning: {w}"
            if len(r.get("warnings", [])) > 5:
                line += f"\n  ... {len(r['warnings']) - 5} more warning(s)"
            for path in r.get("roots_missing", []):
                line += f"\n  root {path} is missing; its files are kept"
            return line
        return ""
