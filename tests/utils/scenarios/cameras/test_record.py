"""A camera run's figures into the record (utils/scenarios/cameras/record.py), from hand-made window ends and frame
records: a source's counts told apart over the window, the section of a run stopped before its window closed,
of a measured one and of one where nothing arrived, and the warning for a camera that gave up."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from datasets.sources.counts import Gap, SourceCounts
from utils.config.schema import config_for
from utils.record.run_record import RunRecord
from utils.record.sections import MEASURED, UNAVAILABLE
from utils.scenarios.cameras.frames import DETECTED, DROPPED, FrameRecord, RunClock
from utils.scenarios.cameras.record import CameraOutcome, WindowEnds, camera_record, stream_source
from utils.scenarios.cameras.settings import camera_settings
from tests.support.run_identity import identity

CLOCK = RunClock(0, 0)


def settings(**cameras):
    streams = 2 if cameras.get("detector") == "per_stream" else 1  # the config refuses any other count
    config = config_for("yolov7-tiny", benchmark={"scenario": "cameras"}, cameras={"count": 2, **cameras},
                        runtime={"streams": streams, "threads": 2})
    return camera_settings(config.cameras, config.dataset, config.benchmark)


def cameras(reorder_frames: int = 0):
    # What reaches the record: their names and locations, and the file camera's video for its B-frames.
    video = SimpleNamespace(info=SimpleNamespace(path=Path("clips/a.mp4"), fps=15.0, reorder_frames=reorder_frames))
    return [SimpleNamespace(name="cam0", location="a.mp4", arrives=True, names_root=Path("clips"),
                            source=SimpleNamespace(videos=(video,))),
            SimpleNamespace(name="cam1", location="rtsp://cam/1", arrives=True, names_root=None, source=None)]


def detected(stream: int, arrival: float, measured: bool = True) -> FrameRecord:
    return FrameRecord(stream, 0, 0.0, arrival, arrival, measured, DETECTED, arrival, arrival + 0.1)


def complete_ends(end_counts=(SourceCounts(), SourceCounts())) -> WindowEnds:
    ends = WindowEnds(start_s=10.0, end_s=14.0, closed_s=14.5)
    ends.mark([SourceCounts(), SourceCounts()], [0.0, 0.0], process_s=1.0)
    ends.mark(list(end_counts), [0.4, 0.2], process_s=3.0)
    return ends


def outcome(ends: WindowEnds, records, reasons=(None, None), reorder_frames: int = 0,
            **cameras_settings) -> CameraOutcome:
    return CameraOutcome(cameras(reorder_frames), settings(**cameras_settings), ends, records,
                         [{"preprocess": 0.1, "postprocess": 0.1}, {"preprocess": 0.0, "postprocess": 0.0}], [2, 0],
                         0.0, list(reasons), CLOCK)


def test_a_source_is_counted_over_the_window_with_its_gaps_inside_it():
    start = SourceCounts(arrived=5, decoded=4, corrupt_packets=1, connections=1)
    gaps = (Gap(1.0, 2.0, "before", True, 1), Gap(9.0, 11.0, "across the start", True, 2),
            Gap(12.0, 12.5, "inside", True, 1), Gap(19.0, 18.0, "gave up", False, 3))
    end = SourceCounts(arrived=25, decoded=22, corrupt_packets=3, concealed_frames=2, connections=3, gaps=gaps,
                       ended="end of file")
    source = stream_source(start, end, (10.0, 20.0), None)
    assert (source.arrived, source.decoded, source.corrupt_packets, source.concealed_frames,
            source.connections) == (20, 18, 2, 2, 2)
    # The gap before the window is left out; one ending before it starts (a source that gave up) is in, for 0 s.
    assert source.gaps == 3 and source.gap_s == pytest.approx(1.0 + 0.5)
    assert source.ended == "end of file"
    assert stream_source(start, end, (10.0, 20.0), "no answer within 1 s").ended == "no answer within 1 s"


def test_a_run_stopped_before_its_window_closed_keeps_its_frames_and_says_why():
    record = RunRecord(identity())
    ends = WindowEnds(start_s=10.0)
    camera_record(record, outcome(ends, [detected(0, 11.0), detected(1, 11.5)]))
    assert [row["stream"] for row in record.camera_frames.rows] == ["cam0", "cam1"]
    assert record.cameras["status"] == UNAVAILABLE and "before its window closed" in record.cameras["reason"]
    assert record.cameras["settings"]["cameras"] == 2
    assert record.camera_streams is None
    assert record.scenario["name"] == "cameras" and record.scenario["streams"] == 1  # one shared detector


def test_a_measured_window_gives_each_cameras_row_and_the_totals():
    record = RunRecord(identity())
    gap = Gap(12.0, 13.0, "no data", True, 1)
    ends = complete_ends((SourceCounts(arrived=3, decoded=3, ended="end of file"),
                          SourceCounts(arrived=1, decoded=1, gaps=(Gap(1.0, 2.0, "old", True, 1), gap))))
    records = [detected(0, 10.5), detected(0, 11.0), FrameRecord(0, 2, 0.0, 11.5, 11.5, True, DROPPED),
               detected(1, 9.0, measured=False), detected(1, 12.5)]
    camera_record(record, outcome(ends, records, detector="per_stream"))
    section = record.cameras
    assert section["status"] == MEASURED
    assert section["window_s"] == 4.0 and section["drain_s"] == 0.5
    assert [(row["stream"], row["delivered"], row["detected"], row["dropped"]) for row in section["streams"]] == [
        ("cam0", 3, 2, 1), ("cam1", 1, 1, 0)]
    assert record.camera_streams.rows == section["streams"]
    assert section["total"]["detected"] == 3 and section["total"]["arrived"] == 4
    assert [g["reason"] for g in section["gaps"]] == ["no data"]  # the gap that ended before the window is not
    assert len(record.camera_frames.rows) == 5  # the warm-up's frame too
    assert record.scenario["streams"] == 2 and record.warnings == []


def test_a_camera_that_gave_up_inside_the_window_is_warned_of():
    record = RunRecord(identity())
    camera_record(record, outcome(complete_ends(), [detected(0, 11.0)], reasons=(None, "no answer within 1 s")))
    assert len(record.warnings) == 1
    assert "camera cam1 (rtsp://cam/1) stopped delivering inside the window: no answer" in record.warnings[0]


def test_a_file_camera_whose_b_frames_delay_every_frame_is_warned_of():
    record = RunRecord(identity())
    camera_record(record, outcome(complete_ends(), [detected(0, 11.0)], reorder_frames=2))
    assert len(record.warnings) == 1
    assert record.warnings[0].startswith("camera cam0 (a.mp4): a.mp4 has B-frames, so its decoder holds 2 frame(s) "
                                         "back to reorder them, 133 ms at its 15 fps")


def test_a_window_where_no_frame_arrived_has_no_figures():
    record = RunRecord(identity())
    camera_record(record, outcome(complete_ends(), [detected(0, 9.0, measured=False)]))
    assert record.cameras["status"] == UNAVAILABLE and "no frame arrived" in record.cameras["reason"]
