"""What concurrent streams' step times say about an offline run's rate, and how the console states it."""
import pytest

from utils.measure.steps.stream_rates import forward_bound
from utils.commands.sweep.answer import PointFigures
from utils.commands.sweep.figures import point_line
from utils.reporting.console import forward_bound_line, headline
from utils.reporting.run_report import headline_cells


def test_offline_bound_on_two_streams_is_hand_computed():
    bound = forward_bound("offline", 2, pipeline_ms_per_image=80.0, forward_ms_per_image=76.0)
    assert bound["pipeline_samples_per_s"] == pytest.approx(25.0)  # 2 x 1000 / 80
    assert bound["forward_samples_per_s"] == pytest.approx(2000.0 / 76.0)
    assert bound["outside_forward_share"] == pytest.approx(0.05)  # 4 of 80 ms
    assert bound["streams"] == 2


@pytest.mark.parametrize("scenario", ["single_stream", "multi_stream", "server"])
def test_only_offline_keeps_every_stream_busy_so_only_it_has_a_bound(scenario):
    assert forward_bound(scenario, 2, 80.0, 76.0) is None


@pytest.mark.parametrize("pipeline_ms, forward_ms", [(None, 76.0), (80.0, None), (0.0, 76.0)])
def test_no_bound_without_both_times(pipeline_ms, forward_ms):
    assert forward_bound("offline", 2, pipeline_ms, forward_ms) is None


def _summary(scenario=None, streams=1):
    summary = {"model": "yolov7-tiny", "threads": 2, "runtime": {"backend": "openvino", "precision": "fp32"},
               "pipeline_latency": {"images_per_s": 12.5, "ms_per_image": 80.0, "p50_ms_per_image": 79.0,
                                    "mean_images_per_batch": 1.0, "streams": streams}}
    if scenario:
        summary["scenario"] = scenario
    return summary


def test_single_stream_headline_leads_with_images_per_s():
    text = headline(_summary())
    assert "12.50 images/s, 80.0 ms/image (p50 79.0 ms/image" in text


def test_offline_headline_leads_with_loadgens_rate_not_one_streams():
    scenario = {"name": "offline", "result": {"samples_per_s": 24.7, "latency_ms": {"p99": 9000.0}}}
    text = headline(_summary(scenario, streams=2))
    assert "offline 24.70 samples/s (LoadGen); each of 2 streams 80.0 ms/image" in text
    assert "12.50" not in text  # one stream's rate would read as the run's


def test_multi_stream_headline_leads_with_its_p99():
    scenario = {"name": "multi_stream", "result": {"samples_per_s": None, "latency_ms": {"p99": 412.25}}}
    assert "multi_stream p99 query latency 412.2 ms (LoadGen); 80.0 ms/image" in headline(_summary(scenario))


def test_bound_line_names_both_rates_and_the_share_outside_the_forward():
    line = forward_bound_line(forward_bound("offline", 2, 80.0, 76.0))
    assert "allows 25.00 samples/s, the forward alone 26.32" in line and "5.0% of each stream's time" in line


def test_report_headline_names_one_streams_rate_and_shows_the_forward_alone_beside_loadgens():
    bound = forward_bound("offline", 2, 80.0, 76.0)
    scenario = {"name": "offline", "result": {"valid": True, "samples_per_s": 24.7, "latency_ms": {"p99": 9000.0}},
                "forward_bound": bound}
    cells = dict(headline_cells(_summary(scenario, streams=2)))
    assert cells["offline samples/s"] == 24.7
    assert cells["forward alone samples/s"] == bound["forward_samples_per_s"]
    assert cells["images/s per stream (2)"] == 12.5 and "images/s (pipeline)" not in cells


@pytest.mark.parametrize("scenario, figures, shown", [
    ("single_stream", {}, "80.0 ms/image p50, 12.50 images/s, detections equal"),
    ("offline", {"scenario_samples_per_s": 24.7}, "80.0 ms/image p50, offline 24.70 samples/s (LoadGen), detections"),
    ("multi_stream", {"scenario_p99_ms": 412.25}, "multi_stream p99 412.2 ms (LoadGen)"),
    ("server", {"scenario_samples_per_s": None}, "server n/a (LoadGen)")])
def test_a_sweeps_console_line_leads_with_each_scenarios_own_figure(scenario, figures, shown):
    point = PointFigures("p", {}, p50_ms_per_image=80.0, images_per_s=12.5, agreement="equal", scenario=scenario,
                         samples_per_s=figures.get("scenario_samples_per_s"), p99_ms=figures.get("scenario_p99_ms"))
    assert shown in point_line(point)
