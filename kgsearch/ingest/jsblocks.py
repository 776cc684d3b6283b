"""JavaScript and TypeScript: what each ``{`` opens (a class, interface or enum body, an
object literal, a type literal, or code) and the names object literals are assigned to; the
definition scanner (:mod:`kgsearch.ingest.jscode`) asks these to tell a method of an object
from a call and a property type from a value."""
from __future__ import annotations

import re

__all__ = ["Blocks", "owner_prefix", "local_of", "prev_token"]

_PREV = re.compile(r"([\w$]+|\S)\s*$")
_IN_ANGLES = re.compile(r"<[^<>()=;{}]*$")
_TYPE_ALIAS = re.compile(r"\btype\s+[\w$]+\s*(?:<[^;{}]*>)?\s*=\s*$")     # also <T extends U = U>


class Blocks:
    """What each ``{`` opens: ``class``, ``interface``, ``enum``, ``object`` (an object
    literal), ``type`` (a type literal) or ``code`` (a function body, a statement block)."""

    def __init__(self, lx, fixed: dict[int, str], typescript: bool = True):
        self.lx, self.kinds, self.typescript = lx, dict(fixed), typescript

    def kind(self, o: int) -> str:
        k = self.kinds.get(o)
        if k is None:
            k = self.kinds[o] = self._kind(o)
        return k

    def _kind(self, o: int) -> str:
        code = self.lx.code
        m = prev_token(code, o)
        if m is None:
            return "code"
        t = m.text
        if t in (",", "<") and _IN_ANGLES.search(code, max(0, o - 120), o):
            return "type"                          # Map<K, {..}>
        if t in ("&", "|") and self.typescript and code[m.at - 1:m.at] != t:
            return "type"                          # A & {..}, A | {..}: TypeScript (a && {..} is an object)
        if t in ("=", "(", ",", "[", "?", "!", "&", "|", "return", "yield", "await", "default", "...", "in", "of"):
            if t == "=" and _TYPE_ALIAS.search(code, max(0, o - 200), o):
                return "type"
            return "object"
        if t == ":":
            before = code[max(0, m.at - 40):m.at].rstrip()
            if before[-1:] in ("}", "]", '"'):
                return "object"                    # cond ? {..} : {..}
            up = self.lx.enclosing(m.at)
            if up >= 0 and code[up] == "{" and self.kind(up) == "object":
                return "object"
            if up >= 0 and code[up] == "{" and self.kind(up) in ("type", "interface", "class"):
                return "type"
            if up >= 0 and code[up] == "(":
                return "type"
            return "type" if self._annotation(m.at) else "object"
        if t == "<":
            return "type"                          # Map<{..}>
        return "code"                              # also after `>`: `f(): Promise<T> {`, JSX `<p>{..}`

    def _annotation(self, colon: int) -> bool:
        """``x: {`` in a declaration or a parameter list (a type), not ``case x: {`` or a label."""
        code = self.lx.code
        w = re.search(r"(?:\b(?:const|let|var|readonly|public|private|protected)\s+[\w$]+|\))\s*\??\s*$",
                      code[max(0, colon - 80):colon])
        return w is not None


class _Token:
    """The token before a brace: ``group(1)`` and ``start(1)`` as a match would give them."""

    __slots__ = ("text", "at")

    def __init__(self, text: str, at: int):
        self.text, self.at = text, at

    def group(self, _=0) -> str:
        return self.text

    def start(self, _=0) -> int:
        return self.at


def prev_token(code: str, o: int):
    """The name or the character right before ``o`` (blanks skipped)."""
    i = o - 1
    while i >= 0 and code[i] in " \t\n":
        i -= 1
    if i < 0:
        return None
    c = code[i]
    if not (c.isalnum() or c == "_" or c == "$"):
        return _Token(c, i)
    j = i
    while j > 0 and (code[j - 1].isalnum() or code[j - 1] in "_$"):
        j -= 1
    return _Token(code[j:i + 1], j)


def owner_prefix(lx, blocks: Blocks, o: int, memo: dict) -> str:
    """The name an object literal at ``o`` is assigned to (``api`` for ``const api = {``,
    ``a.b`` for ``b: {`` inside it; ``''`` for ``module.exports = {`` and anonymous ones)."""
    if o in memo:
        return memo[o]
    memo[o] = ""
    code = lx.code
    before = code[max(0, o - 200):o]
    out = ""
    m = re.search(r"((?:this|[A-Za-z_$][\w$]*)(?:\s*\.\s*[\w$]+)*)\s*(?::[^=;{}]*)?=\s*$", before)
    if m:
        out = local_of(re.sub(r"\s+", "", m.group(1)))
        if out == "exports":
            out = ""
    else:
        k = re.search(r"([A-Za-z_$][\w$]*)\s*:\s*$", before)
        up = lx.enclosing(o)
        if k and up >= 0 and code[up] == "{" and blocks.kind(up) == "object":
            parent = owner_prefix(lx, blocks, up, memo)
            out = f"{parent}.{k.group(1)}" if parent else k.group(1)
    memo[o] = out
    return out


def local_of(lhs: str) -> str:
    """``X.prototype.m`` -> ``X.m``; ``module.exports.f``, ``exports.f``, ``this.f`` -> ``f``;
    ``module.exports`` -> ``exports``."""
    parts = [p for p in re.split(r"\??\.", lhs) if p]
    if parts[:2] == ["module", "exports"]:
        parts = parts[2:] or ["exports"]
    elif parts[:1] in (["exports"], ["this"]) and len(parts) > 1:
        parts = parts[1:]
    parts = [p for p in parts if p != "prototype"] or parts
    return ".".join(parts)
