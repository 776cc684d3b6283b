"""Go source: files, named types, functions and methods, and their edges.

Nodes (see :mod:`kgsearch.ingest.codemodel` for keys, kinds and texts): the file (``module``);
every named type of a ``type`` declaration or group (``class``; ``decl`` = ``struct``,
``interface`` or ``type``); functions; methods (``func (r *T) M``: qualified ``T.M``; children
of ``T`` when the file declares ``T`` at its top level, as a method in a class body of other
languages, so that ``contains`` leads from the type to them; else, ``T`` being declared in
another file of the package, children of the file: a loader reads one file, and a parent in
another file would go stale when that file changes alone; ``show T`` lists those by their
receiver); the methods an interface lists (body-less ``method`` nodes inside it). Doc comments are the comments right above. ``*_test.go`` files and
``testdata/`` are tests; ``// Code generated ... DO NOT EDIT.`` files are marked generated.

Names (``ns='go'``): a package is its folder (``internal/transport``; ``.`` for the root), and
every definition answers to ``<folder>:<qualname>`` (``internal/transport:Server.Close``); a
file answers to its folder (the file named after the folder, or ``doc.go``, first). Test
files answer a rank lower, so a name resolves to the package's own code first.

Edges:

* ``imports``: the file -> the imported package's folder. An import path under the module
  path of the nearest ``go.mod`` maps to its folder exactly; without a ``go.mod``, a path whose
  first element is a domain (``github.com/x/y/z``) is tried as a folder under the root whole, then
  without its leading elements (``x/y/z``, ``y/z``, ``z``: a GOPATH-style tree, or a checkout of
  ``x/y``), and the nearest import comment up the folders (``package grpc // import
  "google.golang.org/grpc"``) stands for a module line, so a checkout's root package resolves
  too; standard-library paths (``net/http``) are never folders of the tree.
* ``calls``: ``f()`` -> the package's ``f``; ``pkg.F()`` -> ``F`` in the imported package
  (and a composite literal ``T{..}``, ``&pkg.T{..}`` -> the type, as a Python ``Cls()`` call)
  (its import name: the alias, else the path's last element without a ``go-`` prefix or a
  ``.vN`` suffix); ``r.M()`` with ``r`` the method's receiver -> ``T.M``. Methods on values whose
  type is declared: ``r.field.M()`` and ``x.field.M()`` (the field's type in the ``struct``'s
  declaration, in the same file; an embedded field by its type's name; a ``struct`` declared in
  another file of its package, or in another package, is read by the indexer: the call names
  ``<folder>:T.field.M`` (:class:`~kgsearch.ingest.codemodel.FieldCalls`), and each top-level
  struct's node lists its fields' types, ``props["fields"]``) and ``x.M()`` for a parameter ``x T``, a
  local ``var x T`` or ``x := T{..}`` (``&pkg.T{..}``: a composite literal's type) -> ``T.M``
  (``*T``, ``pkg.T``, ``T[K]`` alike). A name declared twice with other types, or also bound by
  ``:=`` to anything else (which may shadow it), a field two types of that name
  declare differently, slices, maps, channels and function types give no edge. Not resolved:
  calls on other values (``x := f()``: no inference), builtins, function values, methods
  promoted from embedded fields, chains of two fields (``r.a.b.M()``).
* ``inherits``: a struct or an interface -> the types it embeds.
* ``member_of``: a method whose receiver type the file does not declare -> ``<folder>:T`` (the
  type in another file of the package; the indexer picks among its nodes).
"""
from __future__ import annotations

import bisect
import os
import posixpath
import re
from pathlib import Path

from .clex import lex
from ..types import FLAG_TEST, MEMBER_OF, EdgeRec
from .codemodel import Builder, Def, FieldCalls
from .codescan import call_sites, find_up, read_source, split_chain
from .langspec import GO

NAME = "go"
EXTENSIONS = GO.extensions

__all__ = ["NAME", "EXTENSIONS", "load"]

_PACKAGE = re.compile(r"\bpackage\s+(\w+)")
_IMPORT = re.compile(r"(?m)^[ \t]*import\b[ \t]*(\()?")
_SPEC = re.compile(r'(?:([\w.]+)[ \t]+)?"( *)"')
_FUNC = re.compile(r"(?m)^[ \t]*func\b[ \t]*(?:\((?P<recv>[^()]*)\)[ \t]*)?(?P<name>\w+)[ \t]*(?:\[[^\]\n]*\][ \t]*)?\(")
_TYPE = re.compile(r"(?m)^[ \t]*type\b[ \t]*(\()?")
_TYPE_SPEC = re.compile(r"[ \t]*(\w+)[ \t]*(?:\[[^\]\n]*\w[^\]\n]*\][ \t]*(?=[\w*(\[{]))?(=[ \t]*)?(struct|interface)?\b")
_RECV = re.compile(r"^\s*(?:(\w+)\s+)?\*?\s*(\w+)")
_BRACE_OR_EOL = re.compile(r"[{\n(]")
_WORD_BEFORE = re.compile(r"(\w+)\s*$")
_EMBED = re.compile(r"(?m)^[ \t]*\*?([\w.]+)[ \t]*(?:\"[ \t]*\")?[ \t]*$")
_IFACE_METHOD = re.compile(r"(?m)^[ \t]*(\w+)[ \t]*\(")
_GOMOD = re.compile(r"(?m)^\s*module\s+\"?([^\s\"]+)")
_BUILTINS = frozenset("append cap clear close complex copy delete imag len make max min new panic print println real "
                      "recover bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune "
                      "string uint uint8 uint16 uint32 uint64 uintptr any comparable func if for switch return go "
                      "defer select case range chan map struct interface type var const package import else".split())
_GOMOD_CACHE: dict[str, tuple[int, str]] = {}
# a package clause's import comment (``package grpc // import "google.golang.org/grpc"``): the
# folder's import path, as GOPATH-era Go checked it (read from the file's head, not lexed)
_IMPORT_COMMENT = re.compile(r'(?m)^package[ \t]+\w+[ \t]*//[ \t]*import[ \t]+"([^"\n]+)"')
_IMPORT_COMMENT_CACHE: dict[str, tuple[tuple, str | None]] = {}   # folder -> (its signature, path)
# a composite literal's type (gofmt writes ``T{``, ``&pkg.T{``, ``[]T{``; a block's ``{`` follows a space)
_LITERAL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)\{")    # the reference of literal_types
# declared types: a named type, through pointers (``*pkg.T``, ``T[K]``); not []T, map, chan, func
_DECL_TYPE = re.compile(r"\s*\**\s*((?:\w+\.)?\w+)\s*(?:\[|$)")
_FIELD_LINE = re.compile(r"(?m)^[ \t]*(\w+(?:[ \t]*,[ \t]*\w+)*)[ \t]+([^\s\"][^\n\"]*?)[ \t]*(?:\"[ \t]*\")?[ \t]*$")
_VAR = re.compile(r"\bvar[ \t]+(\w+)[ \t]*([^=\n;]*)")
_SHORT = re.compile(r"(\w+(?:[ \t]*,[ \t]*\w+)*)[ \t]*:=")   # the reference of short_names
_SHORT_BACK = re.compile(r"[ \t]*(\w+(?:[ \t]*,[ \t]*\w+)*)")   # _SHORT read backwards from its ":="
_FUNC_LIT = re.compile(r"\bfunc[ \t]*\(")
# the value of a ``:=`` that is a composite literal of a named type: ``T{``, ``&pkg.T{``, ``T[K]{``
_LITERAL_VALUE = re.compile(r"[ \t]*&?[ \t]*((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)(?:\[[^\]\n]*\])?\{")


def _type_name(t: str) -> str | None:
    """The named type a declared type reads (``*pkg.T`` -> ``pkg.T``; ``[]T``, ``map[K]V``,
    ``chan T``, ``func()`` -> ``None``)."""
    m = _DECL_TYPE.match(t)
    if m is None or m.group(1).split(".")[0] in _BUILTINS:
        return None
    return m.group(1)


def _params(s: str) -> list[tuple[str, str]]:
    """(name, type) of a parameter list's text (``a, b int, c *T`` -> a int, b int, c *T);
    ``[]`` for an unnamed list (``int, string``)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            pieces.append(s[start:i].strip())
            start = i + 1
    pieces.append(s[start:].strip())
    split = [re.match(r"(\w+)\s+(\S.*)$", p, re.S) for p in pieces]
    if not any(m and m.group(1) not in _BUILTINS for m in split):
        return []
    out, typ = [], None
    for p, m in zip(reversed(pieces), reversed(split)):
        if m and m.group(1) not in _BUILTINS:
            typ = m.group(2)
            out.append((m.group(1), typ))
        elif re.fullmatch(r"\w+", p) and typ:
            out.append((p, typ))
    return out


def _module_path(path, root: str) -> tuple[str, str] | None:
    """(module path, its folder relative to the root) from the nearest go.mod."""
    f = find_up(path, root, ("go.mod",))
    if f is None:
        return None
    try:
        st = f.stat()
        got = _GOMOD_CACHE.get(str(f))
        if got is None or got[0] != st.st_mtime_ns:
            got = _GOMOD_CACHE[str(f)] = (st.st_mtime_ns, f.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    m = _GOMOD.search(got[1])
    if not m:
        return None
    rel_dir = posixpath.relpath(f.parent.as_posix(), root) if root else "."
    return m.group(1), ("" if rel_dir == "." else rel_dir)


def _folder_import_path(folder: Path) -> str | None:
    """The import path a folder's package clause gives in an import comment (the first
    non-test ``.go`` file with one, in name order), ``None`` without one. Kept per folder while
    its listing (the folder's mtime) and the file that had it stay as they were: a few ``stat``
    calls a file loaded, not a read of every file of its folders."""
    key = str(folder)
    try:
        dir_mtime = folder.stat().st_mtime_ns
        got = _IMPORT_COMMENT_CACHE.get(key)
        if got is not None and got[0][0] == dir_mtime and (
                got[0][1] is None or (folder / got[0][1]).stat().st_mtime_ns == got[0][2]):
            return got[1]
        names = sorted(e.name for e in os.scandir(folder)
                       if e.name.endswith(".go") and not e.name.endswith("_test.go") and e.is_file())
    except OSError:
        return None
    found, sig = None, (dir_mtime, None, 0)
    for name in names:
        try:
            with open(folder / name, encoding="utf-8", errors="replace") as f:
                head = f.read(16384)
                m = _IMPORT_COMMENT.search(head)
                if m:
                    found, sig = m.group(1).strip(), (dir_mtime, name, os.fstat(f.fileno()).st_mtime_ns)
                    break
        except OSError:
            continue
    _IMPORT_COMMENT_CACHE[key] = (sig, found)
    return found


def _comment_module(path, root: str) -> tuple[str, str] | None:
    """Without a go.mod: (an import path, its folder relative to the root) from the nearest
    folder at or above ``path``'s, up to ``root``, whose package clause has an import comment,
    taken up the folders its path's last elements name (``metadata/`` importable as
    ``google.golang.org/grpc/metadata``: the root is ``google.golang.org/grpc``). It stands for a
    module line: the root package of a GOPATH checkout had no folder to resolve to."""
    d = Path(path).parent
    top = Path(root)
    for _ in range(64):
        ipath = _folder_import_path(d)
        if ipath:
            rel_dir = posixpath.relpath(d.as_posix(), top.as_posix())
            ip, fd = ipath.strip("/").split("/"), ([] if rel_dir == "." else rel_dir.split("/"))
            while len(ip) > 1 and fd and ip[-1] == fd[-1]:    # metadata/ is .../grpc/metadata:
                ip.pop()                                     # the folders above are .../grpc's
                fd.pop()
            return "/".join(ip), "/".join(fd)
        if d == top or d.parent == d or top not in d.parents:
            return None
        d = d.parent
    return None


def _import_name(ipath: str) -> str:
    last = ipath.rstrip("/").rsplit("/", 1)[-1]
    last = re.sub(r"\.v\d+$", "", last)
    if re.fullmatch(r"v\d+", last) and "/" in ipath:
        last = ipath.rstrip("/").rsplit("/", 2)[-2]
    last = re.sub(r"^go-", "", last)
    return re.sub(r"[^\w]", "_", last)


class _Go(Builder):
    CALLS_IN_TYPES = False

    def __init__(self, lx, rel, spec, warning, opts, path):
        super().__init__(lx, rel, spec, warning)
        d = posixpath.dirname(self.rel)
        self.dir = d or "."
        self.gomod = _module_path(path, opts.root) if opts.root else None
        # without one, an import comment up the folders stands for it (other paths still tried
        # GOPATH-style)
        self.commented = self.gomod is None and opts.root and _comment_module(path, opts.root) or None
        self.pkgs: dict[str, list[str]] = {}        # import name -> candidate folders
        self.test_rank = 0
        self._types: set[str] | None = None          # the file's top-level type names (_declared)

    def aliases(self, d: Def) -> list[tuple]:
        if d is self.mod:
            base = self.rel.rsplit("/", 1)[-1][:-3]
            last = self.dir.rsplit("/", 1)[-1]
            return [(self.dir, self.test_rank or (0 if base in (last, "doc") else 1))]
        return [(f"{self.dir}:{d.qual}", self.test_rank)]

    # ---- imports -------------------------------------------------------------------------
    def _folders(self, ipath: str) -> list[str]:
        if self.gomod:
            mpath, mdir = self.gomod
            if ipath == mpath or ipath.startswith(mpath + "/"):
                rest = ipath[len(mpath):].strip("/")
                return [posixpath.join(mdir, rest) if mdir and rest else (mdir or rest or ".")]
            return [ipath]
        if self.commented:
            mpath, mdir = self.commented
            if ipath == mpath or ipath.startswith(mpath + "/"):
                rest = ipath[len(mpath):].strip("/")
                return [posixpath.join(mdir, rest) if mdir and rest else (mdir or rest or ".")]
        parts = ipath.split("/")
        if "." not in parts[0]:                  # the standard library ("net/http"): never a folder here
            return [ipath]
        return ["/".join(parts[i:]) for i in range(len(parts))]

    def scan_imports(self) -> None:
        lx, code, text = self.lx, self.lx.code, self.lx.text
        for m in _IMPORT.finditer(code):
            if m.group(1):
                end = lx.pairs.get(m.end() - 1, len(code))
                specs = _SPEC.finditer(code, m.end(), end)
            else:
                specs = [x for x in [_SPEC.match(code, m.end())] if x]
            for s in specs:
                ipath = text[s.start(2):s.end(2)]
                alias = s.group(1)
                if not ipath:
                    continue
                folders = self._folders(ipath)
                self.imports(folders, s.start())
                if alias not in ("_", "."):
                    self.pkgs[alias or _import_name(ipath)] = folders

    # ---- definitions ---------------------------------------------------------------------
    def _body_after(self, at: int) -> int | None:
        """The ``{`` of a body after a signature's parameters, on the signature's last line."""
        code, pairs = self.lx.code, self.lx.pairs
        while True:
            m = _BRACE_OR_EOL.search(code, at)
            if m is None or m.group() == "\n":
                return None
            c = m.start()
            if m.group() == "(":
                at = pairs.get(c, len(code)) + 1
                continue
            w = _WORD_BEFORE.search(code, max(0, c - 16), c)
            if w and w.group(1) in ("interface", "struct"):
                at = pairs.get(c, len(code)) + 1
                continue
            return c

    def _eol(self, at: int) -> int:
        e = self.lx.code.find("\n", at)
        return len(self.lx.code) if e < 0 else e

    def scan(self) -> list[Def]:
        code, pairs = self.lx.code, self.lx.pairs
        defs: list[Def] = []
        for m in _FUNC.finditer(code):
            close = pairs.get(m.end() - 1, len(code))
            body = self._body_after(close + 1)
            end = pairs.get(body, len(code)) + 1 if body is not None else self._eol(close)
            name, recv = m.group("name"), m.group("recv")
            start = m.start() + len(m.group()) - len(m.group().lstrip())
            if recv is not None:
                r = _RECV.match(recv)
                rtype = r.group(2) if r else ""
                d = Def("method", name, start, end, body, m.start("name"), "func", f"{rtype}.{name}" if rtype else name)
                d.data["recv"], d.data["type"] = (r.group(1) if r else None), rtype
            else:
                d = Def("function", name, start, end, body, m.start("name"), "func")
            d.data["params"] = (m.end(), close)
            defs.append(d)
        for m in _TYPE.finditer(code):
            if m.group(1):
                gend = pairs.get(m.end() - 1, len(code))
                at = m.end()
                while at < gend:
                    s = _TYPE_SPEC.match(code, at)
                    if s is None or s.end() > gend:
                        nl = code.find("\n", at, gend)
                        if nl < 0:
                            break
                        at = nl + 1
                        continue
                    d = self._type_spec(s, s.start(1), gend)
                    defs.append(d)
                    at = max(d.end, s.end())
            else:
                s = _TYPE_SPEC.match(code, m.end())
                if s:
                    defs.append(self._type_spec(s, m.start() + len(m.group()) - len(m.group().lstrip()), len(code)))
        self.nest([d for d in defs if d.name != "_"] + self._iface_methods(defs))
        self._adopt_methods()
        return defs

    def _adopt_methods(self) -> None:
        """A method whose receiver type the file declares (at its top level) becomes that type's
        member, as a method in a class body of other languages: ``T.M`` stays its name."""
        types: dict[str, Def] = {}
        for d in self.mod.children:
            if d.kind == "class":
                types.setdefault(d.name, d)
        for d in [c for c in self.mod.children if c.kind == "method"]:
            t = types.get(d.data.get("type") or "")
            if t is not None:
                self.adopt(d, t)
                d.local = d.name

    def _type_spec(self, s: re.Match, start: int, limit: int) -> Def:
        code, pairs = self.lx.code, self.lx.pairs
        kw = s.group(3)
        body = None
        if kw:
            b = code.find("{", s.end(), limit)
            nl = code.find("\n", s.end(), limit)
            body = b if b >= 0 and (nl < 0 or b < nl) else None
        if body is not None:
            end = pairs.get(body, len(code)) + 1
        else:
            end = self._eol(s.end())
            # a type that runs on, as func(...) or a bracketed list, ends after its brackets
            seg = code[s.end():end]
            for ch in "({[":
                i = seg.find(ch)
                if i >= 0 and pairs.get(s.end() + i, 0) > end:
                    end = self._eol(pairs[s.end() + i])
        d = Def("class", s.group(1), start, min(end, limit) if limit < len(code) else end, body, s.start(1),
                kw or ("type" if not s.group(2) else "alias"))
        if body is not None:
            inner = code[body + 1:pairs.get(body, len(code))]
            for e in _EMBED.finditer(inner):
                d.bases.append((self._type_candidates(e.group(1)), body + 1 + e.start(1)))
        return d

    def _iface_methods(self, defs: list[Def]) -> list[Def]:
        out = []
        code = self.lx.code
        for d in defs:
            if d.decl != "interface" or d.body is None:
                continue
            close = self.lx.pairs.get(d.body, len(code))
            for m in _IFACE_METHOD.finditer(code, d.body + 1, close):
                pclose = self.lx.pairs.get(m.end() - 1, close)
                e = self._eol(pclose)
                r = code.find("(", pclose + 1, e)
                if r >= 0:
                    e = self._eol(self.lx.pairs.get(r, e))
                out.append(Def("function", m.group(1), m.start(1), min(e, close), None, m.start(1), "func"))
        return out

    def _type_candidates(self, name: str) -> list[str]:
        if "." in name:
            pkg, _, t = name.partition(".")
            return [f"{f}:{t}" for f in self.pkgs.get(pkg, [])]
        return [f"{self.dir}:{name}"]

    # ---- declared types --------------------------------------------------------------------
    def _vars(self, fn: Def) -> dict[str, str | None]:
        """A function's names with their declared types (parameters, ``var x T``, ``x := T{..}``,
        function literals' parameters); ``None`` where a name is declared twice with other types
        or also bound by ``:=`` to other than a composite literal of its type."""
        got = fn.data.get("vars")
        if got is not None:
            return got
        code, pairs = self.lx.code, self.lx.pairs
        out: dict[str, str | None] = {}

        def bind(name: str, typ: str | None) -> None:
            typ = re.sub(r"\s+", " ", typ).strip() if typ else None
            out[name] = None if name in out and out[name] != typ else typ
        p = fn.data.get("params")
        if p:
            for name, typ in _params(code[p[0]:p[1]]):
                bind(name, typ)
        if fn.body is not None:
            lo, hi = fn.body, fn.end
            for m in _VAR.finditer(code, lo, hi):
                bind(m.group(1), m.group(2).strip() or None)
            for names, at in short_bindings(code, lo, hi):
                # `x := T{..}` / `x := &pkg.T{..}`: a composite literal's type is the value's
                lit = _LITERAL_VALUE.match(code, at) if "," not in names else None
                typ = lit.group(1) if lit and lit.group(1) not in _BUILTINS else None
                for name in re.split(r"[ \t]*,[ \t]*", names):
                    bind(name, typ)
            for m in _FUNC_LIT.finditer(code, lo, hi):
                for name, typ in _params(code[m.end():pairs.get(m.end() - 1, m.end())]):
                    bind(name, typ)
        fn.data["vars"] = out
        return out

    def declares_fields(self, d: Def) -> bool:
        """Every ``struct`` type (an embedded field under its type's name; fields of nested
        anonymous structs left out)."""
        return True

    def struct_fields(self, d: Def) -> dict[str, set[str]]:
        """The fields of one ``struct`` type ``d`` with their declared types (kept on ``d``)."""
        got = d.data.get("fields")
        if got is not None:
            return got
        code, pairs = self.lx.code, self.lx.pairs
        fields: dict[str, set[str]] = {}
        d.data["fields"] = fields
        if d.decl != "struct" or d.body is None:
            return fields
        close = pairs.get(d.body, d.end)
        starts, ends = [], []                  # the nested brackets' spans, in order
        o = d.body + 1
        while o < close:
            if code[o] in "{(" and o in pairs:
                starts.append(o)
                ends.append(pairs[o])
                o = pairs[o]                   # (brackets inside it are inside it)
            o += 1

        def nested(at: int) -> bool:
            i = bisect.bisect_left(starts, at) - 1
            return i >= 0 and starts[i] < at < ends[i]

        for m in _FIELD_LINE.finditer(code, d.body + 1, close):
            if not nested(m.start()):
                typ = re.sub(r"\s+", " ", m.group(2)).strip()
                for name in re.split(r"[ \t]*,[ \t]*", m.group(1)):
                    fields.setdefault(name, set()).add(typ)
        for e in _EMBED.finditer(code, d.body + 1, close):
            if not nested(e.start()):
                fields.setdefault(e.group(1).rsplit(".", 1)[-1], set()).add(e.group(1))
        return fields

    def field_types(self, d: Def) -> dict[str, list[str]]:
        """A top-level ``struct``'s fields of one named type: field -> the type's candidate
        names (``srv:Conn``, ``pricing:Rule`` for ``*pricing.Rule``), for calls through the
        field from the package's other files (:class:`~kgsearch.ingest.codemodel.FieldCalls`)."""
        if d.parent is not self.mod:
            return {}
        out = {}
        for name, types in self.struct_fields(d).items():
            if len(types) == 1:
                cands = self._type_of(next(iter(types)))
                if cands:
                    out[name] = cands
        return out

    def _type_of(self, typ: str) -> list[str]:
        """Candidate names of the named type a declared type reads (``*pkg.T`` -> ``<pkg's
        folders>:T``; ``[]T``, maps, channels, builtins -> none)."""
        t = _type_name(typ)
        if not t:
            return []
        pkg, _, name = t.rpartition(".")
        return [f"{f}:{name}" for f in self.pkgs.get(pkg, [])] if pkg else [f"{self.dir}:{name}"]

    def _method_of(self, typ: str | None, method: str) -> list[str]:
        return [f"{t}.{method}" for t in self._type_of(typ)] if typ else []

    def _through_field(self, typ: str, field: str, method: str) -> list[str]:
        """``v.field.method()`` for ``v`` of the declared type ``typ``: through the field's type
        when the file declares the struct, else (a struct in another file of its package, or of
        another package) :class:`FieldCalls` naming ``<struct>.<field>.<method>``."""
        t = _type_name(typ)
        if not t:
            return []
        if "." not in t and t in self._declared():
            return self._method_of(self.field_type(t, field), method)
        return FieldCalls(f"{c}.{field}.{method}" for c in self._type_of(t))

    def _declared(self) -> set[str]:
        """The names of the file's top-level types."""
        if self._types is None:
            self._types = {d.name for d in self.mod.children if d.kind == "class"}
        return self._types

    # ---- calls -----------------------------------------------------------------------------
    def call_candidates(self, scope: Def, parts: list[str]) -> list[str]:
        head = parts[0]
        if len(parts) == 1:
            return [] if head in _BUILTINS else [f"{self.dir}:{head}"]
        typed = scope.kind != "class" and scope.kind != "module"
        recv = scope.data.get("recv")
        if len(parts) == 3 and typed and recv and head == recv and scope.data.get("type"):
            return self._through_field(scope.data["type"], parts[1], parts[2])
        if len(parts) == 3 and typed and head != recv and self._vars(scope).get(head):
            return self._through_field(self._vars(scope)[head], parts[1], parts[2])
        if len(parts) != 2:
            return []
        if typed and head != recv and self._vars(scope).get(head):
            return self._method_of(self._vars(scope)[head], parts[1])     # a typed name shadows a package
        if head in self.pkgs:
            return [f"{f}:{parts[1]}" for f in self.pkgs[head]]
        recv = scope.data.get("recv")
        if recv and head == recv and scope.data.get("type"):
            return [f"{self.dir}:{scope.data['type']}.{parts[1]}"]
        return []


_LITERAL_NAME = re.compile(r"(?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*")


def literal_types(code: str) -> list[tuple[int, str]]:
    """``(offset, name)`` of every ``_LITERAL.finditer(code)`` match (a composite literal's
    type), found from each ``{`` backwards: the forward pattern is tried at every character, and
    a file has a ``{`` every 150 characters. The lookbehind ``(?<![\\w.])`` makes a match start
    where the run of word characters and dots before its ``{`` starts, so the match is that
    whole run or none."""
    out = []
    j = code.find("{")
    while j >= 0:
        k = j
        while k and ((c := code[k - 1]).isalnum() or c == "_" or c == "."):   # (\w is isalnum or _)
            k -= 1
        if k < j and _LITERAL_NAME.fullmatch(code, k, j):
            out.append((k, code[k:j]))
        j = code.find("{", j + 1)
    return out


def short_names(code: str, lo: int, hi: int) -> list[str]:
    """Group 1 of every ``_SHORT.finditer(code, lo, hi)`` match (the names a ``:=`` binds), in
    order, found from each ``:=`` backwards: the forward pattern is tried at every character of
    a body (half of the loader's time on grpc-go), the names end where ``:=`` is. The longest
    backward match is the forward scan's leftmost one: names, commas and blanks only, so the
    match can neither reach into an earlier ``:=`` nor start before ``lo``."""
    return [names for names, _ in short_bindings(code, lo, hi)]


def short_bindings(code: str, lo: int, hi: int) -> list[tuple[str, int]]:
    """:func:`short_names` with the offset right after each one's ``:=``."""
    out = []
    i = code.find(":=", lo, hi)
    while i >= 0:
        width = 64
        while True:
            a = max(lo, i - width)
            m = _SHORT_BACK.match(code[a:i][::-1])
            if m is None or m.end() < i - a or a == lo:
                break
            width *= 8                      # (the names reach the window's edge: look further)
        if m is not None:
            out.append((m.group(1)[::-1], i + 2))
        i = code.find(":=", i + 2, hi)
    return out


def load(path, rel: str, opts, spec=GO):
    text, warning = read_source(path)
    lx = lex(text, "go")
    b = _Go(lx, rel, spec, warning, opts, path)
    m = _PACKAGE.search(lx.code)
    if m:
        b.mod.props["package"] = m.group(1)
        if m.group(1).endswith("_test"):
            b.flags |= FLAG_TEST
    b.test_rank = 5 if b.flags & FLAG_TEST else 0
    b.scan_imports()
    b.scan()
    calls = [(at, split_chain(raw)) for at, raw in call_sites(lx.code, {d.name_at for d in b.defs})]
    # a composite literal builds a value of its type, as a Python class call does: a calls edge
    calls += [(at, name.split(".")) for at, name in literal_types(lx.code)]
    calls.sort(key=lambda c: c[0])
    res = b.build(calls)
    for d in b.defs:            # a method of a type another file of the package declares: member_of it
        if d.kind == "method" and d.parent is b.mod and d.data.get("type"):
            res.edges.append(EdgeRec(d.key, f"{b.dir}:{d.data['type']}", MEMBER_OF, "go", line=lx.line(d.name_at)))
    return res
