"""pipelines/exported/layouts/yolov5.py: one (B, N, 5 + C) output, read by its values against the names."""
import torch

from pipelines.exported.layouts import yolov5
from pipelines.exported.layouts.contract import ASSUMED, POSSIBLE, SIGNED, Misfit
from tests.support.exported_files import UNDECODED, exported

NAMES = {"names": {0: "a", 1: "b"}}


def test_five_plus_c_values_with_the_names_are_read_and_other_counts_are_not():
    reading = yolov5.read(exported([("output", (1, 100, 7))], metadata=NAMES))
    assert (reading.layout, reading.classes, reading.confidence) == ("yolov5", 2, SIGNED)
    assert isinstance(yolov5.read(exported([("output", (1, 100, 8))], metadata=NAMES)), Misfit)
    assert isinstance(yolov5.read(exported([("output", (1, 100, 5))])), Misfit)  # no class at all


def test_without_names_it_is_assumed_unless_the_graph_decodes_nothing():
    assert yolov5.read(exported([("output", (1, 2000, 7))])).confidence == ASSUMED
    # YOLOv5 decodes in its graph: rows straight from the convolutions are someone else's (YOLOX's).
    assert yolov5.read(exported([("output", (1, 2000, 7))], after=UNDECODED)).confidence == POSSIBLE


def test_raw_rows_are_the_output_as_float():
    out = torch.ones(1, 3, 7, dtype=torch.float16)
    assert yolov5.raw((out,), None, 64, 64).dtype == torch.float32
