"""The three output formats of ``kgsearch context``: Markdown (default), JSON and XML.

A renderer prints the output as pieces: a head, one block per packed item, a cut report and a
tail. The packer counts each block with :func:`~kgsearch.context.tokens.estimate`; the head and
tail are counted with the widest numbers they can hold (:meth:`Renderer.frame`), and the cut
report takes only what the budget has left, so the whole output never estimates above the
budget (the estimate is subadditive).

Markdown: one ``### path:first-last · kind name`` header per node, the body fenced (```python
for code), a line saying what a trimmed body kept; then ``Cut:`` with as many of the dropped
nodes (key and reason) as fit. JSON: ``{"query", "mode", "budget", "estimate", "items": [...],
"used", "cut_total", "cut": [...]}``. XML: ``<context>`` with ``<node>`` elements (bodies in
CDATA) and ``<cut>`` elements.
"""
from __future__ import annotations

import json
import re
from xml.sax.saxutils import quoteattr as _quoteattr

from ..lines import one_line
from .pack import Cut, Form, Item, Packed
from .tokens import chars_for, estimate

__all__ = ["FORMATS", "Renderer", "renderer", "ESTIMATE_RULE"]

FORMATS = ("markdown", "json", "xml")
# Characters XML 1.0 allows nowhere, not even in CDATA or as &#..; references: C0 controls
# but tab, LF and CR, lone surrogates, U+FFFE and U+FFFF. Indexed text holding one (an ANSI
# escape in a note) made the whole XML output unparseable; each is written as a \xNN or
# \uNNNN escape instead, as the terminal shows it.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    r"""``text`` with the characters XML cannot hold shown as escapes.

    >>> xml_text("a\x1b[31mb\tc\ufffe")
    'a\\x1b[31mb\tc\\ufffe'
    """
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", text)


def quoteattr(value: str) -> str:
    return _quoteattr(xml_text(value))

ESTIMATE_RULE = "tokens = ceil(characters / 4)"

def _lines(it: Item) -> str:
    if it.line_start is None:
        return ""
    if it.line_end is None or it.line_end == it.line_start:
        return f":{it.line_start}"
    return f":{it.line_start}-{it.line_end}"


def _where(it: Item) -> str:
    return f"{it.path}{_lines(it)}" if it.path else it.key


class Renderer:
    """Base: the output is ``head + blocks + mid + cut pieces + tail``."""

    name = ""

    def __init__(self, meta: dict):
        self.meta = meta                       # query, mode, budget

    def head(self) -> str:
        return ""

    def mid(self) -> str:
        return ""

    def tail(self, used: int, cut_total: int) -> str:
        return ""

    def frame(self, n_items: int) -> int:
        """Tokens of head + mid + tail with the widest numbers the tail can print."""
        b = int(self.meta["budget"])
        return estimate(self.head()) + estimate(self.mid()) + estimate(self.tail(b, max(n_items, 1)))

    def block(self, it: Item, f: Form, first: bool = False) -> str:
        raise NotImplementedError

    def cost(self, it: Item, f: Form) -> int:
        return estimate(self.block(it, f))         # not first: separators included (an upper bound)

    def shrink(self, it: Item, tokens: int) -> Form:
        """The top item's last resort: its ref form, printed cut to ``tokens``."""
        return Form("ref", "", CUT_HEADER)

    def cut_piece(self, c: Cut, first: bool) -> str:
        raise NotImplementedError

    def cut_more(self, n: int, first: bool) -> str:
        raise NotImplementedError

    def render(self, p: Packed) -> tuple[str, int]:
        """The output text and the tokens counted for it (never above the budget)."""
        blocks = []
        for i, (it, f, toks) in enumerate(p.chosen):
            b = self.block(it, f, first=i == 0)
            blocks.append(b[:chars_for(toks)] if f.note == CUT_HEADER else b)
        used, left = p.used, p.budget - p.used
        shown: list[str] = []
        for i, c in enumerate(p.cut):
            piece = self.cut_piece(c, i == 0)
            rest = len(p.cut) - i - 1
            more = self.cut_more(rest, False) if rest else ""
            if estimate(piece) + estimate(more) > left:
                break
            shown.append(piece)
            left -= estimate(piece)
            used += estimate(piece)
        rest = len(p.cut) - len(shown)
        if rest:
            more = self.cut_more(rest, not shown)
            if estimate(more) <= left:
                shown.append(more)
                used += estimate(more)
        text = self.head() + "".join(blocks) + self.mid() + "".join(shown) + self.tail(used, len(p.cut))
        return text, used


CUT_HEADER = "header cut to the budget"


class Markdown(Renderer):
    name = "markdown"

    def block(self, it: Item, f: Form, first: bool = False) -> str:
        index = it.index                            # several indexes packed as one
        head = (f"### {one_line(_where(it))} · {one_line(it.kind)} {one_line(it.name)}"
                + (f" · index {one_line(index)}" if index else ""))
        if f.level == "ref":
            return head + "\n(body cut: over budget)\n\n"
        if not f.body.strip():                     # an empty note, a tag: no fence around nothing
            return head + "\n(no text)\n\n"
        fence = "```"
        while fence in f.body:
            fence += "`"
        note = f"\n_trimmed: {one_line(f.note)}_" if f.level == "trimmed" else ""
        return f"{head}{note}\n{fence}{it.lang}\n{f.body}\n{fence}\n\n"

    def cut_piece(self, c: Cut, first: bool) -> str:
        return ("Cut:\n" if first else "") + f"- {one_line(c.key)}: {one_line(c.reason)}\n"

    def cut_more(self, n: int, first: bool) -> str:
        return ("Cut:\n" if first else "") + f"- ... and {n} more\n"


class Json(Renderer):
    name = "json"

    def head(self) -> str:
        m = self.meta
        return ('{"query": %s, "mode": %s, "budget": %d, "estimate": %s, "items": [\n'
                % (json.dumps(m.get("query"), ensure_ascii=False), json.dumps(m["mode"]), int(m["budget"]),
                   json.dumps(ESTIMATE_RULE)))

    def mid(self) -> str:
        return '\n], "cut": ['

    def tail(self, used: int, cut_total: int) -> str:
        return '], "cut_total": %d, "used": %d}\n' % (cut_total, used)

    def block(self, it: Item, f: Form, first: bool = False) -> str:
        d = {"key": it.key, "kind": it.kind, "name": it.name, "path": it.path, "line_start": it.line_start,
             "line_end": it.line_end, "score": round(it.score, 6), "reason": it.reason, "form": f.level,
             "note": f.note, "text": f.body}
        if it.index:
            d["index"] = it.index
        return ("" if first else ",\n") + json.dumps(d, ensure_ascii=False)

    def cut_piece(self, c: Cut, first: bool) -> str:
        d = {"key": c.key, "reason": c.reason, "tokens": c.tokens}
        if c.index:
            d["index"] = c.index
        return ("" if first else ", ") + json.dumps(d, ensure_ascii=False)

    def cut_more(self, n: int, first: bool) -> str:
        return ("" if first else ", ") + json.dumps({"more": n})


class Xml(Renderer):
    name = "xml"

    def head(self) -> str:
        m = self.meta
        q = m.get("query")
        return (f"<context mode={quoteattr(m['mode'])} budget=\"{int(m['budget'])}\" "
                f"estimate={quoteattr(ESTIMATE_RULE)}" + (f" query={quoteattr(q)}" if q else "") + ">\n")

    def tail(self, used: int, cut_total: int) -> str:
        return f"<summary used=\"{used}\" cut=\"{cut_total}\"/>\n</context>\n"

    def block(self, it: Item, f: Form, first: bool = False) -> str:
        attrs = (f"key={quoteattr(it.key)} kind={quoteattr(it.kind)} name={quoteattr(it.name)}"
                 + (f" path={quoteattr(it.path)}" if it.path else "")
                 + (f" lines=\"{_lines(it)[1:]}\"" if it.line_start is not None else "")
                 + f" score=\"{it.score:.6f}\" reason={quoteattr(it.reason)} form=\"{f.level}\""
                 + (f" note={quoteattr(f.note)}" if f.note else "")
                 + (f" index={quoteattr(it.index)}" if it.index else ""))
        if f.level == "ref":
            return f"<node {attrs}/>\n"
        body = xml_text(f.body).replace("]]>", "]]]]><![CDATA[>")
        return f"<node {attrs}><![CDATA[\n{body}\n]]></node>\n"

    def cut_piece(self, c: Cut, first: bool) -> str:
        return f"<cut key={quoteattr(c.key)} reason={quoteattr(c.reason)} tokens=\"{c.tokens}\"/>\n"

    def cut_more(self, n: int, first: bool) -> str:
        return f"<cut more=\"{n}\"/>\n"


def renderer(fmt: str, meta: dict) -> Renderer:
    cls = {"markdown": Markdown, "json": Json, "xml": Xml}.get(fmt)
    if cls is None:
        from ..errors import UsageError
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    return cls(meta)
