"""The source loaders on hostile files: openers that never close (raw strings, strings whose
quotes are all escaped, regular-expression literals with an open class), headers with no body,
one name defined thousands of times, runs of empty comments, deep nesting. Each was n^2 or
worse (10-56 s for 60 KB, or a RecursionError); the fast paths are tested to give the plain
scans' answers on random text, at every offset, and a 60 KB file to load in time proportional
to a 6 KB one (a ratio within one run: never an absolute time)."""
from __future__ import annotations

import random

import pytest

from kgsearch.ingest import clex, jslex
from kgsearch.ingest.loaders import get_loader
from kgsearch.types import LoadOptions
from conftest import size_ratio, write

EXT = {"rust": ".rs", "go": ".go", "java": ".java", "c": ".c", "cpp": ".cpp", "javascript": ".js",
       "typescript": ".ts", "python": ".py", "kotlin": ".kt", "php": ".php"}

# (language, a unit repeated to 6 KB and to 60 KB): each took 10-56 s at 60 KB (x 80-240 the 6 KB time)
HOSTILE = [
    ("rust", 'r#"'), ("rust", 'br##"x\n'), ("c", 'R"x('), ("cpp", 'u8R"abc( '),     # raw strings never closed
    ("c", '"\\'), ("go", '"\\'), ("java", '"\\'), ("rust", '"\\'),                   # strings of escaped quotes
    ("javascript", '"\\'), ("typescript", "'\\"),
    ("javascript", "(/["), ("javascript", "= /[x"),                                   # regex literals, open class
    ("go", "//\n"), ("java", "//\n"), ("typescript", "//\n"),                         # a run of empty comments
    ("go", "type x\n"), ("python", "def x(): pass\n"),                                # one name, thousands of times
    ("python", "a = 1\n"),
    ("javascript", "class "), ("typescript", "enum x\n"), ("typescript", "interface "),   # heads with no body
    ("typescript", "class a<"), ("typescript", "class<"), ("typescript", "x = <"),    # generic lists never closed
    ("rust", "mod a {\n"), ("rust", "impl X {\n"), ("java", "class a {\n"),        # nested bodies
    ("c", "#if A\n{\n#else\n#endif\n"),                                             # #if groups blanked
    ("c", "typedef int (f)"), ("c", "typedef int (*"), ("cpp", "using A = B<"),       # aliases with no `;`:
    ("rust", "type A = (x)"), ("typescript", "type A = "), ("c", "#define F(x) x\\\n"),   # 22 s at 60 KB
]


def load_ratio(tmp_path, lang: str, unit: str, head: str = "") -> float:
    """The loader's time on 60 KB of ``unit`` over its time on 6 KB (:func:`conftest.size_ratio`)."""
    small = write(tmp_path / ("small" + EXT[lang]), head + unit * (6000 // len(unit)))
    big = write(tmp_path / ("big" + EXT[lang]), head + unit * (60000 // len(unit)))
    loader = get_loader(lang)
    return size_ratio(lambda: loader.load(small, small.name, LoadOptions()),
                      lambda: loader.load(big, big.name, LoadOptions()))


@pytest.mark.parametrize("lang,unit", HOSTILE, ids=[f"{a}:{b!r}" for a, b in HOSTILE])
def test_hostile_files_load_in_time_proportional_to_their_size(tmp_path, lang, unit):
    assert load_ratio(tmp_path, lang, unit) < 40        # linear: about 10; these were 75-240


def test_deeply_nested_c_bodies_load_without_recursion(tmp_path):
    """1,000 nested `extern "C" {` (or namespaces, structs) raised RecursionError in the C loader's walk."""
    path = tmp_path / "f.cpp"
    path.write_text('extern "C" {\n' * 1500 + "int f(void) { return 0; }\n" + "}\n" * 1500
                    + "namespace a {\n" * 1200 + "int g() { return 1; }\n" + "}\n" * 1200)
    res = get_loader("cpp").load(path, "f.cpp", LoadOptions())
    assert [(n.name, n.qualname.count("."), n.line_start) for n in res.nodes if n.kind == "function"] == \
        [("f", 1, 1501), ("g", 1 + 1200, 1500 + 1 + 1500 + 1200 + 1)]


def test_raw_string_closers_are_the_plain_find():
    """_Closers.find keeps each closer's last search; its answers are str.find's at every offset,
    in order and at random."""
    rng = random.Random(7)
    for _ in range(2000):
        text = "".join(rng.choice(['"', "#", '"#', "x", ")d\"", "\n"]) for _ in range(rng.randint(0, 30)))
        closers = clex._Closers(text)
        offsets = list(range(len(text) + 1))
        for at in offsets + rng.sample(offsets, len(offsets)):
            for close in ('"', '"#', '"##', ')d"'):
                assert closers.find(close, at) == text.find(close, at), (text, close, at)


def test_c_family_lexer_is_the_whole_pattern_lexer():
    """lex (raw strings' closers searched apart, strings' bodies matched from their quote, a
    string that never closed remembered) equals lex_reference (each literal one whole pattern)
    on random text of what they turn on."""
    rng = random.Random(1)
    alpha = ["r", "#", '"', '"', "\\", "\\", "b", "R", "(", ")", "x", "\n", "/", "*", "'", "u8", "L", " ", "{",
             "}", 'r#"', '"#', 'R"x(', ')x"', "#if A\n", "#else\n", "#endif\n", '"""', "`", "//", "/*", "*/"]
    for _ in range(6000):
        t = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 50)))
        for d in ("c", "rust", "go", "java"):
            a, b = clex.lex(t, d), clex.lex_reference(t, d)
            assert (a.code, a.comments, a.directives, a.branches) == (b.code, b.comments, b.directives, b.branches), (d, t)


def test_js_lexer_is_the_whole_pattern_lexer():
    """jslex.lex (strings' bodies from their quote, regular-expression literals walked with each
    state's outcome kept) equals lex_reference on random text; a template whose last character
    is a backslash (the file's end) no longer raises."""
    rng = random.Random(2)
    alpha = ['"', "'", "\\", "/", "[", "]", "(", "=", "x", "return ", "\n", " ", "`", "${", "}", "{", "*", "//",
             "/*", "*/", "if (a) ", ")", "g"]
    for _ in range(8000):
        t = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 50)))
        a, b = jslex.lex(t), jslex.lex_reference(t)
        assert (a.code, a.comments) == (b.code, b.comments), t
    src = "const a = 1\nconst s = `abc\\"
    assert jslex.lex(src).code == "const a = 1\nconst s = `    "


def test_paired_angles_are_skip_angles():
    """PairedAngles (each `<`'s answer kept, an inner list answered from it) gives
    skip_angles(code, at, pairs) at every offset of random text, in order and at random."""
    from kgsearch.ingest.codescan import PairedAngles, skip_angles

    rng = random.Random(3)
    alphabet = list("<>;{}()[]-=a ") + ["->", "=>", ">>=", "<<=", "<<", ">>"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        pairs, _ = clex.pair_up(text)
        offsets = list(range(len(text)))
        pa = PairedAngles(text, pairs)
        for at in offsets + rng.sample(offsets, len(offsets)):
            assert pa.skip(at) == skip_angles(text, at, pairs), (text, at)
        pa = PairedAngles(text, pairs)
        for at in rng.sample(offsets, len(offsets)):
            assert pa.skip(at) == skip_angles(text, at, pairs), (text, at)


def test_next_head_is_the_plain_search():
    """jscode._next_head keeps its last search (as find_end does); its answers are the search's."""
    from kgsearch.ingest import jscode

    rng = random.Random(8)
    for _ in range(2000):
        text = "".join(rng.choice(list(";{}([<=ab \n")) for _ in range(rng.randint(0, 30)))
        offsets = list(range(len(text) + 1))
        for at in offsets + rng.sample(offsets, len(offsets)):
            m = jscode._HEAD_END.search(text, at)
            assert jscode._next_head(text, at) == (m.start() if m else len(text)), (text, at)


def test_lhs_before_is_the_plain_search():
    """jscode.lhs_before tries only the starts of words; its answers are _LHS.search's over the
    same window: random text of identifiers (ASCII, digits first, non-ASCII letters), chains,
    annotations, groups and stoppers, every window end, windows cut inside words."""
    from kgsearch.ingest import jscode

    rng = random.Random(11)
    alphabet = (["a", "b", "this", "x1", "9z", "éf", "ж", "$", "_", "#p", "."] + list(" ?!:;,{}()<>=\n")
                + ["=>", " ", "  "])
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        for hi in range(len(text) + 1):
            for lo in {0, max(0, hi - 7), rng.randint(0, hi)}:
                a, b = jscode._LHS.search(text, lo, hi), jscode.lhs_before(text, lo, hi)
                assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups())), (text, lo, hi)


def test_duplicate_names_are_numbered_as_before(tmp_path):
    """The `#n` of a name defined again is the first number free (kept per key now, counted from 2
    for each definition before)."""
    path = tmp_path / "a.go"
    path.write_text("package a\n" + "type x int\n" * 5 + "func x() {}\n")
    res = get_loader("go").load(path, "a.go", LoadOptions())
    assert [n.key for n in res.nodes if n.kind != "module"] == \
        ["go:a.go:x", "go:a.go:x#2", "go:a.go:x#3", "go:a.go:x#4", "go:a.go:x#5", "go:a.go:x#6"]
    path = tmp_path / "a.py"
    path.write_text("def f(): pass\n" * 3 + "class f: pass\n")
    res = get_loader("python").load(path, "a.py", LoadOptions())
    assert [n.key for n in res.nodes if n.kind != "module"] == ["py:a.f", "py:a.f#2", "py:a.f#3", "py:a.f#4"]


def test_if_groups_are_the_reference():
    """_if_groups (the blanked spans kept by start with their brace balance) gives
    _if_groups_reference's spans (every span looked at per branch) for random directives."""
    fast, ref = clex._if_groups, clex._if_groups_reference
    seen = []

    def both(text, code, directives):
        a = fast(text, code, directives)
        assert a == ref(text, code, directives), text
        seen.append(bool(a))
        return a

    rng = random.Random(9)
    alpha = ["#if A\n", "#ifdef B\n", "#else\n", "#elif C\n", "#endif\n", "{", "}", "x", "\n", "{\n", "}\n"]
    clex._if_groups = both
    try:
        for _ in range(6000):
            clex.lex("".join(rng.choice(alpha) for _ in range(rng.randint(0, 60))), "c")
    finally:
        clex._if_groups = fast
    assert sum(seen) > 1000


def test_size_ratio_tells_quadratic_from_linear():
    """The linear-time tests' measure: a quadratic kernel (x100 for 10 x the input) stays above the
    bound of 40 however often it is measured again; a linear one (x10) is below it."""
    assert size_ratio(lambda: sum(range(300 * 300)), lambda: sum(range(3000 * 3000)), repeats=2) > 40
    assert size_ratio(lambda: sum(range(100_000)), lambda: sum(range(1_000_000)), repeats=3) < 40
