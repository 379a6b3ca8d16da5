"""pipelines/exported/layouts/picodet.py: per-stride scores and DFL distributions, from each cell's centre."""
import pytest
import torch

from pipelines.exported.layouts import picodet
from pipelines.exported.layouts.contract import Misfit
from tests.support.exported_files import exported

ROWS = (64, 16, 4)  # a 64 x 64 input over strides 8, 16, 32


def outputs(rows=ROWS, classes=2):
    return [(f"s{i}", (1, n, classes)) for i, n in enumerate(rows)] + [(f"b{i}", (1, n, 32)) for i, n in
                                                                       enumerate(rows)]


def test_the_strides_come_from_the_rows_at_a_static_input(tmp_path):
    reading = picodet.read(exported(outputs(), [("image", (1, 3, 64, 64))], path=tmp_path / "model.onnx"))
    assert reading.details == {"strides": (8, 16, 32), "bins": 8} and reading.classes == 2
    assert isinstance(picodet.read(exported(outputs((64, 16, 5)), [("image", (1, 3, 64, 64))],
                                            path=tmp_path / "model.onnx")), Misfit)
    dynamic = picodet.read(exported(outputs(("N", "N", "N")), [("image", (1, 3, "H", "W"))],
                                    path=tmp_path / "model.onnx"))
    assert dynamic.details["strides"] == (8, 16, 32) and "assumed" in dynamic.why


def test_raw_decodes_distances_from_the_cell_centre(tmp_path):
    reading = picodet.read(exported(outputs(classes=1), [("image", (1, 3, 64, 64))], path=tmp_path / "model.onnx"))
    scores = [torch.full((1, n, 1), 0.1) for n in ROWS]
    boxes = [torch.full((1, n, 32), -30.0) for n in ROWS]
    boxes[0][0, 0, [1, 9, 17, 25]] = 0.0  # the first cell of stride 8, each side one bin: 8 pixels
    row = picodet.raw((*scores, *boxes), reading, 64, 64)[0, 0]
    # centre (4, 4): corners (-4, -4, 12, 12), so centre 4, 4 and 16 x 16; objectness 1
    assert row.tolist() == pytest.approx([4, 4, 16, 16, 1, 0.1], abs=1e-5)
