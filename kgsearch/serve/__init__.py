"""``kgsearch serve``: a local web page and JSON HTTP API over one or more indexes, standard
library only. :mod:`.server` (routes and the HTTP server with its bounds), :mod:`.api` (the JSON
endpoints = the CLI's ``--json``), :mod:`.pages` and :mod:`.svg` (HTML), :mod:`.html` (escaping),
:mod:`.holder` (the read-only index a server answers from, reopened when replaced)."""
from __future__ import annotations

from .holder import Busy, Holder
from .server import LOOPBACK, App, make_server

__all__ = ["App", "Holder", "Busy", "make_server", "LOOPBACK"]
