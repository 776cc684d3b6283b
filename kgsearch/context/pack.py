"""Packing ranked nodes into a token budget: the forms of an item and the greedy knapsack.

Every :class:`Item` comes with its forms, largest first: ``full`` (the whole body), maybe
``trimmed`` (signature + docstring + the matched lines, :func:`trim_code` / :func:`trim_prose`)
and ``ref`` (the header alone). :func:`pack` chooses, for a budget counted with
:func:`kgsearch.context.tokens.estimate` on each rendered block:

1. the **top item** (the first one: callers rank best first) always goes in, in the largest form
   that fits; when not even its header fits, the header is cut to the budget;
2. the others as a multiple-choice knapsack, taken greedily by value per token: an item's
   value is the caller's score (for a task, the search score above the lowest hit considered);
   an item whose full block is over :data:`TRIM_FROM` tokens and has a trimmed form offers two
   steps, the trimmed form (worth :data:`TRIMMED_VALUE` of the item) and later the step up to
   the full form (the rest of its value, for the extra tokens); any other item offers its full
   form. Steps go in by value per token (ties: higher score, then key) while they fit; an item
   whose first step does not fit is dropped ("over budget"). So a long, high-ranked definition
   gets its signature, docstring and matched lines in before the budget goes to many small,
   lower-ranked ones, and its whole body when the budget still allows. An item whose lines lie
   inside an item packed in full is dropped as "inside ..."; an item whose full form would show
   packed items (a class whose methods are in) goes in trimmed at most. A section or chunk and
   its note or document (:meth:`Item.repeats`) are never packed both when the packed form of one
   holds the whole text of the other (a chunked document's text is the opening of its first
   chunk): the other is dropped as "its text is in ...", its tokens coming back if it was in;
3. the tokens left to the items dropped on the way, in rank order, each in the largest form it
   offered (full; or trimmed, when its full block is over :data:`TRIM_FROM`) that fits them: the
   greedy left them unused when tokens came back after an item was dropped, or when an item
   offered only its full form (its trimmed one not denser) and that did not fit. Nothing dropped
   fits the tokens left: the packing is the greedy's, cut reasons included.

Packed items come out in rank order. Everything sorts on total orders, so the same input gives
the same output.
"""
from __future__ import annotations

import functools
import heapq
import re
from dataclasses import dataclass, field, replace
from typing import Callable

from .tokens import chars_for

__all__ = ["Form", "Item", "Cut", "Packed", "pack", "trim_code", "trim_prose", "code_header", "brace_header", "matched_lines", "find_terms", "shorten_line", "MAX_MATCHED", "LONG_LINE",
           "line_window", "WINDOW_SHARE"]

MAX_MATCHED = 12            # matched lines kept by a trimmed form
DOC_LINES = 6               # docstring lines kept by a trimmed form
TRIM_WORTH = 0.8            # a trimmed form is offered only when it is under this share of the full one
TRIMMED_VALUE = 0.5         # the share of an item's value its trimmed form carries (the rest: going full)
_HOLDS = "holds nodes already packed"     # the start of the cut reason of an item whose full form would repeat others
TRIM_FROM = 60              # tokens of a full block under which trimming is not tried (it would not pay)
LONG_LINE = 1000            # characters of a long line a trimmed form keeps at least (around its first match)
WINDOW_SHARE = 8           # the long lines of a trimmed form share up to this part of the budget (line_window)

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
    index: str | None = None  # the index it comes from, when several are packed as one
    parent: str | None = None  # a section's or chunk's note or document (its key)
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
        return (self.source == "file" and self.path is not None and (self.index, self.path) == (other.index, other.path)
                and None not in
                (self.line_start, self.line_end, other.line_start, other.line_end)
                and self.line_start <= other.line_start and other.line_end <= self.line_end
                and (self.line_start, self.line_end) != (other.line_start, other.line_end))

    def repeats(self, other: "Item", form: Form) -> bool:
        """True when ``form`` of this item holds the whole text of ``other``, its part or its whole
        (a chunked document's text is the opening of its first chunk): packing both would show the
        same text twice. The text must start a line and end a word there (a note whose text is
        ``Guide`` is not shown by a line starting ``Guidelines``)."""
        if self.index != other.index or not (other.parent == self.key or self.parent == other.key):
            return False
        text = other.forms[0].body.strip()
        if not text or form.level == "ref":
            return False
        body = "\n" + form.body
        at = body.find("\n" + text)
        while at >= 0:
            end = at + 1 + len(text)
            if end == len(body) or not (_is_word(body[end]) and _is_word(text[-1])):
                return True
            at = body.find("\n" + text, at + 1)
        return False


@dataclass(frozen=True)
class Cut:
    key: str
    reason: str
    tokens: int              # tokens its smallest useful form needed
    index: str | None = None  # the index of the item, when several are packed as one


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
            memo[k] = max(1, raw_cost(it, f))
        return memo[k]

    if not items:
        return out
    left = budget - frame
    # items are told apart by their rank (position), not their key: several indexes packed as one
    # may each have a node of the same key (md:README), two items that must not share a slot
    chosen: dict[int, tuple[Item, Form, int]] = {}
    by_path: dict[tuple, list[int]] = {}        # ranks of the chosen, per (index, path) (no scan per item)

    def take(r: int, it: Item, f: Form, c: int) -> None:
        chosen[r] = (it, f, c)
        if it.path and r not in by_path.setdefault((it.index, it.path), []):
            by_path[(it.index, it.path)].append(r)

    top = items[0]
    tries = top.forms[:1] if cost(top, top.forms[0]) <= left else top.expanded()
    pick = next(((f, c) for f in tries if (c := cost(top, f)) <= left), None)
    if pick is None:
        f = shrink(top, max(0, left)) if shrink is not None else top.forms[-1]
        pick = (f, min(cost(top, f), max(0, left)))
    take(0, top, pick[0], pick[1])
    left -= pick[1]

    # the increments of a multiple-choice knapsack: an item's trimmed form (worth TRIMMED_VALUE of
    # it), then the step from trimmed to full (the rest); an item without a trimmed form worth its
    # tokens has one step, its full form. Taken greedily by value per token, from a heap. Trimming
    # is lazy (it costs ~0.1 ms an item): an item that may trim first enters with an optimistic
    # key, the density of an empty trimmed block (a lower bound of its tokens); when that pops, the
    # item is trimmed and its true steps pushed. Every key only grows, so the steps come out in
    # exactly the order of sorting the true keys; an item whose empty trimmed block no longer fits
    # is dropped without trimming it.
    th = TRIMMED_VALUE
    heap: list[tuple] = []
    for r, it in enumerate(items[1:], 1):
        v = max(it.score, 0.0)
        full = cost(it, it.forms[0])
        may = it.trimmer is not None or any(f.level == "trimmed" for f in it.forms)
        lb = max(1, raw_cost(it, Form("trimmed", "", ""))) if may and full > TRIM_FROM else None
        if lb is not None and lb < th * full:
            heap.append((-(th * v / lb), -it.score, it.key, r, 0, 0, it, lb))
        else:
            heap.append((-(v / full), -it.score, it.key, r, 1, 1, it, it.forms[0]))
    heapq.heapify(heap)

    why: dict[int, Cut] = {}

    def inside(r: int, it: Item) -> int | None:
        """The rank of a packed item whose full form shows every line of ``it``."""
        return next((k for k in by_path.get((it.index, it.path), ()) if k != r and chosen[k][1].level == "full"
                     and chosen[k][0].contains(it)), None) if it.path else None

    def shown(r: int, it: Item) -> int | None:
        """The rank of a packed part or whole of ``it`` whose packed form holds its whole text."""
        return next((k for k in by_path.get((it.index, it.path), ()) if k != r
                     and chosen[k][0].repeats(it, chosen[k][1])), None) if it.path else None

    def holds(r: int, it: Item) -> bool:
        """True when the full form of ``it`` would show a packed item."""
        return bool(it.path) and any(k != r and it.contains(chosen[k][0]) for k in by_path.get((it.index, it.path), ()))

    def put(r: int, it: Item, f: Form, c: int) -> int:
        """Pack ``f`` of ``it`` (``c`` tokens); the tokens of the packed parts or wholes whose text
        it shows, which come out (a document beside the chunk that opens with its text)."""
        take(r, it, f, c)
        back = 0
        for k in [k for k in by_path.get((it.index, it.path), ()) if k != r and it.repeats(chosen[k][0], f)]:
            back += chosen.pop(k)[2]
            by_path[(it.index, it.path)].remove(k)
            why[k] = Cut(items[k].key, f"its text is in {it.key}, already packed", 0)
        return back

    while heap:
        _, negs, key, r, _, step, it, f = heapq.heappop(heap)
        if r in why:                            # dropped already (its trimmed form did not fit)
            continue
        holder = inside(r, it)
        if holder is not None:
            if r not in chosen:
                why[r] = Cut(key, f"inside {items[holder].key}, already packed in full", 0)
            continue
        holder = shown(r, it)
        if holder is not None:                  # a document beside its chunk that shows its text
            if r not in chosen:
                why[r] = Cut(key, f"its text is in {items[holder].key}, already packed", 0)
            continue
        if step == 0:                           # optimistic entry: trim now, push the true steps
            v, full = max(it.score, 0.0), cost(it, it.forms[0])
            if f > left:                        # not even an empty trimmed block fits, nor will
                why[r] = Cut(key, f"over budget: body needs {full} tokens, {max(left, 0)} left", full)
                continue                        # (``left`` grows only when a part takes its whole's place)
            trimmed = next((g for g in it.expanded() if g.level == "trimmed"), None)
            ct = cost(it, trimmed) if trimmed is not None else None
            if ct is not None and ct < full and th * v / ct > v / full:
                heapq.heappush(heap, (-(th * v / ct), negs, key, r, 0, 1, it, trimmed))
                heapq.heappush(heap, (-((1 - th) * v / (full - ct)), negs, key, r, 1, 1, it, it.forms[0]))
            else:
                heapq.heappush(heap, (-(v / full), negs, key, r, 1, 1, it, it.forms[0]))
            continue
        have = chosen.get(r)
        if f.level == "full" and holds(r, it):
            if have is None:                    # its full body would repeat packed nodes: trimmed at most
                why[r] = Cut(key, f"{_HOLDS} and has no trimmed form", 0)
            continue
        need = cost(it, f) - (have[2] if have else 0)
        if need > left:
            if have is None:
                what = "trimmed form" if f.level == "trimmed" else "body"
                why[r] = Cut(key, f"over budget: {what} needs {cost(it, f)} tokens, {max(left, 0)} left",
                               cost(it, f))
            continue
        left -= need
        left += put(r, it, f, cost(it, f))     # the packed document whose text this chunk shows: its tokens come back

    # the tokens left go to the items dropped on the way, in rank order, each in the largest form
    # it offered (full; or trimmed, when its full block is over TRIM_FROM tokens) that fits them.
    # The greedy leaves them unused when an item dropped as over budget would fit now: tokens came
    # back (a document beside its chunk came out), or only its full form was offered (its trimmed
    # form was not denser) or allowed (its full form holds packed items). An item still "inside"
    # one packed in full, or shown by one, stays out; one that fits nowhere keeps its first reason.
    # Nothing dropped, or no token left for any dropped item: the packing is the greedy's.
    again = True
    while again and left > 0:
        again = False
        for r in [r for r in sorted(why) if r not in chosen]:
            it = items[r]
            if inside(r, it) is not None or shown(r, it) is not None:
                continue
            full, pick = it.forms[0], None
            if not holds(r, it) and cost(it, full) <= left:
                pick = full
            elif (cost(it, full) > TRIM_FROM and (it.trimmer is not None or any(g.level == "trimmed" for g in it.forms))
                  and max(1, raw_cost(it, Form("trimmed", "", ""))) <= left):
                pick = next((g for g in it.expanded() if g.level == "trimmed" and cost(it, g) <= left), None)
            if pick is None:
                continue
            left -= cost(it, pick)
            back = put(r, it, pick, cost(it, pick))
            left += back
            again = again or back > 0           # tokens came back: the items before it may fit now
    # an item cut because its full form holds packed items, with only that form offered (its
    # trimmed one not denser), had its trimmed form tried by the pass above: say why it stays out
    for r in [r for r in sorted(why) if r not in chosen and why[r].reason.startswith(_HOLDS)]:
        it = items[r]
        k = inside(r, it)
        if k is None:
            k = shown(r, it)
            if k is not None:
                why[r] = Cut(it.key, f"its text is in {items[k].key}, already packed", 0)
                continue
        else:
            why[r] = Cut(it.key, f"inside {items[k].key}, already packed in full", 0)
            continue
        trimmed = next((g for g in it.expanded() if g.level == "trimmed"), None)
        if trimmed is None:
            continue                            # "... and has no trimmed form": so it is
        full = cost(it, it.forms[0])
        if full <= TRIM_FROM:
            why[r] = Cut(it.key, f"{_HOLDS}; its body ({full} tokens) is too short to trim", 0)
        else:
            why[r] = Cut(it.key, f"{_HOLDS}; its trimmed form needs {cost(it, trimmed)} tokens, {max(left, 0)} left",
                         cost(it, trimmed))
    out.cut = [replace(why[r], index=items[r].index) if items[r].index is not None else why[r]
               for r in sorted(why) if r not in chosen]
    out.chosen = [chosen[r] for r in sorted(chosen)]
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
        body = "\n".join(lines[first:]).lower()     # lower() keeps the newlines: line numbers hold
        found: dict[int, set[str]] = {}
        line, last = first, 0
        for pos, term in find_terms(body, _alternatives(tuple(terms))):   # matches -> lines
            line += body.count("\n", last, pos)
            last = pos
            found.setdefault(line, set()).add(term)
        scored = sorted((-len(v), i) for i, v in found.items() if i not in marked)
        keep += [i for _, i in sorted(scored)[:limit - len(keep)]]
    return sorted(keep)


@functools.lru_cache(maxsize=64)
def _alternatives(terms: tuple[str, ...]) -> tuple[str, ...]:
    """The lowered terms, longest first (then alphabetical): the order a regex alternation tries them."""
    return tuple(sorted({t.lower() for t in terms if t}, key=lambda t: (-len(t), t)))


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def find_terms(text: str, alts: tuple[str, ...]) -> list[tuple[int, str]]:
    """``(position, term)`` of every match of ``re.finditer(r"\\b(" + "|".join(alts) + ")", text)``
    (``alts`` escaped, longest first) found with ``str.find``: the same matches, left to right,
    without overlaps, 4x faster on the stdlib bodies a context packs (an alternation gives the regex
    engine no literal to skip to).

    >>> find_terms("retry: retrying, preretry retry", ("retrying", "retry"))
    [(0, 'retry'), (7, 'retrying'), (26, 'retry')]
    """
    hits: dict[int, str] = {}
    for t in alts:
        first_word = _is_word(t[0])
        i = text.find(t)
        while i >= 0:
            before = i > 0 and _is_word(text[i - 1])
            if before != first_word and i not in hits:      # \b; at one position the longest wins
                hits[i] = t
            i = text.find(t, i + 1)
    out, nxt = [], 0
    for i in sorted(hits):
        if i >= nxt:                                         # the regex resumes after a match
            out.append((i, hits[i]))
            nxt = i + len(hits[i])
    return out


def _with_gaps(lines: list[str], keep: list[int], code: bool, comment: str = "#") -> tuple[str, int]:
    """The kept lines with a marker for each run of cut ones: a ``comment`` line in code
    (``# ... 3 lines cut``, ``// ...`` in the C family), ``[... 3 lines cut]`` in prose."""
    out, prev, cut = [], -1, 0
    for i in keep:
        if i > prev + 1:
            gap = i - prev - 1
            cut += gap
            nxt = lines[i] if i < len(lines) else ""
            indent = nxt[:len(nxt) - len(nxt.lstrip())]
            out.append(f"{indent}{comment} ... {gap} line{'s' if gap > 1 else ''} cut" if code else f"[... {gap} lines cut]")
        out.append(lines[i])
        prev = i
    if prev < len(lines) - 1:
        gap = len(lines) - 1 - prev
        cut += gap
        out.append(f"{comment} ... {gap} line{'s' if gap > 1 else ''} cut" if code else f"[... {gap} lines cut]")
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


_ATTRIBUTE = re.compile(r"\s*(?:\[|@|#!?\[|//|/\*|\*)")      # [Attr], @Annotation, #[attr], comments


def brace_header(lines: list[str]) -> tuple[int, int]:
    """:func:`code_header` for the brace languages: the lines up to the end of the declaration
    (its ``{``, ``=>``, ``;`` or a Kotlin expression body's ``=`` outside brackets), attributes and annotations above it included
    (a C# or Java span starts at them); (1, 1) when none is found in 20 lines.

    >>> brace_header(['[Test]', 'public void F(int a,', '    int b)', '{', '    return;', '}'])
    (4, 4)
    >>> brace_header(['fn f() -> u8 {', '    1', '}'])
    (1, 1)
    """
    i = 0
    while i < min(len(lines), 40) and (not lines[i].strip() or _ATTRIBUTE.match(lines[i])):
        i += 1
    depth = 0
    for k in range(i, min(len(lines), i + 20)):
        code = _STRING.sub('""', lines[k]).split("//", 1)[0]
        for ch in code:
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth <= 0 and ch == "{":
                return k + 1, k + 1
        if depth <= 0 and code.rstrip().endswith((";", "=>", "=")):      # (Kotlin: fun f(): Int =)
            return k + 1, k + 1
        if depth <= 0 and "=>" in code:
            return k + 1, k + 1
    return 1, 1


def trim_code(lines: list[str], terms: list[str], marked: set[int] = frozenset(), comment: str = "#",
              window: int = LONG_LINE) -> Form | None:
    """Signature + docstring (its first :data:`DOC_LINES` lines) + matched (and ``marked``) lines of
    a definition, cut lines marked by a ``comment`` line of the code's language (``#``: Python,
    read by :func:`code_header`; else a brace language, :func:`brace_header`), kept lines over
    :data:`LONG_LINE` characters (a minified bundle, a data blob) cut around their match
    (:func:`_cut_long`, ``window``); ``None`` when that would not be much smaller than the whole."""
    sig_end, doc_end = code_header(lines) if comment == "#" else brace_header(lines)
    head = list(range(min(doc_end, sig_end + DOC_LINES)))
    keep = sorted(set(head) | set(matched_lines(lines, terms, marked, first=doc_end)))
    short, chars, width = _cut_long(lines, keep, terms, window)
    body, cut = _with_gaps(short, keep, code=True, comment=comment)
    if (cut == 0 and chars == 0) or len(body) > TRIM_WORTH * len("\n".join(lines)):
        return None
    n = len(keep) - len(head)
    return Form("trimmed", body, (f"signature, docstring and {n} matched line{'s' if n != 1 else ''} "
                                  f"of {len(lines)}" if n else f"signature and docstring of {len(lines)} lines")
                + _long_note(chars, width))


def shorten_line(line: str, terms: list[str], width: int = LONG_LINE) -> tuple[str, int]:
    """``line`` cut to ``width`` characters around its first match of ``terms`` (its start when
    none matches), each cut end marked ``[... N characters cut]``; and the characters cut.

    >>> shorten_line("a" * 30 + " key " + "b" * 30, ["key"], width=11)
    ('[... 27 characters cut] aaa key bbb [... 27 characters cut]', 54)
    """
    if len(line) <= width:
        return line, 0
    hit = find_terms(line.lower(), _alternatives(tuple(terms))) if terms else []
    centre = hit[0][0] + len(hit[0][1]) // 2 if hit else 0
    a = max(0, min(centre - width // 2, len(line) - width))
    b = a + width
    text = ((f"[... {a} characters cut] " if a else "") + line[a:b]
            + (f" [... {len(line) - b} characters cut]" if b < len(line) else ""))
    return text, len(line) - width


def line_window(budget: int) -> int:
    """Characters the long lines of one trimmed form may keep together for a ``budget`` of tokens:
    a :data:`WINDOW_SHARE` th of it, at least :data:`LONG_LINE` (1,000 at 2K, 4,000 at 8K).

    >>> line_window(2000), line_window(8000), line_window(100)
    (1000, 4000, 1000)
    """
    return max(LONG_LINE, chars_for(budget) // WINDOW_SHARE)


def _cut_long(lines: list[str], keep: list[int], terms: list[str], window: int) -> tuple[list[str], int, int]:
    """``lines`` with each kept line over :data:`LONG_LINE` characters cut around its first match
    (:func:`shorten_line`): they share ``window`` characters, each keeping at least
    :data:`LONG_LINE`; the characters cut and the width each kept."""
    long = [i for i in keep if len(lines[i]) > LONG_LINE]
    if not long:
        return lines, 0, 0
    width = max(LONG_LINE, window // len(long))
    short, chars = list(lines), 0
    for i in long:
        short[i], n = shorten_line(lines[i], terms, width)
        chars += n
    return short, chars, width


def _long_note(chars: int, width: int) -> str:
    return f", long lines cut to {width} characters around the match" if chars else ""


def trim_prose(lines: list[str], terms: list[str], marked: set[int] = frozenset(),
               window: int = LONG_LINE) -> Form | None:
    """First paragraph (title included) + matched lines of a note or text, kept lines over
    :data:`LONG_LINE` characters (a minified export, a pasted log) cut around their match
    (:func:`_cut_long`, ``window``); ``None`` when that would not be much smaller than the whole."""
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
    short, chars, width = _cut_long(lines, keep, terms, window)
    body, cut = _with_gaps(short, keep, code=False)
    if (cut == 0 and chars == 0) or len(body) > TRIM_WORTH * len("\n".join(lines)):
        return None
    n = len(keep) - head
    return Form("trimmed", body, f"first paragraph and {n} matched line{'s' if n != 1 else ''} of {len(lines)}"
                                 + _long_note(chars, width))
