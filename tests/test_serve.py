"""``kgsearch serve``: the JSON API returns exactly what the CLI's ``--json`` prints (parsed, timings
aside), hostile indexed text renders inert in every page, no path outside the routes is served,
bounds on requests (size, host, method, time), 200 concurrent requests, a reindex and a replaced
index file picked up without a restart, and the command end to end. The real-browser test is in
tests/test_serve_browser.py."""
from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import SHOP, no_timings, serving, write_files

from kgsearch.cli import main
from kgsearch.indexer import IndexOptions, index_paths
from kgsearch.serve import App, Holder
from kgsearch.serve import holder as holder_mod

ROOT = Path(__file__).resolve().parents[1]
NO_EMBED = IndexOptions(settings={"embed": False})
HOSTILE = ("<script>alert('pwned')</script> \x1b[2J\x1b]0;title\x07 \u202etxt.exe \"><img src=x onerror=alert(1)> "
           "<svg onload=alert(2)> javascript:alert(3) \x08\x9b")          # (a NUL byte would make it a binary file)
FILES = {
    **SHOP,
    "notes/pricing.md": "# Pricing\n\nDiscounts apply at checkout, see [[cart]]. #shop\n",
    "notes/cart.md": "# Cart\n\nThe cart holds the items. See [[pricing]].\n",
}


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    root = tmp / "proj"
    write_files(root, FILES)
    hostile = root / "notes" / "evil <b>&'\".md"
    hostile.write_text(f"# Evil {HOSTILE}\n\nBody {HOSTILE}\n\n{'x' * 200_000}\n\nlinks to [[cart]]\n", encoding="utf-8")
    db = tmp / "proj.db"
    index_paths(db, [str(root)], NO_EMBED)
    return root, db


@pytest.fixture(scope="module")
def app(proj):
    _, db = proj
    h = Holder(str(db))
    yield App({"index": h}, {"127.0.0.1", "localhost", "::1", ""})
    h.close()


def get(app, target: str, method: str = "GET", body: bytes = b"", **headers):
    st, hd, payload = app.handle(method, target, {"host": "127.0.0.1:8765", **headers}, body)
    return st, hd, payload


def cli_json(capsys, *args) -> object:
    capsys.readouterr()
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------- the API is the CLI's --json
@pytest.mark.parametrize("target,argv", [
    ("/api/search?q=cart+discount", ["search", "cart discount", "--no-cache"]),
    ("/api/search?q=apply_discount&k=3&explain=1", ["search", "apply_discount", "-k", "3", "--explain", "--no-cache"]),
    ("/api/search?q=who+calls+apply_discount&intent=relation&fusion=rrf",
     ["search", "who calls apply_discount", "--intent", "relation", "--fusion", "rrf", "--no-cache"]),
    ("/api/search?q=cart&channels=bm25&group=file", ["search", "cart", "--channels", "bm25", "--group", "file", "--no-cache"]),
    ("/api/show?node=Cart", ["show", "Cart"]),
    ("/api/show?node=md%3Anotes%2Fcart&edges=1", ["show", "md:notes/cart", "--edges", "1"]),
    ("/api/related?node=Cart", ["related", "Cart"]),
    ("/api/related?node=md%3Anotes%2Fpricing&direction=out&limit=2", ["related", "md:notes/pricing", "--direction", "out",
                                                                      "--limit", "2"]),
    ("/api/context?task=add+an+item+to+the+cart&budget=500", ["context", "add an item to the cart", "--budget", "500",
                                                              "--json"]),
    ("/api/stats", ["stats"]),
    ("/api/why?q=cart&node=Cart", ["why", "cart", "Cart"]),
])
def test_api_returns_what_the_cli_prints_with_json(app, proj, capsys, target, argv):
    _, db = proj
    st, hd, payload = get(app, target)
    assert st == 200, payload
    assert hd["Content-Type"].startswith("application/json")
    want = cli_json(capsys, "--db", str(db), *argv, *(["--json"] if "--json" not in argv else []))
    assert no_timings(json.loads(payload)) == no_timings(want)


def test_api_equals_the_cli_given_a_relative_db(proj, capsys, monkeypatch):
    """`kgsearch stats --db proj.db --json` (a relative --db, as a user types it) said "db": "proj.db"
    where /api/stats (and the MCP tool) said the absolute path; over two indexes, the search's
    "indexes" too."""
    _, db = proj
    monkeypatch.chdir(db.parent)
    app = App({"proj": Holder(db.name)})
    st, _, body = app.handle("GET", "/api/stats", {})
    assert st == 200 and json.loads(body) == cli_json(capsys, "stats", "--db", db.name, "--json")
    assert json.loads(body)["db"] == str(db)
    shutil.copy(db, db.parent / "twin.db")
    app = App({"proj": Holder(db.name), "twin": Holder("twin.db")})
    st, _, body = app.handle("GET", "/api/search?q=cart&k=3", {})
    want = cli_json(capsys, "search", "cart", "-k", "3", "--db", db.name, "--db", "twin.db", "--json", "--no-cache")
    got = json.loads(body)
    assert st == 200 and no_timings(got)["indexes"] == no_timings(want)["indexes"]
    assert [i["db"] for i in want["indexes"]] == [str(db), str(db.parent / "twin.db")]


def test_api_context_from_files_and_post(app, proj, capsys):
    root, db = proj
    f = str(root / "shop" / "cart.py")
    st, _, payload = get(app, "/api/context", "POST", json.dumps({"files": [f], "budget": 300}).encode(),
                         **{"content-type": "application/json"})
    assert st == 200, payload
    want = cli_json(capsys, "--db", str(db), "context", "--files", f, "--budget", "300", "--json")
    assert no_timings(json.loads(payload)) == no_timings(want)


@pytest.mark.parametrize("target,status,words", [
    ("/api/search", 400, "missing parameter 'q'"),
    ("/api/search?q=x&k=0", 400, "'k' must be from 1"),
    ("/api/search?q=x&k=ten", 400, "'k' must be a whole number"),
    ("/api/search?q=x&k=%D9%A3", 400, "'k' must be a whole number"),          # Arabic-Indic 3: int() reads it
    ("/api/search?q=x&k=%EF%BC%93", 400, "'k' must be a whole number"),       # fullwidth 3
    ("/api/search?q=x&diversity=nan", 400, "'diversity' must be a number"),
    ("/api/search?q=x&diversity=%EF%BC%91", 400, "'diversity' must be a number"),
    ("/api/search?q=x&fusion=magic", 400, "unknown fusion"),
    ("/api/show?node=no-such-node", 404, "no node"),
    ("/api/related?node=Cart&types=nope", 400, "parameter 'types': no edge type 'nope' in this index; it has: "),  # (was the CLI's --types)
    ("/api/related?node=Cart&direction=sideways", 400, "direction"),
    ("/api/search?q=x&db=other", 404, "no index named"),
    ("/api/search?q=%20%20", 400, "parameter 'q' is blank"),          # searched for nothing: 200 and no hits
    ("/api/search?q=%00%00", 400, "parameter 'q' is blank"),
    ("/api/why?q=%20&node=Cart", 400, "parameter 'q' is blank"),
    ("/api/show?node=%20", 400, "parameter 'node' is blank"),
    ("/api/context?task=%20%0A", 400, "parameter 'task' is blank"),
    ("/api/context?diff=zz", 400, "parameter 'diff': not a unified diff"),   # was 200 and an empty context
    # a parameter the endpoint does not take: was ignored (a typo's default budget, k, ... and no word of it)
    ("/api/context?task=cart&budgte=400", 400, "unknown parameter 'budgte' for /api/context; it takes: task, files, "
                                               "diff, budget, k, kind, path, exclude_path, tag, lang, modified_since, "
                                               "root, db"),
    ("/api/search?q=cart&kk=3", 400, "unknown parameter 'kk' for /api/search; it takes: q, k, intent,"),
    ("/api/show?node=Cart&limit=3", 400, "unknown parameter 'limit' for /api/show; it takes: node, edges, db"),
    ("/api/stats?verbose=1", 400, "unknown parameter 'verbose' for /api/stats; it takes: db"),
])
def test_api_errors_are_json_with_a_status(app, target, status, words):
    st, hd, payload = get(app, target)
    assert st == status
    err = json.loads(payload)
    assert err["status"] == status and words in err["error"]


def test_api_json_body_with_a_misspelt_parameter_is_400(app):
    st, _, payload = get(app, "/api/context", "POST", json.dumps({"task": "cart", "budegt": 300}).encode(),
                         **{"content-type": "application/json"})
    assert st == 400 and "unknown parameter 'budegt' for /api/context" in json.loads(payload)["error"]
    st, _, payload = get(app, "/api/context", "POST", json.dumps({"task": "cart", "budget": 300, "k": None}).encode(),
                         **{"content-type": "application/json"})
    assert st == 200                                    # null: a parameter not given, as before


# --------------------------------------------------------------------------- hostile text, paths, bounds
class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]

    def handle_data(self, data):
        self.text.append(data)


SAFE_TAGS = {"html", "head", "meta", "title", "link", "body", "nav", "b", "a", "form", "input", "button", "div",
             "label", "select", "option", "ol", "li", "span", "details", "summary", "table", "tr", "td", "th", "p",
             "h1", "h2", "h3", "pre", "section", "ul", "svg", "defs", "marker", "path", "line", "circle", "text",
             "rect", "mark", "textarea", "fieldset", "legend", "br"}


def inert(payload: bytes) -> str:
    page = payload.decode("utf-8")
    p = Tags()
    p.feed(page)
    assert set(p.tags) <= SAFE_TAGS, set(p.tags) - SAFE_TAGS
    for tag, k, v in p.attrs:
        assert not k.startswith("on"), (tag, k, v)
        if k in ("href", "src", "action"):
            assert v.startswith("/") and not v.startswith("//"), (tag, k, v)
    for bad in ("\x1b", "\x07", "\u202e", "\x00", "\x9b"):
        assert bad not in page
    return "".join(p.text)


def test_hostile_text_renders_inert_on_every_page(app, proj):
    pages = []
    st, _, payload = get(app, "/?q=evil+pwned&explain=1")
    assert st == 200 and b"Evil" in payload
    pages.append(payload)
    key = next(h["key"] for h in json.loads(get(app, "/api/search?q=evil+pwned")[2])["hits"] if "evil" in h["key"])
    from urllib.parse import quote

    st, _, payload = get(app, f"/node?node={quote(key, safe='')}")
    assert st == 200
    pages.append(payload)
    assert len(payload) < 60_000                       # a 200,000-character line is cut on the page
    st, _, payload = get(app, "/node?node=md%3Anotes%2Fcart")        # the hostile note in its neighbourhood
    assert st == 200 and b"Evil" in payload
    pages.append(payload)
    st, _, payload = get(app, "/context", "POST", b"task=evil+pwned&budget=2000",
                         **{"content-type": "application/x-www-form-urlencoded"})
    assert st == 200
    pages.append(payload)
    pages.append(get(app, "/?q=" + quote(HOSTILE))[2])             # the query itself, echoed in the form
    for payload in pages:
        text = inert(payload)
        assert "\\x1b[2J" in text and "\\u202etxt.exe" in text     # shown, escaped, not obeyed
        assert "<script>alert('pwned')</script>" in text           # as text, not as a tag


@pytest.mark.parametrize("path", ["/etc/passwd", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "//etc/passwd",
                                  "/static/../../../etc/passwd", "/api/../../etc/passwd", "/node/../../etc/passwd",
                                  "/style.css/../../etc/passwd", "/proj.db", "/index.db", "/api/search/../../proj.db",
                                  "/..%2f..%2fetc%2fpasswd", "/%00"])
def test_nothing_outside_the_routes_is_served(app, path):
    st, _, payload = get(app, path)
    assert st == 404
    assert b"root:" not in payload and b"SQLite format" not in payload


def test_request_bounds(app, proj):
    assert get(app, "/", **{"host": "evil.example:8765"})[0] == 403     # DNS rebinding
    assert get(app, "/", **{"host": "localhost:8765"})[0] == 200
    assert get(app, "/", "PUT")[0] == 405
    assert get(app, "/stats", "POST", b"x=1")[0] == 405
    st, _, payload = get(app, "/api/search", "POST", b"{not json", **{"content-type": "application/json"})
    assert st == 400 and "not valid JSON" in json.loads(payload)["error"]
    _, db = proj
    h = Holder(str(db), limit=0.0)
    orig = holder_mod.PROGRESS_STEPS
    holder_mod.PROGRESS_STEPS = 1                      # every SQLite step checks the (already past) deadline
    try:
        st, _, payload = App({"i": h}).handle("GET", "/api/stats", {})
    finally:
        holder_mod.PROGRESS_STEPS = orig
        h.close()
    assert st == 503 and "longer than 0s" in json.loads(payload)["error"]


# --------------------------------------------------------------------------- over HTTP
@pytest.fixture
def live(proj):
    _, db = proj
    h = Holder(str(db))
    with serving({"index": h}) as url:
        yield url
    h.close()


def fetch(url: str, data: bytes | None = None, timeout: float = 120) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, data=data, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_200_concurrent_requests_all_answered(live):
    targets = ["/api/search?q=cart", "/?q=discount+rules", "/api/show?node=Cart", "/node?node=md%3Anotes%2Fcart",
               "/api/related?node=Cart", "/api/stats", "/style.css", "/api/search?q=apply_discount&explain=1"]
    results: list = [None] * 200
    barrier = threading.Barrier(50)

    def one(i):
        if i < 50:
            barrier.wait()
        results[i] = fetch(live + targets[i % len(targets)])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert [r[0] for r in results] == [200] * 200
    for i, (_, body) in enumerate(results):
        if targets[i % len(targets)].startswith("/api/"):
            json.loads(body)


def test_long_and_oversized_requests_over_http(live):
    st, _ = fetch(live + "/?q=" + "a" * 20_000)
    assert st == 414
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(live)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.putrequest("POST", "/api/search")
    conn.putheader("Content-Length", "1000001")        # refused before a byte of the body is read
    conn.endheaders()
    assert conn.getresponse().status == 413
    conn.close()
    st, body = fetch(live + "/api/search", data=b"q=cart+items&k=2")
    assert st == 200 and len(json.loads(body)["hits"]) == 2


def test_a_reindex_and_a_replaced_index_are_picked_up_without_restart(tmp_path):
    root = tmp_path / "v"
    write_files(root, {"a.md": "# A\n\nfirst note\n"})
    db = tmp_path / "i.db"
    index_paths(db, [str(root)], NO_EMBED)
    app = App({"i": Holder(str(db))})
    ask = lambda q: [h["key"] for h in json.loads(app.handle("GET", f"/api/search?q={q}", {})[2])["hits"]]  # noqa: E731
    assert ask("platypus") == []
    (root / "b.md").write_text("# B\n\nthe platypus lays eggs\n")
    index_paths(db, [str(root)], NO_EMBED)                          # a reindex while the server runs
    assert ask("platypus") == ["md:b"]
    other = tmp_path / "other"
    write_files(other, {"c.md": "# C\n\nthe echidna too\n"})
    new = tmp_path / "new.db"
    index_paths(new, [str(other)], NO_EMBED)
    os.replace(new, db)                                             # as doctor --rebuild swaps a file in
    for side in ("-wal", "-shm"):
        if Path(str(new) + side).exists():
            os.replace(str(new) + side, str(db) + side)
    assert ask("echidna") == ["md:c"] and ask("platypus") == []


def test_the_server_never_writes_to_the_index(proj, app):
    import hashlib

    _, db = proj

    def state():            # the database and its write-ahead log, byte for byte (-shm is readers' shared memory)
        return [hashlib.sha256(Path(p).read_bytes()).hexdigest() if Path(p).exists() else None
                for p in (db, str(db) + "-wal")]

    get(app, "/api/stats")
    before = state()
    for t in ("/?q=cart", "/api/search?q=cart", "/node?node=md%3Anotes%2Fcart", "/api/context?task=cart",
              "/api/why?q=cart&node=Cart"):
        assert get(app, t)[0] == 200
    assert state() == before


# --------------------------------------------------------------------------- the command
def test_cli_serve_end_to_end_and_the_warning_for_other_addresses(proj):
    _, db = proj
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for host, warned in (("127.0.0.1", False), ("0.0.0.0", True)):
        p = subprocess.Popen([sys.executable, "-m", "kgsearch", "--db", str(db), "serve", "--host", host, "--port", "0"],
                             stderr=subprocess.PIPE, text=True, env=env)
        try:
            lines = []
            while True:
                line = p.stderr.readline()
                assert line, "".join(lines)
                lines.append(line)
                m = re.search(r"on http://[^:]+:(\d+)/", line)
                if m:
                    break
            assert any(ln.startswith("warning: serving on 0.0.0.0") for ln in lines) == warned
            st, body = fetch(f"http://127.0.0.1:{m.group(1)}/api/search?q=cart")
            assert st == 200 and json.loads(body)["hits"]
            p.send_signal(signal.SIGTERM)
            assert p.wait(60) == 0
        finally:
            if p.poll() is None:
                p.kill()
            p.wait()


def test_cli_serve_on_a_missing_index_is_one_line_exit_4(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "kgsearch", "--db", str(tmp_path / "none.db"), "serve", "--port", "0"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 4 and r.stderr.count("\n") == 1


@pytest.mark.parametrize("host, fix", [("192.0.2.1", "pick another --host"), ("no-such-host.invalid", "pick another --host"),
                                       ("127.0.0.1", "pick another --port")])
def test_cli_serve_that_cannot_listen_names_what_to_change(proj, host, fix):
    """An address not of this machine (or no such name) said "pick another --port", which cannot
    help; a port in use still says so."""
    import socket

    _, db = proj
    port = "0"
    busy = None
    if host == "127.0.0.1":
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = str(busy.getsockname()[1])
    try:
        r = subprocess.run([sys.executable, "-m", "kgsearch", "serve", "--db", str(db), "--host", host, "--port", port],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    finally:
        if busy is not None:
            busy.close()
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and fix in r.stderr, r.stderr


def test_a_json_null_parameter_is_not_given(tmp_path):
    """POST {"q": ..., "kind": null, "k": null} (a client's "not set"): before, null became the
    text "None": no hits and "no node matches the filters kind:None", or a 400 for k."""
    from kgsearch.indexer import index_paths
    from kgsearch.serve.holder import Holder
    from kgsearch.serve.server import App

    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "a.md").write_text("# A\n\nnightly rsync backup\n", encoding="utf-8")
    db = tmp_path / "v.db"
    index_paths(db, [str(tmp_path / "v")])
    h = Holder(str(db))
    try:
        app = App({"index": h}, {"127.0.0.1", "localhost", "::1", ""})
        head = {"host": "127.0.0.1:8765", "content-type": "application/json"}
        for body in ({"q": "rsync", "kind": None, "k": None, "intent": None}, {"q": "rsync", "kind": [None, "note"]}):
            st, _, payload = app.handle("POST", "/api/search", head, json.dumps(body).encode())
            d = json.loads(payload)
            assert st == 200 and [x["key"] for x in d["hits"]] == ["md:a"] and d["notices"] == [], body
    finally:
        h.close()


def test_a_corrected_search_page_links_the_search_as_typed(app):
    """The page of 'dicsount' (no such word) shows the results for 'discount' and a link that
    searches the words as typed, other fields kept; that page has no correction."""
    st, _, payload = get(app, "/?q=dicsount&kind=note")
    html = payload.decode()
    assert st == 200 and "Results for <b>discount</b>" in html
    link = re.search(r"<a href='([^']*correct=0[^']*)'>search for <i>dicsount</i> as typed</a>", html).group(1)
    assert link == "/?q=dicsount&amp;kind=note&amp;correct=0"
    st, _, payload = get(app, link.replace("&amp;", "&"))
    assert st == 200 and "as typed</a>" not in payload.decode() and "Results for" not in payload.decode()
    api = json.loads(get(app, "/api/search?q=dicsount&correct=0")[2])
    assert api["corrections"] == [] and json.loads(get(app, "/api/search?q=dicsount")[2])["corrections"] == \
        [["dicsount", "discount"]]


@pytest.mark.parametrize("body, words", [
    (b'{"q": {"a": 1}}', "parameter 'q' must be a string, a number or a list of them, got a JSON object"),
    (b'{"q": "cart", "kind": [["function"]]}', "parameter 'kind' must be a string, a number or a list of them"),
])
def test_a_json_body_value_that_is_an_object_is_400(app, body, words):
    """POST {"q": {"a": 1}} searched for the text "{'a': 1}" (200)."""
    st, _, payload = get(app, "/api/search", "POST", body, **{"content-type": "application/json"})
    assert st == 400 and words in json.loads(payload)["error"]



def test_the_search_form_gives_back_the_query_as_typed(app):
    """A query holding ESC came back in the form as the four characters \\x1b, so resubmitting the
    form searched for them. The form's fields hold the characters typed (numeric references in
    the page, no raw control byte); what the page shows of the query stays escaped."""
    from urllib.parse import quote

    typed = "evil \x1b[2J \u202etxt \x07\x08\x7f \"'<b>&amp;"
    st, _, payload = get(app, "/?q=" + quote(typed) + "&path=" + quote("notes/\x1b"))
    assert st == 200
    page = payload.decode("utf-8")
    # what a browser reads back (HTML's rule: a numeric reference to a C0 control, DEL or a bidi
    # control is that character; Python's html.unescape drops them, so it is not used for those)
    fields = {m[1]: html_lib.unescape(re.sub(r"&#x([0-9a-f]+);", lambda r: chr(int(r[1], 16)), m[2]))
              for m in re.finditer(r"<input [^>]*?name='?(\w+)'? [^>]*?value='([^']*)'", page)}
    assert fields["q"] == typed and fields["path"] == "notes/\x1b"
    text = inert(payload)                         # the rest of the page: escaped, inert
    assert "\\x1b[2J" in text and "\\u202etxt" in text
    st, _, payload = get(app, "/context", "POST", ("task=" + quote(typed)).encode(),
                         **{"content-type": "application/x-www-form-urlencoded"})
    area = re.search(r"<textarea name=task[^>]*>([^<]*)</textarea>", payload.decode("utf-8"))[1]
    assert html_lib.unescape(re.sub(r"&#x([0-9a-f]+);", lambda r: chr(int(r[1], 16)), area)) == typed
    inert(payload)


@pytest.mark.parametrize("target, body, headers, status, words", [
    ("/api/search?q=x&k=a%5Cb", b"", {}, 400, "parameter 'k' must be a whole number, got 'a\\b'"),
    ("/api/search?q=x&diversity=a%5Cb", b"", {}, 400, "parameter 'diversity' must be a number, got 'a\\b'"),
    ("/api/related?node=Cart&direction=a%5Cb", b"", {}, 400, "parameter 'direction' must be out, in or both, got 'a\\b'"),
    ("/api/search?q=x&a%5Cb=1", b"", {}, 400, "unknown parameter 'a\\b' for /api/search; it takes: "),
    ("/api/search", b'{"q": "x", "a\\\\b": {}}', {"content-type": "application/json"}, 400,
     "parameter 'a\\b' must be a string, a number or a list of them"),
    ("/api/no\\page", b"", {}, 404, "no page '/api/no\\page' here"),
    ("/", b"", {"host": "evil\\host"}, 403, "unexpected Host 'evil\\host': this server answers requests to "),
])
def test_http_messages_quote_what_was_sent_as_sent(app, target, body, headers, status, words):
    """A parameter's value or name, a page's path and a Host header came back with repr: a
    backslash doubled ('a\\\\b'), unlike `no index named` (kgsearch.lines.quoted)."""
    st, _, payload = get(app, target, "POST" if body else "GET", body, **headers)
    text = payload.decode()
    said = json.loads(text)["error"] if text.startswith("{") else html_lib.unescape(text)
    assert st == status and words in said, said
