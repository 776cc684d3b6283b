"""Knowledge-graph triples as TSV: ``head<TAB>relation<TAB>tail``, one per line, no header
(WN18RR, FB15k-237, CoDEx, YAGO3-10 and most public link-prediction sets), and the entity
names files that come with them.

* A triples file (``.tsv``, every line three tab-separated fields) gives one typed edge per
  line: ``kg:<head> -[relation]-> kg:<tail>`` (the relation normalised like KG edge types:
  ``_hypernym``, ``/film/film/genre``). Entities need no nodes file: an id that no file
  defines becomes a shared ``entity`` node ``kg:<id>`` (namespace ``kgt``: resolved like
  ``kg`` ids, created when missing instead of being a dangling-edge error), so ``train.tsv``,
  ``valid.tsv`` and ``test.tsv`` share their entities.
* A names file gives those entities names: a file called ``entity2text.txt``,
  ``entity_names.tsv``, ``entity2name.txt``, ``entity2description.txt`` (``id<TAB>text``):
  one ``entity`` node ``kg:<id>`` per line. From a ``*text*``/``*description*`` file, the
  name is the text up to its first comma (WN18RR: ``stool, solid excretory product ...``) and
  the node's text is the whole line; from a names file the name is the text.
* Files that carry nothing to search are read and give nothing: id lists (``entities.txt``,
  ``relations.txt``), id maps (``entity2id.txt``), relation descriptions (``relation2text.txt``).

With ``--format triples`` a line without a tab that splits into exactly three fields on blanks
(``a _hypernym b``) is a triple too; without it only tabs separate (a line of three
space-separated fields is an error that names ``--format triples``).

A ``.tsv`` file that is neither (a header row, ragged rows) is a
:class:`~kgsearch.errors.DataError` naming ``file:line`` -- skipped with a warning when met
while walking a folder. A tab-separated table with a header (``source``/``target`` or
``node_id`` columns) is the ``kg`` loader's CSV: name it ``.csv``, or ``--format kg``.

Size: triples are short lines read one at a time, so ``.tsv`` files get a 64 MB cap by
default instead of 16 MB (FB15k-237's ``train.tsv`` is 21 MB; ``--max-file-size`` sets one cap
for every file).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import DataError
from ..lines import quoted
from ..types import EdgeRec, LoadOptions, LoadResult, NodeRec
from .common import check_id, decode, lines_of, norm_type, utf16_codec

NAME = "triples"
EXTENSIONS = (".tsv",)
NS = "kgt"                      # edge target namespace: a kg id, made a shared entity when missing

# KG side files recognised by name (any of .txt/.tsv): entity names and descriptions, and the
# id lists/maps and relation descriptions that carry nothing to search
SIDE_FILE = re.compile(r"^(entity|entities|relation|relations)(2text|2name|2names|2description|2desc|2id|_names?|"
                       r"_text|_descriptions?|_ids?)?\.(txt|tsv)$", re.I)
_NO_PROPS: dict = {}            # shared by every triple edge (nobody writes into it)


def is_side_file(path: Path) -> bool:
    """Is ``path`` (by name) an entity/relation file of a KG triples set?

    >>> is_side_file(Path("wn18rr/entity2text.txt")), is_side_file(Path("entity_names.tsv"))
    (True, True)
    >>> is_side_file(Path("notes/relations-with-clients.txt"))
    False
    """
    return bool(SIDE_FILE.match(path.name))


_LETTER = re.compile(r"[^\W\d_]")


def looks_like_triples(head: bytes, whole: bool) -> bool:
    r"""Do the first bytes of a ``.txt`` file (``whole``: all of it) hold KG triples, not prose?
    Link-prediction sets often name their triples ``train.txt`` (YAGO3-10, CoDEx, the original
    FB15k and WN18, Kinship, UMLS). Yes when it has two lines or more and every complete line is
    ``head<TAB>relation<TAB>tail``: three non-empty fields, the relation one word with a letter
    (``_hypernym``, ``/film/film/genre``, ``isLocatedIn``, ``P31``), so a table of numbers or of
    phrases (``Name<TAB>Full address<TAB>Phone``) stays text.

    >>> looks_like_triples(b"00260881\t_hypernym\t00260622\n01332730\t_derivationally_related_form\t03122748\n", True)
    True
    >>> looks_like_triples(b"Dear Ann,\n\tthanks\tfor the\tnotes\n", True), looks_like_triples(b"1\t2.5\t3\n4\t5.5\t6\n", True)
    (False, False)
    """
    codec = utf16_codec(head)
    text = head.decode(codec or "utf-8", "replace").lstrip("\ufeff")
    lines = text.split("\n")
    if not whole:
        lines = lines[:-1]                      # the last one may be cut
    lines = [ln.rstrip("\r") for ln in lines if ln.strip()]
    if len(lines) < 2:
        return False
    for ln in lines:
        parts = ln.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            return False
        rel = parts[1].strip()
        if len(rel) > 200 or any(c.isspace() for c in rel) or not _LETTER.search(rel):
            return False
    return True


def names_files(folder: Path) -> list[Path]:
    """The entity names files in ``folder`` (``entity2text.txt``, ``entity_names.tsv``...): what
    names the entities of the triples files beside them."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    out = []
    for p in entries:
        m = SIDE_FILE.match(p.name)
        if m and m.group(1).lower().startswith("entit") and (m.group(2) or "").lower() not in ("", "2id", "_id", "_ids"):
            out.append(p)
    return out


def load(path: Path, rel: str, opts: LoadOptions) -> LoadResult:
    where = str(path)
    text, warning = decode(Path(path).read_bytes(), where)
    name = Path(path).name.lower()
    res = LoadResult(warnings=[warning] if warning else [])
    if not text.strip():        # as the kg loader says it of an empty JSON, JSONL or CSV file
        res.warnings.append(f"{where}: empty (no line); nothing to index")
        return res
    m = SIDE_FILE.match(name)
    if m:
        kind, suffix = m.group(1).lower(), (m.group(2) or "").lower()
        if kind.startswith("entit") and suffix not in ("", "2id", "_id", "_ids"):
            _names(text, where, res, described="text" in suffix or "desc" in suffix)
        return res                      # id lists and maps, relation texts: nothing to search
    _triples(text, where, res, sniffed=opts.fmt != NAME and Path(path).suffix.lower() != ".tsv",
             spaces=opts.fmt == NAME)
    return res


def _lines(text: str):
    """The lines of ``text`` one at a time (``splitlines`` would hold them all at once; a
    ``StringIO`` copies the text as 4 bytes a character)."""
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", start)
        if end < 0:
            end = n
        yield text[start:end]
        start = end + 1


def _fields(line: str) -> list[str]:
    return [f.strip() for f in line.rstrip("\r\n").split("\t")]


def _triples(text: str, where: str, res: LoadResult, sniffed: bool = False, spaces: bool = False) -> None:
    """One edge per line. ``spaces`` (``--format triples``, the user's word that the file is
    triples): a line without a tab that splits into exactly three fields on blanks
    (``a _hypernym b``) is a triple too. Without it a triple is tab-separated only: a space
    is common inside names and prose, and a file chosen by its extension or sniffed is not
    read on a guess; such a line's error names ``--format triples``."""
    edges = res.edges
    # one string per entity key and relation type, shared by every line naming it (FB15k-237's
    # train.tsv: 272K lines, 14K entities, 237 relations)
    keys: dict[str, str] = {}
    types: dict[str, str] = {}
    for lineno, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        parts = _fields(line) if not spaces or "\t" in line else line.split()
        if len(parts) != 3 or not all(parts):
            if spaces and "\t" not in line:        # --format triples, a line without a tab
                raise DataError(f"expected head relation tail, got {len(parts)} field(s) separated by spaces; "
                                f"separate the three fields with tabs when a name holds a space (a KG triples "
                                f"file has no header)", where, lineno)
            if "\t" not in line and len(line.split()) == 3:
                why = "; its fields are separated by spaces: index it with --format triples to read them"
            elif sniffed:
                why = "; read as KG triples because its first lines are (index it with --format text to read it as prose)"
            else:
                why = " (a table with a header: name it .csv)"
            raise DataError(f"expected head<TAB>relation<TAB>tail, got {len(parts)} field(s); a KG triples file "
                            f"has no header and three non-empty fields per line{why}", where, lineno)
        h, r, t = parts
        src = keys.get(h)
        if src is None:
            src = keys[h] = f"kg:{check_id(h, 'the head', where, lineno)}"
        if "\0" + t not in keys:
            check_id(t, "the tail", where, lineno)
        etype = types.get(r)
        if etype is None:
            etype = types[r] = norm_type(r, "relates_to")
        edges.append(EdgeRec(src, keys.setdefault("\0" + t, t), etype, NS, 1.0, lineno, _NO_PROPS))


def _names(text: str, where: str, res: LoadResult, described: bool) -> None:
    seen: set[str] = set()
    for lineno, line in enumerate(lines_of(text), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r\n").split("\t", 1)
        if len(parts) != 2 or not parts[0].strip():
            raise DataError("expected id<TAB>name (an entity names file)", where, lineno)
        nid, value = check_id(parts[0].strip(), "the id", where, lineno), " ".join(parts[1].split())
        if nid in seen:
            res.warnings.append(f"{where}:{lineno}: duplicate entity id {quoted(nid)}; kept the first")
            continue
        seen.add(nid)
        name, body = value or nid, ""
        if described:
            head = value.split(", ", 1)[0]
            name, body = (head if 0 < len(head) <= 80 else value[:80]) or nid, value
        res.nodes.append(NodeRec(key=f"kg:{nid}", kind="entity", name=name, text=body, qualname=nid,
                                 line_start=lineno, line_end=lineno, aliases=[("kg", nid)]))
