"""What goes into a context: ranked node ids from a task, from files, or from a diff.

* **task**: the query engine's ranking of the task text (one search, ``k`` candidates); a hit
  on a part of a long definition's text (``FLAG_PART``) stands for the definition, whose trimmed
  form shows the matched lines (:func:`part_definitions`);
* **files**: every node of the given files (their symbols / sections; not the parts of a long
  definition's text, which the definition shows), then their neighbours at
  distance 1: what they call and what calls them (``calls`` edges, both ways), and the notes
  linked to them (nodes of kind note/section at the other end of any loader edge);
* **diff**: the innermost nodes whose lines a unified diff changed (:mod:`.diff`), then their
  callers, callees and linked notes, as for files.

For files and diffs, :func:`neighbours` is one breadth-first step over the ``edges`` table (the
test compares it with an independent BFS), and the candidates are ranked by a random walk with
restart from the seed nodes over the index's graph: seeds first (score 1 + walk), then the
neighbours by their walk score.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import NotFound
from ..store.sql import iter_in_chunks
from ..types import FLAG_PART, part_owner

__all__ = ["Candidate", "task_candidates", "part_definitions", "as_definitions", "file_seeds", "stale_files", "STALE", "neighbours", "walk_rank", "CALL_TYPES", "NOTE_KINDS",
           "resolve_files", "dependents", "IMPACT_LIMIT"]

IMPACT_LIMIT = 200              # transitive dependents added by --impact (nearest first)

CALL_TYPES = ("calls",)
NOTE_KINDS = ("note", "section")


@dataclass
class Candidate:
    id: int
    score: float
    reason: str
    marked: set[int] = field(default_factory=set)     # absolute line numbers to keep when trimming


def task_candidates(engine, task, k: int, opts=None, session=None) -> tuple[list[Candidate], object]:
    """The engine's top ``k`` for ``task`` (a string, or the engine's parsed Query): (candidates
    best first, the Response)."""
    from ..query import SearchOptions

    opts = (opts or SearchOptions()).but(k=k, snippets=False, collapse=False)   # every node: a note
    # ranked on its name and headings must not hide the section holding the matching text
    resp = engine.search(task, opts, session=session)
    return [c for _, c in as_definitions(resp.hits, part_definitions(engine.ix.conn, resp.hits))], resp


def part_definitions(conn, hits) -> dict[int, int]:
    """Hit id -> its definition's node id, for the hits on a part of a long definition's text
    (kind ``chunk``, key ``<definition key>#part<n>``)."""
    parts = {h.id: h.parent for h in hits if h.kind == "chunk" and h.parent and part_owner(h.key) == h.parent}
    if not parts:
        return {}
    ids = dict(iter_in_chunks(conn, "SELECT key, id FROM nodes WHERE key IN ({})", sorted(set(parts.values()))))
    return {h: ids[k] for h, k in parts.items() if k in ids}


def as_definitions(hits, defs: dict, index=lambda h: None) -> list[tuple[str | None, Candidate]]:
    """``(index(h), candidate)`` of ranked ``hits``, a part as its definition (``defs``: what
    :func:`part_definitions` gives; ``index(h)``: the index of a hit when several are searched as
    one, its key in ``defs`` then ``(index, hit id)``), each definition once at the rank of its
    best member: packed beside each other, a definition's lines and its part's would show the
    same source twice (a 700-line function: its trimmed form holds the matched lines)."""
    out, seen = [], set()
    for h in hits:
        at = index(h)
        nid = defs.get(h.id if at is None else (at, h.id), h.id)
        if (at, nid) in seen:
            continue
        seen.add((at, nid))
        part = nid != h.id
        why = f"rank {h.rank} ({h.methods or 'search'})" + (f", its lines {h.line}-{h.line_end}" if part else "")
        out.append((at, Candidate(nid, float(h.score), why)))
    return out


def resolve_files(ix, paths: list[str]) -> dict[int, str]:
    """``{file id: path as given}`` for paths that the index holds (absolute, relative to the
    current folder, or relative to an indexed root); a folder gives every indexed file under it;
    NotFound names the first path that names no indexed file."""
    roots = [Path(r) for r in ix.meta_json("roots", [])]
    out: dict[int, str] = {}
    for p in paths:
        tries = [Path(p).expanduser()]
        if not tries[0].is_absolute():
            tries = [Path.cwd() / p] + [r / p for r in roots]
        fid = None
        for t in tries if "\0" not in p else ():         # (a NUL byte: no file has it; realpath raises)
            for cand in dict.fromkeys([str(t), os.path.realpath(t), os.path.abspath(t)]):
                row = ix.conn.execute("SELECT id FROM files WHERE path=?", (cand,)).fetchone()
                if row is not None:
                    fid = row[0]
                    break
            if fid is not None:
                break
        if fid is None:                                  # a folder: every indexed file under it
            under = _files_under(ix, tries) if "\0" not in p else []
            if under:
                for f in under:
                    out.setdefault(f, p)
                continue
        if fid is None:
            known = ", ".join(map(str, roots)) or "none"
            raise NotFound(f"{p}: this file is not in the index {ix.path}; index it with `kgsearch index` "
                           f"(indexed roots: {known})",
                           agent=f"{p} is not in the index: pass files under its indexed folders ({known}), by "
                                 f"absolute path or relative to one of them")
        out[fid] = p
    return out


def _files_under(ix, tries) -> list[int]:
    """Ids of the indexed files under the first of the folders ``tries`` that holds any."""
    for t in tries:
        for cand in dict.fromkeys([str(t), os.path.realpath(t), os.path.abspath(t)]):
            folder = cand.rstrip(os.sep)
            if not folder:
                continue
            pat = (folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + os.sep + "%")
            rows = ix.conn.execute("SELECT id FROM files WHERE path LIKE ? ESCAPE '\\' ORDER BY path", (pat,)).fetchall()
            if rows:
                return [r[0] for r in rows]
    return []


def file_seeds(ix, file_ids) -> list[int]:
    """Every node of these files (module, classes, functions, methods; note, sections), by id;
    not the parts of a long definition's text (its lines are the definition's)."""
    return sorted(r[0] for r in iter_in_chunks(ix.conn, f"SELECT id FROM nodes WHERE file_id IN ({{}}) "
                                                        f"AND flags & {FLAG_PART} = 0",
                                               sorted(int(f) for f in file_ids)))


STALE = "the context shows its indexed text; run `kgsearch index` to pack the current one"


def stale_files(ix, file_ids) -> list[str]:
    """A notice for each of these files that is no longer the one indexed: another size or
    mtime, a link swapped in (``lstat``), or gone. Its code is then packed as the indexed text
    (``read_indexed`` reads only the indexed file), which must not pass silently for the
    current file; the current text is not read: the indexed line spans no longer match it."""
    out = []
    q = "SELECT id, path, root, size, mtime_ns FROM files WHERE id IN ({})"
    for _, path, root, size, mtime_ns in sorted(iter_in_chunks(ix.conn, q, sorted(int(f) for f in file_ids))):
        try:
            st = os.lstat(path)
            state = None if (st.st_size, st.st_mtime_ns) == (size, mtime_ns) else "changed"
        except OSError:
            state = "gone"
        if state is not None:
            shown = os.path.relpath(path, root) if root and path.startswith(root.rstrip(os.sep) + os.sep) else path
            out.append(f"{shown}: {'changed on disk' if state == 'changed' else 'gone from disk'} since it was "
                       f"indexed; {STALE}")
    return out


def neighbours(ix, seeds) -> dict[int, str]:
    """Distance-1 neighbours of ``seeds`` that are not seeds: ``{node id: reason}``.

    Callers and callees over ``calls`` edges (both directions), and notes/sections linked to a
    seed by any edge a loader wrote (``file_id`` set: derived ``similar_text`` edges do not count).
    The reason names the first seed (smallest id) that links to it.
    """
    seeds = sorted({int(s) for s in seeds})
    sset = set(seeds)
    types = ",".join(f"'{t}'" for t in CALL_TYPES)
    kinds = ",".join(f"'{k}'" for k in NOTE_KINDS)
    found: dict[int, tuple[int, str]] = {}

    def add(nid, seed, why):
        if nid is None or nid in sset:
            return
        if nid not in found or (seed, why) < found[nid]:
            found[nid] = (seed, why)

    q_out = f"SELECT src, dst, type FROM edges WHERE src IN ({{}}) AND dst IS NOT NULL AND type IN ({types})"
    q_in = f"SELECT dst, src, type FROM edges WHERE dst IN ({{}}) AND type IN ({types})"
    for seed, nid, _ in iter_in_chunks(ix.conn, q_out, seeds):
        add(nid, seed, "called by")
    for seed, nid, _ in iter_in_chunks(ix.conn, q_in, seeds):
        add(nid, seed, "calls")
    n_out = (f"SELECT e.src, e.dst FROM edges e JOIN nodes n ON n.id = e.dst WHERE e.src IN ({{}}) "
             f"AND e.file_id IS NOT NULL AND n.kind IN ({kinds})")
    n_in = (f"SELECT e.dst, e.src FROM edges e JOIN nodes n ON n.id = e.src WHERE e.dst IN ({{}}) "
            f"AND e.file_id IS NOT NULL AND n.kind IN ({kinds})")
    for seed, nid in iter_in_chunks(ix.conn, n_out, seeds):
        add(nid, seed, "note linked from")
    for seed, nid in iter_in_chunks(ix.conn, n_in, seeds):
        add(nid, seed, "note linking to")
    keys = dict(iter_in_chunks(ix.conn, "SELECT id, key FROM nodes WHERE id IN ({})",
                               sorted({s for s, _ in found.values()})))
    return {nid: f"{why} {keys.get(seed, seed)}" for nid, (seed, why) in sorted(found.items())}


def dependents(ix, seeds, depth: int, skip) -> dict[int, str]:
    """The transitive dependents of ``seeds`` within ``depth`` hops (callers of callers,
    importers, subclasses, linked notes: :func:`kgsearch.explore.impact_of_nodes`), nearest
    first, at most :data:`IMPACT_LIMIT`, leaving out the ids in ``skip``: ``{id: reason}``."""
    from ..explore import impact_of_nodes

    res = impact_of_nodes(ix, sorted(seeds), depth=depth, limit=IMPACT_LIMIT + len(skip))
    out = {}
    for d in res["dependents"]:
        if d["id"] not in skip and len(out) < IMPACT_LIMIT:
            v = d["via"]
            out[d["id"]] = (f"depends on the change at distance {d['distance']} ({v['type']} "
                            f"{'to' if v['direction'] == 'out' else 'from'} {v['key']})")
    return out


def walk_rank(engine, seeds: dict[int, Candidate], near: dict[int, str]) -> list[Candidate]:
    """Seeds (score 1 + walk) then neighbours (walk score), each by score, ties by id.

    The walk is :meth:`kgsearch.graph.context.GraphContext.walk` (restart 0.2, both directions)
    from the seeds; without a graph every seed scores 1 and every neighbour 0.5.
    """
    walk: dict[int, float] = {}
    gctx = engine.graph()
    if gctx is not None and seeds:
        ids = sorted(seeds)
        pos = gctx.positions(ids)
        ok = pos >= 0
        if ok.any():
            limit = len(seeds) + len(near) + 50
            by_pos = gctx.walk(pos[ok], limit=limit)
            walk = {int(gctx.node_ids[p]): s for p, s in by_pos.items()}
    out = []
    for nid, c in seeds.items():
        c.score = 1.0 + walk.get(nid, 0.0)
        out.append(c)
    for nid, why in near.items():
        out.append(Candidate(nid, walk.get(nid, 0.0) if walk else 0.5, why))
    out.sort(key=lambda c: (-c.score, c.id))
    return out
