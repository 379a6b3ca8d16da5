"""pipelines/exported/layouts/rtdetr_e2e.py: Ultralytics 8.4's RT-DETR, (B, K, 6) of normalised centres."""
import pytest
import torch

from pipelines.exported.layouts import rtdetr_e2e
from pipelines.exported.layouts.contract import ASSUMED, NAMED, Misfit
from tests.support.exported_files import exported

SIX = [("output0", (1, 300, 6))]


def test_metadata_naming_an_rtdetr_makes_it_named_else_assumed():
    assert rtdetr_e2e.read(exported(SIX, metadata={"head": "RTDETRDecoder"})).confidence == NAMED
    assert rtdetr_e2e.read(exported(SIX, metadata={"args": {"model": "rtdetr-l.pt"}})).confidence == NAMED
    assert rtdetr_e2e.read(exported(SIX, metadata={"description": "Ultralytics YOLO11n"})).confidence == ASSUMED
    assert isinstance(rtdetr_e2e.read(exported([("output0", (1, 300, 5))])), Misfit)


def test_raw_scales_normalised_centres_to_input_corners_axis_by_axis():
    out = torch.tensor([[[0.5, 0.5, 0.25, 0.5, 0.9, 1.0]]])
    assert rtdetr_e2e.raw((out,), None, 64, 128)[0, 0].tolist() == pytest.approx([48, 16, 80, 48, 0.9, 1])
