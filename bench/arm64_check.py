"""The Python half of termux/arm64-check.sh: measure kgsearch on one machine, then compare two.

    python bench/arm64_check.py probe --out FILE [--runs N] [--work DIR]
        On this machine (the x86_64 host, or the arm64 tree under emulation): the README demo
        (`kgsearch demo "how do I back up my notes"` as a fresh process with a fresh data dir,
        timed), a fresh index of the demo corpus (timed), and the fixed query set below (top 10,
        keys and scores; timed passes). The index is kept as WORK/index.db for the other machine.
    python bench/arm64_check.py search --db DB --out FILE
        The fixed query set against an index built elsewhere (the other architecture's).
    python bench/arm64_check.py compare --arm A.json --host-dir DIR [--host-dir DIR...]
            [--tests SUMMARY] [--out-dir bench/results] [...]
        Same keys in the same order? Scores within TOLERANCE (when both sides have the same numpy)?
        Writes arm64.json and arm64.md and exits 1 when anything differs or a test failed.

Only the standard library and kgsearch (numpy through it): it runs inside the arm64 tree with
Debian's python3-numpy and nothing else installed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, write_results  # noqa: E402  (standard library only: fine in the arm64 tree)

DEMO_QUERY = "how do I back up my notes"        # the README's command 1
# absolute, on fused scores (~0.1 to ~10, printed with 4 decimals): the same numpy on two CPUs
# gives float32 sums in another order (SIMD width), so the last bits of vectors and scores move
TOLERANCE = 1e-4
K = 10
# Beyond the demo's 28 probes: identifiers, FTS5 syntax, regex, typos, one-word and odd queries
EXTRA_QUERIES = [
    DEMO_QUERY, "how do I keep my notes searchable offline on my phone", "why does sync fail at night",
    "personalized pagerank seeds", "community detection", "inverted index", "stemming words",
    "tokenization of unicode text", "evaluation metrics ndcg", "typed links", "maps of content",
    "daily notes journal", "Obsidian vault", "Syncthing conflict", "wake lock", "termux api",
    '"write-ahead log" AND readers', "sqlite OR obsidian", "/retr(y|ies)_\\w+/", "pagernak",
    "embeddings", "x", "database",
]


def query_set() -> list[str]:
    probes = ROOT / "data" / "demo" / "probes.jsonl"
    qs = [json.loads(line)["query"] for line in probes.read_text(encoding="utf-8").splitlines() if line.strip()]
    return list(dict.fromkeys(qs + EXTRA_QUERIES))


def _median(xs):
    return round(statistics.median(xs), 4) if xs else None


def search_all(db: str, queries: list[str], passes: int = 0) -> tuple[dict, list[float]]:
    """Top-K keys and scores for every query (first pass), and per-query milliseconds over
    ``passes`` further timed passes (after that untimed first pass, which warms the caches)."""
    from kgsearch.query import Engine, SearchOptions
    from kgsearch.store.db import Index

    opts = SearchOptions(k=K, use_cache=False)
    results, ms = {}, []
    with Index.open(db, readonly=True) as ix:
        eng = Engine(ix)
        for q in queries:
            results[q] = [[h.key, h.score] for h in eng.search(q, opts).hits]
        for _ in range(passes):
            for q in queries:
                t = time.perf_counter()
                eng.search(q, opts)
                ms.append((time.perf_counter() - t) * 1000)
    return results, ms


def probe(out: str, runs: int, work: str | None) -> dict:
    import numpy as np

    import kgsearch
    from kgsearch.bench import device_facts
    from kgsearch.demo import demo_dir
    from kgsearch.indexer import IndexOptions, index_paths

    work_dir = Path(work or tempfile.mkdtemp(prefix="kgsearch-arm64-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    src = demo_dir()
    checkout = str(src.parent.parent)
    # 1. the README demo, as a user runs it: a new process, a fresh data dir (so it indexes too)
    demo_s, demo_out = [], None
    for i in range(runs):
        env = {**os.environ, "XDG_DATA_HOME": str(work_dir / f"demo-data-{i}"),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        env.pop("KGSEARCH_DB", None)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "kgsearch", "demo", DEMO_QUERY], capture_output=True, text=True,
                           env=env, check=False)
        demo_s.append(time.perf_counter() - t)
        if r.returncode != 0:
            raise SystemExit(f"arm64_check: kgsearch demo failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
        demo_out = demo_out or r.stdout.replace(checkout + os.sep, "")
    # 2. a fresh index of the demo corpus
    index_s = []
    db = work_dir / "index.db"
    for _ in range(runs):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        t = time.perf_counter()
        index_paths(db, [str(src)], IndexOptions())
        index_s.append(time.perf_counter() - t)
    # 3. the fixed query set: results, then timed passes
    queries = query_set()
    results, ms = search_all(str(db), queries, passes=runs)
    facts = device_facts()
    rec = {
        "machine": facts["machine"], "device": facts, "kgsearch": str(Path(kgsearch.__file__).parent),
        "numpy_path": str(Path(np.__file__).parent), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": runs,
        "demo": {"query": DEMO_QUERY, "output": demo_out, "seconds": [round(s, 3) for s in demo_s]},
        "index": {"seconds": [round(s, 3) for s in index_s], "db": str(db)},
        "queries": queries, "results": results,
        "query_ms": {"p50": _median(ms), "mean": round(sum(ms) / len(ms), 4) if ms else None,
                     "timed": len(ms), "passes": runs},
    }
    Path(out).write_text(json.dumps(rec, indent=1), encoding="utf-8")
    return rec


def search_cmd(db: str, out: str) -> None:
    queries = query_set()
    results, _ = search_all(db, queries)
    from kgsearch.bench import device_facts

    Path(out).write_text(json.dumps({"machine": device_facts()["machine"], "db": db, "queries": queries,
                                     "results": results}, indent=1), encoding="utf-8")


# ---------------------------------------------------------------------------- compare
DEMO_HIT = re.compile(r"^\s*(\d+)\. (.+?)  \[(\w+)\]  (-?[\d.]+)  (\S+)\s*$")


def parse_demo(text: str) -> list[dict]:
    """The hits of the demo's text output: rank, name, kind, printed score, methods, key."""
    lines = text.splitlines()
    hits = []
    for i, line in enumerate(lines):
        m = DEMO_HIT.match(line)
        if m:
            key = lines[i + 1].strip().split("  ")[0] if i + 1 < len(lines) else ""
            hits.append({"rank": int(m.group(1)), "name": m.group(2), "kind": m.group(3),
                         "score": float(m.group(4)), "methods": m.group(5), "key": key})
    return hits


def compare_results(a: dict, b: dict, queries: list, top: int) -> dict:
    """Per query: same keys in the same order (top ``top``), and the largest score difference."""
    same_keys, worst, worst_q, bitwise, close = 0, 0.0, None, 0, 0
    differ = []
    for q in queries:
        ra, rb = a.get(q, [])[:top], b.get(q, [])[:top]
        if [k for k, _ in ra] == [k for k, _ in rb]:
            same_keys += 1
            d = max((abs(x - y) for (_, x), (_, y) in zip(ra, rb)), default=0.0)
            bitwise += all(x == y for (_, x), (_, y) in zip(ra, rb))
            close += d <= TOLERANCE
            if d > worst:
                worst, worst_q = d, q
        else:
            differ.append(q)
    return {"queries": len(queries), "same_keys_and_order": same_keys, "bit_identical_scores": bitwise,
            "scores_within_tolerance": close,
            "max_abs_score_diff": worst, "max_diff_query": worst_q, "within_tolerance": worst <= TOLERANCE,
            "differing_queries": differ}


def _ratio(a, b):
    return round(a / b, 2) if a and b else None


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def compare_host(host_dir: Path, arm: dict) -> dict:
    """One host Python against the arm64 run. Keys and order must be identical; scores must
    agree within TOLERANCE when both sides run the same numpy version (then only the CPU
    differs), and are reported when they do not (query-time results can move with numpy)."""
    host = _load(host_dir / "probe.json")
    h_on_a = _load(host_dir / "host-index-on-arm64.json")
    a_on_h = _load(host_dir / "arm64-index-on-host.json")
    same_numpy = host["device"]["numpy"] == arm["device"]["numpy"]
    label = f"x86_64, numpy {host['device']['numpy']}"
    problems = []
    if host["queries"] != arm["queries"]:
        problems.append(f"{label}: the two machines ran different query sets (different checkouts?)")
    queries = host["queries"]
    dh, da = parse_demo(host["demo"]["output"]), parse_demo(arm["demo"]["output"])
    strip = lambda s: [ln for ln in s.splitlines() if not re.match(r"^\(.*ms\)$", ln.strip())]  # noqa: E731
    demo = {"hits": len(dh),
            "same_keys_and_order": [h["key"] for h in dh] == [h["key"] for h in da] and len(dh) > 0,
            "same_printed_scores": [h["score"] for h in dh] == [h["score"] for h in da],
            "identical_text_except_timing": strip(host["demo"]["output"]) == strip(arm["demo"]["output"]),
            "top5": [[h["key"], h["score"]] for h in dh[:5]]}
    if not demo["same_keys_and_order"]:
        problems.append(f"{label}: demo hits or their order differ")
    if same_numpy and not demo["same_printed_scores"]:
        problems.append(f"{label}: demo printed scores differ")
    comparisons = {}
    for name, other in [("each machine on its own index", arm["results"]),
                        ("x86_64-built index searched on arm64", h_on_a["results"]),
                        ("arm64-built index searched on x86_64", a_on_h["results"])]:
        c = {"top5": compare_results(host["results"], other, queries, 5),
             "top10": compare_results(host["results"], other, queries, 10)}
        comparisons[name] = c
        for top in ("top5", "top10"):
            if c[top]["differing_queries"]:
                problems.append(f"{label}, {name}, {top}: {len(c[top]['differing_queries'])} queries differ "
                                f"({c[top]['differing_queries'][:3]})")
            elif same_numpy and not c[top]["within_tolerance"]:
                problems.append(f"{label}, {name}, {top}: max score diff {c[top]['max_abs_score_diff']:.3g} "
                                f"> {TOLERANCE:g}")
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    timing = {
        "runs": host["runs"],
        "demo_cli_s": {"x86_64": med(host["demo"]["seconds"]), "arm64": med(arm["demo"]["seconds"])},
        "index_demo_s": {"x86_64": med(host["index"]["seconds"]), "arm64": med(arm["index"]["seconds"])},
        "query_p50_ms": {"x86_64": host["query_ms"]["p50"], "arm64": arm["query_ms"]["p50"]},
        "query_mean_ms": {"x86_64": host["query_ms"]["mean"], "arm64": arm["query_ms"]["mean"]},
    }
    for v in timing.values():
        if isinstance(v, dict):
            v["ratio_arm64_to_x86_64"] = _ratio(v["arm64"], v["x86_64"])
    return {"label": label, "same_numpy": same_numpy, "device": host["device"], "date": host["date"],
            "numpy_path": host["numpy_path"], "problems": problems, "demo": demo, "comparisons": comparisons,
            "timing": timing}


def compare(args) -> int:
    arm = _load(Path(args.arm))
    tests = None
    problems = []
    if args.tests:
        log = Path(args.tests).read_text(encoding="utf-8", errors="replace").splitlines()
        summary = [ln.strip("= ") for ln in log if re.match(r"^(=+ )?\d+ (passed|failed)", ln)]
        line = summary[-1] if summary else ""
        counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)", line)}
        skipped: dict[str, int] = {}
        for n, why in re.findall(r"^SKIPPED \[(\d+)\] [^:]+:\d+: (.*)$", "\n".join(log), re.M):
            why = re.sub(r" \(import failed: .*?\)|; pip install .*$", "", why)
            skipped[why] = skipped.get(why, 0) + int(n)
        failed = [ln[len("FAILED "):] for ln in log if ln.startswith(("FAILED ", "ERROR "))]
        tests = {"summary": line, **counts, "skipped_because": skipped, "failed_tests": failed}
        if counts.get("failed") or counts.get("error") or counts.get("errors") or not counts.get("passed"):
            problems.append(f"arm64 tests: {line}")
    hosts = [compare_host(Path(d), arm) for d in args.host_dir]
    if not any(h["same_numpy"] for h in hosts):
        problems.append(f"no host run used arm64's numpy {arm['device']['numpy']}, so scores were not compared "
                        "(apt-get install python3-numpy on the host)")
    for h in hosts:
        problems += h["problems"]
    result = {
        "what": "kgsearch on aarch64 under qemu-user emulation vs the x86_64 host (termux/arm64-check.sh)",
        "ok": not problems, "problems": problems, "tolerance_abs_score": TOLERANCE, "k": K,
        "demo_query": DEMO_QUERY, "queries": len(arm["queries"]),
        "arm64": {"device": arm["device"], "date": arm["date"], "rootfs": args.rootfs_info,
                  "emulator": args.emulator, "numpy_path": arm["numpy_path"]},
        "tests": tests, "hosts": hosts,
    }
    md = markdown(result)
    write_results("arm64", result, md, args.out_dir)
    print(md)
    return 0 if not problems else 1


def markdown(r: dict) -> str:
    a = r["arm64"]["device"]
    ref = next((h for h in r["hosts"] if h["same_numpy"]), r["hosts"][0])
    hd = ref["device"]
    lines = [
        "# kgsearch on arm64 (emulated) vs x86_64",
        "",
        f"Made by `termux/arm64-check.sh` on {r['arm64']['date'][:10]}. Host: {hd['cpu']}, {hd['cores']} cores "
        f"(shared with other work), {hd['machine']}, SQLite {hd['sqlite']}. arm64: {r['arm64']['rootfs']}, run by "
        f"{r['arm64']['emulator']}; Python {a['python']}, numpy {a['numpy']} (the distribution's package, "
        f"{r['arm64']['numpy_path']}), SQLite {a['sqlite']}. `kgsearch bench`'s device facts there: "
        f"device {a.get('device')!r}, emulated {a.get('emulated')!r}.",
        "",
        f"**Result: {'identical' if r['ok'] else 'DIFFERENT'}**" + ("" if r["ok"] else ": " + "; ".join(r["problems"])),
    ]
    if r["tests"]:
        lines += ["", f"**Test suite on arm64** (Debian's numpy and pytest; no optional test oracles, so their "
                      f"tests skip): {r['tests']['summary']}."]
        why = r["tests"].get("skipped_because") or {}
        if why:
            lines += ["", "Skipped because: " + "; ".join(f"{w} ({n})" for w, n in sorted(why.items(), key=lambda x: -x[1])) + "."]
        if r["tests"].get("failed_tests"):
            lines += ["", "Failed: " + "; ".join(r["tests"]["failed_tests"]) + "."]
    lines += ["", "## Same answers", "",
              f"{r['queries']} queries (the demo's probes plus identifier, FTS5-syntax, regex, typo and one-word "
              f"queries), top {r['k']} each, compared with the x86_64 run: keys and order must be identical; scores "
              f"within {r['tolerance_abs_score']:g} (absolute; scores are printed with 4 decimals) when both sides "
              "run the same numpy version. Each machine also searches the index the other one built.", "",
              "| x86_64 side | comparison | same top-5 keys+order | same top-10 keys+order | bit-identical top-10 scores | max score diff |",
              "|---|---|---|---|---|---|"]
    for h in r["hosts"]:
        for name, c in h["comparisons"].items():
            c5, c10 = c["top5"], c["top10"]
            lines.append(f"| {h['label']} | {name} | {c5['same_keys_and_order']}/{c5['queries']} | "
                         f"{c10['same_keys_and_order']}/{c10['queries']} | {c10['bit_identical_scores']}/{c10['queries']} | "
                         f"{c10['max_abs_score_diff']:.2g} |")
    lines += [""]
    for h in r["hosts"]:
        c = h["comparisons"]["x86_64-built index searched on arm64"]["top10"]
        if not h["same_numpy"] and c["scores_within_tolerance"] < c["queries"]:
            lines += [f"With {h['label']} against arm64's numpy {a['numpy']}, keys and order are identical but "
                      f"{c['queries'] - c['scores_within_tolerance']} of {c['queries']} queries have scores off by more "
                      f"than {r['tolerance_abs_score']:g} (at most {c['max_abs_score_diff']:.2g}, on "
                      f"{c['max_diff_query']!r}), whichever machine built the index: the numpy version, not the CPU, "
                      "moves them. Where examined, one or two candidates at the edge of a channel's list differ "
                      "between numpy versions, which moves the 'shift' adjustment (every candidate raised so the "
                      "weakest scores 0) and so every score of that query by the same amount.", ""]
    for h in r["hosts"]:
        d = h["demo"]
        lines.append(f"README demo (`kgsearch demo \"{r['demo_query']}\"`) vs {h['label']}: top {d['hits']} keys and "
                     f"order {'identical' if d['same_keys_and_order'] else 'DIFFERENT'}, printed scores "
                     f"{'identical' if d['same_printed_scores'] else 'different'}, whole output apart from the "
                     f"timing line {'byte-identical' if d['identical_text_except_timing'] else 'different'}.")
        lines.append("")
    t = ref["timing"]
    lines += ["## Speed (of the emulator, not of a phone)", "",
              f"Medians of {t['runs']} runs each; x86_64 = {ref['label']}; both sides on the same 2 shared cores in "
              "one session, so the ratios are noisy. qemu-user translates every ARM instruction, so a ratio "
              "measures the emulator's cost; a phone runs native ARM code.", "",
              "| what | x86_64 | arm64 (emulated) | arm64 : x86_64 |", "|---|---|---|---|"]
    for label, key, unit in [("README demo: new process, fresh index, one query", "demo_cli_s", "s"),
                             ("index the demo corpus (in-process)", "index_demo_s", "s"),
                             ("query p50 (fixed set, warm)", "query_p50_ms", "ms"),
                             ("query mean (fixed set, warm)", "query_mean_ms", "ms")]:
        v = t[key]
        fmt = (lambda x: f"{x:.2f} {unit}") if unit == "s" else (lambda x: f"{x:.1f} {unit}")
        lines.append(f"| {label} | {fmt(v['x86_64'])} | {fmt(v['arm64'])} | {v['ratio_arm64_to_x86_64']} |")
    lines += ["", "Demo top 5 (identical on both machines when the result above says so):", "",
              "| rank | key | score |", "|---|---|---|"]
    lines += [f"| {i} | {k} | {s} |" for i, (k, s) in enumerate(ref["demo"]["top5"], 1)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--out", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--work", default=None)
    p = sub.add_parser("search")
    p.add_argument("--db", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("compare")
    p.add_argument("--arm", required=True, help="the arm64 probe JSON")
    p.add_argument("--host-dir", action="append", required=True,
                   help="a host run: probe.json, host-index-on-arm64.json, arm64-index-on-host.json (repeatable)")
    p.add_argument("--tests", default=None, help="file whose last line is pytest's summary line")
    p.add_argument("--out-dir", default=str(RESULTS))
    p.add_argument("--rootfs-info", default="Debian arm64 root file system")
    p.add_argument("--emulator", default="qemu-user")
    args = ap.parse_args(argv)
    if args.cmd == "probe":
        if args.runs < 1:
            ap.error("--runs must be at least 1")
        probe(args.out, args.runs, args.work)
        return 0
    if args.cmd == "search":
        search_cmd(args.db, args.out)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
