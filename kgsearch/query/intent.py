"""Query intents: one :class:`IntentSpec` each, and the rule cascade that picks one.

An intent is what the query asks for; its spec says everything the engine does differently for
it: the fusion weights (alpha embedding, beta text, gamma graph, delta intent edges), the edge
types its intent-edge channel walks, the keywords repeated in the BM25 query (``--keyword-boost``),
the rule that recognises it in a parsed :class:`~kgsearch.query.parse.Query`, a help line (the
CLI's ``--intent`` choices and the MCP schema are generated from :data:`INTENTS`), and flags the
stages read instead of the intent's name:

* ``exact``: the query names one thing (``exact_match``): the pattern channel runs (unless a
  quoted phrase decided it), and shared tag/entity nodes stay in the results;
* ``names_code``: code names in it are matched exactly by the anchors channel; FTS5 phrases
  and the fuzzy pattern channel stay off (``code_task``, ``relation``);
* ``code_task``: an issue text: its mentions of tests or docs do not ask for tests or docs, and
  code outside the sources (vendored, docs/examples) and prose are ranked down;
* ``relation``: "who calls X": the relation channel answers from the edges into X, test code
  counts as a user, and the intent-edge walk is off;
* ``two_hop``: the graph signal pulls from neighbours two hops away too;
* ``summary``: "what are the main topics in my notes": the answer names the largest communities
  with their summaries (:func:`kgsearch.explore.topics.global_answer`) above the hits.

``classify(query) -> Intent``: the first spec whose rule gives a reason wins, in the order of
:data:`INTENTS`. ``resolve`` applies ``--intent`` / ``--weights`` overrides.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from ..errors import UsageError
from ..lines import quoted
from ..numerals import parse_float
from .codetask import RELATION_EDGES

if TYPE_CHECKING:
    from .parse import Query

__all__ = ["IntentSpec", "Intent", "INTENTS", "INTENT_NAMES", "ISSUE_WORDS", "classify", "resolve", "make", "parse_weights",
           "keywords_in", "with_weights"]


@dataclass(frozen=True)
class IntentSpec:
    name: str
    help: str
    weights: tuple[float, float, float, float]     # embedding, text, graph, intent edges
    edge_types: tuple[str, ...] = ()               # walked by the intent-edge channel
    keywords: tuple[str, ...] = ()                 # repeated in the BM25 query when present
    rule: Callable[["Query"], str | None] | None = None    # why the query has this intent, or None
    exact: bool = False
    names_code: bool = False
    code_task: bool = False
    relation: bool = False
    two_hop: bool = False
    summary: bool = False                          # answered from the communities' summaries too


def _matching(rx: re.Pattern) -> Callable[["Query"], str | None]:
    def rule(q: "Query") -> str | None:
        m = rx.search(q.text)
        return f"matched {m.group(0)!r}" if m else None
    return rule


def _relation_rule(q: "Query") -> str | None:
    return f"{q.relation[0]} {q.relation[1]!r}" if q.relation else None


def _exact_rule(q: "Query") -> str | None:
    return "quoted phrase" if q.quoted else q.identifier


# The weights are measured, not guessed (bench/results/quality.md). The starting table was
#   exact_match .15/.65/.10/.10, capability_check .30/.55/.10/.05, debugging .30/.45/.20/.05,
#   workflow .30/.25/.30/.15, comparison .35/.30/.25/.10, goal_based .40/.25/.15/.20,
#   exploratory .45/.20/.25/.10, semantic .55/.15/.15/.15, default .40/.45/.15/.00;
# with a small static embedding model every profile that gave the embedding more weight than
# about half the text weight lost nDCG@10 on all seven shared sets, and the graph signal
# (neighbour mean over typed and similar_text edges) was worth about 0.3. The profiles keep
# the intents' relative leanings (exact names lean on text, exploratory/semantic on embedding
# and graph, relation-seeking intents on their intent edges) around that measured optimum.
# Checked leave-one-set-out with the e5-small-en-256 model (bench/results/quality_loso.md): no
# setting of a 30-point grid (every prose profile's embedding weight -.1..+.3, graph weight
# -.1..+.1, norm z or max) chosen on six sets beat these profiles on the seventh (LOSO mean
# .5069 / .5108 by two selection rules vs .5134), so they stay.
# code_task and relation were chosen on ../shared/bench/code-tasks with bench/code_tasks.py
# (bench/results/code_tasks.md); the embedding weight of code_task went .25 -> .15 with the
# e5-small-en-256 model (at .25 the new model cost file R@5 .859 -> .781; at .15, scaled to
# sum 1: R@1 .547, R@5 .812, R@10 .906, symbol R@10 .664, MRR .431:
# bench/results/code_tasks_model.md). The order is the rule cascade's.
# A text of more than ISSUE_WORDS words is a paragraph, not a question someone types: in an index
# mostly of code (query.code.code_share: over half its nodes from code files) it is an issue
# however it reads, even with no code-shaped word in it ("the client does not reconnect after the
# DNS record changes ..."), or when one of its words trips a prose rule ('error', a quoted
# message, "uses this"). Measured on the code tasks (docs/code-tasks.md): 13 of the 202 multi
# issues and 6 of the 64 Python ones were read so; as code tasks, 5 multi issues rank their
# first gold file higher, none lower, and every Python ranking is unchanged.
ISSUE_WORDS = 20

INTENTS: dict[str, IntentSpec] = {s.name: s for s in (
    IntentSpec("relation", "who calls / imports / uses X: answered from the edges into X",
               (0.05, 0.25, 0.10, 0.60), ("calls", "imports", "inherits", "references"),   # narrowed per question
               rule=_relation_rule, names_code=True, relation=True),
    IntentSpec("exact_match", "a quoted phrase, or one identifier, file or dotted name",
               (0.10, 0.70, 0.15, 0.05), rule=_exact_rule, exact=True),
    IntentSpec("code_task", f"an issue, bug report or traceback (or a text of more than {ISSUE_WORDS} words in an "
               "index mostly of code): ranks the code to change",
               (0.17, 0.61, 0.22, 0.00), rule=lambda q: q.code_task, names_code=True, code_task=True),
    IntentSpec("debugging", "errors, failures, crashes, fixes",
               (0.20, 0.50, 0.25, 0.05), ("has_limitation", "has_workaround", "causes", "fixes"),
               ("error", "fail", "failure", "debug", "fix", "broken", "issue", "crash", "bug", "exception",
                "traceback"),
               rule=_matching(re.compile(r"\b(error|errors|fail\w*|debug\w*|fix\w*|broken|issues?|crash\w*|bugs?|"
                                         r"exceptions?|traceback\w*)\b", re.I))),
    IntentSpec("capability_check", "can it / does it support ...",
               (0.20, 0.55, 0.20, 0.05), ("supports", "has_capability", "enables", "has_limitation"),
               ("support", "capable", "able", "capability"),
               rule=_matching(re.compile(r"\b(can (it|you|this|i|we|they|kgsearch)\b|does \S+( \S+){0,3} support|"
                                         r"do(es)? (it|you|this) (support|handle|work)|"
                                         r"is \S+( \S+){0,2} (able|capable)|supports?\b.*\?$)", re.I))),
    IntentSpec("workflow", "how to, pipelines, steps, automation",
               (0.20, 0.40, 0.30, 0.10), ("feeds_into", "requires", "followed_by", "depends_on", "enables"),
               ("pipeline", "workflow", "step", "automate", "automation", "chain", "sequence"),
               rule=_matching(re.compile(r"\b(pipelines?|workflows?|step[- ]by[- ]step|automat\w*|chain\w*|"
                                         r"sequenc\w*|how to|how do i|how do you|how can i)\b", re.I)),
               two_hop=True),
    IntentSpec("comparison", "X vs Y, differences, alternatives",
               (0.20, 0.45, 0.25, 0.10), ("similar_to", "alternative_to", "complements"),
               ("versus", "compare", "comparison", "difference", "alternative"),
               rule=_matching(re.compile(r"\b(vs\.?|versus|compar\w*|differ\w*|which is better|alternatives?)\b",
                                         re.I))),
    IntentSpec("goal_based", "reduce, improve, optimise ...",
               (0.20, 0.45, 0.25, 0.10), ("enables", "supports", "implements", "provides", "solves", "used_for"),
               ("reduce", "improve", "achieve", "optimize", "optimise", "increase", "decrease", "minimize",
                "maximize"),
               rule=_matching(re.compile(r"\b(i want to|reduc\w*|improv\w*|achiev\w*|optimi[sz]\w*|increas\w*|"
                                         r"decreas\w*|minimi[sz]\w*|maximi[sz]\w*)\b", re.I))),
    IntentSpec("summary", "what are the main topics / what is this repository about: the largest communities, "
               "summarised, above the hits",
               (0.25, 0.35, 0.30, 0.10), ("relates_to", "contains", "part_of"),
               rule=_matching(re.compile(
                   r"\b((main|key|major|biggest|largest) (topics?|themes?|subjects?|areas?)|what (is|are) (this|these|my|"
                   r"the) (repo|repository|project|codebase|code base|vault|notes|knowledge base|index) about|"
                   r"summari[sz]e (my|the|this|these) (notes|vault|repo|repository|project|codebase|index))\b", re.I)),
               two_hop=True, summary=True),
    IntentSpec("exploratory", "explore, list, overview, tell me about",
               (0.25, 0.35, 0.30, 0.10), ("relates_to", "contains", "part_of"),
               ("explore", "browse", "list", "overview"),
               rule=_matching(re.compile(r"\b(explor\w*|brows\w*|list|show me|what are|overview|tell me about)\b",
                                         re.I)),
               two_hop=True),
    IntentSpec("semantic", "a long question (more than 10 words)",
               (0.30, 0.35, 0.35, 0.00), ("relates_to", "similar_to", "part_of"),
               rule=lambda q: "more than 10 words" if len(q.words) > 10 else None),
    IntentSpec("default", "anything else", (0.25, 0.45, 0.30, 0.00), rule=lambda q: "no pattern"),
)}
INTENT_NAMES = tuple(INTENTS)


@dataclass(frozen=True)
class Intent:
    """The intent of one search: its spec, and the weights, edge types and keywords it uses."""

    spec: IntentSpec
    weights: tuple[float, float, float, float]
    edge_types: tuple[str, ...]
    keywords: tuple[str, ...] = ()                   # intent keywords found in the query
    reason: str = ""
    forced: bool = False
    target: str | None = None                        # relation: the name asked about

    @property
    def name(self) -> str:
        return self.spec.name

    def as_dict(self, used: dict | None = None) -> dict:
        """The intent as a response names it. ``used``: the weights the search fused with, when a
        query's own evidence moved them (:func:`kgsearch.query.adjust.query_weights`): then they are
        ``weights`` and the profile's are ``profile_weights``."""
        a, b, g, d = self.weights
        out = {"name": self.name, "weights": {"embedding": a, "text": b, "graph": g, "intent": d},
               "edge_types": list(self.edge_types), "keywords": list(self.keywords), "reason": self.reason,
               "forced": self.forced}
        if used is not None:
            moved = {k: float(used.get(k, 0.0)) for k in out["weights"]}
            if moved != out["weights"]:
                out["profile_weights"], out["weights"] = out["weights"], moved
        if self.target is not None:
            out["target"] = self.target
        return out


def keywords_in(q: "Query", spec: IntentSpec) -> tuple[str, ...]:
    """The spec's keywords the query holds (a word equal to it, or for keywords of 5+ letters
    one starting with all but its last two letters, at least 4)."""
    words = {w.lower() for w in q.words}
    return tuple(kw for kw in spec.keywords
                 if any(w == kw or (w.startswith(kw[:max(4, len(kw) - 2)]) and len(kw) > 4) for w in words))


def make(q: "Query", name: str, reason: str = "", forced: bool = False) -> Intent:
    """The :class:`Intent` ``name`` for ``q`` (a relation question narrows the edge types to
    what it asks and names its target)."""
    spec = INTENTS.get(name)
    if spec is None:
        raise UsageError(f"unknown intent {quoted(name)}; choose from {', '.join(INTENTS)}")
    edge_types, target = spec.edge_types, None
    if spec.relation and q.relation is not None:
        edge_types, target = RELATION_EDGES[q.relation[0]], q.relation[1]
    return Intent(spec, spec.weights, edge_types, keywords_in(q, spec), reason, forced, target)


def classify(q: "Query") -> Intent:
    """The first spec of :data:`INTENTS` whose rule gives a reason: relation, exact_match,
    code_task, debugging, capability_check, workflow, comparison, goal_based, exploratory,
    semantic (more than 10 words), else default."""
    for spec in INTENTS.values():
        why = spec.rule(q) if spec.rule is not None else None
        if why:
            return make(q, spec.name, reason=why)
    raise AssertionError("the default intent's rule always matches")       # pragma: no cover


def parse_weights(text: str) -> tuple[float, float, float, float]:
    """``".4,.45,.15,0"`` -> 4 floats (embedding, text, graph, intent edges)."""
    parts = [p for p in re.split(r"[,\s/]+", text.strip()) if p]
    try:        # (ASCII numbers: float() also reads other scripts' digits, `١,0,0,0`; nan and inf are no weight)
        vals = tuple(parse_float(p) for p in parts)
    except ValueError:
        vals = ()
    if len(vals) != 4 or not all(v >= 0 for v in vals):
        raise UsageError(f"--weights needs 4 non-negative numbers embedding,text,graph,intent; got {quoted(text)}")
    _some_weight(vals, text)
    return vals  # type: ignore[return-value]


def _some_weight(vals, given) -> None:
    """All four at 0 scored every hit 0 and ranked nothing: a usage error."""
    if not any(vals):
        raise UsageError(f"--weights {given!r} gives every signal 0, so nothing could rank; give at least one "
                         f"weight above 0 (e.g. --weights 0.25,0.45,0.3,0)")


def resolve(q: "Query", intent: str | None = None, weights: str | tuple | None = None,
            code_index: bool = False) -> Intent:
    """Classify ``q`` unless ``intent`` forces a spec; ``weights`` overrides the spec's weights.
    ``code_index``: the index is mostly code, where a text of more than :data:`ISSUE_WORDS`
    words is a code task (unless it asks for docs or release notes)."""
    it = make(q, intent, reason="--intent", forced=True) if intent else classify(q)
    if (code_index and not intent and not it.spec.code_task and len(q.words) > ISSUE_WORDS
            and not q.about_prose):
        it = make(q, "code_task", reason=f"{len(q.words)} words in an index mostly of code")
    if weights is not None:
        w = parse_weights(weights) if isinstance(weights, str) else tuple(float(x) for x in weights)
        _some_weight(w, ",".join(f"{x:g}" for x in w))
        it = replace(it, weights=w, reason=it.reason + " (+ --weights)")
    return it


def with_weights(table: dict[str, tuple[float, float, float, float]]) -> dict[str, IntentSpec]:
    """Replace the weights of the named intents in :data:`INTENTS` (``"*"``: every intent);
    returns the specs as they were, for :data:`INTENTS`.update() to restore (bench/tune_pipeline.py)."""
    before = dict(INTENTS)
    for name, w in table.items():
        for t in (INTENTS if name == "*" else [name]):
            INTENTS[t] = replace(INTENTS[t], weights=tuple(float(x) for x in w))
    return before
