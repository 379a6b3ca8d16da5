import errno
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import utils.storage.streamed_csv

from datasets.image_folder import LoadedImage
from pipelines.contract import Detections
from utils.storage.atomic import OutputWriteError
from utils.detections.writer import DETECTION_COLUMNS, SKIPPED_COLUMNS, DetectionWriter, frame_fields, picture_name


def _found(*scores):
    return Detections(torch.tensor([[1.0, 2.0, 30.0, 40.0]] * len(scores)), torch.tensor(scores),
                      torch.zeros(len(scores), dtype=torch.int64))


def test_the_frame_columns_follow_the_existing_ones():
    assert DETECTION_COLUMNS == ("image", "class_id", "class_name", "score", "x1", "y1", "x2", "y2", "frame", "pts_s")
    assert SKIPPED_COLUMNS == ("image", "reason", "frame", "pts_s")


def test_a_frame_row_names_its_video_frame_and_pts_and_an_images_leaves_them_empty(tmp_path):
    (tmp_path / "clips").mkdir()
    writer = DetectionWriter(tmp_path, tmp_path, ["shape"], save_images=True, note=None)
    picture = np.zeros((48, 64, 3), np.uint8)
    writer.write_batch([LoadedImage(str(tmp_path / "clips" / "cam.mp4"), picture, frame=7, pts_s=0.4666667),
                        LoadedImage(str(tmp_path / "still.jpg"), picture)], [_found(0.9), _found(0.5)])
    writer.write_skipped(LoadedImage(str(tmp_path / "clips" / "cam.mp4"), None, "frame 8 was not decoded", frame=8,
                                     pts_s=0.5333333))
    writer.close()
    rows = pd.read_csv(tmp_path / "detections.csv", keep_default_na=False)
    assert list(rows["image"]) == ["clips/cam.mp4", "still.jpg"]
    assert list(rows["frame"].astype(str)) == ["7", ""] and list(rows["pts_s"].astype(str)) == ["0.466667", ""]
    skipped = pd.read_csv(tmp_path / "skipped.csv")
    assert skipped.iloc[0].tolist() == ["clips/cam.mp4", "frame 8 was not decoded", 8, 0.533333]
    # Each frame's annotated copy has its own file; a still image keeps its name.
    assert (tmp_path / "images" / "clips" / "cam" / "000007.png").is_file()
    assert (tmp_path / "images" / "still.jpg").is_file()


def test_frame_fields_and_picture_names():
    assert frame_fields(LoadedImage("a.jpg", None)) == ("", "")
    assert frame_fields(LoadedImage("a.mp4", None, frame=0, pts_s=None)) == ("0", "")
    assert picture_name("a/b.jpg", None) == "a/b.jpg"
    assert picture_name("a/b.mkv", 1234567) == "a/b/1234567.png"


def test_rows_now_and_the_annotated_copy_later(tmp_path):
    frame = LoadedImage("cam0/street.mp4", np.zeros((48, 64, 3), np.uint8), frame=3, pts_s=0.2)
    # A camera run names its frames by camera: relative to no folder.
    writer = DetectionWriter(tmp_path, Path(), ["shape"], save_images=True, note=None)
    writer.write_batch([frame], [_found(0.9)], pictures=False)
    assert not (tmp_path / "images").exists()
    writer.write_pictures([frame], [_found(0.9)])
    writer.close()
    assert (tmp_path / "images" / "cam0" / "street" / "000003.png").is_file()
    assert list(pd.read_csv(tmp_path / "detections.csv")["image"]) == ["cam0/street.mp4"]


def _detection_writer(run_path: Path) -> DetectionWriter:
    return DetectionWriter(run_path, run_path, ["thing"], save_images=False, note=None)


def test_a_detection_writer_that_cannot_start_leaves_no_temporary(tmp_path, monkeypatch):
    opened = []

    def second_open_fails(file, *args, **kwargs):
        if opened:
            raise OSError(errno.ENOSPC, "No space left on device")
        opened.append(file)
        return open(file, *args, **kwargs)

    monkeypatch.setattr(utils.storage.streamed_csv, "open", second_open_fails, raising=False)
    with pytest.raises(OutputWriteError, match="skipped.csv: No space left on device"):
        _detection_writer(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_detection_writer_whose_closing_fails_leaves_no_file(tmp_path, monkeypatch):
    writer = _detection_writer(tmp_path)

    class NoSync:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def fsync(descriptor):
            raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(utils.storage.streamed_csv, "os", NoSync())
    with pytest.raises(OutputWriteError, match="detections.csv: Read-only file system"):
        writer.close()
    assert list(tmp_path.iterdir()) == []


def test_a_detection_writer_keeps_each_flushed_batch_on_disk_and_drops_a_cut_one(tmp_path, monkeypatch):
    """Rows reach the file under its real name batch by batch (a killed run keeps them); a write the disk cuts
    short removes both files rather than leave a row cut in half."""
    from datasets.image_folder import LoadedImage

    writer = _detection_writer(tmp_path)
    writer.write_skipped(LoadedImage(str(tmp_path / "bad.jpg"), None, "not an image"))
    writer.flush()
    assert (tmp_path / "skipped.csv").read_text().splitlines() == ["image,reason,frame,pts_s", "bad.jpg,not an image,,"]
    assert (tmp_path / "detections.csv").read_text().splitlines() == [",".join(DETECTION_COLUMNS)]
    handle = writer._skipped.handle
    real_write = handle.write

    def half_then_full(text):
        real_write(text[:len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(handle, "write", half_then_full, raising=False)
    writer.write_skipped(LoadedImage(str(tmp_path / "worse.jpg"), None, "not an image either"))
    with pytest.raises(OutputWriteError, match="skipped.csv: No space left on device"):
        writer.flush()
    assert list(tmp_path.iterdir()) == []
