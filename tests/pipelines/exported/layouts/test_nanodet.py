"""pipelines/exported/layouts/nanodet.py: scores then DFL distributions per cell of strides 8 to 64."""
import pytest
import torch

from pipelines.exported.layouts import nanodet
from pipelines.exported.layouts.contract import ASSUMED, SIGNED, Misfit
from tests.support.exported_files import exported

CELLS = 64 + 16 + 4 + 1  # a 64 x 64 input over strides 8, 16, 32 and 64


def test_its_export_names_sign_it_and_rows_that_are_not_the_cells_misfit():
    assert nanodet.read(exported([("output", (1, CELLS, 3 + 32))], [("data", (1, 3, 64, 64))])).confidence == SIGNED
    other = nanodet.read(exported([("out", (1, CELLS, 3 + 32))]))
    assert (other.confidence, other.classes) == (ASSUMED, 3)
    assert isinstance(nanodet.read(exported([("output", (1, CELLS - 1, 35))], [("data", (1, 3, 64, 64))])), Misfit)


def test_raw_decodes_from_the_cells_corner_and_clips_to_the_input():
    reading = nanodet.read(exported([("out", (1, CELLS, 1 + 32))]))
    values = torch.full((1, CELLS, 1 + 32), -30.0)
    values[0, :, 0] = 0.0
    values[0, 0, 0] = 0.8  # the first cell of stride 8, at (0, 0)
    for side in range(4):
        values[0, 0, 1 + side * 8 + 1] = 0.0  # each side one bin: 8 pixels
    row = nanodet.raw((values,), reading, 64, 64)[0, 0]
    # corners (-8, -8, 8, 8) clipped to (0, 0, 8, 8): centre (4, 4), 8 x 8; objectness 1, the score kept
    assert row.tolist() == pytest.approx([4, 4, 8, 8, 1, 0.8], abs=1e-5)
