"""``kgsearch watch``: keep an index current while its files change (see :mod:`.watcher`).

:mod:`.inotify` (the kernel's change notification through the C library), :mod:`.poll` (the
bounded polling fallback), :mod:`.tree` (which folders and names matter), :mod:`.sources` (both
behind one interface), :mod:`.runner` (one index run in a child process), :mod:`.watcher` (the
debounced loop).
"""
from __future__ import annotations

from .watcher import BACKENDS, WatchOptions, Watcher

__all__ = ["Watcher", "WatchOptions", "BACKENDS"]
