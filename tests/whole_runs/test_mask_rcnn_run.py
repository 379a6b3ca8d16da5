"""A whole run of Mask R-CNN: masks as label maps beside annotated images, backbone, rpn and roi_heads timed apart
inside the forward, every part's layers hooked, and the batching note in summary.json."""
import json

import cv2
import numpy as np
import pandas as pd
import pytest

from benchmark import main
from pipelines.torchvision_common.weights import COCO_CATEGORIES
from tests.support.paths import ROOT, SAMPLES
from tests.support.torchvision_detectors import photo


@pytest.mark.slow
def test_mask_rcnn_end_to_end_writes_masks_steps_and_batching_note(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for name in ("dog.jpg", "person.jpg"):
        (images / name).write_bytes((SAMPLES / name).read_bytes())
    code = main(["--config", str(ROOT / "configs" / "samples_maskrcnn.yaml"),
                 "--set", f"dataset.path={images}", "--set", f"run.output_dir={tmp_path / 'out'}",
                 "--set", "run.id=mask", "--set", "dataset.batch_size=2", "--set", "preprocess.img_size=160",
                 "--set", "preprocess.max_size=200", "--set", "postprocess.max_det=10",
                 "--set", "benchmark.warmup=0", "--set", "benchmark.repeats=1",
                 "--set", "benchmark.energy.enabled=false", "--set", "benchmark.memory.enabled=false"])
    assert code == 0
    run = tmp_path / "out" / "mask"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["family"] == "rcnn" and summary["img_size"] == 160
    assert any("pads every image" in note for note in summary["notes"])
    detections = pd.read_csv(run / "detections.csv", keep_default_na=False)  # "N/A" is a COCO name
    for name in ("dog", "person"):
        labels = cv2.imread(str(run / "masks" / f"{name}.png"), cv2.IMREAD_UNCHANGED)
        rows = int((detections["image"] == f"{name}.jpg").sum())
        assert labels.dtype == np.uint16 and labels.shape == photo(f"{name}.jpg").shape[:2]
        assert 0 < labels.max() <= rows
        assert (run / "images" / f"{name}.jpg").is_file()
    assert set(detections["class_name"]) <= set(COCO_CATEGORIES) and len(detections) <= 2 * 10
    steps = pd.read_csv(run / "steps_timer.csv")
    parts = steps[steps["step"].isin(["backbone", "rpn", "roi_heads"])]
    assert set(parts["parent"]) == {"forward"} and len(parts) == 3 * len(steps[steps["step"] == "forward"])
    layers = pd.read_csv(run / "layer_timer.csv")
    for path in ("backbone.body.layer4", "backbone.fpn", "rpn.head", "roi_heads.box_roi_pool",
                 "roi_heads.mask_head", "rpn/unattributed", "roi_heads/unattributed"):
        assert path in set(layers["path"]), path
    conv = layers[layers["path"] == "roi_heads.mask_predictor.mask_fcn_logits"]
    assert float(conv["macs"].iloc[0]) > 0
