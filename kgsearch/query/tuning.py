"""The query engine's ranking constants, each with the measurement that chose it.

Per-intent fusion weights live in :data:`kgsearch.query.intent.INTENTS` and edge-type weights in
:data:`kgsearch.config.EDGE_WEIGHTS`; the constants of the fusion and graph stages are here.
``bench/studies/tune_pipeline.py`` runs configurations with some of them changed
(``{"tuning": {"pr_blend": 0.3}}``) on every shared set.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Tuning", "TUNING"]


@dataclass(frozen=True)
class Tuning:
    # seeds of the graph stage: the best candidates by text and by embedding, this many each
    seeds_per_signal: int = 10
    # graph = (1 - pr_blend) * proximity + pr_blend * PageRank: 0.3 measured -0.006 nDCG@10
    # (mean of the seven shared sets), so off
    pr_blend: float = 0.0
    # the graph signal is at least local_weight x the graph-local channel (entities named in
    # the query -> the nodes that mention them): demo probes recall@5 .76 -> .81
    local_weight: float = 0.5
    # ... and at least global_weight x the graph-global channel (their communities)
    global_weight: float = 0.25
    # factor for test code unless the query is about tests
    test_penalty: float = 0.3
    # code tasks: factor for docs/examples code and prose (notes, changelogs) unless asked for
    nonsource_penalty: float = 0.3
    # community diversity factor (first hit of each new community); 1.05 measured -0.0016
    # nDCG@10, so off by default (--diversity turns it on per query)
    diversity: float = 1.0
    # --group file: a file scores s1 + d*s2 + d^2*s3 over its best nodes (d = file_decay)
    file_decay: float = 0.5
    file_members: int = 3
    # --group file: the first file's Rust declaring module (mod.rs / lib.rs / <folder>.rs) ranks at
    # least this high (0 = off; query/group.py). 5th, not tuned: on code-tasks-multi the declaring
    # modules of the first file ranked 6th-20th were changed by the fix in 7 of 26 tasks' lists,
    # the files ranked 5th in 6 % (docs/code-tasks.md, session rank11)
    declaring_module_rank: int = 5
    # code queries: HITS on the walk's top nodes adjusts scores. Off: on the 64 code tasks
    # (bench/results/code_tasks.md) it lowered symbol MRR@10 on 9 tasks and raised it on 1
    # (sign test p 0.02) and was a tie on files (5/6)
    code_hits: bool = False
    # code tasks: text = best lexical channel + anchor_weight x anchors evidence x the best z.
    # Chosen leave-one-repository-out over the 22 repositories of both code-task sets (grid 0.25 /
    # 0.5 / 1.0): 1.0 in 21 of 22 folds (bench/results/code_tasks_loro.md)
    anchor_weight: float = 1.0
    # code tasks: the anchors channel follows calls from the named nodes (query/anchors.py);
    # a reached node scores anchor_follow x its path evidence (0 = off). Grid 0 / .25 / .5 / 1
    # leave-one-repository-out: > 0 in 21 of 22 folds (.25 in 15), then 0 in 18 of 22 once the
    # C and JS loader fixes landed. A tie: at the shipped point against 0, 2 tasks better and none
    # worse of 266; held out (loro +/- follow, 22 folds) 11/16, p .44. Never measured to hurt at
    # the shipped point (bench/results/code_tasks_loro.md, docs/code-tasks.md)
    anchor_follow: float = 0.25
    # code tasks: a name listed with n - 1 others ('a.x', 'a.y', 'a.z'; `b` or `c`) weighs
    # 1 / (1 + log2(n)) of a name mentioned alone (query/codetask.py, list_shares). Chosen in 22
    # of 22 leave-one-repository-out folds; at the shipped point 4 tasks better, 0 worse on the
    # Python set (sphinx-8474, -8627), 1/1 on the multi set (bench/results/code_tasks_loro.md)
    anchor_lists: bool = True
    # vendored / generated code (FLAG_VENDORED, vendor/ paths, *.min.*, mocks) for code queries,
    # and stubs (.pyi, .d.ts) whose implementation is indexed: this factor
    vendored_penalty: float = 0.1
    stub_penalty: float = 0.3
    # code queries and tasks: a type alias (decl alias) or C/C++ macro that the query does not name
    # (its name is no word of the query): this factor. They became nodes in session 22 (issue 26);
    # on code-tasks-multi at 1.0 symbol ranks were 7/16 better/worse than before them (p .09: the
    # JV_ARRAY_n macros of jq, fmt's sys_time aliases above the gold functions), at 0.5 9/11, files
    # 5/5; 0.3 and 0.7 the same headline (not tuned further: one set, untried on others)
    declaration_penalty: float = 0.5
    # code tasks: pasted banners, repeated log lines and data dumps left out of the words
    # (query/paste.py); anchors still read them. Off: the folds choose it in 22 of 22 and held out
    # it is 18/8 (p .076), but at the shipped point it costs Python file R@10 .929 -> .922 (one
    # pytest task out of the top 10) and, without walk_skip_module_contains, symbol R@10 .732 -> .725
    # (docs/code-tasks.md)
    quiet_paste: bool = False
    # RWR pruning: stdlib graph 10.2 -> 6.9 ms a query, top-10 98.7 % the same as 1e-5
    walk_prune: float = 5e-5
    # code queries: a seed's walk score leaves out its own restart share (restart x its seed
    # weight), which the walk hands back to the first stage's best by construction: the graph
    # signal is what the walk brings over edges (query/graph_stage.py). Chosen in 21 of 22
    # folds; at the shipped point files 3/0 (Python), 6/7 (multi), symbol MRR 3/1 and 5/6
    walk_net_restart: bool = True
    # research switches (off, except walk_skip_module_contains; docs/code-tasks.md). The code walk's
    # score of a node divided by its walk weight (weighted degree, both directions): a random walk
    # with restart gives every node mass in proportion to its degree as well as to its closeness
    # to the seeds; this keeps the closeness
    walk_degree_norm: bool = False
    # edge types the code walk does not follow (e.g. ("similar_text",): text-similarity edges
    # join near-duplicate files, which is not code structure)
    walk_skip: tuple[str, ...] = ()
    # node kinds whose code-walk score is left out of the graph signal (they still pass the walk
    # on), e.g. ("module",): a module node's walk score is mostly what its own definitions pass
    # up over `contains`, which file grouping counts again
    walk_drop_kinds: tuple[str, ...] = ()
    # `contains` edges of module nodes not walked (a file's top-level definitions; a class's
    # members stay joined): in C, Go and JS a file node contains every function directly, and the
    # walk up to the file and down to its siblings counted a file's matches a second time. On since
    # session 6: chosen in 22 of 22 folds, held out 24/12 (p .065); alone at the shipped point
    # multi 19/10, Python 3/2, no Python headline lower (docs/code-tasks.md)
    walk_skip_module_contains: bool = True
    # the code walk starts from the code seeds only (module, class, function, method): a prose
    # seed (a README section) spends its share in the docs (mentions, similar_text)
    walk_code_seeds: bool = False
    # the dense channel's query is its words weighted by idf ** this power, the idf of each word
    # in the index searched (0: the model's own encoding of the text; docs/ranking.md, "Dense")
    dense_idf_power: float = 0.5
    # term proximity (kgsearch/text/term_proximity.py): the fused top proximity_top of a search on
    # one index re-read, and weight x (their proximity scores / the scores' spread over them) added.
    # Off (0): on the seven shared sets .1 with window 8 was chosen leave-one-set-out in every fold
    # (LOSO mean .5202 against .5146, every set above BM25; no set's gain significant on its own;
    # bench/results/quality_loso_proximity.md, docs/fusion-variants.md), but the top N and the spread
    # are one search's, not one index's: several indexes searched as one would no longer rank as the
    # one index holding them all (tests/test_multi.py), so it waits for a step that pools them.
    proximity_weight: float = 0.0
    proximity_window: int = 8
    proximity_top: int = 30
    # a prose query's embedding weight times clip((its words / embed_length_ref) ** embed_length_power,
    # 0.5, 2) x (share of its words the static model holds whole) ** embed_known_power (both 0: off;
    # query/adjust.py embedding_factor). Chosen leave-one-set-out on the seven shared sets among
    # r = -0.5 / +0.5 x every prose profile's embedding weight + 0 / .1 / .2 (with the share, p 1):
    # r +0.5 and no move in 5 folds of 7; LOSO mean .5206 against the profiles' .5184, every set
    # above its BM25 (docs/fusion-variants.md, bench/results/quality_loso_variants_s20.md)
    embed_length_power: float = 0.5
    embed_length_ref: float = 8.0
    embed_known_power: float = 1.0


TUNING = Tuning()
