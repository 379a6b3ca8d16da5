"""pipelines/exported/layouts/end2end.py: (B, K, 6) rows the graph already kept, said by the metadata."""
import torch

from pipelines.exported.layouts import end2end
from pipelines.exported.layouts.contract import ASSUMED, SIGNED, Misfit
from tests.support.exported_files import exported


def test_the_metadatas_nms_or_end2end_flag_signs_six_columns_and_nothing_else_fits():
    flagged = end2end.read(exported([("output0", (1, 300, 6))], metadata={"end2end": "True", "names": {0: "a"}}))
    assert (flagged.confidence, flagged.classes) == (SIGNED, 1)
    assert end2end.read(exported([("output0", (1, 300, 6))], metadata={"args": {"nms": True}})).confidence == SIGNED
    assert end2end.read(exported([("output0", (1, 300, 6))])).confidence == ASSUMED
    assert isinstance(end2end.read(exported([("output0", (1, 300, 7))])), Misfit)


def test_raw_rows_are_the_output_as_it_is():
    out = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 0.9, 2.0]]])
    assert torch.equal(end2end.raw((out,), None, 64, 64), out)
