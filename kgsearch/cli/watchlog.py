"""What ``kgsearch watch`` prints: one line per event on stderr (a log a phone's job or a
systemd journal keeps), or one JSON object per line on stdout with ``--json``."""
from __future__ import annotations

import json
import sys
import time

from .output import err


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
            line = (f"{ev['changes']} change(s): {r['files_loaded']} file(s) reindexed, {r['files_deleted']} deleted: "
                    f"+{r['nodes_added']} ~{r['nodes_modified']} -{r['nodes_removed']} nodes in {ev['seconds']:.2f}s "
                    f"(generation {r['generation']}{'' if changed or r['edges_changed'] else ', no change'})")
            for w in r.get("warnings", [])[:5]:
                line += f"\n  warning: {w}"
            for path in r.get("roots_missing", []):
                line += f"\n  root {path} is missing; its files are kept"
            return line
        return ""
