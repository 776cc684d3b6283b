"""Optional model2vec path (extra ``embed``): pull Hub models, list usable models.

``pull_model(name, dest=None) -> Path`` downloads ``name`` (e.g. ``minishlab/potion-base-8M``)
with ``model2vec.StaticModel.from_pretrained`` and saves it in model2vec format under
``kgsearch.config.data_home()/models/<owner>--<name>`` (or ``dest``), then checks that
:func:`kgsearch.embed.load_model` reads it. Needs model2vec and the network; without model2vec
it raises :class:`kgsearch.errors.UsageError` naming ``pip install 'kgsearch[embed]'``.
Everything else in kgsearch works with local model folders and never needs model2vec.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import DataError, UsageError

__all__ = ["pull_model", "list_models", "pulled_dir"]


def pulled_dir(name: str) -> Path:
    from ..config import data_home

    return data_home() / "models" / name.strip("/").replace("/", "--")


def pull_model(name: str, dest: str | os.PathLike | None = None) -> Path:
    """Fetch ``name`` from the Hugging Face Hub into the data dir; returns the folder."""
    try:
        from model2vec import StaticModel
    except ImportError:
        raise UsageError("pulling models needs model2vec: pip install 'kgsearch[embed]' "
                         "(local model folders work without it)") from None
    if not name or not isinstance(name, str):
        raise UsageError("name a model to pull, e.g. minishlab/potion-base-8M")
    out = Path(dest).expanduser() if dest else pulled_dir(name)
    try:
        model = StaticModel.from_pretrained(name)
    except Exception as exc:   # network, unknown repo, offline mode: all one line for the user
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"could not fetch {name} from the Hugging Face Hub ({msg[:300]}); "
                        f"check the name and the network") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(out))
    except OSError as exc:
        raise DataError(f"cannot save the model ({exc.strerror}); pass --dest with a writable folder",
                        str(out)) from None
    from .model import load_model

    load_model(out)        # fails with a clear DataError if kgsearch cannot read what was saved
    return out


def _describe(path: Path, source: str) -> dict | None:
    from .model import find_layout
    from .safetensors import read_header

    layout = find_layout(path)
    if layout is None:
        return None
    cfg_path, weights, _tok, tensor = layout
    dims = ""
    try:
        header, _ = read_header(weights)
        shape = (header.get(tensor) or {}).get("shape") or []
        dims = int(shape[1]) if len(shape) == 2 else ""
    except DataError:
        pass
    name = path.name
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        name = str(cfg.get("model_name") or name) if isinstance(cfg, dict) else name
    except (OSError, ValueError):
        pass
    return {"name": name, "dims": dims, "path": str(path), "source": source}


def list_models() -> list[dict]:
    """Models kgsearch can load here: ``{name, dims, path, source}`` with source ``shipped``,
    ``pulled``, ``imported`` (``kgsearch model import WHEEL``; ``imported_from`` names the wheel)
    or ``env`` (``$KGSEARCH_MODEL``); the default model is marked ``default``."""
    from ..config import data_home, shipped_data_dir
    from .model import DEFAULT_MODEL
    from .wordllama import imported_from

    out: list[dict] = []
    seen: set[str] = set()
    places: list[tuple[Path, str]] = []
    shipped = shipped_data_dir()
    if shipped is not None:
        places.append((shipped / "models", "shipped"))
    places.append((data_home() / "models", "pulled"))
    for root, source in places:
        if not root.is_dir():
            continue
        for p in sorted(root.iterdir()):
            if p.is_dir() and str(p.resolve()) not in seen:
                d = _describe(p, source)
                if d is not None:
                    if source == "shipped" and p.name == DEFAULT_MODEL:
                        d["source"] = "shipped, default"
                    elif source == "pulled" and (wheel := imported_from(p)) is not None:
                        d["source"], d["imported_from"] = "imported", wheel
                    out.append(d)
                    seen.add(str(p.resolve()))
    from ..environment import current

    env = current().model
    if env:
        p = Path(env).expanduser()
        if p.is_dir() and str(p.resolve()) not in seen:
            d = _describe(p, "env")
            if d is not None:
                out.append(d)
    return out
