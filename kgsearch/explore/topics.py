"""``kgsearch communities``: the graph's communities, each with an extractive summary, and the
answer to "what are the main topics / what is this about" built from them. No model: every
word of a summary is taken from the index.

* **communities** are the labels the graph step computed (greedy modularity, CNM:
  :mod:`kgsearch.graph.kernels.communities`), ordered by size;
* **central nodes**: the members with the highest PageRank, leaving out what only holds others
  together (tags, entities, placeholders: ``AUTO``/``PLACEHOLDER`` nodes) and the parts of a
  note or document (sections, chunks), unless nothing else is left;
* **distinctive terms**: class-based TF-IDF (c-TF-IDF, as BERTopic defines it) over the BM25
  postings: a term's frequency in the community (summed stored term frequencies, names
  counted as BM25F counts them) over the community's total, times ``log(1 + A / f_t)``, with
  ``A`` the mean total per community and ``f_t`` the term's frequency in the whole index.
  Terms are stems; each is shown in the spelling its central nodes use most;
* **a representative sentence**: among the central nodes' sentences (for code: the signature
  line), the one whose distinct terms carry the most c-TF-IDF weight, divided by the square
  root of its number of terms (so a long sentence does not win by length alone).

:func:`ctfidf` is the numpy kernel and :func:`ctfidf_ref` its slow twin (tests compare them).
"""
from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict

import numpy as np

from ..arrays import unique
from ..text.idcodec import decode_ids_many, tf_view
from ..text.postings import stored as stored_postings
from ..text.tokenize import get_analyzer
from ..types import FLAG_AUTO, FLAG_PART, FLAG_PLACEHOLDER
from .nodes import graph_of

__all__ = ["merged_answer", "communities", "global_answer", "ctfidf", "ctfidf_pairs", "ctfidf_ref", "community_terms"]

PART_KINDS = ("section", "chunk")
CODE_KINDS = ("function", "method", "class")
CANDIDATES = 5                  # central nodes whose sentences are considered
SURFACE_CHARS = 2000            # of each candidate's text, read for the spelling of the terms
PIECE = 1 << 18                 # postings decoded at a time by community_terms
MIN_DF = 2                      # a term in one node says nothing about a community
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`*_])|\n\s*\n|\n(?=\s*(?:[#>*+|-]|\d+\.)\s)")
_MARKER = re.compile(r"^(?:[-*+>]|\d+[.)])\s+")      # a list item's or a quote's marker
_FIELD = re.compile(r"^\s*[\w-]+::?\s")       # front matter / Dataview fields: "key: value", "key:: value"


def ctfidf_pairs(pt: np.ndarray, pl: np.ndarray, f_tc: np.ndarray, n_labels: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """c-TF-IDF of distinct (term, community) pairs with their summed frequencies ``f_tc``:
    ``(pair term, pair label, weight)`` sorted by label, then weight (highest first), then term."""
    pt, pl = np.asarray(pt, dtype=np.int64), np.asarray(pl, dtype=np.int64)
    f_tc = np.asarray(f_tc, dtype=np.float64)
    if not len(pt):
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), np.zeros(0)
    size = np.bincount(pl, weights=f_tc, minlength=n_labels)          # total frequency per community
    f_t = np.bincount(pt, weights=f_tc)                                # per term, whole index
    have = size > 0
    avg = float(size[have].mean()) if have.any() else 0.0
    w = f_tc / size[pl] * np.log1p(avg / f_t[pt])
    order = np.lexsort((pt, -w, pl))
    return pt[order], pl[order], w[order]


def _sum_pairs(term: np.ndarray, label: np.ndarray, tf: np.ndarray, n_labels: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    key = np.asarray(term, dtype=np.int64) * n_labels + np.asarray(label, dtype=np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq // n_labels, uniq % n_labels, np.bincount(inv.reshape(-1), weights=tf, minlength=len(uniq))


def ctfidf(term: np.ndarray, label: np.ndarray, tf: np.ndarray, n_labels: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """c-TF-IDF from postings: ``term[i]`` in a node of community ``label[i]`` with frequency
    ``tf[i]`` (:func:`ctfidf_pairs` after summing the pairs)."""
    if not len(term):
        return ctfidf_pairs([], [], [], n_labels)
    return ctfidf_pairs(*_sum_pairs(term, label, np.asarray(tf, dtype=np.float64), n_labels), n_labels)


def ctfidf_ref(postings: list[tuple[int, int, float]]) -> dict[int, list[tuple[int, float]]]:
    """Slow twin of :func:`ctfidf`: ``{label: [(term, weight), ...]}`` best first (ties: term)."""
    f_tc: dict[tuple[int, int], float] = defaultdict(float)
    for t, c, f in postings:
        f_tc[t, c] += f
    size: dict[int, float] = defaultdict(float)
    f_t: dict[int, float] = defaultdict(float)
    for (t, c), f in f_tc.items():
        size[c] += f
        f_t[t] += f
    avg = sum(v for v in size.values() if v > 0) / max(1, sum(1 for v in size.values() if v > 0))
    out: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for (t, c), f in f_tc.items():
        out[c].append((t, f / size[c] * math.log(1 + avg / f_t[t])))
    return {c: sorted(v, key=lambda x: (-x[1], x[0])) for c, v in out.items()}


def community_terms(ix, label_by_id: np.ndarray, n_labels: int, per: int = 30
                    ) -> tuple[list[str], dict[int, list[tuple[int, float]]]]:
    """(term strings, ``{label: [(term number, weight)]}`` with the ``per`` best terms of each
    community) from the index's BM25 postings of terms in at least :data:`MIN_DF` nodes, read
    in pieces of about :data:`PIECE` postings (each piece's terms are its own, so its pairs are
    summed on their own: memory stays at one piece plus the distinct pairs)."""
    cur = ix.conn.execute("SELECT term, df, ids, tf FROM text_postings WHERE df >= ?", (MIN_DF,))
    terms: list[str] = []
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    rows: list[tuple] = []
    held = 0
    while True:
        more = cur.fetchmany(256)
        rows += more
        held += sum(r[1] for r in more)
        if rows and (held >= PIECE or not more):
            parts.append(_piece(rows, len(terms), label_by_id, n_labels))
            terms += [r[0] for r in rows]
            rows, held = [], 0
        if not more:
            break
    if not parts:
        return [], {}
    pt, pl, w = ctfidf_pairs(*(np.concatenate(x) for x in zip(*parts)), n_labels)
    starts = np.searchsorted(pl, np.arange(n_labels + 1))
    best = {c: list(zip(pt[a:min(b, a + per)].tolist(), w[a:min(b, a + per)].tolist()))
            for c, (a, b) in enumerate(zip(starts[:-1].tolist(), starts[1:].tolist())) if b > a}
    return terms, best


def _piece(rows: list[tuple], first: int, label_by_id: np.ndarray, n_labels: int):
    """Summed (term, community) pairs of some posting rows (terms numbered from ``first``)."""
    ids, off = decode_ids_many([r[2] for r in rows])
    tf = np.empty(len(ids), dtype=np.float64)
    width = np.array([len(r[3]) // r[1] for r in rows], dtype=np.int64)
    for wd in unique(width).tolist():                          # one read per tf width
        idx = np.flatnonzero(width == wd)
        counts = off[idx + 1] - off[idx]
        vals = tf_view(b"".join([rows[i][3] for i in idx.tolist()]), int(counts.sum()))
        at = np.repeat(off[idx] - np.concatenate(([0], np.cumsum(counts)[:-1])), counts) + np.arange(len(vals))
        tf[at] = vals
    term = np.repeat(np.arange(first, first + len(rows), dtype=np.int64), np.diff(off))
    lab = np.full(len(ids), -1, dtype=np.int64)
    inside = ids < len(label_by_id)
    lab[inside] = label_by_id[ids[inside]]
    keep = lab >= 0
    pt, pl, f = _sum_pairs(term[keep], lab[keep], tf[keep], n_labels)
    return pt.astype(np.int32), pl.astype(np.int32), f


def _surfaces(an, texts: list[str], needed: set[str]) -> dict[str, str]:
    """term -> the lower-case spelling of it that ``texts`` use most, for the ``needed`` terms.
    Only words that start like a needed stem (its letters but the last) are analysed: one
    regular expression finds them (analysing every word of every text was most of the time)."""
    if not needed:
        return {}
    heads = sorted({t[:max(2, len(t) - 1)] for t in needed}, key=len, reverse=True)
    find = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, heads)) + r")\w*", re.IGNORECASE)
    seen: dict[str, Counter] = defaultdict(Counter)
    for text in texts:
        for word in find.findall(text):
            got = an.analyze_word(word)
            if got and got[0] in needed:
                seen[got[0]][word.lower()] += 1
    return {t: c.most_common(1)[0][0] for t, c in seen.items()}


def _sentences(kind: str, text: str) -> list[str]:
    text = (text or "").strip()
    if not text:
        return []
    if kind in CODE_KINDS:
        return [text.splitlines()[0].strip()]
    out = []
    for s in _SENT.split(text):
        if _FIELD.match(s):
            continue
        s = _MARKER.sub("", " ".join(s.split()))
        if len(s.split()) >= 6 and s[-1:] in ".!?:)" and not s.startswith("#"):
            out.append(s if len(s) <= 240 else s[:237].rsplit(" ", 1)[0] + "...")
    return out


def _pick_sentence(an, cands: list[tuple[dict, str]], weights: dict[str, float]) -> dict | None:
    best, best_score = None, 0.0
    for rank, (node, text) in enumerate(cands):
        if (node.get("flags") or 0) & FLAG_PART:      # lines of code from a definition's middle
            continue
        for s in _sentences(node["kind"], text):
            ts = set(an(s))
            score = sum(weights.get(t, 0.0) for t in ts) / math.sqrt(len(ts) + 1)
            if score > best_score + 1e-12:
                best, best_score = {"text": s, "key": node["key"]}, score
    return best


def _inner_pagerank(ctx, comm: np.ndarray) -> np.ndarray:
    """PageRank over the edges inside communities (each community ranked on its own links, so
    a helper that every community calls does not head them all); the stored PageRank for a
    graph read by rows or when the walk does not converge."""
    from ..graph import Graph, PowerIterationFailedConvergence, pagerank

    g = ctx.graph
    if not isinstance(g, Graph) or not g.m:
        return np.asarray(ctx.pagerank, dtype=np.float64)
    inside = comm[g.src] == comm[g.dst]
    try:
        return pagerank(g.edge_subgraph(inside), tol=1e-8, max_iter=200)
    except PowerIterationFailedConvergence:
        return np.asarray(ctx.pagerank, dtype=np.float64)


def _top_terms(names: list[str], n: int) -> list[str]:
    """The first ``n`` names, leaving out digits, one- and two-letter words and the pieces of a
    compound shown too (``sq``, ``lite`` beside ``sqlite``)."""
    cands = [t for t in dict.fromkeys(names) if len(t) > 2 and not t.isdigit()][:2 * n]
    whole = [t for t in cands if any(len(o) < len(t) and (t.startswith(o) or t.endswith(o)) for o in cands)]
    parts = {o for t in whole for o in cands if len(o) < len(t) and (t.startswith(o) or t.endswith(o))}
    return [t for t in cands if t not in parts][:n]


def _segments(sorted_comm: np.ndarray, chosen: np.ndarray, sorted_pos: np.ndarray, mask: np.ndarray,
              sizes: np.ndarray, take: int) -> dict[int, list[int]]:
    """Per chosen community, its first ``take`` positions where ``mask`` holds (the positions are
    sorted by community, then rank); all of its first ``take`` when none does."""
    starts = np.searchsorted(sorted_comm, chosen)
    out = {}
    for c, a in zip(chosen.tolist(), starts.tolist()):
        b = a + int(sizes[c])
        seg, ok = sorted_pos[a:b], mask[a:b]
        out[c] = (seg[ok] if ok.any() else seg)[:take].tolist()
    return out


def communities(ix, limit: int | None = None, terms: int = 8, central: int = 3) -> dict:
    """Every community with its summary, largest first: ``{"total", "nodes", "shown",
    "communities": [{"id", "size", "label", "central": [{key, name, kind, path, pagerank}],
    "terms", "sentence": {text, key} | None}], "notice", "seconds"}``. ``limit`` summarises
    only the largest ``limit`` (None: all). ``pagerank`` is within the community."""
    from ..errors import UsageError
    from ..store.rows import node_meta

    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise UsageError(f"--limit must be a whole number >= 0 (0: all), got {limit!r}")
    if not isinstance(terms, int) or terms < 0:
        raise UsageError(f"--terms must be a whole number >= 0, got {terms!r}")

    t0 = time.perf_counter()
    ctx = graph_of(ix)
    out = {"total": 0, "nodes": int(ctx.graph.n), "shown": 0, "communities": [], "notice": None}
    if ctx.community is None:
        info = (ix.derived("graph") or {}).get("info", {})
        out["notice"] = ("no communities in this index: " + str(info.get("communities") or "not computed")
                         + "; `kgsearch index --full` computes them when the graph is small enough")
        return out
    comm = np.asarray(ctx.community, dtype=np.int64)
    ok = comm >= 0
    sizes = np.bincount(comm[ok]) if ok.any() else np.zeros(0, dtype=np.int64)
    labels = np.flatnonzero(sizes)
    labels = labels[np.lexsort((labels, -sizes[labels]))]
    out["total"] = int(len(labels))
    chosen = labels if limit is None else labels[:max(0, int(limit))]
    pr = _inner_pagerank(ctx, comm)
    structural = np.fromiter((r[0] for r in ix.conn.execute(
        "SELECT id FROM nodes WHERE (flags & ?) != 0", (FLAG_AUTO | FLAG_PLACEHOLDER,))), dtype=np.int64)
    kind_names = list(ctx.kind_names) + ["?"]
    part = np.array([k in PART_KINDS for k in kind_names], dtype=bool)
    pos = np.flatnonzero(ok)
    order = np.lexsort((pos, -pr[pos], comm[pos]))
    pos = pos[order]
    solid = ~np.isin(ctx.node_ids[pos], structural)
    whole = solid & ~part[np.minimum(ctx.kinds[pos], len(kind_names) - 1)]
    cpos = comm[pos]
    heads = _segments(cpos, chosen, pos, whole, sizes, central)            # central: no parts
    pool = _segments(cpos, chosen, pos, solid, sizes, 2 * CANDIDATES)      # sentences: parts too
    ids = {p: int(ctx.node_ids[p]) for d in (heads, pool) for ps in d.values() for p in ps}
    meta = node_meta(ix.conn, list(ids.values()), text=True)
    label_by_id = np.full(int(ctx.node_ids[-1]) + 1, -1, dtype=np.int64)
    label_by_id[ctx.node_ids] = comm
    term_names, best = community_terms(ix, label_by_id, int(len(sizes)))
    _, params, _ = stored_postings(ix)
    an = params.analyzer() if params is not None else get_analyzer()
    for c in chosen.tolist():
        cands = [(dict(meta[ids[p]], pagerank=float(pr[p])), meta[ids[p]]["text"] or "")
                 for p in pool[c] if ids[p] in meta]
        tw = {term_names[t]: w for t, w in best.get(c, [])}
        surf = _surfaces(an, [f"{n['name']}\n{text[:SURFACE_CHARS]}" for n, text in cands],
                         {term_names[t] for t, _ in best.get(c, [])[:3 * terms]})
        top_terms = _top_terms([surf.get(term_names[t], term_names[t]) for t, _ in best.get(c, [])], terms)
        cent, names = [], set()
        for p in heads[c]:
            n = meta.get(ids[p])
            if n is None or n["name"].lower() in names:
                continue
            names.add(n["name"].lower())
            cent.append({"key": n["key"], "name": n["name"], "kind": n["kind"], "path": n["path"],
                         "pagerank": round(float(pr[p]), 8)})
        out["communities"].append({"id": c, "size": int(sizes[c]),
                                   "label": " · ".join(n["name"] for n in cent),
                                   "central": cent, "terms": top_terms, "sentence": _pick_sentence(an, cands, tw)})
    out["shown"] = len(out["communities"])
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def global_answer(ix, query: str | None = None, topics: int = 5) -> dict:
    """"What are the main topics / what is this about": the ``topics`` largest communities'
    summaries and a short answer naming them. ``{"query", "answer", "topics": [...], "total"}``."""
    got = communities(ix, limit=topics)
    lines = []
    if got["notice"]:
        lines.append(got["notice"])
    elif got["total"]:
        lines.append(f"{got['nodes']:,} nodes in {got['total']:,} communities; the largest {got['shown']}:")
        lines += _topic_lines(got["communities"])
    return {"query": query, "answer": "\n".join(lines), "topics": got["communities"], "total": got["total"],
            "nodes": got["nodes"], "notice": got["notice"]}


def _topic_lines(topics: list[dict]) -> list[str]:
    lines = []
    for i, c in enumerate(topics, 1):
        about = f" ({', '.join(c['terms'][:5])})" if c["terms"] else ""
        where = f" [index {c['index']}]" if c.get("index") else ""
        lines.append(f"{i}. {c['label']}{about}: {c['size']:,} nodes{where}")
        if c["sentence"]:
            lines.append(f"   \"{c['sentence']['text']}\"")
    return lines


def merged_answer(answers: dict, query: str | None = None, topics: int = 5) -> dict | None:
    """The global answer over several indexes searched as one: ``answers`` is ``{index name:
    global_answer(...)}`` (None for an index without one); communities are each index's own, so
    the answer lists the ``topics`` largest of all of them (each index's own largest are among
    its answer's, so none is missed), largest first (ties: the indexes' order, then each index's
    order), each naming its index (``"index"`` in every topic). None when no index answered."""
    given = {name: a for name, a in answers.items() if a is not None}
    if not given:
        return None
    pool = [(-t["size"], n, i, dict(t, index=name)) for n, (name, a) in enumerate(given.items())
            for i, t in enumerate(a["topics"])]
    chosen = [t for *_, t in sorted(pool, key=lambda x: x[:3])[:topics]]
    total = sum(a["total"] or 0 for a in given.values())
    nodes = sum(a["nodes"] or 0 for a in given.values())
    notices = [f"index {name}: {a['notice']}" for name, a in given.items() if a.get("notice")]
    lines = list(notices)
    if chosen:
        lines.append(f"{nodes:,} nodes in {total:,} communities over {len(given)} indexes; the largest "
                     f"{len(chosen)}:")
        lines += _topic_lines(chosen)
    return {"query": query, "answer": "\n".join(lines), "topics": chosen, "total": total, "nodes": nodes,
            "notice": "; ".join(notices) or None}
