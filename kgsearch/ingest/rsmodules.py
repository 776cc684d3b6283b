"""Rust's module system, for the Rust scanner (:mod:`kgsearch.ingest.rscode`): paths as written
(``crate::``, ``self::``, ``super::``, ``Self::``, names bound by ``use``, globs), ``use`` trees
(the names they bind, their ``imports`` edges) and ``mod x;`` declarations (the file each names,
where rustc looks for it).

:class:`RustModules` is the Rust builder's base: it reads the state the builder sets up per file
(``crate``, ``modpath``, ``is_root``, ``uses``, ``globs``, ``extern_uses``, ``modq()``).
"""
from __future__ import annotations

import posixpath
import re

from .codemodel import Builder, Def
from .codescan import find_end, free
from .rspaths import expand_use

__all__ = ["EXTERN_ROOTS", "RustModules"]

_USE = re.compile(r"use\s+")
# the standard library and its prelude: never in the tree
EXTERN_ROOTS = frozenset("std core alloc Some None Ok Err Box Vec String Option Result Iterator IntoIterator "
                         "ExactSizeIterator DoubleEndedIterator Extend FromIterator From Into TryFrom TryInto AsRef "
                         "AsMut Default Clone Copy Debug Display Drop Deref DerefMut Eq PartialEq Ord PartialOrd Hash "
                         "Send Sync Sized Unpin Fn FnMut FnOnce ToString ToOwned Borrow".split())


class RustModules(Builder):
    # ---- paths -------------------------------------------------------------------------
    def _mods_of(self, scope: Def) -> list[str]:
        """The inline modules around ``scope`` (their names), outermost first."""
        out = []
        d = scope
        while d is not None and d is not self.mod:
            if d.decl == "mod":
                out.append(d.name)
            d = d.parent
        return out[::-1]

    def resolve_path(self, parts: list[str], scope: Def, member: bool = False) -> list[str]:
        """Candidate dotted names for a path as written (``crate::a::B``, ``super::x``, ``B``);
        ``member``: a member's name will follow each (a type's, for its methods), so that
        ``c + ".f"`` for each candidate ``c`` are the candidates of the path with ``f``."""
        if not parts:
            return []
        here = self.modpath + self._mods_of(scope)
        head = parts[0]
        if head in ("crate", "$crate"):          # $crate: in a macro, the crate that defines it
            return [".".join([self.crate] + parts[1:])]
        if head in ("self", "super"):
            base = list(here)
            rest = parts
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super" and base:
                    base.pop()
                rest = rest[1:]
            return [".".join([self.crate] + base + rest)]
        if head == "Self":
            t = self._self_type(scope)
            return [".".join([self.crate] + here + [t] + parts[1:])] if t else []
        out = []
        if head in self.uses:
            out += [f"{c}.{'.'.join(parts[1:])}" if len(parts) > 1 else c for c in self.uses[head]]
        out.append(".".join([self.crate] + here + parts))
        out += [".".join(g + parts) for g in self.globs]
        if len(parts) > 1 or member:
            out.append(".".join(parts))
            out.append(".".join([self.crate] + parts))
        return out

    def _self_type(self, scope: Def) -> str | None:
        d = scope
        while d is not None and d is not self.mod:
            if d.decl in ("impl", "trait", "struct", "enum", "union"):
                return d.name
            d = d.parent
        return None

    # ---- use / mod ---------------------------------------------------------------------
    def scan_uses(self) -> None:
        code = self.lx.code
        inside = -1                                  # the end of the last use declaration read
        for m in _USE.finditer(code):
            if m.start() < inside or not free(code, m.start(), "$.:"):
                # a `use` inside another's tree is no declaration (Rust has none there); read
                # again, each cost the rest of a file with no `;`: `use use ...` was n^2 (60 KB: 19 s)
                continue
            end = find_end(code, self.lx.pairs, m.end(), ";")
            inside = end
            tree = re.sub(r"\s+", " ", code[m.end():end]).replace(" :: ", "::").replace(":: ", "::").strip()
            tree = re.sub(r"\s*([{},])\s*", r"\1", tree)
            for path, bound in expand_use(tree):
                if path[0] in EXTERN_ROOTS:
                    if bound:
                        self.extern_uses.add(bound)
                    continue
                cands = self.resolve_path(path, self._scope_at(m.start()))
                if bound is None:
                    self.globs.append(cands[0].split(".") if cands else path)
                    if cands and cands[0] != self.modq():
                        self.imports(cands, m.start())
                    continue
                self.uses.setdefault(bound, cands)
                self.imports(cands + [c.rpartition(".")[0] for c in cands if "." in c], m.start())

    def _scope_at(self, pos: int) -> Def:
        """The innermost inline module around ``pos`` (the file's module when none)."""
        best = self.mod
        for d in self.defs:
            if d.decl == "mod" and d.start < pos < d.end:
                best = d
        return best

    def mod_decl(self, name: str, at: int, path: str | None = None, test: bool = False) -> None:
        """``mod name;`` at ``at`` -> its file where Rust looks for it: beside a crate root or a
        mod.rs, under ``src/a/`` for ``src/a.rs``; inside inline modules, under their folders
        (``tests/t.rs``: ``mod support { mod panic; }`` -> ``tests/support/panic.rs``, as rustc
        reads it). ``#[path = "p"]`` names the file: relative to the declaring file's folder, or,
        inside inline modules, to the folder a ``mod x;`` there uses (``src/a/b.rs``: ``mod m {
        #[path = "o.rs"] mod o; }`` -> ``src/a/b/m/o.rs``); an inline module's own ``#[path = "p"]``
        is its folder, relative to the folder of the module around it (``src/lib.rs``:
        ``#[path = "t"] mod m { mod x; }`` -> ``src/t/x.rs``; the Rust reference's rules).
        The edge's props say ``decl: mod``, and ``test`` when only tests build the declaration
        (``test``: its own attributes; or an inline ``#[cfg(test)]`` module around it) in every
        ``mod`` of the file that names those candidates: the indexer flags the file it resolves
        to as test code (:mod:`kgsearch.indexer.testdecl`)."""
        base = self.rel.rsplit("/", 1)[-1][:-3]
        # (folder, the file's own name still to enter before a folder below it), as rustc keeps it
        relative = base if not self.is_root and base not in ("mod", "lib", "main") else None
        dirs = [(posixpath.dirname(self.rel), relative)]
        inline = self._inline_mods(self._scope_at(at))
        test = test or any(m.test for m in inline)
        for m in inline:
            nxt = []
            for d, rel in dirs:
                for p in m.data.get("paths") or [None]:
                    if p is not None:          # #[path = "p"] mod m { .. }: the folder p, from the
                        nxt.append((posixpath.normpath(posixpath.join(d, p)), None))   # file's own
                    else:
                        nxt.append((posixpath.join(d, rel, m.name) if rel else posixpath.join(d, m.name), None))
            dirs = list(dict.fromkeys(nxt))
        out = []
        for d, rel in dirs:
            if path is not None:
                out.append(posixpath.normpath(posixpath.join(d, path)))
            else:
                d = posixpath.join(d, rel) if rel else d
                out += [posixpath.join(d, f"{name}.rs"), posixpath.join(d, name, "mod.rs")]
        dst = "\n".join(dict.fromkeys(out))
        self.imports(dst, at)
        before = self._import_props.get(dst)
        self._import_props[dst] = {"decl": "mod", "test": True} if test and (before is None or before.get("test")) \
            else {"decl": "mod"}

    def _inline_mods(self, scope: Def) -> list[Def]:
        """The inline modules around ``scope``, outermost first."""
        out = []
        d = scope
        while d is not None and d is not self.mod:
            if d.decl == "mod":
                out.append(d)
            d = d.parent
        return out[::-1]
