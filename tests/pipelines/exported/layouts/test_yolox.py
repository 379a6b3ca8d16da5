"""pipelines/exported/layouts/yolox.py: undecoded rows, one per cell of strides 8, 16 and 32."""
import math

import pytest
import torch

from pipelines.exported.layouts import yolox
from pipelines.exported.layouts.contract import ASSUMED, POSSIBLE, SIGNED, Misfit
from tests.support.exported_files import EXP_DECODE, UNDECODED, exported

CELLS = 64 + 16 + 4  # a 64 x 64 input


def test_how_sure_it_is_follows_what_the_graph_does_after_its_convolutions():
    out = [("output", (1, CELLS, 8))]
    assert yolox.read(exported(out, after=UNDECODED)).confidence == SIGNED
    assert yolox.read(exported(out, after=EXP_DECODE)).confidence == POSSIBLE
    assert yolox.read(exported(out)).confidence == ASSUMED  # no graph read (an IR)
    assert yolox.read(exported([("output", (1, "N", 8))], [("images", (1, 3, "H", "W"))])).confidence == POSSIBLE
    assert isinstance(yolox.read(exported([("output", (1, CELLS - 1, 8))])), Misfit)


def test_raw_adds_each_cell_and_takes_exp_of_the_sizes_times_the_stride():
    values = torch.zeros(1, CELLS, 6)
    values[0, 19] = torch.tensor([0.5, 0.5, math.log(2), 0.0, 0.9, 0.8])  # stride 8, cell x 3, y 2
    row = yolox.raw((values,), None, 64, 64)[0, 19]
    assert row.tolist() == pytest.approx([28, 20, 16, 8, 0.9, 0.8])
    assert yolox.raw((values,), None, 64, 64)[0, -1, :2].tolist() == [32.0, 32.0]  # stride 32, cell (1, 1)
