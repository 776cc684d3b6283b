"""A ``/regex/`` query ranks the names it matches (the README's "regex over identifiers"), as a
filter keeps nodes; one that does not compile, is refused as too slow or matches no name says so
in a notice and ranks as any query does. Found on spf13/cobra, session 22: `/^Has\\w+Flags$/`
ranked `Flags` and `Command` (on the regex's words) above every `Has...Flags` method."""
from __future__ import annotations

import textwrap

import pytest

import kgsearch
from kgsearch.indexer import IndexOptions, index_paths

SRC = '''
    """Flags of a command."""


    class Command:
        """A command with flags."""

        def flags(self):
            """The flags: local and persistent flags together, flags flags flags."""
            return self.local_flags() + self.persistent_flags()

        def local_flags(self):
            """Local flags."""
            return []

        def persistent_flags(self):
            """Persistent flags."""
            return []

        def has_local_flags(self):
            """Whether it has local flags."""
            return bool(self.local_flags())

        def has_persistent_flags(self):
            """Whether it has persistent flags."""
            return bool(self.persistent_flags())
    '''


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    root = tmp_path_factory.mktemp("regex")
    (root / "src").mkdir()
    (root / "src" / "command.py").write_text(textwrap.dedent(SRC), encoding="utf-8")
    path = root / "i.db"
    index_paths(path, [str(root / "src")], IndexOptions())
    return str(path)


def _keys(resp):
    return [h.key for h in resp.hits]


def test_a_regex_ranks_only_the_names_it_matches(db):
    resp = kgsearch.search(r"/^has_\w+_flags$/", db=db, k=10)
    assert sorted(_keys(resp)) == ["py:command.Command.has_local_flags", "py:command.Command.has_persistent_flags"]
    assert resp.notices == []
    resp = kgsearch.search(r"/persistent_flags/", db=db, k=10)
    assert sorted(_keys(resp)) == ["py:command.Command.has_persistent_flags", "py:command.Command.persistent_flags"]


def test_a_regex_that_does_not_run_says_why_and_ranks_as_words(db):
    resp = kgsearch.search("/has_(local/", db=db, k=3)
    assert resp.notices == ["/has_(local/ is no regular expression (missing ), unterminated subpattern at position 4): "
                            "its text was matched as a name instead; fix the pattern or quote it"]
    assert resp.hits                                  # its words still find names
    resp = kgsearch.search("/(a+)+b/", db=db, k=3)
    assert resp.notices == ["/(a+)+b/ was not run (nested repetition can take exponential time): the other channels "
                            "answered; simplify the pattern"]
    resp = kgsearch.search(r"/^zzz\w+flags/", db=db, k=3)
    assert resp.notices == [r"/^zzz\w+flags/ matches no name in the index: the results match its words"]
    assert resp.hits


def test_why_a_name_the_regex_does_not_match_is_left_out(db):
    from kgsearch.query.api import why
    ans = why(r"/^has_\w+_flags$/", "py:command.Command.flags", db=db)
    assert ans["rank"] is None
    assert ans["reason"] == (r"its names do not match the regular expression /^has_\w+_flags$/ "
                             "(a /regex/ query ranks the names it matches)")
    resp = kgsearch.search(r"/^has_\w+_flags$/ path:nowhere/", db=db, k=3)
    assert resp.hits == [] and resp.notices == [
        r"no node matches the filters path:nowhere/ and the regular expression /^has_\w+_flags$/"]


def test_a_query_that_starts_with_a_path_is_no_regex(db):
    """``/usr/lib/x is slow`` starts and goes on with a slash but ends with none: no regex, no
    narrowing to the names its words match, no notice."""
    resp = kgsearch.search("/src/command.py persistent flags are slow", db=db, k=10)
    assert resp.notices == []
    assert "py:command.Command.flags" in _keys(resp)      # a name no token of the query matches
