"""Ultralytics' own TFLite export of a trained YOLO11n, and Ultralytics' own predict through each file: the author
side of the TFLite comparison (compare.py runs detbench on the same files and images).

Runs in a venv of its own, never in the project's (Ultralytics is AGPL-3.0, and its TFLite export needs
TensorFlow and onnx2tf):

    python3.11 -m venv /work/scratch/venvs/ultra-tflite
    /work/scratch/venvs/ultra-tflite/bin/pip install torch==2.14.1 torchvision==0.29.1
    /work/scratch/venvs/ultra-tflite/bin/pip install ultralytics==8.4.190 tensorflow-cpu==2.21.0 tf-keras==2.21.0 \
        "onnx2tf==1.28.*" onnx onnxslim onnx-graphsurgeon sng4onnx ai-edge-litert onnxruntime psutil \
        simple-onnx-processing-tools
    /work/scratch/venvs/ultra-tflite/bin/pip install -c torch-pin.txt litert-torch==0.10.0 ai-edge-quantizer==0.10.0
    (torch-pin.txt: torch==2.14.1 and torchvision==0.29.1, so that pip keeps them)
    /work/scratch/venvs/ultra-tflite/bin/python benchmarks/peers/tflite/ultralytics_tflite.py \
        --out /work/scratch/tflite/ultralytics [--data ../shared/data] [--shapes 20]

The model is shared/data/ultra/yolo11n-shapes.pt (trained here by Ultralytics on synthetic shapes). Nothing is
downloaded: onnx2tf's sample calibration file, which Ultralytics fetches before every TFLite export, is written
locally from the shapes scenes first, and the int8 export calibrates on the shapes scenes after those compared
(a dataset yaml written here). Writes into --out: the .tflite files, `expected.json` (per file, Ultralytics'
predict at its default cut 0.25 and at 0.05: rows [class_id, score, x1, y1, x2, y2] in original pixels, paths
relative to --data) and `FACTS.md` (each file's inputs and outputs as LiteRT reads them).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "False")

import cv2  # noqa: E402
import numpy as np  # noqa: E402

DEFAULT_CUT, LOW_CUT, SIZE = 0.25, 0.05, 320
ONNX2TF_SAMPLE = "calibration_image_sample_data_20x128x128x3_float32.npy"


def compared_images(data: Path, shapes: int) -> list[str]:
    photos = sorted(f"samples/{p.name}" for p in (data / "samples").glob("*.jpg"))
    scenes = sorted(f"shapes/images/{p.name}" for p in (data / "shapes" / "images").glob("*.jpg"))[:shapes]
    return photos + scenes


def write_onnx2tf_sample(data: Path, folder: Path) -> None:
    """The file Ultralytics downloads for onnx2tf (20 RGB images, 128x128, in [0, 1]), made from local scenes."""
    scenes = sorted((data / "shapes" / "images").glob("*.jpg"))[-20:]
    images = [cv2.resize(cv2.imread(str(p))[..., ::-1], (128, 128)).astype(np.float32) / 255 for p in scenes]
    np.save(folder / ONNX2TF_SAMPLE, np.stack(images))


def write_calibration_set(data: Path, folder: Path, skip: int) -> Path:
    """A dataset yaml over the shapes scenes after the compared ones (images and their YOLO labels copied)."""
    for kind in ("images", "labels"):
        (folder / "calibration" / kind).mkdir(parents=True, exist_ok=True)
    for image in sorted((data / "shapes" / "images").glob("*.jpg"))[skip:skip + 100]:
        shutil.copy(image, folder / "calibration" / "images" / image.name)
        label = data / "shapes" / "labels" / f"{image.stem}.txt"
        if label.exists():
            shutil.copy(label, folder / "calibration" / "labels" / label.name)
    names = data.parent / "reference" / "yolov7" / "coco80.names"
    listed = names.read_text().split("\n") if names.exists() else [str(i) for i in range(80)]
    yaml = folder / "calibration.yaml"
    yaml.write_text(f"path: {folder / 'calibration'}\ntrain: images\nval: images\nnames:\n" +
                    "".join(f"  {i}: {json.dumps(name)}\n" for i, name in enumerate(n for n in listed if n)))
    return yaml


def predictions(model, data: Path, chosen: list[str], conf: float) -> dict:
    found = {}
    for path in chosen:
        result = model.predict(str(data / path), imgsz=SIZE, conf=conf, verbose=False)[0]
        boxes = result.boxes
        found[path] = [[int(c), round(float(s), 5), *(round(float(v), 2) for v in xyxy)]
                       for c, s, xyxy in zip(boxes.cls, boxes.conf, boxes.xyxy)]
    return found


def facts(file: Path) -> str:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(file))
    lines = [f"## {file.name}", ""]
    for kind, details in (("input", interpreter.get_input_details()), ("output", interpreter.get_output_details())):
        for d in details:
            lines.append(f"- {kind} `{d['name']}` {d['shape'].tolist()} (signature {d['shape_signature'].tolist()}) "
                         f"{np.dtype(d['dtype']).name}, quantization {d['quantization']}")
    import zipfile
    try:
        with zipfile.ZipFile(file) as archive:
            lines.append(f"- appended zip: {archive.namelist()}")
    except zipfile.BadZipFile:
        lines.append("- no appended zip")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[4] / "shared" / "data")
    parser.add_argument("--shapes", type=int, default=20)
    parser.add_argument("--skip-export", action="store_true", help="predict through the files already in --out")
    args = parser.parse_args()
    out, data = args.out.resolve(), args.data.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(out)  # Ultralytics and onnx2tf look for the sample file in the working folder
    write_onnx2tf_sample(data, out)
    yaml = write_calibration_set(data, out, args.shapes)
    from ultralytics import YOLO

    weights = out / "yolo11n-shapes.pt"
    if not weights.exists():
        shutil.copy(data / "ultra" / "yolo11n-shapes.pt", weights)
    # format=tflite is Ultralytics' LiteRT export now (litert-torch: NCHW input; int8 by ai-edge-quantizer, float
    # input and outputs); format=saved_model still writes the onnx2tf files older exports gave (NHWC input).
    for way in ({"format": "tflite"}, {"format": "tflite", "int8": True, "data": str(yaml)},
                {"format": "saved_model"}, {"format": "saved_model", "int8": True, "data": str(yaml)}):
        if not args.skip_export:
            YOLO(str(weights)).export(imgsz=SIZE, **way)
    # The ONNX the onnx2tf files were converted from: Ultralytics 8.4.190's predict multiplies the onnx2tf files'
    # boxes, which are in pixels, by the image size again, so its predict through them is no reference; its
    # predict through this ONNX is.
    files = sorted(out.glob("*.tflite")) + sorted((out / "yolo11n-shapes_saved_model").glob("*.tflite"))
    files.append(out / "yolo11n-shapes.onnx")
    chosen = compared_images(data, args.shapes)
    expected, notes = {}, ["# Ultralytics 8.4.190 TFLite exports of yolo11n-shapes.pt (imgsz 320)", ""]
    for file in files:
        model = YOLO(str(file), task="detect")
        key = str(file.relative_to(out))  # both exports write a yolo11n-shapes_int8.tflite
        expected[key] = {
            "file": str(file),
            "default_predictions": {"conf": DEFAULT_CUT, "images": predictions(model, data, chosen, DEFAULT_CUT)},
            "low_predictions": {"conf": LOW_CUT, "images": predictions(model, data, chosen, LOW_CUT)},
            "how": f"Ultralytics' predict through the {file.suffix} (AutoBackend): letterbox centred, pad 114, "
                   "RGB / 255, class-aware NMS at IoU 0.7, 300 kept",
        }
        if file.suffix == ".tflite":
            notes.append(facts(file))
        if file.parent.name.endswith("_saved_model"):
            expected[key]["reference"] = "yolo11n-shapes.onnx"
        found = sum(len(rows) for rows in expected[key]["default_predictions"]["images"].values())
        print(f"EXPORTED {key}: {found} boxes at {DEFAULT_CUT}", flush=True)
    (out / "expected.json").write_text(json.dumps(expected, indent=1))
    (out / "FACTS.md").write_text("\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
