"""Typo correction (kgsearch/text/spelling.py): the edits against a slow distance, the words
it may touch, the choice of a correction; then searches, the CLI, JSON, MCP and several indexes."""
from __future__ import annotations

import itertools
import json

import pytest

from kgsearch.text import spelling
from kgsearch.text.tokenize import get_analyzer


def osa(a: str, b: str) -> int:
    """Optimal string alignment distance (Damerau-Levenshtein without repeated edits), by the table."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


@pytest.mark.parametrize("word", ["abca", "cab", "aab", "bbbb"])
def test_edits1_is_every_string_at_distance_one(word):
    alphabet = "abc"
    every = {"".join(p) for n in range(len(word) - 1, len(word) + 2) for p in itertools.product(alphabet, repeat=n)}
    want = {s for s in every if osa(word, s) == 1}
    got = {s for s in spelling.edits1(word) if set(s) <= set(alphabet)}
    assert got == want
    assert all(osa(word, s) == 1 for s in spelling.edits1(word))


def test_only_plain_words_may_be_typos():
    text = ("Bakc up my ntoes: see src/notes.py, NOTES, getNotes(), note_book, v2notes, #tagg, @usre, "
            "`cdoe`, 'quoetd', don't, re-run, a.b.c, path/to, tag:jounral, Wrold. Ntoes ntoes - eend")
    assert spelling.typo_words(text) == ["Bakc", "ntoes", "Wrold", "Ntoes", "eend"]


def test_the_most_frequent_known_neighbour_wins_and_ties_go_alphabetically():
    df = {"back": 3, "bake": 3, "bank": 9, "note": 5}
    lookup = lambda ts: {t: df[t] for t in ts if t in df}        # noqa: E731
    same = lambda w: [w]                                          # noqa: E731
    assert spelling.corrections("bakc", same, lookup) == [("bakc", "back")]   # bank is two edits away
    df["bake"] = 4
    assert spelling.corrections("bakc", same, lookup) == [("bakc", "bake")]
    assert spelling.corrections("Bakc", same, lookup) == [("Bakc", "Bake")]
    assert spelling.corrections("back note", same, lookup) == []           # known words stay
    porter = get_analyzer().analyze_word                           # wings and winges: one stem, wing
    assert spelling.corrections("wingzs", porter, lambda ts: {t: 4 for t in ts if t == "wing"}) == \
        [("wingzs", "wings")]
    assert spelling.corrections("zzzzqq", same, lookup) == []              # no known neighbour
    four = "bakc nooe baek bnak"                                  # four unknown words: another language?
    assert len(spelling.corrections(" ".join(four.split()[:3]), same, lookup)) == 3
    assert spelling.corrections(four, same, lookup) == []
    assert spelling.apply("Bakc and bakc, not xbakc", [("Bakc", "Bake"), ("bakc", "bake")]) == \
        "Bake and bake, not xbakc"


def test_a_stop_word_neighbour_is_no_correction():
    an = get_analyzer()
    df = {"thin": 2, "this": 50, "their": 90}
    assert not an("this") and not an("their")                  # stop words: no term to search
    assert spelling.corrections("thir", an.analyze_word, lambda ts: {t: df[t] for t in ts if t in df}) == [("thir", "thin")]


def test_a_whole_word_of_the_vocabulary_comes_first():
    porter = get_analyzer().analyze_word
    one = lambda ts: {t: 4 for t in ts if t == "practic"}         # noqa: E731  (practices, practics: one stem)
    assert spelling.corrections("practies", porter, one) == [("practies", "practics")]      # the shorter
    words = {"practices", "hearing"}.__contains__
    assert spelling.corrections("practies", porter, one, words) == [("practies", "practices")]
    df = {"hair": 9, "hear": 3}                                   # hairing: a frequent stem, no word
    lookup = lambda ts: {t: df[t] for t in ts if t in df}         # noqa: E731
    assert spelling.corrections("haering", porter, lookup) == [("haering", "hairing")]
    assert spelling.corrections("haering", porter, lookup, words) == [("haering", "hearing")]
    assert spelling.corrections("haering", porter, lookup, lambda w: False) == [("haering", "hairing")]
    same = lambda w: [w]                                          # noqa: E731
    df = {"faba": 5, "faa": 1}                                    # a 3-letter token is no evidence of a word
    assert spelling.corrections("fava", same, lookup, {"faa"}.__contains__) == [("fava", "faba")]


def test_a_real_word_the_index_lacks_is_no_typo():
    """`delete` in a PHP library that says `unlink` was searched as `delege` (an identifier's
    fragment one edit away), `retry` as `retly`, NFCorpus's `thanks` as `tanks` and `yale` as
    `male`: a whole word of the vocabulary stays as typed, whatever its neighbours."""
    same = lambda w: [w]                                          # noqa: E731
    df = {"delege": 3, "faba": 5, "tanks": 9}
    lookup = lambda ts: {t: df[t] for t in ts if t in df}         # noqa: E731
    words = {"delete", "thanks", "tanks", "faba"}.__contains__
    assert spelling.corrections("how to delete old logs", same, lookup, words) == []
    assert spelling.corrections("thanks to the lawsuit", same, lookup, words) == []                 # a word for a word too
    assert spelling.corrections("how to delete old logs", same, lookup) == [("delete", "delege")]    # no vocabulary
    assert spelling.corrections("fava beans", same, lookup, words) == [("fava", "faba")]            # not a word: a typo
    assert spelling.corrections("delee", same, lookup, words) == [("delee", "delege")]


def test_a_real_word_costs_no_variant_analysis():
    """A whole word of the vocabulary is never corrected, so its ~50 x length one-edit variants
    are not analysed at all (a 13-letter word the index lacks cost 10-15 ms of stemming on the
    first search of a process): only the query's own words pass through the analyser."""
    calls = []

    def counted(w):
        calls.append(w)
        return [w]

    lookup = lambda ts: {t: 1 for t in ts if t == "delege"}     # noqa: E731
    words = {"polypropylene", "delete"}.__contains__
    assert spelling.corrections("polypropylene delete", counted, lookup, words) == []
    assert calls == ["polypropylene", "delete"]
    calls.clear()
    assert spelling.corrections("delee", counted, lookup, words) == [("delee", "delege")]
    assert len(calls) == 1 + len(spelling.edits1("delee"))      # a typo still tries every variant


def test_the_embedding_vocabulary_knows_whole_words():
    from kgsearch.embed.model import load_model

    m = load_model()
    assert m.is_whole_word("practices") and m.is_whole_word("hearing")
    assert not m.is_whole_word("practics") and not m.is_whole_word("hairing")


def test_a_search_says_the_word_not_a_spelling_of_its_stem(tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import SearchOptions, search

    root = tmp_path / "v"
    root.mkdir()
    (root / "garden.md").write_text("# Garden\nGood practices: water the tomatoes at dawn.\n")
    (root / "bread.md").write_text("# Bread\nBake it with flour and salt.\n")
    db = tmp_path / "v.db"
    index_paths(str(db), [str(root)], IndexOptions())
    r = search("watering practies", db=str(db), options=SearchOptions(k=3))
    assert r.corrections == [["practies", "practices"]]            # not "practics", the same stem
    assert r.hits[0].key == "md:garden"
    bare = tmp_path / "bare.db"                                    # no embedding model: the shorter spelling
    index_paths(str(bare), [str(root)], IndexOptions(settings={"embed": False}))
    assert search("watering practies", db=str(bare), options=SearchOptions(k=3)).corrections == [["practies", "practics"]]


# ---------------------------------------------------------------- searches
@pytest.fixture
def vault(tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths

    root = tmp_path / "vault"
    root.mkdir()
    (root / "backup.md").write_text("# Back up the vault\nCopy the notes to a second disk every night.\n")
    (root / "garden.md").write_text("# Garden\nTomatoes need sun and water.\n")
    (root / "recipes.md").write_text("# Recipes\nBake bread with flour, water and salt.\n")
    db = tmp_path / "i.db"
    index_paths(str(db), [str(root)], IndexOptions())
    return root, db


def test_a_search_with_typos_finds_what_the_words_as_meant_find(vault):
    from kgsearch.query import SearchOptions, search

    _, db = vault
    r = search("cpoy the ntoes", db=str(db), options=SearchOptions(k=3))
    assert r.hits[0].key == "md:backup"
    assert r.corrections == [["cpoy", "copy"], ["ntoes", "notes"]]
    assert r.query == "copy the notes"
    assert r.notices == ["no match for 'cpoy', 'ntoes': searched for 'copy the notes' "
                         "(cpoy -> copy, ntoes -> notes; --no-correct searches the words as typed)"]
    raw = search("cpoy the ntoes", db=str(db), options=SearchOptions(k=3, correct=False))
    assert raw.corrections == [] and raw.query == "cpoy the ntoes" and not raw.notices


@pytest.mark.parametrize("query", ['"cpoy ntoes"', "cpoy AND ntoes", "/cpoy/", "ntoes", "ntoes.md:3 cpoy"])
def test_quoted_boolean_regex_identifier_and_anchored_queries_are_searched_as_typed(vault, query):
    from kgsearch.query import SearchOptions, search

    r = search(query, db=str(vault[1]), options=SearchOptions(k=3))
    assert r.corrections == [] if query != "ntoes" else r.corrections == [["ntoes", "notes"]]


def test_the_cli_says_it_corrected_and_no_correct_turns_it_off(vault, capsys):
    from kgsearch.cli import main

    _, db = vault
    assert main(["search", "cpoy the ntoes", "--db", str(db), "--json", "--no-cache"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["corrections"] == [["cpoy", "copy"], ["ntoes", "notes"]] and d["hits"][0]["key"] == "md:backup"
    main(["search", "cpoy the ntoes", "--db", str(db), "--no-correct", "--json", "--no-cache"])
    assert json.loads(capsys.readouterr().out)["corrections"] == []
    main(["search", "cpoy the ntoes", "--db", str(db)])
    cap = capsys.readouterr()
    assert "cpoy -> copy" in cap.out + cap.err


def test_mcp_search_corrects_unless_told_not_to(vault):
    from kgsearch.mcp.server import Server
    from kgsearch.mcp.tools import TOOLS

    schema = next(t for t in TOOLS if t["name"] == "search")["inputSchema"]["properties"]
    assert schema["correct"]["type"] == "boolean" and schema["correct"]["default"] is True
    srv = Server(str(vault[1]))
    for correct, want in ((True, [["ntoes", "notes"]]), (False, [])):
        out = srv.call("search", {"query": "ntoes bread", "detail": "full", "correct": correct})
        assert out["structuredContent"]["corrections"] == want


def test_several_indexes_correct_only_words_no_index_knows(vault, tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import SearchOptions
    from kgsearch.query.multi import multi_engine_for

    other = tmp_path / "other"
    other.mkdir()
    (other / "n.md").write_text("# Ntoes\nNtoes is the name of a village.\n")
    db2 = tmp_path / "o.db"
    index_paths(str(db2), [str(other)], IndexOptions())
    m = multi_engine_for([str(vault[1]), str(db2)])
    r = m.search("ntoes cpoy", SearchOptions(k=3))
    assert r.corrections == [["cpoy", "copy"]]           # 'ntoes' is a word of the second index
    assert r.query == "ntoes copy"
    assert sum("cpoy -> copy" in n for n in r.notices) == 1


def test_the_module_examples_hold():
    import doctest

    assert doctest.testmod(spelling).failed == 0


def test_a_word_of_the_question_is_not_corrected_away(vault):
    """'what are the main topics in my notes': no note says 'topics', and 'topics' -> 'tropics'
    (or any neighbour) would turn the summary question into an exploratory search."""
    from kgsearch.query import SearchOptions, search

    (vault[0] / "t.md").write_text("# Tropics\nThe tropics are warm.\n")
    from kgsearch.indexer import IndexOptions, index_paths

    index_paths(str(vault[1]), [str(vault[0])], IndexOptions())
    r = search("what are the main topics in my notes", db=str(vault[1]), options=SearchOptions(k=3))
    assert r.intent["name"] == "summary" and r.corrections == []
    r = search("what are the main topics in my ntoes about cpoy", db=str(vault[1]), options=SearchOptions(k=3))
    assert r.intent["name"] == "summary"


def test_the_correction_notice_quotes_the_query_as_typed(vault):
    """The notice showed the searched text with repr: a typed backslash came back doubled."""
    from kgsearch.query import SearchOptions, search

    _, db = vault
    r = search("cpoy the ntoes C:\\dir", db=str(db), options=SearchOptions(k=3))
    assert r.notices[0].startswith("no match for 'cpoy', 'ntoes': searched for 'copy the notes C:\\dir' ("), r.notices
    assert r.query == "copy the notes C:\\dir"
