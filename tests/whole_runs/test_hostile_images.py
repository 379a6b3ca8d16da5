"""One image never ends a run: too many pixels (read from the header), decoder exceptions, in the main process
and in loader workers alike, become skipped.csv rows with the reason; a run with no usable image exits 2."""
import struct
import time
import zlib
from pathlib import Path

import pandas as pd
import pytest

from datasets.image_folder import decode_image, image_loader
from tests.support.helpers import quick_args, run_benchmark
from tests.support.paths import SAMPLES

SAMPLE = SAMPLES / "dog.jpg"


def png_claiming(width: int, height: int) -> bytes:
    """A small PNG whose header says width x height (its pixel data is far too short for that)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + \
        chunk(b"IEND", b"")


def bmp_claiming(width: int, height: int) -> bytes:
    """A 1 KB BMP whose header says width x height: OpenCV raises cv2.error for it rather than returning None."""
    header = b"BM" + struct.pack("<IHHI", 54 + 1000, 0, 0, 54)
    header += struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, 0, 2835, 2835, 0, 0)
    return header + b"\0" * 1000


def test_pixel_limit_is_checked_from_the_header(tmp_path):
    path = tmp_path / "huge.png"
    path.write_bytes(png_claiming(40000, 40000))
    started = time.process_time()  # CPU time: other jobs on the cores do not stretch it
    loaded = decode_image(path, max_pixels=178_956_970)
    assert time.process_time() - started < 1.0
    assert loaded.image is None
    assert "40000x40000 is 1,600,000,000 pixels, above dataset.max_pixels 178,956,970" in loaded.error
    assert "set it to null to lift the limit" in loaded.error


def test_an_image_under_the_limit_decodes(tmp_path):
    loaded = decode_image(SAMPLE, max_pixels=768 * 576)
    assert loaded.error is None and loaded.image.shape == (576, 768, 3)
    assert "above dataset.max_pixels 442,367" in decode_image(SAMPLE, max_pixels=768 * 576 - 1).error


def test_opencv_exception_becomes_a_reason_when_the_limit_is_lifted(tmp_path):
    path = tmp_path / "claims.bmp"
    path.write_bytes(bmp_claiming(60000, 60000))
    loaded = decode_image(path, max_pixels=None)
    assert loaded.image is None
    assert "OpenCV refuses to decode images above 2^30 pixels" in loaded.error
    assert "OPENCV_IO_MAX_IMAGE_PIXELS" in loaded.error


def test_loader_workers_skip_the_same_way(tmp_path):
    (tmp_path / "claims.bmp").write_bytes(bmp_claiming(60000, 60000))
    paths = [tmp_path / "claims.bmp", SAMPLE]
    loaded = [image for batch in image_loader(paths, 1, workers=1, max_pixels=None) for image in batch]
    assert "OpenCV refuses" in loaded[0].error and loaded[1].image is not None


QUICK = quick_args(64, "benchmark.layer_timing=false", "benchmark.repeats=1", "outputs.plots=false",
                   "outputs.report=false", "benchmark.memory.enabled=false")


def run(tmp_path, capsys, images: Path, *overrides: str) -> tuple[int, str, Path]:
    code, run_dir = run_benchmark(QUICK + ["--set", f"dataset.path={images}"], tmp_path / "out", *overrides,
                                  run_id="r")
    return code, capsys.readouterr().err, run_dir


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 1])
def test_the_run_goes_on_past_oversized_images(tmp_path, capsys, workers):
    images = tmp_path / "images"
    images.mkdir()
    (images / "a_huge.png").write_bytes(png_claiming(40000, 40000))
    (images / "b_claims.bmp").write_bytes(bmp_claiming(60000, 60000))
    (images / "c_dog.jpg").write_bytes(SAMPLE.read_bytes())
    code, err, run_dir = run(tmp_path, capsys, images, f"dataset.workers={workers}")
    assert code == 0, err
    skipped = pd.read_csv(run_dir / "skipped.csv")
    assert list(skipped["image"]) == ["a_huge.png", "b_claims.bmp"]
    assert all("above dataset.max_pixels" in reason for reason in skipped["reason"])
    assert pd.read_csv(run_dir / "detections.csv")["image"].eq("c_dog.jpg").all()


@pytest.mark.slow
def test_no_usable_image_exits_2_naming_skipped_csv(tmp_path, capsys):
    images = tmp_path / "images"
    images.mkdir()
    (images / "claims.bmp").write_bytes(bmp_claiming(60000, 60000))
    (images / "junk.jpg").write_bytes(b"not a jpeg")
    code, err, run_dir = run(tmp_path, capsys, images, "dataset.max_pixels=null")
    assert code == 2
    assert "error: every image was skipped (2 of 2): skipped.csv" in err and "Traceback" not in err
    reasons = pd.read_csv(run_dir / "skipped.csv").set_index("image")["reason"]
    assert "OpenCV refuses" in reasons["claims.bmp"] and "not a decodable image" in reasons["junk.jpg"]


def test_a_sliver_of_an_image_letterboxes_to_one_pixel_row():
    import numpy as np

    from pipelines.boxes.letterbox import letterbox

    padded, geometry = letterbox(np.zeros((1, 5000, 3), np.uint8), 64)
    assert geometry.new_unpad == (64, 1) and padded.shape == (64, 64, 3)


def test_a_sliver_of_an_image_reaches_the_rcnn_network_one_pixel_thick():
    import numpy as np

    from pipelines.rcnn.facts import BUILDERS
    from pipelines.torchvision_common.transform import Preprocess, TransformSettings

    settings = TransformSettings.calibrating(BUILDERS["fasterrcnn_resnet50_fpn"], 64, 128)
    batch = Preprocess(settings)([np.zeros((1, 5000, 3), np.uint8), np.zeros((5000, 2, 3), np.uint8)])
    assert batch.images.image_sizes == [(1, 128), (128, 1)]
    assert batch.original_sizes == [(1, 5000), (5000, 2)]  # boxes map back to the image as it is
