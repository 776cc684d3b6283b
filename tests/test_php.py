"""The PHP loader: its lexer (inline HTML outside the tags, ``#`` comments and ``#[`` attributes,
strings with interpolation holes, heredocs and nowdocs), its definitions with hand-computed
names, kinds and lines, namespaces, ``use`` imports, calls, supertypes and traits, PHP's error
and stack-trace lines, hostile files, and a search that finds PHP code. The comparison with
tree-sitter is in tests/test_lang_oracle.py (and ``bench/lang_oracle.py`` on real trees)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kgsearch.ingest import phplex
from kgsearch.ingest.langspec import find_frames, is_test_path
from kgsearch.ingest.loaders import get_loader, loader_for
from kgsearch.types import FLAG_TEST, LoadOptions
from test_ingest_langs import build, has
from test_lang_hostile import load_ratio


def test_html_comments_strings_and_heredocs_are_blanked():
    text = textwrap.dedent('''\
        <h1>{title}</h1><?php
        # a comment {
        #[Attr('x')]
        $s = "a {$m["k}"]} ${b} \\" {";
        $t = 'it\\'s {';
        $h = <<<EOT
          body { {$x}
          EOT;
        // ends here ?> <p>{</p> <?= $y ?>
        ''')
    lx = phplex.lex(text)
    assert len(lx.code) == len(text) and lx.code.count("\n") == text.count("\n")
    lines = lx.code.split("\n")
    assert lines[0].strip() == ""                                   # inline HTML
    assert lines[1].strip() == ""                                   # a # comment
    assert lines[2] == "#[Attr(\" \")]"                            # an attribute is code
    assert lines[3] == '$s = "' + " " * (len(lines[3]) - 8) + '";'
    assert lines[4] == "$t = \"" + " " * 7 + "\";"
    assert "{" not in "".join(lines[5:8]) and "}" not in "".join(lines[5:8])
    assert lines[8].strip() == "$y"                                 # the comment ends at ?>, HTML, <?= $y
    assert [text[s:e] for s, e in lx.comments] == ["# a comment {", "// ends here "]


SRC = {
    "src/Models/User.php": """\
        <?php
        declare(strict_types=1);

        namespace App\\Models;

        use App\\Base\\{Model, HasName as Named};
        use function App\\Support\\format_name;

        /** A user. */
        #[Entity('users')]
        final class User extends Model implements Named
        {
            use SoftDeletes;

            public function __construct(private string $name)
            {
                parent::__construct();
            }

            public static function find(int $id): ?self
            {
                $q = self::query("id = {$id}");
                return new User(format_name($q));
            }

            public function label(): string
            {
                return $this->name() . helper();
            }

            abstract protected function name(): string;
        }

        function helper(): string { return 'x'; }
        """,
    "src/Base/Model.php": """\
        <?php
        namespace App\\Base;

        abstract class Model
        {
            public function __construct() {}
            public static function query(string $w): array { return []; }
        }

        interface HasName { public function name(): string; }
        """,
    "src/Models/SoftDeletes.php": "<?php\nnamespace App\\Models;\n\ntrait SoftDeletes\n{\n    public function delete() {}\n}\n",
    "src/Support/helpers.php": "<?php\nnamespace App\\Support;\n\nfunction format_name($n) { return $n; }\n",
    "tests/UserTest.php": "<?php\nuse App\\Models\\User;\n\nclass UserTest { public function testFind() { User::find(1); } }\n",
}


def test_definitions_names_and_lines(tmp_path):
    nodes, _ = build(tmp_path, SRC)
    u = "php:src/Models/User.php:"
    assert nodes[u + "User"] == ("class", "User", 10, 32, 0)                  # from #[Entity]
    assert nodes[u + "User.__construct"][:4] == ("method", "__construct", 15, 18)
    assert nodes[u + "User.find"][:4] == ("method", "find", 20, 24)
    assert nodes[u + "User.name"][:4] == ("method", "name", 31, 31)            # abstract: no body
    assert nodes[u + "helper"][:4] == ("function", "helper", 34, 34)
    assert nodes["php:src/Models/SoftDeletes.php:SoftDeletes"][:2] == ("class", "SoftDeletes")
    assert nodes["php:tests/UserTest.php:UserTest.testFind"][4] & FLAG_TEST


def test_imports_calls_supertypes_and_traits(tmp_path):
    _, edges = build(tmp_path, SRC)
    u, base = "php:src/Models/User.php", "php:src/Base/Model.php"
    helpers = "php:src/Support/helpers.php"
    assert has(edges, u, "imports", base + ":Model")                          # a group use
    assert has(edges, u, "imports", base + ":HasName")                        # ... `as Named`
    assert has(edges, u, "imports", helpers + ":format_name")                 # use function
    assert has(edges, u + ":User", "inherits", base + ":Model")
    assert has(edges, u + ":User", "implements", base + ":HasName")           # through its alias
    assert has(edges, u + ":User", "inherits", "php:src/Models/SoftDeletes.php:SoftDeletes")   # use Trait;
    assert has(edges, u + ":User.__construct", "calls", base + ":Model.__construct")           # parent::
    assert has(edges, u + ":User.find", "calls", base + ":Model.query")                         # self:: -> base
    assert has(edges, u + ":User.find", "calls", u + ":User")                                   # new User
    assert has(edges, u + ":User.find", "calls", helpers + ":format_name")
    assert has(edges, u + ":User.label", "calls", u + ":User.name")                             # $this->
    assert has(edges, u + ":User.label", "calls", u + ":helper")                                # the namespace's
    assert has(edges, "php:tests/UserTest.php:UserTest.testFind", "calls", u + ":User.find")    # Cls::m()


def test_files_tests_and_frames():
    assert loader_for(Path("src/A.php")) == "php"
    assert is_test_path("tests/Unit/UserTest.php") and is_test_path("src/UserTest.php")
    assert not is_test_path("src/Testing.php")
    log = textwrap.dedent("""\
        PHP Fatal error:  Uncaught RuntimeException: boom in /var/www/src/Models/User.php:22
        Stack trace:
        #0 /var/www/src/Http/Controller.php(41): App\\Models\\User::find(1)
        #1 {main}
          thrown in /var/www/src/Models/User.php on line 22
        """)
    got = [(f["path"], f["line"], f.get("func")) for f in find_frames(log)]
    assert got == [("/var/www/src/Models/User.php", 22, None),
                   ("/var/www/src/Http/Controller.php", 41, "App\\Models\\User::find"),
                   ("/var/www/src/Models/User.php", 22, None)]


def test_a_search_finds_php_code_from_its_error(tmp_path):
    from kgsearch.indexer import IndexOptions, index_paths
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    root = tmp_path / "proj"
    for rel, text in SRC.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    db = tmp_path / "p.db"
    index_paths(db, [str(root)], IndexOptions(steps=("text", "graph")))
    with Index.open(db, readonly=True) as ix:
        keys = [h.key for h in Engine(ix).search(
            "PHP Fatal error:  Uncaught TypeError in /var/www/src/Models/User.php:22", SearchOptions(k=3)).hits]
    assert keys[:2] == ["php:src/Models/User.php", "php:src/Models/User.php:User.find"]


@pytest.mark.parametrize("unit", ['"{$', "<<<EOT\n", "'\\", "/* ", "<?php ?>", "class a {\n", "function f(\n",
                                  "#[A(\n", '"${'])
def test_hostile_php_files_load_in_time_proportional_to_their_size(tmp_path, unit):
    assert load_ratio(tmp_path, "php", unit, head="<?php\n") < 40
    get_loader("php").load(tmp_path / "big.php", "f.php", LoadOptions())
