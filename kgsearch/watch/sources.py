"""The watcher's two ways of noticing changes, behind one small interface.

:class:`InotifySource` (Linux, Android): one watch per folder the index walk enters; a new
folder gets its watches as it appears; a moved folder, a changed ``.kgsearchignore`` or an
event-queue overflow (``IN_Q_OVERFLOW``: the kernel dropped events) make it list the folders
again, and count as a change (the index run that follows compares every file with what it
stored, so a dropped event loses nothing). :class:`PollSource` wraps
:class:`~kgsearch.watch.poll.PollScanner`. Both answer ``changes`` (relevant events since the
last call) and say when their roots' shape changed (``replan``: a root went away or came back).
"""
from __future__ import annotations

import errno
import logging
import os
import time

from . import inotify as ino
from .poll import PollScanner
from .tree import IGNORE_FILE, Root, WatchSpec, folders

__all__ = ["InotifySource", "PollSource", "WatchLimit"]

log = logging.getLogger(__name__)


class WatchLimit(Exception):
    """inotify ran out of watches (``fs.inotify.max_user_watches``) or instances: poll instead."""


class InotifySource:
    kind = "inotify"

    def __init__(self, spec: WatchSpec):
        self.spec = spec
        self.ino = ino.Inotify()
        self.wds: dict[int, str] = {}
        self.replan = False
        self.overflows = 0
        self.sync()

    def fileno(self) -> int:
        return self.ino.fileno()

    @property
    def folders(self) -> int:
        return len(self.wds)

    def _add(self, path: str) -> None:
        try:
            wd = self.ino.add_watch(path)
        except ino.InotifyError as exc:
            if exc.errno in (errno.ENOSPC, errno.EMFILE, errno.ENOMEM):
                raise WatchLimit(f"inotify watch limit reached at {len(self.wds)} folders ({exc.strerror}); "
                                 f"raise fs.inotify.max_user_watches, or the watcher polls") from None
            return                               # gone meanwhile, or unreadable: the walk reports it
        self.wds[wd] = path

    def sync(self, under: str | None = None) -> None:
        """Watch every folder of the roots (or only those under ``under``, a new folder); drop the
        watches of folders no longer there (a full sync)."""
        if under is not None:
            for path in folders(Root(under, True)):
                self._add(path)
            return
        old = self.wds
        self.wds = {}
        for r in self.spec.roots:
            for path in folders(r):
                self._add(path)
        for wd in set(old) - set(self.wds):
            self.ino.rm_watch(wd)
        if any(not os.path.isdir(r.folder) for r in self.spec.roots):
            self.replan = True                  # a root's folder is missing: the poller waits for it

    def changes(self) -> int:
        """Read the queued events; the number that can change the index."""
        n = 0
        resync = False
        for ev in self.ino.read():
            m = ev.mask
            if m & ino.IN_Q_OVERFLOW:
                self.overflows += 1
                log.info("inotify queue overflow: listing the folders again")
                resync, n = True, n + 1
                continue
            if m & ino.IN_IGNORED:
                self.wds.pop(ev.wd, None)
                continue
            folder = self.wds.get(ev.wd)
            if folder is None:
                continue
            if m & (ino.IN_DELETE_SELF | ino.IN_MOVE_SELF | ino.IN_UNMOUNT):
                if any(folder == r.folder for r in self.spec.roots):
                    self.replan, n = True, n + 1    # a root (or a file root's folder) went away
                continue
            is_dir = bool(m & ino.IN_ISDIR)
            if not self.spec.relevant(folder, ev.name, is_dir):
                continue
            n += 1
            if is_dir and m & (ino.IN_MOVED_FROM | ino.IN_MOVED_TO):
                resync = True                   # paths of the watches under it changed
            elif is_dir and m & ino.IN_CREATE:
                self.sync(under=os.path.join(folder, ev.name))
            elif ev.name == IGNORE_FILE:
                resync = True                   # the folders to watch may have changed
        if resync:
            self.sync()
        return n

    def after_run(self) -> None:
        pass

    def close(self) -> None:
        self.ino.close()


class PollSource:
    kind = "poll"

    def __init__(self, spec: WatchSpec, interval: float, budget: int):
        self.spec = spec
        self.interval = interval
        self.scanner = PollScanner(spec, budget)
        self.scanner.first_pass()
        self.missing = {r.folder for r in spec.roots if not os.path.isdir(r.folder)}
        self.replan = False

    @property
    def folders(self) -> int:
        return self.scanner.folders

    def tick(self) -> int:
        self.scanner.last_save_ns = 0
        changed = self.scanner.tick()
        if self.missing and any(os.path.isdir(p) for p in self.missing):
            self.replan = True                  # a missing root came back
        return len(changed)

    def quiet_since(self, now: float) -> float:
        """When (``time.monotonic()`` scale) the last save among this tick's changes was made, from
        the files' and folders' modification times; ``now`` when that is unknown or in the future
        (a clock ahead, a file stamped later): the debounce counts from the save, not from the tick
        that noticed it."""
        ns = self.scanner.last_save_ns
        if not ns:
            return now
        age = time.time() - ns / 1e9
        return now - age if 0 <= age else now

    def after_run(self) -> None:
        """Folders as the walk sees them now (new ones filtered by the ignore files, gone ones dropped)."""
        self.scanner.rescan()

    def close(self) -> None:
        pass
