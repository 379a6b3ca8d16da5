"""pipelines/exported/layouts/yolox_decoded.py: YOLOX's rows decoded in the graph, told by an exp without ** 2."""
import torch

from pipelines.exported.file_facts import AfterConvolutions
from pipelines.exported.layouts import yolox_decoded
from pipelines.exported.layouts.contract import ASSUMED, POSSIBLE, Misfit
from tests.support.exported_files import EXP_DECODE, exported

OUT = [("output", (1, 64 + 16 + 4, 8))]


def test_an_exp_in_the_decode_without_a_square_is_assumed_yoloxs_else_only_possible():
    assert yolox_decoded.read(exported(OUT, after=EXP_DECODE)).confidence == ASSUMED
    squared = AfterConvolutions(frozenset({"Exp", "Pow"}), frozenset({"Pow"}))  # YOLOv5's (2 wh) ** 2
    assert yolox_decoded.read(exported(OUT, after=squared)).confidence == POSSIBLE
    assert isinstance(yolox_decoded.read(exported([("output", (1, 83, 8))])), Misfit)


def test_raw_rows_are_the_output_as_float():
    out = torch.ones(1, 2, 8, dtype=torch.float16)
    assert yolox_decoded.raw((out,), None, 64, 64).dtype == torch.float32
