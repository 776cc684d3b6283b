"""``kgsearch mcp``: the Model Context Protocol server (stdio, standard library only); see
:mod:`.server` for the protocol, :mod:`.stdio` for the transport and :mod:`.tools` for the tools and their schemas."""
from __future__ import annotations

from .server import SUPPORTED_VERSIONS, Server
from .stdio import serve
from .tools import TOOLS

__all__ = ["Server", "serve", "TOOLS", "SUPPORTED_VERSIONS"]
