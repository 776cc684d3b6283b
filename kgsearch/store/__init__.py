"""The one-file SQLite index: schema, migrations, meta, arrays, writer lock."""
from .db import Index, SCHEMA_VERSION

__all__ = ["Index", "SCHEMA_VERSION"]
