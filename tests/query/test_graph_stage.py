"""The graph stage (kgsearch.query.graph_stage) on a hand-made six-node graph: seeds, the prose
proximity mean and the code-query walk, the nodes they bring in, intent edges, entity channels."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from kgsearch.graph import Graph
from kgsearch.graph.kernels.proximity import intent_edges
from kgsearch.query.graph_stage import graph_stage
from kgsearch.query.intent import make
from kgsearch.query.options import SearchOptions
from kgsearch.query.parse import parse
from kgsearch.query.signals import Signals, candidates
from kgsearch.query.tuning import TUNING

from .conftest import FakeEngine, FakeGraphContext, arrays

# 0 -> 1 (1.0, relates_to), 2 -> 0 (0.5, relates_to), 1 -> 3 (0.8, has_workaround), 4 -> 5 (1.0, relates_to)
GRAPH = Graph.from_edges([0, 2, 1, 4], [1, 0, 3, 5], weight=[1.0, 0.5, 0.8, 1.0], num_nodes=6,
                         etype=[0, 0, 1, 0], etype_names=["relates_to", "has_workaround"])
BM25 = {0: 1.0, 1: 0.5, 2: 0.0, 3: 0.2, 4: 0.0, 5: 0.0}          # every node's text score (the fill-in)
WEIGHTS = {"embedding": 0.25, "text": 0.45, "graph": 0.3, "intent": 0.0}
ALL = ["bm25", "graph", "intent", "local", "global"]


def _stage(text="why do the totals drift", intent="default", code_query=False, requested=ALL, tuning=TUNING, **ctx):
    eng = FakeEngine(fills={"bm25": BM25})
    raw = {"bm25": arrays({0: 1.0, 1: 0.5})}
    sig = Signals(eng, parse(text), candidates(raw), raw, {}, "max")
    gctx = FakeGraphContext(GRAPH, **ctx)
    q = parse(text)
    st = graph_stage(gctx, q, make(q, intent), requested, SearchOptions(), sig, WEIGHTS, code_query, tuning)
    return st, sig, gctx


def test_prose_pulls_the_mean_of_the_neighbours_first_stage_scores():
    st, sig, gctx = _stage()
    # seeds 0 and 1 (weights 1.0 and 0.1) reach 1, 2, 3 and 0 by proximity: 2 and 3 join
    assert sig.cand.tolist() == [0, 1, 2, 3]
    # first-stage values (text alone: no dense channel ran) 1.0, 0.5, 0.0, 0.2; each node's mean
    # over its edges of value x weight x (1.0 into it, 0.7 out of it)
    want = [(0.5 * 0.0 + 0.7 * 0.5) / (0.5 + 0.7), (1.0 * 1.0 + 0.7 * 0.8 * 0.2) / (1.0 + 0.7 * 0.8),
            (0.7 * 0.5 * 1.0) / (0.7 * 0.5), (0.8 * 0.5) / 0.8]
    assert np.allclose(st.graph, want) and np.allclose(sig.get("graph"), want)
    assert ("walk", (0, 1)) not in gctx.asked and st.hits_adj is None
    assert not st.intent.any()                                # the default intent walks no edge type


def test_a_code_query_walks_from_the_seeds():
    walk = {1: 0.6, 3: 0.3, 5: 0.1}
    st, sig, gctx = _stage(code_query=True, walk=walk, tuning=replace(TUNING, walk_net_restart=False))
    assert gctx.asked[0] == ("walk", (0, 1))
    assert sig.cand.tolist() == [0, 1, 3, 5]                  # what the walk reached joined
    assert np.allclose(st.graph, [0.0, 1.0, 0.5, 0.1 / 0.6])  # the walk, max-normalised (x unit = 1)
    # shipped: seed 1 gives back its restart share, 0.2 x its seed weight over their sum (seed
    # weights 0.1 + 0.9 x first stage / the best: 1.0 for node 0, 0.55 for node 1)
    st, sig, gctx = _stage(code_query=True, walk=walk)
    top = 0.6 - 0.2 * 0.55 / 1.55
    assert sig.cand.tolist() == [0, 1, 3, 5]
    assert np.allclose(st.graph, [0.0, 1.0, 0.3 / top, 0.1 / top])
    # shipped: the walk leaves out module nodes' contains edges (Tuning.walk_skip_module_contains)
    assert gctx.walk_skip == ((), (("contains",), ("module",)))


def test_intent_edges_of_the_intent_and_none_for_relation_questions():
    st, sig, _ = _stage("the sync fails with an error", intent="debugging")
    seed_w = np.array([1.0, 0.1])
    ient = intent_edges(GRAPH, np.array([0, 1]), [1], seed_w)  # has_workaround is type 1
    assert ient == pytest.approx({3: 0.1})
    pos = sig.cand.tolist()
    assert np.allclose(st.intent, [1.0 if p == 3 else 0.0 for p in pos])
    st, _, _ = _stage("who calls total", intent="relation")
    assert not st.intent.any()


def test_entity_channels_use_the_parsed_words_and_raise_the_graph_signal():
    st, sig, gctx = _stage("alice's graph notes", local={4: 2.0, 0: 1.0}, glob={5: 0.5})
    assert ("entities", ("alice", "graph", "notes")) in gctx.asked
    assert {4, 5} <= set(sig.cand.tolist())
    i4, i5, i0 = (sig.cand.tolist().index(n) for n in (4, 5, 0))
    assert st.graph[i4] == pytest.approx(TUNING.local_weight * 1.0)      # max(proximity 0, 0.5 x local 1.0)
    assert st.graph[i5] == pytest.approx(TUNING.global_weight * 1.0)
    assert st.graph[i0] == pytest.approx(max((0.7 * 0.5) / 1.2, TUNING.local_weight * 0.5))
    st, sig, gctx = _stage("alice's graph notes", requested=["bm25", "graph"], local={4: 2.0})
    assert all(a[0] != "entities" for a in gctx.asked) and 4 not in sig.cand.tolist()


def test_without_the_graph_channel_no_graph_signal():
    st, sig, gctx = _stage(requested=["bm25", "local"], code_query=True, local={4: 1.0})
    assert all(a[0] != "walk" for a in gctx.asked)
    assert "graph" not in sig.norm_scores


def test_run_closes_the_steps_when_a_pull_fails():
    # graph_stage.run answers each pull; a pull that raises ends the steps there (their finally
    # blocks run now, not whenever the suspended generator is collected)
    from kgsearch.query.graph_stage import run

    ended = []

    class Broken:
        def answer(self):
            raise RuntimeError("pull failed")

    def steps():
        try:
            yield Broken()
            return "never"
        finally:
            ended.append(True)

    gen = steps()
    with pytest.raises(RuntimeError, match="pull failed"):
        run(gen)
    assert ended == [True] and gen.gi_frame is None


# ---- the code walk's research switches (Tuning.walk_*; off by default, docs/code-tasks.md)

def test_the_walk_switches_are_off_by_default():
    assert (TUNING.walk_degree_norm, TUNING.walk_skip, TUNING.walk_drop_kinds, TUNING.walk_code_seeds) == \
        (False, (), (), False)


def test_skip_types_walks_as_the_graph_without_those_edges():
    from kgsearch.graph.context import SkipTypes
    from kgsearch.graph.kernels.pagerank import rwr
    from kgsearch.graph.kernels.rows_walk import rwr_rows

    src, dst, w, t = [0, 2, 1, 4, 3], [1, 0, 3, 5, 0], [1.0, 0.5, 0.8, 1.0, 0.4], [0, 0, 1, 0, 1]
    g = Graph.from_edges(src, dst, weight=w, num_nodes=6, etype=t, etype_names=["calls", "contains"])
    keep = [i for i in range(len(src)) if t[i] != 1]
    oracle = Graph.from_edges([src[i] for i in keep], [dst[i] for i in keep], weight=[w[i] for i in keep],
                              num_nodes=6, etype=[0] * len(keep), etype_names=["calls", "contains"])
    view = SkipTypes(g, [1])
    nodes, vals = rwr_rows(view, [0, 1], restart=0.2, weights=[1.0, 0.5], prune=0, tol=1e-12, max_iter=200,
                           topk=None)
    want = rwr(oracle, [0, 1], restart=0.2, weights=[1.0, 0.5], prune=0, tol=1e-12, max_iter=200,
               direction="both", topk=None)
    got = np.zeros(6)
    got[nodes] = vals
    assert np.allclose(got, want) and got[3] == 0.0            # node 3 only had contains edges
    # walk weight: summed edge weights both ways, without the skipped type
    assert np.allclose(view.weight_of([0, 1, 3, 0]), [1.5, 1.0, 0.0, 1.5])
    # contains edges left out only where an end is a masked node: node 1 masked, 1 -> 3 goes
    mask = np.zeros(6, bool)
    mask[1] = True
    at = SkipTypes(g, [], at_types=[1], at_nodes=mask)
    node, nb, _, t = at.neighbors(np.arange(6), "out")
    assert sorted(zip(node.tolist(), nb.tolist())) == [(0, 1), (2, 0), (3, 0), (4, 5)]


def test_per_degree_divides_by_the_walk_weight():
    from kgsearch.graph.context import SkipTypes
    from kgsearch.query.graph_stage import per_degree

    # walk weights (both ways): 0: 1.0 + 0.5, 1: 1.0 + 0.8, 3: 0.8, 5: 1.0
    got = per_degree({0: 0.3, 1: 0.9, 3: 0.4, 5: 0.2}, SkipTypes(GRAPH, []))
    assert got == pytest.approx({0: 0.2, 1: 0.5, 3: 0.5, 5: 0.2})


def test_code_seeds_and_dropped_kinds():
    walk = {1: 0.6, 3: 0.3, 5: 0.1}
    kinds = dict(kinds=np.array([0, 1, 1, 2, 1, 1], np.uint8), kind_names=["section", "function", "module"])

    def stage(**tun):
        eng = FakeEngine(fills={"bm25": BM25})
        raw = {"bm25": arrays({0: 1.0, 1: 0.5})}
        sig = Signals(eng, parse("why"), candidates(raw), raw, {}, "max")
        gctx = FakeGraphContext(GRAPH, walk=walk)
        for k, v in kinds.items():
            setattr(gctx, k, v)
        q = parse("why")
        st = graph_stage(gctx, q, make(q, "default"), ALL, SearchOptions(), sig, WEIGHTS, True,
                         replace(TUNING, walk_net_restart=False, **tun))
        return st, sig, gctx

    _, _, gctx = stage(walk_code_seeds=True)
    assert gctx.asked[0] == ("walk", (1,))                       # seed 0 is a prose section
    st, sig, _ = stage(walk_drop_kinds=("module",))
    assert sig.cand.tolist() == [0, 1, 3, 5]
    assert np.allclose(st.graph, [0.0, 1.0, 0.0, 0.1 / 0.6])      # node 3 is a module
