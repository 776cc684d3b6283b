"""Rule-based query intent: a priority cascade of patterns -> a weight profile.

``classify(query) -> Intent``. The profiles (alpha embedding, beta text, gamma graph,
delta intent edges), the intent keyword sets repeated in the BM25 query, and the edge types
each intent prefers all live in the tables below: edit them here, or override per query with
``--intent`` / ``--weights``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .codelike import identifier_kind
from .codetask import RELATION_EDGES, code_task_reason, relation
from .errors import UsageError

# name: (alpha embedding, beta text, gamma graph, delta intent edges)
#
# Measured, not guessed (bench/results/quality.md). The starting table was
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
PROFILES: dict[str, tuple[float, float, float, float]] = {
    "exact_match":      (0.10, 0.70, 0.15, 0.05),
    "capability_check": (0.20, 0.55, 0.20, 0.05),
    "debugging":        (0.20, 0.50, 0.25, 0.05),
    "workflow":         (0.20, 0.40, 0.30, 0.10),
    "comparison":       (0.20, 0.45, 0.25, 0.10),
    "goal_based":       (0.20, 0.45, 0.25, 0.10),
    "exploratory":      (0.25, 0.35, 0.30, 0.10),
    "semantic":         (0.30, 0.35, 0.35, 0.00),
    "default":          (0.25, 0.45, 0.30, 0.00),
    # code tasks (issue text -> code) and relation questions ("who calls X"): chosen on
    # ../shared/bench/code-tasks with bench/code_tasks.py (bench/results/code_tasks.md); the
    # embedding weight of code_task went .25 -> .15 with the e5-small-en-256 model (at .25 the
    # new model cost file R@5 .859 -> .781; at .15 (scaled to sum 1): R@1 .547, R@5 .812, R@10 .906, symbol
    # R@10 .664, MRR .431: bench/results/code_tasks_model.md)
    "code_task":        (0.17, 0.61, 0.22, 0.00),
    "relation":         (0.05, 0.25, 0.10, 0.60),
}

# Edge types each intent walks in the delta (intent-edge) channel.
INTENT_EDGES: dict[str, tuple[str, ...]] = {
    "debugging": ("has_limitation", "has_workaround", "causes", "fixes"),
    "workflow": ("feeds_into", "requires", "followed_by", "depends_on", "enables"),
    "comparison": ("similar_to", "alternative_to", "complements"),
    "goal_based": ("enables", "supports", "implements", "provides", "solves", "used_for"),
    "capability_check": ("supports", "has_capability", "enables", "has_limitation"),
    "exploratory": ("relates_to", "contains", "part_of"),
    "semantic": ("relates_to", "similar_to", "part_of"),
    "exact_match": (),
    "default": (),
    "code_task": (),
    "relation": ("calls", "imports", "inherits", "references"),    # narrowed per question
}

# Intent keywords: when present in the query they are repeated (x boost) in the BM25 query.
INTENT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "debugging": ("error", "fail", "failure", "debug", "fix", "broken", "issue", "crash", "bug",
                  "exception", "traceback"),
    "capability_check": ("support", "capable", "able", "capability"),
    "workflow": ("pipeline", "workflow", "step", "automate", "automation", "chain", "sequence"),
    "comparison": ("versus", "compare", "comparison", "difference", "alternative"),
    "goal_based": ("reduce", "improve", "achieve", "optimize", "optimise", "increase", "decrease",
                   "minimize", "maximize"),
    "exploratory": ("explore", "browse", "list", "overview"),
}

_WORDS = re.compile(r"[\w'-]+", re.UNICODE)

# (intent, regex) in priority order after exact_match
_RULES: list[tuple[str, re.Pattern]] = [
    ("debugging", re.compile(r"\b(error|errors|fail\w*|debug\w*|fix\w*|broken|issues?|crash\w*|bugs?|"
                             r"exceptions?|traceback\w*)\b", re.I)),
    ("capability_check", re.compile(r"\b(can (it|you|this|i|we|they|kgsearch)\b|does \S+( \S+){0,3} support|"
                                    r"do(es)? (it|you|this) (support|handle|work)|"
                                    r"is \S+( \S+){0,2} (able|capable)|supports?\b.*\?$)", re.I)),
    ("workflow", re.compile(r"\b(pipelines?|workflows?|step[- ]by[- ]step|automat\w*|chain\w*|sequenc\w*|"
                            r"how to|how do i|how do you|how can i)\b", re.I)),
    ("comparison", re.compile(r"\b(vs\.?|versus|compar\w*|differ\w*|which is better|alternatives?)\b", re.I)),
    ("goal_based", re.compile(r"\b(i want to|reduc\w*|improv\w*|achiev\w*|optimi[sz]\w*|increas\w*|"
                              r"decreas\w*|minimi[sz]\w*|maximi[sz]\w*)\b", re.I)),
    ("exploratory", re.compile(r"\b(explor\w*|brows\w*|list|show me|what are|overview|tell me about)\b", re.I)),
]


@dataclass
class Intent:
    name: str
    weights: tuple[float, float, float, float]
    edge_types: tuple[str, ...]
    keywords: list[str] = field(default_factory=list)     # intent keywords found in the query
    reason: str = ""
    forced: bool = False
    target: str | None = None                             # relation: the name asked about

    def as_dict(self) -> dict:
        a, b, g, d = self.weights
        out = {"name": self.name, "weights": {"embedding": a, "text": b, "graph": g, "intent": d},
               "edge_types": list(self.edge_types), "keywords": self.keywords, "reason": self.reason,
               "forced": self.forced}
        if self.target is not None:
            out["target"] = self.target
        return out


def _is_exact(q: str) -> str | None:
    s = q.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'`":
        return "quoted phrase"
    m = re.findall(r'"[^"]+"|`[^`]+`', s)
    if m:
        # a quoted phrase decides the intent of a short query; in a long question it is a detail
        rest = re.sub(r'"[^"]+"|`[^`]+`', " ", s)
        if len(_WORDS.findall(rest)) <= 3:
            return "quoted phrase"
    words = s.split()
    if len(words) == 1:
        return identifier_kind(words[0])
    return None


def keywords_in(query: str, intent: str) -> list[str]:
    words = {w.lower() for w in _WORDS.findall(query)}
    found = []
    for kw in INTENT_KEYWORDS.get(intent, ()):
        if any(w == kw or (w.startswith(kw[:max(4, len(kw) - 2)]) and len(kw) > 4) for w in words):
            found.append(kw)
    return found


def classify(query: str) -> Intent:
    """The first matching rule wins: relation ("who calls X", see
    :func:`kgsearch.codetask.relation`), exact_match, code_task (an issue, bug report or traceback: see
    :func:`kgsearch.codetask.code_task_reason`), debugging, capability_check, workflow,
    comparison, goal_based, exploratory, semantic (more than 10 words), else default."""
    q = query or ""
    rel = relation(q)
    if rel is not None:
        it = make("relation", reason=f"{rel[0]} {rel[1]!r}")
        it.edge_types, it.target = RELATION_EDGES[rel[0]], rel[1]
        return it
    why = _is_exact(q)
    if why:
        return make("exact_match", reason=why)
    why = code_task_reason(q)
    if why:
        return make("code_task", reason=why)
    for name, rx in _RULES:
        m = rx.search(q)
        if m:
            return make(name, reason=f"matched {m.group(0)!r}", keywords=keywords_in(q, name))
    if len(_WORDS.findall(q)) > 10:
        return make("semantic", reason="more than 10 words")
    return make("default", reason="no pattern")


def make(name: str, weights=None, reason: str = "", keywords=None, forced: bool = False) -> Intent:
    if name not in PROFILES:
        raise UsageError(f"unknown intent {name!r}; choose from {', '.join(PROFILES)}")
    w = PROFILES[name] if weights is None else tuple(weights)
    return Intent(name, w, INTENT_EDGES.get(name, ()), list(keywords or []), reason, forced)


def parse_weights(text: str) -> tuple[float, float, float, float]:
    """``".4,.45,.15,0"`` -> 4 floats (embedding, text, graph, intent edges)."""
    parts = [p for p in re.split(r"[,\s/]+", text.strip()) if p]
    try:
        vals = tuple(float(p) for p in parts)
    except ValueError:
        vals = ()
    if len(vals) != 4 or any(v < 0 for v in vals):
        raise UsageError(f"--weights needs 4 non-negative numbers embedding,text,graph,intent; got {text!r}")
    return vals  # type: ignore[return-value]


def resolve(query: str, intent: str | None = None, weights: str | tuple | None = None) -> Intent:
    """Classify ``query`` unless ``intent`` forces a profile; ``weights`` overrides the profile's weights."""
    if intent:
        it = make(intent, reason="--intent", keywords=keywords_in(query, intent), forced=True)
        rel = relation(query or "") if intent == "relation" else None
        if rel is not None:
            it.edge_types, it.target = RELATION_EDGES[rel[0]], rel[1]
    else:
        it = classify(query)
    if weights is not None:
        w = parse_weights(weights) if isinstance(weights, str) else tuple(float(x) for x in weights)
        it.weights = w  # type: ignore[assignment]
        it.reason += " (+ --weights)"
    return it
