"""Every benchmark command the README and docs/benchmarks.md cite (and the two the Termux check and issue 25 use:
``arm64_check``, ``golden``) run end to end on tiny inputs, so none of them can rot unnoticed:
a restructure once left ``bench/text_bench.py --quick`` dying at its fuzzy step on an attribute
the import check cannot see. Each runs as its own process, with the shared benchmark data
(``KGSEARCH_SHARED``), the results folder (``KGSEARCH_BENCH_RESULTS``) and the scratch folder
(``KGSEARCH_BENCH_WORK``) pointed at a temporary tree: a few documents, one tiny code task, a
200-node scaling corpus. No timing is asserted; a command must exit 0 and write its results.
A command whose subject is the comparison with rivals (graph_bench: igraph, networkx, scipy,
all in the ``test`` extra) asks for them with ``need``; the others leave a missing rival out
and say so."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

WORDS = ("sourdough starter flour water rye crust oven steam stone tomato basil garden soil root compost "
         "seed sprout harvest yeast dough knead proof bake loaf crumb backup sync phone battery notes "
         "graph walk rank search index query token stem").split()

SHOP = {
    "shop/__init__.py": '"""A tiny shop."""\n',
    "shop/cart.py": '''"""Shopping cart."""
from shop.pricing import apply_discount


class Cart:
    """A cart of items."""

    def __init__(self):
        self.items = []

    def add_item(self, item):
        """Add one item to the cart."""
        self.items.append(item)
        return apply_discount(self)

    def checkout_total(self):
        """Total price after discounts."""
        return sum(self.items)
''',
    "shop/pricing.py": '''"""Prices and discounts."""


def apply_discount(cart):
    """Apply the discount rules to a cart total."""
    return cart


def price_of(item):
    """The price of one item."""
    return float(item)
''',
    "shop/tax.py": '''"""Taxes."""
from shop.pricing import price_of


def vat(item, rate=0.2):
    """Value added tax on one item."""
    return price_of(item) * rate
''',
    "tests/test_cart.py": '''from shop.cart import Cart


def test_add_item():
    assert Cart().add_item(1)
''',
    "README.md": "# Shop\n\nA tiny shop with a cart, prices and taxes.\n",
}


def _write(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def _beir(folder: Path, n_docs: int = 40, n_queries: int = 8, seed: int = 3) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    docs = []
    for i in range(n_docs):
        topic = WORDS[(i % 5) * 7:(i % 5) * 7 + 9]
        words = [rng.choice(topic) for _ in range(rng.randint(30, 90))] + [rng.choice(WORDS) for _ in range(4)]
        docs.append({"_id": f"d{i}", "title": " ".join(words[:3]), "text": " ".join(words) + "."})
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    qs = [{"_id": f"q{j}", "text": " ".join(docs[j * 3]["text"].split()[:4])} for j in range(n_queries)]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                      + "".join(f"q{j}\td{j * 3}\t1\n" for j in range(n_queries)))


def _code_tasks(root: Path) -> None:
    tree = "shop@0000000000"
    _write(root / "repos" / tree, SHOP)
    task = root / "tasks" / "tiny__shop"
    task.mkdir(parents=True)
    (task / "meta.json").write_text(json.dumps({"repo": "tiny/shop", "source_tree": tree}))
    qs = [{"_id": "tiny__shop-1", "text": "Cart.add_item applies the discount twice when a cart is checked out"},
          {"_id": "tiny__shop-2", "text": "vat uses the wrong price of an item with a discount"}]
    (task / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    (task / "qrels.files.tsv").write_text("query-id\tcorpus-id\tscore\ntiny__shop-1\tshop/cart.py\t1\n"
                                          "tiny__shop-2\tshop/tax.py\t1\n")
    (task / "qrels.symbols.tsv").write_text("query-id\tcorpus-id\tscore\ntiny__shop-1\tshop/cart.py::Cart.add_item\t1\n"
                                            "tiny__shop-2\tshop/tax.py::vat\t1\n")
    (task / "qrels.tests.tsv").write_text("query-id\tcorpus-id\tscore\ntiny__shop-1\ttests/test_cart.py\t1\n")
    (task / "corpus.files.txt").write_text("shop/__init__.py\nshop/cart.py\nshop/pricing.py\nshop/tax.py\n")
    spans = [("shop/cart.py", "Cart", "class", 5, 18), ("shop/cart.py", "Cart.add_item", "method", 11, 14),
             ("shop/tax.py", "vat", "function", 5, 7), ("shop/pricing.py", "price_of", "function", 9, 11)]
    (task / "corpus.symbols.jsonl").write_text("".join(json.dumps(
        {"_id": f"{p}::{q}", "title": q, "text": "", "metadata": {"path": p, "kind": k, "spans": [[a, b]]}}) + "\n"
        for p, q, k, a, b in spans))
    (root / "index.json").write_text(json.dumps([{"task_dir": "tasks/tiny__shop", "repo": "tiny/shop",
                                                  "source_tree": f"repos/{tree}", "swebench_lite_split": "dev"}]))


def _scale_corpus(work: Path, n: int = 200, seed: int = 5) -> tuple[Path, Path]:
    """A scaling corpus in make_scale_corpus.py's layout: KG JSONL shards, queries, stats."""
    rng = random.Random(seed)
    corpus = work / f"corpus-{n}"
    corpus.mkdir(parents=True)
    nodes = [f"n{i}" for i in range(n)]
    per = 50
    for s in range(0, n, per):
        lines = []
        for i in range(s, min(n, s + per)):
            topic = WORDS[(i % 5) * 7:(i % 5) * 7 + 9]
            lines.append({"node_id": nodes[i], "name": " ".join(rng.sample(topic, 2)), "type": "doc",
                          "description": " ".join(rng.choice(topic) for _ in range(25)) + "."})
            for _ in range(2):
                lines.append({"source": nodes[i], "target": rng.choice(nodes), "edge_type": "related"})
        (corpus / f"shard-{s // per:05d}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    queries = work / f"corpus-{n}.queries100.json"
    queries.write_text(json.dumps([{"set": "tiny", "text": " ".join(rng.sample(WORDS, 3))} for _ in range(6)]))
    (work / f"corpus-{n}.stats.json").write_text(json.dumps({"n_requested": n, "nodes": n, "edges": 2 * n}))
    return corpus, queries


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The temporary tree every command runs against, and the environment pointing at it."""
    base = tmp_path_factory.mktemp("bench")
    shared = base / "shared"
    _beir(shared / "bench" / "scifact")
    _code_tasks(shared / "bench" / "code-tasks")
    src = _write(base / "src", {k: v for k, v in SHOP.items() if k.startswith("shop/")})
    work, results = base / "work", base / "results"
    work.mkdir()
    results.mkdir()
    scale_work = work / "scale"
    scale_work.mkdir()
    corpus, queries = _scale_corpus(scale_work)
    env = {**os.environ, "KGSEARCH_SHARED": str(shared), "KGSEARCH_BENCH_WORK": str(work),
           "KGSEARCH_BENCH_RESULTS": str(results), "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(base / "data"),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env.pop("KGSEARCH_DB", None)
    return {"base": base, "shared": shared, "src": src, "work": work, "results": results, "env": env,
            "corpus": corpus, "queries": queries, "scale_work": scale_work}


def run(tiny, script: str, *args, ok=(0,)) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, str(BENCH / script), *map(str, args)], env=tiny["env"], cwd=str(ROOT),
                       capture_output=True, text=True, timeout=900)
    assert p.returncode in ok, f"{script} {args} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    return p


def results(tiny, name: str) -> dict:
    md = tiny["results"] / f"{name}.md"
    assert md.is_file() and md.read_text().strip(), f"{md} missing or empty"
    return json.loads((tiny["results"] / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def rows_db(tiny):
    """The scaling corpus indexed with per-node rows (graph_adjacency_rows=0)."""
    from kgsearch.indexer import IndexOptions, index_paths

    db = tiny["base"] / "rows.db"
    index_paths(db, [str(tiny["corpus"])], IndexOptions(settings={"graph_adjacency_rows": 0}))
    return db


# ---------------------------------------------------------------------------- quality and rankings
def test_golden_captures_and_compares(tiny):
    out = tiny["base"] / "golden.json"
    run(tiny, "golden.py", "capture", out, "--work", tiny["work"] / "golden", "--queries-per-set", 2)
    cap = json.loads(out.read_text())
    assert cap["meta"]["searches"] == len(cap["runs"]) > 0 and cap["meta"]["commit"]
    assert any(k.startswith("scifact|") for k in cap["runs"]) and any(k.startswith("code|") for k in cap["runs"])
    p = run(tiny, "golden.py", "compare", out, out, "--md", tiny["results"] / "golden.md")
    assert json.loads(p.stdout.splitlines()[-1])["equal"] is True


def test_quality(tiny):
    run(tiny, "quality.py", "--sets", "scifact", "--index-dir", tiny["work"] / "quality")
    r = results(tiny, "quality")
    assert 0 < r["sets"]["scifact"]["pipeline"]["ndcg@10"] <= 1 and r["sets"]["scifact"]["ablation"]
    assert r["meta"]["machine"]["cores"] and r["meta"]["commit"]


def test_code_tasks(tiny):
    run(tiny, "code_tasks.py", "--configs", "default,bm25", "--k", 20, "-q")
    r = results(tiny, "code_tasks")
    assert set(r["scores"]) == {"default", "bm25"} and r["scores"]["bm25"]["tiny/shop"]["n"] == 2


def test_code_tasks_loro(tiny):
    """`code_tasks.py --loro` (README, docs/code-tasks.md): one repository, so every fold falls
    back to the shipped constants; the rows, ablations and latency are there."""
    run(tiny, "code_tasks.py", "--loro", "--set", "python", "--cache", tiny["work"] / "loro", "--latency-runs", 1, "-q")
    r = results(tiny, "code_tasks_loro.python")
    py = r["python"]
    assert set(py["ablations"]) == {"follow", "lists", "netwalk", "paste", "modcontains"}
    assert py["loro"]["per_repo"]["tiny__shop"]["file_R@1"] is not None and py["latency"]["queries"] == 2
    assert py["chosen"]["tiny__shop"]["loro"] == "w1 f0.25 lists netwalk modcontains"    # no other repository: the shipped defaults
    p = run(tiny, "code_tasks.py", "--loro", "--set", "multi", "--cache", tiny["work"] / "loro", "-q", ok=(3,))
    assert "cannot read the multi set" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_context_bench(tiny):
    run(tiny, "context_bench.py", "--runs", 1, "--overhead-src", tiny["src"])
    r = results(tiny, "context")
    assert {"tasks", "overhead", "feedback"} <= set(r)


def test_context_identity(tiny):
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (the command archives a commit)")
    run(tiny, "context_identity.py", "--base", "HEAD", "--repos", "shop", "--demo-queries", 2)
    r = results(tiny, "context_identity")
    assert r["queries"] == r["identical"] == 4


# ---------------------------------------------------------------------------- speed of the parts
def test_text_bench_quick(tiny):
    run(tiny, "text_bench.py", "--quick", "--symbols", 300, "--queries", 20, "--runs", 1, "--out", tiny["results"])
    r = results(tiny, "text")
    assert r["fuzzy"]["queries"] > 0 and "kgsearch" in r["corpora"]["scifact"]


def test_graph_bench(tiny):
    need("igraph")                          # (its rivals, and its graph generator)
    need("networkx")
    need("scipy")                           # (networkx's pagerank and hits)
    run(tiny, "graph_bench.py", "--divide", 40, "--runs", 1, "--no-code", "--rwr-queries", 3, "--cnm-timeout", 20,
        "--nx-cnm-timeout", 20, "--sections", "graphs,rwr", "--out", tiny["results"] / "graph")
    r = results(tiny, "graph")
    assert r["graphs"] and r["rwr"]["rows"]


def test_embed_bench(tiny):
    run(tiny, "embed_bench.py", "--quick", "--texts", 40, "--vectors", 300, "--queries", 10, "--skip", "stdlib",
        "--out", tiny["results"])
    r = results(tiny, "embed")
    assert 0 < r["topk"]["vectors"] <= 300 and "scifact" in r["ndcg"]


def test_index_bench(tiny):
    run(tiny, "index_bench.py", "--src", tiny["src"], "--runs", 1, "--reindex-runs", 1, "--out-dir", tiny["results"])
    r = results(tiny, "index")
    assert set(r["modes"]) == {"embed", "no-embed"} and all(m["consistent"] for m in r["modes"].values())


def test_full_index_steps(tiny):
    run(tiny, "full_index_steps.py", tiny["base"] / "full.db", tiny["src"], "--out", "full_index_steps")
    r = results(tiny, "full_index_steps")
    assert set(r["steps"]) >= {"text", "graph"} and r["process_peak_mib"] > 0


# ---------------------------------------------------------------------------- large indexes, on a tiny one
def test_scale(tiny):
    corpus = tiny["scale_work"] / "corpus-200"
    before = {p.name: p.read_bytes() for p in corpus.iterdir()} if corpus.is_dir() else None
    run(tiny, "scale.py", "--sizes", 200, "--work", tiny["scale_work"], "--out-dir", tiny["results"],
        "--skip", "cli,dense,bm25s,pagerank", "--warm-runs", 1, "--cold-runs", 1)
    r = results(tiny, "scale")
    assert r["sizes"]["200"]["query_default"]["p50_ms"] > 0
    nodes = r["sizes"]["200"]["reindex_nodes"]          # the change kinds that change the node set
    assert [nodes[k]["nodes_added"] for k in ("node_appended", "file_added")] == [1, 1]
    assert [nodes[k]["nodes_removed"] for k in ("node_removed", "file_removed")] == [1, 1]
    assert all(nodes[k]["wall_s"] > 0 and nodes[k]["peak_rss_mb"] > 0
               for k in ("node_appended", "node_removed", "file_added", "file_removed"))
    md = (tiny["results"] / "scale.md").read_text()
    assert "reindex, a node appended to a file" in md and "reindex, that file removed" in md
    if before is not None:
        assert {p.name: p.read_bytes() for p in corpus.iterdir()} == before      # the corpus left as it was


def test_filters(tiny, rows_db):
    run(tiny, "filters.py", "--db", rows_db, "--queries", tiny["queries"], "--runs", 1, "--out", "filters")
    r = results(tiny, "filters")
    assert r["queries"] == 6 and r["rows"][0]["filter"] == "unfiltered" and len(r["rows"]) == 9
    assert all(row["set"] > 0 and row["p50_ms"] > 0 for row in r["rows"])
    assert all(row["k_back"] == 1.0 for row in r["rows"][1:])     # k hits whenever the set holds k


def test_graph_rows(tiny, rows_db):
    run(tiny, "graph_rows.py", "--db", rows_db, "--queries", tiny["queries"], "--runs", 1, "--out", "graph_rows")
    r = results(tiny, "graph_rows")
    assert r["indexes"][0]["queries"] == 6 and set(r["indexes"][0]["modes"]) == {"csr", "rows"}


def test_reindex_1m(tiny, rows_db):
    before = {p.name: p.read_bytes() for p in tiny["corpus"].iterdir()}
    out = tiny["results"] / "reindex.json"
    run(tiny, "reindex_1m.py", "--db", rows_db, "--corpus", tiny["corpus"], "--runs", 1, "--prof", "--tag", "after",
        "--out", out, "--md", tiny["results"] / "reindex.md")
    runs = json.loads(out.read_text())["after"]["runs"]
    assert len(runs) == 8 and all("step_peaks" in r for r in runs)
    kinds = {r["kind"]: r for r in runs}
    assert kinds["a node appended"]["steps"]["text"] and kinds["a new file with one node"]["files_loaded"] == 1
    assert {p.name: p.read_bytes() for p in tiny["corpus"].iterdir()} == before      # the corpus left as it was


def test_cold_cli(tiny, rows_db):
    run(tiny, "cold_cli.py", "--db", rows_db, "--queries", tiny["queries"], "--runs", 1, "--name", "cold_cli")
    r = results(tiny, "cold_cli")
    assert r["run"]["sides"]["this"]["cold_ms"]


def test_arm64_check(tiny):
    work, host = tiny["base"] / "arm", tiny["base"] / "host"
    host.mkdir()
    run(tiny, "arm64_check.py", "probe", "--out", host / "probe.json", "--runs", 1, "--work", work)
    run(tiny, "arm64_check.py", "search", "--db", work / "index.db", "--out", host / "arm64-index-on-host.json")
    (host / "host-index-on-arm64.json").write_text((host / "arm64-index-on-host.json").read_text())
    run(tiny, "arm64_check.py", "compare", "--arm", host / "probe.json", "--host-dir", host,
        "--out-dir", tiny["results"])
    assert results(tiny, "arm64")["ok"] is True


def test_query_margin(tiny, rows_db):
    """Two trees (here both this one) alternate; the answers must agree (exit 0) and every
    run is recorded."""
    run(tiny, "query_margin.py", "--before", ROOT, "--after", ROOT, "--runs", 1, "--db", rows_db,
        "--queries", tiny["queries"], "--out", tiny["results"] / "query_margin")
    r = results(tiny, "query_margin")
    assert [x["tree"] for x in r["runs"]] == ["before", "after"] and r["runs"][0]["p50"] > 0
    assert r["same_top10_ids_and_scores"] and r["same_hit_fields"] and r["runs"][0]["hwm_mib"] > 0
