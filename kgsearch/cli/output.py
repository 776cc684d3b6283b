"""Everything the CLI writes: stdout results (text tables or JSON), stderr notes and progress,
and the text layout of search results and ``why`` answers."""
from __future__ import annotations

import json
import re
import sys
import time

from ..jsonable import jsonable
from ..lines import UNSAFE, one_line, quoted  # (the one helper: context and the MCP server print names with it too)

# ---------------------------------------------------------------------------- terminal safety
_UNSAFE = UNSAFE            # (kgsearch.lines says what and why; unescape_shown reads the escapes back)


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def sanitize(text: str) -> str:
    r"""``text`` with control, escape and bidi characters shown as escapes (tab, newline kept).

    >>> sanitize("ok\tnext\nline \x1b[2J \u202etxt.exe")
    'ok\tnext\nline \\x1b[2J \\u202etxt.exe'
    """
    return _UNSAFE.sub(_escape, text)


# ---------------------------------------------------------------------------- output helpers
# Text output is sanitised on every stream, not only on a terminal: `kgsearch show X | head`,
# `search ... | grep`, a cron mail and an agent's prompt show it too (a pipe carried ESC ] 0 and
# bidi overrides to the terminal at its end until 2026-11-29). --json keeps the text as indexed.
def out(text: str = "") -> None:
    sys.stdout.write(sanitize(text) + "\n")


def write(text: str) -> None:
    """``text`` to stdout (no newline added), sanitised like :func:`out`."""
    sys.stdout.write(sanitize(text))


def err(text: str) -> None:
    sys.stderr.write(sanitize(text) + "\n")


def emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=jsonable) + "\n")



def cell(value) -> str:
    r"""``value`` as a table cell shows it on every stream: control, bidi and line-break
    characters escaped, and a tab too (a terminal moves it to its next stop), so that the cell
    is one line whose width :func:`display_width` knows.

    >>> cell("a\tb\nc\x1b[0m")
    'a\\tb\\nc\\x1b[0m'
    """
    return one_line(sanitize(str(value)).replace("\t", "\\t"))


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: East Asian wide and full-width characters two,
    combining marks and format characters none, the rest one."""
    if text.isascii():
        return len(text)
    import unicodedata

    n = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def table(rows: list[list], header: list[str]) -> str:
    """Columns aligned on the width each cell takes on a terminal once escaped (:func:`cell`)."""
    cells = [[cell(c) for c in header]] + [[cell(c) for c in r] for r in rows]
    widths = [max(display_width(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c + " " * (w - display_width(c)) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def warn_list(warnings: list[str], quiet: bool, limit: int = 20) -> None:
    if quiet:
        return
    for w in warnings[:limit]:
        err(one_line(f"warning: {w}"))            # (a file named "x\nerror: ..." forged a line)
    if len(warnings) > limit:
        err(f"warning: ... and {len(warnings) - limit} more (use --json to see all)")


LOG_EVERY = 30.0          # seconds between two progress lines on a log (stderr not a terminal)


def progress_mode(tty: bool, quiet: bool) -> str | None:
    """How a long command shows progress: ``"tty"`` (one line redrawn in place), ``"log"`` (a
    plain line every :data:`LOG_EVERY` seconds, so a cron log shows the run is alive) or
    ``None`` (``-q``)."""
    return None if quiet else ("tty" if tty else "log")


class Progress:
    """Files/s and ETA on stderr: redrawn in place on a terminal (``mode="tty"``, at most 5 times
    a second), a plain line every ``every`` seconds on a log (``mode="log"``), nothing (None)."""

    def __init__(self, mode: str | bool | None, stream=None, clock=time.perf_counter, every: float = LOG_EVERY):
        self.mode = "tty" if mode is True else (None if mode is False else mode)
        self.enabled = self.mode is not None
        self.stream, self.clock, self.every = stream, clock, every
        self.t0 = self.last = clock()
        self.phase = ""

    def __call__(self, ev: dict) -> None:
        if self.mode is None:
            return
        now = self.clock()
        phase = ev.get("phase", "")
        done, total = ev.get("done"), ev.get("total")
        if self.mode == "log":
            if now - self.last < self.every:
                return
        elif phase == self.phase and now - self.last < 0.2 and done != total:
            return
        self.last, self.phase = now, phase
        if done is not None and total:
            rate = done / max(now - self.t0, 1e-9)
            eta = (total - done) / rate if rate > 0 else 0
            unit = "files" if phase == "load" else "items"
            msg = (f"{phase} {done:,}/{total:,} {unit} ({rate:.1f}/s, ETA {int(eta) // 60}:{int(eta) % 60:02d})")
        else:
            msg = f"{phase}..."
        out = self.stream or sys.stderr
        if self.mode == "log":
            out.write(f"progress: {msg} ({int(now - self.t0)} s)\n")
        else:
            out.write("\r\033[K" + msg[:120])
        out.flush()

    def done(self) -> None:
        if self.mode == "tty" and self.phase:
            out = self.stream or sys.stderr
            out.write("\r\033[K")
            out.flush()


# ---------------------------------------------------------------------------- formatting
def format_response(resp, explain: bool = False) -> str:
    """A :class:`~kgsearch.query.Response` as the terminal shows it."""
    lines = []
    it = resp.intent
    w = it["weights"]
    head = (f"intent {it['name']} (emb {w['embedding']:.2f} text {w['text']:.2f} graph {w['graph']:.2f} "
            f"intent {w['intent']:.2f}), fusion {resp.fusion}, channels {'+'.join(resp.channels_run) or '-'}"
            f"{', cached' if resp.cached else ''}, {resp.timings_ms.get('total', resp.timings_ms.get('cache', 0)):.1f} ms")
    answer = getattr(resp, "answer", None)
    if answer and answer.get("answer"):            # the summary intent: the main topics first
        lines += [answer["answer"], "", "matching nodes:"]
    if not resp.hits:
        # (a query of filters alone has no text left: "no results for ''" named nothing; the
        # notes above say which filters kept nothing)
        return "\n".join(lines + [f"no results for {quoted(resp.query)}" if resp.query else "no results", f"({head})"])
    for h in resp.hits:
        loc = one_line(f"{h.path}:{h.line}" if h.path and h.line else (h.path or ""))
        lines.append(f"{h.rank:>2}. {one_line(h.name)}  [{one_line(h.kind)}]  {h.score:.4f}  {h.methods}")
        index = one_line(getattr(h, "index", ""))    # several indexes searched as one
        lines.append(f"    {index + ': ' if index else ''}{one_line(h.key)}" + (f"  {loc}" if loc else ""))
        if h.snippet:
            lines.append(f"    {h.snippet}")
        if explain:
            for n, c in h.channels.items():
                lines.append(_channel_line(n, c, "      ", "  "))
            for n, s in h.signals.items():
                lines.append(f"      = {n:<9} {s['value']:.3f} x {s['weight']:.2f} = {s['part']:.4f}")
            for n, v in h.adjustments.items():
                lines.append(_adj_line(n, v, "      "))
    lines.append("")
    lines.append(f"({head})")
    if explain:
        lines.append("(timings ms: " + ", ".join(f"{k} {v:.1f}" for k, v in resp.timings_ms.items()) + ")")
        for c, why_ in resp.channels_skipped.items():
            lines.append(f"(skipped {c}: {why_})")
    return "\n".join(lines)


ADDITIVE_ADJUSTMENTS = ("hits", "proximity", "shift", "file_members", "declaring_module")
_ADJ_NOTES = {"shift": "(every candidate moved up so the weakest scores 0)",
              "hits": "(HITS on the walk's top nodes)", "proximity": "(the query's terms close together)", "test_or_vendored": "(test, vendored or structural node)",
              "diversity": "(community diversity)", "file_members": "(the file's next best nodes, decayed)",
              "declaring_module": "(declares the first file's Rust module: ranked beside it)",
              "session": "(opened in this session)", "feedback": "(feedback on similar queries)"}


def _channel_line(name: str, c: dict, indent: str, gap: str) -> str:
    """One channel's part of an explanation; a channel that did not rank the node (rank 0: it
    matched nothing of it) says so, not "score 0.0000 rank 0" (its norm still enters the fusion)."""
    if not c.get("rank"):
        return f"{indent}{name:<8} no match{gap}norm {c['norm']:.3f}"
    rank = f"{c['rank']:>3}" if gap == "  " else f"{c['rank']}"
    return f"{indent}{name:<8} score {c['score']:.4f}{gap}rank {rank}{gap}norm {c['norm']:.3f}"


def _adj_line(name: str, value: float, indent: str) -> str:
    """Adjustments apply in order: additive ones to the sum of the parts, then factors."""
    note = _ADJ_NOTES.get(name, "")
    if name in ADDITIVE_ADJUSTMENTS:
        return f"{indent}+ {name:<9} {value:+.4f} {note}".rstrip()
    return f"{indent}x {name:<9} {value:.4f} {note}".rstrip()


def format_why(info: dict) -> str:
    at = f"{one_line(info['index'])}: " if info.get("index") else ""      # several indexes searched as one
    lines = [f"{at}{one_line(info['node']['name'])} [{one_line(info['node']['kind'])}] {one_line(info['node']['key'])}",
             f"query {quoted(info['query'])}: intent {info['intent']['name']}, fusion {info['fusion']}, "
             f"channels {'+'.join(info['channels_run'])}",
             one_line(info["reason"])]      # (it quotes indexed keys and names: hostile input)
    h = info.get("hit")
    if h:
        lines.append(f"score {h['score']:.4f} at rank {h['rank']}")
        for n, c in h["channels"].items():
            lines.append(_channel_line(n, c, "  ", " "))
        for n, s in h["signals"].items():
            lines.append(f"  = {n:<9} {s['value']:.3f} x {s['weight']:.2f} = {s['part']:.4f}")
        for n, v in h["adjustments"].items():
            lines.append(_adj_line(n, v, "  "))
    g = info.get("graph")
    if g and g.get("seed"):
        lines.append("graph: a seed of the graph stage (one of the best text / embedding matches)")
    elif g and g.get("path"):
        p = g["path"]
        names = {n["key"]: one_line(n["name"]) for n in p["nodes"]}
        chain = [names[p["steps"][0]["from"]]] if p["steps"] else []
        for s in p["steps"]:
            t = one_line(s["type"])
            chain += [f"-[{t}]->" if s["direction"] == "out" else f"<-[{t}]-", names[s["to"]]]
        lines.append(f"graph: reached from seed {names[p['steps'][0]['from']] if p['steps'] else '?'} in "
                     f"{p['hops']} hop{'s' if p['hops'] != 1 else ''}: {' '.join(chain)}")
    if info.get("filters"):
        lines.append(f"filters: {' '.join(info['filters'])}")
    lines.append("top results:")
    for t in info["top"]:
        lines.append(f"  {t['rank']:>2}. {t['score']:.4f} {one_line(t['index']) + ': ' if t.get('index') else ''}"
                     f"{one_line(t['name'])} ({one_line(t['key'])})")
    return "\n".join(lines)
