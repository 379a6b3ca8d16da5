"""Runs in nudenet's own environment (never in detbench's): NudeNet's own detector on the images, as its
NudeDetector.detect does (at its own cuts), and at a lower cut by the same steps, for
benchmarks/peers/packages/nudenet_yolov8.py. Prints one JSON line.

NudeNet 3.4's detect(), read from its source (facts, no code of it here): the image as OpenCV reads it, its
channels swapped twice (cvtColor RGBA2BGR on a 3-channel image swaps R and B, blobFromImage's swapRB swaps them
back: BGR is fed), padded at the bottom and right with 0 to a square of its longer side, resized to 320 by
blobFromImage (OpenCV linear) and divided by 255; rows whose best class scores at least 0.2 kept, boxes mapped
back by the square's side over 320 and clipped to the image, then cv2.dnn.NMSBoxes over every class at once at
score 0.25 and IoU 0.45; boxes returned as whole pixels (int of x, y, width, height)."""
import json
import sys
from importlib.metadata import version
from pathlib import Path

import cv2
import numpy as np
from nudenet import NudeDetector
from nudenet import nudenet as package

ARGS = json.loads(sys.argv[1])
detector = NudeDetector()
meta = detector.onnx_session.get_modelmeta().custom_metadata_map
names = eval(meta["names"], {})  # Ultralytics writes a Python dict literal of the class names
index = {name: i for i, name in names.items()}


def own(path):
    """NudeDetector.detect itself: its cuts (0.2 before NMS, 0.25 in it)."""
    return [[index[d["class"]], d["score"], d["box"][0], d["box"][1], d["box"][0] + d["box"][2],
             d["box"][1] + d["box"][3]] for d in detector.detect(str(path))]


def at(path, cut):
    """The same steps at another cut: NudeNet's own preprocessing (its _read_image), then its decode's steps."""
    blob, _, _, x_pad, y_pad, width, height = package._read_image(str(path), 320)
    rows = np.squeeze(detector.onnx_session.run(None, {detector.input_name: blob})[0]).T
    boxes, scores, classes = [], [], []
    for values in rows:
        score = float(values[4:].max())
        if score >= cut:
            x, y, w, h = values[:4]
            x, y = (x - w / 2) * (width + x_pad) / 320, (y - h / 2) * (height + y_pad) / 320
            w, h = w * (width + x_pad) / 320, h * (height + y_pad) / 320
            x, y = max(0, min(x, width)), max(0, min(y, height))
            boxes.append([x, y, min(w, width - x), min(h, height - y)])
            scores.append(score)
            classes.append(int(values[4:].argmax()))
    kept = cv2.dnn.NMSBoxes(boxes, scores, cut, 0.45)
    return [[classes[i], scores[i], int(boxes[i][0]), int(boxes[i][1]), int(boxes[i][0]) + int(boxes[i][2]),
             int(boxes[i][1]) + int(boxes[i][3])] for i in np.array(kept).reshape(-1)]


images = [Path(p) for p in ARGS["images"]]
cuts = {"0.25": {p.name: own(p) for p in images}}
# The steps checked against detect() itself at its own cut, before they stand for it at another.
same = all(at(p, 0.25) == cuts["0.25"][p.name] for p in images)
cuts.update({f"{cut:g}": {p.name: at(p, cut) for p in images} for cut in ARGS["cuts"]})
print(json.dumps({"version": version("nudenet"), "file": str(Path(package.__file__).parent / "320n.onnx"),
                  "steps_equal_detect": same, "cuts": cuts}))
