"""HTML building blocks: escaping, links, the page frame and its style sheet.

Indexed text is hostile input. Everything shown goes through :func:`esc`: HTML's special
characters become entities, and control characters (ESC and the other C0/C1 controls, DEL) and
the bidi controls that reorder what is shown (U+202E "txt.exe" shown as "exe.txt") become visible
escapes (``\\x1b``, ``\\u202e``), as in the terminal. URLs are built from fixed paths and
percent-encoded values only. The pages carry no script at all, and the Content-Security-Policy the
server sends forbids any (``default-src 'none'``), so a mistake in escaping still runs nothing.
"""
from __future__ import annotations

import html
import re
from urllib.parse import quote, urlencode

__all__ = ["esc", "field", "url", "page", "CSS", "clip"]

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def esc(value) -> str:
    r"""Text (anything ``str()`` accepts) safe inside an HTML element or a quoted attribute.

    >>> esc('<script>alert("x")</script> \x1b[2J \u202etxt.exe')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; \\x1b[2J \\u202etxt.exe'
    """
    return html.escape(_UNSAFE.sub(_visible, "" if value is None else str(value)), quote=True)


def _reference(m: re.Match) -> str:
    return f"&#x{ord(m.group()):x};"


def field(value) -> str:
    r"""Text for a form field's value (a quoted attribute or a textarea): what the person typed,
    which the browser must send back unchanged, so not shown as ```` (resubmitting the form
    would search for those four characters). HTML's special characters become entities and the
    control and bidi characters numeric references (``&#x1b;``), which a browser reads back as the
    same characters; the page itself still carries no raw control character. Only NUL and the C1
    controls (U+0080-U+009F, which no keyboard types) cannot come back: HTML reads ``&#x0;`` as
    U+FFFD and most C1 references as Windows-1252's characters.

    >>> field('a "b" <c> [2J ‮txt')
    'a &quot;b&quot; &lt;c&gt; &#x1b;[2J &#x202e;txt'
    """
    return _UNSAFE.sub(_reference, html.escape("" if value is None else str(value), quote=True))


def clip(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters, and how many were left out."""
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def url(path: str, /, **params) -> str:
    """A link to one of this server's pages, escaped for an attribute (None values left out).

    >>> url("/node", node='md:a"b<c')
    '/node?node=md%3Aa%22b%3Cc'
    """
    q = urlencode({k: v for k, v in params.items() if v is not None and v != ""}, quote_via=quote)
    return esc(path + ("?" + q if q else ""))


CSS = """
:root { color-scheme: light dark; --fg: #1b1b1b; --bg: #fdfdfc; --muted: #666; --line: #ddd; --acc: #0b5cad;
        --mark: #fff2a8; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e6e6; --bg: #161616; --muted: #a0a0a0; --line: #333; --acc: #7ab7ff; --mark: #5a4b00; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 52rem; padding: .75rem; font: 16px/1.45 system-ui, sans-serif;
       color: var(--fg); background: var(--bg); overflow-wrap: anywhere; }
a { color: var(--acc); text-decoration: none; } a:hover { text-decoration: underline; }
nav { display: flex; gap: 1rem; flex-wrap: wrap; align-items: baseline; border-bottom: 1px solid var(--line);
      padding-bottom: .4rem; margin-bottom: .6rem; }
nav b { margin-right: auto; }
form.search { display: flex; gap: .4rem; flex-wrap: wrap; }
form.search input[type=search] { flex: 1 1 14rem; font-size: 1.05rem; padding: .45rem; }
input, select, textarea, button { font: inherit; color: inherit; background: var(--bg);
       border: 1px solid var(--line); border-radius: 4px; padding: .3rem .45rem; }
textarea { width: 100%; min-height: 7rem; } input.num { width: 4.5em; } input.wide { width: 7em; }
button { cursor: pointer; }
fieldset { border: 1px solid var(--line); border-radius: 4px; margin: .5rem 0; }
.opts { display: flex; gap: .6rem; flex-wrap: wrap; font-size: .9rem; margin: .4rem 0; }
ol.hits { padding-left: 1.6rem; } ol.hits li { margin: .7rem 0; }
.meta, .muted { color: var(--muted); font-size: .85rem; }
.key { font-family: ui-monospace, monospace; font-size: .82rem; color: var(--muted); }
.snip { margin: .15rem 0; }
mark { background: var(--mark); color: inherit; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: color-mix(in srgb, var(--fg) 6%, transparent);
      padding: .6rem; border-radius: 4px; font-size: .85rem; max-height: 70vh; overflow: auto; }
table { border-collapse: collapse; font-size: .85rem; } td, th { padding: .15rem .5rem; text-align: left;
      border-bottom: 1px solid var(--line); } td.n { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: .2rem 0; } summary { cursor: pointer; color: var(--muted); font-size: .85rem; }
.edges h3 { font-size: 1rem; margin: .8rem 0 .2rem; } .edges ul { margin: 0; padding-left: 1.2rem; }
svg.hood { width: 100%; height: auto; max-width: 32rem; display: block; margin: .4rem auto; }
pre.body { max-height: 45vh; }
svg.hood text { font: 11px system-ui, sans-serif; fill: var(--fg); }
svg.hood .c { fill: var(--acc); } svg.hood .n { fill: var(--bg); stroke: var(--muted); }
.err { border-left: 4px solid #c33; padding: .4rem .6rem; }
"""


def page(title: str, body: str, q: str = "") -> bytes:
    """A whole page: the navigation bar (with the search box) and ``body`` (already escaped)."""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<meta name=referrer content=no-referrer><title>{esc(title)} · kgsearch</title>"
            f"<link rel=stylesheet href='/style.css'></head><body>"
            f"<nav><b><a href='/'>kgsearch</a></b><a href='/context'>context</a><a href='/stats'>stats</a></nav>"
            f"{body}</body></html>").encode("utf-8")
