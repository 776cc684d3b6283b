"""One line per field: a name, key, path, kind or message printed on a line of its own output
(the CLI's text, ``kgsearch context``'s Markdown headers and notes) with its line breaks shown
escaped, so that a KG name ``"a\\nb"`` or a file named ``"x\\n### y.md"`` cannot start a line, a
result or a Markdown header of its own. Base layer: the CLI, ``context`` and the MCP server
share the one helper (``--json`` and the JSON output keep the text as indexed)."""
from __future__ import annotations

import re

__all__ = ["one_line", "UNSAFE", "unescape_shown", "quoted"]

# what ends a line for a reader (str.splitlines' breaks)
_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")

# What indexed text must not do to a terminal: C0 controls but tab and newline (ESC starts
# colour, cursor, title and clear-screen sequences; BEL; CR overwrites a line), DEL and the C1
# controls (0x9b is a one-byte CSI), and the bidi controls that reorder what is shown
# ("txt.exe" shown as "exe.txt"). The CLI shows them escaped (\x1b, \u202e) on a terminal.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

_SHOWN_ESCAPE = re.compile(r"\\(?:([nrt])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))")
_SHORT = {"n": "\n", "r": "\r", "t": "\t"}


def one_line(value) -> str:
    r"""``value`` as text with its line breaks shown escaped, so that it stays on its line.

    >>> one_line("new\nline\r\n 2. fake"), one_line(3), one_line("evil\n### injected.md")
    ('new\\nline\\r\\n 2. fake', '3', 'evil\\n### injected.md')
    >>> one_line("a\u2028b")
    'a\\u2028b'
    """
    text = str(value)
    return _BREAKS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text) if _BREAKS.search(text) \
        else text


def unescape_shown(text: str) -> str:
    r"""``text`` with the escapes kgsearch prints for a name, key or path (:func:`one_line`'s
    line breaks, a table cell's tab, a terminal's control and bidi characters) turned back into
    the characters they stand for, so that a key copied from the output names its node. Only
    those escapes: ``\x41`` stays as typed (kgsearch never prints an ``A`` so), and so does a
    backslash that starts no escape.

    >>> unescape_shown(r"kg:line\nbreak"), unescape_shown(r"kg:esc\x1b[31m \u202etxt"), unescape_shown(r"C:\x41\dir")
    ('kg:line\nbreak', 'kg:esc\x1b[31m \u202etxt', 'C:\\x41\\dir')
    """
    if "\\" not in text:
        return text

    def back(m: re.Match) -> str:
        short, hx, uni = m.groups()
        ch = _SHORT[short] if short else chr(int(hx or uni, 16))
        return ch if ch == "\t" or _BREAKS.fullmatch(ch) or UNSAFE.fullmatch(ch) else m.group()

    return _SHOWN_ESCAPE.sub(back, text)


def _visible(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def quoted(value) -> str:
    r"""A name, key or path in quotes for a message (``no node 'kg:a\nb'``), as the person typed
    it or as kgsearch printed it: its line breaks, control and bidi characters escaped as the
    CLI shows them (:func:`unescape_shown` reads them back), every other character itself. Not
    ``repr``, which doubles each backslash: ``kg:line\nbreak``, copied from a search, came back
    as ``kg:line\\nbreak``. Double quotes when the text holds a single quote and no double one.

    >>> print(quoted(r"kg:line\nbreak"), quoted("kg:a\nb \x1b[31m \u202e"), quoted("it's"), quoted(r"C:\dir"))
    'kg:line\nbreak' 'kg:a\nb \x1b[31m \u202e' "it's" 'C:\dir'
    """
    text = UNSAFE.sub(_visible, one_line(value))
    q = '"' if "'" in text and '"' not in text else "'"
    return q + text + q
