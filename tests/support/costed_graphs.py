"""A quantized graph of operations with a cost each, and the harness's accuracy control over it: what the tests of
accuracy-aware int8 (pipelines/runtimes/int8_repair.py, int8_ranking.py) search through."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from pipelines.runtimes.int8_contract import FLOAT, AccuracyControl


class CostedGraph:
    """Operations with a cost each; a model is the set of operations fed float. `slow_after`: reverting more
    operations than this makes the forward slower than the float one."""

    def __init__(self, costs: dict[str, float], slow_after: int = 10_000):
        self.costs, self.slow_after = costs, slow_after
        self.saved: dict[Path, frozenset] = {}
        self.reverts = 0

    def operations(self):
        return list(self.costs)

    def reverted(self, names):
        self.reverts += 1
        return frozenset(names)

    def forward(self, model):
        reverted = frozenset(self.costs) if model is FLOAT else model or frozenset()
        pause = 0.004 if model is FLOAT else 0.006 if len(reverted) > self.slow_after else 0.001

        def run(array):
            time.sleep(pause)
            return reverted

        return run

    def save(self, model, target):
        self.saved[target] = model
        target.write_text(",".join(sorted(model)))


def control_of(graph: CostedGraph, budget: float, objects: bool = True) -> AccuracyControl:
    def drop(forward, first=None):
        if not objects:
            return None
        reverted = forward(None)
        return sum(cost for name, cost in graph.costs.items() if name not in reverted)

    return AccuracyControl(reference=lambda forward: None, drop=drop, inputs=lambda: [np.zeros(1)] * 2,
                           budget=budget, images=10, figure="test drop", digest="d1", ranking_images=4)
