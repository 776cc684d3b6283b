"""Packing ranked nodes into a token budget: the forms of an item and the greedy knapsack.

Every :class:`Item` comes with its forms, largest first: ``full`` (the whole body), maybe
``trimmed`` (signature + docstring + the matched lines, :func:`trim_code` / :func:`trim_prose`)
and ``ref`` (the header alone). :func:`pack` chooses, for a budget counted with
:func:`kgsearch.context.tokens.estimate` on each rendered block:

1. the **top item** (the first one: callers rank best first) always goes in, in the largest form
   that fits; when not even its header fits, the header is cut to the budget;
2. the others by **score density** (score / tokens of the full form; the caller's score: for a
   task, the search score above the lowest hit considered; ties: higher score, then key): the full form when it fits, else the trimmed form when it fits ("trimmed"), else the
   item is dropped ("over budget"). An item whose lines lie inside an item already packed in
   full is dropped as "inside ..."; an item that contains packed items may only go in trimmed.

Packed items come out in rank order. Everything sorts on total orders, so the same input gives
the same output.
"""
from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Form", "Item", "Cut", "Packed", "pack", "trim_code", "trim_prose", "code_header", "matched_lines", "MAX_MATCHED"]

MAX_MATCHED = 12            # matched lines kept by a trimmed form
DOC_LINES = 6               # docstring lines kept by a trimmed form
TRIM_WORTH = 0.8            # a trimmed form is offered only when it is under this share of the full one

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Form:
    level: str              # "full", "trimmed" or "ref"
    body: str               # '' for "ref"
    note: str = ""          # what a trimmed form kept


@dataclass
class Item:
    id: int
    key: str
    kind: str
    name: str
    path: str | None         # as shown (relative to the index root when inside one)
    line_start: int | None
    line_end: int | None
    score: float
    reason: str              # why it is a candidate: "rank 3", "changed", "calls <key>", ...
    forms: list[Form]        # largest first; the last is always the "ref" form
    lang: str = ""           # code fence language
    source: str = "index"    # "file" (read from disk, unchanged since indexing) or "index"
    trimmer: Callable[[], "Form | None"] | None = field(default=None, repr=False, compare=False)

    def expanded(self) -> list[Form]:
        """The forms, the trimmed one computed on first need (most items never need it)."""
        if self.trimmer is not None:
            t, self.trimmer = self.trimmer(), None
            if t is not None:
                self.forms = self.forms[:-1] + [t] + self.forms[-1:]
        return self.forms

    def contains(self, other: "Item") -> bool:
        """True when this item's full form shows every line of ``other`` (source read from the file)."""
        return (self.source == "file" and self.path is not None and self.path == other.path and None not in
                (self.line_start, self.line_end, other.line_start, other.line_end)
                and self.line_start <= other.line_start and other.line_end <= self.line_end
                and (self.line_start, self.line_end) != (other.line_start, other.line_end))


@dataclass(frozen=True)
class Cut:
    key: str
    reason: str
    tokens: int              # tokens its smallest useful form needed


@dataclass
class Packed:
    budget: int
    chosen: list[tuple[Item, Form, int]] = field(default_factory=list)   # (item, form, tokens), rank order
    cut: list[Cut] = field(default_factory=list)                          # in the order they were decided
    used: int = 0            # tokens counted: frame + every chosen block (>= the estimate of the output)

    @property
    def trimmed(self) -> list[tuple[Item, Form, int]]:
        return [c for c in self.chosen if c[1].level != "full"]


def pack(items: list[Item], budget: int, cost: Callable[[Item, Form], int], frame: int = 0,
         shrink: Callable[[Item, int], Form] | None = None) -> Packed:
    """Choose forms of ``items`` (best first) within ``budget`` tokens.

    ``cost(item, form)`` is the token estimate of the block the renderer prints for it; ``frame``
    the tokens of what the renderer prints around the blocks. ``shrink(item, tokens)`` returns a
    form of at most ``tokens`` (the top item's last resort).
    """
    out = Packed(budget=budget, used=frame)
    memo: dict[tuple[int, int], int] = {}
    raw_cost = cost

    def cost(it: Item, f: Form) -> int:        # noqa: F811 - the renderer's cost, memoised per form
        k = (id(it), id(f))
        if k not in memo:
            memo[k] = raw_cost(it, f)
        return memo[k]

    if not items:
        return out
    left = budget - frame
    rank_of = {it.key: r for r, it in enumerate(items)}
    chosen: dict[str, tuple[Item, Form, int]] = {}

    top = items[0]
    tries = top.forms[:1] if cost(top, top.forms[0]) <= left else top.expanded()
    pick = next(((f, c) for f in tries if (c := cost(top, f)) <= left), None)
    if pick is None:
        f = shrink(top, max(0, left)) if shrink is not None else top.forms[-1]
        pick = (f, min(cost(top, f), max(0, left)))
    chosen[top.key] = (top, pick[0], pick[1])
    left -= pick[1]

    def full_cost(it: Item) -> int:
        return max(1, cost(it, it.forms[0]))

    rest = sorted(items[1:], key=lambda it: (-(max(it.score, 0.0) / full_cost(it)), -it.score, it.key))
    for it in rest:
        same = [(k, o, f) for k, (o, f, _) in chosen.items() if o.path == it.path] if it.path else []
        inside = next((k for k, o, f in same if f.level == "full" and o.contains(it)), None)
        if inside is not None:
            out.cut.append(Cut(it.key, f"inside {inside}, already packed in full", 0))
            continue
        holds = any(it.contains(o) for _, o, _ in same)
        fit = None
        if not holds and full_cost(it) <= left:
            fit = (it.forms[0], cost(it, it.forms[0]))
        elif cost(it, it.forms[-1]) >= left:      # a trimmed block is longer than the bare header: no need to trim
            out.cut.append(Cut(it.key, f"over budget: body needs {full_cost(it)} tokens, {max(left, 0)} left",
                               full_cost(it)))
            continue
        forms = [f for f in it.expanded() if f.level != "ref" and not (holds and f.level == "full")] if fit is None else []
        costs = [(f, cost(it, f)) for f in forms]
        if fit is None:
            fit = next(((f, c) for f, c in costs if c <= left), None)
        if fit is None and not costs:
            out.cut.append(Cut(it.key, "holds nodes already packed and has no trimmed form", 0))
            continue
        if fit is None:
            need = min(c for _, c in costs)
            what = "trimmed form" if len(costs) > 1 else "body"
            out.cut.append(Cut(it.key, f"over budget: {what} needs {need} tokens, {max(left, 0)} left", need))
            continue
        chosen[it.key] = (it, fit[0], fit[1])
        left -= fit[1]
    out.chosen = sorted(chosen.values(), key=lambda c: rank_of[c[0].key])
    out.used = budget - left
    return out


# ---------------------------------------------------------------------------- trimming
def matched_lines(lines: list[str], terms: list[str], marked: set[int] = frozenset(), first: int = 0,
                  limit: int = MAX_MATCHED) -> list[int]:
    """Indexes (into ``lines``) of the lines to keep: every ``marked`` line (indexes, e.g. changed
    lines) first, then the lines holding the most distinct query ``terms`` (a word starting with
    the term, as the snippets match), ties to the earlier line; at most ``limit``, in line order.
    Lines before ``first`` (the header) are not candidates."""
    keep = sorted(i for i in marked if first <= i < len(lines))[:limit]
    if len(keep) < limit and terms:
        rx = _terms_rx(tuple(terms))
        body = "\n".join(lines[first:])
        starts = [0]
        for ln in lines[first:-1]:
            starts.append(starts[-1] + len(ln) + 1)
        found: dict[int, set[str]] = {}
        for m in rx.finditer(body):                 # one pass over the body, matches -> lines
            found.setdefault(first + bisect.bisect_right(starts, m.start()) - 1, set()).add(m.group(1).lower())
        scored = sorted((-len(v), i) for i, v in found.items() if i not in marked)
        keep += [i for _, i in sorted(scored)[:limit - len(keep)]]
    return sorted(keep)


@functools.lru_cache(maxsize=64)
def _terms_rx(terms: tuple[str, ...]) -> "re.Pattern":
    alts = sorted({t.lower() for t in terms if t}, key=lambda t: (-len(t), t))
    return re.compile(r"\b(" + "|".join(re.escape(t) for t in alts) + r")", re.IGNORECASE)


def _with_gaps(lines: list[str], keep: list[int], code: bool) -> tuple[str, int]:
    out, prev, cut = [], -1, 0
    for i in keep:
        if i > prev + 1:
            gap = i - prev - 1
            cut += gap
            nxt = lines[i] if i < len(lines) else ""
            indent = nxt[:len(nxt) - len(nxt.lstrip())]
            out.append(f"{indent}# ... {gap} line{'s' if gap > 1 else ''} cut" if code else f"[... {gap} lines cut]")
        out.append(lines[i])
        prev = i
    if prev < len(lines) - 1:
        gap = len(lines) - 1 - prev
        cut += gap
        out.append(f"# ... {gap} line{'s' if gap > 1 else ''} cut" if code else f"[... {gap} lines cut]")
    return "\n".join(out), cut


_DEF = re.compile(r"\s*(async\s+def|def|class)\b")
_STRING = re.compile(r'''("[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*')''')
_DOC = re.compile(r'\s*[rRbBuU]{0,2}("{3}|\'{3}|"|\')')


def code_header(lines: list[str]) -> tuple[int, int]:
    """(lines up to the end of the ``def``/``class`` header, lines up to the end of its docstring)
    of the definition that ``lines`` start with (decorators included); a line scanner, no parse
    (this runs for every trimmed node). (1, 1) when no header is found.

    >>> code_header(['@dec', 'def f(a,', '      b):', '    "doc"', '    return a'])
    (3, 4)
    >>> code_header(['class C:', '    \"\"\"Two', '    lines.\"\"\"', '    x = 1'])
    (1, 3)
    """
    depth, in_def, sig_end = 0, False, None
    for i, ln in enumerate(lines[:80]):
        code = _STRING.sub('""', ln).split("#", 1)[0]
        if not in_def and _DEF.match(code):
            in_def = True
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        if in_def and depth <= 0:
            sig_end = i + 1
            break
    if sig_end is None:
        return 1, 1
    j = sig_end
    while j < len(lines) and not lines[j].strip():
        j += 1
    m = _DOC.match(lines[j]) if j < len(lines) else None
    if m is None or not _STRING.sub('""', lines[sig_end - 1]).split("#", 1)[0].rstrip().endswith(":"):
        return sig_end, sig_end
    q = m.group(1)
    if len(q) == 1 or q in lines[j][m.end():]:
        return sig_end, j + 1
    for k in range(j + 1, min(len(lines), j + 400)):
        if q in lines[k]:
            return sig_end, k + 1
    return sig_end, sig_end


def trim_code(lines: list[str], terms: list[str], marked: set[int] = frozenset()) -> Form | None:
    """Signature + docstring (its first :data:`DOC_LINES` lines) + matched (and ``marked``) lines of
    a definition; ``None`` when that would not be much smaller than the whole."""
    sig_end, doc_end = code_header(lines)
    head = list(range(min(doc_end, sig_end + DOC_LINES)))
    keep = sorted(set(head) | set(matched_lines(lines, terms, marked, first=doc_end)))
    body, cut = _with_gaps(lines, keep, code=True)
    if cut == 0 or len(body) > TRIM_WORTH * len("\n".join(lines)):
        return None
    n = len(keep) - len(head)
    return Form("trimmed", body, f"signature, docstring and {n} matched line{'s' if n != 1 else ''} "
                                 f"of {len(lines)}" if n else f"signature and docstring of {len(lines)} lines")


def trim_prose(lines: list[str], terms: list[str], marked: set[int] = frozenset()) -> Form | None:
    """First paragraph (title included) + matched lines of a note or text; ``None`` when that would
    not be much smaller than the whole."""
    head = 0
    seen_text = False
    for i, ln in enumerate(lines):
        if ln.strip():
            seen_text = True
        elif seen_text and i > 0 and not lines[i - 1].lstrip().startswith("#"):
            break
        head = i + 1
        if head >= 8:
            break
    keep = list(range(head)) + matched_lines(lines, terms, marked, first=head)
    body, cut = _with_gaps(lines, keep, code=False)
    if cut == 0 or len(body) > TRIM_WORTH * len("\n".join(lines)):
        return None
    n = len(keep) - head
    return Form("trimmed", body, f"first paragraph and {n} matched line{'s' if n != 1 else ''} of {len(lines)}")
