"""Loaders, one module per format, chosen by file type (``--format`` overrides):
:mod:`.loaders` (``LOADERS``, ``loader_for``, ``get_loader``).

Each loader module defines ``NAME``, ``EXTENSIONS`` and
``load(path: Path, rel: str, opts: LoadOptions) -> LoadResult`` (pure: no database access).
"""
