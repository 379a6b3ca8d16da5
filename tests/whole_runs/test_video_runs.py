"""Whole runs of the command line with a video as dataset.path (single_stream and LoadGen): the frames decoded in
the measured loop (the step decode_frames), detected as the same frames given as PNG files, scored against
per-frame labels, judged against the fp32 reference and calibrating int8; and bad input in the video ending as the issue says
(a run that goes on and says how much it skipped, or exit status 2 naming the file, at once: not slow)."""
import json

import pandas as pd
import pytest

from tests.support.clips import moving_shapes, scramble_packets, write_clip, write_coco_video
from tests.support.frame_runs import clip_and_frames, frame_agreement, summary
from tests.support.helpers import quick_args, run_benchmark, section_shape_errors
from tests.support.paths import SHAPES
from utils.config.schema import config_for
from utils.record.sections import SourceSection

WEIGHTS = SHAPES / "yolov7-tiny-shapes.pt"  # real scores on moving shapes, trained at 320
QUIET = ("outputs.plots=false", "outputs.report=false", "outputs.save_images=false", "benchmark.memory.enabled=false",
         "benchmark.layer_timing=false", "benchmark.repeats=1")
DEFAULTS = config_for("yolov7-tiny")
DEPLOYED_CUT, EVALUATION_CUT = DEFAULTS.postprocess.conf_thres, DEFAULTS.benchmark.accuracy.conf_thres


def args(*settings: str) -> list[str]:
    return quick_args(160, *QUIET, f"model.weights={WEIGHTS}", *settings)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """8 frames of moving shapes at 256x192, 15 fps, H.264 with its labels; the same frames as PNG files."""
    return clip_and_frames(tmp_path_factory.mktemp("shapes"), moving_shapes(256, 192, 8, seed=1))


@pytest.mark.slow
def test_every_decoded_frame_is_detected_as_its_png_and_scores_the_same_map(shapes, tmp_path):
    # At the evaluation cut: the rows above the deployed cut are those a deployed run keeps (NMS drops a box only
    # for a higher-scoring one).
    common = ("dataset.batch_size=2", f"postprocess.conf_thres={EVALUATION_CUT}")
    code, video = run_benchmark(args(f"dataset.path={shapes.clip}", f"dataset.labels={shapes.labels}", *common),
                                tmp_path, run_id="video")
    assert code == 0
    code, png = run_benchmark(args(f"dataset.path={shapes.frames}", f"dataset.labels={shapes.frame_labels}", *common),
                              tmp_path, run_id="png")
    assert code == 0
    for cut in (EVALUATION_CUT, DEPLOYED_CUT):
        matched = frame_agreement(png, video, shapes.count, cut)
        assert matched.reference > 0
        assert (matched.strict_recall, matched.strict_precision) == (1.0, 1.0), cut
    from_video, from_png = summary(video), summary(png)
    assert from_video["images_processed"] == from_png["images_processed"] == shapes.count
    assert from_video["accuracy"]["images"] == shapes.count and from_video["accuracy"]["map_50_95"] > 0.1
    assert abs(from_video["accuracy"]["map_50_95"] - from_png["accuracy"]["map_50_95"]) <= 0.005
    # The video's frames are fetched by decoding them in the loop, the PNG files by the loader: never one for the other.
    video_steps = set(pd.read_csv(video / "steps_summary.csv")["step"])
    assert "decode_frames" in video_steps and "load" not in video_steps
    assert "load" in set(pd.read_csv(png / "steps_summary.csv")["step"])
    source = from_video["source"]
    assert section_shape_errors(source, SourceSection) == [] and "source" not in from_png
    assert (source["frames"], source["reading"]["decoded"], source["reading"]["corrupt_packets"]) == (8, 8, 0)
    assert "decode_frames (reading and decoding" in from_video["pipeline_latency"]["definition"]
    rows = pd.read_csv(video / "detections.csv")
    assert set(rows["image"]) == {shapes.clip.name} and rows["pts_s"].notna().all()
    assert sorted(set(rows["frame"])) == list(range(8))


@pytest.mark.slow
def test_a_stride_a_trace_and_a_folder_of_videos_with_coco_labels(tmp_path):
    scene = moving_shapes(160, 120, 7, seed=2)
    folder = tmp_path / "cams"
    write_clip(folder / "a.mp4", scene)
    write_clip(folder / "b" / "c.mp4", scene)
    labels = write_coco_video(tmp_path / "labels.json", {"a.mp4": scene, "b/c.mp4": scene})
    code, run = run_benchmark(args(f"dataset.path={folder}", f"dataset.labels={labels}", "dataset.frame_stride=3",
                                   "benchmark.profiler=true", "outputs.save_images=true"), tmp_path, run_id="stride")
    assert code == 0
    rows = pd.read_csv(run / "detections.csv")
    assert set(zip(rows["image"], rows["frame"])) <= {(name, frame) for name in ("a.mp4", "b/c.mp4")
                                                       for frame in (0, 3, 6)}
    document = summary(run)
    assert document["images_found"] == 6 and document["source"]["selection"].startswith("one frame in 3")
    assert [video["selected"] for video in document["source"]["videos"]] == [3, 3]
    assert document["accuracy"]["ground_truth"]["format"] == "coco" and document["accuracy"]["images"] == 6
    names = {event.get("name") for event in json.loads((run / "trace.json").read_text())["traceEvents"]}
    assert "decode_frames" in names
    # Annotated frames a person opens: one PNG per frame run, under its video's name.
    assert sorted(path.relative_to(run / "images").as_posix() for path in (run / "images").rglob("*.png")) == [
        f"{video}/{frame:06d}.png" for video in ("a", "b/c") for frame in (0, 3, 6)]


@pytest.mark.slow
def test_int8_calibrates_on_frames_the_verdicts_never_score(shapes, tmp_path):
    code, run = run_benchmark(args(f"dataset.path={shapes.clip}", f"dataset.labels={shapes.labels}",
                                   "runtime.backend=openvino", "runtime.precision=int8",
                                   "runtime.calibration.images=3", "runtime.calibration.accuracy_control=false",
                                   f"runtime.cache_dir={tmp_path / 'cache'}"), tmp_path, run_id="int8")
    assert code == 0
    document = summary(run)
    calibration = document["calibration"]
    assert calibration["files"] == [f"{shapes.clip.name} frame {index}" for index in range(5, 8)]
    assert calibration["scored_images"] == 5 and calibration["source"] == "the dataset's last frames, never scored"
    assert document["accuracy"]["images"] == 5 and document["agreement"]["images"] == 5
    assert document["accuracy"]["ground_truth"]["format"] == "yolo" and "drop" in document["accuracy"]


@pytest.mark.slow
def test_loadgen_offline_holds_the_frames_decoded_as_its_sample_library(shapes, tmp_path):
    code, run = run_benchmark(args(f"dataset.path={shapes.clip}", "benchmark.scenario=offline",
                                   "benchmark.loadgen.min_duration_s=1", "benchmark.loadgen.min_query_count=1"),
                              tmp_path, run_id="offline")
    assert code == 0
    document = summary(run)
    assert document["scenario"]["result"]["samples_per_s"] > 0 and document["source"]["frames"] == shapes.count
    steps = pd.read_csv(run / "steps_timer.csv")
    # Warm-up decodes in the loop; LoadGen's timed queries take frames it holds decoded in memory.
    assert set(steps.query("pass_kind == 'warmup'")["step"]) >= {"decode_frames"}
    timed = set(steps.query("pass_kind == 'timed'")["step"])
    assert "load" in timed and "decode_frames" not in timed
    assert "load (wait for the data loader; under LoadGen" in document["pipeline_latency"]["definition"]


@pytest.mark.slow
def test_corrupt_packets_are_skipped_counted_and_said_and_the_run_goes_on(shapes, tmp_path, capsys):
    damaged = scramble_packets(shapes.clip, tmp_path / "damaged.mp4", [3, 7])
    code, run = run_benchmark(args(f"dataset.path={damaged}"), tmp_path, run_id="damaged")
    assert code == 0
    document = summary(run)
    reading = document["source"]["reading"]
    assert (reading["corrupt_packets"], reading["not_decoded"]) == (2, 2)
    assert document["images_processed"] == shapes.count - 2 and document["images_skipped"] == 2
    skipped = pd.read_csv(run / "skipped.csv")
    assert sorted(skipped["frame"]) == [3, 7]
    assert skipped["reason"].str.contains("was not decoded").all()
    said = [warning for warning in document["warnings"] if "corrupt packet(s) skipped" in warning]
    assert said and "2 of 8 frame(s) not decoded" in said[0]
    assert "2 corrupt packet(s) skipped" in capsys.readouterr().out


@pytest.mark.slow
def test_a_file_cut_mid_data_runs_its_whole_frames_and_says_it_ends_early(tmp_path):
    whole = write_clip(tmp_path / "whole.mkv", moving_shapes(160, 120, 12, photo=None), codec="mjpeg")
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(whole.read_bytes()[:int(whole.stat().st_size * 0.6)])
    code, run = run_benchmark(args(f"dataset.path={cut}"), tmp_path, run_id="cut")
    assert code == 0
    document = summary(run)
    processed, skipped = document["images_processed"], document["images_skipped"]
    assert 0 < processed < 12 and processed + skipped == document["source"]["frames"] == document["images_found"]


def write_unknown_codec(tmp_path):
    clip = write_clip(tmp_path / "clip.avi", moving_shapes(160, 120, 4, photo=None), codec="mpeg4")
    unknown = tmp_path / "unknown.avi"
    unknown.write_bytes(clip.read_bytes().replace(b"FMP4", b"QQQQ"))
    return unknown


def write_cut_mp4(tmp_path):
    clip = write_clip(tmp_path / "clip.mp4", moving_shapes(160, 120, 6, photo=None))
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(clip.read_bytes()[:clip.stat().st_size // 2])
    return cut


def write_small(tmp_path):
    return write_clip(tmp_path / "small.mp4", moving_shapes(160, 120, 4, photo=None))


@pytest.mark.parametrize("make, extra, fragment", [
    (write_unknown_codec, (), "unknown.avi is in a video codec this FFmpeg (PyAV's) has no decoder for; re-encode it"),
    (write_cut_mp4, (), "cut.mp4 is not a video FFmpeg can read (invalid data; a file cut short loses the index"),
    (write_small, ("dataset.max_pixels=19199",), "has frames of 160x120, 19,200 pixels, above dataset.max_pixels 19,199"),
    (write_small, ("dataset.frame_stride=2", "dataset.frame_fps=5"), "dataset.frame_stride 2 and dataset.frame_fps 5 "
                                                                       "both choose video frames"),
], ids=["codec", "cut mp4", "max_pixels", "stride and fps"])
def test_a_video_the_run_cannot_use_ends_at_start_with_status_2(tmp_path, capsys, make, extra, fragment):
    code, run = run_benchmark(args(f"dataset.path={make(tmp_path)}", *extra), tmp_path / "out", run_id="refused")
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert fragment in err, err
    assert not run.exists()
