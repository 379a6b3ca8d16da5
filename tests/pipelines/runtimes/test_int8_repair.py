"""The accuracy-aware int8 search (pipelines/runtimes/int8_repair.py) on a graph whose every operation has a
known cost: the drop is the sum of the costs of the operations still quantized, so the right answer is known."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from pipelines.runtimes.int8_contract import FLOAT, AccuracyControl
from pipelines.runtimes.int8_ranking import block_of, ranked_units
from pipelines.runtimes.int8_repair import NOT_FASTER, NOT_JUDGED, NOTHING_LEFT, WITHIN, counts_to_try, repaired, search


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


COSTS = {"/model.0/conv": 0.001, "/model.1/conv": 0.03, "/model.2/conv": 0.002, "/model.3/concat": 0.05,
         "/model.4/conv": 0.0}


def test_a_plain_int8_under_half_the_budget_reverts_nothing():
    graph = CostedGraph(COSTS)
    model, repair = search(graph, control_of(graph, budget=0.2))
    assert model is None and repair.outcome == WITHIN and repair.reverted == []
    assert repair.before == pytest.approx(0.083) and graph.reverts == 0


def test_the_costliest_operations_return_to_float_and_no_more_than_needed():
    graph = CostedGraph(COSTS)
    model, repair = search(graph, control_of(graph, budget=0.01))
    # 0.083 over budget: the concat (0.05) and model.1 (0.03) must go, leaving 0.003
    assert model == {"/model.3/concat", "/model.1/conv"}
    assert [unit["name"] for unit in repair.reverted] == ["/model.3/concat", "/model.1/conv"]
    assert [unit["cost"] for unit in repair.reverted] == pytest.approx([0.05, 0.03])
    assert repair.outcome == WITHIN and repair.after == pytest.approx(0.003)
    assert repair.worst[0]["name"] == "/model.3/concat"
    assert set(repair.forward_ms) == {"fp32", "int8_plain", "int8_chosen"}


def test_a_budget_nothing_meets_ends_with_nothing_left_and_the_closest_faster_step():
    graph = CostedGraph({"a": 0.5, "b": 0.4})
    model, repair = search(graph, control_of(graph, budget=-1.0))
    assert repair.outcome == NOTHING_LEFT and model == {"a", "b"} and repair.after == 0.0


def test_a_step_no_faster_than_fp32_ends_the_search():
    graph = CostedGraph(COSTS, slow_after=1)
    model, repair = search(graph, control_of(graph, budget=0.01))
    # two reverted run slower than fp32: the one before, the concat alone, is the closest faster step
    assert repair.outcome == NOT_FASTER and model == {"/model.3/concat"}
    assert repair.after == pytest.approx(0.033) and repair.steps[-1]["forward_vs_fp32"] >= 1.0


def test_a_cost_a_collapse_hid_is_found_by_ranking_again():
    graph = CostedGraph(COSTS)
    control = control_of(graph, budget=0.01)

    def drop(forward, first=None):
        reverted = forward(None)
        if "/model.3/concat" not in reverted:  # collapsed: nothing else wins anything back alone
            return 0.6
        return sum(cost for name, cost in COSTS.items() if name not in reverted and name != "/model.3/concat")

    model, repair = search(graph, AccuracyControl(**{**control.__dict__, "drop": drop}))
    # the first ranking finds only the concat (0.6 -> 0.033); the second, on top of it, model.1 (0.03)
    assert repair.outcome == WITHIN and model == {"/model.3/concat", "/model.1/conv"}
    assert [unit["name"] for unit in repair.reverted] == ["/model.3/concat", "/model.1/conv"]
    assert repair.after == pytest.approx(0.003)


def test_no_object_to_compare_against_is_not_judged():
    graph = CostedGraph(COSTS)
    model, repair = search(graph, control_of(graph, budget=0.01, objects=False))
    assert model is None and repair.outcome == NOT_JUDGED and repair.before is None


def test_counts_to_try_double_up_to_every_operation():
    assert counts_to_try(0) == []
    assert counts_to_try(1) == [1]
    assert counts_to_try(5) == [1, 2, 4, 5]
    assert counts_to_try(8) == [1, 2, 4, 8]


def test_blocks_are_the_top_level_module_of_a_path():
    assert block_of("/model.23/cv2.0/Conv") == "/model.23"
    assert block_of("/model.23/Concat") == "/model.23"
    assert block_of("Conv_12") == "Conv_12"
    assert block_of("output output0") == "output output0"


def test_a_large_graph_ranks_blocks_then_the_costliest_blocks_operations():
    costs = {f"/model.{block}/op{index}": (0.01 if (block, index) == (2, 3) else 0.0)
             for block in range(4) for index in range(5)}
    graph = CostedGraph(costs)
    control = control_of(graph, budget=0.0)
    units = ranked_units(graph, control, 0.01, max_evaluations=10, progress=False)
    # 4 block evaluations, then block 2's 5 operations alone: 9 in all, under the cap of 10
    assert graph.reverts == 9
    assert units[0].label == "/model.2/op3" and units[0].cost == pytest.approx(0.01)
    # every block stays a unit too, behind the operation that wins as much alone
    assert {unit.label for unit in units} >= {"/model.0", "/model.1", "/model.2", "/model.3"}
    assert units[1].label == "/model.2"


def test_the_evaluation_cap_holds_without_a_progress_bar():
    # No terminal (CI, a sweep's or tune's runs): the bar counts nothing, the cap must still bind.
    costs = {f"/model.{block}/op{index}": (0.01 if (block, index) == (2, 3) else 0.0)
             for block in range(4) for index in range(5)}
    graph = CostedGraph(costs)
    units = ranked_units(graph, control_of(graph, budget=0.0), 0.01, max_evaluations=8, progress=False)
    # 4 block evaluations; block 2's 5 operations would pass the cap of 8, so the blocks are the ranking
    assert graph.reverts == 4
    assert units[0].label == "/model.2" and units[0].cost == pytest.approx(0.01)


def test_the_result_is_cached_by_the_quantized_file_and_the_controls_digest(tmp_path):
    quantized = tmp_path / "net.int8-abc.onnx"
    quantized.write_text("quantized")
    made = []

    def graph_of():
        made.append(CostedGraph(COSTS))
        return made[-1]

    first, document = repaired(graph_of, control_of(CostedGraph(COSTS), budget=0.01), quantized, lambda p: [p])
    assert document["cache_hit"] is False and first != quantized and first.read_text() == "/model.1/conv,/model.3/concat"
    again, cached = repaired(graph_of, control_of(CostedGraph(COSTS), budget=0.01), quantized, lambda p: [p])
    assert again == first and cached["cache_hit"] is True and len(made) == 1
    assert cached["reverted"] == document["reverted"]
    other = control_of(CostedGraph(COSTS), budget=0.2)
    other = AccuracyControl(**{**other.__dict__, "digest": "d2"})
    plain, within = repaired(graph_of, other, quantized, lambda p: [p])
    assert plain == quantized and within["outcome"] == WITHIN and len(made) == 2


def test_a_block_too_large_to_split_into_operations_is_split_down_its_paths():
    # one block of 40 operations in 4 branches of 10; the cost sits in one operation of one branch
    costs = {f"/model.{block}/op": 0.0 for block in range(6)}
    costs.update({f"/model.23/cv{branch}/op{index}": (0.02 if (branch, index) == (2, 7) else 0.0)
                  for branch in range(4) for index in range(10)})
    graph = CostedGraph(costs)
    units = ranked_units(graph, control_of(graph, budget=0.0), 0.02, max_evaluations=25, progress=False)
    # 7 blocks, /model.23's 4 branches, then /model.23/cv2's 10 operations: 21 evaluations, within 25
    assert graph.reverts == 21
    assert [unit.label for unit in units[:3]] == ["/model.23/cv2/op7", "/model.23/cv2", "/model.23"]
