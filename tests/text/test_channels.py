"""FTS5 query building and channel, pattern (substring, fuzzy, regex), keywords, equiv channel."""
from __future__ import annotations

import json
import logging
import random
import signal
import sqlite3
import threading

import numpy as np
import pytest

from kgsearch.text import fts, text_step as tindex, keywords, pattern, regex
from kgsearch.text import trigrams
from kgsearch.text.pattern import edit_distance, substring_distance
from kgsearch.types import ChangeSet

SYMBOLS = [
    ("StreamingTextResponse", "web.responses.StreamingTextResponse", "A response that streams text."),
    ("blast_radius", "graph.impact.blast_radius", "Nodes affected by a change."),
    ("join", "os.path.join", "Join path components."),
    ("parse_args", "argparse.ArgumentParser.parse_args", "Parse command line arguments."),
    ("TextResponse", "web.responses.TextResponse", "A plain text response."),
    ("RetryPolicy", "net.retry.RetryPolicy", "Retry with exponential backoff."),
    ("ab", "tiny.ab", "two-letter name"),
]


@pytest.fixture
def cix(ix):
    with ix.transaction():
        ids = []
        for i, (name, qual, text) in enumerate(SYMBOLS):
            cur = ix.conn.execute("INSERT INTO nodes(key, kind, name, qualname, text) VALUES (?, 'sym', ?, ?, ?)",
                                  (f"py:{qual}", name, qual, text))
            ids.append(cur.lastrowid)
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    ix.ids = dict(zip([s[0] for s in SYMBOLS], ids))
    return ix


NASTY = ['"', '""', '"unbalanced', "*", "**", "a*", "*a", "NEAR", "NEAR(a b)", "NEAR(", "AND", "OR",
         "NOT", "a AND", "AND a", "NOT a", "a NOT", "a OR OR b", "name:", "name:x", "text:\"y z\"",
         "foo:bar", ":", "(", ")", "((a)", "a)", "-", "- -", "-a", "a - b", "^a", "a^", "'", "\\",
         "\x00", "\ud800", "{name}: x", "a:b:c", "🙂", "の", "col:*", "x" * 5000, "the of and", "."]


@pytest.mark.skipif(not fts.available(), reason="SQLite without FTS5")
def test_fts_query_builder_on_nasty_inputs(cix):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(name, text)")
    conn.execute("INSERT INTO t VALUES ('parse args', 'the text of it')")
    for q in NASTY:
        expr = fts.build_query(q)
        if expr is not None:
            conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)).fetchall()   # must not raise
        ids, sc = fts.search(cix, q)
        assert ids.dtype == np.int64 and sc.dtype == np.float32
    assert fts.build_query('name:parse "text response" foo* AND bar NOT baz') == \
        'name : "parse" OR "text response" OR "foo"* AND "bar" NOT "baz"'
    assert fts.build_query("the of") == '"the" OR "of"'          # only stop words: keep them
    assert fts.build_query("how to parse the files") == '"parse" OR "files"'


@pytest.mark.skipif(not fts.available(), reason="SQLite without FTS5")
def test_fts_channel_and_text_helper(cix):
    ids, sc = fts.search(cix, "streams text")
    assert ids[0] == cix.ids["StreamingTextResponse"] and (np.diff(sc) <= 0).all()
    ids, sc = fts.text_search(cix, "text response")
    assert set(ids[:2].tolist()) == {cix.ids["TextResponse"], cix.ids["StreamingTextResponse"]}
    assert sc[0] == pytest.approx(1.0) and (sc <= 1.0 + 1e-6).all()


def test_fts_missing_is_graceful(ix, monkeypatch, caplog):
    monkeypatch.setattr(fts, "_AVAILABLE", False)
    monkeypatch.setattr(fts, "_NOTICED", False)
    with ix.transaction():
        ix.conn.execute("INSERT INTO nodes(key, kind, name, text) VALUES ('a', 'doc', 'x', 'hello')")
        info = tindex.update(ix, ChangeSet(generation=1, full=True), {})
    assert info["fts"]["mode"] == "off"
    assert sum("FTS5" in r.getMessage() for r in caplog.records) == 1
    assert fts.search(ix, "hello") == "FTS5 is not available in this SQLite build"
    assert fts.text_search(ix, "hello")[0].size == 1         # BM25 still answers


def test_edit_distances_match_dynamic_programming():
    def lev(a, b):
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1]

    def sub(p, t):
        prev = [0] * (len(t) + 1)
        for i, cp in enumerate(p, 1):
            cur = [i]
            for j, ct in enumerate(t, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (cp != ct)))
            prev = cur
        return min(prev)

    rng = random.Random(2)
    for _ in range(400):
        a = "".join(rng.choices("abcde", k=rng.randint(0, 12)))
        b = "".join(rng.choices("abcde", k=rng.randint(0, 15)))
        assert edit_distance(a, b) == lev(a, b), (a, b)
        if a:
            assert substring_distance(a, b) == sub(a, b), (a, b)
    assert substring_distance("streamingtxtresp", "streamingtextresponse") == 1


def test_pattern_exact_substring_fuzzy(cix):
    ids, sc = pattern.search(cix, "blast_radius")
    assert ids[0] == cix.ids["blast_radius"] and sc[0] == pytest.approx(1.0)
    ids, _ = pattern.search(cix, "TextResp")
    assert ids[0] == cix.ids["TextResponse"] and cix.ids["StreamingTextResponse"] in ids.tolist()
    for typo in ("STreamingTxtResp", "StreamngTextRespnse", "StreamingTxetResponse"):
        ids, _ = pattern.search(cix, typo)
        assert ids.size and ids[0] == cix.ids["StreamingTextResponse"], typo
    ids, _ = pattern.search(cix, "ab")
    assert ids[0] == cix.ids["ab"]
    ids, _ = pattern.search(cix, "os.path.join")
    assert ids[0] == cix.ids["join"]
    # in a sentence only code-looking tokens are matched
    ids, _ = pattern.search(cix, "where is parse_args defined")
    assert ids.tolist() == [cix.ids["parse_args"]]
    assert pattern.search(cix, "where is it defined")[0].size == 0


def test_pattern_regex(cix):
    ids, _ = pattern.search(cix, r"/^Stream\w+Response$/")
    assert ids.tolist() == [cix.ids["StreamingTextResponse"]]
    ids, _ = pattern.search(cix, "/retry/i")
    assert ids[0] == cix.ids["RetryPolicy"]
    ids, _ = pattern.search(cix, "/[a-z]+_[a-z]+/")          # no literal: bounded scan
    assert {cix.ids["blast_radius"], cix.ids["parse_args"]} <= set(ids.tolist())
    assert pattern.search(cix, "/(a+)+$/")[0].size == 0       # nested repetition refused
    assert pattern.search(cix, "/(unclosed/")[0].size == 0 or True   # invalid regex: literal fallback
    assert pattern.search(cix, "/[/")[0].dtype == np.int64


@pytest.mark.parametrize("rx,ambiguous", [
    (r"(\w|\w)*!", True), (r"(a|aa)*b", True), (r"(\w\w?)*!", True), (r"(?:ab|cd)+", True),
    (r"((a)\2)*", True), (r"(?:(?=\w*)a)+", True), (r"[a-z]+\d*", False), (r"get_\w+", False),
    (r"(?:foo|bar)_\w+", False), (r"(ab){2,5}", False), (r"^Stream\w+Response$", False)])
def test_ambiguous_repeats_are_recognised(rx, ambiguous):
    parsed = regex.sre_parser().parse(rx)
    assert regex._has_ambiguous_repeat(parsed) is ambiguous
    assert (regex.refusal(parsed, timer=True) is not None) is ambiguous


@pytest.mark.parametrize("rx,why", [
    (r"(a+)+$", "nested"), (r"(?=(a+)+)", "nested"), ("(?:a|a)" * 9 + "!", "combinations"),
    (r"\w*\w*\w*!", None), (r"(\w+)_\1\w*", None), (r"[a-z]+_[a-z]+", None)])
def test_refusals_with_and_without_a_timer(rx, why):
    """Exponential shapes are refused everywhere; three variable-length parts (polynomial:
    1 s on one 256-letter name) only where no timer can stop a match."""
    parsed = regex.sre_parser().parse(rx)
    with_timer, without = regex.refusal(parsed, timer=True), regex.refusal(parsed, timer=False)
    if why is None:
        assert with_timer is None
        assert (without is None) is (regex._degree(parsed) <= regex.MAX_DEGREE)
    else:
        assert why in with_timer and why in without
    assert regex.refusal(regex.sre_parser().parse("(?:a|a)" * 8 + "!"), timer=False) is None     # 256 paths


def _long_name_index(ix, name: str = "a" * 40):
    with ix.transaction():
        ix.conn.execute("INSERT INTO nodes(key, kind, name, qualname, text) VALUES (?, 'function', ?, ?, '')",
                        ("py:m." + name, name, "m." + name))
        tindex.update(ix, ChangeSet(generation=1, full=True), {})
    return ix


@pytest.mark.skipif(not regex.timer_usable(), reason="no interval timers here")
def test_regex_timer_stops_a_single_match_and_restores_the_callers_alarm(ix, caplog):
    r"""``\w*\w*\w*\w*!`` (not refused in the main thread: polynomial) on one 256-letter name
    takes ~5 min inside one re.search: the channel's timer ends it at its budget (it says so in
    the log: no wall-clock bound in a test); the caller's own handler and timer come back."""
    _long_name_index(ix, "a" * 256)
    fired = []

    def mine(*args):
        fired.append(1)

    previous = signal.signal(signal.SIGALRM, mine)
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        with caplog.at_level(logging.INFO, logger="kgsearch.text.regex"):
            ids, _ = pattern.search(ix, r"/\w*\w*\w*\w*!/")
        assert ids.size == 0
        assert [r.getMessage() for r in caplog.records] == [
            r"regex '\\w*\\w*\\w*\\w*!' interrupted at its time budget (0.25 s) inside a match"]
        assert signal.getsignal(signal.SIGALRM) is mine and not fired
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < left <= 30.0                  # the caller's timer is armed again
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_regex_outside_the_main_thread_refuses_what_no_timer_could_stop(ix):
    _long_name_index(ix, "a" * 256)
    out = {}

    def run():
        out["timer"] = regex.timer_usable()
        out["bad"] = pattern.search(ix, r"/(\w|\w)*!/")[0].size
        out["poly"] = pattern.search(ix, r"/\w*\w*\w*\w*!/")[0].size
        out["good"] = pattern.search(ix, r"/^a+$/")[0].size

    # (the index connection is used from one thread at a time: this one waits)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the match ran on: nothing stops re.search outside the main thread"
    assert out == {"timer": False, "bad": 0, "poly": 0, "good": 1}


def test_pattern_scale_fuzzy_two_typos(ix):
    """Two typos still find the identifier among 50,000 generated symbols."""
    rng = random.Random(4)
    parts = ["get", "set", "stream", "text", "response", "request", "handler", "parse", "config",
             "index", "graph", "node", "edge", "vector", "search", "cache", "token", "query", "file",
             "path", "json", "http", "client", "server", "error", "retry", "policy", "build"]
    names = {"".join(p.capitalize() for p in rng.sample(parts, rng.randint(2, 4))) + str(i % 97)
             for i in range(50000)}
    names.add("StreamingTextResponse")
    with ix.transaction():
        ix.conn.executemany("INSERT INTO nodes(key, kind, name) VALUES (?, 'sym', ?)",
                            ((f"k:{n}", n) for n in sorted(names)))
        trigrams.update(ix, ChangeSet(generation=1, full=True), full=True)
    target = ix.node_by_key("k:StreamingTextResponse")
    ids, _ = pattern.search(ix, "StreamngTxtResponse")      # two typos
    assert target in ids[:5].tolist()


def test_keywords_extraction():
    kw = keywords.extract("Fix `GraphStore.blast_radius` when ctx.run() and StreamingTextResponse fail "
                          "in parse_args; the blast radius is wrong", equivalences={})
    assert kw.exact == ["GraphStore.blast_radius"]
    assert kw.compounds[:3] == ["ctx.run", "StreamingTextResponse", "parse_args"]
    for c in ("graph", "store", "blast", "radius", "streaming", "response", "context"):
        assert c in kw.components
    assert {"BlastRadius", "blast_radius"} <= set(kw.bigrams)
    assert keywords.bigram_compounds("blast", "radius")[:2] == ["BlastRadius", "blast_radius"]
    assert keywords.extract("load the cfg", equivalences={}).components == ["config", "configuration"]
    assert keywords.extract("", equivalences={}).all() == []


def test_equivalences_file_and_channel(cix, tmp_path, kg_env):
    p = tmp_path / "eq.json"
    p.write_text(json.dumps({"classes": [{"phrases": ["retry logic", "backoff"],
                                          "targets": ["RetryPolicy", "NoSuchThing"]}],
                             }))
    kg_env(equivalences=str(p))
    eq = keywords.load_equivalences()
    assert eq == {"retry logic": ["RetryPolicy", "NoSuchThing"], "backoff": ["RetryPolicy", "NoSuchThing"]}
    assert keywords.extract("where is the Retry Logic?").equivalents == ["RetryPolicy", "NoSuchThing"]
    ids, sc = keywords.search_equivalences(cix, "where is the retry logic")
    assert ids.tolist() == [cix.ids["RetryPolicy"]] and sc[0] == pytest.approx(1.0)
    assert keywords.search_equivalences(cix, "retrying logical")[0].size == 0
    p.write_text('{"retry logic": ["RetryPolicy"],\n "backoff" ["x"]}')
    why = keywords.search_equivalences(cix, "retry logic")                 # said, not raised
    assert why.startswith(keywords.UNREAD) and f"{p}:2" in why and "invalid JSON" in why
    from kgsearch.query import Engine, SearchOptions
    r = Engine(cix).search("retry logic", SearchOptions(k=3, use_cache=False))
    notes = [n for n in r.notices if "equivalence" in n]                  # a notice on every search, not -v only
    assert len(notes) == 1 and notes[0].startswith(f"{p}:2: invalid JSON")
    assert notes[0].endswith("fix the equivalences file or remove it (searched without your equivalence classes)")
    from kgsearch.errors import DataError
    with pytest.raises(DataError):
        keywords.load_equivalences(p)


# ---------------------------------------------------------------------------- FTS5: a bounded OR (issue 30)
def test_fts_bound_expression_keeps_the_rarest_operands_in_order():
    expr = '"paper" OR "describes" OR "electronic filing machine" OR "machine" OR "unstructured"'
    df = {'"paper"': 50, '"describes"': 80, '"electronic filing machine"': 3, '"machine"': 40, '"unstructured"': 5}
    got = fts.bound_expression(expr, df.__getitem__, 1000, cap=100)
    assert got == '"paper" OR "electronic filing machine" OR "machine" OR "unstructured"'  # 3+5+40+50 = 98
    assert fts.bound_expression(expr, df.__getitem__, 1000, cap=178) == expr                # the sum: unchanged
    assert fts.bound_expression(expr, df.__getitem__, 1000, cap=7) == '"electronic filing machine"'
    assert fts.bound_expression(expr, df.__getitem__, 1000, cap=0) == '"electronic filing machine"'  # one stays
    # ties go by position; counts are clipped to the index's size
    assert fts.bound_expression('"a1" OR "b1" OR "c1"', lambda o: 10**9, 10, cap=25) == '"a1" OR "b1"'
    # AND / NOT are the user's structure (and AND is selective): never cut
    for e in ('"paper" AND "machine" OR "describes"', '"paper" NOT "machine"'):
        assert fts.bound_expression(e, lambda o: 10**6, 10**6, cap=1) == e
    assert fts.operands('name : "parse" OR "text response"*') == (['name : "parse"', '"text response"*'], {"OR"})


@pytest.mark.skipif(not fts.available(), reason="SQLite without FTS5")
def test_fts_search_over_the_cap_runs_the_bounded_expression(cix, monkeypatch):
    df_of, n = fts._df_lookup(cix)
    assert n == len(SYMBOLS)
    # the BM25 postings' counts: "respons" and "text" in two nodes (a name like StreamingTextResponse is one token)
    assert df_of('"response"') == 2 and df_of('"plain text response"') == 1 and df_of('"retry"') == 1
    assert df_of('"the"') == n and df_of('"resp"*') == n and df_of('"zzzunknown"') == 0
    q = 'text "plain text response" retry components'
    full = fts.search(cix, q)
    assert set(full[0].tolist()) >= {cix.ids["RetryPolicy"], cix.ids["join"], cix.ids["TextResponse"]}
    monkeypatch.setattr(fts, "ROWS_CAP", 3)     # "text" (2 nodes) must go; the phrase, retry and components stay
    ids, sc = fts.search(cix, q)
    kept = '"plain text response" OR "retry" OR "components"'
    ref = cix.conn.execute(f"SELECT rowid, bm25({fts.TABLE}, ?, 1.0) r FROM {fts.TABLE} WHERE {fts.TABLE} MATCH ? "
                           f"ORDER BY r, rowid", (fts.NAME_WEIGHT, kept)).fetchall()
    assert ids.tolist() == [r[0] for r in ref] and np.allclose(sc, [-r[1] for r in ref])
    # the parsed query's operand terms (Query.fts_terms) give the same bound without analysing again
    from kgsearch.query.parse import index_analyzer, parse
    pq = parse(q, index_analyzer(cix))
    assert pq.fts_terms[0][1] == ('"plain text response"', ("plain", "text", "respons"))
    assert fts.search(cix, q, expressions=pq.fts, operand_terms=pq.fts_terms)[0].tolist() == ids.tolist()
    assert cix.ids["StreamingTextResponse"] not in ids.tolist()        # matched "text" only
