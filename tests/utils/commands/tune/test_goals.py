"""What each goal races (utils/commands/tune/goals.py): a cost per run, lower is faster."""
import pytest

from utils.commands.sweep.answer import PointFigures
from utils.commands.tune.goals import Goal


def figures(samples=(10.0, 20.0, 30.0, 40.0, 50.0), samples_per_s=None, valid=None):
    return PointFigures("p", {}, 30.0, None, "equal", tuple(samples), samples_per_s=samples_per_s,
                        scenario_valid=valid)


def test_latency_races_the_chosen_percentile_of_the_batches():
    assert Goal("latency", "p50").cost(figures()) == pytest.approx(30.0)
    assert Goal("latency", "p90").cost(figures()) == pytest.approx(46.0)
    assert Goal("latency").samples(figures()) == (10.0, 20.0, 30.0, 40.0, 50.0)


def test_throughput_races_milliseconds_per_sample():
    goal = Goal("throughput")
    assert goal.cost(figures(samples_per_s=40.0)) == pytest.approx(25.0)
    assert goal.shown(25.0) == "40.00 samples/s"
    assert goal.cost(figures(samples_per_s=None)) is None


def test_a_server_rate_counts_only_where_loadgen_found_it_valid():
    goal = Goal("server", target_ms=100.0)
    assert goal.cost(figures(samples_per_s=20.0, valid=False)) is None
    assert goal.cost(figures(samples_per_s=20.0, valid=True)) == pytest.approx(50.0)
    assert "benchmark.loadgen.target_latency_ms=100.0" in goal.overrides()


def test_only_latency_leaves_the_streams_out():
    assert not Goal("latency").runs_streams
    assert Goal("throughput").runs_streams and Goal("server", target_ms=5.0).runs_streams
