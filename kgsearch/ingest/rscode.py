"""Rust source: files, items, ``impl`` blocks and their edges.

Nodes (see :mod:`kgsearch.ingest.codemodel`): the file (``module``); ``struct``, ``enum``,
``union``, ``trait``, ``impl`` blocks and inline ``mod x { }`` (``class``, ``decl`` says which;
an ``impl`` is named after its type, ``props["trait"]`` the trait it implements, and its
methods read ``Type.method``); ``fn`` items (``function``; ``method`` inside an ``impl`` or a
``trait``, body-less trait methods included; nested ``fn`` items read ``outer.inner``);
``macro_rules!`` macros (``function``, ``decl`` ``macro``); type aliases ``type X<T> = ..;``
(``class``, ``decl`` ``alias``) in modules, not a function's local ones nor an ``impl``'s or a
``trait``'s associated types (``type Item = u32;``: a name many impls share). Constants and statics are
not nodes (they stay in their parent's text). Spans start at the item's outer
attributes (``#[derive(..)]``, ``#[cfg(..)]``) and visibility. Doc comments (``///``, ``//!``,
``/** */``, plain ones) are the comments right above.

Tests: files under ``tests/``, items under ``#[cfg(test)]`` (or ``#[cfg(all(test, ..))]``, built
only for tests too) and functions marked ``#[test]`` (or ``#[tokio::test]``, ``#[rstest]`` ...).
A file declared so (``#[cfg(test)] mod mocks;``) says nothing of it itself: its ``mod`` edge
carries ``test`` and the indexer flags the file it resolves to (:mod:`kgsearch.indexer.testdecl`).

Names (``ns='rs'``): the crate is the nearest ``Cargo.toml``'s package name (``-`` -> ``_``;
the root folder's name without one), a file's module path comes from its path under the
crate's ``src/`` (``src/a/mod.rs`` and ``src/a.rs`` are ``a``; ``lib.rs``/``main.rs`` the
crate; other folders, such as ``tests/x.rs``, keep their names), and every item answers to
``<crate>.<module path>.<qualname>`` (``tokio.sync.mutex.Mutex.lock``); a file to
``<crate>.<module path>``. A method of an inherent ``impl`` whose type the file binds with a
``use`` of one crate path (``use super::Shared; impl Shared {..}`` in ``worker/metrics.rs``)
answers to the type's path too, a rank lower (``tokio...worker.Shared.injection_queue_depth``).

Edges:

* ``imports``: ``mod x;`` -> ``x.rs`` or ``x/mod.rs`` where Rust looks for it (not yet under
  the folders of inline modules around it); ``#[path = "p"]`` -> that file, relative to the
  declaring file's folder (inside inline modules: to theirs), each ``#[cfg_attr(.., path = "p")]``
  too (props ``decl: mod``, and ``test`` when only tests build the declaration); ``use`` trees
  (``use a::{b, c::*};``, ``as`` renames) -> the item, else the module (``crate::``, ``self::``,
  ``super::`` resolved; other paths tried as written, from the current module and from the
  crate root; ``$crate::`` in a macro's body as ``crate::``).
* ``calls``: ``f()``, ``path::f()``, ``Type::f()``, ``Self::f()``, ``self.f()`` and macro calls
  ``m!(..)`` (``$crate::a::f()`` and ``$crate::m!(..)`` too), resolved through the module's
  items, its ``use`` names and globs, and the ``impl``'s type; a file's top-level
  ``macro_rules!`` answers to its bare name crate-wide (``#[macro_use]`` textual scope: tokio's
  ``cfg_rt! { .. }``, ``ready!(..)``), below ``#[macro_export]`` ones. ``pub(crate)`` is no
  call. Methods on values whose type is declared: ``self.field.f()`` (the field's type in the
  ``struct`` of the ``impl``'s type, in the same file; else the call names the struct's path as
  the ``impl``'s type reads (through ``use``) with the field and method,
  :class:`~kgsearch.ingest.codemodel.FieldCalls`, which the indexer follows through the fields
  each braced ``struct``'s node lists, ``props["fields"]``: their types' candidates, innermost
  first, read through that file's ``use`` names) and ``x.f()`` for a parameter ``x: Type``,
  a local ``let x: Type`` or ``let x = Type { .. }`` -> ``Type::f``; through references and the wrappers
  ``Arc``, ``Rc``, ``Box``, ``Pin``, ``Cow``, ``Mutex``, ``RwLock``, ``RefCell``, ``Cell`` ...
  the innermost type first (``Arc<Mutex<Inner>>``: ``Inner::f``, else ``Mutex::f``, else
  ``Arc::f``). A name bound more than once with other types (or also untyped: ``let x = ..``,
  ``for x in``, a closure's ``|x|``, ``Some(x)``), a field that two ``struct`` items of that
  name declare differently, a generic parameter and collections (``Vec<T>``, ``Option<T>``) give no
  edge. Not resolved: methods on other values (``x.f()`` with ``x`` untyped: no inference),
  ``self.0.f()``, a field of another file's ``struct`` in an ``impl`` of a wrapper (``impl X
  for Arc<T>``) or in a macro's body, trait methods reached
  through a generic, calls into crates outside the tree, the standard macros.
* ``inherits``: a trait -> its supertraits; ``implements``: an ``impl Trait for Type`` -> the trait.
* ``member_of``: an ``impl`` block whose scope does not declare its type -> the type's paths
  (:meth:`_Rust.member_edges`).
"""
from __future__ import annotations

import posixpath
import re
from bisect import bisect_right

from .clex import lex
from ..types import MEMBER_OF, EdgeRec
from .codemodel import Def, FieldCalls
from .codescan import Angles, call_sites, find_end, find_end_before, free, outside_bodies, read_source, split_chain
from .langspec import RUST
from .rsmodules import EXTERN_ROOTS, RustModules
from .rspaths import crate_of, path_of, type_name

NAME = "rust"
EXTENSIONS = RUST.extensions

__all__ = ["NAME", "EXTENSIONS", "load"]

_ITEM = re.compile(r"(?P<kw>fn|struct|enum|union|trait|impl|mod|type|macro_rules\s*!)(?![\w!])")
# the qualifiers before an item's keyword (its span starts there), matched backwards
_QUALIFIERS = re.compile(r"(?:\s+(?:tluafed|tsnoc|cnysa|efasnu|(?:\"[ ]*\"\s*)?nretxe))*"
                         r"(?:\s*(?:\)[^()]*\(\s*)?bup)?")
_NAME = re.compile(r"\s*(?:r#)?(\w+)")
_TYPE_WORD = re.compile(r"\btype\b")
_BANG = re.compile(r"!\s*[(\[{]")
_REV_MACRO = re.compile(r"\s*(\w+(?:::\w+)*)")
_TEST_ATTR = re.compile(r"#\s*\[\s*(?:cfg\s*\(\s*test\s*\)|(?:\w+\s*::\s*)*test\b|rstest\b|test_case\b)")
_CFG_ALL = re.compile(r"#\s*\[\s*cfg\s*\(\s*all\s*\(")
_GROUP = re.compile(r"\([^()]*\)")
_WS_BEFORE = re.compile(r"\s*$")               # (the reference of _attrs_start's rstrip)
_SELF_CALL = re.compile(r"self\s*\.\s*(\w+)")
_STD_MACROS = frozenset("println print eprintln eprint format write writeln vec assert assert_eq assert_ne "
                        "debug_assert debug_assert_eq debug_assert_ne panic unreachable unimplemented todo matches "
                        "dbg cfg include include_str include_bytes concat stringify env option_env line column file "
                        "module_path format_args compile_error thread_local macro_rules".split())
# (``pub(crate)`` is a visibility, not a call)
_KEYWORDS = frozenset("if while for match loop return fn let mut ref move as in where impl unsafe async await "
                      "pub Some None Ok Err Box".split())
_ATTR = re.compile(r"#\s*!?\s*\[")
# #[path = "x.rs"] and #[cfg_attr(unix, path = "x.rs")] (read in the text: code blanks strings)
_PATH_ATTR = re.compile(r"#\s*\[\s*(?:path|cfg_attr\s*\((?:[^()\"\]]|\([^()]*\))*,\s*(path))\s*=\s*\"([^\"\n]*)\"")
# what stands right before ``impl`` when it is a type (``f: impl Fn()``, ``-> impl Future``,
# ``&mut impl Read``, ``Box<impl Trait>``, ``type T = impl Trait``), not an ``impl`` block
_TYPE_BEFORE = re.compile(r"(?:[:,<=&+|]|->|\b(?:mut|dyn|as))\s*$")
# wrappers a method call on the value may reach through to the wrapped type (Deref, or a lock
# whose own methods the tree may define): the innermost type that has the method wins
_WRAPPERS = frozenset("Arc Rc Box Pin Cow Mutex RwLock RefCell Cell UnsafeCell ManuallyDrop CachePadded".split())
_PRIMITIVES = frozenset("bool char str u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64 Self".split())
_TYPE_REFS = re.compile(r"(?:&\s*(?:'\w+\s*)?|\bmut\s+|\bdyn\s+|\bimpl\s+|\*\s*(?:const|mut)\s+)+")
_TYPE_PATH = re.compile(r"\s*((?:\w+\s*::\s*)*\w+)\s*(<)?")
_PARAM = re.compile(r"(?:mut\s+)?(\w+)\s*:(?!:)\s*(.+)$", re.S)
_FIELD = re.compile(r"(?:pub\s*(?:\([^()]*\))?\s*)?(?:r#)?(\w+)\s*:(?!:)\s*(.+)$", re.S)
_LET = re.compile(r"\blet\s+(?:mut\s+)?(\w+)\s*(:(?!:))?")
# ``= Type {`` / ``= a::Type {`` after an untyped ``let x`` (types are CamelCase: ``= match x {``,
# ``= if c {``, ``= unsafe {`` are blocks)
_LET_LITERAL = re.compile(r"=\s*((?:\w+\s*::\s*)*[A-Z]\w*)\s*\{")
# other bindings that may shadow a typed name: for loops, closures' parameters, patterns
_REBIND = re.compile(r"\bfor\s+(?:mut\s+)?(\w+)\s+in\b|(?:Some|Ok|Err)\s*\(\s*(?:ref\s+)?(?:mut\s+)?(\w+)\s*\)")
_CLOSURE = re.compile(r"(?:^|[(,=]|\bmove)\s*\|([^|]*)\|")
# a path from ``$crate`` in a macro's body, called or invoked: ``$crate::a::f(``, ``$crate::m!(``
_DOLLAR_CRATE = re.compile(r"\$crate((?:\s*::\s*\w+)+)\s*(?:(\()|!\s*[(\[{])")


def _split_top(s: str) -> list[str]:
    """``s`` split at its top-level commas (not inside ``()``, ``[]``, ``{}`` or ``<>``; ``->``
    is no bracket)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}" or ch == ">" and (i == 0 or s[i - 1] != "-"):
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(s[start:i])
            start = i + 1
    out.append(s[start:])
    return [x.strip() for x in out if x.strip()]


def _strip_attrs(s: str) -> str:
    """``s`` without the ``#[..]`` attributes it starts with."""
    s = s.lstrip()
    while s.startswith("#"):
        i = s.find("[")
        if i < 0:
            return s
        depth = 0
        for j in range(i, len(s)):
            if s[j] == "[":
                depth += 1
            elif s[j] == "]":
                depth -= 1
                if depth == 0:
                    break
        s = s[j + 1:].lstrip()
    return s


def _generic_names(s: str) -> set[str]:
    """The parameter names of a generic list's text without its ``<>`` (lifetimes left out)."""
    out = set()
    for p in _split_top(s):
        p = re.sub(r"^const\s+", "", p)
        m = re.match(r"(\w+)", p)
        if m and not p.startswith("'"):
            out.add(m.group(1))
    return out


def type_spine(t: str) -> list[list[str]]:
    """The paths of a declared type, outermost first, read through references and the wrappers a
    method call reaches through: ``&mut Arc<chan::Chan<T>>`` -> ``[['Arc'], ['chan', 'Chan']]``;
    ``Vec<T>`` -> ``[['Vec']]``; ``[T]``, ``(A, B)``, ``fn()`` -> ``[]``."""
    out: list[list[str]] = []
    for _ in range(8):
        r = _TYPE_REFS.match(t)
        if r:
            t = t[r.end():]
        m = _TYPE_PATH.match(t)
        if m is None:
            break
        path = [x.strip() for x in m.group(1).split("::")]
        out.append(path)
        if not m.group(2) or path[-1] not in _WRAPPERS:
            break
        args = [a for a in _split_top(t[m.end():].rsplit(">", 1)[0]) if not a.startswith("'")]
        if not args:
            break
        t = args[0]
    return out



def _cfg_all_test(code: str, pairs: dict, at: int, end: int) -> bool:
    """``#[cfg(all(.., test, ..))]`` at ``at``: built only for tests (``test`` one of the
    arguments of ``all``; not inside ``not(..)`` or ``any(..)``)."""
    m = _CFG_ALL.match(code, at, end)
    if m is None:
        return False
    args = code[m.end():pairs.get(m.end() - 1, end)]
    if "test" not in args:
        return False
    for _ in range(8):                         # nested groups (not(..), any(..)) taken out
        args, k = _GROUP.subn("", args)
        if not k:
            break
    return any(a.strip() == "test" for a in args.split(","))

class _Rust(RustModules):
    def __init__(self, lx, rel, spec, warning, opts, path):
        super().__init__(lx, rel, spec, warning)
        self.crate, cdir = crate_of(path, opts.root)
        sub = self.rel[len(cdir) + 1:] if cdir and self.rel.startswith(cdir + "/") else self.rel
        parts = sub[:-3].split("/")
        if parts[0] == "src":
            parts = parts[1:]
        # a file whose `mod x;` children sit beside it: a crate root (lib.rs, main.rs, src/bin/*.rs,
        # tests/*.rs, examples/*.rs, benches/*.rs) or a mod.rs; src/a.rs keeps its children in src/a/
        segs = sub[:-3].split("/")
        crate_file = (len(segs) == 2 and segs[0] in ("tests", "examples", "benches")
                      or len(segs) == 3 and segs[:2] == ["src", "bin"])
        self.is_root = parts in (["lib"], ["main"]) or parts[-1] == "mod" or crate_file
        if parts and parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        self.modpath = [re.sub(r"\W", "_", p) for p in parts]
        self.uses: dict[str, list[str]] = {}       # bound name -> candidate dotted paths
        self.globs: list[list[str]] = []
        self.extern_uses: set[str] = set()           # names bound by ``use std::..`` (never in the tree)
        self._types: set[str] | None = None            # the file's struct/enum/union names (_declared)

    def module_name(self) -> str:
        base = self.rel.rsplit("/", 1)[-1][:-3]
        if base in ("mod", "lib", "main"):
            d = posixpath.dirname(self.rel).rsplit("/", 1)[-1]
            return d if d and d != "src" else base
        return base

    def modq(self, extra: list[str] | None = None) -> str:
        return ".".join([self.crate] + self.modpath + (extra or []))

    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod:
            return [(self.modq(), 0)]
        out = [(f"{self.modq()}.{d.qual}", 0)]
        if d.data.get("export"):                 # #[macro_export]: at the crate root
            out.append((f"{self.crate}.{d.name}", 1))
        elif d.decl == "macro" and d.parent is self.mod:
            # a file's macro_rules! reach the rest of the crate by their bare name (textual
            # scope, through `#[macro_use] mod ..;`), never by a path: a crate-wide name, below
            # an exported one's
            out.append((f"{self.crate}.{d.name}", 2))
        p = d.parent
        if p is not None and p.decl == "impl" and d.kind == "method" and not p.props.get("trait"):
            # an inherent `impl` of a type another module declares (`use super::Shared; impl
            # Shared {..}` in worker/metrics.rs): its methods answer to the type's path too, below
            # the type's own module's, as Rust sees them (`Shared::f`, `self.shared.f()` through a
            # field); not a trait's (`impl From<A> for Bytes` in five files: five `Bytes::from`)
            cands = self.uses.get(p.name)
            if cands and len(cands) == 1 and cands[0] != self.modq([p.name]):
                out.append((f"{cands[0]}.{d.name}", 1))
        return out

    def member_edges(self) -> list[EdgeRec]:
        """``member_of`` edges from each ``impl`` block (inherent or of a trait) whose type the
        block's scope does not declare to the type, by the paths the type's name reads there
        (its ``use`` names, the module's own path, globs): ``impl Conn`` in ``imp.rs`` with ``use
        crate::conn::Conn;``. Not for wrappers, primitives, other crates' or the standard
        library's types, nor a generic parameter (``impl<T> X for T``)."""
        out = []
        code = self.lx.code
        for d in self.defs:
            if d.decl != "impl" or d.name in _WRAPPERS or d.name in _PRIMITIVES or d.name in EXTERN_ROOTS:
                continue
            if d.parent is not self.mod and d.parent.decl != "mod":
                continue            # (an impl in a function or another impl: nesting `impl X {` 10,000 deep was n^2)
            path = d.data.get("type_path") or []
            gen = code[slice(*d.data["gen"])]           # the block's own generic parameters
            if not path or not all(x.isidentifier() for x in path) or path[0] in EXTERN_ROOTS or (
                    len(path) == 1 and "<" in gen and d.name in _generic_names(gen[gen.index("<") + 1:gen.rfind(">")])):
                continue
            if any(s is not d and s.name == d.name and s.decl in ("struct", "enum", "union", "trait")
                   for s in d.parent.children):
                continue
            cands = self.resolve_path(path, d.parent)
            if cands:
                out.append(EdgeRec(d.key, "\n".join(dict.fromkeys(cands)), MEMBER_OF, "rs",
                                   line=self.lx.line(d.name_at)))
        return out

    # ---- items -------------------------------------------------------------------------
    def _attrs_start(self, at: int) -> tuple[int, bool]:
        """Start of the outer attributes right before ``at``, and whether one marks a test."""
        code, text, pairs = self.lx.code, self.lx.text, self.lx.pairs
        test = False
        while True:
            lo = max(0, at - 200)              # the last non-blank before at, within 200 characters:
            i = lo + len(code[lo:at].rstrip()) - 1     # _WS_BEFORE's start - 1 (\s is str.isspace)
            if i < 0 or code[i] != "]" or text[i + 1:at].strip():
                return at, test
            o = pairs.get(i)
            if o is None or o >= i:
                return at, test
            h = o - 1
            while h >= 0 and code[h] in " \t":
                h -= 1
            if h < 0 or code[h] != "#":
                return at, test
            if _TEST_ATTR.match(code, h, i + 1) or _cfg_all_test(code, pairs, h, i + 1):
                test = True
            at = h

    def _angles(self) -> Angles:
        """Generic argument lists of this file, read once (kgsearch.ingest.codescan.Angles)."""
        if getattr(self, "_angle_index", None) is None:
            self._angle_index = Angles(self.lx.code)
        return self._angle_index

    def scan(self) -> None:
        code, pairs = self.lx.code, self.lx.pairs
        n = len(code)
        defs: list[Def] = []
        mod_decls: list[tuple[str, int, str | None, bool]] = []
        rev = code[::-1]
        types = None                           # offsets of the word `type`, once one is read
        for m in _ITEM.finditer(code):
            if not free(code, m.start(), "!$"):
                continue
            q = _QUALIFIERS.match(rev, n - m.start())
            item_start = n - q.end() if q and q.group() else m.start()
            while item_start < m.start() and code[item_start] in " \t\n":
                item_start += 1
            kw = m.group("kw")
            if kw.startswith("macro_rules"):
                nm = _NAME.match(code, m.end())
                if not nm:
                    continue
                b = re.compile(r"\s*[{(\[]").match(code, nm.end())
                if not b:
                    continue
                o = b.end() - 1
                end = pairs.get(o, n) + 1
                if code[o] != "{":
                    e = re.compile(r"\s*;").match(code, end)
                    end = e.end() if e else end
                d = Def("function", nm.group(1), item_start, end, o, nm.start(1), "macro")
            elif kw == "type":                   # `type X<T> = ..;` (not `r#type`, not an associated
                if code[m.start() - 1:m.start()] == "#":       # type of an impl or a trait: see aliases)
                    continue
                nm = _NAME.match(code, m.end())
                if not nm:
                    continue
                at = nm.end()
                if code[at:at + 4].lstrip().startswith("<"):
                    at = self._angles().skip(code.index("<", at))
                if types is None:
                    types = [t.start() for t in _TYPE_WORD.finditer(code)]
                i = bisect_right(types, m.start())
                limit = types[i] if i < len(types) else n          # (not past the next `type`)
                stop = find_end_before(code, pairs, at, limit, ";{}")
                if stop >= limit or code[stop] != ";" or "=" not in code[at:stop]:
                    continue
                d = Def("class", nm.group(1), item_start, stop + 1, None, nm.start(1), "alias")
                d.data["up"] = self.lx.enclosing(m.start())
            elif kw == "impl":
                if _TYPE_BEFORE.search(code, max(0, item_start - 16), item_start):
                    continue
                at = m.end()
                if code.startswith("<", at) or code[at:at + 3].lstrip().startswith("<"):
                    at = self._angles().skip(code.index("<", at))
                body = find_end(code, pairs, at, ";{")
                if body >= n or code[body] != "{":
                    continue
                head = re.sub(r"\s+", " ", code[at:body]).strip()
                head = re.split(r"\bwhere\b", head)[0].strip()
                trait, _, typ = head.rpartition(" for ")
                name = type_name(typ)
                if not name:
                    continue
                d = Def("class", name, item_start, pairs.get(body, n) + 1, body, at, "impl")
                d.data["gen"] = (m.end(), at)
                d.data["type_path"] = path_of(typ)
                if trait:
                    tr = type_name(trait.lstrip("!"))
                    d.props["trait"] = tr
                    d.data["trait"] = path_of(trait.lstrip("!"))
            else:
                nm = _NAME.match(code, m.end())
                if not nm:
                    continue
                at = nm.end()
                if code.startswith("<", at) or code[at:at + 4].lstrip().startswith("<"):
                    at = self._angles().skip(code.index("<", at))
                mod_paths: list[str | None] = []
                if kw == "mod":
                    attrs, test = self._attrs_start(item_start)
                    paths = [(a.group(1) is not None, a.group(2))
                             for a in _PATH_ATTR.finditer(self.lx.text, attrs, item_start)]
                    if paths and all(cond for cond, _ in paths):   # only #[cfg_attr(unix, path = "x.rs")]:
                        mod_paths.append(None)                       # or the usual file
                    mod_paths += [path for _, path in paths] or [None]
                    e = find_end(code, pairs, at, ";{")
                    if e < n and code[e] == ";":       # read once the inline modules are known
                        for path in mod_paths:
                            mod_decls.append((nm.group(1), m.start(), path, test))
                        continue
                stop = find_end(code, pairs, at, ";{")
                if stop >= n:
                    continue
                body = stop if code[stop] == "{" else None
                end = pairs.get(stop, n) + 1 if body is not None else stop + 1
                kind = "function" if kw == "fn" else "class"
                d = Def(kind, nm.group(1), item_start, end, body, nm.start(1), kw if kw != "fn" else "fn")
                d.data["gen"] = (nm.end(), at)
                if kw == "mod":                        # an inline module's #[path]: its folder
                    d.data["paths"] = list(dict.fromkeys(mod_paths))
                if kw == "fn":
                    p = code.find("(", at, stop)
                    if p >= 0:
                        d.data["params"] = (p + 1, pairs.get(p, p))
                if kw == "trait" and body is not None:
                    sup = code[at:body]
                    if ":" in sup:
                        for t in re.split(r"\+", re.split(r"\bwhere\b", sup.split(":", 1)[1])[0]):
                            if type_name(t):
                                d.data.setdefault("supers", []).append(path_of(t))
            first = d.start
            d.start, d.test = self._attrs_start(d.start)
            if d.decl == "macro" and "macro_export" in code[d.start:first]:
                d.data["export"] = True
            defs.append(d)
        bodies = {d.body for d in defs if d.decl in ("impl", "trait")}
        aliases = outside_bodies([d for d in defs if d.decl == "alias" and d.data["up"] not in bodies],
                                 [d for d in defs if d.kind == "function"])
        defs = [d for d in defs if d.decl != "alias"] + aliases
        self.nest(defs)
        for name, at, path, test in mod_decls:
            self.mod_decl(name, at, path, test)

    def heritage(self) -> None:
        for d in self.defs:
            if "trait" in d.data and d.data["trait"] and d.data["trait"][0] not in EXTERN_ROOTS:
                d.implements.append((self.resolve_path(d.data["trait"], d.parent), d.name_at))
            for sup in d.data.get("supers", ()):
                if sup and sup[0] not in EXTERN_ROOTS:
                    d.bases.append((self.resolve_path(sup, d.parent), d.name_at))

    # ---- calls -------------------------------------------------------------------------
    # ---- declared types ----------------------------------------------------------------
    def _generics(self, scope: Def) -> set[str]:
        """Generic parameter names in force in ``scope`` (its own, its ``impl``'s, ...)."""
        out: set[str] = set()
        code = self.lx.code
        d = scope
        while d is not None and d is not self.mod:
            g = d.data.get("gen")
            if g and "<" in code[g[0]:g[1]]:
                txt = code[g[0]:g[1]]
                out |= _generic_names(txt[txt.index("<") + 1:txt.rindex(">")] if ">" in txt else "")
            d = d.parent
        return out

    def _vars(self, fn: Def) -> dict[str, str | None]:
        """A function's names with their declared types (parameters, ``let x: T``, ``let x = T
        {..}``); ``None`` where a name is bound more than once with another type or also untyped."""
        got = fn.data.get("vars")
        if got is not None:
            return got
        code = self.lx.code
        out: dict[str, str | None] = {}

        def bind(name: str, typ: str | None) -> None:
            typ = re.sub(r"\s+", " ", typ).strip() if typ else None
            if name in out and out[name] != typ:
                out[name] = None
            else:
                out[name] = typ
        p = fn.data.get("params")
        if p:
            for piece in _split_top(code[p[0]:p[1]]):
                m = _PARAM.match(_strip_attrs(piece))
                if m and m.group(1) != "self":
                    bind(m.group(1), m.group(2))
        if fn.body is not None:
            lo, hi = fn.body, fn.end
            for m in _LET.finditer(code, lo, hi):
                typ = None
                lit = None if m.group(2) else _LET_LITERAL.match(code, m.end())
                if lit:                         # `let x = Type { .. }`: a struct literal's type
                    typ = lit.group(1)
                elif m.group(2):
                    e = m.end()
                    stop = len(code)
                    for ch in "=;":
                        k = code.find(ch, e, hi)
                        if 0 <= k < stop:
                            stop = k
                    typ = code[e:stop].strip() if stop < len(code) else None
                bind(m.group(1), typ or None)
            for m in _REBIND.finditer(code, lo, hi):
                bind(m.group(1) or m.group(2), None)
            for m in _CLOSURE.finditer(code, lo, hi):
                for w in re.findall(r"(?<![:\w])(\w+)\s*(?=[:,]|$)", m.group(1)):
                    bind(w, None)
        fn.data["vars"] = out
        return out

    def declares_fields(self, d: Def) -> bool:
        """A braced ``struct`` (not a tuple or unit struct)."""
        return self.lx.code[d.body] == "{"

    def struct_fields(self, d: Def) -> dict[str, set[str]]:
        """The fields of one braced ``struct`` ``d`` with their declared types (kept on ``d``)."""
        got = d.data.get("fields")
        if got is not None:
            return got
        code, pairs = self.lx.code, self.lx.pairs
        fields: dict[str, set[str]] = {}
        d.data["fields"] = fields
        if d.decl != "struct" or d.body is None or code[d.body] != "{":
            return fields
        for piece in _split_top(code[d.body + 1:pairs.get(d.body, d.end)]):
            m = _FIELD.match(_strip_attrs(piece))
            if m:
                fields.setdefault(m.group(1), set()).add(re.sub(r"\s+", " ", m.group(2)).strip())
        return fields

    def field_types(self, d: Def) -> dict[str, list[str]]:
        """A braced ``struct``'s fields of a declared type: field -> the candidate names of the
        types a method call through it may reach, innermost first (``Arc<Mutex<Inner>>``:
        ``Inner``'s, then ``Mutex``'s, then ``Arc``'s, read through the file's ``use`` names),
        for ``self.field.f()`` in an ``impl`` of another file
        (:class:`~kgsearch.ingest.codemodel.FieldCalls`)."""
        out = {}
        for name, types in self.struct_fields(d).items():
            if len(types) == 1:
                cands = self._types_of(next(iter(types)), d)
                if cands:
                    out[name] = cands
        return out

    def _types_of(self, typ: str, scope: Def) -> list[str]:
        """Candidate names of the types a method call on a value of the declared type ``typ``
        may reach, innermost first (no generic parameter, primitive, standard type)."""
        gen = self._generics(scope)
        out: list[str] = []
        for path in reversed(type_spine(typ)):
            if path[0] in EXTERN_ROOTS or path[0] in _KEYWORDS or path[0] in gen or len(path) == 1 and (
                    path[0] in _PRIMITIVES or path[0] in self.extern_uses):
                continue
            out += self.resolve_path(path, scope, member=True)
        return list(dict.fromkeys(out))

    def _method_of(self, typ: str | None, method: str, scope: Def) -> list[str]:
        """Candidates for ``method`` on a value of the declared type ``typ``, innermost first."""
        return [f"{t}.{method}" for t in self._types_of(typ, scope)] if typ else []

    def _in_impl(self, scope: Def) -> bool:
        """``scope`` is inside an ``impl`` block (the nearest type-like item around it) of a type
        of the tree: not a wrapper's (``impl Schedule for Arc<Handle>`` reads ``Arc``), a standard
        type's, nor one in a macro's body (``impl $type``)."""
        d = scope
        while d is not None and d is not self.mod:
            if d.decl in ("impl", "trait", "struct", "enum", "union"):
                if d.decl != "impl" or d.name in _WRAPPERS or d.name in EXTERN_ROOTS or d.name in _PRIMITIVES:
                    return False
                break
            d = d.parent
        while d is not None and d is not self.mod:
            if d.decl == "macro":
                return False
            d = d.parent
        return d is self.mod

    def _declared(self) -> set[str]:
        """The names of the file's ``struct``, ``enum`` and ``union`` items (any module)."""
        if self._types is None:
            self._types = {d.name for d in self.defs if d.decl in ("struct", "enum", "union")}
        return self._types

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        if parts[0] == ".":                     # a method on a value of a declared type
            if scope.kind == "class" or scope.kind == "module":
                return []
            if parts[1] == "self":
                t = self._self_type(scope)
                if not t:
                    return []
                if t in self._declared():
                    return self._method_of(self.field_type(t, parts[2]), parts[3], scope)
                if not self._in_impl(scope):
                    return []
                # the struct is another module's: the indexer reads its fields (by the path
                # the impl's type names, through the file's `use` names)
                return FieldCalls(self.resolve_path([t, parts[2], parts[3]], scope))
            return self._method_of(self._vars(scope).get(parts[1]), parts[2], scope)
        if parts[0] == "!":                     # a macro call
            name = parts[1:]
            if len(name) == 1 and name[0] in _STD_MACROS or name[0] in EXTERN_ROOTS:
                return []
            return self.resolve_path(name, scope) + [f"{self.crate}.{name[-1]}"]
        if parts[0] == "self" and len(parts) == 2:
            t = self._self_type(scope)
            return [self.modq(self._mods_of(scope) + [t, parts[1]])] if t else []
        if parts[0] in _KEYWORDS or parts[0] in EXTERN_ROOTS or parts[0] == "self" or "$" in parts[0]:
            return []
        return self.resolve_path(parts, scope)


def load(path, rel: str, opts, spec=RUST):
    text, warning = read_source(path)
    lx = lex(text, "rust")
    b = _Rust(lx, rel, spec, warning, opts, path)
    b.scan()
    b.scan_uses()
    b.heritage()
    code = lx.code
    skip = {d.name_at for d in b.defs}
    attrs = [(a.end() - 1, lx.pairs.get(a.end() - 1, len(code))) for a in _ATTR.finditer(code)]
    calls = []
    ai = 0
    for at, raw in call_sites(code, skip):
        while ai < len(attrs) and attrs[ai][1] < at:
            ai += 1
        if ai < len(attrs) and attrs[ai][0] < at:
            continue                            # inside #[...]
        if "." in raw:                          # value.method(): by the value's declared type
            s = _SELF_CALL.fullmatch(raw)
            if s:
                calls.append((at, ["self", s.group(1)]))
                continue
            parts = split_chain(raw)
            if "?" in raw or ":" in raw or not all(x.isidentifier() for x in parts):
                continue
            if len(parts) == 3 and parts[0] == "self" or len(parts) == 2 and parts[0] != "self":
                calls.append((at, ["."] + parts))
            continue
        calls.append((at, split_chain(raw)))
    for m in _DOLLAR_CRATE.finditer(code):   # call_sites and _BANG skip a path after a `$`
        parts = ["crate"] + [x.strip() for x in m.group(1).split("::") if x.strip()]
        calls.append((m.start(), parts if m.group(2) else ["!"] + parts))
    rev = code[::-1]
    n = len(code)
    for m in _BANG.finditer(code):
        r = _REV_MACRO.match(rev, n - m.start())
        if r is None:
            continue
        e = r.end(1)
        if e < n and (rev[e] in "$.:_" or rev[e].isalnum()):
            continue
        calls.append((n - e, ["!"] + r.group(1)[::-1].split("::")))
    calls.sort(key=lambda c: c[0])
    res = b.build(calls)
    res.edges += b.member_edges()
    return res
