"""The HTML pages, rendered from the same dictionaries the JSON API returns: the search page
(results, snippets, each score's breakdown), a node (its text, its edges grouped by type, a
drawing of its neighbourhood), ``context`` packing, and the index's statistics.

Everything from the index goes through :func:`~kgsearch.serve.html.esc`; no page has a script.
"""
from __future__ import annotations

import re
from urllib.parse import quote, urlencode

from .html import clip, esc, field, page, url
from .svg import neighbourhood

__all__ = ["search_page", "node_page", "context_page", "stats_page", "error_page", "FILTERS", "TEXT_LIMIT"]

TEXT_LIMIT = 20_000           # characters of a node's text shown on its page (the rest is counted)
SNIPPET_LIMIT = 600

# Query filters (kind, path, tag, lang, modified, root: kgsearch/query/filters.py FIELDS): one
# (parameter, label, placeholder) per flag. The search form shows an input for each, keeps its
# value, and search_options() in api.py passes it on.
def _filters() -> tuple[tuple[str, str, str], ...]:
    from ..query.filters import FIELDS

    out = []
    for f in FIELDS.values():
        for flag in (f.flag, f.exclude_flag):
            if flag:
                out.append((flag[2:].replace("-", "_"), flag[2:].replace("-", " "), f.metavar.lower()))
    return tuple(out)


FILTERS: tuple[tuple[str, str, str], ...] = _filters()


def _intents() -> list[str]:
    """The intents a search may force, from the intent registry (the CLI and MCP list the same)."""
    from ..query.intent import INTENT_NAMES

    return list(INTENT_NAMES)


def _marked(snippet: str, q: str) -> str:
    """The snippet escaped, with the engine's ``[term]`` marks shown as <mark> when the bracketed
    word shares its first four letters with a query word (literal brackets in the text stay)."""
    words = {w[:4].lower() for w in re.findall(r"\w+", q) if len(w) >= 2}
    text, cut = clip(snippet, SNIPPET_LIMIT)
    out, last = [], 0
    for m in re.finditer(r"\[([^\[\]\s]{1,80})\]", text):
        if m.group(1)[:4].lower() in words or any(m.group(1).lower().startswith(w) for w in words):
            out.append(esc(text[last:m.start()]))
            out.append(f"<mark>{esc(m.group(1))}</mark>")
            last = m.end()
    out.append(esc(text[last:]))
    return "".join(out) + (" …" if cut else "")


def _form(params: dict) -> str:
    def val(name, default=""):                    # a field's value as typed (see field())
        v = params.get(name)
        return field(v[-1] if v else default)

    intents = _intents()
    opts = "".join(f"<option value='{esc(i)}'{' selected' if val('intent') == i else ''}>{esc(i)}</option>"
                   for i in intents)
    intent = (f"<label>intent <select name=intent><option value=''>auto</option>{opts}</select></label>" if intents
              else f"<label>intent <input name=intent size=10 value='{val('intent')}' placeholder=auto></label>")
    filters = ""
    if FILTERS:
        filters = "<fieldset><legend>filters</legend>" + "".join(
            f"<label>{esc(label)} <input name='{esc(name)}' value='{val(name)}' placeholder='{esc(ph)}'></label> "
            for name, label, ph in FILTERS) + "</fieldset>"
    checked = " checked" if val("explain") in ("1", "on", "true") else ""
    return (f"<form class=search action='/' method=get role=search>"
            f"<input type=search name=q value='{val('q')}' placeholder='search your notes and code' autofocus>"
            f"<button>search</button><div class=opts>"
            f"<label>results <input class=num name=k type=number min=1 max=100 value='{val('k', '10')}'></label>"
            f"{intent}<label><input type=checkbox name=explain value=1{checked}> explain</label></div>{filters}</form>")


def _breakdown(h: dict) -> str:
    rows = "".join(f"<tr><td>{esc(n)}</td><td class=n>{c['score']:.4f}</td><td class=n>{c['rank']}</td>"
                   f"<td class=n>{c['norm']:.3f}</td></tr>" for n, c in h.get("channels", {}).items())
    sig = "".join(f"<tr><td>{esc(n)}</td><td class=n>{s['value']:.3f}</td><td class=n>× {s['weight']:.2f}</td>"
                  f"<td class=n>= {s['part']:.4f}</td></tr>" for n, s in h.get("signals", {}).items())
    adj = "".join(f"<tr><td>{esc(n)}</td><td class=n colspan=3>{v:+.4f}</td></tr>" if n in ("hits", "proximity", "shift", "file_members", "declaring_module")
                  else f"<tr><td>{esc(n)}</td><td class=n colspan=3>× {v:.4f}</td></tr>"
                  for n, v in h.get("adjustments", {}).items())
    return (f"<details><summary>why {h['score']:.4f}</summary><table><tr><th>channel</th><th>score</th><th>rank</th>"
            f"<th>norm</th></tr>{rows}<tr><th>signal</th><th>value</th><th>weight</th><th>part</th></tr>{sig}"
            f"{'<tr><th colspan=4>adjustments (additive, then factors)</th></tr>' + adj if adj else ''}</table></details>")


def _answer(ans: dict) -> str:
    """The summary intent's answer (kgsearch.explore.topics.global_answer / merged_answer): the
    largest communities, each with its central nodes (linked), terms, size and sentence."""
    topics = ans.get("topics") or []
    if not topics:
        return f"<p class=muted>{esc(ans.get('answer') or '')}</p>"
    where = {t.get("index") for t in topics} - {None}
    items = []
    for t in topics:
        db = t.get("index")
        central = ", ".join(f"<a href='{url('/node', node=c['key'], db=db)}'>{esc(c['name'])}</a>"
                            for c in t.get("central", [])[:5])
        sent = t.get("sentence") or {}
        items.append(f"<li><b>{esc(t.get('label') or '')}</b> <span class=meta>{int(t.get('size', 0)):,} nodes"
                     f"{' · ' + esc(db) if db else ''}</span>"
                     f"{'<div class=key>' + esc(', '.join(t['terms'])) + '</div>' if t.get('terms') else ''}"
                     f"{'<div class=snip>' + central + '</div>' if central else ''}"
                     f"{'<blockquote>' + esc(sent['text']) + '</blockquote>' if sent.get('text') else ''}</li>")
    head = (f"{int(ans.get('nodes') or 0):,} nodes in {int(ans.get('total') or 0):,} communities"
            f"{f' over {len(where)} indexes' if len(where) > 1 else ''}; the largest {len(topics)}:")
    return f"<section class=answer><h2>Main topics</h2><p class=muted>{esc(head)}</p><ol>{''.join(items)}</ol></section>"


def _loc(path, line) -> str:
    if not path:
        return ""
    return f" · {esc(path)}{':' + esc(line) if line else ''}"


def search_page(params: dict, resp: dict | None = None, error: str | None = None) -> bytes:
    q = (params.get("q") or [""])[-1]
    body = [_form(params)]
    if error:
        body.append(f"<p class=err>{esc(error)}</p>")
    if resp is not None:
        hits = resp.get("hits", [])
        it = resp.get("intent", {})
        if resp.get("corrections"):      # the same search, its words as typed (every other field kept)
            typed = urlencode({**{k: v for k, v in params.items() if k != "correct"}, "correct": ["0"]},
                              doseq=True, quote_via=quote)
            body.append(f"<p>Results for <b>{esc(resp.get('query', ''))}</b>; "
                        f"<a href='{esc('/?' + typed)}'>search for <i>{esc(q)}</i> as typed</a></p>")
        for n in resp.get("notices", []):
            body.append(f"<p class=muted>note: {esc(n)}</p>")
        if resp.get("answer"):
            body.append(_answer(resp["answer"]))
        if not hits:
            body.append(f"<p>No results for <b>{esc(q)}</b>.</p>")
        items = []
        for h in hits:
            index = f"<span class=meta> · {esc(h['index'])}</span>" if h.get("index") else ""
            members = ""
            if h.get("members"):
                members = "<ul>" + "".join(f"<li><a href='{url('/node', node=m.get('key'))}'>{esc(m.get('name'))}</a>"
                                           f" <span class=meta>{esc(m.get('kind'))}</span></li>"
                                           for m in h["members"][:8]) + "</ul>"
            items.append(f"<li><a href='{url('/node', node=h['key'], db=h.get('index'))}'><b>{esc(h['name'])}</b></a> "
                         f"<span class=meta>[{esc(h['kind'])}] {h['score']:.4f} {esc(h.get('methods', ''))}</span>{index}"
                         f"<div class=key>{esc(h['key'])}{_loc(h.get('path'), h.get('line'))}</div>"
                         f"{'<div class=snip>' + _marked(h['snippet'], q) + '</div>' if h.get('snippet') else ''}"
                         f"{members}{_breakdown(h) if h.get('channels') else ''}</li>")
        if items:
            body.append("<ol class=hits>" + "".join(items) + "</ol>")
        w = it.get("weights", {})
        total = resp.get("timings_ms", {}).get("total")
        body.append(f"<p class=muted>intent {esc(it.get('name'))} (embedding {w.get('embedding', 0):.2f}, text "
                    f"{w.get('text', 0):.2f}, graph {w.get('graph', 0):.2f}, intent {w.get('intent', 0):.2f}), fusion "
                    f"{esc(resp.get('fusion'))}, channels {esc('+'.join(resp.get('channels_run', [])) or '-')}"
                    f"{f', {total:.1f} ms' if isinstance(total, (int, float)) else ''} · "
                    f"<a href='{url('/api/search', **{k: v[-1] for k, v in params.items() if v})}'>JSON</a> · "
                    f"<a href='{url('/context', task=q)}'>pack as context</a></p>")
        for c, why in resp.get("channels_skipped", {}).items():
            body.append(f"<p class=muted>skipped {esc(c)}: {esc(why)}</p>")
    return page(q or "search", "".join(body))


def node_page(shown: dict, related: dict, db: str | None = None) -> bytes:
    n = shown["node"]
    text, cut = clip(n.get("text") or "", TEXT_LIMIT)
    parts = [f"<h1>{esc(n['name'])}</h1><p class=meta>[{esc(n['kind'])}] <span class=key>{esc(n['key'])}</span>"
             f"{_loc(n.get('path'), n.get('line_start'))}</p>"]
    if n.get("qualname") and n["qualname"] != n["name"]:
        parts.append(f"<p class=key>{esc(n['qualname'])}</p>")
    parts.append(neighbourhood(n, related, db))
    if text:
        parts.append(f"<pre class=body>{esc(text)}</pre>")
        if cut:
            parts.append(f"<p class=muted>… and {cut:,} more characters (<a href='{url('/api/show', node=n['key'], db=db)}'>"
                         f"all of it as JSON</a>)</p>")
    groups = related.get("edges", {})
    if groups:
        sec = []
        for etype, edges in groups.items():
            lis = "".join(f"<li>{'→' if e['direction'] == 'out' else '←'} <a href='{url('/node', node=e['key'], db=db)}'>"
                          f"{esc(e['name'])}</a> <span class=meta>[{esc(e['kind'])}] {e['weight']:g}</span></li>"
                          for e in edges)
            sec.append(f"<h3>{esc(etype)} <span class=meta>({len(edges)})</span></h3><ul>{lis}</ul>")
        more = related["total"] - related["shown"]
        parts.append(f"<section class=edges><h2>Edges</h2>{''.join(sec)}"
                     f"{f'<p class=muted>… and {more:,} more edges</p>' if more > 0 else ''}</section>")
    else:
        parts.append("<p class=muted>No edges.</p>")
    parts.append(f"<p class=muted><a href='{url('/api/show', node=n['key'], db=db)}'>JSON</a> · "
                 f"<a href='{url('/api/related', node=n['key'], db=db)}'>edges as JSON</a> · "
                 f"<a href='{url('/', q=n['name'])}'>search its name</a></p>")
    return page(n["name"], "".join(parts))


def context_page(params: dict, result=None, error: str | None = None) -> bytes:
    def val(name, default=""):                    # a field's value as typed (see field())
        v = params.get(name)
        return field(v[-1] if v else default)

    files = field("\n".join(params.get("files", [])))
    body = [f"<h1>Context</h1><form method=post action='/context'>"
            f"<label>task<textarea name=task placeholder='describe the task, or paste an issue'>{val('task')}</textarea>"
            f"</label><details><summary>or start from files</summary><textarea name=files "
            f"placeholder='one indexed file per line'>{files}</textarea></details><div class=opts>"
            f"<label>budget (tokens) <input class=wide name=budget type=number min=1 value='{val('budget', '8000')}'></label><button>pack</button></div></form>"]
    if error:
        body.append(f"<p class=err>{esc(error)}</p>")
    if result is not None:
        trimmed = sum(1 for it in result.items if it.get("form") != "full")
        body.append(f"<p class=muted>packed {len(result.items)} of {result.candidates} nodes ({trimmed} trimmed) in "
                    f"{result.used:,} of {result.budget:,} tokens (estimate: ceil(characters / 4)); cut {len(result.cut)}</p>"
                    f"<pre>{esc(result.text)}</pre>")
    return page("context", "".join(body))


def stats_page(st: dict) -> bytes:
    def table(d: dict, head: str) -> str:
        return (f"<table><tr><th>{esc(head)}</th><th>count</th></tr>" +
                "".join(f"<tr><td>{esc(k)}</td><td class=n>{v:,}</td></tr>" for k, v in d.items()) + "</table>")

    body = (f"<h1>Index</h1><p class=key>{esc(st['db'])}</p><p>{st['nodes']:,} nodes, {st['edges']:,} edges "
            f"({st['edges_unresolved']:,} unresolved), {st['files']:,} files, {st['db_bytes'] / 1e6:.1f} MB; generation "
            f"{st['generation']}; last indexed {esc(st.get('last_index_time_iso') or 'never')}</p>"
            f"<p class=muted>roots: {esc(', '.join(st.get('roots') or []) or '-')}</p>"
            f"{table(st['nodes_by_kind'], 'node kind')}<br>{table(st['edges_by_type'], 'edge type')}"
            f"<p class=muted><a href='/api/stats'>JSON</a></p>")
    return page("stats", body)


def error_page(status: int, message: str) -> bytes:
    return page(str(status), f"<h1>{status}</h1><p class=err>{esc(message)}</p>")
