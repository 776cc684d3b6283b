"""What a search is asked for (:class:`SearchOptions`, validated) and what it answers
(:class:`Response` of :class:`Hit`, each hit with the parts of its score)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from ..errors import UsageError
from ..lines import quoted
from .channels import ALL_CHANNELS, GRAPH_CHANNELS

__all__ = ["SearchOptions", "Hit", "Response", "NORMS", "FUSIONS"]

NORMS = ("z", "max", "minmax", "auto")
FUSIONS = ("linear", "rrf")


@dataclass
class SearchOptions:
    k: int = 10
    intent: str | None = None
    weights: str | tuple | None = None
    fusion: str | None = None              # 'linear' (default) or 'rrf'
    channels: str | list[str] | None = None
    explain: bool = False
    use_cache: bool = False                # the result cache in the index (kgsearch.store.qcache): the CLI's
                                           # search turns it on; a library call answers from the channels
    feedback: bool = True                  # stored feedback nudges the ranking (kgsearch eval turns it off)
    snippets: bool = True
    depth: int = 100                       # candidates per channel (definitions: a long one's parts share its slot)
    norm: str = "z"                        # channel normalisation: z (default), max, minmax, auto
    rrf_k: int = 60
    rrf_cap: int = 50
    keyword_boost: float = 1.0             # intent keywords repeated this often in the BM25 query
                                           # (x5 measured -0.027 nDCG@10 mean on the shared sets)
    collapse: bool = True                  # one hit per note (a section stands for its note)
    diversity: float | None = None         # x factor for the first hit of each new community (None: DIVERSITY)
    group: str | None = None               # "file": rank files by the evidence of their nodes
    correct: bool = True                   # words the index does not know corrected to a known word one
                                           # edit away (kgsearch.text.spelling), said in a notice
    filters: str | tuple | list | None = None   # field filters applied before ranking ("kind:function
                                           # -path:tests/", or FieldFilter objects; kgsearch.query.filters)

    def validated(self) -> "SearchOptions":
        """Raise :class:`UsageError` (exit 2) for values no search can use; return self."""
        if self.fusion is not None and self.fusion not in FUSIONS:
            raise UsageError(f"unknown fusion {quoted(self.fusion)}; choose 'linear' or 'rrf'")
        if self.norm not in NORMS:
            raise UsageError(f"unknown norm {quoted(self.norm)}; choose from {', '.join(NORMS)}")
        self.channel_list()
        for name in ("k", "depth", "rrf_k", "rrf_cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                flag = "-k" if name == "k" else name
                raise UsageError(f"{flag} must be a whole number >= 1, got {value!r}")
        if self.group not in (None, "file"):
            raise UsageError(f"unknown --group {quoted(self.group)}; choose 'file'")
        if self.filters:
            from .filters import parse_filters      # (imports the parser: only when filters are given)
            self.filters = parse_filters(self.filters)   # FieldFilter objects: never re-read from text
                                                         # (a flag's value '<x>' or 'a b' is that value)
        if self.diversity is not None and not (0 < self.diversity < float("inf")):
            raise UsageError(f"--diversity must be a factor > 0 (e.g. 1.05), got {self.diversity!r}")
        return self

    def channel_list(self) -> list[str] | None:
        """The requested channels as a list (``None``: the default pipeline); unknown names raise."""
        ch = self.channels
        if ch is None:
            return None
        items = [c.strip() for c in (ch.split(",") if isinstance(ch, str) else ch) if c and c.strip()]
        bad = [c for c in items if c not in ALL_CHANNELS]
        if bad:
            raise UsageError(f"unknown channel(s) {', '.join(bad)}; choose from {', '.join(ALL_CHANNELS)}")
        if items and all(c in GRAPH_CHANNELS for c in items):
            # they spread from the first stage's candidates: alone they answered "no results"
            raise UsageError(f"--channels {','.join(items)}: the graph channels ({', '.join(GRAPH_CHANNELS)}) start "
                             f"from the candidates of a first-stage channel; add one, e.g. --channels bm25,{items[0]}")
        return items

    def but(self, **changes) -> "SearchOptions":
        return replace(self, **changes)


@dataclass
class Hit:
    id: int
    key: str
    kind: str
    name: str
    qualname: str = ""
    parent: str | None = None                        # key of the containing node (note of a section)
    path: str | None = None
    line: int | None = None
    line_end: int | None = None                      # last line of the node in its file
    snippet: str = ""
    score: float = 0.0
    rank: int = 0
    methods: str = ""
    channels: dict = field(default_factory=dict)     # channel -> {"score", "rank", "norm"}
    signals: dict = field(default_factory=dict)      # signal -> {"value", "weight", "part"}
    adjustments: dict = field(default_factory=dict)  # name -> additive delta or factor
    members: list = field(default_factory=list)      # --group file: the file's matching nodes

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Response:
    query: str
    intent: dict
    fusion: str
    hits: list[Hit]
    channels_run: list[str]
    channels_skipped: dict
    timings_ms: dict
    notices: list[str]
    generation: int
    candidates: int = 0
    code_query: bool = False
    cached: bool = False
    seeds: list = field(default_factory=list)   # node ids the graph stage started from (why shows the path)
    answer: dict | None = None              # the summary intent: kgsearch.explore.topics.global_answer
    corrections: list = field(default_factory=list)   # [[typed word, searched word]] (SearchOptions.correct)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["hits"] = [h.as_dict() for h in self.hits]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Response":
        d = dict(d)
        d["hits"] = [Hit(**h) for h in d["hits"]]
        return cls(**d)
