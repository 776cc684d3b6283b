"""The intent specs and their rule cascade, on parsed queries."""
from __future__ import annotations

import pytest

from kgsearch.errors import UsageError
from kgsearch.query import intent
from kgsearch.query.parse import parse
from kgsearch.query.options import SearchOptions


@pytest.mark.parametrize("query,expected", [
    ('"exact phrase here"', "exact_match"),
    ("StreamingTextResponse", "exact_match"),
    ("blast_radius", "exact_match"),
    ("setup.cfg", "exact_match"),
    ("os.path.join", "exact_match"),
    ("sync fails with an error", "debugging"),
    ("Traceback when indexing", "debugging"),
    ("can it run on android", "capability_check"),
    ("does kgsearch support regex queries", "capability_check"),
    ("how do I schedule a reindex", "workflow"),
    ("step by step backup", "workflow"),
    ("bm25 vs embeddings", "comparison"),
    ("which is better for recall", "comparison"),
    ("I want to search faster", "goal_based"),
    ("reduce memory use", "goal_based"),
    ("tell me about pagerank", "exploratory"),
    ("what are the main topics in my notes", "summary"),
    ("what is this repository about", "summary"),
    ("what are the options", "exploratory"),
    ("show me the notes", "exploratory"),
    ("a long question with many words that has none of the trigger patterns at all really", "semantic"),
    ("pagerank", "default"),
    ("", "default"),
])
def test_intent_cascade(query, expected):
    assert intent.classify(parse(query)).name == expected


def test_intent_priority_and_overrides():
    # debugging wins over workflow ("how do I fix")
    assert intent.classify(parse("how do I fix the crash")).name == "debugging"
    it = intent.resolve(parse("anything"), intent="comparison", weights=".1,.2,.3,.4")
    assert it.name == "comparison" and it.weights == (0.1, 0.2, 0.3, 0.4) and it.forced
    assert it.edge_types == ("similar_to", "alternative_to", "complements")
    with pytest.raises(UsageError, match="unknown intent 'nope'"):
        intent.resolve(parse("x"), intent="nope")
    with pytest.raises(UsageError, match="--weights needs 4 non-negative numbers"):
        intent.parse_weights("1,2")
    assert intent.keywords_in(parse("why does it crash with an error"), intent.INTENTS["debugging"]) == ("error", "crash")


def test_weights_table():
    assert set(intent.INTENTS) == {"exact_match", "capability_check", "debugging", "workflow", "comparison",
                                   "goal_based", "summary", "exploratory", "semantic", "default", "code_task",
                                   "relation"}
    weights = {n: s.weights for n, s in intent.INTENTS.items()}
    assert weights["default"] == (0.25, 0.45, 0.30, 0.00)
    for name, w in weights.items():
        assert len(w) == 4 and all(x >= 0 for x in w) and abs(sum(w) - 1.0) < 1e-9, name
    # exact names lean on text more than any other intent
    assert max(weights.values(), key=lambda w: w[1]) == weights["exact_match"]
    assert all(s.help and s.rule is not None for s in intent.INTENTS.values())




@pytest.mark.parametrize("flags", [["--weights", "nan,1,1,1"], ["--weights", "inf,1,1,1"], ["--weights", "1e400,1,1,1"],
                                   ["--weights", "\u0661,0,0,0"], ["--weights", "1,\uff10,0,0"],
                                   ["--diversity", "inf"]])
def test_nan_and_inf_are_no_weight_nor_factor(flags, tmp_path, capsys):
    """`--weights inf,1,1,1` ran (exit 0) and numpy printed "RuntimeWarning: invalid value
    encountered in divide" among the scores; `--weights nan,...` and `--diversity inf` ran too."""
    from kgsearch.cli import main
    from kgsearch.indexer import index_paths

    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    db = tmp_path / "i.db"
    index_paths(db, [str(tmp_path / "v")])
    capsys.readouterr()
    assert main(["search", "alpha", "--db", str(db), *flags]) == 2
    out, err = capsys.readouterr()
    want = (f"error: --weights needs 4 non-negative numbers embedding,text,graph,intent; got {flags[1]!r}\n"
            if flags[0] == "--weights" else "error: --diversity must be a factor > 0 (e.g. 1.05), got inf\n")
    assert (out, err) == ("", want)


@pytest.mark.parametrize("call, says", [
    (lambda: intent.resolve(parse("x"), intent="a\\b"), "unknown intent 'a\\b'; choose from "),
    (lambda: intent.parse_weights("a\\b"), "--weights needs 4 non-negative numbers embedding,text,graph,intent; "
                                           "got 'a\\b'"),
    (lambda: SearchOptions(fusion="a\\b").validated(), "unknown fusion 'a\\b'; choose 'linear' or 'rrf'"),
    (lambda: SearchOptions(norm="a\\b").validated(), "unknown norm 'a\\b'; choose from "),
    (lambda: SearchOptions(group="a\\b").validated(), "unknown --group 'a\\b'; choose 'file'"),
])
def test_a_bad_intent_weights_or_option_is_quoted_as_typed(call, says):
    """These showed the value (given over HTTP, MCP or the library) with repr: a backslash doubled."""
    with pytest.raises(UsageError) as e:
        call()
    assert str(e.value).startswith(says), str(e.value)


ISSUE = ("The client keeps the old address after the record changes, so every new call goes to a host "
         "that is gone and waits until the deadline runs out before it gives up")   # 31 words, no code


def test_an_issue_length_text_in_an_index_mostly_of_code_is_a_code_task():
    """More than ISSUE_WORDS words in an index mostly of code: a code task, whatever prose rule
    its words trip; not in a notes index, not a shorter question, not one asking for docs, not
    when --intent names another."""
    q = parse(ISSUE)
    assert len(q.words) > intent.ISSUE_WORDS and not q.code_task
    assert intent.resolve(q).name == "semantic"
    it = intent.resolve(q, code_index=True)
    assert it.name == "code_task" and it.reason == f"{len(q.words)} words in an index mostly of code"
    assert it.weights == intent.INTENTS["code_task"].weights and not it.forced
    tripped = parse(ISSUE + ", with an error that says 'connection refused' each time")    # debugging, quoted
    assert intent.resolve(tripped).name in ("exact_match", "debugging")
    assert intent.resolve(tripped, code_index=True).name == "code_task"
    short = parse(" ".join(ISSUE.split()[:intent.ISSUE_WORDS]))
    assert len(short.words) == intent.ISSUE_WORDS
    assert intent.resolve(short, code_index=True).name == "semantic"
    docs = parse(ISSUE + "; where do the release notes say so")
    assert docs.about_prose and intent.resolve(docs, code_index=True).name != "code_task"
    assert intent.resolve(q, intent="semantic", code_index=True).name == "semantic"
    assert f"more than {intent.ISSUE_WORDS} words" in intent.INTENTS["code_task"].help
