import struct

import cv2
import numpy as np
import pytest

from datasets.image_folder import DatasetBatches, DatasetError, decode_image, find_images, image_loader, to_bgr8


def test_recursive_sorted_search_with_limit(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    image = np.zeros((8, 8, 3), np.uint8)
    for rel in ("b/2.png", "a/1.JPG", "top.bmp", "a/z.tiff"):
        cv2.imwrite(str(tmp_path / rel), image) if not rel.endswith(".JPG") else cv2.imwrite(
            str(tmp_path / rel), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    (tmp_path / "notes.txt").write_text("not an image")
    found = [p.relative_to(tmp_path).as_posix() for p in find_images(tmp_path)]
    assert found == ["a/1.JPG", "a/z.tiff", "b/2.png", "top.bmp"]
    assert len(find_images(tmp_path, limit=2)) == 2


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        find_images(tmp_path / "missing")
    with pytest.raises(DatasetError, match="holds no images"):
        find_images(tmp_path)
    file = tmp_path / "x.jpg"
    file.write_bytes(b"")
    with pytest.raises(DatasetError, match="not a folder"):
        find_images(file)


def test_conversions_to_three_channel_8bit(tmp_path):
    gray = np.arange(64, dtype=np.uint8).reshape(8, 8)
    cv2.imwrite(str(tmp_path / "gray.png"), gray)
    rgba = np.zeros((8, 8, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[..., 3] = 10
    cv2.imwrite(str(tmp_path / "alpha.png"), rgba)
    deep = np.full((8, 8, 3), 65535, np.uint16)
    deep[0, 0] = (257 * 3, 0, 65535)
    cv2.imwrite(str(tmp_path / "deep.png"), deep)
    for name in ("gray.png", "alpha.png", "deep.png"):
        loaded = decode_image(tmp_path / name)
        assert loaded.error is None
        assert loaded.image.dtype == np.uint8 and loaded.image.shape == (8, 8, 3)
    assert (decode_image(tmp_path / "gray.png").image[..., 1] == gray).all()
    assert (decode_image(tmp_path / "alpha.png").image[..., 0] == 200).all()
    deep_loaded = decode_image(tmp_path / "deep.png").image
    assert tuple(deep_loaded[0, 0]) == (3, 0, 255) and deep_loaded[1, 1, 0] == 255
    assert to_bgr8(np.ones((2, 2), np.float32)).max() == 255


def test_undecodable_files_report_a_reason(tmp_path):
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "text.png").write_bytes(b"this is not a png")
    valid = cv2.imencode(".jpg", np.zeros((32, 32, 3), np.uint8))[1].tobytes()
    (tmp_path / "truncated.jpg").write_bytes(valid[:20])
    assert decode_image(tmp_path / "empty.jpg").error == "empty file"
    for name in ("text.png", "truncated.jpg"):
        loaded = decode_image(tmp_path / name)
        assert loaded.image is None and "decodable" in loaded.error


def test_loader_keeps_batches_as_lists_in_order(tmp_path):
    for i in range(5):
        cv2.imwrite(str(tmp_path / f"{i}.png"), np.full((4 + i, 6, 3), i, np.uint8))
    batches = list(image_loader(find_images(tmp_path), batch_size=2, workers=1))
    assert [len(b) for b in batches] == [2, 2, 1]
    flat = [s for b in batches for s in b]
    assert [s.image.shape[0] for s in flat] == [4, 5, 6, 7, 8]


def exif_segment(orientation: int, byte_order: str) -> bytes:
    """A JPEG APP1 segment holding one EXIF tag, Orientation (0x0112), as a camera writes it."""
    mark = b"MM" if byte_order == ">" else b"II"
    ifd = struct.pack(byte_order + "H", 1) + struct.pack(byte_order + "HHIHH", 0x0112, 3, 1, orientation, 0)
    tiff = mark + struct.pack(byte_order + "HI", 42, 8) + ifd + struct.pack(byte_order + "I", 0)
    payload = b"Exif\0\0" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


# EXIF orientation -> how a viewer turns the stored pixels upright
UPRIGHT = {
    1: lambda a: a, 2: lambda a: a[:, ::-1], 3: lambda a: a[::-1, ::-1], 4: lambda a: a[::-1],
    5: lambda a: a.transpose(1, 0, 2), 6: lambda a: np.rot90(a, -1), 7: lambda a: np.rot90(a, -1)[::-1],
    8: lambda a: np.rot90(a, 1),
}


@pytest.mark.parametrize("byte_order", [">", "<"])
@pytest.mark.parametrize("orientation", sorted(UPRIGHT))
def test_exif_orientation_is_applied_as_viewers_do(tmp_path, orientation, byte_order):
    stored = np.zeros((32, 64, 3), np.uint8)  # landscape, with a marker in the top-left corner only
    stored[:8, :8] = 255
    jpeg = cv2.imencode(".jpg", stored, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
    (tmp_path / "photo.jpg").write_bytes(jpeg[:2] + exif_segment(orientation, byte_order) + jpeg[2:])
    loaded = decode_image(tmp_path / "photo.jpg")
    pixels = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_UNCHANGED)
    assert loaded.error is None
    assert loaded.image.shape == ((64, 32, 3) if orientation >= 5 else (32, 64, 3))
    assert np.array_equal(loaded.image, UPRIGHT[orientation](pixels))


def test_dataset_batches_cut_the_files_as_the_loader_does(tmp_path):
    files = []
    for index in range(5):
        files.append(tmp_path / f"{index}.png")
        cv2.imwrite(str(files[-1]), np.full((4, 6, 3), index, np.uint8))
    batches = DatasetBatches(files, batch_size=2)
    loader = image_loader(files, batch_size=2, workers=0)
    assert len(batches) == len(loader) == 3
    for index, batch in enumerate(loader):
        assert [image.path for image in batches.load(index)] == [image.path for image in batch]
    assert [int(image.image[0, 0, 0]) for image in batches.load(2)] == [4]  # the short last batch
    assert [[image.path for image in batch] for batch in batches] == [[image.path for image in batch]
                                                                      for batch in loader]
    assert [[int(image.image[0, 0, 0]) for image in batch] for batch in batches.at([2, 0])] == [[4], [0, 1]]
    assert [int(image.image[0, 0, 0]) for image in batches.decode([3, 1, 3])] == [3, 1, 3]
    subset = batches.of(files[1:4], batch_size=1)
    assert (len(subset), subset.items, subset.max_pixels) == (3, files[1:4], None)
    assert [image.image for image in DatasetBatches(files, 1, max_pixels=10).load(0)] == [None]  # over the limit
