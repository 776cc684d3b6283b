"""Fusion formulas, graph proximity and HITS adjustments on hand-computed cases (the intent
cascade: tests/query/test_intent.py)."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch import fuse, pack
from kgsearch.graph import Graph
from kgsearch.graph.kernels.proximity import hits_adjust, intent_edges, proximity


def test_normalize_methods():
    s = np.array([0.0, 2.0, 4.0, 1.0])
    assert fuse.normalize(s, "max").tolist() == [0.0, 0.5, 1.0, 0.25]
    assert np.allclose(fuse.normalize(s, "minmax"), [0.0, 1 / 3, 1.0, 0.0])
    assert np.allclose(fuse.normalize(s, "rank"), [0.0, 2 / 3, 1.0, 1 / 3])
    assert fuse.normalize(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="choose 'max', 'minmax' or 'rank'"):
        fuse.normalize(s, "z")


def test_linear_fusion_parts():
    sig = {"embedding": np.array([1.0, 0.5]), "text": np.array([0.0, 1.0]), "graph": np.array([0.2, 0.0]),
           "intent": np.array([1.0, 1.0])}
    total, parts = fuse.linear(sig, {"embedding": 0.4, "text": 0.45, "graph": 0.15, "intent": 0.0})
    assert np.allclose(total, [0.4 + 0.03, 0.2 + 0.45])
    assert set(parts) == {"embedding", "text", "graph"}


def test_rrf_with_cap():
    a = np.array([3.0, 2.0, 1.0, 0.0])
    b = np.array([0.0, 1.0, 2.0, 3.0])
    total, parts = fuse.rrf({"a": a, "b": b}, {"a": 1.0, "b": 0.5}, k=60, cap=2)
    # a: ranks 1,2,3 (3 capped away); b: ranks 3,2,1 -> only ranks <= 2 count
    expected = np.array([1 / 61, 1 / 62 + 0, 0 + 0.5 / 62, 0.5 / 61])
    assert np.allclose(total, expected)
    assert fuse.ranks(np.array([0.5, 0.0, 0.9])).tolist() == [2, 0, 1]


def test_diversity_first_of_each_community():
    scores = np.array([1.0, 0.9, 0.8, 0.7, 0.6])
    comm = np.array([0, 0, 1, 1, 2])
    order = np.argsort(-scores)
    out = pack.diversify(order, scores, comm, 1.05)
    assert np.allclose(out, [1.05, 0.9, 0.84, 0.7, 0.63])
    # three results or fewer: untouched
    assert np.allclose(pack.diversify(order[:3], scores, comm), scores)


def test_snippet_marks_terms():
    text = "alpha beta gamma. " * 20 + "The quick indexing of notes happens here. " + "delta " * 50
    s = pack.snippet(text, pack.query_terms("index notes"), width=80)
    assert "[indexing]" in s and "[notes]" in s and s.startswith("...")


def _graph():
    # 0 -> 1 (w 1.0, calls), 2 -> 0 (w 0.5, contains), 1 -> 3 (w 0.8, calls), 3 -> 4 (w 1.0, part_of)
    return Graph.from_edges([0, 2, 1, 3], [1, 0, 3, 4], weight=[1.0, 0.5, 0.8, 1.0], num_nodes=5,
                            etype=[0, 1, 0, 2], etype_names=["calls", "contains", "part_of"])


def test_proximity_hand_computed():
    g = _graph()
    p = proximity(g, [0], [1.0])
    # out-edge 0->1: 1.0*1.0; in-edge 2->0: 0.5*0.7
    assert p == pytest.approx({1: 1.0, 2: 0.35})
    p2 = proximity(g, [0], [2.0], two_hop=True)
    # 1-hop: {1: 2.0, 2: 0.7}; 2-hop from 1 (weight 2.0): out 1->3 0.8 -> 1.6, in 0->1 -> node 0: 2.0*1.0*0.7=1.4
    #   from 2 (0.7): out 2->0 0.5 -> 0.35 ; (no in-edges)
    # times 0.15: node 3: 0.24, node 0: (1.4 + 0.35) * 0.15 = 0.2625
    assert p2 == pytest.approx({1: 2.0, 2: 0.7, 3: 0.24, 0: 0.2625})


def test_intent_edges_hand_computed():
    g = _graph()
    # from seed 1 over 'calls' (type 0): forward 1->3 +1.0, backward 0->1 +0.7
    assert intent_edges(g, [1], [0], [1.0]) == pytest.approx({3: 1.0, 0: 0.7})
    assert intent_edges(g, [1], [2], [1.0]) == {}


def test_hits_adjustments():
    is_seed = np.array([True, True, False, False])
    hubs = np.array([0.5, 0.05, 0.9, 0.0])
    auths = np.array([0.04, 1.0, 0.3, 0.1])
    adj = hits_adjust(is_seed, hubs, auths)
    assert np.allclose(adj, [0.05, 0.25, -0.045, 0.0])


def test_highlight_terms_do_not_depend_on_the_hash_seed():
    """Equal-length words came back in the set's order, so a query of more than 20 words cut a
    different 20 for its snippets in each process (3 of 100 1M queries differed between runs)."""
    import subprocess
    import sys

    words = " ".join(f"w{c}{d}" for c in "abcdefgh" for d in "xyz")        # 24 words of 3 letters
    code = f"from kgsearch import pack; print(pack.query_terms({words!r}))"
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**__import__('os').environ, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(4)}
    assert len(seen) == 1
    assert pack.query_terms("beta alpha gamma delta") == ["alpha", "delta", "gamma", "beta"]


def test_snippet_equals_its_reference_on_random_texts():
    """pack.snippet (matches of an ASCII text by str.find) == pack.snippet_reference (the terms'
    expression over the whole text): hand cases at the edges of a word, then random texts of
    words, punctuation, underscores, digits, runs of whitespace and non-ASCII letters, with
    terms as the query gives them and as a caller might (upper case, punctuation, empty)."""
    cases = [("index indexing reindex _index index_ x.index", ["index"]),
             ("Über uber UBER über", ["uber", "über"]),
             ("a_b ab a-b", ["a_b", "ab"]),
             ("Foo foo FOO", ["Foo"]),              # a caller's upper-case term: the expression
             ("foo.bar foo bar", ["foo.bar"]),      # punctuation in a term: the expression
             ("", ["x"]), ("   \n\t ", ["x"]), ("no terms here", [])]
    for text, terms in cases:
        assert pack.snippet(text, terms) == pack.snippet_reference(text, terms), (text, terms)
    assert pack.snippet("index indexing reindex _index", ["index"]) == "[index] [indexing] reindex _index"
    text = "index indexing reindex _index x.index"
    assert pack._word_starts(text, text, ("index",)) == [0, 6, 32]
    assert pack.snippet("Ünder indexing, Über-index", ["index", "ber"]) == "Ünder [indexing], Über-[index]"
    rng = np.random.default_rng(0)
    vocab = ["index", "indexing", "Index", "INDEXED", "note", "notes", "_note", "note_", "x1", "42", "a",
             "graph", "über", "naïve", "東京", "ſtate", "K", "kelvin", "\u212aelvin", "İndex", "ındex", "Σίσυφος",
             "ǅemal", "ﬁndex", "²index", "٣index"]
    seps = [" ", "  ", "\n", "\t", ". ", ", ", "-", "(", ")", "'", "\u00a0", "_"]
    for _ in range(400):
        n = int(rng.integers(0, 120))
        text = "".join(str(rng.choice(vocab)) + str(rng.choice(seps)) for _ in range(n))
        terms = pack.query_terms(" ".join(str(w) for w in rng.choice(vocab, size=int(rng.integers(0, 6)))))
        if rng.random() < 0.2:
            terms = terms + [str(rng.choice(["Note", "in", "x", "graph!", ""]))]
        width = int(rng.choice([40, 80, 180]))
        assert pack.snippet(text, terms, width) == pack.snippet_reference(text, terms, width), (text, terms)
        flat = " ".join(text.split())
        if terms and flat.isascii() and all(pack._plain(t) for t in terms[:20]):   # the matches themselves
            rx = pack._terms_pattern(tuple(terms[:20]))[0]
            assert pack._word_starts(flat, flat.lower(), tuple(terms[:20])) == [m.start() for m in rx.finditer(flat)]
        assert pack.snippet(text, terms, width, ("", "")) == pack.snippet_reference(text, terms, width, ("", ""))


def test_snippets_fast_matches_hold_for_every_character():
    """What pack.snippet's str.find path assumes, checked for every Unicode character: ``\\w``
    is ``isalnum() or "_"``; a character matches an ASCII word character ignoring case exactly
    when its ``lower()`` is that character, but for the three in ``pack._FOLDS``; and a
    character whose lower case is longer than one is among them."""
    import re
    import string
    import sys

    word, ascii_word = re.compile(r"\w"), re.compile(r"[0-9a-z_]", re.IGNORECASE)
    ascii_chars = set(string.ascii_lowercase + string.digits + "_")
    folds, odd_word = [], []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        if (word.match(c) is not None) != (c.isalnum() or c == "_"):
            odd_word.append(c)
        low = c.lower()
        if len(low) != 1:
            folds.append(c)
        elif (ascii_word.fullmatch(c) is not None) != (low in ascii_chars):
            folds.append(c)
        elif low in ascii_chars and re.fullmatch(re.escape(low), c, re.IGNORECASE) is None:
            folds.append(c)
    assert odd_word == []
    assert sorted(set(folds)) == ["\u0130", "\u0131", "\u017f"]
    assert all(pack._FOLDS.search(c) for c in folds)
