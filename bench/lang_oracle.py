"""The source-language loaders' definitions against tree-sitter's, file by file.

For every source file of the trees (default: each repository of
``../shared/bench/code-tasks-multi/repos``) the file is parsed with tree-sitter (the grammar
wheels of the ``test`` extra: tree-sitter-javascript, -typescript, -go, -rust, -java, -kotlin,
-c-sharp, -php, -ruby, -c, -cpp)
and loaded with kgsearch's loader. Each definition tree-sitter finds (the node types of
:data:`ORACLE`: functions, methods, classes and the other types a loader makes a node for) is
looked for among the loader's nodes with the same name and start line, then also the same end
line. Reported per language and per repository: the oracle's definitions, the share found
with the right name and start line, and with the right end line too; with ``--misses N`` the
first N misses of each language.

Conventions the comparison fixes (the loaders document the same):

* start line = the first line of the definition with its attributes, decorators,
  annotations and ``template<...>`` (tree-sitter puts Rust's ``#[...]`` beside the item: the
  oracle's start moves up over them), never its comments;
* Go: function_declaration, method_declaration, type_spec, type_alias, method_elem;
  Rust: function_item, function_signature_item, struct_item, enum_item, union_item,
  trait_item, impl_item, macro_definition, mod_item with a body, type_item (not an impl's or a
  trait's associated type); Java: class, interface,
  enum, record and annotation type declarations, method and constructor declarations
  (compact ones too); C#: class, struct, interface, enum and record declarations, methods,
  constructors, destructors, operators (``operator+``) and conversions (``operator int``),
  properties, indexers (``this``) and events with an accessor body or ``=>``, local functions; Kotlin:
  class (interface, enum), object and companion object declarations, function declarations
  (local ones too), secondary constructors (named after their class); PHP: class, interface,
  trait and enum declarations, function definitions, method declarations; Ruby: class, module,
  method and singleton_method (``class A::B`` named ``B``; ``class << self`` is none); C/C++: function_definition, named struct/union/enum/class specifiers
  with a body (typedef'd anonymous ones by the typedef's name), type_definition by its first
  declarator's name (not one whose type has a body), alias_declaration, preproc_function_def
  (function-like macros; object-like ones, preproc_def, are no nodes); JavaScript/TypeScript: function
  and generator declarations, classes, methods (class bodies and object literals), variables,
  assignments and object properties whose value is a function or an arrow function; TS also
  interfaces, enums, abstract classes, method and function signatures, type_alias_declaration.
  Type aliases inside a function (a block) are none in any language.

    python bench/lang_oracle.py [--trees DIR ...] [--misses 20] [--out-dir bench/results]

C# has no repository in code-tasks-multi: its trees are given with ``--trees`` (the six of
bench/results/lang_csharp.md, fetched with pip, npm and apt-get source).

Writes ``lang_oracle.json`` and ``lang_oracle.md``.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REPOS = Path(os.environ.get("KGSEARCH_SHARED", ROOT.parent / "shared")) / "bench" / "code-tasks-multi" / "repos"

# tree-sitter node type -> the kind a loader gives it (the name comes from the "name" field
# unless _name says otherwise)
ORACLE = {
    "go": {"function_declaration": "function", "method_declaration": "method", "type_spec": "class",
           "type_alias": "class", "method_elem": "method"},
    "rust": {"function_item": "function", "function_signature_item": "function", "struct_item": "class",
             "enum_item": "class", "union_item": "class", "trait_item": "class", "impl_item": "class",
             "macro_definition": "function", "mod_item": "class", "type_item": "class"},
    "java": {"class_declaration": "class", "interface_declaration": "class", "enum_declaration": "class",
             "record_declaration": "class", "annotation_type_declaration": "class",
             "method_declaration": "method", "constructor_declaration": "method",
             "compact_constructor_declaration": "method"},
    "c": {"function_definition": "function", "struct_specifier": "class", "union_specifier": "class",
          "enum_specifier": "class", "class_specifier": "class", "type_definition": "class",
          "alias_declaration": "class", "preproc_function_def": "function"},
    "javascript": {"function_declaration": "function", "generator_function_declaration": "function",
                   "class_declaration": "class", "class": "class", "method_definition": "method",
                   "variable_declarator": "function", "assignment_expression": "function", "pair": "function",
                   "interface_declaration": "class", "enum_declaration": "class",
                   "abstract_class_declaration": "class", "method_signature": "method",
                   "abstract_method_signature": "method", "function_signature": "function"},
}
ORACLE["csharp"] = {
    "class_declaration": "class", "struct_declaration": "class", "interface_declaration": "class",
    "enum_declaration": "class", "record_declaration": "class", "record_struct_declaration": "class",
    "method_declaration": "method", "constructor_declaration": "method", "destructor_declaration": "method",
    "operator_declaration": "method", "conversion_operator_declaration": "method",
    "property_declaration": "method", "indexer_declaration": "method", "event_declaration": "method",
    "local_function_statement": "function"}
ORACLE["kotlin"] = {
    "class_declaration": "class", "object_declaration": "class", "companion_object": "class",
    "function_declaration": "function", "secondary_constructor": "method"}
ORACLE["php"] = {
    "class_declaration": "class", "interface_declaration": "class", "trait_declaration": "class",
    "enum_declaration": "class", "function_definition": "function", "method_declaration": "method"}
ORACLE["ruby"] = {"class": "class", "module": "class", "method": "method", "singleton_method": "method"}
ORACLE["cpp"] = ORACLE["c"]
ORACLE["typescript"] = ORACLE["javascript"] | {"type_alias_declaration": "class"}
C_KEYWORDS = frozenset("if else for while do switch case return sizeof catch try throw".split())
COUNTS = ("files", "oracle", "start", "end", "loader", "clean", "clean_start", "clean_end")
FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}


GRAMMARS = ("tree_sitter", "tree_sitter_javascript", "tree_sitter_typescript", "tree_sitter_go",
            "tree_sitter_rust", "tree_sitter_java", "tree_sitter_kotlin", "tree_sitter_c_sharp", "tree_sitter_php",
            "tree_sitter_ruby", "tree_sitter_c", "tree_sitter_cpp")


def oracle_missing() -> str | None:
    """A one-line reason when tree-sitter or a grammar wheel cannot be imported, else None."""
    import importlib

    for name in GRAMMARS:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return (f"the oracle is not installed ({name}: {exc}); pip install -e '.[test]' "
                    "(tree-sitter and its grammar wheels)")
    return None


def grammar(lang: str, rel: str):
    import tree_sitter as ts

    if lang == "go":
        import tree_sitter_go as m
        return ts.Language(m.language())
    if lang == "rust":
        import tree_sitter_rust as m
        return ts.Language(m.language())
    if lang == "java":
        import tree_sitter_java as m
        return ts.Language(m.language())
    if lang == "csharp":
        import tree_sitter_c_sharp as m
        return ts.Language(m.language())
    if lang == "kotlin":
        import tree_sitter_kotlin as m
        return ts.Language(m.language())
    if lang == "php":
        import tree_sitter_php as m
        return ts.Language(m.language_php())
    if lang == "ruby":
        import tree_sitter_ruby as m
        return ts.Language(m.language())
    if lang == "c":
        import tree_sitter_c as m
        return ts.Language(m.language())
    if lang == "cpp":
        import tree_sitter_cpp as m
        return ts.Language(m.language())
    if lang == "typescript":
        import tree_sitter_typescript as m
        return ts.Language(m.language_tsx() if rel.endswith("x") else m.language_typescript())
    import tree_sitter_javascript as m
    return ts.Language(m.language())


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def _end_line(node) -> int:
    r, c = node.end_point
    return r if c == 0 and r > node.start_point[0] else r + 1


def _name(node, lang: str) -> str | None:
    t = node.type
    if t in _ALIASES and _local_alias(node):
        return None
    if lang in ("javascript", "typescript"):
        if t == "variable_declarator" or t == "pair":
            v = node.child_by_field_name("value")
            k = node.child_by_field_name("name" if t == "variable_declarator" else "key")
            if v is None or v.type not in FUNCTION_VALUES or k is None:
                return None
            if k.type not in ("identifier", "property_identifier"):
                return None
            return _text(k)
        if t == "assignment_expression":
            v, left = node.child_by_field_name("right"), node.child_by_field_name("left")
            if v is None or v.type not in FUNCTION_VALUES or left is None:
                return None
            if left.type == "identifier":
                return _text(left)
            if left.type == "member_expression":
                p = left.child_by_field_name("property")
                return _text(p) if p is not None and p.type == "property_identifier" else None
            return None
    if lang in ("c", "cpp"):
        if t == "type_definition":
            return _typedef_name(node)
        if t in ("alias_declaration", "preproc_function_def"):
            n = node.child_by_field_name("name")
            return _text(n) if n is not None else None
        if t == "function_definition":
            if any(c.type in ("default_method_clause", "delete_method_clause", "pure_virtual_clause")
                   for c in node.children):
                return None                    # = default / = delete: no body
            d = node.child_by_field_name("declarator")
            while d is not None and d.type not in ("function_declarator",):
                d = d.child_by_field_name("declarator")
            if d is None:
                return None
            d = d.child_by_field_name("declarator")
            # a function returning a function pointer, a name in parentheses: the name inside
            # (`void (*signal(int, void (*)(int)))(int)`: signal; `int (max)(int a, int b)`: max)
            while d is not None and d.type in ("parenthesized_declarator", "pointer_declarator", "function_declarator"):
                d = d.child_by_field_name("declarator") if d.type != "parenthesized_declarator" else \
                    (d.named_children[0] if d.named_children else None)
            if d is None:
                return None
            while d.type in ("qualified_identifier",) and d.child_by_field_name("name") is not None:
                d = d.child_by_field_name("name")
            if d.type == "template_function":
                d = d.child_by_field_name("name")
            if d is None:
                return None
            from kgsearch.ingest.ccode import norm_name
            name = norm_name(_text(d))
            return None if name in C_KEYWORDS else name       # a macro made tree-sitter see if (..) { } as one
        if node.child_by_field_name("body") is None:
            return None
        n = node.child_by_field_name("name")
        if n is not None and n.type == "qualified_identifier":
            n = n.child_by_field_name("name") or n
        if n is not None and n.type == "template_type":
            n = n.child_by_field_name("name")
        if n is None:
            p = node.parent
            if p is not None and p.type == "type_definition":
                d = p.child_by_field_name("declarator")
                return _text(d) if d is not None and d.type == "type_identifier" else None
            return None
        if n.type == "qualified_identifier":
            n = n.child_by_field_name("name") or n
        return _text(n)
    if lang == "csharp":
        return _cs_name(node)
    if lang == "kotlin":
        return _kt_name(node)
    if lang == "go" and t == "method_elem":          # methods of named interfaces only
        p = node.parent
        if p is None or p.parent is None or p.parent.type != "type_spec":
            return None
    if lang == "rust":
        if t == "impl_item":
            ty = node.child_by_field_name("type")
            while ty is not None and ty.type in ("generic_type", "scoped_type_identifier", "reference_type"):
                ty = ty.child_by_field_name("type") or ty.child_by_field_name("name")
            return _text(ty) if ty is not None else None
        if t == "mod_item" and node.child_by_field_name("body") is None:
            return None
        if t == "type_item":                  # an impl's or a trait's associated type is no node
            p = node.parent
            if p is not None and p.type == "declaration_list" and p.parent is not None \
                    and p.parent.type in ("impl_item", "trait_item"):
                return None
    n = node.child_by_field_name("name")
    if lang == "ruby" and n is not None and n.type == "scope_resolution":     # class A::B: B
        n = n.child_by_field_name("name")
    return _text(n) if n is not None else None


# a type alias in a function is its own (no node: the loaders read file, namespace, module and
# class level ones)
_FUNCTION_SCOPES = {"function_definition", "function_item", "function_declaration", "method_definition",
                    "arrow_function", "function_expression", "function", "generator_function_declaration",
                    "lambda_expression", "closure_expression",
                    "compound_statement"}     # (C/C++: any block; Catch2's `TEST_CASE(..) {` is no function to it)
_ALIASES = {"type_definition", "alias_declaration", "type_item", "type_alias_declaration"}


def _local_alias(node) -> bool:
    p = node.parent
    while p is not None:
        if p.type in _FUNCTION_SCOPES:
            return True
        p = p.parent
    return False


def _typedef_name(node) -> str | None:
    """C/C++ ``typedef``: the name its first declarator declares (``typedef int (*cb_t)(int);``:
    cb_t); none for a typedef whose type has a body (``typedef struct {..} name;`` is the
    struct's, by the typedef's name, and ``typedef struct foo {..} foo_t;`` the struct ``foo``)."""
    ty = node.child_by_field_name("type")
    if ty is not None and ty.child_by_field_name("body") is not None:
        return None
    d = node.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "array_declarator", "function_declarator",
                                       "parenthesized_declarator", "attributed_declarator",
                                       "reference_declarator"):
        d = d.child_by_field_name("declarator") if d.type != "parenthesized_declarator" else \
            (d.named_children[0] if d.named_children else None)
    if d is None or d.type not in ("type_identifier", "primitive_type", "identifier"):
        return None
    return _text(d)


def _kt_name(node) -> str | None:
    """Kotlin: the identifier child, backticks taken off; a companion object without a name is
    ``Companion``, a secondary constructor is named after its class; anonymous functions (no
    name) are none."""
    t = node.type
    if t == "secondary_constructor":
        p = node.parent
        while p is not None and p.type not in ("class_declaration", "object_declaration"):
            p = p.parent
        return _kt_name(p) if p is not None else None
    n = next((c for c in node.children if c.type in ("identifier", "type_identifier", "simple_identifier")), None)
    if n is None:
        return "Companion" if t == "companion_object" else None
    name = _text(n)
    return name[1:-1] if name.startswith("`") and name.endswith("`") else name


def _cs_name(node) -> str | None:
    """C#: operators are ``operator+``, conversions ``operator int``; properties, indexers
    (``this``) and events only with an accessor body or ``=>`` (an auto-property is no node)."""
    t = node.type
    if t == "operator_declaration":
        op = node.child_by_field_name("operator")
        return "operator" + "".join(_text(op).split()) if op is not None else None
    if t == "conversion_operator_declaration":
        ty = node.child_by_field_name("type")
        return "operator " + "".join(_text(ty).split()) if ty is not None else None
    if t in ("property_declaration", "indexer_declaration", "event_declaration"):
        value = node.child_by_field_name("value")
        acc = node.child_by_field_name("accessors")
        bodied = value is not None and value.type == "arrow_expression_clause" or acc is not None and any(
            c.type == "accessor_declaration" and c.child_by_field_name("body") is not None for c in acc.children)
        if not bodied:
            return None
        if t == "indexer_declaration":
            return "this"
    n = node.child_by_field_name("name")
    return _text(n) if n is not None else None


def _cs_start(node) -> int:
    """C#: the row of the first attribute or modifier; tree-sitter starts a declaration at a
    ``#if`` line before its attributes (``#if X`` ``[Serializable]`` ``#endif``), and at a
    directive line that holds none."""
    for c in node.children:
        if not c.type.startswith("preproc"):
            return c.start_point[0]
        stack = [c]
        while stack:
            x = stack.pop()
            if x.type == "attribute_list":
                return x.start_point[0]
            stack.extend(reversed(x.children))
    return node.start_point[0]


def _start_line(node, lang: str) -> int:
    row = node.start_point[0]
    if lang == "csharp":
        row = _cs_start(node)
    if lang == "rust":                        # attributes are siblings before the item
        prev = node.prev_named_sibling
        while prev is not None and prev.type == "attribute_item" and prev.end_point[0] >= row - 1:
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
    if lang == "kotlin":                      # `@Ann("x")` on the line above a top-level declaration:
        prev = node.prev_named_sibling        # tree-sitter-kotlin 1.1 often reads it as an expression
        while prev is not None and prev.type == "annotated_expression" and prev.end_point[0] >= row - 1 \
                and prev.named_children and prev.named_children[0].type == "annotation" \
                and all(c.type in ("annotation", "parenthesized_expression") for c in prev.named_children):
            row = prev.start_point[0]         # of its own (`@Ann` + `("x")`), not the declaration's
            prev = prev.prev_named_sibling
    if lang in ("c", "cpp"):
        p = node.parent
        if p is not None and p.type == "friend_declaration":
            p = p.parent
        if p is not None and p.type == "template_declaration":
            row = p.start_point[0]
    return row + 1


def _clean(node) -> bool:
    """tree-sitter parsed this definition without an error: none inside it, it does not sit in
    an ERROR node, and the node before it is not one (an unexpanded macro often breaks the
    parse there, and the definition that follows takes a wrong start or end)."""
    if node.has_error:
        return False
    p = node.parent
    while p is not None:
        if p.type == "ERROR":
            return False
        p = p.parent
    prev = node.prev_sibling
    return prev is None or not (prev.type == "ERROR" or prev.has_error)


def oracle_defs(data: bytes, lang: str, rel: str) -> list[tuple[str, int, int, bool]]:
    """(name, start line, end line, clean) of the definitions tree-sitter finds in ``data``
    (clean: see :func:`_clean`)."""
    import tree_sitter as ts

    family = "javascript" if lang == "typescript" else lang
    kinds = ORACLE[lang]
    tree = ts.Parser(grammar(lang, rel)).parse(data)
    out = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in kinds:
            name = _name(node, family if family == "javascript" else lang)
            if name:
                out.append((name, _start_line(node, lang), _end_line(node), _clean(node)))
        stack.extend(reversed(node.children))
    return out


def loader_defs(path: Path, rel: str, root: Path) -> tuple[str, list[tuple[str, int, int]]]:
    from kgsearch.ingest.loaders import get_loader, loader_for
    from kgsearch.types import LoadOptions

    name = loader_for(path)
    res = get_loader(name).load(path, rel, LoadOptions(root=str(root)))
    return name, [(n.name, n.line_start, n.line_end) for n in res.nodes if n.kind != "module"]


def oracle_language(rel: str, cpp_tree: bool) -> str | None:
    from kgsearch.ingest.langspec import spec_for

    spec = spec_for(rel)
    if spec is None:
        return None
    if spec.name == "c" and rel.endswith(".h") and cpp_tree:
        return "cpp"
    return spec.name


def compare_file(path: Path, rel: str, root: Path, cpp_tree: bool) -> dict | None:
    lang = oracle_language(rel, cpp_tree)
    if lang is None:
        return None
    want = oracle_defs(path.read_bytes(), lang, rel)
    _, got = loader_defs(path, rel, root)
    by_start = collections.Counter((n, a) for n, a, _ in got)
    full = collections.Counter(got)
    r = {"lang": lang, "oracle": len(want), "start": 0, "end": 0, "loader": len(got), "clean": 0,
         "clean_start": 0, "clean_end": 0, "misses": []}
    for name, a, b, clean in want:
        ok_s = ok_e = False
        if by_start[(name, a)] > 0:
            by_start[(name, a)] -= 1
            ok_s = True
            if full[(name, a, b)] > 0:
                full[(name, a, b)] -= 1
                ok_e = True
        r["start"] += ok_s
        r["end"] += ok_e
        r["clean"] += clean
        r["clean_start"] += clean and ok_s
        r["clean_end"] += clean and ok_e
        if not ok_e:
            r["misses"].append(("end" if ok_s else "start", rel, (name, a, b), "clean" if clean else "parse error"))
    return r


def compare_tree(root: Path) -> dict:
    """Every file kgsearch indexes under ``root`` (its walk: ``dist/``, ``node_modules``,
    minified scripts and the like are not), compared."""
    from kgsearch.ingest.walk import walk

    files = [f.path for f in walk(root.resolve())]
    root = root.resolve()
    cpp_tree = any(p.suffix in (".cc", ".cpp", ".hpp", ".cxx") for p in files)
    per: dict[str, dict] = {}
    for p in files:
        rel = p.relative_to(root).as_posix()
        r = compare_file(p, rel, root, cpp_tree)
        if r is None:
            continue
        a = per.setdefault(r["lang"], dict.fromkeys(COUNTS, 0) | {"misses": []})
        a["files"] += 1
        for k in COUNTS[1:]:
            a[k] += r[k]
        a["misses"] += r["misses"]
    return per


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.2f}%" if b else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", nargs="*", type=Path, help="trees to compare (default: the code-tasks-multi repos)")
    ap.add_argument("--misses", type=int, default=0, help="print the first N misses per language")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args(argv)
    missing = oracle_missing()
    if missing:
        print(f"lang_oracle: {missing}", file=sys.stderr)
        return 2
    if not a.trees and not REPOS.is_dir():
        print(f"lang_oracle: {REPOS} is missing; give --trees, or set KGSEARCH_SHARED to the shared folder",
              file=sys.stderr)
        return 2
    trees = a.trees or sorted(p for p in REPOS.iterdir() if p.is_dir())
    t0 = time.time()
    rows, total = [], {}
    for tree in trees:
        per = compare_tree(tree)
        for lang, r in sorted(per.items()):
            rows.append({"tree": tree.name, "lang": lang, **{k: v for k, v in r.items() if k != "misses"}})
            t = total.setdefault(lang, dict.fromkeys(COUNTS, 0) | {"misses": []})
            for k in COUNTS:
                t[k] += r[k]
            t["misses"] += r["misses"]
    head = ("| {} | files | oracle defs | loader defs | name + start line | + end line | oracle defs parsed without "
            "error | name + start line | + end line |")
    lines = [head.format("tree | language"), "|---" * 11 + "|"]

    def cells(t: dict) -> str:
        return (f"{t['files']} | {t['oracle']} | {t['loader']} | {_pct(t['start'], t['oracle'])} | "
                f"{_pct(t['end'], t['oracle'])} | {t['clean']} | {_pct(t['clean_start'], t['clean'])} | "
                f"{_pct(t['clean_end'], t['clean'])} |")
    for r in rows:
        lines.append(f"| {r['tree']} | {r['lang']} | " + cells(r))
    lines += ["", head.format("language"), "|---" * 10 + "|"]
    for lang, t in sorted(total.items()):
        lines.append(f"| **{lang}** | " + cells(t))
    allt = {k: sum(t[k] for t in total.values()) for k in COUNTS}
    lines.append("| **all** | " + cells(allt))
    print("\n".join(lines))
    if a.misses:
        for lang, t in sorted(total.items()):
            print(f"\n{lang}: first misses")
            for m in t["misses"][:a.misses]:
                print("  ", m)
    if not a.no_save:
        a.out_dir.mkdir(parents=True, exist_ok=True)
        head = (f"# Definitions: loaders vs tree-sitter\n\n`python bench/lang_oracle.py` "
                f"({time.strftime('%Y-%m-%d')}, {time.time() - t0:.0f} s). A definition counts when a loader node "
                "has its name and start line (and end line, last column). See the script's docstring for the "
                "node types compared.\n\n")
        (a.out_dir / "lang_oracle.md").write_text(head + "\n".join(lines) + "\n", encoding="utf-8")
        data = {"rows": rows, "total": {k: {x: y for x, y in v.items() if x != "misses"} | {"misses": v["misses"][:200]}
                                        for k, v in total.items()}}
        (a.out_dir / "lang_oracle.json").write_text(json.dumps(data, indent=1, default=list), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
