"""One line per field: a name, key, path, kind or message printed on a line of its own output
(the CLI's text, ``kgsearch context``'s Markdown headers and notes) with its line breaks shown
escaped, so that a KG name ``"a\\nb"`` or a file named ``"x\\n### y.md"`` cannot start a line, a
result or a Markdown header of its own. Base layer: the CLI, ``context`` and the MCP server
share the one helper (``--json`` and the JSON output keep the text as indexed)."""
from __future__ import annotations

import re

__all__ = ["one_line"]

# what ends a line for a reader (str.splitlines' breaks)
_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


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
