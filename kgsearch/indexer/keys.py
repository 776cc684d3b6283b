"""Keys unique per root: the nodes of a root with a label get root-qualified keys.

The first root of an index has the label ``''`` and its keys are the loader's. A later root's
label (:mod:`kgsearch.store.roots`) is written into the keys its files own, so ``Home.md`` in
two vaults gives ``md:Home`` and ``md://home/Home``. Loaders know nothing of this: a file's
:class:`~kgsearch.types.LoadResult` is rewritten after loading (in the loader worker):

* node keys, parents and ``key`` edge targets owned by the file: ``ns:rest`` -> ``ns://label/rest``
  (``kg:`` keys are node ids shared across files by design: never qualified);
* names the nodes answer to (``note``, ``py`` and the other code namespaces): the qualified name at its rank, and the plain
  name ranked :data:`OTHER_ROOT_RANK` lower, so an edge in another root still reaches the node
  when nothing of its own root is called that, but a plain name of the first root wins;
* ``note``, ``py`` and code edge targets: the qualified candidates first, then the plain ones, so an
  edge resolves inside its own root first (``[[Home]]`` in the second vault is its own Home).
"""
from __future__ import annotations

from ..types import EdgeRec, LoadResult, NodeRec

__all__ = ["qualify_key", "qualify_result", "plain_name", "OTHER_ROOT_RANK", "QUALIFIED_NS"]

OTHER_ROOT_RANK = 100          # added to the rank of a plain name answered by a labelled root's node
QUALIFIED_NS = ("note", "py", "js", "go", "rs", "java", "cs", "c")  # names resolved inside the edge's own root first
SHARED_KEY_PREFIXES = ("kg:",)


def qualify_key(key: str, label: str) -> str:
    """``ns:rest`` -> ``ns://label/rest``.

    >>> qualify_key("md:notes/Home", "work"), qualify_key("py:pkg.mod.f", "lib")
    ('md://work/notes/Home', 'py://lib/pkg.mod.f')
    """
    ns, _, rest = key.partition(":")
    return f"{ns}://{label}/{rest}"


def plain_name(name: str) -> str:
    """The last candidate of a multi-candidate name (the plain one a shared node is named by).

    >>> plain_name("//work/home\\nhome"), plain_name("home")
    ('home', 'home')
    """
    return name.rsplit("\n", 1)[-1]


def _names(name: str, label: str) -> str:
    cands = name.split("\n")
    return "\n".join([f"//{label}/{c}" for c in cands] + cands)


def qualify_result(res: LoadResult, label: str) -> LoadResult:
    """``res`` with the keys its file owns qualified by ``label`` (see the module docstring)."""
    if not label:
        return res
    own = {n.key for n in res.nodes if not n.key.startswith(SHARED_KEY_PREFIXES)}
    if not own:
        return res

    def q(key: str | None) -> str | None:
        return qualify_key(key, label) if key in own else key

    nodes = []
    for n in res.nodes:
        if n.key not in own:
            nodes.append(n)
            continue
        aliases: list = []
        for rank, alias in enumerate(n.aliases):
            ns, name = alias[0], alias[1]
            r = alias[2] if len(alias) > 2 else rank
            if ns in QUALIFIED_NS:
                aliases.append((ns, f"//{label}/{name}", r))
                aliases.append((ns, name, r + OTHER_ROOT_RANK))
            else:
                aliases.append((ns, name, r))
        nodes.append(NodeRec(key=q(n.key), kind=n.kind, name=n.name, text=n.text, qualname=n.qualname,
                             line_start=n.line_start, line_end=n.line_end, parent=q(n.parent), flags=n.flags,
                             props=n.props, aliases=aliases))
    edges = []
    for e in res.edges:
        dst = e.dst
        if e.ns == "key":
            dst = q(dst)
        elif e.ns in QUALIFIED_NS:
            dst = _names(dst, label)
        edges.append(EdgeRec(src=q(e.src), dst=dst, type=e.type, ns=e.ns, weight=e.weight, line=e.line,
                             props=e.props))
    return LoadResult(nodes, edges, res.warnings)
