"""kgsearch.jsonable: the one rule for values json cannot write (CLI --json and the HTTP API)."""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from kgsearch.jsonable import jsonable


@dataclass
class Rec:
    a: int

    def as_dict(self):
        return {"a": self.a, "kind": "rec"}


class Plain:
    def __init__(self):
        self.x = 1


def test_each_kind_of_value():
    d = {"f": np.float32(0.5), "i": np.int64(3), "arr": np.arange(3), "rec": Rec(2), "plain": Plain(),
         "other": {1, 2} and frozenset()}
    assert json.loads(json.dumps(d, default=jsonable)) == {
        "f": 0.5, "i": 3, "arr": [0, 1, 2], "rec": {"a": 2, "kind": "rec"}, "plain": {"x": 1}, "other": "frozenset()"}
