"""Graph kernels against networkx (the oracle) and against kgsearch.graph.kernels.reference, on a zoo
of graphs: PageRank and personalized PageRank within L1 1e-6 at tol 1e-10, HITS within 1e-6,
greedy modularity with the same partition as networkx (or, where ties fall differently,
modularity >= networkx's - 1e-9; which case held is recorded per graph).

networkx's default ``pagerank``/``hits`` need scipy, which is not a kgsearch dependency: when
scipy is missing the oracles are networkx's own numpy/pure-Python implementations
(``_pagerank_python``, ``_hits_numpy``), which follow the same conventions.
``PYTHONPATH=.:tests python tests/graph/test_exact.py`` prints the per-graph table (the benchmark
stores it).
The whole module needs networkx (the zoo is built with it): without it the module is skipped
through conftest.need.
"""
from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

from conftest import need

nx = need("networkx")

from kgsearch.graph import Graph, greedy_modularity, hits, modularity, pagerank, rwr  # noqa: E402
from kgsearch.graph.kernels import reference as ref  # noqa: E402

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None
TOL = 1e-10
# numpy.exceptions only exists from numpy 1.25; before that the warning lives in numpy itself
# (and numpy 2 removed it from there), so name it through whichever module has it
ComplexWarning = getattr(np, "exceptions", np).ComplexWarning


# ---------------------------------------------------------------------- the zoo
def _random_directed(n, p, seed, weighted=False, sinks=0):
    rng = np.random.default_rng(seed)
    G = nx.gnp_random_graph(n, p, seed=seed, directed=True)
    for u in range(sinks):                       # make some dangling nodes
        G.remove_edges_from(list(G.out_edges(n - 1 - u)))
    if weighted:
        for u, v in G.edges:
            G[u][v]["weight"] = float(rng.uniform(0.1, 3.0))
    return G


def _with_self_loops():
    G = nx.DiGraph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 3), (1, 1), (4, 2)])
    G[3][3]["weight"] = 2.0
    return G


def _two_components():
    G = nx.Graph()
    G.add_edges_from([(0, 1), (1, 2), (2, 0), (2, 3)])
    G.add_edges_from([(4, 5), (5, 6), (6, 7), (7, 4), (4, 6)])
    return G


def _langville_meyer():
    # networkx's own PageRank test graph (Langville and Meyer's six pages)
    return nx.DiGraph([(1, 2), (1, 3), (3, 1), (3, 2), (3, 5), (4, 5), (4, 6), (5, 4), (5, 6), (6, 4)])


def _weighted_undirected(seed):
    rng = np.random.default_rng(seed)
    G = nx.gnm_random_graph(40, 120, seed=seed)
    for u, v in G.edges:
        G[u][v]["weight"] = int(rng.integers(1, 5))
    return G


def zoo() -> dict[str, "nx.Graph"]:
    """Name -> networkx graph, nodes relabelled 0..n-1 in iteration order (networkx breaks
    ties by node label, kgsearch by node number: the same order after relabelling)."""
    single = nx.DiGraph()
    single.add_node(0)
    edgeless = nx.DiGraph()
    edgeless.add_nodes_from(range(4))
    graphs = {
        "karate_club (weighted, undirected)": nx.karate_club_graph(),
        "les_miserables (weighted)": nx.les_miserables_graph(),
        "florentine_families": nx.florentine_families_graph(),
        "davis_southern_women (bipartite)": nx.davis_southern_women_graph(),
        "langville_meyer (directed, dangling)": _langville_meyer(),
        "directed_dangling gnp(30, .1)": _random_directed(30, 0.1, 1, sinks=4),
        "directed_weighted gnp(50, .08)": _random_directed(50, 0.08, 2, weighted=True, sinks=2),
        "directed gnp(80, .05)": _random_directed(80, 0.05, 3),
        "directed gnp(120, .03)": _random_directed(120, 0.03, 4, sinks=5),
        "weighted undirected gnm(40, 120) int": _weighted_undirected(5),
        "disconnected (two components)": _two_components(),
        "self_loops (directed)": _with_self_loops(),
        "single_node": single,
        "empty": nx.DiGraph(),
        "edgeless (4 nodes)": edgeless,
        "directed_path(6)": nx.path_graph(6, create_using=nx.DiGraph),
        "directed_cycle(7)": nx.cycle_graph(7, create_using=nx.DiGraph),
        "out_star(8)": nx.DiGraph([(0, i) for i in range(1, 8)]),
        "complete(6)": nx.complete_graph(6),
        "barbell(5, 2)": nx.barbell_graph(5, 2),
        "grid_2d(5, 6)": nx.convert_node_labels_to_integers(nx.grid_2d_graph(5, 6)),
        "two_triangles (ties)": nx.Graph([(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]),
        "barabasi_albert(150, 2)": nx.barabasi_albert_graph(150, 2, seed=7),
        "caveman(4, 5) relaxed": nx.relaxed_caveman_graph(4, 5, 0.2, seed=3),
    }
    return {k: nx.convert_node_labels_to_integers(G) for k, G in graphs.items()}


def to_graph(G) -> tuple[Graph, list]:
    """Our Graph from a networkx graph (undirected edges become both directions)."""
    nodes = list(G)
    pos = {u: i for i, u in enumerate(nodes)}
    src, dst, w = [], [], []
    for u, v, d in G.edges(data="weight", default=1.0):
        src.append(pos[u]), dst.append(pos[v]), w.append(float(d))
        if not G.is_directed() and u != v:
            src.append(pos[v]), dst.append(pos[u]), w.append(float(d))
    return Graph.from_edges(src, dst, w, num_nodes=len(nodes)), nodes


def projection(G) -> "nx.Graph":
    """The undirected projection kgsearch uses: weights of u->v and v->u summed."""
    U = nx.Graph()
    U.add_nodes_from(G)
    if not G.is_directed():
        U.add_weighted_edges_from(G.edges(data="weight", default=1.0))
        return U
    for u, v, d in G.edges(data="weight", default=1.0):
        if U.has_edge(u, v):
            U[u][v]["weight"] += d
        else:
            U.add_edge(u, v, weight=d)
    return U


# ---------------------------------------------------------------------- oracles
def nx_pagerank(G, **kw):
    if HAVE_SCIPY:
        return nx.pagerank(G, **kw), "nx.pagerank"
    from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python
    return _pagerank_python(G, **kw), "nx._pagerank_python"


def _top_gap(A: np.ndarray) -> float:
    ev = np.sort(np.linalg.eigvalsh(A.T @ A))[::-1]
    return 1.0 if len(ev) < 2 or ev[0] == 0 else float((ev[0] - ev[1]) / ev[0])


def nx_hits(G):
    """networkx's HITS, or its power iteration when the top singular value is repeated (then
    the singular vector is not unique and only the iteration from the uniform start is defined)."""
    A = nx.to_numpy_array(G)
    if _top_gap(A) < 1e-6:
        from networkx.algorithms.link_analysis.hits_alg import _hits_python
        return _hits_python(G, max_iter=10000, tol=1e-14), "nx._hits_python (repeated top singular value)"
    if HAVE_SCIPY:
        return nx.hits(G, max_iter=10000, tol=1e-12), "nx.hits"
    from networkx.algorithms.link_analysis.hits_alg import _hits_numpy
    return _hits_numpy(G), "nx._hits_numpy"


def _vec(d: dict, nodes: list) -> np.ndarray:
    return np.array([d[u] for u in nodes], dtype=float)


def _partition(labels: np.ndarray) -> list[set[int]]:
    out: dict[int, set[int]] = {}
    for i, c in enumerate(labels.tolist()):
        out.setdefault(c, set()).add(i)
    return [out[k] for k in sorted(out)]


# ---------------------------------------------------------------------- checks
def check_graph(name: str, G) -> dict:
    """All comparisons for one graph; returns a row for the results table."""
    g, nodes = to_graph(G)
    row: dict = {"graph": name, "nodes": g.n, "edges": g.m}
    if g.n == 0:
        assert len(pagerank(g)) == 0 and len(greedy_modularity(g)) == 0
        row.update(pagerank="empty", ppr="empty", hits="empty", communities="empty")
        return row
    # PageRank
    want, how = nx_pagerank(G, tol=TOL, max_iter=10000)
    got = pagerank(g, tol=TOL, max_iter=10000)
    err = float(np.abs(got - _vec(want, nodes)).sum())
    assert err < 1e-6, (name, "pagerank", err)
    row["pagerank_l1"] = err
    row["pagerank_oracle"] = how
    # personalized PageRank, with and without a separate dangling vector, and as RWR
    rng = np.random.default_rng(len(name))
    k = min(3, g.n)
    seeds = {int(i): float(rng.uniform(0.5, 2.0)) for i in rng.choice(g.n, k, replace=False)}
    pers = {nodes[i]: w for i, w in seeds.items()}
    want, _ = nx_pagerank(G, personalization=pers, tol=TOL, max_iter=10000)
    got = pagerank(g, personalization=seeds, tol=TOL, max_iter=10000)
    err_p = float(np.abs(got - _vec(want, nodes)).sum())
    assert err_p < 1e-6, (name, "ppr", err_p)
    dang = {nodes[0]: 1.0}
    want, _ = nx_pagerank(G, alpha=0.7, personalization=pers, dangling=dang, tol=TOL, max_iter=10000)
    got = pagerank(g, alpha=0.7, personalization=seeds, dangling={0: 1.0}, tol=TOL, max_iter=10000)
    err_d = float(np.abs(got - _vec(want, nodes)).sum())
    assert err_d < 1e-6, (name, "ppr+dangling", err_d)
    want, _ = nx_pagerank(G, alpha=0.8, personalization=pers, tol=TOL, max_iter=10000)
    got = rwr(g, seeds, restart=0.2, topk=None, tol=1e-13, max_iter=10000)
    err_r = float(np.abs(got - _vec(want, nodes)).sum())
    assert err_r < 1e-6, (name, "rwr", err_r)
    row["ppr_l1"] = max(err_p, err_d, err_r)
    # HITS
    if g.m == 0 or not np.any(g.weights):
        h, a = hits(g)
        assert np.allclose(h, 1 / g.n) and np.allclose(a, 1 / g.n)
        row["hits"] = "no edges: uniform"
    else:
        (wh, wa), how = nx_hits(G)
        h, a = hits(g, max_iter=10000, tol=1e-12)
        err_h = max(float(np.abs(h - _vec(wh, nodes)).max()), float(np.abs(a - _vec(wa, nodes)).max()))
        assert err_h < 1e-6, (name, "hits", err_h)
        row["hits_max_abs"] = err_h
        row["hits_oracle"] = how
    # greedy modularity on the undirected projection
    U = projection(G)
    for res in (1.0, 0.5, 2.0):
        want = [set(nodes.index(u) for u in c) for c in
                nx.community.greedy_modularity_communities(U, weight="weight", resolution=res)]
        labels = greedy_modularity(g, resolution=res)
        got_p = _partition(labels)
        q_nx = nx.community.modularity(U, [{nodes[i] for i in c} for c in want], weight="weight",
                                       resolution=res) if U.size(weight="weight") else 0.0
        q_us = modularity(g, labels, resolution=res)
        if got_p == want:
            case = "same partition"
            assert abs(q_us - q_nx) < 1e-9
        else:
            case = "different partition"
            assert q_us >= q_nx - 1e-9, (name, res, q_us, q_nx)
        row[f"communities_r{res:g}"] = case
        row[f"modularity_r{res:g}"] = round(q_us, 9)
        row[f"modularity_nx_r{res:g}"] = round(q_nx, 9)
    return row


ZOO = zoo()


@pytest.mark.parametrize("name", list(ZOO))
def test_against_networkx(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComplexWarning)       # networkx's numpy HITS casts complex
        check_graph(name, ZOO[name])


def test_zoo_is_big_enough():
    assert len(ZOO) >= 20


# ---------------------------------------------------------------------- fast == reference
@pytest.mark.parametrize("name", [n for n in ZOO if 0 < ZOO[n].number_of_nodes() <= 80])
def test_fast_equals_reference(name):
    g, _ = to_graph(ZOO[name])
    assert np.abs(pagerank(g, tol=1e-9, max_iter=5000) -
                  np.array(ref.pagerank_ref(g, tol=1e-9, max_iter=5000))).sum() < 1e-9
    seeds = {0: 1.0, g.n - 1: 0.5}
    fast = rwr(g, seeds)
    slow = np.array(ref.rwr_ref(g, seeds))
    assert np.abs(fast - slow).sum() < 1e-9
    if g.m and np.any(g.weights) and _top_gap(_dense(g)) >= 1e-6:
        h, a = hits(g, max_iter=10000, tol=1e-12)
        rh, ra = ref.hits_ref(g, max_iter=100000, tol=1e-13)
        assert np.abs(h - rh).max() < 1e-6 and np.abs(a - ra).max() < 1e-6
    labels = greedy_modularity(g)
    assert _partition(labels) == ref.greedy_modularity_ref(g)
    assert modularity(g, labels) == pytest.approx(ref.modularity_ref(g, _partition(labels)), abs=1e-12)


def _dense(g: Graph) -> np.ndarray:
    A = np.zeros((g.n, g.n))
    np.add.at(A, (g.src, g.dst), g.weights)
    return A


def test_random_graphs_fast_equals_reference_and_networkx():
    """Many small random graphs (ties are common with integer weights)."""
    for seed in range(25):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(4, 30))
        G = nx.gnp_random_graph(n, float(rng.uniform(0.1, 0.4)), seed=seed)
        if seed % 2:
            for u, v in G.edges:
                G[u][v]["weight"] = int(rng.integers(1, 4))
        g, _ = to_graph(G)
        want = [set(c) for c in nx.community.greedy_modularity_communities(G, weight="weight")]
        labels = greedy_modularity(g)
        assert _partition(labels) == want, seed
        assert _partition(labels) == ref.greedy_modularity_ref(g), seed


if __name__ == "__main__":             # print the per-graph table
    import json

    rows = [check_graph(name, G) for name, G in ZOO.items()]
    print(json.dumps(rows, indent=1))


def _stars() -> dict:
    star = nx.star_graph(40)                                    # hub 0: the smallest node
    last = nx.relabel_nodes(nx.star_graph(40), {i: 40 - i for i in range(41)})   # hub 40: the largest
    double = nx.Graph([(0, i) for i in range(2, 30)] + [(1, i) for i in range(15, 45)])
    broom = nx.star_graph(30)
    nx.add_path(broom, [30, 31, 32, 33, 34])
    stars_of_stars = nx.Graph([(0, h) for h in range(1, 5)] +
                              [(h, 10 * h + j) for h in range(1, 5) for j in range(7)])
    weighted = nx.star_graph(25)
    for u, v in weighted.edges:
        weighted[u][v]["weight"] = 1 + v % 3
    leaves_linked = nx.star_graph(30)
    leaves_linked.add_edges_from((i, i + 1) for i in range(5, 25, 2))
    return {"star, hub first": star, "star, hub last": last, "two hubs sharing leaves": double,
            "broom": broom, "star of stars": stars_of_stars, "weighted star": weighted,
            "star with linked leaf pairs": leaves_linked}


@pytest.mark.parametrize("name", list(_stars()))
def test_star_shapes_equal_networkx(name):
    """Stars are where the merge order moves one big row over and over (the hub's community
    is renamed after each leaf it takes in); the result stays networkx's, ties included."""
    G = _stars()[name]
    g, nodes = to_graph(G)
    want = [{nodes.index(x) for x in c} for c in
            nx.community.greedy_modularity_communities(G, weight="weight")]
    labels = greedy_modularity(g)
    assert _partition(labels) == want
    assert _partition(labels) == ref.greedy_modularity_ref(g)


def test_star_memory_does_not_grow_with_the_square_of_the_leaves():
    """Peak RSS of a process running CNM on a 1,500-leaf star, over one on a 100-leaf star:
    the merge loop used to allocate a pair slot and a row entry per leaf at every merge
    (+62 MB at 1,500 leaves, 1 GB at 6,000); now it reuses the slots (+1 MB). The peak is the
    process's own (VmHWM): ru_maxrss also holds the parent's high-water mark from before exec,
    so late in the suite both children reported pytest's RSS and the difference was 0."""
    import subprocess
    import sys

    code = ("import numpy as np, sys\n"
            "from kgsearch.graph import Graph, greedy_modularity\n"
            "n = int(sys.argv[1])\n"
            "g = Graph.from_edges(np.zeros(n, dtype=np.int64), np.arange(1, n + 1), np.ones(n), num_nodes=n + 1)\n"
            "assert greedy_modularity(g).max() == 0\n"
            "print([int(l.split()[1]) / 1024 for l in open('/proc/self/status') if l.startswith('VmHWM:')][0])\n")

    def peak(n: int) -> float:
        out = subprocess.run([sys.executable, "-c", code, str(n)], capture_output=True, text=True, check=True)
        return float(out.stdout.strip())

    assert peak(1500) - peak(100) < 20
