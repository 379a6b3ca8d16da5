"""The gate on a camera run's p99 from arrival and frames/s detected: hand-made windows of seconds, the direction that
is worse for each, a regression beyond the noise, and what a run without a camera window is told."""
import json

import numpy as np
import pytest

from utils.commands.compare.gate import block_figure, judge
from utils.commands.compare.gate_runs import GateError, camera_blocks, camera_fps, camera_p99, gate_figures
from utils.storage.finished_run import FinishedRun


def seconds(latency_ms, frames_per_second=15, count=10):
    """`count` seconds, each with its frames at the given latency (NaN: dropped)."""
    return [np.full(frames_per_second, float(latency_ms)) for _ in range(count)]


def test_p99_and_fps_of_a_draw():
    draw = [np.array([10.0, np.nan, 30.0]), np.array([20.0])]
    assert camera_p99(draw) == pytest.approx(np.percentile([10.0, 30.0, 20.0], 99))
    assert camera_fps(draw) == 1.5  # three detected over two one-second blocks
    assert camera_p99([np.array([np.nan])]) == np.inf


def test_a_p99_twice_as_long_beyond_the_noise_trips_the_gate():
    figure = block_figure("p99", "latency p99 from arrival", "ms", (seconds(50), seconds(100)), camera_p99)
    assert (figure.base, figure.new, figure.change) == (50.0, 100.0, pytest.approx(100.0))
    assert figure.interval.low == pytest.approx(100.0) and judge(figure, 20.0).regressed


def test_fewer_frames_detected_is_worse_and_more_is_better():
    fewer = block_figure("fps", "frames/s detected", "frames/s", (seconds(50, 15), seconds(50, 10)), camera_fps)
    assert fewer.change == pytest.approx(100 / 3) and judge(fewer, 10.0).regressed
    more = block_figure("fps", "frames/s detected", "frames/s", (seconds(50, 10), seconds(50, 15)), camera_fps)
    assert more.change == pytest.approx(-50.0) and judge(more, 10.0).reason == "better, beyond the noise"


def test_too_few_seconds_give_no_interval_and_values_alone_decide():
    figure = block_figure("p99", "p99", "ms", (seconds(50, count=2), seconds(60, count=2)), camera_p99)
    assert figure.interval is None and "fewer than" in figure.note


def camera_run(folder, arrivals, latencies, scenario="cameras"):
    folder.mkdir()
    summary = {"model": "yolov7-tiny", "scenario": {"name": scenario},
               "cameras": {"status": "measured", "window": {"start_s": 1.0, "end_s": 5.0}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    rows = ["stream,frame,pts_s,measured,outcome,arrival_s,decoded_s,detect_start_s,detect_end_s,dropped_s,latency_ms,"
            "batch,batch_frames,detections"]
    rows += [f"cam0,{i},0,True,{'detected' if ms else 'dropped'},{at},{at},,,,{ms or ''},,,"
             for i, (at, ms) in enumerate(zip(arrivals, latencies))]
    rows.append("cam0,99,0,False,detected,0.5,0.5,,,,999,,,")  # a warm-up frame: not measured
    (folder / "cameras_frames.csv").write_text("\n".join(rows) + "\n")
    return FinishedRun(folder)


def test_a_windows_blocks_are_its_seconds_of_arrival_empty_ones_kept(tmp_path):
    run = camera_run(tmp_path / "a", [1.1, 1.5, 3.2, 4.9], [10.0, None, 30.0, 40.0])
    blocks = camera_blocks(run, "p99")
    assert len(blocks) == 4 and [len(block) for block in blocks] == [2, 0, 1, 1]
    assert np.isnan(blocks[0][1]) and blocks[2][0] == 30.0


def test_fps_is_a_camera_runs_figure_and_a_run_without_a_window_says_so(tmp_path):
    a = camera_run(tmp_path / "a", [1.1], [10.0], scenario="single_stream")
    with pytest.raises(GateError, match="frames/s detected is a camera run's figure"):
        gate_figures(a, a, ("fps",))
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"model": "m", "scenario": {"name": "cameras"}}))
    empty = FinishedRun(folder)
    with pytest.raises(GateError, match="has no camera window"):
        gate_figures(empty, empty, ("p99",))
