"""Ranking a quantized graph's operations by what feeding them float wins back (pipelines/runtimes/int8_ranking.py):
blocks first, then the costliest blocks' operations or branches, within a cap of evaluations."""
from __future__ import annotations

import pytest

from pipelines.runtimes.int8_ranking import block_of, ranked_units, runs_of_blocks
from tests.support.costed_graphs import CostedGraph, control_of


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


def test_runs_of_blocks_are_consecutive_and_as_even_as_whole_blocks_allow():
    blocks = [(f"/model.{index}", [f"/model.{index}/op"]) for index in range(7)]
    runs = runs_of_blocks(blocks, 3)
    assert [label for label, _ in runs] == ["/model.0../model.1", "/model.2../model.3", "/model.4../model.6"]
    assert [name for _, members in runs for name in members] == [f"/model.{index}/op" for index in range(7)]
    assert runs_of_blocks(blocks[:2], 3) == [("/model.0", ["/model.0/op"]), ("/model.1", ["/model.1/op"])]


def test_more_blocks_than_the_cap_are_ranked_by_runs_of_blocks_within_it():
    # 12 blocks of 5 operations and a cap of 8: 4 runs of 3 blocks, then the costly run's 3 blocks; the costly
    # block's 5 operations would pass the cap, so the ranking ends there, at 7 models compiled
    costs = {f"/model.{block}/op{index}": (0.01 if (block, index) == (7, 3) else 0.0)
             for block in range(12) for index in range(5)}
    graph = CostedGraph(costs)
    units = ranked_units(graph, control_of(graph, budget=0.0), 0.01, max_evaluations=8, progress=False)
    assert graph.reverts == 7
    assert [unit.label for unit in units[:2]] == ["/model.7", "/model.6../model.8"]
    assert units[0].cost == pytest.approx(0.01) and units[1].cost == pytest.approx(0.01)
