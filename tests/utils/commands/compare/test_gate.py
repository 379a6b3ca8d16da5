"""The regression gate of `compare --fail-above`: its statistics on hand-computed cases, then real runs of
yolov7-tiny at 128 px: one, its files copied as a repeat with the same figures, and one with an injected slow
step (the 250 ms sleep before every NMS of tests/support/slow_step_run.py). The runs go one after another, each on
one thread of the two cores, so each has a core to spare for whatever else the machine runs."""
import json
import shutil
from pathlib import Path

import pytest

from benchmark import main
from pipelines.yolo.pipeline import YoloPipeline
from tests.support.paths import ROOT
from tests.support.slow_step_run import slow_suppress
from utils.commands.compare.gate import (Figure, Interval, judge, latency_figure, map_drop_figure, parse_threshold,
                                single_value_figure, throughput_figure, throughput_ratio_interval, verdict_line)

RUN = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"),
       "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}", "--set", "dataset.limit=4",
       "--set", "dataset.batch_size=1", "--set", "benchmark.repeats=3", "--set", "preprocess.img_size=128",
       "--set", "runtime.threads=1", "--set", "benchmark.layer_timing=false", "--set", "outputs.plots=false",
       "--set", "outputs.save_images=false", "--set", "outputs.report=false"]


# --- the statistics, by hand ---

@pytest.mark.parametrize("text, value", [("5", 5.0), ("0", 0.0), ("2.5", 2.5)])
def test_threshold_accepts_a_percentage(text, value):
    assert parse_threshold(text) == value


@pytest.mark.parametrize("text", ["-1", "five", "nan", "inf", ""])
def test_threshold_refuses_negative_or_not_a_number(text):
    with pytest.raises(ValueError, match="--fail-above"):
        parse_threshold(text)


def test_throughput_ratio_of_constant_batches_is_exact():
    # base: 3 batches of 2 images in 100 ms = 20 images/s; new: 2 images in 125 ms = 16 images/s: 0.8.
    ratio, low, high = throughput_ratio_interval([100.0] * 3, [2] * 3, [125.0] * 3, [2] * 3)
    assert (ratio, low, high) == pytest.approx((0.8, 0.8, 0.8))


def test_throughput_weighs_batches_by_their_images():
    # base 6 images in 300 ms (20/s); new a full batch of 4 in 100 ms and a short one of 1 in 100 ms, three
    # times: 15 images in 600 ms = 25/s, not the 22.5/s a mean of per-batch rates would give.
    ratio, _, _ = throughput_ratio_interval([100.0] * 3, [2] * 3, [100.0, 100.0] * 3, [4, 1] * 3)
    assert ratio == pytest.approx(25 / 20)


def test_throughput_needs_three_batches_a_side():
    assert throughput_ratio_interval([100.0, 100.0], [1, 1], [100.0] * 3, [1] * 3) is None


def test_latency_figure_of_twice_the_time_is_a_hundred_percent_worse():
    figure = latency_figure([10.0, 10.0, 10.0], [20.0, 20.0, 20.0])
    assert (figure.base, figure.new, figure.change) == (10.0, 20.0, 100.0)
    assert (figure.interval.low, figure.interval.high) == pytest.approx((100.0, 100.0))


def test_throughput_figure_of_half_the_rate_loses_fifty_percent():
    figure = throughput_figure([100.0] * 3, [1] * 3, [200.0] * 3, [1] * 3)
    assert (figure.base, figure.new) == pytest.approx((10.0, 5.0))
    assert figure.change == pytest.approx(50.0)
    assert (figure.interval.low, figure.interval.high) == pytest.approx((50.0, 50.0))


def test_single_values_are_worse_in_the_direction_that_hurts():
    assert single_value_figure("peak_memory", "m", "MiB", 100.0, 120.0, "").change == pytest.approx(20.0)
    assert single_value_figure("throughput", "t", "/s", 100.0, 120.0, "").change == pytest.approx(-20.0)


def test_map_drop_is_in_points_of_map():
    figure = map_drop_figure(0.70, 0.68, None)
    assert figure.change == pytest.approx(2.0) and figure.change_unit == "points"


def _figure(change, low, high):
    interval = None if low is None else Interval(low, high, 0.95, "by hand")
    return Figure("latency", "median latency", "ms/image", 10.0, 10.0 * (1 + change / 100), change, "%", interval)


@pytest.mark.parametrize("change, low, high, regressed, reason", [
    (30.0, 12.0, 50.0, True, "worse than the threshold, and the interval excludes no change"),
    (30.0, -5.0, 60.0, False, "within noise"),            # beyond PCT, but the interval holds no change
    (5.0, 2.0, 8.0, False, "within the threshold"),       # real, but smaller than PCT
    (-30.0, -50.0, -10.0, False, "better"),
    (30.0, None, None, True, "judged on the values alone"),
    (5.0, None, None, False, "judged on the values alone"),
])
def test_judge(change, low, high, regressed, reason):
    verdict = judge(_figure(change, low, high), 10.0)
    assert verdict.regressed is regressed and reason in verdict.reason


def test_verdict_line_names_figure_values_interval_and_threshold():
    line = verdict_line(judge(_figure(30.0, 12.0, 50.0), 10.0))
    for part in ("gate latency", "REGRESSION", "median latency", "base 10", "new 13", "30.0% worse",
                 "[+12.0, +50.0]", "threshold 10 %"):
        assert part in line, (part, line)


# --- real runs ---

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs in this process, one after another (a process of their own each would add its start-up, the
    imports of torch and the rest, twice over); the slow one with slow_step_run's sleep patched in for its run
    only. `again` is the base run's files copied: two real runs of one configuration differ by whatever else the
    machine ran meanwhile (by 69% once in this suite), so a test that a repeat passes would time the machine."""
    outputs = tmp_path_factory.mktemp("gate")
    for name in ("base", "slow"):
        with pytest.MonkeyPatch.context() as patch:
            if name == "slow":
                patch.setattr(YoloPipeline, "suppress", slow_suppress)
            code = main(RUN + ["--set", f"run.output_dir={outputs}", "--set", f"run.id={name}"])
        assert code == 0, name
    shutil.copytree(outputs / "base", outputs / "again")
    return {name: outputs / name for name in ("base", "again", "slow")}


def _gate(capsys, base, new, *options):
    status = main(["compare", str(base), str(new), "--out", str(Path(new).parent / "compare"), *options])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.slow
def test_gate_trips_on_an_injected_slow_step(runs, capsys):
    status, out, _ = _gate(capsys, runs["base"], runs["slow"], "--fail-above", "50", "--metric", "latency",
                           "--metric", "throughput")
    assert status == 1, out
    assert "gate latency: REGRESSION" in out and "gate: FAILED on latency" in out
    # Throughput is a mean: one batch the machine stalled in the base run weighs on it, so it is only
    # required to come out worse.
    throughput = next(line for line in out.splitlines() if line.startswith("gate throughput:"))
    assert "% worse" in throughput and "better" not in throughput
    # The slow run's median is at least the sleep slower than the base's.
    slow = json.loads((runs["slow"] / "summary.json").read_text())["pipeline_latency"]["p50_ms_per_image"]
    base = json.loads((runs["base"] / "summary.json").read_text())["pipeline_latency"]["p50_ms_per_image"]
    assert slow > base + 200
    assert f"base {base:.4g}" in out and f"new {slow:.4g}" in out


@pytest.mark.slow
def test_gate_does_not_trip_the_other_way_round(runs, capsys):
    status, out, _ = _gate(capsys, runs["slow"], runs["base"], "--fail-above", "50", "--metric", "latency")
    assert status == 0 and "better, beyond the noise" in out and "gate: passed" in out


@pytest.mark.slow
def test_gate_passes_a_run_with_the_same_figures(runs, capsys):
    status, out, _ = _gate(capsys, runs["base"], runs["again"], "--fail-above", "0", "--metric", "latency",
                           "--metric", "throughput", "--metric", "peak_memory")
    assert status == 0, out
    assert "gate: passed" in out
    # no change on any figure, so even a threshold of 0 is no regression
    assert out.count(": ok: ") == 3 and out.count(" 0.0% worse") == 3


@pytest.mark.slow
def test_gate_without_a_metric_judges_latency(runs, capsys):
    _, out, _ = _gate(capsys, runs["base"], runs["again"], "--fail-above", "50")
    assert "gate latency:" in out and "gate throughput" not in out


@pytest.mark.slow
@pytest.mark.parametrize("options, message", [
    (["--fail-above", "-5"], "at least 0"),
    (["--fail-above", "lots"], "is not a number"),
    (["--metric", "latency"], "add --fail-above"),
    (["--fail-above", "5", "--metric", "map_drop"], "has no mAP"),
])
def test_gate_refuses_bad_input_with_status_2(runs, capsys, options, message):
    status, out, err = _gate(capsys, runs["base"], runs["again"], *options)
    assert status == 2 and message in err and "Regression gate" not in out


@pytest.mark.slow
@pytest.mark.parametrize("key, value, message", [
    ("model", "yolov7", "differ in model"),
    ("scenario", {"name": "offline"}, "differ in scenario"),
])
def test_gate_refuses_runs_of_different_models_or_scenarios(runs, capsys, tmp_path, key, value, message):
    other = tmp_path / "other"
    shutil.copytree(runs["again"], other)
    summary = json.loads((other / "summary.json").read_text())
    summary[key] = value
    (other / "summary.json").write_text(json.dumps(summary))
    status, _, err = _gate(capsys, runs["base"], other, "--fail-above", "5")
    assert status == 2 and message in err
