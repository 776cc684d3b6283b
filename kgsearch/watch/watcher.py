"""``kgsearch watch``: keep an index current while its files change.

:class:`Watcher` notices changes under the roots (inotify where the kernel has it and the file
system delivers every change, else polling: :mod:`.sources`), waits until they stop coming
(``debounce`` seconds of quiet, at most ``max_wait`` after the first: a burst of saves is one
run), and runs one incremental index run (:mod:`.runner`), which re-reads only the files whose
size, mtime and content changed. Nothing is lost when the watcher dies (kill -9 included): every
run compares all files with what the index stored, so the catch-up run at the next start does
the work; the watches are set before that run, so nothing between the two is missed either.

The index lock is shared with ``kgsearch index``: while another run holds it (a scheduled
reindex), the watcher waits (``retry`` seconds, doubling up to ``retry_max``) and tries again;
it never gives up. Idle, it sleeps in ``select`` (inotify: no wake-up at all; polling: one tick
per ``interval``, a bounded number of entries each) with the memory of one Python process: the
runs happen in a child process that gives its memory back when it exits.
"""
from __future__ import annotations

import logging
import os
import select
import time
from dataclasses import dataclass
from typing import Callable

from ..errors import DataError, UsageError
from . import inotify as ino
from .runner import RunResult, Runner
from .sources import InotifySource, PollSource, WatchLimit
from .tree import Root, WatchSpec, fs_type, index_companions, remote_fs

__all__ = ["Watcher", "WatchOptions", "BACKENDS"]

log = logging.getLogger(__name__)

BACKENDS = ("auto", "inotify", "poll")


@dataclass
class WatchOptions:
    backend: str = "auto"          # auto: inotify on local file systems, polling elsewhere
    debounce: float = 0.3          # seconds without a change before a run
    max_wait: float = 5.0          # a change waits at most this long while others keep coming
    interval: float = 1.0          # polling: seconds between ticks
    budget: int = 2000             # polling: entries looked at per tick (kgsearch.watch.poll.DEFAULT_BUDGET)
    retry: float = 1.0             # first wait when another run holds the lock
    retry_max: float = 10.0
    isolate: bool | None = None    # runs in a child process (default: where fork exists)

    def check(self) -> None:
        if self.backend not in BACKENDS:
            raise UsageError(f"--backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        for name in ("debounce", "max_wait", "interval", "retry", "retry_max"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 <= v < 86400) or (name in ("interval", "retry") and v <= 0):
                raise UsageError(f"{name.replace('_', '-')} must be a number of seconds "
                                 f"{'above 0' if name in ('interval', 'retry') else 'from 0'}, got {v!r}")
        if not isinstance(self.budget, int) or self.budget < 1:
            raise UsageError(f"--budget must be a whole number of entries above 0, got {self.budget!r}")


class Watcher:
    """Watch ``paths`` (empty: the roots registered in the index at ``db``) and keep the index current.

    ``on_event(dict)`` hears what happens: ``{"event": "start"|"run"|"busy"|"notice"|"stop", ...}``.
    :meth:`run` returns when :meth:`stop` is called (from a signal handler or another thread).
    """

    def __init__(self, db: str, paths: list[str] | tuple = (), options: WatchOptions | None = None,
                 on_event: Callable[[dict], None] | None = None):
        self.db = os.path.abspath(os.path.expanduser(str(db)))
        self.paths = [str(p) for p in paths]
        self.opts = options or WatchOptions()
        self.opts.check()
        self.on_event = on_event or (lambda ev: None)
        self.stopping = False
        self.sources: list = []
        self.roots: list[Root] = []
        self.runs = 0
        self._given: dict[str, Root] = {}         # each PATH as first found (kept while it is away)
        self._warned: dict[tuple, None] = {}     # the last run's warnings, with their files' signatures
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.runner = Runner(self.db, self.opts.isolate, close_in_child=(self._wake_r, self._wake_w))

    # ------------------------------------------------------------------ roots and sources
    def _roots(self) -> list[Root]:
        if self.paths:
            from ..store.roots import check_paths

            check_paths(self.paths, "kgsearch watch ~/notes")
            out = []
            for p in self.paths:
                full = os.path.realpath(os.path.expanduser(p))
                if not os.path.exists(full):
                    known = self._given.get(p)
                    if known is None:            # at the start: a typo, said at once
                        raise DataError("no such file or folder; check the path", p)
                    out.append(known)            # gone since (moved, unmounted): polled for its return
                    continue
                out.append(self._given.setdefault(p, Root(full, os.path.isdir(full))))
                if out[-1].path != full or out[-1].is_dir != os.path.isdir(full):      # a link retargeted
                    out[-1] = self._given[p] = Root(full, os.path.isdir(full))
            return out
        from ..store.db import Index
        from ..store.roots import list_roots

        if not os.path.exists(self.db):
            raise UsageError(f"nothing to watch: {self.db} does not exist; give a PATH, e.g. `kgsearch watch ~/notes`")
        with Index.open(self.db, readonly=True) as ix:
            paths = [r.path for r in list_roots(ix.conn)]
        if not paths:
            raise UsageError(f"nothing to watch: {self.db} has no roots; give a PATH, e.g. `kgsearch watch ~/notes`")
        return [Root(p, not os.path.isfile(p)) for p in paths]

    def _plan(self) -> None:
        """(Re)build the sources for the current roots: inotify for local folders, polling for
        roots on network/shared-storage file systems, missing roots, or when inotify is missing
        or out of watches."""
        for s in self.sources:
            s.close()
        self.sources = []
        self.roots = self._roots()
        ignore = index_companions(self.db) | index_companions(os.path.realpath(self.db))
        want = self.opts.backend
        use_ino = want != "poll" and ino.available()
        if want == "inotify" and not use_ino:
            self._notice("inotify is not available here; polling instead")
        local, polled = [], []
        for r in self.roots:
            if not os.path.isdir(r.folder):
                self._notice(f"{r.path} is missing; polling for it to come back")
                polled.append(r)
            elif use_ino and (want == "inotify" or not remote_fs(fs_type(r.folder))):
                local.append(r)
            else:
                if use_ino:
                    self._notice(f"{r.path} is on a {fs_type(r.folder)} file system, where inotify misses changes "
                                 f"made elsewhere; polling it (--backend inotify to override)")
                polled.append(r)
        if local:
            try:
                self.sources.append(InotifySource(WatchSpec(local, ignore)))
            except (WatchLimit, ino.InotifyError) as exc:
                self._notice(f"{exc}; polling instead")
                polled += local
        if polled:
            self.sources.append(PollSource(WatchSpec(polled, ignore), self.opts.interval, self.opts.budget))

    # ------------------------------------------------------------------ control
    def stop(self) -> None:
        """Ask :meth:`run` to return (safe from a signal handler and from another thread); a run in
        progress in a child process is stopped (its transaction rolls back)."""
        self.stopping = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self.runner.signal_child()

    def _notice(self, message: str) -> None:
        log.info(message)
        self.on_event({"event": "notice", "message": message})

    def _index(self, changes: int, catch_up: bool = False) -> RunResult:
        """One run for ``changes`` saves seen (``catch_up``: also the run at the start, or after the
        roots or the folders watched changed, which no save asked for)."""
        t0 = time.monotonic()
        res = self.runner.run(self.paths, should_stop=lambda: self.stopping)
        self.runs += 1
        if res.status == "ok":
            self._once(res.report)
        self.on_event({"event": "run", "changes": changes, "catch_up": catch_up,
                       "seconds": round(time.monotonic() - t0, 3), "result": res})
        return res

    def _once(self, report: dict) -> None:
        """Every run walks every file again, so a file it skips (too large, binary, malformed,
        unreadable) is warned about in every run: each warning is passed on once, until the file
        it names changes (size, mtime) or the warning stops coming (the file was fixed, or
        removed); ``warnings_repeated`` counts the ones held back."""
        warned: dict[tuple, None] = {}
        new = []
        for w in report.get("warnings", []):
            key = (w, _signature(w))
            if key not in self._warned:
                new.append(w)
            warned[key] = None
        report["warnings_repeated"] = len(report.get("warnings", [])) - len(new)
        report["warnings"] = new
        self._warned = warned

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        """Watch until :meth:`stop`. A usage or data error in the setup (nothing to watch, a PATH
        that does not exist) is raised before anything starts, and so is another watcher of the
        same index (:class:`~kgsearch.store.lock.WatchLock`)."""
        from ..store.lock import WatchLock

        lock = WatchLock(self.db).acquire()       # a second watcher of this index: IndexBusy (exit 75)
        try:
            self._plan()
            self._loop()
        finally:
            for s in self.sources:
                s.close()
            lock.release()
        self.on_event({"event": "stop", "runs": self.runs})

    def _loop(self) -> None:
        o = self.opts
        self.on_event({"event": "start", "roots": [r.path for r in self.roots],
                       "sources": [{"kind": s.kind, "folders": s.folders,
                                    "roots": [r.path for r in s.spec.roots]} for s in self.sources]})
        pending, first, last = 1, time.monotonic(), 0.0      # the catch-up run, at once
        caught = 1                                            # (of pending: runs no save asked for)
        retry_at, backoff = 0.0, o.retry
        next_tick = time.monotonic() + o.interval
        while not self.stopping:
            now = time.monotonic()
            due = None
            if pending:
                due = max(retry_at, min(last + o.debounce, first + o.max_wait))
            polls = [s for s in self.sources if s.kind == "poll"]
            timeout = None if due is None else max(0.0, due - now)
            if polls:
                timeout = max(0.0, next_tick - now) if timeout is None else min(timeout, max(0.0, next_tick - now))
            fds = [self._wake_r] + [s.fileno() for s in self.sources if s.kind == "inotify"]
            ready, _, _ = select.select(fds, [], [], timeout)
            if self._wake_r in ready:
                try:
                    os.read(self._wake_r, 4096)
                except OSError:
                    pass
                if self.stopping:
                    break
            now = time.monotonic()
            n = 0
            for s in self.sources:
                if s.kind == "inotify" and s.fileno() in ready:
                    n += s.changes()
            saved = now if n else None           # when the newest change was made
            if polls and now >= next_tick:
                for s in polls:
                    c = s.tick()
                    if c:                        # a poll sees a save up to a pass after it: its own time
                        n += c
                        saved = max(saved, s.quiet_since(now)) if saved is not None else s.quiet_since(now)
                next_tick = now + o.interval
            if any(s.replan for s in self.sources):
                self._plan()                     # watches set first, then the run catches up
                n += 1
                caught += 1
            if n:
                if not pending:
                    first = now
                pending += n
                last = max(last, saved if saved is not None else now)
            if not pending or now < max(retry_at, min(last + o.debounce, first + o.max_wait)):
                continue
            batch, pending, syn, caught = pending, 0, caught, 0
            res = self._index(batch - syn, catch_up=syn > 0)
            if self.stopping:
                break
            if res.status == "busy":
                pending, first, caught = batch, first, syn
                retry_at = time.monotonic() + backoff
                self.on_event({"event": "busy", "retry_in": backoff, "message": res.message})
                backoff = min(backoff * 2, o.retry_max)
                continue
            retry_at, backoff = 0.0, o.retry
            for s in self.sources:
                s.after_run()
            if not self.paths and res.status == "ok" and self._follow_roots():
                pending, first, last, caught = 1, time.monotonic(), time.monotonic(), 1

    def _follow_roots(self) -> bool:
        """Without PATHs the watcher follows the index's roots: a root added or removed by hand
        (`kgsearch index NEW`, `roots remove`) is watched or dropped after the next run."""
        try:
            now = [r.path for r in self._roots()]
        except (UsageError, DataError):
            return False
        if now == [r.path for r in self.roots]:
            return False
        self._notice(f"the index's roots changed; now watching {', '.join(now)}")
        self._plan()
        return True


def _signature(warning: str) -> tuple | None:
    """(size, mtime, inode) of the file a warning begins with (``PATH: ...``, ``PATH:LINE: ...``,
    ``PATH (12.0 MB): ...``), None when it names none that exists."""
    if not os.path.isabs(warning):
        return None
    for i, ch in enumerate(warning[:4096]):
        if ch in ":(" and i:
            try:
                st = os.stat(warning[:i].rstrip())
            except (OSError, ValueError):
                continue
            return st.st_size, st.st_mtime_ns, st.st_ino
    return None
