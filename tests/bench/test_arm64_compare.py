"""bench/arm64_check.py's comparison (what termux/arm64-check.sh decides "identical" with):
the demo's text output is parsed into keys and scores, a swapped order or a missing hit is a
difference, and scores count only within the tolerance."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("arm64_check", ROOT / "bench" / "arm64_check.py")
arm64_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(arm64_check)


def test_parse_demo_reads_the_real_demo_output(tmp_path):
    from kgsearch.demo import run_demo
    from kgsearch.cli.output import format_response

    resp, _ = run_demo(arm64_check.DEMO_QUERY, db=tmp_path / "demo.db", k=5)
    hits = arm64_check.parse_demo(format_response(resp))
    assert [h["key"] for h in hits] == [h.key for h in resp.hits]
    assert [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
    assert all(abs(a["score"] - b.score) < 5e-5 for a, b in zip(hits, resp.hits))


def test_compare_results_flags_order_and_scores():
    tol = arm64_check.TOLERANCE
    ref = {"q1": [["a", 3.0], ["b", 2.0], ["c", 1.0]], "q2": [["x", 1.0]]}
    same = json.loads(json.dumps(ref))
    c = arm64_check.compare_results(ref, same, ["q1", "q2"], 10)
    assert (c["same_keys_and_order"], c["bit_identical_scores"], c["max_abs_score_diff"]) == (2, 2, 0.0)
    assert c["within_tolerance"] and c["differing_queries"] == []

    near = {"q1": [["a", 3.0 + tol / 2], ["b", 2.0], ["c", 1.0]], "q2": [["x", 1.0]]}
    c = arm64_check.compare_results(ref, near, ["q1", "q2"], 10)
    assert c["within_tolerance"] and c["bit_identical_scores"] == 1 and c["max_diff_query"] == "q1"

    far = {"q1": [["a", 3.0], ["b", 2.0 + 3 * tol], ["c", 1.0]], "q2": [["x", 1.0]]}
    assert not arm64_check.compare_results(ref, far, ["q1", "q2"], 10)["within_tolerance"]

    swapped = {"q1": [["a", 3.0], ["c", 2.0], ["b", 1.0]], "q2": []}
    c = arm64_check.compare_results(ref, swapped, ["q1", "q2"], 10)
    assert c["differing_queries"] == ["q1", "q2"] and c["same_keys_and_order"] == 0
    # only the top 1 compared: the swap below rank 1 does not count
    assert arm64_check.compare_results(ref, swapped, ["q1"], 1)["differing_queries"] == []


def test_query_set_is_fixed_and_distinct():
    qs = arm64_check.query_set()
    assert len(qs) == len(set(qs)) == 50
    assert qs[0] == "BM25" and arm64_check.DEMO_QUERY in qs
