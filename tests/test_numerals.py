"""Numbers a person types are ASCII numbers, read by one module (kgsearch.numerals) at every
entry point: Python's int() and float() also read other scripts' digits ('٣' Arabic-Indic,
'３' fullwidth), underscores ('3_0') and Unicode spaces around ('\\u00a03')."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import cli, run, two_notes, write
from kgsearch import numerals

ARABIC_3, FULLWIDTH_3, NBSP = "\u0663", "\uff13", "\u00a0"
PKG = Path(__file__).resolve().parents[1] / "kgsearch"


@pytest.mark.parametrize("text", [ARABIC_3, FULLWIDTH_3, "3_0", NBSP + "3", "3\u2003", "1e3", "", " ", "+", "0x10",
                                  "3.0", None])
def test_parse_int_takes_ascii_digits_only(text):
    with pytest.raises(ValueError):
        numerals.parse_int(text)


@pytest.mark.parametrize("text, want", [("3", 3), (" 3", 3), ("3\t", 3), ("-12", -12), ("+7", 7), ("007", 7)])
def test_parse_int_plain_values(text, want):
    assert numerals.parse_int(text) == want


@pytest.mark.parametrize("text", [ARABIC_3, FULLWIDTH_3 + ".5", "1_0.5", NBSP + "1", "inf", "nan", "-Infinity",
                                  "1e999", "1e", ".", "", "0x1p3"])
def test_parse_float_takes_finite_ascii_numbers_only(text):
    with pytest.raises(ValueError):
        numerals.parse_float(text)


@pytest.mark.parametrize("text, want", [("1e3", 1000.0), (" .5", 0.5), ("2.", 2.0), ("-1.5E-2", -0.015), ("3", 3.0)])
def test_parse_float_plain_values(text, want):
    assert numerals.parse_float(text) == want


def test_parse_float_special_lets_inf_and_nan_through_for_the_option_to_word():
    assert numerals.parse_float("inf", special=True) == float("inf")
    assert numerals.parse_float("-Infinity", special=True) == float("-inf")
    with pytest.raises(ValueError):
        numerals.parse_float(ARABIC_3, special=True)


def test_numerals_imports_nothing_from_kgsearch():
    tree = ast.parse((PKG / "numerals.py").read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level]
    assert all(not n.startswith("kgsearch") for n in names)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    return two_notes(tmp_path_factory.mktemp("numerals"))


@pytest.mark.parametrize("value", [ARABIC_3, FULLWIDTH_3, "3_0", NBSP + "3", "1e3"])
def test_a_cli_count_in_other_digits_is_a_usage_error(value, indexed):
    rc, _, err = run("search", "alpha", "-k", value, "--db", indexed[1])
    assert rc == 2 and f"argument -k: invalid int value: {value!r}" in err


@pytest.mark.parametrize("value", [ARABIC_3 + ".5", "1_0", NBSP + "1"])
def test_a_cli_float_in_other_digits_is_a_usage_error(value, indexed):
    rc, _, err = run("search", "alpha", "--diversity", value, "--db", indexed[1])
    assert rc == 2 and f"argument --diversity: invalid float value: {value!r}" in err


@pytest.mark.parametrize("value", ["1_0,0,0,0", ARABIC_3 + ",0,0,0", "1,0,0," + FULLWIDTH_3, "1e999,1,0,0"])
def test_weights_in_other_digits_are_a_usage_error(value, indexed):
    """Before: `--weights 1_0,0,0,0` weighed embeddings 10 (float() reads the underscore)."""
    rc, _, err = run("search", "alpha", "--weights", value, "--db", indexed[1])
    assert rc == 2 and err == (f"error: --weights needs 4 non-negative numbers embedding,text,graph,intent; "
                               f"got {value!r}\n")


@pytest.mark.parametrize("args", [["-k", "3"], ["-k", " 3"], ["--diversity", "0.5"], ["--diversity", "1e0"],
                                  ["--weights", "1e-1,0.5,.2,0"]])
def test_plain_numbers_still_work(args, indexed):
    assert cli("search", "alpha", *args, "--db", indexed[1]) == 0


@pytest.fixture(scope="module")
def app(indexed):
    from kgsearch.serve import App, Holder

    h = Holder(str(indexed[1]))
    yield App({"index": h}, {"127.0.0.1", "localhost", "::1", ""})
    h.close()


@pytest.mark.parametrize("query, status, words", [
    ("k=%D9%A3", 400, "'k' must be a whole number"),               # Arabic-Indic 3
    ("k=%EF%BC%93", 400, "'k' must be a whole number"),            # fullwidth 3
    ("k=3_0", 400, "'k' must be a whole number"),
    ("k=%C2%A03", 400, "'k' must be a whole number"),              # no-break space, 3: int() strips it
    ("k=1e3", 400, "'k' must be a whole number"),
    ("diversity=1_0", 400, "'diversity' must be a number"),
    ("diversity=%C2%A01", 400, "'diversity' must be a number"),
    ("diversity=inf", 400, "'diversity' must be a number"),
    ("weights=1_0,0,0,0", 400, "--weights needs 4 non-negative numbers"),
    ("k=3", 200, ""), ("k=%203", 200, ""), ("diversity=1e0", 200, ""),
])
def test_http_parameters_are_ascii_numbers(app, query, status, words):
    import json

    st, _, payload = app.handle("GET", f"/api/search?q=alpha&{query}", {"host": "127.0.0.1:8765"}, b"")
    assert st == status, payload
    if words:
        assert words in json.loads(payload)["error"]


@pytest.mark.parametrize("length", ["3_0", NBSP + "30", ARABIC_3, "30"])
def test_content_length_is_ascii_digits(length):
    from kgsearch.serve import api

    if length == "30":
        assert api.ascii_int(length) == 30
    else:
        with pytest.raises(ValueError):
            api.ascii_int(length)


@pytest.mark.parametrize("value", [ARABIC_3, FULLWIDTH_3, "3_0", NBSP + "3", "inf"])
def test_max_file_size_in_other_digits_is_a_usage_error(value, tmp_path):
    """Before: `--max-file-size ٣` capped files at 3 MB and `3_0` at 30 MB (float() reads them)."""
    write(tmp_path / "v" / "a.md", "# A\nalpha\n")
    rc, _, err = run("index", tmp_path / "v", "--db", tmp_path / "i.db", "--max-file-size", value)
    assert rc == 2 and err.endswith(f"argument --max-file-size: must be a number of MB above 0 (e.g. 32), "
                                    f"got {value!r}\n")
    assert not (tmp_path / "i.db").exists()


@pytest.mark.parametrize("value", ["3", " 0.5", "1e1"])
def test_max_file_size_plain_values(value, tmp_path):
    write(tmp_path / "v" / "a.md", "# A\nalpha\n")
    assert cli("index", tmp_path / "v", "--db", tmp_path / "i.db", "--max-file-size", value, "-q") == 0


@pytest.mark.parametrize("var", ["KGSEARCH_MEMORY_MB", "KGSEARCH_VEC_CACHE_MB"])
@pytest.mark.parametrize("value", [ARABIC_3 + "00", FULLWIDTH_3 + "00", "3_00", NBSP + "300", "inf", "nan", "lots"])
def test_a_memory_variable_in_other_digits_is_a_usage_error(var, value, indexed, monkeypatch):
    """Before: KGSEARCH_MEMORY_MB=٣٠٠ was 300 MiB, `inf` an internal error (OverflowError), `nan`
    "cannot convert float NaN to integer"; KGSEARCH_VEC_CACHE_MB was ignored when unreadable
    (`inf`: an internal error at the first search)."""
    monkeypatch.setenv(var, value)
    rc, out, err = run("search", "alpha", "--db", indexed[1])
    assert (rc, out) == (2, "")
    assert err == f"error: {var}={value!r} is not a number of MiB in ASCII digits; set e.g. {var}=300\n"


@pytest.mark.parametrize("var, value, says", [("KGSEARCH_MEMORY_MB", "0", "must be positive"),
                                              ("KGSEARCH_VEC_CACHE_MB", "-1", "must be 0 or more")])
def test_a_memory_variable_out_of_range_is_a_usage_error(var, value, says, indexed, monkeypatch):
    monkeypatch.setenv(var, value)
    rc, _, err = run("search", "alpha", "--db", indexed[1])
    assert rc == 2 and err == f"error: {var}={value!r} {says}; set e.g. {var}=300\n"


@pytest.mark.parametrize("env", [{"KGSEARCH_MEMORY_MB": " 2000"}, {"KGSEARCH_MEMORY_MB": "1e300"},
                                 {"KGSEARCH_VEC_CACHE_MB": "0"}, {"KGSEARCH_VEC_CACHE_MB": "0.5"}])
def test_memory_variables_plain_values(env, indexed, monkeypatch):
    """(1e300 MiB was an internal error: no C long holds the limit; it is as good as none.)"""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert cli("search", "alpha", "--db", indexed[1]) == 0


def test_the_vector_cache_size_is_read_by_numerals(kg_env):
    from kgsearch.embed.dense import cache_budget

    kg_env(vec_cache_mb="0.5", memory_mb=None)
    assert cache_budget() == 2**19
    kg_env(vec_cache_mb="0")
    assert cache_budget() == 0


@pytest.mark.parametrize("weights, shown", [('{"links_to": "\\u0663"}', "'٣'"), ('{"links_to": "3_0"}', "'3_0'"),
                                            ('{"links_to": NaN}', "nan"), ('{"links_to": true}', "True"),
                                            ('{"links_to": -1}', "-1")])
def test_a_config_weight_that_is_no_ascii_number_names_the_file(weights, shown, tmp_path, monkeypatch):
    """Before: float() took "٣" as 3 and "3_0" as 30, true as 1 and NaN as a weight; the file's
    other errors are exit 3 naming it (docs/reliability.md, Settings files), and so is this."""
    cfg = write(tmp_path / "config.json", '{"edge_weights": %s}' % weights)
    write(tmp_path / "v" / "a.md", "# A\nalpha [[b]]\n")
    monkeypatch.setenv("KGSEARCH_CONFIG", str(cfg))
    rc, _, err = run("index", tmp_path / "v", "--db", tmp_path / "i.db")
    assert rc == 3 and err == (f"error: {cfg}: the weight of 'links_to' must be a number >= 0 in ASCII digits, "
                               f'got {shown} (e.g. {{"edge_weights": {{"links_to": 0.5}}}}); fix the config file\n')


def test_a_config_weight_in_ascii_digits_is_used(tmp_path, monkeypatch):
    from kgsearch.config import edge_weights

    cfg = write(tmp_path / "config.json", '{"edge_weights": {"links_to": 0.25, "cites": " 1e-1", "tagged": 0}}')
    monkeypatch.setattr("kgsearch.config.config_path", lambda: cfg)
    table = edge_weights()
    assert (table["links_to"], table["cites"], table["tagged"]) == (0.25, 0.1, 0.0)


@pytest.mark.parametrize("given", [{"k1": ARABIC_3}, {"k1": "1_5"}, {"k1": NBSP + "1.2"}, {"k1": float("nan")},
                                   {"k1": "inf"}, {"embed_max_chars": FULLWIDTH_3 + "00"},
                                   {"embed_max_chars": "3_000"}, {"embed_max_chars": "1e3"},
                                   {"edge_weights": {"calls": ARABIC_3}}, {"edge_weights": {"calls": float("inf")}}])
def test_a_setting_that_is_no_ascii_number_is_a_usage_error(given):
    """`eval --set k1=٣` (and a stored setting) went through float(): 3; `--set k1=NaN` is JSON."""
    from kgsearch.errors import UsageError
    from kgsearch.settings import IndexSettings

    with pytest.raises(UsageError, match="ASCII digits"):
        IndexSettings.from_dict(given)


def test_settings_plain_numbers():
    from kgsearch.settings import IndexSettings

    s = IndexSettings.from_dict({"k1": " 1.2", "b": 1, "embed_max_chars": "3000", "edge_weights": {"calls": "0.5"}})
    assert (s.text.k1, s.text.b, s.embed.embed_max_chars, dict(s.graph.edge_weights)) == (1.2, 1.0, 3000,
                                                                                          {"calls": 0.5})


@pytest.mark.parametrize("value", [ARABIC_3 + "d", FULLWIDTH_3 + "d", "\u0662\u0660\u0662\u0666-01-01"])
def test_a_modified_since_in_other_digits_is_a_usage_error(value, indexed):
    """Before: `--modified-since ٣d` filtered on 3 days ago (`\\d` matched, int() read it)."""
    rc, _, err = run("search", "alpha", "--modified-since", value, "--db", indexed[1])
    assert rc == 2 and err.startswith(f"error: bad date {value!r} in modified:; write YYYY-MM-DD")


@pytest.mark.parametrize("value", ["3d", "2026-01-01"])
def test_a_modified_since_in_ascii_digits(value, indexed):
    assert cli("search", "alpha", "--modified-since", value, "--db", indexed[1]) == 0
