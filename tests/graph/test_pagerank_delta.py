"""PageRank after a few changed rows (kgsearch.graph.kernels.pagerank_delta) against the dense
operators of the old and the new graph, and the residual bound the incremental update relies on."""
from __future__ import annotations

import numpy as np
import pytest

from kgsearch.graph.kernels.pagerank_delta import pagerank_delta, residual_bound

ALPHA = 0.85


def operator(ids, edges):
    """T(x) of the graph on node ids ``ids`` with edges ``(src id, dst id, w)``, densely."""
    n = len(ids)
    pos = {int(v): i for i, v in enumerate(ids)}
    m = np.zeros((n, n))
    for s, t, w in zip(*edges):
        m[pos[int(s)], pos[int(t)]] += float(np.float32(w))
    wsum = m.sum(axis=1)
    dang = ~(wsum > 0)
    p = np.divide(m, wsum[:, None], out=np.zeros_like(m), where=wsum[:, None] > 0)

    def t(x):
        return ALPHA * (x @ p) + (ALPHA * x[dang].sum() + 1 - ALPHA) / n
    return t, dang


def random_graph(rng, ids, m):
    s = rng.choice(ids, m)
    d = rng.choice(ids, m)
    w = rng.choice([0.0, 0.5, 1.0, 2.0], m).astype(np.float32)     # (zero weights: dangling rows)
    return s, d, w


def rows_of(edges, sources):
    s, d, w = edges
    keep = np.isin(s, sources)
    return s[keep], d[keep], w[keep]


@pytest.mark.parametrize("seed", range(12))
def test_delta_is_the_difference_of_the_operators_and_the_bound_holds(seed):
    rng = np.random.default_rng(seed)
    old_ids = np.sort(rng.choice(np.arange(1, 200), 40, replace=False))
    old = random_graph(rng, old_ids, 120)
    gone = rng.choice(old_ids, int(rng.integers(0, 3)), replace=False)
    fresh = np.setdiff1d(np.arange(200, 205), [])[:int(rng.integers(0, 4))]
    ids = np.union1d(np.setdiff1d(old_ids, gone), fresh)
    # rows that change: a few sources, every removed node, new nodes with out-edges
    changed = np.union1d(rng.choice(np.setdiff1d(old_ids, gone), 3, replace=False), gone)
    changed = np.union1d(changed, fresh[:1])
    # edges into removed nodes go: their sources change too
    s, d, w = old
    into_gone = np.isin(d, gone)
    changed = np.union1d(changed, s[into_gone])
    kept = ~np.isin(s, changed)
    ns, nd, nw = random_graph(rng, ids, 10)
    ns = rng.choice(np.intersect1d(changed, ids), len(ns))
    new = (np.r_[s[kept], ns], np.r_[d[kept], nd], np.r_[w[kept], nw])

    t_old, dang_old = operator(old_ids, old)
    t_new, _ = operator(ids, new)
    x = rng.random(len(old_ids)) + 0.1
    x /= x.sum()
    got, dang, d_l1 = pagerank_delta(x, old_ids, dang_old, ids, changed, rows_of(old, changed), rows_of(new, changed))

    at = {int(v): i for i, v in enumerate(old_ids)}
    xt = np.array([x[at[int(v)]] if int(v) in at else 0.0 for v in ids])       # x on the new nodes
    told = t_old(x)
    told_r = np.array([told[at[int(v)]] if int(v) in at else 0.0 for v in ids])
    want_d = t_new(xt) - told_r
    assert np.allclose(got - xt, want_d, atol=1e-15, rtol=1e-12)
    assert d_l1 == pytest.approx(np.abs(want_d).sum(), rel=1e-12)
    _, want_dang = operator(ids, new)
    assert np.array_equal(dang, want_dang)
    # the bound: residual of x' under the new operator <= old residual + alpha ||D||
    r_old = float(np.abs(told - x).sum())
    r_new = float(np.abs(t_new(got) - got).sum())
    assert r_new <= r_old + ALPHA * d_l1 + 1e-12
    stored = got.astype(np.float32)
    r_stored = float(np.abs(t_new(stored.astype(np.float64)) - stored).sum())
    assert r_stored <= residual_bound(r_old, d_l1, stored, got) + 1e-12


def test_nothing_changed_gives_no_step():
    ids = np.array([1, 2, 3, 5])
    edges = (np.array([1, 2, 3]), np.array([2, 3, 1]), np.array([1, 1, 1], dtype=np.float32))
    _, dang = operator(ids, edges)
    x = np.array([0.3, 0.3, 0.3, 0.1])
    got, d2, d_l1 = pagerank_delta(x, ids, dang, ids, np.array([2]), rows_of(edges, [2]), rows_of(edges, [2]))
    assert d_l1 == 0.0 and np.array_equal(got, x) and np.array_equal(d2, dang)


def test_a_source_that_is_not_a_node_is_refused():
    ids = np.array([1, 2])
    with pytest.raises(ValueError, match="not a node"):
        pagerank_delta(np.array([0.5, 0.5]), ids, np.array([True, True]), ids, np.array([7]),
                       (np.array([7]), np.array([1]), np.array([1.0], dtype=np.float32)),
                       (np.zeros(0, int), np.zeros(0, int), np.zeros(0, np.float32)))
