"""Whole camera runs of the command line (benchmark.scenario cameras) on clips and cameras the tests make: the
detections of every decoded frame against the same frames given as PNG files, a live stream killed mid-run,
both kinds of detector, what `drop` and `queue` let go on a detector slowed on purpose, and a run killed with
SIGKILL keeping every frame it measured."""
import json
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import av
import cv2
import pandas as pd
import pytest
import torch

from pipelines.yolo.pipeline import YoloPipeline
from tests.support.clips import moving_shapes, write_clip
from tests.support.helpers import quick_args, run_benchmark, section_shape_errors
from tests.support.paths import ROOT
from tests.support.streams import mjpeg_camera
from utils.checks.agreement.matching import MatchCounts, match_detections
from utils.config.schema import config_for
from utils.record.sections import CamerasSection, ScenarioSection

pytestmark = pytest.mark.slow

WEIGHTS = ROOT / "datasets" / "shapes" / "yolov7-tiny-shapes.pt"  # real scores on moving shapes
QUIET = ("outputs.plots=false", "outputs.report=false", "outputs.save_images=false", "benchmark.memory.enabled=false")


def camera_args(*settings: str) -> list[str]:
    return quick_args(160, *QUIET, *settings, config="cameras.yaml")


def read_summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """320x180 at 15 fps, 12 frames of moving shapes, and each decoded frame as a PNG file."""
    folder = tmp_path_factory.mktemp("clip")
    path = write_clip(folder / "shapes.mp4", moving_shapes(320, 180, 12), fps=15)
    frames = folder / "frames"
    frames.mkdir()
    with av.open(str(path)) as container:
        for index, frame in enumerate(container.decode(video=0)):
            cv2.imwrite(str(frames / f"{index:06d}.png"), frame.to_ndarray(format="bgr24"))
    return SimpleNamespace(path=path, frames=frames, count=12)


def detections_by_frame(table: pd.DataFrame, frame_of) -> dict:
    found = {}
    for key, rows in table.groupby(table.apply(frame_of, axis=1)):
        found[key] = SimpleNamespace(boxes=torch.tensor(rows[["x1", "y1", "x2", "y2"]].to_numpy(), dtype=torch.float64),
                                     scores=torch.tensor(rows["score"].to_numpy(), dtype=torch.float64),
                                     labels=torch.tensor(rows["class_id"].to_numpy()))
    return found


NONE = SimpleNamespace(boxes=torch.zeros((0, 4), dtype=torch.float64), scores=torch.zeros(0, dtype=torch.float64),
                       labels=torch.zeros(0, dtype=torch.int64))
DEFAULTS = config_for("yolov7-tiny")


@pytest.mark.parametrize("cut", [DEFAULTS.postprocess.conf_thres, DEFAULTS.benchmark.accuracy.conf_thres],
                         ids=["deployed cut", "evaluation cut"])
def test_every_decoded_frame_is_detected_as_the_same_frame_given_as_a_png(clip, tmp_path, cut):
    common = (f"model.weights={WEIGHTS}", "dataset.batch_size=1", f"postprocess.conf_thres={cut}")
    code, video = run_benchmark(camera_args(f"dataset.path={clip.path}", "cameras.count=1", "cameras.realtime=false",
                                            "cameras.warmup_s=0", "cameras.duration_s=120", *common),
                                tmp_path, run_id="video")
    assert code == 0
    code, still = run_benchmark(quick_args(160, *QUIET, f"dataset.path={clip.frames}", "benchmark.repeats=1",
                                           "benchmark.layer_timing=false", *common), tmp_path, run_id="png")
    assert code == 0
    frames = pd.read_csv(video / "cameras_frames.csv")
    assert sorted(frames["frame"]) == list(range(clip.count))  # a file not in real time: nothing dropped
    assert set(frames["outcome"]) == {"detected"} and frames["measured"].all()
    from_video = detections_by_frame(pd.read_csv(video / "detections.csv"), lambda row: int(row["frame"]))
    from_png = detections_by_frame(pd.read_csv(still / "detections.csv"), lambda row: int(Path(row["image"]).stem))
    assert sum(len(found.scores) for found in from_png.values()) > 0
    total = sum((match_detections(from_png.get(index, NONE), from_video.get(index, NONE))
                 for index in range(clip.count)), MatchCounts())
    assert (total.strict_recall, total.strict_precision) == (1.0, 1.0)
    summary = read_summary(video)
    assert summary["status"] == "complete" and summary["images_processed"] == clip.count
    assert summary["cameras"]["total"]["detected"] == clip.count


def test_a_live_stream_killed_mid_run_ends_with_its_gap_and_every_other_figure_kept(clip, tmp_path):
    with mjpeg_camera("--fps", "15", "--width", "160", "--height", "120") as camera:
        frames_csv = tmp_path / "live" / "cameras_frames.csv"

        def kill_once_measured() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    rows = pd.read_csv(frames_csv)
                except (OSError, pd.errors.EmptyDataError):
                    rows = None
                if rows is not None and ((rows["stream"] == "cam0") & rows["measured"]).sum() >= 8:
                    camera.kill()
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_once_measured, daemon=True)
        killer.start()
        code, run = run_benchmark(camera_args(f'cameras.sources=["{camera.url}", "{clip.path}"]', "cameras.count=1",
                                              "cameras.warmup_s=0.5", "cameras.duration_s=4",
                                              "cameras.read_timeout_s=0.5", "cameras.connect_timeout_s=1",
                                              "cameras.reconnects=1", "cameras.reconnect_delay_s=0.1"),
                                  tmp_path, run_id="live")
        killer.join(5)
    assert code == 0
    summary = read_summary(run)
    assert summary["status"] == "complete"
    assert section_shape_errors(summary["cameras"], CamerasSection) == []
    assert section_shape_errors(summary["scenario"], ScenarioSection) == []
    assert any(warning.startswith(f"camera cam0 ({camera.url}) stopped delivering inside the window: gave up")
               for warning in summary["warnings"]), summary["warnings"]
    cameras = summary["cameras"]
    live, played = cameras["streams"]
    assert [gap["stream"] for gap in cameras["gaps"]] == ["cam0"] and not cameras["gaps"][0]["resumed"]
    assert live["gaps"] == 1 and live["ended"].startswith("gave up after 1 reconnect(s)")
    assert live["detected"] >= 1 and live["latency_p50_ms"] is not None and live["decode_cpu_ms_per_frame"]
    assert played["ended"] == "stopped" and played["detected"] >= 1 and played["latency_p99_ms"] is not None
    assert cameras["window_s"] >= 3.5  # the other camera kept the window open
    rows = pd.read_csv(run / "cameras.csv")
    assert list(rows["stream"]) == ["cam0", "cam1"] and rows.loc[0, "gaps"] == 1
    frames = pd.read_csv(run / "cameras_frames.csv")
    live_frames = frames[(frames["stream"] == "cam0") & (frames["outcome"] == "detected")]
    assert (live_frames["latency_ms"] > 0).all() and live_frames["arrival_s"].notna().all()


def test_one_detector_per_camera_runs_on_streams_of_its_own(clip, tmp_path):
    code, run = run_benchmark(camera_args(f"dataset.path={clip.path}", "cameras.detector=per_stream",
                                          "runtime.streams=2", "runtime.threads=2", "cameras.duration_s=1.5",
                                          "cameras.warmup_s=0.3", "outputs.report=true", "outputs.plots=true"),
                              tmp_path, run_id="per_stream")
    assert code == 0
    summary = read_summary(run)
    assert summary["scenario"]["streams"] == 2 and summary["cameras"]["settings"]["detector"] == "per_stream"
    assert all(row["detected"] >= 1 for row in summary["cameras"]["streams"])
    timed = pd.read_csv(run / "steps_timer.csv").query("pass_kind == 'timed' and step == 'pipeline'")
    assert timed["batch"].is_unique and len(timed) >= 2
    trace = json.loads((run / "trace.json").read_text())
    tracks = {event["args"]["name"] for event in trace["traceEvents"] if event.get("name") == "thread_name"}
    assert {"cam0", "cam1"} <= tracks
    assert (run / "plots" / "cameras.png").is_file() and 'id="cameras"' in (run / "report.html").read_text()


@pytest.fixture
def slow_detector(monkeypatch):
    """Every batch's NMS sleeps 0.2 s: a detector that cannot keep up with 15 frames a second, whatever the CPU."""
    real = YoloPipeline.suppress

    def slow(self, forwarded):
        time.sleep(0.2)
        return real(self, forwarded)

    monkeypatch.setattr(YoloPipeline, "suppress", slow)


@pytest.fixture(scope="module")
def camera_clip(tmp_path_factory):
    return write_clip(tmp_path_factory.mktemp("camera") / "cam.mp4", moving_shapes(160, 120, 45, photo=None), fps=15)


def _frames(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "cameras_frames.csv").sort_values("frame").set_index("frame")


def test_drop_keeps_only_the_newest_frame_waiting(camera_clip, tmp_path, slow_detector):
    code, run = run_benchmark(camera_args(f"dataset.path={camera_clip}", "cameras.count=1", "dataset.batch_size=1",
                                          "cameras.when_busy=drop", "cameras.duration_s=2", "cameras.warmup_s=0.3"),
                              tmp_path, run_id="drop")
    assert code == 0
    frames = _frames(run)
    dropped = frames[frames["outcome"] == "dropped"]
    assert len(dropped) >= 3
    for index, row in dropped.iterrows():  # each dropped for the next frame, the moment that one was decoded
        assert index + 1 in frames.index and frames.loc[index + 1, "decoded_s"] <= row["dropped_s"]
    measured = frames[frames["measured"]]
    assert set(measured["outcome"]) <= {"detected", "dropped"}
    row = pd.read_csv(run / "cameras.csv").iloc[0]
    assert row["detected"] + row["dropped"] == row["delivered"] == len(measured)


def test_queue_drops_a_frame_that_arrives_while_it_is_full(camera_clip, tmp_path, slow_detector):
    code, run = run_benchmark(camera_args(f"dataset.path={camera_clip}", "cameras.count=1", "dataset.batch_size=1",
                                          "cameras.when_busy=queue", "cameras.queue_frames=2", "cameras.duration_s=2",
                                          "cameras.warmup_s=0.3"), tmp_path, run_id="queue")
    assert code == 0
    frames = _frames(run)
    dropped = frames[frames["outcome"] == "dropped"]
    assert len(dropped) >= 3
    for index, row in dropped.iterrows():
        assert row["decoded_s"] <= row["dropped_s"]  # the frame that arrived is the one dropped...
        if index + 1 in frames.index:
            assert row["dropped_s"] <= frames.loc[index + 1, "decoded_s"]  # ...at once, before the next came
        earlier = frames[(frames.index < index) & (frames["outcome"] == "detected")]
        assert (earlier["detect_start_s"] > row["dropped_s"]).sum() >= 2  # two older frames were still waiting
    row = pd.read_csv(run / "cameras.csv").iloc[0]
    assert row["detected"] + row["dropped"] == row["delivered"]


def test_a_camera_run_killed_with_sigkill_keeps_every_frame_it_measured(cli, camera_clip):
    run = cli(f"dataset.path={camera_clip}", "run.id=killed", "cameras.duration_s=60", "cameras.warmup_s=0",
              base=tuple(camera_args()))
    frames_csv = run.output_dir / "killed" / "cameras_frames.csv"

    def measured() -> int:
        try:
            return int(pd.read_csv(frames_csv)["measured"].sum())
        except (OSError, pd.errors.EmptyDataError, KeyError):
            return 0

    run.wait_until(lambda: measured() >= 10, "10 measured frames on disk")
    seen = measured()
    run.stop(signal.SIGKILL)
    assert run.finish() == -signal.SIGKILL
    text = frames_csv.read_text()
    lines = text.splitlines()
    assert text.endswith("\n") and all(line.count(",") == lines[0].count(",") for line in lines)
    assert int(pd.read_csv(frames_csv)["measured"].sum()) >= seen
