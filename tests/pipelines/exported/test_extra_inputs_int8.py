"""int8 of a file whose graph takes more than the image (D-FINE's orig_target_sizes): calibration, the
accuracy-aware search and the timed passes feed the further inputs as the fp32 run does, and the decode after the
last convolution stays in float, so the boxes the graph scales by the original size come out exact."""
from __future__ import annotations

import json
import warnings

import cv2
import numpy as np
import pytest
import torch
from torch import nn

from tests.pipelines.exported.test_exported import SIDE
from tests.pipelines.exported.layouts.test_layouts import detections, image_folder


class ConvolvedDetr(nn.Module):
    """D-FINE's deploy signature over a real convolution: the score follows the image, the boxes the sizes."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, images: torch.Tensor, orig_target_sizes: torch.Tensor):
        level = torch.sigmoid(self.conv(images).mean(dim=(1, 2, 3)))[:, None]  # (B, 1)
        sizes = orig_target_sizes.to(torch.float32).repeat(1, 2)[:, None, :]
        boxes = torch.tensor([[0.25, 0.25, 0.5, 0.5]])[None] * sizes
        labels = torch.tensor([[1]]).expand(images.shape[0], -1)
        scores = 0.5 + 0.4 * level
        return labels, boxes, scores


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_a_file_with_original_sizes_runs_at_int8_with_its_boxes_exact(tmp_path, backend):
    file = tmp_path / "dfine.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(ConvolvedDetr(), (torch.zeros(1, 3, SIDE, SIDE), torch.tensor([[SIDE, SIDE]])),
                          str(file), dynamo=False, opset_version=17, input_names=["images", "orig_target_sizes"],
                          output_names=["labels", "boxes", "scores"],
                          dynamic_axes={"images": {0: "N"}, "orig_target_sizes": {0: "N"}})
    image_folder(tmp_path, 64, 128)
    calibration = tmp_path / "calibration"
    calibration.mkdir()
    cv2.imwrite(str(calibration / "other.png"), np.full((96, 48, 3), 150, np.uint8))  # another size, other sizes fed
    fp32 = detections(tmp_path, file, f"preprocess.img_size={SIDE}", f"runtime.backend={backend}")
    int8 = detections(tmp_path, file, f"preprocess.img_size={SIDE}", f"runtime.backend={backend}",
                      "runtime.precision=int8", f"runtime.calibration.path={calibration}",
                      "runtime.calibration.images=1")
    assert len(fp32) == len(int8) == 1
    assert int8[0][:4] == pytest.approx([32.0, 16.0, 64.0, 32.0]) and int8[0][5] == 1
    assert int8[0][4] == pytest.approx(fp32[0][4], abs=0.05)
    summary = json.loads(next((tmp_path / "out").glob("*-1/summary.json")).read_text())
    assert summary["runtime"]["precision"] == "int8"
