"""pipelines/exported/layouts/rtdetr.py: Ultralytics' RT-DETR before 8.4, (B, Q, 4 + C), each query its best class."""
import pytest
import torch

from pipelines.exported.layouts import rtdetr
from pipelines.exported.layouts.contract import ASSUMED, SIGNED, Misfit
from tests.support.exported_files import exported


def test_queries_with_the_names_are_read_and_anchors_beyond_the_query_limit_are_not():
    assert rtdetr.read(exported([("output0", (1, 300, 7))], metadata={"names": {0: "a", 1: "b", 2: "c"}})
                       ).confidence == SIGNED
    assert rtdetr.read(exported([("output0", (1, 300, 7))])).confidence == ASSUMED
    assert isinstance(rtdetr.read(exported([("output0", (1, 8400, 7))])), Misfit)


def test_raw_keeps_each_querys_best_class_in_input_pixels():
    out = torch.tensor([[[0.5, 0.5, 0.5, 0.5, 0.1, 0.7, 0.2]]])
    assert rtdetr.raw((out,), None, 64, 64)[0, 0].tolist() == pytest.approx([16, 16, 48, 48, 0.7, 1])
