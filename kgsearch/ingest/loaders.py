"""The loaders by name and by file type: which loader reads a file (``--format`` overrides).

Kept out of the package's ``__init__``: importing any ``kgsearch.ingest`` module (the query path
reads :mod:`.langspec`'s stack-frame patterns) imported every loader, about 20 ms of a cold
``kgsearch search`` here and several times that on a phone.
"""
from __future__ import annotations

from pathlib import Path

from . import (beir, ccode, cscode, gocode, javacode, jsnames, kg, ktcode, langspec, markdown, phpcode, plaintext, pycode,
               rbcode, rscode, triples)
from .codemodel import CodeLoader

# loader name -> module
LOADERS = {m.NAME: m for m in (kg, markdown, pycode, plaintext, beir, triples, gocode, rscode, javacode, ktcode, cscode,
                                phpcode, rbcode)}
LOADERS.update({s.name: CodeLoader(s, m.load) for m, s in ((jsnames, langspec.JAVASCRIPT), (jsnames, langspec.TYPESCRIPT),
                                                       (ccode, langspec.C), (ccode, langspec.CPP))})

# What each loader makes of a file, by version: a loader whose nodes or edges change for the same
# file (a kgsearch upgrade) gets the next number, and the next run re-reads that loader's files in
# the roots it walks (kgsearch.indexer.plan), so an updated index holds what a fresh build would.
# An index written before versions were kept read every loader at 1.
# Every code loader's last step: the text of a definition (or a class's outline, a file's code
# outside its definitions) past its 4,000-character cut goes to `chunk` parts (FLAG_PART), so that
# every line is searchable (python 2, javascript/typescript/java/kotlin/php 2, and the next below).
LOADER_VERSIONS = dict.fromkeys(LOADERS, 1) | {
    "rust": 8,              # 2: $crate:: paths; a file's macro_rules! by bare name; no pub() calls;
                            # let x = T {..}; 3: `mod x;` edges say decl: mod (and test: the indexer
                            # flags a file declared under #[cfg(test)] as test code); 4: structs list
                            # their fields' types, self.field.f() with the struct in another file
                            # 5: a workspace's tests-*/*-tests member crates are test code
                            # 6: an impl block of a type another file declares: member_of the type
                            # 7: parts (a long definition's lines past its 4,000-character cut)
                            # 8: `type X<T> = ..;` in modules and functions is a node (decl alias)
    "go": 6,                # 2: methods under their receiver type (contains from the type); 3: import
                            # comments stand for go.mod, x := T{..} has type T; 4: structs list their
                            # fields' types, r.field.M() / x.field.M() with the struct in another file
                            # 5: a method of a type another file declares: member_of the type; 6: parts
    "c": 8, "cpp": 8,       # 2: folders named *Tests, *_tests, *-tests hold tests; 3: out-of-line
                            # Cls::f outside a class body: member_of the class; 4: parts
                            # 5: a class nested in a namespace's class is ns.Outer.Inner (was
                            # ns.Outer.ns.Inner); `class Outer::X {}` in namespace ns is ns.Outer.X
                            # 6: `int ::ns::f()` is ns.f (was int.ns.f); `operator ::ns::T()` one name
                            # 7: `class Outer::Impl {}` outside Outer's body: member_of Outer
                            # 8: type aliases (`typedef .. name;`, `using X = ..;`: decl alias) and
                            # function-like macros (`#define F(x) ..`: decl macro) are nodes
    "csharp": 3,            # 2: files that use NUnit/xUnit/MSTest are test code; 3: parts
    "python": 3,            # 2: parts; 3: an overloaded name's implementation holds the plain key
    "kotlin": 2, "php": 2,  # 2: parts
    "ruby": 1,
    "java": 3,                          # 2: parts; 3: a nested record is one node (its header was also
                                        # read as a constructor of the outer class: a twin under it)
    "javascript": 4, "typescript": 4,   # 2: parts; 3: `key: function named() {}` (and a class field's
                                        # `function fe() {}`) is one node, not a second obj.key.obj.named
                                        # 4: TS `type X<T> = ..` is a node (decl alias); a body-less
                                        # `function f(..): T;` (an overload, `declare`) says decl signature
    "text": 2,              # 2: a first line is a title up to 80 columns, a CJK character two wide
    "markdown": 2,          # 2: a front-matter flow list or mapping left open (`tags: [a, b`, `tags: {a`)
                            # is skipped with a warning, and a tag is words (no tag `{a` or `{a:`)
}

EXTENSION_LOADER = {
    ".json": "kg", ".jsonl": "kg", ".ndjson": "kg", ".csv": "kg", ".tsv": "triples",
    ".md": "markdown", ".markdown": "markdown",
    ".py": "python", ".pyi": "python",
    ".txt": "text", ".text": "text", ".rst": "text", ".org": "text", ".log": "text",
    ".adoc": "text", ".tex": "text",
    **{ext: m.NAME for m in (gocode, rscode, javacode, ktcode, cscode, phpcode, rbcode) for ext in m.EXTENSIONS},
    **{ext: s.name for s in (langspec.JAVASCRIPT, langspec.TYPESCRIPT, langspec.C, langspec.CPP)
       for ext in s.extensions},
}

# files read by their whole name (Ruby's Rakefile, Gemfile)
NAME_LOADER = {name: rbcode.NAME for name in rbcode.FILE_NAMES}

# Files without these extensions are still read as plain text when they look like text
# (no NUL byte in the first 8 KB) and have no extension or a README/LICENSE-like name.
TEXTLIKE_NAMES = {"readme", "license", "copying", "changelog", "notes", "todo", "authors"}


def loader_for(path: Path, fmt: str | None = None) -> str | None:
    """The loader name for ``path`` (``None``: not indexed)."""
    if fmt:
        return fmt
    if triples.is_side_file(path):       # entity2text.txt & co. beside KG triples
        return "triples"
    ext = path.suffix.lower()
    if ext in EXTENSION_LOADER:
        return EXTENSION_LOADER[ext]
    if path.name in NAME_LOADER:
        return NAME_LOADER[path.name]
    if not ext and path.name.lower() in TEXTLIKE_NAMES:
        return "text"
    return None


def get_loader(name: str):
    from ..errors import UsageError

    mod = LOADERS.get(name)
    if mod is None:
        raise UsageError(f"unknown format {name!r}; choose from {', '.join(sorted(LOADERS))}")
    return mod
