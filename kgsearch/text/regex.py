"""Regular expressions over node names without runaway matches (the pattern channel's ``/re/``).

Python's ``re`` backtracks: ``(\\w|\\w)*!`` against a 40-letter name takes 2**40 steps inside
one ``re.search`` call, so a budget checked between names does not stop it. What is
guaranteed, and how:

* **Refused everywhere** (:func:`refusal`, an empty result, the same in every thread and on
  every platform): patterns that can backtrack *exponentially* in the length of a name --
  a repeat inside a repeat (``(a+)+``); a repeat whose body can match the same text in more
  than one way (an alternation, an optional or variable-length part, a back reference or a
  conditional inside it: ``(\\w|\\w)*``, ``(\\w\\w?)*``, also the harmless ``(?:ab|cd)+``,
  which this conservative test cannot tell apart); more than :data:`MAX_PATHS` combinations
  of alternatives (``(a|a)(a|a)...``, exponential in the pattern without any repeat).
* What is left is polynomial: with ``d`` variable-length repeats and back references, one
  ``re.search`` on a name of ``L`` characters takes at most about ``L ** (d + 1)`` steps.
  Every subject is at most :data:`~kgsearch.text.trigrams.MAX_SYM` (256) characters.
* **In the main thread** (where ``signal.setitimer`` exists and the ``SIGALRM`` handler is a
  Python one or the default): a hard time limit. An interval timer's handler raises inside
  ``re.search`` itself -- the regex engine polls for signals while it backtracks (measured
  on CPython 3.8, 3.10, 3.11: ``(\\w|\\w)*!`` on 28 letters stops at 0.50 s of a 0.5 s
  timer). The caller's own handler and timer are restored afterwards, and a timer of the
  caller's that came due meanwhile fires right after.
* **Elsewhere** (another thread: the handler could not run there; Windows: no timer): no
  interruption is possible, so patterns of degree ``d > 2`` are refused too (``\\w*\\w*\\w*!``
  takes 1.2 s on one 256-letter name on a 2-core x86_64), the budget is checked before every
  name, and one name's match costs at most ``O(L ** 3)`` (measured worst case,
  ``\\w*\\w*!`` on 256 letters: 22 ms). So the limit can be overrun by one name's match,
  not more.

:func:`required_literal` gives the literal every match contains (the trigram prefilter).
"""
from __future__ import annotations

import logging
import signal
import threading
import time

from .trigrams import MAX_SYM

__all__ = ["refusal", "scan", "required_literal", "timer_usable", "sre_parser", "MAX_PATHS", "MAX_DEGREE"]

log = logging.getLogger(__name__)

MAX_PATHS = 256        # combinations of alternatives a pattern may have
MAX_DEGREE = 2         # variable-length repeats + back references, where no timer can stop a match


def sre_parser():
    try:
        import re._parser as sre_parse     # Python >= 3.11
    except ImportError:                    # pragma: no cover
        import sre_parse                   # type: ignore
    return sre_parse


def _children(av):
    """The pattern lists nested in an operand (groups, branches, lookarounds, conditionals)."""
    sre_parse = sre_parser()
    if isinstance(av, sre_parse.SubPattern):
        yield av
    elif isinstance(av, (tuple, list)):
        for x in av:
            if isinstance(x, (tuple, list, sre_parse.SubPattern)):
                yield from _children(x)


def _repeats():
    sre_parse = sre_parser()
    return {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)} - {None}


def refusal(parsed, timer: bool | None = None) -> str | None:
    """Why a parsed pattern is not run (None: it may run). ``timer``: whether a timer can stop
    a match here (default: :func:`timer_usable`)."""
    if _has_nested_repeat(parsed):
        return "nested repetition can take exponential time"
    if _has_ambiguous_repeat(parsed):
        return "a repeat whose body matches in more than one way can take exponential time"
    if _paths(parsed) > MAX_PATHS:
        return f"more than {MAX_PATHS} combinations of alternatives"
    if timer is None:
        timer = timer_usable()
    if not timer and _degree(parsed) > MAX_DEGREE:
        return (f"more than {MAX_DEGREE} variable-length repeats can take polynomial time, and here "
                "(outside the main thread, or without interval timers) no timer can stop a match")
    return None


def _has_nested_repeat(parsed) -> bool:
    REPEATS = _repeats()
    MAXREPEAT = sre_parser().MAXREPEAT

    def walk(items, inside: bool) -> bool:
        for op, av in items:
            if op in REPEATS:
                lo, hi, sub = av
                rep = hi is MAXREPEAT or hi > 1
                if rep and inside:
                    return True
                if walk(sub, inside or rep):
                    return True
                continue
            if any(walk(sub, inside) for sub in _children(av)):
                return True
        return False

    return walk(parsed, False)


def _has_ambiguous_repeat(parsed) -> bool:
    """A repeat (more than once) whose body can match in more than one way: an alternation,
    an optional or variable-length part, a back reference or a conditional inside it (sre
    turns ``(\\w|\\w)`` into a common ``\\w`` and empty alternatives: still a branch)."""
    sre_parse = sre_parser()
    REPEATS = _repeats()
    RISKY = {sre_parse.BRANCH, sre_parse.GROUPREF, sre_parse.GROUPREF_EXISTS}
    for name in ("GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE", "GROUPREF_UNI_IGNORE"):
        if hasattr(sre_parse, name):
            RISKY.add(getattr(sre_parse, name))

    def walk(items, inside: bool) -> bool:
        for op, av in items:
            if op in REPEATS:
                lo, hi, sub = av
                if inside and lo != hi:
                    return True
                if walk(sub, inside or hi is sre_parse.MAXREPEAT or hi > 1):
                    return True
                continue
            if inside and op in RISKY:
                return True
            if any(walk(sub, inside) for sub in _children(av)):
                return True
        return False

    return walk(parsed, False)


def _paths(parsed) -> int:
    """Combinations of alternatives (branches and conditionals multiply along a sequence)."""
    sre_parse = sre_parser()
    REPEATS = _repeats()

    def seq(items) -> int:
        total = 1
        for op, av in items:
            if op is sre_parse.BRANCH:
                n = sum(seq(b) for b in av[1])
            elif op is sre_parse.GROUPREF_EXISTS:
                n = seq(av[1]) + (seq(av[2]) if av[2] is not None else 1)
            elif op in REPEATS:
                n = seq(av[2])
            else:
                n = 1
                for sub in _children(av):
                    n *= seq(sub)
            total = min(total * n, 1 << 40)
        return total

    return seq(parsed)


def _degree(parsed) -> int:
    """Variable-length repeats and back references anywhere in the pattern."""
    sre_parse = sre_parser()
    REPEATS = _repeats()
    REFS = {sre_parse.GROUPREF} | {getattr(sre_parse, n) for n in
                                   ("GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE", "GROUPREF_UNI_IGNORE")
                                   if hasattr(sre_parse, n)}

    def walk(items) -> int:
        d = 0
        for op, av in items:
            if op in REPEATS:
                d += (av[0] != av[1]) + walk(av[2])
            elif op in REFS:
                d += 1
            else:
                d += sum(walk(sub) for sub in _children(av))
        return d

    return walk(parsed)


def required_literal(parsed) -> str:
    """Longest run of literal characters in the top-level sequence (a substring every match has)."""
    sre_parse = sre_parser()
    best, cur = "", ""
    for op, av in parsed:
        if op is sre_parse.LITERAL:
            cur += chr(av)
            continue
        if len(cur) > len(best):
            best = cur
        cur = ""
        if op is sre_parse.SUBPATTERN and not best:
            inner = required_literal(av[-1])
            if len(inner) > len(best):
                best = inner
    return cur if len(cur) > len(best) else best


# ---------------------------------------------------------------------------- running
class _RegexTimeout(Exception):
    pass


def timer_usable() -> bool:
    """Whether an interval timer can interrupt a match here: the main thread, ``setitimer``
    available, and a ``SIGALRM`` handler that can be put back (not one installed from C)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    try:
        return signal.getsignal(signal.SIGALRM) is not None
    except (ValueError, OSError):         # pragma: no cover
        return False


def _scan(rx, source, body: str, deadline: float, scores: dict[int, float]) -> None:
    for i, (nid, sym) in enumerate(source):
        if time.perf_counter() > deadline:
            log.info("regex %r stopped at its time budget after %d symbols", body, i)
            break
        for part in sym.split("\t"):
            part = part[:MAX_SYM]
            m = rx.search(part)
            if m:
                # whole-name matches first, then by how much of the name matched
                cover = (m.end() - m.start()) / max(1, len(part))
                scores[nid] = max(scores.get(nid, 0.0), 0.5 + 0.5 * cover)
                break


def _scan_with_alarm(rx, source, body: str, seconds: float, scores: dict[int, float]) -> None:
    """:func:`_scan` under a ``SIGALRM`` that interrupts even a single long ``re.search``."""
    armed = [True]

    def on_alarm(signum, frame):
        if armed[0]:
            raise _RegexTimeout()

    t0 = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        try:
            try:
                _scan(rx, source, body, time.perf_counter() + seconds, scores)
            finally:
                armed[0] = False       # (an alarm due before this line is caught just below)
        except _RegexTimeout:
            log.info("regex %r interrupted at its time budget (%.2f s) inside a match", body, seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay > 0:
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - (time.monotonic() - t0), 1e-3), old_interval)


def scan(rx, source, body: str, seconds: float, timer: bool | None = None) -> dict[int, float]:
    """Scores of the rows ``(node id, tab-separated names)`` whose name ``rx`` finds: 0.5 + 0.5 x
    the share of the name matched; at most ``seconds`` (a hard limit where ``timer``, default
    :func:`timer_usable`, else overrun by at most one name's match: see the module doc)."""
    scores: dict[int, float] = {}
    if timer is None:
        timer = timer_usable()
    if timer:
        _scan_with_alarm(rx, source, body, seconds, scores)
    else:
        _scan(rx, source, body, time.perf_counter() + seconds, scores)
    return scores
