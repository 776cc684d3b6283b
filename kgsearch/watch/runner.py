"""One index run for the watcher, in a child process (or in this one).

In a child (``fork``), the memory an index run takes (the embedding model, the text and graph
steps' arrays) goes back to the system when the child exits, so the watcher idles at the size of
a Python process with the indexer imported, however large the runs were. The child sends its
:class:`~kgsearch.indexer.IndexReport` (or its error) back through a pipe as JSON and exits.

A run that finds the index lock taken (a scheduled ``kgsearch index``, another watcher) comes
back as ``busy``: the watcher waits and tries again. A run stopped by SIGTERM or Ctrl-C rolls its
transaction back (nothing changed; the next run does the work).
"""
from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass, field

__all__ = ["RunResult", "Runner"]


@dataclass
class RunResult:
    status: str                         # ok | busy | error | interrupted
    code: int = 0                       # the exit code the CLI would have given
    message: str = ""                   # one line (error, busy)
    report: dict = field(default_factory=dict)     # IndexReport.as_dict() when ok

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def run_inline(db: str, paths: list[str]) -> RunResult:
    """One incremental index run of ``paths`` (empty: every registered root) in this process."""
    from ..errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_MEMORY, IndexBusy, KgsearchError
    from ..indexer import IndexOptions, index_paths

    try:
        report = index_paths(db, list(paths), IndexOptions())
    except IndexBusy as exc:
        return RunResult("busy", exc.code, str(exc))
    except KgsearchError as exc:
        return RunResult("error", exc.code, str(exc))
    except MemoryError as exc:
        return RunResult("error", EXIT_MEMORY, f"out of memory: {exc}")
    except KeyboardInterrupt:
        return RunResult("interrupted", EXIT_INTERRUPTED, "stopped; nothing was changed")
    except Exception as exc:           # a bug, or a damaged file: the watcher says so and goes on
        from ..store.db import ensure_error

        mapped = ensure_error(exc, db)
        if mapped is not None:
            return RunResult("error", mapped.code, str(mapped))
        return RunResult("error", EXIT_INTERNAL, f"internal error {type(exc).__name__}: {exc}")
    return RunResult("ok", 3 if report.partial else 0, "", report.as_dict())


class Runner:
    """Runs index passes; ``isolate`` runs each in a child (default on Linux and Android, where
    forking a process that has numpy loaded is safe; macOS warns against fork after its system
    frameworks are loaded, so runs stay in the process there)."""

    def __init__(self, db: str, isolate: bool | None = None, close_in_child: tuple[int, ...] = ()):
        self.db = db
        if isolate is None:
            isolate = hasattr(os, "fork") and sys.platform.startswith(("linux", "android"))
        self.isolate = isolate
        self.close_in_child = close_in_child
        self.child: int | None = None
        if self.isolate:
            from .. import indexer  # noqa: F401  (imported once here: each child starts with it loaded)

    def run(self, paths: list[str], should_stop=lambda: False) -> RunResult:
        """One run of ``paths``; ``should_stop()`` is asked once more just before the child starts
        (a stop asked for meanwhile starts no run)."""
        from ..errors import EXIT_INTERRUPTED

        if not self.isolate:
            return run_inline(self.db, paths)
        stop_sigs = {signal.SIGTERM, signal.SIGINT}
        # Signals wait while the child is made: the parent must know the child before its handler
        # can forward a stop to it, and the child must have its own handlers before one arrives.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, stop_sigs)
        if should_stop():
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
            return RunResult("interrupted", EXIT_INTERRUPTED, "stopped before the run started")
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                                   # the child: run, report, exit
            code = 1
            try:
                os.close(r)
                for fd in self.close_in_child:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                signal.signal(signal.SIGTERM, _raise_interrupt)
                signal.signal(signal.SIGINT, _raise_interrupt)
                try:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
                    res = run_inline(self.db, paths)
                except KeyboardInterrupt:
                    res = RunResult("interrupted", EXIT_INTERRUPTED, "stopped; nothing was changed")
                signal.signal(signal.SIGTERM, signal.SIG_IGN)     # the run is over: its report must get out
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                data = json.dumps(res.as_dict(), default=str).encode()
                with os.fdopen(w, "wb") as f:
                    f.write(data)
                code = 0
            except BaseException:                      # noqa: BLE001 - the parent reads no report and says so
                pass
            finally:
                os._exit(code)
        self.child = pid
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        os.close(w)
        chunks = []
        try:
            with os.fdopen(r, "rb") as f:
                while True:
                    b = f.read(1 << 16)
                    if not b:
                        break
                    chunks.append(b)
        finally:
            _, status = os.waitpid(pid, 0)
            self.child = None
        try:
            return RunResult(**json.loads(b"".join(chunks)))
        except (ValueError, TypeError):
            from ..errors import EXIT_INTERNAL

            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                return RunResult("interrupted", EXIT_INTERRUPTED, f"the index run was killed by signal {sig}; "
                                                                  "nothing was changed (the next run does the work)")
            return RunResult("error", EXIT_INTERNAL, f"the index run died (status {status}) without a report")

    def signal_child(self, sig: int = signal.SIGTERM) -> None:
        """Stop the run in progress (its transaction rolls back)."""
        if self.child is not None:
            try:
                os.kill(self.child, sig)
            except OSError:
                pass
