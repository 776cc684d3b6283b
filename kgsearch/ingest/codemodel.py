"""The node and edge model every source-language loader emits, built the same way for each:
a structural scanner (``jscode``, ``gocode``, ``rscode``, ``javacode``, ``ccode``) finds the
definitions (:class:`Def`) and call sites in a lexed file; :class:`Builder` turns them into the
nodes and edges the Python loader (:mod:`kgsearch.ingest.pycode`) emits.

Keys: one namespace per family of languages that import each other (``spec.ns``: ``js`` for
JavaScript and TypeScript, ``go``, ``rs``, ``java``, ``c`` for C and C++), and a file's path
in the key, so that two files never claim one key (Go build variants, C ``static`` functions,
two ``main``\\ s): ``js:src/util.ts`` for the file, ``js:src/util.ts:Cache.get`` for a
definition in it (the qualified name inside the file, dotted for every language: C++
``ns::Cls::f`` reads ``ns.Cls.f``, a Rust method ``Type.f``). A second definition of a name in one
scope gets ``#2``, ``#3`` (overloads, ``#ifdef`` variants), as in Python. ``qualname`` is the
key after the namespace.

Kinds are the Python loader's: ``module`` (the file), ``class`` (class, struct, union, enum,
interface, trait, impl block, record, Rust inline ``mod``, Go named type: ``props["decl"]``
says which), ``function``, ``method`` (a function directly in a class body, Rust ``impl`` or
``trait``, a Go function with a receiver (its type's child when the file declares the type:
:meth:`Builder.adopt`), or a C++ out-of-line ``Cls::f``). Texts: a function holds its header, its doc
comment and its body (cut at :data:`MAX_TEXT` characters, then its own indentation taken off);
a class its header, doc comment and body with the bodies of the definitions inside left out
(fields, member declarations, method headers); the module its leading doc comment (a licence
header is not one), the names it defines and the code outside any definition (cut likewise).

Edges (targets resolved by the indexer, as for Python): ``contains`` (``ns='key'``);
``imports``, ``calls``, ``inherits`` and ``implements`` with candidate names in ``spec.ns``,
newline-separated, the first that names a node winning (each loader documents its rules).
"""
from __future__ import annotations

import re

from ..types import FLAG_PART, FLAG_TEST, FLAG_VENDORED, EdgeRec, LoadResult, NodeRec
from .clex import Lexed
from .common import MAX_TEXT, dedent, part_key, split_parts
from .langspec import LangSpec, is_generated_path, is_generated_text, is_test_path, is_vendored_path

__all__ = ["Def", "Builder", "CodeLoader", "FieldCalls", "FIELD_PROPS", "MAX_TEXT", "dedent"]

# the props of a ``calls`` edge whose candidates name ``<struct>.<field>.<method>``: a struct
# declared in another file, whose fields the indexer reads (``props["fields"]`` of its node)
FIELD_PROPS = {"via": "field"}

_CODE = re.compile(r"\S")
_LICENSE = re.compile(r"copyright|licen[sc]e|spdx|all rights reserved", re.I)


class Def:
    """One definition found by a scanner. Offsets are into the file text: ``start`` its first
    character (attributes, decorators, annotations, modifiers, ``template<...>`` included;
    comments not), ``end`` one past its last, ``body`` its ``{`` (None when it has none),
    ``name_at`` where its name is (so the header is not taken for a call)."""

    __slots__ = ("kind", "decl", "name", "local", "start", "end", "body", "name_at", "props", "bases",
                 "implements", "test", "parent", "qual", "key", "rec", "children", "data", "rest")

    def __init__(self, kind: str, name: str, start: int, end: int, body: int | None = None,
                 name_at: int = -1, decl: str = "", local: str | None = None, props: dict | None = None):
        self.kind, self.name, self.start, self.end, self.body = kind, name, start, end, body
        self.name_at, self.decl = name_at, decl
        self.local = local or name             # the name path inside the parent ("Cls.f" for C++ Cls::f)
        self.props = props or {}
        self.bases: list[tuple[list[str], int]] = []        # (candidates, offset) per base
        self.implements: list[tuple[list[str], int]] = []
        self.test = False
        self.parent: Def | None = None
        self.qual = self.key = ""
        self.rec: NodeRec | None = None
        self.children: list[Def] = []
        self.data: dict = {}                   # scanner notes (receiver, self type, ...)
        self.rest: int | None = None           # the first of its own lines its text does not hold


def _implementations_first(defs: list[Def]) -> list[Def]:
    """``defs`` in the order their keys are given: an overloaded name's implementation before
    its body-less signatures (TypeScript's ``function f(a: string): void;`` .. ``function f(a)
    {..}``, decl ``signature``), so that it holds the plain key (``js:a.ts:f``; the signatures
    ``#2``, ``#3``) and the name: calls, imports and ``show f`` reach the code. ``defs`` itself
    when no name is so."""
    groups: dict[tuple[int, str], list[int]] = {}
    for i, d in enumerate(defs):
        if d.kind in ("function", "method"):
            groups.setdefault((id(d.parent), d.local), []).append(i)
    order = None
    for idx in groups.values():
        if len(idx) < 2:
            continue
        impl = [i for i in idx if defs[i].decl != "signature"]
        if len(impl) != 1 or impl[0] == idx[0]:
            continue
        order = order or list(defs)
        for slot, i in zip(idx, impl + [i for i in idx if i != impl[0]]):
            order[slot] = defs[i]
    return order or defs


def _held(lines: list[str], before: int) -> int:
    """How many of ``lines``, joined after ``before`` characters and a newline, end within
    :data:`MAX_TEXT` characters (a text ``out + "\\n" + "\\n".join(lines)`` cut there)."""
    n, at = 0, before
    for line in lines:
        at += 1 + len(line)
        if at > MAX_TEXT:
            break
        n += 1
    return n


class FieldCalls(list):
    """Candidates of a call through a field of a struct the file does not declare (Go: another
    file of the package; Rust: another module of the crate): each names
    ``<struct>.<field>.<method>`` (``srv:Server.conns.Close``, ``app.conn.Conn.io.flush``). The
    loader cannot know the field's type; the struct's own file lists it in its node's
    ``props["fields"]`` (:meth:`Builder.field_types`), and the indexer follows it
    (:meth:`kgsearch.indexer.edges.EdgeResolver.resolve_field_calls`)."""


class Builder:
    """Nodes and edges of one file. A language loader subclasses it and provides
    :meth:`aliases` and :meth:`call_candidates` (and emits its imports with :meth:`imports`)."""

    CALLS_IN_TYPES = True        # calls in a class body outside methods count (field initialisers)

    def __init__(self, lx: Lexed, rel: str, spec: LangSpec, warning: str | None = None):
        self.lx, self.rel, self.spec, self.ns = lx, rel.replace("\\", "/"), spec, spec.ns
        self.res = LoadResult()
        if warning:
            self.res.warnings.append(warning)
        self.flags = FLAG_TEST if is_test_path(self.rel, spec) else 0
        if is_vendored_path(self.rel) or is_generated_path(self.rel, spec) or is_generated_text(lx.text[:2000]):
            self.flags |= FLAG_VENDORED
        self.keys: set[str] = set()
        self.lines = lx.text.split("\n")
        self.defs: list[Def] = []
        self.mod = Def("module", self.module_name(), 0, len(lx.text))
        self.mod.key = f"{self.ns}:{self.rel}"
        self.mod.qual = self.rel
        self._imports: dict[str, int] = {}
        self._import_props: dict[str, dict] = {}   # imports edge dst -> its props (a Rust `mod x;`)
        self._next_dup: dict[str, int] = {}   # key -> the next "#n" to try (n keys of one name: n steps, not n^2)
        self._fields: dict[str, dict[str, set[str]]] | None = None    # struct -> field -> types (field_type)
        self.adopted: list[Def] = []            # definitions written at the file's top level, under a type (adopt)

    # ---- per language ------------------------------------------------------------------
    def read_struct_fields(self) -> dict[str, dict[str, set[str]]]:
        """Every struct of the file that declares named fields (:meth:`declares_fields`): name ->
        field -> its declared types, those of all its declarations (:meth:`field_type`)."""
        out: dict[str, dict[str, set[str]]] = {}
        for d in self.defs:
            if d.decl == "struct" and d.body is not None and self.declares_fields(d):
                fields = out.setdefault(d.name, {})
                for name, types in self.struct_fields(d).items():
                    fields.setdefault(name, set()).update(types)
        return out

    def declares_fields(self, d: Def) -> bool:
        """The ``struct`` definition ``d`` has a body of named fields that :meth:`struct_fields`
        reads; none unless the language resolves calls through declared types."""
        return False

    def struct_fields(self, d: Def) -> dict[str, set[str]]:
        """The fields of one ``struct`` ``d`` with their declared types."""
        return {}

    def field_types(self, d: Def) -> dict[str, list[str]]:
        """The fields of the struct ``d`` whose declared type is a named type: field -> the
        type's candidate names (most preferred first), so that a call through the field in
        another file resolves (:class:`FieldCalls`); none unless the language does that."""
        return {}

    def module_name(self) -> str:
        base = self.rel.rsplit("/", 1)[-1]
        return base.split(".", 1)[0] or base

    def field_type(self, typ: str, field: str) -> str | None:
        """The declared type of ``field`` in the file's struct ``typ`` (``None``: no such struct
        or field, or two structs of that name that declare it differently). The fields are read
        once per file (:meth:`read_struct_fields`): read again for every call site, a file of n
        fields and n calls cost n^2 (6.8 s for 2,000 of each)."""
        if self._fields is None:
            self._fields = self.read_struct_fields()
        found = self._fields.get(typ, {}).get(field, ())
        return next(iter(found)) if len(found) == 1 else None

    def aliases(self, d: Def) -> list[tuple]:
        """Names ``d`` answers to in ``self.ns`` besides its key: (name, rank) pairs."""
        return []

    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        return []

    # ---- building ----------------------------------------------------------------------
    def imports(self, dst: str | list[str], at: int) -> None:
        """An ``imports`` edge from the module (``dst``: candidate names, first wins)."""
        if isinstance(dst, list):
            dst = "\n".join(dict.fromkeys(x for x in dst if x))
        if dst:
            self._imports.setdefault(dst, self.lx.line(at))

    def nest(self, defs: list[Def]) -> None:
        """Parents by containment (the innermost definition whose span holds another)."""
        defs.sort(key=lambda d: (d.start, -d.end))
        stack: list[Def] = [self.mod]
        for d in defs:
            while len(stack) > 1 and stack[-1].end <= d.start:
                stack.pop()
            if d.parent is None:
                d.parent = stack[-1]
            d.parent.children.append(d)
            stack.append(d)
        self.defs = defs

    def adopt(self, d: Def, parent: Def) -> None:
        """Make ``d``, written at the file's top level, a member of ``parent`` (a Go method of a
        type declared in the file): its node is ``parent``'s child (a ``contains`` edge from it),
        its name inside the file stays ``d.local`` read under ``parent`` (set it to the member's
        own name), and the file's text still treats it as top-level code (its name listed, its
        body left out)."""
        if d.parent is not None:
            d.parent.children.remove(d)
        d.parent = parent
        parent.children.append(d)
        self.adopted.append(d)

    def build(self, calls: list[tuple[int, list[str]]] | None = None) -> LoadResult:
        lx, res = self.lx, self.res
        mod = self.mod
        mod.rec = NodeRec(key=mod.key, kind="module", name=mod.name, qualname=mod.qual, line_start=1,
                          line_end=max(lx.lines, 1), flags=self.flags, props=dict(mod.props),
                          aliases=[(self.ns, a[0], a[1]) for a in self.aliases(mod)])
        res.nodes.append(mod.rec)
        self.keys.add(mod.key)
        for d in self.defs:
            if d.kind == "class" and d.decl == "struct":
                fields = self.field_types(d)
                if fields:
                    d.props["fields"] = fields
        order = _implementations_first(self.defs)
        for d in order:
            self._node_after_parent(d)
        if order is not self.defs:              # (the nodes in line order again)
            at = {id(d.rec): i for i, d in enumerate(self.defs)}
            res.nodes[1:] = sorted(res.nodes[1:], key=lambda r: at.get(id(r), -1))
        for d in self.defs:
            if d.kind == "class":
                d.rec.text = self._class_text(d)
        mod.rec.text = self._module_text()
        claimed: set[int] = set()               # lines a part holds already
        for d in reversed(self.defs + [mod]):   # (pre-order reversed: the inner definitions first)
            if d.rest is not None:
                self._parts(d, claimed)
        for dst, line in self._imports.items():
            res.edges.append(EdgeRec(mod.key, dst, "imports", self.ns, line=line,
                                     props=dict(self._import_props.get(dst) or {})))
        for d in self.defs:
            for etype, items in (("inherits", d.bases), ("implements", d.implements)):
                for cands, at in items:
                    if cands:
                        res.edges.append(EdgeRec(d.key, "\n".join(dict.fromkeys(cands)), etype, self.ns,
                                                 line=lx.line(at)))
        if calls:
            self._calls(calls)
        return res

    def _node_after_parent(self, d: Def) -> None:
        """The node of ``d``, its parent's first (an adopted method may come before its type)."""
        if d.rec is None:
            if d.parent.rec is None:
                self._node_after_parent(d.parent)
            self._node(d)

    def _node(self, d: Def) -> None:
        p = d.parent
        if d.kind == "function" and p.kind == "class" and p.decl not in ("mod", "namespace"):
            d.kind = "method"
        d.qual = d.local if p is self.mod else f"{p.qual}.{d.local}"
        key = f"{self.ns}:{self.rel}:{d.qual}"
        first = key not in self.keys
        if not first:
            n = self._next_dup.get(key, 2)      # numbers below it are taken (counted from 2 each time,
            while f"{key}#{n}" in self.keys:    # 2,000 definitions of one name cost n^2: 21 s for 60 KB)
                n += 1
            self._next_dup[key] = n + 1
            key = f"{key}#{n}"
        self.keys.add(key)
        d.key = key
        d.test = d.test or p.test
        flags = self.flags | (FLAG_TEST if d.test else 0)
        lx = self.lx
        a, b = lx.line(d.start), lx.line(max(d.start, d.end - 1))
        props = dict(d.props)
        if d.decl and d.decl not in ("function", "class"):
            props["decl"] = d.decl
        text = ""
        if d.kind != "class":
            text, d.rest = self._function_text(d, a, b)
        d.rec = NodeRec(key=key, kind=d.kind, name=d.name, text=text, qualname=f"{self.rel}:{d.qual}",
                        line_start=a, line_end=b, parent=p.key, flags=flags, props=props,
                        aliases=[(self.ns, x[0], x[1]) for x in self.aliases(d)] if first else [])
        self.res.nodes.append(d.rec)
        self.res.edges.append(EdgeRec(p.key, key, "contains", "key", line=lx.line(d.name_at if d.name_at >= 0
                                                                                     else d.start)))

    def _head_lines(self, d: Def, a: int) -> int:
        """Last line of the header (the line of the body's ``{``, else the first)."""
        return self.lx.line(d.body) if d.body is not None else a

    def _function_text(self, d: Def, a: int, b: int) -> tuple[str, int | None]:
        """The text of a function and the first of its lines the text does not hold whole
        (None: it holds them all), where its parts start (:meth:`_parts`)."""
        h = self._head_lines(d, a)
        head = dedent(self.lines[a - 1:h])
        doc = self.lx.doc_before(d.start)
        out = "\n".join(head)
        rest = a if len(out) > MAX_TEXT else h + 1
        if doc:
            out += "\n" + doc
        if h < b and len(out) < MAX_TEXT:
            body, n = [], len(out)
            for line in self.lines[h:min(b, h + MAX_TEXT)]:     # (each line costs a character at least:
                                                                    # never a copy of the rest of the file)
                body.append(line)
                n += len(line) + 1
                if n >= MAX_TEXT:
                    break
            body = dedent(body)
            rest += _held(body, len(out))
            out += "\n" + "\n".join(body)
        return out[:MAX_TEXT], (rest if rest <= b else None)

    def _parts(self, d: Def, claimed: set[int]) -> None:
        """Child nodes (kind ``chunk``, :data:`~kgsearch.types.FLAG_PART`) holding the lines of
        ``d`` from ``d.rest`` on that its text (cut at :data:`MAX_TEXT`) could not: its own
        lines, the definitions inside it left out (their nodes and parts hold them), in parts of
        about :data:`MAX_TEXT` characters (:func:`split_parts`), numbered from 2 (the
        definition's own text is the first). A line an inner definition's part holds already
        (``claimed``: the one line of a minified file, every function's) is not taken again: the
        parts of a file hold each of its lines once at most."""
        rec = d.rec
        end = rec.line_end if d is not self.mod else max(self.lx.lines, 1)
        own = self._outline(d, d.rest, end, d.rest, numbered=True, headers=False,
                            children=(sorted(d.children + self.adopted, key=lambda c: c.start)
                                      if d is self.mod and self.adopted else None))
        own = [p for p in own if p[0] not in claimed]
        claimed.update(p[0] for p in own)
        for n, (first, last, text) in enumerate(split_parts(own), 2):
            key = part_key(rec.key, n, self.keys)
            self.keys.add(key)
            self.res.nodes.append(NodeRec(key=key, kind="chunk", name=rec.name, text=text,
                                          qualname=f"{rec.qualname}{key[len(rec.key):]}", line_start=first,
                                          line_end=last, parent=rec.key, flags=rec.flags | FLAG_PART))
            self.res.edges.append(EdgeRec(rec.key, key, "contains", "key", line=first))

    def _outline(self, d: Def, a: int, b: int, skip_first: int, children: list[Def] | None = None,
                 numbered: bool = False, headers: bool = True) -> list:
        """Lines a..b of ``d`` without the lines of its children's bodies (their headers stay,
        unless ``headers`` is false); ``numbered``: ``(line number, line)`` pairs."""
        lx = self.lx
        gone = []                               # line ranges of the children's bodies
        for c in d.children if children is None else children:
            ca, cb = lx.line(c.start), lx.line(max(c.start, c.end - 1))
            keep = self._head_lines(c, ca) if headers else ca - 1
            if keep < cb:
                gone.append((keep + 1, cb))
        gone.sort()
        keep, i = [], skip_first                # (ranges, not a set of every line gone: nested
        for ga, gb in gone:                     # bodies cost n^2, 60 KB of `mod a {` 8 s)
            if ga > b:
                break
            if ga > i:
                keep.append((i, ga - 1))
            i = max(i, gb + 1)
        if i <= b:
            keep.append((i, b))
        out: list = []
        for x, y in keep:
            out += zip(range(x, y + 1), self.lines[x - 1:y]) if numbered else self.lines[x - 1:y]
        return out

    def _class_text(self, d: Def) -> str:
        """Its header, doc comment and outline (:meth:`_outline`), cut at :data:`MAX_TEXT`; sets
        ``d.rest``, the first outline line the text does not hold whole (None: all held)."""
        lx = self.lx
        a, b = d.rec.line_start, d.rec.line_end
        h = self._head_lines(d, a)
        parts = ["\n".join(dedent(self.lines[a - 1:h]))]
        if len(parts[0]) > MAX_TEXT:
            d.rest = a
        doc = lx.doc_before(d.start)
        if doc:
            parts.append(doc)
        if h < b:
            own = self._outline(d, h + 1, b, h + 1, numbered=True)
            lines = dedent([x for _, x in own])
            if d.rest is None:
                n = _held(lines, len("\n".join(parts)))
                d.rest = own[n][0] if n < len(own) else None
            parts.append("\n".join(lines))
        return "\n".join(parts)[:MAX_TEXT]

    def _module_text(self) -> str:
        lx = self.lx
        doc = self.module_doc()
        tops = self.mod.children
        if self.adopted:                        # (written at the top level: their names, not their bodies)
            tops = sorted(tops + self.adopted, key=lambda c: c.start)
        names = " ".join(dict.fromkeys(c.name for c in tops))
        own = [p for p in self._outline(self.mod, 1, max(lx.lines, 1), 1, tops, numbered=True) if p[1].strip()]
        rest = [x for _, x in own]
        lead = "\n".join(x for x in (doc, names) if x)
        n = _held(rest, len(lead) if lead else -1)
        self.mod.rest = own[n][0] if n < len(own) else None
        return "\n".join(x for x in (doc, names, "\n".join(rest)) if x)[:MAX_TEXT]

    def module_doc(self) -> str:
        """The first comment block before any code that is not a licence header."""
        lx = self.lx
        m = _CODE.search(lx.code)
        first_code = m.start() if m else len(lx.code)
        blocks: list[tuple[int, int]] = []
        for s, e in lx.comments:
            if s >= first_code:
                break
            if blocks and lx.text.count("\n", blocks[-1][1], s) <= 1:
                blocks[-1] = (blocks[-1][0], e)
            else:
                blocks.append((s, e))
        for s, e in blocks:
            doc = lx.doc_before(e)
            if doc and not _LICENSE.search(doc[:400]):
                return doc
        return ""

    def _calls(self, calls: list[tuple[int, list[str]]]) -> None:
        """Each call site to the innermost definition around it, then its candidates."""
        defs = self.defs
        stack: list[Def] = [self.mod]
        i, n = 0, len(defs)
        seen: set[tuple[str, str]] = set()
        edges, line, ns = self.res.edges, self.lx.line, self.ns
        done: set[tuple[int, tuple]] = set()         # (scope, name chain) already turned into an edge
        in_types, at_top = self.CALLS_IN_TYPES, self.calls_at_top()
        for pos, parts in calls:
            while i < n and defs[i].start <= pos:
                d = defs[i]
                while len(stack) > 1 and stack[-1].end <= d.start:
                    stack.pop()
                stack.append(d)
                i += 1
            while len(stack) > 1 and stack[-1].end <= pos:
                stack.pop()
            scope = stack[-1]
            if scope.kind == "class" and not in_types or scope.kind == "module" and not at_top:
                continue
            mk = (id(scope), tuple(parts))
            if mk in done:
                continue
            done.add(mk)
            cands = self.call_candidates(scope, parts)
            if not cands:
                continue
            dst = "\n".join(dict.fromkeys(cands))
            if (scope.key, dst) in seen:
                continue
            seen.add((scope.key, dst))
            edges.append(EdgeRec(scope.key, dst, "calls", ns, line=line(pos),
                                 props=dict(FIELD_PROPS) if isinstance(cands, FieldCalls) else {}))

    def calls_at_top(self) -> bool:
        return True


class CodeLoader:
    """A registry entry (``NAME``, ``EXTENSIONS``, ``load``) for one language of a loader module
    that serves several (``jscode``: JavaScript and TypeScript; ``ccode``: C and C++)."""

    def __init__(self, spec: LangSpec, load):
        self.NAME, self.EXTENSIONS, self.spec, self._load = spec.name, spec.extensions, spec, load

    def load(self, path, rel: str, opts) -> LoadResult:
        return self._load(path, rel, opts, self.spec)
