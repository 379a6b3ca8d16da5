"""The frame book (utils/scenarios/cameras/book.py) over a hand-written journal and writer: each ending sets the
frame's outcome and appends its row at once, a timed batch's CPU is shared evenly among its frames' cameras, only
measured frames are written, and the frames it keeps (held batches, each camera's last, the clip) are the ones
its contract names."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from datasets.image_folder import LoadedImage
from pipelines.contract import Detections
from utils.detections.clip import ClipFrames
from utils.scenarios.cameras.book import BatchRun, FrameBook
from utils.scenarios.cameras.frames import DETECTED, DROPPED, NOT_DECODED, UNFINISHED, FrameRecord, RunClock
from utils.scenarios.cameras.reader import CameraFrame


class Journal:
    def __init__(self):
        self.rows: list[dict] = []

    def append(self, rows):
        self.rows.extend(rows)


class Writer:
    """What the book asks of utils/detections/writer.py, written down instead of to files."""

    images_dir = None

    def __init__(self):
        self.batches, self.skipped, self.pictures, self.flushes = [], [], [], 0

    def write_batch(self, items, found, pictures):
        assert pictures is False  # annotating every frame would take the cameras' CPU
        self.batches.append(([item.path for item in items], [len(f) for f in found]))

    def write_skipped(self, item):
        self.skipped.append(item.path)

    def write_pictures(self, items, found):
        self.pictures.append([item.path for item in items])

    def flush(self):
        self.flushes += 1


def frame(stream: int, number: int, measured: bool = True) -> CameraFrame:
    item = LoadedImage(f"cam{stream}#{number}", np.zeros((2, 2, 3), np.uint8), frame=number, pts_s=number / 10)
    return CameraFrame(item, FrameRecord(stream, number, number / 10, arrival_s=1.0, decoded_s=1.0,
                                         measured=measured))


def found(count: int) -> Detections:
    return Detections(torch.zeros(count, 4), torch.ones(count), torch.zeros(count, dtype=torch.int64))


def book(held: int = 0, clip=None):
    journal, writer = Journal(), Writer()
    return FrameBook(["front", "back"], RunClock(0, 0), journal, writer, held, clip), journal, writer


def test_each_ending_sets_the_outcome_and_appends_its_row_at_once():
    frames, journal, writer = book()
    dropped, lost, stopped = frame(0, 1), frame(1, 2), frame(0, 3, measured=False)
    frames.dropped(dropped, at_s=2.5)
    frames.not_decoded(lost)
    frames.not_decoded(stopped)  # not measured: no skipped row in detections.csv
    frames.unfinished(stopped)
    assert (dropped.record.outcome, dropped.record.dropped_s) == (DROPPED, 2.5)
    assert lost.record.outcome == NOT_DECODED and stopped.record.outcome == UNFINISHED
    assert [(row["stream"], row["frame"], row["outcome"]) for row in journal.rows] == [
        ("front", 1, DROPPED), ("back", 2, NOT_DECODED), ("front", 3, NOT_DECODED), ("front", 3, UNFINISHED)]
    assert writer.skipped == ["cam1#2"]
    assert [record.frame for record in frames.snapshot()] == [1, 2, 3, 3]


def test_a_timed_batch_shares_its_cpu_evenly_and_writes_only_measured_frames():
    frames, journal, writer = book()
    batch = [frame(0, 1), frame(1, 1), frame(1, 2, measured=False)]
    frames.detected(batch, [found(2), found(0), found(1)],
                    BatchRun(7, 3.0, 3.5, timed=True, cpu_s={"preprocess": 0.3, "postprocess": 0.6, "forward": 9}))
    assert [f.record.outcome for f in batch] == [DETECTED] * 3
    assert [(f.record.batch, f.record.batch_frames, f.record.detections) for f in batch] == [(7, 3, 2), (7, 3, 0),
                                                                                             (7, 3, 1)]
    assert batch[0].record.latency_s == 2.5
    # Camera 0 had one of the three frames, camera 1 two; the forward is not the stages' share.
    assert frames.stage_cpu_s[0] == {"preprocess": pytest.approx(0.1), "postprocess": pytest.approx(0.2)}
    assert frames.stage_cpu_s[1] == {"preprocess": pytest.approx(0.2), "postprocess": pytest.approx(0.4)}
    assert frames.timed_frames == [1, 2] and frames.detected_frames == 3
    assert writer.batches == [(["cam0#1", "cam1#1"], [2, 0])]
    assert len(journal.rows) == 3 and frames.output_cpu_s >= 0


def test_an_untimed_batch_counts_no_cpu_and_holds_nothing():
    frames, _, writer = book(held=2)
    frames.detected([frame(0, 1)], [found(1)], BatchRun(0, 1.0, 1.2, timed=False, cpu_s={"preprocess": 5.0}))
    assert frames.stage_cpu_s[0] == {"preprocess": 0.0, "postprocess": 0.0} and frames.timed_frames == [0, 0]
    assert frames.held == [] and frames.output_cpu_s == 0.0
    assert frames.detected_frames == 1 and writer.batches == [(["cam0#1"], [1])]


def test_the_first_timed_batches_are_held_for_the_layer_pass_and_no_more():
    frames, _, _ = book(held=2)
    for index in range(3):
        frames.detected([frame(0, index)], [found(1)], BatchRun(index, 1.0, 1.1, timed=True, cpu_s={}))
    assert [(index, [item.path for item in items]) for index, items in frames.held] == [(0, ["cam0#0"]),
                                                                                       (1, ["cam0#1"])]


def test_a_batch_without_detections_still_ends_its_frames():
    """A failed pipeline step hands no detections: the frames end detected, with no count and nothing written."""
    frames, journal, writer = book()
    lone = frame(1, 4)
    frames.detected([lone], None, BatchRun(0, 1.0, 1.1, timed=True, cpu_s={}))
    assert lone.record.outcome == DETECTED and lone.record.detections is None
    assert writer.batches == [] and journal.rows[0]["detections"] == ""


def test_pictures_are_each_cameras_last_measured_frame():
    frames, _, writer = book()
    frames.detected([frame(1, 1), frame(0, 1)], [found(1), found(1)], BatchRun(0, 1, 2, timed=True, cpu_s={}))
    frames.detected([frame(1, 2), frame(0, 2, measured=False)], [found(1), found(1)],
                    BatchRun(1, 2, 3, timed=True, cpu_s={}))
    frames.pictures()
    assert writer.pictures == [["cam0#1", "cam1#2"]]  # by camera; camera 0's unmeasured frame is not its last


def test_no_picture_is_written_before_a_frame_was_measured():
    frames, _, writer = book()
    frames.pictures()
    assert writer.pictures == []


def test_the_clip_keeps_the_first_cameras_measured_frames_until_full():
    clip = ClipFrames(2)
    frames, _, _ = book(clip=clip)
    for number in range(3):
        frames.detected([frame(0, number), frame(1, number)], [found(1), found(1)],
                        BatchRun(number, 1, 2, timed=True, cpu_s={}))
    assert [kept.pts_s for kept in clip.frames] == [0.0, 0.1]


def test_no_clip_is_written_without_images_saved(tmp_path):
    clip = ClipFrames(2)
    frames, _, _ = book(clip=clip)
    frames.detected([frame(0, 0)], [found(1)], BatchRun(0, 1, 2, timed=True, cpu_s={}))
    assert frames.write_clip(tmp_path / "clip.mp4") is None  # the writer saves no images (images_dir None)
    assert book()[0].write_clip(tmp_path / "clip.mp4") is None  # none asked for
    assert not (tmp_path / "clip.mp4").exists()
