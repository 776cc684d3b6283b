"""What the JSON outputs do with values json cannot write: one rule, so `kgsearch ... --json`
and the HTTP API of `kgsearch serve` give the same values for the same answer."""
from __future__ import annotations

__all__ = ["jsonable"]


def jsonable(o):
    """``default=`` for :func:`json.dumps`: numpy scalars and arrays as Python numbers and
    lists, records by their ``as_dict()`` or attributes, anything else as its ``str``."""
    try:
        import numpy as np
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if hasattr(o, "as_dict"):
        return o.as_dict()
    if hasattr(o, "__dict__"):
        return o.__dict__
    return str(o)
