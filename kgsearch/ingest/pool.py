"""Run a pure function over many jobs in forked worker processes; results come back in order.

Loading is the one part of an index run that is pure (a loader never touches the index) and
the slowest part of a first run (``ast.parse`` alone is ~10 s for the standard library), so
:func:`ordered_map` spreads it over processes while the caller keeps every write to itself:

* ``workers`` children are forked (no ``multiprocessing``: it needs ``sem_open``, which some
  Android builds lack, and its pool workers outlive a parent killed with ``kill -9``). Child
  ``w`` computes jobs ``w, w + workers, ...`` and writes each result, pickled and
  length-prefixed, to its own pipe; the parent reads job ``i`` from child ``i % workers``. A
  child is at most one result ahead (the pipe fills), so memory stays bounded.
* A child never touches state it inherited (the open SQLite connection, the writer lock): it
  only runs ``fn`` and leaves with ``os._exit``. It ignores Ctrl-C (the parent decides) and
  exits when the parent is gone (a closed pipe, or a new parent process id).
* An exception raised by ``fn`` is sent back and raised in the parent at that job's turn, as
  in a plain loop. A child that dies (killed, out of memory) is replaced by running its
  remaining jobs in the parent.
* When the consumer stops early (an exception, ``close()``), the children are killed and
  reaped.

Without ``os.fork`` (Windows) or with ``workers <= 1``, it is a plain in-process loop.
"""
from __future__ import annotations

import logging
import os
import pickle
import signal
import traceback
from typing import Any, Callable, Iterator, Sequence

__all__ = ["ordered_map", "default_workers"]

log = logging.getLogger(__name__)

MAX_WORKERS = 4


def default_workers() -> int:
    """Worker processes for a big load: the cores, at most :data:`MAX_WORKERS`; 0 when one core
    (or no ``fork``) would make it slower than loading in-process."""
    if not hasattr(os, "fork"):
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return min(MAX_WORKERS, cores) if cores > 1 else 0


class _Failed:
    """An exception raised by ``fn`` in a child, to be raised again in the parent."""

    def __init__(self, exc: BaseException | None, text: str):
        self.exc, self.text = exc, text


def ordered_map(fn: Callable[[Any], Any], jobs: Sequence, workers: int,
                pack: Callable[[Any], Any] | None = None,
                unpack: Callable[[Any], Any] | None = None) -> Iterator[Any]:
    """``fn(job)`` for each job, in order. In workers, ``pack`` turns a result into something
    quick to pickle and ``unpack`` turns it back (the in-process path calls neither)."""
    workers = min(workers, len(jobs))
    if workers <= 1 or not hasattr(os, "fork"):
        for job in jobs:
            yield fn(job)
        return
    children: list[tuple[int, Any]] = []       # (pid, read file) per worker
    try:
        for w in range(workers):
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:                        # child: never returns
                _child(fn, jobs, w, workers, wfd, pack)
            os.close(wfd)
            children.append((pid, os.fdopen(rfd, "rb")))
        dead: set[int] = set()
        for i, job in enumerate(jobs):
            w = i % workers
            got = None if w in dead else _receive(children[w][1])
            if got is None:
                if w not in dead:
                    log.warning("a loader worker process ended early; loading its files in-process")
                    dead.add(w)
                yield fn(job)
                continue
            status, value = got
            if status == "error":
                failed = pickle.loads(value)
                if failed.exc is not None:
                    raise failed.exc
                raise RuntimeError(f"a loader worker failed:\n{failed.text}")
            yield value if unpack is None else unpack(value)
    finally:
        for pid, fh in children:
            try:
                fh.close()
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid, _ in children:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass


def _max_fd() -> int:
    try:
        return min(int(os.sysconf("SC_OPEN_MAX")), 1 << 20)
    except (AttributeError, ValueError, OSError):
        return 4096


def _receive(fh) -> tuple[str, Any] | None:
    head = fh.read(9)
    if len(head) < 9:
        return None
    size = int.from_bytes(head[1:], "little")
    body = fh.read(size)
    if len(body) < size:
        return None
    if head[:1] == b"E":
        return "error", body
    return "ok", pickle.loads(body)


def _child(fn, jobs, w: int, workers: int, wfd: int, pack) -> None:
    code = 0
    try:
        # let go of every inherited descriptor (the index, its lock, the other pipes): the
        # lock then dies with the parent, and the other pipes see EOF when it is gone
        os.closerange(3, wfd)
        os.closerange(wfd + 1, _max_fd())
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        parent = os.getppid()
        with os.fdopen(wfd, "wb") as out:
            for i in range(w, len(jobs), workers):
                if os.getppid() != parent:
                    break
                try:
                    res = fn(jobs[i])
                    body = pickle.dumps(res if pack is None else pack(res), pickle.HIGHEST_PROTOCOL)
                    tag = b"O"
                except BaseException as exc:            # raised again in the parent, in order
                    text = traceback.format_exc()
                    try:
                        body = pickle.dumps(_Failed(exc, text), pickle.HIGHEST_PROTOCOL)
                        pickle.loads(body)
                    except Exception:
                        body = pickle.dumps(_Failed(None, text), pickle.HIGHEST_PROTOCOL)
                    tag = b"E"
                out.write(tag + len(body).to_bytes(8, "little"))
                out.write(body)
                out.flush()
                if tag == b"E":
                    break
    except BaseException:                       # the parent went away (broken pipe) or stopped us
        code = 1
    finally:
        os._exit(code)
