"""The polling fallback: folders listed in turn, a bounded number of entries per tick.

Each folder keeps one number: a hash of what matters in its listing (the names of its indexable
files with their size and mtime, and its subfolders). A tick lists folders in round-robin order
until ``budget`` entries were looked at (at least one folder: a tick costs at most
``max(budget, the largest folder)`` stat calls), so a tree of F indexable entries is seen in full
every ``ceil(F / budget)`` ticks. Memory is one path and one integer per folder, not per file.

A folder whose hash changed is a change. A folder seen for the first time is one too when it
holds anything indexable (a folder created after the start: files may have been written into it
before it was first listed), except during the first full pass, which only records the baseline
(taken before the watcher's catch-up index run, so nothing between the two is missed).
"""
from __future__ import annotations

import os
from collections import deque

from .tree import WatchSpec, folders, skip_folder_name

__all__ = ["PollScanner", "DEFAULT_BUDGET"]

DEFAULT_BUDGET = 1000         # entries stat-ed per tick


class PollScanner:
    def __init__(self, spec: WatchSpec, budget: int = DEFAULT_BUDGET):
        self.spec = spec
        self.budget = max(1, int(budget))
        self.sigs: dict[str, int | None] = {}
        self.queue: deque[str] = deque()
        self.baseline = True
        self.rescan()

    def rescan(self) -> None:
        """Start again from the roots' folders as the index walk sees them now (keeps the hashes of
        folders still there)."""
        wanted: list[str] = []
        for r in self.spec.roots:
            found = folders(r)
            wanted += found or [r.folder]       # a missing root: its folder polled until it is back
        wanted = list(dict.fromkeys(wanted))
        self.sigs = {p: self.sigs[p] for p in wanted if p in self.sigs} | {p: None for p in wanted if p not in self.sigs}
        self.queue = deque(wanted)
        self._pass_left = len(self.queue) if self.baseline else 0

    @property
    def folders(self) -> int:
        return len(self.sigs)

    def first_pass(self) -> None:
        """List every folder once to record the baseline (no change reported)."""
        while self.baseline:
            self.tick(budget=1 << 62)

    def tick(self, budget: int | None = None) -> list[str]:
        """Look at up to ``budget`` entries (default: the scanner's); the folders that changed."""
        budget = self.budget if budget is None else budget
        changed: list[str] = []
        seen = 0
        rounds = len(self.queue)
        while self.queue and rounds > 0 and (seen < budget or seen == 0):
            rounds -= 1
            path = self.queue.popleft()
            if path not in self.sigs:             # dropped by a rescan
                continue
            sig, subdirs, n = self._signature(path)
            seen += n + 1
            old = self.sigs[path]
            self.sigs[path] = sig
            if self.baseline:
                self._pass_left -= 1
                if self._pass_left <= 0:
                    self.baseline = False
            elif old != sig and (old is not None or sig not in (None, _EMPTY)):
                changed.append(path)
            for d in subdirs:
                if d not in self.sigs:            # a new folder: listed next, as a change if it holds files
                    self.sigs[d] = None
                    self.queue.appendleft(d)
            self.queue.append(path)
        return changed

    def _signature(self, path: str) -> tuple[int | None, list[str], int]:
        """(a hash of the listing, subfolders to poll, entries looked at); None when the folder cannot
        be listed (gone, or not yet there). The hash is the sum of the entries' hashes (modulo 2**64),
        which does not depend on the order the system lists them in, so nothing is sorted."""
        try:
            entries = list(os.scandir(path))
        except OSError:
            return None, [], 0
        relevant = self.spec.in_folder(path)
        acc, subdirs = 0, []
        for e in entries:
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if not relevant(e.name, is_dir):
                continue
            if is_dir:
                acc += hash((e.name, -1, 0))
                if not skip_folder_name(e.name):
                    subdirs.append(e.path)
                continue
            try:
                st = e.stat(follow_symlinks=True)
                acc += hash((e.name, st.st_size, st.st_mtime_ns))
            except OSError:
                acc += hash((e.name, -2, 0))        # a broken link: its presence is what counts
        return acc & _MASK, subdirs, len(entries)


_MASK = (1 << 64) - 1
_EMPTY = 0
