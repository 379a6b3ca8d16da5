"""The accuracy-aware int8 search (pipelines/runtimes/int8_repair.py) on a graph whose every operation has a
known cost: the drop is the sum of the costs of the operations still quantized, so the right answer is known."""
from __future__ import annotations

import pytest

from pipelines.runtimes.int8_contract import AccuracyControl
from pipelines.runtimes.int8_repair import NOT_FASTER, NOT_JUDGED, NOTHING_LEFT, WITHIN, counts_to_try, repaired, search
from tests.support.costed_graphs import CostedGraph, control_of


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
