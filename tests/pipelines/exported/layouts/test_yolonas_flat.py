"""pipelines/exported/layouts/yolonas_flat.py: one (K, 7) output of rows that name their image by index."""
import torch

from pipelines.exported.decoding import PAD_SCORE
from pipelines.exported.layouts import yolonas_flat
from pipelines.exported.layouts.contract import NAMED, SIGNED, Misfit
from tests.support.exported_files import exported


def test_a_fixed_batch_is_needed_and_its_name_makes_it_named():
    reading = yolonas_flat.read(exported([("flat_predictions", ("K", 7))], [("images", (2, 3, 64, 64), "uint8")]))
    assert (reading.confidence, reading.details) == (NAMED, {"batch": 2})
    assert yolonas_flat.read(exported([("out", ("K", 7))])).confidence == SIGNED
    assert isinstance(yolonas_flat.read(exported([("out", ("K", 7))], [("images", ("N", 3, 64, 64))])), Misfit)


def test_raw_gives_each_image_its_own_rows_padded_to_the_longest():
    reading = yolonas_flat.read(exported([("flat_predictions", ("K", 7))], [("images", (3, 3, 64, 64))]))
    flat = torch.tensor([[1, 1, 2, 3, 4, 0.5, 2], [1, 5, 6, 7, 8, 0.25, 0]])
    found = yolonas_flat.raw((flat,), reading, 64, 64)
    assert found.shape == (3, 2, 6) and (found[0, :, 4] == PAD_SCORE).all() and (found[2, :, 4] == PAD_SCORE).all()
    assert found[1].tolist() == [[1.0, 2.0, 3.0, 4.0, 0.5, 2.0], [5.0, 6.0, 7.0, 8.0, 0.25, 0.0]]
